#!/usr/bin/env bats
# unbind's per-type columns on a synthetic galaxy with known answers: a stellar Hernquist sphere (type 4)
# at the centre of an NFW halo (type 1), made by synth-particles with its truth file. Every star is
# bound, the stellar mass and half-mass radius are the truth's, the apertures equal a direct count,
# the per-type masses add up to the totals; the same columns at 1 and 3 ranks with threads; the yt
# catalogue carries them.
load common

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  cat >"$D/galaxy.json" <<'JSON'
{"box": 0, "seed": 5, "components": [
  {"name": "halo", "model": "nfw", "particles": 40000, "mass": 100, "concentration": 10},
  {"name": "stars", "model": "hernquist", "type": 4, "particles": 20000, "mass": 3, "scale_radius": 3,
   "truncation": 10, "host": "halo"}]}
JSON
  synth-particles "$D/galaxy.json" -o "$D/galaxy.hdf5" -q
  cic-project "$D/galaxy.hdf5" -o "$D/grid.h5" --grid 64 --region -400,-400,-400,400,400,400 --types all -q
  phew-segment "$D/grid.h5" -o "$D/patches.h5" --threshold 1mean -q
  phew-merge "$D/patches.h5" -o "$D/clumps.h5" --relevance 3 -q
  unbind "$D/clumps.h5" "$D/galaxy.hdf5" -o "$D/bound.h5" --apertures 10,30 --export-yt "$D/yt.0.h5" -q
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "a stellar sphere in a dark halo: its bound mass and half-mass radius are the truth's; apertures a direct count" {
  run /usr/bin/python3 - "$D/bound.h5" "$D/galaxy.hdf5" "$D/galaxy.truth.h5" <<'PY'
import sys, h5py, numpy as np
bound, snap, truth = (h5py.File(p, "r") for p in sys.argv[1:])
o = bound["objects"]
names = [str(n) for n in o.attrs["types"]]
assert list(o.attrs["type_codes"]) == [0, 1, 2, 3, 4, 5], o.attrs["type_codes"]
assert names == ["gas", "dark_matter", "dark_matter_2", "dark_matter_3", "stars", "black_holes"], names
assert list(o.attrs["apertures_kpc"]) == [10, 30]
galaxy = int(np.argmax(o["mass"][...]))
stars_truth = list(truth["components"].attrs["names"] if "names" in truth["components"].attrs else [])
mass, radius, n = o["mass_type"][galaxy], o["half_mass_radius_type"][galaxy], o["n_bound_type"][galaxy]
m_true, r_true = truth["components/mass"][1], truth["components/half_mass_radius"][1]
print(f"stars: {n[4]} bound, mass {mass[4]:.6g} (truth {m_true:.6g}), half-mass radius {radius[4]:.4g} kpc "
      f"(truth {r_true:.4g}); dark matter {n[1]} bound, half-mass radius {radius[1]:.4g} kpc")
assert n[4] == 20000, "every star is bound"
assert abs(mass[4] / m_true - 1) < 1e-6, "the stellar mass is the truth's (float32 masses)"
assert abs(radius[4] / r_true - 1) < 0.03, "the stellar half-mass radius within sampling noise"
assert n[0] == n[2] == n[3] == n[5] == 0 and mass[0] == 0 and radius[5] == 0, "absent types: 0"
assert np.allclose(o["mass_type"][...].sum(axis=1), o["mass"][...], rtol=1e-12, atol=0)
assert np.allclose(o["mass_inclusive_type"][...].sum(axis=1), o["mass_inclusive"][...], rtol=1e-12, atol=0)
# The apertures: the bound particles of each type within 10 and 30 kpc of the centre (a = 1, open box).
pid, obj = bound["particles/id"][...], bound["particles/object"][...]
mine = set(pid[obj == o["id"][galaxy]].tolist())
c = o["centre"][galaxy]
for t in (1, 4):
    g = snap[f"PartType{t}"]
    keep = np.array([i in mine for i in g["ParticleIDs"][...].tolist()])
    r = np.linalg.norm(g["Coordinates"][...].astype(float)[keep] - c, axis=1)
    m = g["Masses"][...].astype(float)[keep] if "Masses" in g else np.full(keep.sum(), snap["Header"].attrs["MassTable"][t])
    for k, ap in enumerate((10, 30)):
        want, got = m[r <= ap].sum(), o["aperture_mass_type"][galaxy, k, t]
        assert abs(got - want) <= 1e-9 * want, (t, ap, got, want)
print("apertures equal the direct count")
PY
  echo "$output"
  assert_success
}

@test "the per-type columns are the same at 3 ranks with 2 threads; the yt catalogue has them in cgs" {
  run mpi 3 unbind "$D/clumps.h5" "$D/galaxy.hdf5" -o "$OUT/b3.h5" --apertures 10,30 --threads 2 -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/bound.h5" "$OUT/b3.h5"
  assert_success
  run /usr/bin/python3 - "$D/yt.0.h5" "$D/bound.h5" "$D/galaxy.hdf5" <<'PY'
import sys, h5py, numpy as np, yt
yt.set_log_level(40)
ad = yt.load(sys.argv[1]).all_data()
o = h5py.File(sys.argv[2], "r")["objects"]
galaxy = int(np.argmax(o["mass"][...]))
stars = ad["halos", "mass_stars"].to("g").value
want = o["mass_type"][galaxy, 4] * h5py.File(sys.argv[3], "r")["Header"].attrs["UnitMass_in_g"]  # h = 1 here
assert abs(stars.max() / want - 1) < 1e-12, (stars.max(), want)
header = h5py.File(sys.argv[3], "r")["Header"].attrs
r = ad["halos", "half_mass_radius_stars"].to("cm").value.max()
assert abs(r / (o["half_mass_radius_type"][galaxy, 4] * header["UnitLength_in_cm"]) - 1) < 1e-12
assert ("halos", "mass_stars_30kpc") in ad.ds.field_list
print(f"yt: stellar mass {stars.max():.4g} g, half-mass radius {r:.4g} cm")
PY
  echo "$output"
  assert_success
}

@test "RAMSES: the same galaxy's stars read by family, their columns named by RAMSES' families" {
  # A cosmological box (make_ramses.py needs one): dark matter as family 1, stars as family 2.
  sed 's/"box": 0, "seed": 5,/"box": 2000, "cosmology": {"omega_m": 0.3, "omega_lambda": 0.7, "hubble": 0.7}, "redshift": 0, "seed": 5,/' \
    "$D/galaxy.json" >"$OUT/galaxy.json"
  synth-particles "$OUT/galaxy.json" -o "$OUT/galaxy.hdf5" -q
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_ramses.py" "$OUT/galaxy.hdf5" "$OUT/ramses" --ncpu 3 >/dev/null
  local out="$OUT/ramses/output_00001"
  cic-project "$out" -o "$OUT/grid.h5" --grid 64 --types all -q
  phew-segment "$OUT/grid.h5" -o "$OUT/patches.h5" --threshold 10mean -q
  phew-merge "$OUT/patches.h5" -o "$OUT/clumps.h5" --relevance 3 -q
  unbind "$OUT/clumps.h5" "$out" -o "$OUT/bound.h5" -q
  run /usr/bin/python3 - "$OUT/bound.h5" <<'PY'
import sys, h5py, numpy as np
o = h5py.File(sys.argv[1], "r")["objects"]
codes, names = list(o.attrs["type_codes"]), [str(n) for n in o.attrs["types"]]
# RAMSES' families -5..5 (phew types 0-5 and 11-15), not the codes no family has.
assert codes == [0, 1, 2, 3, 4, 5, 11, 12, 13, 14, 15], codes
assert names[:6] == ["tracer_gas", "dark_matter", "stars", "cloud", "debris", "other"], names
assert names[6:] == ["tracer_dark_matter", "tracer_stars", "tracer_cloud", "tracer_debris", "tracer_other"], names
galaxy = int(np.argmax(o["mass"][...]))
n = o["n_bound_type"][galaxy]
print(f"RAMSES galaxy: {n[1]} dark-matter and {n[2]} star particles bound")
assert n[2] == 20000 and n[1] > 30000 and n.sum() == o["n_bound"][galaxy]
PY
  echo "$output"
  assert_success
}

@test "bad input: a gas field of the wrong shape or a negative internal energy: one line, exit 3, nothing written" {
  local snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5" in="$BATS_TEST_TMPDIR/in"
  mkdir -p "$in"
  for bad in shape negative; do
    /usr/bin/python3 - "$snap" "$in/$bad.hdf5" "$bad" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "r") as s, h5py.File(sys.argv[2], "w") as c:
    for key in s:
        s.copy(key, c)
    g = c["PartType0"]
    n = len(g["ParticleIDs"])
    if sys.argv[3] == "shape":
        g["StarFormationRate"] = np.zeros((n, 2), np.float32)
    else:
        u = g["InternalEnergy"][...]
        u[17] = -1.0
        g["InternalEnergy"][...] = u
PY
    cic-project "$in/$bad.hdf5" -o "$in/$bad.grid.h5" --grid 32 --types all -q
    phew-segment "$in/$bad.grid.h5" -o "$in/$bad.patches.h5" --threshold 80mean -q
    phew-merge "$in/$bad.patches.h5" -o "$in/$bad.clumps.h5" -q
  done
  bad_input unbind "$OUT/b.h5" 3 "StarFormationRate is float32 [32768,2], expected [32768]" \
    "$in/shape.clumps.h5" "$in/shape.hdf5"
  bad_input unbind "$OUT/b.h5" 3 "has internal energy -1 (finite and >= 0 expected)" \
    "$in/negative.clumps.h5" "$in/negative.hdf5"
}

@test "bad input: a stellar component of no Gadget type" {
  sed 's/"type": 4/"type": 7/' "$D/galaxy.json" >"$OUT/bad.json"
  run --separate-stderr synth-particles "$OUT/bad.json" -o "$OUT/bad.hdf5"
  assert_failure 2
  [[ $stderr == *'"type" must be a Gadget particle type 0..5, got 7'* ]]
  assert_only_files "$OUT" bad.json
}
