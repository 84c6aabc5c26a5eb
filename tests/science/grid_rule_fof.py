#!/usr/bin/python3
"""The grid rule finds the haloes a friends-of-friends finder finds (docs/thresholds.md, "The grid").

On both shared cosmological runs (Gadget-4 z = 0 and RAMSES a = 1.004, 32^3 dark-matter particles each)
this runs what the tutorial tells users to run:

    cic-project SNAPSHOT --grid auto
    phew-segment --threshold 80mean
    phew-merge --relevance 3 --saddle-threshold 200mean

and an independent FoF written here (b = 0.2 times the mean spacing of the dark-matter particles,
periodic, scipy's cKDTree), and requires that at least 90% of the FoF groups of >= 50 particles are
found by a phew halo.

Matching: every dark-matter particle takes the phew halo of the grid cell it lies in (the cell that
contains its position, as `phew-merge --particles` assigns particles). A FoF group is found when one
phew halo holds at least half of its particles, and a phew halo finds only one group: the one it holds
most particles of. So two FoF groups that phew joins into one halo count once, and a halo cannot be
credited for a group it only grazes.

    grid_rule_fof.py [--bin DIR] [--data DIR]   (defaults: $PHEW_BIN and $PHEW_SHARED_DATA, as CTest sets them)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

MIN_GROUP = 50
REQUIRED = 0.90
# name, the snapshot the tools read, the same particles as HDF5 for the FoF (RAMSES: the shared data's
# independent conversion of output_00004, comoving Mpc/h like phew's RAMSES reader)
RUNS = [
    ("gadget4 z=0", "gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5", "gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"),
    ("ramses a=1.004", "ramses-cosmo-L20-N32/output_00004", "ramses-cosmo-L20-N32/reference/snap_004.hdf5"),
]


def dark_matter(path):
    with h5py.File(path, "r") as f:
        box = float(np.atleast_1d(f["Header"].attrs["BoxSize"])[0])
        x = f["PartType1/Coordinates"][...].astype(np.float64)
    return np.mod(x, box), box


def fof(x, box, b=0.2):
    """Group label of every particle: friends within b times the mean interparticle spacing."""
    link = b * box / len(x) ** (1.0 / 3.0)
    pairs = cKDTree(x, boxsize=box).query_pairs(link, output_type="ndarray")
    n = len(x)
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def halo_of_particles(clumps, x):
    """The phew halo of the cell each particle lies in (0: none)."""
    with h5py.File(clumps, "r") as f:
        g = f["grid"].attrs
        shape, origin, cell = np.asarray(g["shape"]), np.asarray(g["origin"]), np.asarray(g["cell_size"])
        dense = np.zeros(int(np.prod(shape)), np.int64)
        dense[f["cells/index"][...]] = f["cells/halo"][...]
    c = np.floor((x - origin) / cell).astype(np.int64) % shape
    return dense[(c[:, 0] * shape[1] + c[:, 1]) * shape[2] + c[:, 2]], shape


def found_groups(group, halo):
    """(groups of >= MIN_GROUP particles, how many of them a phew halo finds) by the rule of the docstring."""
    big = np.nonzero(np.bincount(group) >= MIN_GROUP)[0]
    best = {}  # halo -> (particles of the group in it, group)
    for gi in big:
        h = halo[group == gi]
        h = h[h > 0]
        if len(h) == 0:
            continue
        counts = np.bincount(h)
        top = int(counts.argmax())
        if 2 * counts[top] >= np.count_nonzero(group == gi):
            best[top] = max(best.get(top, (0, -1)), (int(counts[top]), int(gi)))
    return len(big), len(best)


def run(tools, cmd):
    subprocess.run([os.path.join(tools, cmd[0])] + cmd[1:] + ["-q"], check=True)


def check(a, work, i, case):
    """Runs the chain on one run and matches it with the FoF; returns the failure line or None."""
    name, snap, fof_snap = case
    out = os.path.join(work, f"{i}.")
    run(a.bin, ["cic-project", os.path.join(a.data, snap), "-o", out + "grid.h5", "--grid", "auto"])
    run(a.bin, ["phew-segment", out + "grid.h5", "-o", out + "patches.h5", "--threshold", "80mean"])
    run(a.bin, ["phew-merge", out + "patches.h5", "-o", out + "clumps.h5", "--relevance", "3",
                "--saddle-threshold", "200mean"])
    x, box = dark_matter(os.path.join(a.data, fof_snap))
    halo, shape = halo_of_particles(out + "clumps.h5", x)
    groups, found = found_groups(fof(x, box), halo)
    line = f"{name}: grid {shape[0]}x{shape[1]}x{shape[2]}, {found} of {groups} FoF groups of >= {MIN_GROUP} " \
           f"particles found by a phew halo ({100.0 * found / groups:.0f}%)"
    print(line)
    return line if found < REQUIRED * groups else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("PHEW_BIN", ""))
    ap.add_argument("--data", default=os.environ.get("PHEW_SHARED_DATA", ""))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="grid_rule_fof.") as work:
        failed = [check(a, work, i, case) for i, case in enumerate(RUNS)]
    failed = [line for line in failed if line]
    for line in failed:
        print(f"FAIL (need {100 * REQUIRED:.0f}%): {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
