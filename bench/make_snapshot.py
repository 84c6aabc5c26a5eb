#!/usr/bin/python3
"""Write a synthetic Gadget-style HDF5 snapshot of dark-matter particles.

The layout is the one Gadget-4 writes (a /Header group of attributes and one PartTypeN group per
particle type), so phew's snapshot reader is exercised exactly as on a real simulation:

  /Header  attributes
      BoxSize                 float64           comoving box side, kpc/h
      NumPart_ThisFile        uint32[6]         particles of each type in this file
      NumPart_Total           uint64[6]         particles of each type in the whole snapshot
      NumPart_Total_HighWord  uint32[6]         Gadget-2/3 style upper 32 bits (always 0 here)
      MassTable               float64[6]        entry 1 = dark-matter particle mass, so no Masses dataset
      Time, Redshift          float64           a = 1, z = 0
      NumFilesPerSnapshot     int32
      Omega0, OmegaLambda, HubbleParam          float64
      UnitLength_in_cm, UnitMass_in_g, UnitVelocity_in_cm_per_s   (kpc/h, 1e10 Msun/h, km/s)
  /PartType1
      Coordinates   float32[n][3]   wrapped into [0, BoxSize)
      Velocities    float32[n][3]   km/s
      ParticleIDs   uint64[n]       1 .. n

Models
  uniform    positions uniformly random in the box (a featureless density field).
  clustered  ~70% of the particles in many spherical blobs ("haloes") with a power-law density
             profile rho ~ r^-1.8 cut at R200, at uniformly random centres, with masses drawn from a
             power-law mass function dN/dM ~ M^-1.9 (20 .. ~1e5 particles); the rest is a uniform
             background. Positions are wrapped periodically. A CIC grid of it has a strongly varying
             density, like a cosmological box at z = 0.

The particle mass is chosen so that the mean density is Omega0 times the critical density.

Output is deterministic for a given (model, n, box, seed): the particles are generated in fixed-size
chunks, each from its own numpy Generator spawned from the seed, so the same particles come out
whether the snapshot is written as one file or split with --files K. Memory use is a few chunks
(about 100 MB), independent of n.

Usage
  make_snapshot.py OUT.hdf5 --model uniform|clustered --n N [--box L] [--seed S] [--files K]

With K > 1 the files are OUT-stem.0.hdf5 .. OUT-stem.(K-1).hdf5 (e.g. snap.hdf5 -> snap.0.hdf5, ...),
a multi-file snapshot with NumPart_ThisFile split evenly and NumFilesPerSnapshot = K.
Example: 256^3 particles, clustered, in a 50 Mpc/h box:
  /usr/bin/python3 examples/make_snapshot.py snap.hdf5 --model clustered --n 16777216
"""

import argparse
import math
import sys
import time
from pathlib import Path

import h5py
import numpy as np

# --- Units (Gadget's defaults) and physical constants, cgs -------------------------------------
UNIT_LENGTH_CM = 3.085678e21  # 1 kpc/h   (the 1/h is implicit: lengths are h-scaled)
UNIT_MASS_G = 1.989e43  # 1e10 Msun/h
UNIT_VELOCITY_CM_PER_S = 1e5  # 1 km/s
GRAVITY_CGS = 6.6743e-8  # CODATA 2018, cm^3 g^-1 s^-2
MPC_CM = 1e3 * UNIT_LENGTH_CM

# Critical density today, in code units (1e10 Msun/h) / (kpc/h)^3.
#   rho_crit = 3 H0^2 / (8 pi G),  H0 = 100 h km/s/Mpc.
# With h-scaled units the h^2 of H0^2 is absorbed: a density unit of (1e10 Msun/h)/(kpc/h)^3 is
# 1e10 h^2 Msun/kpc^3, so evaluating the formula with h = 1 gives rho_crit directly in code units:
#   rho_crit = 2.775e11 h^2 Msun/Mpc^3 = 277.5 h^2 Msun/kpc^3     (1 Mpc^3 = 1e9 kpc^3)
#            = 277.5 / 1e10  (1e10 Msun/h)/(kpc/h)^3 = 2.775e-8 in code units.
# (Equivalently 3 H0^2 / (8 pi G) with Gadget's internal H0 = 0.1 and G = 43007.1.)
_H0_PER_S = 100.0 * 1e5 / MPC_CM  # h = 1
RHO_CRIT = 3.0 * _H0_PER_S**2 / (8.0 * math.pi * GRAVITY_CGS) / (UNIT_MASS_G / UNIT_LENGTH_CM**3)
assert abs(RHO_CRIT / 2.77536627e-8 - 1) < 2e-3, RHO_CRIT
# G in code units, kpc (km/s)^2 / (1e10 Msun): about 43007 (used for the blobs' velocity dispersion).
G_CODE = GRAVITY_CGS * UNIT_MASS_G / (UNIT_LENGTH_CM * UNIT_VELOCITY_CM_PER_S**2)

OMEGA0, OMEGA_LAMBDA, HUBBLE = 0.3, 0.7, 0.7
CHUNK = 1 << 20  # particles generated per chunk (the unit of determinism)

# Clustered model parameters.
CLUSTERED_FRACTION = 0.70  # particles in blobs; the rest is uniform background
BLOB_SLOPE = 1.9  # dN/dM ~ M^-BLOB_SLOPE
BLOB_MIN = 20  # particles in the smallest blob
BLOB_MAX_FRACTION = 0.005  # largest blob, as a fraction of all particles (capped below)
PROFILE_GAMMA = 1.8  # rho ~ r^-gamma inside R200, so M(<r) ~ r^(3 - gamma)
OVERDENSITY = 200.0  # blob radius: mean density inside R200 = 200 x the mean density
BULK_SIGMA = 300.0  # km/s, 1-D dispersion of blob and background bulk velocities


class Model:
    """Generates particle i..j positions (float64, unwrapped) and velocities (float64)."""

    def __init__(self, name, n, box, seed):
        self.name, self.n, self.box = name, n, box
        self.seed = np.random.SeedSequence(seed)
        mean_density = OMEGA0 * RHO_CRIT
        self.particle_mass = mean_density * box**3 / n
        if name == "clustered":
            self._make_blobs(mean_density)

    def _make_blobs(self, mean_density):
        # The blob catalogue is small (~1e4-1e5 entries) and drawn from its own stream, so every
        # chunk sees the same blobs.
        rng = np.random.default_rng(np.random.SeedSequence(self.seed.entropy, spawn_key=(0,)))
        target = int(CLUSTERED_FRACTION * self.n)
        nmax = max(BLOB_MIN + 1, min(int(BLOB_MAX_FRACTION * self.n), 100_000))
        # Inverse CDF of a power law between BLOB_MIN and nmax, drawn in batches until the target.
        a = 1.0 - BLOB_SLOPE
        lo, hi = BLOB_MIN**a, nmax**a
        sizes = []
        total = 0
        while total < target:
            s = np.floor((lo + rng.random(4096) * (hi - lo)) ** (1.0 / a)).astype(np.int64)
            sizes.append(s)
            total += int(s.sum())
        sizes = np.concatenate(sizes)
        cum = np.cumsum(sizes)
        k = int(np.searchsorted(cum, target)) + 1
        sizes = sizes[:k]
        sizes[-1] -= int(cum[k - 1]) - target  # trim the last blob to hit the target exactly
        if sizes[-1] <= 0:
            sizes = sizes[:-1]
        self.blob_size = sizes
        self.blob_end = np.cumsum(sizes)  # particles [end - size, end) belong to the blob
        self.n_clustered = int(self.blob_end[-1]) if len(sizes) else 0
        nb = len(sizes)
        self.blob_centre = rng.random((nb, 3)) * self.box
        self.blob_velocity = rng.normal(0.0, BULK_SIGMA, (nb, 3))
        mass = sizes * self.particle_mass
        # R200 from M = 200 * rho_mean * 4/3 pi R^3; internal 1-D dispersion sqrt(G M / (2 R)), that of
        # an isothermal sphere with circular velocity sqrt(G M / R).
        self.blob_radius = np.cbrt(3.0 * mass / (4.0 * math.pi * OVERDENSITY * mean_density))
        self.blob_sigma = np.sqrt(G_CODE * mass / (2.0 * self.blob_radius))

    def chunk(self, index):
        """Positions and velocities of particles [index*CHUNK, min(n, (index+1)*CHUNK))."""
        begin = index * CHUNK
        end = min(self.n, begin + CHUNK)
        m = end - begin
        rng = np.random.default_rng(np.random.SeedSequence(self.seed.entropy, spawn_key=(1, index)))
        pos = rng.random((m, 3)) * self.box
        vel = rng.normal(0.0, BULK_SIGMA, (m, 3))
        if self.name == "clustered" and begin < self.n_clustered:
            c = min(end, self.n_clustered) - begin  # the chunk's first c particles are in blobs
            blob = np.searchsorted(self.blob_end, np.arange(begin, begin + c), side="right")
            # Radius from the inverse of M(<r)/M = (r/R)^(3-gamma); an isotropic direction.
            r = self.blob_radius[blob] * rng.random(c) ** (1.0 / (3.0 - PROFILE_GAMMA))
            direction = rng.normal(size=(c, 3))
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            pos[:c] = self.blob_centre[blob] + r[:, None] * direction
            vel[:c] = self.blob_velocity[blob] + self.blob_sigma[blob][:, None] * rng.normal(size=(c, 3))
        return pos, vel

    def describe(self):
        if self.name == "clustered":
            return (f"{len(self.blob_size)} blobs of {self.blob_size.min()}..{self.blob_size.max()} particles "
                    f"holding {self.n_clustered / self.n:.0%}")
        return "uniform"


def wrap_float32(pos, box):
    """Wraps positions into [0, box) and rounds to float32, keeping them below box after rounding."""
    p = np.mod(pos, box).astype(np.float32)
    p[p >= np.float32(box)] = 0.0  # x just below box can round up to box; periodically that is 0
    return p


def write_header(f, box, particle_mass, this_file, total, nfiles):
    h = f.create_group("Header")
    h.attrs["BoxSize"] = np.float64(box)
    npart = np.zeros(6, np.uint64)
    npart[1] = this_file
    h.attrs["NumPart_ThisFile"] = npart.astype(np.uint32)
    tot = np.zeros(6, np.uint64)
    tot[1] = total
    h.attrs["NumPart_Total"] = tot
    h.attrs["NumPart_Total_HighWord"] = (tot >> np.uint64(32)).astype(np.uint32)
    mass_table = np.zeros(6, np.float64)
    mass_table[1] = particle_mass
    h.attrs["MassTable"] = mass_table
    h.attrs["Time"] = np.float64(1.0)
    h.attrs["Redshift"] = np.float64(0.0)
    h.attrs["NumFilesPerSnapshot"] = np.int32(nfiles)
    h.attrs["Omega0"] = np.float64(OMEGA0)
    h.attrs["OmegaLambda"] = np.float64(OMEGA_LAMBDA)
    h.attrs["HubbleParam"] = np.float64(HUBBLE)
    h.attrs["UnitLength_in_cm"] = np.float64(UNIT_LENGTH_CM)
    h.attrs["UnitMass_in_g"] = np.float64(UNIT_MASS_G)
    h.attrs["UnitVelocity_in_cm_per_s"] = np.float64(UNIT_VELOCITY_CM_PER_S)


def output_paths(out, nfiles):
    if nfiles == 1:
        return [out]
    stem = out.with_suffix("") if out.suffix == ".hdf5" else out
    return [stem.parent / f"{stem.name}.{i}.hdf5" for i in range(nfiles)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring for the layout and the models.")
    ap.add_argument("out", type=Path, help="output file (OUT.hdf5; with --files K: OUT.0.hdf5 ...)")
    ap.add_argument("--model", choices=["uniform", "clustered"], default="uniform")
    ap.add_argument("--n", type=int, default=128**3, help="number of particles (default 128^3)")
    ap.add_argument("--box", type=float, default=50000.0, help="box side in kpc/h (default 50000)")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--files", type=int, default=1, help="split into K files (default 1)")
    args = ap.parse_args()
    if args.n < 1 or args.box <= 0 or args.files < 1 or args.files > args.n or args.n >= 2**63:
        ap.error("need n >= 1, box > 0 and 1 <= files <= n")

    t0 = time.perf_counter()
    model = Model(args.model, args.n, args.box, args.seed)
    paths = output_paths(args.out, args.files)
    bounds = [args.n * i // args.files for i in range(args.files + 1)]  # file i: [bounds[i], bounds[i+1])

    # Walk the chunks once; each chunk is scattered over the file(s) it overlaps.
    files = []
    for i, p in enumerate(paths):
        p.parent.mkdir(parents=True, exist_ok=True)
        f = h5py.File(p, "w")
        count = bounds[i + 1] - bounds[i]
        write_header(f, args.box, model.particle_mass, count, args.n, args.files)
        g = f.create_group("PartType1")
        g.create_dataset("Coordinates", (count, 3), np.float32)
        g.create_dataset("Velocities", (count, 3), np.float32)
        g.create_dataset("ParticleIDs", (count,), np.uint64)
        files.append(f)
    try:
        for c in range((args.n + CHUNK - 1) // CHUNK):
            begin = c * CHUNK
            pos, vel = model.chunk(c)
            end = begin + len(pos)
            pos = wrap_float32(pos, args.box)
            vel = vel.astype(np.float32)
            for i, f in enumerate(files):
                a, b = max(begin, bounds[i]), min(end, bounds[i + 1])
                if a >= b:
                    continue
                g = f["PartType1"]
                lo, hi = a - bounds[i], b - bounds[i]
                g["Coordinates"][lo:hi] = pos[a - begin:b - begin]
                g["Velocities"][lo:hi] = vel[a - begin:b - begin]
                g["ParticleIDs"][lo:hi] = np.arange(a + 1, b + 1, dtype=np.uint64)
    finally:
        for f in files:
            f.close()

    where = str(paths[0]) if len(paths) == 1 else f"{paths[0]} .. {paths[-1].name}"
    print(f"make_snapshot: {where}: {args.n} particles, model {args.model} ({model.describe()}), "
          f"box {args.box:g} kpc/h, particle mass {model.particle_mass:.6g} 1e10 Msun/h "
          f"(mean density {OMEGA0:g} rho_crit), seed {args.seed}, {args.files} file(s), "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
