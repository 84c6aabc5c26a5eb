#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/consumer against it with find_package(phew):
# headers under include/phew/<module>/, every module linked (their dependencies found again by the
# package config), the consumer run.
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
cmake -S "$src/examples/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
echo "installed package works"
