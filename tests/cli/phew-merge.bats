#!/usr/bin/env bats
# phew-merge end to end: catalogue, mass bookkeeping, rank invariance, particles, exports, bad inputs.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  cic-project "$snap" -o "$D/grid.h5" --grid 48 -q
  phew-segment "$D/grid.h5" -o "$D/patches.h5" --threshold 8mean -q
  phew-segment "$D/grid.h5" -o "$D/empty.h5" --threshold 1e30 -q
  cic-project "$INPUTS/good.hdf5" -o "$D/other.h5" --grid 48 -q
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "sparse labels: bytes per test cell, and phewplot's dense export equals the independent reader" {
  run phew-merge "$D/patches.h5" -o "$OUT/clumps.h5" --relevance 1.5 --saddle-threshold 20mean -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/examples/phewplot.py" labels "$OUT/clumps.h5" "$OUT/dense.h5"
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/examples/phewplot.py" labels "$D/patches.h5" "$OUT/dense_p.h5"
  assert_success
  run /usr/bin/python3 - "$OUT/clumps.h5" "$D/patches.h5" "$OUT/dense.h5" "$OUT/dense_p.h5" <<'PY'
import h5py, os, sys, numpy as np
from reference import read_labels
c, p, dc, dp = sys.argv[1:5]
for name in ("clump", "halo"):
    assert np.array_equal(h5py.File(dc)[name][...], read_labels(c, name)), name
assert np.array_equal(h5py.File(dp)["peak"][...], read_labels(p, "peak"))
n = int(h5py.File(p)["cells"].attrs["n_test_cells"])
assert n == len(h5py.File(p)["cells/index"]) > 100
# everything included (tables, attributes, the manifest copy): a few bytes per test cell, not per cell
for f in (p, c):
    assert os.path.getsize(f) / n < 100, (f, os.path.getsize(f) / n)
print("ok")
PY
  assert_output "ok"
}

@test "catalogue: clumps, haloes, hierarchy, cell grids and the mass budget" {
  run phew-merge "$D/patches.h5" -o "$OUT/clumps.h5" --relevance 1.5 --saddle-threshold 20mean -q
  assert_success
  run /usr/bin/python3 - "$OUT/clumps.h5" "$D/patches.h5" "$D/grid.h5" <<'PY'
import h5py, json, sys, numpy as np
c, p, g = (h5py.File(x) for x in sys.argv[1:4])
cl, ha, pk = c["clumps"], c["halos"], c["peaks"]
ids = cl["id"][...]
assert len(ids) > 5 and (np.diff(ids) > 0).all()
# every peak's clump is a listed clump or 0; level-0 clumps are peaks that kept their own ID
assert set(pk["clump"][...]) - {0} == set(ids)
assert (pk["clump"][...][ids - 1] == ids).all()
# cells: clump labels are the peaks' clumps; halo labels are the clumps' haloes
from reference import read_labels
lab = read_labels(sys.argv[2], "peak")
clump_of_peak = np.concatenate([[0], pk["clump"][...]])
cc = read_labels(sys.argv[1], "clump")
assert (cc == clump_of_peak[lab]).all()
assert (c["cells/index"][...] == p["cells/index"][...]).all()  # the same test cells
halo_of = dict(zip(ids, cl["halo"][...]))
hl = read_labels(sys.argv[1], "halo")
assert all(hl.ravel()[k] == halo_of[v] for k, v in enumerate(cc.ravel()) if v)
# parents: a clump is its own parent (level 0) or merged into a denser clump at level >= 1
par, lev = cl["parent"][...], cl["level"][...]
assert ((par == ids) == (lev == 0)).all() and (par <= ids).all()
assert set(ha["id"][...]) == set(cl["halo"][...])
assert ha["n_clumps"][...].sum() == len(ids)
# the mass budget: clumps + discarded = everything above the threshold (grid masses)
m = json.load(open(sys.argv[1] + ".json"))["summary"]
rho = g["grid/density"][...].astype(np.float64)
vol = np.prod(g["grid"].attrs["cell_size"])
above = (rho * vol)[lab > 0].sum()
assert abs(m["mass_above_threshold"] - above) < 1e-6 * above
assert abs(cl["mass"][...].sum() + m["mass_discarded"] - above) < 1e-9 * above
assert abs(ha["mass"][...].sum() - cl["mass"][...].sum()) < 1e-9 * above
# relevance of surviving clumps is above the threshold
assert (cl["relevance"][...] >= 1.5).all()
# hierarchy rows are the clumps that merged
assert set(c["hierarchy/clump"][...]) == set(ids[lev > 0])
print("ok")
PY
  assert_output "ok"
}

@test "identical data for 1, 2, 3 and 4 ranks, with particles" {
  args="--relevance 1.5 --saddle-threshold 20mean --particles $snap"
  # shellcheck disable=SC2086
  run phew-merge "$D/patches.h5" -o "$OUT/c1.h5" $args -q
  assert_success
  for n in 2 3 4; do
    # shellcheck disable=SC2086
    run mpi "$n" phew-merge "$D/patches.h5" -o "$OUT/c$n.h5" $args -q
    assert_success
    for obj in /cells /clumps /halos /peaks /hierarchy /grid; do
      run h5diff "$OUT/c1.h5" "$OUT/c$n.h5" "$obj" "$obj"
      assert_success
    done
  done
}

@test "particles: counts and masses by clump, bulk velocities" {
  run phew-merge "$D/patches.h5" -o "$OUT/c.h5" --relevance 1.5 --particles "$snap" -q
  assert_success
  run /usr/bin/python3 - "$OUT/c.h5" "$snap" <<'PY'
import h5py, sys, numpy as np
c = h5py.File(sys.argv[1]); s = h5py.File(sys.argv[2])
cl = c["clumps"]
n, m, v = cl["n_particles"][...], cl["particle_mass"][...], cl["bulk_velocity"][...]
mp = s["Header"].attrs["MassTable"][1]
assert np.allclose(m, n * mp) and n.sum() > 0
# independent check: particles per clump from the cell grid
from reference import read_labels
cc = read_labels(c.filename, "clump")
box = s["Header"].attrs["BoxSize"]; N = cc.shape[0]
x = s["PartType1/Coordinates"][...].astype(np.float64)
ijk = np.floor(x / (box / N)).astype(int) % N
lab = cc[ijk[:, 0], ijk[:, 1], ijk[:, 2]]
counts = np.bincount(lab, minlength=cl["id"][...].max() + 1)[cl["id"][...]]
assert (counts == n).all(), (counts[:5], n[:5])
vel = s["PartType1/Velocities"][...].astype(np.float64)
k = np.argmax(n)
sel = lab == cl["id"][k]
assert np.allclose(v[k], vel[sel].mean(axis=0), rtol=1e-9, atol=1e-9)
print("ok")
PY
  assert_output "ok"
}

@test "text and CSV exports in RAMSES columns" {
  run phew-merge "$D/patches.h5" -o "$OUT/c.h5" --relevance 1.5 --export-text -q
  assert_success
  assert_only_files "$OUT" c.h5 c.h5.json c.h5.clumps.txt c.h5.clumps.csv c.h5.halos.txt c.h5.halos.csv
  rows=$(($(wc -l <"$OUT/c.h5.clumps.csv") - 1))
  n=$(/usr/bin/python3 -c 'import h5py,sys; print(len(h5py.File(sys.argv[1])["clumps/id"]))' "$OUT/c.h5")
  assert_equal "$rows" "$n"
}

@test "text exports: RAMSES' header lines and columns, read by the same parser as RAMSES' own files" {
  run phew-merge "$D/patches.h5" -o "$OUT/c.h5" --relevance 1.5 --saddle-threshold 20mean --particles "$snap" --export-text -q
  assert_success
  ramses="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32/output_00002"
  run /usr/bin/python3 - "$OUT/c.h5" "$D/patches.h5" "$ramses/clump_00002.txt00001" "$ramses/halo_00002.txt00001" <<'PY'
import h5py, io, sys, numpy as np
out, patches, ramses_clumps, ramses_halos = sys.argv[1:5]
c, p = h5py.File(out), h5py.File(patches)
for kind, theirs, extra in (("clumps", ramses_clumps, []), ("halos", ramses_halos, ["n_clumps"])):
    mine = open(f"{out}.{kind}.txt").read().splitlines()
    header = open(theirs).readline().rstrip("\n")
    # RAMSES' header line, character for character, then phew's columns
    assert mine[0].startswith(header), (mine[0], header)
    extra += ["n_particles", "bulk_velocity_x", "bulk_velocity_y", "bulk_velocity_z"]
    assert mine[0].split() == header.split() + extra, mine[0].split()
    assert mine[1].startswith("# units: peak_x peak_y peak_z in "), mine[1]
    assert "bulk_velocity_* in " in mine[1], mine[1]
    # the same parser reads both: RAMSES' names first, in RAMSES' order
    a = np.genfromtxt(theirs, names=True)
    b = np.genfromtxt(f"{out}.{kind}.txt", names=True)
    n = len(a.dtype.names)
    assert b.dtype.names[:n] == a.dtype.names, (b.dtype.names, a.dtype.names)
    assert len(b.dtype.names) == n + len(extra)
    t = c[kind]
    assert len(b) == len(t["id"]) > 3
    assert (b["index"] == t["id"][...]).all()
    # RAMSES' row layout: the same fields at the same character positions
    ramses_row = open(theirs).readlines()[1].rstrip("\n")
    cuts = [i for i in range(1, len(ramses_row)) if ramses_row[i - 1] != " " and ramses_row[i] == " "]
    row = mine[2]
    assert [row[i] for i in cuts] == [" "] * len(cuts) and all(row[i - 1] != " " for i in cuts), (row, ramses_row)
    assert np.array_equal(b["n_particles"], t["n_particles"][...])
    assert np.allclose(b["bulk_velocity_x"], t["bulk_velocity"][:, 0], rtol=1e-8, atol=1e-12)
cl, ha = np.genfromtxt(f"{out}.clumps.txt", names=True), np.genfromtxt(f"{out}.halos.txt", names=True)
# columns hold what RAMSES' hold: halo, rho- (key saddle), rho+ (peak density), mass
assert (cl["halo"] == c["clumps/halo"][...]).all() and (cl["halo"] != cl["index"]).any()
assert np.allclose(cl["rho"], c["clumps/saddle_density"][...], rtol=1e-8)  # genfromtxt: rho- -> rho, rho+ -> rho_1
assert np.allclose(cl["rho_1"], c["clumps/peak_density"][...], rtol=1e-8)
assert np.allclose(cl["mass_cl"], c["clumps/mass"][...], rtol=1e-8)
density = p["peaks/density"][...]
assert np.allclose(c["halos/peak_density"][...], density[c["halos/id"][...] - 1])
assert np.allclose(ha["rho"], c["halos/peak_density"][...], rtol=1e-8)
assert np.allclose(ha["mass"], c["halos/mass"][...], rtol=1e-8)
print("ok")
PY
  assert_output "ok"
}

@test "mass threshold filters the catalogue only" {
  run phew-merge "$D/patches.h5" -o "$OUT/all.h5" --relevance 1.5 -q
  run phew-merge "$D/patches.h5" -o "$OUT/big.h5" --relevance 1.5 --mass-threshold 30particles -q
  assert_success
  run /usr/bin/python3 - "$OUT/all.h5" "$OUT/big.h5" <<'PY'
import h5py, sys, numpy as np
a, b = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
mp = a["grid"].attrs["particle_mass"]
keep = a["clumps/mass"][...] >= 30 * mp
assert (b["clumps/id"][...] == a["clumps/id"][...][keep]).all() and keep.sum() < len(keep)
assert (a["cells/clump"][...] == b["cells/clump"][...]).all() and (a["cells/index"][...] == b["cells/index"][...]).all()
print("ok")
PY
  assert_output "ok"
}

@test "an empty patches file gives a valid empty catalogue and a warning" {
  run --separate-stderr phew-merge "$D/empty.h5" -o "$OUT/c.h5" --relevance 1.5
  assert_success
  [[ $stderr == *"warning"* ]] || fail "$stderr"
  n=$(/usr/bin/python3 -c 'import h5py,sys; f=h5py.File(sys.argv[1]); print(len(f["clumps/id"]), len(f["halos/id"]))' "$OUT/c.h5")
  assert_equal "$n" "0 0"
}

@test "the processing order does not change the result" {
  run phew-merge "$D/patches.h5" -o "$OUT/a.h5" --relevance 1.3 --saddle-threshold 15mean -q
  for seed in 1 2 3; do
    PHEW_TEST_SHUFFLE_SEED=$seed run phew-merge "$D/patches.h5" -o "$OUT/b.h5" --relevance 1.3 --saddle-threshold 15mean -q
    assert_success
    for obj in /clumps /halos /peaks /hierarchy /cells; do
      run h5diff "$OUT/a.h5" "$OUT/b.h5" "$obj" "$obj"
      assert_success
    done
  done
}

@test "the test cells' densities from the patches, or from the grid for patches without them: the same catalogue" {
  h5ls "$D/patches.h5/cells/density" | grep -q "density"
  E="$BATS_TEST_TMPDIR/e"
  mkdir -p "$E"
  edit patches.h5 "del f['/cells/density']"
  run phew-merge "$D/patches.h5" -o "$OUT/c.h5" --saddle-threshold 20mean -q
  assert_success
  run phew-merge "$E/patches.h5" -o "$OUT/old.h5" --saddle-threshold 20mean -q
  assert_success
  for obj in /cells /clumps /halos /peaks /hierarchy; do
    run h5diff "$OUT/c.h5" "$OUT/old.h5" "$obj" "$obj"
    assert_success
  done
}

bad_case() { bad_input phew-merge "$OUT/c.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: a test cell's density edited below the threshold, or to NaN" {
  E="$BATS_TEST_TMPDIR/e"
  mkdir -p "$E"
  edit patches.h5 "f['/cells/density'][3] = 0"
  bad_case 3 "/cells/density row 3" "$E/patches.h5"
  edit patches.h5 "f['/cells/density'][0] = np.nan"
  bad_case 3 "/cells/density row 0" "$E/patches.h5"
}

@test "bad input: particles from a different box" {
  bad_case 3 "does not match the grid" "$D/patches.h5" --particles "$INPUTS/good.hdf5"
}
@test "bad input: wrong kind" { bad_case 3 "is a 'grid' file, expected patches" "$D/grid.h5"; }
@test "bad input: a swapped grid" { bad_case 3 "stale or swapped" "$D/patches.h5" --grid "$D/other.h5"; }
@test "bad input: relevance not above 1" {
  bad_case 2 "must be a finite number above 1" "$D/patches.h5" --relevance 1
  bad_case 2 "must be a finite number above 1" "$D/patches.h5" --relevance 0.5
}
@test "bad input: negative thresholds" {
  bad_case 2 "negative" "$D/patches.h5" --saddle-threshold=-1
  bad_case 2 "negative" "$D/patches.h5" --mass-threshold=-5
}
@test "a failed run leaves nothing half-written" {
  for phase in noise hierarchy cells write finish; do
    PHEW_TEST_FAIL_AT=$phase run phew-merge "$D/patches.h5" -o "$OUT/c.h5" -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}
