#!/usr/bin/python3
"""Do two builds write the same outputs? For a change that must not change a byte (a refactoring):
runs the property scenes' whole chain (tests/property/run_scenes.py, 1 rank) and a chain on each shared
real run (Gadget-4, the RAMSES run on its adaptive mesh) with the tools of BASE and of NEW, then
compares every output: HDF5 files with tests/data/same_data.py's rule (every dataset bit for bit and
every attribute, provenance excepted), text files byte for byte.

    scripts/same_outputs.py BASE_BIN NEW_BIN [--seeds 1000-1009] [--work DIR] [--no-shared]

BASE_BIN is typically a build of the commit before the change (git worktree add /tmp/base HEAD~1).
Exit 0 when every output is the same, 1 otherwise (each difference on a line)."""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import h5py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
from same_data import items, same  # noqa: E402  (the comparison rule of the tests)

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def difference(a, b):
    """None when the two phew HDF5 files hold the same data, else what differs."""
    with h5py.File(a) as fa, h5py.File(b) as fb:
        ia, ib = items(fa), items(fb)
        if set(ia) != set(ib):
            return f"objects differ: {sorted(set(ia) ^ set(ib))}"
        for name, oa in ia.items():
            ob = ib[name]
            if isinstance(oa, h5py.Dataset) and not same(oa[()], ob[()]):
                return f"dataset {name} differs"
            for key in set(oa.attrs) | set(ob.attrs):
                if key not in oa.attrs or key not in ob.attrs or not same(oa.attrs[key], ob.attrs[key]):
                    return f"attribute {key} of {name} differs"
        for key in (set(fa.attrs) | set(fb.attrs)) - {"manifest"}:
            if key not in fa.attrs or key not in fb.attrs or not same(fa.attrs[key], fb.attrs[key]):
                return f"root attribute {key} differs"
    return None


def compare_folders(base, new):
    """Every output file of `base` against the one of the same name in `new` (and none missing)."""
    problems, n = [], 0
    names = {p.relative_to(base) for p in base.rglob("*") if p.is_file()}
    names |= {p.relative_to(new) for p in new.rglob("*") if p.is_file()}
    for rel in sorted(names):
        a, b = base / rel, new / rel
        if rel.suffix == ".json" or rel.name.startswith("."):
            continue  # manifests and logs record times and paths: provenance
        if not a.exists() or not b.exists():
            problems.append(f"{rel}: only in {'new' if b.exists() else 'base'}")
            continue
        n += 1
        if rel.suffix in (".h5", ".hdf5"):
            why = difference(a, b)
            if why:
                problems.append(f"{rel}: {why}")
        elif a.read_bytes() != b.read_bytes():
            problems.append(f"{rel}: bytes differ")
    return n, problems


def scenes(bin_dir, seeds, work):
    subprocess.run([sys.executable, str(ROOT / "tests/property/run_scenes.py"), "--bin", str(bin_dir), "--seeds", seeds,
                    "--ranks", "1", "--keep", "--no-references", "--work", str(work)],
                   check=True, env=ENV, stdout=subprocess.DEVNULL)


def shared_chain(bin_dir, work):
    """The chain a user runs on the shared real runs: Gadget-4 on a uniform grid, RAMSES on its mesh."""
    data = ROOT.parent / "shared" / "data"
    g4 = data / "gadget4-lcdm-gas-L50-N32" / "snapshot_004.hdf5"
    ramses = data / "ramses-cosmo-L20-N32" / "output_00004"
    work.mkdir(parents=True, exist_ok=True)

    def run(*args):
        subprocess.run([str(bin_dir / args[0]), *map(str, args[1:]), "-q"], check=True, env=ENV, cwd=work)

    for name, snap, mesh in (("g4", g4, ["--grid", "64"]), ("ramses", ramses, ["--grid", "32", "--refine", "8", "--levels", "3"])):
        if not snap.exists():
            continue
        run("cic-project", snap, "-o", f"{name}.grid.h5", *mesh)
        run("phew-segment", f"{name}.grid.h5", "-o", f"{name}.patches.h5", "--threshold", "80mean")
        run("phew-merge", f"{name}.patches.h5", "-o", f"{name}.clumps.h5")
        run("deblend", f"{name}.clumps.h5", snap, "-o", f"{name}.peaks.h5")
        run("voters", f"{name}.peaks.h5", snap, "-o", f"{name}.voters.h5")
        run("unbind", f"{name}.clumps.h5", snap, "-o", f"{name}.bound.h5")
        run("mergertree", f"{name}.peaks.h5", "-o", f"{name}.tree.h5", "--particles")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--seeds", default="1000-1009")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--no-shared", action="store_true", help="the property scenes only")
    a = ap.parse_args()
    work = a.work or Path(tempfile.mkdtemp(prefix="phew-same."))
    total, problems = 0, []
    for label, bin_dir in (("base", a.base.resolve()), ("new", a.new.resolve())):
        print(f"running the {label} build ({bin_dir})", flush=True)
        scenes(bin_dir, a.seeds, work / label / "scenes")
        if not a.no_shared:
            shared_chain(bin_dir, work / label / "shared")
    for part in ("scenes", "shared"):
        if (work / "base" / part).exists():
            n, p = compare_folders(work / "base" / part, work / "new" / part)
            total += n
            problems += [f"{part}/{x}" for x in p]
    for p in problems:
        print(p)
    print(f"{total} outputs compared, {len(problems)} differ ({work})")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
