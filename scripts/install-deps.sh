#!/usr/bin/env bash
# Installs the Debian 12 packages phew needs to build, test and run its examples.
# Idempotent: does nothing when every package is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config autoconf automake libtool time clang-format
  openmpi-bin libopenmpi-dev
  libhdf5-openmpi-dev hdf5-tools
  nlohmann-json3-dev libfmt-dev libcli11-dev libxxhash-dev zlib1g-dev
  libqhull-dev libcgal-dev
  libfftw3-dev libfftw3-mpi-dev
  libgtest-dev libgmock-dev
  bats bats-assert bats-support xxhash
  python3-h5py python3-numpy python3-scipy python3-matplotlib python3-yaml python3-jsonschema python3-yt
  snakemake
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
