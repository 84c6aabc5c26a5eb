#!/usr/bin/python3
"""Pictures from phew's HDF5 files, one command each (Debian's /usr/bin/python3, matplotlib, h5py).

  phewplot.py slice       clumps.h5 grid.h5 out.png      density slice, clump outlines coloured by halo
  phewplot.py massfunction clumps.h5 out.png             N(>M) of level-0 clumps and haloes
  phewplot.py dendrogram  clumps.h5 out.png [--halo ID]  saddle hierarchy of a halo (PHEW Fig. 2 style)
  phewplot.py maps        maps.h5 out.png                surface-density maps (log scale)
  phewplot.py paths       out.png tree.h5... [--titles A,B]  peak paths coloured by lineage (Geda Fig. 6/7)
  phewplot.py velocity    peaks.h5 SNAPSHOT out.png      a deblended patch in position and velocity space
  phewplot.py voters      voters.h5 peaks.h5 SNAPSHOT out.png   position vs (boosted) potential, voters red
  phewplot.py ramses      clumps.h5 RAMSES_OUTPUT out.png [--grid grid.h5]  phew vs RAMSES' in-code PHEW
                          (ramses_phew.py: matched haloes and clumps, mass ratios, offsets)
  phewplot.py treestats   stats.json out.png             tree-quality statistics (mergertree --stats;
                          Srisawat et al. 2013 Fig. 3-6 style)
  phewplot.py labels      patches.h5|clumps.h5 out.h5    the cell labels as dense int grids /peak or
                          /clump and /halo [nx][ny][nz] (the files store the test cells only)
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
    lut = rng.uniform(0.15, 0.95, size=(int(labels.max()) + 1, 3))
    lut[0] = 1.0
    return lut[labels]


def dense_labels(path, name):
    """/cells/NAME of patches.h5 ('peak') or clumps.h5 ('clump', 'halo') as a dense grid [nx][ny][nz], 0
    where there is no test cell. The files store the test cells only (docs/formats.md, format version 2):
    /cells/index, their global cell indices (i*ny + j)*nz + k, and one label each in /cells/NAME."""
    with h5py.File(path, "r") as f:
        version = int(f.attrs.get("format_version", 1))
        if version != 2:
            raise SystemExit(f"{path}: format version {version}; this phewplot reads version 2 (sparse /cells)")
        shape = tuple(int(n) for n in f["grid"].attrs["shape"])
        labels = f[f"cells/{name}"]
        dense = np.zeros(int(np.prod(shape)), dtype=labels.dtype)
        dense[f["cells/index"][...]] = labels[...]
    return dense.reshape(shape)


def labels(a):
    with h5py.File(a.file, "r") as f:
        names = [n for n in ("peak", "clump", "halo") if f"cells/{n}" in f]
    with h5py.File(a.out, "w") as out:
        for n in names:
            out.create_dataset(n, data=dense_labels(a.file, n), compression="gzip", shuffle=True)
            out[n].attrs["description"] = f"/cells/{n} of {a.file} on every cell; 0 = no test cell"
    print(f"{a.out}: {', '.join('/' + n for n in names)}")


def treestats(a):
    import json
    s = json.load(open(a.stats))
    fig, ax = plt.subplots(2, 3, figsize=(13, 7.5), constrained_layout=True)
    groups = [(k, s[k]) for k in ("haloes", "subhaloes") if s[k]["n_trees"] > 0]

    def steps(axis, dist, label, log_x=False):
        edges, counts = np.array(dist["histogram"]["edges"], dtype=float), np.array(dist["histogram"]["counts"])
        if log_x:  # the last edge is open: draw it one decade on
            edges[0] = max(edges[1] / 10, 1e-4)
            edges[-1] = edges[-2] * 10
        axis.stairs(counts, edges, label=f"{label} ({dist['n']})")
        if log_x:
            axis.set_xscale("log")

    for name, g in groups:
        steps(ax[0, 0], g["main_branch_length"], name)
        steps(ax[0, 1], g["branches_per_tree"], name)
        k = sorted(int(x) for x in g["n_progenitors"])
        shift = 0.0 if len(groups) == 1 else (0.2 if name == "subhaloes" else -0.2)
        ax[0, 2].bar(np.array(k) + shift, [g["n_progenitors"][str(x)] for x in k], width=0.4, label=name)
        steps(ax[1, 0], g["beta_m"], name)
        steps(ax[1, 1], g["xi_m"], name)
        steps(ax[1, 2], g["delta_r"], f"{name}, {g['delta_r_fraction_above_1']:.1%} > 1", log_x=True)
    ax[0, 0].set(xlabel="main branch length [snapshots]", ylabel="trees")
    ax[0, 1].set(xlabel="branches per tree (leaves)", ylabel="trees")
    ax[0, 2].set(xlabel="direct progenitors", ylabel="peaks", yscale="log")
    ax[1, 0].set(xlabel=r"mass growth $\beta_M$", ylabel="links")
    ax[1, 1].set(xlabel=r"mass fluctuation $\xi_M$", ylabel="pairs of links")
    ax[1, 2].set(xlabel=r"displacement $\Delta_r$", ylabel="links")
    ax[1, 2].axvline(1, color="k", lw=0.8, ls="--")
    for axis in ax.flat:
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    c = s["counts"]
    fig.suptitle(f"merger-tree statistics: {s['n_snapshots']} snapshots, {c['peaks']} peaks, {c['lineages']} lineages, "
                 f"{c['mergers']} mergers, {c['revived']} revivals, {c['links_skipping_snapshots']} links skipping "
                 f"snapshots, {c['artefacts']} artefacts")
    fig.savefig(a.out, dpi=80)


def slice_(a):
    with h5py.File(a.clumps) as c, h5py.File(a.grid) as g:
        rho, clump, halo = g["grid/density"][...], dense_labels(a.clumps, "clump"), dense_labels(a.clumps, "halo")
        box, units = g["grid"].attrs["box_size"], g["grid"].attrs["length_units"]
        i = a.index
        if i is None:
            k = int(np.argmax(c["halos/mass"][...])) if len(c["halos/id"]) else 0
            i = int(c["halos/peak_position"][k, 0] / box[0] * rho.shape[0]) if len(c["halos/id"]) else 0
    extent = [0, box[2], 0, box[1]]
    # a slab of `thickness` planes: mean density, and the labels of the densest cell along each line
    planes = [(i + k) % rho.shape[0] for k in range(-(a.thickness // 2), a.thickness - a.thickness // 2)]
    slab = rho[planes]
    top = np.argmax(slab, axis=0)
    pick = lambda grid: np.take_along_axis(grid[planes], top[None], axis=0)[0]  # noqa: E731
    fig, ax = plt.subplots(1, 2, figsize=(11, 5), constrained_layout=True)
    im = ax[0].imshow(np.log10(np.maximum(slab.mean(axis=0) / rho.mean(), 1e-2)), origin="lower", extent=extent,
                      cmap="magma")
    fig.colorbar(im, ax=ax[0], label="log10 density / mean")
    # clump outlines: cells whose clump differs from a neighbour's, coloured by the halo
    c2, h2 = pick(clump), pick(halo)
    edge = np.zeros_like(c2, dtype=bool)
    edge[1:, :] |= c2[1:, :] != c2[:-1, :]
    edge[:, 1:] |= c2[:, 1:] != c2[:, :-1]
    overlay = np.zeros(c2.shape + (4,))
    overlay[..., :3] = colours(h2)
    overlay[..., 3] = np.where(edge & (c2 > 0), 1.0, 0.0)
    ax[0].imshow(overlay, origin="lower", extent=extent, interpolation="nearest")
    ax[1].imshow(colours(h2), origin="lower", extent=extent, interpolation="nearest")
    ax[0].set_title(f"density and clump outlines, x = {i} +- {a.thickness // 2} cells")
    ax[1].set_title("haloes")
    for axis in ax:
        axis.set(xlabel=f"z [{units}]", ylabel=f"y [{units}]")
    fig.savefig(a.out, dpi=80)


def massfunction(a):
    with h5py.File(a.clumps) as c:
        mc, mh = c["clumps/mass"][...], c["halos/mass"][...]
        units = c["grid"].attrs["mass_units"]
    fig, ax = plt.subplots(figsize=(6, 4.5), constrained_layout=True)
    for m, label in [(mc, "level-0 clumps"), (mh, "haloes")]:
        m = np.sort(m)[::-1]
        ax.loglog(m, np.arange(1, len(m) + 1), drawstyle="steps-post", label=f"{label} ({len(m)})")
    ax.set(xlabel=f"mass [{units}]", ylabel="N(> mass)", title="clump and halo mass functions")
    ax.legend()
    fig.savefig(a.out, dpi=80)


def dendrogram(a):
    with h5py.File(a.clumps) as c:
        cl = {k: c["clumps"][k][...] for k in ("id", "parent", "halo", "peak_density", "mass")}
        hier = {k: c["hierarchy"][k][...] for k in ("clump", "into", "level", "saddle_density")}
        units = c["grid"].attrs["units"]
    halo = a.halo
    if halo is None:
        masses = {}
        for h, m in zip(cl["halo"], cl["mass"]):
            masses[h] = masses.get(h, 0) + m
        halo = max(masses, key=masses.get)
    members = cl["id"][cl["halo"] == halo]
    peak = dict(zip(cl["id"], cl["peak_density"]))
    merge = {c_: (i, lv, s) for c_, i, lv, s in zip(hier["clump"], hier["into"], hier["level"], hier["saddle_density"])}
    children = {}
    for m in members:
        if m in merge:
            children.setdefault(merge[m][0], []).append(m)
    # x positions by depth-first order, children sorted by peak density
    xpos, order = {}, []

    def visit(n):
        for ch in sorted(children.get(n, []), key=lambda k: -peak[k]):
            visit(ch)
        order.append(n)

    visit(halo)
    for k, n in enumerate(order):
        xpos[n] = k
    fig, ax = plt.subplots(figsize=(7, 5), constrained_layout=True)
    levels = max([merge[m][1] for m in members if m in merge], default=0)
    cmap = plt.get_cmap("viridis")
    for n in members:
        if n not in xpos:
            continue
        bottom = merge[n][2] if n in merge else min([merge[m][2] for m in members if m in merge], default=peak[n]) * 0.7
        colour = cmap(merge[n][1] / max(levels, 1)) if n in merge else "k"
        ax.plot([xpos[n], xpos[n]], [peak[n], bottom], color=colour, lw=2)
        if n in merge:
            ax.plot([xpos[n], xpos[merge[n][0]]], [bottom, bottom], color=colour, lw=1)
    ax.set_yscale("log")
    ax.set(xticks=[], ylabel=f"density [{units}]",
           title=f"saddle hierarchy of halo {halo}: {len(members)} clumps, {levels} levels (colour = level)")
    fig.savefig(a.out, dpi=80)


def maps(a):
    with h5py.File(a.maps) as f:
        sigma = f["maps/sigma"][...]
        centre = f["maps/center"][...]
    n = min(len(sigma), a.max)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, ax = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.2 * rows), constrained_layout=True, squeeze=False)
    for k in range(rows * cols):
        axis = ax[k // cols][k % cols]
        axis.axis("off")
        if k < n:
            s = sigma[k]
            axis.imshow(np.log10(np.maximum(s, s[s > 0].min() if (s > 0).any() else 1)), origin="lower", cmap="inferno")
            axis.set_title(f"field {k}: ({centre[k][0]:.0f}, {centre[k][1]:.0f}, {centre[k][2]:.0f})", fontsize=8)
    fig.savefig(a.out, dpi=80)


def paths(a):
    titles = a.titles.split(",") if a.titles else [None] * len(a.trees)
    fig, axes = plt.subplots(1, len(a.trees), figsize=(5.5 * len(a.trees), 5.5), constrained_layout=True, squeeze=False)
    for axis, tree, title in zip(axes[0], a.trees, titles):
        with h5py.File(tree) as f:
            p = {k: f["peaks"][k][...] for k in ("snapshot", "lineage", "position", "velocity", "artefact", "merged",
                                                 "revived_from_graveyard")}
        keep = p["artefact"] == 0
        span = np.ptp(p["position"][:, 0]) + 1e-9
        for k, lin in enumerate(np.unique(p["lineage"][keep])):
            sel = keep & (p["lineage"] == lin)
            order = np.argsort(p["snapshot"][sel])
            x, v = p["position"][sel][order], p["velocity"][sel][order]
            axis.plot(x[:, 0], x[:, 1], "-", color=f"C{k % 10}", lw=1, alpha=0.6)
            axis.quiver(x[:, 0], x[:, 1], v[:, 0], v[:, 1], color=f"C{k % 10}", scale_units="xy", angles="xy",
                        scale=np.abs(v).max() / (0.05 * span) + 1e-9, width=0.004, label=f"lineage {lin}")
            rev = sel & (p["revived_from_graveyard"] == 1)
            axis.plot(p["position"][rev][:, 0], p["position"][rev][:, 1], "o", mfc="none", color=f"C{k % 10}", ms=12)
            gone = sel & (p["merged"] == 1)
            axis.plot(p["position"][gone][:, 0], p["position"][gone][:, 1], "s", mfc="none", color=f"C{k % 10}", ms=12)
        art = p["artefact"] == 1
        axis.plot(p["position"][art][:, 0], p["position"][art][:, 1], "x", color="0.5", label="artefacts")
        axis.set(xlabel="x", ylabel="y", title=title or tree)
        axis.legend(fontsize=8, loc="upper left")
    fig.suptitle("peak paths by lineage (circles: revived from the graveyard, squares: merged)")
    fig.savefig(a.out, dpi=70)


def velocity(a):
    with h5py.File(a.peaks) as f:
        ids, parent, split = f["peaks/id"][...], f["peaks/parent_clump"][...], f["peaks/from_deblending"][...]
        pid, ppeak = f["particles/id"][...], f["particles/peak"][...]
    clump = a.clump if a.clump is not None else int(parent[split == 1][0] if split.any() else parent[0])
    mine = ids[parent == clump]
    with h5py.File(a.snapshot) as s:
        g = s[f"PartType{a.type}"]
        sid = g["ParticleIDs"][...]
        order = np.argsort(sid)
        x, v, sid = g["Coordinates"][...][order], g["Velocities"][...][order], sid[order]
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


def voters(a):
    with h5py.File(a.peaks) as p:
        ids, pos, mass = p["peaks/id"][...], p["peaks/position"][...], p["peaks/mass"][...]
    peak = a.peak if a.peak is not None else int(ids[np.argmin(mass)])
    x0 = pos[ids == peak][0]
    with h5py.File(a.voters) as v:
        k = v["peaks/id"][...] == peak
        a0, rs = v["peaks/a0"][...][k][0], v["peaks/search_radius"][...][k][0]
        chosen = v["voters/particle_id"][...][v["voters/peak"][...] == peak]
    with h5py.File(a.snapshot) as s:
        g = s["PartType1"]
        x, phi, pid = g["Coordinates"][...] - x0, g["Potential"][...], g["ParticleIDs"][...]
    near = np.abs(x[:, 0]) < 4 * rs
    inside = (x ** 2).sum(axis=1) < rs ** 2
    isv = np.isin(pid, chosen)
    fig, ax = plt.subplots(2, 1, figsize=(6, 7), sharex=True, constrained_layout=True)
    for axis, y, title in [(ax[0], phi, "potential"), (ax[1], phi + x @ a0, "boosted potential")]:
        axis.scatter(x[near, 0], y[near], s=1, color="0.75", label="particles")
        axis.scatter(x[near & inside, 0], y[near & inside], s=1, color="0.35", label="within the search radius")
        axis.scatter(x[isv, 0], y[isv], s=8, color="red", label="voters")
        axis.axvspan(-rs, rs, color="C0", alpha=0.08)
        axis.set(ylabel=title)
    ax[1].set_xlabel(f"x - x_peak (peak {peak})")
    ax[0].legend(markerscale=6, loc="lower left")
    fig.savefig(a.out, dpi=80)


def ramses(a):
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ramses_phew
    result, ours, theirs = ramses_phew.compare(a.clumps, a.output, a.radius)
    print(ramses_phew.report(result))
    ramses_phew.picture(result, ours, theirs, a.out, a.grid)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("slice")
    s.add_argument("clumps"), s.add_argument("grid"), s.add_argument("out"), s.add_argument("--index", type=int)
    s.add_argument("--thickness", type=int, default=16, help="planes averaged (default 16)")
    s.set_defaults(fn=slice_)
    s = sub.add_parser("massfunction")
    s.add_argument("clumps"), s.add_argument("out")
    s.set_defaults(fn=massfunction)
    s = sub.add_parser("dendrogram")
    s.add_argument("clumps"), s.add_argument("out"), s.add_argument("--halo", type=int)
    s.set_defaults(fn=dendrogram)
    s = sub.add_parser("maps")
    s.add_argument("maps"), s.add_argument("out"), s.add_argument("--max", type=int, default=8)
    s.set_defaults(fn=maps)
    s = sub.add_parser("paths")
    s.add_argument("out"), s.add_argument("trees", nargs="+"), s.add_argument("--titles", help="comma-separated")
    s.set_defaults(fn=paths)
    s = sub.add_parser("velocity")
    s.add_argument("peaks"), s.add_argument("snapshot"), s.add_argument("out")
    s.add_argument("--clump", type=int), s.add_argument("--type", type=int, default=1)
    s.set_defaults(fn=velocity)
    s = sub.add_parser("voters")
    s.add_argument("voters"), s.add_argument("peaks"), s.add_argument("snapshot"), s.add_argument("out")
    s.add_argument("--peak", type=int)
    s.set_defaults(fn=voters)
    s = sub.add_parser("ramses")
    s.add_argument("clumps"), s.add_argument("output"), s.add_argument("out"), s.add_argument("--grid")
    s.add_argument("--radius", type=float, default=0.3, help="match radius in Mpc/h (default 0.3)")
    s.set_defaults(fn=ramses)
    s = sub.add_parser("treestats")
    s.add_argument("stats"), s.add_argument("out")
    s.set_defaults(fn=treestats)
    s = sub.add_parser("labels")
    s.add_argument("file"), s.add_argument("out")
    s.set_defaults(fn=labels)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
