#!/usr/bin/python3
"""The one mapping from the workflow's config keys (config.yaml, checked by schemas/config.schema.yaml)
to the tools' options. The Snakefile imports it; pipeline.sh runs it:

    phew_options.py shell CONFIG      bash assignments: cfg_KEY=VALUE for every key, and per tool an
                                      array opts_TOOL=(--option value ...) (tool name with _ for -)
    phew_options.py map-size SIZE CLUMPS
                                      dtfe-surface's --size: SIZE, or when SIZE is 0 a tenth of the box
                                      of CLUMPS (read when the job runs: the file does not exist before)
"""
import os
import shlex
import sys

# tool -> (config key, option) in the order they are given. A key whose value is in UNSET is left out,
# so the tool's own default applies; a boolean key is a flag, given when true.
OPTIONS = {
    "cic-project": [("grid", "--grid"), ("types", "--types"), ("units", "--units"), ("assignment", "--assignment"),
                    ("region", "--region"), ("compress_grid", "--compress")],
    "phew-segment": [("threshold", "--threshold")],
    "phew-merge": [("relevance", "--relevance"), ("saddle_threshold", "--saddle-threshold"),
                   ("mass_threshold", "--mass-threshold")],
    "deblend": [("bin_fraction", "--bin-fraction"), ("velocity_relevance", "--velocity-relevance"),
                ("min_particles", "--min-particles"), ("types", "--types"), ("units", "--units")],
    "voters": [("n_voters", "--n-voters"), ("types", "--types"), ("units", "--units"),
               ("search_radius", "--search-radius")],
    "mergertree": [("min_votes", "--min-votes"), ("graveyard_votes", "--graveyard-votes"),
                   ("graveyard_max_age", "--graveyard-max-age"), ("units", "--units")],
    # --size comes from map_size through map_size() below (0: a tenth of the box, known only at run time).
    "dtfe-surface": [("maps_top", "--top"), ("map_resolution", "--resolution"), ("units", "--units")],
}
UNSET = {"saddle_threshold": ("",), "mass_threshold": ("",), "search_radius": (0, 0.0, "0"), "region": ("",),
         "units": ("",)}
# fix_mean is not an option of one tool: the workflows give phew-segment and voters --mean-from with the
# first snapshot's grid (see mean_from below).

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "schemas", "config.schema.yaml")


def tool_args(tool, config):
    """The options of `tool` for this config, as a list of arguments."""
    args = []
    for key, option in OPTIONS[tool]:
        value = config[key]
        if key in UNSET and value in UNSET[key]:
            continue
        if isinstance(value, bool):
            args += [option] if value else []
            continue
        args += [option, str(value)]
    return args


def tool_options(tool, config):
    """The same as one shell-quoted string (Snakemake params)."""
    return " ".join(shlex.quote(a) for a in tool_args(tool, config))


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
    return config


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


def main(argv):
    if len(argv) == 3 and argv[1] == "shell":
        import jsonschema
        try:
            config = load_config(argv[2])
        except jsonschema.ValidationError as e:
            where = "/".join(map(str, e.path)) or "config"
            print(f"echo {shlex.quote(f'pipeline.sh: error: {argv[2]}: {where}: {e.message}')} >&2; exit 2")
            return 0
        for key, value in config.items():
            print(f"cfg_{key}={shlex.quote(str(value))}")
        for tool in OPTIONS:
            print(f"opts_{tool.replace('-', '_')}=({' '.join(shlex.quote(a) for a in tool_args(tool, config))})")
        return 0
    if len(argv) == 4 and argv[1] == "map-size":
        print(map_size(argv[2], argv[3]))
        return 0
    print("usage: phew_options.py shell CONFIG | map-size SIZE CLUMPS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
