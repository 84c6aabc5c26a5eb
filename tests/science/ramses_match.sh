#!/usr/bin/env bash
# science.ramses_match: phew's haloes against RAMSES' own in-code PHEW on the shared 32^3 run's last
# output (a = 1.004), by tests/science/ramses_match.py (its docstring has the matching rule and the
# masses compared). The chain uses RAMSES' thresholds (namelist: density_threshold 80, relevance 3,
# saddle 200, in units of the mean) on the independent HDF5 conversion of the output.
#
#   ramses_match.sh [CIC_OPTIONS [MATCH_OPTIONS...]]
#     CIC_OPTIONS    the mesh, as one word for cic-project (default "--grid 192": the uniform grid whose
#                    haloes match best, docs/tutorial.md "RAMSES users"; the adaptive mesh is another run)
#     MATCH_OPTIONS  for ramses_match.py (default: the floors below, a little under what 192^3 measures:
#                    28 / 28 haloes matched, median mass ratio 0.99)
# Tools from $PHEW_BIN, data from $PHEW_SHARED_DATA, as CTest sets them. Exit 1 below the floors.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${PHEW_BIN:?PHEW_BIN is not set (the folder of the phew tools)}
run=${PHEW_SHARED_DATA:?PHEW_SHARED_DATA is not set}/ramses-cosmo-L20-N32/reference
cic_options=${1:-"--grid 192"}
shift $(($# > 0 ? 1 : 0))
match_options=("$@")
((${#match_options[@]})) || match_options=(--floor-matched 0.9 --floor-median "0.93,1.07")
[[ -f $run/snap_004.hdf5 ]] || { echo "ramses_match.sh: $run/snap_004.hdf5 is missing" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ramses_match.XXXXXX")
trap 'rm -rf "$work"' EXIT
read -ra cic <<<"$cic_options"
"$bin/cic-project" "$run/snap_004.hdf5" -o "$work/grid.h5" "${cic[@]}" -q
"$bin/phew-segment" "$work/grid.h5" -o "$work/patches.h5" --threshold 80mean -q
"$bin/phew-merge" "$work/patches.h5" -o "$work/clumps.h5" --relevance 3 --saddle-threshold 200mean -q
/usr/bin/python3 "$here/ramses_match.py" "$work/clumps.h5" "$run/clumps_004.h5" "${match_options[@]}"
