#!/usr/bin/python3
"""The baseline for bench/segment_bench.sh: scikit-image's marker-based watershed on a phew grid.

Reads /grid/density of a cic-project grid (grid.h5) and, from a phew-segment output (patches.h5), the
threshold (/cells attribute `threshold`, absolute, grid units) and the peaks (/peaks/id, /peaks/cell:
linear index (i*ny + j)*nz + k). Then runs

  skimage.segmentation.watershed(-density, markers, connectivity=3, mask=density > threshold)

with markers[peak cell] = peak ID: 26-connectivity, flooding from phew's peaks over the test cells. So
the two label the same cells with the same IDs and can be compared cell by cell.

Differences to expect (not bugs of either): skimage's grid is not periodic (test cells joined to a
peak only across a box face stay unlabelled, and chains crossing a face may end elsewhere), and a
priority flood assigns a cell to the neighbour that reached it first, while phew follows each cell's
densest neighbour (steepest ascent), so cells on patch boundaries and plateaus may differ.

Usage
  segment_skimage.py GRID.h5 PATCHES.h5 [--json TIMES.json]

Prints and writes (--json) the timings (read, prep, watershed, compare), with `watershed` being the
skimage call alone, and the agreement: the fraction of test cells whose label equals phew's.
"""

import argparse
import json
import time

import h5py
import numpy as np
from skimage import __version__ as skimage_version
from skimage.segmentation import watershed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grid", help="cic-project output (grid.h5)")
    ap.add_argument("patches", help="phew-segment output of the same grid (patches.h5)")
    ap.add_argument("--json", help="write timings and agreement here")
    args = ap.parse_args()
    t = {}

    t0 = time.perf_counter()
    with h5py.File(args.grid, "r") as f:
        density = f["/grid/density"][...]
    with h5py.File(args.patches, "r") as f:
        threshold = float(f["/cells"].attrs["threshold"])
        ids = f["/peaks/id"][...]
        cells = f["/peaks/cell"][...]
    t["read"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    mask = density > threshold  # the test cells (strictly above, as phew)
    markers = np.zeros(density.shape, dtype=np.int32)
    markers.reshape(-1)[cells] = ids
    image = np.negative(density)  # watershed floods from minima: flood -density from the peaks
    del density
    t["prep"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    labels = watershed(image, markers, connectivity=3, mask=mask)
    t["watershed"] = time.perf_counter() - t0
    del image, markers

    t0 = time.perf_counter()
    n_test = int(np.count_nonzero(mask))
    ours = labels[mask]
    del labels
    with h5py.File(args.patches, "r") as f:  # the test cells only (docs/formats.md): made dense here
        dense = np.zeros(mask.size, dtype=np.int64)
        dense[f["/cells/index"][...]] = f["/cells/peak"][...]
        theirs = dense.reshape(mask.shape)[mask]
        del dense
    same = int(np.count_nonzero(ours == theirs))
    unlabelled = int(np.count_nonzero(ours == 0))
    # The same, away from the box faces (where skimage's non-periodic grid matters most).
    interior = np.zeros(mask.shape, dtype=bool)
    interior[2:-2, 2:-2, 2:-2] = True
    inner = interior[mask]
    n_inner = int(np.count_nonzero(inner))
    same_inner = int(np.count_nonzero((ours == theirs) & inner))
    t["compare"] = time.perf_counter() - t0

    result = {
        "skimage_version": skimage_version,
        "connectivity": 3,
        "threshold": threshold,
        "n_cells": int(mask.size),
        "n_test_cells": n_test,
        "n_markers": int(len(ids)),
        "timings": t,
        "agreement": {
            "same_label": same,
            "fraction_same_label": same / n_test if n_test else None,
            "unlabelled_by_skimage": unlabelled,
            "interior_test_cells": n_inner,
            "fraction_same_label_interior": same_inner / n_inner if n_inner else None,
        },
    }
    print(f"skimage {skimage_version}: {n_test:,} test cells, {len(ids):,} markers; "
          + ", ".join(f"{k} {v:.2f} s" for k, v in t.items()))
    print(f"agreement with phew: {result['agreement']['fraction_same_label']:.4%} of test cells "
          f"({result['agreement']['fraction_same_label_interior']:.4%} more than 2 cells from a face); "
          f"{unlabelled:,} left unlabelled by skimage")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
