#!/usr/bin/env python3
"""soak.py: mmlockd in real time under churn and workloads, with its page open in Chromium.

What a day of generated history (tests/integration/test_day.py) cannot show: the daemon living
through the time itself. mmlockd runs on its defaults (10-second windows, sandbox on) on a fresh
database for --minutes while
  * bench_mix (fault readers against mmap/mprotect/munmap writers) runs all along,
  * a wave of bench_churn (--churn-procs short processes x 2 threads) starts every minute,
  * the page is open in headless Chromium (bench/soak_page.mjs): its own 2-second polls, its
    range fetches at each closed window, and a new view of the last hour every minute,
and every minute this script samples the daemon: RSS, CPU used in the minute (share of one core),
windows stored, database size, the latency of each route the page reads (last hour), the HTTP
errors of those requests and the errors the page met. The table goes to
bench/results/soak-YYYYMMDD.md (--out), with a summary line.

Usage: soak.py [--minutes N (60)] [--build DIR (build)] [--out FILE] [--label TEXT]
Root (the daemon collects). Needs node, playwright-core in node_modules and /usr/bin/chromium for
the page (without them the page column says "no browser" and the rest runs).
"""

import argparse
import datetime
import json
import os
import queue
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIELDS = "minflt,majflt,faults,fallback_locks,fallback_lock_waits,faults_mmap_fallback"
ROUTES = {  # column -> path, with {since} and {until} of the last hour
    "status": "/api/v1/status",
    "processes": "/api/v1/processes",
    "series": "/api/v1/series?since={since}&until={until}&points=300&fields=" + FIELDS,
    "top": "/api/v1/top?since={since}&until={until}&limit=1000&fields=" + FIELDS,
    "units": "/api/v1/top?since={since}&until={until}&limit=1000&by=cgroup&fields=" + FIELDS,
    "locks": "/api/v1/locks?since={since}&until={until}&top=50",
    "metrics": "/metrics",
}


def get(port, path):
    """(status, body, milliseconds) of GET @path; status 0 when the connection failed."""
    t = time.monotonic()
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=60) as r:
            body = r.read()
            return r.status, body, (time.monotonic() - t) * 1000
    except urllib.error.HTTPError as e:
        return e.code, e.read(), (time.monotonic() - t) * 1000
    except OSError as e:
        return 0, str(e).encode(), (time.monotonic() - t) * 1000


def start_daemon(mmlockd, tmp):
    """mmlockd on its defaults at a random port in 20000-60000; (process, port)."""
    for _ in range(5):
        port = random.randint(20000, 60000)
        log = open(os.path.join(tmp, "mmlockd.log"), "a")
        p = subprocess.Popen([mmlockd, "--config", "/dev/null", "--db",
                              os.path.join(tmp, "soak.db"), "--listen", "127.0.0.1:%d" % port],
                             stdout=log, stderr=log)
        for _ in range(100):
            if p.poll() is not None:
                break
            if get(port, "/api/v1/status")[0] == 200:
                return p, port
            time.sleep(0.2)
        p.kill()
        p.wait()
    sys.exit("mmlockd did not start; see %s/mmlockd.log" % tmp)


def proc_sample(pid):
    """(RSS KiB, CPU seconds used so far) of @pid."""
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_page(port, tmp):
    """soak_page.mjs in Chromium, its lines into a queue; (process or None, queue)."""
    lines = queue.Queue()
    pw = os.path.join(ROOT, "node_modules", "playwright-core", "index.mjs")
    if not (shutil.which("node") and os.path.exists(pw) and os.path.exists("/usr/bin/chromium")):
        return None, lines
    env = dict(os.environ, URL="http://127.0.0.1:%d/" % port, CHROMIUM="/usr/bin/chromium")
    p = subprocess.Popen(["node", os.path.join(HERE, "soak_page.mjs"), pw], env=env,
                         stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, "page.err"), "w"),
                         text=True)
    threading.Thread(target=lambda: [lines.put(x.strip()) for x in p.stdout], daemon=True).start()
    return p, lines


class Workloads:
    """bench_mix all along, a wave of bench_churn every minute (once the last one ended)."""

    def __init__(self, bench_dir, tmp, churn_procs):
        self.bench_dir, self.tmp, self.churn_procs = bench_dir, tmp, churn_procs
        self.mix = self.churn = None
        self.waves = 0
        self.last_wave = -60.0

    def tick(self):
        if self.mix is None or self.mix.poll() is not None:
            self.mix = subprocess.Popen(
                [os.path.join(self.bench_dir, "bench_mix"), "--readers", "1", "--writers", "1",
                 "--writer-rate", "500", "--seconds", "3600", "--warmup", "0", "--dir", self.tmp],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        due = time.monotonic() - self.last_wave >= 60
        if due and (self.churn is None or self.churn.poll() is not None):
            self.last_wave = time.monotonic()
            self.churn = subprocess.Popen(
                [os.path.join(self.bench_dir, "bench_churn"), "--procs", str(self.churn_procs),
                 "--threads", "2", "--parallel", "4"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.waves += 1

    def stop(self):
        for p in (self.mix, self.churn):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def sample_routes(port):
    """{column: ms} of one request of each route over the last hour, and the failed ones."""
    until = time.time()
    ms, failed, status = {}, [], {}
    for col, path in ROUTES.items():
        st, body, ms[col] = get(port, path.format(since="%.3f" % (until - 3600),
                                                  until="%.3f" % until))
        err = "" if st == 200 else "HTTP %d %s" % (st, body[:120].decode(errors="replace").strip())
        if st == 200 and path.startswith("/api/"):
            doc = json.loads(body)
            if col == "status":
                status = doc
            if isinstance(doc, dict) and "error" in doc:
                err = "error " + str(doc["error"])
        if err:
            failed.append("%s: %s" % (col, err))
    return ms, failed, status


def db_sample(path):
    """(KiB of the database with its WAL, process rows stored) of @path."""
    kib = sum(os.path.getsize(f) // 1024 for f in (path, path + "-wal") if os.path.exists(f))
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
        rows = con.execute("SELECT count(*) FROM process_windows").fetchone()[0]
        con.close()
    except sqlite3.Error:
        rows = "?"
    return kib, rows


def page_events(lines):
    """(errors, view seconds) the page printed since the last call."""
    errors, views = [], []
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return errors, views
        if line.startswith("error "):
            errors.append(line[6:])
        elif line.startswith("view "):
            views.append(float(line.split()[-1]))


def soak(args, tmp):
    """The minutes of the run, one dict each."""
    mmlockd = os.path.join(args.build, "mmlockd")
    d, port = start_daemon(mmlockd, tmp)
    page, lines = start_page(port, tmp)
    work = Workloads(os.path.join(args.build, "bench"), tmp, args.churn_procs)
    rows, t0 = [], time.monotonic()
    _, cpu0 = proc_sample(d.pid)
    try:
        for minute in range(1, args.minutes + 1):
            deadline = t0 + 60 * minute
            while time.monotonic() < deadline:
                work.tick()
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            if d.poll() is not None:
                sys.exit("mmlockd exited with %d; see %s/mmlockd.log" % (d.returncode, tmp))
            rss, cpu = proc_sample(d.pid)
            ms, failed, status = sample_routes(port)
            perr, views = page_events(lines)
            db_kib, db_rows = db_sample(os.path.join(tmp, "soak.db"))
            rows.append(dict(minute=minute, rss_kib=rss, cpu_pct=(cpu - cpu0) / 60 * 100,
                             windows=status.get("windows_stored", "?"),
                             tracked=status.get("processes_tracked", "?"),
                             db_kib=db_kib, db_rows=db_rows,
                             ms=ms, http_errors=failed, page_errors=perr, views=views,
                             waves=work.waves, page=page is not None))
            cpu0 = cpu
            print("soak: minute %d: RSS %d KiB, CPU %.1f%%, %d HTTP and %d page errors" %
                  (minute, rss, rows[-1]["cpu_pct"], len(failed), len(perr)), file=sys.stderr)
    finally:
        work.stop()
        if page:
            page.send_signal(signal.SIGTERM)
            page.wait(30)
        d.send_signal(signal.SIGTERM)
        d.wait(60)
    return rows


def table(args, rows, started):
    """The markdown of the run."""
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip() or "?"
    head = ["min", "RSS MiB", "CPU %", "windows", "tracked", "rows", "DB MiB"] + \
        ["%s ms" % c for c in ROUTES] + ["HTTP err", "page err", "page view s"]
    out = ["# Soak%s: %d minutes of mmlockd on its defaults at %s" %
           (" (" + args.label + ")" if args.label else "", args.minutes, rev), "",
           "Started %s UTC on %d CPUs (load %s at the start), by `bench/soak.py --minutes %d "
           "--churn-procs %d`: mmlockd --config /dev/null (10-second windows, sandbox on) on a "
           "fresh database; bench_mix (1 reader, 1 writer at 500 cycles/s) all along; a wave of "
           "bench_churn (%d processes x 2 threads, 4 at a time) every minute; the page open in "
           "Chromium, a new view of the last hour every minute. Each minute: the daemon's RSS, "
           "the CPU it used in the minute (share of one core), windows stored, processes tracked, "
           "process rows stored (process_windows), the database with its WAL, the latency of "
           "one request of each route over the last hour, the requests that failed and the "
           "page's errors; page view s is the slowest view the page opened in the minute." %
           (started, os.cpu_count(), open("/proc/loadavg").read().split()[0], args.minutes,
            args.churn_procs, args.churn_procs), "",
           "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        views = ("%.1f" % max(r["views"])) if r["views"] else ("-" if r["page"] else "no browser")
        out.append("| " + " | ".join(
            [str(r["minute"]), "%.1f" % (r["rss_kib"] / 1024), "%.1f" % r["cpu_pct"],
             str(r["windows"]), str(r["tracked"]), str(r["db_rows"]),
             "%.1f" % (r["db_kib"] / 1024)] +
            ["%.0f" % r["ms"][c] for c in ROUTES] +
            [str(len(r["http_errors"])), str(len(r["page_errors"])), views]) + " |")
    if rows:
        out += ["", "Peak RSS %.1f MiB; CPU %.1f%% of a core on average; slowest request %.0f ms;"
                " %d HTTP errors, %d page errors; %d churn waves." % (
                    max(r["rss_kib"] for r in rows) / 1024,
                    sum(r["cpu_pct"] for r in rows) / len(rows),
                    max(max(r["ms"].values()) for r in rows),
                    sum(len(r["http_errors"]) for r in rows),
                    sum(len(r["page_errors"]) for r in rows), rows[-1]["waves"])]
    errs = [(r["minute"], e) for r in rows for e in r["http_errors"] + r["page_errors"]]
    if errs:
        out += ["", "Errors (the first 20):", ""] + ["- minute %d: %s" % (m, e[:300])
                                                     for m, e in errs[:20]]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--churn-procs", type=int, default=1000)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=os.path.join(
        HERE, "results", "soak-%s.md" % datetime.datetime.utcnow().strftime("%Y%m%d")))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak.py: run as root (mmlockd collects)")
    started = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M")
    tmp = tempfile.mkdtemp(prefix="mmlockd-soak.", dir="/var/tmp")
    try:
        rows = soak(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(args.out, "w") as f:
        f.write(table(args, rows, started))
    print("soak: wrote " + args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
