#!/usr/bin/env bash
# unbind and the chain before it, per particle, against ROCKSTAR's anchor figures (issue 32). See
# bench/README.md ("unbind_bench.sh").
#
#   bench/unbind_bench.sh [--out DIR] [--n N] [--seed S] [--grid G] [--ranks "1 2"]
#
# On the cached clustered snapshot of cic_bench.sh (N particles, default 128^3 = 2,097,152: the size of
# ROCKSTAR's anchor), cic-project --grid G -> phew-segment 80mean -> phew-merge -> unbind, with the
# profile potential and with the tree, at each rank count. Every run under /usr/bin/time -v (2 ranks:
# each rank too, peak RSS summed). Prints a table and writes DIR/unbind/unbind_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
BUILD_BIN=${BUILD_BIN:-$root/build/bin}
MPIRUN=${MPIRUN:-mpirun}
# shellcheck source=bench/timed.sh
source "$here/timed.sh"

n=2097152
seed=1
out=$here/out
grid=256
ranks_list="1 2"
# ROCKSTAR on one core of this kind of machine, 2.1 M particles (issue 32): 6-D FoF, unbinding, properties.
rockstar_rate=455000
rockstar_bytes=52

while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --ranks) ranks_list=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unbind_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "unbind_bench: $(date +%T) $*" >&2; }
tools="cic-project phew-segment phew-merge unbind"
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

snap=$out/snap_clustered_n${n}_s$seed.hdf5
if [[ ! -s $snap ]]; then
  log "generating $snap (bench/make_snapshot.py)"
  "$PY" "$root/bench/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed"
  mv "$snap.tmp" "$snap"
fi
cat "$snap" >/dev/null

run() {  # STEP RANKS OUTPUT CMD...: timed; one line in runs.tsv
  local step=$1 ranks=$2 output=$3 status=0
  shift 3
  local tag=${step}_r$ranks
  timed "$c/$tag.time" "$c/$tag.log" "$ranks" "$@" || status=$?
  ((status == 0)) || log "$tag failed (exit $status): see $c/$tag.log"
  printf '%s\t%s\t%s\t%s\t%s\n' "$step" "$ranks" "$output" "$status" "$c/$tag.time" >>"$runs"
}

for r in $ranks_list; do
  s=$c/r$r
  log "$r rank(s): cic-project --grid $grid, phew-segment, phew-merge, unbind (profile, tree)"
  run cic-project "$r" "$s.grid.h5" "$B/cic-project" "$snap" -o "$s.grid.h5" --grid "$grid" -q
  run phew-segment "$r" "$s.patches.h5" "$B/phew-segment" "$s.grid.h5" -o "$s.patches.h5" --threshold 80mean -q
  run phew-merge "$r" "$s.clumps.h5" "$B/phew-merge" "$s.patches.h5" -o "$s.clumps.h5" --relevance 3 --saddle-threshold 200mean -q
  run unbind-profile "$r" "$s.bound.h5" "$B/unbind" "$s.clumps.h5" "$snap" -o "$s.bound.h5" --threads 1 -q
  run unbind-tree "$r" "$s.bound_tree.h5" "$B/unbind" "$s.clumps.h5" "$snap" -o "$s.bound_tree.h5" --potential tree --threads 1 -q
done

"$PY" - "$runs" "$c/unbind_bench.json" "$n" "$grid" "$rockstar_rate" "$rockstar_bytes" "$here" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[7])
from timefile import peak_bytes, wall_seconds
runs_file, out_json, n, grid, rockstar_rate, rockstar_bytes = sys.argv[1:7]
n, rockstar_rate, rockstar_bytes = int(n), float(rockstar_rate), float(rockstar_bytes)
rows = []
for line in open(runs_file):
    step, ranks, output, status, tf = line.rstrip("\n").split("\t")
    row = {"step": step, "ranks": int(ranks), "status": int(status)}
    if row["status"] == 0:
        row["wall_s"], row["peak_bytes"] = wall_seconds(tf), peak_bytes(tf)
        row["bytes_per_particle"] = row["peak_bytes"] / n
        summ = json.load(open(output + ".json")).get("summary", {})
        for k in ("n_haloes", "n_objects", "n_bound", "n_bound_particles"):
            if k in summ:
                row[k] = summ[k]
    rows.append(row)
print(f"{n:,} clustered particles, grid {grid}^3; ROCKSTAR anchor: {rockstar_rate:,.0f} particles/s/core, {rockstar_bytes:g} B/particle\n")
print(f"{'step':15} {'ranks':>5} {'wall s':>8} {'Mparticles/s/core':>18} {'B/particle':>11}")
for r in rows:
    if r["status"]:
        print(f"{r['step']:15} {r['ranks']:>5} FAILED (exit {r['status']})")
        continue
    print(f"{r['step']:15} {r['ranks']:>5} {r['wall_s']:8.2f} {n / r['wall_s'] / r['ranks'] / 1e6:18.3f} {r['bytes_per_particle']:11.1f}")
chains = []
for ranks in sorted({r["ranks"] for r in rows}):
    for pot in ("profile", "tree"):
        steps = [r for r in rows if r["ranks"] == ranks and (r["step"] in ("cic-project", "phew-segment", "phew-merge") or r["step"] == f"unbind-{pot}")]
        if any(r["status"] for r in steps) or len(steps) != 4:
            continue
        wall = sum(r["wall_s"] for r in steps)
        peak = max(r["bytes_per_particle"] for r in steps)
        rate = n / wall / ranks
        chains.append({"ranks": ranks, "potential": pot, "wall_s": wall, "particles_per_s_per_core": rate,
                       "peak_bytes_per_particle": peak, "x_rockstar_speed": rate / rockstar_rate,
                       "x_rockstar_memory": peak / rockstar_bytes})
print(f"\n{'chain + unbind':15} {'ranks':>5} {'wall s':>8} {'particles/s/core':>17} {'x ROCKSTAR':>11} {'B/particle':>11} {'x ROCKSTAR':>11}")
for ch in chains:
    print(f"{ch['potential']:15} {ch['ranks']:>5} {ch['wall_s']:8.2f} {ch['particles_per_s_per_core']:17,.0f} "
          f"{ch['x_rockstar_speed']:11.2f} {ch['peak_bytes_per_particle']:11.1f} {ch['x_rockstar_memory']:11.2f}")
json.dump({"particles": n, "grid": int(grid), "rockstar_particles_per_s": rockstar_rate, "rockstar_bytes_per_particle": rockstar_bytes,
           "runs": rows, "chains": chains}, open(out_json, "w"), indent=1)
print(f"\nwrote {out_json}")
EOF
