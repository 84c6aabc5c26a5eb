#!/usr/bin/env bash
# unbind and the chain before it, per particle, against ROCKSTAR's anchor figures. See
# bench/README.md ("unbind_bench.sh").
#
#   bench/unbind_bench.sh [--out DIR] [--scenes "clustered haloes"] [--n N] [--grid G] [--seed S]
#                         [--background N] [--haloes-grid G] [--ranks "1 2"] [--no-tree]
#
# clustered: the cached clustered snapshot of cic_bench.sh (N particles, default 128^3 = 2,097,152: the
# size of ROCKSTAR's anchor; --n 16777216 --grid 512 for the 16.7 M one), on a grid of G^3.
# haloes: a 4 Mpc box of --background uniform particles (default 10^7) with four NFW haloes of 1.5 M,
# 300 k, 100 k and 30 k particles (synth-particles), on a grid of --haloes-grid^3 (default 256).
# Each: cic-project -> phew-segment 80mean -> phew-merge -> unbind with the profile potential and with
# the tree, at each rank count, one thread per rank. Every run under /usr/bin/time -v (2 ranks: each
# rank too). Prints the tables and writes DIR/unbind/unbind_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
BUILD_BIN=${BUILD_BIN:-$root/build/bin}
MPIRUN=${MPIRUN:-mpirun}
# shellcheck source=bench/timed.sh
source "$here/timed.sh"

scenes="clustered haloes"
n=2097152
seed=1
out=$here/out
grid=256
background=10000000
haloes_grid=256
ranks_list="1 2"
tree=1
# ROCKSTAR on one core of this kind of machine, 2.1 M particles: 6-D FoF, unbinding, properties.
rockstar_rate=455000
rockstar_bytes=52

while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --scenes) scenes=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --background) background=$2; shift 2 ;;
    --haloes-grid) haloes_grid=$2; shift 2 ;;
    --ranks) ranks_list=$2; shift 2 ;;
    --no-tree) tree=0; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unbind_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "unbind_bench: $(date +%T) $*" >&2; }
tools="cic-project phew-segment phew-merge unbind synth-particles"
for t in $tools; do
  [[ -x $BUILD_BIN/$t ]] || { log "$BUILD_BIN/$t not found: build it first"; exit 1; }
done
[[ -x /usr/bin/time ]] || { log "installing Debian package 'time'"; apt-get install -y time >/dev/null; }
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

mkdir -p "$out/unbind"
out=$(cd "$out" && pwd)
c=$out/unbind
rm -rf "${c:?}/bin"
mkdir -p "$c/bin"
for t in $tools; do cp "$BUILD_BIN/$t" "$c/bin/$t"; done
B=$c/bin
runs=$c/runs.tsv
: >"$runs"

snapshot_of() {  # SCENE: the cached snapshot's path, made when missing
  local snap
  case $1 in
    clustered)
      snap=$out/snap_clustered_n${n}_s$seed.hdf5
      if [[ ! -s $snap ]]; then
        log "generating $snap (bench/make_snapshot.py)"
        "$PY" "$root/bench/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed" >&2
        mv "$snap.tmp" "$snap"
      fi ;;
    haloes)
      snap=$out/snap_haloes_b${background}_s$seed.hdf5
      if [[ ! -s $snap ]]; then
        log "generating $snap (synth-particles: $background background particles, four NFW haloes)"
        # One particle mass, 6.67e-5 x 1e10 Msun: M200 = 100 (r200 206 kpc) for 1.5 M particles.
        cat >"$c/haloes.json" <<JSON
{"seed": $seed, "box": 4000,
 "components": [
  {"name": "cluster", "model": "nfw", "particles": 1500000, "mass": 100, "concentration": 5, "position": [1200, 1500, 2000]},
  {"name": "group", "model": "nfw", "particles": 300000, "mass": 20, "concentration": 7, "position": [3000, 900, 700]},
  {"name": "galaxy", "model": "nfw", "particles": 100000, "mass": 6.6667, "concentration": 9, "position": [600, 3300, 3100]},
  {"name": "dwarf", "model": "nfw", "particles": 30000, "mass": 2, "concentration": 12, "position": [2700, 2800, 1600]},
  {"name": "field", "model": "uniform", "particles": $background, "mass": $(awk "BEGIN { printf \"%.4f\", $background * 100 / 1500000 }"), "velocity_dispersion": 50}]}
JSON
        "$B/synth-particles" "$c/haloes.json" -o "$snap.tmp.hdf5" -q >&2
        mv "$snap.tmp.hdf5" "$snap"
        rm -f "$snap.tmp.hdf5.json" "$snap.tmp.truth.h5" "$snap.tmp.truth.h5.json"
      fi ;;
    *) log "unknown scene '$1' (clustered, haloes)"; exit 2 ;;
  esac
  echo "$snap"
}

run() {  # SCENE STEP RANKS PARTICLES OUTPUT CMD...: timed; one line in runs.tsv
  local scene=$1 step=$2 ranks=$3 particles=$4 output=$5 status=0
  shift 5
  local tag=${scene}_${step}_r$ranks
  TIMED_OUTPUT=$output timed "$c/$tag.time" "$c/$tag.log" "$ranks" "$@" || status=$?
  ((status == 0)) || log "$tag failed (exit $status): see $c/$tag.log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$scene" "$step" "$ranks" "$particles" "$output" "$status" "$c/$tag.time" >>"$runs"
}

for scene in $scenes; do
  snap=$(snapshot_of "$scene")
  cat "$snap" >/dev/null
  particles=$("$PY" -c "import h5py, sys; print(int(sum(h5py.File(sys.argv[1])['Header'].attrs['NumPart_Total'])))" "$snap")
  g=$grid
  [[ $scene == haloes ]] && g=$haloes_grid
  for r in $ranks_list; do
    s=$c/${scene}_r$r
    log "$scene ($particles particles), $r rank(s): cic-project --grid $g, phew-segment, phew-merge, unbind (profile$( ((tree)) && echo ', tree'))"
    run "$scene" cic-project "$r" "$particles" "$s.grid.h5" "$B/cic-project" "$snap" -o "$s.grid.h5" --grid "$g" --threads 1 -q
    run "$scene" phew-segment "$r" "$particles" "$s.patches.h5" "$B/phew-segment" "$s.grid.h5" -o "$s.patches.h5" --threshold 80mean --threads 1 -q
    run "$scene" phew-merge "$r" "$particles" "$s.clumps.h5" "$B/phew-merge" "$s.patches.h5" -o "$s.clumps.h5" --relevance 3 --saddle-threshold 200mean --threads 1 -q
    run "$scene" unbind-profile "$r" "$particles" "$s.bound.h5" "$B/unbind" "$s.clumps.h5" "$snap" -o "$s.bound.h5" --threads 1 -q
    if ((tree)); then
      run "$scene" unbind-tree "$r" "$particles" "$s.bound_tree.h5" "$B/unbind" "$s.clumps.h5" "$snap" -o "$s.bound_tree.h5" --potential tree --threads 1 -q
    fi
  done
done

"$PY" "$here/unbind_table.py" "$runs" "$c/unbind_bench.json" --rockstar-rate "$rockstar_rate" --rockstar-bytes "$rockstar_bytes"
