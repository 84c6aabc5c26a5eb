#!/usr/bin/env bats
# voters end to end: deblended haloes, boosted potential next to a neighbour, computed vs stored
# potential, search radii, rank invariance, bad inputs.
load common

pipeline() {  # pipeline NAME MAKE_OVERLAP_ARGS...: snapshot -> ... -> peaks.h5 in $D
  local name=$1
  shift
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$D/$name.hdf5" "$@"
  stages "$name"
}

stages() {  # stages NAME [CIC_ARGS...]: the stages from the snapshot $D/NAME.hdf5 to $D/NAME.peaks.h5
  local name=$1
  shift
  cic-project "$D/$name.hdf5" -o "$D/$name.grid.h5" --grid 64 -q "$@"
  phew-segment "$D/$name.grid.h5" -o "$D/$name.patches.h5" --threshold 50mean -q
  phew-merge "$D/$name.patches.h5" -o "$D/$name.clumps.h5" --relevance 2 -q
  deblend "$D/$name.clumps.h5" "$D/$name.hdf5" -o "$D/$name.peaks.h5" -q
}

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  pipeline crossing --dv 600 --n 8000 --seed 1
  # A minor halo 40 kpc from a major one, with the analytic potential stored; and the same minor alone.
  pipeline pair --dv 0 --offset 40 --mass2 0.2 --potential --n 10000 --seed 2
  # The pair in an open (non-periodic) box: Gadget-4 files without Config/PERIODIC.
  cp "$D/pair.hdf5" "$D/open.hdf5"
  /usr/bin/python3 -c "import h5py; h5py.File('$D/open.hdf5', 'r+').require_group('Config').attrs['NTYPES'] = 6"
  # An open box is gridded over the region given (docs/cli.md: Gadget-4 without PERIODIC needs --region).
  stages open --region 0,0,0,400,400,400
  # The same with one NaN in the stored potential (the stages before voters do not read it).
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$D/nanpot.hdf5" --dv 0 --offset 40 --mass2 0.2 --potential --n 4000 --seed 3
  /usr/bin/python3 -c "import h5py, numpy as np; h5py.File('$D/nanpot.hdf5', 'r+')['PartType1/Potential'][5] = np.nan"
  stages nanpot
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

voters_of() {  # voters_of FILE PEAK -> sorted particle IDs
  /usr/bin/python3 -c 'import h5py,sys; f=h5py.File(sys.argv[1]); p=int(sys.argv[2]); print(" ".join(map(str, sorted(f["voters/particle_id"][...][f["voters/peak"][...] == p]))))' "$1" "$2"
}

overlap() {  # overlap "IDS A" "IDS B" -> fraction of A in B
  /usr/bin/python3 -c 'import sys; a=set(sys.argv[1].split()); b=set(sys.argv[2].split()); print(round(len(a & b) / max(1, len(a)), 3))' "$1" "$2"
}

shares_voters() {  # shares_voters BOX A.h5 B.h5 MIN: each of the two peaks keeps at least MIN of A's voters in B
  local p o
  for p in 1 2; do
    o=$(overlap "$(voters_of "$2" $p)" "$(voters_of "$3" $p)")
    echo "$1 peak $p: $o" >&3
    /usr/bin/python3 -c "assert $o >= $4, $o"
  done
}

@test "deblended haloes get voters from their own halo, most bound first" {
  run voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/v.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/v.h5" "$D/crossing.truth.npy" <<'PY'
import h5py, sys, numpy as np
f = h5py.File(sys.argv[1]); t = np.load(sys.argv[2])
vp, vid, e = f["voters/peak"][...], f["voters/particle_id"][...], f["voters/binding_energy"][...]
assert list(f["peaks/n_voters"][...]) == [20, 20]
halos = [np.bincount(t[vid[vp == p] - 1], minlength=2) for p in (1, 2)]
assert halos[0].max() == 20 and halos[1].max() == 20 and halos[0].argmax() != halos[1].argmax(), halos
for p in (1, 2):
    assert (np.diff(e[vp == p]) >= 0).all()
assert f.attrs["potential_source"].startswith("computed")
print("ok")
PY
  assert_output "ok"
}

@test "the search radius shrinks next to a close neighbour" {
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/v.h5" --search-radius 30 -q
  assert_success
  r=$(/usr/bin/python3 -c 'import h5py,sys; print(" ".join("%.1f" % x for x in h5py.File(sys.argv[1])["peaks/search_radius"][...]))' "$OUT/v.h5")
  # the peaks are 40 kpc apart: 1/4 of that is 10 < 30
  [[ $r =~ ^(9|10)\.[0-9]\ (9|10)\.[0-9]$ ]] || fail "search radii $r"
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/v2.h5" --search-radius 30 --min-radius 12 -q
  r=$(/usr/bin/python3 -c 'import h5py,sys; print(" ".join("%.1f" % x for x in h5py.File(sys.argv[1])["peaks/search_radius"][...]))' "$OUT/v2.h5")
  assert_equal "$r" "12.0 12.0"
}

@test "computed (TreePM; open-box tree) and stored potentials give >= 90% the same voters" {
  for box in pair open; do
    run voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/stored.h5" --n-voters 100 -q
    assert_success
    run voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/computed.h5" --n-voters 100 --potential compute -q
    assert_success
    run h5dump -a /potential_source "$OUT/computed.h5"
    if [ "$box" = pair ]; then assert_output --partial "TreePM"; else assert_output --partial "open box"; fi
    shares_voters "$box" "$OUT/stored.h5" "$OUT/computed.h5" 0.9
  done
}

@test "the profile potential (each peak's candidates alone, as RAMSES' unbinding) picks >= 80% of the stored potential's voters, with no solver" {
  for box in pair open; do
    run voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/stored.h5" --n-voters 100 -q
    assert_success
    run --separate-stderr voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/profile.h5" --n-voters 100 --potential profile -v
    assert_success
    [[ $stderr != *"phase long-range"* ]] || fail "the profile potential ran the solver: $stderr"
    run h5dump -a /potential_source "$OUT/profile.h5"
    assert_output --partial "spherical profile"
    shares_voters "$box" "$OUT/stored.h5" "$OUT/profile.h5" 0.8
  done
}

@test "the boost keeps the minor halo's voters on its centre next to the major one; the plain potential pulls them toward the major" {
  # The stored potential includes the major halo: its gradient across the minor tilts the plain
  # potential, whose most bound particles sit on the side facing the major halo (Geda & Teyssier Fig. 5);
  # the boost removes the tilt.
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/boost.h5" --n-voters 50 --search-radius 30 -q
  assert_success
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/plain.h5" --n-voters 50 --search-radius 30 --no-boost -q
  assert_success
  run /usr/bin/python3 - "$OUT/boost.h5" "$OUT/plain.h5" "$D/pair.truth.npy" "$D/pair.peaks.h5" "$D/pair.hdf5" <<'PY'
import h5py, sys, numpy as np
t = np.load(sys.argv[3])
pk = h5py.File(sys.argv[4])["peaks"]
m, ids, pos = pk["mass"][...], pk["id"][...], pk["position"][...]
minor, major = int(np.argmin(m)), int(np.argmax(m))
toward = (pos[major] - pos[minor]) / np.linalg.norm(pos[major] - pos[minor])
snap = h5py.File(sys.argv[5])["PartType1"]
x, pid = snap["Coordinates"][...].astype(float), snap["ParticleIDs"][...]
order = np.argsort(pid)
def voters(fn):  # the minor's voters: the fraction on the minor halo, their mean offset toward the major
    f = h5py.File(fn)
    vid = f["voters/particle_id"][...][f["voters/peak"][...] == ids[minor]]
    xv = x[order[np.searchsorted(pid[order], vid)]]
    return (t[vid - 1] == 1).mean(), float(((xv - pos[minor]) @ toward).mean())
fb, ob = voters(sys.argv[1])
fp, op = voters(sys.argv[2])
print(f"boost: {fb:.2f} on the minor, offset {ob:.2f}; plain: {fp:.2f}, offset {op:.2f}")
assert fb >= 0.9, fb
assert op > 0.3, op            # the plain voters are pulled toward the major halo ...
assert op - ob > 0.5, (op, ob)  # ... and the boosted ones are not (measured: 0.59 and -0.25 kpc)
print("ok")
PY
  assert_success
  assert_line "ok"
}

@test "identical data for 1, 2, 3 and 4 ranks" {
  for case_args in "pair" "pair --potential compute --n-voters 30" "open --potential compute --n-voters 30" \
    "pair --potential profile --n-voters 30"; do
    # shellcheck disable=SC2086
    set -- $case_args
    box=$1
    shift
    run voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/v1.h5" "$@" -q
    assert_success
    for n in 2 3 4; do
      run mpi "$n" voters "$D/$box.peaks.h5" "$D/$box.hdf5" -o "$OUT/v$n.h5" "$@" -q
      assert_success
      for obj in /voters /peaks; do
        run h5diff "$OUT/v1.h5" "$OUT/v$n.h5" "$obj" "$obj"
        assert_success
      done
    done
  done
}

@test "progress in a log: a line per interval and a last one, on rank 0 only, none with -q; same data" {
  run --separate-stderr voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/quiet.h5" -q
  assert_success
  [[ -z $stderr ]] || fail "-q: $stderr"
  n=$(/usr/bin/python3 -c 'import h5py,sys; print(len(h5py.File(sys.argv[1])["peaks/id"]))' "$D/crossing.peaks.h5")
  ((n >= 2)) || fail "$n peaks"
  # PHEW_PROGRESS_INTERVAL=0: a line after every peak but the last, then the last line
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/v.h5"
  assert_success
  assert_equal "$(grep -c '^voters\[0\] [0-9.]*s progress: voters: ' <<<"$stderr")" "$n"
  grep -q "progress: voters: 1 of $n peaks ([0-9]*%)" <<<"$stderr" || fail "$stderr"
  grep -q "progress: voters: $n of $n peaks (100%), in [0-9]* s$" <<<"$stderr" || fail "$stderr"
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/q.h5" -q
  assert_success
  [[ -z $stderr ]] || fail "-q: $stderr"
  # the default interval (5 s) in a run shorter than that: nothing
  run --separate-stderr voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/d.h5"
  assert_success
  [[ $stderr != *progress* ]] || fail "$stderr"
  # 2 ranks: rank 0 reports its own share (perhaps none here: the peaks sit where the slabs meet) and
  # says so; the others nothing
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr mpi 2 voters "$D/crossing.peaks.h5" "$D/crossing.hdf5" -o "$OUT/v2.h5"
  assert_success
  [[ $stderr != *"progress: voters"* ]] ||
    grep -q "^voters\[0\] .* progress: voters: \([0-9]*\) of \1 peaks (100%) on rank 0 of 2, in " <<<"$stderr" ||
    fail "$stderr"
  [[ $stderr != *"voters[1]"* ]] || fail "$stderr"
  for f in v.h5 v2.h5; do
    for obj in /voters /peaks; do
      run h5diff "$OUT/quiet.h5" "$OUT/$f" "$obj" "$obj"
      assert_success
    done
  done
}

@test "fewer candidates than voters: fewer voters, flagged, and a warning" {
  run --separate-stderr voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/v.h5" --search-radius 0.5 --n-voters 20
  assert_success
  [[ $stderr == *"fewer than 20 candidates"* ]] || fail "$stderr"
}

bad_case() { bad_input voters "$OUT/v.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: peaks and snapshot that do not belong together" {
  bad_case 3 "not the snapshot" "$D/pair.peaks.h5" "$D/crossing.hdf5"
  bad_case 3 "does not match the grid" "$D/pair.peaks.h5" "$INPUTS/good.hdf5"
}
@test "bad input: no velocities" {
  without_velocities "$D/pair.hdf5" "$BATS_TEST_TMPDIR/novel.hdf5"
  bad_case 3 "no velocities" "$D/pair.peaks.h5" "$BATS_TEST_TMPDIR/novel.hdf5"
}
@test "bad input: --n-voters below 1, unknown potential source, bad gravity parameters" {
  bad_case 2 "at least 1" "$D/pair.peaks.h5" "$D/pair.hdf5" --n-voters 0
  bad_case 2 "expected auto, snapshot, compute or profile" "$D/pair.peaks.h5" "$D/pair.hdf5" --potential magic
  bad_case 2 "expected 32 to 4096" "$D/pair.peaks.h5" "$D/pair.hdf5" --potential compute --pm-mesh 8
  bad_case 2 "--theta 0 must be > 0" "$D/pair.peaks.h5" "$D/pair.hdf5" --potential compute --theta 0
}
@test "short options: -R is --search-radius and -t --types; -n is not an option" {
  local ok="$BATS_TEST_TMPDIR/ok"
  mkdir -p "$ok"
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$ok/long.h5" --search-radius 8 --types 1 -q
  assert_success
  run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$ok/short.h5" -R 8 -t 1 -q
  assert_success
  for obj in /voters /peaks; do
    run h5diff "$ok/long.h5" "$ok/short.h5" "$obj" "$obj"
    assert_success
  done
  bad_case 2 "not expected: 20 -n" "$D/pair.peaks.h5" "$D/pair.hdf5" -n 20
}
@test "bad input: NaN in the stored potential" {
  bad_case 3 "Potential has a non-finite value" "$D/nanpot.peaks.h5" "$D/nanpot.hdf5"
}
@test "bad input: --potential snapshot without a stored potential" {
  bad_case 3 "has no Potential" "$D/crossing.peaks.h5" "$D/crossing.hdf5" --potential snapshot
}
@test "a failed run leaves nothing half-written" {
  for phase in read voters write finish; do
    PHEW_TEST_FAIL_AT=$phase run voters "$D/pair.peaks.h5" "$D/pair.hdf5" -o "$OUT/v.h5" -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}

@test "computed potential at 1-5 ranks on a real box whose tree groups reach past the mesh slabs" {
  # Gadget-4's 32^3 box at 64^3 cells: at 4 ranks a candidate's tree group once reached beyond the
  # mesh planes a rank held ("LongRangeField::sample: x = ... is beyond the planes this rank holds").
  local snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  cic-project "$snap" -o "$OUT/g.h5" --grid 64 -q
  phew-segment "$OUT/g.h5" -o "$OUT/p.h5" --threshold 80mean -q
  phew-merge "$OUT/p.h5" -o "$OUT/c.h5" -q
  deblend "$OUT/c.h5" "$snap" -o "$OUT/pk.h5" -q
  run voters "$OUT/pk.h5" "$snap" -o "$OUT/v1.h5" -q
  assert_success
  for n in 2 3 4 5; do
    run mpi "$n" voters "$OUT/pk.h5" "$snap" -o "$OUT/v$n.h5" -q
    assert_success
    for obj in /voters /peaks; do
      run h5diff "$OUT/v1.h5" "$OUT/v$n.h5" "$obj" "$obj"
      assert_success
    done
  done
}
