#!/usr/bin/env bats
# Reliability, for every tool: failures injected at every phase on one of two ranks end the
# job with one error line and nothing written; -o naming an input is refused; a killed run leaves
# nothing and keeps the previous output; non-UTF-8 file names give valid JSON manifests; malformed input
# manifests are bad input; side outputs (text exports, quicklooks) vanish with a failed run.
# $status and $stderr are set by bats' run (in the test's own subshell).
# shellcheck disable=SC2154,SC2030,SC2031
load common

TOOLS=(cic-project phew-segment phew-merge deblend unbind voters mergertree dtfe-surface synth-particles)

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Two snapshots of two haloes crossing, and every stage of both: small, but with peaks and voters.
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_crossing.py" "$D" --snapshots 2 --n 3000
  crossing_stages "$D"
  mergertree "$D/000.peaks.h5" -o "$D/tree.h5" -q
  printf '%s\n' "260 198 200" "140 201 200" >"$D/centers.txt"  # the two haloes
  cp "$PHEW_SOURCE/tests/data/two_halos_superposed.json" "$D/scene.json"
  /usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); [c.update(particles=500) for c in s["components"]]; json.dump(s, open(sys.argv[1], "w"))' "$D/scene.json"
}

# The signal tests are timed in seconds, so CTest runs them alone (cli.reliability-signals, RUN_SERIAL)
# and the rest beside other tests (cli.reliability): PHEW_RELIABILITY_PART=signals or rest; unset: all.
is_signal_test() { [[ $BATS_TEST_DESCRIPTION == *SIG* || $BATS_TEST_DESCRIPTION == *signal* ]]; }

setup() {
  case ${PHEW_RELIABILITY_PART:-all} in
    signals) is_signal_test || skip "not a signal test (PHEW_RELIABILITY_PART=signals)" ;;
    rest) ! is_signal_test || skip "a signal test (PHEW_RELIABILITY_PART=rest)" ;;
  esac
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

# cmd TOOL OUTPUT: sets CMD to a small run of TOOL writing OUTPUT, its side outputs switched on.
cmd() {
  case $1 in
    cic-project) CMD=(cic-project "$D/snap_000.hdf5" --grid 16) ;;
    phew-segment) CMD=(phew-segment "$D/000.grid.h5" --threshold 50mean) ;;
    phew-merge) CMD=(phew-merge "$D/000.patches.h5" --relevance 2 --particles "$D/snap_000.hdf5" --export-text) ;;
    deblend) CMD=(deblend "$D/000.clumps.h5" "$D/snap_000.hdf5") ;;
    unbind) CMD=(unbind "$D/000.clumps.h5" "$D/snap_000.hdf5" --export-yt "${2%/*}/halos.0.h5") ;;
    voters) CMD=(voters "$D/000.peaks.h5" "$D/snap_000.hdf5") ;;
    mergertree) CMD=(mergertree "$D/000.peaks.h5" "$D/001.peaks.h5" --export-text) ;;
    dtfe-surface) CMD=(dtfe-surface "$D/snap_000.hdf5" --centers "$D/centers.txt" --size 20 --resolution 8 --png) ;;
    # A sequence of two snapshots: two outputs and their truth files, and an "evolve" phase between them.
    synth-particles) CMD=(synth-particles plummer --particles 1000 --mode ballistic --snapshots 2 --interval 10) ;;
    *) fail "no command for $1" ;;
  esac
  CMD+=(-o "$2" -q)
}

# phases_of FOLDER: the phases recorded in the timings of the manifests in FOLDER (a successful run's).
phases_of() {
  /usr/bin/python3 - "$1" <<'PY'
import glob, json, sys
seen = []
for m in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for p in json.load(open(m, "rb")).get("timings", {}):
        if p not in seen:
            seen.append(p)
print(" ".join(seen))
PY
}

# partials FOLDER: the temporary files left in FOLDER (empty when none).
partials() {
  find "$1" -maxdepth 1 \( -name '.phew-*' -o -name '*.partial-*' \) -printf '%P\n'
}

# The stderr lines printed by TOOL itself (mpirun adds its own when a job is aborted).
tool_lines() {
  printf '%s\n' "$stderr" | grep -a -E "^$1(:|\[)" || true
}

# fail_everywhere TOOL: a successful run gives the tool's phases; then, at 2 ranks, a failure injected at
# each phase on rank 0 (phew's own internal error) and on the last rank (a library's std::out_of_range)
# ends the job (exit 1, no hang) with one error line naming the phase and the rank, and leaves the output
# folder empty.
fail_everywhere() {
  local tool=$1 phases phase rank with want
  mkdir -p "$OUT/ok" "$OUT/f"
  cmd "$tool" "$OUT/ok/x.h5"
  run --separate-stderr "${CMD[@]}"
  assert_success
  phases=$(phases_of "$OUT/ok")
  [[ " $phases " == *" finish "* ]] || fail "$tool: no finish phase in '$phases'"
  cmd "$tool" "$OUT/f/x.h5"
  for phase in $phases; do
    for rank in 0 -1; do
      if [[ $rank == 0 ]]; then with=phew want="internal error in phase $phase on rank 0: failure injected"
      else with=std want="internal error in phase $phase on rank 1: map::at"; fi
      PHEW_TEST_FAIL_AT=$phase PHEW_TEST_FAIL_RANK=$rank PHEW_TEST_FAIL_WITH=$with \
        run --separate-stderr timeout 60 mpirun -n 2 --oversubscribe "${CMD[@]}"
      [[ $status -eq 1 ]] || fail "$tool: phase $phase, rank $rank: exit $status (124 = hang); stderr: $stderr"
      local lines
      lines=$(tool_lines "$tool")
      [[ $(printf '%s\n' "$lines" | grep -c .) -eq 1 && $lines == "$tool: error: $want"* ]] ||
        fail "$tool: phase $phase, rank $rank: want one line '$tool: error: $want', got: $lines"
      [[ -z $(find "$OUT/f" -mindepth 1 -printf '%P\n') ]] ||
        fail "$tool: phase $phase, rank $rank: left $(find "$OUT/f" -mindepth 1 -printf '%P ')"
    done
  done
}

@test "failure injected at every phase of cic-project on either rank" { fail_everywhere cic-project; }
@test "failure injected at every phase of phew-segment on either rank" { fail_everywhere phew-segment; }
@test "failure injected at every phase of phew-merge on either rank" { fail_everywhere phew-merge; }
@test "failure injected at every phase of deblend on either rank" { fail_everywhere deblend; }
@test "failure injected at every phase of unbind on either rank" { fail_everywhere unbind; }
@test "failure injected at every phase of voters on either rank" { fail_everywhere voters; }
@test "failure injected at every phase of mergertree on either rank" { fail_everywhere mergertree; }
@test "failure injected at every phase of dtfe-surface on either rank" { fail_everywhere dtfe-surface; }
@test "failure injected at every phase of synth-particles on either rank" { fail_everywhere synth-particles; }

# onto_input TOOL INPUT ARGS...: `TOOL ARGS -o INPUT` exits 2 with one error line; INPUT and its
# manifest are byte-identical afterwards and no temporary file is left beside it.
onto_input() {
  local tool=$1 input=$2 before
  shift 2
  before=$(sha256sum "$input" "$input.json" 2>/dev/null || true)
  run --separate-stderr "$tool" "$@" -o "$input" -q
  [[ $status -eq 2 ]] || fail "$tool -o $input: exit $status, stderr: $stderr"
  output=$stderr assert_one_error_line "$tool"
  assert_equal "$(sha256sum "$input" "$input.json" 2>/dev/null || true)" "$before"
  assert_equal "$(partials "$(dirname "$input")")" ""
}

@test "-o naming an input is refused (exit 2) and the input is unchanged: every input of every tool" {
  local c="$BATS_TEST_TMPDIR/c"
  cp -r "$D" "$c"
  cp "$INPUTS"/multi.*.hdf5 "$c/"
  onto_input cic-project "$c/snap_000.hdf5" "$c/snap_000.hdf5" --grid 16
  onto_input cic-project "$c/multi.1.hdf5" "$c/multi.0.hdf5" --grid 16  # a piece found by the reader
  onto_input phew-segment "$c/000.grid.h5" "$c/000.grid.h5" --threshold 50mean
  onto_input phew-merge "$c/000.patches.h5" "$c/000.patches.h5"
  onto_input phew-merge "$c/000.grid.h5" "$c/000.patches.h5" --grid "$c/000.grid.h5"
  onto_input phew-merge "$D/000.grid.h5" "$c/000.patches.h5"  # the grid recorded in the patches' manifest
  onto_input phew-merge "$c/snap_000.hdf5" "$c/000.patches.h5" --particles "$c/snap_000.hdf5"
  onto_input deblend "$c/000.clumps.h5" "$c/000.clumps.h5" "$c/snap_000.hdf5"
  onto_input deblend "$c/snap_000.hdf5" "$c/000.clumps.h5" "$c/snap_000.hdf5"
  onto_input unbind "$c/000.clumps.h5" "$c/000.clumps.h5" "$c/snap_000.hdf5"
  onto_input unbind "$c/snap_000.hdf5" "$c/000.clumps.h5" "$c/snap_000.hdf5"
  onto_input voters "$c/000.peaks.h5" "$c/000.peaks.h5" "$c/snap_000.hdf5"
  onto_input voters "$c/snap_000.hdf5" "$c/000.peaks.h5" "$c/snap_000.hdf5"
  onto_input mergertree "$c/000.peaks.h5" "$c/000.peaks.h5" "$c/001.peaks.h5"
  onto_input mergertree "$c/001.peaks.h5" "$c/000.peaks.h5" "$c/001.peaks.h5"
  onto_input mergertree "$c/001.voters.h5" "$c/000.peaks.h5" "$c/001.peaks.h5:$c/001.voters.h5"
  onto_input mergertree "$c/001.voters.h5" "$c/000.peaks.h5" "$c/001.peaks.h5"  # voters named after the peaks
  onto_input mergertree "$c/001.peaks.h5" --state "$c/tree.h5" --add "$c/001.peaks.h5"
  onto_input mergertree "$c/001.voters.h5" --state "$c/tree.h5" --add "$c/001.peaks.h5"
  onto_input dtfe-surface "$c/snap_000.hdf5" "$c/snap_000.hdf5" --centers "$c/centers.txt" --size 20 --resolution 8
  onto_input dtfe-surface "$c/centers.txt" "$c/snap_000.hdf5" --centers "$c/centers.txt" --size 20 --resolution 8
  onto_input dtfe-surface "$c/000.clumps.h5" "$c/snap_000.hdf5" --centers "$c/000.clumps.h5" --size 20 --resolution 8
  onto_input dtfe-surface "$c/000.clumps.h5" "$c/snap_000.hdf5" --centers "$c/000.clumps.h5:halos" --size 20 --resolution 8
  onto_input synth-particles "$c/scene.json" "$c/scene.json"
  # The exception: mergertree continues a tree in place.
  run mergertree --state "$c/tree.h5" --add "$c/001.peaks.h5" -o "$c/tree.h5" -q
  assert_success
  assert_equal "$(partials "$c")" ""
}

# killed TOOL SIGNAL RANKS: a previous output exists; a run to the same name paused at its last phase
# (its temporary files written) is sent SIGNAL (to mpirun at 2 ranks, to the tool itself at 1).
# Afterwards no temporary file is left and the previous output (with its manifest and side outputs) is
# byte-identical. mpirun follows its SIGTERM with SIGKILL after odls_base_sigkill_timeout (1 s by
# default); the test sets 2, so that a machine under load (a rank not scheduled within 1 s) does not
# decide it: what is tested is the ranks' cleanup, not mpirun's grace period. (mpirun waits out the whole
# timeout even when the ranks are gone: 5 s made each run 8 s, half the file's time, where the ranks'
# cleanup takes milliseconds; CTest runs these tests alone.)
killed() {
  local tool=$1 signal=$2 ranks=$3 before pid
  cmd "$tool" "$OUT/x.h5"
  run "${CMD[@]}"
  assert_success
  before=$(cd "$OUT" && sha256sum -- * | sort)
  if [[ $ranks -eq 1 ]]; then
    PHEW_TEST_PAUSE_AT=finish "${CMD[@]}" 2>/dev/null &
  else
    PHEW_TEST_PAUSE_AT=finish OMPI_MCA_odls_base_sigkill_timeout=2 mpirun -n "$ranks" --oversubscribe "${CMD[@]}" 2>/dev/null &
  fi
  pid=$!
  for _ in $(seq 300); do
    [[ -n $(partials "$OUT") ]] && break
    sleep 0.1
  done
  [[ -n $(partials "$OUT") ]] || fail "$tool: no temporary file seen"
  sleep 0.5  # the run is paused at "finish" now (it stays there for 60 s)
  kill "-$signal" "$pid"
  local waited=0
  while kill -0 "$pid" 2>/dev/null; do
    ((waited++ < 200)) || {
      kill -KILL "$pid"
      fail "$tool: still running 20 s after SIG$signal"
    }
    sleep 0.1
  done
  wait "$pid" && fail "$tool: a killed run exited 0"
  sleep 0.2  # mpirun's children are gone with it; give the file system a moment
  assert_equal "$(partials "$OUT")" ""
  assert_equal "$(cd "$OUT" && sha256sum -- * | sort)" "$before"
}

@test "SIGTERM to mpirun (2 ranks) or SIGINT to the tool (1 rank) during a run: nothing left, the old output kept" {
  local tool
  for tool in "${TOOLS[@]}"; do
    rm -rf "$OUT" && mkdir -p "$OUT"
    killed "$tool" TERM 2
    rm -rf "$OUT" && mkdir -p "$OUT"
    killed "$tool" INT 1
  done
}

# The kill window: SIGNAL reaches a single-process run (PHEW_TEST_PAUSE_AT=commit holds it before its
# last rename) at the moment its output has replaced the previous one but its manifest has not. Signals are held from the commit on,
# so the run must finish: exit 0, the new output with a manifest whose fingerprint is the file's own.
# (Under mpirun, mpirun follows its SIGTERM with SIGKILL; a SIGKILL between the renames leaves a file
# whose manifest does not match, which every tool then refuses as stale: see docs/cli.md.)
replaced_while_signalled() {
  local tool=$1 signal=$2 inode pid
  cmd "$tool" "$OUT/x.h5"
  run "${CMD[@]}"
  assert_success
  inode=$(stat -c %i "$OUT/x.h5")
  PHEW_TEST_PAUSE_AT=commit "${CMD[@]}" 2>/dev/null &
  pid=$!
  for _ in $(seq 600); do
    [[ $(stat -c %i "$OUT/x.h5") != "$inode" ]] && break
    sleep 0.05
  done
  [[ $(stat -c %i "$OUT/x.h5") != "$inode" ]] || fail "$tool: the output was never replaced"
  kill "-$signal" "$pid"
  wait "$pid" || fail "$tool: SIG$signal during the commit ended the run ($?)"
  assert_equal "$(partials "$OUT")" ""
  run /usr/bin/python3 - "$OUT/x.h5" <<'PY'
import json, subprocess, sys
path = sys.argv[1]
want = json.load(open(path + ".json"))["outputs"][0]["fingerprint"]
got = "xxh3-128:" + subprocess.run(["xxhsum", "-H2", path], capture_output=True, text=True).stdout.split()[0]
print("whole" if got == want else f"manifest {want} but file {got}")
PY
  assert_output "whole"
}

@test "a signal at the moment an output is replaced: the run finishes, the new pair is whole" {
  local tool
  for tool in cic-project phew-merge mergertree; do
    rm -rf "$OUT" && mkdir -p "$OUT"
    replaced_while_signalled "$tool" TERM
    rm -rf "$OUT" && mkdir -p "$OUT"
    replaced_while_signalled "$tool" INT
  done
}

@test "non-UTF-8 input and output names: every tool works and its manifests are valid JSON" {
  local X=$'\xff'
  cp "$D/snap_000.hdf5" "$OUT/snap$X.hdf5"
  cp "$D/scene.json" "$OUT/scene$X.json"
  # At 2 ranks: a non-UTF-8 output name once hung every rank while the output was finished.
  run mpi 2 cic-project "$OUT/snap$X.hdf5" -o "$OUT/g$X.h5" --grid 32 -q
  assert_success
  run phew-segment "$OUT/g$X.h5" -o "$OUT/p$X.h5" --threshold 50mean -q
  assert_success
  run phew-merge "$OUT/p$X.h5" -o "$OUT/c$X.h5" --relevance 2 --export-text -q
  assert_success
  run deblend "$OUT/c$X.h5" "$OUT/snap$X.hdf5" -o "$OUT/$X.peaks.h5" -q
  assert_success
  run voters "$OUT/$X.peaks.h5" "$OUT/snap$X.hdf5" -o "$OUT/$X.voters.h5" -q
  assert_success
  run mergertree "$OUT/$X.peaks.h5" "$D/001.peaks.h5" -o "$OUT/t$X.h5" --export-text -q
  assert_success
  run mpi 2 dtfe-surface "$OUT/snap$X.hdf5" --centers "$OUT/c$X.h5" --top 2 --size 20 --resolution 8 --png -o "$OUT/m$X.h5" -q
  assert_success
  run synth-particles "$OUT/scene$X.json" -o "$OUT/s$X.hdf5" -q
  assert_success
  assert_equal "$(partials "$OUT")" ""
  # Every manifest is UTF-8 JSON; the odd names are there percent-encoded (%FF), both as outputs and inputs.
  run /usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, sys
d = os.fsencode(sys.argv[1])
manifests = [f for f in os.listdir(d) if f.endswith(b".json") and not f.startswith(b"scene")]
assert len(manifests) == 9, manifests  # 8 tools, synth-particles' truth file has its own
for f in manifests:
    m = json.loads(open(os.path.join(d, f), "rb").read().decode("utf-8"))
    assert "\ufffd" not in json.dumps(m), f  # nothing replaced: the names are encoded, not mangled
    assert "%FF" in m["outputs"][0]["path"], (f, m["outputs"])
    assert any("%FF" in i["path"] for i in m["inputs"]), (f, m["inputs"])
print("ok")
PY
  assert_success
  assert_output ok
}

# broken FILE HOW: FILE's manifest made malformed: kind (a number for the kind), truncated (cut JSON),
# missing (no manifest), array (JSON but not an object), inputs (an input that is not an object).
broken() {
  local f=$1 how=$2
  case $how in
    kind | inputs | array)
      /usr/bin/python3 - "$f.json" "$how" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
if sys.argv[2] == "kind": m["kind"] = 3
if sys.argv[2] == "inputs": m["inputs"] = [3]
if sys.argv[2] == "array": m = [m]
json.dump(m, open(sys.argv[1], "w"))
PY
      ;;
    truncated) head -c 200 "$f.json" >"$f.json.cut" && mv "$f.json.cut" "$f.json" ;;
    missing) rm "$f.json" ;;
  esac
}

# malformed TOOL INPUT DAMAGES ARGS...: for each damage (see broken) to INPUT's manifest (INPUT is a
# file of a fresh copy of $D in $C), TOOL ARGS exits 3 with one error line naming INPUT, writes nothing.
# "inputs" only where the tool reads the input's own inputs (phew-merge the patches', mergertree the voters').
malformed() {
  local tool=$1 name=$2 damages=$3 how
  shift 3
  for how in $damages; do
    rm -rf "$C" "$OUT" && cp -r "$D" "$C" && mkdir -p "$OUT"
    broken "$C/$name" "$how"
    bad_input "$tool" "$OUT/r.h5" 3 "$name" "$@"
  done
}

@test "a malformed manifest of an input is bad input (exit 3), nothing written: every tool reading one" {
  C="$BATS_TEST_TMPDIR/c"
  malformed phew-segment 000.grid.h5 "kind truncated missing array" "$C/000.grid.h5" --threshold 50mean
  malformed phew-merge 000.patches.h5 "kind truncated missing array inputs" "$C/000.patches.h5"
  malformed phew-merge 000.grid.h5 "kind truncated missing array" "$C/000.patches.h5" --grid "$C/000.grid.h5"
  malformed deblend 000.clumps.h5 "kind truncated missing array" "$C/000.clumps.h5" "$C/snap_000.hdf5"
  malformed voters 000.peaks.h5 "kind truncated missing array" "$C/000.peaks.h5" "$C/snap_000.hdf5"
  malformed mergertree 000.peaks.h5 "kind truncated missing array" "$C/000.peaks.h5" "$C/001.peaks.h5"
  malformed mergertree 001.voters.h5 "kind truncated missing array inputs" "$C/000.peaks.h5" "$C/001.peaks.h5"
  malformed mergertree tree.h5 "kind truncated missing array" --state "$C/tree.h5" --add "$C/001.peaks.h5"
  malformed dtfe-surface 000.clumps.h5 "kind truncated missing array" "$C/snap_000.hdf5" --centers "$C/000.clumps.h5" --size 20 --resolution 8
  # cic-project and synth-particles read no phew file: a snapshot has no manifest, a scene is JSON
  # given by the user (a broken one is a usage error, like a bad option).
  rm -rf "$OUT" && mkdir -p "$OUT"
  head -c 40 "$D/scene.json" >"$BATS_TEST_TMPDIR/cut.json"
  bad_input synth-particles "$OUT/s.hdf5" 2 "cut.json" "$BATS_TEST_TMPDIR/cut.json"
}

# side_outputs_vanish TOOL RANKS [FAIL_RANK]: with a previous output in place, a run failing at its last
# phase (side outputs prepared) leaves the folder exactly as it was.
side_outputs_vanish() {
  local tool=$1 ranks=$2 before last
  rm -rf "$OUT" && mkdir -p "$OUT"
  cmd "$tool" "$OUT/x.h5"
  run "${CMD[@]}"
  assert_success
  before=$(cd "$OUT" && sha256sum -- * | sort)
  last=$(phases_of "$OUT")
  last=${last##* }
  PHEW_TEST_FAIL_AT=$last PHEW_TEST_FAIL_RANK=${3:-0} run --separate-stderr timeout 60 mpirun -n "$ranks" --oversubscribe "${CMD[@]}"
  assert_failure 1
  assert_equal "$(partials "$OUT")" ""
  assert_equal "$(cd "$OUT" && sha256sum -- * | sort)" "$before"
}

@test "side outputs (text exports, quicklooks) are not left behind by a run failing at its last phase" {
  local tool
  for tool in phew-merge mergertree dtfe-surface; do
    side_outputs_vanish "$tool" 1
    side_outputs_vanish "$tool" 2 0
    side_outputs_vanish "$tool" 2 -1
    # the side outputs were there to vanish: the successful run made them
    [[ -n $(find "$OUT" -name '*.txt' -o -name '*.png') ]] || fail "$tool made no side output"
  done
}
