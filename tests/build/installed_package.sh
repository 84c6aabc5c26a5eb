#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds examples/consumer against it with find_package(phew).
# Usage: installed_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -x "$tmp/prefix/bin/cic-project"
test -f "$tmp/prefix/include/grid/deposit.hpp"
cmake -S "$src/examples/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
echo "installed package works"
