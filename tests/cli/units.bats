#!/usr/bin/env bats
# Velocities a new user meets (issue 34, item 3): velocities are peculiar everywhere. A Gadget file
# storing u = v_pec/sqrt(a) at a = 0.5 and a phew particle file storing v_pec give the same bulk
# velocities, the true ones, in clumps.h5, peaks.h5 and the Consistent-Trees export.
load common

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Two NFW haloes moving apart in a 10 Mpc/h box filled to Omega_m rho_crit by a uniform background
  # (its default mass), at z = 1 (a = 0.5).
  for z in 1; do
    cat >"$D/scene_z$z.json" <<EOF
{"seed": 7, "box": 10000, "redshift": $z, "cosmology": {"omega_m": 0.3, "omega_lambda": 0.7, "hubble": 0.7},
 "components": [
  {"name": "a", "model": "nfw", "particles": 6000, "mass": 60, "concentration": 8, "truncation": 2,
   "position": [3000, 4000, 5000], "velocity": [300, -100, 50]},
  {"name": "b", "model": "nfw", "particles": 4000, "mass": 40, "concentration": 8, "truncation": 2,
   "position": [7000, 6000, 5000], "velocity": [-200, 150, 0]},
  {"name": "field", "model": "uniform", "particles": 30000}]}
EOF
    synth-particles "$D/scene_z$z.json" -o "$D/z$z.hdf5" -q
  done
  # Item 3: the z = 1 particles as a phew particle file, which stores peculiar velocities v = u sqrt(a).
  /usr/bin/python3 - "$D" <<'PY'
import sys, h5py, numpy as np
d = sys.argv[1]
with h5py.File(f"{d}/z1.hdf5") as s, h5py.File(f"{d}/z1.particles.h5", "w") as f:
    h, p = s["Header"].attrs, s["PartType1"]
    a = float(h["Time"])
    assert a == 0.5
    g = f.create_group("particles")
    g["position"] = p["Coordinates"][...].astype(np.float64)
    g["velocity"] = p["Velocities"][...].astype(np.float64) * np.sqrt(a)
    g["mass"] = p["Masses"][...].astype(np.float64) if "Masses" in p else np.full(len(p["ParticleIDs"]), h["MassTable"][1])
    g["id"] = p["ParticleIDs"][...]
    g.attrs["box_size"] = np.full(3, float(h["BoxSize"]))
    g.attrs["periodic"] = np.int8(1)
    for key, value in (("time", a), ("redshift", float(h["Redshift"])), ("comoving", 1.0), ("h_scaled", 1.0),
                       ("length_unit_cm", float(h["UnitLength_in_cm"])), ("mass_unit_g", float(h["UnitMass_in_g"])),
                       ("velocity_unit_cm_per_s", float(h["UnitVelocity_in_cm_per_s"])),
                       ("omega_m", float(h["Omega0"])), ("omega_lambda", float(h["OmegaLambda"])),
                       ("hubble_param", float(h["HubbleParam"]))):
        g.attrs[key] = value
PY
  # chain NAME SNAPSHOT: cic-project -> phew-segment -> phew-merge --particles -> deblend -> voters ->
  # mergertree --particles with its Consistent-Trees export, all as D/NAME.*
  chain() {
    local k=$1 snap=$2
    cic-project "$snap" -o "$D/$k.grid.h5" --grid 64 -q
    phew-segment "$D/$k.grid.h5" -o "$D/$k.patches.h5" --threshold 80mean -q
    phew-merge "$D/$k.patches.h5" -o "$D/$k.clumps.h5" --relevance 2 --particles "$snap" -q
    deblend "$D/$k.clumps.h5" "$snap" -o "$D/$k.peaks.h5" -q
    voters "$D/$k.peaks.h5" "$snap" -o "$D/$k.voters.h5" -q
    mergertree "$D/$k.peaks.h5" -o "$D/$k.tree.h5" --particles --export-ctrees "$D/$k.ct" -q
  }
  chain u "$D/z1.hdf5"
  chain pec "$D/z1.particles.h5"
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "velocities are peculiar: u stored at a = 0.5 and v_pec stored give the same, true, bulk velocities" {
  run /usr/bin/python3 - "$D" "$PHEW_SOURCE/tests/data" <<'PY'
import sys, h5py, numpy as np
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
cu, cp = (h5py.File(f"{d}/{k}.clumps.h5") for k in ("u", "pec"))
assert len(cu["halos/id"]) >= 2
for table in ("clumps", "halos"):
    a, b = cu[f"{table}/bulk_velocity"][...], cp[f"{table}/bulk_velocity"][...]
    assert np.allclose(a, b, rtol=1e-9, atol=1e-9), (table, a, b)
# The haloes' own peculiar velocities (the truth), within a few per cent.
truth = h5py.File(f"{d}/z1.truth.h5")["components"]
want = truth["velocity"][...][:2]
h = cu["halos"]
got = h["bulk_velocity"][...][np.argsort(-h["mass"][...])][:2]
assert np.allclose(got, want, atol=0.05 * np.abs(want).max()), (got, want)
pu, pp = (h5py.File(f"{d}/{k}.peaks.h5")["peaks"] for k in ("u", "pec"))
assert np.allclose(pu["velocity"][...], pp["velocity"][...], rtol=1e-9, atol=1e-9)
from ctrees_reader import read
rows = {}
for k in ("u", "pec"):
    _, col, trees = read(f"{d}/{k}.ct/tree_0_0_0.dat")
    r = np.concatenate([t for _, t in trees])
    rows[k] = r[np.argsort(r[:, col["Orig_halo_ID"]])]
v = [col["vx"], col["vy"], col["vz"]]
assert np.allclose(rows["u"][:, v], rows["pec"][:, v], rtol=1e-5, atol=1e-3), (rows["u"][:, v], rows["pec"][:, v])
top = rows["u"][np.argsort(-rows["u"][:, col["Mvir"]])][:2][:, v]
assert np.allclose(top, want, atol=0.05 * np.abs(want).max()), (top, want)
# voters' binding energies use the same velocities: the same voters
vu, vp = (h5py.File(f"{d}/{k}.voters.h5")["voters"] for k in ("u", "pec"))
assert (vu["particle_id"][...] == vp["particle_id"][...]).all()
for path in (f"{d}/u.clumps.h5", f"{d}/u.peaks.h5"):
    for name in ("clumps/bulk_velocity", "halos/bulk_velocity", "peaks/velocity"):
        f = h5py.File(path)
        if name in f:
            assert f[name].attrs["units"] == "km/s (peculiar)", (path, name, f[name].attrs["units"])
print("ok")
PY
  assert_output "ok"
}

@test "a peaks.h5 from before velocities were peculiar is refused by voters and mergertree" {
  cp "$D/u.peaks.h5" "$OUT/old.peaks.h5"
  cp "$D/u.peaks.h5.json" "$OUT/old.peaks.h5.json"
  /usr/bin/python3 -c 'import h5py, sys; h5py.File(sys.argv[1], "r+")["peaks/velocity"].attrs["units"] = "km/s (as stored in the snapshot)"' "$OUT/old.peaks.h5"
  remanifest "$OUT/old.peaks.h5"
  mkdir -p "$OUT/x"
  bad_input voters "$OUT/x/v.h5" 3 "not peculiar velocities (a peaks.h5 from before 2026-11-26): re-run deblend" \
    "$OUT/old.peaks.h5" "$D/z1.hdf5"
  cp "$D/u.voters.h5" "$OUT/old.voters.h5"
  /usr/bin/python3 -c "import json,sys; p='$OUT/old.voters.h5.json'; m=json.load(open('$D/u.voters.h5.json')); m['inputs'][0]['path']='$OUT/old.peaks.h5'; json.dump(m, open(p,'w'))"
  remanifest "$OUT/old.voters.h5" "$OUT/old.peaks.h5"
  bad_input mergertree "$OUT/x/t.h5" 3 "not peculiar velocities" "$OUT/old.peaks.h5"
}
