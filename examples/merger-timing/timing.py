#!/usr/bin/python3
"""The recorded merger snapshot of each tree of examples/merger-timing/run.sh against the true one.

  timing.py OUTDIR FIGURE.png

True: the first snapshot at which the satellite's centre (truth files) is within the host's scale
radius. Recorded: the snapshot of the satellite lineage's descendant (its last peak is `merged`): of the
peaks recorded as merged, the most massive (on a fine mesh small clumps of the host's outskirts come and
go, and merge too; they are counted apart).
Prints a Markdown table and draws the separation of the centres with the recorded snapshots marked.
"""
import glob
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

out, figure = sys.argv[1], sys.argv[2]
truths = sorted(glob.glob(f"{out}/snaps/snap_[0-9][0-9][0-9].truth.h5"))
sep, dv, time = [], [], []
for path in truths:
    with h5py.File(path) as f:
        c, v = f["components/center"][...], f["components/velocity"][...]
        time.append(f.attrs["time_myr"])
        host_rs = f["components/scale_radius"][0]
    sep.append(np.linalg.norm(c[1] - c[0]))
    dv.append(np.linalg.norm(v[1] - v[0]))
sep, dv, time = np.array(sep), np.array(dv), np.array(time)
true = int(np.argmax(sep < host_rs))


def recorded(tree):
    """The snapshot the satellite's merger is recorded at (the heaviest merged peak's descendant), and
    the number of other mergers."""
    with h5py.File(tree) as f:
        p = f["peaks"]
        m = np.flatnonzero(p["merged"][...])
        if len(m) == 0:
            return None, 0
        sat = m[np.argmax(p["mass"][...][m])]
        return int(p["descendant_snapshot"][sat]), len(m) - 1


print(f"true coalescence: snapshot {true} ({time[true]:.0f} Myr), centres {sep[true]:.1f} kpc apart "
      f"(host r_s = {host_rs:.1f} kpc), relative speed {dv[true]:.1f} km/s\n")
print("| mesh | relevance | deblending | recorded merger | centres apart then | early by | small mergers |")
print("|---|---|---|---|---|---|---|")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(time, sep, "k-", label="centres' separation (truth)")
ax.axhline(host_rs, color="grey", ls="--", lw=0.8, label="host's scale radius")
ax.axvline(time[true], color="k", ls=":", label=f"true coalescence (< host $r_s$), snapshot {true}")
marks = {}
def mesh_name(mesh):  # g64 -> 64³; a4 -> 16³ + 4 levels
    return f"{mesh[1:]}³" if mesh[0] == "g" else f"16³ + {mesh[1:]} levels"


def variant(d):  # uniform grids first, by cells; then adaptive meshes by levels; relevance descending
    mesh, rel = os.path.basename(d).split("-r")
    return mesh[0] == "a", int(mesh[1:]), -float(rel)


for d in sorted(glob.glob(f"{out}/[ga]*-r*"), key=variant):
    mesh, rel = os.path.basename(d).split("-r")
    for suffix, name in (("", "on"), ("-off", "off")):
        tree = f"{d}/tree{suffix}.h5"
        if not os.path.exists(tree):
            continue
        s, others = recorded(tree)
        if s is None:
            print(f"| {mesh_name(mesh)} | {rel} | {name} | no merger | | | |")
            continue
        print(f"| {mesh_name(mesh)} | {rel} | {name} | snapshot {s} ({time[s]:.0f} Myr) | {sep[s]:.1f} kpc "
              f"| {true - s} snapshot{'' if true - s == 1 else 's'} ({time[true] - time[s]:.0f} Myr) | {others} |")
        marks.setdefault((mesh_name(mesh), rel), []).append(s)
for (mesh, rel), ss in marks.items():
    s = ss[0]
    ax.plot(time[s], sep[s], "o", ms=8, label=f"recorded, {mesh}, relevance {rel}"
            + ("" if len(set(ss)) == 1 else " (deblending changes it)"))
ax.set_xlabel("time (Myr)")
ax.set_ylabel("separation (kpc)")
ax.set_title("synth-particles merger: when the tree records the coalescence")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(figure, dpi=110)
