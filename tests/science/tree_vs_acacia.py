#!/usr/bin/python3
"""phew's merger tree against ACACIA's (RAMSES' in-code tree, Ivkovic & Teyssier 2022) on the shared
RAMSES series: the main branches of the objects of the last output, per mass bin.

    tree_vs_acacia.py TREE_H5 LAST_PEAKS_H5 SERIES_DIR [--json FILE]
                      [--floor-ratio R] [--min-objects 5]

TREE_H5 is mergertree's tree.h5 over the series' outputs, LAST_PEAKS_H5 the peaks.h5 of its last stage
(the objects' particle counts), SERIES_DIR ../shared/data/ramses-cosmo-L20-N32-series. ACACIA's tree is
read from the series' independent conversion (`reference/clumps_NNN.h5`, group `mergertree`): nothing of
phew's readers is used.

Main-branch length: the outputs from the object back to its earliest main progenitor, both counted; a
link that skips outputs (ACACIA's `prog_outputnr`, phew's graveyard `gap`) counts the outputs it skips, as
the Sussing Merger Trees comparison counts them (Srisawat et al. 2013). ACACIA's main progenitor of a
clump is its row with a positive `progenitor` (a negative one merged into it; 0: a new clump). phew's is
`/peaks/main_progenitor_{snapshot,id}`; its artefacts (Geda & Teyssier Sec. 4.6) are left out.

Mass bins in particles: 100-500, 500-1000 and > 1000, each catalogue by its own counts (ACACIA's
`desc_npart`, phew's `/peaks/n_particles`), so the two sides' bins need not hold the same objects.
Also printed per bin: the fraction of objects whose main branch reaches the first output.

Mass growth along the main branches of the objects of >= 100 particles, as the Sussing Merger Trees
comparison measures it (Srisawat et al. 2013; mergertree --stats): beta_M = (2/pi) arctan alpha_M,
alpha_M = (t2 + t1)(M2 - M1) / [(t2 - t1)(M2 + M1)] between adjacent main-branch entries, with t the
cosmic time (flat LCDM with the run's Omega_m, info_NNNNN.txt) and M each catalogue's own mass (ACACIA's
`desc_mass`, phew's `/peaks/mass`), and its fluctuation xi_M = [beta_M(k, k+1) - beta_M(k-1, k)] / 2.

--floor-ratio R fails (exit 1) when, in a bin where both sides have at least --min-objects objects,
phew's mean length is below R times ACACIA's. Exit 3: unreadable input.
"""
import argparse
import glob
import json
import os
import sys

import h5py
import numpy as np

BINS = [(100, 500), (500, 1000), (1000, None)]


def cosmic_time(a, omega_m):
    """Cosmic time at scale factor a in units of 1/H0 (flat LCDM)."""
    x = np.linspace(1e-8, a, 4001)
    return np.trapz(1.0 / (x * np.sqrt(omega_m / x**3 + 1 - omega_m)), x)


def growth(branches, omega_m):
    """beta_M and xi_M over main branches: lists of (a, mass), earliest first."""
    betas, xis = [], []
    for b in branches:
        t = [cosmic_time(a, omega_m) for a, _ in b]
        m = [m for _, m in b]
        bs = []
        for k in range(1, len(b)):
            alpha = (t[k] + t[k - 1]) * (m[k] - m[k - 1]) / ((t[k] - t[k - 1]) * (m[k] + m[k - 1]))
            bs.append(2 / np.pi * np.arctan(alpha))
        betas += bs
        xis += [(bs[k] - bs[k - 1]) / 2 for k in range(1, len(bs))]
    def stats(v):
        v = np.asarray(v)
        return {"n": int(v.size), "mean": float(v.mean()) if v.size else float("nan"),
                "median": float(np.median(v)) if v.size else float("nan"),
                "std": float(v.std()) if v.size else float("nan")}
    out = {"beta_m": stats(betas), "xi_m": stats(xis)}
    out["beta_m"]["fraction_negative"] = float(np.mean(np.asarray(betas) < 0)) if betas else float("nan")
    return out


def bin_name(lo, hi):
    return f"{lo}-{hi}" if hi else f">{lo}"


def acacia_branches(series):
    """(lengths, particle counts) of the last output's clumps, following ACACIA's main progenitors."""
    files = sorted(glob.glob(os.path.join(series, "reference", "clumps_*.h5")))
    if not files:
        raise OSError(f"no reference/clumps_*.h5 in {series}")
    outputs = [int(os.path.basename(f)[7:10]) for f in files]
    first = outputs[0]
    main = {}  # (output, clump) -> (output of main progenitor, progenitor)
    mass = {}  # (output, clump) -> its mass
    aexp = {}
    last_rows = None
    for out, path in zip(outputs, files):
        with h5py.File(path, "r") as f:
            g = f["mergertree"]
            clump, prog, prog_out = g["clump"][:], g["progenitor"][:], g["prog_outputnr"][:]
            npart, dmass = g["desc_npart"][:], g["desc_mass"][:]
            aexp[out] = float(f.attrs["aexp"]) if "aexp" in f.attrs else None
        for c, p, po, m in zip(clump, prog, prog_out, dmass):
            mass.setdefault((out, int(c)), float(m))
            if p > 0:
                main[(out, int(c))] = (int(po), int(p))
        if out == outputs[-1]:
            # one row per clump of the last output: its particle count (rows repeat for merged progenitors)
            seen = {}
            for c, n in zip(clump, npart):
                seen.setdefault(int(c), float(n))
            last_rows = seen
    lengths, counts, branches = [], [], []
    for c, n in sorted(last_rows.items()):
        node, earliest = (outputs[-1], c), outputs[-1]
        branch = [node]
        while node in main:
            node = main[node]
            earliest = node[0]
            branch.append(node)
        lengths.append(outputs[-1] - earliest + 1)
        counts.append(n)
        if n >= 100:
            branches.append([(aexp[o], mass[(o, k)]) for o, k in reversed(branch) if (o, k) in mass])
    return np.array(lengths), np.array(counts), outputs[-1] - first + 1, branches


def phew_branches(tree_path, peaks_path):
    """(lengths, particle counts) of the last stage's non-artefact peaks, following main progenitors."""
    with h5py.File(tree_path, "r") as f:
        p = f["/peaks"]
        snap, pid = p["snapshot"][:], p["id"][:]
        ms, mi = p["main_progenitor_snapshot"][:], p["main_progenitor_id"][:]
        art, mass, time = p["artefact"][:], p["mass"][:], p["time"][:]
        n_snap = len(f["/snapshots/index"])
    row = {(int(s), int(i)): k for k, (s, i) in enumerate(zip(snap, pid))}
    with h5py.File(peaks_path, "r") as f:
        npart = dict(zip(f["/peaks/id"][:].tolist(), f["/peaks/n_particles"][:].tolist()))
    prog = {(int(s), int(i)): (int(a), int(b)) for s, i, a, b in zip(snap, pid, ms, mi) if a >= 0}
    last = int(snap.max())
    lengths, counts, branches = [], [], []
    for s, i, a in zip(snap, pid, art):
        if s != last or a:
            continue
        node, earliest = (int(s), int(i)), int(s)
        branch = [node]
        while node in prog:
            node = prog[node]
            earliest = node[0]
            branch.append(node)
        lengths.append(last - earliest + 1)
        counts.append(npart[int(i)])
        if npart[int(i)] >= 100:
            branches.append([(float(time[row[k]]), float(mass[row[k]])) for k in reversed(branch)])
    return np.array(lengths), np.array(counts), n_snap, branches


def omega_m_of(series):
    """Omega_m of the run, from the last output's info file."""
    info = sorted(glob.glob(os.path.join(series, "output_*", "info_*.txt")))
    if not info:
        raise OSError(f"no output_*/info_*.txt in {series}")
    for line in open(info[-1]):
        if line.split("=")[0].strip() == "omega_m":
            return float(line.split("=")[1])
    raise ValueError(f"{info[-1]}: no omega_m")


def per_bin(lengths, counts, n_outputs):
    rows = {}
    for lo, hi in BINS:
        sel = (counts >= lo) & ((counts < hi) if hi else True)
        n = int(sel.sum())
        rows[bin_name(lo, hi)] = {
            "n": n,
            "mean_length": float(lengths[sel].mean()) if n else float("nan"),
            "fraction_full": float((lengths[sel] == n_outputs).mean()) if n else float("nan"),
        }
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree")
    ap.add_argument("peaks")
    ap.add_argument("series")
    ap.add_argument("--json")
    ap.add_argument("--floor-ratio", type=float)
    ap.add_argument("--min-objects", type=int, default=5)
    args = ap.parse_args()
    try:
        a_len, a_n, a_outputs, a_branches = acacia_branches(args.series)
        p_len, p_n, p_outputs, p_branches = phew_branches(args.tree, args.peaks)
        omega_m = omega_m_of(args.series)
    except (OSError, KeyError, ValueError) as e:
        print(f"tree_vs_acacia.py: error: {e}", file=sys.stderr)
        return 3
    if a_outputs != p_outputs:
        print(f"tree_vs_acacia.py: error: the tree has {p_outputs} stages, the series {a_outputs} outputs",
              file=sys.stderr)
        return 3
    acacia, phew = per_bin(a_len, a_n, a_outputs), per_bin(p_len, p_n, p_outputs)
    print(f"main-branch length of the last output's objects (outputs, of {a_outputs}; "
          "full: reaching the first output)")
    print(f"{'particles':>10} | {'ACACIA n':>8} {'mean':>6} {'full':>5} | {'phew n':>6} {'mean':>6} {'full':>5}")
    failed = []
    for name in acacia:
        a, p = acacia[name], phew[name]
        print(f"{name:>10} | {a['n']:8d} {a['mean_length']:6.2f} {a['fraction_full']:5.2f} | "
              f"{p['n']:6d} {p['mean_length']:6.2f} {p['fraction_full']:5.2f}")
        if (args.floor_ratio is not None and min(a["n"], p["n"]) >= args.min_objects
                and p["mean_length"] < args.floor_ratio * a["mean_length"]):
            failed.append(f"{name}: phew {p['mean_length']:.2f} < {args.floor_ratio} x ACACIA {a['mean_length']:.2f}")
    a_growth, p_growth = growth(a_branches, omega_m), growth(p_branches, omega_m)
    print("mass growth along the main branches of the objects of >= 100 particles (Srisawat et al. 2013):")
    for name, key in (("beta_M", "beta_m"), ("xi_M", "xi_m")):
        a, p = a_growth[key], p_growth[key]
        print(f"{name:>10} | mean {a['mean']:6.3f} median {a['median']:6.3f} std {a['std']:5.3f} | "
              f"mean {p['mean']:6.3f} median {p['median']:6.3f} std {p['std']:5.3f}")
    print(f"{'beta_M < 0':>10} | {a_growth['beta_m']['fraction_negative']:5.2f} of {a_growth['beta_m']['n']} links | "
          f"{p_growth['beta_m']['fraction_negative']:5.2f} of {p_growth['beta_m']['n']} links")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"outputs": a_outputs, "acacia": dict(acacia, growth=a_growth),
                       "phew": dict(phew, growth=p_growth)}, f, indent=1)
    for line in failed:
        print(f"tree_vs_acacia.py: below the floor: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
