#!/usr/bin/python3
"""Per-type catalogue columns on a real run with gas, against numpy (docs/unbind-method.md, "Per type").

On the shared Gadget-4 run (z = 0, 32^3 gas and 32^3 dark-matter particles) this runs the chain on every
type, as a galaxy-formation user would:

    cic-project SNAPSHOT --grid auto --types all
    phew-segment --threshold 80mean
    phew-merge --relevance 3 --saddle-threshold 200mean
    unbind CLUMPS SNAPSHOT                  (its types: the grid's, gas and dark matter)

and checks bound.h5's per-type columns against a reference computed here from the snapshot itself and
bound.h5's own /particles (which object each particle ends bound to) and /objects/centre: counts and
masses per type, half-mass radii about the centre (periodic nearest image), 1-D velocity dispersions in
the object's frame (peculiar velocity plus the Hubble flow about the peak) and the masses inside 30 and
50 physical kpc. The per-type masses add up to the totals; unbind at 2 ranks writes the same columns.

The gas: the mass-weighted temperature of each object's bound gas (own and inclusive of its
sub-objects) from the run's InternalEnergy (fully ionised, mu = 0.588); on a copy of the snapshot given
an ElectronAbundance and a StarFormationRate (30% of the gas forming stars), the temperature with those
electrons and the star-forming gas mass; without a star formation rate, no such column.

    types_gadget4_gas.py [--bin DIR] [--data DIR]   (defaults: $PHEW_BIN and $PHEW_SHARED_DATA)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SNAPSHOT = "gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
COLUMNS = ["n_bound_type", "n_bound_inclusive_type", "mass_type", "mass_inclusive_type", "half_mass_radius_type",
           "velocity_dispersion_type", "aperture_mass_type", "aperture_mass_inclusive_type"]


def run(cmd, ranks=1):
    if ranks > 1:
        cmd = ["mpirun", "--oversubscribe", "-n", str(ranks)] + cmd
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {done.returncode}:\n{done.stderr}")


def snapshot_particles(path):
    """IDs, types, masses, positions (wrapped), velocities of every particle; box, h and the length unit."""
    with h5py.File(path, "r") as f:
        header, params = f["Header"].attrs, f["Parameters"].attrs
        box = float(header["BoxSize"])
        ids, types, mass, pos, vel = [], [], [], [], []
        for t in range(6):
            g = f"PartType{t}"
            if g not in f:
                continue
            n = len(f[g]["ParticleIDs"])
            ids.append(f[g]["ParticleIDs"][...].astype(np.uint64))
            types.append(np.full(n, t))
            mass.append(f[g]["Masses"][...] if "Masses" in f[g] else np.full(n, header["MassTable"][t]))
            pos.append(np.mod(f[g]["Coordinates"][...].astype(np.float64), box))
            vel.append(f[g]["Velocities"][...].astype(np.float64))
        return (np.concatenate(ids), np.concatenate(types), np.concatenate(mass), np.concatenate(pos),
                np.concatenate(vel), box, float(params["HubbleParam"]), float(params["UnitLength_in_cm"]))


def reference(bound, snap, types, apertures_kpc):
    """Per object and type, from the particles bound to it: the columns bound.h5 should hold."""
    ids, ptype, mass, pos, vel, box, h, length_cm = snap
    order = np.argsort(ids)
    with h5py.File(bound, "r") as f:
        obj = f["objects"]
        object_ids, centre, peak = obj["id"][...], obj["centre"][...], obj["peak_position"][...]
        hubble, a = float(f.attrs["hubble"]), float(f.attrs["scale_factor"])
        pid, bound_to = f["particles/id"][...], f["particles/object"][...]
    at = order[np.searchsorted(ids, pid, sorter=order)]
    assert np.array_equal(ids[at], pid), "bound.h5 lists particles the snapshot does not have"
    apertures = np.array(apertures_kpc) * 3.085678e21 / length_cm * h  # physical kpc -> kpc/h (a = 1 here)

    def image(d):
        return d - box * np.round(d / box)

    out = {k: [] for k in ["n_bound_type", "mass_type", "half_mass_radius_type", "velocity_dispersion_type",
                           "aperture_mass_type"]}
    for o, oid in enumerate(object_ids):
        rows = {k: [] for k in out if k != "aperture_mass_type"}
        aperture = np.zeros((len(apertures), len(types)))
        for c, t in enumerate(types):
            sel = at[(bound_to == oid) & (ptype[at] == t)]
            m = mass[sel]
            rows["n_bound_type"].append(len(sel))
            rows["mass_type"].append(m.sum())
            if len(sel) == 0:
                rows["half_mass_radius_type"].append(0.0)
                rows["velocity_dispersion_type"].append(0.0)
                continue
            r = np.sqrt((image(pos[sel] - centre[o]) ** 2).sum(axis=1)) * a
            k = np.argsort(r, kind="stable")
            enclosed = np.concatenate([[0.0], np.cumsum(m[k])])  # M(<= r), linear between the radii
            rows["half_mass_radius_type"].append(np.interp(0.5 * m.sum(), enclosed, np.concatenate([[0.0], r[k]])) / a)
            u = vel[sel] + hubble * a * image(pos[sel] - peak[o])
            mean = (m[:, None] * u).sum(axis=0) / m.sum()
            rows["velocity_dispersion_type"].append(np.sqrt((m[:, None] * (u - mean) ** 2).sum() / (3 * m.sum())))
            for j, ap in enumerate(apertures):
                aperture[j, c] = m[r <= ap].sum()
        for k in rows:
            out[k].append(rows[k])
        out["aperture_mass_type"].append(aperture)
    return {k: np.array(v) for k, v in out.items()}


X_H, M_P, K_B = 0.76, 1.67262192e-24, 1.380649e-16


def temperature(u, n_e):
    """K from the specific internal energy in (km/s)^2 (the run's velocity unit)."""
    return (2.0 / 3.0) * 4 / (1 + 3 * X_H + 4 * X_H * n_e) * M_P * u * 1e10 / K_B


def gas_reference(bound, snapshot):
    """Per object: the mass-weighted temperature of its own and inclusive bound gas, the star-forming mass."""
    with h5py.File(snapshot, "r") as s:
        g, header = s["PartType0"], s["Header"].attrs
        ids = g["ParticleIDs"][...].astype(np.uint64)
        m = np.full(len(ids), float(header["MassTable"][0])) if "Masses" not in g else g["Masses"][...]
        n_e = g["ElectronAbundance"][...].astype(np.float64) if "ElectronAbundance" in g else np.full(len(ids), 1 + (1 - X_H) / (2 * X_H))
        t = temperature(g["InternalEnergy"][...].astype(np.float64), n_e)
        sf = g["StarFormationRate"][...] > 0 if "StarFormationRate" in g else np.zeros(len(ids), bool)
    order = np.argsort(ids)
    with h5py.File(bound, "r") as f:
        oid, parent = f["objects/id"][...], f["objects/parent"][...]
        pid, bound_to = f["particles/id"][...], f["particles/object"][...]
    k = np.searchsorted(ids, pid, sorter=order)
    gas = (k < len(ids)) & (ids[order[np.minimum(k, len(ids) - 1)]] == pid) & (bound_to > 0)
    at, owner = order[k[gas]], bound_to[gas]
    parent_of = dict(zip(oid.tolist(), parent.tolist()))
    sums = {o: np.zeros(6) for o in oid.tolist()}  # own m, m T, sf; inclusive m, m T, sf
    for i, o in zip(at.tolist(), owner.tolist()):
        row = np.array([m[i], m[i] * t[i], m[i] * sf[i]])
        sums[o][:3] += row
        while o > 0:
            sums[o][3:] += row
            o = parent_of[o]
    s = np.array([sums[o] for o in oid.tolist()])
    mean = lambda mt, mm: np.where(mm > 0, mt / np.where(mm > 0, mm, 1), 0.0)  # noqa: E731
    return {"gas_temperature": mean(s[:, 1], s[:, 0]), "gas_temperature_inclusive": mean(s[:, 4], s[:, 3]),
            "star_forming_gas_mass": s[:, 2], "star_forming_gas_mass_inclusive": s[:, 5]}


def with_star_formation(snapshot, copy):
    """A copy of the snapshot whose gas has an ElectronAbundance and a StarFormationRate."""
    rng = np.random.default_rng(3)
    with h5py.File(snapshot, "r") as s, h5py.File(copy, "w") as c:
        for key in s:
            s.copy(key, c)
        g = c["PartType0"]
        n = len(g["ParticleIDs"])
        g["ElectronAbundance"] = rng.uniform(0.0, 1.16, n).astype(np.float32)
        g["StarFormationRate"] = np.where(rng.uniform(size=n) < 0.3, rng.uniform(0.01, 1, n), 0).astype(np.float32)


def check_gas(bound, snapshot, failures, star_forming):
    want = gas_reference(bound, snapshot)
    with h5py.File(bound, "r") as f:
        o = f["objects"]
        if ("star_forming_gas_mass" in o) != star_forming:
            failures.append(f"{bound}: star_forming_gas_mass {'missing' if star_forming else 'written without a rate'}")
        for k, v in want.items():
            if k.startswith("star_forming") and not star_forming:
                continue
            got = o[k][...]
            if not np.allclose(got, v, rtol=1e-9, atol=0):
                failures.append(f"{k}: bound.h5 differs from numpy's (worst {np.max(np.abs(got - v) / np.maximum(v, 1e-300)):.3g})")
        hot = o["gas_temperature"][...]
        print(f"{os.path.basename(bound)}: gas temperature of the {np.count_nonzero(hot)} objects with bound gas, median "
              f"{np.median(hot[hot > 0]):.3g} K" + (f"; star-forming gas mass, total {o['star_forming_gas_mass'][...].sum():.4g}"
                                                  if star_forming else ""))


def check_yt(yt_file, bound, failures):
    """yt loads the catalogue: each type's mass (g) and the gas temperature (K) as bound.h5's."""
    import yt
    yt.set_log_level(40)
    ad = yt.load(yt_file).all_data()
    with h5py.File(bound, "r") as f, h5py.File(yt_file, "r") as y:
        o = f["objects"]
        keep = np.isin(o["id"][...], y["particle_identifier"][...])
        grams = y["particle_mass"][...] / o["mass"][...][keep]  # the catalogue's mass unit in g
        for c, name in enumerate(str(n) for n in o.attrs["types"]):
            got = ad["halos", f"mass_{name}"].to("g").value
            if not np.allclose(got, o["mass_type"][...][keep, c] * grams, rtol=1e-12, atol=0):
                failures.append(f"yt's mass_{name} differs from bound.h5's")
        got = ad["halos", "gas_temperature"].to("K").value
        if not np.allclose(got, o["gas_temperature"][...][keep], rtol=1e-12, atol=0):
            failures.append("yt's gas_temperature differs from bound.h5's")
    print(f"yt: {len(got)} haloes with mass_gas, mass_dark_matter and gas_temperature in K")


def chain(tool, snapshot, d):
    grid, patches, clumps = (os.path.join(d, n) for n in ("grid.h5", "patches.h5", "clumps.h5"))
    run([tool("cic-project"), snapshot, "-o", grid, "--grid", "auto", "--types", "all"])
    run([tool("phew-segment"), grid, "-o", patches, "--threshold", "80mean"])
    run([tool("phew-merge"), patches, "-o", clumps, "--relevance", "3", "--saddle-threshold", "200mean"])
    return clumps


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("PHEW_BIN"))
    ap.add_argument("--data", default=os.environ.get("PHEW_SHARED_DATA"))
    args = ap.parse_args()
    snapshot = os.path.join(args.data, SNAPSHOT)
    tool = lambda name: os.path.join(args.bin, name)  # noqa: E731
    failures = []
    with tempfile.TemporaryDirectory() as d:
        clumps = chain(tool, snapshot, d)
        bound, bound2 = os.path.join(d, "bound.h5"), os.path.join(d, "bound2.h5")
        yt_file = os.path.join(d, "halos.0.h5")
        run([tool("unbind"), clumps, snapshot, "-o", bound, "--threads", "1", "--export-yt", yt_file])
        run([tool("unbind"), clumps, snapshot, "-o", bound2, "--threads", "2"], ranks=2)
        with h5py.File(bound, "r") as f, h5py.File(bound2, "r") as g:
            obj = f["objects"]
            types = list(obj.attrs["type_codes"])
            names = [str(n) for n in obj.attrs["types"]]
            apertures = list(obj.attrs["apertures_kpc"])
            got = {k: obj[k][...] for k in COLUMNS}
            total, total_inclusive = obj["mass"][...], obj["mass_inclusive"][...]
            for k in COLUMNS + ["gas_temperature", "gas_temperature_inclusive"]:
                if not np.array_equal(obj[k][...], g["objects"][k][...]):
                    failures.append(f"{k} differs between 1 rank and 2 ranks x 2 threads")
        print(f"{len(total)} objects, types {names} (codes {types}), apertures {apertures} kpc")
        if types != [0, 1] or names != ["gas", "dark_matter"]:
            failures.append(f"types {types} named {names}, expected [0, 1] named ['gas', 'dark_matter']")
        if not np.allclose(got["mass_type"].sum(axis=1), total, rtol=1e-12, atol=0):
            failures.append("the per-type masses do not add up to /objects/mass")
        if not np.allclose(got["mass_inclusive_type"].sum(axis=1), total_inclusive, rtol=1e-12, atol=0):
            failures.append("the inclusive per-type masses do not add up to /objects/mass_inclusive")
        want = reference(bound, snapshot_particles(snapshot), types, apertures)
        for k, v in want.items():
            tolerance = 0 if k == "n_bound_type" else 1e-9
            if got[k].shape != v.shape or not np.allclose(got[k], v, rtol=tolerance, atol=0):
                worst = np.max(np.abs(got[k] - v) / np.maximum(np.abs(v), 1e-300)) if got[k].shape == v.shape else "-"
                failures.append(f"{k}: bound.h5 {got[k].shape} differs from numpy's {v.shape} (worst {worst})")
        gas = got["mass_type"][:, 0].sum() / got["mass_type"].sum()
        both = (got["half_mass_radius_type"] > 0).all(axis=1)
        ratio = got["half_mass_radius_type"][both, 0] / got["half_mass_radius_type"][both, 1]
        print(f"bound gas fraction {gas:.3f}; gas half-mass radius / dark matter's, median {np.median(ratio):.2f}")
        check_gas(bound, snapshot, failures, star_forming=False)
        check_yt(yt_file, bound, failures)
        # A copy with electrons and star formation: its own chain (the copy is another snapshot).
        sf_dir = os.path.join(d, "sf")
        os.makedirs(sf_dir)
        copy = os.path.join(sf_dir, "snapshot_sf.hdf5")
        with_star_formation(snapshot, copy)
        sf_clumps, sf_bound, sf_bound3 = chain(tool, copy, sf_dir), os.path.join(sf_dir, "bound.h5"), os.path.join(sf_dir, "bound3.h5")
        run([tool("unbind"), sf_clumps, copy, "-o", sf_bound])
        run([tool("unbind"), sf_clumps, copy, "-o", sf_bound3], ranks=3)
        check_gas(sf_bound, copy, failures, star_forming=True)
        with h5py.File(sf_bound, "r") as f, h5py.File(sf_bound3, "r") as g:
            for k in ("gas_temperature", "gas_temperature_inclusive", "star_forming_gas_mass",
                      "star_forming_gas_mass_inclusive"):
                if not np.array_equal(f["objects"][k][...], g["objects"][k][...]):
                    failures.append(f"{k} differs between 1 and 3 ranks")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
