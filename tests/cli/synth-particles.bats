#!/usr/bin/env bats
# synth-particles end to end: snapshot + truth + manifests, the snapshot read by cic-project, same bytes
# for the same seed and for 1 or 2 ranks, sequences, scene files, and every bad input.
load common

setup() {
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

# The data of two snapshots (or truth files) are identical; manifests (times, ranks) may differ.
same_data() {  # same_data A B OBJECT...
  local a=$1 b=$2
  shift 2
  for object in "$@"; do
    run h5diff "$a" "$b" "$object" "$object"
    assert_success
  done
}

@test "an NFW halo: snapshot, truth file and manifests" {
  run synth-particles nfw -o "$OUT/halo.hdf5" --particles 20000 --mass 2 --concentration 12 --potential --acceleration -q
  assert_success
  assert_only_files "$OUT" halo.hdf5 halo.hdf5.json halo.truth.h5 halo.truth.h5.json
  run /usr/bin/python3 - "$OUT" <<'PY'
import h5py, json, sys, numpy as np
d = sys.argv[1]
f = h5py.File(d + "/halo.hdf5")
h = f["Header"].attrs
assert list(h["NumPart_Total"]) == [0, 20000, 0, 0, 0, 0] and h["BoxSize"] == 0 and h["NumFilesPerSnapshot"] == 1
assert h["Omega0"] == 0 and h["HubbleParam"] == 1 and abs(h["UnitLength_in_cm"] - 3.085678e21) < 1e12
g = f["PartType1"]
x, v, pot, acc = (g[k][...].astype(float) for k in ("Coordinates", "Velocities", "Potential", "Acceleration"))
assert g["Coordinates"].dtype == np.float32 and (g["ParticleIDs"][...] == np.arange(1, 20001)).all()
assert "Masses" not in g
m = h["MassTable"][1]
# Equilibrium: 2K/|W| = 1 with W = sum m x.a; every particle bound (E < 0)
K = 0.5 * m * (v ** 2).sum()
W = m * (x * acc).sum()
assert abs(2 * K / abs(W) - 1) < 0.03, 2 * K / abs(W)
assert (0.5 * (v ** 2).sum(1) + pot < 0).all()
t = h5py.File(d + "/halo.truth.h5")
assert (t["particles/id"][...] == np.arange(1, 20001)).all() and (t["particles/component"][...] == 0).all()
assert t["particles/bound"][...].all()
assert abs(t["components/m200"][0] - 2.0) < 1e-6 and t["components/concentration"][0] == 12
assert abs(t["components/mass"][0] - 20000 * m) < 1e-9
assert abs(t["components/r200"][0] / t["components/scale_radius"][0] - 12) < 1e-6
assert json.loads(t["components"].attrs["names"]) == ["nfw"]
assert t.attrs["snapshot"] == "halo.hdf5"
ms = json.load(open(d + "/halo.hdf5.json"))
mt = json.load(open(d + "/halo.truth.h5.json"))
assert ms["kind"] == "snapshot" and mt["kind"] == "truth"
assert ms["outputs"][0]["path"].endswith("halo.hdf5") and mt["outputs"][0]["path"].endswith("halo.truth.h5")
assert ms["parameters"]["scene"]["components"][0]["concentration"] == 12
assert json.loads(f.attrs["manifest"])["id"] == ms["id"]
print("ok")
PY
  assert_output "ok"
  # phew's own tools read it (an open snapshot needs a region)
  run cic-project "$OUT/halo.hdf5" -o "$OUT/grid.h5" --grid 16 --region -100,-100,-100,100,100,100 -q
  assert_success
}

@test "same seed, same bytes; another seed, other particles" {
  run synth-particles plummer -o "$OUT/a.hdf5" --seed 5 --particles 5000 -q
  assert_success
  run synth-particles plummer -o "$OUT/b.hdf5" --seed 5 --particles 5000 -q
  assert_success
  same_data "$OUT/a.hdf5" "$OUT/b.hdf5" /Header /PartType1
  same_data "$OUT/a.truth.h5" "$OUT/b.truth.h5" /particles /components /track
  run synth-particles plummer -o "$OUT/c.hdf5" --seed 6 --particles 5000 -q
  assert_success
  run h5diff -q "$OUT/a.hdf5" "$OUT/c.hdf5" /PartType1/Coordinates /PartType1/Coordinates
  assert_failure
}

@test "identical data on 1 and 2 ranks (halo with substructure and background, zeldovich box, sequence)" {
  cat >"$OUT/../scene.json" <<'JSON'
{"seed": 9, "box": 400, "potential": true,
 "components": [
  {"name": "host", "model": "nfw", "particles": 3000, "mass": 1, "concentration": 8},
  {"name": "sub", "model": "hernquist", "particles": 500, "mass": 0.05, "scale_radius": 0.5, "truncation": 20,
   "host": "host", "position": [15, 0, 0], "velocity": [0, 40, 0]},
  {"name": "field", "model": "uniform", "particles": 2000, "mass": 0.2}]}
JSON
  for args in "$OUT/../scene.json" "zeldovich --particles 16^3 --box 20000" "collision --snapshots 2 --particles 500"; do
    # shellcheck disable=SC2086
    run synth-particles $args -o "$OUT/r1.hdf5" -q
    assert_success
    # shellcheck disable=SC2086
    run mpi 2 synth-particles $args -o "$OUT/r2.hdf5" -q
    assert_success
    one=r1 two=r2
    [[ -e $OUT/r1_001.hdf5 ]] && one=r1_001 two=r2_001  # the sequence's last snapshot
    same_data "$OUT/$one.hdf5" "$OUT/$two.hdf5" /Header /PartType1
    same_data "$OUT/$one.truth.h5" "$OUT/$two.truth.h5" /particles /components /track
    rm -f "$OUT"/r*
  done
}

@test "a sequence: one snapshot and truth file per output, particle IDs kept, centre track" {
  run synth-particles crossing -o "$OUT/snap" --snapshots 4 --interval 100 --particles 1000 -q
  assert_success
  assert_only_files "$OUT" snap_00{0,1,2,3}.hdf5 snap_00{0,1,2,3}.hdf5.json snap_00{0,1,2,3}.truth.h5 snap_00{0,1,2,3}.truth.h5.json
  run /usr/bin/python3 - "$OUT" <<'PY'
import h5py, sys, numpy as np
d = sys.argv[1]
x0 = h5py.File(d + "/snap_000.hdf5")["PartType1/Coordinates"][...].astype(float)
x3 = h5py.File(d + "/snap_003.hdf5")["PartType1/Coordinates"][...].astype(float)
t = h5py.File(d + "/snap_003.truth.h5")
assert (h5py.File(d + "/snap_003.hdf5")["PartType1/ParticleIDs"][...] == np.arange(1, 2001)).all()
track = t["track/center"][...]
assert track.shape == (4, 2, 3) and abs(t["track/time_myr"][3] - 300) < 1e-9
# ballistic: the minor halo's particles moved rigidly with the halo, by 300 Myr * (-353, -353, 0) km/s
shift = track[3, 1] - track[0, 1]
assert np.allclose(x3[1000:] - x0[1000:], shift, atol=1e-3), shift
assert np.allclose(t["components/center"][...], track[3])
assert abs(shift[0] + 353 * 300 / 977.792) < 0.01
print("ok")
PY
  assert_output "ok"
}

@test "a restricted N-body sequence from a scene file with a JSON config" {
  cat >"$OUT/../pair.json" <<'JSON'
{"components": [
  {"name": "a", "model": "plummer", "particles": 400, "mass": 1, "scale_radius": 2},
  {"name": "b", "model": "plummer", "particles": 400, "mass": 1, "scale_radius": 2, "position": [30, 0, 0]}],
 "sequence": {"mode": "restricted", "snapshots": 3, "interval": 50}}
JSON
  echo '{"seed": 4, "potential": true}' >"$OUT/../config.json"
  run synth-particles "$OUT/../pair.json" --config "$OUT/../config.json" -o "$OUT/pair.hdf5" -q
  assert_success
  run /usr/bin/python3 - "$OUT" <<'PY'
import h5py, json, sys, numpy as np
d = sys.argv[1]
t = h5py.File(d + "/pair_002.truth.h5")
c = t["track/center"][...]
# two equal halos at rest fall towards each other symmetrically
assert c[2, 0, 0] > 0 and abs(c[2, 0, 0] + c[2, 1, 0] - 30) < 1e-9, c[2]
assert "Potential" in h5py.File(d + "/pair_002.hdf5")["PartType1"]
m = json.load(open(d + "/pair_002.hdf5.json"))
assert m["inputs"][0]["kind"] == "scene" and m["parameters"]["scene"]["seed"] == 4
print("ok")
PY
  assert_output "ok"
}

# bad inputs: exit code, exactly one line "synth-particles: error: ...", and nothing written
bad_case() { bad_input synth-particles "$OUT/snap.hdf5" "$@"; }  # bad_case CODE PATTERN ARGS...

scene() {  # scene NAME JSON -> path of a scene file outside OUT
  echo "$2" >"$BATS_TEST_TMPDIR/$1"
  echo "$BATS_TEST_TMPDIR/$1"
}

@test "bad input: unknown model" { bad_case 2 "unknown model 'king'" king; }
@test "bad input: negative mass" { bad_case 2 '"mass" must be positive, got -1' nfw --mass -1; }
@test "bad input: negative concentration" { bad_case 2 '"concentration" must be positive' nfw --concentration -4; }
@test "bad input: zero particles" { bad_case 2 "must be at least 1" plummer --particles 0; }
@test "bad input: not a number" { bad_case 2 "--mass 'lots': expected a number" nfw --mass lots; }
@test "bad input: a scene file with a missing key" {
  bad_case 2 'component 1 ("minor"): missing key "concentration"' "$(scene s.json '{"components": [
    {"model": "nfw", "particles": 10, "mass": 1, "concentration": 5},
    {"name": "minor", "model": "nfw", "particles": 10, "mass": 1}]}')"
}
@test "bad input: a scene file with an unknown key" {
  bad_case 2 'unknown key "concentation"' "$(scene s.json '{"components": [
    {"model": "nfw", "particles": 10, "mass": 1, "concentration": 5, "concentation": 5}]}')"
}
@test "bad input: a scene file that is not JSON" { bad_case 2 "not valid JSON" "$(scene s.json '{"components": [')"; }
@test "bad input: a zeldovich lattice that is not a cube" { bad_case 2 "cube number" zeldovich --particles 999; }
@test "bad input: a sequence option without a sequence" { bad_case 2 "needs a sequence" nfw --snapshots 3; }
@test "bad input: a model option with a scene" { bad_case 2 "--mass describes a single model" collision --mass 2; }
@test "bad input: no such scene file" { bad_case 4 "no such scene file" "$BATS_TEST_TMPDIR/none.json"; }

@test "bad input: a job too large for memory is refused before allocating" {
  PHEW_MEMORY_LIMIT=1000000 bad_case 3 "needs about" zeldovich --particles 64^3
}

@test "bad output folder is an I/O error" {
  run --separate-stderr synth-particles nfw -o "$OUT/no/such/halo.hdf5" -q
  assert_failure 4
  output=$stderr assert_one_error_line synth-particles
}

@test "a failed run leaves nothing that looks complete" {
  for phase in sample finish; do
    PHEW_TEST_FAIL_AT=$phase run synth-particles nfw -o "$OUT/halo.hdf5" --particles 1000 -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}
