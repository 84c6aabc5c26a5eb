#!/usr/bin/python3
"""Two Plummer spheres superposed in space (Geda & Teyssier Fig. 1), for the deblend tests.

Usage: make_overlap.py OUT.hdf5 --dv DV [--n N] [--seed S] [--single] [--offset D] [--mass2 M]
                        [--potential] [--field GX]
Writes a Gadget-style snapshot (kpc, 1e10 Msun, km/s; periodic box of 400 kpc) and OUT.truth.npy with
each particle's halo (0 or 1) indexed by particle ID - 1. Velocities are drawn from the Plummer
distribution function (Aarseth, Henon & Wielen 1974), so each sphere is in equilibrium; the two move
at +DV/2 and -DV/2 along x. --offset puts the second sphere D kpc away along x (--mass2 its mass, the
first has mass 1 and scale 10 kpc; the second scale 10 (M2)^(1/3) kpc). --potential writes the analytic
Potential and Acceleration of the spheres (plus a uniform external field GX along x with --field).
"""
import argparse

import h5py
import numpy as np

G = 43007.1  # kpc (km/s)^2 / 1e10 Msun
BOX = 400.0


def plummer(rng, n, mass, a):
    # radius from the inverse cumulative mass, truncated at 20 a
    x = rng.uniform(0, 0.9877, n)  # M(<20a)/M
    r = a / np.sqrt(x ** (-2.0 / 3.0) - 1.0)
    u = rng.normal(size=(n, 3))
    pos = r[:, None] * u / np.linalg.norm(u, axis=1)[:, None]
    # speed by von Neumann rejection on q^2 (1 - q^2)^(7/2), q = v / v_esc
    q = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        x1, x2 = rng.uniform(0, 1, len(todo)), rng.uniform(0, 0.1, len(todo))
        ok = x2 < x1 ** 2 * (1 - x1 ** 2) ** 3.5
        q[todo[ok]] = x1[ok]
        todo = todo[~ok]
    vesc = np.sqrt(2 * G * mass / np.sqrt(r ** 2 + a ** 2))
    w = rng.normal(size=(n, 3))
    vel = (q * vesc)[:, None] * w / np.linalg.norm(w, axis=1)[:, None]
    return pos, vel


def write_snapshot(f, pos, vel, ids, time, mass_table):
    """A one-file Gadget-style snapshot of type-1 particles (kpc, 1e10 Msun, km/s, periodic box BOX) in
    the open h5py file f; returns the PartType1 group for more datasets."""
    counts = np.zeros(6, dtype=np.uint32)
    counts[1] = len(pos)
    h = f.create_group("Header")
    h.attrs["BoxSize"] = BOX
    h.attrs["NumPart_ThisFile"] = counts
    h.attrs["NumPart_Total"] = counts.astype(np.uint64)
    h.attrs["MassTable"] = np.asarray(mass_table, dtype=np.float64)
    h.attrs["Time"] = time
    h.attrs["Redshift"] = 0.0
    h.attrs["NumFilesPerSnapshot"] = np.int32(1)
    h.attrs["UnitLength_in_cm"] = 3.085678e21
    h.attrs["UnitMass_in_g"] = 1.989e43
    h.attrs["UnitVelocity_in_cm_per_s"] = 1e5
    g = f.create_group("PartType1")
    g["Coordinates"] = (pos % BOX).astype(np.float32)
    g["Velocities"] = vel.astype(np.float32)
    g["ParticleIDs"] = ids.astype(np.uint64)
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--dv", type=float, default=600.0)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--offset", type=float, default=0.0)
    ap.add_argument("--mass2", type=float, default=1.0)
    ap.add_argument("--potential", action="store_true")
    ap.add_argument("--field", type=float, default=0.0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    halos = 1 if a.single else 2
    pos, vel, truth = [], [], []
    spheres = []  # (centre, mass, scale)
    for h in range(halos):
        mass = 1.0 if h == 0 else a.mass2
        scale = 10.0 * mass ** (1.0 / 3.0)
        n = a.n if h == 0 else max(50, int(round(a.n * mass)))
        p, v = plummer(rng, n, mass, scale)
        v[:, 0] += (0.5 - h) * a.dv if halos == 2 else 0.0
        centre = np.array([BOX / 2 + (a.offset if h == 1 else 0.0), BOX / 2, BOX / 2])
        spheres.append((centre, mass, scale, n))
        pos.append(p + centre)
        vel.append(v)
        truth.append(np.full(n, h))
    pos, vel, truth = np.concatenate(pos), np.concatenate(vel), np.concatenate(truth)
    order = rng.permutation(len(pos))  # the file order says nothing about the halo
    pos, vel, truth = pos[order], vel[order], truth[order]
    n = len(pos)
    masses = np.concatenate([np.full(s[3], s[1] / s[3]) for s in spheres])[order]
    with h5py.File(a.out, "w") as f:
        g = write_snapshot(f, pos, vel, np.arange(1, n + 1), 0.0, np.zeros(6))
        g["Masses"] = masses.astype(np.float32)
        if a.potential:
            phi = np.zeros(n)
            acc = np.zeros((n, 3))
            for centre, mass, scale, _ in spheres:
                d = pos - centre
                r2 = (d ** 2).sum(axis=1) + scale ** 2
                phi -= G * mass / np.sqrt(r2)
                acc -= G * mass * d / r2[:, None] ** 1.5
            phi -= a.field * (pos[:, 0] - BOX / 2)  # uniform field g along x: Phi = -g x, a = +g
            acc[:, 0] += a.field
            g["Potential"] = phi.astype(np.float32)
            g["Acceleration"] = acc.astype(np.float32)
    np.save(a.out.replace(".hdf5", ".truth.npy"), truth)


if __name__ == "__main__":
    main()
