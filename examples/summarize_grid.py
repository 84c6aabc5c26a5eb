#!/usr/bin/python3
"""Print a short summary of a phew grid file and its manifest: python3 summarize_grid.py grid.h5"""
import json
import sys

import h5py
import numpy as np


def main(path):
    with h5py.File(path) as f:
        g = f["grid"]
        d = g["density"][...].astype(np.float64)
        a = g.attrs
        units = a["units"]
        print(f"{path}: {a['assignment']} density on {d.shape[0]}x{d.shape[1]}x{d.shape[2]} cells, "
              f"box {a['box_size'][0]:g} {a['length_units']}")
        print(f"  particles {a['n_particles']}, total mass {a['total_mass']:.6g} {a['mass_units']}")
        print(f"  mean density {a['mean_density']:.4g} {units}", end="")
        if "critical_density" in a:
            print(f" = {a['mean_density'] / a['critical_density']:.3f} x critical", end="")
        print()
        rel = d / a["mean_density"]
        print(f"  density / mean: min {rel.min():.3g}, median {np.median(rel):.3g}, max {rel.max():.3g}; "
              f"cells above 80x mean: {(rel > 80).mean():.2%}")
    m = json.load(open(path + ".json"))
    print(f"  made by {m['tool']['name']} {m['tool']['version']} on {m['ranks']} rank(s) in "
          f"{sum(m['timings'].values()):.2f} s; manifest id {m['id']}")


if __name__ == "__main__":
    main(sys.argv[1])
