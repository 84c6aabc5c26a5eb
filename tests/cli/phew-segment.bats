#!/usr/bin/env bats
# phew-segment end to end: outputs, provenance, rank invariance, real data, bad inputs.
load common

setup_file() {
  load common
  make_inputs
  GRIDS="$BATS_FILE_TMPDIR/grids"
  mkdir -p "$GRIDS"
  cic-project "$INPUTS/good.hdf5" -o "$GRIDS/grid.h5" --grid 24 -q
  cic-project "$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5" -o "$GRIDS/lcdm.h5" --grid 64 -q
}

setup() {
  make_inputs
  GRIDS="$BATS_FILE_TMPDIR/grids"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

# A copy of the good grid edited by a Python snippet (with h5py as f), its manifest made to match again.
edited_grid() {  # edited_grid NAME PYTHON
  cp "$GRIDS/grid.h5" "$BATS_TEST_TMPDIR/$1"
  cp "$GRIDS/grid.h5.json" "$BATS_TEST_TMPDIR/$1.json"
  /usr/bin/python3 -c "import h5py, numpy as np
with h5py.File('$BATS_TEST_TMPDIR/$1', 'r+') as f:
    $2"
  remanifest "$BATS_TEST_TMPDIR/$1"
  echo "$BATS_TEST_TMPDIR/$1"
}

@test "writes labels, peaks and saddles with a provenance chain" {
  run phew-segment "$GRIDS/grid.h5" -o "$OUT/patches.h5" --threshold 5mean -q
  assert_success
  assert_only_files "$OUT" patches.h5 patches.h5.json
  run /usr/bin/python3 - "$OUT/patches.h5" <<'PY'
import h5py, json, sys, numpy as np
from reference import read_labels
f = h5py.File(sys.argv[1])
lab = read_labels(sys.argv[1], "peak")
ids = f["peaks/id"][...]
assert lab.shape == (24, 24, 24) and f["cells/peak"].dtype == np.uint8 and f.attrs["format_version"] == 2
assert len(ids) > 0 and (ids == np.arange(1, len(ids) + 1)).all()
assert set(np.unique(lab)) - {0} == set(ids)
# n_cells agrees with the labels; peaks are ordered by density; each peak's cell carries its label
assert (np.bincount(lab.ravel(), minlength=len(ids) + 1)[1:] == f["peaks/n_cells"][...]).all()
d = f["peaks/density"][...]
assert (np.diff(d) <= 0).all()
assert (lab.ravel()[f["peaks/cell"][...]] == ids).all()
a, b = f["saddles/peak_a"][...], f["saddles/peak_b"][...]
assert (a < b).all() and len(set(zip(a, b))) == len(a)
assert (f["saddles/density"][...] <= np.minimum(d[a - 1], d[b - 1])).all()
assert f["cells"].attrs["neighbourhood"] == 26
assert abs(f["cells"].attrs["threshold_over_mean"] - 5) < 1e-12
m = json.load(open(sys.argv[1] + ".json"))
assert [s["tool"]["name"] for s in m["provenance"]] == ["cic-project", "phew-segment"]
assert m["inputs"][0]["kind"] == "grid" and m["inputs"][0]["manifest_id"] == m["provenance"][0]["id"]
assert m["provenance"][0]["inputs"][0]["kind"] == "snapshot"
print("ok")
PY
  assert_output "ok"
}

@test "identical data for 1, 2, 3 and 4 ranks" {
  for grid in grid.h5 lcdm.h5; do
    for args in "--threshold 3mean" "--threshold 20mean --refine-positions"; do
      # shellcheck disable=SC2086
      run phew-segment "$GRIDS/$grid" -o "$OUT/p1.h5" $args -q
      assert_success
      for n in 2 3 4; do
        # shellcheck disable=SC2086
        run mpi "$n" phew-segment "$GRIDS/$grid" -o "$OUT/p$n.h5" $args -q
        assert_success
        for obj in /cells /peaks /saddles /grid; do
          run h5diff "$OUT/p1.h5" "$OUT/p$n.h5" "$obj" "$obj"
          assert_success
        done
      done
    done
  done
}

@test "real Gadget-4 box at 80mean: peaks found, stable across ranks" {
  run phew-segment "$GRIDS/lcdm.h5" -o "$OUT/p1.h5" --threshold 80mean -q
  assert_success
  n1=$(/usr/bin/python3 -c 'import h5py,sys; print(len(h5py.File(sys.argv[1])["peaks/id"]))' "$OUT/p1.h5")
  [[ $n1 -gt 20 ]] || fail "only $n1 peaks"
  run mpi 3 phew-segment "$GRIDS/lcdm.h5" -o "$OUT/p3.h5" --threshold 80mean -q
  assert_success
  n3=$(/usr/bin/python3 -c 'import h5py,sys; print(len(h5py.File(sys.argv[1])["peaks/id"]))' "$OUT/p3.h5")
  assert_equal "$n3" "$n1"
}

@test "crit thresholds use the grid's cosmology" {
  run phew-segment "$GRIDS/lcdm.h5" -o "$OUT/p.h5" --threshold 100crit -q
  assert_success
  # Against rho_crit worked out by hand: 3 H0^2 / (8 pi G) with H0 = 100 km/s/Mpc (h-scaled units), in the
  # file's units (UnitMass_in_g 1.989e43, UnitLength_in_cm 3.085678e21), at z = 0 (snapshot_004).
  used=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parameters"]["threshold_used"])' "$OUT/p.h5.json")
  /usr/bin/python3 -c '
import sys, math
kpc = 3.085678e21; H0 = 100e5 / (1e3 * kpc); rho_cgs = 3 * H0**2 / (8 * math.pi * 6.6743e-8)
r = float(sys.argv[1]) / (rho_cgs / (1.989e43 / kpc**3))
assert abs(r - 100) < 1e-4, r' "$used"
}

@test "a grid finer than the grid rule: single particles make peaks, a warning with the rule's grid; none at the rule's grid" {
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  cic-project "$snap" -o "$OUT/fine.h5" --grid 256 -q
  run --separate-stderr phew-segment "$OUT/fine.h5" -o "$OUT/p.h5" --threshold 80mean
  assert_success
  # 80 * 32768 / 256^3 = 0.156 particle masses per threshold cell; the rule gives 136 cells per side.
  [[ $stderr =~ warning:\ the\ grid\ is\ too\ fine\ for\ the\ particles:\ a\ cell\ at\ the\ threshold\ holds\ 0.156\ particle\ masses ]] || fail "$stderr"
  [[ $stderr =~ \(([0-9,]+)\ of\ ([0-9,]+)\ peaks\ hold\ less\ than\ one\ particle\ mass\)\;\ make\ the\ grid\ with\ cic-project\ --grid\ auto\ --for-threshold\ 80mean\ \(136x136x136\ cells\ here\) ]] || fail "$stderr"
  light=${BASH_REMATCH[1]//,/}
  /usr/bin/python3 -c '
import h5py, sys
f = h5py.File(sys.argv[1]); g = f["grid"].attrs
light = (f["peaks/mass"][...] < g["total_mass"] / g["n_particles"]).sum()
assert light == int(sys.argv[2]) and light > len(f["peaks/mass"]) // 2, (light, sys.argv[2])' "$OUT/p.h5" "$light"
  # The rule's own grid, and the 128^3 the tutorial gives RAMSES users for this particle count: no warning.
  for grid in auto 128; do
    cic-project "$snap" -o "$OUT/rule.h5" --grid $grid -q
    run --separate-stderr phew-segment "$OUT/rule.h5" -o "$OUT/prule.h5" --threshold 80mean
    assert_success
    [[ $stderr != *warning* && $stderr == *"a cell at the threshold holds 1."*" particle masses (the grid rule: at least 1)"* ]] || fail "$stderr"
  done
}

@test "no cell above the threshold: an empty result and a warning, not an error" {
  run --separate-stderr phew-segment "$GRIDS/grid.h5" -o "$OUT/p.h5" --threshold 1e30
  assert_success
  [[ $stderr == *"warning: no cell is above the threshold 1e+30 (1e+30 "*", absolute): the result is empty; the densest cell is"* ]] || fail "$stderr"
  [[ $stderr != *"write --threshold"* ]] || fail "$stderr"  # 1e30 times the mean is above every cell too
  n=$(/usr/bin/python3 -c 'import h5py,sys; f=h5py.File(sys.argv[1]); print(len(f["peaks/id"]), len(f["cells/index"]) + len(f["cells/peak"]))' "$OUT/p.h5")
  assert_equal "$n" "0 0"
}

@test "an absolute threshold meant as a multiple of the mean: the warning gives the densest cell, the mean and the mean suffix" {
  run --separate-stderr phew-segment "$GRIDS/lcdm.h5" -o "$OUT/p.h5" --threshold 80
  assert_success
  expected=$(/usr/bin/python3 -c '
import h5py, numpy as np, sys
g = h5py.File(sys.argv[1])["grid"]; top = float(np.max(g["density"][...])); mean = g.attrs["mean_density"]
print("no cell is above the threshold 80 (80 %s, absolute): the result is empty; the densest cell is %.4g (%.4g x the "
      "mean density %.4g); for 80 times the mean density write --threshold 80mean" % (g.attrs["units"], top, top / mean, mean))' "$GRIDS/lcdm.h5")
  [[ $stderr == *"warning: $expected"* ]] || fail "$stderr"
  [[ $stderr != *"too fine"* ]] || fail "$stderr"
  # The same threshold in the mean's units finds the structures.
  run phew-segment "$GRIDS/lcdm.h5" -o "$OUT/p80.h5" --threshold 80mean -q
  assert_success
  run /usr/bin/python3 -c 'import h5py, sys; print(len(h5py.File(sys.argv[1])["peaks/id"]) > 0)' "$OUT/p80.h5"
  assert_output True
}

bad_case() { bad_input phew-segment "$OUT/p.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: a file of the wrong stage" {
  phew-segment "$GRIDS/grid.h5" -o "$BATS_TEST_TMPDIR/patches.h5" --threshold 5mean -q
  bad_case 3 "is a 'patches' file, expected grid" "$BATS_TEST_TMPDIR/patches.h5" --threshold 5mean
}
@test "bad input: a snapshot instead of a grid (no manifest)" {
  bad_case 3 "no manifest" "$INPUTS/good.hdf5" --threshold 5mean
}
@test "bad input: a grid changed after its manifest was written" {
  cp "$GRIDS/grid.h5" "$GRIDS/grid.h5.json" "$BATS_TEST_TMPDIR/"
  /usr/bin/python3 -c "import h5py; h5py.File('$BATS_TEST_TMPDIR/grid.h5', 'r+')['grid/density'][0, 0, 0] = 1.0"
  bad_case 3 "stale or swapped" "$BATS_TEST_TMPDIR/grid.h5" --threshold 5mean
}
@test "bad input: missing /grid/density" {
  g=$(edited_grid nodens.h5 'del f["grid/density"]')
  bad_case 3 "missing dataset /grid/density" "$g" --threshold 5mean
}
@test "bad input: density of the wrong shape" {
  g=$(edited_grid shape.h5 'del f["grid/density"]; f["grid/density"] = np.zeros((4, 4), dtype=np.float32)')
  bad_case 3 "/grid/density is float32 [4,4]" "$g" --threshold 5mean
}
@test "bad input: NaN, Inf and negative densities" {
  for v in "np.nan" "np.inf" "-1.0"; do
    g=$(edited_grid "v.h5" "f['grid/density'][3, 4, 5] = $v")
    bad_case 3 "densities must be finite" "$g" --threshold 5mean
  done
}
@test "bad input: negative threshold or unknown unit is a usage error" {
  bad_case 2 "negative" "$GRIDS/grid.h5" --threshold=-3
  bad_case 2 "unknown unit 'meen'" "$GRIDS/grid.h5" --threshold 80meen
}
@test "bad input: crit without cosmology" {
  g=$(edited_grid nocosmo.h5 'del f["grid"].attrs["critical_density"]')
  bad_case 3 "no cosmology" "$g" --threshold 80crit
}
@test "bad input under MPI: every rank stops with the same code" {
  g=$(edited_grid v.h5 "f['grid/density'][20, 4, 5] = np.nan")
  run timeout 60 mpirun -n 3 --oversubscribe phew-segment "$g" -o "$OUT/p.h5" --threshold 5mean -q
  assert_failure 3
  assert_only_files "$OUT"
}
@test "a failed run leaves nothing half-written" {
  for phase in read watershed saddles write finish; do
    PHEW_TEST_FAIL_AT=$phase run phew-segment "$GRIDS/grid.h5" -o "$OUT/p.h5" --threshold 5mean -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}
