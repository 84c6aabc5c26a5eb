#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/consumer against it with find_package(phew):
# headers under include/phew/<module>/, only include/ on the consumer's include path (every header,
# the library's own includes too, is <phew/<module>/<file>.hpp>), every module linked (their dependencies
# found again by the package config), the consumer run.
# Usage: installed_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/cic-project"
for module in $(cd "$src/lib" && ls -d */ | tr -d /); do
  test -d "$tmp/prefix/include/phew/$module" || { echo "installed_package.sh: no include/phew/$module" >&2; exit 1; }
done
test -f "$tmp/prefix/include/phew/grid/deposit.hpp"
if grep -n 'INTERFACE_INCLUDE_DIRECTORIES.*include/phew' "$tmp"/prefix/lib*/cmake/phew/phewTargets.cmake >&2; then
  echo "installed_package.sh: the package puts include/phew on the consumer's include path; include/ is enough" >&2
  exit 1
fi
cmake -S "$src/examples/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
echo "installed package works"
