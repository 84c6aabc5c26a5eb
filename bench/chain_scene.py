#!/usr/bin/python3
"""A synth-particles scene file: a uniform background plus NFW halos at random places (chain_bench.sh).

    bench/chain_scene.py SCENE.json [--background N] [--halos H] [--box L] [--seed S]

Physical units (kpc, 1e10 Msun, km/s). The background has the mean density of an Omega_m = 0.3,
h = 0.7 universe (0.3 rho_crit = 40.8 Msun/kpc^3) and a 100 km/s velocity dispersion; the halos have
M200 log-uniform in [3e10, 1e12] Msun, c uniform in [5, 15], bulk velocities ~ N(0, 200 km/s) per
axis, and the background's particle mass (NFW particles = 1.3 M200 / m_p: the taper keeps ~1.3 M200
for these concentrations), so the file has one MassTable entry. The scene asks for Potential and
Acceleration (the halos' analytic fields), which voters --potential snapshot uses.
"""
import argparse
import json

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scene")
    ap.add_argument("--background", type=float, default=1e7)
    ap.add_argument("--halos", type=int, default=300)
    ap.add_argument("--box", type=float, default=20000.0)
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    nbg = int(a.background)
    rho_mean = 0.3 * 277.5 * 0.7**2  # Msun / kpc^3
    mtot = rho_mean * a.box**3 / 1e10
    mp = mtot / nbg
    comps = [{"name": "field", "model": "uniform", "particles": nbg, "mass": mtot, "velocity_dispersion": 100.0}]
    m200 = np.exp(rng.uniform(np.log(3.0), np.log(100.0), a.halos))
    for i in range(a.halos):
        comps.append({"name": f"h{i}", "model": "nfw", "particles": max(100, int(round(m200[i] * 1.3 / mp))),
                      "mass": float(m200[i]), "concentration": float(rng.uniform(5, 15)),
                      "position": [float(v) for v in rng.uniform(0, a.box, 3)],
                      "velocity": [float(v) for v in rng.normal(0, 200, 3)]})
    scene = {"seed": a.seed, "box": a.box, "potential": True, "acceleration": True, "components": comps}
    with open(a.scene, "w") as f:
        json.dump(scene, f, indent=1)
        f.write("\n")
    print(sum(c["particles"] for c in comps))


if __name__ == "__main__":
    main()
