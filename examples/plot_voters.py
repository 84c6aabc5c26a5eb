#!/usr/bin/python3
"""Geda & Teyssier Fig. 5 for a voters result: position along x versus the potential (top) and the
boosted potential (bottom) of the particles around one peak, voters in red. Needs a snapshot with a
stored Potential and Acceleration.

Usage: plot_voters.py voters.h5 peaks.h5 SNAPSHOT.hdf5 OUT.png [--peak ID]
"""
import argparse

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("voters")
    ap.add_argument("peaks")
    ap.add_argument("snapshot")
    ap.add_argument("out")
    ap.add_argument("--peak", type=int, help="default: the least massive peak")
    a = ap.parse_args()
    with h5py.File(a.peaks) as p:
        ids, pos, mass = p["peaks/id"][...], p["peaks/position"][...], p["peaks/mass"][...]
    peak = a.peak if a.peak is not None else int(ids[np.argmin(mass)])
    x0 = pos[ids == peak][0]
    with h5py.File(a.voters) as v:
        k = v["peaks/id"][...] == peak
        a0, rs = v["peaks/a0"][...][k][0], v["peaks/search_radius"][...][k][0]
        voters = v["voters/particle_id"][...][v["voters/peak"][...] == peak]
    with h5py.File(a.snapshot) as s:
        g = s["PartType1"]
        x, phi, pid = g["Coordinates"][...] - x0, g["Potential"][...], g["ParticleIDs"][...]
    near = np.abs(x[:, 0]) < 4 * rs
    inside = (x ** 2).sum(axis=1) < rs ** 2
    boosted = phi + x @ a0
    isv = np.isin(pid, voters)
    fig, ax = plt.subplots(2, 1, figsize=(6, 7), sharex=True, constrained_layout=True)
    for axis, y, title in [(ax[0], phi, "potential"), (ax[1], boosted, "boosted potential")]:
        axis.scatter(x[near, 0], y[near], s=1, color="0.75", label="particles")
        axis.scatter(x[near & inside, 0], y[near & inside], s=1, color="0.35", label="within the search radius")
        axis.scatter(x[isv, 0], y[isv], s=8, color="red", label="voters")
        axis.axvspan(-rs, rs, color="C0", alpha=0.08)
        axis.set(ylabel=title)
    ax[1].set_xlabel(f"x - x_peak (peak {peak})")
    ax[0].legend(markerscale=6, loc="lower left")
    fig.savefig(a.out, dpi=80)


if __name__ == "__main__":
    main()
