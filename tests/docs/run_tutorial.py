#!/usr/bin/python3
"""Runs docs/tutorial.md as written: every shell block, in order, on a small synthetic series made here,
so that a command the tutorial shows cannot stop working unnoticed.

  run_tutorial.py --bin build/bin [--source .] [--work DIR] [--list]

The series stands in for the tutorial's `sim/`: a 20 Mpc/h cosmological box (a Zel'dovich background
and Hernquist haloes, all particles of one mass as in a dark-matter run, `tutorial_scene.json`) at z = 0.2, 0.1 and 0, the same particles with the same IDs,
named `sim/snap_097.hdf5 ... snap_099.hdf5` as the tutorial's last three; `run/output_00042` is the last of
them as a RAMSES output (tests/data/make_ramses.py); `my-config.yaml` is the workflows' own config.
`examples/` and `workflows/` are the source tree's. Each block runs in `bash -e -o pipefail` with the
tools first on PATH; a block is skipped only when an HTML comment right above it says
`<!-- tutorial-test: skip (REASON) -->` (a tool that is not a Debian package, like ytree).
A failure prints the block's line in the tutorial, the command and its output; exit status 1.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = re.compile(r"<!--\s*tutorial-test:\s*skip\s*\((.+)\)\s*-->")


def blocks(markdown):
    """(line number, text, skip reason or None) of every indented code block at the top level."""
    lines = markdown.splitlines()
    found, i = [], 0
    while i < len(lines):
        starts = lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip() or SKIP.search(lines[i - 1]))
        if not starts:
            i += 1
            continue
        j = i
        while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
            j += 1
        text = "\n".join(line[4:] for line in lines[i:j]).strip("\n")
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        m = SKIP.search(above)
        found.append((i + 1, text, m.group(1) if m else None))
        i = j
    return found


def run(argv, cwd, env, what):
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run_tutorial: setting up: {what} failed ({p.returncode}):\n{p.stdout}{p.stderr}")


def make_inputs(work, source, env):
    """The tutorial's sim/ series, run/output_00042 and my-config.yaml."""
    (work / "sim").mkdir()
    scene = json.loads((HERE / "tutorial_scene.json").read_text())
    for name, redshift in [("snap_097", 0.2), ("snap_098", 0.1), ("snap_099", 0.0)]:
        (work / "scene.json").write_text(json.dumps(dict(scene, redshift=redshift)))
        run(["synth-particles", "scene.json", "-o", f"sim/{name}.hdf5", "-q"], work, env, "synth-particles")
    run([sys.executable, str(source / "tests" / "data" / "make_ramses.py"), str(work / "sim" / "snap_099.hdf5"),
         str(work / "run"), "--ncpu", "2", "--number", "42"], work, env, "make_ramses.py")
    shutil.copy(source / "workflows" / "config.yaml", work / "my-config.yaml")
    for folder in ("examples", "workflows"):
        (work / folder).symlink_to(source / folder)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--source", type=Path, default=HERE.parent.parent)
    ap.add_argument("--work", type=Path, help="run here (kept); default: a temporary folder")
    ap.add_argument("--list", action="store_true", help="print the blocks and stop")
    args = ap.parse_args()
    source = args.source.resolve()
    found = blocks((source / "docs" / "tutorial.md").read_text())
    if args.list:
        for line, text, skip in found:
            print(f"--- line {line}{' (skipped: ' + skip + ')' if skip else ''}\n{text}")
        return 0

    env = dict(os.environ, PATH=f"{args.bin.resolve()}:{os.environ['PATH']}", PHEW_BIN=str(args.bin.resolve()),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory(prefix="phew-tutorial-") as tmp:
        work = args.work.resolve() if args.work else Path(tmp)
        if args.work:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
        make_inputs(work, source, env)
        ran = skipped = 0
        for line, text, skip in found:
            if skip:
                print(f"tutorial.md:{line}: skipped ({skip})")
                skipped += 1
                continue
            start = time.time()
            p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env, capture_output=True,
                               text=True)
            if p.returncode != 0:
                print(f"tutorial.md:{line}: exit {p.returncode}\n{text}\n--- output:\n{p.stdout}{p.stderr}")
                return 1
            print(f"tutorial.md:{line}: ok in {time.time() - start:.1f} s: {text.splitlines()[0]}")
            ran += 1
        print(f"{ran} blocks of docs/tutorial.md ran, {skipped} skipped")
        # Step 5's tree links its peaks (it was once silently empty: no voters within the radius given).
        summary = json.loads((work / "tree.h5.json").read_text())["summary"]
        if not summary["n_links"] > 0 or summary["stages_with_few_voters"]:
            print(f"run_tutorial: the tutorial's tree has {summary['n_links']} links, stages with few voters: "
                  f"{summary['stages_with_few_voters']}")
            return 1
        print(f"the tutorial's tree: {summary['n_links']} links, {summary['n_lineages']} lineages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
