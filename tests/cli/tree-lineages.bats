#!/usr/bin/env bats
# Lineages a paper can use: a synth-particles sequence whose lineages are known (tests/data/
# lineages_scene.json: six NFW haloes of 100 to 2,000 particles moving through a uniform background, five
# snapshots) through the whole chain at the defaults, on a uniform grid and on an adaptive mesh fine
# enough to resolve single particles (the noise fragments the noise floor joins to their object), also
# with a second buffer cell (where, before the noise floor and the votes by share and halo, the halo of
# 150 particles lost its lineage after the first snapshot); every halo of >= 100 particles keeps one
# lineage through every snapshot, at 1 and 3 ranks. Then the
# never-silently-empty checks (voters with a radius far too small) and a series with a snapshot missing.
load common

# chain DIR MESH RANKS: the chain over the scene's snapshots in DIR/snaps, outputs in DIR/MESH-rRANKS.
chain() {
  local d=$1 mesh=$2 ranks=$3 out="$1/$2-r$3"
  local grid=(--grid auto)
  [[ $mesh == amr ]] && grid=(--grid 32 --refine 8 --levels 5)
  [[ $mesh == amr2 ]] && grid=(--grid 32 --refine 8 --levels 5 --buffer 2)
  mkdir -p "$out"
  # One rank runs the tools as users do on a laptop, without mpirun (which costs a start-up each).
  local run=()
  ((ranks == 1)) || run=(mpirun -n "$ranks" --oversubscribe)
  local stages=()
  for snap in "$d"/snaps/snap_00[0-4].hdf5; do
    local k
    k=$(basename "${snap%.hdf5}")
    "${run[@]}" cic-project "$snap" -o "$out/$k.grid.h5" "${grid[@]}" -q
    "${run[@]}" phew-segment "$out/$k.grid.h5" -o "$out/$k.patches.h5" --threshold 80mean -q 2>/dev/null
    "${run[@]}" phew-merge "$out/$k.patches.h5" -o "$out/$k.clumps.h5" -q
    "${run[@]}" deblend "$out/$k.clumps.h5" "$snap" -o "$out/$k.peaks.h5" -q
    "${run[@]}" voters "$out/$k.peaks.h5" "$snap" -o "$out/$k.voters.h5" -q
    stages+=("$out/$k.peaks.h5")
  done
  "${run[@]}" mergertree "${stages[@]}" -o "$out/tree.h5" -q
}

# lineages_hold OUT: every halo of >= 100 particles has, in every snapshot, a peak holding most of its
# particles (deblend's membership), and those peaks are one lineage of tree.h5.
lineages_hold() {
  /usr/bin/python3 - "$1" "$BATS_FILE_TMPDIR/d/snaps" <<'PY'
import sys, h5py, numpy as np
out, snaps = sys.argv[1], sys.argv[2]
t = h5py.File(f"{out}/tree.h5")["/peaks"]
lineage = {(int(s), int(i)): int(l) for s, i, l in zip(t["snapshot"][:], t["id"][:], t["lineage"][:])}
bad, seen = [], 0
for k in range(5):
    truth = h5py.File(f"{snaps}/snap_{k:03d}.truth.h5")
    comp, pid = truth["particles/component"][:], truth["particles/id"][:]
    c = truth["components"]
    p = h5py.File(f"{out}/snap_{k:03d}.peaks.h5")
    member = dict(zip(p["particles/id"][:].tolist(), p["particles/peak"][:].tolist()))
    for h in np.flatnonzero(c["is_halo"][:] == 1):
        if c["n_particles"][h] < 100:
            continue
        peaks = [member.get(int(i), 0) for i in pid[comp == h]]
        best = max(set(peaks) - {0}, key=peaks.count, default=0)
        if best == 0 or peaks.count(best) < 0.25 * len(peaks):
            bad.append(f"snapshot {k}: halo {h} has no peak holding a quarter of its particles")
            continue
        seen += 1
        if k == 0:
            lineage.setdefault(("halo", int(h)), lineage[(0, best)])
        elif lineage[(k, best)] != lineage[("halo", int(h))]:
            bad.append(f"snapshot {k}: halo {h} ({c['n_particles'][h]} particles) is in lineage {lineage[(k, best)]}, "
                       f"at snapshot 0 in {lineage[('halo', int(h))]}")
assert seen == 30, seen
assert not bad, "\n".join(bad)
print("ok")
PY
}

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D/snaps"
  synth-particles "$PHEW_SOURCE/tests/data/lineages_scene.json" -o "$D/snaps/snap" -q
  chain "$D" uniform 1
  chain "$D" amr 1
  chain "$D" amr2 1
  chain "$D" amr2 3
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "uniform grid: every halo of >= 100 particles keeps its lineage" {
  run lineages_hold "$D/uniform-r1"
  assert_success
  assert_output "ok"
}

@test "adaptive mesh down to single particles: the noise floor joins the fragments, every halo keeps its lineage" {
  # The mesh resolves single particles: peaks lighter than the noise floor were there, and merged.
  run /usr/bin/python3 -c "
import json, sys
s = [json.load(open(f'$D/amr-r1/snap_00{k}.clumps.h5.json'))['summary'] for k in range(5)]
assert min(x['n_below_noise_floor'] for x in s) > 20, [x['n_below_noise_floor'] for x in s]
print('ok')"
  assert_output "ok"
  run lineages_hold "$D/amr-r1"
  assert_success
  assert_output "ok"
}

@test "adaptive mesh with a second buffer cell, at 1 and 3 ranks: the same tree, every halo keeps its lineage" {
  run lineages_hold "$D/amr2-r1"
  assert_success
  assert_output "ok"
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$D/amr2-r1/tree.h5" "$D/amr2-r3/tree.h5"
  assert_success
}

@test "never silently empty: voters with a radius far too small give a warning and the manifest field" {
  local stages=()
  for k in 000 001 002; do
    voters "$D/uniform-r1/snap_$k.peaks.h5" "$D/snaps/snap_$k.hdf5" -o "$OUT/$k.voters.h5" --search-radius 0.5 -q
    stages+=("$D/uniform-r1/snap_$k.peaks.h5:$OUT/$k.voters.h5")
  done
  run --separate-stderr mergertree "${stages[@]}" -o "$OUT/tree.h5"
  assert_success
  [[ $stderr == *"warning: "*"snap_000.peaks.h5: only "*" peaks have 15 voters or more"*"voters' search radius 0.5 kpc"* ]] || fail "$stderr"
  run /usr/bin/python3 -c "
import json
s = json.load(open('$OUT/tree.h5.json'))['summary']
few = s['stages_with_few_voters']
assert [f['stage'] for f in few] == [0, 1, 2], few
assert few[0]['median_voters'] < 15 and 'search radius 0.5' in few[0]['voters'], few[0]
print('ok')"
  assert_output "ok"
  # The tutorial's defaults: no warning, links.
  run --separate-stderr mergertree "$D/uniform-r1"/snap_00{0,1,2}.peaks.h5 -o "$OUT/default.h5"
  assert_success
  [[ $stderr != *warning* ]] || fail "$stderr"
  run /usr/bin/python3 -c "
import json
s = json.load(open('$OUT/default.h5.json'))['summary']
assert s['n_links'] > 0 and s['stages_with_few_voters'] == [], s
print('ok')"
  assert_output "ok"
}

@test "a series with a snapshot missing still links across the gap" {
  run mergertree "$D/uniform-r1"/snap_00{0,1,3,4}.peaks.h5 -o "$OUT/gap.h5" -q
  assert_success
  # The scene's snapshot 2 left out: the checks run on snapshots 0, 1, 3, 4 (tree stages 0-3).
  run /usr/bin/python3 - "$OUT/gap.h5" "$D" <<'PY'
import sys, h5py, numpy as np
t = h5py.File(sys.argv[1])["/peaks"]
lineage = {(int(s), int(i)): int(l) for s, i, l in zip(t["snapshot"][:], t["id"][:], t["lineage"][:])}
want = {}
for stage, k in enumerate([0, 1, 3, 4]):
    truth = h5py.File(f"{sys.argv[2]}/snaps/snap_{k:03d}.truth.h5")
    comp, pid, c = truth["particles/component"][:], truth["particles/id"][:], truth["components"]
    p = h5py.File(f"{sys.argv[2]}/uniform-r1/snap_{k:03d}.peaks.h5")
    member = dict(zip(p["particles/id"][:].tolist(), p["particles/peak"][:].tolist()))
    for h in np.flatnonzero((c["is_halo"][:] == 1) & (c["n_particles"][:] >= 100)):
        peaks = [member.get(int(i), 0) for i in pid[comp == h]]
        best = max(set(peaks) - {0}, key=peaks.count)
        assert want.setdefault(int(h), lineage[(stage, best)]) == lineage[(stage, best)], (k, h)
print("ok")
PY
  assert_success
  assert_output "ok"
}
