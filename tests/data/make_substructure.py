#!/usr/bin/python3
"""A host halo with three subhaloes inside it, two isolated haloes and a uniform background, for the
unbind tests (tests/cli/unbind.bats): Plummer spheres with isotropic Gaussian velocities of the local
dispersion (sigma^2 = G M / 6 sqrt(r^2 + a^2)), the subhaloes moving through the host. Gadget-style HDF5,
kpc, 1e10 Msun, km/s, periodic box of 100 kpc, per-particle masses. Seeded: the same bytes every time.

Usage: make_substructure.py OUT.hdf5 [--seed S]"""
import argparse

import h5py
import numpy as np

G = 43007.1  # kpc (km/s)^2 / 1e10 Msun
BOX = 100.0


def plummer(rng, n, mass, a, centre, bulk):
    r = a / np.sqrt(rng.uniform(1e-6, 1 - 1e-6, n) ** (-2 / 3) - 1)
    r = np.minimum(r, 10 * a)
    u = rng.normal(size=(n, 3))
    pos = centre + r[:, None] * u / np.linalg.norm(u, axis=1)[:, None]
    sigma = np.sqrt(G * mass / (6 * np.sqrt(r * r + a * a)))
    vel = bulk + sigma[:, None] * rng.normal(size=(n, 3))
    return pos, vel, np.full(n, mass / n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    parts = [plummer(rng, 30000, 5.0, 3.0, np.array([50.0, 50, 50]), np.zeros(3))]
    for off, v in (((10, 0, 0), (0, 120, 0)), ((0, -11, 0), (0, 0, -100)), ((0, 0, 12), (90, 0, 0))):
        parts.append(plummer(rng, 3000, 0.5, 0.5, 50 + np.array(off, float), np.array(v, float)))
    parts.append(plummer(rng, 6000, 1.0, 1.0, np.array([20.0, 20, 80]), np.array([30.0, 0, 0])))
    parts.append(plummer(rng, 6000, 1.0, 1.0, np.array([80.0, 25, 1]), np.array([0.0, -40, 0])))  # across the boundary
    nb = 5000
    parts.append((rng.uniform(0, BOX, (nb, 3)), rng.normal(0, 30, (nb, 3)), np.full(nb, 1e-5)))
    pos = np.mod(np.concatenate([p[0] for p in parts]), BOX)
    vel = np.concatenate([p[1] for p in parts])
    mass = np.concatenate([p[2] for p in parts])
    n = len(pos)
    with h5py.File(args.out, "w") as f:
        h = f.create_group("Header")
        counts = np.array([0, n, 0, 0, 0, 0], np.uint32)
        h.attrs["NumPart_ThisFile"] = counts
        h.attrs["NumPart_Total"] = counts
        h.attrs["NumPart_Total_HighWord"] = np.zeros(6, np.uint32)
        h.attrs["MassTable"] = np.zeros(6)
        h.attrs["BoxSize"] = BOX
        h.attrs["NumFilesPerSnapshot"] = 1
        h.attrs["Time"] = 1.0
        h.attrs["Redshift"] = 0.0
        g = f.create_group("PartType1")
        g["Coordinates"] = pos
        g["Velocities"] = vel
        g["Masses"] = mass
        g["ParticleIDs"] = np.arange(1, n + 1, dtype=np.uint64)


if __name__ == "__main__":
    main()
