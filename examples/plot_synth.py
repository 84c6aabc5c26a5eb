#!/usr/bin/python3
"""Pictures of every synth-particles model, for docs/tools/synth-particles.md.

Runs synth-particles (from BIN) in a temporary folder and draws, from its snapshots and truth files:

  synth-halos.png        NFW, Plummer, Hernquist: the particles, the density profile against the model,
                         the velocity dispersions against the isotropic Jeans solution
  synth-backgrounds.png  a uniform box and Zel'dovich boxes (CDM and power-law spectra)
  synth-sequences.png    the crossing (ballistic), collision (restricted N-body) and merger scenes
  synth-scene.png        the quick-start example: a cluster with a subhalo in a Zel'dovich box

Usage: plot_synth.py BIN OUTDIR     (e.g. plot_synth.py build/bin docs/img)
"""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

G = 6.6743e-8 * 1.989e43 / (3.085678e21 * 1e10)  # kpc (km/s)^2 / (1e10 Msun), as phew's Units
MYR = 3.085678e21 / 1e5 / 3.15576e13  # one kpc/(km/s) in Myr
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def save(fig, path, dpi):
    """A PNG with a 128-colour palette: a third of the size of full colour, as good for these plots."""
    from PIL import Image

    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    Image.open(path).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def run(bin_dir, *args):
    subprocess.run([str(Path(bin_dir) / "synth-particles"), *map(str, args), "-q"], check=True)


def load(snap):
    """Positions, velocities (float64) and the truth file of a snapshot."""
    f = h5py.File(snap)
    g = f["PartType1"]
    truth = h5py.File(str(snap).replace(".hdf5", ".truth.h5"))
    return g["Coordinates"][...].astype(float), g["Velocities"][...].astype(float), truth


def model_density(model, r, t):
    """The component's density (tapered beyond its truncation radius), normalised to its total mass."""
    a, rt, rd = t["scale_radius"], t["truncation_radius"], t["decay_radius"]

    def inner(x):
        x = np.asarray(x) / a
        if model == "nfw":
            return 1 / (x * (1 + x) ** 2)
        if model == "hernquist":
            return 1 / (x * (1 + x) ** 3)
        return (1 + x * x) ** -2.5

    def shape(x):
        x = np.asarray(x, float)
        if rt <= 0:
            return inner(x)
        h = 1e-6 * rt
        eps = rt * (np.log(inner(rt + h)) - np.log(inner(rt - h))) / (2 * h) + rt / rd
        tail = inner(rt) * (x / rt) ** eps * np.exp(-(x - rt) / rd)
        return np.where(x <= rt, inner(np.minimum(x, rt)), tail)

    grid = np.geomspace(1e-6 * a, (rt + 60 * rd) if rt > 0 else 1e7 * a, 200000)
    norm = np.trapz(4 * np.pi * grid ** 3 * shape(grid), np.log(grid))
    return t["mass"] * shape(r) / norm, grid, t["mass"] * shape(grid) / norm


def jeans_sigma(r, grid, rho):
    """Isotropic Jeans dispersion sigma_r(r) = sqrt((1/rho) int_r^inf rho G M / r'^2 dr')."""
    lng = np.log(grid)
    mass = np.concatenate([[0], np.cumsum(np.diff(lng) * 0.5 * (4 * np.pi * (grid ** 3 * rho)[1:] + 4 * np.pi * (grid ** 3 * rho)[:-1]))])
    integrand = rho * G * mass / grid  # per d ln r
    tail = np.concatenate([np.cumsum((np.diff(lng) * 0.5 * (integrand[1:] + integrand[:-1]))[::-1])[::-1], [0]])
    return np.sqrt(np.interp(np.log(r), lng, tail) / np.interp(np.log(r), lng, rho))


def halos(bin_dir, tmp, out):
    cases = [("nfw", ["--concentration", 10], "NFW, M200 = 1e10 Msun, c = 10"),
             ("plummer", ["--scale-radius", 2], "Plummer, M = 1e10 Msun, a = 2 kpc"),
             ("hernquist", ["--scale-radius", 2, "--truncation", 40], "Hernquist, a = 2 kpc, taper from 40a")]
    fig, ax = plt.subplots(3, 3, figsize=(11, 10), constrained_layout=True)
    for row, (model, extra, title) in enumerate(cases):
        snap = tmp / f"{model}.hdf5"
        run(bin_dir, model, "-o", snap, "--particles", 100000, "--seed", 2, *extra)
        x, v, truth = load(snap)
        t = {k: truth["components/" + k][0] for k in ("scale_radius", "truncation_radius", "decay_radius", "mass")}
        r = np.linalg.norm(x, axis=1)
        lim = 4 * np.median(r)
        h, _, _ = np.histogram2d(x[:, 0], x[:, 1], bins=200, range=[[-lim, lim], [-lim, lim]])
        ax[row, 0].imshow(np.log10(h.T + 1), origin="lower", extent=[-lim, lim, -lim, lim], cmap="magma")
        ax[row, 0].set_title(title)
        ax[row, 0].set_xlabel("x [kpc]")
        ax[row, 0].set_ylabel("y [kpc]")
        # density: particles in log bins against the model
        edges = np.geomspace(np.percentile(r, 0.05), r.max(), 40)
        counts, _ = np.histogram(r, edges)
        shell = 4 / 3 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
        mid = np.sqrt(edges[1:] * edges[:-1])
        pm = truth["components/particle_mass"][0]
        ok = counts > 0
        ax[row, 1].errorbar(mid[ok], (counts * pm / shell)[ok], yerr=(np.sqrt(counts) * pm / shell)[ok], fmt=".",
                            label="particles")
        rho, grid, rho_grid = model_density(model, mid, t)
        ax[row, 1].loglog(mid, rho, "k-", lw=1, label="model")
        if t["truncation_radius"] > 0:
            ax[row, 1].axvline(t["truncation_radius"], color="0.6", ls=":", label="taper starts")
        ax[row, 1].set_xlabel("r [kpc]")
        ax[row, 1].set_ylabel("density [1e10 Msun / kpc^3]")
        ax[row, 1].legend(fontsize=8)
        # velocity dispersions in bins of equal counts against the Jeans solution
        vr = (x * v).sum(1) / r
        vt2 = (v * v).sum(1) - vr ** 2
        order = np.argsort(r)
        bins = np.array_split(order, 25)
        rb = np.array([np.median(r[b]) for b in bins])
        ax[row, 2].semilogx(rb, [np.sqrt(np.mean(vr[b] ** 2)) for b in bins], "o", ms=4, label="sigma_r")
        ax[row, 2].semilogx(rb, [np.sqrt(np.mean(vt2[b]) / 2) for b in bins], "s", ms=3, label="sigma_t / sqrt 2")
        ax[row, 2].semilogx(rb, jeans_sigma(rb, grid, rho_grid), "k-", lw=1, label="Jeans (isotropic)")
        ax[row, 2].set_xlabel("r [kpc]")
        ax[row, 2].set_ylabel("velocity dispersion [km/s]")
        ax[row, 2].legend(fontsize=8)
    save(fig, out / "synth-halos.png", 70)


def backgrounds(bin_dir, tmp, out):
    cases = [(["uniform", "--particles", "64^3", "--box", 20000], "uniform, 64^3 in 20 Mpc"),
             (["zeldovich", "--particles", "128^3", "--box", 50000], "zeldovich, CDM (BBKS), sigma8 0.8, z = 0"),
             (["zeldovich", "--particles", "128^3", "--box", 50000, "--spectrum", "power_law", "--index", -2],
              "zeldovich, P(k) ~ k^-2, sigma8 0.8"),
             (["zeldovich", "--particles", "128^3", "--box", 50000, "--redshift", 3], "zeldovich, CDM, z = 3")]
    fig, ax = plt.subplots(1, 4, figsize=(16, 4.3), constrained_layout=True)
    for axis, (args, title) in zip(ax, cases):
        snap = tmp / "box.hdf5"
        run(bin_dir, *args, "-o", snap)
        x, _, truth = load(snap)
        box = h5py.File(snap)["Header"].attrs["BoxSize"]
        sl = x[:, 2] < box / 8  # a slab an eighth of the box thick
        h, _, _ = np.histogram2d(x[sl, 0], x[sl, 1], bins=256, range=[[0, box], [0, box]])
        axis.imshow(np.log10(h.T + 1), origin="lower", extent=[0, box / 1000, 0, box / 1000], cmap="magma")
        units = truth.attrs["length_units"]
        axis.set_title(title, fontsize=10)
        axis.set_xlabel(f"x [1000 {units}]")
        axis.set_ylabel(f"y [1000 {units}]")
    save(fig, out / "synth-backgrounds.png", 60)


def sequences(bin_dir, tmp, out):
    scenes = [("crossing", [0, 60, 90, 120], "crossing (ballistic)"),
              ("collision", [0, 30, 45, 60], "collision (restricted N-body, Geda & Teyssier Table 1)"),
              ("merger", [0, 16, 28, 40], "merger (restricted N-body, dynamical friction)")]
    fig, ax = plt.subplots(3, 5, figsize=(17, 10.5), constrained_layout=True)
    for row, (scene, picks, title) in enumerate(scenes):
        run(bin_dir, scene, "-o", tmp / scene)
        last = max(picks)
        track = h5py.File(tmp / f"{scene}_{last:03d}.truth.h5")["track/center"][...]
        times = h5py.File(tmp / f"{scene}_{last:03d}.truth.h5")["track/time_myr"][...]
        lo, hi = track[..., :2].min((0, 1)) - 60, track[..., :2].max((0, 1)) + 60
        for col, s in enumerate(picks):
            x, _, truth = load(tmp / f"{scene}_{s:03d}.hdf5")
            comp = truth["particles/component"][...]
            bound = truth["particles/bound"][...].astype(bool)
            axis = ax[row, col]
            for c in np.unique(comp):
                m = comp == c
                axis.scatter(x[m & bound, 0], x[m & bound, 1], s=0.2, color=COLOURS[c], alpha=0.5, rasterized=True)
                axis.scatter(x[m & ~bound, 0], x[m & ~bound, 1], s=0.2, color="0.6", alpha=0.5, rasterized=True)
                axis.plot(track[: s + 1, c, 0], track[: s + 1, c, 1], "k-", lw=0.8)
            axis.set_xlim(lo[0], hi[0])
            axis.set_ylim(lo[1], hi[1])
            axis.set_aspect("equal")
            axis.set_title(f"{scene} {s:03d}: {times[s]:.0f} Myr", fontsize=10)
            axis.set_xlabel("x [kpc]")
            axis.set_ylabel("y [kpc]")
        sep = np.linalg.norm(track[:, 1] - track[:, 0], axis=1)
        frac = [h5py.File(tmp / f"{scene}_{s:03d}.truth.h5")["particles/bound"][10000:].mean() for s in range(len(times))]
        axis = ax[row, 4]
        axis.plot(times, sep, "k-", label="separation [kpc]")
        axis.set_xlabel("time [Myr]")
        axis.set_ylabel("centre separation [kpc]")
        axis.set_title(title, fontsize=10)
        twin = axis.twinx()
        twin.plot(times, frac, color=COLOURS[1], label="bound fraction, second halo")
        twin.set_ylim(0, 1.05)
        twin.set_ylabel("fraction of its particles bound to it", color=COLOURS[1])
    save(fig, out / "synth-sequences.png", 55)


def scene(bin_dir, tmp, out):
    spec = {"seed": 1, "box": 20000, "cosmology": {"omega_m": 0.3, "omega_lambda": 0.7, "hubble": 0.7},
            "components": [
                {"name": "cluster", "model": "nfw", "particles": 50000, "mass": 10000, "concentration": 5,
                 "position": [10000, 10000, 10000]},
                {"name": "subhalo", "model": "nfw", "particles": 9000, "mass": 1000, "concentration": 8,
                 "host": "cluster", "position": [600, 0, 0], "velocity": [0, 700, 0]},
                {"name": "field", "model": "zeldovich", "particles": "64^3", "sigma8": 0.8}]}
    path = tmp / "scene.json"
    path.write_text(json.dumps(spec))
    run(bin_dir, path, "-o", tmp / "scene.hdf5")
    x, _, truth = load(tmp / "scene.hdf5")
    comp = truth["particles/component"][...]
    names = json.loads(truth["components"].attrs["names"])
    fig, ax = plt.subplots(1, 2, figsize=(11, 5.2), constrained_layout=True)
    h, _, _ = np.histogram2d(x[:, 0], x[:, 1], bins=256, range=[[0, 20000], [0, 20000]])
    ax[0].imshow(np.log10(h.T + 1), origin="lower", extent=[0, 20, 0, 20], cmap="magma")
    ax[0].set_title("all particles, projected")
    ax[0].set_xlabel("x [Mpc/h]")
    ax[0].set_ylabel("y [Mpc/h]")
    near = np.all(np.abs(x - 10000) < 2000, axis=1)
    for c in (2, 0, 1):
        m = near & (comp == c)
        ax[1].scatter(x[m, 0] / 1000, x[m, 1] / 1000, s=0.3, color=COLOURS[c], label=names[c], rasterized=True)
    ax[1].set_aspect("equal")
    ax[1].set_title("the central 4 Mpc/h, coloured by component (truth file)")
    ax[1].set_xlabel("x [Mpc/h]")
    ax[1].legend(markerscale=15)
    save(fig, out / "synth-scene.png", 60)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bin_dir, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        halos(bin_dir, tmp, out)
        backgrounds(bin_dir, tmp, out)
        sequences(bin_dir, tmp, out)
        scene(bin_dir, tmp, out)
    for p in sorted(out.glob("synth-*.png")):
        print(f"{p}: {p.stat().st_size / 1024:.0f} kB")


if __name__ == "__main__":
    main()
