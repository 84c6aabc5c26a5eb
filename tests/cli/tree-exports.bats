#!/usr/bin/env bats
# mergertree's exports and statistics: the Consistent-Trees file read back by an independent
# reader of its layout (tests/data/ctrees_reader.py) with every link checked against tree.h5; the
# tree-quality statistics where the answer is known (a ballistic crossing from synth-particles: no
# displacement outlier; a smoothly growing halo: beta_M > 0, xi_M ~ 0); spherical-overdensity masses of
# an analytic NFW halo within 2%; batch and on-the-fly trees export the same file; with unbind's bound.h5
# per stage, the export's halo properties are bound.h5's and the statistics weigh by bound mass.
load common

setup_file() {
  load common
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D/cross" "$D/grow" "$D/nfw"
  # chain DIR SNAP PREFIX [cic options...]: cic-project -> voters for one snapshot
  chain() {
    local dir=$1 snap=$2 k=$3
    shift 3
    cic-project "$snap" -o "$dir/$k.grid.h5" -q "$@"
    phew-segment "$dir/$k.grid.h5" -o "$dir/$k.patches.h5" --threshold 80mean -q
    phew-merge "$dir/$k.patches.h5" -o "$dir/$k.clumps.h5" --relevance 2 -q
    deblend "$dir/$k.clumps.h5" "$snap" -o "$dir/$k.peaks.h5" -q
    voters "$dir/$k.peaks.h5" "$snap" -o "$dir/$k.voters.h5" -q
  }
  # Two haloes moving rigidly through each other (open space: a fixed region around them).
  synth-particles crossing -o "$D/cross/snap" --mode ballistic --snapshots 7 --interval 100 -q
  for k in 000 001 002 003 004 005 006; do
    chain "$D/cross" "$D/cross/snap_$k.hdf5" "$k" --grid 64 --region -100,-100,-100,260,260,100
  done
  # A halo that grows smoothly: M200 proportional to cosmic time with the same particle mass, its
  # particles first (IDs 1..n, so the halo keeps its particles), in a periodic box topped up with a light
  # uniform background to the same particle count in every snapshot; from z = 1 to z = 0.
  for k in 0 1 2 3 4; do
    /usr/bin/python3 - "$k" >"$D/grow/scene_$k.json" <<'PY'
import json, math, sys
k = int(sys.argv[1])
z = [1.0, 0.7, 0.45, 0.2, 0.0][k]
a = 1 / (1 + z)
t = 2 / (3 * math.sqrt(0.7)) * math.asinh(math.sqrt(0.7 / 0.3) * a ** 1.5)  # cosmic time, 1/H0
m = 100 * t / 0.9641  # 1e10 Msun/h: 100 at z = 0
n = int(round(m * 600))
print(json.dumps({"seed": 3, "box": 10000, "redshift": z, "cosmology": {"omega_m": 0.3, "omega_lambda": 0.7, "hubble": 0.7},
                  "components": [{"name": "halo", "model": "nfw", "particles": n, "mass": m, "concentration": 8,
                                  "truncation": 3, "position": [5000, 5000, 5000]},
                                 {"name": "background", "model": "uniform", "particles": 80000 - n, "mass": 1}]}))
PY
    synth-particles "$D/grow/scene_$k.json" -o "$D/grow/snap_00$k.hdf5" -q
    chain "$D/grow" "$D/grow/snap_00$k.hdf5" "00$k" --grid 64
    unbind "$D/grow/00$k.peaks.h5" "$D/grow/snap_00$k.hdf5" -o "$D/grow/00$k.bound.h5" -q
  done
  # An NFW halo at z = 0.5, pure NFW out to 3 r200.
  synth-particles nfw -o "$D/nfw/h.hdf5" --particles 200000 --mass 100 --concentration 8 --truncation 3 --box 10000 \
    --cosmology 0.3,0.7,0.7 --redshift 0.5 -q
  chain "$D/nfw" "$D/nfw/h.hdf5" h --grid 64
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "Consistent-Trees and ytree-arbor exports: independent readers accept them and every link matches tree.h5" {
  for case in cross grow; do
    run mergertree "$D/$case"/00*.peaks.h5 -o "$OUT/$case.h5" --export-ctrees "$OUT/$case" --export-arbor "$OUT/$case" -q
    assert_success
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/ctrees_reader.py" "$OUT/$case/tree_0_0_0.dat" "$OUT/$case.h5" \
      "$OUT/$case/arbor.h5"
    assert_output "ok"
  done
  # the manifest lists it with the tree, like every side output
  run /usr/bin/python3 -c 'import json, sys; print([o["kind"] for o in json.load(open(sys.argv[1]))["outputs"]])' "$OUT/cross.h5.json"
  assert_output --partial "consistent-trees"
  # units: the crossing is in kpc and km/s without a cosmology (h0 = 1), the growing halo in kpc/h
  run grep -E "^#(Omega_M|Full box size)" "$OUT/cross/tree_0_0_0.dat"
  assert_output $'#Omega_M = 0.000000; Omega_L = 0.000000; h0 = 1.000000\n#Full box size = 0.360000 Mpc/h'
  run grep -E "^#Full box size" "$OUT/grow/tree_0_0_0.dat"
  assert_output "#Full box size = 10.000000 Mpc/h"
}

@test "the growing halo's tree: its main branch spans every snapshot, beta_M > 0 and xi_M ~ 0" {
  run mergertree "$D/grow"/00*.peaks.h5 -o "$OUT/t.h5" --stats "$OUT/stats.json" --particles -q
  assert_success
  run /usr/bin/python3 - "$OUT/stats.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["haloes"]
assert h["n_trees"] >= 1 and h["main_branch_length"]["histogram"]["counts"][-1] >= 1, h["main_branch_length"]
b, x = h["beta_m"], h["xi_m"]
assert b["n"] >= 4 and b["mean"] > 0.2 and b["fraction_negative"] == 0, b   # M ~ t: beta = 0.5 for exact sizes
assert abs(x["mean"]) < 0.05 and x["std"] < 0.1, x
print("ok")
PY
  assert_output "ok"
}

@test "a ballistic crossing: no main-branch link with Delta_r > 1, and the counts are reported" {
  run mergertree "$D/cross"/00*.peaks.h5 -o "$OUT/t.h5" --stats "$OUT/stats.json" -q
  assert_success
  run /usr/bin/python3 - "$OUT/stats.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
h = s["haloes"]
assert h["n_trees"] >= 2 and h["delta_r"]["n"] >= 10, h["delta_r"]
assert h["delta_r_fraction_above_1"] == 0, h["delta_r"]
assert set(s["counts"]) == {"peaks", "lineages", "mergers", "revived", "links_skipping_snapshots", "artefacts",
                            "final_artefacts_left_out"}
assert "main_branch_length" in s["conventions"]
print("ok")
PY
  assert_output "ok"
}

@test "virial and 200c masses of an analytic NFW halo at z = 0.5 within 2%" {
  run mergertree "$D/nfw/h.peaks.h5" -o "$OUT/t.h5" --particles --export-ctrees "$OUT/ct" -q
  assert_success
  run /usr/bin/python3 - "$OUT/t.h5" "$D/nfw/h.truth.h5" "$OUT/ct/tree_0_0_0.dat" <<'PY'
import sys, h5py, numpy as np
t = h5py.File(sys.argv[1])["peaks"]
tr = h5py.File(sys.argv[2])["components"]
m200, r200, rs = tr["m200"][0], tr["r200"][0], tr["scale_radius"][0]
om, ol, z = 0.3, 0.7, 0.5
a = 1 / (1 + z)
e2 = om / a**3 + ol
rho_c = 2.775366e-8 * e2 * a**3  # comoving critical density at z, (1e10 Msun/h) / (kpc/h)^3
mu = lambda x: np.log1p(x) - x / (1 + x)
M = lambda r: m200 * mu(r / rs) / mu(r200 / rs)  # pure NFW inside 3 r200
def radius(delta):  # bisection: M(<r) = delta rho_c 4 pi r^3 / 3
    lo, hi = 0.1 * r200, 2.9 * r200
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if M(mid) > delta * rho_c * 4 / 3 * np.pi * mid**3 else (lo, mid)
    return lo
x = om / a**3 / e2 - 1
dvir = 18 * np.pi**2 + 82 * x - 39 * x * x  # Bryan & Norman
k = int(np.argmax(t["mass"][...]))
for got, want in ((t["mvir"][k], M(radius(dvir))), (t["rvir"][k], radius(dvir)), (t["m200c"][k], M(radius(200)))):
    assert abs(got / want - 1) < 0.02, (got, want)
# the export: Mvir in Msun/h, Rvir in comoving kpc/h
rows = [l.split() for l in open(sys.argv[3]) if l.startswith(" ")]
big = max(rows, key=lambda r: float(r[10]))
assert abs(float(big[10]) / (t["mvir"][k] * 1e10) - 1) < 1e-5 and abs(float(big[11]) / t["rvir"][k] - 1) < 1e-5, (big, t["mvir"][k])
print("ok")
PY
  assert_output "ok"
}

@test "on the fly (--state, --add) exports the same Consistent-Trees file as the batch run" {
  run mergertree "$D/cross"/00[0-3].peaks.h5 -o "$OUT/part.h5" -q
  assert_success
  run mergertree --state "$OUT/part.h5" --add "$D/cross/004.peaks.h5" --add "$D/cross/005.peaks.h5" \
    --add "$D/cross/006.peaks.h5" -o "$OUT/fly.h5" --export-ctrees "$OUT/fly" -q
  assert_success
  run mergertree "$D/cross"/00*.peaks.h5 -o "$OUT/batch.h5" --export-ctrees "$OUT/batch" -q
  assert_success
  run diff <(grep -v "^#Consistent" "$OUT/fly/tree_0_0_0.dat") <(grep -v "^#Consistent" "$OUT/batch/tree_0_0_0.dat")
  assert_success
}

@test "with bound.h5 per stage: the Consistent-Trees and arbor properties are bound.h5's, beta_M uses bound masses" {
  stages=() plain=()
  for k in 0 1 2 3 4; do
    stages+=("$D/grow/00$k.peaks.h5:$D/grow/00$k.voters.h5:$D/grow/00$k.bound.h5")
    plain+=("$D/grow/00$k.peaks.h5:$D/grow/00$k.voters.h5")
  done
  run mergertree "${stages[@]}" -o "$OUT/b.h5" --export-ctrees "$OUT/b" --export-arbor "$OUT/b" --stats "$OUT/b.json" -q
  assert_success
  run mergertree "${plain[@]}" -o "$OUT/p.h5" --export-ctrees "$OUT/p" --stats "$OUT/p.json" -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/ctrees_reader.py" "$OUT/b/tree_0_0_0.dat" "$OUT/b.h5" "$OUT/b/arbor.h5"
  assert_output "ok"
  run /usr/bin/python3 - "$PHEW_SOURCE/tests/data" "$OUT" "$D/grow" <<'PY'
import json, math, sys
import h5py, numpy as np
sys.path.insert(0, sys.argv[1])
from ctrees_reader import read
out, grow = sys.argv[2], sys.argv[3]
header, col, trees = read(f"{out}/b/tree_0_0_0.dat")
h = header["h0"]
# column: (bound.h5 field, "mass" | "length" | "velocity" | None, decimals written or None for %.5e)
want = {"Mvir": ("mvir", "mass", None), "sam_Mvir": ("mvir", "mass", None), "Rvir": ("rvir", "length", 5),
        "M200c": ("m200c", "mass", None), "rs": ("rs_fit", "length", 5), "vrms": ("vrms", "velocity", 3),
        "vmax": ("vmax", "velocity", 3), "Spin": ("spin_peebles", None, 6), "Xoff": ("xoff", "length", 5),
        "Spin_Bullock": ("spin_bullock", None, 6), "b_to_a": ("b_to_a", None, 6), "c_to_a": ("c_to_a", None, 6),
        "T/|U|": ("virial_ratio", None, 6), "phew_bound_mass": ("mass_inclusive", "mass", None),
        "Jx": (("angular_momentum", 0), "J", None), "Jy": (("angular_momentum", 1), "J", None),
        "Jz": (("angular_momentum", 2), "J", None),
        # per type (the growing halo is dark matter alone: one type, bound.h5's inclusive columns)
        "phew_bound_mass_dark_matter": (("mass_inclusive_type", 0), "mass", None),
        "phew_half_mass_radius_dark_matter": (("half_mass_radius_inclusive_type", 0), "length", 5),
        "phew_velocity_dispersion_dark_matter": (("velocity_dispersion_inclusive_type", 0), "velocity", 3),
        "phew_bound_mass_dark_matter_30kpc": (("aperture_mass_inclusive_type", 0, 0), "mass", None),
        "phew_bound_mass_dark_matter_50kpc": (("aperture_mass_inclusive_type", 1, 0), "mass", None)}
checked = 0
for _, rows in trees:
    for r in rows:
        snap, peak = int(r[col["Snap_idx"]]), int(r[col["Orig_halo_ID"]])
        path = f"{grow}/00{snap}.bound.h5"
        b = h5py.File(path)["objects"]
        k = list(b["id"][...]).index(peak)
        u = json.load(open(path + ".json"))["parameters"]["units_used"]
        hf = 1 if u["h_scaled"] else h
        factor = {"mass": u["mass_in_g"] / 1.989e33 * hf, "length": u["length_in_cm"] / 3.085678e21 * hf,
                  "velocity": u["velocity_in_cm_per_s"] / 1e5, None: 1.0}
        # (Msun/h) (Mpc/h) km/s, physical: bound.h5's J has physical lengths already
        factor["J"] = factor["mass"] * factor["length"] / 1e3 * factor["velocity"]
        for name, (field, kind, decimals) in want.items():
            value = b[field[0]][k][tuple(field[1:])] if isinstance(field, tuple) else b[field][k]
            v = value * factor[kind]
            got = r[col[name]]
            if value == 0:  # not measurable in bound.h5
                assert math.isnan(got), (name, snap, got)
                continue
            tol = 1e-5 * abs(v) + (0.51 * 10 ** -decimals if decimals else 0)
            assert abs(got - v) <= tol, (name, snap, peak, got, v)
            checked += 1
assert checked >= 5 * len(want), checked  # the growing halo is measured in every snapshot
# the arbor carries the same values
a = h5py.File(f"{out}/b/arbor_0000.h5")["data"]
rows = np.concatenate([rows for _, rows in trees])
for field, name in (("vmax", "vmax"), ("spin_bullock", "Spin_Bullock"), ("phew_bound_mass", "phew_bound_mass"),
                    ("phew_bound_mass_dark_matter", "phew_bound_mass_dark_matter"),
                    ("phew_velocity_dispersion_dark_matter", "phew_velocity_dispersion_dark_matter"),
                    ("phew_bound_mass_dark_matter_50kpc", "phew_bound_mass_dark_matter_50kpc")):
    assert np.allclose(a[field][...], rows[:, col[name]], rtol=2e-5, atol=6e-7, equal_nan=True), field
# beta_M of the main branch from bound.h5's masses and cosmic times, against the statistics
om, ol = header["omega_m"], header["omega_l"]
t = lambda a: 2 / (3 * math.sqrt(ol)) * math.asinh(math.sqrt(ol / om) * a ** 1.5)
tree = h5py.File(f"{out}/b.h5")["peaks"]
m, s = [], []
for snap, peak, time in sorted(zip(tree["snapshot"][...], tree["id"][...], tree["time"][...])):
    b = h5py.File(f"{grow}/00{snap}.bound.h5")["objects"]
    m.append(b["mass_inclusive"][list(b["id"][...]).index(peak)])
    s.append(time)
beta = [2 / math.pi * math.atan((t(s[i + 1]) + t(s[i])) * (m[i + 1] - m[i]) / ((t(s[i + 1]) - t(s[i])) * (m[i + 1] + m[i])))
        for i in range(len(m) - 1)]
got, plain = json.load(open(f"{out}/b.json"))["haloes"]["beta_m"], json.load(open(f"{out}/p.json"))["haloes"]["beta_m"]
assert got["n"] == len(beta) and abs(got["mean"] - np.mean(beta)) < 1e-9, (got["mean"], np.mean(beta))
assert abs(plain["mean"] - np.mean(beta)) > 1e-6, "the peak masses give the same beta: the test cannot tell"
print("ok")
PY
  assert_output "ok"
  # Without bound.h5 the columns keep their meaning: 0 (not measured), no bound columns; the links are the same.
  run /usr/bin/python3 - "$PHEW_SOURCE/tests/data" "$OUT" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from ctrees_reader import read
_, cb, tb = read(f"{sys.argv[2]}/b/tree_0_0_0.dat")
_, cp, tp = read(f"{sys.argv[2]}/p/tree_0_0_0.dat")
# 48, and per type a mass, a radius, a dispersion and a mass per aperture (30 and 50 kpc)
assert len(cp) == 42 and "Xoff" not in cp and len(cb) == 53, (len(cp), len(cb))
rb, rp = np.concatenate([r for _, r in tb]), np.concatenate([r for _, r in tp])
assert (rp[:, [cp[n] for n in ("rs", "vrms", "vmax", "Spin")]] == 0).all()
for n in ("id", "desc_id", "mmp?", "Orig_halo_ID", "Snap_idx", "pid", "phew_lineage", "x", "vx"):
    assert (rb[:, cb[n]] == rp[:, cp[n]]).all(), n
print("ok")
PY
  assert_output "ok"
  # on the fly: tree.h5 keeps the bound columns for the next --add
  run mergertree "${stages[@]:0:3}" -o "$OUT/part.h5" -q
  assert_success
  run mergertree --state "$OUT/part.h5" --add "${stages[3]}" --add "${stages[4]}" -o "$OUT/fly.h5" --export-ctrees "$OUT/fly" -q
  assert_success
  run diff <(grep -v "^#Consistent" "$OUT/fly/tree_0_0_0.dat") <(grep -v "^#Consistent" "$OUT/b/tree_0_0_0.dat")
  assert_success
  # a bound.h5 of other peaks, or one that is missing, is refused in one line
  mkdir -p "$OUT/x"
  bad_input mergertree "$OUT/x/t.h5" 3 "was not computed from" "${plain[0]}:$D/grow/001.bound.h5" "${stages[1]}"
  bad_input mergertree "$OUT/x/t.h5" 4 "missing bound file" "${plain[0]}:$OUT/none.h5"
}

@test "bad input: --particles without a cosmology, and a snapshot that is gone, say so in one line" {
  run --separate-stderr mergertree "$D/cross/000.peaks.h5" -o "$OUT/t.h5" --particles
  assert_failure 3
  [[ $stderr == "mergertree: error: "*"has no cosmology, so no critical density for --particles" ]] || fail "$stderr"
  run --separate-stderr mergertree "$D/nfw/h.peaks.h5" -o "$OUT/t.h5" --stats-min-mass -1
  assert_failure 2
  run --separate-stderr mergertree "$D/cross/006.peaks.h5" "$D/cross/005.peaks.h5" -o "$OUT/b.h5" --backwards --stats "$OUT/s.json"
  assert_failure 2
  [[ $stderr == *"not a --backwards one"* ]] || fail "$stderr"
  # a stage whose snapshot moved: the tree is made (without units), the export refuses
  mkdir -p "$OUT/moved"
  cp "$D/nfw"/h.* "$OUT/moved/"
  mv "$OUT/moved/h.hdf5" "$OUT/moved/gone.hdf5"
  /usr/bin/python3 - "$OUT/moved" "$D/nfw" <<'PY'
import json, pathlib, sys
new, old = sys.argv[1], sys.argv[2]
for f in pathlib.Path(new).glob("h.*.h5.json"):  # point the manifests at the copies
    f.write_text(f.read_text().replace(old + "/h.hdf5", new + "/h.hdf5").replace(old + "/", new + "/"))
PY
  run --separate-stderr mergertree "$OUT/moved/h.peaks.h5" -o "$OUT/m.h5" --export-ctrees "$OUT/mct"
  assert_failure 3
  [[ $stderr == *"the snapshot it was made from is not at hand"* ]] || fail "$stderr"
  [[ $stderr == *"mergertree: error: the tree does not know its simulation's units"* ]] || fail "$stderr"
  [[ ! -e $OUT/m.h5 && ! -e $OUT/mct/tree_0_0_0.dat ]]
}
