#!/usr/bin/env bash
# phew against RAMSES' own in-code PHEW, on one RAMSES output written with clumpfind=.true.:
# cic-project -> phew-segment -> phew-merge with the thresholds of the output's namelist.txt
# (density_threshold, relevance_threshold, saddle_threshold, mass_threshold), then the comparison of
# haloes and clumps (examples/ramses_phew.py: mutual nearest peaks, matched fractions, mass ratios,
# position offsets, a picture).
#
# Usage: examples/ramses-phew/run.sh OUTPUT_FOLDER [OUTDIR] [--grid N] [--radius R] [--ranks N] [-- COMPARE_OPTIONS]
#   OUTPUT_FOLDER  a RAMSES output_NNNNN/ with part_, clump_, halo_ and unbinding_ files
#   OUTDIR         default example-output/ramses-phew/<output name>
#   --grid N       cells per side (default 128: see docs/tutorial.md, "RAMSES users")
#   --radius R     match radius in Mpc/h (default 0.3)
#   --ranks N      run the tools under mpirun -n N
#   after --        more options for ramses_phew.py compare (e.g. --floor-haloes 0.9)
# Writes OUTDIR/{grid,patches,clumps}.h5, OUTDIR/compare.{txt,json,png}. Tools from $PHEW_BIN
# (default build/bin).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${PHEW_BIN:-$root/build/bin}
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1} OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
grid=128 radius=0.3 ranks=1 args=() extra=()
while (($#)); do
  case $1 in
    --grid) grid=$2; shift 2 ;;
    --radius) radius=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ((${#args[@]} < 1 || ${#args[@]} > 2)); then
  echo "run.sh: usage: run.sh OUTPUT_FOLDER [OUTDIR] [--grid N] [--radius R] [--ranks N]" >&2
  exit 2
fi
output=${args[0]%/}
out=${args[1]:-example-output/ramses-phew/$(basename "$output")}
[[ -d $output ]] || { echo "run.sh: error: $output: no such folder" >&2; exit 3; }
mkdir -p "$out"
run() { if ((ranks > 1)); then mpirun -n "$ranks" "$@"; else "$@"; fi; }

# PHEW's parameters from the run's namelist (code densities are in units of the mean matter density
# in cosmological runs; mass_threshold is in particle masses). RAMSES' defaults where it says nothing.
nml() {
  local v
  v=$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([0-9.eEdD+-]*\).*/\1/p" "$output/namelist.txt" 2>/dev/null | tail -1)
  echo "${v:-$2}" | tr dD eE
}
density=$(nml density_threshold 80) relevance=$(nml relevance_threshold 2) saddle=$(nml saddle_threshold 200)
mass=$(nml mass_threshold 0)
echo "run.sh: $output: density_threshold $density, relevance_threshold $relevance, saddle_threshold $saddle," \
  "mass_threshold $mass; grid ${grid}^3" >&2

run "$bin/cic-project" "$output" -o "$out/grid.h5" --grid "$grid" -q
run "$bin/phew-segment" "$out/grid.h5" -o "$out/patches.h5" --threshold "${density}mean" -q
merge=(--relevance "$relevance" --saddle-threshold "${saddle}mean" --particles "$output" --export-text)
[[ $mass != 0 ]] && merge+=(--mass-threshold "${mass}particles")
run "$bin/phew-merge" "$out/patches.h5" -o "$out/clumps.h5" "${merge[@]}" -q
/usr/bin/python3 "$root/examples/ramses_phew.py" compare "$out/clumps.h5" "$output" --radius "$radius" \
  --grid "$out/grid.h5" --json "$out/compare.json" --png "$out/compare.png" "${extra[@]}" | tee "$out/compare.txt"
echo "run.sh: $out/compare.{txt,json,png}" >&2
