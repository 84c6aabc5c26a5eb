# Shared set-up for the Bats CLI tests: paths, helpers and tiny inputs made once per file.
bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

: "${PHEW_SOURCE:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
: "${PHEW_BIN:=$PHEW_SOURCE/build/bin}"
: "${PHEW_SHARED_DATA:=$PHEW_SOURCE/../shared/data}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
PATH="$PHEW_BIN:$PATH"
# Python snippets read labels with the independent reader of the sparse /cells (docs/formats.md).
export PYTHONPATH="$PHEW_SOURCE/tests/property${PYTHONPATH:+:$PYTHONPATH}"

# Inputs are made once per .bats file, in its own temp folder.
make_inputs() {
  INPUTS="$BATS_FILE_TMPDIR/inputs"
  [[ -d $INPUTS ]] || /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_inputs.py" "$INPUTS"
}

# `run` a tool under mpirun with N ranks.
mpi() {
  local n=$1
  shift
  mpirun -n "$n" --oversubscribe "$@"
}

# The stderr of a failed run must be exactly one line "TOOL: error: ...".
assert_one_error_line() {
  local tool=$1
  assert_equal "$(printf '%s\n' "$output" | grep -c .)" 1
  assert_output --regexp "^$tool: error: "
}

# Nothing but the listed files in a folder (no partial outputs).
assert_only_files() {
  local dir=$1
  shift
  local want got
  want=$(printf '%s\n' "$@" | sort)
  got=$(cd "$dir" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort)
  assert_equal "$got" "$want"
}

# without_velocities SNAPSHOT COPY: COPY is SNAPSHOT with PartType1/Velocities removed.
without_velocities() {
  cp "$1" "$2"
  /usr/bin/python3 -c "import h5py, sys; del h5py.File(sys.argv[1], 'r+')['PartType1/Velocities']" "$2"
}

# bad_input TOOL OUTPUT CODE PATTERN ARGS...: `TOOL ARGS -o OUTPUT -q` exits with CODE and prints exactly
# one line "TOOL: error: ..." containing PATTERN, and OUTPUT's folder is left empty. An empty OUTPUT
# passes no -o and checks no folder.
bad_input() {
  local tool=$1 out=$2 code=$3 pattern=$4
  shift 4
  if [[ -n $out ]]; then
    run --separate-stderr "$tool" "$@" -o "$out" -q
  else
    run --separate-stderr "$tool" "$@" -q
  fi
  assert_failure "$code"
  output=$stderr assert_one_error_line "$tool"
  [[ $stderr == *"$pattern"* ]] || fail "stderr '$stderr' lacks '$pattern'"
  [[ -z $out ]] || assert_only_files "$(dirname "$out")"
}

# edit FILE PYTHON (for the bad-input tests): a copy of $D/FILE in $E with `f` (h5py, r+) edited by PYTHON, re-signed.
edit() {
  local name=$1 code=$2
  cp "$D/$name" "$D/$name.json" "$E/"
  /usr/bin/python3 -c "import h5py, numpy as np
f = h5py.File('$E/$name', 'r+')
$code
f.close()"
  remanifest "$E/$name"
}

# crossing_stages DIR: every stage up to voters.h5 of DIR/snap_000.hdf5 and DIR/snap_001.hdf5 (make_crossing.py),
# as DIR/000.grid.h5 ... DIR/001.voters.h5: small, but with peaks and voters.
crossing_stages() {
  local d=$1 k
  for k in 000 001; do
    cic-project "$d/snap_$k.hdf5" -o "$d/$k.grid.h5" --grid 32 -q
    phew-segment "$d/$k.grid.h5" -o "$d/$k.patches.h5" --threshold 50mean -q
    phew-merge "$d/$k.patches.h5" -o "$d/$k.clumps.h5" --relevance 2 -q
    deblend "$d/$k.clumps.h5" "$d/snap_$k.hdf5" -o "$d/$k.peaks.h5" -q
    voters "$d/$k.peaks.h5" "$d/snap_$k.hdf5" -o "$d/$k.voters.h5" -q
  done
}
