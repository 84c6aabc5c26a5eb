#!/usr/bin/python3
"""Exit 0 when two phew HDF5 files hold the same data: every dataset (bit for bit) and every attribute,
except provenance: the root attribute `manifest` (times, paths, ranks) and dtfe-surface's `/timing`
group (seconds per field, documented as differing from run to run). Usage: same_data.py A B"""
import sys

import h5py
import numpy as np


def items(f):
    out = {}
    f.visititems(lambda name, obj: None if name.split("/")[0] == "timing" else out.__setitem__(name, obj))
    return out


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object or b.dtype == object:  # variable-length strings: compare the strings
            return a.shape == b.shape and a.tolist() == b.tolist()
        return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return a == b


def main(pa, pb):
    with h5py.File(pa) as a, h5py.File(pb) as b:
        ia, ib = items(a), items(b)
        if set(ia) != set(ib):
            sys.exit(f"{pa} vs {pb}: objects differ: {sorted(set(ia) ^ set(ib))}")
        for name in ia:
            oa, ob = ia[name], ib[name]
            if isinstance(oa, h5py.Dataset) and not same(oa[()], ob[()]):
                sys.exit(f"{pa} vs {pb}: dataset {name} differs")
            for key in set(oa.attrs) | set(ob.attrs):
                if key not in oa.attrs or key not in ob.attrs or not same(oa.attrs[key], ob.attrs[key]):
                    sys.exit(f"{pa} vs {pb}: attribute {key} of {name} differs")
        for key in (set(a.attrs) | set(b.attrs)) - {"manifest"}:
            if key not in a.attrs or key not in b.attrs or not same(a.attrs[key], b.attrs[key]):
                sys.exit(f"{pa} vs {pb}: root attribute {key} differs")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
