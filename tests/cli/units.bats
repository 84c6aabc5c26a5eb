#!/usr/bin/env bats
# Units and velocities a new user meets:
#  1. a Gadget-style file without unit attributes is read in kpc/h or Mpc/h as its mean density says:
#     kpc/h and Mpc/h copies of the same particles give the same structures and the same physical
#     masses through the whole chain, mergertree --particles included;
#  3. velocities are peculiar everywhere: a Gadget file storing u = v_pec/sqrt(a) at a = 0.5 and a phew
#     particle file storing v_pec give the same bulk velocities, the true ones, in clumps.h5, peaks.h5
#     and the Consistent-Trees export.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Two NFW haloes moving apart in a 10 Mpc/h box filled to Omega_m rho_crit by a uniform background
  # (its default mass), at z = 0 and at z = 1 (a = 0.5).
  for z in 0 1; do
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
  # Item 1: kpc.hdf5 is the z = 0 snapshot without its unit attributes; mpc.hdf5 the same with positions
  # and box in Mpc/h.
  /usr/bin/python3 - "$D" <<'PY'
import shutil, sys, h5py
d = sys.argv[1]
for name, scale in (("kpc", 1.0), ("mpc", 1e-3)):
    shutil.copy(f"{d}/z0.hdf5", f"{d}/{name}.hdf5")
    with h5py.File(f"{d}/{name}.hdf5", "r+") as f:
        h = f["Header"].attrs
        for key in ("UnitLength_in_cm", "UnitMass_in_g", "UnitVelocity_in_cm_per_s"):
            del h[key]
        h["BoxSize"] = h["BoxSize"] * scale
        f["PartType1/Coordinates"][...] = f["PartType1/Coordinates"][...] * scale
PY
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
  for k in kpc mpc; do chain "$k" "$D/$k.hdf5"; done
  chain u "$D/z1.hdf5"
  chain pec "$D/z1.particles.h5"
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  INPUTS="$BATS_FILE_TMPDIR/inputs"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "no units in the file: kpc/h and Mpc/h copies give the same structures and physical masses" {
  run /usr/bin/python3 - "$D" "$PHEW_SOURCE/tests/data" <<'PY'
import json, sys, h5py, numpy as np
d = sys.argv[1]
sys.path.insert(0, sys.argv[2])
def attrs(path, group):
    return dict(h5py.File(path)[group].attrs)
count = lambda k, path: {name: len(h5py.File(f"{d}/{k}.{path}")[name]["id"]) for name in ("peaks", "clumps", "halos")} \
    if path == "clumps.h5" else len(h5py.File(f"{d}/{k}.{path}")["peaks/id"])
assert count("kpc", "clumps.h5") == count("mpc", "clumps.h5"), (count("kpc", "clumps.h5"), count("mpc", "clumps.h5"))
assert count("kpc", "clumps.h5")["halos"] >= 2
assert count("kpc", "patches.h5") == count("mpc", "patches.h5")
assert count("kpc", "peaks.h5") == count("mpc", "peaks.h5")
ck, cm = (h5py.File(f"{d}/{k}.clumps.h5")["clumps"] for k in ("kpc", "mpc"))
assert np.allclose(ck["mass"][...], cm["mass"][...], rtol=1e-4), (ck["mass"][...], cm["mass"][...])
assert np.allclose(ck["particle_mass"][...], cm["particle_mass"][...], rtol=1e-4)
assert np.allclose(ck["peak_position"][...] * 1e-3, cm["peak_position"][...], rtol=1e-4)
# mergertree --particles: non-zero and equal in Msun/h (tree.h5 and the export), radii in kpc/h
tk, tm = (h5py.File(f"{d}/{k}.tree.h5")["peaks"] for k in ("kpc", "mpc"))
for col in ("mvir", "m200c"):
    assert (tk[col][...] > 0).all() and (tm[col][...] > 0).all(), (col, tk[col][...], tm[col][...])
    assert np.allclose(tk[col][...], tm[col][...], rtol=0.01), (col, tk[col][...], tm[col][...])
assert np.allclose(tk["rvir"][...] * 1e-3, tm["rvir"][...], rtol=0.01)
from ctrees_reader import read
rows = {}
for k in ("kpc", "mpc"):
    _, col, trees = read(f"{d}/{k}.ct/tree_0_0_0.dat")
    r = np.concatenate([t for _, t in trees])
    rows[k] = r[np.argsort(r[:, col["Orig_halo_ID"]])]
for name in ("Mvir", "M200c", "Rvir", "x", "y", "z"):
    a, b = rows["kpc"][:, col[name]], rows["mpc"][:, col[name]]
    assert (a != 0).all() and np.allclose(a, b, rtol=0.01), (name, a, b)
assert rows["kpc"][:, col["Mvir"]].max() > 3e11, rows["kpc"][:, col["Mvir"]]  # Msun/h: the 6e11 halo
# the units as inferred, in the grid and in every manifest
for k, length in (("kpc", "kpc/h"), ("mpc", "Mpc/h")):
    g = attrs(f"{d}/{k}.grid.h5", "grid")
    assert abs(g["mean_density"] / g["critical_density"] - 0.3) < 0.02, (k, g["mean_density"] / g["critical_density"])
    assert g["length_units"] == length and g["units"] == f"(1e10 Msun/h)/({length})^3", (k, g["units"])
    for stage in ("grid", "clumps", "peaks", "voters", "tree"):
        u = json.load(open(f"{d}/{k}.{stage}.h5.json"))["parameters"]["units_used"]
        assert u["source"] == "inferred" and u["length"] == length and 0.5 < u["density_ratio"] < 2, (k, stage, u)
print("ok")
PY
  assert_output "ok"
}

@test "the inference is logged at info level with its ratio; --units overrides it; a mismatch downstream is refused" {
  run --separate-stderr cic-project "$D/mpc.hdf5" -o "$OUT/g.h5" --grid 64
  assert_success
  [[ $stderr == *"mpc.hdf5: no units in the file: Mpc/h, 1e10 Msun/h, km/s inferred, where the particles' mean density is 1.0"*"Omega_m rho_crit"* ]] || fail "$stderr"
  [[ $stderr != *warning* ]] || fail "$stderr"
  # Given units: the same grid bytes as the inferred ones, recorded as given.
  run cic-project "$D/mpc.hdf5" -o "$OUT/given.h5" --grid 64 --units Mpc/h,1e10Msun/h,km/s -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/mpc.grid.h5" "$OUT/given.h5"
  assert_success
  run /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["parameters"]["units_used"]["source"])' "$OUT/given.h5.json"
  assert_output "given"
  # Wrong units given to cic-project only: deblend infers Mpc/h and refuses the kpc/h grid's clumps.
  mkdir -p "$OUT/x"
  cic-project "$D/mpc.hdf5" -o "$OUT/k.grid.h5" --grid 64 --units kpc/h -q
  phew-segment "$OUT/k.grid.h5" -o "$OUT/k.patches.h5" --threshold 80mean -q
  phew-merge "$OUT/k.patches.h5" -o "$OUT/k.clumps.h5" --relevance 2 -q
  bad_input deblend "$OUT/x/peaks.h5" 3 "does not match the grid" "$OUT/k.clumps.h5" "$D/mpc.hdf5"
  bad_input cic-project "$OUT/x/g.h5" 2 "--units 'furlong'" "$D/mpc.hdf5" --grid 8 --units furlong
}

@test "neither kpc/h nor Mpc/h fits: a warning, kpc/h kept; no cosmology: the units are said to be assumed" {
  run --separate-stderr cic-project "$INPUTS/good.hdf5" -o "$OUT/g.h5" --grid 8
  assert_success
  [[ $stderr == *"warning: "*"good.hdf5: no units in the file, and neither kpc nor Mpc"*"kpc/h, 1e10 Msun/h, km/s assumed; give --units"* ]] || fail "$stderr"
  [[ $stderr != *"the mean density is"* ]] || fail "one warning, not two: $stderr"
  run /usr/bin/python3 -c 'import json, sys; u = json.load(open(sys.argv[1]))["parameters"]["units_used"]; print(u["source"], u["length"], u["density_ratio"] > 1e5)' "$OUT/g.h5.json"
  assert_output "assumed kpc/h True"
  cp "$INPUTS/good.hdf5" "$OUT/plain.hdf5"
  /usr/bin/python3 -c 'import h5py, sys; h = h5py.File(sys.argv[1], "r+")["Header"].attrs; h["Omega0"] = 0.0; h["HubbleParam"] = 0.0' "$OUT/plain.hdf5"
  run --separate-stderr cic-project "$OUT/plain.hdf5" -o "$OUT/p.h5" --grid 8
  assert_success
  [[ $stderr == *"info: "*"plain.hdf5: no units in the file and no cosmological box to infer them from: kpc, 1e10 Msun, km/s assumed"* ]] || fail "$stderr"
}

@test "the units are settled alike on 1-4 ranks: the same bytes" {
  for n in 2 3 4; do
    run mpi "$n" cic-project "$D/mpc.hdf5" -o "$OUT/g$n.h5" --grid 64 -q
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/mpc.grid.h5" "$OUT/g$n.h5"
    assert_success
    run mpi "$n" phew-merge "$D/mpc.patches.h5" -o "$OUT/c$n.h5" --relevance 2 --particles "$D/mpc.hdf5" -q
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/mpc.clumps.h5" "$OUT/c$n.h5"
    assert_success
    run mpi "$n" deblend "$D/mpc.clumps.h5" "$D/mpc.hdf5" -o "$OUT/p$n.h5" -q
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/mpc.peaks.h5" "$OUT/p$n.h5"
    assert_success
  done
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
