#!/usr/bin/env bash
# science.tree_acacia_*: phew's merger tree against ACACIA's (RAMSES' in-code tree) on the shared RAMSES
# series (twelve outputs, a = 0.30 to 1.00): the workflow's chain at RAMSES' thresholds (80mean,
# relevance 3, saddle 200mean, the default noise floor of 10 particles), then
# tests/science/tree_vs_acacia.py (its docstring has the main-branch length, the bins and the statistics).
#
#   tree_acacia.sh "MESH" [MATCH_OPTIONS...]
#     MESH           cic-project's options, one word ("--grid 32 --refine 8 --levels 5", "--grid 128")
#     MATCH_OPTIONS  for tree_vs_acacia.py (default: --floor-ratio 1 --min-objects 5: phew's mean main
#                    branch at least ACACIA's in every mass bin where both sides have 5 objects or more)
# Tools from $PHEW_BIN, data from $PHEW_SHARED_DATA, as CTest sets them. Exit 1 below the floor.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${PHEW_BIN:?PHEW_BIN is not set (the folder of the phew tools)}"
series=${PHEW_SHARED_DATA:?PHEW_SHARED_DATA is not set}/ramses-cosmo-L20-N32-series
mesh=${1:?usage: tree_acacia.sh "MESH" [MATCH_OPTIONS...]}
shift
options=("$@")
((${#options[@]})) || options=(--floor-ratio 1 --min-objects 5)
[[ -d $series/output_00013 ]] || { echo "tree_acacia.sh: $series/output_00013 is missing" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tree_acacia.XXXXXX")
trap 'rm -rf "$work"' EXIT
read -ra cic <<<"$mesh"
grid=${cic[1]}  # --grid N is the first option
# The rest of the mesh options go to cic-project as extra arguments (a YAML list of words).
extra=""
((${#cic[@]} > 2)) && extra=$(printf '"%s", ' "${cic[@]:2}")
cat >"$work/config.yaml" <<EOF
snapshots: "unused"
grid: $grid
threshold: "80mean"
relevance: 3
saddle_threshold: "200mean"
unbind: false
maps_top: 1
map_resolution: 16
extra_args: {cic-project: [${extra%, }]}
EOF
"$here/../../workflows/pipeline.sh" "$series/output_000*" "$work/out" --config "$work/config.yaml" 2>"$work/pipeline.log" ||
  { cat "$work/pipeline.log" >&2; exit 1; }
grep -h 'info: .* links' "$work/out/logs/mergertree.log" || true
/usr/bin/python3 "$here/tree_vs_acacia.py" "$work/out/tree.h5" "$work/out/output_00013/peaks.h5" "$series" "${options[@]}"
