#!/usr/bin/python3
"""phew's haloes and clumps against RAMSES' own in-code PHEW, from the shared data's reference files.

    ramses_match.py CLUMPS_H5 REFERENCE_H5 [--min-particles 50] [--radius-factor 1]
                    [--json FILE] [--floor-matched F] [--floor-median LO,HI]

CLUMPS_H5 is phew-merge's clumps.h5 of one output; REFERENCE_H5 is that output's
`reference/clumps_00N.h5` of ../shared/data/ramses-cosmo-L20-N32 (RAMSES' clump and halo tables, written
by an independent Python converter of RAMSES' raw files, in comoving Mpc/h and Msun/h). Nothing of
phew's own RAMSES reader, nor of examples/ramses_phew.py, is used: this is the independent check.

Which RAMSES mass. RAMSES' halo `mass` (halo_N.txt) and clump `mass_cl` (clump_N.txt) are PHEW's cell
masses: density x volume summed over the AMR leaf cells above density_threshold that belong to the
halo (clump), before unbinding; a halo's `mass` is exactly the sum of `mass_cl` over its clumps. The
converter's /particles table is the clump of each particle after unbinding; its counts are 5-10 %
above the cell masses (a particle counts whole in the cell it lies in, where the CIC density spreads
part of its mass over neighbours below the threshold), and unbinding removes some. phew's /halos/mass
and /clumps/mass are density x volume summed over the object's test cells (no particles, no
unbinding), the same quantity on a uniform grid, so the comparison takes RAMSES' `mass` and `mass_cl`.
Masses are counted in particle masses on both sides (phew: /grid particle_mass, RAMSES: the file's
particle_mass_Msunh), so the ratio does not depend on either side's units.

Which objects. Every RAMSES halo of at least --min-particles particle masses (default 50: the README of
the run counts those) must be found; every phew halo, of any mass, may find it, so a phew halo a little
lighter than the cut still counts and shows in the mass ratio. Clumps the same way (RAMSES' level-0
clumps, with `mass_cl`, against phew's /clumps).

Matching rule. RAMSES' objects are taken from the most massive down; each takes, among the phew objects
not yet taken that lie within R of it, the most massive one. R = --radius-factor x r200m, with r200m the
radius of a sphere of 200 times the mean matter density holding the RAMSES object's mass, M = 200
rho_mean 4/3 pi r200m^3 (comoving; rho_mean = all particles / box volume). Why r200m: PHEW's haloes end
at the 80 x mean isodensity surface; for an isothermal profile the mean density inside the surface where
the local density is rho is 3 rho, so 240 x mean, i.e. that surface lies close to r200m: with factor 1
a match means phew's peak lies inside the RAMSES halo. It does not depend on phew's grid (0.24 Mpc/h
for 50 particles, 0.76 for 1500; RAMSES' coarse cell is 0.625 Mpc/h). Distances are periodic minimum
images between peaks; a halo's peaks are its own and those of its clumps (RAMSES' clumps with that
`halo`, phew's /clumps/halo), and two haloes lie within R when any peak of one does of any peak of the
other. Why not the halo peaks alone: a halo made of two clumps of nearly equal peak density has its
peak at either, depending on the mesh (output 4's largest halo: clumps of 731 and 760 particles 1.2
Mpc/h apart, beyond its r200m; at 64^3 phew's peak is the other one). Why the most massive candidate,
not the nearest: a halo that phew splits, or that has a small neighbour within R, is compared with its
main counterpart; going from the most massive RAMSES object down lets a small RAMSES object's
counterpart be taken by a big one only when it is the biggest phew object near the big one, which is
then the honest match. Clumps are matched by their own peaks only.

Printed: matched / total, median and quartiles of the mass ratio phew / RAMSES over the matched ones,
the median offset of the matched pairs' own peaks (the halo peaks, not the nearest clump peaks), and how
many phew objects above the cut are matched. --json FILE writes the same figures. --floor-matched F fails (exit 1) when the matched fraction of haloes is below F;
--floor-median LO,HI when the haloes' median mass ratio is outside [LO, HI]. Exit 3: unreadable input.
"""
import argparse
import json
import sys

import h5py
import numpy as np


def r200m(mass, mean_density):
    """Radius of a sphere of 200 x mean density holding `mass` (same units)."""
    return (3.0 * mass / (4.0 * np.pi * 200.0 * mean_density)) ** (1.0 / 3.0)


def with_clump_peaks(halos, clumps, clump_halo):
    """Adds to `halos` the peaks it is matched by: its own, then its clumps' (owner row, position)."""
    row = {int(h): i for i, h in enumerate(halos["id"])}
    extra = [(row[int(h)], p) for h, p in zip(clump_halo, clumps["peak"]) if int(h) in row]
    halos["peak_owner"] = np.concatenate([np.arange(len(halos["id"])), [o for o, _ in extra]]).astype(np.int64)
    halos["peak_all"] = np.concatenate([halos["peak"], np.reshape([p for _, p in extra], (-1, 3))])


def read_reference(path):
    """RAMSES' haloes and level-0 clumps: peaks [n][3] (Mpc/h), masses in particle masses; box, mean density."""
    with h5py.File(path, "r") as f:
        box = float(f.attrs["BoxSize_Mpch"])
        mp = float(f.attrs["particle_mass_Msunh"])
        n_part = len(f["particles/ParticleIDs"])
        out = {"box": box, "mean_density_particles": n_part / box ** 3, "aexp": float(f.attrs["aexp"])}
        for kind, mass in (("halos", "mass"), ("clumps", "mass_cl")):
            g = f[kind]
            out[kind] = {"id": g["index"][...],
                         "peak": np.stack([g["peak_x"][...], g["peak_y"][...], g["peak_z"][...]], axis=1),
                         "mass": g[mass][...] / mp}
        with_clump_peaks(out["halos"], out["clumps"], f["clumps/halo"][...])
    return out


def read_phew(path, box):
    """phew's haloes and clumps in the same form; positions scaled to the reference box (Mpc/h)."""
    with h5py.File(path, "r") as f:
        g = f["grid"].attrs
        mp = float(g["particle_mass"]) if "particle_mass" in g else 0.0
        if mp <= 0:
            raise ValueError(f"{path}: /grid has no particle_mass (particles of unequal masses?)")
        scale = box / float(np.asarray(g["box_size"])[0])  # 1 for Mpc/h, 1e-3 for kpc/h
        out = {"shape": [int(s) for s in np.asarray(g["shape"])], "length_scale": scale}
        for kind in ("halos", "clumps"):
            out[kind] = {"id": f[kind + "/id"][...], "peak": f[kind + "/peak_position"][...] * scale,
                         "mass": f[kind + "/mass"][...] / mp}
        with_clump_peaks(out["halos"], out["clumps"], f["clumps/halo"][...])
    return out


def distance(a, b, box):
    """Periodic minimum-image distances between the rows of a [n][3] and b [m][3]: [n][m]."""
    d = a[:, None, :] - b[None, :, :]
    d -= box * np.round(d / box)
    return np.sqrt((d * d).sum(axis=2))


def match(ref, phew, box, mean_density, min_particles, radius_factor):
    """One-to-one matches by the rule of the docstring: [(ref row, phew row or -1, offset of the own peaks)]."""
    rows = np.flatnonzero(ref["mass"] >= min_particles)
    rows = rows[np.argsort(-ref["mass"][rows], kind="stable")]
    n = len(phew["mass"])
    owner = phew.get("peak_owner", np.arange(n))
    points = phew.get("peak_all", phew["peak"])
    taken = np.zeros(n, bool)
    out = []
    for r in rows:
        mine = ref["peak_all"][ref["peak_owner"] == r] if "peak_all" in ref else ref["peak"][r:r + 1]
        nearest = np.full(n, np.inf)  # nearest pair of peaks, per phew object
        np.minimum.at(nearest, owner, distance(mine, points, box).min(axis=0))
        cand = np.flatnonzero(~taken & (nearest <= radius_factor * r200m(ref["mass"][r], mean_density)))
        if len(cand) == 0:
            out.append((int(r), -1, float("nan")))
            continue
        best = int(cand[np.argmax(phew["mass"][cand])])
        taken[best] = True
        out.append((int(r), best, float(distance(ref["peak"][r:r + 1], phew["peak"][best:best + 1], box)[0, 0])))
    return out


def figures(ref, phew, pairs, min_particles):
    """The printed and JSON figures of one kind of object."""
    got = [(r, p, d) for r, p, d in pairs if p >= 0]
    ratio = np.array([phew["mass"][p] / ref["mass"][r] for r, p, _ in got])
    offset = np.array([d for _, _, d in got])
    big = np.flatnonzero(phew["mass"] >= min_particles)
    q = np.percentile(ratio, [25, 50, 75]) if len(ratio) else [float("nan")] * 3
    return {
        "ramses": len(pairs), "matched": len(got),
        "fraction": len(got) / len(pairs) if pairs else float("nan"),
        "mass_ratio_q25": float(q[0]), "mass_ratio_median": float(q[1]), "mass_ratio_q75": float(q[2]),
        "offset_median": float(np.median(offset)) if len(offset) else float("nan"),
        "phew_above_cut": len(big), "phew_above_cut_matched": int(np.isin(big, [p for _, p, _ in got]).sum()),
        "unmatched_ramses": [{"id": int(ref["id"][r]), "particles": float(ref["mass"][r])}
                             for r, p, _ in pairs if p < 0],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clumps", help="phew-merge's clumps.h5")
    ap.add_argument("reference", help="reference/clumps_00N.h5 of the RAMSES run")
    ap.add_argument("--min-particles", type=float, default=50.0,
                    help="RAMSES objects of at least this many particle masses are matched (default 50)")
    ap.add_argument("--radius-factor", type=float, default=1.0,
                    help="match radius in units of the RAMSES object's r200m (default 1)")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--floor-matched", type=float, help="exit 1 if the matched fraction of haloes is below")
    ap.add_argument("--floor-median", help="LO,HI: exit 1 if the haloes' median mass ratio is outside")
    a = ap.parse_args()
    floor_median = None
    if a.floor_median:
        try:
            lo, hi = (float(v) for v in a.floor_median.split(","))
        except ValueError:
            ap.error(f"--floor-median wants LO,HI, not {a.floor_median}")
        floor_median = (lo, hi)
    try:
        ref = read_reference(a.reference)
        phew = read_phew(a.clumps, ref["box"])
    except (OSError, KeyError, ValueError) as e:
        print(f"ramses_match.py: error: {e}", file=sys.stderr)
        return 3

    result = {"clumps_h5": a.clumps, "reference": a.reference, "aexp": ref["aexp"], "grid": phew["shape"],
              "min_particles": a.min_particles, "radius_factor": a.radius_factor, "kinds": {}}
    print(f"phew {a.clumps} (grid {'x'.join(map(str, phew['shape']))}) vs RAMSES {a.reference} "
          f"(a = {ref['aexp']:.4f}); objects >= {a.min_particles:g} particle masses, "
          f"match within {a.radius_factor:g} r200m")
    print(f"{'':8} {'matched':>12} {'mass phew/RAMSES q25 median q75':>32} {'offset med':>11} {'phew matched':>13}")
    for kind in ("halos", "clumps"):
        pairs = match(ref[kind], phew[kind], ref["box"], ref["mean_density_particles"], a.min_particles,
                      a.radius_factor)
        f = figures(ref[kind], phew[kind], pairs, a.min_particles)
        result["kinds"][kind] = f
        print(f"{kind:8} {f['matched']:>5} / {f['ramses']:<4} {f['mass_ratio_q25']:>14.3f} "
              f"{f['mass_ratio_median']:>6.3f} {f['mass_ratio_q75']:>6.3f} {f['offset_median']:>7.3f} Mpc/h "
              f"{f['phew_above_cut_matched']:>5} / {f['phew_above_cut']:<4}")
        for u in f["unmatched_ramses"]:
            print(f"  unmatched RAMSES {kind[:-1]} {u['id']}: {u['particles']:.1f} particle masses")
    if a.json:
        with open(a.json, "w") as out:
            json.dump(result, out, indent=1)

    h = result["kinds"]["halos"]
    failed = []
    if a.floor_matched is not None and not h["fraction"] >= a.floor_matched:
        failed.append(f"matched fraction of haloes {h['fraction']:.3f} < floor {a.floor_matched}")
    if floor_median and not floor_median[0] <= h["mass_ratio_median"] <= floor_median[1]:
        failed.append(f"median halo mass ratio {h['mass_ratio_median']:.3f} outside {floor_median[0]}..{floor_median[1]}")
    for line in failed:
        print(f"FAIL: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
