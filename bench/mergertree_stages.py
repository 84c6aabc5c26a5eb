#!/usr/bin/python3
"""Synthetic mergertree stages: pairs of peaks.h5 / voters.h5 with the layout mergertree reads.

    bench/mergertree_stages.py OUTDIR --particles N --peaks P [--snapshots S] [--seed S]
        --template-peaks REAL_PEAKS.h5 --template-voters REAL_VOTERS.h5 --remanifest BIN/remanifest

Writes OUTDIR/NNN.peaks.h5 and OUTDIR/NNN.voters.h5 (+ manifests) for NNN = 000 .. S-1 and prints
one JSON line (counts, sizes, seconds). See bench/README.md (chain_bench.sh, step 4).

What mergertree reads (tools/mergertree/mergertree.cpp, read_stage()) and what is written here:
  peaks.h5   /grid attributes (copied from REAL_PEAKS.h5, with n_particles / total_mass adjusted to
             this simulation), root attributes time / redshift / gravitational_constant,
             /peaks/{id, parent_clump, position[3], densest_cell_position[3], velocity[3],
             n_particles, mass, from_deblending (int8)}, /particles/{id (uint64), peak (int64)}
             sorted by particle ID;
  voters.h5  /grid attributes, root attributes, /voters/{peak, particle_id, binding_energy}
             (N_v = 20 rows per peak, sorted by peak, most bound first), /peaks/{id, n_voters}.
Manifests: REAL_*.json copied, paths and counts replaced, then `remanifest` writes the fingerprint
and size of the new file; the voters manifest lists the peaks file (absolute path) as its input, and
`remanifest VOTERS PEAKS` puts the peaks file's fingerprint there (mergertree checks both).

The model. N particles (IDs drawn from 1 .. 1.25 N, so membership is sparse in the ID space, like
the particles in patches of a real box) in P peaks with Pareto sizes (minimum 20, mean N/P). Each
peak owns a run of "slots", most bound first; a slot holds a particle. Its voters are the particles
of its first 20 slots. From one snapshot to the next:
  * 3% of the slots swap particles pairwise at random (particles change peak; ~0.6 of 20 voters
    leave, so ~19 votes stay: the link survives the 15-vote threshold);
  * 1% of the peaks merge into another peak (their slots take its label: a merger);
  * 1% of the peaks with >= 80 slots split off the second half of their slots as a new peak, half
    of them flagged from_deblending (artefact candidates);
  * 2% of the particles are left out of /particles (not in a patch this time);
  * peak IDs are renumbered at random in every snapshot (mergertree must not rely on them);
  * positions move by velocity x dt.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

N_VOTERS = 20
MIN_SIZE = 20


def pareto_sizes(rng, n, p):
    """p sizes >= MIN_SIZE summing exactly to n (mean n/p), heavy-tailed."""
    mean = n / p
    if mean < MIN_SIZE:
        raise SystemExit(f"mergertree_stages: {n} particles for {p} peaks is fewer than {MIN_SIZE} per peak")
    alpha = mean / (mean - MIN_SIZE) if mean > MIN_SIZE else 50.0
    raw = MIN_SIZE * (1.0 - rng.random(p)) ** (-1.0 / alpha)
    raw = np.minimum(raw, n / 20)  # no single peak above 5% of the particles
    extra = (raw - MIN_SIZE) * ((n - MIN_SIZE * p) / (raw - MIN_SIZE).sum())
    sizes = MIN_SIZE + np.floor(extra).astype(np.int64)
    sizes[np.argmax(sizes)] += n - sizes.sum()
    return sizes


def write_manifest(template, path, kind, summary, inputs, remanifest, upstream=None):
    m = json.loads(Path(template).read_text())
    m["kind"] = kind
    m["tool"] = dict(m.get("tool", {}), name="mergertree_stages.py (synthetic)")
    m["command_line"] = [sys.argv[0]] + sys.argv[1:]
    m["outputs"] = [{"path": str(path), "kind": kind}]
    if inputs is not None:  # None: the template's (a peaks file must name what it was made from)
        m["inputs"] = inputs
    m["summary"] = summary
    m["provenance"] = []
    m["timings"] = {}
    Path(str(path) + ".json").write_text(json.dumps(m, indent=2) + "\n")
    cmd = [remanifest, str(path)] + ([str(upstream)] if upstream else [])
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--particles", type=float, required=True)
    ap.add_argument("--peaks", type=float, required=True)
    ap.add_argument("--snapshots", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--template-peaks", required=True)
    ap.add_argument("--template-voters", required=True)
    ap.add_argument("--remanifest", required=True)
    a = ap.parse_args()
    t_start = time.perf_counter()
    n, p0 = int(a.particles), int(a.peaks)
    out = Path(a.outdir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)

    # The grid and the units come from real files of the tools, so the stages read like theirs.
    with h5py.File(a.template_peaks, "r") as f:
        grid_attrs = dict(f["/grid"].attrs)
        G = float(f.attrs.get("gravitational_constant", 43009.1727))
        velocity_units = f["/peaks/velocity"].attrs["units"]
    with h5py.File(a.template_voters, "r") as f:
        energy_units = f["/voters/binding_energy"].attrs["units"]
        acceleration_units = f["/peaks/a0"].attrs["units"]
        length_units = f["/peaks/search_radius"].attrs["units"]
    box = np.asarray(grid_attrs["box_size"], dtype=float)
    n_total = int(n * 1.25)  # particles in the simulation; those in patches are a subset
    mp = float(grid_attrs.get("particle_mass", 1.0))
    grid_attrs["n_particles"] = np.uint64(n_total)
    grid_attrs["total_mass"] = n_total * mp

    # Particles in patches: a sorted sparse subset of 1 .. n_total.
    keep = np.zeros(n_total, dtype=bool)
    keep[rng.permutation(n_total)[:n]] = True
    member_ids = (np.flatnonzero(keep) + 1).astype(np.uint64)
    del keep
    idx_t = np.uint32 if n < 2**32 else np.int64
    member_at = rng.permutation(n).astype(idx_t)  # slot -> member index
    slot_of = np.empty(n, dtype=idx_t)  # member index -> slot
    slot_of[member_at] = np.arange(n, dtype=idx_t)

    sizes = pareto_sizes(rng, n, p0)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    label = np.repeat(np.arange(p0, dtype=np.int32), sizes)  # slot -> internal peak
    # Per internal peak: own run of slots (start, size), alive, from_deblending, parent, position, velocity.
    cap = p0 * 2
    pk_start = np.zeros(cap, np.int64); pk_start[:p0] = starts
    pk_size = np.zeros(cap, np.int64); pk_size[:p0] = sizes
    alive = np.zeros(cap, bool); alive[:p0] = True
    deb = np.zeros(cap, np.int8)
    parent = np.arange(cap, dtype=np.int64)
    pos = np.zeros((cap, 3)); pos[:p0] = rng.random((p0, 3)) * box
    vel = np.zeros((cap, 3)); vel[:p0] = rng.normal(0, 200.0, (p0, 3))
    n_int = p0
    dt = 0.01  # kpc/(km/s) units of the positions: ~2 kpc per snapshot at 200 km/s
    report = {"particles": n, "peaks_initial": p0, "snapshots": a.snapshots, "n_total": n_total, "stages": []}

    for s in range(a.snapshots):
        t0 = time.perf_counter()
        if s > 0:
            # 1. Swap 3% of the slots pairwise.
            m = int(0.015 * n)
            pick = np.unique(rng.integers(0, n, size=2 * m))
            rng.shuffle(pick)
            pick = pick[: len(pick) // 2 * 2].reshape(2, -1)
            i, j = pick[0], pick[1]
            mi, mj = member_at[i].copy(), member_at[j].copy()
            member_at[i], member_at[j] = mj, mi
            slot_of[mj], slot_of[mi] = i, j
            # 2. Mergers: 1% of the live peaks take another live peak's label.
            live = np.flatnonzero(alive[:n_int])
            k = max(1, len(live) // 100)
            victims = rng.choice(live, size=k, replace=False)
            targets = rng.choice(np.setdiff1d(live, victims), size=k)
            remap = np.arange(n_int, dtype=np.int32)
            remap[victims] = targets
            # chains (a victim chosen as another victim's target) are avoided by setdiff1d above
            label = remap[label]
            alive[victims] = False
            # 3. Births: 1% of the live peaks with >= 80 own slots split off the second half of them.
            live = np.flatnonzero(alive[:n_int])
            big = live[pk_size[live] >= 4 * MIN_SIZE]
            k = min(len(big), max(1, len(live) // 100), cap - n_int)
            for q in rng.choice(big, size=k, replace=False) if k else []:
                half = pk_size[q] // 2
                new = n_int
                n_int += 1
                pk_start[new] = pk_start[q] + pk_size[q] - half
                pk_size[new] = half
                pk_size[q] -= half
                label[pk_start[new]: pk_start[new] + half] = new
                alive[new] = True
                deb[new] = 1 if rng.random() < 0.5 else 0
                parent[new] = q
                pos[new] = pos[q] + rng.normal(0, 5.0, 3)
                vel[new] = vel[q] + rng.normal(0, 300.0, 3)
            pos[:n_int] = np.mod(pos[:n_int] + vel[:n_int] * dt, box)
        live = np.flatnonzero(alive[:n_int])
        ids = np.zeros(n_int, np.int64)  # internal -> file ID, renumbered every snapshot
        ids[live] = rng.permutation(len(live)) + 1 + s * 10 * p0

        # /particles: members in ID order, 2% left out this snapshot.
        in_patch = rng.random(n, dtype=np.float32) >= 0.02
        part_peak = ids[label[slot_of]]
        pid_out, peak_out = member_ids[in_patch], part_peak[in_patch]
        counts = np.bincount(label, minlength=n_int)
        # Voters: the first N_v own slots of every live peak, most bound first.
        nv = np.minimum(pk_size[live], N_VOTERS)
        order = np.argsort(ids[live])
        live_sorted, nv_sorted = live[order], nv[order]
        vslot = np.repeat(pk_start[live_sorted], nv_sorted) + (
            np.arange(nv_sorted.sum()) - np.repeat(np.cumsum(nv_sorted) - nv_sorted, nv_sorted))
        vpeak = np.repeat(ids[live_sorted], nv_sorted)
        vpid = member_ids[member_at[vslot]]
        venergy = -1e5 / (1 + (np.arange(len(vslot)) - np.repeat(np.cumsum(nv_sorted) - nv_sorted, nv_sorted)))

        tm = 0.5 + 0.05 * s
        stem = f"{s:03d}"
        ppath, vpath = out / f"{stem}.peaks.h5", out / f"{stem}.voters.h5"
        for pth in (ppath, vpath):
            for q in (pth, Path(str(pth) + ".json")):
                q.unlink(missing_ok=True)
        with h5py.File(ppath, "w") as f:
            g = f.create_group("grid")
            for key, val in grid_attrs.items():
                g.attrs[key] = val
            f.attrs["time"] = tm
            f.attrs["redshift"] = 1 / tm - 1
            f.attrs["gravitational_constant"] = G
            o = np.argsort(ids[live])
            L = live[o]
            f["/peaks/id"] = ids[L]
            par = parent[L]
            f["/peaks/parent_clump"] = np.where(alive[par], ids[par], ids[L])
            f["/peaks/position"] = pos[L]
            f["/peaks/densest_cell_position"] = pos[L]
            f["/peaks/velocity"] = vel[L]
            f["/peaks/n_particles"] = counts[L].astype(np.int64)
            f["/peaks/mass"] = counts[L] * mp
            f["/peaks/from_deblending"] = deb[L]
            # As lib/io/peaks_file.cpp writes them: the numbering of velocity-space peaks, the units.
            f["/peaks"].attrs["first_new_id"] = np.int64(s * 10 * p0 + 1)
            f["/peaks/velocity"].attrs["units"] = velocity_units
            f["/particles/id"] = pid_out
            f["/particles/peak"] = peak_out
        with h5py.File(vpath, "w") as f:
            g = f.create_group("grid")
            for key, val in grid_attrs.items():
                g.attrs[key] = val
            f.attrs["time"] = tm
            f.attrs["potential_source"] = "synthetic (bench/mergertree_stages.py)"
            f.attrs["n_voters_requested"] = np.int64(N_VOTERS)
            f.attrs["boosted"] = np.int64(1)
            f["/voters/peak"] = vpeak
            f["/voters/particle_id"] = vpid
            f["/voters/binding_energy"] = venergy
            f["/voters/binding_energy"].attrs["units"] = energy_units
            f["/peaks/id"] = ids[live_sorted]
            f["/peaks/search_radius"] = np.ones(len(live_sorted))
            f["/peaks/search_radius"].attrs["units"] = length_units
            f["/peaks/a0"] = np.zeros((len(live_sorted), 3))
            f["/peaks/a0"].attrs["units"] = acceleration_units
            f["/peaks/n_voters"] = nv_sorted.astype(np.int64)
            f["/peaks/n_candidates"] = pk_size[live_sorted].astype(np.int64)
        t_write = time.perf_counter()
        write_manifest(a.template_peaks + ".json", ppath, "peaks",
                       {"n_peaks": int(len(live)), "n_particles_in_patches": int(in_patch.sum()),
                        "n_new_peaks": int(deb[live].sum())}, None, a.remanifest)
        pfp = json.loads(Path(str(ppath) + ".json").read_text())["outputs"][0]["fingerprint"]
        write_manifest(a.template_voters + ".json", vpath, "voters",
                       {"n_peaks": int(len(live)), "n_voters": int(len(vpid))},
                       [{"path": str(ppath), "kind": "peaks", "size": ppath.stat().st_size, "fingerprint": pfp,
                         "manifest_id": None}], a.remanifest, upstream=ppath)
        report["stages"].append({"peaks": str(ppath), "voters": str(vpath), "n_peaks": int(len(live)),
                                 "n_particles": int(in_patch.sum()), "n_voters": int(len(vpid)),
                                 "peaks_bytes": ppath.stat().st_size, "voters_bytes": vpath.stat().st_size,
                                 "seconds": time.perf_counter() - t0, "manifest_seconds": time.perf_counter() - t_write})
    report["seconds"] = time.perf_counter() - t_start
    print(json.dumps(report))


if __name__ == "__main__":
    main()
