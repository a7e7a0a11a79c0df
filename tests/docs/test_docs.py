#!/usr/bin/env python3
"""Keeps the documentation honest: what README.md tells a reader to type runs, and its links hold.

Three checks, chosen by the first argument:

  links SRCDIR
      Every Markdown link in README.md and docs/*.md to a file of the repository resolves (and its
      #anchor, if any, names a heading of that file), and every repository path quoted in
      backticks (`bench/results/main.md`, `daemon/duty.c`) exists; docs/README.md links every page
      of docs/, and docs/architecture.md's file map names every .c file of daemon/,
      daemon/offline/ and plugins/. Needs nothing but the tree.

  commands SRCDIR BUILDDIR
      Every command in README.md's ```console blocks (lines starting with "$ ", continued while
      the shell quoting is open) and ```sh blocks runs and exits 0, in the order the README gives
      them, against a daemon this test starts on a temporary database and a free loopback port:
      the README's own start command (`build/mmlockd` with flags only) is run in the background
      with --config /dev/null --db TMP --listen 127.0.0.1:PORT appended. Each command is
      rewritten the same way: `sudo ` dropped, `build/` is BUILDDIR, `tests/data/` SRCDIR's,
      127.0.0.1:9477 is the test's
      port, /var/lib/mmlockd/mmlockd.db its database, and `mmlockd report` without --db gets
      --db. Output is not compared here (`examples` does); a command that fails, or that the
      test does not know how to run, fails the test.
      Commands that cannot run here are listed in SKIPPED with the reason. Needs root (the daemon
      opens tracepoints): exit 77 otherwise.

  examples SRCDIR BUILDDIR [--live-only]
      Every command output README.md and docs/*.md show between `<!-- example: NAME CONTEXT -->`
      markers is what the command prints now (scripts/docs-examples.py --check): identical for
      the examples run on the committed history and the lab's recordings (no privileges), the
      same in shape (lines, words, with numbers as placeholders) for the live ones, which need
      root and run with --live-only (exit 77 otherwise).

Exit status: 0 all good, 1 a check failed (each failure printed), 77 skipped.
"""
import glob
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

# Commands of README.md that cannot run inside a test, with the reason.
SKIPPED = {
    "make run": "installs packages and runs the daemon in the foreground on the real database",
    "make test": "is the test run itself",
}

REPO_DIRS = ("bench", "docs", "lab", "tests", "daemon", "plugins", "dist", "schema", "scripts",
             "web", "debian", "subprojects")


def markdown_files(src):
    return [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))


def strip_fences(text):
    """The text with fenced code blocks blanked (links in code are not links)."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
            out.append("")
            continue
        out.append("" if fence else line)
    return "\n".join(out)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    text = strip_fences(open(path, encoding="utf-8").read())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.*)$", text, re.M)}


def check_links(src):
    failures = []
    for md in markdown_files(src):
        rel = os.path.relpath(md, src)
        text = strip_fences(open(md, encoding="utf-8").read())
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(full):
                failures.append(f"{rel}: link to {target}: no such file")
                continue
            if anchor and full.endswith(".md") and anchor not in anchors(full):
                failures.append(f"{rel}: link to {target}: no heading with that anchor")
        for m in re.finditer(r"`((?:%s)/[A-Za-z0-9_./-]+)`" % "|".join(REPO_DIRS), text):
            path = m.group(1)
            # Templates such as tests/fuzz/regressions/TARGET/ name no file.
            if any(re.fullmatch(r"[A-Z_]+", part) for part in path.split("/")):
                continue
            if not os.path.exists(os.path.join(src, path)):
                failures.append(f"{rel}: `{path}`: no such file in the repository")
    return failures + check_index(src) + check_file_map(src)


def check_index(src):
    """docs/README.md links every page of docs/: a page it leaves out is one no reader finds."""
    index = strip_fences(open(os.path.join(src, "docs", "README.md"), encoding="utf-8").read())
    linked = {m.group(1).partition("#")[0] for m in re.finditer(r"\]\(([^)\s]+)\)", index)}
    return [f"docs/README.md: no link to {os.path.basename(md)}"
            for md in sorted(glob.glob(os.path.join(src, "docs", "*.md")))
            if os.path.basename(md) != "README.md" and os.path.basename(md) not in linked]


def check_file_map(src):
    """docs/architecture.md's "Where things are" names every .c file of daemon/, daemon/offline/
    and plugins/, each under its own directory's line."""
    text = open(os.path.join(src, "docs", "architecture.md"), encoding="utf-8").read()
    m = re.search(r"^## Where things are\n+```\n(.*?)^```", text, re.M | re.S)
    if not m:
        return ["docs/architecture.md: no file map (a ``` block under '## Where things are')"]
    listed, current = {}, None
    for line in m.group(1).split("\n"):
        head = re.match(r"^(\S+/)\s", line)
        if head:
            current = head.group(1)
        if current:
            listed.setdefault(current, set()).update(re.findall(r"[\w-]+\.c\b", line))
    failures = []
    for d in ("daemon/", "daemon/offline/", "plugins/"):
        for c in sorted(glob.glob(os.path.join(src, d, "*.c"))):
            if os.path.basename(c) not in listed.get(d, set()):
                failures.append(f"docs/architecture.md: the file map does not name {d}"
                                f"{os.path.basename(c)}")
    return failures


def readme_commands(src):
    """The commands of README.md's console and sh blocks, in order, as written."""
    cmds, lang, pending = [], None, None
    for line in open(os.path.join(src, "README.md"), encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("```"):
            lang = line[3:].strip() if lang is None else None
            pending = None
            continue
        if lang == "console":
            if pending is not None:
                pending += "\n" + line
            elif line.startswith("$ "):
                pending = line[2:]
            else:
                continue
        elif lang == "sh":
            if pending is not None:
                pending += "\n" + line
            elif line.strip() and not line.lstrip().startswith("#"):
                pending = line
            else:
                continue
        else:
            continue
        if pending.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:
            continue  # an open quote: the command goes on
        cmds.append(pending)
        pending = None
    return cmds


def examples_module(src):
    """scripts/docs-examples.py as a module: its free_port() serves both."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "docs_examples", os.path.join(src, "scripts", "docs-examples.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rewrite(cmd, src, build, port, db):
    cmd = re.sub(r"^sudo ", "", cmd)
    cmd = re.sub(r"(^|[\s|;&(])build/", lambda m: m.group(1) + build + "/", cmd)
    cmd = re.sub(r"(^|[\s<])tests/data/", lambda m: m.group(1) + src + "/tests/data/", cmd)
    cmd = cmd.replace("127.0.0.1:9477", f"127.0.0.1:{port}")
    cmd = cmd.replace("/var/lib/mmlockd/mmlockd.db", db)
    if re.search(r"mmlockd report\b", cmd) and "--db" not in cmd and "--help" not in cmd:
        cmd = re.sub(r"mmlockd report\b", f"mmlockd report --db {db}", cmd, count=1)
    return cmd


def is_daemon_start(cmd):
    """`build/mmlockd` followed by options only: the daemon itself."""
    words = shlex.split(re.sub(r"^sudo ", "", cmd))
    return (words and words[0] in ("build/mmlockd", "mmlockd") and
            all(w.startswith("-") or re.fullmatch(r"[\w.:%/]+", w) for w in words[1:]) and
            not any(w in ("report", "record", "replay") for w in words[1:]) and
            "--help" not in words and "-h" not in words)


def wait_ready(port, proc, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def run_commands(src, build):
    if os.geteuid() != 0:
        print("SKIP: the README's daemon opens tracepoints on every CPU: needs root")
        return 77
    cmds = readme_commands(src)
    if not cmds:
        print("FAIL: no commands found in README.md")
        return 1
    tmp = tempfile.mkdtemp(prefix="mmlockd-docs.")
    db = os.path.join(tmp, "doc.db")
    try:
        port = examples_module(src).free_port()
    except RuntimeError:
        print("SKIP: no free loopback port")
        return 77
    daemon, failures, ran, skipped = None, [], 0, 0
    try:
        for cmd in cmds:
            first = cmd.split("\n")[0]
            if cmd.strip() in SKIPPED or first.split("#")[0].strip() in SKIPPED:
                key = cmd.strip() if cmd.strip() in SKIPPED else first.split("#")[0].strip()
                print(f"skipped: {key}: {SKIPPED[key]}")
                skipped += 1
                continue
            if is_daemon_start(cmd):
                argv = shlex.split(rewrite(cmd, src, build, port, db)) + [
                    "--config", "/dev/null", "--db", db, "--listen", f"127.0.0.1:{port}"]
                log = open(os.path.join(tmp, "daemon.log"), "w")
                daemon = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
                if not wait_ready(port, daemon):
                    failures.append(f"{first}: the daemon did not answer on /api/v1/status: "
                                    + open(os.path.join(tmp, "daemon.log")).read()[-400:])
                    break
                print(f"ok (started): {first}")
                ran += 1
                continue
            real = rewrite(cmd, src, build, port, db)
            try:
                p = subprocess.run(["bash", "-o", "pipefail", "-c", real], cwd=tmp,
                                   capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                failures.append(f"{first}: did not finish within 120 s")
                continue
            if p.returncode != 0:
                failures.append(f"{first}: exit {p.returncode}: {(p.stderr or p.stdout)[-400:]}")
            else:
                print(f"ok: {first}")
                ran += 1
            if daemon is not None and daemon.poll() is not None:
                failures.append(f"the daemon exited ({daemon.returncode}) after: {first}")
                break
        if daemon is None:
            failures.append("README.md shows no command that starts the daemon")
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(timeout=15)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        subprocess.run(["rm", "-rf", tmp])
    for f in failures:
        print("FAIL:", f)
    print(f"{ran} commands ran, {skipped} skipped, {len(failures)} failed")
    return 1 if failures else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "links":
        failures = check_links(sys.argv[2])
        for f in failures:
            print("FAIL:", f)
        print(f"links: {len(failures)} broken")
        return 1 if failures else 0
    if len(sys.argv) >= 4 and sys.argv[1] == "examples":
        script = os.path.join(sys.argv[2], "scripts", "docs-examples.py")
        extra = ["--live-only"] if "--live-only" in sys.argv[4:] else []
        return subprocess.run([sys.executable, script, "--check", "--build", sys.argv[3]]
                              + extra).returncode
    if len(sys.argv) >= 4 and sys.argv[1] == "commands":
        return run_commands(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
