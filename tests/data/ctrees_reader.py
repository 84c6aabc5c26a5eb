#!/usr/bin/python3
"""An independent reader of the Consistent-Trees layout (tree_0_0_0.dat), written from the rules of
docs/formats.md and of ytree's consistent_trees frontend (which cannot run here), and a check of every
link against the tree.h5 it was exported from.

    ctrees_reader.py TREE_0_0_0.DAT TREE.H5 [ARBOR.H5]   prints "ok" or raises AssertionError

With ARBOR.H5 (mergertree --export-arbor), ytree's own format is read by the rules of its loader too
(arbor_type "YTreeArbor", field_info JSON with units, total_trees, the header's per-file tree ranges,
the data file PREFIX_0000.h5 with per-tree row ranges, each tree's root first with desc_uid -1), and its
trees must be the Consistent-Trees file's, row for row.

Rules checked:
  - line 1: '#' then tokens NAME(INDEX), INDEX = the token's position; the names ytree needs are there
    (id, desc_id, scale, Mvir, Rvir, x, y, z, vx, vy, vz, Tree_root_ID, upid, pid)
  - header lines start with '#': one with "Omega_M = ..; Omega_L = ..; h0 = .." (" = " with spaces, ';'
    between), one "Full box size = L Mpc/h", one containing "Consistent Trees"; the unit lines
    "NAME: text (UNITS)" give Mpc/h for X/Y/Z, km/s for VX/VY/VZ, Msun/h for Mvir, kpc/h for Rvir
  - the first line not starting with '#' is the number of trees; then exactly that many blocks
    "#tree ROOT" with no other '#' in them
  - in a block: the first row is the root (id == ROOT, desc_id == -1); every row's Tree_root_ID is
    ROOT; every other row's descendant is an earlier row of the same block (depth-first order); ids are
    unique over the file; Depth_first_ID increases by one row to row; a row's main progenitor (mmp? = 1)
    comes right after it; Last_progenitor_depthfirst_ID bounds its subtree
"""
import re
import sys

import h5py
import numpy as np

NEEDED = ["scale", "id", "desc_scale", "desc_id", "num_prog", "pid", "upid", "Mvir", "Rvir", "mmp?", "x", "y", "z",
          "vx", "vy", "vz", "Depth_first_ID", "Tree_root_ID", "Orig_halo_ID", "Snap_idx",
          "Last_progenitor_depthfirst_ID"]


def read(path):
    with open(path) as f:
        lines = f.read().split("\n")
    assert lines[0].startswith("#"), "line 1 must start with '#'"
    tokens = lines[0][1:].split()
    names = []
    for k, t in enumerate(tokens):
        m = re.fullmatch(r"(.+)\((\d+)\)", t)
        assert m and int(m.group(2)) == k, f"column token {t!r} is not NAME({k})"
        names.append(m.group(1))
    for n in NEEDED:
        assert n in names, f"no column {n}"
    header = {"units": {}}
    i = 1
    while lines[i].startswith("#"):
        line = lines[i]
        if "Omega_M" in line:
            parts = line[1:].split(";")
            header["omega_m"], header["omega_l"], header["h0"] = (float(p.split(" = ")[1]) for p in parts[:3])
        elif "Full box size" in line:
            value, unit = line.split("=")[1].split()
            header["box"] = float(value)
            assert unit == "Mpc/h", unit
        elif "Consistent Trees" in line:
            header["version_line"] = line
        elif ":" in line:
            fields, text = line[1:].split(":", 1)
            if "(" in text:
                units = text[text.find("(") + 1:text.rfind(")")]
                for word in ("(physical, peculiar)", "(comoving)", "(physical)", "comoving", "physical"):
                    units = units.replace(word, "")
                for name in re.split(r"[/,]", fields):
                    header["units"][name.strip().lower()] = units.strip()
        i += 1
    for key in ("omega_m", "box", "version_line"):
        assert key in header, f"no {key} header line"
    for name, want in (("x", "Mpc/h"), ("vx", "km/s"), ("mvir", "Msun/h"), ("rvir", "kpc/h")):
        assert header["units"].get(name) == want, (name, header["units"].get(name))
    n_trees = int(lines[i].strip())
    i += 1
    trees = []
    while i < len(lines) and lines[i].strip():
        m = re.fullmatch(r"#tree (\d+)", lines[i])
        assert m, f"line {i + 1}: expected '#tree ID', got {lines[i]!r}"
        root = int(m.group(1))
        i += 1
        rows = []
        while i < len(lines) and lines[i].strip() and not lines[i].startswith("#"):
            assert "#" not in lines[i]
            values = lines[i].split()
            assert len(values) == len(names), f"line {i + 1}: {len(values)} values for {len(names)} columns"
            rows.append([float(v) for v in values])
            i += 1
        trees.append((root, np.array(rows)))
    assert len(trees) == n_trees, f"{len(trees)} tree blocks, the count line says {n_trees}"
    col = {n: k for k, n in enumerate(names)}
    return header, col, trees


def check_blocks(col, trees):
    seen = set()
    df_next = 0
    for root, rows in trees:
        c = lambda name: rows[:, col[name]].astype(np.int64)  # noqa: E731
        ids, desc = c("id"), c("desc_id")
        assert ids[0] == root and desc[0] == -1, f"tree {root}: the first row is not its root"
        assert (c("Tree_root_ID") == root).all(), f"tree {root}: Tree_root_ID"
        assert not (set(ids) & seen) and len(set(ids)) == len(ids), f"tree {root}: ids not unique"
        seen |= set(ids)
        position = {int(h): k for k, h in enumerate(ids)}
        for k in range(1, len(rows)):
            assert int(desc[k]) in position and position[int(desc[k])] < k, f"tree {root}: row {k} before its descendant"
        dfid = c("Depth_first_ID")
        assert (dfid == np.arange(df_next, df_next + len(rows))).all(), f"tree {root}: Depth_first_ID"
        df_next += len(rows)
        last = c("Last_progenitor_depthfirst_ID")
        mmp = c("mmp?")
        for k in range(len(rows)):
            progs = [j for j in range(k + 1, len(rows)) if desc[j] == ids[k]]
            assert len(progs) == c("num_prog")[k], f"tree {root}: num_prog of row {k}"
            main = [j for j in progs if mmp[j] == 1]
            assert len(main) <= 1
            if main:
                assert main[0] == k + 1, f"tree {root}: the main progenitor of row {k} is not next"
            sub = [j for j in range(len(rows)) if dfid[j] > dfid[k] and dfid[j] <= last[k]]
            assert all(_descends(j, k, desc, position) for j in sub), f"tree {root}: subtree of row {k}"
    return seen


def _descends(j, k, desc, position):
    while j != k:
        if desc[j] < 0:
            return False
        j = position[int(desc[j])]
    return True


def check_against_tree(path, tree_path):
    header, col, trees = read(path)
    seen = check_blocks(col, trees)
    p = h5py.File(tree_path, "r")["peaks"]
    n = len(p["id"])
    assert seen == set(range(n)), "the file does not hold every row of tree.h5 exactly once"
    row_of = {(int(s), int(i)): k for k, (s, i) in enumerate(zip(p["snapshot"][...], p["id"][...]))}
    host = p["host"][...] if "host" in p else np.zeros(n, dtype=np.int64)
    linked = 0
    for _, rows in trees:
        for r in rows:
            k = int(r[col["id"]])
            assert (int(r[col["Snap_idx"]]), int(r[col["Orig_halo_ID"]])) == (p["snapshot"][k], p["id"][k])
            ds, di = int(p["descendant_snapshot"][k]), int(p["descendant_id"][k])
            want = row_of[(ds, di)] if ds >= 0 else -1
            assert int(r[col["desc_id"]]) == want, (k, r[col["desc_id"]], want)
            linked += want >= 0
            if want >= 0:  # mmp?: this row is its descendant's main progenitor
                is_main = (p["main_progenitor_snapshot"][want], p["main_progenitor_id"][want]) == (p["snapshot"][k], p["id"][k])
                assert int(r[col["mmp?"]]) == int(is_main), k
            h = int(host[k])
            want_pid = row_of.get((int(p["snapshot"][k]), h), -1) if h > 0 and h != p["id"][k] else -1
            assert int(r[col["pid"]]) == want_pid and int(r[col["upid"]]) == want_pid, (k, r[col["pid"]], want_pid)
            assert int(r[col["phew_lineage"]]) == p["lineage"][k]
            assert int(r[col["phew_merged"]]) == int(p["merged"][k])
    assert linked > 0, "no links at all"
    return header, col, trees


def check_arbor(path, col, trees):
    import json
    import os
    h = h5py.File(path, "r")
    assert np.array([h.attrs["arbor_type"]]).astype(str)[0] == "YTreeArbor"  # as ytree 2.x reads it
    info = json.loads(h.attrs["field_info"])
    for name, units in (("uid", ""), ("desc_uid", ""), ("mass", "Msun/h"), ("position_x", "Mpc/h"),
                        ("velocity_x", "km/s"), ("virial_radius", "kpc/h"), ("scale_factor", "")):
        assert info[name]["units"] == units, (name, info[name])
    n_trees = int(h.attrs["total_trees"])
    assert n_trees == len(trees)
    for key in ("hubble_constant", "omega_matter", "omega_lambda", "box_size"):
        assert key in h.attrs, key
    ends = h["index/tree_end_index"][...]
    assert ends[-1] == n_trees and (h["index/tree_start_index"][...] == np.concatenate([[0], ends[:-1]])).all()
    data = h5py.File(os.path.splitext(path)[0] + "_0000.h5", "r")
    start, end = data["index/tree_start_index"][...], data["index/tree_end_index"][...]
    uid, desc = data["data/uid"][...], data["data/desc_uid"][...]
    assert (h["data/uid"][...] == uid[start]).all(), "the header's roots"
    for t, (root, rows) in enumerate(trees):
        u, d = uid[start[t]:end[t]], desc[start[t]:end[t]]
        assert u[0] == root and d[0] == -1, f"tree {t}: the root first"
        assert set(d[1:]) <= set(u), f"tree {t}: a descendant outside the tree"
        assert (u == rows[:, col["id"]]).all() and (d == rows[:, col["desc_id"]]).all(), f"tree {t} differs"
        assert np.allclose(data["data/mass"][start[t]:end[t]], rows[:, col["Mvir"]], rtol=1e-5, equal_nan=True)  # nan: not measurable


if __name__ == "__main__":
    _, col, trees = check_against_tree(sys.argv[1], sys.argv[2])
    if len(sys.argv) > 3:
        check_arbor(sys.argv[3], col, trees)
    print("ok")
