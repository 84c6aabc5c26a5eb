#!/usr/bin/env bash
# When does the tree record a real coalescence? synth-particles' `merger` scene (a 3e9 Msun satellite
# sinking into a 1e10 Msun host by dynamical friction, 41 snapshots 50 Myr apart) through the chain on
# grids of 64^3 and 128^3 cells and noise removal at relevance 3, 2 and 1.5, and on adaptive meshes of
# 16^3 coarse cells with 3, 4 and 5 levels at relevance 3, with and without velocity deblending; then the
# recorded merger snapshot of each tree against the true one (the centre tracks of the truth files) as a
# table and a figure (docs/tools/mergertree.md, "When a merger is recorded").
# Usage: examples/merger-timing/run.sh [OUTDIR]  (default example-output/merger-timing; about 30 min)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-example-output/merger-timing}
bin=${PHEW_BIN:-$root/build/bin}
mkdir -p "$out/snaps"

[[ -f $out/snaps/snap_040.hdf5 ]] || "$bin/synth-particles" merger -o "$out/snaps/snap" -q

# The haloes are isolated: a fixed region, and the threshold fixed at the first snapshot's mean.
region=-80,-80,-100,120,120,100
# A mesh: gN (a uniform grid of N^3 cells) or aL (16^3 coarse cells refined on 8 particles, L levels).
for variant in g64-r3 g64-r2 g64-r1.5 g128-r3 g128-r2 g128-r1.5 a3-r3 a4-r3 a5-r3; do
  mesh=${variant%-r*}
  relevance=${variant#*-r}
  if [[ $mesh == g* ]]; then cic=(--grid "${mesh#g}"); else cic=(--grid 16 --refine 8 --levels "${mesh#a}"); fi
  {
    d=$out/$variant
    mkdir -p "$d"
    for snap in "$out"/snaps/snap_0[0-9][0-9].hdf5; do
      k=$(basename "${snap%.hdf5}")
      [[ -f $d/$k.voters-off.h5.json ]] && continue
      "$bin/cic-project" "$snap" -o "$d/$k.grid.h5" "${cic[@]}" --region "$region" -q
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
    echo "merger-timing: $variant done" >&2
  }
done
/usr/bin/python3 "$here/timing.py" "$out" "$out/merger-timing.png"
