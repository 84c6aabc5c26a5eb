#!/usr/bin/env bats
# RAMSES outputs in (../shared/data/ramses-cosmo-L20-N32: three outputs of a 32^3 run on 2 RAMSES ranks,
# with RAMSES' in-code PHEW): rank invariance, units, bad inputs on broken copies, the
# whole chain, mergertree over the series, both workflows, and the comparison with PHEW's own haloes.
load common

setup_file() {
  load common
  RUN="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32"
  [[ -d $RUN/output_00004 ]] || { echo "$RUN is missing (set PHEW_SHARED_DATA)" >&2; return 1; }
  C="$BATS_FILE_TMPDIR/chain"
  mkdir -p "$C"
  # The chain on every output once (the tests below look at it): RAMSES' own thresholds (namelist.txt).
  for o in 2 3 4; do
    d=$C/output_0000$o s=$RUN/output_0000$o
    mkdir -p "$d"
    cic-project "$s" -o "$d/grid.h5" --grid 128 -q
    phew-segment "$d/grid.h5" -o "$d/patches.h5" --threshold 80mean -q
    phew-merge "$d/patches.h5" -o "$d/clumps.h5" --relevance 3 --saddle-threshold 200mean --mass-threshold 10particles \
      --particles "$s" -q
    deblend "$d/clumps.h5" "$s" -o "$d/peaks.h5" -q
    voters "$d/peaks.h5" "$s" -o "$d/voters.h5" -q
  done
}

setup() {
  RUN="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32"
  C="$BATS_FILE_TMPDIR/chain"
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

attr() {  # attr FILE NAME -> value of /grid attribute NAME
  /usr/bin/python3 -c 'import h5py,sys; v=h5py.File(sys.argv[1])["grid"].attrs[sys.argv[2]]; print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}

# broken NAME: a writable copy of output_00004 in this test's temp folder; prints its path.
broken() {
  local d="$BATS_TEST_TMPDIR/$1/output_00004"
  mkdir -p "$(dirname "$d")"
  cp -r "$RUN/output_00004" "$d"
  chmod -R u+w "$d"
  echo "$d"
}

@test "cic-project: identical data for 1, 2, 3 and 4 ranks, from the folder or its info file" {
  run cic-project "$RUN/output_00004" -o "$OUT/r1.h5" --grid 64 -q
  assert_success
  for n in 2 3 4; do
    run mpi "$n" cic-project "$RUN/output_00004" -o "$OUT/r$n.h5" --grid 64 -q
    assert_success
    run h5diff -v0 "$OUT/r1.h5" "$OUT/r$n.h5" /grid /grid
    assert_success
    run h5diff "$OUT/r1.h5" "$OUT/r$n.h5" /grid/density
    assert_success
  done
  run cic-project "$RUN/output_00004/info_00004.txt" -o "$OUT/info.h5" --grid 64 -q
  assert_success
  run h5diff "$OUT/r1.h5" "$OUT/info.h5" /grid/density
  assert_success
  # every file read is in the manifest: info, header, descriptor and the two part files
  n=$(/usr/bin/python3 -c 'import json,sys; print(sum(i["kind"] == "snapshot" for i in json.load(open(sys.argv[1]))["inputs"]))' "$OUT/r1.h5.json")
  assert_equal "$n" 5
}

@test "units: comoving Mpc/h and Msun/h, the run's cosmology, a periodic box; mean density is Omega_m(a)" {
  g=$C/output_00004/grid.h5
  assert_equal "$(attr "$g" length_units)" "Mpc/h"
  assert_equal "$(attr "$g" mass_units)" "Msun/h"
  assert_equal "$(attr "$g" periodic)" 1
  assert_equal "$(attr "$g" n_particles)" 32768
  run /usr/bin/python3 - "$g" <<'PY'
import h5py, sys
a = h5py.File(sys.argv[1])["grid"].attrs
assert abs(a["box_size"][0] - 19.9999988) < 1e-6, a["box_size"]
assert abs(a["omega_m"] - 0.31) < 1e-6 and abs(a["hubble_param"] - 0.677) < 1e-6
assert abs(a["time"] - 1.00361225) < 1e-8 and a["comoving"] == 1
# 2.10162e10 Msun/h per particle (README), and rho_mean / rho_crit(a) = Omega_m / (Omega_m + Omega_L a^3)
# to 0.1%: RAMSES' unit_d uses rhoc = 1.88e-29 h^2 g/cm^3, 0.08% above 3 H0^2 / (8 pi G) with CODATA G
assert abs(a["particle_mass"] / 2.10162e10 - 1) < 1e-5, a["particle_mass"]
t = a["time"]
want = 0.31 / (0.31 + 0.69 * t ** 3)
assert abs(a["mean_density"] / a["critical_density"] / want - 1) < 1e-3, (a["mean_density"] / a["critical_density"], want)
PY
  assert_success
}

@test "phew-merge with RAMSES particles: identical data for 1 and 3 ranks" {
  run mpi 3 phew-merge "$C/output_00004/patches.h5" -o "$OUT/clumps.h5" --relevance 3 --saddle-threshold 200mean \
    --mass-threshold 10particles --particles "$RUN/output_00004" -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$C/output_00004/clumps.h5" "$OUT/clumps.h5"
  assert_success
}

# bad inputs: exit code, exactly one line "cic-project: error: ...", and no output left behind
bad_case() { bad_input cic-project "$OUT/grid.h5" "$@" --grid 8; }

@test "bad input: a missing rank file" {
  d=$(broken missing)
  rm "$d/part_00004.out00002"
  bad_case 3 "part_00004.out00002 is missing (info_00004.txt says ncpu = 2" "$d"
}

@test "bad input: ncpu disagrees with the files present" {
  d=$(broken more)
  sed -i 's/^ncpu *= *2$/ncpu        =          3/' "$d/info_00004.txt"
  bad_case 3 "part_00004.out00003 is missing (info_00004.txt says ncpu = 3, the folder has 2 part files)" "$d"
  d=$(broken fewer)
  sed -i 's/^ncpu *= *2$/ncpu        =          1/' "$d/info_00004.txt"
  bad_case 3 "part_00004.out00002 exists, but info_00004.txt says ncpu = 1" "$d"
}

@test "bad input: a truncated record" {
  d=$(broken truncated)
  truncate -s 500000 "$d/part_00004.out00002"
  bad_case 3 "part_00004.out00002: truncated in record 13 (velocity_y, type d)" "$d"
}

@test "bad input: a record length that disagrees with npart" {
  d=$(broken npart)
  # npart is the third header record: marker at byte 24, value at 28
  /usr/bin/python3 -c 'import struct,sys; f=open(sys.argv[1],"r+b"); f.seek(28); f.write(struct.pack("<i",18194))' \
    "$d/part_00004.out00001"
  bad_case 3 "part_00004.out00001: record 9 (position_x, type d) has 145560 bytes, npart = 18194 needs 145552" "$d"
}

@test "bad input: a descriptor with an unknown type" {
  d=$(broken type)
  sed -i 's/^ 7, mass, d$/ 7, mass, x/' "$d/part_file_descriptor.txt"
  bad_case 3 "part_file_descriptor.txt: field 7 (mass) has type 'x', not one phew knows" "$d"
}

@test "bad input: an info file without units" {
  d=$(broken units)
  sed -i '/^unit_d/d' "$d/info_00004.txt"
  bad_case 3 "info_00004.txt: no unit_d (RAMSES info files give unit_l, unit_d and unit_t" "$d"
}

@test "bad input: an output from before 2017, without a particle descriptor" {
  d=$(broken old)
  rm "$d/part_file_descriptor.txt"
  bad_case 3 "no part_file_descriptor.txt: a RAMSES output from before 2017, which phew does not read" "$d"
}

@test "bad input: a header whose family totals disagree with the files" {
  d=$(broken header)
  sed -i 's/^ *DM *32768$/           DM     32767/' "$d/header_00004.txt"
  bad_case 3 "the files hold 32768 particles of type 1, the header says 32767" "$d"
}

@test "bad input under MPI: every rank stops with the same line, no hang, for any tool" {
  d=$(broken mpi)
  truncate -s 500000 "$d/part_00004.out00002"
  for n in 2 3 4; do
    run --separate-stderr mpi "$n" cic-project "$d" -o "$OUT/grid.h5" --grid 8 -q
    assert_failure
    # shellcheck disable=SC2154  # set by bats' run --separate-stderr
    [[ $(printf '%s\n' "$stderr" | grep -c "^cic-project: error: .*part_00004.out00002: truncated in record 13") == 1 ]] ||
      fail "stderr: $stderr"
  done
  run --separate-stderr mpi 2 deblend "$C/output_00004/clumps.h5" "$d" -o "$OUT/peaks.h5" -q
  assert_failure
  [[ $stderr == *"deblend: error: "* ]] || fail "stderr: $stderr"
  assert_only_files "$OUT"
}

@test "the whole chain runs on output_00004, with haloes like PHEW's, and maps around them" {
  d=$C/output_00004
  for f in grid patches clumps peaks voters; do [[ -f $d/$f.h5.json ]] || fail "no $f.h5"; done
  run /usr/bin/python3 - "$d/clumps.h5" "$d/peaks.h5" "$d/voters.h5" <<'PY'
import h5py, sys, numpy as np
c, p, v = (h5py.File(x) for x in sys.argv[1:4])
n = c["halos/n_particles"][...]
# PHEW in RAMSES: 28 haloes >= 50 particles, 24 >= 100 (README)
assert 24 <= (n >= 50).sum() <= 33 and 20 <= (n >= 100).sum() <= 28, ((n >= 50).sum(), (n >= 100).sum())
assert len(p["peaks/id"]) >= len(c["clumps/id"]) and len(v["voters/peak"]) > 0
PY
  assert_success
  run dtfe-surface "$RUN/output_00004" -o "$OUT/maps.h5" --centers "$d/clumps.h5" --top 3 --size 2 --resolution 32 -q
  assert_success
}

@test "mergertree follows the three outputs as a series" {
  run mergertree "$C/output_00002/peaks.h5" "$C/output_00003/peaks.h5" "$C/output_00004/peaks.h5" -o "$OUT/tree.h5" -q
  assert_success
  run /usr/bin/python3 - "$OUT/tree.h5" <<'PY'
import h5py, sys, numpy as np
t = h5py.File(sys.argv[1])
assert len(t["snapshots/index"]) == 3
pk = t["peaks"]
snap, pid, mass = pk["snapshot"][...], pk["id"][...], pk["mass"][...]
ps, pp = pk["main_progenitor_snapshot"][...], pk["main_progenitor_id"][...]
# the most massive peak at a = 1 has a main progenitor at a = 0.75, which has one at a = 0.5
last = np.flatnonzero(snap == 2)
k = last[np.argmax(mass[last])]
assert ps[k] == 1, ps[k]
j = np.flatnonzero((snap == 1) & (pid == pp[k]))[0]
assert ps[j] == 0, ps[j]
# most peaks of the last output with >= 100 particles' worth of mass have a progenitor
PY
  assert_success
}

@test "both workflows run on the RAMSES outputs and give the same data" {
  W="$BATS_TEST_TMPDIR/w"
  mkdir -p "$W"
  cat >"$W/config.yaml" <<YAML
snapshots: "$RUN/output_0000*"
grid: 64
threshold: "80mean"
relevance: 3.0
saddle_threshold: "200mean"
maps_top: 2
map_resolution: 32
YAML
  export PHEW_BIN
  run "$PHEW_SOURCE/workflows/pipeline.sh" "$RUN/output_0000*" "$W/sh" --config "$W/config.yaml"
  assert_success
  run snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 2 --directory "$W/sm" --configfile "$W/config.yaml" --quiet
  assert_success
  for o in output_00002 output_00003 output_00004; do
    for f in grid patches clumps peaks voters; do
      run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$W/sh/$o/$f.h5" "$W/sm/$o/$f.h5"
      assert_success
    done
  done
  for f in tree maps; do
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$W/sh/$f.h5" "$W/sm/$f.h5"
    assert_success
  done
}

@test "phew on 128^3 cells matches RAMSES' in-code PHEW haloes and clumps (floors 0.9 and 0.85)" {
  run "$PHEW_SOURCE/examples/ramses-phew/run.sh" "$RUN/output_00004" "$OUT/cmp" -- --floor-haloes 0.9 --floor-clumps 0.85
  assert_success
  [[ -f $OUT/cmp/compare.png ]]
  run /usr/bin/python3 - "$OUT/cmp/compare.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
h = r["kinds"]["halos"]["cuts"]["50"]
assert h["ramses"] == 28, h  # README: 28 PHEW haloes >= 50 particles at output 4
assert h["purity"] >= 0.85, h
assert 0.85 <= h["mass_ratio_median"] <= 1.15, h
assert h["offset_median"] < r["cell_size"], h
PY
  assert_success
}

@test "a Gadget snapshot written as a RAMSES output (tests/data/make_ramses.py) gives its grid, at 1 and 3 ranks" {
  make_inputs
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_ramses.py" "$INPUTS/good.hdf5" "$OUT/r" --ncpu 3 --id-type q
  assert_success
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/hdf5.h5" --grid 16 -q
  assert_success
  run cic-project "$OUT/r/output_00001" -o "$OUT/r1.h5" --grid 16 -q
  assert_success
  run mpi 3 cic-project "$OUT/r/output_00001" -o "$OUT/r3.h5" --grid 16 -q
  assert_success
  run h5diff "$OUT/r1.h5" "$OUT/r3.h5" /grid/density
  assert_success
  # kpc/h -> Mpc/h, 1e10 Msun/h -> Msun/h: the same field in units of its mean
  run /usr/bin/python3 - "$OUT/hdf5.h5" "$OUT/r1.h5" <<'PY'
import h5py, sys, numpy as np
a, b = (h5py.File(x)["grid"] for x in sys.argv[1:3])
assert abs(b.attrs["box_size"][0] - a.attrs["box_size"][0] / 1000) < 1e-6, b.attrs["box_size"]
da = a["density"][...] / a.attrs["mean_density"]
db = b["density"][...] / b.attrs["mean_density"]
assert np.abs(da - db).max() < 1e-4 * da.max(), np.abs(da - db).max()
PY
  assert_success
}
