#!/usr/bin/env bash
# When does the tree record a real coalescence? synth-particles' `merger` scene (a 3e9 Msun satellite
# sinking into a 1e10 Msun host by dynamical friction, 41 snapshots 50 Myr apart) through the chain on
# grids of 64^3 and 128^3 cells and noise removal at relevance 3, 2 and 1.5, with and without velocity
# deblending; then the recorded merger snapshot of each tree against the true one (the centre tracks of
# the truth files) as a table and a figure (docs/tools/mergertree.md, "When a merger is recorded").
# Usage: examples/merger-timing/run.sh [OUTDIR]  (default example-output/merger-timing; about 20 min)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-example-output/merger-timing}
bin=${PHEW_BIN:-$root/build/bin}
mkdir -p "$out/snaps"

[[ -f $out/snaps/snap_040.hdf5 ]] || "$bin/synth-particles" merger -o "$out/snaps/snap" -q

# The haloes are isolated: a fixed region, and the threshold fixed at the first snapshot's mean.
region=-80,-80,-100,120,120,100
for grid in 64 128; do
  for relevance in 3 2 1.5; do
    d=$out/g$grid-r$relevance
    mkdir -p "$d"
    for snap in "$out"/snaps/snap_0[0-9][0-9].hdf5; do
      k=$(basename "${snap%.hdf5}")
      [[ -f $d/$k.voters-off.h5.json ]] && continue
      "$bin/cic-project" "$snap" -o "$d/$k.grid.h5" --grid "$grid" --region "$region" -q
      "$bin/phew-segment" "$d/$k.grid.h5" -o "$d/$k.patches.h5" --threshold 200mean --mean-from "$d/snap_000.grid.h5" -q
      "$bin/phew-merge" "$d/$k.patches.h5" -o "$d/$k.clumps.h5" --relevance "$relevance" --saddle-threshold none -q
      "$bin/deblend" "$d/$k.clumps.h5" "$snap" -o "$d/$k.peaks.h5" -q
      "$bin/voters" "$d/$k.peaks.h5" "$snap" -o "$d/$k.voters.h5" --search-radius 15 -q
      "$bin/deblend" "$d/$k.clumps.h5" "$snap" -o "$d/$k.peaks-off.h5" --off -q
      "$bin/voters" "$d/$k.peaks-off.h5" "$snap" -o "$d/$k.voters-off.h5" --search-radius 15 -q
      [[ $k == snap_000 ]] || rm -f "$d/$k.grid.h5" "$d/$k.grid.h5.json"  # only the reference mean is needed again
    done
    for v in "" -off; do
      stages=()
      for snap in "$out"/snaps/snap_0[0-9][0-9].hdf5; do
        k=$(basename "${snap%.hdf5}")
        stages+=("$d/$k.peaks$v.h5:$d/$k.voters$v.h5")
      done
      "$bin/mergertree" "${stages[@]}" -o "$d/tree$v.h5" -q
    done
    echo "merger-timing: grid $grid, relevance $relevance done" >&2
  done
done
/usr/bin/python3 "$here/timing.py" "$out" "$out/merger-timing.png"
