#!/usr/bin/env bash
# The one test command: installs what is missing, builds, and runs the whole suite (CTest: unit, MPI at
# 1-4 ranks, Bats CLI tests, the randomized rank-invariance scenes, build checks). CI (.ci/run) runs
# exactly this. It builds the project's default build type (Release, as the quick start and users do).
#   scripts/test.sh            the whole suite but the long mode's tests (ctest -LE long; under 30 minutes
#                              on 2 cores from a clean clone, the build included)
#   scripts/test.sh --long     everything: also the tests labelled long (more random scenes, 8 ranks on
#                              blocks, the workflows' own checks, the Automake build; about 17 minutes more)
#   scripts/test.sh --fast     the fast tier: unit, MPI and the tools' own code (ctest -L 'unit|mpi|tools')
#   scripts/test.sh ARGS...    passed to ctest as they are (-R cli.unbind, -L science, ...)
set -euo pipefail
if [[ ${1:-} == --fast ]]; then
  shift
  set -- -L 'unit|mpi|tools' "$@"
elif [[ ${1:-} == --long ]]; then
  shift
elif [[ $# -eq 0 ]]; then
  set -- -LE long
fi
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${PHEW_BUILD_DIR:-build}
# A new build tree uses Ninja (1.1x faster than Make's recursion on 2 cores); an existing one keeps the
# generator it was made with (CMake ignores CMAKE_GENERATOR then).
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
cmake -S . -B "$build" -DPHEW_WARNINGS_AS_ERRORS=ON
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
