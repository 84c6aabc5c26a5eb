#!/usr/bin/env bash
# Quick start on a fresh Debian 12 machine: installs the packages, builds phew, and runs the cosmo-box
# example through all seven tools on a snapshot it makes itself (no downloads, no ../shared needed).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # a new build tree: Ninja; an existing one keeps its own
cmake -S . -B build
cmake --build build -j "$(nproc)"
./examples/cosmo-box/run.sh example-output/cosmo-box
