#!/usr/bin/env bash
# The one test command: installs what is missing, builds, and runs the whole suite (CTest: unit, MPI at
# 1-4 ranks, Bats CLI tests, build checks). CI (.ci/run) runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${PHEW_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPHEW_WARNINGS_AS_ERRORS=ON
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
