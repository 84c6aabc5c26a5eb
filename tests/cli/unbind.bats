#!/usr/bin/env bats
# unbind end to end: a Plummer sphere against its analytic bound mass, Vmax and Rmax, with particles
# faster than escape; an NFW halo's SO mass, Vmax and scale radius against its truth file; yt loads the --export-yt catalogue; deblend's peaks as the objects; bad inputs.
# The hierarchy (subhaloes, --saddle, ranks and threads, mergertree) is in unbind-hierarchy.bats.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Plummer: M = 1e10 Msun, a = 1 kpc, 100,000 particles; 200 of those within 3a get twice their escape
  # speed (v_esc^2 = 2 G M / sqrt(r^2 + a^2)), so they must be the only unbound ones.
  synth-particles plummer -o "$D/pl.hdf5" --particles 100000 --seed 3 -q
  /usr/bin/python3 - "$D/pl.hdf5" "$D/fast.npy" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+")
x, v, ids = f["PartType1/Coordinates"], f["PartType1/Velocities"], f["PartType1/ParticleIDs"][...]
pos, vel = x[...].astype(float), v[...].astype(float)
r = np.linalg.norm(pos, axis=1)
pick = np.random.default_rng(1).choice(np.flatnonzero(r < 3), 200, replace=False)
vesc = np.sqrt(2 * 43007.1 * 1.0 / np.sqrt(r[pick] ** 2 + 1))
u = vel[pick] / np.linalg.norm(vel[pick], axis=1)[:, None]
vel[pick] = 2 * vesc[:, None] * u
v[...] = vel.astype(v.dtype)
np.save(sys.argv[2], np.sort(ids[pick]))
PY
  cic-project "$D/pl.hdf5" -o "$D/pl.grid.h5" --grid 32 --region -40,-40,-40,40,40,40 -q
  phew-segment "$D/pl.grid.h5" -o "$D/pl.patches.h5" --threshold 1mean -q
  phew-merge "$D/pl.patches.h5" -o "$D/pl.clumps.h5" --relevance 3 -q
  # Two haloes at one place moving apart at 600 km/s (Geda & Teyssier Fig. 1): one clump, two peaks.
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$D/split.hdf5" --dv 600 --n 10000 --seed 1
  cic-project "$D/split.hdf5" -o "$D/split.grid.h5" --grid 48 -q
  phew-segment "$D/split.grid.h5" -o "$D/split.patches.h5" --threshold 50mean -q
  phew-merge "$D/split.patches.h5" -o "$D/split.clumps.h5" --relevance 2 -q
  deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$D/split.peaks.h5" -q
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "a Plummer sphere: every particle given is bound but the fast ones; Vmax and Rmax as analytic" {
  run unbind "$D/pl.clumps.h5" "$D/pl.hdf5" -o "$OUT/b.h5" --export-yt "$OUT/halos.0.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/b.h5" "$D/fast.npy" "$D/pl.hdf5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); fast = np.load(sys.argv[2])
o, p = f["objects"], f["particles"]
G = f.attrs["gravitational_constant"]
assert abs(G / 43007.1 - 1) < 1e-3, G  # Gadget's value; phew's constants differ in the 4th digit
big = int(np.argmax(o["n_particles"][...]))
given, bound = o["n_particles"][big], o["n_bound"][big]
ids, obj = p["id"][...], p["object"][...]
in_fast = np.isin(ids, fast)
# Every fast particle given is unbound, every other particle given is bound.
assert (obj[in_fast] == 0).all(), (obj[in_fast] != 0).sum()
assert (obj[~in_fast & (p["member_of"][...] == o["id"][big])] == o["id"][big]).all()
assert bound == given - in_fast.sum(), (given, bound, in_fast.sum())
# The test cells hold almost the whole sphere (1 mean on an 80 kpc cube): >= 98% of its 100,000.
assert given >= 98000, given
m = o["mass"][big]
assert abs(m - bound * 1e-5) < 1e-9, m
# Vmax^2 = (2 / 3^1.5) G M / a at Rmax = sqrt(2) a for a Plummer sphere. 1e5 particles: M(<Rmax)
# (38.5% of them) has a Poisson error of 0.5%, so Vmax within 1%; Rmax sits on a flat maximum
# (v_c changes by 0.6% over +-10% in r), so within 5%.
vmax = np.sqrt(2 / 3 ** 1.5 * G * 1.0 / 1.0)
print(f"vmax {o['vmax'][big]:.3f} analytic {vmax:.3f}; rmax {o['rmax'][big]:.4f} analytic {np.sqrt(2):.4f}; "
      f"bound {bound} of {given}")
assert abs(o["vmax"][big] / vmax - 1) < 0.01
assert abs(o["rmax"][big] / np.sqrt(2) - 1) < 0.05
assert np.linalg.norm(o["centre"][big]) < 0.05, o["centre"][big]
assert o["converged"][big] == 1 and o["parent"][big] == 0
# No NaN anywhere: an unmeasurable property is 0.
for k in o:
    assert np.isfinite(o[k][...]).all(), k
print("ok")
PY
  assert_success
  assert_output --partial "ok"
}

@test "every centre is written: the chosen one is its column, the most-bound and lowest-potential positions are particles" {
  run unbind "$D/pl.clumps.h5" "$D/pl.hdf5" -o "$OUT/s.h5" -q
  assert_success
  run unbind "$D/pl.clumps.h5" "$D/pl.hdf5" -o "$OUT/m.h5" -q --centre most-bound --potential tree
  assert_success
  run /usr/bin/python3 - "$OUT/s.h5" "$OUT/m.h5" "$D/pl.hdf5" <<'PY'
import sys, h5py, numpy as np
s, m, snap = (h5py.File(p) for p in sys.argv[1:4])
x = snap["PartType1/Coordinates"][...]
for f, chosen in ((s, "shrinking_sphere_centre"), (m, "most_bound_position")):
    o = f["objects"]
    big = int(np.argmax(o["n_particles"][...]))
    assert np.array_equal(o["centre"][big], o[chosen][big]), (o["centre"][big], o[chosen][big])
    for k in ("most_bound_position", "potential_minimum_position"):
        d = np.min(np.linalg.norm(x - o[k][big], axis=1))
        assert d < 1e-9, (k, d)  # a particle's own position
    # A Plummer sphere of a = 1 centred on the origin: the centres within a few hundredths of it; the
    # most-bound particle is the slowest of the deep ones, anywhere in the flat core (0.1 a here).
    for k in ("centre_of_mass", "potential_minimum_position", "shrinking_sphere_centre"):
        assert np.linalg.norm(o[k][big]) < 0.05, (k, o[k][big])
    assert np.linalg.norm(o["most_bound_position"][big]) < 0.3, o["most_bound_position"][big]
print("ok")
PY
  assert_success
  assert_output --partial "ok"
}

@test "an NFW halo in a cosmological box: M200c, R200c, Vmax, Rmax and r_s as the truth file's" {
  # M200 = 1e12 Msun/h, c = 10, 100,000 particles; a threshold of 30 mean keeps the test cells beyond
  # r200 (rho(r200) = 131 mean here), so the SO sphere holds every particle it should.
  synth-particles nfw -o "$OUT/n.hdf5" --particles 100000 --mass 100 --concentration 10 --box 2000 \
    --cosmology 0.3,0.7,0.7 --seed 4 -q
  cic-project "$OUT/n.hdf5" -o "$OUT/n.grid.h5" --grid 128 -q
  phew-segment "$OUT/n.grid.h5" -o "$OUT/n.patches.h5" --threshold 30mean -q
  phew-merge "$OUT/n.patches.h5" -o "$OUT/n.clumps.h5" -q
  run unbind "$OUT/n.clumps.h5" "$OUT/n.hdf5" -o "$OUT/n.bound.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/n.bound.h5" "$OUT/n.truth.h5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); o = f["objects"]; t = h5py.File(sys.argv[2])["components"]
G = f.attrs["gravitational_constant"]
b = int(np.argmax(o["n_particles"][...]))
m200, r200, rs = t["m200"][0], t["r200"][0], t["scale_radius"][0]
c = r200 / rs
mu = lambda y: np.log1p(y) - y / (1 + y)
vmax = np.sqrt(G * m200 / r200 * 0.2162 * c / mu(c))  # v_c^2 peaks at 2.1626 r_s
got = {k: float(o[k][b]) for k in ("m200c", "r200c", "vmax", "rmax", "rs_fit", "rs_klypin")}
print(got, "analytic", m200, r200, vmax, 2.1626 * rs, rs)
# 1e5 particles: the masses inside r200 and Rmax carry 0.3-0.5% Poisson errors.
assert abs(got["m200c"] / m200 - 1) < 0.02 and abs(got["r200c"] / r200 - 1) < 0.01
assert abs(got["vmax"] / vmax - 1) < 0.01 and abs(got["rmax"] / (2.1626 * rs) - 1) < 0.05
assert abs(got["rs_fit"] / rs - 1) < 0.1 and abs(got["rs_klypin"] / rs - 1) < 0.1
assert o["n_bound"][b] == o["n_particles"][b]
print("ok")
PY
  assert_success
  assert_output --partial "ok"
}

@test "the yt export: yt.load opens it as a halo catalogue with the bound masses and Vmax in cgs" {
  unbind "$D/pl.clumps.h5" "$D/pl.hdf5" -o "$OUT/b.h5" --export-yt "$OUT/halos.0.h5" -q
  [ -f "$OUT/halos.0.h5.json" ]
  run /usr/bin/python3 - "$OUT/b.h5" "$OUT/halos.0.h5" <<'PY'
import sys, h5py, numpy as np, yt
yt.set_log_level(40)
o = h5py.File(sys.argv[1])["objects"]
keep = (o["dissolved"][...] == 0) & (o["n_bound"][...] > 0)
ds = yt.load(sys.argv[2])
assert type(ds).__name__ == "YTHaloCatalogDataset", type(ds)
ad = ds.all_data()
ids = ad["halos", "particle_identifier"].d.astype(np.int64)
order = np.argsort(ids)
assert (ids[order] == o["id"][...][keep]).all(), ids
msun = ad["halos", "particle_mass"].to("Msun").d[order]
assert np.allclose(msun, o["mass"][...][keep] * 1e10, rtol=1e-3), msun  # Gadget's Msun: 1.989e33 g
vmax = ad["halos", "vmax"].to("km/s").d[order]
assert np.allclose(vmax, o["vmax"][...][keep], rtol=1e-12), vmax
x = ad["halos", "particle_position_x"].to("kpc").d[order]
assert np.allclose(x, o["centre"][...][keep][:, 0], rtol=1e-3, atol=1e-6), x
print("ok", len(ids))
PY
  assert_success
  assert_output --partial "ok"
}

@test "deblend's peaks.h5: two haloes superposed in space, unbound as one clump, bound as two peaks" {
  run unbind "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/c.h5" -q
  assert_success
  run unbind "$D/split.peaks.h5" "$D/split.hdf5" -o "$OUT/p1.h5" -q
  assert_success
  for n in 2 3; do
    run mpi "$n" unbind "$D/split.peaks.h5" "$D/split.hdf5" -o "$OUT/p$n.h5" -q
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/p1.h5" "$OUT/p$n.h5"
    assert_success
  done
  run /usr/bin/python3 - "$OUT/c.h5" "$OUT/p1.h5" "$D/split.peaks.h5" <<'PY'
import sys, h5py, numpy as np
c = h5py.File(sys.argv[1])["objects"]; p = h5py.File(sys.argv[2]); peaks = h5py.File(sys.argv[3])
# One clump moving both ways at +-300 km/s: its mean frame leaves every particle above escape.
assert len(c["id"]) == 1 and c["n_bound"][0] < 0.1 * c["n_particles"][0], (c["n_bound"][...], c["n_particles"][...])
o = p["objects"]
assert list(o["id"]) == list(peaks["peaks/id"]) and len(o["id"]) == 2
assert (o["n_particles"][...] == peaks["peaks/n_particles"][...]).all()
assert (o["n_bound"][...] > 0.95 * o["n_particles"][...]).all(), o["n_bound"][...]
assert np.allclose(np.sort(o["bulk_velocity"][...][:, 0]), [-300, 300], atol=15), o["bulk_velocity"][...]
# /particles/member_of is each particle's peak of peaks.h5.
m = dict(zip(peaks["particles/id"][...], peaks["particles/peak"][...]))
assert all(m[i] == k for i, k in zip(p["particles/id"][...], p["particles/member_of"][...]))
print("ok")
PY
  assert_success
  assert_output --partial "ok"
}

@test "bad input: one line, the documented exit code, nothing written" {
  bad_input unbind "$OUT/b.h5" 2 "centre 'middle'" "$D/pl.clumps.h5" "$D/pl.hdf5" --centre middle
  bad_input unbind "$OUT/b.h5" 2 "'exact'" "$D/pl.clumps.h5" "$D/pl.hdf5" --potential exact
  bad_input unbind "$OUT/b.h5" 2 "needs --potential tree" "$D/pl.clumps.h5" "$D/pl.hdf5" --centre most-bound
  bad_input unbind "$OUT/b.h5" 2 "needs --potential tree" "$D/pl.clumps.h5" "$D/pl.hdf5" --centre potential-minimum
  bad_input unbind "$OUT/b.h5" 2 "NAME.0.h5" "$D/pl.clumps.h5" "$D/pl.hdf5" --export-yt "$OUT/halos.h5"
  bad_input unbind "$OUT/b.h5" 2 "--min-bound" "$D/pl.clumps.h5" "$D/pl.hdf5" --min-bound 0
  bad_input unbind "$OUT/b.h5" 2 "--threads" "$D/pl.clumps.h5" "$D/pl.hdf5" --threads 0
  bad_input unbind "$OUT/b.h5" 3 "wrong stage" "$D/pl.patches.h5" "$D/pl.hdf5"
  bad_input unbind "$OUT/b.h5" 3 "does not match the grid" "$D/split.peaks.h5" "$D/pl.hdf5"
  without_velocities "$D/pl.hdf5" "$BATS_TEST_TMPDIR/novel.hdf5"
  bad_input unbind "$OUT/b.h5" 3 "" "$D/pl.clumps.h5" "$BATS_TEST_TMPDIR/novel.hdf5"
  bad_input unbind "$OUT/b.h5" 3 "" "$D/pl.clumps.h5" "$D/split.hdf5"
  bad_input unbind "$OUT/b.h5" 2 "--saddle needs a clumps.h5" "$D/split.peaks.h5" "$D/split.hdf5" --saddle
  # Per-type apertures: a radius > 0, at most eight of them; a type the snapshot lacks.
  bad_input unbind "$OUT/b.h5" 2 "--apertures: 0 is not a radius" "$D/pl.clumps.h5" "$D/pl.hdf5" --apertures 30,0
  bad_input unbind "$OUT/b.h5" 2 "--apertures: -5 is not a radius" "$D/pl.clumps.h5" "$D/pl.hdf5" --apertures -5
  bad_input unbind "$OUT/b.h5" 2 "at most 8" "$D/pl.clumps.h5" "$D/pl.hdf5" --apertures 1,2,3,4,5,6,7,8,9
  bad_input unbind "$OUT/b.h5" 3 "types present" "$D/pl.clumps.h5" "$D/pl.hdf5" --types 4 --allow-other-types
}

@test "bad input: zero or negative masses are refused, named by particle" {
  # The grid is made of the dark matter (type 1); gas (type 0) with masses 0 or -1 is read only when
  # unbind is asked for it, so its own check, not the snapshot's fingerprint, must refuse it.
  local m
  for m in 0 -1; do
    /usr/bin/python3 - "$D/pl.hdf5" "$BATS_TEST_TMPDIR/gas$m.hdf5" "$m" <<'PY'
import shutil, sys, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
f = h5py.File(sys.argv[2], "r+")
h = f["Header"].attrs
n = h["NumPart_ThisFile"].copy(); n[0] = 10
h["NumPart_ThisFile"] = n; h["NumPart_Total"] = n
g = f.create_group("PartType0")
g["Coordinates"] = np.zeros((10, 3), np.float32); g["Velocities"] = np.zeros((10, 3), np.float32)
g["ParticleIDs"] = np.arange(10**7, 10**7 + 10, dtype=np.uint64)
g["Masses"] = np.full(10, float(sys.argv[3]))
PY
    cic-project "$BATS_TEST_TMPDIR/gas$m.hdf5" -o "$BATS_TEST_TMPDIR/gas$m.grid.h5" --grid 32 --region -40,-40,-40,40,40,40 --types 1 -q
    phew-segment "$BATS_TEST_TMPDIR/gas$m.grid.h5" -o "$BATS_TEST_TMPDIR/gas$m.patches.h5" --threshold 1mean -q
    phew-merge "$BATS_TEST_TMPDIR/gas$m.patches.h5" -o "$BATS_TEST_TMPDIR/gas$m.clumps.h5" --relevance 3 -q
    bad_input unbind "$OUT/b.h5" 3 "has mass $m (masses must be positive" "$BATS_TEST_TMPDIR/gas$m.clumps.h5" \
      "$BATS_TEST_TMPDIR/gas$m.hdf5" --types 0,1 --allow-other-types
    # The grid's own particles are fine: unbind runs on them.
    run unbind "$BATS_TEST_TMPDIR/gas$m.clumps.h5" "$BATS_TEST_TMPDIR/gas$m.hdf5" -o "$OUT/b.h5" -q
    assert_success
    rm -f "$OUT"/b.h5*
  done
}

@test "objects of a single particle: one warning, dissolved (never a NaN), the same at 1 and 3 ranks" {
  # 20 lone particles 20 kpc/h apart in a 100 kpc/h box on a 32^3 grid: each is alone above a threshold of 1 mean, a
  # halo of one particle (Poisson noise the grid resolves), beside a 3,000-particle blob that is bound.
  /usr/bin/python3 - "$BATS_TEST_TMPDIR/lone.hdf5" <<'PY'
import sys, h5py, numpy as np
rng = np.random.default_rng(5)
blob = 50 + rng.normal(0, 2, (3000, 3))
lone = np.array([[10.3 + 20 * i, 10.7 + 20 * j, 90.2] for i in range(5) for j in range(4)])
pos = np.concatenate([blob, lone]).astype(np.float32)
vel = np.concatenate([rng.normal(0, 5, (3000, 3)), rng.normal(0, 50, (20, 3))]).astype(np.float32)
with h5py.File(sys.argv[1], "w") as f:
    h = f.create_group("Header"); n = np.array([0, len(pos), 0, 0, 0, 0], np.uint32)
    h.attrs["NumPart_ThisFile"] = n; h.attrs["NumPart_Total"] = n
    h.attrs["NumPart_Total_HighWord"] = np.zeros(6, np.uint32); h.attrs["MassTable"] = np.zeros(6)
    h.attrs["BoxSize"] = 100.0; h.attrs["NumFilesPerSnapshot"] = 1
    for k, v in dict(Time=1.0, Redshift=0.0, Omega0=0.3, OmegaLambda=0.7, HubbleParam=0.7).items(): h.attrs[k] = v
    g = f.create_group("PartType1"); g["Coordinates"] = pos; g["Velocities"] = vel
    g["ParticleIDs"] = np.arange(1, len(pos) + 1, dtype=np.uint64); g["Masses"] = np.full(len(pos), 2.7e-6)  # Omega_m rho_crit in kpc/h
PY
  local s="$BATS_TEST_TMPDIR/lone"
  cic-project "$s.hdf5" -o "$s.grid.h5" --grid 32 -q
  phew-segment "$s.grid.h5" -o "$s.patches.h5" --threshold 1mean -q 2>/dev/null
  phew-merge "$s.patches.h5" -o "$s.clumps.h5" --relevance 1.5 --noise-floor none -q  # keep them: unbind's case
  run --separate-stderr unbind "$s.clumps.h5" "$s.hdf5" -o "$OUT/b1.h5"
  assert_success
  [[ $(grep -c "warning: 20 of .* objects hold a single particle" <<<"$stderr") == 1 ]] || fail "$stderr"
  run mpi 3 unbind "$s.clumps.h5" "$s.hdf5" -o "$OUT/b3.h5" -q
  assert_success
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/b1.h5" "$OUT/b3.h5"
  /usr/bin/python3 - "$OUT/b1.h5" "$OUT/b1.h5.json" <<'PY'
import json, sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r"); o = f["objects"]
own = o["n_particles"][...] - o["n_received"][...]
single = own == 1
assert single.sum() == 20, single.sum()
assert (o["n_bound"][...][single] == 0).all() and o["dissolved"][...][single].all()
for name, d in o.items():  # a property that cannot be measured is 0, never NaN
    if d.dtype.kind == "f": assert np.isfinite(d[...]).all(), name
big = np.argmax(own)
assert own[big] >= 2900 and o["n_bound"][big] > 0.8 * own[big], (own[big], o["n_bound"][big])
assert json.load(open(sys.argv[2]))["summary"]["n_single"] == 20
PY
}
