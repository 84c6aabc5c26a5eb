#!/usr/bin/python3
"""Every declared constraint of every product, broken in turn, is refused by the tool that reads it.

    edited_products.py --bin BUILD/bin --work DIR [--source SRC]

Makes a small chain (the shared Gadget-4 box's last two snapshots, $PHEW_SHARED_DATA, at 48^3 cells and
8 x the mean: peaks, saddles, a hierarchy, a graveyard), reads the list of
declared tables and constraints from `product-constraints` (io::declared_tables, the same declarations
the readers check), and for each constrained column edits one value of a copy of the product so that it
breaks the constraint (NaN where it must be finite, infinity where NaN is allowed, a value below the
minimum or above the maximum, two rows out of order, a value given twice, an ID that is not in the
dataset it refers to), re-signs the file (and the products made from it, so that only the content is
judged), and runs the tool that reads it. Each must exit 3 with one line on stderr naming the edited
dataset, and write nothing. Then the checks between datasets and of attributes, each edited once
(EDITS: a grid's cell size against its box, its unit names, an adaptive mesh's densities stored as
integers, a saddle above its peaks, a peak outside the mesh, voters not as many as a peak says). A product no tool reads (maps.h5) is left out; so is a column of one row
where the constraint needs two. Prints one line per case and a summary; exit 1 on any failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent


def run(argv, cwd, check=True):
    p = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"edited_products: {' '.join(map(str, argv))} failed ({p.returncode}):\n{p.stderr}")
    return p


def make_chain(bin_dir, work, shared):
    """Two snapshots through the chain; returns the paths of every product."""
    env_bin = Path(bin_dir)
    p = {}
    for k in (0, 1):
        s, o = shared / "gadget4-lcdm-gas-L50-N32" / f"snapshot_00{3 + k}.hdf5", work / f"{k}"
        o.mkdir()
        run([env_bin / "cic-project", s, "-o", o / "grid.h5", "--grid", "48", "-q"], work)
        run([env_bin / "phew-segment", o / "grid.h5", "-o", o / "patches.h5", "--threshold", "8mean", "-q"], work)
        run([env_bin / "phew-merge", o / "patches.h5", "-o", o / "clumps.h5", "--particles", s, "--saddle-threshold", "20mean",
             "-q"], work)
        run([env_bin / "deblend", o / "clumps.h5", s, "-o", o / "peaks.h5", "-q"], work)
        run([env_bin / "voters", o / "peaks.h5", s, "-o", o / "voters.h5", "-q"], work)
        run([env_bin / "unbind", o / "peaks.h5", s, "-o", o / "bound.h5", "-q"], work)
        p[k] = {"snapshot": s, **{n: o / f"{n}.h5" for n in ("grid", "patches", "clumps", "peaks", "voters", "bound")}}
    # A later stage for the tree's --add (any stage after the state's last in time).
    later = work / "later"
    shutil.copytree(work / "1", later)
    p["later"] = {"peaks": later / "peaks.h5", "voters": later / "voters.h5"}
    p["amr"] = work / "amr.h5"
    run([env_bin / "cic-project", p[1]["snapshot"], "-o", p["amr"], "--grid", "16", "--refine", "8", "--levels", "2", "-q"], work)
    run([env_bin / "mergertree", f"{p[0]['peaks']}:{p[0]['voters']}", f"{p[1]['peaks']}:{p[1]['voters']}", "-o",
         work / "tree0.h5", "-q"], work)
    p["tree"] = work / "tree0.h5"
    return p


def consumer(product, p, edited, out):
    """The command that reads `product` (its edited copy `edited`). The files made from it are not needed:
    each tool that reads a product checks it whole (io::check_product) before it uses what it needs."""
    one, zero = p[1], p[0]
    if product == "patches.h5":
        return ["phew-merge", edited, "-o", out]
    if product == "clumps.h5":
        return ["deblend", edited, one["snapshot"], "-o", out]
    if product == "peaks.h5":
        return ["voters", edited, one["snapshot"], "-o", out]
    if product == "voters.h5":
        return ["mergertree", f"{zero['peaks']}:{zero['voters']}", f"{one['peaks']}:{edited}", "-o", out]
    if product == "bound.h5":
        return ["mergertree", f"{zero['peaks']}:{zero['voters']}:{zero['bound']}",
                f"{one['peaks']}:{one['voters']}:{edited}", "-o", out]
    if product == "tree.h5":
        return ["mergertree", "--state", edited, "--add", f"{p['later']['peaks']}:{p['later']['voters']}", "-o", out]
    return None


KINDS = ("finite", "measured", "refers_to", "min", "max", "order", "unique")


def break_value(kind, c, values):
    """Edits `values` (a copy of the dataset) to break the `kind` part of constraint `c`; returns (what,
    row), or None when the constraint has no such part or this dataset cannot show it."""
    n = values.shape[0]
    flat = values.reshape(n, -1)
    floating = values.dtype.kind == "f"
    if kind == "finite" and c["finite"] and floating:
        flat[0, 0] = np.nan
        return "NaN where finite", 0
    if kind == "measured" and c["measured"] and floating:
        flat[0, 0] = np.inf
        return "infinity where NaN is allowed", 0
    if kind == "refers_to" and c["refers_to"]:
        flat[0, 0] = 987654321
        return "an ID not in " + c["refers_to"], 0
    if kind == "min" and c["min"] is not None:
        low = c["min"] if c["min_open"] else (c["min"] - (0.5 if floating else 1))
        if values.dtype.kind == "u" and low < 0:
            return None
        flat[0, 0] = low
        return "below the minimum", 0
    if kind == "max" and c["max"] is not None:
        flat[0, 0] = c["max"] + 1
        return "above the maximum", 0
    if kind == "order" and c["order"] != "none" and n >= 2:
        if c["order"] == "non_increasing":
            flat[1, 0] = flat[0, 0] + 1
        elif flat[0, 0] > 0:
            flat[1, 0] = flat[0, 0] - 1
        else:
            return None
        return "out of order", 1
    if kind == "unique" and c["unique"] and n >= 2:
        flat[1, 0] = flat[0, 0]
        return "given twice", 1
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--source", type=Path, default=HERE.parent.parent)
    args = ap.parse_args()
    bin_dir, work = args.bin.resolve(), args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PATH=f"{bin_dir}:{os.environ['PATH']}")
    p = make_chain(bin_dir, work, Path(os.environ["PHEW_SHARED_DATA"]).resolve())
    declared = json.loads(run([bin_dir / "product-constraints"], work).stdout)
    failures, cases, skipped = [], 0, []
    for table in declared:
        product, group = table["product"], table["group"]
        original = p["tree"] if product == "tree.h5" else p[1].get(product[:-3])
        if original is None:
            continue
        for c in table["columns"]:
            if c["describe"] == "":
                continue
            dataset = f"{group}/{c['name']}"
            with h5py.File(original, "r") as f:
                if dataset not in f:
                    skipped.append(f"{product} {dataset}: not written here")
                    continue
                values = f[dataset][()]
            if values.ndim == 0 or values.shape[0] == 0:
                skipped.append(f"{product} {dataset}: empty")
                continue
            for kind in KINDS:
                edit = values.copy()
                broken = break_value(kind, c, edit)
                if broken is None:
                    continue
                cases += 1
                failures += check_case(bin_dir, work, p, product, dataset, c, edit, broken, original, cases)
    for k, (what, key, named, edit, command) in enumerate(edits(p)):
        failures += check_edit(bin_dir, work, p, what, key, named, edit, command, k)
        cases += 1
    for s in skipped:
        print(f"skip {s}")
    print(f"edited_products: {cases} constraints broken, {len(failures)} not refused as they should be, {len(skipped)} skipped")
    for f in failures:
        print(f"FAILED: {f}")
    return 1 if failures else 0


def set_attribute(path, obj, name, value):
    with h5py.File(path, "r+") as f:
        f[obj].attrs[name] = value


def replace_dataset(path, name, values):
    with h5py.File(path, "r+") as f:
        del f[name]
        f[name] = values


def scale_dataset(path, name, factor, row=0):
    with h5py.File(path, "r+") as f:
        v = f[name][()]
        v.reshape(v.shape[0], -1)[row, 0] *= factor
        f[name][...] = v


# The checks between datasets and of attributes: (what, file key, dataset named in the message, edit,
# command). `file key` is "grid", "patches", ... of snapshot 1, or "amr".
def edits(p):
    def grid_cmd(e, out):
        return ["phew-segment", e, "-o", out, "--threshold", "8mean"]
    return [
        ("a cell size that is not box / shape", "grid", "cell_size",
         lambda e: set_attribute(e, "/grid", "cell_size", np.array([1.1, 1.0, 1.0]) * h5py.File(e)["/grid"].attrs["cell_size"]),
         grid_cmd),
        ("a length unit no tool writes", "grid", "length_units", lambda e: set_attribute(e, "/grid", "length_units", "furlong"),
         grid_cmd),
        ("a density unit its length and mass units do not make", "grid", "units",
         lambda e: set_attribute(e, "/grid", "units", "(1e10 Msun/h)/(Mpc/h)^3"), grid_cmd),
        ("an adaptive mesh's densities stored as integers", "amr", "/grid/leaves/density",
         lambda e: replace_dataset(e, "/grid/leaves/density", h5py.File(e)["/grid/leaves/density"][()].astype(np.int32)),
         grid_cmd),
        ("a saddle above the peaks it joins", "patches", "/saddles/density",
         lambda e: scale_dataset(e, "/saddles/density", 1e30), lambda e, out: ["phew-merge", e, "-o", out]),
        ("a peak whose cell is outside the grid", "patches", "/peaks/cell",
         lambda e: scale_dataset(e, "/peaks/cell", 10 ** 9), lambda e, out: ["phew-merge", e, "-o", out]),
        ("a peak with more voters than /voters holds", "voters", "/peaks/n_voters",
         lambda e: scale_dataset(e, "/peaks/n_voters", 2),
         lambda e, out: ["mergertree", f"{p[0]['peaks']}:{p[0]['voters']}", f"{p[1]['peaks']}:{e}", "-o", out]),
    ]


def check_edit(bin_dir, work, p, what, key, named, edit, command, number):
    """One of EDITS on a copy of the file; [] or [the failure]."""
    original = p["amr"] if key == "amr" else p[1][key]
    case = work / f"edit{number}"
    case.mkdir()
    edited = case / Path(original).name
    shutil.copy(original, edited)
    shutil.copy(f"{original}.json", f"{edited}.json")
    edit(edited)
    run([bin_dir / "remanifest", edited], case)
    argv = command(edited, case / "out.h5")
    r = run([bin_dir / argv[0]] + argv[1:] + ["-q"], case, check=False)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    ok = r.returncode == 3 and len(lines) == 1 and named in lines[0] and not (case / "out.h5").exists()
    print(f"{'ok  ' if ok else 'FAIL'} {Path(original).name}: {what} -> exit {r.returncode}: {lines[0] if lines else '(no message)'}")
    return [] if ok else [f"{Path(original).name}: {what}: exit {r.returncode}, stderr {r.stderr.strip()!r}"]


def check_case(bin_dir, work, p, product, dataset, c, values, broken, original, number):
    """Runs the reader of `product` on a copy with `dataset` replaced by `values`; [] or [the failure]."""
    what, row = broken
    case = work / f"case{number}"
    case.mkdir()
    edited = case / product
    shutil.copy(original, edited)
    shutil.copy(f"{original}.json", f"{edited}.json")
    with h5py.File(edited, "r+") as f:
        f[dataset][...] = values
    run([bin_dir / "remanifest", edited], case)  # the content is judged, not a stale fingerprint
    argv = consumer(product, p, edited, case / "out.h5")
    r = run([bin_dir / argv[0]] + argv[1:] + ["-q"], case, check=False)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    ok = r.returncode == 3 and len(lines) == 1 and dataset in lines[0] and not (case / "out.h5").exists()
    print(f"{'ok  ' if ok else 'FAIL'} {product} {dataset} row {row}: {what} ({c['describe']}) -> exit {r.returncode}: "
          f"{lines[0] if lines else '(no message)'}")
    return [] if ok else [f"{product} {dataset}: {what}: exit {r.returncode}, stderr {r.stderr.strip()!r}"]


if __name__ == "__main__":
    sys.exit(main())
