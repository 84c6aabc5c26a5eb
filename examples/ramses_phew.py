#!/usr/bin/python3
"""RAMSES' in-code PHEW catalogues, and how a phew run compares with them (Debian's python3, numpy, h5py).

A RAMSES output written with clumpfind=.true. holds, one file per RAMSES rank (all joined here):
  clump_N.txtR      index halo lev parent ncell peak_x peak_y peak_z rho- rho+ rho_av mass_cl relevance
  halo_N.txtR       index ncell peak_x peak_y peak_z rho+ mass
  unbinding_N.outR  one Fortran record: the clump of each particle after unbinding (0 = none), in the
                    order of part_N.outR
Positions are in box units, masses in code units, densities in units of the mean matter density (for
dark-matter-only runs).

  ramses_phew.py compare CLUMPS.h5 OUTPUT_FOLDER [--radius R] [--min-particles N] [--png P] [--json J]
                 [--floor-haloes F] [--floor-clumps F]

matches phew's haloes and level-0 clumps (phew-merge's CLUMPS.h5, made with --particles from the same
output) with PHEW's: two peaks match when each is the other's nearest (periodic distance) and they are
closer than R (Mpc/h, default 0.3). It prints and writes the matched fractions of the objects with at
least N particles (default 50 and 100) on each side, the mass ratios phew / PHEW and the position
offsets of the matches, and draws a picture. With --floor-*, it exits 1 when the fraction of PHEW's
haloes (clumps) above the first particle cut that phew matches is below the floor.
"""
import argparse
import glob
import json
import os
import re
import sys

import h5py
import numpy as np

MPC_CM, MSUN_G = 3.0856776e24, 1.9891e33  # RAMSES' constants


# ---- RAMSES files ----------------------------------------------------------------------------------

def output_number(folder):
    infos = [f for f in glob.glob(os.path.join(folder, "info_*.txt")) if re.search(r"info_\d+\.txt$", f)]
    if len(infos) != 1:
        raise SystemExit(f"ramses_phew.py: error: {folder}: {len(infos)} info_NNNNN.txt files, one expected")
    return re.search(r"info_(\d+)\.txt$", infos[0]).group(1)


def read_info(folder):
    """info_N.txt as a dict of numbers (strings where not a number)."""
    n = output_number(folder)
    info = {}
    for line in open(os.path.join(folder, f"info_{n}.txt")):
        if "=" not in line:
            continue
        k, v = (s.strip() for s in line.split("=", 1))
        try:
            info[k] = float(v.replace("D", "E"))
        except ValueError:
            info[k] = v
    info["number"] = n
    return info


def rank_files(folder, stem):
    """stem00001, stem00002, ... for every RAMSES rank (ncpu of the info file), all required."""
    ncpu = int(read_info(folder)["ncpu"])
    files = [os.path.join(folder, f"{stem}{r:05d}") for r in range(1, ncpu + 1)]
    missing = [f for f in files if not os.path.exists(f)]
    if missing:
        raise SystemExit(f"ramses_phew.py: error: {missing[0]} is missing (ncpu = {ncpu})")
    return files


def fortran_records(path):
    """The records of a little- or big-endian Fortran sequential file, as bytes."""
    data = open(path, "rb").read()
    n = int.from_bytes(data[:4], "little")
    little = 8 + n <= len(data) and int.from_bytes(data[4 + n:8 + n], "little") == n
    endian, order = ("<", "little") if little else (">", "big")
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], order)
        if pos + 8 + n > len(data) or int.from_bytes(data[pos + 4 + n:pos + 8 + n], order) != n:
            raise SystemExit(f"ramses_phew.py: error: {path}: bad record at byte {pos}")
        out.append(data[pos + 4:pos + 4 + n])
        pos += 8 + n
    return out, endian


DTYPES = {"d": "f8", "f": "f4", "q": "i8", "i": "i4", "h": "i2", "b": "i1", "Q": "u8", "I": "u4", "H": "u2", "B": "u1",
          "?": "i4"}


def read_particles(folder, names=("identity", "mass")):
    """Fields of part_N.outR named by part_file_descriptor.txt, joined over the rank files."""
    fields = []
    for line in open(os.path.join(folder, "part_file_descriptor.txt")):
        m = re.match(r"\s*(\d+)\s*,\s*(\w+)\s*,\s*(\S+)", line)
        if m:
            fields.append((m.group(2), m.group(3)))
    n = output_number(folder)
    cols = {k: [] for k in names}
    for path in rank_files(folder, f"part_{n}.out"):
        recs, endian = fortran_records(path)
        for (name, t), rec in zip(fields, recs[8:]):
            if name in cols:
                cols[name].append(np.frombuffer(rec, dtype=endian + DTYPES.get(t, "f8")))
    return {k: np.concatenate(v) for k, v in cols.items()}


def read_table(folder, kind):
    """clump_N.txtR or halo_N.txtR (or mergertree_N.txtR), joined: a dict of columns."""
    n = output_number(folder)
    header, rows = None, []
    for path in rank_files(folder, f"{kind}_{n}.txt"):
        lines = [ln.split() for ln in open(path) if ln.strip()]
        if not lines:
            continue
        header = header or lines[0]
        rows += [[float(x) for x in ln] for ln in lines[1:]]
    a = np.array(rows, dtype=float).reshape(-1, len(header))
    return {h: a[:, i] for i, h in enumerate(header)}


def read_unbinding(folder):
    """The clump of every particle after unbinding, in the order of the part files."""
    n = output_number(folder)
    out = []
    for path in rank_files(folder, f"unbinding_{n}.out"):
        recs, endian = fortran_records(path)
        out.append(np.frombuffer(recs[0], dtype=endian + "i4"))
    return np.concatenate(out)


def units(info):
    """Comoving Mpc/h per box unit and Msun/h per code mass unit."""
    h = info["H0"] / 100.0
    length = info["unit_l"] / info["aexp"] / MPC_CM * h
    mass = info["unit_d"] * info["unit_l"] ** 3 / MSUN_G * h
    return length, mass


def phew_catalogue(folder):
    """PHEW's haloes and clumps in Mpc/h and particles: dict kind -> {id, position[n][3], particles, bound}."""
    info = read_info(folder)
    length, _ = units(info)
    parts = read_particles(folder, ("mass", "family"))
    m_p = parts["mass"][parts["family"] == 1].min() if len(parts["mass"]) else 1.0
    unbound = read_unbinding(folder)
    clumps, halos = read_table(folder, "clump"), read_table(folder, "halo")
    cid = clumps["index"].astype(int)
    halo_of = dict(zip(cid, clumps["halo"].astype(int)))
    bound_clump = np.bincount(unbound, minlength=int(max(cid.max(initial=0), unbound.max(initial=0))) + 1)
    bound_halo = {}
    for c, n_b in enumerate(bound_clump):
        if c and n_b:
            h = halo_of.get(c)
            if h is not None:
                bound_halo[h] = bound_halo.get(h, 0) + n_b
    box = info["boxlen"] * length
    out = {"box": box, "particle_mass_code": m_p, "aexp": info["aexp"]}
    for kind, t, mass in (("clumps", clumps, clumps["mass_cl"]), ("halos", halos, halos["mass"])):
        ids = t["index"].astype(int)
        out[kind] = {
            "id": ids,
            "position": np.stack([t["peak_x"], t["peak_y"], t["peak_z"]], axis=1) * length,
            "particles": mass / m_p,
            "bound": np.array([(bound_clump[i] if i < len(bound_clump) else 0) if kind == "clumps"
                               else bound_halo.get(i, 0) for i in ids]),
        }
    return out


# ---- the comparison --------------------------------------------------------------------------------

def phew_run(clumps_h5):
    """phew's haloes and level-0 clumps from phew-merge's file (particle counts need --particles)."""
    with h5py.File(clumps_h5) as f:
        g = f["grid"].attrs
        out = {"box": float(g["box_size"][0]), "grid": int(g["shape"][0]), "length_units": str(g["length_units"])}
        mp = float(g["particle_mass"]) if g["particle_mass"] > 0 else None
        for kind in ("clumps", "halos"):
            t = f[kind]
            n = t["n_particles"][...] if "n_particles" in t else t["mass"][...] / mp
            out[kind] = {"id": t["id"][...], "position": t["peak_position"][...], "particles": n.astype(float),
                         "mass": t["mass"][...]}
    return out


def mutual_nearest(a, b, box, radius):
    """Pairs (i, j): a[i] and b[j] are each other's nearest (periodic) and closer than radius."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((0, 2), dtype=int), np.zeros(0)
    d = a[:, None, :] - b[None, :, :]
    d -= box * np.round(d / box)
    r = np.sqrt((d ** 2).sum(axis=2))
    ab, ba = r.argmin(axis=1), r.argmin(axis=0)
    pairs = [(i, j) for i, j in enumerate(ab) if ba[j] == i and r[i, j] <= radius]
    pairs = np.array(pairs, dtype=int).reshape(-1, 2)
    return pairs, r[pairs[:, 0], pairs[:, 1]] if len(pairs) else np.zeros(0)


def compare(clumps_h5, folder, radius=0.3, cuts=(50, 100)):
    ours, theirs = phew_run(clumps_h5), phew_catalogue(folder)
    box = ours["box"]
    if abs(box - theirs["box"]) > 1e-6 * box:
        raise SystemExit(f"ramses_phew.py: error: {clumps_h5}: box {box} is not the output's {theirs['box']}")
    result = {"clumps_h5": os.path.abspath(clumps_h5), "output": os.path.abspath(folder), "grid": ours["grid"],
              "cell_size": box / ours["grid"], "radius": radius, "box": box, "aexp": theirs["aexp"], "kinds": {}}
    for kind in ("halos", "clumps"):
        o, t = ours[kind], theirs[kind]
        pairs, dist = mutual_nearest(t["position"], o["position"], box, radius)
        match_of_theirs = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
        matched_ours = set(pairs[:, 1].tolist())
        k = {"n_phew_ramses": len(t["id"]), "n_phew": len(o["id"]), "cuts": {}, "pairs": []}
        for (i, j), r in zip(pairs.tolist(), dist.tolist()):
            k["pairs"].append({"ramses_id": int(t["id"][i]), "phew_id": int(o["id"][j]), "offset": r,
                               "ramses_particles": float(t["particles"][i]), "ramses_bound": int(t["bound"][i]),
                               "phew_particles": float(o["particles"][j])})
        for cut in cuts:
            sel_t = np.flatnonzero(t["particles"] >= cut)
            sel_o = np.flatnonzero(o["particles"] >= cut)
            got = [i for i in sel_t if i in match_of_theirs]
            ratio = np.array([o["particles"][match_of_theirs[i]] / t["particles"][i] for i in got])
            offs = np.array([dist[list(pairs[:, 0]).index(i)] for i in got])
            k["cuts"][str(cut)] = {
                "ramses": len(sel_t), "phew": len(sel_o),
                "ramses_matched": len(got), "phew_matched": int(sum(1 for j in sel_o if j in matched_ours)),
                "completeness": len(got) / len(sel_t) if len(sel_t) else float("nan"),
                "purity": sum(1 for j in sel_o if j in matched_ours) / len(sel_o) if len(sel_o) else float("nan"),
                "mass_ratio_median": float(np.median(ratio)) if len(ratio) else float("nan"),
                "mass_ratio_16_84": [float(np.percentile(ratio, 16)), float(np.percentile(ratio, 84))] if len(ratio) else [],
                "offset_median": float(np.median(offs)) if len(offs) else float("nan"),
                "offset_max": float(offs.max()) if len(offs) else float("nan"),
            }
        result["kinds"][kind] = k
    return result, ours, theirs


def report(result):
    lines = [f"phew ({result['grid']}^3 cells, {result['cell_size']:.3f} Mpc/h) vs RAMSES' PHEW, a = {result['aexp']:.4f}; "
             f"mutual nearest peaks within {result['radius']} Mpc/h"]
    lines.append(f"{'':8} {'cut':>5} {'PHEW':>5} {'phew':>5} {'PHEW matched':>13} {'phew matched':>13} "
                 f"{'mass ratio (16-84%)':>22} {'offset median/max':>18}")
    for kind, k in result["kinds"].items():
        for cut, c in k["cuts"].items():
            q = c["mass_ratio_16_84"]
            lines.append(f"{kind:8} {cut:>5} {c['ramses']:5d} {c['phew']:5d} {c['ramses_matched']:6d} ({c['completeness']:4.0%}) "
                         f"{c['phew_matched']:6d} ({c['purity']:4.0%}) {c['mass_ratio_median']:7.2f} "
                         f"({q[0] if q else float('nan'):.2f}-{q[1] if q else float('nan'):.2f})"
                         f" {c['offset_median']:8.3f}/{c['offset_max']:.3f}")
    return "\n".join(lines)


def picture(result, ours, theirs, out, grid_h5=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cut = min(int(c) for c in result["kinds"]["halos"]["cuts"])
    box = result["box"]
    fig, ax = plt.subplots(1, 3, figsize=(16, 5.2), constrained_layout=True)
    # 1. projected density with both haloes' peaks
    if grid_h5:
        with h5py.File(grid_h5) as g:
            proj = g["grid/density"][...].sum(axis=0)
        ax[0].imshow(np.log10(np.maximum(proj / proj.mean(), 1e-2)).T, origin="lower", extent=[0, box, 0, box],
                     cmap="Greys")
    t, o = theirs["halos"], ours["halos"]
    big_t, big_o = t["particles"] >= cut, o["particles"] >= cut
    ax[0].scatter(t["position"][big_t, 1], t["position"][big_t, 2], s=60, facecolors="none", edgecolors="C3",
                  label=f"RAMSES PHEW haloes >= {cut} part.")
    ax[0].scatter(o["position"][big_o, 1], o["position"][big_o, 2], s=20, marker="x", color="C0",
                  label=f"phew haloes >= {cut} part.")
    ax[0].set(xlim=(0, box), ylim=(0, box), xlabel="y [Mpc/h]", ylabel="z [Mpc/h]",
              title="halo peaks, projected along x")
    ax[0].legend(fontsize=8, loc="upper right")
    # 2. particle counts of matched pairs
    for kind, colour, size, marker in (("clumps", "C0", 30, "o"), ("halos", "C3", 14, "s")):
        p = result["kinds"][kind]["pairs"]
        x = np.array([q["ramses_particles"] for q in p])
        y = np.array([q["phew_particles"] for q in p])
        ax[1].scatter(x, y, s=size, marker=marker, color=colour, label=f"{kind} ({len(p)} matched)")
    lim = [5, 3e3]
    ax[1].plot(lim, lim, color="0.5", lw=0.8)
    ax[1].axvline(cut, color="0.7", ls=":")
    ax[1].set(xscale="log", yscale="log", xlim=lim, ylim=lim, xlabel="RAMSES PHEW: mass / particle mass",
              ylabel="phew: particles in the cells", title="masses of matched peaks")
    ax[1].legend(fontsize=8)
    # 3. offsets
    for kind, colour in (("halos", "C3"), ("clumps", "C0")):
        d = [q["offset"] for q in result["kinds"][kind]["pairs"] if q["ramses_particles"] >= cut]
        ax[2].hist(d, bins=np.linspace(0, result["radius"], 16), histtype="step", color=colour, lw=1.5,
                   label=f"{kind} >= {cut} part.")
    ax[2].axvline(result["cell_size"], color="0.5", ls="--", label="one phew cell")
    ax[2].set(xlabel="peak offset [Mpc/h]", ylabel="matched pairs", title="phew peak - PHEW peak")
    ax[2].legend(fontsize=8)
    h = result["kinds"]["halos"]["cuts"][str(cut)]
    fig.suptitle(f"phew on {result['grid']}^3 cells vs RAMSES' in-code PHEW (AMR levels 5-10), a = {result['aexp']:.3f}: "
                 f"{h['ramses_matched']}/{h['ramses']} PHEW haloes >= {cut} particles matched")
    fig.savefig(out, dpi=80)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("clumps"), c.add_argument("output")
    c.add_argument("--radius", type=float, default=0.3, help="match radius in Mpc/h (default 0.3)")
    c.add_argument("--min-particles", default="50,100", help="particle cuts (default 50,100)")
    c.add_argument("--grid", help="grid.h5 for the picture's background")
    c.add_argument("--png"), c.add_argument("--json")
    c.add_argument("--floor-haloes", type=float), c.add_argument("--floor-clumps", type=float)
    a = ap.parse_args(argv)
    cuts = [int(x) for x in a.min_particles.split(",")]
    result, ours, theirs = compare(a.clumps, a.output, a.radius, cuts)
    print(report(result))
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)
    if a.png:
        picture(result, ours, theirs, a.png, a.grid)
    bad = []
    for kind, floor in (("halos", a.floor_haloes), ("clumps", a.floor_clumps)):
        got = result["kinds"][kind]["cuts"][str(cuts[0])]["completeness"]
        if floor is not None and not got >= floor:
            bad.append(f"{kind}: {got:.2f} of PHEW's >= {cuts[0]} particles matched, floor {floor}")
    if bad:
        print("ramses_phew.py: error: " + "; ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
