#!/usr/bin/env python3
"""A serial watershed on an adaptive grid.h5 (cic-project --refine), written independently of phew's
C++: the leaves decoded from their keys (docs/formats.md, "grid.h5 with an adaptive mesh"), each test
leaf's neighbours found by looking up the cells around it in a dictionary of leaves (the same level,
any coarser leaf covering it, or the finer leaves inside it that touch it, at any depth), and PHEW's
rules as written (docs/tools/phew-segment.md): cells ordered by (density descending, key ascending), a
test leaf's densest neighbour, peaks numbered in that order, saddles as the mean density of two
touching test leaves of different patches, the best one per pair. check_segment compares patches.h5
with it.

    reference_amr.py GRID.h5 PATCHES.h5 [--threshold 80mean]
"""
import sys

import h5py
import numpy as np

DIRECTIONS = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1) if (a, b, c) != (0, 0, 0)]


def spread(v):
    """Every bit b of v moved to bit 3b (numpy uint64)."""
    v = v.astype(np.uint64)
    out = np.zeros_like(v)
    for b in range(21):
        out |= ((v >> np.uint64(b)) & np.uint64(1)) << np.uint64(3 * b)
    return out


def gather(v):
    out = np.zeros_like(v)
    for b in range(21):
        out |= ((v >> np.uint64(3 * b)) & np.uint64(1)) << np.uint64(b)
    return out


class Leaves:
    def __init__(self, grid_path):
        with h5py.File(grid_path, "r") as f:
            g, L = f["grid"], f["grid/leaves"]
            self.key = L["key"][()].astype(np.uint64)
            self.level = L["level"][()].astype(np.int64)
            self.rho = L["density"][()].astype(np.float64)
            self.K = int(L.attrs["levels"])
            self.shape = np.asarray(g.attrs["shape"], dtype=np.int64)
            self.periodic = bool(int(np.asarray(g.attrs["periodic"])))
            self.cell_size = np.asarray(g.attrs["cell_size"], dtype=float)
            self.origin = np.asarray(g.attrs["origin"], dtype=float)
            self.attrs = dict(g.attrs)
        m = self.key >> np.uint64(4)
        corner = np.stack([gather(m >> np.uint64(2)), gather(m >> np.uint64(1)), gather(m)], axis=1).astype(np.int64)
        self.index = corner >> (self.K - self.level)[:, None]  # on the leaf's own lattice
        # (level, i, j, k) -> row
        self.at = {(int(l), int(a), int(b), int(c)): n for n, (l, (a, b, c)) in enumerate(zip(self.level, self.index))}
        self.n = [tuple(int(x) for x in self.shape << l) for l in range(self.K + 1)]

    def wrap(self, level, i):
        n = self.n[level]
        if self.periodic:
            return tuple(x % m for x, m in zip(i, n))
        if any(x < 0 or x >= m for x, m in zip(i, n)):
            return None
        return tuple(i)

    def touching(self, row):
        """Rows of the leaves touching leaf `row` by a face, an edge or a corner."""
        l, i = int(self.level[row]), tuple(int(x) for x in self.index[row])
        out = set()
        for d in DIRECTIONS:
            n = self.wrap(l, (i[0] + d[0], i[1] + d[1], i[2] + d[2]))
            if n is None:
                continue
            found = self._covering(l, n)
            if found is not None:
                out.add(found)
            else:
                self._touching_inside(l, n, d, out)
        out.discard(row)
        return out

    def _covering(self, level, idx):
        """The leaf that is the cell (level, idx) or contains it."""
        for l in range(level, -1, -1):
            r = self.at.get((l, *(x >> (level - l) for x in idx)))
            if r is not None:
                return r
        return None

    def _touching_inside(self, level, idx, d, out):
        """The leaves inside cell (level, idx) on its side that faces direction -d."""
        for o in range(8):
            bits = ((o >> 2) & 1, (o >> 1) & 1, o & 1)
            if any(dk != 0 and b != (1 if dk < 0 else 0) for dk, b in zip(d, bits)):
                continue
            child = tuple(2 * x + b for x, b in zip(idx, bits))
            r = self.at.get((level + 1, *child))
            if r is not None:
                out.add(r)
            elif level + 1 < self.K:
                self._touching_inside(level + 1, child, d, out)

    def centre(self, row):
        h = self.cell_size / 2.0 ** self.level[row]
        return self.origin + (self.index[row] + 0.5) * h

    def volume(self, row):
        return float(np.prod(self.cell_size)) / 8.0 ** self.level[row]


def watershed(leaves, threshold):
    rho, key = leaves.rho, leaves.key.astype(np.int64)
    test = np.flatnonzero(rho > threshold)
    nb = {int(t): leaves.touching(int(t)) for t in test}
    order = sorted(test.tolist(), key=lambda r: (-rho[r], key[r]))
    label = {}
    peaks = []
    for r in order:
        best = r
        for n in nb[r]:
            if rho[n] > rho[best] or (rho[n] == rho[best] and key[n] < key[best]):
                best = n
        if best == r:
            peaks.append(r)
            label[r] = len(peaks)
        else:
            label[r] = label[best]
    pairs = {}
    for r in test.tolist():
        for n in nb[r]:
            if n not in label or label[n] == label[r]:
                continue
            la, lb = sorted((label[r], label[n]))
            a, b = (r, n) if label[r] == la else (n, r)
            cand = (0.5 * (rho[r] + rho[n]), int(key[a]), int(key[b]))
            have = pairs.get((la, lb))
            if have is None or cand[0] > have[0] or (cand[0] == have[0] and cand[1:] < have[1:]):
                pairs[(la, lb)] = cand
    return label, peaks, pairs


def check_segment(grid_path, patches_path, threshold_text=None):
    """Disagreements of patches.h5 with the serial watershed of the adaptive grid.h5."""
    leaves = Leaves(grid_path)
    bad = []
    with h5py.File(patches_path, "r") as f:
        thr = float(f["cells"].attrs["threshold"])
        if threshold_text is not None and threshold_text.endswith("mean"):
            mine = float(threshold_text[:-4]) * float(np.asarray(leaves.attrs["mean_density"]))
            if mine != thr:
                bad.append(f"threshold {threshold_text}: file has {thr!r}, mean_density x value is {mine!r}")
        label, peaks, pairs = watershed(leaves, thr)
        key = leaves.key.astype(np.int64)
        tests = sorted(label, key=lambda r: key[r])
        want_index = np.array([key[r] for r in tests], dtype=np.int64)
        want_label = np.array([label[r] for r in tests], dtype=np.int64)
        have_index, have_label = f["cells/index"][()], f["cells/peak"][()].astype(np.int64)
        if not np.array_equal(have_index, want_index):
            bad.append(f"/cells/index: {len(have_index)} test leaves, reference {len(want_index)}"
                       + ("" if len(have_index) != len(want_index) else " (different keys)"))
        elif not np.array_equal(have_label, want_label):
            j = int(np.flatnonzero(have_label != want_label)[0])
            bad.append(f"/cells/peak differs at leaf {want_index[j]}: tool {have_label[j]}, reference {want_label[j]}")
        n = len(peaks)
        if len(f["peaks/id"]) != n:
            bad.append(f"{len(f['peaks/id'])} peaks, reference {n}")
        else:
            counts = np.bincount(want_label, minlength=n + 1)[1:]
            mass = np.zeros(n + 1)
            for r in tests:
                mass[label[r]] += leaves.rho[r] * leaves.volume(r)
            want = {"id": np.arange(1, n + 1), "cell": np.array([key[p] for p in peaks], dtype=np.int64),
                    "density": np.array([leaves.rho[p] for p in peaks]), "n_cells": counts}
            for k, v in want.items():
                have = f[f"peaks/{k}"][()]
                if not np.array_equal(have, v):
                    j = int(np.flatnonzero(have != v)[0])
                    bad.append(f"/peaks/{k} differs at peak {j + 1}: tool {have[j]!r}, reference {v[j]!r}")
            if not np.allclose(f["peaks/mass"][()], mass[1:], rtol=1e-9, atol=0):
                bad.append("/peaks/mass differs from the sum of rho V over the patch's leaves")
            centre = np.array([leaves.centre(p) for p in peaks]).reshape(-1, 3)
            if not np.allclose(f["peaks/position"][()], centre, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(leaves.origin)) + 1)):
                bad.append("/peaks/position is not the peak leaf's centre")
        items = sorted(pairs.items())
        want_s = {"peak_a": np.array([p[0][0] for p in items], dtype=np.int64),
                  "peak_b": np.array([p[0][1] for p in items], dtype=np.int64),
                  "density": np.array([p[1][0] for p in items]),
                  "cell_a": np.array([p[1][1] for p in items], dtype=np.int64),
                  "cell_b": np.array([p[1][2] for p in items], dtype=np.int64)}
        for k, v in want_s.items():
            have = f[f"saddles/{k}"][()]
            if have.shape != v.shape:
                bad.append(f"/saddles: {len(have)} rows, reference {len(v)}")
                break
            if not np.array_equal(have, v):
                j = int(np.flatnonzero(have != v)[0])
                bad.append(f"/saddles/{k} differs at row {j}: tool {have[j]!r}, reference {v[j]!r}")
    return bad


if __name__ == "__main__":
    args = sys.argv[1:]
    thr = None
    if "--threshold" in args:
        i = args.index("--threshold")
        thr = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    problems = check_segment(args[0], args[1], thr)
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
