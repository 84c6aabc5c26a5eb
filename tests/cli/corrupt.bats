#!/usr/bin/env bats
# Corrupt IDs and bad values: every ID read from a file is range-checked, and
# values that make no sense are refused with one line and the documented exit code, never exit 0.
# Files are edited with h5py and re-signed (remanifest), so the tools judge the content, not a stale
# manifest.
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # A small cosmological box: many peaks and saddles.
  ln -s "$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5" "$D/s.hdf5"
  cic-project "$D/s.hdf5" -o "$D/g.h5" --grid 48 -q
  phew-segment "$D/g.h5" -o "$D/p.h5" --threshold 8mean -q
  phew-merge "$D/p.h5" -o "$D/c.h5" -q
  deblend "$D/c.h5" "$D/s.hdf5" -o "$D/k.h5" -q
  voters "$D/k.h5" "$D/s.hdf5" -o "$D/v.h5" -q
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  OUT="$BATS_TEST_TMPDIR/out"
  E="$BATS_TEST_TMPDIR/edit"
  mkdir -p "$OUT" "$E"
}


# The same dataset with one value replaced (datasets keep their type and shape).
set_value() { edit "$1" "d = f['$2']; a = d[()]; a.flat[${4:-0}] = $3; d[...] = a"; }

@test "the untouched chain passes (the edits below are what fails)" {
  run phew-merge "$D/p.h5" -o "$OUT/c.h5" -q
  assert_success
  run mergertree "$D/k.h5:$D/v.h5" -o "$OUT/t.h5" -q
  assert_success
}

@test "corrupt IDs: a saddle naming peak 10^9" {
  set_value p.h5 /saddles/peak_a 1000000000
  bad_input phew-merge "$OUT/c.h5" 3 "saddle row 0 joins peaks 1000000000" "$E/p.h5"
}

@test "corrupt IDs: a saddle between a peak and itself" {
  edit p.h5 "a = f['/saddles/peak_a'][()]; b = f['/saddles/peak_b'][()]; b[0] = a[0]; f['/saddles/peak_b'][...] = b"
  bad_input phew-merge "$OUT/c.h5" 3 "expected two different IDs" "$E/p.h5"
}

@test "corrupt IDs: /peaks/id out of order" {
  set_value p.h5 /peaks/id 999999
  bad_input phew-merge "$OUT/c.h5" 3 "/peaks/id row 1 is 2: out of order after 999999" "$E/p.h5"
}

@test "corrupt IDs: a cell label above the last peak, and cells out of order" {
  # a wider type than the writer's, so that any value fits
  edit p.h5 "a = f['/cells/peak'][()].astype(np.int64); a[0] = -7; del f['/cells/peak']; f['/cells/peak'] = a"
  bad_input phew-merge "$OUT/c.h5" 3 "holds the label -7" "$E/p.h5"
  edit c.h5 "a = f['/cells/clump'][()].astype(np.int64); a[-1] = 123456; del f['/cells/clump']; f['/cells/clump'] = a"
  bad_input deblend "$OUT/k.h5" 3 "holds the label 123456" "$E/c.h5" "$D/s.hdf5"
  edit p.h5 "d = f['/cells/index']; a = d[()]; a[1], a[2] = a[2], a[1]; d[...] = a"
  bad_input phew-merge "$OUT/c.h5" 3 "/cells/index row 2 is" "$E/p.h5"
  edit c.h5 "d = f['/cells/plane_start']; a = d[()]; a[-1] += 1; d[...] = a"
  bad_input deblend "$OUT/k.h5" 3 "/cells/plane_start does not match" "$E/c.h5" "$D/s.hdf5"
}

@test "an old file (dense label grids, format version 1) is refused with both versions named" {
  edit p.h5 "del f.attrs['format_version']"
  bad_input phew-merge "$OUT/c.h5" 3 "format version 1 (dense label grids), but this phew reads version 2" "$E/p.h5"
  edit c.h5 "f.attrs['format_version'] = 1"
  bad_input deblend "$OUT/k.h5" 3 "format version 1 (dense label grids), but this phew reads version 2 (sparse /cells): re-run phew-merge" "$E/c.h5" "$D/s.hdf5"
}

@test "bad values: a peak with a NaN position is refused, not given 0 voters" {
  set_value k.h5 /peaks/position "np.nan"
  bad_input voters "$OUT/v.h5" 3 "/peaks/position row 0 is nan: not a number" "$E/k.h5" "$D/s.hdf5"
}

@test "bad values: voters' radii and softening" {
  bad_input voters "$OUT/v.h5" 2 "--search-radius nan" "$D/k.h5" "$D/s.hdf5" --search-radius nan
  bad_input voters "$OUT/v.h5" 2 "--min-radius" "$D/k.h5" "$D/s.hdf5" --min-radius inf
  bad_input voters "$OUT/v.h5" 2 "--softening -1" "$D/k.h5" "$D/s.hdf5" --softening -1 --potential compute
}

@test "bad values: an empty type selection is refused by every tool alike" {
  # good.hdf5 holds dark matter (type 1) only; the selection is checked before the grid is compared.
  bad_input cic-project "$OUT/g.h5" 3 "no particles of the selected types (types present: 1" "$INPUTS/good.hdf5" \
    --grid 8 --types 0
  bad_input deblend "$OUT/k.h5" 3 "no particles of the selected types" "$D/c.h5" "$INPUTS/good.hdf5" --types 0
  bad_input voters "$OUT/v.h5" 3 "no particles of the selected types" "$D/k.h5" "$INPUTS/good.hdf5" --types 0
}

@test "bad values: a region with no particles" {
  bad_input cic-project "$OUT/g.h5" 3 "no particle of the selection lies in the region" "$D/s.hdf5" --grid 8 \
    --region 1,1,1,2,2,2
  run --separate-stderr mpi 2 cic-project "$D/s.hdf5" --grid 8 --region 1,1,1,2,2,2 -o "$OUT/g.h5" -q
  assert_failure 3
  assert_only_files "$OUT"
}

@test "bad values: BoxSize tiny, negative or NaN" {
  cp "$INPUTS/good.hdf5" "$E/box.hdf5"
  /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+')['Header'].attrs['BoxSize'] = 1e-30" "$E/box.hdf5"
  bad_input cic-project "$OUT/g.h5" 3 "far outside the periodic box" "$E/box.hdf5" --grid 8
  /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+')['Header'].attrs['BoxSize'] = -500.0" "$E/box.hdf5"
  bad_input cic-project "$OUT/g.h5" 3 "BoxSize -500" "$E/box.hdf5" --grid 8
  /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+')['Header'].attrs['BoxSize'] = float('nan')" "$E/box.hdf5"
  bad_input cic-project "$OUT/g.h5" 3 "BoxSize nan" "$E/box.hdf5" --grid 8
}

@test "bad values: --min-votes above the voters per peak" {
  bad_input mergertree "$OUT/t.h5" 2 "--min-votes 25 is more than the 20 voters per peak" "$D/k.h5:$D/v.h5" --min-votes 25
}

@test "exit codes as documented: a missing voters file (4), clumps.h5 given as a stage (3)" {
  bad_input mergertree "$OUT/t.h5" 4 "" "$D/k.h5:$D/missing.voters.h5"
  bad_input mergertree "$OUT/t.h5" 3 "" "$D/c.h5:$D/v.h5"
}
