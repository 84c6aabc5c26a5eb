#!/usr/bin/env bash
# The unit and MPI tests (1-4 ranks) under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# randomized rank-invariance scenes through the sanitized tools. Run before closing work on anything
# that touches memory or MPI exchanges (it takes ~20 min on 2 cores, so it is not part of CI).
#   scripts/sanitize.sh [CTEST ARGS...]     e.g. scripts/sanitize.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${PHEW_SANITIZE_DIR:-build-sanitize}
# -O1 keeps the stack traces readable; the sanitizers find what the optimizer would hide.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DPHEW_SANITIZE=ON \
  -DPHEW_WARNINGS_AS_ERRORS=ON
cmake --build "$build" -j "$(nproc)"
# OpenMPI's own allocations are not ours to report (leaks at exit); any real error stops the test.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
if [[ $# -eq 0 ]]; then set -- -L "unit|mpi|property"; fi
ctest --output-on-failure -j "$(nproc)" "$@"
