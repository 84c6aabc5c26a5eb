#!/usr/bin/env bats
# Bad inputs that must not pass with exit 0 or a vague message:
# multi-file snapshots whose pieces disagree or repeat, virtual datasets with a missing source, header
# values no simulation writes, products whose content breaks their invariants, options out of range.
# Each case: the documented exit code, one line naming the file and the field, nothing left behind.
load common

setup_file() {
  load common
  make_inputs
  B="$BATS_FILE_TMPDIR/bad"
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_bad_snapshots.py" "$B"
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  cic-project "$INPUTS/good.hdf5" -o "$D/g.h5" --grid 16 -q
  phew-segment "$D/g.h5" -o "$D/p.h5" --threshold 2mean -q
  phew-merge "$D/p.h5" -o "$D/c.h5" -q
  deblend "$D/c.h5" "$INPUTS/good.hdf5" -o "$D/k.h5" -q
  voters "$D/k.h5" "$INPUTS/good.hdf5" -o "$D/v.h5" -q
}

setup() {
  make_inputs
  B="$BATS_FILE_TMPDIR/bad"
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  E="$BATS_TEST_TMPDIR/edit"
  mkdir -p "$OUT" "$E"
}


grid() { bad_input cic-project "$OUT/g.h5" "$@" --grid 16; }

@test "item 6: good multi-file snapshots still pass (HDF5 and Gadget binary)" {
  run cic-project "$B/good.0.hdf5" -o "$OUT/g.h5" --grid 16 -q
  assert_success
  run cic-project "$B/bin.0" -o "$OUT/b.h5" --grid 16 -q
  assert_success
}

@test "item 6: pieces that disagree on Time, BoxSize, NumFilesPerSnapshot, MassTable or cosmology are refused" {
  grid 3 "othertime.1.hdf5: Header/Time is 0.5, but" "$B/othertime.0.hdf5"
  grid 3 "otherbox.1.hdf5: Header/BoxSize is 200, but" "$B/otherbox.0.hdf5"
  grid 3 "othernfiles.1.hdf5: Header/NumFilesPerSnapshot is 3, but" "$B/othernfiles.0.hdf5"
  grid 3 "othermass.1.hdf5: Header/MassTable is" "$B/othermass.0.hdf5"
  grid 3 "othercosmo.1.hdf5: Header/HubbleParam is 0.6, but" "$B/othercosmo.0.hdf5"
  grid 3 "bintime.1: Header/Time is 0.5, but" "$B/bintime.0"
}

@test "item 6: a piece given twice, by a copy or on the command line, is refused" {
  grid 3 "dup.1.hdf5: holds the particles of" "$B/dup.0.hdf5"
  grid 3 "bindup.1: holds the particles of" "$B/bindup.0"
  grid 3 "a piece of the snapshot is given twice" "$B/good.0.hdf5" "$B/good.0.hdf5"
  ln -s "$B/good.0.hdf5" "$E/link.hdf5"
  grid 3 "a piece of the snapshot is given twice" "$B/good.0.hdf5" "$E/link.hdf5"
}

@test "item 7: a virtual dataset whose source file is missing is refused, naming it" {
  grid 4 "vds.hdf5: /PartType1/Coordinates is a virtual dataset whose source file src.1.hdf5 is missing" "$B/vds.hdf5"
}

@test "item 8: header values no simulation writes are refused, naming the field" {
  grid 3 "Header/NumFilesPerSnapshot is 0" "$B/nfiles0.hdf5"
  grid 3 "Header/NumFilesPerSnapshot is -3" "$B/nfilesneg.hdf5"
  grid 3 "time0.hdf5: Time is 0" "$B/time0.hdf5"
  grid 3 "timeneg.hdf5: Time is -1" "$B/timeneg.hdf5"
  grid 3 "hubble0.hdf5: Header/HubbleParam is 0 with Omega0 0.3" "$B/hubble0.hdf5"
  grid 3 "omeganan.hdf5: Header/Omega0 is nan" "$B/omeganan.hdf5"
  grid 3 "unitneg.hdf5: UnitLength_in_cm is" "$B/unitneg.hdf5"
  grid 3 "box1e300.hdf5: BoxSize 1e+300" "$B/box1e300.hdf5"
}

@test "item 8: integer coordinates are refused" {
  grid 3 "/PartType1/Coordinates is int32 [2000,3], expected floating-point" "$B/int32.hdf5"
  grid 3 "/PartType1/Coordinates is uint8 [2000,3], expected floating-point" "$B/uint8.hdf5"
}

@test "item 8: a Gadget-4 run without PERIODIC needs --region (exit 2)" {
  grid 2 "give the grid's extent with --region" "$B/gadget4open.hdf5"
  run cic-project "$B/gadget4open.hdf5" -o "$OUT/g.h5" --grid 16 --region 0,0,0,100,100,100 -q
  assert_success
}

@test "item 9: a grid with a NaN box or mean density 0 is refused when read" {
  edit g.h5 "f['grid'].attrs['box_size'] = np.array([np.nan, 100, 100])"
  bad_input phew-segment "$OUT/p.h5" 3 "box_size nan, origin 0 in axis x" "$E/g.h5" --threshold 2mean
  edit g.h5 "f['grid'].attrs['mean_density'] = 0.0"
  bad_input phew-segment "$OUT/p.h5" 3 "mean_density is 0" "$E/g.h5" --threshold 2mean
}

@test "item 9: patches with a negative peak density or a test cell of peak 0 are refused" {
  edit p.h5 "d = f['peaks/density']; v = d[...]; v[0] = -1; d[...] = v"
  bad_input phew-merge "$OUT/c.h5" 3 "/peaks/density row 0 is -1: too small" "$E/p.h5"
  edit p.h5 "d = f['cells/peak']; v = d[...]; v[0] = 0; d[...] = v"
  bad_input phew-merge "$OUT/c.h5" 3 "with peak 0" "$E/p.h5"
}

@test "item 10: options out of range are refused (exit 2)" {
  bad_input phew-merge "$OUT/c.h5" 2 "--relevance inf must be a finite number" "$D/p.h5" --relevance inf
  bad_input phew-merge "$OUT/c.h5" 2 "--second-relevance 1.5 must be a finite number above --relevance 2" "$D/p.h5" \
    --relevance 2 --second-relevance 1.5
  bad_input deblend "$OUT/k.h5" 2 "--bin-fraction inf must be a finite number" "$D/c.h5" "$INPUTS/good.hdf5" --bin-fraction inf
  bad_input cic-project "$OUT/g.h5" 2 "1e+300 is not a finite coordinate" "$INPUTS/good.hdf5" --grid 16 \
    --region=-1e300,0,0,1e300,100,100
  bad_input voters "$OUT/v.h5" 2 "--min-radius 5 is above --search-radius 2" "$D/k.h5" "$INPUTS/good.hdf5" \
    --search-radius 2 --min-radius 5
  bad_input synth-particles "$OUT/s" 2 "is above 1e4" zeldovich --redshift 1e300
}

@test "item 10 and messages: --export-ctrees '' and -o '' or -o . are refused up front (exit 2)" {
  bad_input mergertree "$OUT/t.h5" 2 "--export-ctrees: an empty name" "$D/k.h5" --export-ctrees ''
  run --separate-stderr cic-project "$INPUTS/good.hdf5" -o '' --grid 16 -q
  assert_failure 2
  output=$stderr assert_one_error_line cic-project
  cd "$OUT"
  run --separate-stderr cic-project "$INPUTS/good.hdf5" -o . --grid 16 -q
  assert_failure 2
  output=$stderr assert_one_error_line cic-project
  assert_only_files "$OUT"
}

@test "messages: --export-ctrees naming an existing file is an I/O error (exit 4)" {
  touch "$E/file"
  bad_input mergertree "$OUT/t.h5" 4 "$E/file: exists and is not a folder" "$D/k.h5" --export-ctrees "$E/file"
}

@test "item 10: --help to a full device is exit 4 with one line" {
  run --separate-stderr bash -c 'cic-project --help > /dev/full'
  assert_failure 4
  output=$stderr assert_one_error_line cic-project
}

@test "messages: a valid HDF5 snapshot behind a 512-byte user block is read" {
  run cic-project "$B/userblock.hdf5" -o "$OUT/g.h5" --grid 16 -q
  assert_success
}

@test "messages: a Gadget binary header with a damaged record marker is named" {
  grid 3 "brokenmarker: block HEAD (the Gadget binary header) starts with record marker 256 but ends with 255" "$B/brokenmarker"
}

# edit_stage FILE PYTHON: copies of $D/k.h5 (peaks) and $D/v.h5 (voters) in $E, FILE of them edited as by
# `edit`; the voters' manifest then names the edited peaks, so that mergertree reads the content.
edit_stage() {
  cp "$D/k.h5" "$D/k.h5.json" "$D/v.h5" "$D/v.h5.json" "$E/"
  edit "$1" "$2"
  /usr/bin/python3 - "$E" <<'PY'
import json, sys
e = sys.argv[1]
peaks = json.load(open(f"{e}/k.h5.json"))["outputs"][0]["fingerprint"]
m = json.load(open(f"{e}/v.h5.json"))
for i in m["inputs"]:
    if i["kind"] == "peaks": i["fingerprint"] = peaks
json.dump(m, open(f"{e}/v.h5.json", "w"))
PY
}

@test "item 9: clumps.h5 with a clump ID beyond its peaks or a NaN peak position is refused (deblend)" {
  edit c.h5 "d = f['clumps/id']; v = d[...]; v[0] = 10**6; d[...] = v"
  bad_input deblend "$OUT/k.h5" 3 "c.h5: /clumps/id row 0 is 1000000: not one of /peaks/id" "$E/c.h5" "$INPUTS/good.hdf5"
  edit c.h5 "d = f['clumps/peak_position']; v = d[...]; v[:] = np.nan; d[...] = v"
  bad_input deblend "$OUT/k.h5" 3 "/clumps/peak_position row 0 is nan: not a number (expected finite)" "$E/c.h5" "$INPUTS/good.hdf5"
}

@test "item 9: peaks.h5 and voters.h5 whose IDs do not resolve are refused (mergertree)" {
  edit_stage k.h5 "d = f['particles/peak']; v = d[...]; v[0] = 10**6; d[...] = v"
  bad_input mergertree "$OUT/t.h5" 3 "k.h5: /particles/peak row 0 is 1000000: not one of /peaks/id" "$E/k.h5:$E/v.h5"
  edit_stage k.h5 "d = f['particles/id']; v = d[...]; v[[0, -1]] = v[[-1, 0]]; d[...] = v"
  bad_input mergertree "$OUT/t.h5" 3 "/particles/id row 1 is 2: out of order after 3947 (expected ascending)" "$E/k.h5:$E/v.h5"
  edit_stage v.h5 "
for name in ('peaks/id', 'voters/peak'):
    d = f[name]; d[...] = d[...] + 10**6"
  bad_input mergertree "$OUT/t.h5" 3 "v.h5: /peaks/id row 0 is 1000001, not a peak of $E/k.h5" "$E/k.h5:$E/v.h5"
  # the unedited pair still passes
  edit_stage v.h5 "pass"
  run mergertree "$E/k.h5:$E/v.h5" -o "$OUT/t.h5" -q
  assert_success
}

@test "item 9: a manifest with empty, null or object inputs or outputs is refused, naming the field" {
  manifest() {
    cp "$D/g.h5" "$D/g.h5.json" "$E/"
    /usr/bin/python3 -c "import json; p = '$E/g.h5.json'; m = json.load(open(p)); m['$1'] = $2; json.dump(m, open(p, 'w'))"
  }
  for value in '{}' '[]' None; do
    manifest inputs "$value"
    bad_input phew-segment "$OUT/p.h5" 3 "g.h5.json: manifest field inputs is missing, empty or not a list" "$E/g.h5" --threshold 2mean
    manifest outputs "$value"
    bad_input phew-segment "$OUT/p.h5" 3 "g.h5.json: manifest field outputs is missing, empty or not a list" "$E/g.h5" --threshold 2mean
  done
}

@test "item 9: phew-merge --particles refuses a snapshot the grid was not made from, as deblend does" {
  cp "$INPUTS/good.hdf5" "$E/later.hdf5"
  /usr/bin/python3 -c "import h5py; h5py.File('$E/later.hdf5', 'r+')['Header'].attrs['Time'] = 0.5"
  bad_input phew-merge "$OUT/c.h5" 3 "later.hdf5: not the snapshot $D/p.h5 was made from" "$D/p.h5" --particles "$E/later.hdf5"
  bad_input deblend "$OUT/k.h5" 3 "later.hdf5: not the snapshot $D/c.h5 was made from" "$D/c.h5" "$E/later.hdf5"
  run phew-merge "$D/p.h5" --particles "$INPUTS/good.hdf5" -o "$OUT/c.h5" -q
  assert_success
}

@test "messages: --mean-from a grid of another region names boxes as boxes and densities as densities" {
  cic-project "$INPUTS/good.hdf5" -o "$E/half.h5" --grid 16 --region 0,0,0,50,50,50 -q
  bad_input phew-segment "$OUT/p.h5" 3 "half.h5: not a grid of the same region and units as this one (box 50 x 50 x 50" \
    "$D/g.h5" --threshold 2mean --mean-from "$E/half.h5"
}

@test "messages: under a file-size limit (ulimit -f) a tool started without mpirun fails with one line, not PMIx's" {
  run --separate-stderr bash -c "ulimit -f 10; cic-project '$INPUTS/good.hdf5' -o '$OUT/g.h5' --grid 16 -q"
  assert_failure 4
  output=$stderr assert_one_error_line cic-project
  [[ $stderr == *"g.h5"*"failed"* ]] || fail "stderr '$stderr' does not name the output"
  assert_only_files "$OUT"
}
