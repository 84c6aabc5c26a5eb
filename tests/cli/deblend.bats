#!/usr/bin/env bats
# deblend end to end: two haloes superposed in space (Geda & Teyssier Fig. 1) split in velocity space,
# no false splits, rank invariance, bad inputs.
load common

pipeline() {  # pipeline NAME MAKE_OVERLAP_ARGS... : snapshot -> grid -> patches -> clumps in $D
  local name=$1
  shift
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$D/$name.hdf5" "$@"
  cic-project "$D/$name.hdf5" -o "$D/$name.grid.h5" --grid 48 -q
  phew-segment "$D/$name.grid.h5" -o "$D/$name.patches.h5" --threshold 50mean -q
  phew-merge "$D/$name.patches.h5" -o "$D/$name.clumps.h5" --relevance 2 -q
}

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  pipeline split --dv 600 --n 10000 --seed 1
  pipeline together --dv 0 --n 10000 --seed 2
  pipeline single --single --n 20000 --seed 3
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

purity() {  # purity PEAKS.h5 TRUTH.npy -> "n_peaks fraction_assigned_to_true_halo"
  /usr/bin/python3 - "$1" "$2" <<'PY'
import h5py, sys, numpy as np
f = h5py.File(sys.argv[1]); t = np.load(sys.argv[2])
pid, pk = f["particles/id"][...], f["particles/peak"][...]
assert (np.diff(pid.astype(np.int64)) >= 0).all()
ok = 0
for p in np.unique(pk):
    ok += np.bincount(t[pid[pk == p] - 1], minlength=2).max()
print(len(f["peaks/id"]), round(ok / len(pk), 4))
PY
}

@test "two haloes overlapping in space but not in velocity: two peaks, >= 95% purity" {
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/peaks.h5" -q
  assert_success
  read -r n frac < <(purity "$OUT/peaks.h5" "$D/split.truth.npy")
  assert_equal "$n" 2
  /usr/bin/python3 -c "assert $frac >= 0.95, $frac"
  run /usr/bin/python3 - "$OUT/peaks.h5" <<'PY'
import h5py, sys, numpy as np
f = h5py.File(sys.argv[1])["peaks"]
assert list(f["from_deblending"][...]) == [0, 1]
assert f["id"][1] > f["id"][0] and f["parent_clump"][1] == f["id"][0]
v = f["velocity"][...][:, 0]
assert abs(abs(v[0] - v[1]) - 600) < 30, v
assert np.allclose(f["position"][...], 200, atol=2)
print("ok")
PY
  assert_output "ok"
}

@test "--off: the overlapping pair is not split, every patch passes through as one peak" {
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/off.h5" --off -q
  assert_success
  run /usr/bin/python3 - "$OUT/off.h5" "$D/split.clumps.h5" <<'PY'
import h5py, json, sys, numpy as np
k, c = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
ids = k["peaks/id"][...]
assert (ids == k["peaks/parent_clump"][...]).all() and not k["peaks/from_deblending"][...].any()
assert set(ids) <= set(c["clumps/id"][...])
m = json.load(open(sys.argv[1] + ".json"))
assert m["parameters"]["off"] == "true" and m["summary"]["n_split_patches"] == 0 and m["summary"]["n_new_peaks"] == 0
print("ok")
PY
  assert_output "ok"
  # what the tests and examples did before the switch existed: the same peaks
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/huge.h5" --min-particles 1000000000 -q
  assert_success
  for obj in /peaks /particles; do
    run h5diff "$OUT/off.h5" "$OUT/huge.h5" "$obj"
    assert_success
  done
}

@test "equal bulk velocities: no split; one equilibrium halo: no split" {
  for name in together single; do
    run deblend "$D/$name.clumps.h5" "$D/$name.hdf5" -o "$OUT/$name.h5" -q
    assert_success
    read -r n frac < <(purity "$OUT/$name.h5" "$D/$name.truth.npy")
    assert_equal "$n" 1
  done
}

@test "identical data for 1, 2, 3 and 4 ranks" {
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/k1.h5" -q
  assert_success
  for n in 2 3 4; do
    run mpi "$n" deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/k$n.h5" -q
    assert_success
    for obj in /peaks /particles /grid; do
      run h5diff "$OUT/k1.h5" "$OUT/k$n.h5" "$obj" "$obj"
      assert_success
    done
  done
}

@test "progress: the particles of rank 0's patches, a last line at 100 %, none with -q" {
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/p.h5"
  assert_success
  grep -q "^deblend\[0\] .* progress: deblend: \([0-9,]*\) of \1 particles in patches (100%), in " <<<"$stderr" || fail "$stderr"
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/q.h5" -q
  assert_success
  [[ -z $stderr ]] || fail "$stderr"
}

@test "every particle of a patch is listed once, with a peak of the table" {
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/k.h5" -q
  run /usr/bin/python3 - "$OUT/k.h5" "$D/split.clumps.h5" "$D/split.hdf5" <<'PY'
import h5py, sys, numpy as np
k, c, s = (h5py.File(x) for x in sys.argv[1:4])
pid, pk = k["particles/id"][...], k["particles/peak"][...]
assert len(np.unique(pid)) == len(pid)
assert set(np.unique(pk)) <= set(k["peaks/id"][...])
n = k["peaks/n_particles"][...]
assert n.sum() == len(pid)
# particles in patches = particles whose cell has a clump label
from reference import read_labels
cc = read_labels(c.filename, "clump")
box = s["Header"].attrs["BoxSize"]; N = cc.shape[0]
x = s["PartType1/Coordinates"][...].astype(np.float64)
ijk = np.floor(x / (box / N)).astype(int) % N
assert (cc[ijk[:, 0], ijk[:, 1], ijk[:, 2]] > 0).sum() == len(pid)
print("ok")
PY
  assert_output "ok"
}

bad_case() { bad_input deblend "$OUT/p.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: a snapshot of another box" {
  bad_case 3 "not the snapshot the grid" "$D/split.clumps.h5" "$INPUTS/good.hdf5"
}
@test "bad input: another snapshot of the same box" {
  bad_case 3 "not in the provenance chain" "$D/split.clumps.h5" "$D/together.hdf5"
}
@test "bad input: no velocities" {
  without_velocities "$D/split.hdf5" "$BATS_TEST_TMPDIR/novel.hdf5"
  bad_case 3 "no velocities" "$D/split.clumps.h5" "$BATS_TEST_TMPDIR/novel.hdf5"
}
@test "bad input: bad parameters" {
  bad_case 2 "must be a finite number > 0" "$D/split.clumps.h5" "$D/split.hdf5" --bin-fraction 0
  bad_case 2 "must be a finite number above 1" "$D/split.clumps.h5" "$D/split.hdf5" --velocity-relevance 1
  bad_case 2 "at least 2" "$D/split.clumps.h5" "$D/split.hdf5" --min-particles 1
}
@test "short options: -f is --bin-fraction and -t --types; -n and -r are not options" {
  local ok="$BATS_TEST_TMPDIR/ok"
  mkdir -p "$ok"
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$ok/long.h5" --bin-fraction 0.3 --types 1 -q
  assert_success
  run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$ok/short.h5" -f 0.3 -t 1 -q
  assert_success
  for obj in /peaks /particles; do
    run h5diff "$ok/long.h5" "$ok/short.h5" "$obj" "$obj"
    assert_success
  done
  bad_case 2 "not expected: 20 -n" "$D/split.clumps.h5" "$D/split.hdf5" -n 20
  bad_case 2 "not expected: 3 -r" "$D/split.clumps.h5" "$D/split.hdf5" -r 3
}
@test "bad input: wrong kind" { bad_case 3 "expected clumps" "$D/split.patches.h5" "$D/split.hdf5"; }
@test "a failed run leaves nothing half-written" {
  for phase in members deblend write finish; do
    PHEW_TEST_FAIL_AT=$phase run deblend "$D/split.clumps.h5" "$D/split.hdf5" -o "$OUT/p.h5" -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}

@test "two equal NFW haloes made by synth-particles, superposed, moving apart: two peaks, >= 95% on their true halo" {
  S="$BATS_TEST_TMPDIR/synth"
  mkdir -p "$S"
  synth-particles "$PHEW_SOURCE/tests/data/two_halos_superposed.json" -o "$S/two.hdf5" -q
  cic-project "$S/two.hdf5" -o "$S/grid.h5" --grid 48 -q
  phew-segment "$S/grid.h5" -o "$S/patches.h5" --threshold 50mean -q
  phew-merge "$S/patches.h5" -o "$S/clumps.h5" --relevance 2 -q
  run deblend "$S/clumps.h5" "$S/two.hdf5" -o "$S/peaks.h5" -q
  assert_success
  run /usr/bin/python3 - "$S/peaks.h5" "$S/two.truth.h5" <<'PY'
import h5py, sys, numpy as np
k, t = h5py.File(sys.argv[1]), h5py.File(sys.argv[2])
assert len(k["peaks/id"]) == 2 and list(k["peaks/from_deblending"][...]) == [0, 1]
order = np.argsort(t["particles/id"][...])
tid, comp = t["particles/id"][...][order], t["particles/component"][...][order]
pid, pk = k["particles/id"][...], k["particles/peak"][...]
c = comp[np.searchsorted(tid, pid)]
ok = sum(np.bincount(c[pk == p]).max() for p in np.unique(pk))
assert ok / len(pk) >= 0.95, ok / len(pk)
print("ok")
PY
  assert_output "ok"
}
