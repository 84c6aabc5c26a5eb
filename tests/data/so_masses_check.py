#!/usr/bin/python3
"""Spherical-overdensity masses of mergertree --particles against an independent numpy measurement.

    so_masses_check.py TREE.h5 PEAKS.h5 SNAPSHOT.hdf5 [--min-particles 100]

SNAPSHOT is a Gadget-style HDF5 file of the same particles (Gadget-4's own, or the RAMSES run's
reference/ conversion), read here with h5py alone: PartType1 positions, masses (MassTable or Masses) and
IDs, the box, the scale factor and the cosmology (Header or /Parameters). TREE is a one-stage tree of
PEAKS. The tree's lengths and masses are in the snapshot's units (phew reads the RAMSES folder in the
reference's comoving Mpc/h and Msun/h).

The definitions (docs/tools/mergertree.md, "Spherical-overdensity masses"), written again here:
- centre: shrinking spheres on the peak's member particles (peaks.h5 /particles), taken through the
  periodic image nearest to the peak's /peaks/position; first sphere at their mass-weighted mean holding
  them all, radius x 0.975 per step, recentred on the members inside, until the next sphere would hold
  fewer than max(20, min(1000, floor(n / 100))) members;
- mass: every particle of the snapshot by periodic distance from the centre, sorted; the outermost
  particle k where M(<=r_k) >= Delta rho_crit(z) a^3 4 pi r_k^3 / 3; not measurable (NaN) when fewer
  than 20 particles. Delta = 200, and Bryan & Norman (1998) for Mvir.

For every peak of at least --min-particles particles: phew's M200c and Mvir are finite and positive,
and the median of phew / numpy is within 5% of 1 for each. Prints one summary line per quantity and "ok".
"""
import argparse
import sys

import h5py
import numpy as np

RHO_CRIT0 = 2.77536627e11  # 3 H0^2 / (8 pi G), h^2 Msun / Mpc^3
MIN_PARTICLES = 20


def snapshot(path):
    f = h5py.File(path, "r")
    h = f["Header"].attrs
    box = float(np.ravel(h["BoxSize"])[0])
    a = float(h["Time"])
    if "Parameters" in f and "Omega0" in f["Parameters"].attrs:
        p = f["Parameters"].attrs
        om, ol, hub = float(p["Omega0"]), float(p["OmegaLambda"]), float(p["HubbleParam"])
    else:
        om, ol, hub = float(h["Omega0"]), float(h["OmegaLambda"]), float(h["HubbleParam"])
    pt = f["PartType1"]
    x = pt["Coordinates"][...].astype(np.float64)
    ids = pt["ParticleIDs"][...].astype(np.uint64)
    if "Masses" in pt:
        m = pt["Masses"][...].astype(np.float64)
    else:
        m = np.full(len(ids), float(np.ravel(h["MassTable"])[1]))
    # rho_crit in the file's units: kpc/h and 1e10 Msun/h (Gadget-4's UnitLength_in_cm), or Mpc/h and
    # Msun/h (the RAMSES reference/ conversion, which has no Gadget units)
    kpc = "Parameters" in f and abs(float(f["Parameters"].attrs.get("UnitLength_in_cm", 0)) / 3.085678e21 - 1) < 1e-3
    rho0 = RHO_CRIT0 * (1e-9 if kpc else 1.0) / (1e10 if kpc else 1.0)
    e2 = om / a**3 + (1 - om - ol) / a**2 + ol
    return dict(x=x, m=m, ids=ids, box=box, a=a, rho_c=rho0 * e2 * a**3, om=om, ol=ol)


def periodic(d, box):
    return d - box * np.round(d / box)


def shrinking_sphere(x, m, ref, box):
    x = ref + periodic(x - ref, box)
    c = np.average(x, axis=0, weights=m)
    r = np.sqrt(((x - c) ** 2).sum(axis=1)).max()
    stop = max(20, min(1000, int(0.01 * len(m))))
    for _ in range(3000):
        if r <= 0:
            break
        r *= 0.975
        inside = ((x - c) ** 2).sum(axis=1) <= r * r
        if inside.sum() < stop:
            break
        c = np.average(x[inside], axis=0, weights=m[inside])
    return np.mod(c, box)


def outermost_mass(r_sorted, m_cum, target):
    above = np.nonzero(m_cum >= target * 4 / 3 * np.pi * r_sorted**3)[0]
    if len(above) == 0 or above[-1] + 1 < MIN_PARTICLES:
        return np.nan
    return m_cum[above[-1]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tree")
    ap.add_argument("peaks")
    ap.add_argument("snapshot")
    ap.add_argument("--min-particles", type=int, default=100)
    args = ap.parse_args()

    s = snapshot(args.snapshot)
    order = np.argsort(s["ids"])
    pk = h5py.File(args.peaks, "r")
    peak_ids = pk["peaks/id"][...]
    n_part = pk["peaks/n_particles"][...]
    position = pk["peaks/position"][...]
    member_id = pk["particles/id"][...].astype(np.uint64)
    member_peak = pk["particles/peak"][...]
    where = order[np.searchsorted(s["ids"][order], member_id)]
    assert np.all(s["ids"][where] == member_id), "a member is not in the snapshot"

    t = h5py.File(args.tree, "r")["peaks"]
    assert np.all(t["snapshot"][...] == 0), "a one-stage tree is expected"
    row = {int(i): k for k, i in enumerate(t["id"][...])}
    x_vir = s["om"] / s["a"] ** 3 / (s["om"] / s["a"] ** 3 + s["ol"]) - 1
    delta_vir = 18 * np.pi**2 + 82 * x_vir - 39 * x_vir**2

    ratios = {"m200c": [], "mvir": []}
    bad = []
    for pid, n, pos in zip(peak_ids, n_part, position):
        if n < args.min_particles:
            continue
        sel = where[member_peak == pid]
        c = shrinking_sphere(s["x"][sel], s["m"][sel], pos, s["box"])
        d = np.sqrt((periodic(s["x"] - c, s["box"]) ** 2).sum(axis=1))
        o = np.argsort(d, kind="stable")
        r_sorted, m_cum = d[o], np.cumsum(s["m"][o])
        for name, delta in (("m200c", 200.0), ("mvir", delta_vir)):
            want = outermost_mass(r_sorted, m_cum, delta * s["rho_c"])
            got = float(t[name][row[int(pid)]])
            if not (np.isfinite(got) and got > 0):
                bad.append((name, int(pid), int(n), got, want))
                continue
            ratios[name].append(got / want)
    assert not bad, f"peaks of >= {args.min_particles} particles without a mass (name, peak, n, phew, numpy): {bad}"
    for name, r in ratios.items():
        r = np.array(r)
        assert len(r) > 0, "no peak to compare"
        med = float(np.median(r))
        print(f"{name}: {len(r)} peaks, median phew/numpy {med:.6f}, range {r.min():.4f}..{r.max():.4f}")
        assert abs(med - 1) < 0.05, (name, med)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
