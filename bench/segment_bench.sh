#!/usr/bin/env bash
# Benchmark phew-segment against scikit-image's watershed (bench/segment_skimage.py). See bench/README.md.
#
#   bench/segment_bench.sh [--n N] [--seed S] [--grid G] [--big-grid G2] [--threshold T] [--out DIR]
#                          [--no-skimage] [--no-big] [--perf]
#
# Input: the clustered N-particle snapshot (bench/make_snapshot.py, cached) projected by cic-project
# (2 ranks) on G^3 and G2^3 grids (cached). Then, each under /usr/bin/time -v:
#   phew-1    phew-segment G^3 --threshold T, one rank, one thread
#   phew-2    mpirun -n 2 phew-segment G^3 (one thread per rank)
#   phew-1x2  one rank, 2 threads
#   skimage   skimage.segmentation.watershed(-density, markers at phew's peaks, connectivity=3, mask=test cells)
#   phew-2    mpirun -n 2 phew-segment G2^3 (memory: peak RSS per rank, bytes per cell beyond the density)
# --perf also profiles the 1-rank run with perf record (report in DIR/segment/perf.txt).
# Prints a table and writes DIR/segment_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3  # Debian's interpreter: has numpy, h5py (and python3-skimage)
CIC=${CIC:-$root/build/bin/cic-project}
SEG=${SEG:-$root/build/bin/phew-segment}
MPIRUN=${MPIRUN:-mpirun}

n=16777216   # 256^3 particles
seed=1
grid=256
big=512
threshold=0.5mean  # ~24% of the 256^3 cells of the clustered snapshot are test cells
out=$here/out
skimage=1
do_big=1
do_perf=0

while (($#)); do
  case $1 in
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --grid) grid=$2; shift 2 ;;
    --big-grid) big=$2; shift 2 ;;
    --threshold) threshold=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-skimage) skimage=0; shift ;;
    --no-big) do_big=0; shift ;;
    --perf) do_perf=1; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "segment_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "segment_bench: $*" >&2; }

for exe in "$CIC" "$SEG"; do
  [[ -x $exe ]] || { log "$exe not found: build it first (cmake --build build -j1)"; exit 1; }
done
if [[ ! -x /usr/bin/time ]]; then
  log "/usr/bin/time missing: installing Debian package 'time'"
  apt-get install -y time >/dev/null
fi
if ((skimage)) && ! "$PY" -c 'import skimage' 2>/dev/null; then
  log "scikit-image missing: installing Debian package 'python3-skimage'"
  apt-get install -y python3-skimage >/dev/null
fi
# Open MPI refuses to run as root unless told it is fine (containers).
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

mkdir -p "$out/segment"
out=$(cd "$out" && pwd)
d=$out/segment

# The cached clustered snapshot (regenerated only when missing; same name as cic_bench.sh's).
snap=$out/snap_clustered_n${n}_s$seed.hdf5
if [[ ! -s $snap ]]; then
  log "generating $snap"
  "$PY" "$root/bench/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed"
  mv "$snap.tmp" "$snap"
fi

# A cached grid (cic-project writes atomically; its manifest GRID.json must stay beside it).
make_grid() {  # cells -> path
  local path=$out/grid_clustered_n${n}_s${seed}_g$1.h5
  if [[ ! -s $path || ! -s $path.json ]]; then
    log "projecting the snapshot on $1^3 cells (cic-project, 2 ranks)"
    rm -f "$path" "$path.json"
    cat "$snap" >/dev/null
    "$MPIRUN" -n 2 "$CIC" "$snap" -o "$path" --grid "$1" -q
  fi
  echo "$path"
}

# phew-segment under /usr/bin/time; with 2 ranks each rank also runs under its own time (per-rank RSS).
run_phew() {  # tag ranks grid [threads per rank, default 1]
  local tag=$1 ranks=$2 g=$3 threads=${4:-1}
  rm -f "$d/$tag".h5* "$d/$tag".time*
  cat "$g" >/dev/null  # every run starts with the grid in the page cache
  if ((ranks == 1)); then
    /usr/bin/time -v -o "$d/$tag.time" "$SEG" "$g" -o "$d/$tag.h5" --threshold "$threshold" --threads "$threads" -q
  else
    # shellcheck disable=SC2016  # $0, $OMPI_COMM_WORLD_RANK and $@ expand in the per-rank shell
    /usr/bin/time -v -o "$d/$tag.time" "$MPIRUN" -n "$ranks" \
      sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$d/$tag.time" \
      "$SEG" "$g" -o "$d/$tag.h5" --threshold "$threshold" --threads "$threads" -q
  fi
}

# Run a private copy of phew-segment: the build tree may be rebuilt while the benchmark runs, and perf
# report must see the very binary that was recorded.
mkdir -p "$d/bin"
cp "$SEG" "$d/bin/phew-segment"
SEG=$d/bin/phew-segment
"$SEG" --version >"$d/version.txt" 2>&1 || true

g1=$(make_grid "$grid")
if ((do_big)); then g2=$(make_grid "$big"); fi

# --- Timed runs ------------------------------------------------------------------------------------
log "phew-segment $grid^3, 1 rank, threshold $threshold"
run_phew "phew1_g$grid" 1 "$g1"
log "phew-segment $grid^3, 2 ranks"
run_phew "phew2_g$grid" 2 "$g1"
log "phew-segment $grid^3, 1 rank, 2 threads"
run_phew "phew1x2_g$grid" 1 "$g1" 2
if ((skimage)); then
  log "skimage watershed $grid^3 (markers at phew's peaks)"
  cat "$g1" >/dev/null
  /usr/bin/time -v -o "$d/skimage_g$grid.time" "$PY" "$here/segment_skimage.py" "$g1" "$d/phew1_g$grid.h5" \
    --json "$d/skimage_g$grid.json"
fi
if ((do_big)); then
  log "phew-segment $big^3, 2 ranks (memory)"
  run_phew "phew2_g$big" 2 "$g2" || log "phew-segment on $big^3 failed (exit $?): see $d/phew2_g$big.time*"
fi
if ((do_perf)); then
  log "perf record of phew-segment $grid^3, 1 rank"
  rm -f "$d"/perf.h5* "$d"/perf.data*
  perf record -q -o "$d/perf.data" "$SEG" "$g1" -o "$d/perf.h5" --threshold "$threshold" --threads 1 -q 2>/dev/null
  perf report -i "$d/perf.data" --sort sym --percent-limit 1 --stdio 2>/dev/null |
    grep -E '^ +[0-9.]+%' | cut -c1-160 >"$d/perf.txt" || true
  rm -f "$d"/perf.h5*
fi

# --- Table and JSON --------------------------------------------------------------------------------
"$PY" - "$out" "$n" "$grid" "$big" "$threshold" "$skimage" "$do_big" "$do_perf" <<'EOF'
import json, re, sys
from pathlib import Path

import h5py
import numpy as np

out, n, grid, big, threshold = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
skimage, do_big, do_perf = sys.argv[6] == "1", sys.argv[7] == "1", sys.argv[8] == "1"
d = out / "segment"
SEG_PHASES = ("watershed", "saddles", "peaks")


def gnu_time(path):
    """Wall seconds and peak RSS (MiB) from a /usr/bin/time -v report."""
    text = path.read_text()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
    wall = 0.0
    for part in clock.split(":"):
        wall = wall * 60 + float(part)
    status = int(re.search(r"Exit status: (\d+)", text).group(1))
    return wall, rss, status


def cpu(path):
    """User + system CPU seconds and "Percent of CPU this job got" (low: other load on the machine)."""
    text = path.read_text()
    secs = sum(float(re.search(rf"{k} time \(seconds\): (\S+)", text).group(1)) for k in ("User", "System"))
    return secs, int(re.search(r"Percent of CPU this job got: (\d+)%", text).group(1))


def phew_row(tag, ranks, cells_side, threads=1):
    wall, rss, status = gnu_time(d / f"{tag}.time")
    rank_rss = [gnu_time(p)[1] for p in sorted(d.glob(f"{tag}.time.rank*"))] if ranks > 1 else [rss]
    rank_rss = rank_rss or [rss]  # a rank killed before its time wrote a report
    cells = cells_side ** 3
    per_rank = -(-cells_side // ranks) * cells_side ** 2  # owned cells of the largest slab
    cpu_s, cpu_pct = cpu(d / f"{tag}.time")
    row = {"runner": "phew", "ranks": ranks, "threads": threads, "grid": cells_side, "cells": cells, "exit_status": status,
           "cpu_s": cpu_s, "cpu_percent": cpu_pct,
           "wall_s": wall, "peak_rss_mib": sum(rank_rss), "peak_rss_per_rank_mib": rank_rss,
           "cells_per_rank": per_rank,
           "bytes_per_cell_beyond_density": max(rank_rss) * 2**20 / per_rank - 8}
    manifest_path = d / f"{tag}.h5.json"
    if status != 0 or not manifest_path.exists():
        row["failed"] = True
        return row
    m = json.loads(manifest_path.read_text())
    s, t = m["summary"], m["timings"]
    seg = sum(t[p] for p in SEG_PHASES)
    row.update({"timings_s": t, "segment_s": seg, "watershed_s": t["watershed"],
                "test_cells": s["n_test_cells"], "test_fraction": s["n_test_cells"] / cells,
                "peaks": s["n_peaks"], "saddles": s["n_saddles"], "label_rounds": s.get("label_rounds"),
                "peak_memory_rank0_bytes": s.get("peak_memory_rank0_bytes"),
                "test_cells_per_s_per_core": s["n_test_cells"] / seg / (ranks * threads)})
    return row


rows = [phew_row(f"phew1_g{grid}", 1, grid), phew_row(f"phew2_g{grid}", 2, grid), phew_row(f"phew1x2_g{grid}", 1, grid, 2)]
sk = None
if skimage:
    wall, rss, status = gnu_time(d / f"skimage_g{grid}.time")
    sk = json.loads((d / f"skimage_g{grid}.json").read_text())
    t = sk["timings"]
    cpu_s, cpu_pct = cpu(d / f"skimage_g{grid}.time")
    rows.append({"runner": "skimage", "ranks": 1, "threads": 1, "grid": grid, "cells": grid**3, "exit_status": status,
                 "cpu_s": cpu_s, "cpu_percent": cpu_pct,
                 "wall_s": wall, "peak_rss_mib": rss, "peak_rss_per_rank_mib": [rss], "cells_per_rank": grid**3,
                 "bytes_per_cell_beyond_density": rss * 2**20 / grid**3 - 8,
                 "timings_s": t, "segment_s": t["watershed"], "watershed_s": t["watershed"],
                 "test_cells": sk["n_test_cells"], "test_fraction": sk["n_test_cells"] / grid**3,
                 "peaks": sk["n_markers"], "saddles": None,
                 "test_cells_per_s_per_core": sk["n_test_cells"] / t["watershed"],
                 "agreement": sk["agreement"]})
if do_big:
    rows.append(phew_row(f"phew2_g{big}", 2, big))

# Speed relative to skimage (>1: phew is faster). Per core, since skimage uses one.
for r in rows:
    ok = sk is not None and r["grid"] == grid and not r.get("failed")
    base = next(b for b in rows if b["runner"] == "skimage") if ok else None
    r["x_skimage_segment_per_core"] = (r["test_cells_per_s_per_core"] / base["test_cells_per_s_per_core"]) if ok else None
    r["x_skimage_segment"] = (base["segment_s"] / r["segment_s"]) if ok else None
    r["x_skimage_watershed_only"] = (base["watershed_s"] / r["watershed_s"]) if ok else None
    r["x_skimage_wall"] = (base["wall_s"] / r["wall_s"]) if ok else None

# phew's labels must not depend on the number of ranks.
with h5py.File(d / f"phew1_g{grid}.h5", "r") as a, h5py.File(d / f"phew2_g{grid}.h5", "r") as b:
    rank_invariant = all(np.array_equal(a[k][...], b[k][...]) for k in ("/cells/index", "/cells/peak"))

version = (d / "version.txt").read_text().strip() if (d / "version.txt").exists() else None
result = {"phew_segment_version": version, "particles": n, "model": "clustered", "threshold": threshold, "grid": grid, "big_grid": big if do_big else None,
          "segment_phases": list(SEG_PHASES), "target_bytes_per_cell_beyond_density": 16,
          "labels_identical_1_vs_2_ranks": rank_invariant, "runs": rows}
if sk:
    result["agreement_skimage_vs_phew"] = sk["agreement"]
(out / "segment_bench.json").write_text(json.dumps(result, indent=2) + "\n")

x = lambda v, f="{:.2f}": "-" if v is None else f.format(v)
r0 = rows[0]
print(f"\nphew-segment on the clustered {n:,}-particle snapshot, threshold {threshold}: "
      f"{x(r0.get('test_fraction'), '{:.1%}')} of the {grid}^3 cells are test cells")
head = ("runner", "ranks", "thr", "grid", "test cells", "peaks", "saddles", "wall s", "CPU%", "seg s", "ws s",
        "Mcell/s/core", "RSS MiB", "RSS/rank", "B/cell>rho", "x sk seg", "x sk seg/core", "x sk wall")
fmt = "{:<8} {:>5} {:>3} {:>5} {:>11} {:>9} {:>9} {:>7} {:>4} {:>6} {:>6} {:>12} {:>8} {:>8} {:>10} {:>8} {:>13} {:>9}"
print(fmt.format(*head))
for r in rows:
    if r.get("failed"):
        print(fmt.format(r["runner"], r["ranks"], r["threads"], r["grid"], "FAILED", "-", "-", f"{r['wall_s']:.2f}", r["cpu_percent"], "-", "-", "-",
                         f"{r['peak_rss_mib']:.0f}", f"{max(r['peak_rss_per_rank_mib']):.0f}",
                         f"{r['bytes_per_cell_beyond_density']:.1f}", "-", "-", "-"))
        continue
    print(fmt.format(r["runner"], r["ranks"], r["threads"], r["grid"], f"{r['test_cells']:,}", f"{r['peaks']:,}",
                     "-" if r["saddles"] is None else f"{r['saddles']:,}", f"{r['wall_s']:.2f}", r["cpu_percent"],
                     f"{r['segment_s']:.2f}", f"{r['watershed_s']:.2f}", f"{r['test_cells_per_s_per_core'] / 1e6:.3f}",
                     f"{r['peak_rss_mib']:.0f}", f"{max(r['peak_rss_per_rank_mib']):.0f}",
                     f"{r['bytes_per_cell_beyond_density']:.1f}", x(r["x_skimage_segment"]), x(r["x_skimage_segment_per_core"]),
                     x(r["x_skimage_wall"])))
print("\nphases (s):")
for r in rows:
    if "timings_s" in r:
        print(f"  {r['runner']:<8} {r['ranks']} rank(s) x {r['threads']} thread(s) {r['grid']}^3: " +
              ", ".join(f"{k} {v:.2f}" for k, v in r["timings_s"].items()))
if sk:
    a = sk["agreement"]
    print(f"\nagreement (skimage vs phew, {grid}^3): same label on {a['fraction_same_label']:.4%} of the test cells, "
          f"{a['fraction_same_label_interior']:.4%} more than 2 cells from a face; "
          f"{a['unlabelled_by_skimage']:,} left unlabelled by skimage (no periodic wrap)")
print(f"labels identical with 1 and 2 ranks: {'yes' if rank_invariant else 'NO'}")
if do_big:
    b = rows[-1]
    verdict = "meets" if b["bytes_per_cell_beyond_density"] <= 16 and not b.get("failed") else "misses"
    print(f"memory {big}^3, 2 ranks: peak RSS per rank " + ", ".join(f"{v:.0f}" for v in b["peak_rss_per_rank_mib"]) +
          f" MiB for {b['cells_per_rank']:,} cells/rank ({x(b.get('test_fraction'), '{:.1%}')} test cells)"
          f" = {b['bytes_per_cell_beyond_density']:.1f} B/cell beyond "
          f"8 B of density: {verdict} the 16 B/cell aim" + (" (run FAILED)" if b.get("failed") else ""))
if do_perf and (d / "perf.txt").exists():
    print("\nperf (phew-segment, 1 rank, self time >= 1%):")
    print("\n".join(l.rstrip() for l in (d / "perf.txt").read_text().splitlines()[:15]))
print(f"\nwrote {out / 'segment_bench.json'}")
EOF
