#!/usr/bin/env bats
# dtfe-surface end to end: the maps.h5 layout and manifest, mass conservation, the Plummer profile,
# centres from text/CSV/HDF5/clumps.h5, identical maps for 1-4 ranks, any schedule and thread count,
# both triangulation backends, quicklooks, bad input.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # Seeded particle files (phew's own format): an isolated Plummer sphere in a closed box, a clustered
  # periodic box, and degenerate sets for the bad-input cases.
  /usr/bin/python3 - "$D" <<'PY'
import sys, h5py, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(2024)

def plummer(n, a, rmax, c):
    out, have = [], 0
    while have < n:
        x = rng.uniform(1e-9, 1, n)
        r = a / np.sqrt(x ** (-2.0 / 3.0) - 1.0)
        r = r[r < rmax]
        ct = rng.uniform(-1, 1, len(r)); ph = rng.uniform(0, 2 * np.pi, len(r)); st = np.sqrt(1 - ct * ct)
        out.append(np.stack([r * st * np.cos(ph), r * st * np.sin(ph), r * ct], 1) + c)
        have += len(r)
    return np.concatenate(out)[:n]

def write(name, pos, mass, box, periodic):
    with h5py.File(f"{d}/{name}", "w") as f:
        g = f.create_group("particles")
        g["position"] = np.asarray(pos, dtype=np.float64)
        g["mass"] = np.asarray(mass, dtype=np.float64)
        g["velocity"] = np.zeros((len(pos), 3))
        g["id"] = np.arange(1, len(pos) + 1, dtype=np.uint64)
        g.attrs["box_size"] = np.array([box] * 3, dtype=np.float64)
        g.attrs["periodic"] = np.int8(periodic)

# Isolated Plummer sphere, total mass 1, a = 2, in a closed box of side 100.
p = plummer(20000, 2.0, 40.0, np.array([50.0, 50.0, 50.0]))
write("plummer.h5", p, np.full(len(p), 1.0 / 20000), 100.0, 0)
# Clustered periodic box: blobs and a background, wrapped.
blobs = [plummer(4000, r, 15, c) for r, c in ((1.5, (20, 30, 40)), (1.0, (70, 80, 10)), (2.5, (45, 55, 95)))]
q = np.concatenate(blobs + [rng.uniform(0, 100, (8000, 3))]) % 100.0
write("box.h5", q, np.full(len(q), 1e-3), 100.0, 1)
np.savetxt(f"{d}/centers.txt", [(20, 30, 40), (70, 80, 10), (45, 55, 95), (2, 98, 50), (60, 60, 60)], fmt="%.6f")
with open(f"{d}/centers.csv", "w") as f:
    f.write("x,y,z\n")
    for c in np.loadtxt(f"{d}/centers.txt"):
        f.write(",".join(f"{v:.6f}" for v in c) + "\n")
with h5py.File(f"{d}/centers.h5", "w") as f:
    f["centers"] = np.loadtxt(f"{d}/centers.txt")
    f["other/table"] = np.loadtxt(f"{d}/centers.txt")[:2]
    f["flat"] = np.arange(5.0)
# Degenerate: three particles; a plane of particles; open boundaries.
write("few.h5", [(10, 10, 10), (11, 10, 10), (10, 11, 10)], [1, 1, 1], 100.0, 0)
pl = np.column_stack([rng.uniform(20, 80, 500), rng.uniform(20, 80, 500), np.full(500, 50.0)])
write("plane.h5", pl, np.ones(500), 100.0, 0)
with open(f"{d}/plummer.txt", "w") as f:
    f.write("50 50 50\n")
with open(f"{d}/bad.txt", "w") as f:
    f.write("x y z\n1 2 3\n4 five 6\n")
with open(f"{d}/two.txt", "w") as f:
    f.write("1 2\n")
PY
  # A clumps.h5 from the rest of the pipeline, for --centers clumps.h5.
  cic-project "$INPUTS/good.hdf5" -o "$D/grid.h5" --grid 32 -q
  phew-segment "$D/grid.h5" -o "$D/patches.h5" --threshold 3mean -q
  phew-merge "$D/patches.h5" -o "$D/clumps.h5" -q
}

setup() {
  D="$BATS_FILE_TMPDIR/d"
  INPUTS="$BATS_FILE_TMPDIR/inputs"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

@test "maps.h5: layout, units, manifest; the exact mode conserves an isolated sphere's mass" {
  run dtfe-surface "$D/plummer.h5" -o "$OUT/maps.h5" --centers "$D/plummer.txt" --size 90 --depth box \
    --resolution 64 --mode exact --margin 0 --png -q
  assert_success
  assert_only_files "$OUT" maps.h5 maps.h5.json maps.0001.png
  run /usr/bin/python3 - "$OUT/maps.h5" <<'PY'
import sys, json, h5py, numpy as np
f = h5py.File(sys.argv[1])
m = f["maps"]
s = m["sigma"]
assert s.shape == (1, 64, 64) and s.dtype == np.float32, (s.shape, s.dtype)
assert s.attrs["units"] == "(1e10 Msun)/(kpc)^2", s.attrs["units"]  # the file states no units: Gadget's, not h-scaled
for k in ("center", "id", "size", "depth", "margin", "resolution", "axis", "n_particles", "n_vertices",
          "n_tetrahedra", "window_mass", "map_mass"):
    assert len(m[k]) == 1, k
assert tuple(m["center"][0]) == (50, 50, 50) and m["id"][0] == 1 and m["axis"][0] == 2
# depth box on a closed box: twice its side, so the line of sight crosses all of it from any centre
assert m["resolution"][0] == 64 and m["size"][0] == 90 and m["depth"][0] == 200
assert (m.attrs["u_axis"], m.attrs["v_axis"], m.attrs["line_of_sight"]) == ("x", "y", "z")
assert m.attrs["mode"] == "exact" and m.attrs["periodic"] == 0
for k in ("triangulation", "interpolation", "rank"):
    assert len(f["timing"][k]) == 1
# The whole sphere is in the window (non-periodic box, depth = box): the map holds all its mass.
assert m["n_particles"][0] == 20000
total = m["window_mass"][0]
assert abs(total - 1.0) < 1e-9, total
mass = s[0].astype(np.float64).sum() * (90 / 64) ** 2
assert abs(mass - total) < 1e-6 * total, (mass, total)
assert abs(m["map_mass"][0] - total) < 1e-9 * total
man = json.load(open(sys.argv[1] + ".json"))
assert man["kind"] == "maps" and man["summary"]["n_fields"] == 1
assert man["parameters"]["backend_used"] in ("cgal", "qhull")
assert man["inputs"][1]["kind"] == "centers"
assert json.loads(f.attrs["manifest"])["id"] == man["id"]
print("ok")
PY
  assert_output "ok"
  run head -c 8 "$OUT/maps.0001.png"
  assert_output $'\x89PNG\r\n\x1a'
}

@test "ray mode: a Plummer sphere's surface density profile within 5 %, and rays conserve its mass to 1 %" {
  run dtfe-surface "$D/plummer.h5" -o "$OUT/ray.h5" --centers "$D/plummer.txt" --size 16 --depth box \
    --resolution 96 --samples 4 -p float64 -q
  assert_success
  run dtfe-surface "$D/plummer.h5" -o "$OUT/exact.h5" --centers "$D/plummer.txt" --size 16 --depth box \
    --resolution 96 --mode exact -p float64 -q
  assert_success
  run /usr/bin/python3 - "$OUT/ray.h5" "$OUT/exact.h5" <<'PY'
import sys, h5py, numpy as np
s = h5py.File(sys.argv[1])["maps/sigma"][0]
e = h5py.File(sys.argv[2])["maps/sigma"][0]
n, L, a = 96, 16.0, 2.0
x = (np.arange(n) + 0.5) * L / n - L / 2
R = np.hypot(*np.meshgrid(x, x, indexing="ij"))
truth = a * a / (np.pi * (a * a + R * R) ** 2)
for r0, r1 in ((0.2, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 3.0), (3.0, 4.5), (4.5, 6.0)):
    k = (R >= r0) & (R < r1)
    for m in (s, e):
        med = np.median(m[k] / truth[k])
        assert abs(med - 1) < 0.05, (r0, r1, med)
# The exact mode holds the triangulated mass inside the map; 4 rays per pixel come within 1 %.
area = (L / n) ** 2
assert abs(s.sum() / e.sum() - 1) < 0.01, (s.sum() * area, e.sum() * area)
print("ok")
PY
  assert_output "ok"
}

@test "centres from text, CSV and HDF5 give the same maps; FILE.h5:/dataset picks a table" {
  for c in centers.txt centers.csv centers.h5; do
    run dtfe-surface "$D/box.h5" -o "$OUT/${c%.*}.${c##*.}.h5" --centers "$D/$c" --size 12 --resolution 32 -q
    assert_success
  done
  run h5diff "$OUT/centers.txt.h5" "$OUT/centers.csv.h5" /maps/sigma
  assert_success
  run h5diff "$OUT/centers.txt.h5" "$OUT/centers.h5.h5" /maps/sigma
  assert_success
  run dtfe-surface "$D/box.h5" -o "$OUT/two.h5" --centers "$D/centers.h5:/other/table" --size 12 --resolution 32 -q
  assert_success
  run h5ls "$OUT/two.h5/maps/id"
  assert_output --partial "{2}"
}

@test "centres from clumps.h5: the --top most massive haloes, with their IDs" {
  run dtfe-surface "$INPUTS/good.hdf5" -o "$OUT/halos.h5" --centers "$D/clumps.h5" --top 2 --size 30 --resolution 32 -q
  assert_success
  run /usr/bin/python3 - "$OUT/halos.h5" "$D/clumps.h5" <<'PY'
import sys, json, h5py, numpy as np
m, c = h5py.File(sys.argv[1])["maps"], h5py.File(sys.argv[2])["halos"]
order = np.lexsort((c["id"][...], -c["mass"][...]))[:2]
assert list(m["id"][...]) == list(c["id"][...][order])
assert np.allclose(m["center"][...], c["peak_position"][...][order])
assert h5py.File(sys.argv[1])["maps"].attrs["centers_source"] == "clumps"
man = json.load(open(sys.argv[1] + ".json"))
assert any(i["kind"] == "clumps" for i in man["inputs"])
print("ok")
PY
  assert_output "ok"
}

@test "--types auto: the types of a clumps.h5's grid, dark matter for other centres; other types allowed" {
  # good.hdf5 with stars (type 4) on the first 500 dark-matter particles' places, IDs after theirs.
  /usr/bin/python3 - "$INPUTS/good.hdf5" "$OUT/stars.hdf5" <<'PY'
import sys, shutil, h5py, numpy as np
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "r+") as f:
    h, dm = f["Header"], f["PartType1"]
    n = dm["ParticleIDs"].shape[0]
    g = f.create_group("PartType4")
    g["Coordinates"] = dm["Coordinates"][:500]
    g["Velocities"] = np.zeros((500, 3), dtype=np.float32)
    g["ParticleIDs"] = np.arange(n + 1, n + 501, dtype=np.uint64)
    g["Masses"] = np.full(500, 0.2)
    for key in ("NumPart_ThisFile", "NumPart_Total"):
        c = h.attrs[key].copy(); c[4] = 500; h.attrs[key] = c
PY
  cic-project "$OUT/stars.hdf5" -o "$OUT/s.grid.h5" --grid 32 --types 1,4 -q
  phew-segment "$OUT/s.grid.h5" -o "$OUT/s.patches.h5" --threshold 3mean -q
  phew-merge "$OUT/s.patches.h5" -o "$OUT/s.clumps.h5" -q
  used() { /usr/bin/python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['parameters']['types_used'])" "$1.json"; }
  run dtfe-surface "$OUT/stars.hdf5" -o "$OUT/s1.h5" --centers "$OUT/s.clumps.h5" --top 1 --size 30 --resolution 16 -q
  assert_success
  assert_equal "$(used "$OUT/s1.h5")" "[1, 4]"
  run dtfe-surface "$OUT/stars.hdf5" -o "$OUT/s2.h5" --centers "$D/centers.txt" --top 1 --size 30 --resolution 16 -q
  assert_success
  assert_equal "$(used "$OUT/s2.h5")" "[1]"
  run dtfe-surface "$OUT/stars.hdf5" -o "$OUT/s3.h5" --centers "$OUT/s.clumps.h5" --types 4 --top 1 --size 30 --resolution 16 -q
  assert_success
  assert_equal "$(used "$OUT/s3.h5")" "[4]"
  run dtfe-surface "$OUT/stars.hdf5" -o "$OUT/s4.h5" --centers "$OUT/s.clumps.h5" --types 0 -q --size 30 --resolution 16
  assert_failure 3
  assert_one_error_line dtfe-surface
}

@test "identical maps for 1-4 ranks, every schedule, 1 or 2 threads" {
  args=(--centers "$D/centers.txt" --size 12 --depth box --resolution 24 --samples 2 -q)
  run dtfe-surface "$D/box.h5" -o "$OUT/m1.h5" "${args[@]}" --threads 1 --schedule none
  assert_success
  run dtfe-surface "$D/box.h5" -o "$OUT/t2.h5" "${args[@]}" --threads 2
  assert_success
  run h5diff "$OUT/m1.h5" "$OUT/t2.h5" /maps /maps
  assert_success
  # Every schedule at 2 ranks, and 3 and 4 ranks with the schedules that move fields around.
  for run_ in "2 none" "2 model" "2 dynamic" "3 dynamic" "4 model"; do
    read -r n s <<<"$run_"
    run mpi "$n" dtfe-surface "$D/box.h5" -o "$OUT/m$n$s.h5" "${args[@]}" --threads 1 --schedule "$s"
    assert_success
    run h5diff "$OUT/m1.h5" "$OUT/m$n$s.h5" /maps /maps
    assert_success
  done
}

@test "progress: every field of rank 0's share, computed or sent away, then a last line" {
  args=(--centers "$D/centers.txt" --size 12 --depth box --resolution 16 --threads 1)
  n=$(grep -c . "$D/centers.txt")
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr dtfe-surface "$D/box.h5" -o "$OUT/m.h5" "${args[@]}"
  assert_success
  assert_equal "$(grep -c 'progress: fields: ' <<<"$stderr")" "$n"
  grep -q "progress: fields: $n of $n fields (100%), in " <<<"$stderr" || fail "$stderr"
  # 2 ranks, fields moving between them: rank 0's share still ends at 100 %
  PHEW_PROGRESS_INTERVAL=0 run --separate-stderr mpi 2 dtfe-surface "$D/box.h5" -o "$OUT/m2.h5" "${args[@]}" --schedule dynamic
  assert_success
  grep -q "^dtfe-surface\[0\] .* progress: fields: \([0-9]*\) of \1 fields (100%) on rank 0 of 2, in " <<<"$stderr" ||
    [[ $stderr != *"progress: fields"* ]] || fail "$stderr"
  [[ $stderr != *"dtfe-surface[1]"* ]] || fail "$stderr"
}

@test "Qhull and CGAL give the same maps, byte for byte" {
  run dtfe-surface "$D/box.h5" -o "$OUT/q.h5" --centers "$D/centers.txt" --size 12 --resolution 32 --backend qhull -q
  assert_success
  run dtfe-surface "$D/box.h5" -o "$OUT/c.h5" --centers "$D/centers.txt" --size 12 --resolution 32 --backend cgal -q
  if [[ $status -eq 2 && $output == *"no CGAL"* ]]; then skip "built without CGAL"; fi
  assert_success
  run h5diff "$OUT/q.h5" "$OUT/c.h5" /maps/sigma
  assert_success
}

@test "the three lines of sight of a centred sphere look alike" {
  for a in x y z; do
    run dtfe-surface "$D/plummer.h5" -o "$OUT/$a.h5" --centers "$D/plummer.txt" --size 16 --depth box \
      --resolution 32 --axis "$a" --mode exact -q
    assert_success
  done
  run /usr/bin/python3 - "$OUT" <<'PY'
import sys, h5py, numpy as np
maps = [h5py.File(f"{sys.argv[1]}/{a}.h5")["maps/sigma"][0].astype(float) for a in "xyz"]
# The sphere is one random realisation: compare the radial profiles, not the pixels.
n = 32
x = (np.arange(n) + 0.5) * 16 / n - 8
R = np.hypot(*np.meshgrid(x, x, indexing="ij"))
prof = [[m[(R >= r) & (R < r + 1)].mean() for r in range(1, 7)] for m in maps]
for p in prof[:2]:
    assert np.allclose(p, prof[2], rtol=0.08), (p, prof[2])
print("ok")
PY
  assert_output "ok"
}

@test "a real box with the default margin: every pixel of every map covered (no 0, no NaN); a margin too small leaves NaN, counted" {
  # The shared Gadget-4 box (32^3 dark matter in 50 Mpc/h) at z = 2 and z = 0, maps of a tenth of the
  # box (the workflow's default): its four most massive haloes at each time (phew-merge, grid 64,
  # threshold 80mean) and three of its emptiest places. With a margin of size/10 up to 4,051 of the
  # 16,384 pixels lay outside the hull and were written as 0.
  data="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32"
  cat > "$BATS_TEST_TMPDIR/c.txt" <<'TXT'
27734.375 19140.625 11328.125
390.625 44921.875 18359.375
1953.125 28515.625 5078.125
49609.375 19140.625 26953.125
30078.125 19140.625 12109.375
37109.375 18359.375 33203.125
8984.375 16796.875 21484.375
390.625 29296.875 5859.375
7500 2500 27500
32500 32500 22500
12500 2500 27500
TXT
  args=(--centers "$BATS_TEST_TMPDIR/c.txt" --size 5000 --resolution 128)
  run dtfe-surface "$data/snapshot_003.hdf5" -o "$OUT/z2.h5" "${args[@]}" -q
  assert_success
  run dtfe-surface "$data/snapshot_004.hdf5" -o "$OUT/z0.h5" "${args[@]}" -q
  assert_success
  run dtfe-surface "$data/snapshot_004.hdf5" -o "$OUT/x.h5" "${args[@]}" --axis x --mode exact -q
  assert_success
  # The old default given explicitly, around the haloes (the voids hold too few particles for it).
  run --separate-stderr dtfe-surface "$data/snapshot_004.hdf5" -o "$OUT/given.h5" "${args[@]}" --top 8 --margin 500
  assert_success
  assert_regex "$stderr" "warning: [0-9,]+ pixels in [0-9]+ of 8 maps lie outside the triangulated hull and are NaN"
  run /usr/bin/python3 - "$OUT" <<'PY'
import sys, json, h5py, numpy as np
out = sys.argv[1]
for name in ("z2", "z0", "x"):
    m = h5py.File(f"{out}/{name}.h5")["maps"]
    s = m["sigma"][...]
    assert np.isfinite(s).all() and (s > 0).all(), (name, int((s == 0).sum()), int(np.isnan(s).sum()))
    margin = m["margin"][...]
    k = np.log2(margin / 500)
    assert (margin >= 500).all() and np.array_equal(k, np.round(k)), (name, margin)  # size/10 doubled
    man = json.load(open(f"{out}/{name}.h5.json"))
    assert man["parameters"]["margin_rule"] == "auto" and man["parameters"]["margin_used"] == margin.max()
    assert man["summary"]["pixels_outside_hull"] == 0 and man["summary"]["margin_max"] == margin.max()
m = h5py.File(f"{out}/given.h5")["maps"]
s = m["sigma"][...]
nan = int(np.isnan(s).sum())
assert nan > 0 and (s[np.isfinite(s)] > 0).all(), (nan, int((s == 0).sum()))
assert (m["margin"][...] == 500).all()
assert np.allclose(m["map_mass"][...], np.nansum(s.astype(np.float64), axis=(1, 2)) * (5000 / 128) ** 2, rtol=1e-6)
man = json.load(open(f"{out}/given.h5.json"))
assert man["parameters"]["margin_rule"] == "given"
assert man["summary"]["pixels_outside_hull"] == nan, (man["summary"]["pixels_outside_hull"], nan)
assert man["summary"]["fields_outside_hull"] == int(np.isnan(s).any(axis=(1, 2)).sum())
print("ok")
PY
  assert_output "ok"
  # The margins and maps do not depend on the rank count (wider ghost zones, when a field needs them
  # on ranks that cut the map's axes, are in tests/mpi/test_dtfe_mpi.cpp).
  run mpi 3 dtfe-surface "$data/snapshot_004.hdf5" -o "$OUT/z0.3.h5" "${args[@]}" --threads 1 -q
  assert_success
  run h5diff "$OUT/z0.h5" "$OUT/z0.3.h5" /maps /maps
  assert_success
}

bad_case() { bad_input dtfe-surface "$OUT/m.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: size, resolution, depth, samples, mode, backend" {
  bad_case 2 "positive" "$D/box.h5" --centers "$D/centers.txt" --size 0 --resolution 8
  bad_case 2 "positive" "$D/box.h5" --centers "$D/centers.txt" --size=-5 --resolution 8
  bad_case 2 "positive number of pixels" "$D/box.h5" --centers "$D/centers.txt" --size 5 --resolution 0
  bad_case 2 "exceeds the periodic box" "$D/box.h5" --centers "$D/centers.txt" --size 5 --resolution 8 --depth 150
  bad_case 2 "ray only" "$D/box.h5" --centers "$D/centers.txt" --size 5 --resolution 8 --mode exact --samples 4
  bad_case 2 "expected auto, cgal or qhull" "$D/box.h5" --centers "$D/centers.txt" --size 5 --resolution 8 --backend foo
  bad_case 2 "expected x, y or z" "$D/box.h5" --centers "$D/centers.txt" --size 5 --resolution 8 --axis w
}

@test "bad input: fewer than 4 particles in a field" {
  bad_case 3 "at least 4" "$D/few.h5" --centers "$D/centers.txt" --top 1 --size 5 --resolution 8
}

@test "bad input: all particles of a field in one plane" {
  echo "50 50 50" > "$BATS_TEST_TMPDIR/c.txt"
  bad_case 3 "plane" "$D/plane.h5" --centers "$BATS_TEST_TMPDIR/c.txt" --size 30 --resolution 8
}

@test "bad input: a centre outside a non-periodic box" {
  echo "50 50 150" > "$BATS_TEST_TMPDIR/c.txt"
  bad_case 3 "outside the box" "$D/plummer.h5" --centers "$BATS_TEST_TMPDIR/c.txt" --size 10 --resolution 8
}

@test "bad input: a field too large for memory is refused before it is triangulated" {
  PHEW_MEMORY_LIMIT=20000000 bad_case 3 "needs about" "$D/plummer.h5" --centers "$D/plummer.txt" --size 90 --resolution 8
}

@test "bad input: centres files" {
  bad_case 3 "line 3" "$D/box.h5" --centers "$D/bad.txt" --size 5 --resolution 8
  bad_case 3 "expected three" "$D/box.h5" --centers "$D/two.txt" --size 5 --resolution 8
  bad_case 4 "no such centres file" "$D/box.h5" --centers "$D/nope.txt" --size 5 --resolution 8
  bad_case 3 "expected [n][3]" "$D/box.h5" --centers "$D/centers.h5:/flat" --size 5 --resolution 8
  bad_case 3 "no dataset /centers" "$D/box.h5" --centers "$D/grid.h5" --size 5 --resolution 8
}

@test "bad input under MPI: every rank stops with the same code, once, no hang" {
  # Found while counting (before any field), and found inside a field on one rank (after the others
  # finished theirs), with each schedule.
  run --separate-stderr timeout 120 mpirun -n 3 --oversubscribe dtfe-surface "$D/few.h5" --centers "$D/centers.txt" \
    --size 5 --resolution 8 -o "$OUT/m.h5" -q
  assert_failure 3
  assert_equal "$(grep -c '^dtfe-surface: error: ' <<<"$stderr")" 1
  assert_only_files "$OUT"
  printf '50 50 50\n30 30 30\n70 70 60\n' > "$BATS_TEST_TMPDIR/c.txt"
  for s in none model dynamic; do
    run --separate-stderr timeout 120 mpirun -n 3 --oversubscribe dtfe-surface "$D/plane.h5" \
      --centers "$BATS_TEST_TMPDIR/c.txt" --size 30 --depth box --resolution 8 --schedule "$s" -o "$OUT/m.h5" -q
    assert_failure 3
    assert_equal "$(grep -c '^dtfe-surface: error: .*plane' <<<"$stderr")" 1
    assert_only_files "$OUT"
  done
}

@test "a failed run leaves nothing half-written" {
  for phase in read distribute count fields gather write finish; do
    PHEW_TEST_FAIL_AT=$phase run dtfe-surface "$D/box.h5" -o "$OUT/m.h5" --centers "$D/centers.txt" --size 12 --resolution 8 --png -q
    assert_failure 1
    assert_only_files "$OUT"
  done
}
