#!/usr/bin/env python3
"""The error of the fault split in bursts: the default's estimate against a continuous
classification of the same faults, in the same run.

Two daemons run at once on the perf rings (a BPF program on the mmap_lock tracepoints would
move the IP the fallbacks collector attributes by): A on the defaults (bursts of the default
split_duty) and B with --collectors totals,fallbacks,vmstat,faults --split-duty 100%. The
benchmark workloads (bench_swapin, bench_filemap, bench_mix; each sets up its own memory cgroup,
swap file and data file) run one after the other, --seconds each. Then, per process that both
daemons stored (the workloads and whatever else ran on the machine, which gives a spread of
fault rates), each outcome is compared as a share of its side (vma and vma_retry of the faults
that did not fall back, mmap_retry / abort / unknown of the fallbacks): A's estimate, B's exact
count, the difference, and A's stated 95% bound (sum of split_err over the rows, as a share of
that side). Processes are grouped by their fault count over the run, to show where the estimate
stops being useful. Writes bench/results/split-error-<tag>.md and .json.

Root only; standard library only; everything it creates is under /var/tmp/mmlockd-splerr.PID.
"""

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(HERE, "run.py"))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

COLS = ["minflt", "majflt", "fallback_locks", "faults_vma", "faults_vma_retry",
        "faults_mmap_retry", "faults_mmap_abort", "faults_mmap_unknown", "faults_mmap_fallback",
        "split_estimated", "split_faults_seen", "split_fallbacks_seen", "split_err"]
OUTCOMES = [("vma", "faults_vma", 0), ("vma_retry", "faults_vma_retry", 0),
            ("mmap_retry", "faults_mmap_retry", 1), ("mmap_abort", "faults_mmap_abort", 1),
            ("mmap_unknown", "faults_mmap_unknown", 1)]
BUCKETS = [(0, 1000), (1000, 10000), (10000, 100000), (100000, 10**12)]


def status(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status", timeout=2) as r:
        return json.load(r)


def start(binary, tmp, name, extra):
    port = run.free_port()
    db = os.path.join(tmp, name + ".db")
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([binary, "--config", "/dev/null", "--db", db, "--listen",
                          f"127.0.0.1:{port}", "--interval", "5", "--source", "perf"] + extra,
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(100):
        try:
            return p, db, port, status(port)
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{name} did not start; see {log.name}")


def sums(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute(f"SELECT pid, start_time, max(comm), {', '.join(f'sum({c})' for c in COLS)}"
                       " FROM process_stats GROUP BY pid, start_time").fetchall()
    con.close()
    return {(r[0], round(r[1])): dict(comm=r[2], **dict(zip(COLS, (v or 0 for v in r[3:]))))
            for r in rows}


def compare(a, b):
    """Per outcome: A's share of its side, B's, and A's stated bound, in points."""
    T, F = a["minflt"] + a["majflt"], a["fallback_locks"]
    side_a = [max(T - F, 0), F]
    side_b = [b["faults_vma"] + b["faults_vma_retry"], b["faults_mmap_fallback"]]
    out = {}
    for name, col, side in OUTCOMES:
        if not side_a[side] or not side_b[side]:
            continue
        sa, sb = 100 * a[col] / side_a[side], 100 * b[col] / side_b[side]
        out[name] = dict(a=sa, b=sb, diff=abs(sa - sb), bound=100 * a["split_err"] / side_a[side])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--workloads", type=lambda s: s.split(","), default=list(run.WORKLOADS))
    ap.add_argument("--tag", default=datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y%m%d-%H%M"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    binary = os.path.join(args.build, "mmlockd")
    tmp = f"/var/tmp/mmlockd-splerr.{os.getpid()}"
    os.makedirs(tmp)
    procs, pids = [], {}
    try:
        pb, dbb, _, _ = start(binary, tmp, "continuous",
                              ["--collectors", "totals,fallbacks,vmstat,faults",
                               "--split-duty", "100%"])
        procs.append(pb)
        # A foreign BPF program on the mmap_lock tracepoints leaves the perf fallbacks nothing
        # to attribute: A then counts them on BPF (its bursts stay on perf).
        links = subprocess.run(["bpftool", "link", "show"], capture_output=True,
                               text=True).stdout
        a_source = "bpf" if "mmap_lock" in links else "perf"
        pa, dba, porta, sta = start(binary, tmp, "bursts", ["--source", a_source])
        procs.append(pa)
        time.sleep(2)
        for w in args.workloads:
            exe = os.path.join(args.build, "bench", run.WORKLOADS[w][0])
            cmd = [exe, "--seconds", str(args.seconds), "--warmup", "1", "--dir", tmp,
                   "--cgroup-name", f"mmlockd-splerr-{os.getpid()}", "--swap-file",
                   os.path.join(tmp, "swapfile")] + run.WORKLOADS[w][1]
            out = subprocess.run(cmd, capture_output=True, text=True).stdout
            worker = [int(line.split()[2]) for line in out.splitlines()
                      if line.startswith("# worker ")]
            pids[w] = worker[0] if worker else None
            print(f"{w}: worker pid {pids[w]}", file=sys.stderr)
        time.sleep(6)
        fb = [c for c in status(porta)["collectors"] if c["name"] == "fallbacks"][0]
    finally:
        for p in procs:
            run.stop_process(p)
    A, B = sums(dba), sums(dbb)
    rows = []
    for key, a in A.items():
        b = B.get(key)
        if not b or a["minflt"] + a["majflt"] == 0:
            continue
        name = next((w for w, p in pids.items() if p == key[0]), None)
        rows.append(dict(pid=key[0], comm=a["comm"], workload=name,
                         faults=a["minflt"] + a["majflt"], fallbacks=a["fallback_locks"],
                         estimated=a["split_estimated"] > 0, seen=a["split_faults_seen"],
                         outcomes=compare(a, b)))
    L = [f"# The fault split in bursts against continuous classification ({args.tag})\n",
         f"Two daemons at once on the perf rings: the defaults ({sta['split']['mode']} of "
         f"{sta['split']['duty_permille'] / 10:g}%, {sta['split']['burst_ms']} ms every "
         f"{sta['split']['burst_period_ms']} ms, 5-second windows) and `--split-duty 100%`. "
         f"Workloads {', '.join(args.workloads)}, {args.seconds:g} s each, one after the "
         f"other, on a machine shared with other sessions. Each outcome as a share of its side "
         f"(vma, vma_retry: of the faults that did not fall back; mmap_*: of the fallbacks), in "
         f"points: the estimate, the continuous count, |difference|, A's stated 95% bound "
         f"(sum of split_err as a share of the side). Command: `bench/split_error.py "
         f"--seconds {args.seconds:g}`.\n",
         f"A's fallbacks on the {a_source} source. The fallbacks collector's state at the end: {fb['state']}"
         f"{'; ' + fb['reason'] if fb['reason'] else ''} (while another program holds BPF on "
         f"the mmap_lock tracepoints it counts no fallback, and the fallback split has no "
         f"base).\n",
         "## The benchmark workloads\n",
         "| workload | faults | fallback_locks | classified | outcome | estimate % | continuous % "
         "| diff | bound |", "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: -r["faults"]):
        if not r["workload"]:
            continue
        for o, v in r["outcomes"].items():
            L.append(f"| {r['workload']} | {r['faults']} | {r['fallbacks']} | {r['seen']} | {o} "
                     f"| {v['a']:.2f} | {v['b']:.2f} | {v['diff']:.2f} | {v['bound']:.2f} |")
    L += ["\n## Every process both stored, by its faults over the run\n",
          "| faults | processes | with an estimate | median classified | vma share: median diff "
          "| median bound | within bound | fallback split: median diff | median bound "
          "| within bound |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    med = run.median
    for lo, hi in BUCKETS:
        rs = [r for r in rows if lo <= r["faults"] < hi]
        est = [r for r in rs if r["estimated"]]
        vma = [r["outcomes"]["vma"] for r in est if "vma" in r["outcomes"]]
        fb = [r["outcomes"]["mmap_retry"] for r in est if "mmap_retry" in r["outcomes"]]

        def within(xs):
            return f"{sum(1 for x in xs if x['diff'] <= x['bound'])}/{len(xs)}" if xs else "-"

        def m(xs, k):
            return f"{med([x[k] for x in xs]):.2f}" if xs else "-"
        L.append(f"| {lo}..{hi if hi < 10**12 else ''} | {len(rs)} | {len(est)} "
                 f"| {med([r['seen'] for r in est]) if est else '-'} | {m(vma, 'diff')} "
                 f"| {m(vma, 'bound')} | {within(vma)} | {m(fb, 'diff')} | {m(fb, 'bound')} "
                 f"| {within(fb)} |")
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"split-error-{args.tag}")
    with open(base + ".md", "w") as f:
        f.write("\n".join(L) + "\n")
    with open(base + ".json", "w") as f:
        json.dump({"split": sta["split"], "pids": pids, "rows": rows}, f, indent=1)
    print("\n".join(L))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
