#!/usr/bin/env python3
"""Every option a tool's --help lists is in the options table of its page (docs/tools/TOOL.md), and
every option that table lists is in --help: the docs cannot drift from the option table in the code.
The common options (-o, -v, -q, --config, --version, --help) are documented once, in docs/cli.md.

Usage: options_match_help.py BIN_DIR SOURCE_DIR"""
import re
import subprocess
import sys
from pathlib import Path

TOOLS = ["cic-project", "phew-segment", "phew-merge", "deblend", "voters", "mergertree", "dtfe-surface",
         "synth-particles", "unbind"]
COMMON = {"--help", "-h", "--config", "--version", "--verbose", "-v", "--quiet", "-q", "--output", "-o"}
LONG = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")
SHORT = re.compile(r"(?<![\w-])-[a-zA-Z](?![\w-])")


def options_in(text):
    return set(LONG.findall(text)) | set(SHORT.findall(text))


def help_options(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, check=True).stdout
    section, found = None, set()
    for line in out.splitlines():
        if line and not line[0].isspace():
            section = line.rstrip(":")
            continue
        if section == "Options" and line.strip().startswith("-"):
            first = line.strip().split("  ")[0]  # "-g,--grid TEXT REQUIRED"
            found.update(options_in(first))
    return found


def table_options(page, failures):
    """Options in the first column of every table whose header's first cell is 'option'; a row with
    more or fewer cells than the header is a failure (it renders broken)."""
    found, width = set(), None
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if not line.startswith("|"):
            width = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].lower() == "option":
            width = len(cells)
        elif width is not None:
            if len(cells) != width:
                failures.append(f"{page.name}:{number}: a row of {len(cells)} cells in a table of {width}")
            if not set(cells[0]) <= set("-: "):
                found.update(options_in(cells[0]))
    return found


def main():
    bindir, source = Path(sys.argv[1]), Path(sys.argv[2])
    failures = []
    cli_page = table_options(source / "docs" / "cli.md", failures)
    for missing in sorted(COMMON - cli_page):
        failures.append(f"docs/cli.md: the common option {missing} is not in its options table")
    for tool in TOOLS:
        page = source / "docs" / "tools" / f"{tool}.md"
        in_help = help_options(bindir / tool) - COMMON
        in_page = table_options(page, failures)
        for o in sorted(in_help - in_page):
            failures.append(f"{page.relative_to(source)}: {o} is in `{tool} --help` but not in the options table")
        for o in sorted(in_page - in_help - COMMON):
            failures.append(f"{page.relative_to(source)}: {o} is in the options table but not in `{tool} --help`")
    for f in failures:
        print(f)
    print(f"{len(TOOLS)} tools checked, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
