#!/usr/bin/env bats
# cic-project --refine: the adaptive mesh's grid.h5 (docs/formats.md, "grid.h5 with an adaptive mesh"),
# checked by an independent numpy reader: keys decoded, leaves tiling the grid, mass conserved; the same
# bytes on 1-4 ranks; bad options; tools that do not read it yet refuse it cleanly.
load common

setup_file() {
  load common
  make_inputs
}

setup() {
  make_inputs
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "--refine: leaves in key order that tile the grid, the mass of the particles, the refinement recorded" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/amr.h5" --grid 8 --refine 8 --levels 3 --precision float64 -q
  assert_success
  assert_only_files "$OUT" amr.h5 amr.h5.json
  run /usr/bin/python3 - "$OUT/amr.h5" <<'PY'
import h5py, json, sys, numpy as np
f = h5py.File(sys.argv[1])
g, L = f["grid"], f["grid/leaves"]
assert "density" not in g
key, level, rho = L["key"][...], L["level"][...].astype(int), L["density"][...]
K = int(L.attrs["levels"]); n = g.attrs["shape"]; cell = g.attrs["cell_size"]
assert K == 3 and L.attrs["refine_particles"] == 8 and L.attrs["buffer"] == 1
assert (np.diff(key) > 0).all(), "keys ascending"
assert ((key & 15) == level).all() and level.min() <= 1 and level.max() == K
assert (np.bincount(level, minlength=K + 1) == L.attrs["leaves_per_level"]).all()
# Decode the lower corner on the finest lattice (bits 2,5,8.. x; 1,4,7.. y; 0,3,6.. z of key >> 4).
m = key >> np.uint64(4)
def gather(v):
    out = np.zeros_like(v)
    for b in range(20):
        out |= ((v >> np.uint64(3 * b)) & np.uint64(1)) << np.uint64(b)
    return out
corner = np.stack([gather(m >> np.uint64(2)), gather(m >> np.uint64(1)), gather(m)], axis=1).astype(np.int64)
side = 2 ** (K - level)
assert (corner % side[:, None] == 0).all(), "a leaf starts on its own lattice"
# The leaves tile the finest lattice: every finest cell covered exactly once.
fine = n * 2 ** K
cover = np.zeros(fine, dtype=np.int32)
for c, s in zip(corner, side):
    cover[c[0]:c[0] + s, c[1]:c[1] + s, c[2]:c[2] + s] += 1
assert (cover == 1).all(), (cover.min(), cover.max())
volume = np.prod(cell) / 8.0 ** level
mass = (rho * volume).sum()
assert abs(mass - 4000.0) < 1e-9 * 4000, mass             # a periodic box: every particle's cloud
assert abs(g.attrs["total_mass"] - 4000.0) < 1e-9 * 4000
# The blob (1500 particles in a Gaussian of 5 around the centre) is refined to the finest level; the
# uniform background (about 5 particles per coarse cell, 0.6 per level-1 cell) is split where it
# fluctuates above 8 or where the balance reaches (on 8^3 coarse cells, all of them), and never further.
centre = (corner + side[:, None] / 2) / fine * g.attrs["box_size"]
r = np.linalg.norm(centre - 50, axis=1)
assert level[r < 3].min() == K and level[r > 40].max() <= 1, (level[r < 3].min(), level[r > 40].max())
# RAMSES' balance (flag_fine's test_flag and smooth_fine): around the parent of every split cell, the
# cells within 1 + buffer of it are split. A cell is split when a leaf lies below it.
split = [set() for _ in range(K)]
for c, l in zip(corner, level):
    for k in range(l):
        split[k].add(tuple(c // 2 ** (K - k)))
for l in range(1, K):
    nl = n[0] * 2 ** (l - 1)
    for c in split[l]:
        p = np.array(c) // 2
        for d in np.ndindex(5, 5, 5):
            q = tuple((p + np.array(d) - 2) % nl)
            assert q in split[l - 1], (l, c, q)
man = json.load(open(sys.argv[1] + ".json"))
assert man["parameters"]["levels"]["value"] == 3 if isinstance(man["parameters"]["levels"], dict) else man["parameters"]["levels"] == 3
assert list(man["summary"]["leaves_per_level"]) == list(L.attrs["leaves_per_level"])
PY
  assert_success
}

@test "--refine: the same bytes on 1, 2, 3 and 4 ranks (cic, tsc, ngp, a region, compressed)" {
  for args in "--grid 8 --refine 8 --levels 3" "--grid 12,10,8 --refine 4 --levels 2 --assignment tsc --buffer 2" \
              "--grid 6 --refine 8 --levels 4 --assignment ngp --buffer 0" \
              "--grid 10 --region 20,20,20,80,80,80 --refine 6 --levels 3 --precision float64" \
              "--grid 8 --refine 8 --levels 3 --compress"; do
    # shellcheck disable=SC2086
    run cic-project "$INPUTS/good.hdf5" -o "$OUT/r1.h5" $args -q
    assert_success
    for n in 2 3 4; do
      # shellcheck disable=SC2086
      run mpi "$n" cic-project "$INPUTS/good.hdf5" -o "$OUT/r$n.h5" $args -q
      assert_success
      run h5diff -v0 "$OUT/r1.h5" "$OUT/r$n.h5" /grid /grid
      assert_success
      run h5diff "$OUT/r1.h5" "$OUT/r$n.h5" /grid/leaves
      assert_success
    done
  done
}

@test "--refine on gas and dark matter of unequal masses: the same bytes on 1-4 ranks and 1-2 threads (the refinement's mass unit, their mean, summed exactly)" {
  # Found by the stranger check: the mean mass, a sum over ranks, differed in its last bits (refine_mass).
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  run cic-project "$snap" -o "$OUT/m1.h5" --grid auto --refine 8 --levels 3 --types all -q --threads 1
  assert_success
  for n in 2 3 4; do
    run mpi "$n" cic-project "$snap" -o "$OUT/m$n.h5" --grid auto --refine 8 --levels 3 --types all -q --threads $((n % 2 + 1))
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/m1.h5" "$OUT/m$n.h5"
    assert_success
  done
}

@test "--verbose: every stage says its memory per leaf and per test leaf on the adaptive mesh, per cell on the grid" {
  cic-project "$INPUTS/good.hdf5" -o "$OUT/amr.h5" --grid 8 --refine 8 --levels 3 -v 2>"$OUT/cic.log"
  grep -Eq "memory: [0-9]+ B per leaf at the peak so far \([0-9,]+ in all" "$OUT/cic.log"
  phew-segment "$OUT/amr.h5" -o "$OUT/patches.h5" --threshold 3mean -v 2>"$OUT/segment.log"
  grep -Eq "memory: [0-9]+ B per leaf " "$OUT/segment.log"
  grep -Eq "memory: [0-9]+ B per test leaf " "$OUT/segment.log"
  phew-merge "$OUT/patches.h5" -o "$OUT/clumps.h5" -v 2>"$OUT/merge.log"
  grep -Eq "memory: [0-9]+ B per test leaf " "$OUT/merge.log"
  cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 16 -v 2>"$OUT/uniform.log"
  grep -Eq "memory: [0-9]+ B per cell at the peak so far \(4,096 in all" "$OUT/uniform.log"
}

@test "--refine --grid auto: a coarse grid of about one particle per cell" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/auto.h5" --grid auto --refine 8 --levels 3
  assert_success
  assert_output --partial "--grid auto: 8 cells"   # 4000 particles: 15.9 per axis, down to a multiple of 8
}

@test "--refine: bad values are usage errors; --refine-positions refuses an adaptive mesh in one line" {
  bad_input cic-project "$OUT/x.h5" 2 "--refine -1" "$INPUTS/good.hdf5" --grid 8 --refine -1
  bad_input cic-project "$OUT/x.h5" 2 "--refine inf" "$INPUTS/good.hdf5" --grid 8 --refine inf
  bad_input cic-project "$OUT/x.h5" 2 "--levels 16" "$INPUTS/good.hdf5" --grid 8 --refine 8 --levels 16
  bad_input cic-project "$OUT/x.h5" 2 "--buffer -1" "$INPUTS/good.hdf5" --grid 8 --refine 8 --buffer -1
  bad_input cic-project "$OUT/x.h5" 2 "2^19" "$INPUTS/good.hdf5" --grid 512 --refine 8 --levels 12
  run cic-project "$INPUTS/good.hdf5" -o "$BATS_TEST_TMPDIR/amr.h5" --grid 8 --refine 8 --levels 2 -q
  assert_success
  bad_input phew-segment "$OUT/p.h5" 2 "--refine-positions fits a 3x3x3 block" "$BATS_TEST_TMPDIR/amr.h5" --threshold 80mean --refine-positions
}

@test "--refine: the chain on the leaves: keys, leaf volumes, the blob as one halo, its particles deblended and voting, the same data on 1-4 ranks and 1-3 threads" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/g.h5" --grid 8 --refine 8 --levels 3 --precision float64 -q
  assert_success
  for n in 1 2 3 4; do
    t=1; [ "$n" = 1 ] || t=$((n % 3 + 1))  # 1 rank, 1 thread: the reference; then 3, 1 and 2 threads
    run mpi "$n" phew-segment "$OUT/g.h5" -o "$OUT/p$n.h5" --threshold 20mean -q --threads "$t"
    assert_success
    run mpi "$n" phew-merge "$OUT/p$n.h5" -o "$OUT/c$n.h5" --relevance 2 --saddle-threshold 60mean --particles "$INPUTS/good.hdf5" -q --threads "$t"
    assert_success
    run mpi "$n" deblend "$OUT/c$n.h5" "$INPUTS/good.hdf5" -o "$OUT/k$n.h5" -q
    assert_success
    run mpi "$n" voters "$OUT/k$n.h5" "$INPUTS/good.hdf5" -o "$OUT/v$n.h5" -q
    assert_success
    if [ "$n" != 1 ]; then
      for s in p c k v; do
        run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/${s}1.h5" "$OUT/$s$n.h5"
        assert_success
      done
    fi
  done
  # An independent reading: the test leaves are the leaves above the threshold, their peaks' sums are
  # density x each leaf's own volume, and the blob (1500 particles) is one halo holding them.
  run /usr/bin/python3 - "$OUT" <<'PY'
import h5py, sys, numpy as np
d = sys.argv[1]
g, p, c = h5py.File(d + "/g.h5"), h5py.File(d + "/p1.h5"), h5py.File(d + "/c1.h5")
L = g["grid/leaves"]; key, rho, level = L["key"][...].astype(np.int64), L["density"][...], L["level"][...].astype(int)
cell = np.prod(g["grid"].attrs["cell_size"]); vol = cell / 8.0 ** level
thr = p["cells"].attrs["threshold"]
assert np.isclose(thr, 20 * g["grid"].attrs["mean_density"])
test = key[rho > thr]
idx = p["cells/index"][...]
assert (idx == test).all(), "the test cells are the leaves above the threshold, by key"
assert int(p["grid/refinement"].attrs["levels"]) == 3 and "plane_start" not in p["cells"]
peak = p["cells/peak"][...].astype(np.int64)
mass = np.bincount(peak, weights=(rho * vol)[rho > thr])[1:]
assert np.allclose(p["peaks/mass"][...], mass, rtol=1e-12), "patch masses with leaf volumes"
assert (p["peaks/n_cells"][...] == np.bincount(peak)[1:]).all()
h = c["halos"]
big = np.argmax(h["mass"][...])
assert 1200 < h["n_particles"][big] <= 1600, h["n_particles"][big]      # the blob of 1500 particles
assert np.linalg.norm(h["peak_position"][big] - 50) < 5
assert (c["cells/index"][...] == idx).all() and int(c["grid/refinement"].attrs["levels"]) == 3
# deblend: the blob's particles are those in its test leaves (the leaf holding each particle's point).
k = h5py.File(d + "/k1.h5")
parent = dict(zip(k["peaks/id"][...], k["peaks/parent_clump"][...]))
clumps_of_halo = set(c["clumps/id"][...][c["clumps/halo"][...] == h["id"][big]])
members = sum(parent[p] in clumps_of_halo for p in k["particles/peak"][...])
assert abs(members - h["n_particles"][big]) <= 0.02 * h["n_particles"][big], (members, h["n_particles"][big])
PY
  assert_success
}

@test "--refine --levels 0: the same peaks, saddles, clumps and haloes as the uniform grid (keys instead of linear indices)" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/u.h5" --grid 16 --precision float64 -q
  assert_success
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/a.h5" --grid 16 --refine 8 --levels 0 --precision float64 -q
  assert_success
  for m in u a; do
    run phew-segment "$OUT/$m.h5" -o "$OUT/p$m.h5" --threshold 1.5mean -q
    assert_success
    run phew-merge "$OUT/p$m.h5" -o "$OUT/c$m.h5" --relevance 1.2 --saddle-threshold 4mean -q
    assert_success
  done
  run /usr/bin/python3 - "$OUT" <<'PY'
import h5py, sys, numpy as np
d = sys.argv[1]
pu, pa, cu, ca = (h5py.File(f"{d}/{n}.h5") for n in ("pu", "pa", "cu", "ca"))
assert len(pu["peaks/id"]) > 3 and len(pu["saddles/peak_a"]) > 2
# Peak IDs follow (density, then the cell's id): without equal densities the IDs agree too.
for t, cols in (("peaks", ("density", "n_cells", "mass", "position")), ("saddles", ("peak_a", "peak_b", "density"))):
    for c in cols:
        assert np.allclose(pu[f"{t}/{c}"][...], pa[f"{t}/{c}"][...], rtol=1e-12, atol=0), (t, c)
assert len(pu["cells/index"]) == len(pa["cells/index"])
for t, cols in (("clumps", ("id", "halo", "n_cells", "mass", "center_of_mass")), ("halos", ("id", "n_cells", "mass"))):
    for c in cols:
        assert np.allclose(cu[f"{t}/{c}"][...], ca[f"{t}/{c}"][...], rtol=1e-12, atol=1e-12), (t, c)
PY
  assert_success
}
