#!/usr/bin/env bash
# The adaptive mesh against the uniform grid it replaces: cic-project -> phew-segment -> phew-merge on
# the cached clustered snapshot, --grid 128 --refine 8 --levels 4 (2048^3 effective) against --grid 512,
# on 1 and 2 ranks. See bench/README.md ("amr_bench.sh").
#
#   bench/amr_bench.sh [--out DIR] [--n N] [--seed S] [--threshold T] [--ranks "1 2"] [--amr "OPTIONS"]
#                      [--uniform "OPTIONS"]
#
# Every run is under /usr/bin/time -v (2 ranks: each rank too, peak RSS summed); phases, leaves and
# test cells come from the output manifests. Prints a table and writes DIR/amr/amr_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
BUILD_BIN=${BUILD_BIN:-$root/build/bin}
MPIRUN=${MPIRUN:-mpirun}
# shellcheck source=bench/timed.sh
source "$here/timed.sh"

n=16777216   # 256^3 particles: the snapshot of cic_bench.sh and chain_bench.sh
seed=1
out=$here/out
threshold=80mean
ranks_list="1 2"
amr_opts="--grid 128 --refine 8 --levels 4"
uniform_opts="--grid 512"

while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --threshold) threshold=$2; shift 2 ;;
    --ranks) ranks_list=$2; shift 2 ;;
    --amr) amr_opts=$2; shift 2 ;;
    --uniform) uniform_opts=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "amr_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "amr_bench: $(date +%T) $*" >&2; }
for t in cic-project phew-segment phew-merge; do
  [[ -x $BUILD_BIN/$t ]] || { log "$BUILD_BIN/$t not found: build it first"; exit 1; }
done
[[ -x /usr/bin/time ]] || { log "installing Debian package 'time'"; apt-get install -y time >/dev/null; }
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

mkdir -p "$out/amr"
out=$(cd "$out" && pwd)
c=$out/amr
rm -rf "${c:?}/bin"
mkdir -p "$c/bin"
for t in cic-project phew-segment phew-merge; do cp "$BUILD_BIN/$t" "$c/bin/$t"; done
B=$c/bin
runs=$c/runs.tsv
: >"$runs"

snap=$out/snap_clustered_n${n}_s$seed.hdf5
if [[ ! -s $snap ]]; then
  log "generating $snap (bench/make_snapshot.py)"
  "$PY" "$root/bench/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed"
  mv "$snap.tmp" "$snap"
fi
cat "$snap" >/dev/null  # every run starts from the page cache

# run MESH TOOL RANKS OUTPUT CMD...: under /usr/bin/time -v; one line in runs.tsv.
run() {  # MESH TOOL RANKS OUTPUT CMD...: timed; one line in runs.tsv
  local mesh=$1 tool=$2 ranks=$3 output=$4 status=0
  shift 4
  local tag=${mesh}_${tool}_r$ranks
  TIMED_OUTPUT=$output timed "$c/$tag.time" "$c/$tag.log" "$ranks" "$@" || status=$?
  ((status == 0)) || log "$tag failed (exit $status): see $c/$tag.log"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$mesh" "$tool" "$ranks" "$output" "$status" "$c/$tag.time" >>"$runs"
}

chain() {  # MESH RANKS CIC_OPTIONS...
  local mesh=$1 ranks=$2
  shift 2
  local s=$c/${mesh}_r$ranks
  log "$mesh mesh ($*), $ranks rank(s)"
  run "$mesh" cic-project "$ranks" "$s.grid.h5" "$B/cic-project" "$snap" -o "$s.grid.h5" "$@" -q
  run "$mesh" phew-segment "$ranks" "$s.patches.h5" "$B/phew-segment" "$s.grid.h5" -o "$s.patches.h5" --threshold "$threshold" -q
  run "$mesh" phew-merge "$ranks" "$s.clumps.h5" "$B/phew-merge" "$s.patches.h5" -o "$s.clumps.h5" --relevance 3 --saddle-threshold 200mean -q
}

for r in $ranks_list; do
  # shellcheck disable=SC2086  # the options are words
  chain uniform "$r" $uniform_opts
  # shellcheck disable=SC2086
  chain adaptive "$r" $amr_opts
done

"$PY" - "$runs" "$c/amr_bench.json" "$n" "$amr_opts" "$uniform_opts" "$threshold" "$here" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[7])
from timefile import peak_bytes, wall_seconds
runs_file, out_json, n, amr_opts, uniform_opts, threshold = sys.argv[1:7]
n = int(n)
rows = []
for line in open(runs_file):
    mesh, tool, ranks, output, status, tf = line.rstrip("\n").split("\t")
    row = {"mesh": mesh, "tool": tool, "ranks": int(ranks), "status": int(status)}
    if row["status"] == 0:
        row["wall_s"] = wall_seconds(tf)
        row["peak_rss_mib"] = peak_bytes(tf) / 2**20
        row["bytes_per_particle"] = peak_bytes(tf) / n
        man = json.load(open(output + ".json"))
        summ = man.get("summary", {})
        for k in ("leaves_per_level", "n_test_cells", "n_peaks", "n_saddles", "n_haloes", "n_clumps_level0"):
            if k in summ:
                row[k] = summ[k]
    rows.append(row)
chains = {}
for r in rows:
    key = (r["mesh"], r["ranks"])
    ch = chains.setdefault(key, {"mesh": r["mesh"], "ranks": r["ranks"], "wall_s": 0.0, "peak_rss_mib": 0.0, "ok": True})
    ch["ok"] &= r["status"] == 0
    ch["wall_s"] += r.get("wall_s", 0)
    ch["peak_rss_mib"] = max(ch["peak_rss_mib"], r.get("peak_rss_mib", 0))
print(f"{n:,} particles, threshold {threshold}; adaptive: {amr_opts}; uniform: {uniform_opts}\n")
print(f"{'mesh':9} {'ranks':>5} {'tool':13} {'wall s':>8} {'peak MiB':>9} {'B/particle':>10}  counts")
for r in rows:
    counts = ", ".join(f"{k} {sum(v) if isinstance(v, list) else v:,}" for k, v in r.items()
                       if k in ("leaves_per_level", "n_test_cells", "n_peaks", "n_haloes"))
    if "leaves_per_level" in r:
        counts += f" (per level {r['leaves_per_level']})"
    print(f"{r['mesh']:9} {r['ranks']:>5} {r['tool']:13} {r.get('wall_s', float('nan')):8.2f} "
          f"{r.get('peak_rss_mib', float('nan')):9.0f} {r.get('bytes_per_particle', float('nan')):10.1f}  "
          f"{counts if r['status'] == 0 else 'FAILED (exit %d)' % r['status']}")
print(f"\n{'chain':9} {'ranks':>5} {'wall s':>8} {'peak MiB':>9}  adaptive / uniform")
for (mesh, ranks), ch in sorted(chains.items()):
    other = chains.get(("uniform", ranks))
    ratio = ""
    if mesh == "adaptive" and other and other["wall_s"] > 0:
        ratio = f"time x{ch['wall_s'] / other['wall_s']:.2f}, memory x{ch['peak_rss_mib'] / other['peak_rss_mib']:.2f}"
    print(f"{mesh:9} {ranks:>5} {ch['wall_s']:8.2f} {ch['peak_rss_mib']:9.0f}  {ratio}")
json.dump({"particles": n, "threshold": threshold, "adaptive_options": amr_opts, "uniform_options": uniform_opts,
           "runs": rows, "chains": list(chains.values())}, open(out_json, "w"), indent=1)
print(f"\nwrote {out_json}")
EOF
