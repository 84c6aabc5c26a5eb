#!/usr/bin/env bash
# Fuzzes the parsers of files users hand to phew: the Gadget binary and RAMSES snapshot
# readers and the manifest reader, with libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer
# (clang). Not part of CI: each target runs for a fixed budget.
#   scripts/fuzz.sh [SECONDS_PER_TARGET=1800] [TARGET...]     targets: gadget pieces ramses manifest
# pieces: two-piece Gadget binary snapshots (the pieces must agree and not repeat). manifest:
# seeded with the manifests of a tiny chain made by the tools of PHEW_FUZZ_BIN (default build/bin), when
# they are built.
# Findings (crash-*, timeout-*, leak-*) are written to build-fuzz/findings/TARGET/; the corpus grows in
# build-fuzz/corpus/TARGET/. A summary line per target gives executions and findings.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${1:-1800}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(gadget pieces ramses manifest)
build=${PHEW_FUZZ_DIR:-build-fuzz}
ramses=${PHEW_FUZZ_RAMSES:-$root/../shared/data/ramses-cosmo-L20-N32/output_00002}
bin=${PHEW_FUZZ_BIN:-build/bin}

CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DPHEW_SANITIZE=ON -DPHEW_FUZZ=ON -DPHEW_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzz_snapshot fuzz_manifest 2>&1 | tail -2

export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# OpenMPI's own SIGABRT/SIGSEGV handlers would print a backtrace and exit before libFuzzer saves the input.
export OMPI_MCA_opal_signal=""
# Manifests of every stage, from the tools users run (not the fuzz build): a snapshot of tests/data
# through cic-project ... mergertree, each output's FILE.json copied into the corpus.
chain_manifests() {
  local corpus=$1 d=$build/chain
  [[ -x $bin/mergertree ]] || { echo "fuzz manifest: no tools in $bin, seeds without a chain's manifests" >&2; return 0; }
  rm -rf "$d" && mkdir -p "$d"
  /usr/bin/python3 tests/data/make_inputs.py "$d/in" >/dev/null
  "$bin/cic-project" "$d/in/good.hdf5" -o "$d/grid.h5" --grid 16 -q &&
    "$bin/phew-segment" "$d/grid.h5" -o "$d/patches.h5" --threshold 2mean -q &&
    "$bin/phew-merge" "$d/patches.h5" -o "$d/clumps.h5" -q &&
    "$bin/deblend" "$d/clumps.h5" "$d/in/good.hdf5" -o "$d/peaks.h5" -q &&
    "$bin/voters" "$d/peaks.h5" "$d/in/good.hdf5" -o "$d/voters.h5" -q &&
    "$bin/mergertree" "$d/peaks.h5:$d/voters.h5" -o "$d/tree.h5" -q ||
    echo "fuzz manifest: the chain in $d stopped early; seeds from the stages it made" >&2
  for f in "$d"/*.h5.json; do [[ -e $f ]] && cp "$f" "$corpus/chain-$(basename "$f")"; done
  return 0
}

# The targets run side by side (each is one process), so the budget is wall time per target.
run_target() {
  local t=$1 exe fmt max_len corpus findings log runs found
  corpus=$build/corpus/$t findings=$build/findings/$t
  mkdir -p "$corpus" "$findings"
  case $t in
    gadget)
      exe=fuzz_snapshot fmt=gadget max_len=65536
      # Seeds: small valid snapshots in both formats and byte orders (tests/data/make_gadget_seeds.py).
      /usr/bin/python3 tests/data/make_gadget_seeds.py "$corpus" ;;
    pieces)
      # Seeds: pieces that belong together, a piece twice, pieces of two times (make_gadget_seeds.py --pieces).
      exe=fuzz_snapshot fmt=gadget-pieces max_len=65536
      /usr/bin/python3 tests/data/make_gadget_seeds.py "$corpus" --pieces ;;
    ramses)
      exe=fuzz_snapshot fmt=ramses max_len=$(($(stat -c %s "$ramses/part_00002.out00001") + 64))
      cp -n "$ramses/part_00002.out00001" "$corpus/seed" ;;
    manifest)
      exe=fuzz_manifest fmt=none max_len=16384
      find tests "$root/../shared/data" -name '*.json' -size -16k -exec cp -n {} "$corpus/" \; 2>/dev/null || true
      chain_manifests "$corpus" ;;
    *) echo "fuzz.sh: unknown target $t (gadget, pieces, ramses, manifest)" >&2; return 2 ;;
  esac
  log=$build/fuzz-$t.log
  PHEW_FUZZ_FORMAT=$fmt PHEW_FUZZ_RAMSES=$ramses "$build/bin/$exe" "$corpus" -max_total_time="$seconds" \
    -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 -artifact_prefix="$findings/" -print_final_stats=1 \
    >"$log" 2>&1 || true
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  # Saved inputs, or (should a handler still get in first) the reports in the log.
  found=$(find "$findings" -type f | wc -l)
  if [[ $found -eq 0 ]] && grep -qE 'terminate called|ERROR: (AddressSanitizer|libFuzzer)|runtime error:|deadly signal' "$log"; then
    found="1 (see the log)"
  fi
  echo "fuzz $t: ${seconds}s, $runs executions, $found findings ($log)"
}
for t in "${targets[@]}"; do run_target "$t" & done
wait
