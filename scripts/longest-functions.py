#!/usr/bin/env python3
"""Prints the longest C functions of the given files (default: daemon/ and plugins/), longest first.

How it counts, for this tree's kernel style (clang-format, .clang-format): a function starts at the
line that opens its body with '{' in column 0 and is named by the nearest line above that starts
with an identifier (its declarator); it ends at the next '}' in column 0. Its length is from the
declarator's first line to the closing brace, both included. Struct and array initialisers end with
'};' and are not counted.

Usage: scripts/longest-functions.py [--top N] [--max LINES] [FILE...]
With --max, exits 1 when a function is longer than LINES (for a check in CI).
"""
import argparse
import glob
import re
import sys


def functions(path):
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if line == "{" and i > 0:
            j = i - 1
            while j > 0 and not re.match(r"^[A-Za-z_]", lines[j]):
                j -= 1
            start = j
        elif line.startswith("}") and not line.startswith("};") and start is not None:
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", lines[start])
            yield (i - start + 1, m.group(1) if m else lines[start].strip(), f"{path}:{start + 1}")
            start = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--max", type=int)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or sorted(glob.glob("daemon/**/*.c", recursive=True) + glob.glob("plugins/*.c"))
    rows = sorted((f for p in files for f in functions(p)), reverse=True)
    for n, name, where in rows[: a.top]:
        print(f"{n:5d} {name} {where}")
    if a.max is not None and rows and rows[0][0] > a.max:
        sys.exit(1)


if __name__ == "__main__":
    main()
