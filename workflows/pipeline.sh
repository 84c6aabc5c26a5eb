#!/usr/bin/env bash
# The whole phew chain with plain shell, for people without Snakemake:
#   per snapshot: cic-project -> phew-segment -> phew-merge (-> unbind) -> deblend (-> unbind) -> voters
#   then: mergertree over the series, dtfe-surface maps around the top haloes of the last snapshot.
#
# Usage: workflows/pipeline.sh SNAPSHOT_GLOB OUTDIR [--config FILE] [--ranks N]
#   SNAPSHOT_GLOB  quoted glob of snapshots, one file each (sorted by name = time order)
#   OUTDIR         OUTDIR/<snapshot name>/{grid,patches,clumps,bound,peaks,bound-peaks,voters}.h5 (bound.h5 of
#                  the clumps and bound-peaks.h5 of deblend's peaks when the config's unbind is true; mergertree
#                  then takes the peaks' bound properties), OUTDIR/tree.h5, OUTDIR/maps.h5,
#                  and each stage's log in OUTDIR/logs/ (<snapshot name>/TOOL.log, mergertree.log, dtfe-surface.log)
#   --config FILE  parameters (workflows/config.yaml format; default: workflows/config.yaml)
#   --ranks N      run each tool under mpirun -n N
# A stage is up to date when its output's manifest records the same command line (parameters) and
# inputs that are still the ones it was made from; otherwise it runs again, and so does every stage after
# it. Re-running after a failure resumes where it stopped (a failed stage leaves no manifest). Tools come
# from $PHEW_BIN, else PATH, else build/bin next to this folder. Exit codes: 2 bad usage, config or no
# tools; 3 no snapshot matches; else the failed tool's.
# shellcheck disable=SC2154  # cfg_*, opts_* and tool_* come from `phew_options.py shell` (the eval below)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
config=$here/config.yaml
ranks=""
args=()
while (($#)); do
  case $1 in
    --config) config=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ((${#args[@]} != 2)); then
  echo "pipeline.sh: usage: pipeline.sh SNAPSHOT_GLOB OUTDIR [--config FILE] [--ranks N]" >&2
  exit 2
fi
glob=${args[0]}
out=${args[1]}

# Parameters from the YAML config, checked against the schema (the same check Snakemake makes); each
# tool's options from them through the table the Snakefile uses, and each tool's path (phew_options.py):
# cfg_KEY, opts_TOOL=(--option value ...), tool_TOOL=PATH.
eval "$(/usr/bin/python3 "$here/phew_options.py" shell "$config" "$out")"
ranks=${ranks:-$cfg_ranks}

log() { echo "pipeline.sh: $*" >&2; }
run() { "$here/launch.sh" "${PHEW_MPI_LAUNCHER:-mpirun}" -n "$ranks" "$@"; }
# stage OUTPUT LOG COMMAND...: runs COMMAND, its messages into LOG, unless OUTPUT is up to date (its
# manifest records this command and inputs that have not changed since). Warnings are repeated here.
stage() {
  local output=$1 logfile=$2
  shift 2
  local why
  why=$(/usr/bin/python3 "$here/phew_options.py" stale "$output" "$@")
  if [[ -z $why ]]; then
    log "up to date: $output"
    return 0
  fi
  log "running: $(basename "$1") -> $output ($why)"
  mkdir -p "$(dirname "$logfile")"
  local rc=0
  run "$@" >"$logfile" 2>&1 || rc=$?
  grep -F ' warning: ' "$logfile" | sed 's/^/pipeline.sh: /' >&2 || true
  if ((rc != 0)); then
    grep -F ': error: ' "$logfile" | sed 's/^/pipeline.sh: /' >&2 || tail -n 5 "$logfile" >&2
    log "error: $(basename "$1") failed with exit code $rc (its log: $logfile)"
    exit "$rc"
  fi
}

# shellcheck disable=SC2206
snapshots=($glob)
[[ -e ${snapshots[0]} ]] || { echo "pipeline.sh: error: no snapshot matches $glob" >&2; exit 3; }
mkdir -p "$out"
logs=$out/logs
# fix_mean: every snapshot's "mean" is the first snapshot's (an open-box series; phew_options.py).
first_grid=$out/$(basename "${snapshots[0]%.hdf5}")/grid.h5
mean_from=()
if [[ $cfg_fix_mean == True ]]; then mean_from=(--mean-from "$first_grid"); fi
peaks=()
voters=()
bound_peaks=()
for snap in "${snapshots[@]}"; do
  name=$(basename "${snap%.hdf5}")
  d=$out/$name
  mkdir -p "$d"
  stage "$d/grid.h5" "$logs/$name/cic-project.log" "$tool_cic_project" "$snap" -o "$d/grid.h5" "${opts_cic_project[@]}"
  stage "$d/patches.h5" "$logs/$name/phew-segment.log" "$tool_phew_segment" "$d/grid.h5" -o "$d/patches.h5" \
    "${opts_phew_segment[@]}" "${mean_from[@]}"
  stage "$d/clumps.h5" "$logs/$name/phew-merge.log" "$tool_phew_merge" "$d/patches.h5" -o "$d/clumps.h5" \
    "${opts_phew_merge[@]//@SNAPSHOT@/"$snap"}"
  if [[ $cfg_unbind == True ]]; then
    yt=()
    if [[ $cfg_unbind_export_yt == True ]]; then yt=(--export-yt "$d/halos.0.h5"); fi
    stage "$d/bound.h5" "$logs/$name/unbind.log" "$tool_unbind" "$d/clumps.h5" "$snap" -o "$d/bound.h5" "${opts_unbind[@]}" \
      "${yt[@]}"
  fi
  stage "$d/peaks.h5" "$logs/$name/deblend.log" "$tool_deblend" "$d/clumps.h5" "$snap" -o "$d/peaks.h5" "${opts_deblend[@]}"
  if [[ $cfg_unbind == True ]]; then
    stage "$d/bound-peaks.h5" "$logs/$name/unbind-peaks.log" "$tool_unbind" "$d/peaks.h5" "$snap" -o "$d/bound-peaks.h5" \
      "${opts_unbind[@]}"
  fi
  stage "$d/voters.h5" "$logs/$name/voters.log" "$tool_voters" "$d/peaks.h5" "$snap" -o "$d/voters.h5" \
    "${opts_voters[@]}" "${mean_from[@]}"
  peaks+=("$d/peaks.h5")
  voters+=("$d/voters.h5")
  bound_peaks+=("$d/bound-peaks.h5")
done

# Each stage PEAKS:VOTERS, explicitly (never guessed from the file names); with unbind
# PEAKS:VOTERS:BOUND, voters' voters voting and the peaks' bound properties in the tree.
stages=()
for i in "${!peaks[@]}"; do
  if [[ $cfg_unbind == True ]]; then stages+=("${peaks[i]}:${voters[i]}:${bound_peaks[i]}"); else stages+=("${peaks[i]}:${voters[i]}"); fi
done
stage "$out/tree.h5" "$logs/mergertree.log" "$tool_mergertree" "${stages[@]}" -o "$out/tree.h5" "${opts_mergertree[@]}"

last=${snapshots[-1]}
last_clumps=$out/$(basename "${last%.hdf5}")/clumps.h5
stage "$out/maps.h5" "$logs/dtfe-surface.log" "$tool_dtfe_surface" "$last" -o "$out/maps.h5" --centers "$last_clumps" \
  --size "$(/usr/bin/python3 "$here/phew_options.py" map-size "$cfg_map_size" "$last_clumps")" "${opts_dtfe_surface[@]}"
log "done: $out"
