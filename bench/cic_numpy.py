#!/usr/bin/python3
"""The baseline for bench/cic_bench.sh: a straightforward numpy cloud-in-cell deposit.

Reads PartType1 of a Gadget-style HDF5 snapshot (one file, or a multi-file snapshot given by its
.0.hdf5 piece), deposits it with CIC on a periodic N^3 grid using np.add.at, and writes the density
as /grid/density (float64) so it can be compared with cic-project's output.

Convention (the same as cic-project, lib/grid/assignment.hpp): cell i spans [i, i+1) in cell units
u = x / L * N and is centred at i + 0.5. A particle at u touches cells f = floor(u - 0.5) and f + 1
(wrapped periodically) with weights 1 - d and d, d = (u - 0.5) - f. The mass a cell gets is
((m * wx) * wy) * wz, multiplied in that order as cic-project does, and density = mass / cell volume.

Usage
  cic_numpy.py SNAPSHOT --grid N [-o OUT.h5] [--json TIMES.json] [--compare PHEW.h5]

Prints timings (read, deposit, write) and writes them to --json. With --compare, prints the largest
relative difference |numpy - phew| / max(|phew|) over the grid cells (and per-cell relative
differences where phew's density is non-zero) against a cic-project output file.
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

import h5py
import numpy as np

CHUNK = 1 << 22  # particles deposited per pass, to bound the temporary arrays (~200 MB)


def snapshot_files(path):
    """The pieces of a (possibly multi-file) snapshot, from any one of them."""
    with h5py.File(path, "r") as f:
        nfiles = int(f["Header"].attrs.get("NumFilesPerSnapshot", 1))
    if nfiles <= 1:
        return [Path(path)]
    m = re.fullmatch(r"(.*)\.\d+\.hdf5", str(path))
    if not m:
        sys.exit(f"{path}: a {nfiles}-file snapshot must be named NAME.i.hdf5")
    return [Path(f"{m.group(1)}.{i}.hdf5") for i in range(nfiles)]


def read_snapshot(path):
    """Positions (float64 [n][3]), masses (float64 [n]) and the box size of PartType1."""
    pos, mass = [], []
    box = None
    for p in snapshot_files(path):
        with h5py.File(p, "r") as f:
            h = f["Header"].attrs
            box = float(np.atleast_1d(h["BoxSize"])[0])
            n = int(h["NumPart_ThisFile"][1])
            if n == 0:
                continue
            g = f["PartType1"]
            pos.append(g["Coordinates"][:].astype(np.float64))
            table = float(h["MassTable"][1])
            mass.append(np.full(n, table) if table > 0 else g["Masses"][:].astype(np.float64))
    return np.concatenate(pos), np.concatenate(mass), box


def cic_1d(u, n):
    """Lower cell index (wrapped), upper cell index (wrapped) and the two weights along one axis."""
    s = u - 0.5
    f = np.floor(s)
    d = s - f
    i0 = f.astype(np.int64) % n
    i1 = (i0 + 1) % n
    return i0, i1, 1.0 - d, d


def deposit(pos, mass, box, n):
    """Mass per cell of an n^3 periodic grid, float64 [n][n][n]."""
    grid = np.zeros(n * n * n, np.float64)
    scale = n / box
    for a in range(0, len(mass), CHUNK):
        u = pos[a:a + CHUNK] * scale
        u[u >= n] -= n  # rounding at the upper edge, as cic-project does
        u[u < 0] += n
        xi = cic_1d(u[:, 0], n)
        yi = cic_1d(u[:, 1], n)
        zi = cic_1d(u[:, 2], n)
        m = mass[a:a + CHUNK]
        for ox in (0, 1):
            mx = m * xi[2 + ox]
            for oy in (0, 1):
                mxy = mx * yi[2 + oy]
                row = (xi[ox] * n + yi[oy]) * n
                for oz in (0, 1):
                    np.add.at(grid, row + zi[oz], mxy * zi[2 + oz])
    return grid.reshape(n, n, n)


def compare(density, phew_path):
    with h5py.File(phew_path, "r") as f:
        ref = f["grid/density"][:].astype(np.float64)
    if ref.shape != density.shape:
        sys.exit(f"{phew_path}: grid shape {ref.shape}, numpy grid {density.shape}")
    diff = np.abs(density - ref)
    nz = ref != 0
    return {
        "max_abs_diff": float(diff.max()),
        "max_rel_diff_to_max": float(diff.max() / np.abs(ref).max()),
        "max_rel_diff_per_cell": float((diff[nz] / np.abs(ref[nz])).max()) if nz.any() else 0.0,
        "cells_nonzero_mismatch": int(np.count_nonzero((ref == 0) != (density == 0))),
        "total_rel_diff": float(abs(density.sum() - ref.sum()) / ref.sum()),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot")
    ap.add_argument("-g", "--grid", type=int, required=True, help="cells per side")
    ap.add_argument("-o", "--output", help="write the density to this HDF5 file (/grid/density)")
    ap.add_argument("--json", help="write timings (and the comparison) to this JSON file")
    ap.add_argument("--compare", help="a cic-project output (ideally --precision float64) to compare with")
    args = ap.parse_args()

    t0 = time.perf_counter()
    pos, mass, box = read_snapshot(args.snapshot)
    t1 = time.perf_counter()
    grid = deposit(pos, mass, box, args.grid)
    del pos
    cell_volume = (box / args.grid) ** 3
    grid *= 1.0 / cell_volume  # as cic-project: mass * (1 / cell volume)
    t2 = time.perf_counter()
    if args.output:
        with h5py.File(args.output, "w") as f:
            f.create_dataset("grid/density", data=grid)
    t3 = time.perf_counter()

    result = {"particles": int(len(mass)), "grid": args.grid,
              "timings": {"read": t1 - t0, "deposit": t2 - t1, "write": t3 - t2}, "total": t3 - t0}
    print(f"cic_numpy: {len(mass)} particles on {args.grid}^3: read {t1 - t0:.2f} s, deposit {t2 - t1:.2f} s "
          f"({len(mass) / (t2 - t1) / 1e6:.2f} Mparticles/s), write {t3 - t2:.2f} s", file=sys.stderr)
    if args.compare:
        result["compare"] = compare(grid, args.compare)
        c = result["compare"]
        print(f"cic_numpy: vs {args.compare}: max |diff| / max|phew| = {c['max_rel_diff_to_max']:.3e}, "
              f"max per-cell relative diff = {c['max_rel_diff_per_cell']:.3e}, "
              f"zero-pattern mismatches = {c['cells_nonzero_mismatch']}, total mass rel diff = {c['total_rel_diff']:.3e}",
              file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
