#!/usr/bin/env python3
"""History queries over long ranges, with the HTTP threads' sandbox on (the default).

Usage: test_long_queries.py PATH/TO/mmlockd

A day of 10-second windows with 150 process rows each (1.3 million rows, 50 000 processes, 50
cgroups) is written straight into a database the daemon made (the sqlite3 module, in a few
seconds: the rows' values only need to be plausible here, tests/tools/ has the generator of
realistic days), then the daemon is started on it and asked what the page asks. What each check
proves:

- range_sums_are_built: the daemon builds the range sums (store.c) of a database written without
  them, and says so.
- long_range_queries_answer: /api/v1/top (by process and by cgroup), /api/v1/series and
  /api/v1/history over 15 min, 24 h and 7 d answer 200 with rows, also when they sum every window
  (sums made stale): those sorts outgrow SQLite's cache and spill to a temporary file, which the
  query workers' sandbox used to refuse (500 "top query failed: No such file or directory" from
  ~13 000 rows on).
- stop_is_prompt_during_long_queries: SIGTERM while both query workers run a long query stops the
  daemon within STOP_BUDGET_S, not when the queries end.
- a_client_gone_frees_its_worker: two long queries whose clients hang up after 0.3 s; a short
  query sent after them is answered within SHORT_BUDGET_S, not after the long ones.
The last two run with the sums made stale, so that queries sum every window, and need a query
that runs at least LONG_MIN_S uninterrupted to prove anything; on a machine fast enough to finish
it sooner they are skipped with that reason. The latency of the page's first screen over a day is
bench/'s (tests/integration/test_day.py holds it to a budget).

Prints "ok NAME", "FAIL NAME: why" or "skip NAME: why" per check and "N passed, M failed". Exit
0, 1 when a check failed, 77 when nothing could run (not root: the daemon needs it to start its
collectors; or no sqlite3 module). KEEP_TMP=1 keeps the temporary directory.
"""
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

WINDOWS = 8640  # a day of 10 s windows
ROWS_PER_WINDOW = 150
PROCESSES = 50000
CGROUPS = 50
LONG_MIN_S = 2.0  # what a "long" query must take for the stop and hang-up checks to mean much
STOP_BUDGET_S = 2.0
SHORT_BUDGET_S = 2.0
QUERY_TIMEOUT_S = 60  # the client's own patience

passed = failed = 0


def report(name, ok, why=""):
    global passed, failed
    if ok is None:
        print(f"skip {name}: {why}")
    elif ok:
        passed += 1
        print(f"ok {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {why}")
    sys.stdout.flush()


def free_port():
    for _ in range(200):
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError("no free loopback port")


def get(port, path, timeout=QUERY_TIMEOUT_S):
    """(status, body text, seconds) of GET path; status 0 when the connection failed."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            body = r.read().decode()
            return r.status, body, time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), time.monotonic() - t0
    except (OSError, urllib.error.URLError) as e:
        return 0, str(e), time.monotonic() - t0


class Daemon:
    def __init__(self, mmlockd, db, log):
        self.port = free_port()
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [mmlockd, "--config", "/dev/null", "--db", db, "--listen",
             f"127.0.0.1:{self.port}"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and self.proc.poll() is None:
            if get(self.port, "/api/v1/status", timeout=2)[0] == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the daemon did not answer /api/v1/status (see {log})")

    def stop(self):
        """Seconds from SIGTERM to exit (or None when it had to be killed after 30 s)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
            return time.monotonic() - t0
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def fill(db):
    """A day of windows ending now, written with the sqlite3 module into the daemon's schema."""
    import sqlite3
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    end = int(time.time())
    start = end - WINDOWS * 10
    with con:
        con.executemany("INSERT INTO windows(ts_start, ts_end, kernel) VALUES (?, ?, 'test')",
                        ((start + i * 10, start + i * 10 + 10) for i in range(WINDOWS)))
        con.executemany(
            "INSERT OR IGNORE INTO processes(pid, start_time, comm, cgroup) VALUES (?,?,?,?)",
            ((100000 + i, 1e9 + i, f"proc{i % 300}", f"/system.slice/unit{i % CGROUPS}.service")
             for i in range(PROCESSES)))
        wid = {r[1]: r[0] for r in con.execute("SELECT id, ts_start FROM windows")}
        pid = [r[0] for r in con.execute("SELECT id FROM processes WHERE pid >= 100000")]
        rnd = random.Random(44)

        def rows():
            for i in range(WINDOWS):
                w = wid[start + i * 10]
                base = (i * PROCESSES) // WINDOWS  # processes come and go over the day
                for j in range(ROWS_PER_WINDOW):
                    p = pid[(base + j * 7) % len(pid)]
                    f = rnd.randrange(1, 5000)
                    yield (w, p, f, f, rnd.randrange(0, 20), rnd.randrange(0, 50),
                           rnd.randrange(0, 10**6))
        con.executemany(
            "INSERT OR IGNORE INTO process_windows(window_id, process_id, comm, faults, minflt, "
            "majflt, fallback_locks, mmap_lock_wait_ns) VALUES (?,?,'proc',?,?,?,?,?)", rows())
    con.close()


def wait_for_sums(log, timeout_s=240):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(log, errors="replace") as f:
            text = f.read()
        if "range sums rebuilt" in text:
            return True
        time.sleep(0.5)
    return False


def make_sums_stale(db):
    import sqlite3
    con = sqlite3.connect(db, timeout=10)
    with con:
        con.execute("UPDATE range_sums_state SET windows = windows - 1")
    con.close()


def check_long_ranges(port, name):
    now = time.time()
    paths = []
    for span in (900, 86400, 7 * 86400):
        rng = f"since={now - span:.3f}&until={now:.3f}"
        paths += [f"/api/v1/top?limit=8&{rng}", f"/api/v1/top?by=cgroup&limit=50&{rng}",
                  f"/api/v1/series?points=300&{rng}", f"/api/v1/history?limit=100&{rng}",
                  f"/api/v1/locks?{rng}"]
    bad = []
    longest = 0.0
    for p in paths:
        status, body, secs = get(port, p)
        longest = max(longest, secs)
        if status != 200 or '"error"' in body:
            bad.append(f"{p} -> {status} {body[:160]}")
        elif '"rows":[]' in body and "/top" in p:
            bad.append(f"{p} -> no rows")
    report(name, not bad, "; ".join(bad))
    return longest


def long_query(port):
    """The slowest query the page can ask: every field, every process, seven days."""
    now = time.time()
    return f"/api/v1/top?limit=1000&since={now - 7 * 86400:.3f}&until={now:.3f}"


def hang_up_after(port, path, seconds):
    """Sends GET path and closes the connection after @seconds without reading the answer."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(seconds)
    s.close()


def check_client_gone(port, long_s):
    name = "a_client_gone_frees_its_worker"
    if long_s < LONG_MIN_S + 1:
        report(name, None, f"the long query took {long_s:.1f} s here (needs {LONG_MIN_S + 1} s)")
        return
    hangers = [threading.Thread(target=hang_up_after, args=(port, long_query(port), 0.3))
               for _ in range(2)]
    for t in hangers:
        t.start()
    for t in hangers:
        t.join()
    time.sleep(0.3)  # the workers notice within 0.1 s of their own work
    now = time.time()
    status, body, secs = get(port, f"/api/v1/history?limit=1&since={now - 60:.3f}")
    report(name, status == 200 and secs <= SHORT_BUDGET_S,
           f"a short query after two abandoned long ones ({long_s:.1f} s each): status "
           f"{status} after {secs:.2f} s (budget {SHORT_BUDGET_S} s)")


def check_prompt_stop(daemon, long_s):
    name = "stop_is_prompt_during_long_queries"
    if long_s < LONG_MIN_S:
        report(name, None, f"the long query took {long_s:.1f} s here (needs {LONG_MIN_S} s)")
        daemon.stop()
        return
    results = []
    clients = [threading.Thread(target=lambda: results.append(get(daemon.port,
                                                                   long_query(daemon.port))))
               for _ in range(2)]
    for t in clients:
        t.start()
    time.sleep(0.5)
    secs = daemon.stop()
    for t in clients:
        t.join()
    report(name, secs is not None and secs <= STOP_BUDGET_S,
           f"SIGTERM with two {long_s:.1f} s queries running: stopped after "
           f"{'more than 30' if secs is None else f'{secs:.2f}'} s (budget {STOP_BUDGET_S} s)")


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    mmlockd = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("skip: needs root (the daemon's collectors)")
        return 77
    try:
        import sqlite3  # noqa: F401
    except ImportError:
        print("skip: no sqlite3 module")
        return 77
    tmp = tempfile.mkdtemp(prefix="mmlockd-long.")
    db = os.path.join(tmp, "h.db")
    log = os.path.join(tmp, "daemon.log")
    try:
        # Makes the schema; its own log, so that the rebuild line waited for below is the
        # second daemon's.
        Daemon(mmlockd, db, os.path.join(tmp, "schema.log")).stop()
        t0 = time.monotonic()
        fill(db)
        print(f"# {WINDOWS} windows x {ROWS_PER_WINDOW} rows written in "
              f"{time.monotonic() - t0:.1f} s")
        d = Daemon(mmlockd, db, log)
        built = wait_for_sums(log)
        report("range_sums_are_built", built, "no 'range sums rebuilt' line in the log")
        check_long_ranges(d.port, "long_range_queries_answer")
        make_sums_stale(db)
        check_long_ranges(d.port, "long_range_queries_answer_from_every_window")
        status, body, long_s = get(d.port, long_query(d.port))
        print(f"# the long query: {status} in {long_s:.2f} s")
        check_client_gone(d.port, long_s)
        check_prompt_stop(d, long_s)
    except RuntimeError as e:
        report("daemon_runs", False, str(e))
    finally:
        if os.environ.get("KEEP_TMP") == "1":
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
