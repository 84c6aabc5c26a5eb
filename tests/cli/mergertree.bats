#!/usr/bin/env bats
# mergertree end to end on two haloes passing through each other: lineages with and without velocity
# deblending, batch vs on the fly, relabelled IDs, time reversal, bad inputs.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_crossing.py" "$D" --snapshots 9 --n 6000
  for k in 000 001 002 003 004 005 006 007 008; do
    cic-project "$D/snap_$k.hdf5" -o "$D/$k.grid.h5" --grid 64 -q
    phew-segment "$D/$k.grid.h5" -o "$D/$k.patches.h5" --threshold 50mean -q
    phew-merge "$D/$k.patches.h5" -o "$D/$k.clumps.h5" --relevance 2 -q
    deblend "$D/$k.clumps.h5" "$D/snap_$k.hdf5" -o "$D/$k.peaks.h5" -q
    voters "$D/$k.peaks.h5" "$D/snap_$k.hdf5" -o "$D/$k.voters.h5" -q
    # deblending switched off: no patch is ever split
    deblend "$D/$k.clumps.h5" "$D/snap_$k.hdf5" -o "$D/nd$k.peaks.h5" --off -q
    voters "$D/nd$k.peaks.h5" "$D/snap_$k.hdf5" -o "$D/nd$k.voters.h5" -q
  done
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

stages() {  # stages PREFIX K... -> the peaks files of those snapshots
  local prefix=$1
  shift
  for k in "$@"; do printf '%s ' "$D/$prefix$k.peaks.h5"; done
}

ALL=(000 001 002 003 004 005 006 007 008)

# The true halo of each non-artefact peak, from its voters: "snapshot peak lineage halo" lines.
lineage_halos() {
  /usr/bin/python3 - "$1" "$D" "$2" <<'PY'
import h5py, sys, numpy as np
tree, d, prefix = h5py.File(sys.argv[1]), sys.argv[2], sys.argv[3]
t = np.load(f"{d}/truth.npy")
p = tree["peaks"]
for s, i, lin, art in zip(p["snapshot"][...], p["id"][...], p["lineage"][...], p["artefact"][...]):
    if art:
        continue
    v = h5py.File(f"{d}/{prefix}{s:03d}.voters.h5")
    vid = v["voters/particle_id"][...][v["voters/peak"][...] == i]
    print(s, i, lin, np.bincount(t[vid - 1], minlength=2).argmax())
PY
}

@test "with deblending: two unbroken lineages, each following its own halo" {
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/tree.h5" -q
  assert_success
  run lineage_halos "$OUT/tree.h5" ""
  assert_success
  # every (non-artefact) peak's lineage maps to one halo, and there are exactly two lineages
  pairs=$(echo "$output" | awk '{print $3, $4}' | sort -u)
  assert_equal "$(echo "$pairs" | wc -l)" 2
  assert_equal "$(echo "$pairs" | awk '{print $2}' | sort -u | wc -l)" 2
  n=$(/usr/bin/python3 -c 'import h5py,sys; p=h5py.File(sys.argv[1])["peaks"]; print(int(p["merged"][...].sum()), int(p["revived_from_graveyard"][...].sum()))' "$OUT/tree.h5")
  assert_equal "$n" "0 0"
}

@test "without deblending: confusion during the overlap, the graveyard revives the right halo" {
  # shellcheck disable=SC2046
  run mergertree $(stages nd "${ALL[@]}") -o "$OUT/tree.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/tree.h5" "$D" <<'PY'
import h5py, sys, numpy as np
tree, d = h5py.File(sys.argv[1]), sys.argv[2]
t = np.load(f"{d}/truth.npy")
p = tree["peaks"]
rev = np.flatnonzero(p["revived_from_graveyard"][...])
# the halo lost in the overlap was recorded as merged, and its revival says that it was not: the merger
# is cleared and kept as the peak it was confused with
confused = np.flatnonzero(p["merged_before_revival_id"][...] > 0)
assert len(rev) >= 1 and len(confused) >= 1 and not p["merged"][...][confused].any()
def halo(s, i):
    v = h5py.File(f"{d}/nd{s:03d}.voters.h5")
    vid = v["voters/particle_id"][...][v["voters/peak"][...] == i]
    return np.bincount(t[vid - 1], minlength=2).argmax()
for r in rev:
    s, i = p["snapshot"][r], p["id"][r]
    ps, pi = p["main_progenitor_snapshot"][r], p["main_progenitor_id"][r]
    assert p["gap"][r] == s - ps and p["gap"][r] >= 2
    assert halo(s, i) == halo(ps, pi), (s, i, ps, pi)
print("ok")
PY
  assert_output "ok"
}

@test "batch and on-the-fly runs give identical trees" {
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/batch.h5" -q
  assert_success
  run mergertree $(stages "" 000 001 002) -o "$OUT/fly.h5" -q
  assert_success
  for k in 003 004 005 006 007 008; do
    run mergertree --state "$OUT/fly.h5" --add "$D/$k.peaks.h5" -o "$OUT/fly.h5" -q
    assert_success
  done
  for obj in /peaks /state /snapshots; do
    run h5diff "$OUT/batch.h5" "$OUT/fly.h5" "$obj" "$obj"
    assert_success
  done
}

@test "relabelling peak IDs between snapshots changes nothing but the IDs" {
  mkdir -p "$OUT/re"
  for k in "${ALL[@]}"; do
    cp "$D/$k.peaks.h5" "$D/$k.peaks.h5.json" "$D/$k.voters.h5" "$D/$k.voters.h5.json" "$OUT/re/"
    /usr/bin/python3 - "$OUT/re/$k.peaks.h5" "$OUT/re/$k.voters.h5" "$k" <<'PY'
import h5py, sys, numpy as np
pf, vf, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
new = lambda i: 1000 * (k + 1) + 7 * (50 - i)  # an arbitrary relabelling, different per snapshot
with h5py.File(pf, "r+") as f:
    f["peaks/id"][...] = [new(i) for i in f["peaks/id"][...]]
    pk = f["particles/peak"][...]
    f["particles/peak"][...] = np.where(pk > 0, [new(i) for i in pk], 0)
    f["peaks/parent_clump"][...] = [new(i) for i in f["peaks/parent_clump"][...]]
with h5py.File(vf, "r+") as f:
    f["voters/peak"][...] = [new(i) for i in f["voters/peak"][...]]
    f["peaks/id"][...] = [new(i) for i in f["peaks/id"][...]]
PY
    remanifest "$OUT/re/$k.peaks.h5"
    # the voters' manifest records the peaks file it came from: point it at the relabelled copy
    /usr/bin/python3 -c "import json,sys; p='$OUT/re/$k.voters.h5.json'; m=json.load(open(p)); m['inputs'][0]['path']='$OUT/re/$k.peaks.h5'; json.dump(m, open(p,'w'))"
    remanifest "$OUT/re/$k.voters.h5" "$OUT/re/$k.peaks.h5"
  done
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/a.h5" -q
  run mergertree $(for k in "${ALL[@]}"; do printf '%s ' "$OUT/re/$k.peaks.h5"; done) -o "$OUT/b.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/a.h5" "$OUT/b.h5" <<'PY'
import h5py, sys
def links(fn):
    p = h5py.File(fn)["peaks"]
    key = {(s, i): (s, round(float(m), 9)) for s, i, m in zip(p["snapshot"][...], p["id"][...], p["mass"][...])}
    out = set()
    for s, i, ms, mi, art, rv, mg in zip(p["snapshot"][...], p["id"][...], p["main_progenitor_snapshot"][...],
                                         p["main_progenitor_id"][...], p["artefact"][...], p["revived_from_graveyard"][...], p["merged"][...]):
        out.add((key[(s, i)], key.get((ms, mi)), int(art), int(rv), int(mg)))
    return out
assert links(sys.argv[1]) == links(sys.argv[2])
print("ok")
PY
  assert_output "ok"
}

@test "a time-reversed run links the same pairs (no mergers here)" {
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/fwd.h5" -q
  # shellcheck disable=SC2046
  run mergertree $(stages "" 008 007 006 005 004 003 002 001 000) -o "$OUT/bwd.h5" --backwards -q
  assert_success
  run /usr/bin/python3 - "$OUT/fwd.h5" "$OUT/bwd.h5" <<'PY'
import h5py, sys
def pairs(fn, reverse):
    p = h5py.File(fn)["peaks"]
    n = 8
    out = set()
    for s, i, ms, mi, art in zip(p["snapshot"][...], p["id"][...], p["main_progenitor_snapshot"][...],
                                 p["main_progenitor_id"][...], p["artefact"][...]):
        if ms < 0 or art:
            continue
        a, b = (n - s, i), (n - ms, mi)
        if not reverse:
            a, b = (s, i), (ms, mi)
        out.add(frozenset([a, b]))
    return out
f, b = pairs(sys.argv[1], False), pairs(sys.argv[2], True)
assert f == b, (f ^ b)
print("ok")
PY
  assert_output "ok"
}

@test "exports: a links table, and a Consistent-Trees file whose links are tree.h5's" {
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/tree.h5" --export-text --export-ctrees "$OUT/ct" -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/ctrees_reader.py" "$OUT/ct/tree_0_0_0.dat" "$OUT/tree.h5"
  assert_output "ok"
  run head -1 "$OUT/tree.h5.links.txt"
  assert_output --partial "lineage main_progenitor_snapshot"
  [[ ! -e $OUT/tree.h5.ctrees.txt ]]  # the old Consistent-Trees-style columns are gone
}

@test "progress: a line per snapshot linked with PHEW_PROGRESS_INTERVAL=0, none with -q" {
  # shellcheck disable=SC2046
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr mergertree $(stages "" "${ALL[@]}") -o "$OUT/t.h5"
  assert_success
  n=${#ALL[@]}
  assert_equal "$(grep -c 'progress: link: [0-9]* of [0-9]* snapshots' <<<"$stderr")" "$n"
  grep -q "progress: link: $n of $n snapshots (100%), in " <<<"$stderr" || fail "$stderr"
  # shellcheck disable=SC2046
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr mergertree $(stages "" "${ALL[@]}") -o "$OUT/q.h5" -q
  assert_success
  [[ -z $stderr ]] || fail "$stderr"
}

@test "under mpirun the tree is built on rank 0 alone, says so, and writes the file one rank writes" {
  # The tree is not distributed (docs/tools/mergertree.md, "Parallel"): what can go wrong under mpirun
  # is the other ranks' part in the collective write (rank 0's rows and state attributes only).
  # shellcheck disable=SC2046
  run mergertree $(stages "" "${ALL[@]}") -o "$OUT/t1.h5" -q
  assert_success
  # shellcheck disable=SC2046
  run --separate-stderr mpi 3 mergertree $(stages "" "${ALL[@]}") -o "$OUT/t3.h5"
  assert_success
  [[ $stderr == *"the tree is built on rank 0 alone; the other 2 ranks only join the write"* ]] || fail "$stderr"
  for obj in /peaks /snapshots /state; do
    run h5diff "$OUT/t1.h5" "$OUT/t3.h5" "$obj" "$obj"
    assert_success
  done
  # and an on-the-fly step under mpirun continues the same tree
  # shellcheck disable=SC2046
  run mergertree $(stages "" 000 001 002 003 004 005 006 007) -o "$OUT/f.h5" -q
  run mpi 2 mergertree --state "$OUT/f.h5" --add "$D/008.peaks.h5" -o "$OUT/f.h5" -q
  assert_success
  run h5diff "$OUT/t1.h5" "$OUT/f.h5" /state /state
  assert_success
}

bad_case() { bad_input mergertree "" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: stages out of time order" {
  bad_case 3 "out of time order" "$D/001.peaks.h5" "$D/000.peaks.h5" -o "$OUT/t.h5"
  assert_only_files "$OUT"
}
@test "bad input: a missing voters file" {
  cp "$D/000.peaks.h5" "$D/000.peaks.h5.json" "$OUT/"
  bad_case 4 "missing voters file" "$OUT/000.peaks.h5" -o "$OUT/t.h5"
}
@test "bad input: a stage from a different simulation" {
  # the deblend test data: a different box
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_overlap.py" "$OUT/o.hdf5" --n 3000
  cic-project "$OUT/o.hdf5" -o "$OUT/o.grid.h5" --grid 48 -q
  phew-segment "$OUT/o.grid.h5" -o "$OUT/o.patches.h5" --threshold 50mean -q
  phew-merge "$OUT/o.patches.h5" -o "$OUT/o.clumps.h5" --relevance 2 -q
  deblend "$OUT/o.clumps.h5" "$OUT/o.hdf5" -o "$OUT/o.peaks.h5" -q
  voters "$OUT/o.peaks.h5" "$OUT/o.hdf5" -o "$OUT/o.voters.h5" -q
  bad_case 3 "different simulation" "$D/000.peaks.h5" "$OUT/o.peaks.h5" -o "$OUT/t.h5"
}
@test "bad input: a corrupt state leaves the previous tree intact" {
  run mergertree $(stages "" 000 001) -o "$OUT/tree.h5" -q
  cp "$OUT/tree.h5" "$OUT/copy.h5"
  cp "$OUT/tree.h5.json" "$OUT/copy.h5.json"
  head -c 5000 "$OUT/copy.h5" >"$OUT/corrupt.h5"
  cp "$OUT/copy.h5.json" "$OUT/corrupt.h5.json"
  remanifest "$OUT/corrupt.h5"
  bad_case 4 "corrupt.h5: HDF5 cannot open the file: truncated: 5000 of its" --state "$OUT/corrupt.h5" --add "$D/002.peaks.h5" -o "$OUT/corrupt.h5"
  # an interrupted --add leaves the state as it was
  before=$(sha256sum "$OUT/tree.h5")
  PHEW_TEST_FAIL_AT=write run mergertree --state "$OUT/tree.h5" --add "$D/002.peaks.h5" -o "$OUT/tree.h5" -q
  assert_failure 1
  assert_equal "$(sha256sum "$OUT/tree.h5")" "$before"
}
@test "bad input: usage" {
  bad_case 2 "not both" -o "$OUT/t.h5"
  bad_case 2 "--state needs --add" --state "$OUT/t.h5" -o "$OUT/t.h5"
  bad_case 2 "at least 1" "$D/000.peaks.h5" --min-votes 0 -o "$OUT/t.h5"
}

@test "a minor halo stripped and merging into a major one (synth-particles merger): the major is the main progenitor" {
  M="$BATS_TEST_TMPDIR/merger"
  mkdir -p "$M/snaps"
  synth-particles merger -o "$M/snaps/snap" --snapshots 11 --interval 150 -q
  for s in "$M"/snaps/snap_0*.hdf5; do
    k=$(basename "${s%.hdf5}")
    cic-project "$s" -o "$M/$k.grid.h5" --grid 64 --region -80,-80,-100,120,120,100 -q
    phew-segment "$M/$k.grid.h5" -o "$M/$k.patches.h5" --threshold 200mean -q
    phew-merge "$M/$k.patches.h5" -o "$M/$k.clumps.h5" --relevance 3 -q
    deblend "$M/$k.clumps.h5" "$s" -o "$M/$k.peaks.h5" -q
    voters "$M/$k.peaks.h5" "$s" -o "$M/$k.voters.h5" --search-radius 15 -q
  done
  run mergertree "$M"/snap_0*.peaks.h5 -o "$M/tree.h5" -q
  assert_success
  run /usr/bin/python3 - "$M/tree.h5" "$M" <<'PY'
import h5py, sys, numpy as np
p = h5py.File(sys.argv[1])["peaks"]
m = np.flatnonzero(p["merged"][...])
assert len(m) == 1, m
s, i = p["snapshot"][m[0]], p["id"][m[0]]
ds, di = p["descendant_snapshot"][m[0]], p["descendant_id"][m[0]]
d = np.flatnonzero((p["snapshot"][...] == ds) & (p["id"][...] == di))[0]
ms, mi = p["main_progenitor_snapshot"][d], p["main_progenitor_id"][d]
# which halo is which, from the truth file: the major halo holds particle IDs 1..10000
truth = h5py.File(f"{sys.argv[2]}/snaps/snap_{ms:03d}.truth.h5")
first = truth["components/first_id"][...]
def halo(snap, peak):
    v = h5py.File(f"{sys.argv[2]}/snap_{snap:03d}.voters.h5")
    ids = v["voters/particle_id"][...][v["voters/peak"][...] == peak]
    return int(np.median(np.searchsorted(first, ids, side="right") - 1))
assert halo(ms, mi) == 0, "main progenitor is not the major halo"
assert halo(s, i) == 1, "the merged peak is not the minor halo"
# the major halo's lineage runs from the first snapshot to the last
lin = p["lineage"][d]
assert set(p["snapshot"][...][p["lineage"][...] == lin]) == set(range(11))

# When (docs/tools/mergertree.md, "When a merger is recorded"): the satellite's lineage ends at the last
# snapshot where it is a relevant density peak (peak / its saddle with the host >= 3, computed here from
# patches.h5), which is before the cores coincide. Its relative speed is below the host's escape speed,
# so velocity space does not hold it apart either.
def satellite_relevance(snap):
    h = h5py.File(f"{sys.argv[2]}/snap_{snap:03d}.patches.h5")
    dens = h["peaks/density"][...]
    if len(dens) < 2:
        return 0.0
    assert len(dens) == 2, f"snapshot {snap}: {len(dens)} density peaks, this check expects host and satellite"
    saddle = h["saddles/density"][...]
    return dens.min() / saddle.max() if len(saddle) else float("inf")
assert satellite_relevance(s) >= 3, (s, satellite_relevance(s))
assert satellite_relevance(ds) < 3, (ds, satellite_relevance(ds))
def separation(snap):
    c = h5py.File(f"{sys.argv[2]}/snaps/snap_{snap:03d}.truth.h5")["components/center"][...]
    return np.linalg.norm(c[1] - c[0])
host_rs = truth["components/scale_radius"][0]
assert separation(ds) > 2 * host_rs, separation(ds)          # recorded while the cores are apart ...
assert min(separation(k) for k in range(ds, 11)) < host_rs   # ... and they do coincide later
print("ok")
PY
  assert_output "ok"
}
