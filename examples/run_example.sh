#!/usr/bin/env bash
# The example pipeline: make a small clustered snapshot, project it on a grid with cic-project on one
# and on two MPI ranks, check the two agree, and print a summary.
# Usage: examples/run_example.sh BIN_DIR OUTDIR
set -euo pipefail
bin=$(cd "${1:-build/bin}" && pwd)
out=${2:-example-output}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

/usr/bin/python3 "$here/make_snapshot.py" "$out/snap_000.hdf5" --model clustered --n 262144 --seed 1
"$bin/cic-project" "$out/snap_000.hdf5" -o "$out/grid.h5" --grid 64
mpirun -n 2 "$bin/cic-project" "$out/snap_000.hdf5" -o "$out/grid_2ranks.h5" --grid 64 -q
h5diff "$out/grid.h5" "$out/grid_2ranks.h5" /grid/density && echo "1 and 2 ranks agree bit for bit" >&2
/usr/bin/python3 "$here/summarize_grid.py" "$out/grid.h5"
