#!/usr/bin/env bats
# A user's own simulation: particle types carried through the chain from the grid's
# manifest, a mismatch refused unless asked for; an open-box series with a threshold and search radius
# fixed by the first snapshot (--mean-from); the workflows running such a series from their config.
load common

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D/gas" "$D/col"
  # A cosmological box with gas (type 0) and dark matter (type 1), gridded with both.
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  ln -s "$snap" "$D/gas/s.hdf5"
  cic-project "$D/gas/s.hdf5" -o "$D/gas/g.h5" --grid 48 --types 0,1 -q
  phew-segment "$D/gas/g.h5" -o "$D/gas/p.h5" --threshold 8mean -q
  phew-merge "$D/gas/p.h5" -o "$D/gas/c.h5" -q
  # Two haloes colliding in open space (synth-particles' collision scene, 4 snapshots 150 Myr apart).
  synth-particles collision -o "$D/col/snap" --snapshots 4 --interval 150 -q
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

types_used() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["parameters"]["types_used"])' "$1"; }

@test "types: deblend, voters and phew-merge --particles default to the grid's types, from the manifest" {
  run deblend "$D/gas/c.h5" "$D/gas/s.hdf5" -o "$OUT/k.h5" -q
  assert_success
  assert_equal "$(types_used "$OUT/k.h5.json")" "[0, 1]"
  run voters "$OUT/k.h5" "$D/gas/s.hdf5" -o "$OUT/v.h5" -q
  assert_success
  assert_equal "$(types_used "$OUT/v.h5.json")" "[0, 1]"
  run phew-merge "$D/gas/p.h5" -o "$OUT/c.h5" --particles "$D/gas/s.hdf5" -q
  assert_success
  # every particle of the grid is in some clump or none: the particle masses add up to the grid's mass
  run /usr/bin/python3 - "$OUT/c.h5" <<'PY'
import h5py, sys
c = h5py.File(sys.argv[1])
n = c["halos/n_particles"][...].sum()
assert n > 0 and abs(c["halos/particle_mass"][...].sum() / c["halos/mass"][...].sum() - 1) < 0.2
print("ok")
PY
  assert_output "ok"
}

@test "types: other types than the grid's are refused in one line, unless --allow-other-types" {
  for tool in deblend phew-merge; do
    if [[ $tool == deblend ]]; then args=("$D/gas/c.h5" "$D/gas/s.hdf5" -o "$OUT/k.h5" --types 1)
    else args=("$D/gas/p.h5" -o "$OUT/c.h5" --particles "$D/gas/s.hdf5" --types 1); fi
    run --separate-stderr "$tool" "${args[@]}"
    assert_failure 2
    assert_equal "$stderr" "$tool: error: --types 1 are not the types the grid was made of (0,1): leave --types out to use those, or give --allow-other-types"
    run "$tool" "${args[@]}" --allow-other-types -q
    assert_success
  done
  run voters "$OUT/k.h5" "$D/gas/s.hdf5" -o "$OUT/v.h5" --types 0 -q
  assert_failure 2
  run voters "$OUT/k.h5" "$D/gas/s.hdf5" -o "$OUT/v.h5" --types 1,0 -q  # the same set, another order
  assert_success
}

@test "an open-box series: --mean-from fixes the threshold at the first snapshot's; voters take the same mean" {
  region=-160,-160,-200,240,240,200
  # The adaptive mesh's grid.h5 is a reference like the uniform grid's (its mean density)
  for k in 000 001; do
    cic-project "$D/col/snap_$k.hdf5" -o "$OUT/a$k.grid.h5" --grid 12 --refine 8 --levels 2 --region "$region" -q
    run phew-segment "$OUT/a$k.grid.h5" -o "$OUT/a$k.patches.h5" --threshold 100mean --mean-from "$OUT/a000.grid.h5" -q
    assert_success
  done
  for k in 000 001 002 003; do
    cic-project "$D/col/snap_$k.hdf5" -o "$OUT/$k.grid.h5" --grid 48 --region "$region" -q
    run phew-segment "$OUT/$k.grid.h5" -o "$OUT/$k.patches.h5" --threshold 100mean --mean-from "$OUT/000.grid.h5" -q
    assert_success
    phew-merge "$OUT/$k.patches.h5" -o "$OUT/$k.clumps.h5" --relevance 3 -q
    deblend "$OUT/$k.clumps.h5" "$D/col/snap_$k.hdf5" -o "$OUT/$k.peaks.h5" -q
    run voters "$OUT/$k.peaks.h5" "$D/col/snap_$k.hdf5" -o "$OUT/$k.voters.h5" --mean-from "$OUT/000.grid.h5" -q
    assert_success
  done
  run /usr/bin/python3 - "$OUT" <<'PY'
import json, sys, h5py
out = sys.argv[1]
thr = [json.load(open(f"{out}/{k:03d}.patches.h5.json"))["parameters"]["threshold_used"] for k in range(4)]
mean0 = h5py.File(f"{out}/000.grid.h5")["grid"].attrs["mean_density"]
means = [h5py.File(f"{out}/{k:03d}.grid.h5")["grid"].attrs["mean_density"] for k in range(4)]
assert all(t == thr[0] for t in thr) and abs(thr[0] / (100 * mean0) - 1) < 1e-12, thr
assert max(means) > min(means), means  # the mass in the region changed, and the threshold did not follow it
inputs = [i["path"] for i in json.load(open(f"{out}/003.patches.h5.json"))["inputs"]]
assert any(p.endswith("000.grid.h5") for p in inputs), inputs  # the reference grid is an input
inputs = [i["path"] for i in json.load(open(f"{out}/003.voters.h5.json"))["inputs"]]
assert any(p.endswith("000.grid.h5") for p in inputs), inputs
print("ok")
PY
  assert_output "ok"
  run --separate-stderr phew-segment "$OUT/000.grid.h5" -o "$OUT/x.h5" --threshold 80mean --mean-from "$D/gas/g.h5"
  assert_failure 3
  [[ $stderr == "phew-segment: error: "*"not a grid of the same region and units"* ]] || fail "$stderr"
}

@test "the workflows run an open-box series from their config: region, fixed mean, types; shell = Snakemake" {
  cat >"$OUT/cfg.yaml" <<YAML
snapshots: "$D/col/snap_*.hdf5"
grid: 48
region: "-160,-160,-200,240,240,200"
fix_mean: true
types: "1"
threshold: "100mean"
relevance: 3.0
saddle_threshold: "none"
search_radius: 20
min_votes: 10
maps_top: 2
map_resolution: 32
YAML
  export PHEW_BIN
  run "$PHEW_SOURCE/workflows/pipeline.sh" "$D/col/snap_*.hdf5" "$OUT/sh" --config "$OUT/cfg.yaml"
  assert_success
  run snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 2 --directory "$OUT/sm" --configfile "$OUT/cfg.yaml" --quiet
  assert_success
  for k in 000 001 002 003; do
    for f in grid patches clumps peaks voters; do
      run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/sh/snap_$k/$f.h5" "$OUT/sm/snap_$k/$f.h5"
      assert_success
    done
  done
  run /usr/bin/python3 - "$OUT/sh" <<'PY'
import json, sys
out = sys.argv[1]
p = [json.load(open(f"{out}/snap_{k:03d}/patches.h5.json"))["parameters"] for k in range(4)]
assert len({x["threshold_used"] for x in p}) == 1 and all(x["mean-from"].endswith("snap_000/grid.h5") for x in p), p
g = json.load(open(f"{out}/snap_003/grid.h5.json"))["parameters"]
assert g["periodic"] is False and g["types_used"] == [1], g
print("ok")
PY
  assert_output "ok"
}
