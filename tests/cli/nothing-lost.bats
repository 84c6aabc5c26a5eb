#!/usr/bin/env bats
# Nothing lost, part 2: the preflight of the tool runner. Before any work a run
# resolves every input and every file it will write (the output, its manifest, side outputs), refuses
# side outputs and manifests that name an input, outputs that coincide, inputs that are neither files
# nor folders, and destinations that are folders; it writes under short temporary names, and removes
# the temporary files that dead runs left in its output folders.
# $status and $stderr are set by bats' run (in the test's own subshell).
# shellcheck disable=SC2154
load common

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Two snapshots of two haloes crossing, and the stages mergertree needs: small, with peaks and voters.
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_crossing.py" "$D" --snapshots 2 --n 3000
  crossing_stages "$D"
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

# hidden FOLDER: the hidden (temporary) files left in FOLDER, whatever their naming.
hidden() {
  find "$1" -maxdepth 1 -name '.*' -printf '%P\n' | sort
}

# refused CODE TOOL ARGS...: exits CODE with one error line, at once (within 20 s: before the work).
refused() {
  local code=$1 tool=$2
  shift 2
  run --separate-stderr timeout 20 "$tool" "$@" -q
  [[ $status -eq $code ]] || fail "$tool $*: exit $status (want $code), stderr: $stderr"
  output=$stderr assert_one_error_line "$tool"
}

@test "item 1: mergertree --stats naming an input stage is refused and the stage is unchanged" {
  cp "$D"/00?.peaks.h5* "$D"/00?.voters.h5* "$OUT/"
  local before
  before=$(sha256sum "$OUT"/*)
  refused 2 mergertree "$OUT/000.peaks.h5" "$OUT/001.peaks.h5" -o "$OUT/tree.h5" --stats "$OUT/001.peaks.h5"
  assert_equal "$(sha256sum "$OUT"/*)" "$before"
  [[ ! -e $OUT/tree.h5 ]]
  assert_equal "$(hidden "$OUT")" ""
}

@test "item 1: dtfe-surface --png whose quicklook is the centres file is refused" {
  printf '%s\n' "260 198 200" "140 201 200" >"$OUT/out.0001.png"
  local before
  before=$(sha256sum "$OUT/out.0001.png")
  refused 2 dtfe-surface "$D/snap_000.hdf5" --centers "$OUT/out.0001.png" --size 20 --resolution 8 --png -o "$OUT/out.h5"
  assert_equal "$(sha256sum "$OUT/out.0001.png")" "$before"
  assert_only_files "$OUT" out.0001.png
}

@test "item 1: an output named like an input's manifest (phew-segment grid.h5 -o grid.h5.json) is refused" {
  cp "$D/000.grid.h5" "$D/000.grid.h5.json" "$OUT/"
  local before
  before=$(sha256sum "$OUT"/*)
  refused 2 phew-segment "$OUT/000.grid.h5" --threshold 50mean -o "$OUT/000.grid.h5.json"
  assert_equal "$(sha256sum "$OUT"/*)" "$before"
  # The same through a symbolic link and a .. in the path.
  mkdir "$OUT/sub"
  ln -s "$OUT/000.grid.h5.json" "$OUT/sub/link.json"
  refused 2 phew-segment "$OUT/000.grid.h5" --threshold 50mean -o "$OUT/sub/link.json"
  refused 2 phew-segment "$OUT/000.grid.h5" --threshold 50mean -o "$OUT/sub/../000.grid.h5.json"
  assert_equal "$(sha256sum "$OUT"/*.h5*)" "$before"
}

@test "item 2: a 240-character output name is written (the temporary name is short)" {
  local name
  name=$(printf 'g%.0s' $(seq 237)).h5
  [[ ${#name} -eq 240 ]]
  run --separate-stderr cic-project "$D/snap_000.hdf5" --grid 16 -o "$OUT/$name" -q
  assert_success
  [[ -s $OUT/$name && -s $OUT/$name.json ]]
  assert_equal "$(hidden "$OUT")" ""
}

@test "item 3: a FIFO given as the snapshot is refused before it is opened" {
  mkfifo "$OUT/snap.fifo"
  refused 3 cic-project "$OUT/snap.fifo" --grid 16 -o "$OUT/grid.h5"
  [[ $stderr == *snap.fifo* ]] || fail "the error does not name the FIFO: $stderr"
  assert_only_files "$OUT" snap.fifo
}

@test "item 4: an existing folder where the manifest goes is refused before any work" {
  mkdir "$OUT/grid.h5.json"
  refused 4 cic-project "$D/snap_000.hdf5" --grid 16 -o "$OUT/grid.h5"
  [[ $stderr == *grid.h5.json* ]] || fail "the error does not name the folder: $stderr"
  assert_only_files "$OUT" grid.h5.json
}

@test "item 4: --stats naming the output itself is refused (two outputs coincide)" {
  refused 2 mergertree "$D/000.peaks.h5" "$D/001.peaks.h5" -o "$OUT/tree.h5" --stats "$OUT/tree.h5"
  assert_only_files "$OUT"
  refused 2 mergertree "$D/000.peaks.h5" "$D/001.peaks.h5" -o "$OUT/tree.h5" --stats "$OUT/tree.h5.json"
  assert_only_files "$OUT"
  # A file the previous run wrote is no input: the next run replaces it.
  local i
  for i in 1 2; do
    run --separate-stderr mergertree "$D/000.peaks.h5" "$D/001.peaks.h5" -o "$OUT/tree.h5" --stats "$OUT/stats.json" -q
    assert_success
  done
}

@test "item 5: the next run removes every temporary file of a dead run: outputs, manifests, text exports" {
  # phew-merge --export-text, killed (SIGKILL: no cleanup) at "finish": the catalogue and its four text
  # exports are written under temporary names.
  local merge=(phew-merge "$D/000.patches.h5" --relevance 2 --export-text -o "$OUT/c.h5" -q)
  PHEW_TEST_PAUSE_AT=finish "${merge[@]}" &
  local pid=$!
  for _ in $(seq 300); do
    [[ $(hidden "$OUT" | grep -c .) -ge 5 ]] && break
    sleep 0.1
  done
  sleep 0.5
  kill -KILL "$pid"
  wait "$pid" || true
  [[ $(hidden "$OUT" | grep -c .) -ge 5 ]] || fail "the killed run left only: $(hidden "$OUT")"
  run --separate-stderr "${merge[@]}"
  assert_success
  assert_equal "$(hidden "$OUT")" ""
  # A sequence killed before its last rename (a manifest): that manifest's temporary file stays.
  local synth=(synth-particles plummer --particles 500 --mode ballistic --snapshots 2 --interval 10 -o "$OUT/s.hdf5" -q)
  PHEW_TEST_PAUSE_AT=commit "${synth[@]}" &
  pid=$!
  for _ in $(seq 300); do
    [[ -e $OUT/s_001.truth.h5 ]] && break
    sleep 0.1
  done
  kill -KILL "$pid"
  wait "$pid" || true
  [[ -n $(hidden "$OUT") ]] || fail "the killed run left no temporary file"
  run --separate-stderr "${synth[@]}"
  assert_success
  assert_equal "$(hidden "$OUT")" ""
}
