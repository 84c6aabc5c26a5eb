#!/usr/bin/env bash
# Benchmarks of dtfe-surface (see bench/README.md, section dtfe-surface).
#
#   bench/dtfe_bench.sh [--n N] [--fields F] [--out DIR] [--skip kernel,e2e,qhull,dist,sim]
#
#   kernel  build/bin/dtfe_kernel: triangulation rate (CGAL 1 and 2 threads, Qhull), ray marching at
#           1 and 2 threads, the exact pixel average, and the walking 3-D grid alternative at matched
#           accuracy, for 10^5 and 10^6 clustered points and 1024^2 pixels;
#   e2e     the tool end to end on an N-particle clustered snapshot (bench/make_snapshot.py, default
#           10^6): one 1024^2 map through the whole box, 2 threads, under /usr/bin/time -v (wall,
#           peak RSS); with CGAL and (unless skipped) with Qhull;
#   dist    F small fields (default 2000, side box/50, 64^2 pixels) centred on particles of the 1 %
#           densest cells (galaxy-galaxy-lensing-like), on 1-4 ranks, one thread each, schedules none,
#           model and dynamic;
#   sim     build/bin/dtfe_schedule_sim on the 1-rank run's per-field costs, tiled 5^3 times (250,000
#           fields, like the paper's 233,230), for 64-16384 ranks.
# Writes DIR (default bench/out/dtfe) and prints the tables.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
BIN=${BIN:-$root/build/bin}
MPIRUN=${MPIRUN:-mpirun}
n=1000000
fields=2000
out=$here/out/dtfe
skip=""
while (($#)); do
  case $1 in
    --n) n=$2; shift 2 ;;
    --fields) fields=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "dtfe_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1
skipped() { [[ ",$skip," == *",$1,"* ]]; }
timed() {  # timed NAME CMD...: runs under /usr/bin/time -v into $out/NAME.time
  local name=$1
  shift
  /usr/bin/time -v -o "$out/$name.time" "$@"
  awk -F': ' '/Elapsed \(wall clock\)/ {w=$2} /Maximum resident set size/ {r=$2} END {printf "%s wall, %.0f MiB peak RSS\n", w, r/1024}' "$out/$name.time"
}

if ! skipped kernel; then
  echo "== kernel (dtfe_kernel, 1024^2 pixels)"
  "$BIN/dtfe_kernel" --n 100000,1000000 --ng 1024 --json "$out/kernel.json" | tee "$out/kernel.txt"
fi

snap=$out/snap_clustered_n${n}.hdf5
if [[ ! -f $snap ]]; then
  $PY "$here/make_snapshot.py" "$snap" --model clustered --n "$n" --seed 1 >/dev/null
fi
box=$($PY -c 'import h5py,sys; print(h5py.File(sys.argv[1])["Header"].attrs["BoxSize"])' "$snap")
cat "$snap" >/dev/null  # from the page cache from now on

if ! skipped e2e; then
  echo "== end to end: $n clustered particles, one 1024^2 map through the whole box, 2 threads"
  half=$($PY -c "print($box / 2)")
  echo "$half $half $half" > "$out/centre.txt"
  for backend in cgal qhull; do
    if [[ $backend == qhull ]] && skipped qhull; then continue; fi
    printf '%-6s ' "$backend"
    timed "e2e_$backend" "$BIN/dtfe-surface" "$snap" -o "$out/e2e_$backend.h5" --centers "$out/centre.txt" \
      --size "$box" --depth box --margin 0 --resolution 1024 --threads 2 --backend "$backend" -q
  done
  $PY - "$out" "$n" <<'PY'
import json, sys, pathlib
out, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
for f in sorted(out.glob("e2e_*.h5.json")):
    m = json.loads(f.read_text())
    t = m["timings"]; s = m["summary"]
    rss = [l for l in (out / (f.name[:-8] + ".time")).read_text().splitlines() if "Maximum resident" in l][0].split(": ")[1]
    print(f"{f.name[4:-8]:6s} phases " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()) +
          f" s; {int(rss) * 1024 / n:.0f} bytes/particle; map mass / particle mass = {s['map_mass'] / s['window_mass']:.5f};"
          f" {s['tetrahedra_crossed'] / s['rays']:.0f} tetrahedra per ray")
PY
fi

if ! skipped dist; then
  echo "== distributed: $fields fields in the densest regions, one thread per rank"
  # Centres: random particles of the 1 % densest cells of a 64^3 histogram (seeded).
  $PY - "$snap" "$out/dense_centres.txt" "$fields" <<'PY'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1]); box = f["Header"].attrs["BoxSize"]
x = f["PartType1/Coordinates"][...].astype(np.float64)
g = 64
cell = np.minimum((x / box * g).astype(int), g - 1)
key = (cell[:, 0] * g + cell[:, 1]) * g + cell[:, 2]
count = np.bincount(key, minlength=g ** 3)
dense = count >= np.quantile(count[count > 0], 0.99)
pick = np.flatnonzero(dense[key])
rng = np.random.default_rng(7)
np.savetxt(sys.argv[2], x[rng.choice(pick, int(sys.argv[3]), replace=False)], fmt="%.3f")
PY
  size=$($PY -c "print($box / 50)")
  args=(--centers "$out/dense_centres.txt" --size "$size" --resolution 64 --threads 1 -q)
  for run in "1 none" "2 none" "2 model" "2 dynamic" "3 none" "3 model" "3 dynamic" "4 none" "4 model" "4 dynamic"; do
    read -r np sched <<<"$run"
    printf 'np %s %-8s ' "$np" "$sched"
    timed "dist_np${np}_$sched" "$MPIRUN" -n "$np" "$BIN/dtfe-surface" "$snap" -o "$out/dist_np${np}_$sched.h5" "${args[@]}" --schedule "$sched"
  done
  $PY - "$out" <<'PY'
import json, sys, pathlib, h5py, numpy as np
out = pathlib.Path(sys.argv[1])
base = None
print(f"{'ranks':>5} {'schedule':>8} {'fields s':>9} {'busy max':>9} {'busy mean':>9} {'moved':>6} {'x none':>7}")
for np_ in (1, 2, 3, 4):
    none = None
    for s in ("none", "model", "dynamic"):
        f = out / f"dist_np{np_}_{s}.h5.json"
        if not f.exists():
            continue
        m = json.loads(f.read_text())
        t = m["timings"]["fields"]; sch = m["summary"]["schedule"]
        none = t if s == "none" else none
        print(f"{np_:5d} {s:>8} {t:9.2f} {sch['busy_seconds_max']:9.2f} {sch['busy_seconds_mean']:9.2f} {sch['fields_moved']:6d} {none / t:7.2f}")
# The model's prediction error on the 4-rank model run (measured vs predicted per field).
with h5py.File(out / "dist_np4_model.h5") as f:
    pred = f["timing/predicted"][...]; act = f["timing/triangulation"][...] + f["timing/interpolation"][...]
    keep = pred > 0
    e = (pred[keep] - act[keep]) / act[keep]
    print(f"model (4 ranks, {keep.sum()} predicted fields): relative error mean {100 * e.mean():+.1f} %, median {100 * np.median(e):+.1f} %,"
          f" |error| < 25 % for {100 * (abs(e) < 0.25).mean():.0f} %")
PY
fi

if ! skipped sim; then
  echo "== simulated schedules (measured costs of the 1-rank run, tiled 5^3)"
  "$BIN/dtfe_schedule_sim" "$out/dist_np1_none.h5" --tile 5 --json "$out/sim.json" | tee "$out/sim.txt"
fi
