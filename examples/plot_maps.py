#!/usr/bin/python3
"""Draw surface-density maps from dtfe-surface's maps.h5 (Debian's /usr/bin/python3, h5py, matplotlib).

  plot_maps.py maps.h5 [more.h5 ...] out.png [--fields 0,1,2] [--decades 4] [--profile]

One panel per field of each file: log10 of Sigma over `decades` decades below the field's maximum, in
the map's own axes (snapshot length units, relative to the field's centre), with a colour bar in the
file's units; NaN pixels (outside the triangulated hull) in grey. --profile adds the azimuthally
averaged profile of each field below its map (over its finite pixels).
"""
import argparse

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="maps.h5 files, then the output image")
    ap.add_argument("--fields", default="0", help="comma-separated field rows (default 0)")
    ap.add_argument("--decades", type=float, default=4.0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--dpi", type=int, default=110)
    a = ap.parse_args()
    if len(a.files) < 2:
        ap.error("give at least one maps.h5 and the output image")
    *inputs, out = a.files
    rows = [int(k) for k in a.fields.split(",")]
    fields = []
    for path in inputs:
        with h5py.File(path) as f:
            m = f["maps"]
            meta = (m.attrs["units"], m.attrs["length_units"], m.attrs["u_axis"], m.attrs["v_axis"], m.attrs["mode"])
            for k in rows:
                fields.append((m["sigma"][k].astype(np.float64), m["size"][k], m["center"][k], m["id"][k], meta))
    n = len(fields)
    fig, axes = plt.subplots(2 if a.profile else 1, n, figsize=(4.6 * n, 8.6 if a.profile else 4.3),
                             constrained_layout=True, squeeze=False)
    for k, (s, size, centre, fid, (units, lunits, uax, vax, mode)) in enumerate(fields):
        top = np.nanmax(s) if np.isfinite(s).any() else 0.0
        lo = np.log10(top) - a.decades if top > 0 else 0
        img = np.log10(np.maximum(s, 10 ** lo)).T  # sigma[i][j]: i along u (horizontal), j along v (vertical)
        ax = axes[0][k]
        cmap = matplotlib.colormaps["magma"].with_extremes(bad="0.6")
        im = ax.imshow(img, origin="lower", cmap=cmap, extent=[-size / 2, size / 2, -size / 2, size / 2],
                       vmin=lo, vmax=np.log10(top) if top > 0 else 1)
        ax.set(xlabel=f"{uax} - {centre['xyz'.index(uax)]:.6g}  [{lunits}]",
               ylabel=f"{vax} - {centre['xyz'.index(vax)]:.6g}  [{lunits}]",
               title=f"field {fid} ({mode}, {s.shape[0]}$^2$ pixels)")
        fig.colorbar(im, ax=ax, shrink=0.85, label=f"log10 Sigma  [{units}]")
        if a.profile:
            ng = s.shape[0]
            x = (np.arange(ng) + 0.5) * size / ng - size / 2
            r = np.hypot(*np.meshgrid(x, x, indexing="ij"))
            edges = np.geomspace(size / ng, size / 2, 30)
            mid, prof = [], []
            for r0, r1 in zip(edges[:-1], edges[1:]):
                sel = (r >= r0) & (r < r1) & np.isfinite(s)
                if sel.any():
                    mid.append(np.sqrt(r0 * r1))
                    prof.append(s[sel].mean())
            axes[1][k].loglog(mid, prof, "o-", ms=3)
            axes[1][k].set(xlabel=f"R [{lunits}]", ylabel=f"mean Sigma(R) [{units}]")
    fig.savefig(out, dpi=a.dpi)


if __name__ == "__main__":
    main()
