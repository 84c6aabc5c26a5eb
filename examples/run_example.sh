#!/usr/bin/env bash
# The example pipeline: make a small snapshot with synth-particles (an NFW cluster with a subhalo in a
# Zel'dovich-displaced cosmological box, 321,144 particles, plus a truth file saying which particle
# belongs to which), project it on a grid with cic-project on one and on two MPI ranks, check the two
# agree, and print a summary.
# Usage: examples/run_example.sh BIN_DIR OUTDIR
set -euo pipefail
bin=$(cd "${1:-build/bin}" && pwd)
out=${2:-example-output}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# Lengths in kpc/h, masses in 1e10 Msun/h (docs/tools/synth-particles.md).
cat >"$out/scene.json" <<'JSON'
{"seed": 1, "box": 20000, "cosmology": {"omega_m": 0.3, "omega_lambda": 0.7, "hubble": 0.7},
 "components": [
  {"name": "cluster", "model": "nfw", "particles": 50000, "mass": 10000, "concentration": 5,
   "position": [10000, 10000, 10000]},
  {"name": "subhalo", "model": "nfw", "particles": 9000, "mass": 1000, "concentration": 8,
   "host": "cluster", "position": [600, 0, 0], "velocity": [0, 700, 0]},
  {"name": "field", "model": "zeldovich", "particles": "64^3", "sigma8": 0.8}]}
JSON
"$bin/synth-particles" "$out/scene.json" -o "$out/snap_000.hdf5"
"$bin/cic-project" "$out/snap_000.hdf5" -o "$out/grid.h5" --grid 64
mpirun -n 2 "$bin/cic-project" "$out/snap_000.hdf5" -o "$out/grid_2ranks.h5" --grid 64 -q
h5diff "$out/grid.h5" "$out/grid_2ranks.h5" /grid/density && echo "1 and 2 ranks agree bit for bit" >&2
/usr/bin/python3 "$here/summarize_grid.py" "$out/grid.h5"
