#!/usr/bin/python3
"""Pictures from phew's HDF5 files, one command each (Debian's /usr/bin/python3, matplotlib, h5py).

  phewplot.py slice       clumps.h5 grid.h5 out.png      density slab with clump and halo outlines, and a
                          zoom on the most massive halo [--index I] [--thickness T] [--zoom L]
  phewplot.py massfunction clumps.h5 out.png [--sigma8 S] [--omega-b B] [--ns N]
                          dn/dlog10 M of haloes and level-0 clumps per comoving volume, with the
                          Sheth-Tormen (1999) and Tinker et al. (2008) mass functions of the run's cosmology
  phewplot.py vmaxfunction bound.h5 out.png [--min-particles N]  the cumulative Vmax function n(>Vmax) of
                          unbind's haloes and subhaloes per comoving volume (the counts printed too)
  phewplot.py dendrogram  clumps.h5 out.png [--halo ID]  saddle hierarchy of a halo (PHEW Fig. 2 style)
  phewplot.py maps        maps.h5 out.png [--decades D]  surface-density maps on one shared log scale
  phewplot.py paths       out.png tree.h5... [--titles A,B]  peak paths, coloured by mass (Geda Fig. 6/7)
  phewplot.py velocity    peaks.h5 SNAPSHOT out.png      a deblended patch in position and velocity space
  phewplot.py voters      voters.h5 peaks.h5 SNAPSHOT out.png   position vs (boosted) potential, voters red
  phewplot.py ramses      clumps.h5 RAMSES_OUTPUT out.png [--grid grid.h5]  phew vs RAMSES' in-code PHEW
                          (ramses_phew.py: matched haloes and clumps, mass ratios, offsets)
  phewplot.py treestats   stats.json out.png             tree-quality statistics (mergertree --stats;
                          Srisawat et al. 2013 Fig. 3-6 style)
  phewplot.py labels      patches.h5|clumps.h5 out.h5    the cell labels as dense int grids /peak or
                          /clump and /halo [nx][ny][nz] (the files store the test cells only)
  phewplot.py levels      clumps.h5 grid.h5 out.png      an adaptive mesh (cic-project --refine): a slice
                          of the leaves' levels and densities with the clump and halo outlines [--index I]

SNAPSHOT is what the tools take: a Gadget/SWIFT/AREPO HDF5 file (the first piece of a multi-file one), a
phew particle file, or a RAMSES output folder (read by ramses_phew.py, beside this script).
"""
import argparse
import json
import os
import re
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
KPC_CM, MSUN_G = 3.085678e21, 1.98841e33  # lib/particles' constants


def text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


# ---- units -----------------------------------------------------------------------------------------

def length_in_mpc_h(name, h=None):
    """Mpc/h per unit called `name` ("kpc/h", "Mpc/h", "pc", "3.1e21 cm/h": lib/particles' names);
    None when the units are not h-scaled and h is unknown."""
    m = re.fullmatch(r"\s*(kpc|Mpc|pc|([0-9.eE+-]+) cm)(/h)?\s*", text(name))
    if not m:
        return None
    mpc = {"kpc": 1e-3, "Mpc": 1.0, "pc": 1e-6}.get(m.group(1)) or float(m.group(2) or 0) / (1e3 * KPC_CM)
    return mpc if m.group(3) else (mpc * h if h else None)


def mass_in_msun_h(name, h=None):
    """Msun/h per unit called `name` ("1e10 Msun/h", "Msun", "2e43 g/h"); None as above."""
    m = re.fullmatch(r"\s*(1e10 Msun|Msun|([0-9.eE+-]+) g)(/h)?\s*", text(name))
    if not m:
        return None
    msun = {"1e10 Msun": 1e10, "Msun": 1.0}.get(m.group(1)) or float(m.group(2) or 0) / MSUN_G
    return msun if m.group(3) else (msun * h if h else None)


def pretty(units):
    """Units for a label: (Mpc/h)^2 as (Mpc/h)²."""
    return text(units).replace("^2", "\u00b2").replace("^3", "\u00b3")


def display_length(units, extent):
    """(factor, name) to show lengths in: Mpc/h rather than tens of thousands of kpc/h."""
    u = text(units)
    if u.startswith("kpc") and extent > 2000:
        return 1e-3, "Mpc" + u[3:]
    return 1.0, u


# ---- snapshots: what the tools read -----------------------------------------------------------------

def read_snapshot(path, ptype=1, potential=False):
    """Particles of type `ptype` as phew reads them: {id, position[n][3], velocity[n][3] (peculiar, as
    phew's readers convert them: docs/formats.md, "Velocities"), mass[n], potential[n] (as stored) or None,
    a, box}. Gadget-style HDF5 (every piece of a multi-file snapshot), phew particle files and RAMSES
    output folders."""
    if os.path.isdir(path) or re.search(r"info_\d+\.txt$", path):
        return read_ramses(path if os.path.isdir(path) else os.path.dirname(path), ptype)
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise SystemExit(f"phewplot.py: error: {path}: not an HDF5 snapshot or a RAMSES output folder "
                         "(Gadget binary: convert it, or plot from HDF5)")
    with f:
        if "particles" in f:  # phew's own particle file: one type
            g = f["particles"]
            a = float(g.attrs.get("time", 1.0))
            return {"id": g["id"][...], "position": g["position"][...].astype(float),
                    "velocity": g["velocity"][...].astype(float), "mass": g["mass"][...].astype(float),
                    "potential": g["potential"][...].astype(float) if potential and "potential" in g else None,
                    "a": a, "box": np.asarray(g.attrs["box_size"])}
        header = f["Header"].attrs
        pieces = [path]
        n_files = int(np.atleast_1d(header.get("NumFilesPerSnapshot", 1))[0])
        m = re.fullmatch(r"(.*)\.0\.hdf5", path)
        if n_files > 1 and m:
            pieces = [f"{m.group(1)}.{k}.hdf5" for k in range(n_files)]
        a = float(header["Time"])
        box = np.broadcast_to(np.asarray(header["BoxSize"], dtype=float), (3,)).copy()
        swift = "Units" in f and "Unit length in cgs (U_L)" in f["Units"].attrs
        if swift and "Cosmology" in f and "Scale-factor" in f["Cosmology"].attrs:
            a = float(np.atleast_1d(f["Cosmology"].attrs["Scale-factor"])[0])
        comoving = gadget_comoving(f, swift)
    cols = {k: [] for k in ("id", "position", "velocity", "mass", "potential")}
    for piece in pieces:
        with h5py.File(piece, "r") as f:
            key = f"PartType{ptype}"
            if key not in f:
                continue
            g = f[key]
            n = len(g["ParticleIDs"])
            cols["id"].append(g["ParticleIDs"][...])
            cols["position"].append(g["Coordinates"][...].astype(float))
            # stored -> peculiar, as phew's readers: v_pec = stored a^a_scaling (Gadget-4, AREPO; SWIFT's
            # "a-scale exponent"), else Gadget-2/3's u = v_pec/sqrt(a); SWIFT's are peculiar already
            attrs = g["Velocities"].attrs
            exponent = float(np.atleast_1d(attrs.get("a_scaling", attrs.get("a-scale exponent", 0.0 if swift else 0.5)))[0])
            cols["velocity"].append(g["Velocities"][...].astype(float) * (a ** exponent if comoving and a > 0 else 1.0))
            mt = float(np.asarray(f["Header"].attrs["MassTable"])[ptype])
            cols["mass"].append(g["Masses"][...].astype(float) if "Masses" in g else np.full(n, mt))
            name = "Potential" if "Potential" in g else "Potentials"
            if potential and name in g:
                cols["potential"].append(g[name][...].astype(float))
    if not cols["id"]:
        raise SystemExit(f"phewplot.py: error: {path}: no particles of type {ptype}")
    out = {k: np.concatenate(v) if v else None for k, v in cols.items()}
    if out["potential"] is not None and len(out["potential"]) != len(out["id"]):
        out["potential"] = None
    out.update(a=a, box=box)
    return out


def gadget_comoving(f, swift):
    """Whether an open Gadget-style HDF5 file is of a comoving run, as phew's reader decides."""
    def first(group, *names):
        attrs = f[group].attrs if group in f else {}
        for n in names:
            if n in attrs:
                return float(np.atleast_1d(attrs[n])[0])
        return None
    if swift:
        om = first("Cosmology", "Omega_m")
        flag = first("Cosmology", "Cosmological run")
        return (flag if flag is not None else (1.0 if om else 0.0)) != 0
    flag = first("Parameters", "ComovingIntegrationOn")
    if flag is not None:
        return flag != 0
    om = first("Header", "Omega0") or first("Parameters", "Omega0")
    h = first("Header", "HubbleParam") or first("Parameters", "HubbleParam")
    return bool(om and om > 0 and h and h > 0)


def read_ramses(folder, ptype=1):
    """A RAMSES output through ramses_phew.py's reader, in the units phew's reader gives
    (docs/formats.md, "RAMSES outputs"): comoving Mpc/h, Msun/h, peculiar km/s."""
    sys.path.insert(0, HERE)
    import ramses_phew
    info = ramses_phew.read_info(folder)
    names = ["position_x", "position_y", "position_z", "velocity_x", "velocity_y", "velocity_z", "mass", "identity"]
    descriptor = open(os.path.join(folder, "part_file_descriptor.txt")).read()
    if re.search(r",\s*family\s*,", descriptor):
        names.append("family")
    p = ramses_phew.read_particles(folder, tuple(names))
    family = p.get("family")
    code = np.where(family < 0, 10 - family, family) if family is not None else np.ones(len(p["mass"]), int)
    sel = code == ptype
    cosmological = not (info["H0"] == 1 and info["aexp"] == 1)
    a = info["aexp"]
    if cosmological:
        length, mass = ramses_phew.units(info)
        velocity = info["unit_l"] / info["unit_t"] / 1e5
    else:
        length = info["unit_l"] / KPC_CM
        mass = info["unit_d"] * info["unit_l"] ** 3 / ramses_phew.MSUN_G
        velocity = info["unit_l"] / info["unit_t"] / 1e5
    pos = np.stack([p[f"position_{d}"] for d in "xyz"], axis=1)[sel] * length
    vel = np.stack([p[f"velocity_{d}"] for d in "xyz"], axis=1)[sel] * velocity
    return {"id": p["identity"][sel].astype(np.int64), "position": pos, "velocity": vel, "mass": p["mass"][sel] * mass,
            "potential": None, "a": a if cosmological else 1.0, "box": np.full(3, info["boxlen"] * length)}


def min_image(d, box, periodic=True):
    if not periodic:
        return d
    box = np.asarray(box, dtype=float)
    return d - box * np.round(d / np.where(box > 0, box, 1.0))


def scale_factor(grid):
    """The scale factor of a comoving run (phew's /grid attributes), else 1: comoving lengths times it
    are physical (phew's velocities are peculiar already)."""
    return float(grid["time"]) if int(grid.get("comoving", 0)) and float(grid.get("time", 0)) > 0 else 1.0


# ---- labels ----------------------------------------------------------------------------------------

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


def colours(labels, seed=3):
    """Random but stable colours per label; 0 (no structure) is transparent."""
    rng = np.random.default_rng(seed)
    lut = np.ones((int(labels.max()) + 1, 4))
    lut[:, :3] = rng.uniform(0.2, 0.95, size=(len(lut), 3))
    lut[0, 3] = 0.0
    return lut[labels]


def outline_segments(lab, x0, dx, y0, dy):
    """Line segments along the cell edges between different nonzero-or-zero labels of lab[i][j]
    (i horizontal, j vertical): [[(x, y), (x, y)], ...], where at least one side is a structure."""
    segs = []
    diff = (lab[1:, :] != lab[:-1, :]) & ((lab[1:, :] > 0) | (lab[:-1, :] > 0))
    for i, j in zip(*np.nonzero(diff)):  # the edge between columns i and i+1
        x = x0 + (i + 1) * dx
        segs.append([(x, y0 + j * dy), (x, y0 + (j + 1) * dy)])
    diff = (lab[:, 1:] != lab[:, :-1]) & ((lab[:, 1:] > 0) | (lab[:, :-1] > 0))
    for i, j in zip(*np.nonzero(diff)):
        y = y0 + (j + 1) * dy
        segs.append([(x0 + i * dx, y), (x0 + (i + 1) * dx, y)])
    return segs


# ---- slice -----------------------------------------------------------------------------------------

def slice_(a):
    with h5py.File(a.clumps) as c, h5py.File(a.grid) as g:
        rho = g["grid/density"][...]
        attrs = g["grid"].attrs
        box, origin, units = np.asarray(attrs["box_size"]), np.asarray(attrs["origin"]), attrs["length_units"]
        hid, hmass, hpos, hcells = (c[f"halos/{k}"][...] for k in ("id", "mass", "peak_position", "n_cells"))
        mass_units = text(c["grid"].attrs["mass_units"])
        h_param = float(c["grid"].attrs["hubble_param"]) if "hubble_param" in c["grid"].attrs else None
    shape = np.array(rho.shape)
    cell = box / shape
    # the zoom (and, without --index, the slab) through the peak of the most massive halo
    k = int(np.argmax(hmass)) if len(hid) else None
    peak = ((hpos[k] - origin) / cell).astype(int) % shape if k is not None else shape // 2
    i = a.index if a.index is not None else int(peak[0])
    clump, halo = dense_labels(a.clumps, "clump"), dense_labels(a.clumps, "halo")
    # a slab of `thickness` planes across x: mean density, and the labels of the densest cell on each line
    t = max(1, min(a.thickness, shape[0]))
    planes = [(i + q) % shape[0] for q in range(-(t // 2), t - t // 2)]
    slab = rho[planes].astype(float)
    top = np.argmax(slab, axis=0)
    pick = lambda grid: np.take_along_axis(grid[planes], top[None], axis=0)[0]  # noqa: E731
    c2, h2 = pick(clump), pick(halo)  # [j][k]: y, z
    mean = rho.mean() if rho.mean() > 0 else 1.0
    d2 = np.log10(np.maximum(slab.mean(axis=0) / mean, 1e-2))
    f, lunits = display_length(units, box.max())
    dy, dz = cell[1] * f, cell[2] * f
    vmax = max(d2.max(), 0.5)
    fig, ax = plt.subplots(1, 2, figsize=(12.4, 5.6), constrained_layout=True)

    def draw(axis, d, c_, h_, y0, z0):
        # y to the right, z up: the slab seen from +x (arrays are [j][k], so transposed for imshow)
        extent = [y0, y0 + d.shape[0] * dy, z0, z0 + d.shape[1] * dz]
        im = axis.imshow(d.T, origin="lower", extent=extent, cmap="magma", vmin=-2, vmax=vmax, interpolation="nearest")
        axis.add_collection(LineCollection(outline_segments(c_, y0, dy, z0, dz), colors="#00ffff", linewidths=0.9))
        axis.add_collection(LineCollection(outline_segments(h_, y0, dy, z0, dz), colors="white", linewidths=1.4))
        axis.set(xlabel=f"y [{lunits}]", ylabel=f"z [{lunits}]", xlim=extent[:2], ylim=extent[2:], aspect="equal")
        return im

    draw(ax[0], d2, c2, h2, origin[1] * f, origin[2] * f)
    xs = origin[0] + (np.array(planes) + 0.5) * cell[0]
    ax[0].set_title(f"slab of {t} planes, x = {xs.min() * f:.4g} to {xs.max() * f:.4g} {lunits}\n"
                    f"{len(np.unique(h2[h2 > 0]))} haloes (white), {len(np.unique(c2[c2 > 0]))} level-0 clumps (cyan)")
    # the zoom: the slab rolled so that the halo's peak is in the middle (the box is periodic), cut around it
    if a.zoom:
        w = max(4, int(np.ceil(0.5 * a.zoom / cell[1])))
    elif k is not None:
        radius = np.cbrt(3 * hcells[k] * np.prod(cell) / (4 * np.pi))
        w = max(8, int(np.ceil(3 * radius / cell[1])))
    else:
        w = shape[1] // 4
    w = min(w, shape[1] // 2 - 1, shape[2] // 2 - 1)
    mid = shape[1:] // 2
    shift = (int(mid[0] - peak[1]), int(mid[1] - peak[2]))
    cut = (slice(mid[0] - w, mid[0] + w + 1), slice(mid[1] - w, mid[1] + w + 1))
    roll = lambda grid: np.roll(grid, shift, axis=(0, 1))[cut]  # noqa: E731
    y0 = (origin[1] + (peak[1] - w) * cell[1]) * f
    z0 = (origin[2] + (peak[2] - w) * cell[2]) * f
    im = draw(ax[1], roll(d2), roll(c2), roll(h2), y0, z0)
    ax[0].add_patch(matplotlib.patches.Rectangle((y0, z0), (2 * w + 1) * dy, (2 * w + 1) * dz, fill=False, ec="white",
                                                 ls="--", lw=0.8))
    if k is not None:
        msun = mass_in_msun_h(mass_units, h_param)
        mass = f"{hmass[k] * msun:.3g} Msun/h" if msun else f"{hmass[k]:.3g} {mass_units}"
        ax[1].set_title(f"zoom on the most massive halo ({hid[k]}, {mass})\nits level-0 clumps (cyan)")
    fig.colorbar(im, ax=ax, shrink=0.85, label=r"$\log_{10}\,\rho/\bar\rho$ (mean over the slab)")
    fig.savefig(a.out, dpi=a.dpi, bbox_inches="tight")


# ---- the adaptive mesh -----------------------------------------------------------------------------

def decode_keys(key, levels):
    """A leaf key (docs/formats.md, "grid.h5 with an adaptive mesh") -> (level, lower corner on the
    finest lattice [n][3])."""
    key = np.asarray(key, dtype=np.uint64)
    m = key >> np.uint64(4)

    def gather(v):
        out = np.zeros_like(v)
        for b in range(21):
            out |= ((v >> np.uint64(3 * b)) & np.uint64(1)) << np.uint64(b)
        return out
    corner = np.stack([gather(m >> np.uint64(2)), gather(m >> np.uint64(1)), gather(m)], axis=1).astype(np.int64)
    return (key & np.uint64(15)).astype(np.int64), corner


def levels(a):
    with h5py.File(a.grid) as g, h5py.File(a.clumps) as c:
        if "grid/leaves" not in g:
            raise SystemExit(f"{a.grid}: not an adaptive grid (cic-project --refine)")
        attrs = dict(g["grid"].attrs)
        L = g["grid/leaves"]
        K = int(L.attrs["levels"])
        level, corner = decode_keys(L["key"][...], K)
        rho = L["density"][...].astype(float)
        key = L["key"][...]
        cells, clump, halo = c["cells/index"][...], c["cells/clump"][...].astype(np.int64), c["cells/halo"][...].astype(np.int64)
        hmass, hpos = c["halos/mass"][...], c["halos/peak_position"][...]
    shape, box, origin = np.asarray(attrs["shape"]), np.asarray(attrs["box_size"]), np.asarray(attrs["origin"])
    fine = shape << K
    h = box / fine
    # The plane of the finest lattice through the most massive halo's peak (or --index, on that lattice).
    if a.index is not None:
        xs = a.index
    elif len(hmass):
        xs = int((hpos[int(np.argmax(hmass))][0] - origin[0]) / h[0]) % fine[0]
    else:
        xs = fine[0] // 2
    side = 1 << (K - level)
    cut = (corner[:, 0] <= xs) & (xs < corner[:, 0] + side)
    lev2 = np.full((fine[1], fine[2]), -1, dtype=np.int64)
    rho2 = np.zeros((fine[1], fine[2]))
    clump2 = np.zeros((fine[1], fine[2]), dtype=np.int64)
    halo2 = np.zeros((fine[1], fine[2]), dtype=np.int64)
    at = np.searchsorted(key, cells)  # the test leaves among the leaves
    leaf_clump = np.zeros(len(key), dtype=np.int64)
    leaf_halo = np.zeros(len(key), dtype=np.int64)
    leaf_clump[at], leaf_halo[at] = clump, halo
    for n in np.flatnonzero(cut):
        s = side[n]
        blk = (slice(corner[n, 1], corner[n, 1] + s), slice(corner[n, 2], corner[n, 2] + s))
        lev2[blk], rho2[blk], clump2[blk], halo2[blk] = level[n], rho[n], leaf_clump[n], leaf_halo[n]
    f, lunits = display_length(attrs["length_units"], box.max())
    extent = [origin[1] * f, (origin[1] + box[1]) * f, origin[2] * f, (origin[2] + box[2]) * f]
    fig, ax = plt.subplots(1, 2, figsize=(12.4, 5.6), constrained_layout=True)
    cmap = matplotlib.colormaps["viridis"].resampled(K + 1)
    im0 = ax[0].imshow(lev2.T, origin="lower", extent=extent, cmap=cmap, vmin=-0.5, vmax=K + 0.5, interpolation="nearest")
    # The zoom: the leaves' density around the most massive halo, 6 coarse cells each side.
    mean = float(attrs["mean_density"]) if float(attrs["mean_density"]) > 0 else 1.0
    im1 = ax[1].imshow(np.log10(np.maximum(rho2 / mean, 1e-2)).T, origin="lower", extent=extent, cmap="magma", vmin=-2,
                       interpolation="nearest")
    if len(hmass):
        p = hpos[int(np.argmax(hmass))] * f
        w = 6 * box[1] / shape[1] * f
        ax[1].set(xlim=(p[1] - w, p[1] + w), ylim=(p[2] - w, p[2] + w))
        ax[0].add_patch(matplotlib.patches.Rectangle((p[1] - w, p[2] - w), 2 * w, 2 * w, fill=False, ec="white", ls="--", lw=0.8))
        grid_lines = []  # the leaves' edges in the zoom, so that the levels show
        for n in np.flatnonzero(cut):
            y0, z0, s = corner[n, 1] * h[1] * f + extent[0], corner[n, 2] * h[2] * f + extent[2], side[n] * h[1] * f
            if abs(y0 - p[1]) < w + s and abs(z0 - p[2]) < w + s:
                grid_lines += [[(y0, z0), (y0 + s, z0)], [(y0, z0), (y0, z0 + s)]]
        ax[1].add_collection(LineCollection(grid_lines, colors="#7fbfff", linewidths=0.3, alpha=0.6))
    for axis in ax:
        axis.add_collection(LineCollection(outline_segments(clump2, extent[0], h[1] * f, extent[2], h[2] * f),
                                           colors="#ff3030", linewidths=0.7))
        axis.add_collection(LineCollection(outline_segments(halo2, extent[0], h[1] * f, extent[2], h[2] * f),
                                           colors="white", linewidths=1.2))
        axis.set(xlabel=f"y [{lunits}]", ylabel=f"z [{lunits}]", aspect="equal")
    x = (origin[0] + (xs + 0.5) * h[0]) * f
    ax[0].set_title(f"leaf levels above the {shape[0]}x{shape[1]}x{shape[2]} coarse grid at x = {x:.4g} {lunits}\n"
                    f"clumps (red) and haloes (white) of {os.path.basename(a.clumps)}")
    ax[1].set_title("zoom on the most massive halo: the leaves (blue edges) and their density")
    fig.colorbar(im0, ax=ax[0], shrink=0.85, ticks=range(K + 1), label="level")
    fig.colorbar(im1, ax=ax[1], shrink=0.85, label=r"$\log_{10}\,\rho/\bar\rho$")
    fig.savefig(a.out, dpi=a.dpi, bbox_inches="tight")
    print(f"{a.out}: {int(cut.sum()):,} leaves cut by the plane x = {x:.4g} {lunits}")


# ---- mass function ---------------------------------------------------------------------------------

DELTA_C = 1.686
RHO_CRIT = 2.77536627e11  # Msun/h per (Mpc/h)^3: 3 H0^2 / (8 pi G) with H0 = 100 h km/s/Mpc


def growth_factor(a, om, ol):
    """Linear growth D(a) / D(1) for matter + Lambda (+ curvature), Heath's integral."""
    def d(a1):
        x = np.linspace(0, a1, 4001)[1:]
        e = np.sqrt(om / x ** 3 + (1 - om - ol) / x ** 2 + ol)
        integrand = 1.0 / (x * e) ** 3
        integral = np.trapz(np.concatenate([[0.0], integrand]), np.concatenate([[0.0], x]))
        return 2.5 * om * np.sqrt(om / a1 ** 3 + (1 - om - ol) / a1 ** 2 + ol) * integral
    return d(a) / d(1.0)


def transfer_eh_nowiggle(k, om, ob, h, tcmb=2.7255):
    """Eisenstein & Hu (1998) eq. 26-31, the transfer function without baryon wiggles; k in h/Mpc."""
    omh2, fb, theta = om * h * h, ob / om, tcmb / 2.7
    s = 44.5 * np.log(9.83 / omh2) / np.sqrt(1 + 10 * (ob * h * h) ** 0.75)  # sound horizon, Mpc
    alpha = 1 - 0.328 * np.log(431 * omh2) * fb + 0.38 * np.log(22.3 * omh2) * fb ** 2
    gamma = om * h * (alpha + (1 - alpha) / (1 + (0.43 * k * h * s) ** 4))
    q = k * theta ** 2 / gamma
    l0 = np.log(2 * np.e + 1.8 * q)
    return l0 / (l0 + (14.2 + 731 / (1 + 62.5 * q)) * q * q)


def transfer_bbks(k, om, h):
    """Bardeen et al. (1986), shape parameter Gamma = Omega_m h (synth-particles' zeldovich spectrum)."""
    q = k / (om * h)
    return np.log1p(2.34 * q) / (2.34 * q) * (1 + 3.89 * q + (16.1 * q) ** 2 + (5.46 * q) ** 3 + (6.71 * q) ** 4) ** -0.25


class LinearSpectrum:
    """P(k) = A k^ns T(k)^2 at z = 0, normalised to sigma8; k in h/Mpc, lengths in Mpc/h."""

    def __init__(self, transfer, ns, sigma8):
        self.transfer, self.ns = transfer, ns
        self.lnk = np.linspace(np.log(1e-5), np.log(1e3), 6000)
        k = np.exp(self.lnk)
        self.shape = k ** ns * transfer(k) ** 2
        self.amplitude = 1.0
        self.amplitude = sigma8 ** 2 / self.sigma(8.0) ** 2

    def sigma(self, r):
        """rms of the linear field in top-hat spheres of radius r (array), at z = 0."""
        k = np.exp(self.lnk)
        x = np.outer(np.atleast_1d(r), k)
        w = 3 * (np.sin(x) - x * np.cos(x)) / x ** 3
        s2 = np.trapz(self.amplitude * self.shape * k ** 3 * w ** 2, self.lnk, axis=1) / (2 * np.pi ** 2)
        return np.sqrt(s2)


def mass_functions(mass, spectrum, om, z, growth):
    """dn/dlog10 M (per (Mpc/h)^3) at masses `mass` (Msun/h): Sheth & Tormen (1999) and Tinker et al.
    (2008, Delta = 200 x mean, their z dependence)."""
    rho_m = om * RHO_CRIT
    r = np.cbrt(3 * mass / (4 * np.pi * rho_m))
    sigma = spectrum.sigma(r) * growth
    dlnsigma_dlnm = np.gradient(np.log(sigma), np.log(mass))
    nu = DELTA_C / sigma
    aa, p, amp = 0.707, 0.3, 0.3222
    f_st = amp * np.sqrt(2 * aa / np.pi) * (1 + (aa * nu * nu) ** -p) * nu * np.exp(-aa * nu * nu / 2)
    alpha = 10 ** (-(0.75 / np.log10(200 / 75)) ** 1.2)
    A, a_, b, c = 0.186 * (1 + z) ** -0.14, 1.47 * (1 + z) ** -0.06, 2.57 * (1 + z) ** -alpha, 1.19
    f_t = A * ((sigma / b) ** -a_ + 1) * np.exp(-c / sigma ** 2)
    per_lnm = rho_m / mass * np.abs(dlnsigma_dlnm)
    return np.log(10) * f_st * per_lnm, np.log(10) * f_t * per_lnm


def run_spectrum(clumps_path, grid_attrs):
    """What the run says about its linear spectrum: {sigma8, spectrum, ns, omega_b, source}, from the
    snapshot's manifest (synth-particles' zeldovich scene) or a Gadget /Parameters group."""
    found = {}
    try:
        with h5py.File(clumps_path) as f:
            manifest = json.loads(text(f.attrs["manifest"]))
    except (KeyError, ValueError, OSError):
        return found
    snapshots = []
    for record in manifest.get("provenance", []) + [manifest]:
        if record.get("tool", {}).get("name") == "cic-project":
            s = record.get("parameters", {}).get("snapshot", [])
            snapshots += s if isinstance(s, list) else [s]
    for s in snapshots:
        for path in (s, os.path.join(os.path.dirname(clumps_path), s)):
            if os.path.isfile(path + ".json"):
                try:
                    scene = json.load(open(path + ".json"))["parameters"]["scene"]
                except (KeyError, ValueError, TypeError):
                    continue
                for comp in scene.get("components", []):
                    if comp.get("model") == "zeldovich":
                        found.update(sigma8=comp.get("sigma8"), spectrum=comp.get("spectrum", "cdm"),
                                     ns=comp.get("index", 1.0), source=f"{os.path.basename(path)} (synth-particles)")
                        return found
            if os.path.isfile(path):
                try:
                    with h5py.File(path) as g:
                        par = g["Parameters"].attrs if "Parameters" in g else {}
                        for key, name in (("Sigma8", "sigma8"), ("OmegaBaryon", "omega_b"), ("PrimordialIndex", "ns")):
                            if key in par and float(par[key]) > 0:
                                found[name] = float(par[key])
                        found["source"] = os.path.basename(path)
                        return found
                except OSError:
                    pass
    return found


def binned_mass_function(mass, volume, edges):
    """dn/dlog10 M and its Poisson error in bins of log10 M (`edges`): counts / volume / bin width."""
    n, _ = np.histogram(np.log10(mass), edges)
    width = np.diff(edges)
    return n / volume / width, np.sqrt(n) / volume / width


def massfunction(a):
    with h5py.File(a.clumps) as c:
        mh, mc = c["halos/mass"][...], c["clumps/mass"][...]
        g = dict(c["grid"].attrs)
    h = float(g["hubble_param"]) if "hubble_param" in g else None
    lf, mf = length_in_mpc_h(g["length_units"], h), mass_in_msun_h(g["mass_units"], h)
    if lf is None or mf is None:
        raise SystemExit(f"phewplot.py: error: {a.clumps}: units {text(g['length_units'])} and {text(g['mass_units'])} "
                         "cannot be converted to Mpc/h and Msun/h (no hubble_param)")
    volume = float(np.prod(np.asarray(g["box_size"]) * lf))
    mh, mc = mh * mf, mc * mf
    mp = float(g.get("particle_mass", 0)) * mf
    z = float(g.get("redshift", 0))
    fig, ax = plt.subplots(figsize=(6.4, 5.0), constrained_layout=True)
    every = np.concatenate([mh, mc])
    if len(every):
        lo, hi = np.log10(every.min()), np.log10(every.max())
        edges = np.arange(np.floor(lo * 5) / 5, hi + 0.2001, 0.2)
        mid = 10 ** (0.5 * (edges[1:] + edges[:-1]))
        for m, label, shift, style in [(mh, "haloes", 1.0, dict(fmt="o", color="C0", ms=5, capsize=2)),
                                       (mc, "level-0 clumps", 10 ** 0.04, dict(fmt="s", color="C1", ms=3.5, mfc="none",
                                                                               capsize=2))]:
            y, err = binned_mass_function(m, volume, edges)
            ok = y > 0  # the clumps drawn a little to the right, so that equal points stay apart
            ax.errorbar(mid[ok] * shift, y[ok], yerr=err[ok], label=f"{label} ({len(m)})", **style)
    om, ol = g.get("omega_m"), g.get("omega_lambda")
    known = run_spectrum(a.clumps, g)
    if om is not None and h and int(g.get("comoving", 0)):
        om, ol = float(om), float(ol)
        sigma8 = a.sigma8 or known.get("sigma8")
        said = "" if sigma8 else " (assumed)"
        sigma8 = sigma8 or 0.81
        if known.get("spectrum") == "cdm" and not (a.omega_b or a.ns):
            ns = float(known.get("ns", 1.0))
            spec = LinearSpectrum(lambda k: transfer_bbks(k, om, h), ns, sigma8)
            what = f"BBKS, n = {ns:g}, as {known['source']} made the box"
        else:
            ob = a.omega_b or known.get("omega_b")
            ob_said = "" if ob else " (assumed)"
            ob = ob or 0.049
            ns = a.ns or known.get("ns") or 0.965
            spec = LinearSpectrum(lambda k: transfer_eh_nowiggle(k, om, ob, h), ns, sigma8)
            what = f"Eisenstein-Hu no-wiggle, $\\Omega_b$ = {ob:g}{ob_said}, $n_s$ = {ns:g}"
        m = np.geomspace(1e9, 1e16, 300)
        st, tinker = mass_functions(m, spec, om, z, growth_factor(1 / (1 + z), om, ol))
        theory_top = st[(m >= 10 ** (edges[0] - 0.3)) & (m <= 10 ** (edges[-1] + 0.3))].max() if len(every) else 0
        ax.plot(m, st, "k-", lw=1.2, label="Sheth & Tormen (1999)")
        ax.plot(m, tinker, "k--", lw=1.0, label=r"Tinker et al. (2008), $\Delta$ = 200 mean")
        note = (f"$\\Omega_m$ = {om:.3g}, h = {h:.3g}, $\\sigma_8$ = {sigma8:g}{said}; {what}")
    else:
        note = "no cosmology in the grid: no theory curve"
        theory_top = 0
    if mp > 0:
        ax.axvline(100 * mp, color="0.6", ls=":", lw=1)
        ax.text(100 * mp, 0.97, " 100 particles", transform=ax.get_xaxis_transform(), color="0.4", fontsize=8, va="top")
    ax.set(xscale="log", yscale="log")
    if len(every):
        ax.set_xlim(10 ** (edges[0] - 0.3), 10 ** (edges[-1] + 0.3))
        n_max = max(np.histogram(np.log10(m), edges)[0].max() for m in (mh, mc) if len(m))
        ax.set_ylim(0.3 / volume / 0.2, max(5 * n_max / volume / 0.2, 2 * theory_top))
    ax.set(xlabel=r"$M$ [$h^{-1}\,M_\odot$]", ylabel=r"$dn/d\log_{10}M$ [$h^3\,\mathrm{Mpc}^{-3}$]",
           title=f"mass function at z = {max(z, 0.0) if abs(z) < 0.005 else z:.2f} in a {volume:.4g} (Mpc/h)$^3$ box")
    ax.legend(fontsize=8, loc="upper right")
    fig.text(0.01, 0.005, note, fontsize=7, color="0.3")
    fig.savefig(a.out, dpi=a.dpi)


# ---- Vmax function -----------------------------------------------------------------------------------

def vmaxfunction(a):
    """The cumulative Vmax function n(>Vmax) of unbind's haloes and subhaloes (bound.h5), per (Mpc/h)^3:
    the picture halo finders are compared by. The counts are printed too (Vmax, n_haloes(>), n_sub(>))."""
    with h5py.File(a.bound) as f:
        o, g = f["objects"], dict(f["grid"].attrs)
        vmax, parent, n_bound = o["vmax"][...], o["parent"][...], o["n_bound"][...]
        vunits = text(o["vmax"].attrs.get("units", ""))
    h = float(g["hubble_param"]) if "hubble_param" in g else None
    lf = length_in_mpc_h(g["length_units"], h)
    if lf is None:
        raise SystemExit(f"phewplot.py: error: {a.bound}: length units {text(g['length_units'])} cannot be converted "
                         "to Mpc/h (no hubble_param)")
    volume = float(np.prod(np.asarray(g["box_size"]) * lf))
    keep = (vmax > 0) & (n_bound >= a.min_particles)
    fig, ax = plt.subplots(figsize=(6.4, 5.0), constrained_layout=True)
    print("vmax n_haloes_above n_subhaloes_above")
    grid_v = np.unique(vmax[keep])
    for label, sel, style in [("haloes", keep & (parent == 0), dict(color="C0")),
                              ("subhaloes", keep & (parent != 0), dict(color="C1", ls="--"))]:
        v = np.sort(vmax[sel])[::-1]
        if len(v):
            ax.step(v, np.arange(1, len(v) + 1) / volume, where="post", label=f"{label} ({len(v)})", **style)
    for v in grid_v[::-1][:a.print_rows][::-1]:
        print(f"{v:.6g} {np.count_nonzero(keep & (parent == 0) & (vmax >= v))} "
              f"{np.count_nonzero(keep & (parent != 0) & (vmax >= v))}")
    ax.set(xscale="log", yscale="log", xlabel=f"$V_{{max}}$ [{pretty(vunits.split(' (')[0])}]",
           ylabel=r"$n(>V_{max})$ [$h^3\,\mathrm{Mpc}^{-3}$]",
           title=f"Vmax function: {volume:.3g} (Mpc/h)$^3$, objects of $\\geq$ {a.min_particles} bound particles")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
    fig.savefig(a.out, dpi=a.dpi)


# ---- dendrogram ------------------------------------------------------------------------------------

def dendrogram(a):
    with h5py.File(a.clumps) as c:
        cl = {k: c["clumps"][k][...] for k in ("id", "parent", "halo", "peak_density", "mass")}
        hier = {k: c["hierarchy"][k][...] for k in ("clump", "into", "level", "saddle_density")}
        units = text(c["grid"].attrs["units"])
        mean = float(c["grid"].attrs.get("mean_density", 0))
        threshold = float(c.attrs.get("density_threshold", 0))
        saddle = float(c.attrs["saddle_threshold"]) if "saddle_threshold" in c.attrs else None
    scale = 1 / mean if mean > 0 else 1.0  # densities in units of the mean
    cl["peak_density"] = cl["peak_density"] * scale
    hier["saddle_density"] = hier["saddle_density"] * scale
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
    floor = threshold * scale if threshold > 0 else min([merge[m][2] for m in members if m in merge], default=peak[halo]) * 0.7
    for n in members:
        if n not in xpos:
            continue
        bottom = merge[n][2] if n in merge else floor
        colour = cmap(0.85 * (merge[n][1] - 1) / max(levels - 1, 1)) if n in merge else "k"
        ax.plot([xpos[n], xpos[n]], [peak[n], bottom], color=colour, lw=2)
        if n in merge:
            ax.plot([xpos[n], xpos[merge[n][0]]], [bottom, bottom], color=colour, lw=1)
        if len(members) <= 30:
            ax.annotate(str(n), (xpos[n], peak[n]), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    if threshold > 0:
        ax.axhline(threshold * scale, color="0.5", ls=":", lw=1, label="density threshold")
    if saddle:
        ax.axhline(saddle * scale, color="C3", ls="--", lw=1, label="saddle threshold")
    ax.set_yscale("log")
    ax.set(xticks=[], xlim=(-0.7, len(order) - 0.3),
           ylabel=r"$\rho/\bar\rho$" if mean > 0 else f"density [{units}]",
           title=f"saddle hierarchy of halo {halo}: {len(members)} clumps, {levels} level{'s' if levels != 1 else ''}"
                 + (" (colour = level)" if levels > 1 else ""))
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper right")
    fig.savefig(a.out, dpi=a.dpi)


# ---- maps ------------------------------------------------------------------------------------------

def map_image(sigma, centre, size, u, v):
    """The map sigma[i][j] (i along the u axis, j along v; docs/formats.md) as an image for imshow(...,
    origin="lower", extent=extent): u to the right, v up."""
    cu, cv = centre["xyz".index(u)], centre["xyz".index(v)]
    return sigma.T, [cu - size / 2, cu + size / 2, cv - size / 2, cv + size / 2]


def maps(a):
    with h5py.File(a.maps) as f:
        m = f["maps"]
        n = min(len(m["sigma"]), a.max)
        sigma = m["sigma"][:n].astype(float)
        centre, size, ids = m["center"][:n], m["size"][:n], m["id"][:n]
        units, lunits = text(m.attrs["units"]), text(m.attrs["length_units"])
        u, v, los = text(m.attrs["u_axis"]), text(m.attrs["v_axis"]), text(m.attrs.get("line_of_sight", "?"))
        depth = m["depth"][:n] if "depth" in m else None
        source = text(m.attrs.get("centers_source", ""))
    # in Msun/h per (kpc/h)^2 when the units say how (the file's own units otherwise)
    mass_units = text(units).split(")/(")[0].lstrip("(") if ")/(" in text(units) else None
    mf, lf = mass_in_msun_h(mass_units) if mass_units else None, length_in_mpc_h(lunits)
    if mf and lf:
        sigma = sigma * mf / (lf * 1e3) ** 2
        units = "(Msun/h)/(kpc/h)^2"
    # one colour scale for every panel: `decades` below the brightest pixel of all
    top = sigma.max() if n and sigma.max() > 0 else 1.0
    vmin, vmax = np.log10(top) - a.decades, np.log10(top)
    f, dunits = display_length(lunits, float(size.max()) if n else 0)
    cols = max(1, min(n, 4))
    rows = max(1, (n + cols - 1) // cols)
    fig, ax = plt.subplots(rows, cols, figsize=(3.3 * cols + 1.0, 3.3 * rows + 0.4), constrained_layout=True,
                           squeeze=False)
    im = None
    for k in range(rows * cols):
        axis = ax[k // cols][k % cols]
        if k >= n:
            axis.axis("off")
            continue
        img, extent = map_image(sigma[k], centre[k], size[k], u, v)
        im = axis.imshow(np.log10(np.maximum(img, 10 ** vmin)), origin="lower", cmap="inferno", vmin=vmin, vmax=vmax,
                         extent=[e * f for e in extent], interpolation="nearest")
        axis.set_title(f"{'halo' if source == 'clumps' else 'field'} {ids[k]}", fontsize=9)
        axis.tick_params(labelsize=7)
        if k % cols == 0:
            axis.set_ylabel(f"{v} [{dunits}]")
        if k // cols == rows - 1 or k + cols >= n:
            axis.set_xlabel(f"{u} [{dunits}]")
    if im is not None:
        fig.colorbar(im, ax=ax, shrink=0.8, label=rf"$\log_{{10}}\,\Sigma$ [{pretty(units)}] (one scale for all)")
    thick = f", depth {depth[0] * f:.3g} {dunits}" if depth is not None and n else ""
    fig.suptitle(f"surface density projected along {los}{thick}", fontsize=10)
    fig.savefig(a.out, dpi=a.dpi)


# ---- paths -----------------------------------------------------------------------------------------

def broken_path(x, box):
    """The points x[n][3] of one lineage with a NaN row inserted wherever a step crosses the periodic box
    (a jump of more than half the box on some axis), so that the line breaks instead of crossing it."""
    if len(x) < 2 or box is None:
        return x
    box = np.asarray(box, dtype=float)
    jump = (np.abs(np.diff(x, axis=0)) > 0.5 * np.where(box > 0, box, np.inf)).any(axis=1)
    out = []
    for k in range(len(x)):
        if k and jump[k - 1]:
            out.append(np.full(3, np.nan))
        out.append(x[k])
    return np.array(out)


def read_tree(path):
    with h5py.File(path) as f:
        p = {k: f["peaks"][k][...] for k in ("snapshot", "lineage", "position", "mass", "artefact", "merged",
                                             "revived_from_graveyard")}
        s = f["state"].attrs
        box = np.asarray(s["box_size"], dtype=float) if "box_size" in s else None
        lunits = text(s.get("length_units", ""))
        mass_unit = None
        if int(s.get("units_known", 0)):
            mass_unit = float(s["mass_in_g"]) / MSUN_G  # Msun (per h when h-scaled)
            mass_name = "Msun/h" if int(s.get("h_scaled", 0)) else "Msun"
    p["box"], p["lunits"] = box, lunits
    p["mass_factor"], p["mass_name"] = (mass_unit, mass_name) if mass_unit else (1.0, "snapshot units")
    return p


def paths(a):
    titles = a.titles.split(",") if a.titles else [None] * len(a.trees)
    trees = [read_tree(t) for t in a.trees]
    # one colour scale for every panel: each lineage's largest mass
    tops = [t["mass"][(t["artefact"] == 0) & (t["lineage"] == lin)].max() * t["mass_factor"]
            for t in trees for lin in np.unique(t["lineage"][t["artefact"] == 0])]
    tops = np.array([m for m in tops if m > 0] or [1.0])
    lo, hi = tops.min(), max(tops.max(), tops.min() * 1.01)
    norm = matplotlib.colors.LogNorm(lo, hi) if hi > 10 * lo else matplotlib.colors.Normalize(lo, hi)
    cmap = plt.get_cmap("viridis")
    fig, axes = plt.subplots(1, len(trees), figsize=(5.2 * len(trees) + 1.2, 5.4), constrained_layout=True, squeeze=False)
    for axis, p, path, title in zip(axes[0], trees, a.trees, titles):
        keep = p["artefact"] == 0
        box = p["box"]
        f, lunits = display_length(p["lunits"], float(box.max()) if box is not None else 0)
        lineages = np.unique(p["lineage"][keep])
        order = sorted(lineages, key=lambda lin: p["mass"][keep & (p["lineage"] == lin)].max())
        for lin in order:  # the most massive drawn last, on top
            sel = keep & (p["lineage"] == lin)
            by_time = np.argsort(p["snapshot"][sel], kind="stable")
            x = broken_path(p["position"][sel][by_time], box)
            colour = cmap(norm(p["mass"][sel].max() * p["mass_factor"]))
            axis.plot(x[:, 0] * f, x[:, 1] * f, "-", color=colour, lw=1.4, alpha=0.9, solid_capstyle="round")
            end = p["position"][sel][by_time][-1]
            axis.plot(end[0] * f, end[1] * f, "o", color=colour, ms=3)
        rev = keep & (p["revived_from_graveyard"] == 1)
        axis.plot(p["position"][rev][:, 0] * f, p["position"][rev][:, 1] * f, "o", mfc="none", color="C3", ms=8)
        gone = keep & (p["merged"] == 1)
        axis.plot(p["position"][gone][:, 0] * f, p["position"][gone][:, 1] * f, "s", mfc="none", color="k", ms=6)
        art = p["artefact"] == 1
        axis.plot(p["position"][art][:, 0] * f, p["position"][art][:, 1] * f, "x", color="0.55", ms=4)
        axis.set(xlabel=f"x [{lunits}]", ylabel=f"y [{lunits}]", aspect="equal",
                 title=f"{title or os.path.basename(path)}: {len(lineages)} lineages, projected on x-y")
        axis.legend(handles=[Line2D([], [], ls="", marker="o", color="k", ms=3, label="last position"),
                             Line2D([], [], ls="", marker="s", mfc="none", color="k", ms=6, label="merged"),
                             Line2D([], [], ls="", marker="o", mfc="none", color="C3", ms=8, label="revived (graveyard)"),
                             Line2D([], [], ls="", marker="x", color="0.55", ms=4, label=f"artefacts ({art.sum()})")],
                    fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.11), ncol=4, frameon=False,
                    handletextpad=0.2, columnspacing=0.8)
    sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
    fig.colorbar(sm, ax=axes[0].tolist(), shrink=0.85, label=f"largest peak mass of the lineage [{trees[0]['mass_name']}]")
    fig.savefig(a.out, dpi=a.dpi, bbox_inches="tight")


# ---- velocity and voters ---------------------------------------------------------------------------

def grid_of(path):
    with h5py.File(path) as f:
        g = dict(f["grid"].attrs)
    f_, units = display_length(g["length_units"], float(np.max(g["box_size"])))
    return g, units


def velocity(a):
    with h5py.File(a.peaks) as f:
        ids, parent, split = f["peaks/id"][...], f["peaks/parent_clump"][...], f["peaks/from_deblending"][...]
        xpk = f["peaks/position"][...]
        pid, ppeak = f["particles/id"][...], f["particles/peak"][...]
        vunits = text(f["peaks/velocity"].attrs.get("units", "km/s"))
    g, _ = grid_of(a.peaks)
    lunits = text(g["length_units"])
    clump = a.clump if a.clump is not None else int(parent[split == 1][0] if split.any() else parent[0])
    mine = ids[parent == clump]
    if not len(mine):
        raise SystemExit(f"phewplot.py: error: {a.peaks}: no peak of clump {clump}")
    s = read_snapshot(a.snapshot, a.type)
    order = np.argsort(s["id"])
    sid = s["id"][order]
    sel = np.isin(ppeak, mine)
    rows = np.searchsorted(sid, pid[sel])
    if (rows >= len(sid)).any() or (sid[np.minimum(rows, len(sid) - 1)] != pid[sel]).any():
        raise SystemExit(f"phewplot.py: error: {a.snapshot}: particles of {a.peaks} are missing (another snapshot?)")
    x0 = xpk[ids == clump][0] if (ids == clump).any() else xpk[ids == mine[0]][0]
    x = min_image(s["position"][order][rows] - x0, g["box_size"], bool(g.get("periodic", 1)))
    v = s["velocity"][order][rows]
    v -= v.mean(axis=0)
    fig, ax = plt.subplots(1, 2, figsize=(10.5, 5), constrained_layout=True)
    for k, p in enumerate(mine):
        m = ppeak[sel] == p
        label = f"peak {p}" + (" (velocity space)" if split[ids == p][0] else " (primary)") + f", {m.sum()} particles"
        ax[0].scatter(x[m, 0], x[m, 1], s=2, alpha=0.5, label=label, color=f"C{k}", rasterized=True)
        ax[1].scatter(v[m, 0], v[m, 1], s=2, alpha=0.5, color=f"C{k}", rasterized=True)
    vname = "km/s" if vunits.startswith("km/s") else vunits
    ax[0].set(xlabel=f"x - x_peak [{lunits}]", ylabel=f"y - y_peak [{lunits}]", title=f"patch {clump}: positions")
    pec = ", peculiar" if scale_factor(g) != 1.0 else ""
    ax[1].set(xlabel=rf"$v_x - \langle v_x\rangle$ [{vname}{pec}]", ylabel=rf"$v_y - \langle v_y\rangle$ [{vname}{pec}]",
              title="velocities")
    for axis in ax:
        axis.set_aspect("equal", adjustable="datalim")
    ax[0].legend(markerscale=5, loc="upper right", fontsize=8)
    fig.savefig(a.out, dpi=a.dpi)


def local_potential(x, m, G, eps, chunk=2048):
    """Potential at each of the points x[n][3] from the points themselves (Plummer softening eps)."""
    phi = np.zeros(len(x))
    for b in range(0, len(x), chunk):
        d = np.sqrt(((x[b:b + chunk, None, :] - x[None, :, :]) ** 2).sum(axis=2) + eps * eps)
        phi[b:b + chunk] = -G * (m[None, :] / d).sum(axis=1) + G * m[b:b + chunk] / eps  # no self-term
    return phi


def voters(a):
    with h5py.File(a.peaks) as p:
        ids, pos, mass = p["peaks/id"][...], p["peaks/position"][...], p["peaks/mass"][...]
        G = float(p.attrs["gravitational_constant"])
    g, _ = grid_of(a.peaks)
    lunits = text(g["length_units"])
    peak = a.peak if a.peak is not None else int(ids[np.argmin(mass)])
    if not (ids == peak).any():
        raise SystemExit(f"phewplot.py: error: {a.peaks}: no peak {peak}")
    x0 = pos[ids == peak][0]
    with h5py.File(a.voters) as v:
        k = v["peaks/id"][...] == peak
        a0, rs = v["peaks/a0"][...][k][0], v["peaks/search_radius"][...][k][0]
        chosen = v["voters/particle_id"][...][v["voters/peak"][...] == peak]
        source = text(v.attrs.get("potential_source", ""))
    s = read_snapshot(a.snapshot, a.type, potential=True)
    scale = scale_factor(g)
    dx = min_image(s["position"] - x0, g["box_size"], bool(g.get("periodic", 1)))
    near = (dx ** 2).sum(axis=1) < (a.window * rs) ** 2
    xs, ms = dx[near], s["mass"][near]
    if s["potential"] is not None:
        phi = s["potential"][near] / scale  # comoving -> physical, as voters does
        what = "the snapshot's Potential"
    else:  # none stored (RAMSES, most snapshots): the particles within the window, summed directly
        eps = float(a.softening or rs / 30)
        phi = local_potential(xs * scale, ms, G, eps * scale)
        what = (f"summed here over the {near.sum()} particles within {a.window:g} search radii (the snapshot stores none;\n"
                f"voters used {source})")
    boosted = phi + (xs * scale) @ a0
    inside = (xs ** 2).sum(axis=1) < rs ** 2
    isv = np.isin(s["id"][near], chosen)
    fig, ax = plt.subplots(2, 1, figsize=(6.4, 7.4), sharex=True, constrained_layout=True)
    for axis, y, title in [(ax[0], phi, "potential"), (ax[1], boosted, "boosted potential")]:
        axis.scatter(xs[:, 0], y, s=2, color="0.75", label="particles", rasterized=True)
        axis.scatter(xs[inside, 0], y[inside], s=2, color="0.35", label="within the search radius", rasterized=True)
        axis.scatter(xs[isv, 0], y[isv], s=10, color="red", label=f"voters ({isv.sum()})")
        axis.axvspan(-rs, rs, color="C0", alpha=0.08)
        axis.set(ylabel=f"{title} [(km/s)$^2$]")
    ax[1].set_xlabel(f"x - x_peak [{lunits}] (peak {peak})")
    ax[0].legend(markerscale=4, loc="lower left", fontsize=8)
    fig.suptitle(f"potential: {what}", fontsize=7)
    fig.savefig(a.out, dpi=a.dpi)


# ---- tree statistics -------------------------------------------------------------------------------

def treestats(a):
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
    left_out = c.get("final_artefacts_left_out")
    fig.suptitle(f"merger-tree statistics: {s['n_snapshots']} snapshots, {c['peaks']} peaks, {c['lineages']} lineages, "
                 f"{c['mergers']} mergers, {c['revived']} revivals, {c['links_skipping_snapshots']} links skipping "
                 f"snapshots,\n{c['artefacts']} artefacts"
                 + (f" ({left_out} of them final peaks, counted neither as haloes nor as subhaloes)" if left_out is not None
                    else ""))
    fig.savefig(a.out, dpi=a.dpi)


def ramses(a):
    sys.path.insert(0, HERE)
    import ramses_phew
    result, ours, theirs = ramses_phew.compare(a.clumps, a.output, a.radius)
    print(ramses_phew.report(result))
    ramses_phew.picture(result, ours, theirs, a.out, a.grid)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def command(name, fn):
        s = sub.add_parser(name)
        s.add_argument("--dpi", type=int, default=90, help="resolution of the picture (default 90)")
        s.set_defaults(fn=fn)
        return s

    s = command("slice", slice_)
    s.add_argument("clumps"), s.add_argument("grid"), s.add_argument("out"), s.add_argument("--index", type=int)
    s.add_argument("--thickness", type=int, default=16, help="planes averaged (default 16)")
    s.add_argument("--zoom", type=float, help="side of the zoom on the most massive halo, length units "
                                               "(default: 6 times its radius)")
    s = command("massfunction", massfunction)
    s.add_argument("clumps"), s.add_argument("out")
    s.add_argument("--sigma8", type=float, help="the run's sigma8 (default: from the run, else 0.81)")
    s.add_argument("--omega-b", type=float, help="baryon density (default: from the run, else 0.049)")
    s.add_argument("--ns", type=float, help="spectral index (default: from the run, else 0.965)")
    s = command("vmaxfunction", vmaxfunction)
    s.add_argument("bound"), s.add_argument("out")
    s.add_argument("--min-particles", type=int, default=20, help="bound particles an object needs (default 20)")
    s.add_argument("--print-rows", type=int, default=10, help="the largest Vmax values printed with their counts")
    s = command("dendrogram", dendrogram)
    s.add_argument("clumps"), s.add_argument("out"), s.add_argument("--halo", type=int)
    s = command("maps", maps)
    s.add_argument("maps"), s.add_argument("out"), s.add_argument("--max", type=int, default=8)
    s.add_argument("--decades", type=float, default=4.0, help="decades of the shared colour scale (default 4)")
    s = command("paths", paths)
    s.add_argument("out"), s.add_argument("trees", nargs="+"), s.add_argument("--titles", help="comma-separated")
    s = command("velocity", velocity)
    s.add_argument("peaks"), s.add_argument("snapshot"), s.add_argument("out")
    s.add_argument("--clump", type=int), s.add_argument("--type", type=int, default=1)
    s = command("voters", voters)
    s.add_argument("voters"), s.add_argument("peaks"), s.add_argument("snapshot"), s.add_argument("out")
    s.add_argument("--peak", type=int), s.add_argument("--type", type=int, default=1)
    s.add_argument("--window", type=float, default=3.0, help="particles within this many search radii (default 3)")
    s.add_argument("--softening", type=float, help="for a potential summed here (default: search radius / 30)")
    s = command("ramses", ramses)
    s.add_argument("clumps"), s.add_argument("output"), s.add_argument("out"), s.add_argument("--grid")
    s.add_argument("--radius", type=float, default=0.3, help="match radius in Mpc/h (default 0.3)")
    s = command("treestats", treestats)
    s.add_argument("stats"), s.add_argument("out")
    s = command("labels", labels)
    s.add_argument("file"), s.add_argument("out")
    s = command("levels", levels)
    s.add_argument("clumps"), s.add_argument("grid"), s.add_argument("out")
    s.add_argument("--index", type=int, help="the plane, on the finest lattice (default: through the most massive halo)")
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
