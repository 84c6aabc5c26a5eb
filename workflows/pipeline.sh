#!/usr/bin/env bash
# The whole phew chain with plain shell, for people without Snakemake:
#   per snapshot: cic-project -> phew-segment -> phew-merge -> deblend -> voters
#   then: mergertree over the series, dtfe-surface maps around the top haloes of the last snapshot.
#
# Usage: workflows/pipeline.sh SNAPSHOT_GLOB OUTDIR [--config FILE] [--ranks N]
#   SNAPSHOT_GLOB  quoted glob of snapshots, one file each (sorted by name = time order)
#   OUTDIR         OUTDIR/<snapshot name>/{grid,patches,clumps,peaks,voters}.h5, OUTDIR/tree.h5, OUTDIR/maps.h5
#   --config FILE  parameters (workflows/config.yaml format; default: workflows/config.yaml)
#   --ranks N      run each tool under mpirun -n N
# A stage is skipped when its output's manifest is newer than all its inputs, so re-running after a
# failure resumes where it stopped; a failed stage leaves no manifest, so it runs again.
# Tools are taken from $PHEW_BIN (default: build/bin next to this folder).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${PHEW_BIN:-$here/../build/bin}
config=$here/config.yaml
ranks=""
args=()
while (($#)); do
  case $1 in
    --config) config=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ((${#args[@]} != 2)); then
  echo "pipeline.sh: usage: pipeline.sh SNAPSHOT_GLOB OUTDIR [--config FILE] [--ranks N]" >&2
  exit 2
fi
glob=${args[0]}
out=${args[1]}

# Parameters from the YAML config, checked against the schema (the same check Snakemake makes), and
# each tool's options from them through the table the Snakefile uses (phew_options.py): cfg_KEY and
# opts_TOOL=(--option value ...).
eval "$(/usr/bin/python3 "$here/phew_options.py" shell "$config")"
ranks=${ranks:-$cfg_ranks}

log() { echo "pipeline.sh: $*" >&2; }
run() { "$here/launch.sh" "${PHEW_MPI_LAUNCHER:-mpirun}" -n "$ranks" "$@"; }
# stage OUTPUT INPUT... -- COMMAND...: runs COMMAND unless OUTPUT.json is newer than every INPUT.
stage() {
  local output=$1
  shift
  local inputs=()
  while [[ $1 != -- ]]; do
    inputs+=("$1")
    shift
  done
  shift
  if [[ -f $output.json ]]; then
    local stale=0
    for i in "${inputs[@]}"; do [[ $i -nt $output.json ]] && stale=1; done
    if ((stale == 0)); then
      log "up to date: $output"
      return 0
    fi
  fi
  log "running: $(basename "$1") -> $output"
  run "$@"
}

# shellcheck disable=SC2206
snapshots=($glob)
[[ -e ${snapshots[0]} ]] || { echo "pipeline.sh: error: no snapshot matches $glob" >&2; exit 3; }
mkdir -p "$out"
# fix_mean: every snapshot's "mean" is the first snapshot's (an open-box series; phew_options.py).
first_grid=$out/$(basename "${snapshots[0]%.hdf5}")/grid.h5
mean_from=()
reference=()
if [[ $cfg_fix_mean == True ]]; then
  mean_from=(--mean-from "$first_grid")
  reference=("$first_grid")
fi
peaks=()
voters=()
for snap in "${snapshots[@]}"; do
  name=$(basename "${snap%.hdf5}")
  d=$out/$name
  mkdir -p "$d"
  stage "$d/grid.h5" "$snap" -- "$bin/cic-project" "$snap" -o "$d/grid.h5" "${opts_cic_project[@]}" -q
  stage "$d/patches.h5" "$d/grid.h5" "${reference[@]}" -- "$bin/phew-segment" "$d/grid.h5" -o "$d/patches.h5" \
    "${opts_phew_segment[@]}" "${mean_from[@]}" -q
  stage "$d/clumps.h5" "$d/patches.h5" -- "$bin/phew-merge" "$d/patches.h5" -o "$d/clumps.h5" "${opts_phew_merge[@]}" -q
  stage "$d/peaks.h5" "$d/clumps.h5" "$snap" -- "$bin/deblend" "$d/clumps.h5" "$snap" -o "$d/peaks.h5" "${opts_deblend[@]}" -q
  stage "$d/voters.h5" "$d/peaks.h5" "$snap" "${reference[@]}" -- "$bin/voters" "$d/peaks.h5" "$snap" -o "$d/voters.h5" \
    "${opts_voters[@]}" "${mean_from[@]}" -q
  peaks+=("$d/peaks.h5")
  voters+=("$d/voters.h5")
done

# Each stage PEAKS:VOTERS, explicitly (never guessed from the file names).
stages=()
for i in "${!peaks[@]}"; do stages+=("${peaks[i]}:${voters[i]}"); done
stage "$out/tree.h5" "${peaks[@]}" "${voters[@]}" -- "$bin/mergertree" "${stages[@]}" -o "$out/tree.h5" \
  "${opts_mergertree[@]}" -q

last=${snapshots[-1]}
last_clumps=$out/$(basename "${last%.hdf5}")/clumps.h5
stage "$out/maps.h5" "$last" "$last_clumps" -- "$bin/dtfe-surface" "$last" -o "$out/maps.h5" --centers "$last_clumps" \
  --size "$(/usr/bin/python3 "$here/phew_options.py" map-size "$cfg_map_size" "$last_clumps")" "${opts_dtfe_surface[@]}" -q
log "done: $out"
