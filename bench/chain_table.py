#!/usr/bin/python3
"""Tables and JSON for bench/chain_bench.sh.

    bench/chain_table.py CHAIN_DIR OUT.json [--elapsed SECONDS]

Reads CHAIN_DIR/runs.tsv (step, tag, ranks, output, exit status, info), each run's /usr/bin/time -v
reports (STEP/TAG.time and, with 2 ranks, STEP/TAG.time.rankN), its log (STEP/TAG.log) and the
output's manifest (OUTPUT.json: timings, summary, parameters). Prints one table per step.
"""
import argparse
import json
import re
from pathlib import Path

import h5py
import numpy as np

MiB = 2**20


def gnu_time(path):
    """Wall s, peak RSS MiB, exit status, CPU s, CPU% from a /usr/bin/time -v report."""
    text = path.read_text()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
    wall = 0.0
    for part in clock.split(":"):
        wall = wall * 60 + float(part)
    status = int(re.search(r"Exit status: (\d+)", text).group(1))
    cpu_s = sum(float(re.search(rf"{k} time \(seconds\): (\S+)", text).group(1)) for k in ("User", "System"))
    pct = int(re.search(r"Percent of CPU this job got: (\d+)%", text).group(1))
    return {"wall_s": wall, "rss_mib": rss, "exit_status": status, "cpu_s": cpu_s, "cpu_percent": pct}


def load_runs(c):
    runs = {}
    for line in (c / "runs.tsv").read_text().splitlines():
        step, tag, ranks, output, status, info = (line.split("\t") + [""] * 6)[:6]
        r = {"step": step, "tag": tag, "ranks": int(ranks), "output": output, "status": int(status),
             "info": dict(kv.split("=", 1) for kv in info.split(";") if "=" in kv)}
        d = c / step
        tf = d / f"{tag}.time"
        if tf.exists():
            r.update(gnu_time(tf))
            ranks_t = sorted(d.glob(f"{tag}.time.rank*"))
            r["rss_per_rank_mib"] = [gnu_time(p)["rss_mib"] for p in ranks_t] if r["ranks"] > 1 and ranks_t else [r["rss_mib"]]
            r["rss_sum_mib"] = sum(r["rss_per_rank_mib"])
        mf = Path(output + ".json")
        if r["status"] == 0 and mf.exists():
            m = json.loads(mf.read_text())
            r["timings_s"] = m.get("timings", {})
            r["summary"] = m.get("summary", {})
            r["parameters"] = m.get("parameters", {})
        else:
            r["failed"] = True
        size = Path(output + ".size")
        if size.exists():
            r["output_bytes"] = int(size.read_text())
        elif Path(output).exists():
            r["output_bytes"] = Path(output).stat().st_size
        lf = d / f"{tag}.log"
        r["log"] = lf.read_text() if lf.exists() else ""
        runs[tag] = r
    return runs


def f(v, spec="{:.2f}"):
    return "-" if v is None else spec.format(v)


def thousands(v):
    return "-" if v is None else f"{v:,}"


def rounds(v):
    return "-" if not v else ",".join(str(x) for x in v)


def table(head, rows, fmt):
    print(fmt.format(*head))
    for row in rows:
        print(fmt.format(*row))


def step1(runs):
    out = []
    for tag, seg in runs.items():
        if not tag.startswith("seg_"):
            continue
        merge = runs.get("merge_" + tag[4:])
        if seg.get("failed") or merge is None or merge.get("failed"):
            out.append({"tag": tag[4:], "failed": True, "grid": int(seg["info"]["grid"]), "ranks": seg["ranks"],
                        "threads": int(seg["info"].get("threads", 1)), "threshold": seg["info"]["threshold"]})
            continue
        s, m = seg["summary"], merge["summary"]
        e2e = seg["wall_s"] + merge["wall_s"]
        particles = int(seg["info"].get("particles", 0))
        peak_rss = max(seg["rss_sum_mib"], merge["rss_sum_mib"])
        out.append({
            "tag": tag[4:], "grid": int(seg["info"]["grid"]), "ranks": seg["ranks"], "threshold": seg["info"]["threshold"],
            "threads": int(seg["info"].get("threads", 1)),
            "bytes_per_particle": peak_rss * MiB / particles if particles else None,
            "test_cells": s["n_test_cells"], "peaks": s["n_peaks"], "saddles": s["n_saddles"], "label_rounds": s.get("label_rounds"),
            "clumps_level0": m["n_clumps_level0"], "haloes": m["n_haloes"],
            "noise_levels": m["noise_levels"], "noise_rounds_per_level": m["noise_rounds_per_level"],
            "hierarchy_levels": m["hierarchy_levels"], "hierarchy_rounds_per_level": m["hierarchy_rounds_per_level"],
            "segment_wall_s": seg["wall_s"], "merge_wall_s": merge["wall_s"], "wall_s": e2e,
            "segment_cpu_percent": seg["cpu_percent"], "merge_cpu_percent": merge["cpu_percent"],
            "segment_timings_s": seg["timings_s"], "merge_timings_s": merge["timings_s"],
            "peaks_per_s": s["n_peaks"] / e2e, "clumps_per_s": m["n_clumps_level0"] / e2e,
            "peaks_per_s_segment": s["n_peaks"] / seg["wall_s"], "clumps_per_s_merge": m["n_clumps_level0"] / merge["wall_s"],
            "segment_rss_mib": seg["rss_sum_mib"], "segment_rss_per_rank_mib": seg["rss_per_rank_mib"],
            "merge_rss_mib": merge["rss_sum_mib"], "merge_rss_per_rank_mib": merge["rss_per_rank_mib"],
            "patches_bytes": seg.get("output_bytes"), "clumps_bytes": merge.get("output_bytes"),
            "mass_above_threshold": m.get("mass_above_threshold"), "mass_in_clumps": m.get("mass_in_clumps"),
            "mass_discarded": m.get("mass_discarded")})
    print("\n1. phew-segment + phew-merge (--relevance 3 --saddle-threshold 200mean), clustered 16.7M-particle box "
          "(cf. PHEW paper Table 1)")
    head = ("grid", "ranks", "thr", "thresh", "test cells", "peaks", "saddles", "clumps", "haloes", "noise lv (rounds)",
            "hier lv (rounds)", "seg s", "merge s", "e2e s", "CPU% s/m", "peaks/s", "clumps/s", "RSS MiB s/m", "B/particle")
    fmt = "{:>5} {:>5} {:>3} {:>7} {:>10} {:>8} {:>7} {:>7} {:>7} {:>17} {:>16} {:>6} {:>7} {:>6} {:>9} {:>8} {:>8} {:>12} {:>10}"
    rows = []
    for r in out:
        if r.get("failed"):
            rows.append((r["grid"], r["ranks"], r["threads"], r["threshold"], "FAILED") + ("-",) * 14)
            continue
        rows.append((r["grid"], r["ranks"], r["threads"], r["threshold"], thousands(r["test_cells"]), thousands(r["peaks"]),
                     thousands(r["saddles"]), thousands(r["clumps_level0"]), thousands(r["haloes"]),
                     f"{r['noise_levels']} ({rounds(r['noise_rounds_per_level'])})",
                     f"{r['hierarchy_levels']} ({rounds(r['hierarchy_rounds_per_level'])})",
                     f(r["segment_wall_s"]), f(r["merge_wall_s"]), f(r["wall_s"]),
                     f"{r['segment_cpu_percent']}/{r['merge_cpu_percent']}",
                     f"{r['peaks_per_s']:,.0f}", f"{r['clumps_per_s']:,.0f}",
                     f"{r['segment_rss_mib']:.0f}/{r['merge_rss_mib']:.0f}", f(r["bytes_per_particle"], "{:.1f}")))
    table(head, rows, fmt)
    # 2 ranks, or 2 threads, against one: the goal is >= 1.7x for every tool.
    base = {(r["grid"], r["threshold"]): r for r in out if not r.get("failed") and r["ranks"] == 1 and r["threads"] == 1}
    for r in out:
        b = base.get((r["grid"], r["threshold"]))
        if b is None or r is b or r.get("failed"):
            continue
        r["speedup_segment"] = b["segment_wall_s"] / r["segment_wall_s"]
        r["speedup_merge"] = b["merge_wall_s"] / r["merge_wall_s"]
        print(f"  {r['grid']}^3 {r['threshold']:>7} at {r['ranks']} rank(s) x {r['threads']} thread(s): segment "
              f"{r['speedup_segment']:.2f}x, merge {r['speedup_merge']:.2f}x one rank x one thread (wall)")
    print("phases (s, rank 0):")
    for r in out:
        if r.get("failed"):
            continue
        ph = lambda t: ", ".join(f"{k} {v:.2f}" for k, v in t.items() if k != "finish")
        print(f"  {r['grid']}^3 {r['ranks']}r x {r['threads']}t {r['threshold']:>7}: segment [{ph(r['segment_timings_s'])}]; "
              f"merge [{ph(r['merge_timings_s'])}]")
    return out


def step2(runs):
    out = []
    for tag in ("deblend_r1", "deblend_r2", "deblend_r1_t2"):
        r = runs.get(tag)
        if r is None:
            continue
        threads = int(r["info"].get("threads", 1))
        if r.get("failed"):
            out.append({"ranks": r["ranks"], "threads": threads, "failed": True, "wall_s": r.get("wall_s")})
            continue
        s, t = r["summary"], r["timings_s"]
        n = int(r["info"]["particles"])
        out.append({"ranks": r["ranks"], "threads": threads, "particles_read": n, "particles_in_patches": s["n_particles_in_patches"],
                    "peaks": s["n_peaks"], "split_patches": s["n_split_patches"], "new_peaks": s["n_new_peaks"],
                    "wall_s": r["wall_s"], "cpu_percent": r["cpu_percent"], "timings_s": t,
                    "particles_per_s_wall": n / r["wall_s"], "particles_per_s_deblend": n / t["deblend"],
                    "patch_particles_per_s_deblend": s["n_particles_in_patches"] / t["deblend"],
                    "rss_mib": r["rss_sum_mib"], "rss_per_rank_mib": r["rss_per_rank_mib"],
                    "bytes_per_particle": r["rss_sum_mib"] * MiB / n,
                    "peak_memory_rank0_bytes": s.get("peak_memory_rank0_bytes")})
    print("\n2. deblend, clustered 16,777,216-particle snapshot, clumps of 256^3 80mean (1 rank)")
    head = ("ranks", "thr", "particles", "in patches", "peaks", "split", "new", "wall s", "CPU%", "read s", "members s",
            "deblend s", "write s", "Mp/s wall", "Mp/s deblend", "RSS MiB", "RSS/rank", "B/particle")
    fmt = "{:>5} {:>3} {:>11} {:>11} {:>6} {:>6} {:>5} {:>7} {:>5} {:>7} {:>9} {:>9} {:>7} {:>9} {:>12} {:>8} {:>8} {:>10}"
    rows = []
    for r in out:
        if r.get("failed"):
            rows.append((r["ranks"], r["threads"], "FAILED") + ("-",) * 15)
            continue
        t = r["timings_s"]
        rows.append((r["ranks"], r["threads"], thousands(r["particles_read"]), thousands(r["particles_in_patches"]), thousands(r["peaks"]),
                     r["split_patches"], r["new_peaks"], f(r["wall_s"]), r["cpu_percent"], f(t.get("read")),
                     f(t.get("members")), f(t.get("deblend")), f(t.get("write")),
                     f(r["particles_per_s_wall"] / 1e6), f(r["particles_per_s_deblend"] / 1e6),
                     f"{r['rss_mib']:.0f}", f"{max(r['rss_per_rank_mib']):.0f}", f"{r['bytes_per_particle']:.0f}"))
    table(head, rows, fmt)
    return out


def voter_set(path):
    with h5py.File(path, "r") as h:
        return set(zip(h["/voters/peak"][...].tolist(), h["/voters/particle_id"][...].tolist()))


def step3(runs, c):
    out = []
    for tag in ("voters_clustered_compute", "voters_clustered_profile", "voters_synth_snapshot", "voters_synth_compute",
                "voters_synth_profile"):
        r = runs.get(tag)
        if r is None:
            continue
        row = {"tag": tag, "snapshot": r["info"].get("snapshot"), "potential": r["info"].get("potential"), "ranks": r["ranks"]}
        if r.get("failed"):
            row.update(failed=True, wall_s=r.get("wall_s"))
            out.append(row)
            continue
        s, t = r["summary"], dict(r["timings_s"])
        # The computed potential: 'long-range' (mesh), 'potential' (trees) and, lazily, inside 'voters'.
        t["gravity_setup"] = t.get("long-range", 0.0) + t.get("potential", 0.0)
        t["voters"] = t["voters"] + t["gravity_setup"]
        with h5py.File(r["output"], "r") as h:
            cand = int(h["/peaks/n_candidates"][...].sum())
            radius = h["/peaks/search_radius"][...]
            n_part = int(h["/grid"].attrs["n_particles"])
        row.update({"particles": n_part, "peaks": s["n_peaks"], "voters": s["n_voters"], "candidates": cand,
                    "search_radius_median": float(np.median(radius)) if len(radius) else None,
                    "wall_s": r["wall_s"], "cpu_percent": r["cpu_percent"], "timings_s": t,
                    "peaks_per_s_voters": s["n_peaks"] / t["voters"], "peaks_per_s_wall": s["n_peaks"] / r["wall_s"],
                    "candidates_per_s_voters": cand / t["voters"], "particles_per_s_wall": n_part / r["wall_s"],
                    "rss_mib": r["rss_sum_mib"], "bytes_per_particle": r["rss_sum_mib"] * MiB / n_part,
                    "potential_source": r["parameters"].get("potential_source")})
        out.append(row)
    print("\n3. voters (1 rank): 'voters s' = potential (computed: TreePM mesh + trees + walks; 'mesh+trees s' "
          "is the part before any peak) + selection; 'read' = reading the snapshot")
    head = ("snapshot", "potential", "particles", "peaks", "candidates", "wall s", "CPU%", "read s", "distrib s",
            "mesh+trees s", "voters s", "peaks/s vot", "peaks/s wall", "Mcand/s vot", "Mp/s wall", "RSS MiB", "B/particle")
    fmt = ("{:<10} {:<9} {:>11} {:>6} {:>10} {:>7} {:>5} {:>6} {:>9} {:>12} {:>8} {:>11} {:>12} {:>11} {:>9} {:>7} "
           "{:>10}")
    rows = []
    for r in out:
        if r.get("failed"):
            rows.append((r["snapshot"], r["potential"], "FAILED") + ("-",) * 14)
            continue
        t = r["timings_s"]
        rows.append((r["snapshot"], r["potential"], thousands(r["particles"]), thousands(r["peaks"]), thousands(r["candidates"]),
                     f(r["wall_s"]), r["cpu_percent"], f(t.get("read")), f(t.get("distribute")),
                     f(t.get("gravity_setup")), f(t.get("voters")), f(r["peaks_per_s_voters"], "{:,.1f}"), f(r["peaks_per_s_wall"], "{:,.1f}"),
                     f(r["candidates_per_s_voters"] / 1e6, "{:.3f}"), f(r["particles_per_s_wall"] / 1e6),
                     f"{r['rss_mib']:.0f}", f"{r['bytes_per_particle']:.0f}"))
    table(head, rows, fmt)
    extra = {}
    by = {r["tag"]: r for r in out if not r.get("failed")}
    if "voters_synth_snapshot" in by and "voters_synth_compute" in by:
        a, b = by["voters_synth_snapshot"], by["voters_synth_compute"]
        solve = b["timings_s"]["voters"] - a["timings_s"]["voters"]
        sa, sb = voter_set(runs["voters_synth_snapshot"]["output"]), voter_set(runs["voters_synth_compute"]["output"])
        extra = {"potential_solve_s": solve, "potential_solve_s_per_peak": solve / b["peaks"],
                 "potential_solve_candidates_per_s": b["candidates"] / solve if solve > 0 else None,
                 "read_extra_s_stored_potential": a["timings_s"]["read"] - b["timings_s"]["read"],
                 "same_voters_fraction": len(sa & sb) / max(1, len(sa))}
        print(f"potential solve (synthetic box): {solve:.2f} s = compute's 'voters' phase - snapshot's "
              f"({solve / b['peaks']:.3f} s per peak, {b['candidates'] / max(solve, 1e-9) / 1e6:.3f} M candidates/s); "
              f"reading Potential + Acceleration costs {extra['read_extra_s_stored_potential']:+.2f} s; "
              f"{extra['same_voters_fraction']:.1%} of the (peak, voter) pairs are the same with the stored and the computed potential")
    chain = {}
    for tag in ("synth_cic", "synth_seg", "synth_merge", "synth_deblend"):
        r = runs.get(tag)
        if r and not r.get("failed"):
            chain[tag] = {"wall_s": r["wall_s"], "rss_mib": r["rss_sum_mib"], "timings_s": r["timings_s"], "summary": r["summary"]}
    if chain:
        seg, mer, deb = (chain.get(k, {}).get("summary", {}) for k in ("synth_seg", "synth_merge", "synth_deblend"))
        print("synthetic chain: " + ", ".join(f"{k[6:]} {v['wall_s']:.1f} s / {v['rss_mib']:.0f} MiB" for k, v in chain.items()) +
              f"; {thousands(seg.get('n_test_cells'))} test cells, {thousands(seg.get('n_peaks'))} peaks, "
              f"{thousands(mer.get('n_clumps_level0'))} clumps, {thousands(deb.get('n_peaks'))} deblended peaks "
              f"({thousands(deb.get('n_new_peaks'))} new), {thousands(deb.get('n_particles_in_patches'))} particles in patches")
    gen = c.parent / "synth_scene_bg1e7_h300_s5.time"
    if gen.exists():
        g = gnu_time(gen)
        chain["synth_particles_generation"] = g
        print(f"synth-particles (scene: 1e7 background + 300 NFW halos, --potential --acceleration; cached): "
              f"{g['wall_s']:.1f} s wall, {g['cpu_percent']}% CPU, {g['rss_mib']:.0f} MiB")
    return {"runs": out, "comparison": extra, "synthetic_chain": chain}


def step4(runs):
    out = []
    for tag, r in runs.items():
        if not tag.startswith("tree_"):
            continue
        info = r["info"]
        st = json.loads(Path(info["stages"]).read_text())
        ns = int(info["snapshots"])
        stage_particles = float(np.mean([s["n_particles"] for s in st["stages"]]))
        stage_bytes = float(np.mean([s["peaks_bytes"] + s["voters_bytes"] for s in st["stages"]]))
        row = {"particles": st["particles"], "peaks": st["peaks_initial"], "snapshots": ns,
               "particles_per_stage": stage_particles, "stage_bytes": stage_bytes, "generation_s": st.get("seconds")}
        if r.get("failed"):
            row.update(failed=True, wall_s=r.get("wall_s"), rss_mib=r.get("rss_mib"))
            out.append(row)
            continue
        # Per-stage times from the verbose log: "mergertree[0] 56.7s verbose: linked X: N peaks".
        marks = [float(x) for x in re.findall(r"mergertree\[0\] ([\d.]+)s verbose: linked ", r["log"])]
        steps = np.diff(marks) if len(marks) > 1 else np.array([])
        s, t = r["summary"], r["timings_s"]
        row.update({"wall_s": r["wall_s"], "cpu_percent": r["cpu_percent"], "timings_s": t,
                    "s_per_snapshot": r["wall_s"] / ns, "link_s_per_snapshot": t["link"] / ns,
                    "first_stage_s": marks[0] if marks else None,
                    "s_per_linked_snapshot": float(steps.mean()) if len(steps) else None,
                    "s_per_linked_snapshot_each": steps.tolist(),
                    "rss_mib": r["rss_mib"], "bytes_per_particle": r["rss_mib"] * MiB / stage_particles,
                    "tree_bytes": r.get("output_bytes"),
                    "tree_bytes_per_particle": (r["output_bytes"] / stage_particles) if r.get("output_bytes") else None,
                    "summary": s})
        out.append(row)
    out.sort(key=lambda r: r["particles"])
    print("\n4. mergertree on synthetic stages (bench/mergertree_stages.py), 1 rank")
    head = ("particles", "peaks", "snaps", "stage MB", "wall s", "CPU%", "link s", "s/snap", "s/linked snap",
            "ns/particle/snap", "RSS MiB", "B/particle", "tree MB", "lineages", "mergers", "artefacts")
    fmt = "{:>11} {:>9} {:>5} {:>8} {:>7} {:>5} {:>7} {:>7} {:>13} {:>16} {:>8} {:>10} {:>8} {:>9} {:>8} {:>9}"
    rows = []
    for r in out:
        if r.get("failed"):
            rows.append((thousands(r["particles"]), thousands(r["peaks"]), r["snapshots"], f"{r['stage_bytes'] / 1e6:.0f}",
                         f(r.get("wall_s")), "FAILED") + ("-",) * 10)
            continue
        s = r["summary"]
        per = r["s_per_linked_snapshot"] or r["link_s_per_snapshot"]
        r["ns_per_particle_per_linked_snapshot"] = per / r["particles_per_stage"] * 1e9
        rows.append((thousands(r["particles"]), thousands(r["peaks"]), r["snapshots"], f"{r['stage_bytes'] / 1e6:.0f}",
                     f(r["wall_s"]), r["cpu_percent"], f(r["timings_s"]["link"]), f(r["s_per_snapshot"]),
                     f(r["s_per_linked_snapshot"]), f(r["ns_per_particle_per_linked_snapshot"], "{:.0f}"),
                     f"{r['rss_mib']:.0f}", f"{r['bytes_per_particle']:.1f}",
                     f(r["tree_bytes"] / 1e6 if r.get("tree_bytes") else None, "{:.0f}"),
                     thousands(s.get("n_lineages")), thousands(s.get("n_mergers")), thousands(s.get("n_artefacts"))))
    table(head, rows, fmt)
    ok = [r for r in out if not r.get("failed") and r.get("s_per_linked_snapshot")]
    if len(ok) > 1:
        print("growth (each size against the previous): " + "; ".join(
            f"{a['particles']:.0e} -> {r['particles']:.0e}: x{r['particles_per_stage'] / a['particles_per_stage']:.0f} particles, "
            f"x{r['s_per_linked_snapshot'] / a['s_per_linked_snapshot']:.1f} time per linked snapshot, "
            f"x{r['rss_mib'] / a['rss_mib']:.1f} RSS" for a, r in zip(ok, ok[1:])))
        print("(s/linked snap is the mean gap between the log's 'linked' lines, which have 0.1 s resolution: "
              "about +-0.03 s at 4 snapshots)")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chain_dir")
    ap.add_argument("json")
    ap.add_argument("--elapsed", type=float)
    a = ap.parse_args()
    c = Path(a.chain_dir)
    runs = load_runs(c)
    version = (c / "version.txt").read_text().strip() if (c / "version.txt").exists() else None
    result = {"version": version, "elapsed_s": a.elapsed,
              "segment_merge": step1(runs), "deblend": step2(runs), "voters": step3(runs, c), "mergertree": step4(runs),
              "runs": {k: {kk: vv for kk, vv in v.items() if kk != "log"} for k, v in runs.items()}}
    Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {a.json}" + (f" (benchmark took {a.elapsed:.0f} s)" if a.elapsed else ""))


if __name__ == "__main__":
    main()
