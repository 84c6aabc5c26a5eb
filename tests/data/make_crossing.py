#!/usr/bin/python3
"""Two Plummer spheres passing through each other ballistically (Geda & Teyssier Fig. 1), as a series
of Gadget-style snapshots with particle IDs kept, for the merger-tree tests.

Usage: make_crossing.py OUTDIR [--snapshots K] [--n N] [--speed V] [--seed S] [--relabel]
Writes OUTDIR/snap_000.hdf5 ... and OUTDIR/truth.npy (halo of each particle, by ID - 1). The spheres
start 120 kpc apart on the x axis (offset 3 kpc in y) and move at +-V/2 km/s; "ballistic" means each
keeps its shape and moves with its bulk velocity. Time is in kpc/(km/s).
"""
import argparse
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from make_overlap import BOX, plummer, write_snapshot  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--snapshots", type=int, default=9)
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--speed", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    out = Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    parts = []
    for h, sign in enumerate((+1, -1)):
        p, v = plummer(rng, a.n, 1.0, 10.0)
        start = np.array([BOX / 2 - sign * 60.0, BOX / 2 + sign * 1.5, BOX / 2])
        bulk = np.array([sign * a.speed / 2, 0.0, 0.0])
        parts.append((p, v, start, bulk))
    n = 2 * a.n
    ids = rng.permutation(n) + 1  # particle IDs are not in halo order
    truth = np.empty(n, dtype=int)
    truth[ids[: a.n] - 1] = 0
    truth[ids[a.n:] - 1] = 1
    np.save(out / "truth.npy", truth)
    t_end = 2 * 120.0 / a.speed  # time for the spheres to pass and separate by 120 kpc again
    for k in range(a.snapshots):
        t = t_end * k / (a.snapshots - 1)
        pos = np.concatenate([p + s + b * t for p, v, s, b in parts]) % BOX
        vel = np.concatenate([v + b for p, v, s, b in parts])
        with h5py.File(out / f"snap_{k:03d}.hdf5", "w") as f:
            write_snapshot(f, pos, vel, ids, t, [0, 1.0 / a.n, 0, 0, 0, 0])


if __name__ == "__main__":
    main()
