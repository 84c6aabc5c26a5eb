#!/usr/bin/python3
"""Write the dark matter of a Gadget-style HDF5 snapshot as a RAMSES output (a test fixture).

  make_ramses.py SNAPSHOT.hdf5 OUTDIR [--ncpu K] [--number N] [--template RAMSES_OUTPUT] [--id-type i|q]

writes OUTDIR/output_NNNNN/ (N default 1) the way RAMSES 2017+ does: info_NNNNN.txt, header_NNNNN.txt,
part_file_descriptor.txt and part_NNNNN.out00001 .. outK (Fortran unformatted, little-endian; fields
position_x/y/z, velocity_x/y/z, mass (d), identity (i or q), levelp (i), family, tag (b)). The particles
of PartType1 (family 1, dark matter) and of PartType4 when the snapshot has them (family 2, stars), in
that order, are split over the K files in contiguous row ranges (RAMSES splits by Hilbert domains; the
readers must not care), the header's family table counting both.

Units. Without --template the output is a cosmological run of its own: boxlen = 1, aexp = the snapshot's
Time, H0 = 100 HubbleParam, and unit_l, unit_d, unit_t as RAMSES computes them (unit_l = aexp L/h Mpc,
unit_d = Omega_m rhoc h^2 / aexp^3 with rhoc = 1.88e-29, unit_t = aexp^2 / (h 1e5 / Mpc)), so that phew
reads back the snapshot's comoving positions (in Mpc/h), masses (Msun/h) and velocities. The snapshot's
lengths are in UnitLength_in_cm/h (Gadget's default kpc/h), masses in UnitMass_in_g/h, velocities are
Gadget's u = v/sqrt(a) in km/s.

With --template, the template output's info, amr and namelist files are copied (ncpu is the
template's) and the particles are placed in its box at the same fractional positions, with total mass
1 in code units (a dark-matter-only box at the mean density). yt needs the amr files to open an output,
so the benchmark uses this to make a large output yt can read.
"""
import argparse
import os
import re
import shutil

import h5py
import numpy as np

MPC_CM, MSUN_G, RHOC = 3.0856776e24, 1.9891e33, 1.88e-29  # RAMSES' constants


def record(f, array):
    a = np.ascontiguousarray(array)
    n = np.array([a.nbytes], dtype="<i4")
    f.write(n.tobytes())
    f.write(a.tobytes())
    f.write(n.tobytes())


def info_text(ncpu, aexp, h0, om, ol, unit_l, unit_d, unit_t):
    e = lambda v: f"{v: .15E}"  # noqa: E731
    return (f"ncpu        ={ncpu:11d}\nndim        ={3:11d}\nlevelmin    ={5:11d}\nlevelmax    ={10:11d}\n"
            f"ngridmax    ={100000:11d}\nnstep_coarse={1:11d}\n\nboxlen      ={e(1.0)}\ntime        ={e(0.0)}\n"
            f"aexp        ={e(aexp)}\nH0          ={e(h0)}\nomega_m     ={e(om)}\nomega_l     ={e(ol)}\n"
            f"omega_k     ={e(1 - om - ol)}\nomega_b     ={e(0.0)}\nunit_l      ={e(unit_l)}\n"
            f"unit_d      ={e(unit_d)}\nunit_t      ={e(unit_t)}\n\nordering type=hilbert\n")


def read_info(path):
    out = {}
    for line in open(path):
        if "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshot"), ap.add_argument("outdir")
    ap.add_argument("--ncpu", type=int, default=2)
    ap.add_argument("--number", type=int, default=1)
    ap.add_argument("--template")
    ap.add_argument("--id-type", choices=("i", "q"), default="i")
    a = ap.parse_args()
    num = f"{a.number:05d}"
    out = os.path.join(a.outdir, f"output_{num}")
    os.makedirs(out, exist_ok=True)

    with h5py.File(a.snapshot) as s:
        hd = s["Header"].attrs
        box = float(np.atleast_1d(hd["BoxSize"])[0])
        a_in, h = float(hd["Time"]), float(hd.get("HubbleParam", 0.7))
        om, ol = float(hd.get("Omega0", 0.3)), float(hd.get("OmegaLambda", 0.7))
        len_cm = float(hd.get("UnitLength_in_cm", 3.085678e21))
        mass_g = float(hd.get("UnitMass_in_g", 1.989e43))
        # Dark matter (family 1), then stars (family 2): every column of both, in that order.
        groups = [(t, s[f"PartType{t}"]) for t in (1, 4) if f"PartType{t}" in s]
        n = sum(g["Coordinates"].shape[0] for _, g in groups)

        def column(name, t, g):
            if name == "Masses":
                return (g["Masses"][...].astype(np.float64) if "Masses" in g
                        else np.full(g["Coordinates"].shape[0], float(hd["MassTable"][t])))
            if name == "Velocities" and "Velocities" not in g:
                return np.zeros((g["Coordinates"].shape[0], 3))
            return g[name][...]
        cols = {name: np.concatenate([column(name, t, g) for t, g in groups])
                for name in ("Coordinates", "Velocities", "Masses", "ParticleIDs")}
        family = np.concatenate([np.full(g["Coordinates"].shape[0], 1 if t == 1 else 2, dtype="i1") for t, g in groups])
        total_mass = float(cols["Masses"].sum())

        if a.template:
            src = a.template.rstrip("/")
            tnum = re.search(r"info_(\d+)\.txt", " ".join(os.listdir(src))).group(1)
            info = read_info(os.path.join(src, f"info_{tnum}.txt"))
            ncpu = int(info["ncpu"])
            for name in os.listdir(src):
                if name.startswith(("info_", "amr_")) or name == "namelist.txt":
                    shutil.copyfile(os.path.join(src, name), os.path.join(out, name.replace(tnum, num)))
            unit_l, unit_t, aexp = info["unit_l"], info["unit_t"], info["aexp"]
            mass_code = lambda m: m / total_mass  # noqa: E731
        else:
            ncpu, aexp = a.ncpu, a_in
            unit_l = aexp * box * len_cm / h  # the box in physical cm: boxlen = 1
            unit_d = om * RHOC * h * h / aexp ** 3
            unit_t = aexp ** 2 / (h * 1e5 / MPC_CM)
            with open(os.path.join(out, f"info_{num}.txt"), "w") as f:
                f.write(info_text(ncpu, aexp, 100 * h, om, ol, unit_l, unit_d, unit_t))
            mass_code = lambda m: m * mass_g / h / (unit_d * unit_l ** 3)  # noqa: E731
        v_code = 1e5 / (unit_l / unit_t)  # km/s -> code velocity

        fields = [("position_x", "d"), ("position_y", "d"), ("position_z", "d"), ("velocity_x", "d"),
                  ("velocity_y", "d"), ("velocity_z", "d"), ("mass", "d"), ("identity", a.id_type), ("levelp", "i"),
                  ("family", "b"), ("tag", "b")]
        with open(os.path.join(out, "part_file_descriptor.txt"), "w") as f:
            f.write("# version:  1\n# ivar, variable_name, variable_type\n")
            for i, (name, t) in enumerate(fields):
                f.write(f"{i + 1:2d}, {name}, {t}\n")
        names = ["other_tracer", "debris_tracer", "cloud_tracer", "star_tracer", "other_tracer", "gas_tracer", "DM",
                 "star", "cloud", "debris", "other", "undefined"]
        with open(os.path.join(out, f"header_{num}.txt"), "w") as f:
            f.write("#      Family     Count\n")
            counts = {"DM": int(np.count_nonzero(family == 1)), "star": int(np.count_nonzero(family == 2))}
            for name in names:
                f.write(f"{name:>13}{counts.get(name, 0):10d}\n")
            f.write("Particle fields\npos vel mass iord level family tag \n")

        for r in range(ncpu):
            lo, hi = n * r // ncpu, n * (r + 1) // ncpu
            x = cols["Coordinates"][lo:hi].astype(np.float64) / box
            x -= np.floor(x)
            u = cols["Velocities"][lo:hi].astype(np.float64)
            m = cols["Masses"][lo:hi]
            ids = cols["ParticleIDs"][lo:hi]
            with open(os.path.join(out, f"part_{num}.out{r + 1:05d}"), "wb") as f:
                for v, t in ((ncpu, "<i4"), (3, "<i4"), (hi - lo, "<i4")):
                    record(f, np.array([v], dtype=t))
                record(f, np.arange(1, 5, dtype="<i4"))  # localseed
                record(f, np.array([np.count_nonzero(family == 2)], dtype="<i4"))  # nstar_tot
                record(f, np.zeros(2, dtype="<f8")[:1])   # mstar_tot
                record(f, np.zeros(1, dtype="<f8"))       # mstar_lost
                record(f, np.array([0], dtype="<i4"))     # nsink
                for d in range(3):
                    record(f, x[:, d].astype("<f8"))
                for d in range(3):
                    record(f, (u[:, d] * np.sqrt(a_in) * v_code).astype("<f8"))
                record(f, mass_code(m).astype("<f8"))
                record(f, ids.astype("<i4" if a.id_type == "i" else "<i8"))
                record(f, np.full(hi - lo, 7, dtype="<i4"))
                record(f, family[lo:hi])
                record(f, np.zeros(hi - lo, dtype="i1"))
    print(out)


if __name__ == "__main__":
    main()
