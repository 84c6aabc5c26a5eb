#!/usr/bin/python3
"""Snapshots that are wrong in one way each, for tests/cli/bad-input-2.bats.

Usage: make_bad_snapshots.py OUTDIR
Multi-file snapshots whose pieces disagree or repeat (HDF5 and Gadget binary), a virtual dataset with a
missing source, headers with values no simulation writes, integer coordinates, a Gadget-4 run without
PERIODIC, a valid file behind a 512-byte user block. Every file is a few kB, the same bytes every run.
"""
import shutil
import struct
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from make_inputs import BOX, gadget  # noqa: E402


def header(path, **attrs):
    """Set (or, with None, delete) Header attributes of an existing snapshot."""
    with h5py.File(path, "r+") as f:
        for k, v in attrs.items():
            if v is None:
                del f["Header"].attrs[k]
            else:
                f["Header"].attrs[k] = v


def pieces(out, stem, pos, n0, **piece1):
    """A two-file snapshot stem.0.hdf5, stem.1.hdf5; piece1 changes Header attributes of the second."""
    total = [0, len(pos), 0, 0, 0, 0]
    ids = np.arange(1, len(pos) + 1, dtype=np.uint64)
    gadget(out / f"{stem}.0.hdf5", pos[:n0], numfiles=2, total=total, ids=ids[:n0])
    gadget(out / f"{stem}.1.hdf5", pos[n0:], numfiles=2, total=total, ids=ids[n0:])
    if piece1:
        header(out / f"{stem}.1.hdf5", **piece1)


def binary(path, pos, time=1.0, num_files=1, total=None, first_id=1):
    """A Gadget binary (SnapFormat 1) file of type-1 particles: HEAD, POS, VEL, ID."""
    n = len(pos)
    h = bytearray(256)
    struct.pack_into("<6I", h, 0, 0, n, 0, 0, 0, 0)
    struct.pack_into("<6d", h, 24, 0, 1.0, 0, 0, 0, 0)
    struct.pack_into("<2d", h, 72, time, 1 / time - 1)
    struct.pack_into("<6I", h, 96, 0, n if total is None else total, 0, 0, 0, 0)
    struct.pack_into("<i", h, 124, num_files)
    struct.pack_into("<4d", h, 128, BOX, 0.3, 0.7, 0.7)

    def record(data):
        return struct.pack("<I", len(data)) + bytes(data) + struct.pack("<I", len(data))

    body = record(h) + record(pos.astype("<f4").tobytes()) + record(np.zeros((n, 3), "<f4").tobytes())
    body += record(np.arange(first_id, first_id + n, dtype="<u4").tobytes())
    Path(path).write_bytes(body)


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(35)
    pos = rng.uniform(0, BOX, size=(2000, 3)).astype(np.float32)

    # Item 6: pieces of a multi-file snapshot that do not belong together.
    pieces(out, "good", pos, 1200)
    pieces(out, "othertime", pos, 1200, Time=0.5)
    pieces(out, "otherbox", pos, 1200, BoxSize=200.0)
    pieces(out, "othernfiles", pos, 1200, NumFilesPerSnapshot=np.int32(3))
    pieces(out, "othermass", pos, 1200, MassTable=np.array([0, 2.0, 0, 0, 0, 0]))
    pieces(out, "othercosmo", pos, 1200, HubbleParam=0.6)
    pieces(out, "dup", pos, 1000)
    shutil.copy(out / "dup.0.hdf5", out / "dup.1.hdf5")  # the same particles twice, counts still add up
    binary(out / "bin.0", pos[:1200], num_files=2, total=2000)
    binary(out / "bin.1", pos[1200:], num_files=2, total=2000, first_id=1201)
    binary(out / "bintime.0", pos[:1200], num_files=2, total=2000)
    binary(out / "bintime.1", pos[1200:], num_files=2, total=2000, first_id=1201, time=0.5)
    binary(out / "bindup.0", pos[:1000], num_files=2, total=2000)
    shutil.copy(out / "bindup.0", out / "bindup.1")

    # Item 7: a virtual dataset (SWIFT's layout) whose second source file is missing.
    gadget(out / "src.0.hdf5", pos[:1000])
    gadget(out / "src.1.hdf5", pos[1000:])
    gadget(out / "vds.hdf5", pos)
    with h5py.File(out / "vds.hdf5", "r+") as f:
        del f["PartType1/Coordinates"]
        layout = h5py.VirtualLayout(shape=(2000, 3), dtype=np.float32)
        layout[:1000] = h5py.VirtualSource("src.0.hdf5", "PartType1/Coordinates", shape=(1000, 3))
        layout[1000:] = h5py.VirtualSource("src.1.hdf5", "PartType1/Coordinates", shape=(1000, 3))
        f["PartType1"].create_virtual_dataset("Coordinates", layout)
    (out / "src.1.hdf5").unlink()

    # Item 8: header values no simulation writes, integer coordinates, an open Gadget-4 box.
    cases = {
        "nfiles0": {"NumFilesPerSnapshot": np.int32(0)},
        "nfilesneg": {"NumFilesPerSnapshot": np.int32(-3)},
        "time0": {"Time": 0.0},
        "timeneg": {"Time": -1.0},
        "hubble0": {"HubbleParam": 0.0},
        "omeganan": {"Omega0": np.nan},
        "unitneg": {"UnitLength_in_cm": -3.085678e24},
        "box1e300": {"BoxSize": 1e300},
    }
    for name, attrs in cases.items():
        gadget(out / f"{name}.hdf5", pos)
        header(out / f"{name}.hdf5", **attrs)
    gadget(out / "int32.hdf5", (pos * 0.5).astype(np.int32))
    gadget(out / "uint8.hdf5", (pos * 2).astype(np.uint8))
    gadget(out / "gadget4open.hdf5", pos)
    with h5py.File(out / "gadget4open.hdf5", "r+") as f:
        f.create_group("Config").attrs["NTYPES"] = np.int32(6)  # no PERIODIC: open boundaries

    # Messages: a valid file behind a 512-byte user block; a Gadget binary header with a broken marker.
    with h5py.File(out / "userblock.hdf5", "w", userblock_size=512) as f:
        pass
    gadget(out / "plain.hdf5", pos)
    with h5py.File(out / "plain.hdf5") as src, h5py.File(out / "userblock.hdf5", "a") as dst:
        for k in src:
            src.copy(k, dst)
        for k, v in src["Header"].attrs.items():
            dst["Header"].attrs[k] = v
    broken = bytearray((out / "bin.0").read_bytes())
    broken[260:264] = struct.pack("<I", 255)  # the header record's trailing marker
    (out / "brokenmarker").write_bytes(bytes(broken))


if __name__ == "__main__":
    main(sys.argv[1])
