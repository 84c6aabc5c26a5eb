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

# Parameters from the YAML config, checked against the schema (the same check Snakemake makes).
eval "$(/usr/bin/python3 - "$config" "$here/schemas/config.schema.yaml" <<'PY'
import shlex, sys, yaml, jsonschema
config = yaml.safe_load(open(sys.argv[1])) or {}
schema = yaml.safe_load(open(sys.argv[2]))
try:
    jsonschema.validate(config, schema)
except jsonschema.ValidationError as e:
    where = "/".join(map(str, e.path)) or "config"
    print(f"echo {shlex.quote(f'pipeline.sh: error: {sys.argv[1]}: {where}: {e.message}')} >&2; exit 2")
    sys.exit(0)
for key, spec in schema["properties"].items():
    print(f"cfg_{key}={shlex.quote(str(config.get(key, spec.get('default', ''))))}")
PY
)"
ranks=${ranks:-$cfg_ranks}

log() { echo "pipeline.sh: $*" >&2; }
run() {
  if ((ranks > 1)); then ${PHEW_MPI_LAUNCHER:-mpirun} -n "$ranks" "$@"; else "$@"; fi
}
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
peaks=()
for snap in "${snapshots[@]}"; do
  name=$(basename "${snap%.hdf5}")
  d=$out/$name
  mkdir -p "$d"
  stage "$d/grid.h5" "$snap" -- "$bin/cic-project" "$snap" -o "$d/grid.h5" --grid "$cfg_grid" \
    --types "$cfg_types" --assignment "$cfg_assignment" -q
  stage "$d/patches.h5" "$d/grid.h5" -- "$bin/phew-segment" "$d/grid.h5" -o "$d/patches.h5" \
    --threshold "$cfg_threshold" -q
  merge_opts=(--relevance "$cfg_relevance")
  [[ -n $cfg_saddle_threshold ]] && merge_opts+=(--saddle-threshold "$cfg_saddle_threshold")
  [[ -n $cfg_mass_threshold ]] && merge_opts+=(--mass-threshold "$cfg_mass_threshold")
  stage "$d/clumps.h5" "$d/patches.h5" -- "$bin/phew-merge" "$d/patches.h5" -o "$d/clumps.h5" "${merge_opts[@]}" -q
  stage "$d/peaks.h5" "$d/clumps.h5" "$snap" -- "$bin/deblend" "$d/clumps.h5" "$snap" -o "$d/peaks.h5" \
    --bin-fraction "$cfg_bin_fraction" --velocity-relevance "$cfg_velocity_relevance" \
    --min-particles "$cfg_min_particles" --types "$cfg_types" -q
  voter_opts=(--n-voters "$cfg_n_voters" --types "$cfg_types")
  [[ $cfg_search_radius != 0 ]] && voter_opts+=(--search-radius "$cfg_search_radius")
  stage "$d/voters.h5" "$d/peaks.h5" "$snap" -- "$bin/voters" "$d/peaks.h5" "$snap" -o "$d/voters.h5" "${voter_opts[@]}" -q
  peaks+=("$d/peaks.h5")
done

voters=()
for p in "${peaks[@]}"; do voters+=("${p%peaks.h5}voters.h5"); done
stage "$out/tree.h5" "${peaks[@]}" "${voters[@]}" -- "$bin/mergertree" "${peaks[@]}" -o "$out/tree.h5" \
  --min-votes "$cfg_min_votes" --graveyard-votes "$cfg_graveyard_votes" \
  --graveyard-max-age "$cfg_graveyard_max_age" -q

last=${snapshots[-1]}
last_clumps=$out/$(basename "${last%.hdf5}")/clumps.h5
size=$cfg_map_size
if [[ $size == 0 ]]; then
  size=$(/usr/bin/python3 -c 'import h5py,sys; print(h5py.File(sys.argv[1])["grid"].attrs["box_size"][0] / 10)' "$last_clumps")
fi
stage "$out/maps.h5" "$last" "$last_clumps" -- "$bin/dtfe-surface" "$last" -o "$out/maps.h5" \
  --centers "$last_clumps" --top "$cfg_maps_top" --size "$size" --resolution "$cfg_map_resolution" -q
log "done: $out"
