#!/usr/bin/python3
"""The recorded merger snapshot of each tree of examples/merger-timing/run.sh against the true one.

  timing.py OUTDIR FIGURE.png

True: the first snapshot at which the satellite's centre (truth files) is within the host's scale
radius. Recorded: the snapshot of the satellite lineage's descendant (its last peak is `merged`).
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
    with h5py.File(tree) as f:
        p = f["peaks"]
        m = np.flatnonzero(p["merged"][...])
        return [int(p["descendant_snapshot"][i]) for i in m]


print(f"true coalescence: snapshot {true} ({time[true]:.0f} Myr), centres {sep[true]:.1f} kpc apart "
      f"(host r_s = {host_rs:.1f} kpc), relative speed {dv[true]:.1f} km/s\n")
print("| grid | relevance | deblending | recorded merger | centres apart then | early by |")
print("|---|---|---|---|---|---|")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(time, sep, "k-", label="centres' separation (truth)")
ax.axhline(host_rs, color="grey", ls="--", lw=0.8, label="host's scale radius")
ax.axvline(time[true], color="k", ls=":", label=f"true coalescence (< host $r_s$), snapshot {true}")
marks = {}
def variant(d):  # (grid, relevance) of a folder gGRID-rRELEVANCE
    grid, rel = os.path.basename(d)[1:].split("-r")
    return int(grid), -float(rel)


for d in sorted(glob.glob(f"{out}/g*-r*"), key=variant):
    grid, rel = os.path.basename(d)[1:].split("-r")
    for suffix, name in (("", "on"), ("-off", "off")):
        tree = f"{d}/tree{suffix}.h5"
        if not os.path.exists(tree):
            continue
        r = recorded(tree)
        if len(r) != 1:
            print(f"| {grid}³ | {rel} | {name} | {len(r)} mergers | | |")
            continue
        s = r[0]
        print(f"| {grid}³ | {rel} | {name} | snapshot {s} ({time[s]:.0f} Myr) | {sep[s]:.1f} kpc "
              f"| {true - s} snapshot{'' if true - s == 1 else 's'} ({time[true] - time[s]:.0f} Myr) |")
        marks.setdefault((grid, rel), []).append(s)
for (grid, rel), ss in marks.items():
    s = ss[0]
    ax.plot(time[s], sep[s], "o", ms=8, label=f"recorded, {grid}³ cells, relevance {rel}"
            + ("" if len(set(ss)) == 1 else " (deblending changes it)"))
ax.set_xlabel("time (Myr)")
ax.set_ylabel("separation (kpc)")
ax.set_title("synth-particles merger: when the tree records the coalescence")
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(figure, dpi=110)
