#!/usr/bin/env bash
# cmake/WriteVersion.cmake, which the build runs every time: the commit it records follows the tree (a new
# commit, uncommitted changes), and an unchanged commit leaves lib/core/version.cpp untouched, so it costs
# no recompilation. Runs on a scratch git repository, not on the project's own.
# Usage: version_stamp.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
out=$tmp/version.cpp
git init -q "$repo"
g() { git -C "$repo" -c user.name=phew -c user.email=phew@example.org "$@"; }
stamp() {
  cmake -DSOURCE_DIR="$repo" -DGIT_EXECUTABLE="$(command -v git)" -DINPUT="$src/lib/core/version.cpp.in" \
    -DOUTPUT="$out" -DPHEW_VERSION=9.8.7 "-DPHEW_COMPILER=GNU 1.2" "-DPHEW_BUILD_TYPE=Release (CMake)" \
    -P "$src/cmake/WriteVersion.cmake"
}
recorded() { sed -n 's/.*static const std::string c = "\(.*\)";/\1/p' "$out"; }
fail() { echo "version stamp: $*" >&2; exit 1; }

echo one >"$repo/a.txt"
g add a.txt && g commit -qm one
stamp
first=$(g rev-parse --short=12 HEAD)
[[ $(recorded) == "$first" ]] || fail "recorded '$(recorded)', the commit is $first"
grep -q '"9.8.7"' "$out" || fail "the version is missing"
grep -q '"Release (CMake)"' "$out" || fail "the build type is missing"

touch -d '2000-01-01' "$out"
stamp
[[ $(stat -c %Y "$out") == $(date -d '2000-01-01' +%s) ]] || fail "rewritten although nothing changed"

echo two >"$repo/a.txt"
stamp
[[ $(recorded) == "$first-dirty" ]] || fail "recorded '$(recorded)' for a modified tree, want $first-dirty"

g commit -qam two
stamp
second=$(g rev-parse --short=12 HEAD)
[[ $second != "$first" && $(recorded) == "$second" ]] || fail "recorded '$(recorded)' after a commit, want $second"
echo "version stamp follows the tree: $first, $first-dirty, $second"
