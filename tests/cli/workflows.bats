#!/usr/bin/env bats
# The shell pipeline and the Snakemake workflow: the same outputs, resuming, re-running exactly what
# an input or parameter change needs, failed stages that leave nothing looking complete, every config
# key reaching its tool, where the tools and the snapshots are looked for, and the tools' logs.
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
saddle_threshold: "none"
maps_top: 2
map_resolution: 32
YAML
  export PHEW_BIN
}

setup() {
  W="$BATS_FILE_TMPDIR/w"
  export PHEW_BIN
}

OUTPUTS=()
for s in snap_000 snap_001 snap_002; do
  OUTPUTS+=("$s/grid.h5" "$s/patches.h5" "$s/clumps.h5" "$s/bound.h5" "$s/peaks.h5" "$s/bound-peaks.h5" "$s/voters.h5")
done
OUTPUTS+=(tree.h5 maps.h5)

pipeline() { "$PHEW_SOURCE/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$1" --config "${CONFIG:-$W/config.yaml}"; }
snake() {
  snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 2 --directory "$1" --configfile "${CONFIG:-$W/config.yaml}" "${@:2}"
}
# The outputs (relative to OUTDIR) pipeline.sh's last run made, sorted, from its "running:" lines.
pipeline_ran() { echo "$output" | sed -n "s|^pipeline.sh: running: [a-z-]* -> $1/\([^ ]*\) (.*|\1|p" | sort | tr '\n' ' '; }
# The jobs a Snakemake run would make, "RULE COUNT" per line, from its dry run's job table.
snake_jobs() {
  snake "$1" --dry-run --quiet | awk '/^Job stats:/ {t = 1; next} t && $2 ~ /^[0-9]+$/ && $1 != "total" {print $1, $2}'
}
# same_data OUTDIR_A OUTDIR_B FILE...: the same data (every dataset and attribute but the provenance).
same_data() {
  local a=$1 b=$2 o
  shift 2
  for o in "$@"; do
    [[ -f $a/$o.json && -f $b/$o.json ]] || fail "missing $o"
    run /usr/bin/python3 "$PHEW_SOURCE/tests/data/same_data.py" "$a/$o" "$b/$o"
    assert_success
  done
}

@test "the shell pipeline and Snakemake produce the same data for all eight tools, from the same options" {
  run pipeline "$W/sh"
  assert_success
  run snake "$W/sm" --quiet
  assert_success
  same_data "$W/sh" "$W/sm" "${OUTPUTS[@]}"
  # One table maps the config to the options (workflows/phew_options.py): every tool got the same
  # parameters from both, and mergertree its stages as explicit PEAKS:VOTERS:BOUND, the bound file
  # unbind's of the peaks, whose properties the tree holds.
  run /usr/bin/python3 - "$W/sh" "$W/sm" "${OUTPUTS[@]}" <<'PY'
import json, os, sys
import h5py
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
    assert json.load(open(f"{root}/snap_000/clumps.h5.json"))["parameters"]["saddle-threshold"] == "none"
    stages = json.load(open(f"{root}/tree.h5.json"))["parameters"]["stages"]
    for s in stages:  # absolute paths from pipeline.sh, relative to the root from Snakemake
        d = s.split(":")[0].rsplit("/", 1)[0]
        assert s.split(":") == [f"{d}/peaks.h5", f"{d}/voters.h5", f"{d}/bound-peaks.h5"], stages
        inputs = json.load(open(os.path.join(root, d, "bound-peaks.h5.json")))["inputs"]
        assert any(i["path"].endswith(f"{d}/peaks.h5") for i in inputs), d
    tree = h5py.File(f"{root}/tree.h5")["peaks"]
    assert tree["bound"][...].all() and len(tree["bound"]) > 0
    for snap, name in enumerate(sorted({s.split(":")[0].rsplit("/", 1)[0] for s in stages})):
        o = h5py.File(os.path.join(root, name, "bound-peaks.h5"))["objects"]
        vmax = dict(zip(o["id"][...], o["vmax"][...]))
        rows = tree["snapshot"][...] == snap
        assert rows.any() and all(vmax[i] == v for i, v in zip(tree["id"][rows], tree["vmax"][rows])), name
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

@test "every tool's messages, warnings included, are in its stage's log, and pipeline.sh repeats the warnings" {
  # Both workflows ran the tools without -q: their info lines and warnings are in logs/ (same layout).
  for root in "$W/sh" "$W/sm"; do
    for f in snap_000/cic-project snap_001/phew-segment snap_002/phew-merge snap_001/unbind snap_000/deblend \
      snap_002/unbind-peaks snap_001/voters \
      mergertree dtfe-surface; do
      grep -q "^$(basename "${f%-peaks}")\[0\] .* info: " "$root/logs/$f.log" || fail "$root/logs/$f.log has no info line"
    done
  done
  # More voters than the crossing's small peaks hold: voters warns; only voters and mergertree run again.
  sed 's/^relevance: .*/&\nn_voters: 2000/' "$W/config.yaml" >"$W/voters.yaml"
  CONFIG=$W/voters.yaml run pipeline "$W/sh"
  assert_success
  assert_output --regexp "pipeline.sh: voters\[0\] .* warning: .* fewer than 2000 candidates"
  grep -q "warning: .* fewer than 2000 candidates" "$W/sh/logs/snap_000/voters.log"
  CONFIG=$W/voters.yaml run snake "$W/sm" --quiet
  assert_success
  grep -q "warning: .* fewer than 2000 candidates" "$W/sm/logs/snap_000/voters.log"
  # Back to the file's config, for the tests after this one.
  run pipeline "$W/sh"
  assert_success
  run snake "$W/sm" --quiet
  assert_success
  same_data "$W/sh" "$W/sm" "${OUTPUTS[@]}"
}

@test "touching one snapshot re-runs exactly the stages downstream of it" {
  sleep 1
  touch "$W/snaps/snap_001.hdf5"
  run pipeline "$W/sh"
  assert_success
  assert_equal "$(pipeline_ran "$W/sh")" "snap_001/bound-peaks.h5 snap_001/bound.h5 snap_001/clumps.h5 snap_001/grid.h5 snap_001/patches.h5 snap_001/peaks.h5 snap_001/voters.h5 tree.h5 "
  run snake_jobs "$W/sm"
  assert_success
  assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "all 1 cic_project 1 deblend 1 mergertree 1 phew_merge 1 phew_segment 1 unbind 1 unbind_peaks 1 voters 1 "
  run snake "$W/sm" --quiet
  assert_success
}

@test "changing one parameter re-runs exactly the stages downstream of it, with the same data in both workflows" {
  sed 's/^relevance: .*/relevance: 1.5/' "$W/config.yaml" >"$W/relevance.yaml"
  CONFIG=$W/relevance.yaml run pipeline "$W/sh"
  assert_success
  assert_output --partial "running: phew-merge -> $W/sh/snap_000/clumps.h5 (parameters changed)"
  local want=(tree.h5 maps.h5)
  for s in snap_000 snap_001 snap_002; do want+=("$s/clumps.h5" "$s/bound.h5" "$s/peaks.h5" "$s/bound-peaks.h5" "$s/voters.h5"); done
  assert_equal "$(pipeline_ran "$W/sh")" "$(printf '%s\n' "${want[@]}" | sort | tr '\n' ' ')"
  CONFIG=$W/relevance.yaml run snake_jobs "$W/sm"
  assert_success
  assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "all 1 deblend 3 dtfe_surface 1 mergertree 1 phew_merge 3 unbind 3 unbind_peaks 3 voters 3 "
  CONFIG=$W/relevance.yaml run snake "$W/sm" --quiet
  assert_success
  same_data "$W/sh" "$W/sm" "${OUTPUTS[@]}"
  for root in "$W/sh" "$W/sm"; do
    run /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["parameters"]["relevance"])' \
      "$root/snap_002/clumps.h5.json"
    assert_output "1.5"
  done
  # And nothing more to do with that config.
  CONFIG=$W/relevance.yaml run pipeline "$W/sh"
  refute_output --partial "running:"
  CONFIG=$W/relevance.yaml run snake_jobs "$W/sm"
  assert_output ""
  # unbind: false runs no unbind; only mergertree again, its stages PEAKS:VOTERS (no bound properties).
  sed 's/^relevance: .*/&\nunbind: false/' "$W/relevance.yaml" >"$W/nounbind.yaml"
  CONFIG=$W/nounbind.yaml run pipeline "$W/sh"
  assert_success
  assert_equal "$(pipeline_ran "$W/sh")" "tree.h5 "
  CONFIG=$W/nounbind.yaml run snake_jobs "$W/sm"
  assert_equal "$(echo "$output" | sort | tr '\n' ' ')" "all 1 mergertree 1 "
  run /usr/bin/python3 -c 'import json, sys; print(sorted({s.count(":") for s in json.load(open(sys.argv[1]))["parameters"]["stages"]}))' \
    "$W/sh/tree.h5.json"
  assert_output "[1]"
}

@test "every config key and extra_args reach the tools' command lines, the same in both workflows" {
  local C=$BATS_TEST_TMPDIR
  # Two outputs of a cosmological run (mergertree --particles needs the cosmology).
  local snaps="$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_00[34].hdf5"
  cat >"$C/keys.yaml" <<YAML
snapshots: "$snaps"
grid: 32
compress_grid: true
threshold: "50mean"
relevance: 2.0
saddle_threshold: "100mean"
mass_threshold: "5particles"
refine_positions: true
clumps_particles: true
clumps_export_text: true
deblend_off: true
unbind_potential: "tree"
unbind_centre: "most-bound"
unbind_export_yt: true
potential: "compute"
search_radius: 400
tree_particles: true
tree_export_text: true
tree_export_ctrees: "ctrees"
tree_export_arbor: "arbor"
tree_stats: "stats.json"
maps_top: 1
map_resolution: 16
maps_png: true
extra_args: {voters: ["--theta", 0.7], dtfe-surface: "--axis x", mergertree: "--stats-min-mass 0"}
YAML
  "$PHEW_SOURCE/workflows/pipeline.sh" "$snaps" "$C/sh" --config "$C/keys.yaml"
  snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 2 --directory "$C/sm" --configfile "$C/keys.yaml" --quiet
  run /usr/bin/python3 - "$PHEW_SOURCE/workflows" "$C/keys.yaml" "$C/sh" "$C/sm" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[1])
import phew_options
config = phew_options.load_config(sys.argv[2])
outputs = {"cic-project": "snapshot_004/grid.h5", "phew-segment": "snapshot_004/patches.h5",
           "phew-merge": "snapshot_004/clumps.h5", "unbind": "snapshot_004/bound.h5", "deblend": "snapshot_004/peaks.h5",
           "voters": "snapshot_004/voters.h5",
           "mergertree": "tree.h5", "dtfe-surface": "maps.h5"}
for root in sys.argv[3:]:
    for tool, o in outputs.items():
        line = json.load(open(f"{root}/{o}.json"))["command_line"]
        for key, option, kind in phew_options.OPTIONS[tool]:
            if key in phew_options.UNSET and config[key] in phew_options.UNSET[key]:
                continue
            only_with = phew_options.ONLY_WITH.get(key)  # levels and buffer go with refine (not here: refine-positions)
            if only_with and config[only_with] in phew_options.UNSET[only_with]:
                assert option not in line, (root, tool, key, line)
                continue
            assert option in line, (root, tool, key, option, line)
            assert kind == "value" or config[key], f"the test's config should switch {key} on"
            if kind == "flag":
                continue
            value = (f"{os.path.dirname(config['snapshots'])}/snapshot_004.hdf5" if kind == "snapshot" else
                     os.path.join(root, config[key]) if kind == "path" and root.endswith("/sh") else str(config[key]))
            assert line[line.index(option) + 1] == value, (root, tool, option, value, line)
        extra = phew_options.extra_args(tool, config)
        if extra:
            assert line[-len(extra):] == extra, (root, tool, extra, line)
    # The exports are where the keys put them.
    for f in ("snapshot_004/clumps.h5.clumps.txt", "tree.h5.links.txt", "ctrees/tree_0_0_0.dat", "arbor/arbor.h5", "stats.json",
              "snapshot_003/halos.0.h5", "snapshot_004/halos.0.h5"):
        assert os.path.exists(f"{root}/{f}"), (root, f)
    assert any(f.endswith(".png") for f in os.listdir(root)), os.listdir(root)
print("ok")
PY
  assert_output "ok"
  same_data "$C/sh" "$C/sm" snapshot_003/clumps.h5 snapshot_004/patches.h5 snapshot_004/bound.h5 snapshot_004/peaks.h5 \
    snapshot_004/bound-peaks.h5 snapshot_004/voters.h5 \
    tree.h5 maps.h5
}

@test "the tools come from PHEW_BIN, else PATH, else build/bin; none found is one clear error" {
  local C=$BATS_TEST_TMPDIR
  # Wrappers on PATH that record their use.
  mkdir -p "$C/path"
  for t in cic-project phew-segment phew-merge unbind deblend voters mergertree dtfe-surface; do
    printf '#!/bin/sh\necho %s >>"%s/used"\nexec "%s/%s" "$@"\n' "$t" "$C" "$PHEW_BIN" "$t" >"$C/path/$t"
    chmod +x "$C/path/$t"
  done
  shell_tool() { /usr/bin/python3 "$PHEW_SOURCE/workflows/phew_options.py" shell "$W/config.yaml" "$C/o" | grep '^tool_voters='; }
  PATH="$C/path:/usr/bin:/bin" PHEW_BIN=$PHEW_BIN run shell_tool
  assert_output "tool_voters=$PHEW_BIN/voters"
  PATH="$C/path:/usr/bin:/bin" PHEW_BIN='' run shell_tool
  assert_output "tool_voters=$C/path/voters"
  # A copy of workflows/ has no build/bin beside it: without PHEW_BIN and tools on PATH, one line, exit 2.
  mkdir -p "$C/src"
  cp -r "$PHEW_SOURCE/workflows" "$C/src/"
  PATH="/usr/bin:/bin" PHEW_BIN='' run "$C/src/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$C/none" --config "$W/config.yaml"
  assert_failure 2
  assert_output --regexp "^pipeline.sh: error: cic-project not found: PHEW_BIN is not set, it is not on PATH and not in $C/src/build/bin"
  PATH="/usr/bin:/bin" PHEW_BIN='' run snakemake -s "$C/src/workflows/Snakefile" --cores 1 --directory "$C/none-sm" \
    --configfile "$W/config.yaml" --dry-run
  assert_failure
  assert_output --partial "cic-project not found"
  # With the tools on PATH the copy runs the whole chain with them.
  PATH="$C/path:/usr/bin:/bin" PHEW_BIN='' run "$C/src/workflows/pipeline.sh" "$W/snaps/snap_00[01].hdf5" "$C/onpath" \
    --config "$W/config.yaml"
  assert_success
  assert_equal "$(sort -u "$C/used" | tr '\n' ' ')" "cic-project deblend dtfe-surface mergertree phew-merge phew-segment unbind voters "
}

@test "Snakemake takes a relative snapshots glob from the config file's folder, and says where it looked" {
  local C=$BATS_TEST_TMPDIR
  mkdir -p "$C/cfg" "$C/elsewhere"
  ln -s "$W/snaps" "$C/cfg/snaps"
  sed "s|^snapshots: .*|snapshots: \"snaps/snap_*.hdf5\"|" "$W/config.yaml" >"$C/cfg/config.yaml"
  cd "$C/elsewhere"
  run snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 1 --directory "$C/out" --configfile ../cfg/config.yaml \
    --dry-run --quiet
  assert_success
  assert_output --regexp "cic_project +3"
  # Given with --config, it is relative to --directory; a miss names what set it and the path searched.
  run snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 1 --directory "$C/out" --configfile ../cfg/config.yaml \
    --config 'snapshots=snaps/snap_*.hdf5' --dry-run
  assert_failure
  assert_output --partial "no snapshot matches snaps/snap_*.hdf5 (set by --config; looked for $C/out/snaps/snap_*.hdf5)"
}

@test "a failed stage leaves no output the next run would take as complete, and the rerun resumes" {
  PHEW_TEST_FAIL_AT=noise run pipeline "$W/fail"
  assert_failure
  assert_output --partial "pipeline.sh: phew-merge: error: internal error in phase noise"
  assert_output --partial "its log: $W/fail/logs/snap_000/phew-merge.log"
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
  printf 'snapshots: "%s"\nextra_args: {phew-merj: "-v"}\n' "$W/snaps/snap_*.hdf5" >"$W/bad.yaml"
  run "$PHEW_SOURCE/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$W/bad" --config "$W/bad.yaml"
  assert_failure 2
  assert_output --partial "phew-merj"
  # One yt catalogue for every snapshot would be overwritten by each: the key writes one per snapshot.
  printf 'snapshots: "%s"\nextra_args: {unbind: "--export-yt halos.0.h5"}\n' "$W/snaps/snap_*.hdf5" >"$W/bad.yaml"
  run "$PHEW_SOURCE/workflows/pipeline.sh" "$W/snaps/snap_*.hdf5" "$W/bad" --config "$W/bad.yaml"
  assert_failure 2
  assert_output --partial "unbind_export_yt: true"
  run snakemake -s "$PHEW_SOURCE/workflows/Snakefile" --cores 1 --directory "$W/bad-sm" --configfile "$W/bad.yaml" --quiet -n
  assert_failure
  assert_output --partial "unbind_export_yt: true"
}

@test "refine, levels and buffer give cic-project an adaptive mesh; levels and buffer alone give nothing" {
  run /usr/bin/python3 - "$PHEW_SOURCE" <<'PY'
import sys
sys.path.insert(0, f"{sys.argv[1]}/workflows")
import phew_options
import yaml
config = yaml.safe_load(open(f"{sys.argv[1]}/workflows/config.yaml"))
args = phew_options.tool_args("cic-project", dict(config, grid=32, refine=8, levels=5))
assert args[args.index("--refine") + 1] == "8" and args[args.index("--levels") + 1] == "5", args
assert args[args.index("--buffer") + 1] == "1", args
args = phew_options.tool_args("cic-project", dict(config, grid=32, levels=5, buffer=2))
assert not {"--refine", "--levels", "--buffer"} & set(args), args
PY
  assert_success
}

@test "grid: auto (the default) gives cic-project the grid rule planned for the config's threshold" {
  run /usr/bin/python3 - "$PHEW_SOURCE" <<'PY'
import sys
sys.path.insert(0, f"{sys.argv[1]}/workflows")
import phew_options
import yaml
config = yaml.safe_load(open(f"{sys.argv[1]}/workflows/config.yaml"))
assert config["grid"] == "auto", config["grid"]
args = phew_options.tool_args("cic-project", dict(config, threshold="50mean"))
assert args[:2] == ["--grid", "auto"] and args[args.index("--for-threshold") + 1] == "50mean", args
args = phew_options.tool_args("cic-project", dict(config, grid=96))
assert "--for-threshold" not in args and args[:2] == ["--grid", "96"], args
PY
  assert_success
}
