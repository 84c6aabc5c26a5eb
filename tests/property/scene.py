#!/usr/bin/python3
"""A seeded random scene for the rank-invariance harness: Gadget-style HDF5 snapshots and the options
each tool of the chain is run with.

Usage: scene.py SEED OUTDIR     (writes OUTDIR/snap_000.hdf5 ... (or snap_000.0.hdf5, .1, ...),
                                 OUTDIR/centers.txt, OUTDIR/scene.json)

The same seed gives the same files and options (numpy's default_rng). What a seed varies:
  particles      15,000-50,000, in one file or a multi-file snapshot of 2-3 uneven pieces; equal masses (MassTable or a Masses column) or unequal ones; particle
                 IDs permuted, 32- or 64-bit, sometimes huge with gaps; file order shuffled per snapshot
  blobs          1-60 Gaussian blobs (some top-hat spheres), widths 0.5-10 cells, mass ratios 1-1000,
                 a uniform background of 0-60% of the particles (sometimes on cell centres: plateaus of
                 exactly equal densities); blobs centred on the planes (x, y or z) that split the grid between
                 2, 3, 4 and 8 ranks
                 into blocks (and on the slabs of the potential's mesh), across the periodic
                 boundary (or the region's edge), inside a wider blob (substructure), touching a
                 bigger blob
  velocities     a bulk velocity per blob and a dispersion of 0.3 v_escape; some blobs are two streams
                 several v_escape apart (deblend splits them)
  box            periodic, or open boundaries (BoxSize 0, or a Gadget-4 /Config without PERIODIC) with
                 a --region grid that may cut blobs or leave empty margins; with or without cosmology
  grid           5-64 cells per side, primes, sizes leaving 1-2 planes per rank at 4 ranks, sometimes
                 different NX, NY, NZ; CIC, NGP (integer counts: many ties) or TSC; float32 or float64
  thresholds     0.5-200 x the mean; relevance, saddle threshold, second relevance
  potential      Potential and Acceleration stored (analytic Plummer wells of the blobs) or not
  time sequence  2-3 snapshots, the blobs moved ballistically (streams drift apart), for mergertree
"""
import json
import sys
from pathlib import Path

import h5py
import numpy as np

G = 43007.1  # kpc (km/s)^2 / 1e10 Msun, Gadget's default units
PRIMES = [5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 53, 61]
SMALL = [5, 6, 7, 8, 9]  # 1-2 planes per rank at 4 ranks
EVEN = [12, 16, 24, 32, 40, 48, 64]


def slab_begins(n, ranks):
    """First plane of each rank: n planes over `ranks` ranks, the first n % ranks get one more."""
    q, r = divmod(n, ranks)
    return [k * q + min(k, r) for k in range(ranks)]


def pick_grid(rng):
    kind = rng.choice(["prime", "small", "even", "mixed"], p=[0.35, 0.2, 0.3, 0.15])
    if kind == "prime":
        n = int(rng.choice(PRIMES))
        return [n, n, n]
    if kind == "small":
        n = int(rng.choice(SMALL))
        return [n, n, n]
    if kind == "even":
        n = int(rng.choice(EVEN))
        return [n, n, n]
    # NX small or prime, NY and NZ anything
    return [int(rng.choice(SMALL + PRIMES[:8])), int(rng.choice(PRIMES + EVEN[:4])), int(rng.choice(PRIMES + EVEN[:4]))]


def make(seed, out, grid=None):
    """The scene of `seed` in folder `out`; `grid` ([nx, ny, nz]) replaces the grid it would pick (the
    rest of the scene stays the seed's)."""
    rng = np.random.default_rng(seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    box = 100.0
    periodic = bool(rng.uniform() < 0.7)
    shape = pick_grid(rng)
    if grid is not None:
        shape = [int(v) for v in grid]
    if periodic:
        lo, hi = np.zeros(3), np.full(3, box)
        region = None
    else:
        # The region: usually about the particles' extent; may cut blobs or leave empty margins.
        lo = rng.uniform(-8, 15, 3)
        hi = rng.uniform(85, 108, 3)
        if rng.uniform() < 0.5:  # cubic cells
            side = float(np.max(hi - lo))
            hi = lo + side * np.asarray(shape) / max(shape)
        lo, hi = np.round(lo, 3), np.round(hi, 3)
        region = [float(v) for v in np.concatenate([lo, hi])]
    extent = hi - lo
    cell = extent / np.asarray(shape)
    mcell = float(np.mean(cell))

    n = int(rng.integers(15_000, 50_001))
    nb = int(rng.integers(1, 61))
    bg_frac = 0.0 if rng.uniform() < 0.3 else float(rng.uniform(0, 0.6))
    n_bg = int(n * bg_frac)
    width = mcell * 10 ** rng.uniform(np.log10(0.5), 1.0, nb)  # sigma: 0.5-10 cells
    weight = 10 ** rng.uniform(0, 3, nb)  # mass ratios up to 1000
    counts = rng.multinomial(n - n_bg, weight / weight.sum())
    centre = lo + rng.uniform(0, 1, (nb, 3)) * extent
    place = []
    # Per axis, the planes where the blocks of 2, 3, 4 or 8 ranks meet (each axis of a rank lattice is cut
    # in 1-4 even parts), and on x the potential mesh's slabs (powers of 2).
    planes = [sorted({lo[ax] + b * cell[ax] for r in (2, 3, 4) for b in slab_begins(shape[ax], r)[1:]} | {lo[ax] + extent[ax] / 2})
              for ax in range(3)]
    planes[0] = sorted(set(planes[0]) | {lo[0] + extent[0] * k / 4 for k in (1, 2, 3)} | {lo[0] + extent[0] * k / 3 for k in (1, 2)})
    for b in range(nb):
        u = rng.uniform()
        wider = [k for k in range(b) if width[k] > 2 * width[b]]
        if u < 0.25:  # on a block boundary (x, y, z in turn)
            ax = b % 3
            centre[b, ax] = float(rng.choice(planes[ax])) + (0 if rng.uniform() < 0.3 else rng.normal(0, 0.5) * cell[ax])
            place.append("block")
        elif u < 0.37:  # across the periodic boundary (or the region's edge)
            ax = int(rng.integers(3))
            centre[b, ax] = (lo[ax] if rng.uniform() < 0.5 else hi[ax]) + rng.normal(0, 1) * width[b]
            place.append(f"edge{ax}")
        elif u < 0.62 and wider:  # substructure: inside a wider blob (a saddle hierarchy)
            k = int(rng.choice(wider))
            centre[b] = centre[k] + rng.normal(0, 0.8, 3) * width[k]
            place.append(f"inside{k}")
        elif u < 0.77 and b > 0:  # touching a bigger blob
            k = int(np.argmax(counts[:b]))
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            centre[b] = centre[k] + d * (width[b] + width[k]) * rng.uniform(0.6, 2.0)
            place.append(f"touch{k}")
        else:
            place.append("free")
    tophat = rng.uniform(size=nb) < 0.15

    # Masses: equal via MassTable, equal via Masses, unequal (per particle or per blob).
    mass_mode = str(rng.choice(["table", "column", "random", "per_blob"]))
    m0 = 1e-4
    member = np.concatenate([np.full(n_bg, -1)] + [np.full(c, b) for b, c in enumerate(counts)])
    if mass_mode in ("table", "column"):
        mass = np.full(n, m0)
    elif mass_mode == "random":
        mass = m0 * rng.uniform(0.5, 2.0, n)
    else:
        per = m0 * 10 ** rng.uniform(-0.5, 0.5, nb + 1)
        mass = per[member + 1]

    # Positions at t = 0 relative to the blob centres; velocities.
    offsets = np.empty((n, 3))
    lattice_bg = bool(n_bg > 0 and rng.uniform() < 0.25)
    if n_bg:
        if lattice_bg:  # particles on cell centres: a plateau of exactly equal densities
            ijk = np.stack([rng.integers(0, s, n_bg) for s in shape], axis=1)
            offsets[:n_bg] = lo + (ijk + 0.5) * cell
        else:
            offsets[:n_bg] = lo + rng.uniform(0, 1, (n_bg, 3)) * extent
    vel = np.empty((n, 3))
    vel[:n_bg] = rng.normal(0, 30, (n_bg, 3))
    bulk = rng.normal(0, float(rng.choice([20, 50, 100])), (nb, 3))
    streams = np.zeros(nb, dtype=bool)
    drift = np.zeros((n, 3))  # velocity the particle moves with between snapshots
    drift[:n_bg] = vel[:n_bg] * 0.2
    start = n_bg
    for b in range(nb):
        c = counts[b]
        sl = slice(start, start + c)
        start += c
        if c == 0:
            continue
        if tophat[b]:
            u = rng.normal(size=(c, 3))
            u /= np.linalg.norm(u, axis=1)[:, None]
            r = 2 * width[b] * rng.uniform(0, 1, c) ** (1 / 3)
            offsets[sl] = centre[b] + u * r[:, None]
        else:
            offsets[sl] = centre[b] + width[b] * rng.standard_normal((c, 3))
        m_b = mass[sl].sum()
        v_esc = np.sqrt(2 * G * m_b / (3 * width[b]))
        v = bulk[b] + 0.3 * v_esc * rng.standard_normal((c, 3))
        if c >= 200 and rng.uniform() < 0.25:  # two streams, several v_esc apart
            streams[b] = True
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            half = np.arange(c) < c // 2
            dv = rng.uniform(3, 6) * v_esc
            v += np.where(half[:, None], 0.5, -0.5) * dv * d
        vel[sl] = v
        drift[sl] = v
    pos0 = offsets

    # Stored potential (Plummer wells of the blobs) in about half the scenes.
    potential = bool(rng.uniform() < 0.5)
    cosmology = bool(rng.uniform() < 0.4)
    open_style = None if periodic else str(rng.choice(["boxsize0", "gadget4"]))
    nsnap = int(rng.choice([2, 3], p=[0.7, 0.3]))
    # Time step: the typical blob moves 1-3 cells per step.
    dt = rng.uniform(1, 3) * mcell / max(1.0, float(np.median(np.linalg.norm(bulk, axis=1))))
    id_mode = str(rng.choice(["perm64", "perm32", "sparse"]))
    if id_mode == "sparse":
        ids = np.sort(rng.choice(10 * n, n, replace=False)).astype(np.uint64) + np.uint64(10**12)
        ids = rng.permutation(ids)
    else:
        ids = rng.permutation(n).astype(np.uint64) + 1
    id_dtype = np.uint32 if id_mode == "perm32" else np.uint64

    # Gadget-4 open boxes keep every particle inside [0, BoxSize): a large box, everything shifted into it
    # (the region too); BoxSize 0 files have no box at all.
    shift = np.zeros(3)
    boxsize = box if periodic else 0.0
    if open_style == "gadget4":
        boxsize, shift = 10000.0, np.full(3, 5000.0)
        region = [v + 5000.0 for v in region]
    # Particle types in some scenes (a stream of their own: the other choices of every seed stay what they
    # were): each blob and the background dark matter (1), stars (4) or gas (0), the chain
    # made of every type (cic-project --types all) and unbind's per-type columns filled.
    # Every fifth seed is typed (each CI range of five seeds has one), and about a third of the others.
    types_rng = np.random.default_rng([seed, 41])
    typed = bool(types_rng.uniform() < 0.35) or seed % 5 == 0
    ptype = np.ones(n, dtype=int)
    if typed:
        of_group = types_rng.choice([0, 1, 4], nb + 1, p=[0.3, 0.4, 0.3])
        heaviest = np.argsort(counts)[::-1]
        of_group[0] = of_group[1 + int(heaviest[0])] = 1  # dark matter always (dtfe-surface's default)
        if nb > 1:
            of_group[1 + int(heaviest[1])] = 4  # the next heaviest blob stars: a bound object of stars
        ptype = of_group[member + 1]
    # Multi-file snapshots in some scenes (pieces of uneven size: rank shares cross file boundaries).
    nfiles = int(rng.choice([1, 2, 3], p=[0.7, 0.2, 0.1]))
    cuts = np.sort(rng.choice(np.arange(1, n), nfiles - 1, replace=False)) if nfiles > 1 else np.zeros(0, int)
    for k in range(nsnap):
        t = k * dt
        pos = pos0 + drift * t + shift
        if periodic:
            pos = np.mod(pos, box).astype(np.float32)
            pos[pos >= np.float32(box)] = 0.0  # rounding of mod or of the cast
        order = rng.permutation(n)  # file order differs from snapshot to snapshot
        time = (0.8 + 0.1 * k) if cosmology else t
        write_snapshot(out / f"snap_{k:03d}", cuts, pos[order], vel[order], ids[order].astype(id_dtype), mass[order],
                       mass_mode, boxsize, open_style, time,
                       cosmology, potential, pos[order], centre + bulk * t + shift, width, counts, mass, member, periodic,
                       ptype[order])

    # Field centres for dtfe-surface: the heaviest blob, a blob on a block boundary, an edge point.
    big = int(np.argmax(counts))
    cs = [centre[big]]
    sl = [b for b in range(nb) if place[b] == "block"]
    if sl:
        cs.append(centre[sl[0]])
    if periodic:  # a point on the periodic seam
        cs.append(np.array([lo[0] + 0.5 * cell[0], lo[1] + extent[1] * rng.uniform(), hi[2] - 0.5 * cell[2]]))
    else:  # open box: another blob (a field needs particles around it)
        cs.append(centre[int(rng.integers(nb))])
    cs = [np.clip(c, lo + 0.5 * cell, hi - 0.5 * cell) + shift if not periodic else np.mod(c, box) for c in cs]
    with open(out / "centers.txt", "w") as f:
        f.write("# x y z\n")
        for c in cs:
            f.write(f"{c[0]:.6f} {c[1]:.6f} {c[2]:.6f}\n")

    # Threshold: 0.5-200 x the mean, but below the densest cell (an NGP estimate), so the scene has peaks.
    inside = np.all((pos0 >= lo) & (pos0 < hi), axis=1) if not periodic else np.ones(n, dtype=bool)
    ijk = np.floor(((np.mod(pos0, box) if periodic else pos0[inside]) - lo) / cell)
    hist = np.zeros(shape)
    np.add.at(hist, tuple(np.clip(ijk.astype(int), 0, np.asarray(shape) - 1).T), mass[inside])
    # Most scenes keep peaks through noise removal (isolated peaks need density >= R x threshold).
    rel = float(rng.choice([1.2, 1.5, 2.0, 3.0, 5.0]))
    top = 0.6 * hist.max() / max(hist.mean(), 1e-300)
    if rng.uniform() < 0.85:
        top /= rel
    top = max(0.5, min(200.0, top))
    thr = float(0.5 * (top / 0.5) ** (rng.uniform() ** 2))  # 0.5 x mean .. top, more often low (more peaks)
    # An adaptive mesh in about a third of the scenes (cic-project --refine M --levels K), drawn from a
    # stream of its own so that the other choices of every seed stay what they were.
    amr_rng = np.random.default_rng([seed, 31])
    amr = ({"refine": float(amr_rng.choice([2, 4, 8, 16])), "levels": int(amr_rng.choice([0, 1, 2, 3]))}
           if amr_rng.uniform() < 0.35 else None)
    # phew-merge's noise floor: the default (None: not given), none, or a few particles' mass.
    floor_rng = np.random.default_rng([seed, 37])
    noise_floor = [None, "none", "3particles", "30particles"][int(floor_rng.integers(4))]
    opts = {
        "seed": seed,
        "files": nfiles,
        "snapshot_files": [f"snap_{k:03d}.hdf5" if nfiles == 1 else f"snap_{k:03d}.0.hdf5" for k in range(nsnap)],
        "n_particles": n, "n_blobs": nb, "background": round(bg_frac, 3), "lattice_background": lattice_bg,
        "placement": {p: place.count(p) for p in sorted(set(place))},
        "streams": int(streams.sum()), "tophat": int(tophat.sum()),
        "periodic": periodic, "open_style": open_style, "cosmology": cosmology,
        "mass_mode": mass_mode, "id_mode": id_mode, "potential": potential, "snapshots": nsnap,
        "grid": shape, "region": region,
        "amr": amr,
        "types": "all" if typed else None,
        "assignment": str(rng.choice(["cic", "ngp", "tsc"], p=[0.6, 0.25, 0.15])),
        "precision": str(rng.choice(["float32", "float64"])),
        "threshold": f"{thr:.4g}mean",
        "relevance": rel,
        "saddle_threshold": f"{thr * float(rng.choice([1.02, 1.1, 1.3, 1.6, 2.5, 10])):.4g}mean",
        "second_relevance": float(rel * rng.choice([1.5, 2, 4])),
        "noise_floor": noise_floor,
        "deblend": ["--min-particles", str(rng.choice([10, 20, 50])), "--bin-fraction", str(rng.choice([0.2, 0.25, 0.35]))],
        "voters": ["--n-voters", str(n_voters := int(rng.choice([10, 20, 30])))]
                  + (["--search-radius", f"{mcell * rng.uniform(1, 6):.4g}"] if rng.uniform() < 0.5 else []),
        "pm_mesh": ["--pm-mesh", str(rng.choice([32, 64]))] if periodic else [],
        # never more votes than voters (mergertree refuses that: no peak could be linked)
        "mergertree": ["--min-votes", str(min(rng.choice([5, 10, 15]), n_voters)),
                       "--graveyard-votes", str(rng.choice([3, 5, 10]))],
        "dtfe": ["--size", f"{min(0.4 * extent.min(), mcell * rng.uniform(3, 8)):.4g}", "--resolution", "16",
                 "--axis", str(rng.choice(["x", "y", "z"])), "--mode", str(rng.choice(["ray", "exact"], p=[0.7, 0.3])),
                 "--schedule", str(rng.choice(["none", "model", "dynamic"])),
                 "--threads", "1"],
        "dtfe_centers": str(rng.choice(["text", "clumps"])),
    }
    if opts["dtfe"][7] == "ray":
        opts["dtfe"] += ["--samples", str(rng.choice([1, 2]))]
    (out / "scene.json").write_text(json.dumps(opts, indent=1) + "\n")
    return opts


def write_snapshot(stem, cuts, pos, vel, ids, mass, mass_mode, boxsize, open_style, time, cosmology, potential,
                   pos_for_phi, centres, widths, counts, all_mass, member, periodic, ptype):
    """STEM.hdf5, or STEM.0.hdf5, STEM.1.hdf5, ... split at `cuts` (a multi-file snapshot); each particle in
    the group of its type `ptype`."""
    n = len(pos)
    cols = {"Coordinates": pos.astype(np.float32), "Velocities": vel.astype(np.float32), "ParticleIDs": ids}
    if mass_mode != "table":
        cols["Masses"] = mass.astype(np.float32)
    if potential:
        phi = np.zeros(n)
        acc = np.zeros((n, 3))
        bm = np.bincount(member + 1, weights=all_mass, minlength=len(counts) + 1)[1:]
        for c, a, m in zip(centres, widths, bm):
            if m <= 0:
                continue
            d = pos_for_phi - c
            if periodic:
                d -= boxsize * np.round(d / boxsize)
            r2 = (d ** 2).sum(axis=1) + a ** 2
            phi -= G * m / np.sqrt(r2)
            acc -= G * m * d / r2[:, None] ** 1.5
        cols["Potential"] = phi.astype(np.float32)
        cols["Acceleration"] = acc.astype(np.float32)
    bounds = [0] + [int(c) for c in cuts] + [n]
    nfiles = len(bounds) - 1
    for piece in range(nfiles):
        lo, hi = bounds[piece], bounds[piece + 1]
        path = Path(f"{stem}.hdf5" if nfiles == 1 else f"{stem}.{piece}.hdf5")
        with h5py.File(path, "w") as f:
            h = f.create_group("Header")
            h.attrs["BoxSize"] = float(boxsize)
            h.attrs["NumPart_ThisFile"] = np.bincount(ptype[lo:hi], minlength=6).astype(np.uint32)
            h.attrs["NumPart_Total"] = np.bincount(ptype, minlength=6).astype(np.uint64)
            h.attrs["NumPart_Total_HighWord"] = np.zeros(6, dtype=np.uint32)
            mt = np.zeros(6)
            if mass_mode == "table":
                mt[np.unique(ptype)] = mass[0]
            h.attrs["MassTable"] = mt
            h.attrs["Time"] = float(time)
            h.attrs["Redshift"] = float(1 / time - 1) if cosmology else 0.0
            h.attrs["NumFilesPerSnapshot"] = np.int32(nfiles)
            if cosmology:
                h.attrs["Omega0"] = 0.3
                h.attrs["OmegaLambda"] = 0.7
                h.attrs["HubbleParam"] = 0.7
            h.attrs["UnitLength_in_cm"] = 3.085678e21
            h.attrs["UnitMass_in_g"] = 1.989e43
            h.attrs["UnitVelocity_in_cm_per_s"] = 1e5
            if open_style == "gadget4":  # Gadget-4 without PERIODIC in /Config: open boundaries
                f.create_group("Config").attrs["NTYPES"] = np.int32(6)
            for t in np.unique(ptype):
                g = f.create_group(f"PartType{t}")
                mine = np.flatnonzero(ptype[lo:hi] == t) + lo
                for name, v in cols.items():
                    g[name] = v[mine]


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    make(int(sys.argv[1]), sys.argv[2])
