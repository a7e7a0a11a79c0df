#!/usr/bin/env python3
"""Turn the lab's guest outputs (lab/build/run-<kernel>/out) into lab/results/ and tests/data/lab-*.

Per kernel and workload: throughput (TCG) without and with mmlockd, and for each source mmlockd ran
on (a `perf` run with --source perf and a `bpf` run with --source bpf, the same collectors, the
workload run again for each): mmlockd's fault outcomes and fallbacks for the workload process (from
its SQLite database), the kernel's counters over the workload's life (/proc/vmstat deltas read by
the workload itself, its getrusage() fault counts), mmap_lock contentions (mmlockd's, and the
kernel's own count from a tracefs hist trigger on lock:contention_begin keyed by lock address), and
the error of each mmlockd outcome against the kernel counter it should match, perf and bpf rows
next to each other. Also re-makes the seeds' two tables from the bare runs.
Guest outputs of one run: <workload>.<source>.{out,db,log,vmstat_before,vmstat_after,hist_*,
status.json}; an earlier layout's single <workload>.mmlockd.* run (perf) is read as source perf.
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

OUTCOMES = ["faults", "faults_vma", "faults_vma_retry", "faults_mmap_retry", "faults_mmap_abort",
            "faults_mmap_unknown", "faults_mmap_lock_retries", "faults_mmap_lock_wait_ns",
            "mmap_lock_read", "mmap_lock_write", "mmap_lock_waits", "mmap_lock_wait_ns",
            "mmap_lock_contended", "mmap_lock_by_fault", "mmap_lock_by_fault_other",
            "fallback_locks", "fallback_lock_waits"]
SOURCES = ["perf", "bpf"]
VM = ["pgfault", "pgmajfault", "vma_lock_success", "vma_lock_abort", "vma_lock_retry",
      "vma_lock_miss", "pswpin", "pswpout"]


def kv(line):
    return {k: v for k, v in (t.split("=", 1) for t in line.split()[1:] if "=" in t)}


def parse_out(path):
    """labload's output: result, params, vmstat_whole, vmstat_measure lines."""
    d = {}
    if not os.path.exists(path):
        return d
    for line in open(path, errors="replace"):
        for tag in ("result:", "params:", "vmstat_whole:", "vmstat_measure:"):
            if line.startswith(tag):
                d[tag[:-1]] = kv(line)
    return d


def parse_vmstat(path):
    d = {}
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                d[k] = int(v)
    return d


def vm_delta(before, after):
    a, b = parse_vmstat(before), parse_vmstat(after)
    return {k: b.get(k, 0) - a.get(k, 0) for k in VM}


HIST_RE = re.compile(r"\{\s*(.*?)\s*\}\s*hitcount:\s*(\d+)")


def parse_hist(path):
    rows = []
    if not os.path.exists(path):
        return rows
    for line in open(path):
        m = HIST_RE.search(line)
        if not m:
            continue
        keys = {}
        for part in m.group(1).split(","):
            k, _, v = part.partition(":")
            keys[k.strip()] = v.strip()
        rows.append((keys, int(m.group(2))))
    return rows


def kernel_mmap_contention(prefix):
    """Contentions on the workload's mmap_lock as the kernel's own hist trigger counted them.

    The workload's mm is the mm with the most mmap_lock acquisitions in the run (its writer and
    fault threads dominate); its mmap_lock is the rwsem (contention flags READ=2 or WRITE=4)
    whose address lies inside that mm_struct (lock_addr - mm < 2 KiB)."""
    mms = parse_hist(prefix + ".hist_mm")
    if not mms:
        return None, None
    mm = max(mms, key=lambda r: r[1])[0].get("mm")
    if mm is None:
        return None, None
    mm = int(mm, 16)
    total = 0
    offsets = set()
    for keys, hits in parse_hist(prefix + ".hist_contention"):
        try:
            addr = int(keys.get("lock_addr", "0"), 16)
            flags = int(keys.get("flags", "0"), 0)
        except ValueError:
            continue
        if 0 <= addr - mm < 2048 and flags & 6:
            total += hits
            offsets.add(addr - mm)
    return total, sorted(offsets)


def window_range(db, comm="labload"):
    """(first, last) ts_end of the windows compared with the kernel: from @comm's first window to
    the one after its last (see mmlockd_db()); first is 0 when @comm has no row."""
    first, last = db.execute("SELECT coalesce(min(ts_end), 0), coalesce(max(ts_end), 0) FROM "
                             "process_stats WHERE comm = ?", (comm,)).fetchone()
    last = db.execute("SELECT coalesce(min(ts_end), ?) FROM windows WHERE ts_end > ?",
                      (last, last)).fetchone()[0]
    return first, last


def mmlockd_db(path, comm="labload"):
    if not os.path.exists(path):
        return None
    db = sqlite3.connect(path)
    cols = [r[1] for r in db.execute("PRAGMA table_info(process_stats)")]
    sel = ", ".join(f"coalesce(sum({c}),0)" if c in cols else "0" for c in OUTCOMES)
    # The workload process by pid and start time, whatever it was called in a window: its first
    # window may hold the faults of the shell before exec (getrusage counts them too).
    row = db.execute(f"SELECT {sel}, count(DISTINCT pid) FROM process_stats WHERE (pid, start_time) IN "
                     "(SELECT pid, start_time FROM process_stats WHERE comm = ?)", (comm,)).fetchone()
    d = dict(zip(OUTCOMES + ["pids"], row))
    # All processes and the kernel over the same windows, from the workload's first window on: the
    # daemon's start-up (the BPF programs attach before the perf rings are mapped and touched, and
    # before the vmstat collector's first reading) stays out of both sides.
    # ... and up to its last window: the guest's wget of the API 2 s after the workload and the
    # daemon's final flush (the BPF source's last reading, not the vmstat collector's) stay out too.
    # One window more at the end, so that the workload's exit burst is inside on both sides
    # whichever window each side put it in; none at the start: the window before the workload's
    # first may be where the BPF source settles the processes that exited while the daemon
    # started (the guest's wget polling, unknown to the host then: up to 3 ticks late).
    first, last = window_range(db, comm)
    d["from_ts"], d["to_ts"] = first, last
    # Nameless entries (comm 'pid-N') are processes the BPF source settled after they exited
    # unknown to the host: those that ran while the daemon started (the guest's wget polling),
    # their counts delivered up to 3 ticks late, into the workload's first windows; they ran
    # before the range, so they stay out of it.
    row = db.execute(f"SELECT {sel} FROM process_stats WHERE ts_end BETWEEN ? AND ? AND "
                     "comm NOT GLOB 'pid-[0-9]*'", (first, last)).fetchone()
    d["all"] = dict(zip(OUTCOMES, row))
    d["faults_all_processes"] = d["all"]["faults"]
    # the other processes, by name (mmlockd itself, the shell): where their faults went
    d["others"] = {c: dict(zip(["faults", "vma", "mmap_retry", "mmap_abort", "unknown"], r)) for c, *r in
                   db.execute("SELECT comm, sum(faults), sum(faults_vma), sum(faults_mmap_retry), "
                              "sum(faults_mmap_abort), sum(faults_mmap_unknown) FROM process_stats "
                              "WHERE comm != ? AND ts_end BETWEEN ? AND ? AND comm NOT GLOB 'pid-[0-9]*' "
                              "GROUP BY comm ORDER BY 2 DESC "
                              "LIMIT 5", (comm, first, last))}
    ev = db.execute("SELECT event, sum(samples), sum(lost) FROM event_windows GROUP BY event").fetchall()
    d["events"] = {e: {"samples": s, "lost": l} for e, s, l in ev}
    d["lost_total"] = sum(l for _, _, l in ev)
    g = db.execute("SELECT family || ':' || name, sum(value) FROM global_windows JOIN windows w ON "
                   "w.id = window_id WHERE w.ts_end BETWEEN ? AND ? GROUP BY 1", (first, last)).fetchall()
    d["global"] = {k: v for k, v in g if "vma_lock" in k or "pgfault" in k or "pgmajfault" in k}
    # what the BPF source could not count (full maps, lost exits, unpaired events), when non-zero
    d["bpf_events"] = {n: v for n, v in db.execute(
        "SELECT name, sum(value) FROM global_windows WHERE family = 'bpf_events' GROUP BY 1") if v}
    return d


def lost_str(db):
    """Lost samples (perf ring overflow) per tracepoint, short names; '0' when none."""
    if not db:
        return ""
    parts = [f"{e.split(':')[-1].replace('mmap_lock_', '')}:{v['lost']}" for e, v in db["events"].items() if v["lost"]]
    return ", ".join(parts) if parts else "0"


def err(m, k):
    if k == 0:
        return "n/a" if m == 0 else "+inf"
    return f"{100.0 * (m - k) / k:+.1f}%"


def expected(kernel, vm):
    """What each mmlockd outcome should equal, from the kernel's counters (see lab/README.md)."""
    if kernel == "patched":
        # a retried fault counts vma_lock_retry, then vma_lock_success when the retry under the
        # VMA lock completes: vma_lock_success = vma + vma_retry
        return [("vma + vma_retry", ("faults_vma", "faults_vma_retry"), "vma_lock_success"),
                ("vma_retry + mmap_retry", ("faults_vma_retry", "faults_mmap_retry"), "vma_lock_retry"),
                ("mmap_abort", ("faults_mmap_abort",), "vma_lock_abort"),
                ("mmap_retry + mmap_abort + unknown", ("faults_mmap_retry", "faults_mmap_abort",
                                                       "faults_mmap_unknown"), None)]
    return [("vma", ("faults_vma",), "vma_lock_success"),
            ("mmap_retry", ("faults_mmap_retry",), "vma_lock_retry"),
            ("mmap_abort", ("faults_mmap_abort",), "vma_lock_abort"),
            ("mmap_retry + mmap_abort + unknown", ("faults_mmap_retry", "faults_mmap_abort",
                                                   "faults_mmap_unknown"), None)]


def parse_status(path):
    """Which source each collector ran on, from /api/v1/status: {name: (source, note)}."""
    try:
        st = json.load(open(path))
    except (OSError, ValueError):
        return {}
    return {c.get("name"): (c.get("source") or "", c.get("source_note") or "")
            for c in st.get("collectors", []) if c.get("state") != "disabled"}


def bpf_log_lines(path):
    """The daemon's lines about the BPF source (loaded, refused and why, fallbacks to perf)."""
    if not os.path.exists(path):
        return []
    return [l.strip() for l in open(path, errors="replace") if "BPF" in l][:6]


def run_files(p, src):
    """File prefix and database of one mmlockd run; the earlier layout had one perf run,
    <workload>.mmlockd.* with the database <workload>.db."""
    if src == "perf" and not os.path.exists(f"{p}.perf.out") and os.path.exists(f"{p}.mmlockd.out"):
        return f"{p}.mmlockd", f"{p}.db", f"{p}.status.json"
    return f"{p}.{src}", f"{p}.{src}.db", f"{p}.{src}.status.json"


def collect(build, kernels):
    data = {}
    for k in kernels:
        out = os.path.join(build, f"run-{k}", "out")
        if not os.path.isdir(out):
            print(f"results: no {out}, skipping {k}", file=sys.stderr)
            continue
        names = sorted({f.split(".")[0] for f in os.listdir(out) if f.endswith(".out")})
        reps_dirs = sorted(d for d in os.listdir(build) if d.startswith(f"run-{k}-r"))
        kd = {"env": open(os.path.join(out, "env.txt")).read() if os.path.exists(
            os.path.join(out, "env.txt")) else ""}
        bs = os.path.join(build, f"run-{k}", "boot_seconds")
        kd["boot_seconds"] = int(open(bs).read()) if os.path.exists(bs) else None
        sh = os.path.join(build, f"run-{k}", "mmlockd.sha256")
        kd["mmlockd_sha"] = open(sh).read().strip() if os.path.exists(sh) else "?"
        for n in names:
            p = os.path.join(out, n)
            w = {"bare": parse_out(p + ".bare.out"), "record": parse_out(p + ".record.out"), "runs": {}}
            for src in SOURCES:
                pre, dbf, stf = run_files(p, src)
                if not os.path.exists(pre + ".out"):
                    continue
                r = {"out": parse_out(pre + ".out"), "db": mmlockd_db(dbf),
                     "vmstat_run": vm_delta(pre + ".vmstat_before", pre + ".vmstat_after"),
                     "sources": parse_status(stf), "bpf_log": bpf_log_lines(pre + ".log")}
                r["kernel_mmap_contention"], r["mmap_lock_offsets"] = kernel_mmap_contention(pre)
                w["runs"][src] = r
            w["rec"] = p + ".rec" if os.path.exists(p + ".rec") else None
            # bare throughput of every boot of this kernel (rep 1 = this one, then run-K-rN)
            w["bare_reps"] = [f0(w["bare"].get("result", {}).get("reads_per_s"))]
            for rd in reps_dirs:
                r = parse_out(os.path.join(build, rd, "out", n + ".bare.out"))
                if r.get("result"):
                    w["bare_reps"].append(f0(r["result"].get("reads_per_s")))
            w["bare_median"] = median([x for x in w["bare_reps"] if x > 0])
            w["record_table"] = open(p + ".record.out", errors="replace").read() \
                if os.path.exists(p + ".record.out") else ""
            kd[n] = w
        data[k] = kd
    return data


def runs_of(data, names, kernels):
    """(kernel, workload, source, workload dict, run dict) in table order: perf and bpf together."""
    for n in names:
        for k in kernels:
            w = data.get(k, {}).get(n)
            if not w:
                continue
            for src in SOURCES:
                if src in w["runs"]:
                    yield k, n, src, w, w["runs"][src]


def on(run, collector):
    """The source a collector ran on in this run ('' when it was not enabled)."""
    return run["sources"].get(collector, ("", ""))[0] if run["sources"] else "perf"


def median(v):
    v = sorted(v)
    if not v:
        return 0.0
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def f0(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def workload_names(data):
    names = []
    for kd in data.values():
        for n in kd:
            if isinstance(kd[n], dict) and "bare" in kd[n] and n not in names:
                names.append(n)
    return sorted(names, key=lambda s: (s.split("-")[0], int(re.sub(r"\D", "", s) or 0)))


def cell(run, collector, v):
    """A count, or '-' when the collector that makes it did not run."""
    return v if on(run, collector) else "-"


def report(data, kernels):
    L = []
    L.append("# Kernel lab results: vanilla vs patched Linux 6.12 (RFC v4 port), mmlockd vs the kernel\n")
    L.append("Generated by `lab/results.py` from `lab/build/run-*/out` (`make lab`). Throughput is "
             "measured under **qemu TCG** (2 vCPUs, 2 GiB, no hardware virtualization): compare the "
             "two kernels with each other, never with hardware numbers. Counts are exact kernel "
             "counts. `labload` is `lab/workloads/labload.c`. Each workload runs once per source: "
             "`perf` = `mmlockd --source perf`, `bpf` = `mmlockd --source bpf`, the same `--collectors`; "
             "each run has its own kernel counters.\n")
    names = workload_names(data)
    # main table
    L.append("## Per kernel and workload\n")
    L.append("reads/s: the workload's random page reads per second in the measured phase "
             "(`bare`: without mmlockd; `+mmlockd`: with the daemon collecting). mmlockd columns: "
             "outcomes of the workload process's faults (its database, all windows; `-`: the `faults` "
             "collector did not run), `fallbacks` = its `fallback_locks` (the `fallbacks` collector). "
             "Kernel columns: `/proc/vmstat` deltas over the workload process's life (read by the "
             "workload itself), `faults(k)` = its getrusage minflt+majflt. `cont`: contentions on the "
             "workload's mmap_lock, mmlockd (`mmap_lock_contended`) / kernel (hist trigger on "
             "`lock:contention_begin`); `wait ms`: mmlockd's summed mmap_lock wait of the workload. "
             "`on`: the source each tracing collector ran on in that run (`/api/v1/status`).\n")
    L.append("| kernel | workload | source | reads/s bare (TCG, median of boots) | reads/s +mmlockd (TCG) | faults | faults(k) | majflt(k) | vma | vma_retry | mmap_retry | mmap_abort | unknown | fallbacks | k:success | k:retry | k:abort | k:miss | pgfault | pgmajfault | cont mmlockd/kernel | wait ms | lost | on |")
    L.append("|" + "---|" * 24)
    for k, n, src, w, r in runs_of(data, names, kernels):
        db = r["db"] or {}
        vm = r["out"].get("vmstat_whole", {})
        res = r["out"].get("result", {})
        fk = int(res.get("minflt", 0)) + int(res.get("majflt", 0))
        kc = r["kernel_mmap_contention"]
        reps = "/".join(f"{x:.0f}" for x in w["bare_reps"])
        srcs = " ".join(f"{c}:{v[0]}" for c, v in sorted(r["sources"].items())
                        if c in ("faults", "mmaplock", "fallbacks", "contention"))
        L.append(f"| {k} | {n} | {src} | {w['bare_median']:.0f} ({reps}) | "
                 f"{f0(res.get('reads_per_s')):.0f} | {db.get('faults', '')} | {fk} | {res.get('majflt', '')} | "
                 + " | ".join(str(cell(r, "faults", db.get(c, ""))) for c in (
                     "faults_vma", "faults_vma_retry", "faults_mmap_retry", "faults_mmap_abort",
                     "faults_mmap_unknown"))
                 + f" | {cell(r, 'fallbacks', db.get('fallback_locks', ''))} | "
                 f"{vm.get('vma_lock_success', '')} | "
                 f"{vm.get('vma_lock_retry', '')} | {vm.get('vma_lock_abort', '')} | "
                 f"{vm.get('vma_lock_miss', '')} | {vm.get('pgfault', '')} | {vm.get('pgmajfault', '')} | "
                 f"{db.get('mmap_lock_contended', '')}/{'' if kc is None else kc} | "
                 f"{db.get('mmap_lock_wait_ns', 0) / 1e6:.1f} | {lost_str(db)} | {srcs} |")
    # bare runs: the kernel alone
    L.append("\n## The kernel's own counters without mmlockd (bare runs, rep 1)\n")
    L.append("`/proc/vmstat` deltas over the workload's life (read by labload itself), nothing else running "
             "but the guest's idle shell. `fallbacks` = F - S - A with F = labload's getrusage faults: "
             "faults that ended under mmap_lock. Vanilla: every major fault is a `vma_lock_retry` that "
             "falls back; patched: the same retries complete under the VMA lock.\n")
    L.append("| kernel | workload | faults (getrusage) | majflt | k:success | k:retry | k:abort | k:miss | fallbacks F-S-A | pgfault |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for n in names:
        for k in kernels:
            w = data.get(k, {}).get(n)
            if not w or not w["bare"].get("result"):
                continue
            r, v = w["bare"]["result"], {kk: int(x) for kk, x in w["bare"].get("vmstat_whole", {}).items()}
            F = int(r.get("minflt", 0)) + int(r.get("majflt", 0))
            L.append(f"| {k} | {n} | {F} | {r.get('majflt')} | {v.get('vma_lock_success')} | {v.get('vma_lock_retry')} | "
                     f"{v.get('vma_lock_abort')} | {v.get('vma_lock_miss')} | "
                     f"{F - v.get('vma_lock_success', 0) - v.get('vma_lock_abort', 0)} | {v.get('pgfault')} |")
    # errors
    L.append("\n## Error of each mmlockd outcome against the kernel's counter\n")
    L.append("All processes, summed over mmlockd's windows from labload's first to the one after its "
             "last, against the `/proc/vmstat` deltas of the same windows (mmlockd's `vmstat` "
             "collector stores them in `global_windows`), so neither side misses a process. Window edges "
             "are not exact: a short-lived process's counts reach a window when its exit is settled "
             "(BPF: up to 3 ticks later; perf: when its records are read), the vmstat reading at the close, "
             "so a burst near the range's ends (labload's exec and thread start) can sit inside on one "
             "side only: a few hundred faults, which under a slow TCG run is several percent. With F = faults (page_fault_user; equal to getrusage per process, first column), "
             "S/R/A = `vma_lock_success/retry/abort`, every user fault either completes under the VMA lock "
             "(counted once in S, retried or not) or falls back to mmap_lock, so the kernel's numbers for "
             "each outcome are: `vma + vma_retry` = S; fallbacks after a retry (`mmap_retry`) = F - S - A; "
             "retries completed under the VMA lock (`vma_retry`, patched only) = R - (F - S - A); "
             "`mmap_abort` = A. `unknown` should be 0 (the kernel knows every fallback's reason). "
             "Last column: labload alone, faults that the kernel retried (`majflt`: with MADV_RANDOM each "
             "major filemap fault drops the lock for its read and retries) vs mmlockd's retried outcomes.\n")
    L.append("`faults all vs k:pgfault`: page_fault_user of every process against the kernel's "
             "`pgfault`, which also counts faults taken in kernel mode (`copy_to_user()`) and by "
             "`get_user_pages()`. `fallbacks`: `fallback_locks` of every process (the `fallbacks` "
             "collector: read acquisitions in `lock_mm_and_find_vma()`) against F - S - A; kernel-mode "
             "faults take that path too (x86 sends them straight to `mmap_lock`) and a fault retried "
             "under `mmap_lock` takes it twice, so it may exceed F - S - A by those. `cont`: labload's "
             "`mmap_lock_contended` vs the kernel's hist trigger. `-`: the collector did not run. "
             "Rows `perf` and `bpf` are two runs of the same workload, each against its own kernel "
             "counters.\n")
    L.append("| kernel | workload | source | faults vs getrusage (labload) | faults all vs k:pgfault | "
             "fallbacks vs F-S-A | vma+vma_retry vs S | vma_retry vs R-(F-S-A) | mmap_retry vs F-S-A | "
             "mmap_abort vs A | unknown | labload: vma_retry+mmap_retry vs majflt | cont vs hist |")
    L.append("|" + "---|" * 13)
    for k, n, src, w, r in runs_of(data, names, kernels):
        if not r["db"]:
            continue
        db, a, g = r["db"], r["db"]["all"], r["db"]["global"]
        res = r["out"].get("result", {})
        fk = int(res.get("minflt", 0)) + int(res.get("majflt", 0))
        F = a["faults"]
        S, R, A = (g.get("vmstat:vma_lock_" + x, 0) for x in ("success", "retry", "abort"))
        pg = g.get("vmstat:pgfault", 0)
        fb = F - S - A
        rv = R - fb
        mret = db["faults_vma_retry"] + db["faults_mmap_retry"]
        mj = int(res.get("majflt", 0))
        kc = r["kernel_mmap_contention"]

        def vs(collector, m, kern):
            return f"{m} vs {kern} ({err(m, kern)})" if on(r, collector) else "-"

        retried = "n/a (swap-ins: see note)" if not n.startswith("filemap") else \
            vs("faults", mret, mj)
        unknown = (f"{a['faults_mmap_unknown']} ({100.0 * a['faults_mmap_unknown'] / max(F, 1):.1f}% of F)"
                   if on(r, "faults") else "-")
        L.append(f"| {k} | {n} | {src} | {db['faults']} vs {fk} ({err(db['faults'], fk)}) | "
                 f"{F} vs {pg} ({err(F, pg)}) | {vs('fallbacks', a['fallback_locks'], fb)} | "
                 f"{vs('faults', a['faults_vma'] + a['faults_vma_retry'], S)} | "
                 f"{vs('faults', a['faults_vma_retry'], rv)} | {vs('faults', a['faults_mmap_retry'], fb)} | "
                 f"{vs('faults', a['faults_mmap_abort'], A)} | {unknown} | {retried} | "
                 f"{vs('mmaplock', db['mmap_lock_contended'], kc or 0)} |")
    # all processes vs the kernel over exactly mmlockd's windows
    L.append("\n## All processes over mmlockd's windows vs the kernel's counters over the same windows\n")
    L.append("mmlockd's `vmstat` collector stores the `/proc/vmstat` deltas of each window next to the "
             "per-process rows (`global_windows`), so the sum over every process and every window can be "
             "checked against the kernel without the workload/other split. `others`: the processes "
             "other than labload with most faults (faults/vma/mmap_retry/mmap_abort/unknown).\n")
    L.append("| kernel | workload | source | faults all | vma | vma_retry | mmap_retry | mmap_abort | unknown | "
             "fallbacks | k:pgfault | k:success | k:retry | k:abort | others |")
    L.append("|" + "---|" * 15)
    for k, n, src, w, r in runs_of(data, names, kernels):
        if not r["db"]:
            continue
        a, g = r["db"]["all"], r["db"]["global"]
        oth = "; ".join(f"{c}: {o['faults']}/{o['vma']}/{o['mmap_retry']}/{o['mmap_abort']}/{o['unknown']}"
                        for c, o in r["db"]["others"].items())
        L.append(f"| {k} | {n} | {src} | {a['faults']} | {a['faults_vma']} | {a['faults_vma_retry']} | "
                 f"{a['faults_mmap_retry']} | {a['faults_mmap_abort']} | {a['faults_mmap_unknown']} | "
                 f"{a['fallback_locks']} | "
                 f"{g.get('vmstat:pgfault', '')} | {g.get('vmstat:vma_lock_success', '')} | "
                 f"{g.get('vmstat:vma_lock_retry', '')} | {g.get('vmstat:vma_lock_abort', '')} | {oth} |")
    # seed tables
    L.append("\n## The seeds' tables, re-made (bare runs, TCG)\n")
    fm = [n for n in names if n.startswith("filemap")]
    sw = [n for n in names if n.startswith("swap")]

    def thr(k, n):
        return f0(data.get(k, {}).get(n, {}).get("bare_median"))

    def param(n, key):
        return data['vanilla'][n]['bare'].get('params', {}).get(key, n)

    def change(v, p):
        return ('%+.1f%%' % (100 * (p - v) / v)) if v else 'n/a'

    def throughput(ns, head, key):
        L.append(f"| {head} | Vanilla | Patched | Improvement |")
        L.append("|---|---|---|---|")
        for n in ns:
            v, p = thr("vanilla", n), thr("patched", n)
            L.append(f"| {param(n, key)} | {v:.1f} /s | {p:.1f} /s | {change(v, p)} |")

    def contention(k, n):
        runs = data[k][n]["runs"]
        ks = [runs[x]["kernel_mmap_contention"] or 0 for x in SOURCES if x in runs]
        txt = " / ".join(f"{runs[x]['kernel_mmap_contention'] or 0:,} "
                         f"({(runs[x]['db'] or {}).get('mmap_lock_contended', 0):,})"
                         for x in SOURCES if x in runs)
        return (ks[0] if ks else 0), txt

    def contention_table():
        L.append("\nmmap_lock contention count (lower is better; kernel hist trigger on "
                 "`lock:contention_begin` for the workload's mmap_lock during each +mmlockd run, "
                 "perf run / bpf run; mmlockd's `mmap_lock_contended` of that run in brackets):\n")
        L.append("| Threads | Vanilla | Patched | Reduction |")
        L.append("|---|---|---|---|")
        for n in fm:
            v, vt = contention("vanilla", n)
            p, pt = contention("patched", n)
            L.append(f"| {param(n, 'threads')} | {vt} | {pt} | {change(v, p)} |")

    def pressure_table():
        L.append("\nThroughput under increasing writer pressure (relative to 0 writers):\n")
        L.append("| Kernel | " + " | ".join(
            f"{param(n, 'writers')} mmap writers" for n in sw) + " |")
        L.append("|---|" + "---|" * len(sw))
        for k in ("vanilla", "patched"):
            base = thr(k, sw[0])
            cells = []
            for i, n in enumerate(sw):
                t = thr(k, n)
                cells.append(f"{t:.1f} /s" if i == 0 or not base else f"{t:.1f} /s ({100 * (t - base) / base:+.1f}%)")
            L.append(f"| {k.capitalize()} | " + " | ".join(cells) + " |")

    # Each seed: its runs, what it was and how it is scaled here, its throughput table (by the
    # workload parameter it varies), then its own second table.
    seeds = [
        (fm, "Seed 001 (filemap faults under memcg pressure with parallel munmap; seed: 40/60/80 "
             "threads on 20 cores; here 4/8/16 reader threads and one mmap/munmap thread on 2 "
             "TCG vCPUs, 64 MiB file, 16 MiB memcg). Throughput (reads/s, higher is better):\n",
         "Threads", "threads", contention_table),
        (sw, "\nSeed 000 (swap-in under memcg pressure with mmap writer threads; seed: 12 readers, "
             "128 MB, 0/2/4 writers; here 4 readers, 64 MiB in a 24 MiB memcg, swap on a virtio "
             "disk, page-cluster 0). Throughput at the same writer pressure (reads/s):\n",
         "mmap writers", "writers", pressure_table),
    ]
    for ns, intro, head, key, more in seeds:
        if ns and all(k in data for k in ("vanilla", "patched")):
            L.append(intro)
            throughput(ns, head, key)
            more()
    # mmlockd run overhead and lost events
    # which source each collector ran on, and what the daemon said about the BPF source
    L.append("\n## Sources: where each collector ran\n")
    L.append("From `/api/v1/status` of each run (the first workload; the others agree unless listed) "
             "and the daemon's log lines about BPF.\n")
    L.append("| kernel | run | collector: source (note) | BPF log | bpf_events (all workloads) |")
    L.append("|---|---|---|---|---|")
    for k in kernels:
        for src in SOURCES:
            seen, ev = {}, {}
            for n in names:
                r = data.get(k, {}).get(n, {}).get("runs", {}).get(src)
                if not r:
                    continue
                key = json.dumps(sorted(r["sources"].items()))
                seen.setdefault(key, (n, r))
                for e, v in ((r["db"] or {}).get("bpf_events") or {}).items():
                    ev[e] = ev.get(e, 0) + v
            for key, (n, r) in seen.items():
                cols = "; ".join(f"{c}: {v[0]}" + (f" ({v[1]})" if v[1] else "")
                                 for c, v in sorted(r["sources"].items()) if v[0])
                logs = " / ".join(l.replace("|", "\\|") for l in r["bpf_log"][:3])
                evs = ", ".join(f"{e}={v}" for e, v in sorted(ev.items()))
                L.append(f"| {k} | {src}{'' if len(seen) == 1 else ' (' + n + ')'} | {cols} | {logs} | {evs} |")
    L.append("\n## Environment\n")
    for k in kernels:
        if k in data:
            L.append(f"### {k}\n\n```\n{data[k]['env'].strip()}\nmmlockd binary sha256: {data[k]['mmlockd_sha']}\nboot+runs: {data[k]['boot_seconds']} s wall\n```\n")
    return "\n".join(L) + "\n"


def write_testdata(data, kernels, testdata, mmlockd):
    os.makedirs(testdata, exist_ok=True)
    made = []
    for k in kernels:
        for n, w in data.get(k, {}).items():
            if not isinstance(w, dict) or not w.get("rec"):
                continue
            res = w["record"].get("result", {})
            vm = w["record"].get("vmstat_whole", {})
            if not res or not vm:
                continue
            size = os.path.getsize(w["rec"])
            base = os.path.join(testdata, f"lab-{k}-{n}")
            # recordings are committed xz-compressed; the replay test decompresses them
            with open(w["rec"], "rb") as src, open(base + ".rec.xz", "wb") as dst:
                subprocess.run(["xz", "-9", "-T1", "-c"], stdin=src, stdout=dst, check=True)
            exp = [f"# expectations for lab-{k}-{n}.rec.xz: the kernel's counters of that run",
                   f"# (labload's getrusage and its /proc/vmstat deltas from its start to its end,",
                   f"# CONFIG_PER_VMA_LOCK_STATS), recorded raw size {size} bytes",
                   f"kernel={k}", f"workload={n}", f"mode={res.get('mode')}",
                   f"rusage_faults={int(res.get('minflt', 0)) + int(res.get('majflt', 0))}",
                   f"majflt={res.get('majflt')}"]
            exp += [f"k_{key}={val}" for key, val in vm.items()]
            open(base + ".expect", "w").write("\n".join(exp) + "\n")
            made.append((base + ".rec.xz", os.path.getsize(base + ".rec.xz")))
    return made


def quote_into_readme(readme, md):
    """Rewrite the block between the results markers of lab/README.md with tables from md."""
    if not os.path.exists(readme):
        return
    s = open(readme).read()
    b, e = "<!-- results:begin (lab/results.py rewrites this block) -->", "<!-- results:end -->"
    if b not in s or e not in s:
        return

    def section(title):
        i = md.index(title)
        j = md.find("\n## ", i + 5)
        return md[i:j if j > 0 else None]

    def tables(sec):
        return "\n".join(l for l in sec.splitlines() if l.startswith("|"))

    rows = [l.split("|")[1:-1] for l in tables(section("## Per kernel and workload")).splitlines()]
    hdr = [c.strip() for c in rows[0]]
    want = ["kernel", "workload", "source", "reads/s bare (TCG, median of boots)", "faults", "majflt(k)",
            "vma", "vma_retry", "mmap_retry", "mmap_abort", "unknown", "fallbacks", "k:success",
            "k:retry", "k:abort", "k:miss", "cont mmlockd/kernel", "wait ms", "lost"]
    idx = [hdr.index(w) for w in want]
    out = ["| " + " | ".join(want).replace("reads/s bare (TCG, median of boots)", "reads/s (TCG, median (boots))") + " |",
           "|" + "---|" * len(want)]
    out += ["| " + " | ".join(r[i].strip() for i in idx) + " |" for r in rows[2:]]
    seeds = section("## The seeds' tables").split("\n", 1)[1].strip()
    block = f"""### Per kernel and workload (+mmlockd runs, `perf` = `--source perf`, `bpf` = `--source bpf`; `k:` = `/proc/vmstat` over labload's life, system-wide)

{chr(10).join(out)}

`fallbacks`: labload's `fallback_locks`. `cont`: contentions on labload's `mmap_lock`, mmlockd / the
kernel's hist trigger. `wait ms`: mmlockd's summed `mmap_lock` wait of labload. `lost`: samples
mmlockd lost (ring overflow). `-`: the collector did not run. The `k:` columns include mmlockd's own
faults (see below), which is why `k:success`/`k:retry` exceed labload's `faults`.

### The kernel alone (bare runs, no mmlockd): the series does what it says

{tables(section("## The kernel's own counters without mmlockd"))}

### Error of each mmlockd outcome against the kernel's counter

All processes over mmlockd's windows against `/proc/vmstat` over the same windows; F = faults,
S/R/A = `vma_lock_success/retry/abort` (see `results/README.md` for the derivation).

{tables(section("## Error of each mmlockd outcome"))}

### The seeds' two tables, re-made

{seeds}
"""
    i, j = s.index(b) + len(b), s.index(e)
    open(readme, "w").write(s[:i] + "\n" + block + s[j:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--mmlockd", required=True)
    ap.add_argument("--kernels", nargs="+", default=["vanilla", "patched"])
    a = ap.parse_args()
    data = collect(a.build, a.kernels)
    if not data:
        print("results: nothing to report", file=sys.stderr)
        return 1
    os.makedirs(a.results, exist_ok=True)
    md = report(data, a.kernels)
    open(os.path.join(a.results, "README.md"), "w").write(md)
    # the raw numbers, small, for later analysis
    slim = {}
    for k, kd in data.items():
        slim[k] = {"boot_seconds": kd.get("boot_seconds")}
        for n, w in kd.items():
            if isinstance(w, dict) and "bare" in w:
                slim[k][n] = {kk: w[kk] for kk in ("bare", "bare_reps", "bare_median", "record", "runs")}
                # keep the record run's table (mmlockd record prints it) next to the data
                if w.get("record_table"):
                    open(os.path.join(a.results, f"{k}-{n}.record.txt"), "w").write(w["record_table"])
    json.dump(slim, open(os.path.join(a.results, "results.json"), "w"), indent=1, sort_keys=True)
    for k in data:
        out = os.path.join(a.build, f"run-{k}", "out")
        for f in sorted(os.listdir(out)):
            if f.endswith(".out") or f.endswith(".log") or f == "env.txt":
                dst = os.path.join(a.results, "logs", k)
                os.makedirs(dst, exist_ok=True)
                shutil.copy(os.path.join(out, f), dst)
        con = os.path.join(a.build, f"run-{k}", "console.log")
        if os.path.exists(con):
            shutil.copy(con, os.path.join(a.results, "logs", k, "console.log"))
    made = write_testdata(data, a.kernels, a.testdata, a.mmlockd)
    quote_into_readme(os.path.join(os.path.dirname(os.path.abspath(__file__)), "README.md"), md)
    for f, s in made:
        print(f"results: {f} ({s} bytes)")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
