#!/usr/bin/env bats
# cic-project end to end: outputs, manifests, rank invariance, real data, and every bad input.
load common

setup_file() {
  load common
  make_inputs
}

setup() {
  make_inputs
  OUT="$BATS_TEST_TMPDIR/out"
  mkdir -p "$OUT"
}

attr() {  # attr FILE NAME -> value of /grid attribute NAME
  /usr/bin/python3 -c 'import h5py,sys; v=h5py.File(sys.argv[1])["grid"].attrs[sys.argv[2]]; print(v.decode() if isinstance(v, bytes) else v)' "$1" "$2"
}

@test "writes density, attributes and a manifest that matches the file" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 16 -q
  assert_success
  assert_only_files "$OUT" grid.h5 grid.h5.json
  run /usr/bin/python3 - "$OUT/grid.h5" <<'PY'
import h5py, json, sys, numpy as np
f = h5py.File(sys.argv[1])
g = f["grid"]
d = g["density"][...]
assert d.shape == (16, 16, 16) and d.dtype == np.float32, (d.shape, d.dtype)
assert g.attrs["assignment"] == "CIC"
assert abs(g.attrs["total_mass"] - 4000.0) < 1e-9, g.attrs["total_mass"]
cell = (100.0 / 16) ** 3
assert abs(d.astype(np.float64).sum() * cell - 4000.0) < 4000 * 1e-5
assert abs(g.attrs["mean_density"] - 4000.0 / 100.0**3) < 1e-15
assert g.attrs["n_particles"] == 4000 and g.attrs["periodic"] == 1
assert g["density"].attrs["units"] == g.attrs["units"]
side = json.load(open(sys.argv[1] + ".json"))
inner = json.loads(f.attrs["manifest"])
assert side["kind"] == "grid" and side["id"] == inner["id"]
assert side["inputs"][0]["kind"] == "snapshot" and side["inputs"][0]["fingerprint"].startswith("xxh3-128:")
assert side["provenance"][-1]["tool"]["name"] == "cic-project"
assert side["parameters"]["grid_shape"] == [16, 16, 16]
print("ok")
PY
  assert_output "ok"
}

@test "float64 output conserves mass to 1e-12" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 8,16,12 --precision float64 -q
  assert_success
  run /usr/bin/python3 -c '
import h5py, numpy as np
d = h5py.File("'"$OUT/grid.h5"'")["grid/density"][...]
total = d.sum() * (100/8) * (100/16) * (100/12)
assert abs(total - 4000) < 4000e-12 * 10, total
print("ok")'
  assert_output "ok"
}

@test "the manifest fingerprint is checked: the file is the one described" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 8 -q
  assert_success
  # Recomputed independently (xxhsum from Debian's xxhash: XXH3-128, canonical hex), with the size.
  recorded=$(/usr/bin/python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))["outputs"][0]; print(o["fingerprint"], o["size"])' "$OUT/grid.h5.json")
  assert_equal "$recorded" "xxh3-128:$(xxhsum -H2 "$OUT/grid.h5" | cut -d' ' -f1) $(stat -c %s "$OUT/grid.h5")"
  # One changed byte and the next stage refuses the grid as stale.
  printf '\x01' | dd of="$OUT/grid.h5" bs=1 seek=$(( $(stat -c %s "$OUT/grid.h5") - 1 )) conv=notrunc 2>/dev/null
  mkdir "$OUT/next"
  bad_input phew-segment "$OUT/next/p.h5" 3 "file changed since its manifest was written" "$OUT/grid.h5" --threshold 2mean
}

@test "a multi-file snapshot given by its first piece equals the single file" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/single.h5" --grid 16 -q
  assert_success
  run cic-project "$INPUTS/multi.0.hdf5" -o "$OUT/multi.h5" --grid 16 -q
  assert_success
  run h5diff "$OUT/single.h5" "$OUT/multi.h5" /grid/density
  assert_success
}

@test "identical data for 1, 2, 3 and 4 ranks and 1-4 threads (cic, tsc, ngp, region)" {
  for args in "--grid 16" "--grid 12,10,8 --assignment tsc --precision float64" "--grid 9 --assignment ngp" \
              "--grid 10 --region 20,20,20,80,80,80 --precision float64"; do
    # shellcheck disable=SC2086
    run cic-project "$INPUTS/good.hdf5" -o "$OUT/r1.h5" $args -q --threads 1
    assert_success
    # 1 rank with 4 threads (blocks of 1-4 planes), then 2-4 ranks with 3, 1, 2 threads.
    # shellcheck disable=SC2086
    run cic-project "$INPUTS/good.hdf5" -o "$OUT/t4.h5" $args -q --threads 4
    assert_success
    run h5diff "$OUT/r1.h5" "$OUT/t4.h5" /grid/density
    assert_success
    for n in 2 3 4; do
      # shellcheck disable=SC2086
      run mpi "$n" cic-project "$INPUTS/good.hdf5" -o "$OUT/r$n.h5" $args -q --threads $((n % 3 + 1))
      assert_success
      run h5diff -v0 "$OUT/r1.h5" "$OUT/r$n.h5" /grid /grid
      assert_success
      run h5diff "$OUT/r1.h5" "$OUT/r$n.h5" /grid/density
      assert_success
    done
  done
}

@test "the manifest counts what each phase's exchanges sent: nothing on one rank, routed particles on two" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/r1.h5" --grid 16 -q
  assert_success
  run mpi 2 cic-project "$INPUTS/good.hdf5" -o "$OUT/r2.h5" --grid 16 -q
  assert_success
  run /usr/bin/python3 - "$OUT/r1.h5" "$OUT/r2.h5" <<'PY'
import h5py, json, sys
one, two = (json.load(open(p + ".json")) for p in sys.argv[1:])
for m in one, two:
    assert list(m["exchanges"]) == list(m["timings"]), (m["exchanges"], m["timings"])
    for phase, e in m["exchanges"].items():
        assert e["bytes_sent_rank0"] <= e["bytes_sent_max"] <= e["bytes_sent_total"], (phase, e)
assert all(e["bytes_sent_total"] == 0 and e["collectives"] == 0 for e in one["exchanges"].values()), one["exchanges"]
# The particles whose clouds reach the other rank's block travel to it as they are read, a chunk at a
# time (lib/grid/deposit.cpp).
read = two["exchanges"]["read"]
assert read["bytes_sent_total"] > 4000 and read["collectives"] > 0, read
assert json.loads(h5py.File(sys.argv[2]).attrs["manifest"])["exchanges"] == two["exchanges"]
PY
  assert_success
}

@test "--compress: chunks of one plane, deflated, the same values on 1-4 ranks, and phew-segment reads them" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/plain.h5" --grid 12,10,8 -q
  assert_success
  for n in 1 2 3 4; do
    run mpi "$n" cic-project "$INPUTS/good.hdf5" -o "$OUT/z$n.h5" --grid 12,10,8 --compress -q
    assert_success
    run h5diff "$OUT/plain.h5" "$OUT/z$n.h5" /grid/density
    assert_success
  done
  run /usr/bin/python3 -c 'import h5py, sys; d = h5py.File(sys.argv[1])["grid/density"]; print(d.chunks, d.compression, d.shuffle)' "$OUT/z2.h5"
  assert_output "(1, 10, 8) gzip True"
  run phew-segment "$OUT/z3.h5" -o "$OUT/pz.h5" --threshold 2mean -q
  assert_success
  run phew-segment "$OUT/plain.h5" -o "$OUT/pp.h5" --threshold 2mean -q
  run h5diff "$OUT/pp.h5" "$OUT/pz.h5" /cells
  assert_success
}

@test "the grid rule: without --grid a suggestion (exit 2), --grid auto uses it, for other thresholds and regions too" {
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  shape() { /usr/bin/python3 -c 'import h5py, sys; print(list(h5py.File(sys.argv[1])["grid"].attrs["shape"]))' "$1"; }
  run --separate-stderr cic-project "$snap" -o "$OUT/g.h5"
  assert_failure 2
  # (80 * 32768)^(1/3) = 137.9 cells per side, down to a multiple of 8: 136, and 80 * 32768 / 136^3 = 1.04
  assert_equal "$stderr" 'cic-project: error: --grid is missing: for 32,768 particles and a threshold of 80mean, the grid rule gives --grid 136 (a cell at the threshold holds 1.04 particle masses, at least 1; docs/thresholds.md, "The grid"), or give --grid auto'
  [[ ! -e $OUT/g.h5 ]]
  run cic-project "$snap" -o "$OUT/g.h5" --grid auto -q
  assert_success
  run shape "$OUT/g.h5"
  assert_output "[136, 136, 136]"
  run cic-project "$snap" -o "$OUT/g10.h5" --grid auto --for-threshold 10mean -q  # (10 * 32768)^(1/3) = 68.9
  run shape "$OUT/g10.h5"
  assert_output "[64, 64, 64]"
  # An exact cube of the rule, 8 * 32768 = 64^3, stays 64 (no rounding down to 56).
  run cic-project "$snap" -o "$OUT/g8.h5" --grid auto --for-threshold 8mean -q
  run shape "$OUT/g8.h5"
  assert_output "[64, 64, 64]"
  # A sub-box of the periodic box: cubic cells of the same size, for the particles it holds on average
  # (1/2 x 1/2 x 1 of the box: 8192 particles, (80 * 8192 / (0.25 * 50000^3))^(1/3) cells per kpc/h).
  run --separate-stderr cic-project "$snap" -o "$OUT/gr.h5" --grid auto --region 0,0,0,25000,25000,50000
  assert_success
  [[ $stderr == *"--grid auto: 64,64,136 cells for about 8,192 particles in the region"* ]] || fail "$stderr"
  run shape "$OUT/gr.h5"
  assert_output "[64, 64, 136]"
  run --separate-stderr cic-project "$snap" -o "$OUT/g.h5" --grid auto --for-threshold 80crit
  assert_failure 2
}

@test "unit sanity: a cosmological box whose length unit is off by 1000 gets a warning, the real one none" {
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  run --separate-stderr cic-project "$snap" -o "$OUT/good.h5" --grid 16
  assert_success
  [[ $stderr != *warning* ]] || fail "$stderr"
  cp "$snap" "$OUT/wrong.hdf5"
  # The length unit made 1000 times smaller everywhere it is declared (/Parameters and each dataset's
  # to_cgs, which must agree): a file wrong as a whole, not one that contradicts itself.
  /usr/bin/python3 -c '
import h5py, sys
f = h5py.File(sys.argv[1], "r+")
p = f["Parameters"].attrs
p["UnitLength_in_cm"] = p["UnitLength_in_cm"] / 1000
def fix(name, d):
    if isinstance(d, h5py.Dataset) and "to_cgs" in d.attrs and "length_scaling" in d.attrs:
        d.attrs["to_cgs"] = d.attrs["to_cgs"] * 1000.0 ** -d.attrs["length_scaling"]
f.visititems(fix)' "$OUT/wrong.hdf5"
  run --separate-stderr cic-project "$OUT/wrong.hdf5" -o "$OUT/wrong.h5" --grid 16
  assert_success
  [[ $stderr == *"warning: the mean density is 2.6"*"e+08 times the critical density"*"are the snapshot's units right"* ]] || fail "$stderr"
}

@test "an open box: particles outside the region are a warning with their share; a periodic sub-box's an info line" {
  run --separate-stderr cic-project "$INPUTS/openbox.hdf5" -o "$OUT/o.h5" --grid 8 --region 0,0,0,50,100,100
  assert_success
  [[ $stderr =~ warning:\ [0-9,]+\ particles\ \([0-9.]+%\)\ lie\ outside\ the\ region ]] || fail "$stderr"
  # (--units: good.hdf5 has no units and a density no cosmological box has, itself a warning)
  run --separate-stderr cic-project "$INPUTS/good.hdf5" -o "$OUT/p.h5" --grid 8 --region 0,0,0,50,100,100 --units kpc/h
  assert_success
  [[ $stderr != *warning* && $stderr == *"particles outside the region were ignored"* ]] || fail "$stderr"
}

@test "real Gadget-4 box: dark matter is 0.26 and all types 0.30 of the critical density" {
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  run cic-project "$snap" -o "$OUT/dm.h5" --grid 32 -q
  assert_success
  run cic-project "$snap" -o "$OUT/all.h5" --grid 32 --types all -q
  assert_success
  dm=$(/usr/bin/python3 -c 'import h5py,sys; a=h5py.File(sys.argv[1])["grid"].attrs; print(round(a["mean_density"]/a["critical_density"],3))' "$OUT/dm.h5")
  all=$(/usr/bin/python3 -c 'import h5py,sys; a=h5py.File(sys.argv[1])["grid"].attrs; print(round(a["mean_density"]/a["critical_density"],3))' "$OUT/all.h5")
  assert_equal "$dm" "0.26"
  assert_equal "$all" "0.3"
  assert_equal "$(attr "$OUT/dm.h5" units)" "(1e10 Msun/h)/(kpc/h)^3"
  assert_equal "$(attr "$OUT/dm.h5" n_particles)" "32768"
}

@test "a compressed, big-endian copy of the real Gadget-4 box gives the same grid on 1 and 2 threads" {
  # Chunks of 1000 rows, shuffled and deflated, coordinates stored big-endian: read by HDF5 on one
  # thread, decoded on the io threads on two (lib/io/h5_chunks.cpp); the adaptive grid as from the plain file.
  snap="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  run /usr/bin/python3 - "$snap" "$OUT/gz.hdf5" <<'PY'
import h5py, sys
src, dst = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "w")
def copy(name, o):
    if isinstance(o, h5py.Group):
        g = dst.require_group(name)
    else:
        d = o[()]
        if d.ndim and d.shape[0] > 1000:
            dt = d.dtype.newbyteorder(">") if name.endswith("Coordinates") else d.dtype
            g = dst.create_dataset(name, data=d.astype(dt), chunks=(1000,) + d.shape[1:], compression="gzip", shuffle=True)
        else:
            g = dst.create_dataset(name, data=d)
    for k, v in o.attrs.items():
        g.attrs[k] = v
for k, v in src.attrs.items():
    dst.attrs[k] = v
src.visititems(copy)
PY
  assert_success
  for t in 1 2; do
    run cic-project "$OUT/gz.hdf5" -o "$OUT/gz$t.h5" --grid 32 --refine 8 --levels 2 --threads $t -q
    assert_success
  done
  run cic-project "$snap" -o "$OUT/plain.h5" --grid 32 --refine 8 --levels 2 -q
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/gz1.h5" "$OUT/plain.h5"
  assert_success
  run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$OUT/gz2.h5" "$OUT/plain.h5"
  assert_success
}

@test "real Gadget binary file with open boundaries runs with --region" {
  run cic-project "$PHEW_SHARED_DATA/gadget-binary/pot_acc.format2.gadget2" -o "$OUT/g.h5" --grid 8 --types 4 -q
  assert_failure 2
  assert_output --partial "--region"
  run cic-project "$PHEW_SHARED_DATA/gadget-binary/pot_acc.format2.gadget2" -o "$OUT/g.h5" --grid 8 --types 4 \
    --region -1000,-1000,-1000,1000,1000,1000 -q
  assert_success
}

@test "a JSON config file sets options like the command line" {
  echo '{"grid": 8, "assignment": "tsc", "precision": "float64"}' >"$OUT/../cfg.json"
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --config "$OUT/../cfg.json" -q
  assert_success
  assert_equal "$(attr "$OUT/grid.h5" assignment)" "TSC"
  echo '{"grid": 8, "no_such_key": 1}' >"$OUT/../bad.json"
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --config "$OUT/../bad.json" -q
  assert_failure 2
}

# bad inputs: exit code, exactly one line "cic-project: error: ...", and no output left behind
bad_case() { bad_input cic-project "$OUT/grid.h5" "$@"; }  # bad_case CODE PATTERN ARGS...

@test "bad input: NaN position" { bad_case 3 "non-finite position" "$INPUTS/nan.hdf5" --grid 8; }
@test "bad input: negative mass" { bad_case 3 "masses must be positive" "$INPUTS/negmass.hdf5" --grid 8; }
@test "bad input: missing Coordinates" { bad_case 3 "missing dataset /PartType1/Coordinates" "$INPUTS/nocoords.hdf5" --grid 8; }
@test "bad input: Coordinates of the wrong shape" { bad_case 3 "Coordinates" "$INPUTS/badshape.hdf5" --grid 8; }
@test "bad input: no particles of the selected type" { bad_case 3 "no particles of the selected types" "$INPUTS/gasonly.hdf5" --grid 8; }
@test "bad input: a missing piece of a multi-file snapshot" { bad_case 4 "missing" "$INPUTS/missingpiece.0.hdf5" --grid 8; }
@test "bad input: header total disagrees with the files" { bad_case 3 "NumPart_Total" "$INPUTS/wrongtotal.hdf5" --grid 8; }
@test "bad input: particle outside a non-periodic box" { bad_case 3 "outside the non-periodic box" "$INPUTS/outside.h5" --grid 8; }
@test "bad input: not a snapshot" { bad_case 3 "not a snapshot" "$INPUTS/notes.txt" --grid 8; }
@test "bad input: truncated HDF5 file" { bad_case 4 "truncated.hdf5" "$INPUTS/truncated.hdf5" --grid 8; }
@test "bad input: no such file" { bad_case 4 "no such" "$INPUTS/none.hdf5" --grid 8; }
@test "bad input: grid too large for memory is refused before allocating" { bad_case 3 "needs about" "$INPUTS/good.hdf5" --grid 100000; }
@test "bad input: open boundaries without --region" { bad_case 2 "--region" "$INPUTS/openbox.hdf5" --grid 8; }
@test "bad input: unknown particle type" { bad_case 2 "type 9" "$INPUTS/good.hdf5" --grid 8 --types 9; }
@test "bad input: bad grid and region" {
  bad_case 2 "grid" "$INPUTS/good.hdf5" --grid 8,8
  bad_case 2 "region" "$INPUTS/good.hdf5" --grid 8 --region 0,0,0,1,1
}

@test "bad output folder is an I/O error" {
  run --separate-stderr cic-project "$INPUTS/good.hdf5" -o "$OUT/no/such/grid.h5" --grid 8 -q
  assert_failure 4
  output=$stderr assert_one_error_line cic-project
}

@test "bad input under MPI: every rank stops with the same code, no hang" {
  run timeout 60 mpirun -n 3 --oversubscribe cic-project "$INPUTS/nan.hdf5" -o "$OUT/grid.h5" --grid 8 -q
  assert_failure 3
  assert_only_files "$OUT"
  run timeout 60 mpirun -n 2 --oversubscribe cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 100000 -q
  assert_failure 3
  assert_only_files "$OUT"
}

@test "a failed run leaves the previous output untouched and nothing half-written" {
  run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 8 -q
  assert_success
  before=$(sha256sum "$OUT/grid.h5" "$OUT/grid.h5.json")
  for phase in read deposit write finish; do
    PHEW_TEST_FAIL_AT=$phase run cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 16 -q
    assert_failure 1
    assert_equal "$(sha256sum "$OUT/grid.h5" "$OUT/grid.h5.json")" "$before"
    assert_only_files "$OUT" grid.h5 grid.h5.json
  done
}

@test "a run killed halfway leaves no file that looks complete" {
  # Paused just before the rename, with the temporary file written: SIGTERM removes it.
  PHEW_TEST_PAUSE_AT=finish cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 16 -q &
  pid=$!
  for _ in $(seq 100); do
    compgen -G "$OUT/.phew-*" >/dev/null && break
    sleep 0.1
  done
  compgen -G "$OUT/.phew-*" >/dev/null || fail "no temporary file seen"
  kill -TERM "$pid"
  wait "$pid" || true
  assert_only_files "$OUT"
  # SIGKILL cannot be caught: the temporary file stays, hidden (.phew-...); no grid.h5 appears.
  PHEW_TEST_PAUSE_AT=finish cic-project "$INPUTS/good.hdf5" -o "$OUT/grid.h5" --grid 16 -q &
  pid=$!
  for _ in $(seq 100); do
    compgen -G "$OUT/.phew-*" >/dev/null && break
    sleep 0.1
  done
  kill -KILL "$pid"
  wait "$pid" || true
  [[ ! -e $OUT/grid.h5 && ! -e $OUT/grid.h5.json ]]
}
