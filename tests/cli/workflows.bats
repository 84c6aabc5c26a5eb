#!/usr/bin/env bats
# The shell pipeline and the Snakemake workflow: the same outputs, resuming, re-running exactly what
# an input change needs, and failed stages that leave nothing looking complete.
load common

setup_file() {
  load common
  W="$BATS_FILE_TMPDIR/w"
  mkdir -p "$W"
  /usr/bin/python3 "$PHEW_SOURCE/tests/data/make_crossing.py" "$W/snaps" --snapshots 3 --n 3000
  cat >"$W/config.yaml" <<YAML
snapshots: "$W/snaps/snap_*.hdf5"
grid: 48
compress_grid: true
threshold: "50mean"
relevance: 2.0
saddle_threshold: ""
maps_top: 2
map_resolution: 32
YAML
  export PHEW_BIN
}

setup() {
  W="$BATS_FILE_TMPDIR/w"
  export PHEW_BIN
}

OUTPUTS=(snap_000/grid.h5 snap_000/patches.h5 snap_000/clumps.h5 snap_000/peaks.h5 snap_000/voters.h5
         snap_001/grid.h5 snap_001/patches.h5 snap_001/clumps.h5 snap_001/peaks.h5 snap_001/voters.h5
         snap_002/grid.h5 snap_002/patches.h5 snap_002/clumps.h5 snap_002/peaks.h5 snap_002/voters.h5
         tree.h5 maps.h5)

pipeline() { "$PHEW_SOURCE/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$1" --config "$W/config.yaml"; }
snake() {
  snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 2 --directory "$1" --configfile "$W/config.yaml" "${@:2}"
}

@test "the shell pipeline and Snakemake produce the same data for all seven tools, from the same options" {
  run pipeline "$W/sh"
  assert_success
  run snake "$W/sm" --quiet
  assert_success
  for o in "${OUTPUTS[@]}"; do
    [[ -f $W/sh/$o.json && -f $W/sm/$o.json ]] || fail "missing $o"
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$W/sh/$o" "$W/sm/$o"
    assert_success
  done
  # One table maps the config to the options (workflows/phew_options.py): every tool got the same
  # parameters from both, and mergertree its stages as explicit PEAKS:VOTERS pairs.
  run /usr/bin/python3 - "$W/sh" "$W/sm" "${OUTPUTS[@]}" <<'PY'
import json, sys
sh, sm, outputs = sys.argv[1], sys.argv[2], sys.argv[3:]
def params(root, o):
    p = json.load(open(f"{root}/{o}.json"))["parameters"]
    p.pop("threads", None)  # dtfe-surface: Snakemake's threads: directive, the shell pipeline's auto
    p.pop("threads_used", None)
    return json.loads(json.dumps(p).replace(root + "/", ""))
for o in outputs:
    assert params(sh, o) == params(sm, o), (o, params(sh, o), params(sm, o))
for root in (sh, sm):
    assert json.load(open(f"{root}/snap_000/grid.h5.json"))["parameters"]["compress"] is True  # a flag key
    stages = json.load(open(f"{root}/tree.h5.json"))["parameters"]["stages"]
    assert all(s.endswith(f"{s.split(':')[0].rsplit('/', 1)[0]}/voters.h5") and ":" in s for s in stages), stages
print("ok")
PY
  assert_output "ok"
}

@test "a second run does nothing" {
  run pipeline "$W/sh"
  assert_success
  refute_output --partial "running:"
  run snake "$W/sm"
  assert_success
  assert_output --partial "Nothing to be done"
}

@test "touching one snapshot re-runs exactly the stages downstream of it" {
  sleep 1
  touch "$W/snaps/snap_001.hdf5"
  run pipeline "$W/sh"
  assert_success
  ran=$(echo "$output" | sed -n "s|.*running: [a-z-]* -> $W/sh/||p" | sort | tr '\n' ' ')
  assert_equal "$ran" "snap_001/clumps.h5 snap_001/grid.h5 snap_001/patches.h5 snap_001/peaks.h5 snap_001/voters.h5 tree.h5 "
  run snake "$W/sm" --dry-run --quiet
  assert_success
  for rule in cic_project phew_segment phew_merge deblend voters mergertree; do assert_output --partial "$rule"; done
  refute_output --partial "dtfe_surface"
}

@test "a failed stage leaves no output the next run would take as complete, and the rerun resumes" {
  PHEW_TEST_FAIL_AT=noise run pipeline "$W/fail"
  assert_failure
  [[ -f $W/fail/snap_000/patches.h5.json ]]
  [[ ! -e $W/fail/snap_000/clumps.h5 && ! -e $W/fail/snap_000/clumps.h5.json ]]
  run pipeline "$W/fail"
  assert_success
  assert_output --partial "up to date: $W/fail/snap_000/patches.h5"
  assert_output --partial "running: phew-merge -> $W/fail/snap_000/clumps.h5"
  [[ -f $W/fail/maps.h5.json ]]
}

@test "a bad config is refused by the schema" {
  printf 'snapshots: "%s"\nrelevance: 0.5\n' "$W/snaps/snap_*.hdf5" >"$W/bad.yaml"
  run "$PHEW_SOURCE/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$W/bad" --config "$W/bad.yaml"
  assert_failure 2
  assert_output --partial "relevance"
}
