#!/usr/bin/env bash
# Sparse cell labels: what patches.h5 and clumps.h5 cost on disk and in memory, before and
# after, side by side in one run. See bench/README.md.
#
#   BEFORE_BIN=DIR bench/labels_bench.sh [--after DIR] [--out DIR] [--no-512] [--no-quickstart]
#
# BEFORE_BIN: the tools of a build with the dense label grids (format version 1); without it only the
# current tools are run (the table keeps an earlier run's "before" rows). --after: the current tools
# (default build/bin).
#   1. quick start: examples/cosmo-box's scene (synth-particles, 128^3 particles) through
#      workflows/pipeline.sh with the example's config; the run folder's size, each product's size and
#      the bytes per test cell of patches.h5 and clumps.h5.
#   2. 512^3: the clustered 16.7M-particle snapshot of segment_bench.sh (cached) on 512^3 cells;
#      phew-segment (80mean and 10mean) and phew-merge (--relevance 3 --saddle-threshold 200mean) at 1 and
#      2 ranks, each rank under /usr/bin/time -v: wall, the `write` phase, peak RSS per rank, bytes per cell.
#   3. --compress: cic-project 512^3 (2 ranks) and the quick start's 256^3 grid with and without it.
# Prints a table and writes DIR/labels_bench.json.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
PY=/usr/bin/python3
MPIRUN=${MPIRUN:-mpirun}
after=$root/build/bin
before=${BEFORE_BIN:-}
out=$here/out
do_512=1
do_quick=1
n=16777216
seed=1

while (($#)); do
  case $1 in
    --after) after=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-512) do_512=0; shift ;;
    --no-quickstart) do_quick=0; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "labels_bench: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
log() { echo "labels_bench: $*" >&2; }
[[ -x /usr/bin/time ]] || apt-get install -y time >/dev/null
if [[ $(id -u) == 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
after=$(cd "$after" && pwd)
builds=(after)
if [[ -n $before ]]; then
  before=$(cd "$before" && pwd)
  builds=(before after)
fi
mkdir -p "$out/labels"
out=$(cd "$out" && pwd)
d=$out/labels

bin_of() { if [[ $1 == before ]]; then echo "$before"; else echo "$after"; fi; }

# A tool on R ranks, each rank under its own /usr/bin/time -v (TAG.time.rankN), the whole under TAG.time.
timed() {  # tag ranks exe args...
  local tag=$1 ranks=$2
  shift 2
  rm -f "$d/$tag".time*
  # shellcheck disable=SC2016  # expanded by the per-rank shell
  /usr/bin/time -v -o "$d/$tag.time" "$MPIRUN" -n "$ranks" --oversubscribe \
    sh -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$d/$tag.time" "$@"
}

# 1. The quick start.
if ((do_quick)); then
  snap=$d/quick_snap.hdf5
  if [[ ! -s $snap ]]; then
    log "quick start: the cosmo-box scene (synth-particles)"
    "$after/synth-particles" "$root/examples/cosmo-box/scene.json" -o "$snap" -q
  fi
  for b in "${builds[@]}"; do
    log "quick start: workflows/pipeline.sh with the $b tools"
    rm -rf "$d/quick_$b"
    mkdir -p "$d/quick_$b/snaps"
    ln -s "$snap" "$d/quick_$b/snaps/snap_000.hdf5"
    ln -s "$snap.json" "$d/quick_$b/snaps/snap_000.hdf5.json" 2>/dev/null || true
    sed "s|^snapshots:.*|snapshots: \"$d/quick_$b/snaps/snap_*.hdf5\"|" "$root/examples/cosmo-box/config.yaml" \
      >"$d/quick_$b/config.yaml"
    /usr/bin/time -v -o "$d/quick_$b.time" env PHEW_BIN="$(bin_of "$b")" \
      "$root/workflows/pipeline.sh" "$d/quick_$b/snaps/snap_*.hdf5" "$d/quick_$b/run" --config "$d/quick_$b/config.yaml" \
      >"$d/quick_$b.log" 2>&1
  done
  g=$d/quick_after/run/snap_000/grid.h5
  for z in plain compress; do
    flag=()
    [[ $z == compress ]] && flag=(--compress)
    timed "quick_cic_$z" 2 "$after/cic-project" "$snap" -o "$d/quick_grid_$z.h5" \
      --grid "$($PY -c 'import h5py,sys; print(int(h5py.File(sys.argv[1])["grid"].attrs["shape"][0]))' "$g")" "${flag[@]}" -q
  done
fi

# 2. and 3. 512^3.
if ((do_512)); then
  snap=$out/snap_clustered_n${n}_s$seed.hdf5
  if [[ ! -s $snap ]]; then
    log "generating $snap"
    "$PY" "$here/make_snapshot.py" "$snap.tmp" --model clustered --n "$n" --seed "$seed"
    mv "$snap.tmp" "$snap"
  fi
  for z in plain compress; do
    flag=()
    [[ $z == compress ]] && flag=(--compress)
    log "cic-project 512^3 ($z)"
    rm -f "$d/g512_$z.h5" "$d/g512_$z.h5.json"
    cat "$snap" >/dev/null
    timed "cic512_$z" 2 "$after/cic-project" "$snap" -o "$d/g512_$z.h5" --grid 512 "${flag[@]}" -q
  done
  grid=$d/g512_plain.h5
  for thr in 80mean 10mean; do
    for b in "${builds[@]}"; do
      for r in 1 2; do
        tag=${b}_${thr}_r$r
        log "512^3 $thr, $b tools, $r rank(s)"
        cat "$grid" >/dev/null
        rm -f "$d/p_$tag.h5"* "$d/c_$tag.h5"*
        timed "seg_$tag" "$r" "$(bin_of "$b")/phew-segment" "$grid" -o "$d/p_$tag.h5" --threshold "$thr" -q
        timed "merge_$tag" "$r" "$(bin_of "$b")/phew-merge" "$d/p_$tag.h5" -o "$d/c_$tag.h5" --relevance 3 \
          --saddle-threshold 200mean -q
      done
    done
  done
fi

"$PY" - "$d" "$out/labels_bench.json" "${builds[@]}" <<'PY'
import glob, json, os, re, sys
import h5py

d, json_path, builds = sys.argv[1], sys.argv[2], sys.argv[3:]


def rss_wall(tag):
    """Peak RSS per rank (MiB), wall of the whole run (s)."""
    def field(path, name):
        text = open(path).read()
        return re.search(name + r": (.*)", text).group(1).strip()
    ranks = sorted(glob.glob(f"{d}/{tag}.time.rank*"))
    rss = [int(field(p, r"Maximum resident set size \(kbytes\)")) / 1024 for p in ranks]
    w = field(f"{d}/{tag}.time", r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\)").split(":")
    wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w)))
    return rss, wall


def mb(path):
    return os.path.getsize(path) / 1e6


result = {"builds": builds, "quick_start": {}, "grid512": [], "compress": {}}
print("\n1. quick start (examples/cosmo-box scene, workflows/pipeline.sh)")
print(f"{'tools':>7} {'run MB':>8} {'grid MB':>8} {'patches MB':>10} {'clumps MB':>9} {'test cells':>11} "
      f"{'B/test cell p':>13} {'B/test cell c':>13} {'wall s':>7}")
for b in ("before", "after"):  # whatever this or an earlier run left (the tools measured are in the log)
    run = f"{d}/quick_{b}/run"
    if not os.path.isdir(run):
        continue
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(run) for f in fs
                if not os.path.islink(os.path.join(r, f)))
    s = f"{run}/snap_000"
    with h5py.File(f"{s}/patches.h5") as f:
        n_test = int(f["cells"].attrs["n_test_cells"])
    wall = rss_wall(f"quick_{b}")[1] if os.path.exists(f"{d}/quick_{b}.time") else None
    q = {"run_MB": total / 1e6, "grid_MB": mb(f"{s}/grid.h5"), "patches_MB": mb(f"{s}/patches.h5"),
         "clumps_MB": mb(f"{s}/clumps.h5"), "test_cells": n_test,
         "patches_B_per_test_cell": os.path.getsize(f"{s}/patches.h5") / max(n_test, 1),
         "clumps_B_per_test_cell": os.path.getsize(f"{s}/clumps.h5") / max(n_test, 1), "wall_s": wall}
    result["quick_start"][b] = q
    print(f"{b:>7} {q['run_MB']:8.1f} {q['grid_MB']:8.1f} {q['patches_MB']:10.2f} {q['clumps_MB']:9.2f} "
          f"{n_test:11,} {q['patches_B_per_test_cell']:13.1f} {q['clumps_B_per_test_cell']:13.1f} {wall or 0:7.1f}")
if "before" in result["quick_start"] and "after" in result["quick_start"]:
    a, o = result["quick_start"]["after"], result["quick_start"]["before"]
    result["quick_start"]["after_over_before_run_size"] = a["run_MB"] / o["run_MB"]
    print(f"run folder after/before: {a['run_MB'] / o['run_MB']:.3f}")

if glob.glob(f"{d}/seg_*_r1.time"):
    print("\n2. 512^3 clustered grid: phew-segment and phew-merge (--relevance 3 --saddle-threshold 200mean)")
    print(f"{'tools':>7} {'thresh':>7} {'ranks':>5} {'test cells':>11} {'seg wall':>8} {'seg write':>9} "
          f"{'seg RSS/rank':>12} {'seg B/cell>rho':>14} {'merge wall':>10} {'merge write':>11} {'merge RSS/rank':>14} "
          f"{'merge B/cell':>12} {'patches MB':>10} {'clumps MB':>9}")
    cells = 512 ** 3
    rows = {}
    for path in sorted(glob.glob(f"{d}/seg_*.time")):
        tag = os.path.basename(path)[4:-5]
        b, thr, r = tag.split("_")
        ranks = int(r[1:])
        seg_rss, seg_wall = rss_wall(f"seg_{tag}")
        merge_rss, merge_wall = rss_wall(f"merge_{tag}")
        pm = json.load(open(f"{d}/p_{tag}.h5.json"))
        cm = json.load(open(f"{d}/c_{tag}.h5.json"))
        with h5py.File(f"{d}/p_{tag}.h5") as f:
            n_test = int(f["cells"].attrs["n_test_cells"])
        per_rank = cells / ranks
        row = {"tools": b, "threshold": thr, "ranks": ranks, "test_cells": n_test,
               "segment_wall_s": seg_wall, "segment_write_s": pm["timings"]["write"], "segment_rss_MiB": seg_rss,
               "segment_B_per_cell_beyond_density": max(seg_rss) * 2**20 / per_rank - 8,
               "merge_wall_s": merge_wall, "merge_write_s": cm["timings"]["write"], "merge_rss_MiB": merge_rss,
               "merge_B_per_cell": max(merge_rss) * 2**20 / per_rank,
               "patches_MB": mb(f"{d}/p_{tag}.h5"), "clumps_MB": mb(f"{d}/c_{tag}.h5"),
               "patches_B_per_test_cell": os.path.getsize(f"{d}/p_{tag}.h5") / n_test,
               "clumps_B_per_test_cell": os.path.getsize(f"{d}/c_{tag}.h5") / n_test}
        rows[(b, thr, ranks)] = row
        result["grid512"].append(row)
    for (b, thr, ranks), r in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0] != "before")):
        print(f"{b:>7} {thr:>7} {ranks:5d} {r['test_cells']:11,} {r['segment_wall_s']:8.2f} {r['segment_write_s']:9.2f} "
              f"{max(r['segment_rss_MiB']):12.0f} {r['segment_B_per_cell_beyond_density']:14.1f} {r['merge_wall_s']:10.2f} "
              f"{r['merge_write_s']:11.2f} {max(r['merge_rss_MiB']):14.0f} {r['merge_B_per_cell']:12.1f} "
              f"{r['patches_MB']:10.1f} {r['clumps_MB']:9.1f}")
    ratios = []
    for (b, thr, ranks), r in rows.items():
        o = rows.get(("before", thr, ranks))
        if b != "after" or not o:
            continue
        q = {"threshold": thr, "ranks": ranks}
        for k in ("segment_wall_s", "segment_write_s", "merge_wall_s", "merge_write_s", "patches_MB", "clumps_MB"):
            q[k] = r[k] / o[k] if o[k] else None
        q["segment_rss"] = max(r["segment_rss_MiB"]) / max(o["segment_rss_MiB"])
        q["merge_rss"] = max(r["merge_rss_MiB"]) / max(o["merge_rss_MiB"])
        ratios.append(q)
    if ratios:
        print("after / before:")
        for q in sorted(ratios, key=lambda q: (q["threshold"], q["ranks"])):
            print(f"  {q['threshold']:>7} {q['ranks']} rank(s): segment wall {q['segment_wall_s']:.2f}, write "
                  f"{q['segment_write_s']:.3f}, RSS {q['segment_rss']:.2f}; merge wall {q['merge_wall_s']:.2f}, write "
                  f"{q['merge_write_s']:.3f}, RSS {q['merge_rss']:.2f}; patches.h5 {q['patches_MB']:.4f}, "
                  f"clumps.h5 {q['clumps_MB']:.4f}")
    result["grid512_after_over_before"] = ratios

print("\n3. cic-project --compress (2 ranks; deflate level 1, byte shuffle, chunks of one plane)")
print(f"{'grid':>14} {'plain MB':>9} {'compressed MB':>13} {'size ratio':>10} {'plain write s':>13} "
      f"{'compressed write s':>18} {'time ratio':>10}")
for name, plain, comp in (("quick start", "quick_cic_plain", "quick_cic_compress"), ("512^3", "cic512_plain", "cic512_compress")):
    files = {"quick_cic_plain": "quick_grid_plain.h5", "quick_cic_compress": "quick_grid_compress.h5",
             "cic512_plain": "g512_plain.h5", "cic512_compress": "g512_compress.h5"}
    if not os.path.exists(f"{d}/{files[comp]}"):
        continue
    sz = [mb(f"{d}/{files[t]}") for t in (plain, comp)]
    wr = [json.load(open(f"{d}/{files[t]}.json"))["timings"]["write"] for t in (plain, comp)]
    result["compress"][name] = {"plain_MB": sz[0], "compressed_MB": sz[1], "size_ratio": sz[1] / sz[0],
                                "plain_write_s": wr[0], "compressed_write_s": wr[1],
                                "write_time_ratio": wr[1] / wr[0] if wr[0] else None}
    print(f"{name:>14} {sz[0]:9.1f} {sz[1]:13.1f} {sz[1] / sz[0]:10.3f} {wr[0]:13.2f} {wr[1]:18.2f} "
          f"{(wr[1] / wr[0] if wr[0] else float('nan')):10.2f}")

json.dump(result, open(json_path, "w"), indent=1)
print(f"\n{json_path}")
PY
