#!/usr/bin/python3
"""Serial references for phew-segment and phew-merge, written from the documented rules
(docs/tools/phew-segment.md, docs/tools/phew-merge.md, lib/watershed/merge.hpp's header), independently of
the C++ code, in numpy.

  reference.py segment GRID PATCHES                   # labels, peaks and saddle table must be equal
  reference.py merge PATCHES CLUMPS GRID [--relevance R] [--saddle-threshold S | --second-relevance R2]

Each prints the disagreements (nothing when they agree) and exits 1 when there are any.

Watershed (segment): test cells are the cells with density strictly above the threshold; the canonical
order is (density descending, global cell index ascending); a test cell's parent is the earliest of its
26 neighbours (periodic when the grid is) when that one comes before the cell, else the cell is a peak;
a cell's patch is the peak its chain of parents ends at; peak IDs are 1, 2, ... in canonical order.
Saddles: for each pair of neighbouring test cells in different patches the candidate is the mean of the
two densities; per pair of patches the highest, ties to the smaller (cell_a, cell_b), peak_a < peak_b.

Merge: key saddle of a node = its highest saddle (ties: lower neighbour ID); relevance = density / key
saddle (density / threshold when isolated). Level by level, every decision from the graph as it stood
at the start of the level: a node that fails the criterion merges into its key neighbour when that one
has a lower ID (upward only, through the key saddle); noise removal (relevance < R) discards isolated
irrelevant nodes; chains within a level go to their root; the merged nodes' saddles move to their
representatives, keeping the highest per pair; levels repeat until one merges nothing. The hierarchy is
the same on the level-0 clumps with "key saddle > S" (or relevance < R2), isolated clumps stay.
Noise floor (clumps.h5's `noise_floor`): in the noise removal a node whose mass (its patch's, with what
merged into it) is below the floor is noise too: it merges through its key saddle whichever way that
points, unless its key neighbour merges into it in the same level; isolated, it is discarded. Masses
are added exactly as the tool adds them: each patch's mass rounded once to a multiple of 2^(e-80), where
2^e is just above the heaviest patch, and added as integers.
"""
import math
import re
import sys
from itertools import product

import h5py
import numpy as np


# ---------------------------------------------------------------------------------------------------
# Reading. Every read of the labels goes through read_labels, which checks the layout and makes the
# dense grid the references compare with.
def read_labels(path, name):
    """/cells/NAME ('peak' in patches.h5; 'clump', 'halo' in clumps.h5) as a dense int64 grid
    [nx][ny][nz], 0 where there is no test cell, from the sparse layout of docs/formats.md (format
    version 2): /cells/index holds the test cells' global indices, ascending, /cells/plane_start where
    each plane's cells begin, /cells/NAME one label per test cell. Every rule is checked."""
    with h5py.File(path, "r") as f:
        version = int(f.attrs.get("format_version", 1))
        if version != 2:
            raise ValueError(f"{path}: format_version {version}, expected 2")
        shape = tuple(int(v) for v in f["grid"].attrs["shape"])
        index = np.asarray(f["cells/index"][()], dtype=np.int64)
        start = np.asarray(f["cells/plane_start"][()], dtype=np.int64)
        labels = f[f"cells/{name}"]
        if labels.dtype.kind != "u" or (len(labels) and labels.dtype.itemsize > 1
                                        and int(labels[()].max()) < 1 << (8 * labels.dtype.itemsize // 2)):
            raise ValueError(f"{path}: /cells/{name} is {labels.dtype}, not the smallest unsigned type")
        labels = np.asarray(labels[()], dtype=np.int64)
    plane = shape[1] * shape[2]
    if len(labels) != len(index) or np.any(np.diff(index) <= 0) or (len(index) and index[-1] >= np.prod(shape)):
        raise ValueError(f"{path}: /cells/index is not ascending inside the grid, or /cells/{name} differs in length")
    if not np.array_equal(start, np.searchsorted(index, np.arange(shape[0] + 1) * plane)):
        raise ValueError(f"{path}: /cells/plane_start does not match /cells/index")
    dense = np.zeros(int(np.prod(shape)), dtype=np.int64)
    dense[index] = labels
    return dense.reshape(shape)


def read_grid(path):
    """(density as float64 [nx][ny][nz], attributes of /grid as a dict)."""
    with h5py.File(path, "r") as f:
        rho = np.asarray(f["grid/density"][()], dtype=np.float64)
        attrs = {k: f["grid"].attrs[k] for k in f["grid"].attrs}
    return rho, attrs


def threshold_value(text, attrs):
    """An absolute density from '80mean', '80crit' or a number, as docs/thresholds.md says."""
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(mean|crit)?\s*", text)
    v = float(m.group(1))
    if m.group(2) == "mean":
        return v * float(attrs["mean_density"])
    if m.group(2) == "crit":
        return v * float(attrs["critical_density"])
    return v


# ---------------------------------------------------------------------------------------------------
# Watershed

OFFSETS = [o for o in product((-1, 0, 1), repeat=3) if o != (0, 0, 0)]
HALF = [o for o in OFFSETS if o > (0, 0, 0)]  # one of each pair (o, -o)


def _shift(a, off, periodic, fill):
    """s[c] = a[c + off], periodic or with `fill` beyond the grid."""
    s = np.roll(a, shift=tuple(-o for o in off), axis=(0, 1, 2))
    if not periodic:
        for ax, o in enumerate(off):
            if o == 0:
                continue
            idx = [slice(None)] * 3
            idx[ax] = slice(-1, None) if o > 0 else slice(0, 1)
            s[tuple(idx)] = fill
    return s


def watershed(rho, threshold, periodic):
    """Returns (labels int64 grid, peak cells in ID order, saddles dict of arrays)."""
    shape = rho.shape
    ncell = rho.size
    idx = np.arange(ncell, dtype=np.int64).reshape(shape)
    test = rho > threshold
    best_rho = rho.copy()
    best_idx = idx.copy()
    for off in OFFSETS:
        nr = _shift(rho, off, periodic, -np.inf)
        ni = _shift(idx, off, periodic, np.iinfo(np.int64).max)
        better = (nr > best_rho) | ((nr == best_rho) & (ni < best_idx))
        best_rho = np.where(better, nr, best_rho)
        best_idx = np.where(better, ni, best_idx)
    parent = np.where(test, best_idx, idx).ravel()
    while True:  # pointer jumping to the roots
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            break
        parent = nxt
    flat_rho, flat_test = rho.ravel(), test.ravel()
    peaks = np.flatnonzero(flat_test & (parent == np.arange(ncell)))
    peaks = peaks[np.lexsort((peaks, -flat_rho[peaks]))]  # canonical order
    peak_id = np.zeros(ncell, dtype=np.int64)
    peak_id[peaks] = np.arange(1, len(peaks) + 1)
    labels = np.where(flat_test, peak_id[parent], 0).reshape(shape)

    # Saddles: every pair of neighbouring test cells in different patches, once.
    pa, pb, dens, ca, cb = [], [], [], [], []
    for off in HALF:
        nl = _shift(labels, off, periodic, 0)
        nr = _shift(rho, off, periodic, 0.0)
        ni = _shift(idx, off, periodic, -1)
        m = (labels > 0) & (nl > 0) & (labels != nl)
        l1, l2, r1, r2, i1, i2 = labels[m], nl[m], rho[m], nr[m], idx[m], ni[m]
        first = l1 < l2
        pa.append(np.where(first, l1, l2))
        pb.append(np.where(first, l2, l1))
        dens.append(0.5 * (r1 + r2))
        ca.append(np.where(first, i1, i2))
        cb.append(np.where(first, i2, i1))
    pa, pb, dens, ca, cb = (np.concatenate(x) if x else np.zeros(0) for x in (pa, pb, dens, ca, cb))
    order = np.lexsort((cb, ca, -dens, pb, pa))
    pa, pb, dens, ca, cb = pa[order], pb[order], dens[order], ca[order], cb[order]
    keep = np.ones(len(pa), dtype=bool)
    keep[1:] = (pa[1:] != pa[:-1]) | (pb[1:] != pb[:-1])
    saddles = {"peak_a": pa[keep].astype(np.int64), "peak_b": pb[keep].astype(np.int64), "density": dens[keep],
               "cell_a": ca[keep].astype(np.int64), "cell_b": cb[keep].astype(np.int64)}
    return labels, peaks, saddles


def check_segment(grid_path, patches_path, threshold_text=None):
    """Disagreements of patches.h5 with the serial watershed of grid.h5."""
    rho, attrs = read_grid(grid_path)
    bad = []
    with h5py.File(patches_path, "r") as f:
        thr = float(f["cells"].attrs["threshold"])
        if threshold_text is not None:
            mine = threshold_value(threshold_text, attrs)
            if mine != thr:
                bad.append(f"threshold {threshold_text}: file has {thr!r}, mean_density x value is {mine!r}")
        periodic = bool(int(np.asarray(attrs["periodic"])))
        labels, peaks, sad = watershed(rho, thr, periodic)
        got = read_labels(patches_path, "peak")
        if got.shape != labels.shape:
            return [f"/cells/peak shape {got.shape}, grid {labels.shape}"]
        diff = np.flatnonzero(got.ravel() != labels.ravel())
        if len(diff):
            c = diff[0]
            bad.append(f"/cells/peak: {len(diff)} cells differ, first cell {c} {np.unravel_index(c, rho.shape)}: "
                       f"tool {got.ravel()[c]}, reference {labels.ravel()[c]} (density {rho.ravel()[c]!r})")
        n = len(peaks)
        ids = f["peaks/id"][()]
        if len(ids) != n:
            bad.append(f"{len(ids)} peaks, reference {n}")
        else:
            checks = {"id": np.arange(1, n + 1), "cell": peaks, "density": rho.ravel()[peaks],
                      "n_cells": np.bincount(labels.ravel(), minlength=n + 1)[1:]}
            for k, want in checks.items():
                have = f[f"peaks/{k}"][()]
                if not np.array_equal(have, want):
                    j = int(np.flatnonzero(have != want)[0])
                    bad.append(f"/peaks/{k} differs, first at row {j} (peak {j + 1}): tool {have[j]!r}, reference {want[j]!r}")
            # Positions: the cell centre, or with --refine-positions a point inside the peak cell.
            cs, origin = np.asarray(attrs["cell_size"], dtype=float), np.asarray(attrs["origin"], dtype=float)
            centre = origin + (np.stack(np.unravel_index(peaks, rho.shape), axis=1) + 0.5) * cs
            pos = f["peaks/position"][()]
            refined = int(np.asarray(f["peaks/position"].attrs.get("refined", 0)))
            tol = 1e-9 * float(np.max(np.abs(origin) + cs * np.asarray(rho.shape)))
            if pos.shape != centre.shape:
                bad.append(f"/peaks/position shape {pos.shape}")
            elif not refined and not np.allclose(pos, centre, rtol=0, atol=tol):
                bad.append("/peaks/position is not the peak cell's centre")
            elif refined and np.any(np.abs(pos - centre) > 0.5 * cs + tol):
                bad.append("/peaks/position (refined) lies outside the peak cell")
            vol = float(np.prod(cs))
            mass = np.bincount(labels.ravel(), weights=rho.ravel() * vol, minlength=n + 1)[1:]
            if not np.allclose(f["peaks/mass"][()], mass, rtol=1e-9, atol=0):
                bad.append("/peaks/mass differs from the sum of rho V over the patch")
        for k, want in sad.items():
            have = f[f"saddles/{k}"][()]
            if have.shape != want.shape:
                bad.append(f"/saddles: {len(have)} rows, reference {len(want)}")
                break
            if not np.array_equal(have, want):
                j = int(np.flatnonzero(have != want)[0])
                bad.append(f"/saddles/{k} differs, first at row {j} (pair {sad['peak_a'][j]}-{sad['peak_b'][j]}): "
                           f"tool {have[j]!r}, reference {want[j]!r}")
    return bad


# ---------------------------------------------------------------------------------------------------
# Merge

def key_saddle(adj, i):
    """(neighbour, saddle) of the highest saddle of node i, ties to the lower neighbour; (0, 0.0) isolated."""
    best = (0, 0.0)
    for j, s in adj[i].items():
        if best[0] == 0 or s > best[1] or (s == best[1] and j < best[0]):
            best = (j, s)
    return best


def merge_levels(adj, density, alive, crit, threshold, mass=None, floor=None):
    """Merges in place (adj, alive, mass). crit: ('relevance', R, discard_isolated) or ('saddle', S); with
    the relevance, `mass` ({id: integer units}) below `floor` is noise too.
    Returns (mergers [(node, into, level, saddle)], discarded [ids])."""
    mergers, discarded = [], []
    level = 0
    while True:
        into, down = {}, {}
        for i in sorted(alive):
            to, s = key_saddle(adj, i)
            if crit[0] == "relevance":
                base = s if to else threshold
                light = floor is not None and mass[i] < floor
                if not density[i] < crit[1] * base and not light:  # relevant: density / base >= R
                    continue
                if to == 0:
                    if crit[2]:
                        discarded.append(i)
                    continue
                if to > i and light:
                    down[i] = (to, s)
                    continue
            elif to == 0 or not s > crit[1]:
                continue
            if to < i:
                into[i] = (to, s)
        for i, (to, s) in down.items():
            if into.get(to, (0,))[0] != i:
                into[i] = (to, s)
        for i in discarded:
            alive.discard(i)
        if not into:
            return mergers, discarded
        level += 1
        for i, (to, s) in sorted(into.items()):
            mergers.append((i, to, level, s))

        def root(i):
            while i in into:
                i = into[i][0]
            return i

        rep = {i: root(i) for i in into}
        if mass is not None:
            for i, r in rep.items():
                mass[r] += mass[i]
        new = {}
        for i in list(adj):
            ri = rep.get(i, i)
            for j, s in adj[i].items():
                rj = rep.get(j, j)
                if ri == rj:
                    continue
                d = new.setdefault(ri, {})
                if rj not in d or s > d[rj]:
                    d[rj] = s
        for i in into:
            alive.discard(i)
        adj.clear()
        adj.update({i: new.get(i, {}) for i in alive})


def fixed_point(masses, floor):
    """The patches' masses and the floor in the tool's fixed-point units (see the module's docstring)."""
    heaviest = max(masses.values(), default=0.0)
    e = math.frexp(heaviest)[1] if heaviest > 0 else 0
    units = lambda m: int(math.ldexp(m, 80 - e))  # truncated towards zero, as the tool does
    return {i: units(m) for i, m in masses.items()}, units(floor)


def merge(density, saddles, threshold, relevance, saddle_threshold=None, second_relevance=None, masses=None,
          noise_floor=None):
    """density: {id: peak density}; saddles: (peak_a, peak_b, density) arrays; masses {id: patch mass} and
    noise_floor (absolute) for the floor. Returns a dict."""
    ids = sorted(density)
    adj = {i: {} for i in ids}
    for a, b, s in zip(*saddles):
        a, b, s = int(a), int(b), float(s)
        adj[a][b] = max(adj[a].get(b, -np.inf), s)
        adj[b][a] = max(adj[b].get(a, -np.inf), s)
    key0 = {i: key_saddle(adj, i) for i in ids}
    alive = set(ids)
    mass, floor = fixed_point(masses, noise_floor) if noise_floor else (None, None)
    noise, discarded = merge_levels(adj, density, alive, ("relevance", relevance, True), threshold, mass, floor)
    into = {m[0]: m[1] for m in noise}
    gone = set(discarded)

    def root(i, into):
        while i in into:
            i = into[i]
        return i

    clump = {i: (0 if root(i, into) in gone else root(i, into)) for i in ids}
    clumps = sorted(alive)
    key1 = {i: key_saddle(adj, i) for i in clumps}
    tree = []
    if saddle_threshold is not None:
        tree, _ = merge_levels(adj, density, alive, ("saddle", saddle_threshold), threshold)
    elif second_relevance is not None:
        tree, _ = merge_levels(adj, density, alive, ("relevance", second_relevance, False), threshold)
    parent = {c: c for c in clumps}
    level = {c: 0 for c in clumps}
    up = {}
    for node, to, lev, s in tree:
        parent[node], level[node], up[node] = to, lev, to
    halo = {c: root(c, up) for c in clumps}
    return {"key0": key0, "clump": clump, "clumps": clumps, "key1": key1, "parent": parent, "level": level,
            "halo": halo, "halos": sorted(alive), "tree": tree}


def check_merge(patches_path, clumps_path, grid_path, relevance, saddle_text=None, second_relevance=None):
    """Disagreements of clumps.h5 with the serial merge of patches.h5's peaks and saddles."""
    bad = []
    _, attrs = read_grid(grid_path)
    with h5py.File(patches_path, "r") as p:
        thr = float(p["cells"].attrs["threshold"])
        dens = p["peaks/density"][()]
        density = {i + 1: float(d) for i, d in enumerate(dens)}
        sad = (p["saddles/peak_a"][()], p["saddles/peak_b"][()], p["saddles/density"][()])
        masses = {i + 1: float(m) for i, m in enumerate(p["peaks/mass"][()])}
    with h5py.File(clumps_path, "r") as c:
        floor = float(c.attrs["noise_floor"]) if "noise_floor" in c.attrs else None
    S = threshold_value(saddle_text, attrs) if saddle_text is not None else None
    ref = merge(density, sad, thr, relevance, S, second_relevance, masses, floor)
    peak_labels = read_labels(patches_path, "peak")

    def same(name, have, want):
        have, want = np.asarray(have), np.asarray(want)
        if have.shape != want.shape:
            bad.append(f"{name}: {have.shape[0] if have.ndim else have} rows, reference {want.shape[0] if want.ndim else want}")
            return False
        if not np.array_equal(have, want):
            j = int(np.flatnonzero(have.ravel() != want.ravel())[0])
            bad.append(f"{name} differs, first at {j}: tool {have.ravel()[j]!r}, reference {want.ravel()[j]!r}")
            return False
        return True

    with h5py.File(clumps_path, "r") as c:
        if S is not None and "saddle_threshold" in c.attrs and float(c.attrs["saddle_threshold"]) != S:
            bad.append(f"saddle threshold {saddle_text}: file has {float(c.attrs['saddle_threshold'])!r}, reference {S!r}")
        ids = sorted(density)
        k0 = ref["key0"]
        same("/peaks/id", c["peaks/id"][()], ids)
        same("/peaks/key_neighbour", c["peaks/key_neighbour"][()], [k0[i][0] for i in ids])
        same("/peaks/key_saddle", c["peaks/key_saddle"][()], [k0[i][1] for i in ids])
        same("/peaks/relevance", c["peaks/relevance"][()],
             [density[i] / (k0[i][1] if k0[i][0] else thr) for i in ids])
        same("/peaks/clump", c["peaks/clump"][()], [ref["clump"][i] for i in ids])
        cl = ref["clumps"]
        if same("/clumps/id", c["clumps/id"][()], cl):
            same("/clumps/parent", c["clumps/parent"][()], [ref["parent"][i] for i in cl])
            same("/clumps/level", c["clumps/level"][()], [ref["level"][i] for i in cl])
            same("/clumps/halo", c["clumps/halo"][()], [ref["halo"][i] for i in cl])
            same("/clumps/saddle_density", c["clumps/saddle_density"][()], [ref["key1"][i][1] for i in cl])
        same("/halos/id", c["halos/id"][()], ref["halos"])
        if "hierarchy" in c:
            t = sorted(ref["tree"])  # rows by clump ID
            same("/hierarchy/clump", c["hierarchy/clump"][()], [m[0] for m in t])
            same("/hierarchy/into", c["hierarchy/into"][()], [m[1] for m in t])
            same("/hierarchy/level", c["hierarchy/level"][()], [m[2] for m in t])
            same("/hierarchy/saddle_density", c["hierarchy/saddle_density"][()], [m[3] for m in t])
        elif ref["tree"]:
            bad.append(f"no /hierarchy but {len(ref['tree'])} mergers in the reference")
        n = len(ids)
        clump_of = np.zeros(n + 1, dtype=np.int64)
        clump_of[1:] = [ref["clump"][i] for i in ids]
        halo_of = np.zeros(n + 1, dtype=np.int64)
        for k, h in ref["halo"].items():
            halo_of[k] = h
        cell_clump, cell_halo = clump_of[peak_labels], halo_of[clump_of[peak_labels]]
        same("/cells/clump", read_labels(clumps_path, "clump"), cell_clump)
        same("/cells/halo", read_labels(clumps_path, "halo"), cell_halo)
        if len(c["clumps/id"]) == len(cl):
            same("/clumps/n_cells", c["clumps/n_cells"][()], np.bincount(cell_clump.ravel(), minlength=n + 1)[cl])
        hs = ref["halos"]
        if len(c["halos/id"]) == len(hs):
            same("/halos/n_cells", c["halos/n_cells"][()], np.bincount(cell_halo.ravel(), minlength=n + 1)[hs])
            same("/halos/n_clumps", c["halos/n_clumps"][()],
                 np.bincount([ref["halo"][k] for k in cl], minlength=n + 1)[hs] if cl else np.zeros(len(hs), int))
    return bad


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("segment")
    s.add_argument("grid")
    s.add_argument("patches")
    s.add_argument("--threshold")
    m = sub.add_parser("merge")
    m.add_argument("patches")
    m.add_argument("clumps")
    m.add_argument("grid")
    m.add_argument("--relevance", type=float, default=1.5)
    m.add_argument("--saddle-threshold")
    m.add_argument("--second-relevance", type=float)
    a = ap.parse_args(argv)
    if a.cmd == "segment":
        bad = check_segment(a.grid, a.patches, a.threshold)
    else:
        bad = check_merge(a.patches, a.clumps, a.grid, a.relevance, a.saddle_threshold, a.second_relevance)
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
