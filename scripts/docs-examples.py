#!/usr/bin/env python3
"""Writes the command outputs README.md and docs/*.md show, from the commands themselves.

An example in the Markdown is a fenced ```console block between two markers:

    <!-- example: NAME CONTEXT -->
    ```console
    $ build/mmlockd report --sort faults --top 5
    (output, written by this script)
    ```
    <!-- /example -->

Every `$ ` line is a command (continued while its shell quoting is open or it ends in `\\`); the
lines after it are its standard output, as this script last wrote them. CONTEXT says what the
commands run against, so that the shown output comes from a history anyone can have:

  history  the defaults' history committed as tests/data/docs-history.db.xz (a 20-second run of
           the daemon on its defaults, 2-second windows, fault_workload and the machine's own
           load), decompressed to a temporary mmlockd.db. `/var/lib/mmlockd/mmlockd.db` in a
           command is that file, and `mmlockd report` without `--db` gets `--db` it; in the
           output the file reads `/var/lib/mmlockd/mmlockd.db` again. Same output every time.
  lab      the kernel lab's recordings in tests/data/ (`xz -dc tests/data/lab-....rec.xz >
           vanilla.rec`, `mmlockd replay vanilla.rec --db vanilla.db`), in a temporary
           directory. Same output every time.
  live     a daemon this script starts (root: it opens tracepoints) on its defaults with
           --interval 2, a temporary database and a free port, which `127.0.0.1:9477` in a
           command names (`127.0.0.1:9478` is another free port, for a second daemon a command
           starts); outputs differ from run to run, so --check compares their shape only.

In every command `sudo ` is dropped, `build/` and a leading `mmlockd` are the build tree's, and
`tests/data/` the source tree's.

  scripts/docs-examples.py [--build DIR] [--live] [FILE.md...]
      regenerate the examples in place (default: README.md and docs/*.md; live examples only
      with --live, as root).
  scripts/docs-examples.py --check [--live | --live-only] [--build DIR]
      regenerate into memory and compare: history and lab examples must be identical to what
      is shown; live ones (with --live, as root) the same in shape: lines, and in each line its
      words, with numbers and hexadecimal names read as placeholders. A command shown with its
      output outside the markers is a failure too, and so is a ```sql block that the committed
      history's schema cannot run. Prints each difference.
  scripts/docs-examples.py --record-history [--build DIR]
      (root) run the daemon on its defaults for 20 seconds beside fault_workload and write
      tests/data/docs-history.db.xz anew; needed when the schema changed (--check says so).

Exit status: 0 all good, 1 a difference or a command failed, 77 nothing could be checked.
"""
import argparse
import glob
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SRC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
HISTORY_XZ = os.path.join("tests", "data", "docs-history.db.xz")
SHOWN_DB = "/var/lib/mmlockd/mmlockd.db"
SHOWN_PORT = "127.0.0.1:9477"
SHOWN_PORT2 = "127.0.0.1:9478"  # a second daemon of a live example, beside the first
CONTEXTS = ("history", "lab", "live")
MARK = re.compile(r"^<!-- example: ([\w-]+) (\w+) -->$")
END = "<!-- /example -->"


class Example:
    """One marked block: where it is, what it runs and what it shows."""

    def __init__(self, path, name, context, start, end, commands):
        self.path, self.name, self.context = path, name, context
        self.start, self.end = start, end  # line indexes of the fences' contents
        self.commands = commands  # [(command text, [shown output lines])]

    def where(self):
        return f"{os.path.relpath(self.path, SRC)}:{self.start + 1} ({self.name})"


def complete(cmd):
    if cmd.endswith("\\"):
        return False
    try:
        shlex.split(cmd)
    except ValueError:
        return False
    return True


def parse_block(lines):
    """[(command, [output lines])] of a console block's lines."""
    out, pending = [], None
    for line in lines:
        if pending is not None:
            pending += "\n" + line
            if complete(pending):
                out.append((pending, []))
                pending = None
            continue
        if line.startswith("$ "):
            if complete(line[2:]):
                out.append((line[2:], []))
            else:
                pending = line[2:]
        elif out:
            out[-1][1].append(line)
    return out


def find_examples(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        name, context = m.groups()
        if context not in CONTEXTS or i + 1 >= len(lines) or lines[i + 1] != "```console":
            raise SystemExit(f"{path}:{i + 1}: example {name}: unknown context {context} or no "
                             "```console block right after the marker")
        j = i + 2
        while j < len(lines) and lines[j] != "```":
            j += 1
        if j + 1 >= len(lines) or lines[j + 1] != END:
            raise SystemExit(f"{path}:{i + 1}: example {name}: no {END} after its block")
        found.append(Example(path, name, context, i + 2, j, parse_block(lines[i + 2:j])))
        i = j + 2
    return found


def unmarked_outputs(path):
    """Places where a fenced block shows a `$ ` command followed by output lines outside the
    example markers: output nobody regenerates."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i, marked = [], 0, False
    while i < len(lines):
        if MARK.match(lines[i]):
            marked = True
        if not lines[i].startswith("```"):
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        block = parse_block(lines[i + 1:j])
        if not marked and any(out for _, out in block):
            found.append(f"{os.path.relpath(path, SRC)}:{i + 1}: a command's output shown "
                         "outside <!-- example: ... --> markers (scripts/docs-examples.py)")
        marked = False
        i = j + 1
    return found


def sql_failures(files):
    """Every ```sql block of the files, run on the committed history: a query the schema no
    longer answers (a renamed column, a dropped view) fails here rather than in a reader's
    hands. Its rows are not compared (the queries look at the last hour)."""
    import sqlite3
    tmp = tempfile.mkdtemp(prefix="mmlockd-examples-sql.")
    db = os.path.join(tmp, "mmlockd.db")
    failures = []
    try:
        with open(db, "wb") as f:
            subprocess.run(["xz", "-dc", os.path.join(SRC, HISTORY_XZ)], stdout=f, check=True)
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        for path in files:
            text = open(path, encoding="utf-8").read()
            for m in re.finditer(r"^```sql\n(.*?)^```", text, re.S | re.M):
                line = text.count("\n", 0, m.start()) + 1
                try:
                    con.execute(m.group(1)).fetchall()
                except sqlite3.Error as err:
                    failures.append(f"{os.path.relpath(path, SRC)}:{line}: the query fails on "
                                    f"the committed history: {err}")
        con.close()
    finally:
        subprocess.run(["rm", "-rf", tmp])
    return failures


class Runner:
    """Runs the commands of one context and maps its paths back to the ones shown."""

    def __init__(self, context, build, tmp):
        self.context, self.build, self.tmp = context, build, tmp
        self.db = os.path.join(tmp, "mmlockd.db")
        self.port = self.port2 = None
        self.daemon = None

    def rewrite(self, cmd):
        cmd = re.sub(r"(^|[\s;&|(])sudo ", r"\1", cmd)
        cmd = re.sub(r"(^|[\s;&|(])build/", lambda m: m.group(1) + self.build + "/", cmd)
        cmd = re.sub(r"(^|[\s;&|(])mmlockd ", lambda m: m.group(1) + self.build + "/mmlockd ",
                     cmd)
        cmd = re.sub(r"(^|[\s<])tests/data/", lambda m: m.group(1) + SRC + "/tests/data/", cmd)
        cmd = cmd.replace(SHOWN_DB, self.db)
        if self.port:
            cmd = cmd.replace(SHOWN_PORT, f"127.0.0.1:{self.port}")
            cmd = cmd.replace(SHOWN_PORT2, f"127.0.0.1:{self.port2}")
        if self.context != "lab" and re.search(r"mmlockd report\b", cmd) and "--db" not in cmd:
            cmd = re.sub(r"mmlockd report\b", f"mmlockd report --db {self.db}", cmd, count=1)
        return cmd

    def unrewrite(self, text):
        text = text.replace(self.db, SHOWN_DB).replace(self.tmp + "/", "")
        if self.port:
            text = text.replace(f"127.0.0.1:{self.port}/", SHOWN_PORT + "/")
            text = text.replace(f"127.0.0.1:{self.port2}/", SHOWN_PORT2 + "/")
        return text.replace(self.build + "/", "build/").replace(SRC + "/", "")

    def run(self, cmd):
        """The command's standard output lines, or raises RuntimeError."""
        real = self.rewrite(cmd)
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(TZ="UTC", LC_ALL="C.UTF-8")  # report prints local times, and fits $COLUMNS
        p = subprocess.run(["bash", "-o", "pipefail", "-c", real], cwd=self.tmp, env=env,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"`{cmd.splitlines()[0]}` exited {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-400:]}")
        out = self.unrewrite(p.stdout.rstrip("\n"))
        # Trailing blanks (sqlite3's columns) would not survive an editor.
        return [line.rstrip() for line in out.split("\n")] if out else []

    def start(self):
        if self.context == "history":
            with open(self.db, "wb") as f:
                subprocess.run(["xz", "-dc", os.path.join(SRC, HISTORY_XZ)], stdout=f,
                               check=True)
            check_schema(self.db)
        elif self.context == "live":
            os.chmod(self.tmp, 0o755)  # examples run as nobody read in it
            self.port, self.port2 = free_port(), free_port()
            self.daemon = start_daemon(self.build, self.db, self.port, self.tmp)

    def stop(self):
        if self.daemon is not None:
            self.daemon.terminate()
            try:
                self.daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()


def check_schema(db):
    """The committed history must be at the build's schema: a reader never migrates."""
    import sqlite3
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    have = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    want = len(glob.glob(os.path.join(SRC, "schema", "[0-9]*.sql")))
    if have != want:
        raise RuntimeError(f"{HISTORY_XZ} is at schema version {have}, the tree's is {want}: "
                           "record it again (scripts/docs-examples.py --record-history, root), "
                           "then regenerate the examples")


def free_port():
    for _ in range(50):
        port = 20000 + int.from_bytes(os.urandom(2), "little") % 40000
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free loopback port")


def start_daemon(build, db, port, tmp, extra=()):
    log = open(os.path.join(tmp, "daemon.log"), "w")
    argv = [os.path.join(build, "mmlockd"), "--config", "/dev/null", "--interval", "2",
            "--db", db, "--listen", f"127.0.0.1:{port}", *extra]
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    proc.wait()
    raise RuntimeError("the daemon did not answer: "
                       + open(os.path.join(tmp, "daemon.log")).read()[-400:])


def shape(line):
    """A line with its numbers, hexadecimal names and runs of blanks made placeholders."""
    line = re.sub(r"\b[0-9a-f]{8,}\b", "H", line)
    line = re.sub(r"\d+(?:[.,:]\d+)*", "N", line)
    return re.sub(r"\s+", " ", line.strip())


def regenerate(examples, build, contexts):
    """{example: [(command, [new output lines])]} for the examples of those contexts, and the
    failures met. Each history or lab example runs in a directory of its own; the live ones
    share one daemon."""
    new, failures = {}, []
    groups = [[e] for e in examples if e.context in contexts and e.context != "live"]
    groups += [[e for e in examples if e.context == "live" and "live" in contexts]]
    for todo in groups:
        if not todo:
            continue
        context = todo[0].context
        tmp = tempfile.mkdtemp(prefix=f"mmlockd-examples-{context}.")
        runner = Runner(context, build, tmp)
        try:
            runner.start()
            for e in todo:
                try:
                    new[e] = [(cmd, runner.run(cmd)) for cmd, _ in e.commands]
                except (RuntimeError, subprocess.SubprocessError) as err:
                    failures.append(f"{e.where()}: {err}")
        except (RuntimeError, subprocess.SubprocessError, OSError) as err:
            failures.append(f"{context}: {err}")
        finally:
            runner.stop()
            subprocess.run(["rm", "-rf", tmp])
    return new, failures


def compare(e, fresh):
    """The differences between what an example shows and what its commands print now."""
    diffs = []
    for (cmd, shown), (_, now) in zip(e.commands, fresh):
        a, b = shown, now
        if e.context == "live":
            a, b = [shape(x) for x in shown], [shape(x) for x in now]
        if a == b:
            continue
        for k in range(max(len(a), len(b))):
            x = a[k] if k < len(a) else "(no line)"
            y = b[k] if k < len(b) else "(no line)"
            if x != y:
                diffs.append(f"{e.where()}: `{cmd.splitlines()[0]}`, output line {k + 1}:\n"
                             f"    shown: {x}\n    now:   {y}")
                break
    return diffs


def write(path, examples, new):
    lines = open(path, encoding="utf-8").read().split("\n")
    for e in sorted((e for e in examples if e in new), key=lambda e: -e.start):
        block = []
        for cmd, out in new[e]:
            block.append("$ " + cmd)
            block.extend(out)
        lines[e.start:e.end] = block
    open(path, "w", encoding="utf-8").write("\n".join(lines))


def record_history(build):
    """A new tests/data/docs-history.db.xz: the defaults for 20 s beside fault_workload."""
    if os.geteuid() != 0:
        raise SystemExit("--record-history: the daemon opens tracepoints: run as root")
    tmp = tempfile.mkdtemp(prefix="mmlockd-history.")
    db = os.path.join(tmp, "mmlockd.db")
    daemon = start_daemon(build, db, free_port(), tmp)
    try:
        time.sleep(4)
        subprocess.run([os.path.join(build, "tests", "fault_workload"), "--seconds", "8",
                        "--map-threads", "2"], check=True)
        time.sleep(6)
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    packed = os.path.join(tmp, "packed.db")
    subprocess.run(["sqlite3", db, f"VACUUM INTO '{packed}'"], check=True)
    with open(os.path.join(SRC, HISTORY_XZ), "wb") as f:
        subprocess.run(["xz", "-9e", "-c", packed], stdout=f, check=True)
    subprocess.run(["rm", "-rf", tmp])
    print(f"wrote {HISTORY_XZ}; now run scripts/docs-examples.py to regenerate the examples")


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--live", action="store_true")
    ap.add_argument("--live-only", action="store_true")
    ap.add_argument("--record-history", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if args.record_history:
        record_history(build)
        return 0
    files = args.files or [os.path.join(SRC, "README.md")] + sorted(
        glob.glob(os.path.join(SRC, "docs", "*.md")))
    examples = [e for f in files for e in find_examples(os.path.abspath(f))]
    contexts = ["history", "lab"] if not args.live_only else []
    if args.live or args.live_only:
        if os.geteuid() != 0:
            print("SKIP: live examples need root (the daemon opens tracepoints)")
            if args.live_only:
                return 77
        else:
            contexts.append("live")
    new, failures = regenerate(examples, build, contexts)
    if args.check:
        failures.extend(u for f in files for u in unmarked_outputs(os.path.abspath(f)))
        if not args.live_only:
            failures.extend(sql_failures([os.path.abspath(f) for f in files]))
        for e in examples:
            if e in new:
                failures.extend(compare(e, new[e]))
    else:
        for path in sorted({e.path for e in examples}):
            write(path, [e for e in examples if e.path == path], new)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(new)} of {len(examples)} examples {'checked' if args.check else 'written'}, "
          f"{len(failures)} failed")
    if failures:
        return 1
    return 0 if new else 77


if __name__ == "__main__":
    sys.exit(main())
