#!/usr/bin/env bash
# Builds the project with Automake from a copy of the sources (autoreconf -fi && ./configure && make
# && make check) and runs every tool's --version, so the second build system cannot rot.
# Usage: autotools.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only what git tracks (or everything, outside a git checkout): the copy must build without build/.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard) | (cd "$src" && tar -cf - -T -) | (cd "$tmp" && tar -xf -)
else
  (cd "$src" && tar --exclude=./build -cf - .) | (cd "$tmp" && tar -xf -)
fi
cd "$tmp"
autoreconf -fi >/dev/null 2>&1
# -O0 and no -g: this checks that the second build system builds and links everything, not the code it
# makes (CTest checks that, in the CMake build), and compiles in less than half the time of -g -O2.
./configure --enable-werror CXXFLAGS=-O0 >/dev/null
make -j "$(nproc)" >/dev/null
make check >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for tool in $(grep -E "^bin_PROGRAMS *\+?=" Makefile.am | sed "s/.*= *//"); do
  ./"$tool" --version >/dev/null
done
echo "autotools build and make check passed"
