#!/usr/bin/python3
"""A scaling model of cic-project -> phew-segment -> phew-merge to a thousand ranks.

Measures the tools' per-phase costs at 1-2 ranks and 1-2 threads, with the bytes each phase's
exchanges sent (the manifests' `exchanges`), and predicts the time of PHEW's Table 1 problem (Bleuler
et al. 2015: 512^3 particles, 104,360,968 test cells, 6,714,764 peaks, 1,024 tasks, 8.0 s) for phew on
1,024 ranks x 1 thread and on 64 nodes x 16 threads, with slabs (today) and with a block decomposition.
The method and every assumption are in bench/README.md ("A scaling model to a thousand ranks").

  bench/scaling_model.py --measure [--bin build/bin] [--snapshot PATH] [--reps 3]
  bench/scaling_model.py                      # predict again from bench/out/scaling_model.json

Writes bench/out/scaling_model.json (measurements and predictions), a table on stdout and
bench/out/scaling_model.png (predicted time against ranks, with PHEW's point).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SNAPSHOT = "snap_clustered_n2097152_s1.hdf5"

# --- The target: PHEW's Table 1 (512^3 run) and Table 2 -------------------------------------------
TARGET = {"particles": 512**3, "test_cells": 104_360_968, "peaks": 6_714_764, "grid": 512,
          "watershed_rounds": 7, "phew_seconds": 8.0, "phew_tasks": 1024}
# Table 2: load imbalance max/avg of peaks per task against the number of tasks (1 at one task).
IMBALANCE = {1: 1.0, 32: 1.4, 64: 1.5, 128: 1.8, 256: 2.4, 512: 2.8, 1024: 3.3, 2048: 3.9}

# --- Machine assumptions (stated in bench/README.md; change them here or on the command line) -----
MACHINE = {
    "cores_per_node": 16,
    "node_bandwidth_bytes_per_s": 10e9,   # InfiniBand-class injection bandwidth per node
    "latency_s": 2e-6,                    # per message / per step of a collective
    "fs_bandwidth_per_node_bytes_per_s": 1e9,   # parallel file system, per node ...
    "fs_bandwidth_max_bytes_per_s": 20e9,       # ... up to this aggregate
    "launch_s_per_rank": 0.5e-3,          # MPI start-up at scale (launcher, PMIx wire-up): uncertain
}

# --- What drives each phase's work and its bytes ----------------------------------------------------
# work: what the compute scales with; bytes: how the bytes one rank sends scale with the ranks.
#   particles  routed particles: a rank's share, (P-1)/P of it to other ranks (file order is not spatial)
#   halo       ghost layers: test cells on a domain's faces, once per label round (halo1: once)
#   gathered   all_gatherv of peaks: every rank receives the whole table
#   routed_tc  routed lookups of test cells: a rank's share, (P-1)/P of it to other ranks
#   routed_pk  the same over peaks
#   none       latency only (a few small collectives)
# io: the phase is reading or writing files (priced as I/O, not compute).
PHASES = {
    "cic-project": {
        "open": ("fixed", "none", False), "read": ("particles", "none", True),
        "deposit": ("particles", "particles", False), "write": ("cells", "none", True),
    },
    "phew-segment": {
        "open": ("fixed", "none", False), "read": ("cells", "none", True),
        "watershed": ("cells+test_cells", "halo", False), "saddles": ("cells+test_cells", "halo1", False),
        "peaks": ("cells+test_cells", "routed_pk", False), "write": ("test_cells", "none", True),
    },
    "phew-merge": {
        "open": ("fixed", "none", False), "graph": ("peaks", "routed_pk", False),
        "noise": ("peaks", "routed_pk", False), "hierarchy": ("peaks", "routed_pk", False),
        "cells": ("test_cells", "routed_tc", False), "catalogue": ("peaks", "routed_pk", False),
        "write": ("test_cells", "none", True),
    },
}
TOOLS = list(PHASES)
# PHEW's 8.0 s covers segmentation and merging, not the projection: these phases are compared with it.
PHEW_PART = {"phew-segment": ["watershed", "saddles", "peaks"],
             "phew-merge": ["graph", "noise", "hierarchy", "cells", "catalogue"]}


# ==================================================================================================
# Measurement
# ==================================================================================================
def run_tool(bin_dir, tool, args, ranks, threads, out):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [os.path.join(bin_dir, tool)] + args + ["-o", out, "-q", "-j", str(threads)]
    if ranks > 1:
        cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", "--bind-to", "none"] + cmd
    for f in (out, out + ".json"):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env)
    wall = time.perf_counter() - t0
    with open(out + ".json") as f:
        m = json.load(f)
    return {"wall": wall, "timings": m["timings"], "exchanges": m.get("exchanges", {}),
            "summary": m["summary"], "file_bytes": os.path.getsize(out)}


def best_of(runs):
    """Per phase (and wall) the minimum over repeats; exchanges and counts from the first (they repeat)."""
    best = dict(runs[0])
    best["wall"] = min(r["wall"] for r in runs)
    best["timings"] = {p: min(r["timings"][p] for r in runs) for p in runs[0]["timings"]}
    best["repeats"] = len(runs)
    return best


def measure(args):
    snap = args.snapshot
    if not os.path.exists(snap):
        sys.exit(f"scaling_model: {snap} is missing: make it with bench/make_snapshot.py (see bench/README.md)")
    work = tempfile.mkdtemp(prefix="scaling_model_", dir=args.work)
    configs = [(1, 1), (1, 2), (2, 1), (2, 2)]
    result = {"snapshot": snap, "grid": args.grid, "thresholds": args.thresholds, "reps": args.reps,
              "date": time.strftime("%Y-%m-%d %H:%M"), "load_before": os.getloadavg()[0], "runs": {}}

    def record(key, tool, targs, ranks, threads, out):
        runs = [run_tool(args.bin, tool, targs, ranks, threads, out) for _ in range(args.reps)]
        result["runs"][key] = best_of(runs)
        print(f"scaling_model: {key}: wall {result['runs'][key]['wall']:.3f} s", file=sys.stderr)

    grid = os.path.join(work, "grid.h5")
    for ranks, threads in configs:
        record(f"cic-project/r{ranks}t{threads}", "cic-project", [snap, "--grid", str(args.grid)], ranks, threads,
               os.path.join(work, f"grid_r{ranks}t{threads}.h5"))
    os.replace(os.path.join(work, "grid_r1t1.h5"), grid)
    os.replace(os.path.join(work, "grid_r1t1.h5.json"), grid + ".json")
    for thr in args.thresholds:
        for ranks, threads in configs:
            tag = f"{thr}/r{ranks}t{threads}"
            patches = os.path.join(work, f"patches_{thr}_r{ranks}t{threads}.h5")
            record(f"phew-segment/{tag}", "phew-segment", [grid, "--threshold", thr], ranks, threads, patches)
            record(f"phew-merge/{tag}", "phew-merge", [patches, "--relevance", "3", "--saddle-threshold", "200mean"],
                   ranks, threads, os.path.join(work, f"clumps_{thr}_r{ranks}t{threads}.h5"))
    result["snapshot_bytes"] = os.path.getsize(snap)
    result["load_after"] = os.getloadavg()[0]
    subprocess.run(["rm", "-rf", work], check=False)
    return result


# ==================================================================================================
# The model
# ==================================================================================================
def key(tool, thr, ranks, threads):
    return f"{tool}/r{ranks}t{threads}" if tool == "cic-project" else f"{tool}/{thr}/r{ranks}t{threads}"


def sizes(meas, thr):
    """The measured problem: particles, grid cells, test cells and peaks at threshold thr."""
    seg = meas["runs"][key("phew-segment", thr, 1, 1)]["summary"]
    cic = meas["runs"][key("cic-project", thr, 1, 1)]["summary"]
    return {"particles": cic["n_particles"], "cells": meas["grid"] ** 3, "test_cells": seg["n_test_cells"],
            "peaks": seg["n_peaks"], "rounds": seg["label_rounds"], "fixed": 1}


def fit_costs(meas):
    """Seconds per unit of work for every phase at 1 rank x 1 thread. Phases driven by cells and test
    cells get two coefficients, fitted (non-negative) over the thresholds measured."""
    costs = {}
    thrs = meas["thresholds"]
    for tool in TOOLS:
        for phase, (work, _, _) in PHASES[tool].items():
            pts = []
            for thr in thrs:
                run = meas["runs"][key(tool, thr, 1, 1)]
                if phase in run["timings"]:
                    pts.append((sizes(meas, thr), run["timings"][phase]))
            if not pts:
                continue
            if work == "cells+test_cells":
                a = np.array([[s["cells"], s["test_cells"]] for s, _ in pts], float)
                b = np.array([t for _, t in pts])
                coef = np.linalg.lstsq(a, b, rcond=None)[0] if len(pts) > 1 else np.array([0.0, b[0] / a[0, 1]])
                if coef.min() < 0:  # one term alone: the one that explains the largest run
                    i = int(np.argmax(a[:, 1]))
                    coef = np.array([0.0, b[i] / a[i, 1]])
                costs[(tool, phase)] = {"cells": coef[0], "test_cells": coef[1]}
            else:
                # The run with the most work of that kind (the lower threshold): the steadiest figure.
                s, t = max(pts, key=lambda p: p[0][work])
                costs[(tool, phase)] = {work: t / s[work]}
    return costs


def thread_serial_fraction(meas, tool, phase):
    """Amdahl's serial fraction of a phase from 1 and 2 threads at 1 rank (the lowest threshold)."""
    thr = meas["thresholds"][-1]
    t1 = meas["runs"][key(tool, thr, 1, 1)]["timings"].get(phase)
    t2 = meas["runs"][key(tool, thr, 1, 2)]["timings"].get(phase)
    if not t1 or not t2 or t1 < 1e-3:
        return 1.0
    return float(min(1.0, max(0.0, 2 * t2 / t1 - 1)))


def bytes_per_unit(meas, tool, phase, law):
    """Bytes sent per unit of the law's driver, from the 2-rank, 1-thread run with the most work."""
    thr = meas["thresholds"][-1]
    run = meas["runs"][key(tool, thr, 2, 1)]
    e = run["exchanges"].get(phase, {})
    total = e.get("bytes_sent_total") or 0
    coll = e.get("collectives") or 0
    s = sizes(meas, thr)
    if law == "particles":
        per = total / (s["particles"] / 2)        # half the particles travel at 2 ranks
    elif law in ("halo", "halo1"):
        # 2 ranks, slabs: each rank sends 2 faces of n^2 cells; per face cell carrying test cells, per round
        face_test = 4 * meas["grid"] ** 2 * s["test_cells"] / s["cells"]
        per = total / max(face_test, 1e-9) / (max(s["rounds"], 1) if law == "halo" else 1)
    elif law == "gathered":
        per = total / max(s["peaks"], 1)          # at 2 ranks each peak goes once to the other rank
    elif law == "routed_tc":
        per = total / (s["test_cells"] / 2)
    elif law == "routed_pk":
        per = total / (s["peaks"] / 2)
    else:
        per = 0.0
    return per, coll, s["rounds"]


def imbalance(p):
    xs = sorted(IMBALANCE)
    return float(np.interp(math.log2(p), [math.log2(x) for x in xs], [IMBALANCE[x] for x in xs]))


def predict(meas, ranks, threads, decomposition, machine, target=None):
    """Seconds per tool and phase for the target on `ranks` x `threads` (ranks_per_node ranks per node)."""
    target = target or TARGET
    costs = fit_costs(meas)
    n = target["grid"]
    cells = n ** 3
    nodes = max(1, math.ceil(ranks * threads / machine["cores_per_node"]))
    ranks_per_node = max(1, ranks // nodes)
    # Ranks that hold grid planes: slabs stop at one plane per rank; blocks use every rank.
    p_grid = min(ranks, n) if decomposition == "slabs" else ranks
    if decomposition == "slabs":
        own = cells / p_grid
        ghost_cells = 2 * n * n if ranks > 1 else 0       # two ghost planes, however thin the slab
        faces = 2 * n * n if ranks > 1 else 0
    else:
        side = (cells / ranks) ** (1 / 3)
        own = cells / ranks
        ghost_cells = (side + 2) ** 3 - side ** 3 if ranks > 1 else 0
        faces = 6 * side * side if ranks > 1 else 0
    imb = imbalance(ranks)
    per_rank = {"particles": target["particles"] / ranks, "cells": own + ghost_cells,
                "test_cells": target["test_cells"] / p_grid * imb, "peaks": target["peaks"] / p_grid * imb,
                "fixed": 1.0}
    f_test = target["test_cells"] / cells
    out = {}
    for tool in TOOLS:
        for phase, (work, law, io) in PHASES[tool].items():
            c = costs.get((tool, phase))
            if c is None:
                continue
            one_thread = sum(c[w] * per_rank[w] for w in c)
            s = thread_serial_fraction(meas, tool, phase)
            compute = one_thread * (s + (1 - s) / threads)
            per, coll, rounds_meas = bytes_per_unit(meas, tool, phase, law)
            rounds = target["watershed_rounds"] if law == "halo" else 1
            if law == "particles":
                sent = per * per_rank["particles"] * (ranks - 1) / ranks
            elif law in ("halo", "halo1"):
                sent = per * faces * f_test * rounds
            elif law == "gathered":
                sent = per * target["peaks"] * (ranks - 1) / ranks   # received by every rank
            elif law == "routed_tc":
                sent = per * per_rank["test_cells"] * (ranks - 1) / ranks
            elif law == "routed_pk":
                sent = per * per_rank["peaks"] * (ranks - 1) / ranks
            else:
                sent = 0.0
            calls = coll * (rounds / max(rounds_meas, 1) if law == "halo" else 1)
            # All-to-all exchanges (routing, and all_gatherv, which is built on them) take P-1 steps;
            # the others are trees (log2 P).
            steps = (ranks - 1) if law in ("particles", "gathered", "routed_tc", "routed_pk") else math.log2(ranks)
            comm = 0.0
            if ranks > 1:
                comm = calls * machine["latency_s"] * steps + sent * ranks_per_node / machine["node_bandwidth_bytes_per_s"]
            kind = "io" if io else ("startup" if work == "fixed" else "compute")
            out[(tool, phase)] = {"kind": kind, "compute": compute, "comm": comm, "bytes_sent_per_rank": sent}
    return out


def io_seconds(meas, ranks, threads, machine, target=None):
    """Files read and written by the chain, at the file system's bandwidth (uncertain)."""
    target = target or TARGET
    thr = meas["thresholds"][0]
    s = sizes(meas, thr)
    snap_bytes = meas["snapshot_bytes"] / s["particles"] * target["particles"]
    grid_bytes = meas["runs"][key("cic-project", thr, 1, 1)]["file_bytes"] / s["cells"] * target["grid"] ** 3
    patches = meas["runs"][key("phew-segment", thr, 1, 1)]["file_bytes"] / s["test_cells"] * target["test_cells"]
    clumps = meas["runs"][key("phew-merge", thr, 1, 1)]["file_bytes"] / s["test_cells"] * target["test_cells"]
    nodes = max(1, math.ceil(ranks * threads / machine["cores_per_node"]))
    bw = min(nodes * machine["fs_bandwidth_per_node_bytes_per_s"], machine["fs_bandwidth_max_bytes_per_s"])
    moved = {"cic-project": snap_bytes + grid_bytes, "phew-segment": grid_bytes + patches,
             "phew-merge": patches + clumps}
    return {t: b / bw for t, b in moved.items()}, {"snapshot": snap_bytes, "grid": grid_bytes, "patches": patches,
                                                    "clumps": clumps}


def startup_seconds(meas, ranks, machine):
    """Per tool: the process's own start-up measured here (wall minus phases at 1 rank), plus launch."""
    thr = meas["thresholds"][0]
    out = {}
    for tool in TOOLS:
        run = meas["runs"][key(tool, thr, 1, 1)]
        local = max(0.0, run["wall"] - sum(run["timings"].values())) + run["timings"].get("open", 0.0)
        out[tool] = local + machine["launch_s_per_rank"] * ranks
    return out


def totals(meas, ranks, threads, decomposition, machine):
    phases = predict(meas, ranks, threads, decomposition, machine)
    io, _ = io_seconds(meas, ranks, threads, machine)
    start = startup_seconds(meas, ranks, machine)
    phew_part = sum(v["compute"] + v["comm"] for (t, p), v in phases.items() if p in PHEW_PART.get(t, []))
    compute = sum(v["compute"] for v in phases.values() if v["kind"] == "compute")
    comm = sum(v["comm"] for v in phases.values())
    return {"ranks": ranks, "threads": threads, "decomposition": decomposition,
            "phew_part": phew_part, "compute": compute, "comm": comm, "io": sum(io.values()),
            "startup": sum(start.values()), "chain": compute + comm + sum(io.values()) + sum(start.values()),
            "phases": {f"{t}/{p}": v for (t, p), v in phases.items()}}


# ==================================================================================================
# Output
# ==================================================================================================
def measured_table(meas):
    lines = ["Measured (min of %d runs; 1 rank x 1 thread, then speed-up at 1r x 2t and 2r x 1t; bytes sent "
             "by the phase at 2 ranks, all ranks)" % meas["reps"]]
    for thr in meas["thresholds"]:
        s = sizes(meas, thr)
        lines.append(f"  threshold {thr}: {s['particles']:,} particles, {s['cells']:,} cells, "
                     f"{s['test_cells']:,} test cells, {s['peaks']:,} peaks, {s['rounds']} label rounds")
        lines.append(f"  {'tool/phase':<24}{'1r1t s':>9}{'x 2t':>7}{'x 2r':>7}{'2r2t s':>9}{'bytes 2r':>12}{'coll.':>7}")
        for tool in TOOLS:
            if tool == "cic-project" and thr != meas["thresholds"][0]:
                continue
            r = {c: meas["runs"][key(tool, thr, *c)] for c in [(1, 1), (1, 2), (2, 1), (2, 2)]}
            for phase in PHASES[tool]:
                t = {c: r[c]["timings"].get(phase, float("nan")) for c in r}
                e = r[(2, 1)]["exchanges"].get(phase, {})
                sp = lambda c: t[(1, 1)] / t[c] if t[c] > 0 else float("nan")
                lines.append(f"  {tool + '/' + phase:<24}{t[(1, 1)]:9.4f}{sp((1, 2)):7.2f}{sp((2, 1)):7.2f}"
                             f"{t[(2, 2)]:9.4f}{e.get('bytes_sent_total', 0):12,}{e.get('collectives', 0):7}")
            lines.append(f"  {tool + ' (whole process)':<24}{r[(1, 1)]['wall']:9.3f}"
                         f"{r[(1, 1)]['wall'] / r[(1, 2)]['wall']:7.2f}{r[(1, 1)]['wall'] / r[(2, 1)]['wall']:7.2f}"
                         f"{r[(2, 2)]['wall']:9.3f}")
    return "\n".join(lines)


def costs_table(meas):
    lines = ["Fitted costs at 1 rank x 1 thread (per unit of work) and Amdahl serial fraction from 2 threads"]
    for (tool, phase), c in fit_costs(meas).items():
        terms = ", ".join(f"{v:.3f} s/run" if w == "fixed" else f"{v * 1e9:.1f} ns/{w.rstrip('s')}" for w, v in c.items())
        lines.append(f"  {tool + '/' + phase:<24}{terms:<44} serial {thread_serial_fraction(meas, tool, phase):.2f}")
    return "\n".join(lines)


def prediction_table(rows):
    lines = [f"Predicted for PHEW's Table 1 problem (512^3 particles, 104 M test cells, 6.7 M peaks, phew's grid "
             f"{TARGET['grid']}^3; PHEW: {TARGET['phew_seconds']} s on {TARGET['phew_tasks']} tasks)",
             f"  {'configuration':<34}{'seg+merge':>10}{'compute':>9}{'comm':>8}{'I/O':>8}{'start-up':>9}{'chain':>8}"]
    for name, r in rows:
        lines.append(f"  {name:<34}{r['phew_part']:10.2f}{r['compute']:9.2f}{r['comm']:8.2f}{r['io']:8.2f}"
                     f"{r['startup']:9.2f}{r['chain']:8.2f}")
    lines.append("  seg+merge: phew-segment's watershed, saddles, peaks and phew-merge's phases (compute + comm),"
                 " the part PHEW's 8.0 s covers; chain: cic-project + phew-segment + phew-merge, all terms.")
    return "\n".join(lines)


def phase_table(r):
    lines = [f"  per phase, {r['ranks']} ranks x {r['threads']} threads, {r['decomposition']}:",
             f"    {'tool/phase':<24}{'kind':>8}{'compute s':>11}{'comm s':>9}{'MB sent/rank':>14}"]
    for name, v in r["phases"].items():
        lines.append(f"    {name:<24}{v['kind']:>8}{v['compute']:11.4f}{v['comm']:9.4f}{v['bytes_sent_per_rank'] / 1e6:14.2f}")
    return "\n".join(lines)


def figure(meas, machine, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ps = [2 ** k for k in range(0, 13)]
    fig, ax = plt.subplots(figsize=(7, 4.6))
    for dec, style in (("slabs", "-"), ("blocks", "--")):
        seg = [totals(meas, p, 1, dec, machine)["phew_part"] for p in ps]
        chain = [totals(meas, p, 1, dec, machine)["chain"] for p in ps]
        ax.loglog(ps, seg, "C0" + style, label=f"segment + merge phases, {dec}, 1 thread/rank")
        ax.loglog(ps, chain, "C1" + style, label=f"whole chain (with cic, I/O, start-up), {dec}")
    for dec, mk in (("slabs", "o"), ("blocks", "s")):
        r = totals(meas, 64, 16, dec, machine)
        ax.loglog([64 * 16], [r["phew_part"]], "C0" + mk, mfc="none", ms=9, label=f"64 ranks x 16 threads, {dec}")
        ax.loglog([64 * 16], [r["chain"]], "C1" + mk, mfc="none", ms=9)
    ax.loglog([TARGET["phew_tasks"]], [TARGET["phew_seconds"]], "k*", ms=14, label="PHEW (Table 1): 8.0 s")
    ax.axvline(TARGET["grid"], color="grey", lw=0.8, ls=":")
    ax.text(TARGET["grid"] * 1.05, ax.get_ylim()[1] * 0.5, "slabs: 1 plane/rank", color="grey", fontsize=8, rotation=90,
            va="top")
    ax.set_xlabel("cores (ranks x threads)")
    ax.set_ylabel("predicted seconds")
    ax.set_title("phew on PHEW's Table 1 problem (512³ particles, 104 M test cells): model", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", action="store_true", help="run the tools (else read --json)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--snapshot", default=None, help=f"default: bench/out/{SNAPSHOT}, else /work/main/bench/out/")
    ap.add_argument("--grid", type=int, default=256)
    ap.add_argument("--thresholds", default="80mean,1mean",
                    help="the first is the benchmark's; a lower one separates per-cell from per-test-cell costs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--work", default=None, help="scratch folder for the runs (default: the system's)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--target-grid", type=int, default=TARGET["grid"],
                    help="the uniform grid phew would use for the target (planes: the slab cap)")
    for k, v in MACHINE.items():
        ap.add_argument("--" + k.replace("_", "-"), type=float, default=v)
    args = ap.parse_args()
    args.thresholds = args.thresholds.split(",")
    machine = {k: getattr(args, k) for k in MACHINE}
    TARGET["grid"] = args.target_grid
    os.makedirs(args.out, exist_ok=True)
    path = args.json or os.path.join(args.out, "scaling_model.json")
    if args.measure:
        if args.snapshot is None:
            cands = [os.path.join(args.out, SNAPSHOT), os.path.join("/work/main/bench/out", SNAPSHOT)]
            args.snapshot = next((c for c in cands if os.path.exists(c)), cands[0])
        meas = measure(args)
    else:
        with open(path) as f:
            meas = json.load(f)["measured"]
    configs = [("1,024 ranks x 1 thread, slabs", 1024, 1, "slabs"),
               ("1,024 ranks x 1 thread, blocks", 1024, 1, "blocks"),
               ("64 nodes x 16 threads, slabs", 64, 16, "slabs"),
               ("64 nodes x 16 threads, blocks", 64, 16, "blocks"),
               ("512 ranks x 1 thread, slabs", 512, 1, "slabs")]
    rows = [(name, totals(meas, p, t, d, machine)) for name, p, t, d in configs]
    print(measured_table(meas))
    print()
    print(costs_table(meas))
    print()
    print(prediction_table(rows))
    for name, r in rows[:4]:
        print(phase_table(r))
    _, files = io_seconds(meas, 1024, 1, machine)
    print("  files of the target (bytes): " + ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in files.items()))
    with open(path, "w") as f:
        json.dump({"measured": meas, "machine": machine, "target": TARGET,
                   "predicted": {name: r for name, r in rows}}, f, indent=1)
    png = os.path.join(args.out, "scaling_model.png")
    figure(meas, machine, png)
    print(f"wrote {path} and {png}", file=sys.stderr)


if __name__ == "__main__":
    main()
