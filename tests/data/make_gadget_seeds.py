#!/usr/bin/env python3
"""Small valid Gadget binary snapshots (SnapFormat 1 and 2, little and big endian, with and without a
mass block) as seeds for the snapshot fuzzer (scripts/fuzz.sh). Written from the Gadget-2 user guide's
layout: Fortran records of a 256-byte header, then POS, VEL, ID and (when the mass table is 0) MASS.

    make_gadget_seeds.py DIR
"""
import struct
import sys
from pathlib import Path

import numpy as np


def record(payload, e):
    n = struct.pack(e + "i", len(payload))
    return n + payload + n


def snapshot(n, fmt, e, masses):
    rng = np.random.default_rng(n)
    npart = [0, n, 0, 0, 0, 0]
    mass = [0.0, 0.0 if masses else 1.0, 0, 0, 0, 0]
    head = struct.pack(e + "6i6dddii6Iiiddddii", *npart, *mass, 1.0, 0.0, 0, 0, *npart, 0, 1, 100.0, 0.3, 0.7,
                       0.7, 0, 0)
    head += b"\0" * (256 - len(head))
    blocks = [("HEAD", head),
              ("POS ", (rng.random((n, 3)) * 100).astype(e + "f4").tobytes()),
              ("VEL ", rng.normal(0, 10, (n, 3)).astype(e + "f4").tobytes()),
              ("ID  ", np.arange(1, n + 1, dtype=e + "u4").tobytes())]
    if masses:
        blocks.append(("MASS", rng.uniform(0.5, 2, n).astype(e + "f4").tobytes()))
    out = b""
    for label, payload in blocks:
        if fmt == 2:
            out += record(label.encode() + struct.pack(e + "i", len(payload) + 8), e)
        out += record(payload, e)
    return out


def main():
    d = Path(sys.argv[1])
    d.mkdir(parents=True, exist_ok=True)
    for fmt in (1, 2):
        for e, name in (("<", "le"), (">", "be")):
            for masses in (False, True):
                for n in (1, 7):
                    (d / f"seed-f{fmt}-{name}-m{int(masses)}-n{n}").write_bytes(snapshot(n, fmt, e, masses))


if __name__ == "__main__":
    main()
