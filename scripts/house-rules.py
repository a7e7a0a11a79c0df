#!/usr/bin/env python3
"""Checks the house rules of the C sources (the `house_rules` test of the unit suite, `make test`):

  length  every C function is at most 80 lines, counted by scripts/longest-functions.py (from its
          declarator to its closing brace), except the few of KNOWN_LONG below;
  format  every .c and .h file is as clang-format lays it out with the repository's .clang-format
          (`clang-format --dry-run -Werror`; Debian 12's clang-format-14, which
          `scripts/deps.sh --test` installs).

The files: every .c and .h file that git tracks in the tree; outside a git checkout (a tarball),
every .c and .h file under it but in build directories and what scripts/deps.sh extracts or
installs (the libperf sources, node_modules/); or the FILEs given.

Prints each violation on a line of its own, FILE:LINE: what is wrong; fix: how, and a summary;
exits 0 when every rule holds, 1 on any violation, 2 when it cannot check (no clang-format, no
.clang-format, no C file).

Usage: scripts/house-rules.py [--root DIR] [--max-lines N] [FILE...]
  --root DIR   the tree (default: the one this script is in)
CLANG_FORMAT=PATH picks the clang-format (default: clang-format-14, else clang-format).
"""
import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys

MAX_LINES = 80

# Functions allowed over MAX_LINES for now, as "FILE:FUNCTION" (FILE from the tree's top). Each is
# a debt, not a licence: its file was being changed by other work when the check came, and each
# entry goes once its function is split (the check says when an entry is no longer needed). Add
# nothing here: split the function instead.
KNOWN_LONG = {
    "lab/workloads/labload.c:main",  # 112 lines
}

# Outside git: directories never searched for sources, from the tree's top (as .gitignore has
# them): build trees, the libperf sources scripts/deps.sh extracts, the npm packages, the lab's
# kernel builds and what `make deb` leaves. A directory holding build.ninja or meson-private/ (a
# meson build directory of any name) is skipped too, and so is every hidden one.
SKIPPED_DIRS = {"build", "build-asan", "subprojects/libperf/linux", "node_modules", "lab/build",
                "debian/.debhelper", "debian/mmlockd", "debian/tmp"}

HERE = os.path.dirname(os.path.abspath(__file__))
VIOLATION = re.compile(r"^(.+?):(\d+):(\d+): (?:error|warning): code should be clang-formatted")
PER_FILE = 10  # format violations printed per file; the rest are counted


def load_longest_functions():
    spec = importlib.util.spec_from_file_location("longest_functions",
                                                  os.path.join(HERE, "longest-functions.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def git_files(root):
    """The .c and .h files git tracks in @root, or None when @root is no git checkout's top."""
    if not shutil.which("git") or not os.path.exists(os.path.join(root, ".git")):
        return None
    top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True)
    if top.returncode or os.path.realpath(top.stdout.strip()) != os.path.realpath(root):
        return None
    out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.c", "*.h"],
                         capture_output=True, text=True, check=True).stdout
    # A tracked file deleted in the work tree is not there to check.
    return sorted(f for f in out.split("\0") if f and os.path.isfile(os.path.join(root, f)))


def walked_files(root):
    """The .c and .h files under @root but in SKIPPED_DIRS, build and hidden directories."""
    found = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        rel = "" if rel == "." else rel + "/"

        def skipped(name):
            path = os.path.join(d, name)
            return (name.startswith(".") or rel + name in SKIPPED_DIRS or
                    (not rel and name.startswith("obj-")) or
                    os.path.exists(os.path.join(path, "build.ninja")) or
                    os.path.isdir(os.path.join(path, "meson-private")))

        dirs[:] = sorted(n for n in dirs if not skipped(n))
        found += [rel + f for f in files if f.endswith((".c", ".h"))]
    return sorted(found)


def find_clang_format():
    """The clang-format to use and its version line; exits 2 when there is none."""
    wanted = os.environ.get("CLANG_FORMAT")
    names = [wanted] if wanted else ["clang-format-14", "clang-format"]
    for name in names:
        path = shutil.which(name)
        if path:
            out = subprocess.run([path, "--version"], capture_output=True, text=True)
            return path, (out.stdout.strip().splitlines() or ["unknown version"])[-1]
    print(f"house rules: cannot check the format: no {' or '.join(names)} in PATH; "
          "install Debian's clang-format-14 (scripts/deps.sh --test does, as `make test` does)",
          file=sys.stderr)
    sys.exit(2)


def format_violations(clang_format, root, files):
    """(file, line, text) of each line clang-format would change, in file order."""
    proc = subprocess.run([clang_format, "--dry-run", "-Werror", "--style=file",
                           "--fallback-style=none", "--"] + files,
                          cwd=root, capture_output=True, text=True)
    lines = proc.stderr.splitlines()
    found, seen = [], set()
    for i, line in enumerate(lines):
        m = VIOLATION.match(line)
        # Several places of one line count once; the line after the place is the source line.
        if m and (m.group(1), int(m.group(2))) not in seen:
            seen.add((m.group(1), int(m.group(2))))
            text = lines[i + 1].strip() if i + 1 < len(lines) else ""
            found.append((m.group(1), int(m.group(2)), text))
    if proc.returncode and not found:
        # Not a format violation: a .clang-format it cannot read, a file it cannot open.
        print(f"house rules: {clang_format} failed (exit {proc.returncode}):\n{proc.stderr}",
              file=sys.stderr)
        sys.exit(2)
    return found


def print_format(found):
    per_file = {}
    for f, line, text in found:
        per_file[f] = per_file.get(f, 0) + 1
        if per_file[f] <= PER_FILE:
            print(f"{f}:{line}: not as clang-format lays it out: `{text[:60]}`; "
                  f"fix: clang-format -i {f} (and review the diff)")
    for f, n in per_file.items():
        if n > PER_FILE:
            print(f"{f}: {n - PER_FILE} more lines not as clang-format lays them out; "
                  f"fix: clang-format -i {f}")
    return len(per_file)


def length_violations(lf, root, files, max_lines):
    """(too long, known exceptions over the limit, exceptions no longer needed)."""
    long, known, over = [], [], set()
    for f in files:
        for n, name, where in lf.functions(os.path.join(root, f)):
            if n <= max_lines:
                continue
            row = (f, where.rsplit(":", 1)[1], name, n)
            over.add(f"{f}:{name}")
            (known if f"{f}:{name}" in KNOWN_LONG else long).append(row)
    stale = sorted(k for k in KNOWN_LONG if k.split(":")[0] in files and k not in over)
    return long, known, stale


def main():
    ap = argparse.ArgumentParser(description="Checks function length and clang-format of the "
                                 "C sources.")
    ap.add_argument("--root", default=os.path.dirname(HERE))
    ap.add_argument("--max-lines", type=int, default=MAX_LINES)
    ap.add_argument("files", nargs="*", metavar="FILE")
    a = ap.parse_args()
    root = os.path.abspath(a.root)

    if a.files:
        files, source = [os.path.relpath(os.path.abspath(f), root) for f in a.files], "given"
    else:
        files = git_files(root)
        source = "tracked by git"
        if files is None:
            files, source = walked_files(root), f"found under {root} (no git checkout)"
    if not files:
        print(f"house rules: no C file to check in {root}", file=sys.stderr)
        sys.exit(2)
    missing = [f for f in files if not os.path.isfile(os.path.join(root, f))]
    if missing:
        print(f"house rules: no such file: {' '.join(missing)}", file=sys.stderr)
        sys.exit(2)
    if not os.path.isfile(os.path.join(root, ".clang-format")):
        print(f"house rules: no .clang-format in {root}", file=sys.stderr)
        sys.exit(2)
    clang_format, version = find_clang_format()
    print(f"house rules: {len(files)} C files {source}; clang-format: {clang_format} ({version})")
    if not re.search(r"version 14\.", version):
        print("house rules: note: the tree is laid out by clang-format 14 (Debian 12's); "
              "another version may disagree on some lines")

    found = format_violations(clang_format, root, files)
    nformat = print_format(found)
    long, known, stale = length_violations(load_longest_functions(), root, files, a.max_lines)
    for f, line, name, n in long:
        print(f"{f}:{line}: function {name} is {n} lines, over {a.max_lines}; "
              f"fix: split it into well-named helpers of at most {a.max_lines} lines")
    for f, line, name, n in known:
        print(f"{f}:{line}: function {name} is {n} lines: a known exception (KNOWN_LONG in "
              "scripts/house-rules.py)")
    for k in stale:
        print(f"house rules: note: {k} is no longer over {a.max_lines} lines (or gone): "
              "remove it from KNOWN_LONG in scripts/house-rules.py")

    print(f"house rules: {len(found)} lines in {nformat} files not clang-formatted, "
          f"{len(long)} functions over {a.max_lines} lines ({len(known)} known exceptions)")
    sys.exit(1 if found or long else 0)


if __name__ == "__main__":
    main()
