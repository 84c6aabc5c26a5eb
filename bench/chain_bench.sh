#!/usr/bin/env bash
# Benchmark the chain after the grid: phew-segment + phew-merge, deblend, voters, mergertree. See bench/README.md.
#
#   bench/chain_bench.sh [--out DIR] [--n N] [--seed S] [--low-threshold T] [--no-512] [--no-synth]
#                        [--no-clustered-voters] [--tree-sizes "1e6:1e4:4 1e7:1e5:4 1e8:1e6:4"] [--regen]
#
#  1. phew-segment --threshold 80mean (and T, default 10mean) + phew-merge --relevance 3
#     --saddle-threshold 200mean on the cached clustered grids: 256^3 on 1 and 2 ranks and on 1 rank x 2
#     threads, 512^3 on 2 ranks.
#  2. deblend on the clustered N-particle snapshot with the 256^3 80mean clumps, 1 and 2 ranks, 1 rank x 2
#     threads.
#  3. voters --potential compute on that snapshot and peaks (1 rank); a synth-particles scene with a
#     stored potential (1e7 background + 300 NFW halos, cached) through cic-project, phew-segment,
#     phew-merge and deblend, then voters --potential snapshot, compute and profile side by side.
#  4. mergertree on synthetic stages (bench/mergertree_stages.py, cached) of PARTICLES:PEAKS:SNAPSHOTS.
# Every timed run is under /usr/bin/time -v (2 ranks: each rank too); phases and counts come from the
# output manifests. Prints the tables (bench/chain_table.py) and writes DIR/chain_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3  # Debian's interpreter: has numpy and h5py
BUILD_BIN=${BUILD_BIN:-$root/build/bin}
MPIRUN=${MPIRUN:-mpirun}

n=16777216   # 256^3 particles, the snapshot of cic_bench.sh / segment_bench.sh
seed=1
out=$here/out
low=10mean
do_512=1
do_synth=1
do_cvoters=1
tree_sizes="1e6:1e4:4 1e7:1e5:4 1e8:1e6:4"
regen=0

while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --low-threshold) low=$2; shift 2 ;;
    --no-512) do_512=0; shift ;;
    --no-synth) do_synth=0; shift ;;
    --no-clustered-voters) do_cvoters=0; shift ;;
    --tree-sizes) tree_sizes=$2; shift 2 ;;
    --regen) regen=1; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "chain_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "chain_bench: $(date +%T) $*" >&2; }

tools="cic-project phew-segment phew-merge deblend voters mergertree synth-particles remanifest"
for t in $tools; do
  [[ -x $BUILD_BIN/$t ]] || { log "$BUILD_BIN/$t not found: build it first (cmake --build build -j1)"; exit 1; }
done
if [[ ! -x /usr/bin/time ]]; then
  log "/usr/bin/time missing: installing Debian package 'time'"
  apt-get install -y time >/dev/null
fi
# Open MPI refuses to run as root unless told it is fine (containers).
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

mkdir -p "$out/chain"
out=$(cd "$out" && pwd)
c=$out/chain
# A private copy of the tools: the build tree may be rebuilt while the benchmark runs.
rm -rf "${c:?}/bin"
mkdir -p "$c/bin" "$c/s1" "$c/s2" "$c/s3" "$c/s4"
for t in $tools; do cp "$BUILD_BIN/$t" "$c/bin/$t"; done
B=$c/bin
"$B/phew-merge" --version >"$c/version.txt" 2>&1 || true
runs=$c/runs.tsv
: >"$runs"
t_start=$SECONDS

# run STEP TAG RANKS OUTPUT INFO CMD...: CMD under /usr/bin/time -v (each rank too when RANKS > 1),
# stderr in TAG.log; one line in runs.tsv. A failure is recorded, not fatal.
run() {
  local step=$1 tag=$2 ranks=$3 output=$4 info=$5
  shift 5
  local d=$c/$step status=0
  rm -f "$output" "$output.json" "$d/$tag".time* "$d/$tag.log"
  if ((ranks == 1)); then
    /usr/bin/time -v -o "$d/$tag.time" "$@" 2>"$d/$tag.log" || status=$?
  else
    # shellcheck disable=SC2016  # $0, $OMPI_COMM_WORLD_RANK and $@ expand in the per-rank shell
    /usr/bin/time -v -o "$d/$tag.time" "$MPIRUN" -n "$ranks" \
      sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$d/$tag.time" "$@" 2>"$d/$tag.log" || status=$?
  fi
  ((status == 0)) || log "$tag failed (exit $status): see $d/$tag.log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$step" "$tag" "$ranks" "$output" "$status" "$info" >>"$runs"
  return 0
}

# --- Inputs ----------------------------------------------------------------------------------------
snap=$out/snap_clustered_n${n}_s$seed.hdf5
if [[ ! -s $snap ]]; then
  log "generating $snap (bench/make_snapshot.py)"
  "$PY" "$root/bench/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed"
  mv "$snap.tmp" "$snap"
fi

# The cached grids of segment_bench.sh. deblend needs the snapshot's fingerprint in the grid's
# provenance (cic-project records it since commit db84ec5); an older grid is projected again.
grid_ok() {  # path [need-provenance]
  [[ -s $1 && -s $1.json ]] || return 1
  [[ ${2:-0} == 1 ]] || return 0
  "$PY" - "$1.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
ok = any(isinstance(i, dict) and i.get("kind") == "snapshot" and i.get("fingerprint")
         for step in m.get("provenance", []) for i in (step.get("inputs") or []))
sys.exit(0 if ok else 1)
EOF
}
make_grid() {  # cells need-provenance -> path
  local path=$out/grid_clustered_n${n}_s${seed}_g$1.h5
  if ! grid_ok "$path" "$2"; then
    log "projecting the snapshot on $1^3 cells (cic-project, 2 ranks): grid missing or without the snapshot in its provenance"
    cat "$snap" >/dev/null
    "$MPIRUN" -n 2 "$B/cic-project" "$snap" -o "$path" --grid "$1" -q
  fi
  echo "$path"
}
g256=$(make_grid 256 1)
if ((do_512)); then g512=$(make_grid 512 0); fi

# --- 1. phew-segment + phew-merge ------------------------------------------------------------------
chain1() {  # grid-path cells ranks threshold [threads]
  local g=$1 cells=$2 ranks=$3 thr=$4 threads=${5:-1} tag
  tag=g${cells}_${thr}_r$ranks
  ((threads == 1)) || tag=${tag}_t$threads
  log "1. phew-segment + phew-merge $cells^3, $ranks rank(s) x $threads thread(s), threshold $thr"
  cat "$g" >/dev/null
  run s1 "seg_$tag" "$ranks" "$c/s1/patches_$tag.h5" "grid=$cells;threshold=$thr;threads=$threads;particles=$n" \
    "$B/phew-segment" "$g" -o "$c/s1/patches_$tag.h5" --threshold "$thr" --threads "$threads" -q
  run s1 "merge_$tag" "$ranks" "$c/s1/clumps_$tag.h5" "grid=$cells;threshold=$thr;threads=$threads;particles=$n" \
    "$B/phew-merge" "$c/s1/patches_$tag.h5" -o "$c/s1/clumps_$tag.h5" --relevance 3 --saddle-threshold 200mean \
    --threads "$threads" -q
}
chain1 "$g256" 256 1 80mean
chain1 "$g256" 256 2 80mean
chain1 "$g256" 256 1 80mean 2
chain1 "$g256" 256 1 "$low"
chain1 "$g256" 256 2 "$low"
chain1 "$g256" 256 1 "$low" 2
if ((do_512)); then
  chain1 "$g512" 512 2 80mean
  chain1 "$g512" 512 2 "$low"
  for f in "$c"/s1/patches_g512_*.h5 "$c"/s1/clumps_g512_*.h5; do  # ~1.4-2.1 GB each; the manifests stay
    stat -c %s "$f" >"$f.size" && rm -f "$f"
  done
fi

# --- 2. deblend ------------------------------------------------------------------------------------
clumps=$c/s1/clumps_g256_80mean_r1.h5
for rt in 1:1 2:1 1:2; do
  r=${rt%:*} t=${rt#*:} tag=deblend_r${rt%:*}
  ((t == 1)) || tag=${tag}_t$t
  log "2. deblend, 16.7M-particle clustered snapshot, $r rank(s) x $t thread(s)"
  cat "$snap" >/dev/null
  run s2 "$tag" "$r" "$c/s2/peaks_${tag#deblend_}.h5" "particles=$n;threads=$t" \
    "$B/deblend" "$clumps" "$snap" -o "$c/s2/peaks_${tag#deblend_}.h5" --threads "$t" -q
done
peaks=$c/s2/peaks_r1.h5

# --- 3. voters -------------------------------------------------------------------------------------
if ((do_cvoters)); then
  log "3. voters --potential compute, clustered snapshot, 1 rank (the slow one: ~2-3 min)"
  cat "$snap" >/dev/null
  run s3 voters_clustered_compute 1 "$c/s3/voters_clustered_compute.h5" "snapshot=clustered;potential=compute" \
    "$B/voters" "$peaks" "$snap" -o "$c/s3/voters_clustered_compute.h5" --potential compute -q
  log "3. voters --potential profile (each peak's own spherical potential), clustered snapshot, 1 rank"
  run s3 voters_clustered_profile 1 "$c/s3/voters_clustered_profile.h5" "snapshot=clustered;potential=profile" \
    "$B/voters" "$peaks" "$snap" -o "$c/s3/voters_clustered_profile.h5" --potential profile -q
fi
if ((do_synth)); then
  sd=$c/s3/synth
  mkdir -p "$sd"
  ssnap=$out/synth_scene_bg1e7_h300_s5.hdf5  # cached like the other snapshots
  if [[ ! -s $ssnap || ! -s $ssnap.json ]]; then
    log "3. synth-particles: 1e7 background + 300 NFW halos with --potential --acceleration (once, ~2-3 min; cached)"
    "$PY" "$here/chain_scene.py" "$out/synth_scene_bg1e7_h300_s5.json" --background 1e7 --halos 300 --seed 5 >/dev/null
    /usr/bin/time -v -o "$out/synth_scene_bg1e7_h300_s5.time" \
      "$B/synth-particles" "$out/synth_scene_bg1e7_h300_s5.json" -o "$ssnap" -q
  fi
  log "3. synthetic snapshot through cic-project (2 ranks), phew-segment, phew-merge, deblend"
  cat "$ssnap" >/dev/null
  run s3 synth_cic 2 "$sd/grid.h5" "" "$B/cic-project" "$ssnap" -o "$sd/grid.h5" --grid 256 -q
  run s3 synth_seg 1 "$sd/patches.h5" "threshold=80mean" "$B/phew-segment" "$sd/grid.h5" -o "$sd/patches.h5" --threshold 80mean -q
  run s3 synth_merge 1 "$sd/clumps.h5" "" "$B/phew-merge" "$sd/patches.h5" -o "$sd/clumps.h5" --relevance 3 --saddle-threshold 200mean -q
  run s3 synth_deblend 1 "$sd/peaks.h5" "" "$B/deblend" "$sd/clumps.h5" "$ssnap" -o "$sd/peaks.h5" -q
  for pot in snapshot compute profile; do
    log "3. voters --potential $pot, synthetic snapshot, 1 rank"
    cat "$ssnap" >/dev/null
    run s3 "voters_synth_$pot" 1 "$sd/voters_$pot.h5" "snapshot=synthetic;potential=$pot" \
      "$B/voters" "$sd/peaks.h5" "$ssnap" -o "$sd/voters_$pot.h5" --potential "$pot" -q
  done
fi

# --- 4. mergertree on synthetic stages -------------------------------------------------------------
# Templates for the synthetic manifests: the real peaks.h5 of step 2 and a real voters.h5 of step 3.
tpl_voters=""
for v in "$c/s3/synth/voters_snapshot.h5" "$c/s3/voters_clustered_compute.h5"; do
  [[ -s $v.json ]] && { tpl_voters=$v; break; }
done
if [[ -z $tpl_voters ]]; then
  log "4. no voters.h5 from step 3 to use as a manifest template: quick voters run on the step-2 peaks"
  "$B/voters" "$peaks" "$snap" -o "$c/s4/template_voters.h5" --potential compute --search-radius 50 -q
  tpl_voters=$c/s4/template_voters.h5
fi
for spec in $tree_sizes; do
  IFS=: read -r np npk ns <<<"$spec"
  sdir=$c/s4/stages_n${np}_p${npk}_s$ns
  if ((regen)) || [[ ! -s $sdir/stages.json ]]; then
    log "4. generating synthetic stages: $np particles in patches, $npk peaks, $ns snapshots (cached)"
    rm -rf "$sdir"
    mkdir -p "$sdir"
    "$PY" "$here/mergertree_stages.py" "$sdir" --particles "$np" --peaks "$npk" --snapshots "$ns" \
      --template-peaks "$peaks" --template-voters "$tpl_voters" --remanifest "$B/remanifest" >"$sdir/stages.json.tmp"
    mv "$sdir/stages.json.tmp" "$sdir/stages.json"
  fi
  stages=()
  for ((i = 0; i < ns; i++)); do stages+=("$sdir/$(printf %03d "$i").peaks.h5"); done
  log "4. mergertree, $ns stages of $np particles / $npk peaks"
  cat "$sdir"/*.h5 >/dev/null
  run s4 "tree_n${np}_p${npk}_s$ns" 1 "$c/s4/tree_n${np}_p${npk}_s$ns.h5" "particles=$np;peaks=$npk;snapshots=$ns;stages=$sdir/stages.json" \
    "$B/mergertree" "${stages[@]}" -o "$c/s4/tree_n${np}_p${npk}_s$ns.h5" -v
  tree=$c/s4/tree_n${np}_p${npk}_s$ns.h5
  if [[ -f $tree ]]; then stat -c %s "$tree" >"$tree.size" && rm -f "$tree"; fi  # up to 2.4 GB; the manifest stays
done

log "done in $((SECONDS - t_start)) s; tables:"
"$PY" "$here/chain_table.py" "$c" "$out/chain_bench.json" --elapsed "$((SECONDS - t_start))"
