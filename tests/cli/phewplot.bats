#!/usr/bin/env bats
# examples/phewplot.py: every kind of picture from tiny inputs (a RAMSES output folder and a Gadget-style
# file, as the tools take them), and what the pictures must get right: maps drawn with x to the right,
# paths broken at the periodic boundary, the mass function's units and theory, RAMSES read as the tools
# read it.
load common

plot() { /usr/bin/python3 "$PHEW_SOURCE/examples/phewplot.py" "$@"; }
# Python snippets import phewplot's functions.
export PYTHONPATH="$PHEW_SOURCE/examples${PYTHONPATH:+:$PYTHONPATH}"

# is_png FILE: a PNG of a few kB or more.
is_png() {
  [[ -s $1 ]] || fail "$1 missing"
  [[ $(head -c 8 "$1" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$1 is not a PNG"
  (($(stat -c %s "$1") > 5000)) || fail "$1 is nearly empty"
}

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  R="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32"
  # Two RAMSES outputs through the chain at 32^3 cells, a tree of both, maps around the top haloes.
  for k in 3 4; do
    o="$R/output_0000$k"
    cic-project "$o" -o "$D/r$k.grid.h5" --grid 32 -q
    phew-segment "$D/r$k.grid.h5" -o "$D/r$k.patches.h5" --threshold 80mean -q
    phew-merge "$D/r$k.patches.h5" -o "$D/r$k.clumps.h5" --relevance 2 --saddle-threshold 200mean --particles "$o" -q
    deblend "$D/r$k.clumps.h5" "$o" -o "$D/r$k.peaks.h5" -q
    voters "$D/r$k.peaks.h5" "$o" -o "$D/r$k.voters.h5" -q
  done
  unbind "$D/r4.clumps.h5" "$R/output_00004" -o "$D/r4.bound.h5" -q
  mergertree "$D/r3.peaks.h5" "$D/r4.peaks.h5" -o "$D/tree.h5" --stats "$D/stats.json" -q
  # The adaptive mesh of the last output, as RAMSES refined it (levels 5-10, m_refine 8).
  cic-project "$R/output_00004" -o "$D/a4.grid.h5" --grid 32 --refine 8 --levels 5 --buffer 2 -q
  phew-segment "$D/a4.grid.h5" -o "$D/a4.patches.h5" --threshold 80mean -q
  phew-merge "$D/a4.patches.h5" -o "$D/a4.clumps.h5" --relevance 3 --saddle-threshold 200mean -q
  dtfe-surface "$R/output_00004" -c "$D/r4.clumps.h5" --top 2 -L 2 --resolution 16 -o "$D/maps.h5" -q
  # Two spheres crossing at 600 km/s with their potential stored (Gadget-style HDF5): deblend splits them.
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$D/cross.hdf5" --dv 600 --n 4000 --seed 1 --potential
  cic-project "$D/cross.hdf5" -o "$D/cross.grid.h5" --grid 32 -q
  phew-segment "$D/cross.grid.h5" -o "$D/cross.patches.h5" --threshold 50mean -q
  phew-merge "$D/cross.patches.h5" -o "$D/cross.clumps.h5" --relevance 2 -q
  deblend "$D/cross.clumps.h5" "$D/cross.hdf5" -o "$D/cross.peaks.h5" -q
  voters "$D/cross.peaks.h5" "$D/cross.hdf5" -o "$D/cross.voters.h5" --potential snapshot -q
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  R="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "every kind of picture, from a RAMSES folder and from a Gadget-style file" {
  run plot slice "$D/r4.clumps.h5" "$D/r4.grid.h5" "$OUT/slice.png" --thickness 4
  assert_success
  run plot massfunction "$D/r4.clumps.h5" "$OUT/mf.png"
  assert_success
  run plot dendrogram "$D/r4.clumps.h5" "$OUT/dendrogram.png"
  assert_success
  run plot maps "$D/maps.h5" "$OUT/maps.png"
  assert_success
  run plot paths "$OUT/paths.png" "$D/tree.h5" "$D/tree.h5" --titles "a,b"
  assert_success
  run plot treestats "$D/stats.json" "$OUT/treestats.png"
  assert_success
  run plot velocity "$D/r4.peaks.h5" "$R/output_00004" "$OUT/velocity-ramses.png"
  assert_success
  run plot velocity "$D/cross.peaks.h5" "$D/cross.hdf5" "$OUT/velocity.png"
  assert_success
  run plot voters "$D/r4.voters.h5" "$D/r4.peaks.h5" "$R/output_00004" "$OUT/voters-ramses.png"
  assert_success
  run plot voters "$D/cross.voters.h5" "$D/cross.peaks.h5" "$D/cross.hdf5" "$OUT/voters.png"
  assert_success
  run plot ramses "$D/r4.clumps.h5" "$R/output_00004" "$OUT/ramses.png" --grid "$D/r4.grid.h5"
  assert_success
  run plot labels "$D/r4.clumps.h5" "$OUT/labels.h5"
  assert_success
  run plot levels "$D/a4.clumps.h5" "$D/a4.grid.h5" "$OUT/levels.png"
  assert_success
  run plot vmaxfunction "$D/r4.bound.h5" "$OUT/vmaxfunction.png" --min-particles 20 --print-rows 3
  assert_success
  # The counts it prints are bound.h5's, counted here independently.
  run /usr/bin/python3 - "$D/r4.bound.h5" "$output" <<'PY'
import sys, h5py, numpy as np
o = h5py.File(sys.argv[1])["objects"]
v, parent, n = o["vmax"][...], o["parent"][...], o["n_bound"][...]
rows = [l.split() for l in sys.argv[2].splitlines()[1:]]
assert len(rows) == 3, rows
for vm, nh, ns in rows:
    keep = (v > 0) & (n >= 20) & (v >= float(vm) * (1 - 1e-6))
    assert int(nh) == np.count_nonzero(keep & (parent == 0)) and int(ns) == np.count_nonzero(keep & (parent != 0)), (vm, nh, ns)
assert int(rows[0][1]) >= 1
print("ok")
PY
  assert_output "ok"
  run plot levels "$D/r4.clumps.h5" "$D/r4.grid.h5" "$OUT/none.png"
  assert_failure
  assert_output --partial "not an adaptive grid"
  for f in slice mf dendrogram maps paths treestats velocity-ramses velocity voters-ramses voters ramses levels vmaxfunction; do
    is_png "$OUT/$f.png"
  done
}

@test "a RAMSES folder is read as the tools read it (against the independent HDF5 conversion)" {
  run /usr/bin/python3 - "$R/output_00004" "$R/reference/snap_004.hdf5" "$D/r4.grid.h5" <<'PY'
import sys, h5py, numpy as np
import phewplot
folder, reference, grid = sys.argv[1:4]
r = phewplot.read_snapshot(folder)
g = dict(h5py.File(grid)["grid"].attrs)
with h5py.File(reference) as f:
    p = f["PartType1"]
    ids, x, v, m = p["ParticleIDs"][...], p["Coordinates"][...], p["Velocities"][...], p["Masses"][...]
order = np.argsort(r["id"])
assert (r["id"][order] == ids).all()
assert np.allclose(r["position"][order], x, rtol=1e-6, atol=1e-6)
# peculiar velocities, as phew's reader gives them and the reference holds them
assert np.allclose(r["velocity"][order], v, rtol=1e-6, atol=1e-4)
assert np.allclose(r["mass"][order], m, rtol=1e-6)
assert np.allclose(r["box"], g["box_size"], rtol=1e-6)
print("ok")
PY
  assert_output "ok"
}

@test "maps: x (the map's u axis) to the right and y up, in length units on one shared scale" {
  # A faint sphere at the field's centre and a bright one 30 kpc along +x: the bright spot must be drawn
  # to the right of the centre, at the centre's height.
  run /usr/bin/python3 - "$OUT" <<'PY'
import sys, h5py, numpy as np
out = sys.argv[1]
rng = np.random.default_rng(5)
def blob(n, c, s):
    return c + rng.normal(0, s, size=(n, 3))
pos = np.concatenate([rng.uniform(0, 200, size=(3000, 3)), blob(1000, [100, 100, 100], 8), blob(3000, [130, 100, 100], 3)])
with h5py.File(f"{out}/blobs.hdf5", "w") as f:
    h = f.create_group("Header")
    n = np.array([0, len(pos), 0, 0, 0, 0])
    h.attrs.update(BoxSize=200.0, NumPart_ThisFile=n.astype(np.uint32), NumPart_Total=n.astype(np.uint64),
                   NumPart_Total_HighWord=np.zeros(6, np.uint32), MassTable=np.array([0, 1.0, 0, 0, 0, 0]),
                   Time=1.0, Redshift=0.0, NumFilesPerSnapshot=np.int32(1))
    g = f.create_group("PartType1")
    g["Coordinates"] = pos % 200.0
    g["Velocities"] = np.zeros_like(pos)
    g["ParticleIDs"] = np.arange(1, len(pos) + 1, dtype=np.uint64)
open(f"{out}/centre.txt", "w").write("100 100 100\n")
PY
  assert_success
  run dtfe-surface "$OUT/blobs.hdf5" -c "$OUT/centre.txt" -L 100 --resolution 40 -o "$OUT/maps.h5" -q
  assert_success
  run plot maps "$OUT/maps.h5" "$OUT/maps.png"
  assert_success
  run /usr/bin/python3 - "$OUT/maps.h5" <<'PY'
import os, sys, h5py, numpy as np
import phewplot
m = h5py.File(sys.argv[1])["maps"]
img, extent = phewplot.map_image(m["sigma"][0], m["center"][0], m["size"][0], "x", "y")
row, col = np.unravel_index(np.argmax(img), img.shape)  # imshow(origin="lower"): row up, column right
x = extent[0] + (col + 0.5) * (extent[1] - extent[0]) / img.shape[1]
y = extent[2] + (row + 0.5) * (extent[3] - extent[2]) / img.shape[0]
assert abs(x - 130) < 5 and abs(y - 100) < 5, (x, y)
print("ok")
PY
  assert_output "ok"
}

@test "paths: a lineage crossing the periodic box is broken, not drawn across it" {
  run /usr/bin/python3 - <<'PY'
import os, sys, numpy as np
import phewplot
x = np.array([[18.0, 5, 5], [19.5, 5, 5], [0.5, 5.2, 5], [1.5, 5.3, 5]])
b = phewplot.broken_path(x, [20, 20, 20])
assert len(b) == 5 and np.isnan(b[2]).all() and (b[[0, 1, 3, 4]] == x).all(), b
assert len(phewplot.broken_path(x[:2], [20, 20, 20])) == 2
y = x.copy(); y[:, 0] = 5; y[:, 1] = [19.8, 0.1, 0.2, 19.9]  # across y, twice
assert np.isnan(phewplot.broken_path(y, [20, 20, 20])[:, 0]).sum() == 2
print("ok")
PY
  assert_output "ok"
}

@test "mass function: dn/dlog10 M in (Mpc/h)^-3 per Msun/h, and the theory of the run's cosmology" {
  run /usr/bin/python3 - "$D/r4.clumps.h5" <<'PY'
import os, sys, h5py, numpy as np
import phewplot as pp
assert pp.length_in_mpc_h("kpc/h") == 1e-3 and pp.length_in_mpc_h("Mpc/h") == 1
assert abs(pp.length_in_mpc_h("kpc", 0.7) - 7e-4) < 1e-15 and pp.length_in_mpc_h("kpc") is None
assert pp.mass_in_msun_h("1e10 Msun/h") == 1e10 and abs(pp.mass_in_msun_h("Msun", 0.5) - 0.5) < 1e-15
# sigma(8 Mpc/h) is sigma8; the growth factor is 1 today and ~a when matter dominates
om, h = 0.31, 0.677
spec = pp.LinearSpectrum(lambda k: pp.transfer_eh_nowiggle(k, om, 0.049, h), 0.965, 0.81)
assert abs(spec.sigma(8.0)[0] - 0.81) < 1e-9
assert abs(pp.growth_factor(1.0, om, 1 - om) - 1) < 1e-12
assert abs(pp.growth_factor(0.01, om, 1 - om) / 0.01 / (pp.growth_factor(0.02, om, 1 - om) / 0.02) - 1) < 0.01
# the cluster abundance of this cosmology (Tinker et al. 2008): n(> 1e14 Msun/h) ~ 3e-5 (Mpc/h)^-3, and
# Sheth-Tormen within 30 % of Tinker's fit from 1e12 to 1e15 Msun/h
m = np.geomspace(1e12, 1e16, 401)
st, tinker = pp.mass_functions(m, spec, om, 0.0, 1.0)
above = m >= 1e14
n14 = np.trapz(tinker[above], np.log10(m[above]))
assert 1.5e-5 < n14 < 5e-5, n14
assert (np.abs(st[m <= 1e15] / tinker[m <= 1e15] - 1) < 0.3).all()
# at z = 1 there are far fewer clusters
st1, tinker1 = pp.mass_functions(m, spec, om, 1.0, pp.growth_factor(0.5, om, 1 - om))
assert (tinker1[above] < 0.2 * tinker[above]).all()
# the points: every halo counted once, per (Mpc/h)^3 and per dex of Msun/h
with h5py.File(sys.argv[1]) as c:
    g = c["grid"].attrs
    mass = c["halos/mass"][...] * pp.mass_in_msun_h(g["mass_units"], g["hubble_param"])
    volume = np.prod(g["box_size"] * pp.length_in_mpc_h(g["length_units"], g["hubble_param"]))
assert abs(volume / 8000 - 1) < 1e-6 and len(mass) > 5
edges = np.arange(9, 16.01, 0.2)
y, err = pp.binned_mass_function(mass, volume, edges)
assert abs((y * 0.2 * volume).sum() - len(mass)) < 1e-9
print("ok")
PY
  assert_output "ok"
}
