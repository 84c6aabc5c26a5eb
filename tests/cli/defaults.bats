#!/usr/bin/env bats
# Every default is written once, in the tool's option table (read from lib/: kDefaultRelevance,
# kDefaultSaddleThreshold, kDefaultVoters, ...), and the tool's --help, its page in docs/tools/ and the
# workflow schema show that same value (docs/thresholds.md#defaults).
load common

@test "the workflow schema, the tools' --help and the tools' pages give each option the same default" {
  run /usr/bin/python3 - "$PHEW_SOURCE" <<'PY'
import re, subprocess, sys
import yaml
root = sys.argv[1]
sys.path.insert(0, f"{root}/workflows")
import phew_options

schema = yaml.safe_load(open(f"{root}/workflows/schemas/config.schema.yaml"))["properties"]
# Keys whose workflow default is the workflow's own choice, not the tool's.
OWN = {"maps_top": "a few maps for a first look; dtfe-surface maps every halo (--top 0)"}

def help_default(tool, option):
    """The default --help shows for `option` ("--opt TYPE=DEFAULT"), or None."""
    text = subprocess.run([tool, "--help"], capture_output=True, text=True, check=True).stdout
    m = re.search(rf"(?:^|[ ,]){re.escape(option)} [A-Z]+=(\S+)", text, re.M)
    return m.group(1) if m else None

def page_default(tool, option):
    """The default column of `option`'s row in docs/tools/TOOL.md."""
    for line in open(f"{root}/docs/tools/{tool}.md"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > 2 and re.search(rf"`(?:-\w, )?{re.escape(option)}`", cells[0]):
            return cells[1].split()[0].strip("`") if cells[1] else ""  # "0 (all)": the value
    raise AssertionError(f"docs/tools/{tool}.md has no row for {option}")

def same(a, b):
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)

bad, checked = [], 0
for key, spec in schema.items():
    assert "description" in spec and "default" in spec, f"schema key {key} lacks a description or a default"
for tool, entries in phew_options.OPTIONS.items():
    for key, option, kind in entries:
        if kind != "value":
            continue
        shown = help_default(tool, option)
        if shown is None:
            continue  # the tool works it out (or requires it): the workflow's value is its own
        checked += 1
        page = page_default(tool, option)
        if not same(page, shown):
            bad.append(f"{tool} {option}: --help says {shown}, docs/tools/{tool}.md says {page}")
        if key not in OWN and not same(schema[key]["default"], shown):
            bad.append(f"{tool} {option}: --help says {shown}, the schema's {key} says {schema[key]['default']}")
assert not bad, "\n".join(bad)
assert checked >= 12, checked
print("ok")
PY
  assert_output "ok"
}

@test "phew-merge's defaults are the dark-matter ones: relevance 3 and saddle threshold 200mean, or none" {
  cic-project "$PHEW_SHARED_DATA/gadget4-lcdm-gas-L50-N32/snapshot_004.hdf5" -o "$BATS_TEST_TMPDIR/g.h5" --grid 32 -q
  phew-segment "$BATS_TEST_TMPDIR/g.h5" -o "$BATS_TEST_TMPDIR/p.h5" --threshold 8mean -q
  run phew-merge "$BATS_TEST_TMPDIR/p.h5" -o "$BATS_TEST_TMPDIR/c.h5" -q
  assert_success
  run phew-merge "$BATS_TEST_TMPDIR/p.h5" -o "$BATS_TEST_TMPDIR/none.h5" --saddle-threshold none -q
  assert_success
  run phew-merge "$BATS_TEST_TMPDIR/p.h5" -o "$BATS_TEST_TMPDIR/second.h5" --second-relevance 4 -q
  assert_success
  run phew-merge "$BATS_TEST_TMPDIR/p.h5" -o "$BATS_TEST_TMPDIR/both.h5" --second-relevance 4 -s 200mean -q
  assert_failure 2
  run /usr/bin/python3 - "$BATS_TEST_TMPDIR" <<'PY'
import json, sys
d = sys.argv[1]
p = {n: json.load(open(f"{d}/{n}.h5.json"))["parameters"] for n in ("c", "none", "second")}
assert p["c"]["relevance"] == "3" and p["c"]["saddle-threshold"] == "200mean", p["c"]
assert p["c"]["saddle_threshold_used"] is not None, p["c"]
assert p["none"]["saddle-threshold"] == "none" and p["none"]["saddle_threshold_used"] is None, p["none"]
assert p["second"]["saddle-threshold"] == "none" and p["second"]["second-relevance"] == "4", p["second"]
print("ok")
PY
  assert_output "ok"
}
