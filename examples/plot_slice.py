#!/usr/bin/python3
"""A slice through a phew-merge result: density (log) beside the cells coloured by clump and by halo.

Usage: plot_slice.py clumps.h5 grid.h5 OUT.png [--axis-index I]
"""
import argparse

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def colours(labels, seed=3):
    """Random but stable colours per label; 0 (no structure) is white."""
    rng = np.random.default_rng(seed)
    top = int(labels.max()) + 1
    lut = rng.uniform(0.15, 0.95, size=(top, 3))
    lut[0] = 1.0
    return lut[labels]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("clumps")
    ap.add_argument("grid")
    ap.add_argument("out")
    ap.add_argument("--index", type=int, help="x index of the slice (default: through the most massive halo)")
    a = ap.parse_args()
    with h5py.File(a.clumps) as c, h5py.File(a.grid) as g:
        rho = g["grid/density"][...]
        clump = c["cells/clump"][...]
        halo = c["cells/halo"][...]
        box = g["grid"].attrs["box_size"]
        units = g["grid"].attrs["length_units"]
        if a.index is None and len(c["halos/id"]):
            k = int(np.argmax(c["halos/mass"][...]))
            a.index = int(c["halos/peak_position"][k, 0] / box[0] * rho.shape[0])
        i = a.index or 0
    extent = [0, box[2], 0, box[1]]
    fig, ax = plt.subplots(1, 3, figsize=(13, 4.4), constrained_layout=True)
    mean = rho.mean()
    im = ax[0].imshow(np.log10(np.maximum(rho[i] / mean, 1e-2)), origin="lower", extent=extent, cmap="magma")
    fig.colorbar(im, ax=ax[0], label="log10 density / mean")
    ax[1].imshow(colours(clump[i]), origin="lower", extent=extent, interpolation="nearest")
    ax[2].imshow(colours(halo[i]), origin="lower", extent=extent, interpolation="nearest")
    for axis, title in zip(ax, ["density", "level-0 clumps", "haloes (saddle threshold)"]):
        axis.set_title(f"{title}, slice x = {i}")
        axis.set_xlabel(f"z [{units}]")
        axis.set_ylabel(f"y [{units}]")
    fig.savefig(a.out, dpi=80)


if __name__ == "__main__":
    main()
