#!/usr/bin/env bash
# The toolchain guard (cmake/ToolchainGuard.cmake) works: the loop-distribution reduction, built as part
# of the project with the project's flags, computes the right prefix sums; and when the compiler gets it
# wrong without the guard's flag, the build recorded that it added the flag.
# Usage: toolchain_guard.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
"$build/bin/loop_distribution_check" || { echo "the project's own flags miscompile the reduction"; exit 1; }
cache="$build/CMakeCache.txt"
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$cache")
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
flags=$(sed -n "s/^CMAKE_CXX_FLAGS_${type^^}:[A-Z]*=//p" "$cache")
guard=$(sed -n 's/^PHEW_LOOP_DISTRIBUTION_GUARD:INTERNAL=//p' "$cache")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
"$cxx" $flags "$src/cmake/loop_distribution_check.cpp" -o "$tmp/raw"
if "$tmp/raw" >/dev/null; then
  echo "$cxx at '$flags' compiles the reduction right; guard: $guard"
  [[ $guard == "not needed" ]]
else
  echo "$cxx at '$flags' miscompiles the reduction; guard: $guard"
  [[ $guard == "-fno-tree-loop-distribution" ]]
fi
