#!/usr/bin/env python3
"""scripts/house-rules.py can fail: it is run on small trees made here, with the repository's
.clang-format, and must name what breaks the rules and pass what keeps them:

  - a function of 81 lines and a line clang-format would change: exit 1, both named by file and
    line with their fix; a function of exactly 80 lines and a build directory's file not named;
  - a long main in a file of the known exceptions passes, the same main in another file fails;
  - the tree without them: exit 0;
  - no clang-format in PATH: exit 2 and what to install;
  - in a git checkout only tracked files are checked.

Usage: test_house_rules.py SCRIPT SOURCE_ROOT (meson passes scripts/house-rules.py and the tree).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

PASSED = FAILED = 0


def check(ok, what, out=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print(f"ok: {what}")
    else:
        FAILED += 1
        print(f"FAIL: {what}\n{out}")


def function(name, lines):
    """A clang-formatted C function of exactly @lines lines, declarator to closing brace."""
    body = ["\tx += 1;"] * (lines - 4) + ["\treturn x;"]
    return "\n".join([f"int {name}(int x)", "{"] + body + ["}", ""])


def write(root, path, text):
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as f:
        f.write(text)


def run(script, root, env=None):
    p = subprocess.run([sys.executable, script, "--root", root], capture_output=True, text=True,
                       env=env, timeout=60)
    return p.returncode, p.stdout + p.stderr


def main():
    script, source = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="house-rules.") as tmp:
        root = os.path.join(tmp, "tree")
        os.makedirs(root)
        shutil.copy(os.path.join(source, ".clang-format"), root)
        write(root, "src/long.c", "/* one too long */\n" + function("too_long", 81))
        write(root, "src/fits.c", function("just_fits", 80))
        write(root, "src/ugly.c", "int ugly(int x)\n{\n\treturn x+1;\n}\n")
        # A known exception of the script itself (its KNOWN_LONG; none left: not checked).
        known = re.findall(r'^\s+"([^":]+):(\w+)",', open(script).read(), re.M)
        known_file, known_fn = known[0] if known else ("", "")
        if known:
            write(root, known_file, function(known_fn, 95))
        write(root, "bench/other.c", function("main", 95))
        write(root, "build-x/build.ninja", "")
        write(root, "build-x/generated.c", "int   generated;\n" + function("gen", 90))

        rc, out = run(script, root)
        check(rc == 1, "an 81-line function and a mis-formatted line: exit 1", out)
        check("src/long.c:2: function too_long is 81 lines, over 80; fix: split it" in out,
              "the long function named with its file, line and fix", out)
        check("src/ugly.c:3: not as clang-format lays it out: `return x+1;`; "
              "fix: clang-format -i src/ugly.c" in out,
              "the mis-formatted line named with its file, line and fix", out)
        check("just_fits" not in out and "fits.c" not in out, "an 80-line function passes", out)
        check("bench/other.c:1: function main is 95 lines, over 80" in out and
              (not known or "%s:1: function %s is 95 lines: a known exception" %
               (known_file, known_fn) in out),
              "a known exception holds for its own file:function only", out)
        check("generated" not in out and "build-x" not in out,
              "a build directory's files are not checked", out)

        for f in ("src/long.c", "src/ugly.c", "bench/other.c"):
            os.remove(os.path.join(root, f))
        rc, out = run(script, root)
        check(rc == 0 and "0 functions over 80 lines (1 known exceptions)" in out,
              "the tree that keeps the rules: exit 0", out)

        empty = os.path.join(tmp, "empty-path")
        os.makedirs(empty)
        env = dict(os.environ, PATH=empty)
        env.pop("CLANG_FORMAT", None)
        rc, out = run(script, root, env)
        check(rc == 2 and "no clang-format-14 or clang-format in PATH" in out and
              "clang-format-14" in out, "no clang-format: exit 2, saying what to install", out)

        if shutil.which("git"):
            git = ["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@t"]
            write(root, ".gitignore", "/build-x/\n")
            subprocess.run(git + ["init", "-q"], check=True)
            subprocess.run(git + ["add", "."], check=True)
            subprocess.run(git + ["commit", "-qm", "t"], check=True)
            write(root, "src/untracked.c", function("untracked", 90))
            rc, out = run(script, root)
            check(rc == 0 and "tracked by git" in out and "untracked" not in out,
                  "in a git checkout the tracked files are checked", out)
            subprocess.run(git + ["add", "src/untracked.c"], check=True)
            rc, out = run(script, root)
            check(rc == 1 and "src/untracked.c:1: function untracked is 90 lines" in out and
                  "build-x" not in out,
                  "a newly tracked file is checked", out)
        else:
            print("skip: git not installed: the git checkout's file list is not checked")
    print(f"{PASSED} passed, {FAILED} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
