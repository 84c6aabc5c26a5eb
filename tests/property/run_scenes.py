#!/usr/bin/python3
"""Randomized rank-invariance harness (docs/cli.md, "Same data on any number of ranks").

For each seeded scene (scene.py) the whole chain runs at every rank count: cic-project; phew-segment
with and without --refine-positions; phew-merge with relevance only, with --saddle-threshold (and
--particles, --export-text) and with --second-relevance; unbind (profile, and tree around the
most-bound particle with --saddle); deblend; unbind on deblend's peaks; voters with the stored potential,
computed and each peak's profile; the same cic-project -> voters chain on the later snapshots; mergertree over the sequence;
dtfe-surface; the threaded tools with another number of threads at each rank count (THREADED). Every
output must hold the same data as at 1 rank (h5diff on every top-level object,
plus the root attributes and a byte comparison of every dataset; text exports byte for byte). What is
provenance by design is not compared: the root attribute `manifest` (and the .json beside each file)
and `/timing` of maps.h5 (docs/formats.md). On the 1-rank outputs phew-segment and phew-merge must
also equal the serial references of reference.py.

  run_scenes.py --bin build/bin --seeds 1000-1004          # CI: a fixed seed range
  run_scenes.py --bin build/bin --seeds 17 --keep          # one seed, files kept
  run_scenes.py --bin build/bin --scenes 500 --ranks 1,2,3,4,5,6,7,8   # long mode (random first seed)

A failure prints the seed, the tool, the rank count and the commands that reproduce it, and keeps the
scene's files. Exit status: 0 when every scene passed (expected failures listed in known_failures.json
do not count), 1 otherwise. Every run has a timeout (--timeout, default 120 s), so a hang is a failure.
"""
import argparse
import concurrent.futures
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference  # noqa: E402
import reference_amr  # noqa: E402
import scene as scene_mod  # noqa: E402

# Waiting ranks yield the core: with more ranks than cores (and two scenes side by side under ctest -j2)
# busy-polling ranks would starve the others, several times slower. The scenes run on one machine, so
# only the shared-memory transport is opened: probing the others made a scene at 1-8 ranks 40 s, not 25.
# A 1-rank run is a singleton started without mpirun; isolated, it does not fork a runtime daemon first
# (MPI_Init in 0.05-0.1 s instead of 0.2-0.3 s), and the 1-rank chain is the one the others wait for.
ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
       "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader", "OMPI_MCA_ess_singleton_isolated": "1"}
PROVENANCE_GROUPS = {"maps.h5": {"timing"}}  # per output file: top-level objects that are provenance


class Step:
    def __init__(self, name, argv, output, needs=(), compare=True):
        self.name, self.argv, self.output, self.needs, self.compare = name, argv, output, list(needs), compare

    @property
    def tool(self):
        return self.argv[0]


def plan(o):
    """The steps of a scene, in order. Paths are relative to the rank's folder (r1, r2, ...)."""
    steps = []
    grid = ["--grid", ",".join(map(str, o["grid"])), "--assignment", o["assignment"], "--precision", o["precision"]]
    if o["region"]:
        grid += ["--region", ",".join(f"{v:g}" for v in o["region"])]
    pm = o["pm_mesh"]
    floor = ["--noise-floor", o["noise_floor"]] if o.get("noise_floor") else []
    amr = o.get("amr")
    if amr:  # an adaptive mesh: --grid is the coarse grid
        grid += ["--refine", f"{amr['refine']:g}", "--levels", str(amr["levels"])]
    if o.get("types"):  # particles of several types: the grid of all (the later tools take the grid's)
        grid += ["--types", o["types"]]
    for k in range(o["snapshots"]):
        p, snap = f"{k:03d}", f"../{o['snapshot_files'][k]}"
        steps.append(Step(f"{p}.grid", ["cic-project", snap, "-o", f"{p}.grid.h5"] + grid, f"{p}.grid.h5"))
        steps.append(Step(f"{p}.patches", ["phew-segment", f"{p}.grid.h5", "-o", f"{p}.patches.h5",
                                           "--threshold", o["threshold"]], f"{p}.patches.h5", [f"{p}.grid"]))
        if k == 0 and not amr:  # --refine-positions fits a block of equal cells: not on leaves
            steps.append(Step(f"{p}.patches_refined", ["phew-segment", f"{p}.grid.h5", "-o", f"{p}.patches_refined.h5",
                                                       "--threshold", o["threshold"], "--refine-positions"],
                              f"{p}.patches_refined.h5", [f"{p}.grid"]))
        if k == 0:
            steps.append(Step(f"{p}.clumps_rel", ["phew-merge", f"{p}.patches.h5", "-o", f"{p}.clumps_rel.h5",
                                                  "--relevance", str(o["relevance"]), "--saddle-threshold", "none"] + floor,
                              f"{p}.clumps_rel.h5", [f"{p}.patches"]))
            steps.append(Step(f"{p}.clumps_sec", ["phew-merge", f"{p}.patches.h5", "-o", f"{p}.clumps_sec.h5",
                                                  "--relevance", str(o["relevance"]),
                                                  "--second-relevance", str(o["second_relevance"])] + floor,
                              f"{p}.clumps_sec.h5", [f"{p}.patches"]))
        extra = ["--particles", snap, "--export-text"] if k == 0 else []
        steps.append(Step(f"{p}.clumps", ["phew-merge", f"{p}.patches.h5", "-o", f"{p}.clumps.h5",
                                          "--relevance", str(o["relevance"]), "--saddle-threshold", o["saddle_threshold"]]
                          + floor + extra, f"{p}.clumps.h5", [f"{p}.patches"]))
        if k == 0:  # unbind after merge: the profile potential, and the tree with another centre and the saddle
            steps.append(Step(f"{p}.bound", ["unbind", f"{p}.clumps.h5", snap, "-o", f"{p}.bound.h5"],
                              f"{p}.bound.h5", [f"{p}.clumps"]))
            steps.append(Step(f"{p}.bound_tree", ["unbind", f"{p}.clumps.h5", snap, "-o", f"{p}.bound_tree.h5",
                                                  "--potential", "tree", "--centre", "most-bound", "--saddle"],
                              f"{p}.bound_tree.h5", [f"{p}.clumps"]))
        steps.append(Step(f"{p}.peaks", ["deblend", f"{p}.clumps.h5", snap, "-o", f"{p}.peaks.h5"] + o["deblend"],
                          f"{p}.peaks.h5", [f"{p}.clumps"]))
        if k == 0:  # unbind on deblend's peaks
            steps.append(Step(f"{p}.bound_peaks", ["unbind", f"{p}.peaks.h5", snap, "-o", f"{p}.bound_peaks.h5"],
                              f"{p}.bound_peaks.h5", [f"{p}.peaks"]))
        # voters: the stored potential when the snapshot has one (auto), else computed; at snapshot 0 with a
        # stored potential also computed, and at snapshot 0 the profile potential.
        steps.append(Step(f"{p}.voters", ["voters", f"{p}.peaks.h5", snap, "-o", f"{p}.voters.h5"] + o["voters"]
                          + ([] if o["potential"] else pm), f"{p}.voters.h5", [f"{p}.peaks"]))
        if k == 0 and o["potential"]:
            steps.append(Step(f"{p}.voters_computed", ["voters", f"{p}.peaks.h5", snap, "-o", f"{p}.voters_computed.h5",
                                                       "--potential", "compute"] + o["voters"] + pm,
                              f"{p}.voters_computed.h5", [f"{p}.peaks"]))
        if k == 0:  # and each peak's own spherical potential (RAMSES' unbinding), with no solver
            steps.append(Step(f"{p}.voters_profile", ["voters", f"{p}.peaks.h5", snap, "-o", f"{p}.voters_profile.h5",
                                                      "--potential", "profile"] + o["voters"],
                              f"{p}.voters_profile.h5", [f"{p}.peaks"]))
    stages = [f"{k:03d}.peaks.h5" for k in range(o["snapshots"])]
    steps.append(Step("tree", ["mergertree"] + stages + ["-o", "tree.h5", "--export-text"] + o["mergertree"], "tree.h5",
                      [f"{k:03d}.{s}" for k in range(o["snapshots"]) for s in ("peaks", "voters")]))
    if o["dtfe_centers"] == "clumps":
        centers, needs = ["--centers", "000.clumps.h5", "--top", "2"], ["000.clumps"]
    else:
        centers, needs = ["--centers", "../centers.txt"], []
    steps.append(Step("maps", ["dtfe-surface", f"../{o['snapshot_files'][0]}", "-o", "maps.h5"] + centers + o["dtfe"], "maps.h5", needs))
    for s in steps:
        s.argv = s.argv + ["-q"]
    return steps


def variant(step):
    """A short name for reports: the tool and which run of it."""
    return f"{step.tool} ({step.output})"


# Tools with threads inside a rank: the 1-rank reference runs one thread, the other rank counts 3, 1 and
# 2 (ranks 2, 3, 4, ...), so threads and ranks both vary against it (docs/cli.md, "Threads").
THREADED = {"cic-project", "phew-segment", "phew-merge", "unbind", "deblend", "voters", "mergertree"}


def threads_at(ranks):
    # PHEW_PROPERTY_THREADS=N: N threads at every rank count (scripts/tsan.sh: singletons with threads).
    forced = os.environ.get("PHEW_PROPERTY_THREADS")
    if forced:
        return int(forced)
    return 1 if ranks == 1 else 1 + ranks % 3


def command(step, bin_dir, ranks):
    argv = [str(Path(bin_dir) / step.tool)] + step.argv[1:]
    if step.tool in THREADED and "--threads" not in argv:
        argv += ["--threads", str(threads_at(ranks))]
    if ranks == 1:
        return argv  # a singleton MPI run, the way most users run on one machine
    return ["mpirun", "--oversubscribe", "-n", str(ranks)] + argv


def shell(argv):
    return " ".join(shlex.quote(a) for a in argv)


def run(argv, cwd, timeout):
    # Each run an Open MPI session folder of its own: the rank counts run side by side (--jobs), and two
    # mpiruns sharing /tmp/ompi.HOST.UID race as one removes it while the other creates its own folder in
    # it (orte_init: "A call to mkdir was unable to create the desired directory"). Short, under /tmp:
    # Open MPI puts Unix sockets there.
    session = tempfile.mkdtemp(prefix="phew-ompi.", dir="/tmp")
    env = dict(os.environ, **ENV, OMPI_MCA_orte_tmpdir_base=session)
    t0 = time.time()
    try:
        p = subprocess.run(["timeout", "-k", "10", str(timeout)] + argv, cwd=cwd, env=env, capture_output=True,
                           text=True, errors="replace")
        code, err = p.returncode, p.stderr + (f"\n[stdout]\n{p.stdout}" if p.stdout.strip() else "")
    except OSError as e:
        code, err = 127, str(e)
    finally:
        shutil.rmtree(session, ignore_errors=True)
    if code == 124 or code == 137:
        err += f"\n(timed out after {timeout} s: a hang?)"
    return code, err, time.time() - t0


# ---------------------------------------------------------------------------------------------------
# Comparing outputs

def same_value(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:  # variable-length strings: compare the strings
        return a.shape == b.shape and a.tolist() == b.tolist()
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def compare_h5(a, b, skip_top=()):
    """Differences between two outputs (empty when they hold the same data)."""
    out = []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ta, tb = set(fa) - set(skip_top), set(fb) - set(skip_top)
        if ta != tb:
            out.append(f"top-level objects differ: {sorted(ta ^ tb)}")
        for key in (set(fa.attrs) | set(fb.attrs)) - {"manifest"}:
            if key not in fa.attrs or key not in fb.attrs or not same_value(fa.attrs[key], fb.attrs[key]):
                out.append(f"root attribute {key} differs")
        names = []
        for t in sorted(ta & tb):
            if isinstance(fa[t], h5py.Dataset):
                names.append(t)
            else:
                fa[t].visititems(lambda n, obj, t=t: names.append(f"{t}/{n}") if isinstance(obj, h5py.Dataset) else None)
        for n in names:  # bit for bit (h5diff takes 0.0 == -0.0)
            if n in fb and isinstance(fb[n], h5py.Dataset) and not same_value(fa[n][()], fb[n][()]):
                out.append(f"/{n} differs (bytes)")
        common = sorted(ta & tb)
    # h5diff on everything but the root's attributes (compared above without `manifest`) and provenance
    # groups; object by object only when something differs, to say where.
    excl = ["--exclude-attribute", "/"] + [x for t in skip_top for x in ("--exclude-path", f"/{t}")]
    p = subprocess.run(["h5diff", "-q"] + excl + [a, b], capture_output=True, text=True)
    if p.returncode != 0:
        for t in common:
            q = subprocess.run(["h5diff", "-q", a, b, f"/{t}", f"/{t}"], capture_output=True, text=True)
            if q.returncode == 1:
                out.append(f"h5diff: /{t} differs")
            elif q.returncode != 0:
                out.append(f"h5diff /{t}: error {q.returncode}: {q.stderr.strip()[:200]}")
        if not out:
            out.append(f"h5diff: exit {p.returncode} {p.stdout.strip()[:200]} {p.stderr.strip()[:200]}")
    return out


def text_outputs(folder, output):
    """Text exports written beside an output (OUTPUT.clumps.txt, OUTPUT.links.txt, ...)."""
    return sorted(q.name for q in Path(folder).glob(output + ".*") if not q.name.endswith((".json", ".log")))


def excerpt(message, tool):
    """The lines of a tool's stderr worth printing: its error lines (any rank), else the last few."""
    lines = [m for m in message.strip().splitlines() if m.strip()]
    errors = [m for m in lines if tool and m.startswith(f"{tool}: error:") or re.search(r"signal|Segmentation|abort\(|terminate", m)]
    picked = list(dict.fromkeys(errors))[:4] or lines[-6:]
    return picked


# ---------------------------------------------------------------------------------------------------
# Known failures: expected until fixed; listed in known_failures.json (tool, output regex, ranks,
# message regex, reason). A known failure that no longer happens is reported (XPASS) but does not fail.

def load_known(path):
    if path and Path(path).exists():
        return json.loads(Path(path).read_text())
    return []


def known(known_list, step, ranks, message):
    for k in known_list:
        k.setdefault("seen", 0)
        if k["tool"] != step.tool or not re.search(k.get("output", "."), step.output):
            continue
        if ranks not in k.get("ranks", [ranks]):
            continue
        if re.search(k["match"], message):
            k["seen"] += 1
            return k["reason"]
    return None


# ---------------------------------------------------------------------------------------------------

class Scene:
    def __init__(self, seed, args):
        self.seed, self.args = seed, args
        self.dir = Path(args.work) / f"seed-{seed}"
        self.failures, self.expected, self.notes = [], [], []
        self.run_seconds = {}

    def fail(self, kind, step, ranks, message, repro):
        reason = known(self.args.known, step, ranks, message) if step else None
        entry = (kind, step, ranks, message, repro)
        (self.expected if reason else self.failures).append(entry + (reason,))

    def report(self):
        lines = []
        for kind, step, ranks, message, repro, reason in self.expected:
            lines.append(f"XFAIL seed {self.seed}: {variant(step)} at {ranks} ranks: {kind}: "
                         f"{' / '.join(excerpt(message, step.tool)[:1])} (known: {reason})")
        for kind, step, ranks, message, repro, _ in self.failures:
            tool = variant(step) if step else "scene"
            lines.append(f"FAIL seed {self.seed}: {tool} at {ranks} rank{'s' if ranks != 1 else ''}: {kind}")
            for m in excerpt(message, step.tool if step else ""):
                lines.append(f"    {m}")
            lines.append(f"  scene: {self.summary}")
            lines.append(f"  files kept in {self.dir}")
            lines.append("  reproduce:")
            lines.append(f"    export {' '.join(f'{k}={v}' for k, v in ENV.items())}")
            for r in repro:
                lines.append(f"    {r}")
            lines.append(f"    # remake the scene: /usr/bin/python3 {HERE / 'scene.py'} {self.seed} DIR; rerun it: "
                         f"/usr/bin/python3 {HERE / 'run_scenes.py'} --bin {self.args.bin} --seeds {self.seed} "
                         f"--ranks {','.join(map(str, self.ranks))} --keep")
        return "\n".join(lines)

    @property
    def ranks(self):
        """1, then the rank counts this scene runs at: all of --ranks, or --ranks-per-scene of them, a
        different choice per seed (seed k takes the counts from position k on, cyclically), so that a
        seed range covers every count while each scene runs fewer."""
        others = self.args.ranks[1:]
        k = self.args.ranks_per_scene
        if not k or k >= len(others):
            return self.args.ranks
        return [1] + sorted(others[(self.seed + i) % len(others)] for i in range(k))

    def run(self):
        a = self.args
        if self.dir.exists():
            shutil.rmtree(self.dir)
        t0 = time.time()
        o = scene_mod.make(self.seed, self.dir, self.args.grid)
        self.summary = (f"{o['n_particles']} particles, {o['n_blobs']} blobs, background {o['background']}, grid "
                        f"{'x'.join(map(str, o['grid']))} {o['assignment']} {o['precision']}, "
                        + (f"adaptive (--refine {o['amr']['refine']:g} --levels {o['amr']['levels']}), " if o.get("amr") else "")
                        + f"{'periodic' if o['periodic'] else 'open box, region ' + ','.join(f'{v:g}' for v in o['region'])}, "
                        f"threshold {o['threshold']}, {o['snapshots']} snapshots"
                        f"{' of ' + str(o['files']) + ' files' if o['files'] > 1 else ''}, "
                        f"{'stored' if o['potential'] else 'no'} potential, masses {o['mass_mode']}"
                        f"{', gas, stars and dark matter' if o.get('types') else ''}")
        steps = plan(o)
        self.refused = {}  # step name -> exit code of a clean refusal at 1 rank
        self.chain(steps, 1)
        # The other rank counts side by side (a tool run is mostly MPI start-up latency, not CPU), while
        # the serial references check the 1-rank outputs.
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            jobs = [pool.submit(self.chain, steps, r) for r in self.ranks[1:]]
            if not a.no_references:
                self.references(o, self.dir / "r1", steps)
            for j in jobs:
                j.result()
        self.stats = coverage(self.dir / "r1")
        self.seconds = time.time() - t0
        if not self.failures and not a.keep:
            shutil.rmtree(self.dir)
        return not self.failures

    def chain(self, steps, r):
        """Runs the chain at r ranks in the folder r{r}; compares every output with 1 rank's."""
        a = self.args
        byname = {s.name: s for s in steps}
        folder = self.dir / f"r{r}"
        folder.mkdir()
        bad = set()  # steps whose output is missing or differs from 1 rank
        substituted = set()  # steps whose output here is a copy of 1 rank's, or made from such copies
        for s in steps:
            upstream_bad = [n for n in s.needs if n in bad]
            if r != 1 and (a.isolated or any(n in substituted for n in s.needs)):
                # Inputs from the 1-rank run (manifests name their inputs' fingerprints, so all of them).
                if not a.isolated:
                    substituted.add(s.name)
                for n in s.needs:
                    for f in [byname[n].output, byname[n].output + ".json"]:
                        if (self.dir / "r1" / f).exists():
                            shutil.copy2(self.dir / "r1" / f, folder / f)
                upstream_bad = []
            missing = [n for n in s.needs if not (folder / byname[n].output).exists()]
            if missing:
                bad.add(s.name)
                continue
            cmd = command(s, a.bin, r)
            code, err, secs = run(cmd, folder, a.timeout)
            self.run_seconds[r] = self.run_seconds.get(r, 0) + secs
            if a.verbose:
                print(f"  seed {self.seed} r{r} {s.name}: exit {code}, {secs:.1f} s", flush=True)
            repro = [f"cd {folder} && {shell(cmd)}"]
            if code != 0:
                bad.add(s.name)
                # A clean refusal (usage/input/I/O error, one "TOOL: error:" line) with the same exit code at
                # every rank count is the tool's answer to the scene, not a failure; anything else is.
                clean = code in (2, 3, 4) and re.search(rf"^{re.escape(s.tool)}: error: ", err, re.M)
                if r == 1 and clean:
                    self.refused[s.name] = code
                    self.notes.append(f"{variant(s)} refuses the scene: {err.strip().splitlines()[-1]}")
                    continue
                if r != 1 and clean and self.refused.get(s.name) == code:
                    continue
                kind = "timed out (hang?)" if code in (124, 137) else f"exit {code}"
                if not err.strip():
                    err = "(nothing on stderr or stdout)"
                (folder / f"{s.output}.log").write_text(f"$ {shell(cmd)}\nexit {code}\n{err}")
                reason = known(a.known, s, r, err)
                if reason and (self.dir / "r1" / s.output).exists():
                    # Expected until fixed: carry on with the 1-rank output, so the stages after it are checked.
                    self.expected.append((kind, s, r, err, repro, reason))
                    for f in [s.output, s.output + ".json"] + text_outputs(self.dir / "r1", s.output):
                        shutil.copy2(self.dir / "r1" / f, folder / f)
                    bad.discard(s.name)
                    substituted.add(s.name)
                    continue
                # Once more: an intermittent failure is still a failure, but say so, and go on with the
                # retry's output so that the later stages are still checked.
                code2, err2, _ = run(cmd, folder, a.timeout)
                if code2 == 0:
                    kind += f", then exit 0 when run again (intermittent; the failing run's output is in r{r}/{s.output}.log)"
                    bad.discard(s.name)
                self.fail(kind, s, r, err, repro)
                if code2 != 0:
                    continue
            if r == 1:
                continue
            if s.name in self.refused:
                self.fail("succeeds where 1 rank refused", s, r, "", repro)
                continue
            if upstream_bad:
                bad.add(s.name)  # its inputs differ already: judged by the upstream failure
                continue
            ref = self.dir / "r1" / s.output
            if not ref.exists():
                continue
            diffs = compare_h5(str(ref), str(folder / s.output), PROVENANCE_GROUPS.get(s.output, ()))
            for t in text_outputs(self.dir / "r1", s.output):
                if not (folder / t).exists() or (folder / t).read_bytes() != (self.dir / "r1" / t).read_bytes():
                    diffs.append(f"text export {t} differs")
            if diffs:
                bad.add(s.name)
                rr = [f"cd {self.dir / 'r1'} && {shell(command(s, a.bin, 1))}"] + repro
                rr.append(f"h5diff -r -n 10 {self.dir / 'r1' / s.output} {folder / s.output}")
                self.fail("data differ from 1 rank", s, r, "\n".join(diffs), rr)

    def references(self, o, folder, steps):
        """Serial references on the 1-rank outputs (reference.py)."""
        have = {s.name for s in steps if (folder / s.output).exists()}
        todo = []
        if o.get("amr"):  # the adaptive mesh: its own serial watershed (reference_amr.py); merging is mesh-blind
            for k in range(o["snapshots"]):
                p = f"{k:03d}"
                todo.append(("phew-segment", f"{p}.patches", lambda p=p: reference_amr.check_segment(
                    folder / f"{p}.grid.h5", folder / f"{p}.patches.h5", o["threshold"]), [f"{p}.grid", f"{p}.patches"],
                    f"reference_amr.py {p}.grid.h5 {p}.patches.h5 --threshold {o['threshold']}"))
        else:
            for k in range(o["snapshots"]):
                p = f"{k:03d}"
                todo.append(("phew-segment", f"{p}.patches", lambda p=p: reference.check_segment(
                    folder / f"{p}.grid.h5", folder / f"{p}.patches.h5", o["threshold"]), [f"{p}.grid", f"{p}.patches"],
                    f"reference.py segment {p}.grid.h5 {p}.patches.h5 --threshold {o['threshold']}"))
                todo.append(("phew-merge", f"{p}.clumps", lambda p=p: reference.check_merge(
                    folder / f"{p}.patches.h5", folder / f"{p}.clumps.h5", folder / f"{p}.grid.h5", o["relevance"],
                    saddle_text=o["saddle_threshold"]), [f"{p}.patches", f"{p}.clumps"],
                    f"reference.py merge {p}.patches.h5 {p}.clumps.h5 {p}.grid.h5 --relevance {o['relevance']} "
                    f"--saddle-threshold {o['saddle_threshold']}"))
            todo.append(("phew-segment", "000.patches_refined", lambda: reference.check_segment(
                folder / "000.grid.h5", folder / "000.patches_refined.h5", o["threshold"]), ["000.grid", "000.patches_refined"],
                f"reference.py segment 000.grid.h5 000.patches_refined.h5 --threshold {o['threshold']}"))
            todo.append(("phew-merge", "000.clumps_rel", lambda: reference.check_merge(
                folder / "000.patches.h5", folder / "000.clumps_rel.h5", folder / "000.grid.h5", o["relevance"]),
                ["000.patches", "000.clumps_rel"],
                f"reference.py merge 000.patches.h5 000.clumps_rel.h5 000.grid.h5 --relevance {o['relevance']}"))
            todo.append(("phew-merge", "000.clumps_sec", lambda: reference.check_merge(
                folder / "000.patches.h5", folder / "000.clumps_sec.h5", folder / "000.grid.h5", o["relevance"],
                second_relevance=o["second_relevance"]), ["000.patches", "000.clumps_sec"],
                f"reference.py merge 000.patches.h5 000.clumps_sec.h5 000.grid.h5 --relevance {o['relevance']} "
                f"--second-relevance {o['second_relevance']}"))
        byname = {s.name: s for s in steps}
        for tool, name, check, needs, cmd in todo:
            if not all(n in have for n in needs):
                continue
            try:
                bad = check()
            except Exception as e:  # the reference itself broke: report it, do not hide it
                bad = [f"reference raised {type(e).__name__}: {e}"]
            if bad:
                s = byname[name]
                self.fail("differs from the serial reference", s, 1, "\n".join(bad),
                          [f"cd {folder} && /usr/bin/python3 {HERE / cmd}"])


# What a scene exercised, counted in its 1-rank outputs: (name, file, dataset, rows or nonzero values).
COVERAGE = [("peaks", "000.patches.h5", "peaks/id", "rows"), ("saddles", "000.patches.h5", "saddles/peak_a", "rows"),
            ("clumps", "000.clumps.h5", "clumps/id", "rows"), ("hierarchy mergers", "000.clumps.h5", "hierarchy/clump", "rows"),
            ("second-relevance mergers", "000.clumps_sec.h5", "hierarchy/clump", "rows"),
            ("deblended peaks", "000.peaks.h5", "peaks/from_deblending", "nonzero"),
            ("bound objects", "000.bound.h5", "objects/n_bound", "nonzero"),
            ("bound gas or stars", "000.bound.h5", "objects/mass_type", "not_dark_matter"),
            ("peaks after deblending", "000.peaks.h5", "peaks/id", "rows"), ("voters", "000.voters.h5", "voters/peak", "rows"),
            ("tree links", "tree.h5", "peaks/main_progenitor_id", "nonzero"), ("maps", "maps.h5", "maps/sigma", "rows")]


def coverage(folder):
    """What the scene exercised, from the 1-rank outputs (so that a passing scene is not an empty one):
    {name: count}, None where the output is missing."""
    out = {}
    for name, file, obj, how in COVERAGE:
        try:
            with h5py.File(folder / file, "r") as f:
                if how == "not_dark_matter":  # per-type columns of other types than dark matter (1)
                    other = f[obj].parent.attrs["type_codes"] != 1
                    out[name] = int(np.count_nonzero(f[obj][()][:, other]))
                else:
                    out[name] = f[obj].shape[0] if how == "rows" else int(np.count_nonzero(f[obj][()]))
        except (OSError, KeyError):
            out[name] = None
    return out


def coverage_line(c):
    return ", ".join(f"{name} {'-' if n is None else n}" for name, n in c.items())


def parse_seeds(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with the built tools (build/bin)")
    ap.add_argument("--seeds", help="seeds: 17, 1000-1004, 3,9,12 (default: --scenes from a random first seed)")
    ap.add_argument("--first", type=int, help="first seed with --scenes (default: random)")
    ap.add_argument("--scenes", type=int, default=5, help="scenes when --seeds is not given (long mode: 500)")
    ap.add_argument("--ranks", default="1,2,3,4", help="rank counts; 1 first (the reference). Long mode: 1,2,3,4,5,6,7,8")
    ap.add_argument("--ranks-per-scene", type=int, default=0,
                    help="run each scene at 1 rank and only this many of the other --ranks, rotating with the seed "
                         "(CI: 1, so 30 scenes cover 2, 3 and 4 ranks ten times each); 0: all of them")
    ap.add_argument("--grid", default=None,
                    help="NX,NY,NZ: every scene on this grid (e.g. 6,6,6 with --ranks 1,8: more ranks than planes)")
    ap.add_argument("--work", default=None, help="folder for the scenes (default: a new temporary folder)")
    ap.add_argument("--jobs", type=int, default=3, help="rank counts run side by side after the 1-rank run")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per tool run")
    ap.add_argument("--keep", action="store_true", help="keep the files of passing scenes too")
    ap.add_argument("--isolated", action="store_true",
                    help="run each tool at N ranks on the 1-rank outputs of the previous stages (to blame one tool)")
    ap.add_argument("--no-references", action="store_true", help="skip the serial references")
    ap.add_argument("--known-failures", default=str(HERE / "known_failures.json"),
                    help="expected failures (default: known_failures.json beside this script; '' for none)")
    ap.add_argument("--stop", action="store_true", help="stop at the first failing scene")
    ap.add_argument("--require-coverage", action="store_true",
                    help="fail when the scenes together exercised none of one kind (saddles, mergers, voters, ...)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    a.bin = str(Path(a.bin).resolve())
    a.ranks = [int(r) for r in a.ranks.split(",")]
    if a.grid:
        a.grid = [int(v) for v in a.grid.split(",")]
    if a.ranks[0] != 1:
        a.ranks = [1] + [r for r in a.ranks if r != 1]
    for t in ("cic-project", "phew-segment", "phew-merge", "unbind", "deblend", "voters", "mergertree", "dtfe-surface"):
        if not os.access(Path(a.bin) / t, os.X_OK):
            sys.exit(f"run_scenes: no {t} in {a.bin}")
    if a.seeds:
        seeds = parse_seeds(a.seeds)
    else:
        first = a.first if a.first is not None else random.SystemRandom().randrange(1_000_000)
        seeds = list(range(first, first + a.scenes))
    if a.work is None:
        import tempfile
        a.work = tempfile.mkdtemp(prefix="phew-property.")
    Path(a.work).mkdir(parents=True, exist_ok=True)
    a.work = str(Path(a.work).resolve())
    a.known = load_known(a.known_failures)
    btype = ""
    cache = Path(a.bin).parent / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^CMAKE_BUILD_TYPE:STRING=(.*)$", cache.read_text(), re.M)
        btype = m.group(1) if m else ""
    # The tools' own version line names the commit they were built from: a log says what it tested.
    try:
        built = subprocess.run([str(Path(a.bin) / "cic-project"), "--version"], capture_output=True, text=True,
                               env=dict(os.environ, **ENV), timeout=60).stdout.splitlines()[0].split(" ", 1)[1]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        built = "version unknown"
    print(f"property: {len(seeds)} scenes (seeds {seeds[0]}..{seeds[-1]}), ranks {a.ranks}, tools {a.bin} "
          f"({built}, {btype or 'unknown'} build), work {a.work}", flush=True)
    failed, expected, t0 = [], 0, time.time()
    exercised = {}  # name -> summed over the scenes
    for seed in seeds:
        sc = Scene(seed, a)
        ok = sc.run()
        expected += len(sc.expected)
        status = "ok" if ok else "FAILED"
        print(f"seed {seed}: {status} in {sc.seconds:.0f} s at ranks {sc.ranks} ({sc.summary})", flush=True)
        print(f"  exercised: {coverage_line(sc.stats)}", flush=True)
        for name, n in sc.stats.items():
            exercised[name] = exercised.get(name, 0) + (n or 0)
        for n in sc.notes:
            print(f"  note: {n}")
        rep = sc.report()
        if rep:
            print(rep, flush=True)
        if not ok:
            failed.append(seed)
            if a.stop:
                break
    for k in a.known:
        if not k.get("seen") and len(seeds) >= 20:
            print(f"note: the known failure of {k['tool']} ({k['reason']}) did not happen in these scenes; "
                  f"if it is fixed, remove it from {a.known_failures}")
    print(f"property: {len(seeds)} scenes, {len(failed)} failed{': seeds ' + ' '.join(map(str, failed)) if failed else ''}"
          f"{f', {expected} expected failures' if expected else ''}, {time.time() - t0:.0f} s", flush=True)
    # Scenes that passed without exercising a stage (every run of it refused, or nothing to do) tested nothing there.
    unexercised = [name for name in exercised if exercised[name] == 0]
    if a.require_coverage and unexercised:
        print(f"property: FAILED: these scenes exercised no {', no '.join(unexercised)} (--require-coverage)", flush=True)
        return 1
    if not failed:
        try:
            Path(a.work).rmdir()  # empty when no scene was kept
        except OSError:
            pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
