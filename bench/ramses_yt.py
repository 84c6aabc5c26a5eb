#!/usr/bin/python3
"""yt's RAMSES frontend reading the particles phew's cic-project reads (positions and masses) from a
RAMSES output; times the load (info, amr index) and the field reads separately. Part of
bench/ramses_bench.sh.

  ramses_yt.py INFO_FILE [--json OUT.json]
"""
import argparse
import json
import time

import yt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("info"), ap.add_argument("--json")
    a = ap.parse_args()
    yt.set_log_level(40)
    t0 = time.perf_counter()
    ds = yt.load(a.info)
    ad = ds.all_data()
    ds.index  # the amr files: yt reads particles through the domains of the AMR index
    t1 = time.perf_counter()
    fields = [("io", f"particle_position_{c}") for c in "xyz"] + [("io", "particle_mass")]
    ad.get_data(fields)
    n = len(ad["io", "particle_mass"])
    t2 = time.perf_counter()
    pos = ad["io", "particle_position_x"].to("Mpccm/h")
    result = {"particles": int(n), "open_s": t1 - t0, "read_s": t2 - t1, "yt": yt.__version__,
              "x0_mpccm_h": float(pos[0])}
    print(json.dumps(result))
    if a.json:
        json.dump(result, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
