#!/usr/bin/env bash
# science.ramses_unbind: phew's unbinding against RAMSES' own on the shared 32^3 run's last output,
# particle by particle (tests/science/ramses_unbind.py): the adaptive mesh as RAMSES refined it
# (levels 5-10, m_refine 8, nexpand 1: docs/tutorial.md), RAMSES' thresholds, unbind --saddle
# (RAMSES' saddle_pot, its default).
#
#   ramses_unbind.sh [MATCH_OPTIONS...]   (default: the floors below, a little under what it measures:
#                                          34 / 34 clumps paired, median overlap 0.95, bound mass 0.99)
# Tools from $PHEW_BIN, data from $PHEW_SHARED_DATA, as CTest sets them. Exit 1 below the floors.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${PHEW_BIN:?PHEW_BIN is not set (the folder of the phew tools)}
run=${PHEW_SHARED_DATA:?PHEW_SHARED_DATA is not set}/ramses-cosmo-L20-N32/reference
options=("$@")
((${#options[@]})) || options=(--floor-matched 0.9 --floor-overlap 0.9 --floor-ratio "0.93,1.05")
[[ -f $run/snap_004.hdf5 ]] || { echo "ramses_unbind.sh: $run/snap_004.hdf5 is missing" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ramses_unbind.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$bin/cic-project" "$run/snap_004.hdf5" -o "$work/grid.h5" --grid 32 --refine 8 --levels 5 -q
"$bin/phew-segment" "$work/grid.h5" -o "$work/patches.h5" --threshold 80mean -q
"$bin/phew-merge" "$work/patches.h5" -o "$work/clumps.h5" --relevance 3 --saddle-threshold 200mean -q
"$bin/unbind" "$work/clumps.h5" "$run/snap_004.hdf5" -o "$work/bound.h5" --saddle -q
/usr/bin/python3 "$here/ramses_unbind.py" "$work/bound.h5" "$work/clumps.h5" "$run/clumps_004.h5" "${options[@]}"
