#!/usr/bin/python3
"""Geda & Teyssier Fig. 1 for a deblend result: positions (top) and velocities (bottom) of the particles
of one patch, coloured by the peak deblend gave them.

Usage: plot_velocity.py peaks.h5 SNAPSHOT.hdf5 OUT.png [--clump ID]
"""
import argparse

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("peaks")
    ap.add_argument("snapshot")
    ap.add_argument("out")
    ap.add_argument("--clump", type=int, help="patch to draw (default: the first that was split)")
    ap.add_argument("--type", type=int, default=1)
    a = ap.parse_args()
    with h5py.File(a.peaks) as f:
        ids, parent, split = f["peaks/id"][...], f["peaks/parent_clump"][...], f["peaks/from_deblending"][...]
        pid, ppeak = f["particles/id"][...], f["particles/peak"][...]
    clump = a.clump if a.clump is not None else int(parent[split == 1][0] if split.any() else parent[0])
    mine = ids[parent == clump]
    with h5py.File(a.snapshot) as s:
        g = s[f"PartType{a.type}"]
        sid = g["ParticleIDs"][...]
        order = np.argsort(sid)
        x, v = g["Coordinates"][...][order], g["Velocities"][...][order]
        sid = sid[order]
    sel = np.isin(ppeak, mine)
    rows = np.searchsorted(sid, pid[sel])
    fig, ax = plt.subplots(2, 1, figsize=(5, 9), constrained_layout=True)
    for k, p in enumerate(mine):
        m = ppeak[sel] == p
        label = f"peak {p}" + (" (velocity space)" if split[ids == p][0] else " (primary)")
        ax[0].scatter(x[rows[m], 0], x[rows[m], 1], s=1, alpha=0.4, label=label, color=f"C{k + 1}")
        ax[1].scatter(v[rows[m], 0], v[rows[m], 1], s=1, alpha=0.4, color=f"C{k + 1}")
    ax[0].set(xlabel="x", ylabel="y", title=f"patch {clump}: positions")
    ax[1].set(xlabel="v_x", ylabel="v_y", title="velocities")
    ax[0].legend(markerscale=8, loc="upper right")
    fig.savefig(a.out, dpi=80)


if __name__ == "__main__":
    main()
