#!/usr/bin/env python3
"""Small valid Gadget binary snapshots (SnapFormat 1 and 2, little and big endian, with and without a
mass block) as seeds for the snapshot fuzzer (scripts/fuzz.sh). Written from the Gadget-2 user guide's
layout: Fortran records of a 256-byte header, then POS, VEL, ID and (when the mass table is 0) MASS.
With --pieces, two-piece snapshots instead, each as one input of the fuzzer's gadget-pieces format (a
little-endian uint32 length of piece 0, piece 0, piece 1): pieces that belong together, a piece given
twice, and pieces from two times.

    make_gadget_seeds.py DIR [--pieces]
"""
import struct
import sys
from pathlib import Path

import numpy as np


def record(payload, e):
    n = struct.pack(e + "i", len(payload))
    return n + payload + n


def snapshot(n, fmt, e, masses, total=None, files=1, first_id=1, time=1.0):
    """One file: n particles of type 1; `total` particles and `files` files in the whole snapshot."""
    rng = np.random.default_rng(n + first_id - 1)
    npart = [0, n, 0, 0, 0, 0]
    ntotal = [0, n if total is None else total, 0, 0, 0, 0]
    mass = [0.0, 0.0 if masses else 1.0, 0, 0, 0, 0]
    head = struct.pack(e + "6i6dddii6Iiiddddii", *npart, *mass, time, 1 / time - 1, 0, 0, *ntotal, 0, files, 100.0,
                       0.3, 0.7, 0.7, 0, 0)
    head += b"\0" * (256 - len(head))
    blocks = [("HEAD", head),
              ("POS ", (rng.random((n, 3)) * 100).astype(e + "f4").tobytes()),
              ("VEL ", rng.normal(0, 10, (n, 3)).astype(e + "f4").tobytes()),
              ("ID  ", np.arange(first_id, first_id + n, dtype=e + "u4").tobytes())]
    if masses:
        blocks.append(("MASS", rng.uniform(0.5, 2, n).astype(e + "f4").tobytes()))
    out = b""
    for label, payload in blocks:
        if fmt == 2:
            out += record(label.encode() + struct.pack(e + "i", len(payload) + 8), e)
        out += record(payload, e)
    return out


def pieces(first, second):
    return struct.pack("<I", len(first)) + first + second


def main():
    d = Path(sys.argv[1])
    d.mkdir(parents=True, exist_ok=True)
    if "--pieces" in sys.argv[2:]:
        for fmt in (1, 2):
            for e, name in (("<", "le"), (">", "be")):
                for masses in (False, True):
                    a = snapshot(3, fmt, e, masses, total=7, files=2)
                    b = snapshot(4, fmt, e, masses, total=7, files=2, first_id=4)
                    later = snapshot(4, fmt, e, masses, total=7, files=2, first_id=4, time=0.5)
                    tag = f"f{fmt}-{name}-m{int(masses)}"
                    (d / f"seed-pieces-{tag}").write_bytes(pieces(a, b))
                    (d / f"seed-twice-{tag}").write_bytes(pieces(a, a))
                    (d / f"seed-twotimes-{tag}").write_bytes(pieces(a, later))
        return
    for fmt in (1, 2):
        for e, name in (("<", "le"), (">", "be")):
            for masses in (False, True):
                for n in (1, 7):
                    (d / f"seed-f{fmt}-{name}-m{int(masses)}-n{n}").write_bytes(snapshot(n, fmt, e, masses))


if __name__ == "__main__":
    main()
