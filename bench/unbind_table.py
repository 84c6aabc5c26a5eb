#!/usr/bin/python3
"""Tables and JSON for bench/unbind_bench.sh.

    bench/unbind_table.py RUNS.tsv OUT.json [--rockstar-rate R] [--rockstar-bytes B]

RUNS.tsv: scene, step, ranks, particles, output, exit status, time file (bench/timed.sh) per line.
Per run: wall time, particles per second per core (the snapshot's particles over wall x ranks), peak
memory in bytes per snapshot particle (the ranks' peaks summed, and the largest rank's); for unbind,
from its manifest summary, the objects, the particles unbound, the largest halo and the most a rank
held at once, and the seconds per halo against the halo's size (seconds_by_size). Then the whole
chain, cic-project -> phew-segment -> phew-merge -> unbind, per particle against ROCKSTAR's anchor.
"""
import argparse
import glob
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timefile import peak_bytes, wall_seconds  # noqa: E402

CHAIN = ("cic-project", "phew-segment", "phew-merge")


def largest_rank_bytes(time_file):
    files = sorted(glob.glob(time_file + ".rank*")) or [time_file]
    kib = [int(m.group(1)) for f in files
           if (m := re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(f).read()))]
    return max(kib, default=0) * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("out_json")
    ap.add_argument("--rockstar-rate", type=float, default=455000)
    ap.add_argument("--rockstar-bytes", type=float, default=52)
    a = ap.parse_args()

    rows = []
    for line in open(a.runs):
        scene, step, ranks, particles, output, status, tf = line.rstrip("\n").split("\t")
        r = {"scene": scene, "step": step, "ranks": int(ranks), "particles": int(particles), "status": int(status)}
        if r["status"] == 0:
            n = r["particles"]
            r["wall_s"], r["peak_bytes"], r["largest_rank_bytes"] = wall_seconds(tf), peak_bytes(tf), largest_rank_bytes(tf)
            r["particles_per_s_per_core"] = n / r["wall_s"] / r["ranks"]
            r["bytes_per_particle"] = r["peak_bytes"] / n
            if step.startswith("unbind"):
                s = json.load(open(output + ".json")).get("summary", {})
                for k in ("n_objects", "n_haloes", "n_particles", "n_bound", "n_batches", "largest_halo", "largest_batch",
                          "seconds_by_size"):
                    if k in s:
                        r[k] = s[k]
        rows.append(r)

    for scene in dict.fromkeys(r["scene"] for r in rows):
        srows = [r for r in rows if r["scene"] == scene]
        print(f"\n{scene}: {srows[0]['particles']:,} particles")
        print(f"{'step':15} {'ranks':>5} {'wall s':>8} {'Mpart/s/core':>12} {'B/particle':>10} {'largest rank':>12}"
              f" {'objects':>8} {'members':>11} {'largest halo':>12} {'largest held':>12} {'batches':>7}")
        for r in srows:
            if r["status"]:
                print(f"{r['step']:15} {r['ranks']:>5} FAILED (exit {r['status']})")
                continue
            extra = ""
            if "n_objects" in r:
                extra = (f" {r['n_objects']:>8,} {r['n_particles']:>11,} {r.get('largest_halo', 0):>12,}"
                         f" {r.get('largest_batch', 0):>12,} {r.get('n_batches', 0):>7}")
            print(f"{r['step']:15} {r['ranks']:>5} {r['wall_s']:8.2f} {r['particles_per_s_per_core'] / 1e6:12.3f}"
                  f" {r['bytes_per_particle']:10.1f} {r['largest_rank_bytes'] / 2**30:10.2f} G{extra}")
        for r in srows:
            if r["status"] or not r.get("seconds_by_size") or r["ranks"] != min(q["ranks"] for q in srows):
                continue
            print(f"\n  {r['step']} at {r['ranks']} rank(s), time per halo against its size (seconds_by_size):")
            print(f"  {'particles':>19} {'haloes':>7} {'s per halo':>11} {'us/particle':>12} {'share of time':>13}")
            total = sum(b["seconds"] for b in r["seconds_by_size"]) or 1
            for b in r["seconds_by_size"]:
                lo = b["smallest"]
                span = f"{lo:,}-{2 * lo - 1:,}" if lo else "0"
                per = b["seconds"] / max(b["haloes"], 1)
                us = 1e6 * b["seconds"] / b["particles"] if b["particles"] else 0
                print(f"  {span:>19} {b['haloes']:>7,} {per:11.4f} {us:12.2f} {b['seconds'] / total:13.1%}")

    chains = []
    for scene in dict.fromkeys(r["scene"] for r in rows):
        for ranks in sorted({r["ranks"] for r in rows if r["scene"] == scene}):
            for pot in ("profile", "tree"):
                steps = [r for r in rows if r["scene"] == scene and r["ranks"] == ranks
                         and (r["step"] in CHAIN or r["step"] == f"unbind-{pot}")]
                if len(steps) != 4 or any(r["status"] for r in steps):
                    continue
                n = steps[0]["particles"]
                wall = sum(r["wall_s"] for r in steps)
                peak = max(r["bytes_per_particle"] for r in steps)
                rate = n / wall / ranks
                chains.append({"scene": scene, "ranks": ranks, "potential": pot, "particles": n, "wall_s": wall,
                               "particles_per_s_per_core": rate, "peak_bytes_per_particle": peak,
                               "x_rockstar_speed": rate / a.rockstar_rate, "x_rockstar_memory": peak / a.rockstar_bytes})
    print(f"\nROCKSTAR anchor: {a.rockstar_rate:,.0f} particles/s/core, {a.rockstar_bytes:g} B/particle (one core, 2.1 M)")
    print(f"{'chain + unbind':24} {'ranks':>5} {'wall s':>8} {'particles/s/core':>17} {'x ROCKSTAR':>11}"
          f" {'B/particle':>11} {'x ROCKSTAR':>11}")
    for ch in chains:
        print(f"{ch['scene'] + ', ' + ch['potential']:24} {ch['ranks']:>5} {ch['wall_s']:8.2f}"
              f" {ch['particles_per_s_per_core']:17,.0f} {ch['x_rockstar_speed']:11.2f}"
              f" {ch['peak_bytes_per_particle']:11.1f} {ch['x_rockstar_memory']:11.2f}")
    json.dump({"rockstar_particles_per_s": a.rockstar_rate, "rockstar_bytes_per_particle": a.rockstar_bytes,
               "runs": rows, "chains": chains}, open(a.out_json, "w"), indent=1)
    print(f"\nwrote {a.out_json}")


if __name__ == "__main__":
    main()
