#!/usr/bin/env bash
# Benchmark cic-project against a straightforward numpy CIC (bench/cic_numpy.py). See bench/README.md.
#
#   bench/cic_bench.sh [--n N] [--grid G] [--seed S] [--out DIR] [--models "uniform clustered"] [--no-numpy]
#
# For each model: generate (or reuse) an N-particle snapshot with bench/make_snapshot.py, then run
#   phew-1   cic-project --grid G, one rank, one thread
#   phew-2   mpirun -n 2 cic-project --grid G, one thread per rank
#   phew-1x2 one rank, 2 threads
#   numpy    bench/cic_numpy.py --grid G
# each under /usr/bin/time -v (wall time, peak RSS), and collect cic-project's phase timings from its
# manifest (OUTPUT.json). A small agreement check (numpy vs cic-project --precision float64) runs first.
# Prints a table and writes DIR/cic_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3  # Debian's interpreter: has numpy and h5py
CIC=${CIC:-$root/build/bin/cic-project}
MPIRUN=${MPIRUN:-mpirun}

n=16777216   # 256^3
grid=256
seed=1
out=$here/out
models="uniform clustered"
numpy=1
check_n=2097152  # agreement check: 128^3 particles, clustered, on a 64^3 grid
check_grid=64

while (($#)); do
  case $1 in
    --n) n=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-numpy) numpy=0; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cic_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "cic_bench: $*" >&2; }

[[ -x $CIC ]] || { log "$CIC not found: build it first (cmake --build build -j1)"; exit 1; }
if [[ ! -x /usr/bin/time ]]; then
  log "/usr/bin/time missing: installing Debian package 'time'"
  apt-get install -y time >/dev/null
fi
# Open MPI refuses to run as root unless told it is fine (containers).
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

# A cached snapshot of the given model and size (regenerated only when missing).
snapshot() {  # model n -> path
  local path=$out/snap_$1_n$2_s$seed.hdf5
  if [[ ! -s $path ]]; then
    log "generating $path"
    "$PY" "$root/bench/make_snapshot.py" "$path.tmp" --model "$1" --n "$2" --seed "$seed"
    mv "$path.tmp" "$path"
  fi
  echo "$path"
}

# --- Agreement: numpy vs cic-project, float64, small case ----------------------------------------
check_snap=$(snapshot clustered "$check_n")
mkdir -p "$out/check"
log "agreement check: $check_n particles on $check_grid^3"
"$CIC" "$check_snap" -o "$out/check/phew.h5" --grid "$check_grid" --precision float64 -q
"$PY" "$here/cic_numpy.py" "$check_snap" --grid "$check_grid" --compare "$out/check/phew.h5" \
  --json "$out/check/numpy.json"

# --- Timed runs ------------------------------------------------------------------------------------
for model in $models; do
  snap=$(snapshot "$model" "$n")
  cat "$snap" >/dev/null  # every runner starts with the snapshot in the page cache
  d=$out/$model
  mkdir -p "$d"

  log "$model: cic-project, 1 rank"
  rm -f "$d"/phew1.h5*
  /usr/bin/time -v -o "$d/phew1.time" "$CIC" "$snap" -o "$d/phew1.h5" --grid "$grid" --threads 1 -q

  log "$model: cic-project, 1 rank, 2 threads"
  rm -f "$d"/phew1x2.h5*
  /usr/bin/time -v -o "$d/phew1x2.time" "$CIC" "$snap" -o "$d/phew1x2.h5" --grid "$grid" --threads 2 -q

  log "$model: cic-project, 2 ranks"
  rm -f "$d"/phew2.h5* "$d"/phew2.time*
  # The outer time gives the wall time; one inner time per rank gives each rank's peak RSS.
  # shellcheck disable=SC2016  # $0, $OMPI_COMM_WORLD_RANK and $@ expand in the per-rank shell
  /usr/bin/time -v -o "$d/phew2.time" "$MPIRUN" -n 2 \
    sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$d/phew2.time" \
    "$CIC" "$snap" -o "$d/phew2.h5" --grid "$grid" --threads 1 -q

  if ((numpy)); then
    log "$model: numpy (np.add.at)"
    /usr/bin/time -v -o "$d/numpy.time" "$PY" "$here/cic_numpy.py" "$snap" --grid "$grid" --json "$d/numpy.json"
  fi
done

# --- Table and JSON --------------------------------------------------------------------------------
"$PY" - "$out" "$n" "$grid" "$models" "$check_n" "$check_grid" <<'EOF'
import json, re, sys
from pathlib import Path

out, n, grid, models, check_n, check_grid = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(), int(sys.argv[5]), int(sys.argv[6])


def gnu_time(path):
    """Wall seconds and peak RSS (MiB) from a /usr/bin/time -v report."""
    text = path.read_text()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
    wall = 0.0
    for part in clock.split(":"):
        wall = wall * 60 + float(part)
    return wall, rss


rows = []
for model in models:
    d = out / model
    for runner, ranks, threads in (("phew", 1, 1), ("phew", 2, 1), ("phew", 1, 2), ("numpy", 1, 1)):
        if runner == "phew":
            tag = f"phew{ranks}" + (f"x{threads}" if threads > 1 else "")
            wall, rss = gnu_time(d / f"{tag}.time")
            if ranks > 1:  # sum of the ranks' peaks: what the node needs
                per_rank = [gnu_time(p)[1] for p in sorted(d.glob(f"{tag}.time.rank*"))]
                rss = sum(per_rank)
            manifest = json.loads((d / f"{tag}.h5.json").read_text())
            timings = manifest["timings"]
            if manifest["summary"]["n_particles"] != n:
                sys.exit(f"{d / tag}: deposited {manifest['summary']['n_particles']} particles, expected {n}")
        else:
            if not (d / "numpy.json").exists():
                continue
            wall, rss = gnu_time(d / "numpy.time")
            timings = json.loads((d / "numpy.json").read_text())["timings"]
        deposit = timings["deposit"]
        # cic-project files each chunk of particles by plane as it reads it (the sort is in "read"), so
        # read + deposit is the fair figure beside the deposit alone.
        read_deposit = timings.get("read", 0.0) + deposit
        rows.append({
            "model": model, "runner": runner, "ranks": ranks, "threads": threads, "particles": n, "grid": grid,
            "wall_s": wall, "timings_s": timings, "deposit_s": deposit, "read_deposit_s": read_deposit,
            "mparticles_per_s_read_deposit_per_core": n / read_deposit / 1e6 / (ranks * threads),
            "mparticles_per_s_end_to_end": n / wall / 1e6,
            "mparticles_per_s_deposit": n / deposit / 1e6,
            "mparticles_per_s_deposit_per_core": n / deposit / 1e6 / (ranks * threads),
            "peak_rss_mib": rss,
        })

for r in rows:
    base = next((b for b in rows if b["model"] == r["model"] and b["runner"] == "numpy"), None)
    r["speedup_vs_numpy_wall"] = base["wall_s"] / r["wall_s"] if base else None
    r["speedup_vs_numpy_deposit"] = base["deposit_s"] / r["deposit_s"] if base else None

check = json.loads((out / "check" / "numpy.json").read_text())["compare"]
result = {"particles": n, "grid": grid, "target_mparticles_per_s_per_core_deposit": 30.0,
          "agreement": {"particles": check_n, "grid": check_grid, **check}, "runs": rows}
(out / "cic_bench.json").write_text(json.dumps(result, indent=2) + "\n")

head = ("model", "runner", "ranks", "thr", "wall s", "deposit s", "read+dep s", "Mp/s e2e", "Mp/s dep", "Mp/s/core dep",
        "Mp/s/core r+d", "peak RSS MiB", "x numpy wall", "x numpy dep")
fmt = "{:<10} {:<6} {:>5} {:>3} {:>7} {:>9} {:>10} {:>8} {:>8} {:>13} {:>13} {:>12} {:>12} {:>11}"
print(f"\nCIC of {n:,} particles on {grid}^3 (phew timings from the manifest; numpy deposit timed in-process)")
print(fmt.format(*head))
x = lambda v: "-" if v is None else f"{v:.2f}"
for r in rows:
    print(fmt.format(r["model"], r["runner"], r["ranks"], r["threads"], f"{r['wall_s']:.2f}", f"{r['deposit_s']:.2f}",
                     f"{r['read_deposit_s']:.2f}", f"{r['mparticles_per_s_end_to_end']:.2f}", f"{r['mparticles_per_s_deposit']:.2f}",
                     f"{r['mparticles_per_s_deposit_per_core']:.2f}", f"{r['mparticles_per_s_read_deposit_per_core']:.2f}",
                     f"{r['peak_rss_mib']:.0f}",
                     x(r["speedup_vs_numpy_wall"]), x(r["speedup_vs_numpy_deposit"])))
print("\nphases (s):")
for r in rows:
    print(f"  {r['model']:<10} {r['runner']:<6} {r['ranks']}x{r['threads']}: " +
          ", ".join(f"{k} {v:.2f}" for k, v in r["timings_s"].items()))
print(f"\nagreement (numpy vs cic-project float64, {check_n:,} particles, {check_grid}^3): "
      f"max per-cell relative difference {check['max_rel_diff_per_cell']:.2e}, "
      f"max |diff| / max density {check['max_rel_diff_to_max']:.2e}")
slow = [r for r in rows if r["runner"] == "phew" and r["mparticles_per_s_deposit_per_core"] < 30.0]
if slow:
    print("below the 30 Mparticles/s/core deposit target: " +
          ", ".join(f"{r['model']} {r['ranks']} rank(s) x {r['threads']} thread(s) ({r['mparticles_per_s_deposit_per_core']:.1f})" for r in slow))
print(f"\nwrote {out / 'cic_bench.json'}")
EOF
