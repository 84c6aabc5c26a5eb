#!/usr/bin/python3
"""The one mapping from the workflow's config keys (config.yaml, checked by schemas/config.schema.yaml)
to the tools' options, the one place the tools are looked up, and pipeline.sh's up-to-date check. The
Snakefile imports it; pipeline.sh runs it:

    phew_options.py shell CONFIG OUTDIR
                                      bash assignments: cfg_KEY=VALUE for every key, per tool an array
                                      opts_TOOL=(--option value ...) and its path tool_TOOL=PATH (tool name
                                      with _ for -); paths of exports under OUTDIR; @SNAPSHOT@ stands for
                                      the stage's snapshot
    phew_options.py stale OUTPUT COMMAND...
                                      why the stage writing OUTPUT with COMMAND must run (one line), or
                                      nothing when OUTPUT's manifest says it is up to date
    phew_options.py map-size SIZE CLUMPS
                                      dtfe-surface's --size: SIZE, or when SIZE is 0 a tenth of the box
                                      of CLUMPS (read when the job runs: the file does not exist before)
"""
import json
import os
import shlex
import shutil
import sys

# tool -> (config key, option, kind) in the order they are given. Kinds:
#   value     --option VALUE; left out when the value is in UNSET (the tool then works it out itself)
#   flag      --option, when the key is true
#   snapshot  --option SNAPSHOT (the stage's snapshot), when the key is true
#   path      --option OUTDIR/VALUE (a file or folder beside the outputs), when the key is not empty
# Then the tool's extra_args, as they are.
OPTIONS = {
    "cic-project": [("grid", "--grid", "value"), ("refine", "--refine", "value"), ("levels", "--levels", "value"),
                    ("buffer", "--buffer", "value"), ("types", "--types", "value"), ("units", "--units", "value"),
                    ("assignment", "--assignment", "value"), ("region", "--region", "value"),
                    ("compress_grid", "--compress", "flag")],
    "phew-segment": [("threshold", "--threshold", "value"), ("refine_positions", "--refine-positions", "flag")],
    "phew-merge": [("relevance", "--relevance", "value"), ("saddle_threshold", "--saddle-threshold", "value"),
                   ("noise_floor", "--noise-floor", "value"), ("mass_threshold", "--mass-threshold", "value"), ("clumps_particles", "--particles", "snapshot"),
                   ("clumps_export_text", "--export-text", "flag")],
    "unbind": [("unbind_potential", "--potential", "value"), ("unbind_centre", "--centre", "value"),
               ("types", "--types", "value"), ("units", "--units", "value")],
    "deblend": [("bin_fraction", "--bin-fraction", "value"), ("velocity_relevance", "--velocity-relevance", "value"),
                ("min_particles", "--min-particles", "value"), ("types", "--types", "value"),
                ("units", "--units", "value"), ("deblend_off", "--off", "flag")],
    "voters": [("n_voters", "--n-voters", "value"), ("types", "--types", "value"), ("units", "--units", "value"),
               ("search_radius", "--search-radius", "value"), ("potential", "--potential", "value")],
    "mergertree": [("min_votes", "--min-votes", "value"), ("graveyard_votes", "--graveyard-votes", "value"),
                   ("graveyard_max_age", "--graveyard-max-age", "value"), ("units", "--units", "value"),
                   ("tree_particles", "--particles", "flag"),
                   ("tree_export_text", "--export-text", "flag"), ("tree_export_ctrees", "--export-ctrees", "path"),
                   ("tree_export_arbor", "--export-arbor", "path"), ("tree_stats", "--stats", "path")],
    # --size comes from map_size through map_size() below (0: a tenth of the box, known only at run time).
    "dtfe-surface": [("maps_top", "--top", "value"), ("map_resolution", "--resolution", "value"),
                     ("types", "--types", "value"), ("units", "--units", "value"), ("maps_png", "--png", "flag")],
}
UNSET = {"mass_threshold": ("",), "search_radius": (0, 0.0, "0"), "region": ("",), "units": ("",), "refine": (0, 0.0, "0")}
# levels and buffer mean something only with refine.
ONLY_WITH = {"levels": "refine", "buffer": "refine"}
# fix_mean is not an option of one tool: the workflows give phew-segment and voters --mean-from with the
# first snapshot's grid (see mean_from below).
SNAPSHOT_PLACEHOLDER = "@SNAPSHOT@"

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "schemas", "config.schema.yaml")
BUILD_BIN = os.path.normpath(os.path.join(HERE, "..", "build", "bin"))


def extra_args(tool, config):
    """The tool's extra_args: a string (split as a shell would) or a list of arguments."""
    extra = (config.get("extra_args") or {}).get(tool, [])
    return shlex.split(extra) if isinstance(extra, str) else [str(a) for a in extra]


def tool_args(tool, config, outdir="", snapshot=SNAPSHOT_PLACEHOLDER):
    """The options of `tool` for this config, as a list of arguments. Paths of exports are under `outdir`
    ("" in Snakemake, which runs in its --directory); `snapshot` is the stage's snapshot."""
    args = []
    for key, option, kind in OPTIONS[tool]:
        value = config[key]
        if kind == "flag":
            args += [option] if value else []
        elif kind == "snapshot":
            args += [option, snapshot] if value else []
        elif kind == "path":
            args += [option, os.path.join(outdir, value)] if value else []
        elif key in ONLY_WITH and config[ONLY_WITH[key]] in UNSET.get(ONLY_WITH[key], ()):
            continue
        elif not (key in UNSET and value in UNSET[key]):
            args += [option, str(value)]
    if tool == "cic-project" and str(config["grid"]) == "auto" and str(config["threshold"]).endswith("mean"):
        args += ["--for-threshold", str(config["threshold"])]  # the grid rule plans for the threshold used
    if tool == "phew-merge" and config["clumps_particles"] and config["units"] not in UNSET["units"]:
        args += ["--units", str(config["units"])]  # the units of the snapshot of --particles, only with it
    return args + extra_args(tool, config)


def tool_options(tool, config, snapshot=SNAPSHOT_PLACEHOLDER):
    """The same as one shell-quoted string (Snakemake params)."""
    return " ".join(shlex.quote(a) for a in tool_args(tool, config, "", snapshot))


def find_tools(environ=os.environ):
    """Each tool's path: in $PHEW_BIN when it is set, else the first on PATH, else in build/bin beside
    this folder. Raises LookupError saying what is missing and where it looked."""
    chosen = environ.get("PHEW_BIN", "")
    found = {}
    for tool in OPTIONS:
        if chosen:
            path = os.path.join(chosen, tool)
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise LookupError(f"{tool} is not in PHEW_BIN={chosen}")
        else:
            path = shutil.which(tool, path=environ.get("PATH", os.defpath))
            if path is None:
                path = os.path.join(BUILD_BIN, tool)
                if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                    raise LookupError(f"{tool} not found: PHEW_BIN is not set, it is not on PATH and not in {BUILD_BIN} "
                                      f"(set PHEW_BIN to the folder of the phew tools, or build them)")
        found[tool] = os.path.abspath(path)
    return found


def load_config(path):
    """A config file checked against the schema, with the schema's defaults filled in.
    Raises jsonschema.ValidationError."""
    import jsonschema
    import yaml
    config = yaml.safe_load(open(path)) or {}
    schema = yaml.safe_load(open(SCHEMA))
    jsonschema.validate(config, schema)
    for key, spec in schema["properties"].items():
        config.setdefault(key, spec.get("default", ""))
    try:
        check_config(config)
    except ValueError as e:
        raise jsonschema.ValidationError(str(e))
    return config


def check_config(config):
    """What the schema cannot say: raises ValueError naming the key."""
    # One catalogue file for every snapshot would be overwritten by each: the key names one per snapshot.
    if "--export-yt" in extra_args("unbind", config):
        raise ValueError("extra_args: unbind's --export-yt would write every snapshot's catalogue to one file; "
                         "set unbind_export_yt: true for <snapshot>/halos.0.h5")


def export_yt(config, stage_dir):
    """unbind's --export-yt for the clumps of the snapshot whose outputs are in `stage_dir`."""
    return ["--export-yt", os.path.join(stage_dir, "halos.0.h5")] if config["unbind"] and config["unbind_export_yt"] else []


def mean_from(config, first_grid):
    """phew-segment's and voters' --mean-from for this config: the first snapshot's grid when fix_mean."""
    return ["--mean-from", first_grid] if config["fix_mean"] else []


def map_size(size, clumps):
    """dtfe-surface's --size: `size`, or when it is 0 a tenth of the box of `clumps` (a clumps.h5)."""
    if float(size) > 0:
        return str(size)
    import h5py
    with h5py.File(clumps) as f:
        return str(f["grid"].attrs["box_size"][0] / 10)


def stale(output, command):
    """Why the stage that writes `output` with `command` (the tool and its arguments) must run, or None
    when it is up to date: when the manifest output.json records this command line (the tool's
    parameters), the output and every side output it lists are in place, every phew input is still the
    one it records (the same manifest id) and every other input (a snapshot) has the size it records and
    is not newer than the manifest. MPI ranks are not compared (outputs are the same on any number)."""
    manifest_path = output + ".json"
    if not os.path.exists(manifest_path):
        return "no output yet"
    try:
        with open(manifest_path) as f:
            m = json.load(f)
        recorded = m["command_line"]
        inputs, outputs = m["inputs"], m["outputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{manifest_path} is unreadable"
    if os.path.basename(recorded[0]) != os.path.basename(command[0]) or recorded[1:] != command[1:]:
        return "parameters changed"
    for o in outputs:  # paths as the tool recorded them (absolute)
        mine = os.path.abspath(o["path"]) == os.path.abspath(output)
        if not os.path.exists(o["path"]) or (mine and os.path.getsize(o["path"]) != o["size"]):
            return f"{o['path']} is missing or changed"
    manifest_time = os.path.getmtime(manifest_path)
    for i in inputs:
        path = i["path"]
        if not os.path.exists(path):
            return f"input {path} is missing"
        if i.get("manifest_id"):
            try:
                with open(path + ".json") as f:
                    now = json.load(f).get("id")
            except (OSError, ValueError):
                now = None
            if now != i["manifest_id"]:
                return f"input {path} was made again"
        elif os.path.getsize(path) != i["size"] or os.path.getmtime(path) > manifest_time:
            return f"input {path} changed"
    return None


def shell(config_path, outdir):
    """pipeline.sh's variables (see the module's help), or a command that fails with the reason."""
    import jsonschema
    try:
        config = load_config(config_path)
    except jsonschema.ValidationError as e:
        where = "/".join(map(str, e.path)) or "config"
        return f"echo {shlex.quote(f'pipeline.sh: error: {config_path}: {where}: {e.message}')} >&2; exit 2"
    try:
        tools = find_tools()
    except LookupError as e:
        return f"echo {shlex.quote(f'pipeline.sh: error: {e}')} >&2; exit 2"
    lines = [f"cfg_{key}={shlex.quote(str(value))}" for key, value in config.items() if key != "extra_args"]
    for tool in OPTIONS:
        name = tool.replace("-", "_")
        lines.append(f"opts_{name}=({' '.join(shlex.quote(a) for a in tool_args(tool, config, outdir))})")
        lines.append(f"tool_{name}={shlex.quote(tools[tool])}")
    return "\n".join(lines)


def main(argv):
    if len(argv) == 4 and argv[1] == "shell":
        print(shell(argv[2], argv[3]))
        return 0
    if len(argv) >= 4 and argv[1] == "stale":
        print(stale(argv[2], argv[3:]) or "")
        return 0
    if len(argv) == 4 and argv[1] == "map-size":
        print(map_size(argv[2], argv[3]))
        return 0
    print("usage: phew_options.py shell CONFIG OUTDIR | stale OUTPUT COMMAND... | map-size SIZE CLUMPS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
