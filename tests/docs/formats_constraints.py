#!/usr/bin/python3
"""docs/formats.md shows every product's declared constraints as the code declares them.

    formats_constraints.py --bin BUILD/bin [--source SRC] [--write]

`product-constraints` prints the declarations (io::declared_tables: the ones every reader checks); the
block of docs/formats.md between `<!-- constraints: begin -->` and `<!-- constraints: end -->` must be the
table made from them. --write rewrites the block (after changing a declaration); without it a difference
fails (exit 1) and prints what differs.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

BEGIN, END = "<!-- constraints: begin -->", "<!-- constraints: end -->"


def block(declared):
    lines = [BEGIN, "", "| product | dataset | every value must be |", "|---|---|---|"]
    for t in declared:
        for c in t["columns"]:
            if c["describe"]:
                optional = " (when written)" if c["optional"] else ""
                lines.append(f"| {t['product']} | `{t['group']}/{c['name']}`{optional} | {c['describe']} |")
    return "\n".join(lines + ["", END])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--source", type=Path, default=Path(__file__).resolve().parent.parent.parent)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    declared = json.loads(subprocess.run([str(args.bin / "product-constraints")], capture_output=True, text=True,
                                         check=True).stdout)
    doc = args.source / "docs" / "formats.md"
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        print(f"formats_constraints.py: {doc} has no {BEGIN} ... {END} block")
        return 1
    before, rest = text.split(BEGIN, 1)
    current, after = rest.split(END, 1)
    want = block(declared)
    if BEGIN + current + END == want:
        print(f"docs/formats.md shows the {sum(1 for t in declared for c in t['columns'] if c['describe'])} declared constraints")
        return 0
    if args.write:
        doc.write_text(before + want + after)
        print(f"wrote the constraints block of {doc}")
        return 0
    have = set((BEGIN + current + END).splitlines())
    for line in want.splitlines():
        if line not in have:
            print(f"docs/formats.md lacks: {line}")
    for line in (BEGIN + current + END).splitlines():
        if line not in set(want.splitlines()):
            print(f"docs/formats.md has, but the code does not declare: {line}")
    print("formats_constraints.py: run it with --write to bring docs/formats.md to the declarations")
    return 1


if __name__ == "__main__":
    sys.exit(main())
