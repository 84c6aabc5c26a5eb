#!/usr/bin/python3
"""phew's unbinding against RAMSES' own (pm/unbinding.f90) on the shared RAMSES run, particle by particle.

    ramses_unbind.py BOUND_H5 CLUMPS_H5 REFERENCE_H5 [--min-particles 50] [--json FILE]
                     [--floor-matched F] [--floor-overlap O] [--floor-ratio LO,HI]

BOUND_H5 is unbind's bound.h5 of CLUMPS_H5 (phew-merge's clumps.h5 of one output); REFERENCE_H5 the
output's `reference/clumps_00N.h5` of ../shared/data/ramses-cosmo-L20-N32, whose /particles table gives
each particle's clump after RAMSES' unbinding (0: none), by particle ID.

Clumps are paired by tests/science/ramses_match.py's rule (most massive RAMSES clump first, the most
massive phew clump not yet taken whose peak lies within the RAMSES clump's r200m). For every pair whose
RAMSES clump keeps at least --min-particles bound particles, the two bound sets (the particles each code
leaves bound to that clump itself, not to its sub-clumps: RAMSES' exclusive membership, phew's
/particles/object) give the overlap |A and B| / |A or B| and the bound mass ratio phew / RAMSES (equal
particle masses: counts). Printed: pairs, median overlap and median ratio with quartiles. The floors
make it a test (exit 1 below them); exit 3 on unreadable input.
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ramses_match  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bound"), ap.add_argument("clumps"), ap.add_argument("reference")
    ap.add_argument("--min-particles", type=int, default=50, help="RAMSES clumps keeping at least this many bound particles")
    ap.add_argument("--json")
    ap.add_argument("--floor-matched", type=float, help="exit 1 if fewer of those clumps are paired")
    ap.add_argument("--floor-overlap", type=float, help="exit 1 if the median overlap is below")
    ap.add_argument("--floor-ratio", help="LO,HI: exit 1 if the median bound mass ratio is outside")
    a = ap.parse_args()
    try:
        ref = ramses_match.read_reference(a.reference)
        phew = ramses_match.read_phew(a.clumps, ref["box"])
        with h5py.File(a.reference, "r") as f:
            ref_id, ref_clump = f["particles/ParticleIDs"][...], f["particles/clump_id"][...]
        with h5py.File(a.bound, "r") as f:
            phew_id, phew_object = f["particles/id"][...], f["particles/object"][...]
    except (OSError, KeyError, ValueError) as e:
        print(f"ramses_unbind.py: error: {e}", file=sys.stderr)
        return 3
    # Clumps paired by their cell masses (ramses_match's rule), every clump that can keep the cut.
    pairs = ramses_match.match(ref["clumps"], phew["clumps"], ref["box"], ref["mean_density_particles"], 0.0, 1.0)
    rows = []
    for r, p, _ in pairs:
        rid = int(ref["clumps"]["id"][r])
        a_set = ref_id[ref_clump == rid]
        if len(a_set) < a.min_particles:
            continue
        if p < 0:
            rows.append({"ramses": rid, "phew": None, "ramses_bound": len(a_set), "phew_bound": 0, "overlap": 0.0})
            continue
        pid = int(phew["clumps"]["id"][p])
        b_set = phew_id[phew_object == pid]
        both = len(np.intersect1d(a_set, b_set))
        either = len(np.union1d(a_set, b_set))
        rows.append({"ramses": rid, "phew": pid, "ramses_bound": len(a_set), "phew_bound": len(b_set),
                     "overlap": both / either if either else 0.0})
    paired = [r for r in rows if r["phew"] is not None]
    overlap = np.array([r["overlap"] for r in paired])
    ratio = np.array([r["phew_bound"] / r["ramses_bound"] for r in paired])
    q = lambda v: np.percentile(v, [25, 50, 75]) if len(v) else [float("nan")] * 3  # noqa: E731
    figures = {"clumps": len(rows), "paired": len(paired), "fraction": len(paired) / len(rows) if rows else float("nan"),
               "overlap_q25_median_q75": [float(x) for x in q(overlap)],
               "ratio_q25_median_q75": [float(x) for x in q(ratio)], "rows": rows}
    print(f"RAMSES clumps keeping >= {a.min_particles} bound particles: {len(rows)}, paired with phew's: {len(paired)}")
    print(f"  bound-set overlap |A and B|/|A or B|: median {figures['overlap_q25_median_q75'][1]:.3f} "
          f"(quartiles {figures['overlap_q25_median_q75'][0]:.3f}-{figures['overlap_q25_median_q75'][2]:.3f})")
    print(f"  bound mass phew / RAMSES:             median {figures['ratio_q25_median_q75'][1]:.3f} "
          f"(quartiles {figures['ratio_q25_median_q75'][0]:.3f}-{figures['ratio_q25_median_q75'][2]:.3f})")
    if a.json:
        with open(a.json, "w") as out:
            json.dump(figures, out, indent=1)
    failed = []
    if a.floor_matched is not None and not figures["fraction"] >= a.floor_matched:
        failed.append(f"paired fraction {figures['fraction']:.3f} < floor {a.floor_matched}")
    if a.floor_overlap is not None and not figures["overlap_q25_median_q75"][1] >= a.floor_overlap:
        failed.append(f"median overlap {figures['overlap_q25_median_q75'][1]:.3f} < floor {a.floor_overlap}")
    if a.floor_ratio:
        lo, hi = (float(v) for v in a.floor_ratio.split(","))
        if not lo <= figures["ratio_q25_median_q75"][1] <= hi:
            failed.append(f"median bound mass ratio {figures['ratio_q25_median_q75'][1]:.3f} outside {lo}..{hi}")
    for f in failed:
        print(f"FAIL: {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
