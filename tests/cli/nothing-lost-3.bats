#!/usr/bin/env bats
# Nothing lost, part 3: the cases a probe with inputs nobody designed found after part 2.
# The provenance chain is protected (no output lands on a file a re-run needs, by any spelling or
# link); no file phew opens can make it wait (FIFOs); a full disk or a file-size limit at 3 ranks ends
# with exit 4 and nothing behind; -j extremes; duplicate particle IDs and units declared twice
# differently; the exit codes and messages docs/cli.md promises. (The edited products are
# tests/cli/edited_products.py.) Each refusal: the documented exit code at once, one line, the inputs
# untouched, nothing written.
# $status and $stderr are set by bats' run (in the test's own subshell).
# shellcheck disable=SC2154
load common

setup_file() {
  load common
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  mkdir -p "$D"
  # A chain over a synthetic snapshot, every stage once: the files the protected chain holds.
  synth-particles plummer -o "$D/s.hdf5" --particles 3000 --seed 3 --box 100 --cosmology 0.3,0.7,0.7 -q
  cic-project "$D/s.hdf5" -o "$D/g.h5" --grid 16 -q
  phew-segment "$D/g.h5" -o "$D/p.h5" --threshold 2mean -q
  phew-merge "$D/p.h5" -o "$D/c.h5" -q
  deblend "$D/c.h5" "$D/s.hdf5" -o "$D/k.h5" -q
  voters "$D/k.h5" "$D/s.hdf5" -o "$D/v.h5" -q
  B="$BATS_FILE_TMPDIR/bad"
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_bad_snapshots.py" "$B"
}

setup() {
  make_inputs
  D="$BATS_FILE_TMPDIR/d"
  B="$BATS_FILE_TMPDIR/bad"
  OUT="$BATS_TEST_TMPDIR/out"
  W="$BATS_TEST_TMPDIR/work"
  mkdir -p "$OUT" "$W"
}

# refused CODE PATTERN TOOL ARGS...: exit CODE within 20 s (no hang) with one line holding PATTERN.
refused() {
  local code=$1 pattern=$2 tool=$3
  shift 3
  run --separate-stderr timeout 20 "$tool" "$@" -q
  [[ $status -eq $code ]] || fail "$tool $*: exit $status (want $code), stderr: $stderr"
  output=$stderr assert_one_error_line "$tool"
  [[ $stderr == *"$pattern"* ]] || fail "stderr '$stderr' lacks '$pattern'"
}

# The chain's files and their manifests, hashed: a refused run leaves them as they were.
chain_sums() { (cd "$D" && sha256sum -- *); }
@test "chain: unbind onto the grid of its clumps' chain is refused" {
  local before
  before=$(chain_sums)
  refused 2 "a tool never writes over its inputs' provenance" unbind "$D/c.h5" "$D/s.hdf5" -o "$D/g.h5"
  assert_equal "$(chain_sums)" "$before"
}

@test "chain: voters and mergertree --particles onto the snapshot the chain records, also through a link or a hard link" {
  local before
  before=$(chain_sums)
  # The snapshot of the chain, given to voters through another file name: a symbolic link and a hard link.
  ln -s "$D/s.hdf5" "$W/link.hdf5"
  ln "$D/s.hdf5" "$W/hard.hdf5" 2>/dev/null || cp -l "$D/s.hdf5" "$W/hard.hdf5" || skip "no hard links across these folders"
  refused 2 "" voters "$D/k.h5" "$D/s.hdf5" -o "$D/s.hdf5"
  refused 2 "" voters "$D/k.h5" "$W/link.hdf5" -o "$W/hard.hdf5"
  refused 2 "a tool never writes over its inputs' provenance" mergertree "$D/k.h5:$D/v.h5" -o "$W/hard.hdf5" --particles
  refused 2 "a tool never writes over its inputs' provenance" mergertree "$D/k.h5:$D/v.h5" -o "$W/link.hdf5" --particles
  assert_equal "$(chain_sums)" "$before"
}

@test "chain: mergertree --state tree.h5 -o tree.h5.json (the state's own manifest) is refused" {
  mergertree "$D/k.h5:$D/v.h5" -o "$OUT/t.h5" -q
  local before
  before=$(sha256sum "$OUT/t.h5" "$OUT/t.h5.json")
  refused 2 "" mergertree --state "$OUT/t.h5" --add "$D/k.h5:$D/v.h5" -o "$OUT/t.h5.json"
  assert_equal "$(sha256sum "$OUT/t.h5" "$OUT/t.h5.json")" "$before"
}

@test "chain: the --config file is an input (synth-particles --config c.json -o c.json)" {
  echo '{"particles": 100}' >"$OUT/c.json"
  refused 2 "" synth-particles plummer --config "$OUT/c.json" -o "$OUT/c.json"
  assert_equal "$(cat "$OUT/c.json")" '{"particles": 100}'
  assert_only_files "$OUT" c.json
}

@test "FIFOs: a piece of a multi-file snapshot, a RAMSES part file, --config, centres and a product are refused at once" {
  cp "$INPUTS/multi.0.hdf5" "$W/"
  mkfifo "$W/multi.1.hdf5" "$W/c.json" "$W/centres.txt" "$W/g.h5"
  refused 3 "multi.1.hdf5: is not a regular file" cic-project "$W/multi.0.hdf5" --grid 8 -o "$OUT/g.h5"
  refused 3 "c.json: is not a regular file" cic-project "$INPUTS/good.hdf5" --config "$W/c.json" -o "$OUT/g.h5"
  refused 3 "c.json: is not a regular file" cic-project "$INPUTS/good.hdf5" "--config=$W/c.json" -o "$OUT/g.h5"
  refused 3 "centres.txt" dtfe-surface "$INPUTS/good.hdf5" --centers "$W/centres.txt" --size 20 --resolution 8 -o "$OUT/m.h5"
  refused 3 "g.h5" phew-segment "$W/g.h5" --threshold 2mean -o "$OUT/p.h5"
  local ramses="$PHEW_SHARED_DATA/ramses-cosmo-L20-N32/output_00003"
  if [[ -d $ramses ]]; then
    cp -r "$ramses" "$W/out3"
    rm "$W/out3/part_00003.out00002"
    mkfifo "$W/out3/part_00003.out00002"
    refused 3 "part_00003.out00002: is not a regular file" cic-project "$W/out3" --grid 8 -o "$OUT/r.h5"
  fi
  assert_only_files "$OUT"
}

# on_full_disk SIZE_KIB: a tmpfs of that size at $FULL, or skip with the reason.
on_full_disk() {
  FULL="$BATS_TEST_TMPDIR/full"
  mkdir -p "$FULL"
  mount -t tmpfs -o "size=$1k" tmpfs "$FULL" 2>/dev/null || skip "cannot mount a tmpfs here (needs root): the full-disk cases run where it can"
}

@test "full disk: every rank count ends with exit 4 and one line, nothing left, no hang" {
  on_full_disk 300
  local n
  for n in 1 2 3 4; do
    run --separate-stderr timeout 60 mpirun --oversubscribe -n "$n" cic-project "$INPUTS/good.hdf5" --grid 64 -o "$FULL/g.h5" -q
    [[ $status -eq 4 ]] || { umount "$FULL"; fail "$n ranks: exit $status, stderr: $stderr"; }
    [[ $stderr == *"g.h5: "*"no space left on device"* ]] || { umount "$FULL"; fail "$n ranks: $stderr"; }
    [[ -z $(ls -A "$FULL") ]] || { umount "$FULL"; fail "$n ranks left $(ls -A "$FULL")"; }
  done
  umount "$FULL"
}

@test "full disk: at 3 ranks, disks of every size between nothing and enough end with exit 0 or 4, never a hang" {
  on_full_disk 20
  local s
  for s in 20 200 800 1100 1300 1400; do
    mount -o "remount,size=${s}k" "$FULL"
    run timeout 60 mpirun --oversubscribe -n 3 cic-project "$INPUTS/good.hdf5" --grid 64 -o "$FULL/g.h5" -q
    [[ $status -eq 0 || $status -eq 4 ]] || { umount "$FULL"; fail "${s} KiB: exit $status"; }
    [[ $status -eq 0 ]] || [[ -z $(ls -A "$FULL") ]] || { umount "$FULL"; fail "${s} KiB left $(ls -A "$FULL")"; }
    run timeout 60 mpirun --oversubscribe -n 3 cic-project "$INPUTS/good.hdf5" --grid 8 --refine 4 --levels 3 -o "$FULL/a.h5" -q
    [[ $status -eq 0 || $status -eq 4 ]] || { umount "$FULL"; fail "${s} KiB, adaptive: exit $status"; }
    rm -rf "${FULL:?}"/* "$FULL"/.[!.]*
  done
  umount "$FULL"
}

@test "file-size limit: set for the ranks under mpirun, the write is refused with one line (exit 4), nothing left" {
  run --separate-stderr timeout 60 mpirun --oversubscribe -n 3 sh -c "ulimit -f 100; exec cic-project '$INPUTS/good.hdf5' --grid 64 -o '$OUT/g.h5' -q"
  assert_equal "$status" 4
  [[ $stderr == *"cic-project: error: $OUT/g.h5: "*"file-size limit"*"(ulimit -f)"* ]] || fail "$stderr"
  assert_only_files "$OUT"
  # A limit the file fits under is no error.
  run timeout 60 mpirun --oversubscribe -n 3 sh -c "ulimit -f 4000; exec cic-project '$INPUTS/good.hdf5' --grid 64 -o '$OUT/g.h5' -q"
  assert_success
}

@test "threads: -j beyond 1024 is a usage error for every threaded tool; threads the system refuses change nothing" {
  refused 2 "--threads 100000: at most 1024" cic-project "$INPUTS/good.hdf5" --grid 8 -o "$OUT/g.h5" -j 100000
  refused 2 "at most 1024" phew-segment "$D/g.h5" --threshold 2mean -o "$OUT/p.h5" -j 100000
  refused 2 "at most 1024" voters "$D/k.h5" "$D/s.hdf5" -o "$OUT/v.h5" -j 1025
  refused 2 "at most 1024" unbind "$D/c.h5" "$D/s.hdf5" -o "$OUT/b.h5" -j 100000
  refused 2 "at most 1024" dtfe-surface "$D/s.hdf5" --centers 0,0,0 --size 2 --resolution 8 -o "$OUT/m.h5" -j 100000
  assert_only_files "$OUT"
  # At most 40 processes and threads for this user: most of -j 1024 cannot start; the loop runs on the rest.
  run bash -c "ulimit -u 40; phew-segment '$D/g.h5' --threshold 2mean -o '$OUT/p.h5' -q -j 1024"
  assert_success
  run h5diff "$D/p.h5" "$OUT/p.h5" /cells /cells
  assert_success
}

@test "duplicate particle IDs: refused naming the ID, the same at 1 and 3 ranks, by every tool that reads IDs" {
  cp "$D/s.hdf5" "$W/dup.hdf5"
  /usr/bin/python3 -c "
import h5py
with h5py.File('$W/dup.hdf5', 'r+') as f:
    ids = f['PartType1/ParticleIDs']
    a = ids[...]
    a[100] = a[2500]
    ids[...] = a
    print(a[2500])" >"$W/id"
  local id
  id=$(cat "$W/id")
  cic-project "$W/dup.hdf5" -o "$W/g.h5" --grid 16 -q
  phew-segment "$W/g.h5" -o "$W/p.h5" --threshold 2mean -q
  phew-merge "$W/p.h5" -o "$W/c.h5" -q
  refused 3 "dup.hdf5: particle ID $id is given to more than one particle" deblend "$W/c.h5" "$W/dup.hdf5" -o "$OUT/k.h5"
  refused 3 "particle ID $id is given" unbind "$W/c.h5" "$W/dup.hdf5" -o "$OUT/b.h5"
  run --separate-stderr mpi 3 deblend "$W/c.h5" "$W/dup.hdf5" -o "$OUT/k.h5" -q
  assert_equal "$status" 3
  [[ $stderr == *"deblend: error: "*"dup.hdf5: particle ID $id is given"* ]] || fail "$stderr"
  # voters and mergertree --particles read the snapshot too; their input stages come from the good copy.
  cp "$D/k.h5" "$D/k.h5.json" "$W/"
  refused 3 "" voters "$W/k.h5" "$W/dup.hdf5" --allow-other-types -o "$OUT/v.h5"
  assert_only_files "$OUT"
}

@test "units: /Header and /Parameters that disagree, or a dataset's to_cgs against them, are refused naming both" {
  local g4="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5"
  [[ -f $g4 ]] || skip "the shared Gadget-4 run is not beside the project"
  cp "$g4" "$W/params.hdf5"
  cp "$g4" "$W/tocgs.hdf5"
  cp "$g4" "$W/twice.hdf5"
  /usr/bin/python3 -c "
import h5py
with h5py.File('$W/params.hdf5', 'r+') as f: f['Parameters'].attrs['UnitLength_in_cm'] = 3.085678e24
with h5py.File('$W/tocgs.hdf5', 'r+') as f: f['PartType1/Velocities'].attrs['to_cgs'] = 1e7
with h5py.File('$W/twice.hdf5', 'r+') as f: f['Header'].attrs['UnitMass_in_g'] = 1.989e33"
  refused 3 "Coordinates's to_cgs is 3.085678e+21, but the units the file declares (UnitLength_in_cm 3.085678e+24" \
    cic-project "$W/params.hdf5" --grid 8 -o "$OUT/g.h5"
  refused 3 "Velocities's to_cgs is 10000000" cic-project "$W/tocgs.hdf5" --grid 8 -o "$OUT/g.h5"
  refused 3 "Header/UnitMass_in_g is 1.989e+33 but Parameters/UnitMass_in_g is 1.989e+43" \
    cic-project "$W/twice.hdf5" --grid 8 -o "$OUT/g.h5"
  run cic-project "$g4" --grid 8 -o "$OUT/g.h5" -q
  assert_success
}

@test "exit codes: a missing piece (HDF5, Gadget binary), a loop of links, an unreadable file are I/O errors (4)" {
  cp "$B/good.0.hdf5" "$B/bin.0" "$W/"
  refused 4 "good.1.hdf5: piece 1 of 2 of the snapshot is missing" cic-project "$W/good.0.hdf5" --grid 8 -o "$OUT/g.h5"
  refused 4 "bin.1: piece 1 of 2 of the snapshot is missing" cic-project "$W/bin.0" --grid 8 -o "$OUT/g.h5"
  ln -s loop2 "$W/loop1"
  ln -s loop1 "$W/loop2"
  refused 4 "loop1: " cic-project "$W/loop1" --grid 8 -o "$OUT/g.h5"
  # root reads anything: as root the case runs as nobody, in a folder of /tmp nobody may use.
  local any
  any=$(mktemp -d /tmp/phew-unreadable.XXXXXX)
  chmod 777 "$any"
  cp "$INPUTS/good.hdf5" "$any/unreadable.hdf5"
  chmod 000 "$any/unreadable.hdf5"
  local as=()
  [[ $(id -u) -ne 0 ]] || as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  run --separate-stderr "${as[@]}" "$(command -v cic-project)" "$any/unreadable.hdf5" --grid 8 -o "$any/g.h5" -q
  local files
  files=$(ls -A "$any")
  rm -rf "$any"
  assert_equal "$status" 4
  [[ $stderr == *"unreadable.hdf5: cannot be read: Permission denied"* ]] || fail "$stderr"
  assert_equal "$files" "unreadable.hdf5"
}

@test "messages: any piece finds the others; a truncated file says so; header values printed whole, a round trip's digits accepted" {
  cic-project "$INPUTS/multi.0.hdf5" -o "$OUT/a.h5" --grid 16 -q
  run cic-project "$INPUTS/multi.1.hdf5" -o "$OUT/b.h5" --grid 16 -q
  assert_success
  run h5diff "$OUT/a.h5" "$OUT/b.h5" /grid/density
  assert_success
  run cic-project "$B/bin.1" -o "$OUT/c.h5" --grid 16 -q
  assert_success
  head -c 3000 "$INPUTS/good.hdf5" >"$W/cut.hdf5"
  refused 4 "cut.hdf5: HDF5 cannot open the file: truncated: 3000 of its" cic-project "$W/cut.hdf5" --grid 8 -o "$OUT/g.h5"
  cp "$INPUTS/multi.0.hdf5" "$INPUTS/multi.1.hdf5" "$W/"
  /usr/bin/python3 -c "
import h5py
with h5py.File('$W/multi.1.hdf5', 'r+') as f: f['Header'].attrs['Time'] = f['Header'].attrs['Time'] * (1 + 1e-12)"
  run cic-project "$W/multi.0.hdf5" -o "$OUT/d.h5" --grid 16 -q
  assert_success
  /usr/bin/python3 -c "
import h5py
with h5py.File('$W/multi.1.hdf5', 'r+') as f: f['Header'].attrs['Time'] = f['Header'].attrs['Time'] * (1 + 1e-6)"
  refused 3 "multi.1.hdf5: Header/Time is 1.000001000001, but" cic-project "$W/multi.0.hdf5" --grid 16 -o "$OUT/e.h5"
}

@test "options: values that mean nothing are refused up front (exit 2)" {
  refused 2 "--search-radius 0 must be a finite length > 0" voters "$D/k.h5" "$D/s.hdf5" -o "$OUT/v.h5" -R 0
  refused 2 "--pm-mesh 0: expected 32 to 4096" voters "$D/k.h5" "$D/s.hdf5" -o "$OUT/v.h5" --potential compute --pm-mesh 0
  refused 2 "--stats-min-mass inf must be a finite mass" mergertree "$D/k.h5" -o "$OUT/t.h5" --stats "$OUT/s.json" \
    --stats-min-mass inf
  refused 2 "--export-yt: an empty name" unbind "$D/c.h5" "$D/s.hdf5" -o "$OUT/b.h5" --export-yt ""
  assert_only_files "$OUT"
}
