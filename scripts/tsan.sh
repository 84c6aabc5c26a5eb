#!/usr/bin/env bash
# The tools under ThreadSanitizer, through the randomized scenes (tests/property/run_scenes.py), each
# tool with 3 threads, one rank: a data race between phew's threads makes a tool exit non-zero (TSan's
# exit code 66) and the scene fail, with the report in the step's log. One rank, started without mpirun:
# under mpirun Open MPI's PMIx client threads, not built with TSan, fill the logs with their own reports.
# Run before closing work on threaded code; about 2 minutes per scene on 2 cores, so not part of CI.
#   scripts/tsan.sh [SEEDS]          e.g. scripts/tsan.sh 1000-1003 (default 1000-1001)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${PHEW_TSAN_DIR:-build-tsan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread -g -O1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread"
cmake --build "$build" -j "$(nproc)" --target cic-project phew-segment phew-merge deblend unbind voters mergertree \
  dtfe-surface synth-particles
export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp report_signal_unsafe=0"
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export PHEW_PROPERTY_THREADS=3
/usr/bin/python3 tests/property/run_scenes.py --bin "$build/bin" --seeds "${1:-1000-1001}" --ranks 1 --timeout 900
