#!/usr/bin/python3
"""Tiny seeded inputs for the CLI tests: a good Gadget-style snapshot and one file per bad case.

Usage: make_inputs.py OUTDIR
Every file is a few kB and the same bytes for the same script, so tests are reproducible.
"""
import sys
from pathlib import Path

import h5py
import numpy as np

BOX = 100.0


def gadget(path, pos, masstable=(0.0, 1.0, 0, 0, 0, 0), box=BOX, ptype=1, drop=(), extra=None, numfiles=1,
           total=None, ids=None):
    """A Gadget-2-style HDF5 snapshot with all particles of one type."""
    n = len(pos)
    counts = np.zeros(6, dtype=np.uint32)
    counts[ptype] = n
    with h5py.File(path, "w") as f:
        h = f.create_group("Header")
        h.attrs["BoxSize"] = box
        h.attrs["NumPart_ThisFile"] = counts
        h.attrs["NumPart_Total"] = (counts if total is None else np.asarray(total)).astype(np.uint64)
        h.attrs["NumPart_Total_HighWord"] = np.zeros(6, dtype=np.uint32)
        h.attrs["MassTable"] = np.asarray(masstable, dtype=np.float64)
        h.attrs["Time"] = 1.0
        h.attrs["Redshift"] = 0.0
        h.attrs["NumFilesPerSnapshot"] = np.int32(numfiles)
        h.attrs["Omega0"] = 0.3
        h.attrs["OmegaLambda"] = 0.7
        h.attrs["HubbleParam"] = 0.7
        g = f.create_group(f"PartType{ptype}")
        if "Coordinates" not in drop:
            g["Coordinates"] = pos
        g["Velocities"] = np.zeros((n, 3), dtype=np.float32)
        g["ParticleIDs"] = np.arange(1, n + 1, dtype=np.uint64) if ids is None else ids
        if extra:
            for k, v in extra.items():
                g[k] = v


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(12345)
    pos = rng.uniform(0, BOX, size=(4000, 3)).astype(np.float32)
    # A dense blob so the grid is not flat.
    pos[:1500] = (50 + rng.normal(0, 5, size=(1500, 3))) % BOX

    gadget(out / "good.hdf5", pos)
    # The same particles split over two files, as a multi-file snapshot.
    for i, part in enumerate((pos[:2500], pos[2500:])):
        gadget(out / f"multi.{i}.hdf5", part, numfiles=2, total=[0, 4000, 0, 0, 0, 0])

    bad = pos.copy()
    bad[17, 1] = np.nan
    gadget(out / "nan.hdf5", bad)
    gadget(out / "negmass.hdf5", pos, masstable=(0, 0, 0, 0, 0, 0),
           extra={"Masses": np.where(np.arange(4000) == 5, -1.0, 1.0).astype(np.float32)})
    gadget(out / "nocoords.hdf5", pos, drop=("Coordinates",))
    with h5py.File(out / "badshape.hdf5", "w") as f:
        pass
    gadget(out / "badshape.hdf5", pos[:, :2].copy())
    gadget(out / "gasonly.hdf5", pos, ptype=0, masstable=(1.0, 0, 0, 0, 0, 0))
    gadget(out / "missingpiece.0.hdf5", pos[:2500], numfiles=2, total=[0, 4000, 0, 0, 0, 0])
    gadget(out / "wrongtotal.hdf5", pos, total=[0, 5000, 0, 0, 0, 0])
    # Open boundaries (BoxSize 0): cic-project needs --region.
    gadget(out / "openbox.hdf5", pos, box=0.0)

    # Our own particle file, non-periodic box, one particle outside it.
    with h5py.File(out / "outside.h5", "w") as f:
        g = f.create_group("particles")
        p = pos.astype(np.float64)
        p[3] = (150.0, 10.0, 10.0)
        g["position"] = p
        g["velocity"] = np.zeros_like(p)
        g["mass"] = np.ones(len(p))
        g["id"] = np.arange(len(p), dtype=np.uint64)
        g.attrs["box_size"] = np.array([BOX, BOX, BOX])
        g.attrs["periodic"] = np.int8(0)

    (out / "notes.txt").write_text("not a snapshot\n")
    with open(out / "truncated.hdf5", "wb") as f:
        f.write((out / "good.hdf5").read_bytes()[:3000])


if __name__ == "__main__":
    main(sys.argv[1])
