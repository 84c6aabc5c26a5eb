#!/usr/bin/env bats
# unbind on a hierarchy: a host with subhaloes (unbound particles passed to the host), --saddle, the
# same data at 1-4 ranks and with threads on a uniform grid and an adaptive mesh (the host spread over
# the ranks from two), batches (the working set), and mergertree voting with the most-bound particles.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # A host with three subhaloes, two isolated haloes across the boundary, a background.
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_substructure.py" "$D/sub.hdf5"
  cic-project "$D/sub.hdf5" -o "$D/sub.grid.h5" --grid 48 -q
  cic-project "$D/sub.hdf5" -o "$D/amr.grid.h5" --grid 16 --refine 8 --levels 3 -q
  for m in sub amr; do
    phew-segment "$D/$m.grid.h5" -o "$D/$m.patches.h5" --threshold 5mean -q
    phew-merge "$D/$m.patches.h5" -o "$D/$m.clumps.h5" --relevance 2 --saddle-threshold 30mean -q
  done
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "subhaloes in a host: their own particles bound to them, what they release passed to the host" {
  run unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/b.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/b.h5" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); o = f["objects"]; p = f["particles"]
ids, parent = o["id"][...], o["parent"][...]
subs = np.flatnonzero(parent > 0)
assert len(subs) == 3, parent
host = int(parent[subs[0]])
assert (parent[subs] == host).all()
h = int(np.flatnonzero(ids == host)[0])
assert o["n_received"][h] > 0  # particles of the host that crossed a subhalo's cells
assert o["n_bound_inclusive"][h] == o["n_bound"][h] + o["n_bound_inclusive"][subs].sum()
for s in subs:
    # about its 3,000 particles, nearly all a subhalo's own (IDs 30001-39000 are the subhaloes')
    mine = p["id"][...][p["object"][...] == ids[s]]
    own = ((mine >= 30001) & (mine <= 39000)).mean()
    assert len(mine) > 2500 and own > 0.9, (len(mine), own)
print("ok")
PY
  assert_success
  assert_output --partial "ok"
}

@test "--saddle: a subhalo keeps what cannot escape over its key saddle, fewer than without; the same on 2 ranks" {
  unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/plain.h5" -q
  run unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/s1.h5" -q --saddle
  assert_success
  run mpi 2 unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/s2.h5" -q --saddle
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/s1.h5" "$OUT/s2.h5"
  assert_success
  run /usr/bin/python3 - "$OUT/plain.h5" "$OUT/s1.h5" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1])["objects"], h5py.File(sys.argv[2])["objects"]
subs = np.flatnonzero(b["parent"][...] > 0)
assert len(subs) == 3
na, nb = a["n_bound"][...][subs], b["n_bound"][...][subs]
assert (nb < na).all() and (nb > 0.8 * 3000).all(), (na, nb)
print("ok", na, nb)
PY
  assert_success
  assert_output --partial "ok"
}

@test "the same data on 1, 2, 3 and 4 ranks (and 2 or 3 threads): uniform grid and adaptive mesh" {
  for m in sub amr; do
    unbind "$D/$m.clumps.h5" "$D/sub.hdf5" -o "$OUT/${m}1.h5" -q --threads 1
    for n in 2 3 4; do
      run mpi "$n" unbind "$D/$m.clumps.h5" "$D/sub.hdf5" -o "$OUT/$m$n.h5" -q --threads $((n % 2 + 2))
      assert_success
      run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/${m}1.h5" "$OUT/$m$n.h5"
      assert_success
    done
  done
  run /usr/bin/python3 -c "import h5py, sys; o = h5py.File(sys.argv[1])['objects']; assert (o['parent'][...] > 0).sum() >= 1 and len(o['id']) >= 4, len(o['id'])" "$OUT/amr1.h5"
  assert_success
}

@test "memory: the biggest halo spread over the ranks, the others in batches of whole haloes, the same data" {
  # The host (30,000 particles and its three subhaloes' 9,000) is more than half of the members: at 2
  # and 3 ranks it is spread over every rank (its subhaloes unbound on one), so no rank holds all of it,
  # with either potential.
  unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/one.h5" -q --threads 1
  check() {  # FILE BATCHES SPREAD: the summary's working set
    /usr/bin/python3 - "$1.json" "$2" "$3" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["largest_halo"] >= 35000, s
assert s["n_spread"] == int(sys.argv[3]), s["n_spread"]
if s["n_spread"]:
    assert s["largest_batch"] < 0.5 * s["largest_halo"], (s["largest_batch"], s["largest_halo"])
else:
    assert s["largest_batch"] == s["largest_halo"], (s["largest_batch"], s["largest_halo"])
assert eval(f"{s['n_batches']} {sys.argv[2]}"), s["n_batches"]
bins = s["seconds_by_size"]
assert sum(b["haloes"] for b in bins) == s["n_haloes"] and sum(b["particles"] for b in bins) == s["n_particles"], bins
assert all(b["smallest"] <= b["particles"] / max(b["haloes"], 1) < 2 * b["smallest"] or b["smallest"] == 0 for b in bins), bins
print("ok")
PY
  }
  for n in 2 3; do
    run mpi "$n" unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/r$n.h5" -q --threads 2
    assert_success
    run check "$OUT/r$n.h5" "== 1" 1
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/one.h5" "$OUT/r$n.h5"
    assert_success
  done
  # With the tree potential: every rank walks the host's tree for its block, the same data as one rank.
  unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/tree1.h5" -q --threads 1 --potential tree
  run mpi 2 unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/tree2.h5" -q --threads 1 --potential tree
  assert_success
  run check "$OUT/tree2.h5" "== 1" 1
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/tree1.h5" "$OUT/tree2.h5"
  assert_success
  # One rank, batches of at most 5,000 particles: the host alone, each 6,000-particle halo alone, the rest.
  run unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/b.h5" -q --threads 2 --batch-particles 5000
  assert_success
  run check "$OUT/b.h5" ">= 3" 0
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/one.h5" "$OUT/b.h5"
  assert_success
  run unbind "$D/sub.clumps.h5" "$D/sub.hdf5" -o "$OUT/bad.h5" --batch-particles 0
  assert_failure 2
  assert_one_error_line unbind
}

@test "mergertree PEAKS:BOUND votes with unbind's most-bound particles: the crossing's links as with voters" {
  local C=$BATS_TEST_TMPDIR/c
  mkdir -p "$C"
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_crossing.py" "$C" --snapshots 2 --n 3000
  crossing_stages "$C"
  for k in 000 001; do unbind "$C/$k.peaks.h5" "$C/snap_$k.hdf5" -o "$C/$k.bound.h5" -q; done
  run mergertree "$C/000.peaks.h5:$C/000.voters.h5" "$C/001.peaks.h5:$C/001.voters.h5" -o "$OUT/tv.h5" --export-text -q
  assert_success
  run mergertree "$C/000.peaks.h5:$C/000.bound.h5" "$C/001.peaks.h5:$C/001.bound.h5" -o "$OUT/tb.h5" --export-text -q
  assert_success
  run diff "$OUT/tv.h5.links.txt" "$OUT/tb.h5.links.txt"
  assert_success
  run /usr/bin/python3 -c "import h5py, sys; assert (h5py.File(sys.argv[1])['peaks/main_progenitor_id'][...] > 0).sum() >= 2" "$OUT/tb.h5"
  assert_success
  # A bound.h5 of other peaks is refused as a stage's voters.
  mkdir -p "$OUT/x"
  bad_input mergertree "$OUT/x/t.h5" 3 "was not computed from" "$C/000.peaks.h5:$C/000.bound.h5" "$C/001.peaks.h5:$C/000.bound.h5"
}

