#!/usr/bin/env python3
"""The overhead benchmark: what mmlockd costs the workloads it watches, beside the alternatives.

The default suite, "paired" (bench/paired.py, whose docstring tells the method; `make bench`,
bench/results/main.md), runs each workload once, continuously, and switches the tracing under
test on and off around short windows of it, many times: each on window is compared with the
untraced windows beside it, so that the host's drift, which moves whole runs by 10-15% here,
cancels. --quick is its form for a change: mix, the controls and the defaults on both sources,
fewer pairs (paired-quick.md).

The other suites are the per-round view, main (the throughput view: throughput.md), split,
breakdown and filters. For each workload (bench_swapin, bench_filemap, bench_mix) they run every
configuration of the chosen suite in interleaved rounds (the order rotates each round, so no configuration always runs
first or last), --reps rounds, and reports medians:

  none             no tracing
  none_again       no tracing, a second run in the same round (the "split" suite): its ratio
                   to none is the noise floor, what two untraced runs differ by on this machine
  perf_stat        `perf stat -a` counting the tracepoints mmlockd opens
  perf_stat_bpf    `perf stat -a` counting every event mmlockd_all_bpf hooks (bpf_hooks(): those
                   and page_fault_kernel, sched_switch, sched_process_exit): the counting
                   baseline of the BPF source
  mmlockd_all_bpf_latency  the same with --fault-latency on (the minor-faults and major-faults
                   software events on every CPU too: what sampling fault latency costs)
  mmlockd_default  mmlockd as shipped (no --collectors flag; --source auto: the BPF source
                   where it loads; the fault split in bursts of its default split_duty)
  mmlockd_all      mmlockd --collectors all --source perf (every collector on the perf rings,
                   callchains where they ask)
  mmlockd_all_bpf  mmlockd --collectors all --source bpf (mmaplock, faults, fallbacks and
                   contention counted in the kernel; totals and vmstat read /proc)
  perf_record      `perf record -a` of the same tracepoints, kernel callchains where mmlockd
                   takes them
  perf_lock        `perf lock record -a`
The "split" suite measures the fault split in the default: none, none_again, the default without
the split (mmlockd_nosplit: --split-duty 0, the default before it had one), the default (bursts
of its default duty) and mmlockd_split5 (--split-duty 5%), to choose the duty by its cost;
mmlockd_default_bpf and mmlockd_nosplit_bpf (--configs) are the default and split-off with
--source bpf (fallbacks, and the bursts, in the kernel), mmlockd_default_perf the default on the
perf rings.
Diagnostics (--configs only): perf_stat_mmaplock counts the 3 mmap_lock tracepoints (enabled,
nothing on them), perf_stat_mmaplock_switch those and sched:sched_switch; perf_stat_faults
counts the minor-faults and major-faults software events on every CPU and perf_stat_faults_off
holds them open and disabled (what the split's completion events cost between bursts); the
mmlockd_fallbacks_bpf_noswitch / _nostart / _noacquired / _switchonly configurations run the
fallbacks collector on BPF with some of its programs not loaded (--bpf-skip), to see what
each program costs a workload (their counts are wrong), and mmlockd_fallbacks_bpf_nosplit runs
it with --split-duty 0, mmlockd_fallbacks_bpf_duty10 with --split-duty 10% (five times the
default's bursts: what scales with the duty and what does not), mmlockd_fallbacks_bpf_keep with
the split's programs held attached between bursts (--bpf-keep-attached on: what attaching
and detaching them costs), and mmlockd_fallbacks_bpf_done with the fault-completion software
events opened for the bursts too (--fault-latency on), as the default had them
before 2026-12-02 (then measured the other way round, as
mmlockd_fallbacks_bpf_nodone: on_fault_done not loaded).
The "breakdown" suite runs mmlockd with one collector at a time and `perf record` of one group of
tracepoints at a time, to say which collector, tracepoint or callchain costs what.

Ratios are per round (a configuration's throughput over the same round's none), their median
shown with a 95% distribution-free interval for it (order statistics of the rounds' ratios, from
6 rounds up): a cost smaller than none_again's distance from 1 or inside the interval is not
told apart from noise by the run. Each configuration's spread is half the range of its rounds'
throughput over their median ("±x%"); the untraced rounds' spread (none's, or none_again's if
larger) is the noise, and the verdict column calls a cost ("cost 4.1% [1.2-7.9]", the interval
as costs) or a speed-up only when the interval excludes 1 and the median ratio is further from 1
than that noise, else "not told apart from untraced (±x% noise)"; below 6 rounds it makes no
call. A line per workload says whether the untraced rounds met the repeatability target
(every round within ±3% of their median) and which round was furthest off. --noise-floor adds
none_again to any suite.

With --bpf-stats it sets kernel.bpf_stats_enabled for the run (restored at exit) and reads, at
the measured phase's start and end, run_time_ns and run_cnt of every BPF program mmlockd holds
(/proc/PID/fdinfo): what the in-kernel programs cost the workloads in their own time, which the
throughput ratio cannot resolve below its noise floor. The statistics time each run between two
sched_clock() reads, which a program that does nothing shows too (~76 ns a run on the development
VM, more than some of mmlockd's programs take): so --bpf-stats adds the configuration bpf_floor
(bench_bpf_floor: empty programs, one tp_btf and one classic tracepoint program, on mmap_lock
tracepoints the workloads hit) and the report gives each program's time also net of that floor
(ns/run minus the floor's, the share of the workload's CPU from those). The floor does not count
what the kernel spends reaching a program (the tracepoint's call, the BPF dispatch), which the
program's own time never included. The configuration bpf_floor_all (bench_bpf_floor --all) is
that other part: an empty program on every hook of `--collectors all --source bpf` (its
tracepoints), so its ratio is the throughput floor of any in-kernel design counting on those
hooks, whatever its programs do; bpf_floor_all_latency (--all --latency) adds its
fault-completion software events (--fault-latency on); bpf_floor_all_storage (--all --storage)
has each of those programs find the thread's task storage and write one counter there: the
floor of a design that keeps per-thread state on those hooks, as mmlockd's programs do.

Per run it records the workload's throughput (rounds/s in its measured phase), the tracer's CPU
time (/proc/PID/stat), events consumed and lost (mmlockd's /api/v1/status; perf's own counts),
peak RSS (VmHWM), the growth of what the tracer writes (database + WAL, or perf.data) per hour,
the faults mmlockd attributed to the workload's pid against the kernel's own count (getrusage),
and the noise: CPU used by other processes during the measured phase and other processes holding
perf events (other tracers slow every configuration, including "none").

The footprint (after the workload rounds, or alone with --only footprint) is what mmlockd
itself holds and spends on its defaults, with the daemon's own default windows (10 s: not the
--interval 1 of the rounds, since what a window holds and how often /proc is scanned is the
footprint):
  idle         mmlockd_default and mmlockd_default_perf (the two sources of the default), first
               with nothing started (baseline), then with --idle-procs (10 000) processes that
               only sleep, once the daemon tracks them and one more window closed:
               VmRSS (highest of one reading a second) and VmHWM of the daemon, and its CPU
               (utime + stime) over --idle-seconds (30 s, a multiple of the window: the /proc
               scan runs once a window), against the target at 10 000 processes: RSS <= 40 MiB,
               <= 1% of a core. The difference to the baseline is the cost per process.
  churn        waves of --churn-procs short-lived processes of --churn-threads threads
               (bench_churn) under mmlockd_default (--source auto: BPF where it loads),
               mmlockd_default_perf, mmlockd_all and mmlockd_all_bpf: the peak RSS of each
               wave (VmHWM, reset before it through /proc/PID/clear_refs), RSS once
               CHURN_WINDOWS more windows were stored (the wave's processes written and
               dropped, and the heap trimmed), processes_tracked, and the wave's processes
               that got rows in the database, and rows with faults (minflt + majflt > 0),
               against those forked. Targets: the defaults peak <= 64 MiB and RSS after
               <= 40 MiB, all collectors peak <= 96 MiB, and on every
               configuration no growth of RSS after from wave 2 to the last (CHURN_GROWTH_KIB).
--only footprint writes footprint.md and footprint.json instead of the suite's files. On its
defaults it takes ~18 min on the 2-core development VM: ~4 min idle (each of the two
configurations ~30 s to start 10 000 processes, a window or two, twice 30 s), ~14 min churn
(20 waves; one of 2000 processes took 4-5 s, so ~25 s for 10 000, plus ~25 s for three windows).
For a developer's run, ~8 min:
  python3 bench/run.py --only footprint --churn-procs 2000 --churn-waves 3
(--idle-procs 2000 too: ~7 min, but then the idle rows are not at the target's 10 000).

Everything it creates lives in /var/tmp/mmlockd-bench.PID/ and in a cgroup and a swap file named
after its pid; all of it is removed at exit, on Ctrl-C and on SIGTERM. Children run in their own
sessions and are stopped by pid only. Standard library only. Run as root.
"""

import argparse
import datetime
import functools
import glob
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLK_TCK = os.sysconf("SC_CLK_TCK")
BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"
TRACEFS = "/sys/kernel/tracing"

# Workloads: binary and default arguments (each binary's --help explains them).
WORKLOADS = {
    "swapin": ("bench_swapin", []),
    "filemap": ("bench_filemap", []),
    "mix": ("bench_mix", []),
}

SUITES = {
    "main": ["none", "perf_stat", "perf_stat_bpf", "mmlockd_default", "mmlockd_all",
             "mmlockd_all_bpf", "mmlockd_all_bpf_latency",
             "perf_record", "perf_lock"],
    # The fault split in the default: its cost against the default without it.
    "split": ["none", "none_again", "mmlockd_nosplit", "mmlockd_default", "mmlockd_split5"],
    # mmlockd_<collector> for every collector the binary has is inserted after "none".
    "breakdown": [
        "none",
        "mmlockd_all",
        "perf_record_pf",
        "perf_record_mmaplock",
        "perf_record_acq_cc",
        "perf_record_lock",
    ],
    # Cheaper ways to take what classification needs, measured with perf (tracepoint filters).
    "filters": [
        "none",
        "perf_record_pf",
        "perf_record_pf_1in8",
        "perf_record_acq_cc",
        "perf_record_acq_cc_read",
    ],
}

# The default with another split duty (the "split" suite).
SPLIT_ARGS = {"mmlockd_nosplit": ["--split-duty", "0"], "mmlockd_split5": ["--split-duty", "5%"],
              # The same on the BPF source: fallbacks counted in the kernel, the bursts too.
              "mmlockd_default_bpf": ["--source", "bpf"],
              "mmlockd_default_perf": ["--source", "perf"],
              "mmlockd_nosplit_bpf": ["--split-duty", "0", "--source", "bpf"]}

# The footprint (run_idle, run_churn). Idle processes on both sources of the default (on
# --source auto the default runs its fallbacks on BPF where it loads); churn on the defaults and
# on all collectors, both sources.
IDLE_CONFIGS = ("mmlockd_default", "mmlockd_default_perf")
# mmlockd_default is --source auto: BPF where it loads, so the perf source is named.
CHURN_CONFIGS = ("mmlockd_default", "mmlockd_default_perf", "mmlockd_all", "mmlockd_all_bpf")
# Targets (issue "footprint"): at 10 000 idle processes on the defaults; per churn wave, by
# whether the configuration runs all collectors; RSS after a wave may not grow from wave 2 to
# the last by more than CHURN_GROWTH_KIB (the allocator's slack; a leak of even 100 bytes a
# process is 1 MiB a wave of 10 000).
IDLE_TARGET = {"procs": 10000, "rss_mib": 40, "cpu_pct": 1.0}
CHURN_TARGETS = {"default": {"peak_mib": 64, "after_mib": 40}, "all": {"peak_mib": 96}}
# Windows stored after a wave before its RSS after is read: the window with the wave's last
# exits, then two with (almost) none, at the second of which the daemon gives the heap the
# wave's rows freed back to the kernel (daemon/window.c, trim_after_churn); read after two,
# RSS after was that heap or not (3.3 or 16 MiB of heap, --collectors all on perf) by a race
# with the trim.
CHURN_WINDOWS = 3
CHURN_GROWTH_KIB = 2048

# mmlockd on BPF with one thing changed, as (collectors, programs not loaded, extra arguments). The fallbacks collector alone: with some of its programs not loaded
# (--bpf-skip), what each costs a workload (their counts are wrong; only throughput is read
# from them); _nosplit: with the split's bursts off (no program of theirs, no fault-completion
# perf events open); _keep: the split's programs held attached between bursts
# (--bpf-keep-attached on), to tell the switching's cost from theirs; _done: the bursts with
# the fault-completion events. And all collectors with fault latency sampled (the main suite).
BPF_CONFIGS = {
    "mmlockd_fallbacks_bpf_noswitch": ("fallbacks", ["on_switch"], []),
    "mmlockd_fallbacks_bpf_nostart": ("fallbacks", ["on_start"], []),
    "mmlockd_fallbacks_bpf_noacquired": ("fallbacks", ["on_acquired"], []),
    "mmlockd_fallbacks_bpf_switchonly": ("fallbacks", ["on_start", "on_acquired"], []),
    "mmlockd_fallbacks_bpf_nosplit": ("fallbacks", [], ["--split-duty", "0"]),
    "mmlockd_fallbacks_bpf_duty10": ("fallbacks", [], ["--split-duty", "10%"]),
    "mmlockd_fallbacks_bpf_keep": ("fallbacks", [], ["--bpf-keep-attached", "on"]),
    "mmlockd_fallbacks_bpf_done": ("fallbacks", [], ["--fault-latency", "on"]),
    "mmlockd_all_bpf_latency": ("all", [], ["--fault-latency", "on"]),
}

LABELS = {
    "none": "no tracing",
    "none_again": "no tracing (again: noise floor)",
    "bpf_floor": "empty BPF programs (bpf_stats' floor)",
    "bpf_floor_all": "empty BPF programs on every hook of all (bpf)",
    "bpf_floor_all_latency": "empty BPF programs on every hook of all (bpf) --fault-latency on",
    "bpf_floor_all_storage": "BPF programs on every hook of all (bpf) that only touch the thread's storage",
    "perf_stat": "perf stat -a (counting)",
    "perf_stat_bpf": "perf stat -a (counting all (bpf)'s hooks)",
    "perf_stat_mmaplock": "perf stat -a, the 3 mmap_lock tracepoints only",
    "perf_stat_mmaplock_switch": "perf stat -a, the 3 mmap_lock tracepoints + sched_switch",
    "perf_stat_faults": "perf stat -a, minor-faults + major-faults",
    "perf_stat_faults_off": "perf stat -a, minor-faults + major-faults open, disabled",
    "mmlockd_fallbacks_bpf_noswitch": "fallbacks on BPF without on_switch",
    "mmlockd_fallbacks_bpf_nostart": "fallbacks on BPF without on_start",
    "mmlockd_fallbacks_bpf_noacquired": "fallbacks on BPF without on_acquired",
    "mmlockd_fallbacks_bpf_switchonly": "fallbacks on BPF, on_switch alone",
    "mmlockd_fallbacks_bpf_nosplit": "fallbacks on BPF, --split-duty 0",
    "mmlockd_fallbacks_bpf_duty10": "fallbacks on BPF, --split-duty 10%",
    "mmlockd_fallbacks_bpf_keep": "fallbacks on BPF, the split's programs kept attached",
    "mmlockd_fallbacks_bpf_done": "fallbacks on BPF, bursts with completion events",
    "mmlockd_all_bpf_latency": "mmlockd all (bpf) --fault-latency on",
    "mmlockd_default": "mmlockd default",
    "mmlockd_nosplit": "mmlockd default, --split-duty 0",
    "mmlockd_split5": "mmlockd default, --split-duty 5%",
    "mmlockd_default_bpf": "mmlockd default, --source bpf",
    "mmlockd_default_perf": "mmlockd default, --source perf",
    "mmlockd_nosplit_bpf": "mmlockd default, --split-duty 0 --source bpf",
    "mmlockd_all": "mmlockd all (perf)",
    "mmlockd_all_bpf": "mmlockd all (bpf)",
    "perf_record": "perf record -a (same events)",
    "perf_lock": "perf lock record -a",
    "mmlockd_totals": "mmlockd --collectors totals",
    "mmlockd_vmstat": "mmlockd --collectors vmstat",
    "mmlockd_fallbacks": "mmlockd --collectors fallbacks --source perf",
    "mmlockd_mmaplock": "mmlockd --collectors mmaplock",
    "mmlockd_mmaplock_bpf": "mmlockd --collectors mmaplock --source bpf",
    "mmlockd_fallbacks_bpf": "mmlockd --collectors fallbacks --source bpf",
    "mmlockd_faults": "mmlockd --collectors faults",
    "mmlockd_contention": "mmlockd --collectors contention",
    "perf_record_pf": "perf record page_fault_user",
    "perf_record_mmaplock": "perf record 3 mmap_lock tps, no callchain",
    "perf_record_acq_cc": "perf record acquire_returned + kernel callchain",
    "perf_record_filemap": "perf record 2 filemap tps",
    "perf_record_lock": "perf record contention_begin/end, callchain on begin",
    "perf_record_pf_1in8": "perf record page_fault_user, filter !(address & 0x7000)",
    "perf_record_acq_cc_read": "perf record acquire_returned + callchain, filter write == 0",
}


class Interrupted(Exception):
    pass


class WorkloadFailed(Exception):
    pass


def untraced(config):
    return config in ("none", "none_again")


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- /proc helpers ---------------------------------------------------------------------------


def proc_cpu_s(pid):
    """utime + stime of process @pid (all its threads), seconds; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    except (OSError, IndexError, ValueError):
        return None


def proc_status_kb(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def live_processes():
    """Processes on the machine now (/proc's pid directories): what mmlockd should be tracking
    besides the benchmark's own, to tell its numbers from another user's processes."""
    return sum(1 for d in os.listdir("/proc") if d.isdigit())


def system_busy_s():
    """CPU seconds spent busy by the whole machine since boot (all CPUs)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / CLK_TCK


def perf_event_users(exclude):
    """{pid: comm} of processes, other than those in @exclude, holding perf event fds."""
    users = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in exclude:
            continue
        try:
            for fd in os.listdir(f"/proc/{d}/fd"):
                if os.readlink(f"/proc/{d}/fd/{fd}") == "anon_inode:[perf_event]":
                    with open(f"/proc/{d}/comm") as f:
                        users[int(d)] = f.read().strip()
                    break
        except OSError:
            continue
    return users


def bpf_prog_stats(pid):
    """{prog_id: (run_time_ns, run_cnt)} of the BPF programs process @pid holds, from its
    fdinfo (kernel.bpf_stats_enabled must be 1 for the counts to move). Links' fds name a
    prog_id too but carry no run_time_ns; a program held twice counts once."""
    out = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return out
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                kv = dict(line.split(":", 1) for line in f if ":" in line)
            if "prog_id" in kv and "run_time_ns" in kv:
                out[int(kv["prog_id"])] = (int(kv["run_time_ns"]), int(kv["run_cnt"]))
        except (OSError, ValueError):
            continue
    return out


def bpf_prog_names(ids):
    """{prog_id: name} from bpftool; missing ones as idN."""
    names = {}
    try:
        r = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                           timeout=30)
        for p in json.loads(r.stdout or "[]"):
            names[p["id"]] = p.get("name", f"id{p['id']}")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return {i: names.get(i, f"id{i}") for i in ids}


def db_bytes(path):
    """Logical size of an SQLite database, WAL included: (page_count - freelist) * page_size,
    read through a read-only connection (file sizes lag: the WAL is reused, not truncated)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        pc = con.execute("PRAGMA page_count").fetchone()[0]
        fl = con.execute("PRAGMA freelist_count").fetchone()[0]
        ps = con.execute("PRAGMA page_size").fetchone()[0]
        con.close()
        return (pc - fl) * ps
    except sqlite3.Error:
        return file_size(path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def file_size(*paths):
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
        except OSError:
            pass
    return total


def stop_process(p, sig=signal.SIGTERM, timeout=30):
    """Stops child @p (by pid only): @sig, then SIGKILL after @timeout seconds."""
    if p is None or p.poll() is not None:
        return
    try:
        p.send_signal(sig)
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"pid {p.pid} did not stop in {timeout} s: SIGKILL")
        p.kill()
        p.wait()


def reset_hwm(pid):
    """Resets VmHWM of process @pid to its RSS now ("5" to clear_refs, Linux >= 4.0), so that
    the next reading is the peak since: the peak of one wave, not of the daemon's life. False
    where the kernel refuses it (the peak then covers everything since the daemon started)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError as e:
        log(f"cannot reset VmHWM of {pid}: {e}")
        return False


# A shell that starts $1 children, each blocked reading the pipe on its stdin, says "ready" and
# waits for them. A dash child holds ~170 KiB and 2000 start in ~3 s, 10 000 in ~30 s (its job
# list grows); from Python, a fork took 16 ms and its child ~600 KiB, fork+exec of `sleep` as
# long (development VM, loaded). Reading the pipe rather than pause(): the children end on EOF,
# when the driver closes its end or dies in any way (SIGKILL too), so none can outlive the
# benchmark. An asynchronous command's stdin is /dev/null, hence the pipe as fd 3.
IDLE_SCRIPT = ('exec 3<&0; i=0; while [ "$i" -lt "$1" ]; do read -r x <&3 & i=$((i + 1)); done; '
               'echo ready; wait')


class IdleProcesses:
    """@n processes that only sleep (blocked in read(2)), for the footprint: what mmlockd keeps
    and spends per process it tracks that does nothing, the commonest process on a machine."""

    def __init__(self, bench, n):
        self.bench, self.n, self.proc, self.w = bench, n, None, None

    def start(self):
        shell = shutil.which("dash") or "/bin/sh"
        r, self.w = os.pipe()  # not inheritable: only the shell gets r, nobody else w
        try:
            self.proc = subprocess.Popen([shell, "-c", IDLE_SCRIPT, "bench_idle", str(self.n)],
                                         stdin=r, stdout=subprocess.PIPE, text=True,
                                         start_new_session=True)
        finally:
            os.close(r)
        self.bench.children.append(self.proc)
        self.bench.idle = self
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.stop()
            raise RuntimeError(f"{shell} did not start {self.n} idle processes "
                               f"(status {self.proc.returncode})")

    def stop(self):
        """EOF to every child, then the shell's wait returns; the children are gone when it
        has exited (it reaps them all). SIGKILL to the shell only if it hangs."""
        if self.w is not None:
            os.close(self.w)
            self.w = None
        if self.proc:
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                stop_process(self.proc, signal.SIGKILL)
            self.proc.stdout.close()
            if self.proc in self.bench.children:
                self.bench.children.remove(self.proc)
        self.bench.idle = None


# --- tracers --------------------------------------------------------------------------------


class Tracer:
    """Base: no tracing. Subclasses start a process and report what it consumed."""

    kind = "none"

    def __init__(self, bench, name):
        self.bench, self.name, self.proc = bench, name, None
        self.t_ready = None

    def start(self):
        self.t_ready = time.time()

    def pid(self):
        return self.proc.pid if self.proc else None

    def snapshot(self):
        """Counters now: cpu_s, samples, lost, taken (the time the counts refer to)."""
        return {"t": time.time(), "cpu_s": proc_cpu_s(self.pid()) if self.proc else None}

    def stop(self):
        return {}

    def check_alive(self):
        if self.proc and self.proc.poll() is not None:
            raise RuntimeError(f"{self.name} exited early with status {self.proc.returncode}; "
                               f"see {self.logpath}")


class BpfFloor(Tracer):
    """bench_bpf_floor: empty BPF programs held while the workload runs (--bpf-stats)."""

    kind = "bpf_floor"

    def __init__(self, bench, name, args=()):
        super().__init__(bench, name)
        self.logpath = os.path.join(bench.tmp, f"{name}.log")
        self.args = list(args)

    def start(self):
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen([self.bench.bpf_floor] + self.args, stdout=subprocess.PIPE,
                                     stderr=self.log, stdin=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        self.bench.children.append(self.proc)
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.wait()
            raise RuntimeError(f"bench_bpf_floor did not start (status {self.proc.returncode}); "
                               f"see {self.logpath}")
        self.t_ready = time.time()

    def stop(self):
        stop_process(self.proc, signal.SIGTERM)
        self.bench.children.remove(self.proc)
        self.log.close()
        return {}


class Mmlockd(Tracer):
    kind = "mmlockd"

    def __init__(self, bench, name, collectors, source=None, extra=(), env=None):
        super().__init__(bench, name)
        self.collectors = collectors
        self.env = dict(os.environ, **env) if env else None
        self.source = source
        self.extra = list(extra)
        d = bench.tmp
        self.db = os.path.join(d, f"{name}.db")
        self.logpath = os.path.join(d, f"{name}.log")
        self.port = None
        # The rounds' 1-second windows; the footprint sets None (the daemon's own default:
        # what a window holds is part of what it measures).
        self.interval = "1"

    def start(self):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(self.db + suffix):
                os.unlink(self.db + suffix)
        self.port = free_port()
        cmd = [self.bench.mmlockd, "--config", self.bench.empty_conf, "--db", self.db,
               "--listen", f"127.0.0.1:{self.port}"]
        if self.interval:
            cmd += ["--interval", self.interval]
        if self.collectors:
            cmd += ["--collectors", self.collectors]
        if self.source:
            cmd += ["--source", self.source]
        cmd += self.extra
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=self.env)
        self.bench.children.append(self.proc)
        deadline = time.time() + 30
        while True:
            self.check_alive()
            st = self.status()
            if st and all(c["state"] != "starting" for c in st["collectors"]):
                break
            if time.time() > deadline:
                raise RuntimeError(f"{self.name} not ready after 30 s; see {self.logpath}")
            time.sleep(0.2)
        # One published snapshot after start, so the first counts are not stale.
        time.sleep(1.1)
        self.status0 = self.status()
        self.collectors_state = [(c["name"], c["state"]) for c in self.status0["collectors"]]
        self.cpu0 = proc_cpu_s(self.proc.pid)
        self.db0 = db_bytes(self.db)
        self.t_ready = time.time()

    def status(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/status",
                                        timeout=5) as r:
                return json.load(r)
        except (OSError, ValueError):
            return None

    @staticmethod
    def counts(st):
        ev = [e for e in st["events"] if e.get("open")]
        return sum(e["samples"] for e in ev), sum(e["lost"] for e in ev)

    def snapshot(self):
        s = super().snapshot()
        st = self.status()
        if st:
            s["samples"], s["lost"] = self.counts(st)
            s["taken"] = st["taken"]
            s["processes_tracked"] = st.get("processes_tracked")
        return s

    def stop(self):
        # Let one more snapshot be published so it covers everything the workload did.
        time.sleep(1.2)
        st = self.status()
        cpu1 = proc_cpu_s(self.proc.pid)
        hwm = proc_status_kb(self.proc.pid, "VmHWM")
        t1 = time.time()
        stop_process(self.proc)
        self.bench.children.remove(self.proc)
        self.log.close()
        s0, l0 = self.counts(self.status0)
        s1, l1 = self.counts(st) if st else (s0, l0)
        dur = st["taken"] - self.status0["taken"] if st else t1 - self.t_ready
        db1 = db_bytes(self.db)
        return {
            "events": s1 - s0,
            "lost": l1 - l0,
            "events_per_s": (s1 - s0) / dur if dur > 0 else None,
            "cpu_s": cpu1 - self.cpu0 if cpu1 is not None else None,
            "peak_rss_kb": hwm,
            "data_bytes": db1 - self.db0,
            "data_per_hour": (db1 - self.db0) / (t1 - self.t_ready) * 3600,
            "collectors": self.collectors_state,
            "split": self.status0.get("split"),
            "per_event": {e["name"]: e["samples"] for e in st["events"]} if st else {},
            "per_event_lost": {e["name"]: e["lost"] for e in st["events"] if e["lost"]}
            if st else {},
            "processes_tracked": st.get("processes_tracked") if st else None,
        }

    def process_totals(self, pid):
        """Sums of the workload's rows in process_stats (after stop)."""
        cols = ["faults", "faults_vma", "faults_vma_retry", "faults_mmap_retry",
                "faults_mmap_abort", "faults_mmap_unknown", "mmap_lock_read", "mmap_lock_write",
                "minflt", "majflt", "fallback_locks", "fallback_lock_waits",
                "faults_mmap_fallback", "split_estimated", "split_faults_seen",
                "split_fallbacks_seen", "split_err"]
        try:
            con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
            row = con.execute(f"SELECT {', '.join(f'sum({c})' for c in cols)} "
                              "FROM process_stats WHERE pid = ?", (pid,)).fetchone()
            con.close()
        except sqlite3.Error as e:
            log(f"{self.name}: reading {self.db}: {e}")
            return None
        return {c: (v or 0) for c, v in zip(cols, row)}


class PerfTool(Tracer):
    """perf stat / perf record / perf lock record, system-wide, stopped with SIGINT."""

    def __init__(self, bench, name, kind, events=None, callchain=(), delay_ms=0):
        super().__init__(bench, name)
        self.kind = kind
        self.delay_ms = delay_ms
        self.events = events or []
        self.callchain = set(callchain)
        self.out = os.path.join(bench.tmp, f"{name}.out")
        self.logpath = os.path.join(bench.tmp, f"{name}.log")

    def command(self):
        if self.kind == "perf_stat":
            cmd = ["perf", "stat", "-a", "-x", ",", "-o", self.out]
            if self.delay_ms:
                cmd += ["-D", str(self.delay_ms)]
            for e in self.events:
                cmd += ["-e", e]
            return cmd
        if self.kind == "perf_lock":
            return ["perf", "lock", "record", "-a", "-o", self.out]
        cmd = ["perf", "record", "-a", "-q", "-o", self.out]
        for ef in self.events:
            e, _, filt = ef.partition("|")
            cmd += ["-e", f"{e}/call-graph=fp/" if e in self.callchain else e]
            if filt:
                cmd += ["--filter", filt]
        if self.callchain:
            cmd += ["--kernel-callchains"]
        return cmd

    def start(self):
        if os.path.exists(self.out):
            os.unlink(self.out)
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen(self.command(), stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.bench.children.append(self.proc)
        time.sleep(1.5)  # perf opens its events in well under a second
        self.check_alive()
        self.cpu0 = proc_cpu_s(self.proc.pid)
        self.t_ready = time.time()

    def stop(self):
        time.sleep(0.2)
        cpu1 = proc_cpu_s(self.proc.pid)
        hwm = proc_status_kb(self.proc.pid, "VmHWM")
        t1 = time.time()
        stop_process(self.proc, signal.SIGINT, timeout=120)
        self.bench.children.remove(self.proc)
        self.log.close()
        life = t1 - self.t_ready
        res = {"cpu_s": (cpu1 - self.cpu0) if cpu1 is not None else None, "peak_rss_kb": hwm}
        if self.kind == "perf_stat":
            total = 0
            per = {}
            with open(self.out) as f:
                for line in f:
                    parts = line.strip().split(",")
                    if len(parts) >= 3 and parts[0].strip().isdigit():
                        per[parts[2]] = int(parts[0])
                        total += int(parts[0])
            res.update(events=total, lost=0, events_per_s=total / life, data_bytes=0,
                       data_per_hour=0, per_event=per)
        else:
            size = file_size(self.out)
            st = subprocess.run(["perf", "report", "--stats", "-i", self.out],
                                capture_output=True, text=True, timeout=600).stdout
            agg = st.split("Aggregated stats:")[-1].split(" stats:")[0]
            counts = {m.group(1): int(m.group(2))
                      for m in re.finditer(r"^\s*(\w+) events:\s+(\d+)", agg, re.M)}
            per = {m.group(1): int(m.group(2)) for m in re.finditer(
                r"^(\S+) stats:\n\s*SAMPLE events:\s+(\d+)", st, re.M)}
            samples = counts.get("SAMPLE", 0)
            lost = counts.get("LOST_SAMPLES", 0)
            lost_recs = counts.get("LOST", 0)
            res.update(events=samples, lost=lost, lost_records=lost_recs, per_event=per,
                       events_per_s=samples / life, data_bytes=size,
                       data_per_hour=size / life * 3600)
            os.unlink(self.out)
        return res


# --- the benchmark --------------------------------------------------------------------------


def parse_kv(line):
    out = {}
    for tok in line.split()[1:]:
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = int(v)
            except ValueError:
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
    return out


def plugin_tracepoints():
    """{"system:name": wants_callchain} from the collectors' tracepoint tables."""
    tps = {}
    # Rows are designated initializers (plugin.h): {.system = "x", .name = "y", ...,
    # .callchain = true}. (The positional pattern this replaced matched none of them any more,
    # so perf stat / perf record were given no tracepoint.)
    pat = re.compile(r'\{\s*\.system\s*=\s*"(\w+)",\s*\.name\s*=\s*"(\w+)"([^{}]*)\}')
    for fn in sorted(os.listdir(os.path.join(ROOT, "plugins"))):
        if fn.endswith(".c"):
            with open(os.path.join(ROOT, "plugins", fn)) as f:
                for m in pat.finditer(f.read()):
                    key = f"{m.group(1)}:{m.group(2)}"
                    cc = re.search(r"\.callchain\s*=\s*true", m.group(3)) is not None
                    tps[key] = tps.get(key, False) or cc
    return tps


@functools.lru_cache(maxsize=None)
def bpf_hooks():
    """Every event `--collectors all --source bpf` hooks, named for perf: the sections of
    plugins/bpf/counters.bpf.c (tp_btf names have no system: found under tracefs's events/).
    Not the fault-completion software events of its perf_event program: those are open with
    --fault-latency on only (mmlockd_all_bpf_latency). Read once a run (cached): perf_stat_bpf
    asks for it every round."""
    with open(os.path.join(ROOT, "plugins", "bpf", "counters.bpf.c")) as f:
        secs = re.findall(r'SEC\("([^"]+)"\)', f.read())
    events = []
    for sec in secs:
        kind, _, name = sec.partition("/")
        if kind == "tracepoint":
            events.append(name.replace("/", ":", 1))
        elif kind == "tp_btf":
            found = [d for d in glob.glob(os.path.join(TRACEFS, "events", "*", name))
                     if os.path.isdir(d)]
            if len(found) != 1:
                raise SystemExit(f"bench: tp_btf/{name}: {len(found)} tracepoints of that name "
                                 f"under {TRACEFS}/events")
            events.append(f"{os.path.basename(os.path.dirname(found[0]))}:{name}")
    return events


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = f"/var/tmp/mmlockd-bench.{os.getpid()}"
        self.cgroup_name = f"mmlockd-bench.{os.getpid()}"
        self.swap_file = os.path.join(self.tmp, "swapfile")
        self.children = []
        self.runs = []
        self.failures = []
        self.bpf_stats_was = None
        self.idle = None  # the footprint's IdleProcesses while they run

    # Set-up and tear-down.

    def setup(self):
        os.makedirs(self.tmp, exist_ok=False)
        build = os.path.abspath(self.args.build)
        # A private copy: others may rebuild the tree while the benchmark runs.
        self.mmlockd = os.path.join(self.tmp, "mmlockd")
        shutil.copy2(os.path.join(build, "mmlockd"), self.mmlockd)
        self.bins = {}
        for w, (b, _) in list(WORKLOADS.items()) + [("churn", ("bench_churn", []))]:
            self.bins[w] = os.path.join(self.tmp, b)
            shutil.copy2(os.path.join(build, "bench", b), self.bins[w])
        floor = os.path.join(build, "bench", "bench_bpf_floor")
        self.bpf_floor = os.path.join(self.tmp, "bench_bpf_floor") \
            if os.path.exists(floor) else None
        if self.bpf_floor:
            shutil.copy2(floor, self.bpf_floor)
        self.empty_conf = os.path.join(self.tmp, "empty.conf")
        open(self.empty_conf, "w").close()
        self.version = subprocess.run([self.mmlockd, "--version"], capture_output=True,
                                      text=True).stdout.strip()
        if self.args.bpf_stats:
            with open(BPF_STATS) as f:
                self.bpf_stats_was = f.read().strip()
            with open(BPF_STATS, "w") as f:
                f.write("1")
        self.probe()

    def probe(self):
        """Which tracepoints mmlockd opens (and with callchains), and what "default" means."""
        # On the perf rings: the probe is for the tracepoints perf is given too.
        t = Mmlockd(self, "probe", "all", "perf")
        try:
            t.start()
            st = t.status0
        finally:
            if t.proc:
                stop_process(t.proc)
                self.children.remove(t.proc)
            if hasattr(t, "log"):
                t.log.close()
        wanted = plugin_tracepoints()
        self.tracepoints = [e["name"] for e in st["events"]
                            if e.get("open") and ":" in e["name"] and e["name"] in wanted]
        self.callchain = [tp for tp in self.tracepoints if wanted.get(tp)]
        self.collectors_all = [c["name"] for c in st["collectors"]]
        help_text = subprocess.run([self.mmlockd, "--help"], capture_output=True,
                                   text=True).stdout
        m = re.search(r"--collectors LIST.*?\(default:\s*([^)]*)\)", help_text, re.S)
        self.default_collectors = m.group(1).strip() if m else "?"
        log(f"{self.version}: collectors {self.collectors_all}, default "
            f"'{self.default_collectors}'; tracepoints {self.tracepoints}; "
            f"callchains on {self.callchain}")

    def cleanup(self):
        if self.idle:
            self.idle.stop()
        for p in list(self.children):
            stop_process(p, signal.SIGTERM, timeout=30)
        if self.bpf_stats_was is not None:
            with open(BPF_STATS, "w") as f:
                f.write(self.bpf_stats_was)
        self.remove_leftovers()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def remove_leftovers(self):
        # After a SIGKILLed workload: its swap file and cgroup carry our names.
        try:
            with open("/proc/swaps") as f:
                active = [line.split()[0] for line in f.readlines()[1:]]
        except OSError:
            active = []
        if self.swap_file in active:
            subprocess.run(["swapoff", self.swap_file])
        for root in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
            d = os.path.join(root, self.cgroup_name)
            if os.path.isdir(d):
                try:
                    os.rmdir(d)
                except OSError as e:
                    log(f"cannot remove cgroup {d}: {e}")
        if os.path.exists(self.swap_file):
            os.unlink(self.swap_file)

    # One run.

    def tracer(self, config):
        if untraced(config):
            return Tracer(self, config)
        if config in ("bpf_floor", "bpf_floor_all", "bpf_floor_all_latency",
                      "bpf_floor_all_storage"):
            if not self.bpf_floor:
                raise RuntimeError(f"{config}: bench_bpf_floor was not built (no BPF toolchain)")
            return BpfFloor(self, config, {"bpf_floor": [], "bpf_floor_all": ["--all"],
                                           "bpf_floor_all_latency": ["--all", "--latency"],
                                           "bpf_floor_all_storage": ["--all", "--storage"]}[config])
        if config == "mmlockd_default":
            return Mmlockd(self, config, None)
        if config in BPF_CONFIGS:
            coll, progs, extra = BPF_CONFIGS[config]
            if progs:
                extra = extra + ["--bpf-skip", ",".join(progs)]
            return Mmlockd(self, config, coll, "bpf", extra=extra)
        if config in SPLIT_ARGS:
            return Mmlockd(self, config, None, extra=SPLIT_ARGS[config])
        if config.startswith("mmlockd_") and config.endswith("_bpf"):
            # mmlockd_<collectors>_bpf: the same collectors with --source bpf.
            return Mmlockd(self, config, config[len("mmlockd_"):-len("_bpf")], "bpf")
        if config.startswith("mmlockd_"):
            # The ring path: what the per-collector breakdown and "all (perf)" measure.
            return Mmlockd(self, config, config[len("mmlockd_"):], "perf")
        tps = self.tracepoints
        mmap_tps = [t for t in tps if t.startswith("mmap_lock:")]
        if config == "perf_stat":
            return PerfTool(self, config, "perf_stat", tps)
        if config == "perf_stat_bpf":
            # What all (bpf) hooks, counted: its baseline as perf_stat is the ring path's.
            return PerfTool(self, config, "perf_stat", tps + [e for e in bpf_hooks()
                                                               if e not in tps])
        if config == "perf_stat_mmaplock":
            # The fallbacks collector's tracepoints enabled, no program and no sample: what
            # enabling them costs apart from what runs on them.
            return PerfTool(self, config, "perf_stat", mmap_tps)
        if config == "perf_stat_mmaplock_switch":
            return PerfTool(self, config, "perf_stat", mmap_tps + ["sched:sched_switch"])
        if config in ("perf_stat_faults", "perf_stat_faults_off"):
            # The fault-completion software events the split's bursts open on every CPU,
            # counting, or open and disabled (perf stat --delay longer than any run), as they
            # are between bursts: an open one keeps perf_sw_event()'s static key on.
            return PerfTool(self, config, "perf_stat", ["minor-faults", "major-faults"],
                            delay_ms=10**9 if config.endswith("_off") else 0)
        if config == "perf_lock":
            return PerfTool(self, config, "perf_lock")
        groups = {
            "perf_record": (tps, self.callchain),
            "perf_record_pf": (["exceptions:page_fault_user"], []),
            "perf_record_mmaplock": (mmap_tps, []),
            "perf_record_acq_cc": (["mmap_lock:mmap_lock_acquire_returned"],
                                   ["mmap_lock:mmap_lock_acquire_returned"]),
            "perf_record_filemap": ([t for t in tps if t.startswith("filemap:")], []),
            "perf_record_lock": ([t for t in tps if t.startswith("lock:")],
                                 [t for t in self.callchain if t.startswith("lock:")]),
            # "event|filter": a tracepoint filter evaluated in the kernel before sampling
            "perf_record_pf_1in8": (["exceptions:page_fault_user|!(address & 28672)"], []),
            "perf_record_acq_cc_read": (["mmap_lock:mmap_lock_acquire_returned|write == 0"],
                                        ["mmap_lock:mmap_lock_acquire_returned"]),
        }
        ev, cc = groups[config]
        return PerfTool(self, config, "perf_record", ev, cc)

    def wait_quiet(self):
        """Waits (bounded) until no other process holds perf events and the machine is idle."""
        t0 = time.time()
        while True:
            users = perf_event_users({os.getpid()})
            b0, s0 = system_busy_s(), time.time()
            time.sleep(0.5)
            busy = (system_busy_s() - b0) / (time.time() - s0)
            if (not users and busy < 0.2) or time.time() - t0 > self.args.max_quiet_wait:
                return {"waited_s": round(time.time() - t0, 1), "busy_cores": round(busy, 2),
                        "perf_users": sorted(set(users.values()))}
            time.sleep(1.5)

    def run_one(self, workload, config, rep):
        quiet = self.wait_quiet()
        tr = self.tracer(config)
        tr.start()
        mine = {os.getpid()} | ({tr.pid()} if tr.pid() else set())
        b, wargs = WORKLOADS[workload]
        cmd = [self.bins[workload], "--seconds", str(self.args.seconds), "--warmup",
               str(self.args.warmup), "--dir", self.tmp, "--cgroup-name", self.cgroup_name,
               "--swap-file", self.swap_file] + wargs + self.args.workload_args.get(workload, [])
        if self.args.progress:
            cmd += ["--progress", str(self.args.progress)]
        t_start = time.time()
        wp = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
        self.children.append(wp)
        mine.add(wp.pid)
        params, result, marks, progress = {}, {}, {}, []
        worker = wp.pid  # the process that does the work: the child bench_spawn() forks
        for line in wp.stdout:
            line = line.strip()
            if line.startswith("# worker "):
                worker = int(line.split()[2])
                mine.add(worker)
            elif line.startswith("# phase "):
                phase = line.split()[2]
                if phase in ("measure", "end"):
                    marks[phase] = {"t": time.time(), "busy": system_busy_s(),
                                    "wcpu": proc_cpu_s(worker), "tracer": tr.snapshot()}
                    if self.args.bpf_stats and isinstance(tr, (Mmlockd, BpfFloor)):
                        marks[phase]["bpf"] = bpf_prog_stats(tr.pid())
                if phase == "end":
                    # After the phase, not at its start: the scan reads every process's fds,
                    # a second of CPU with 10 000 processes on the machine, which would be in
                    # the measured phase and in its foreign cores.
                    marks["perf_users"] = sorted(set(perf_event_users(mine).values()))
            elif line.startswith("# rate "):
                kv = parse_kv(line[1:])
                progress.append([kv.get("phase"), kv.get("t"), kv.get("rounds_per_s")])
            elif line.startswith("params:"):
                params = parse_kv(line)
            elif line.startswith("result:"):
                result = parse_kv(line)
        err = wp.stderr.read()
        wp.wait()
        t_end = time.time()
        prog_names = bpf_prog_names(marks["end"]["bpf"]) \
            if marks.get("end", {}).get("bpf") else {}
        res = tr.stop()
        for p in (wp, tr.proc):
            if p in self.children:
                self.children.remove(p)
        if wp.returncode != 0 or "rounds_per_s" not in result:
            raise WorkloadFailed(f"{workload} failed under {config} (status {wp.returncode}): "
                                 f"{err.strip()}")
        run = {"workload": workload, "config": config, "rep": rep, "params": params,
               "result": result, "tracer": res, "quiet": quiet,
               "workload_wall_s": round(t_end - t_start, 2)}
        if progress:
            run["progress"] = progress
        if "measure" in marks and "end" in marks:
            m0, m1 = marks["measure"], marks["end"]
            dt = m1["t"] - m0["t"]
            tcpu = 0.0
            if m0["tracer"].get("cpu_s") is not None and m1["tracer"].get("cpu_s") is not None:
                tcpu = m1["tracer"]["cpu_s"] - m0["tracer"]["cpu_s"]
            wcpu = (m1["wcpu"] or 0) - (m0["wcpu"] or 0)
            run["measured"] = {
                "workload_cores": round(wcpu / dt, 3),
                "tracer_cores": round(tcpu / dt, 3),
                "foreign_cores": round(max(0.0, (m1["busy"] - m0["busy"] - wcpu - tcpu) / dt),
                                       3),
                "foreign_perf_users": marks.get("perf_users", []),
            }
            if m1.get("bpf"):
                progs = {}
                for pid_, (ns1, n1) in m1["bpf"].items():
                    ns0, n0 = m0.get("bpf", {}).get(pid_, (0, 0))
                    progs[prog_names.get(pid_, f"id{pid_}")] = {
                        "runs_per_s": round((n1 - n0) / dt), "ms_per_s": (ns1 - ns0) / 1e6 / dt,
                        "ns_per_run": (ns1 - ns0) / (n1 - n0) if n1 > n0 else None}
                ms = sum(p["ms_per_s"] for p in progs.values())
                run["measured"]["bpf"] = {
                    "programs": progs,
                    "runs_per_s": sum(p["runs_per_s"] for p in progs.values()),
                    "ms_per_s": round(ms, 3),
                    "workload_cores": run["measured"]["workload_cores"],
                    # The programs run in the threads they trace: their time is in wcpu.
                    "share_of_workload_cpu": ms / 1e3 / (wcpu / dt) if wcpu > 0 else None}
            if "samples" in m0["tracer"] and "samples" in m1["tracer"]:
                dtk = m1["tracer"]["taken"] - m0["tracer"]["taken"]
                if dtk > 0:
                    run["measured"]["events_per_s"] = round(
                        (m1["tracer"]["samples"] - m0["tracer"]["samples"]) / dtk)
        if isinstance(tr, Mmlockd) and "pid" in result:
            run["mmlockd_process"] = tr.process_totals(result["pid"])
        return run

    def run_suite(self):
        configs = list(SUITES[self.args.suite]) if not self.args.configs else self.args.configs
        if self.args.suite == "breakdown" and not self.args.configs:
            configs[1:1] = [f"mmlockd_{c}" for c in self.collectors_all]
        if self.args.noise_floor and "none_again" not in configs:
            configs.insert(configs.index("none") + 1 if "none" in configs else 0, "none_again")
        if self.args.bpf_stats and self.bpf_floor and "bpf_floor" not in configs:
            configs.insert(1, "bpf_floor")
        total = len(self.args.workloads) * len(configs) * self.args.reps
        n = 0
        t0 = time.time()
        for w in self.args.workloads:
            for rep in range(self.args.reps):
                k = rep % len(configs)
                for config in configs[k:] + configs[:k]:
                    n += 1
                    for attempt in (1, 2):
                        try:
                            run = self.run_one(w, config, rep)
                            break
                        except WorkloadFailed as e:
                            log(f"attempt {attempt}: {e}")
                            self.remove_leftovers()
                            self.failures.append({"workload": w, "config": config,
                                                  "rep": rep, "error": str(e)})
                    else:
                        continue
                    self.runs.append(run)
                    eta = (time.time() - t0) / n * (total - n)
                    log(f"{n}/{total} {w} {config} rep {rep}: "
                        f"{run['result']['rounds_per_s']:.1f} rounds/s, events/s "
                        f"{run['tracer'].get('events_per_s') or 0:.0f}, lost "
                        f"{run['tracer'].get('lost', 0)}, foreign "
                        f"{run.get('measured', {}).get('foreign_cores')} cores "
                        f"(eta {eta / 60:.1f} min)")
        return configs

    # The footprint: what mmlockd holds and spends itself, on the daemon's default windows.

    def footprint_tracer(self, config):
        """@config started on the daemon's own default --interval (the footprint measures what
        a window holds and what happens once a window), ready; with that interval, seconds."""
        tr = self.tracer(config)
        tr.interval = None
        tr.start()
        return tr, tr.status0.get("interval_seconds") or 10

    def stop_tracer(self, tr):
        stop_process(tr.proc)
        self.children.remove(tr.proc)
        tr.log.close()

    def wait_windows(self, tr, n, interval, since=None):
        """Waits until @n more windows were stored than @since (windows_stored; now's if None),
        so that what the daemon does at a window's close (the /proc scan, writing the rows,
        dropping exited processes) is done. Bounded by @n windows and 15 s; returns
        windows_stored then."""
        if since is None:
            since = (tr.status() or {}).get("windows_stored", 0)
        limit = n * interval + 15
        deadline = time.time() + limit
        while True:
            tr.check_alive()
            got = (tr.status() or {}).get("windows_stored")
            if got is not None and got >= since + n:
                return got
            if time.time() > deadline:
                log(f"{tr.name}: {n} windows not stored in {limit:g} s (windows_stored {got}, "
                    f"was {since})")
                return got
            time.sleep(0.5)

    def measure_idle(self, tr, seconds):
        """The daemon's RSS (the highest of one reading a second, and the last), VmHWM and CPU
        (utime + stime over the elapsed time: a share of one core) over @seconds, and the
        other load on the machine meanwhile: the share is the daemon's own time, but a busy
        machine makes its scans slower."""
        pid = tr.proc.pid
        c0, b0, t0 = proc_cpu_s(pid), system_busy_s(), time.time()
        rss = [proc_status_kb(pid, "VmRSS") or 0]
        while time.time() < t0 + seconds:
            tr.check_alive()
            time.sleep(min(1.0, max(0.0, t0 + seconds - time.time())))
            rss.append(proc_status_kb(pid, "VmRSS") or 0)
        c1, b1, t1 = proc_cpu_s(pid), system_busy_s(), time.time()
        dt = t1 - t0
        return {"rss_kb": max(rss), "rss_end_kb": rss[-1],
                "hwm_kb": proc_status_kb(pid, "VmHWM"), "cpu_pct": (c1 - c0) / dt * 100,
                "seconds": round(dt, 1),
                "other_cores": round(max(0.0, (b1 - b0 - (c1 - c0)) / dt), 2),
                "processes_tracked": (tr.status() or {}).get("processes_tracked"),
                "live_processes": live_processes()}

    def run_idle(self):
        """The footprint with idle processes: mmlockd's RSS, peak and CPU on its defaults with
        nothing started (the baseline), then with --idle-procs processes that only sleep, on
        both sources of the default; the difference is the cost of a tracked process."""
        n, out = self.args.idle_procs, []
        for config in IDLE_CONFIGS:
            tr, interval = self.footprint_tracer(config)
            idle = None
            try:
                # A window closed: the processes already there were scanned once.
                self.wait_windows(tr, 1, interval)
                base = dict(self.measure_idle(tr, self.args.idle_seconds), config=config,
                            idle_procs=0, interval_s=interval)
                out.append(base)
                log(f"idle {config} baseline: {base}")
                # The peak from here on: the idle processes' arrival and steady state, not the
                # daemon's start-up.
                hwm_reset = reset_hwm(tr.proc.pid)
                t0 = time.time()
                idle = IdleProcesses(self, n)
                idle.start()
                log(f"idle {config}: {n} idle processes started in {time.time() - t0:.1f} s")
                # Tracked once a /proc scan (at a window's close) has run since they all exist:
                # processes_tracked >= n alone can be the machine's other processes.
                stored0 = (tr.status() or {}).get("windows_stored", 0)
                deadline = time.time() + 60
                while True:
                    tr.check_alive()
                    st = tr.status() or {}
                    tracked = st.get("processes_tracked") or 0
                    if (tracked >= n and st.get("windows_stored", 0) > stored0) \
                            or time.time() > deadline:
                        break
                    time.sleep(0.5)
                if tracked < n:
                    log(f"idle {config}: processes_tracked {tracked} < {n} after 60 s")
                log(f"idle {config}: processes_tracked {tracked} after "
                    f"{time.time() - t0:.1f} s; one more window")
                self.wait_windows(tr, 1, interval)
                row = dict(self.measure_idle(tr, self.args.idle_seconds), config=config,
                           idle_procs=n, interval_s=interval, hwm_reset=hwm_reset)
                row["per_proc_kib"] = (row["rss_kb"] - base["rss_kb"]) / n
                row["cpu_pct_per_1000"] = (row["cpu_pct"] - base["cpu_pct"]) / n * 1000
                row["verdict"] = idle_verdict(base, row)
                out.append(row)
                log(f"idle {config} {n} processes: {row}")
            finally:
                if idle:
                    idle.stop()
                self.stop_tracer(tr)
        log("footprint, idle processes:\n" + "\n".join(idle_table(out)))
        return out

    def churn_rows(self, tr, t0, t1, parent):
        """How many processes of one wave got rows in the database, and how many of those with
        faults (minflt + majflt, the kernel's own count): comm bench_churn, started between @t0
        and @t1, other than @parent (bench_churn itself). Each faulted, so each should have
        rows with faults. Read-only, beside the daemon (WAL); (None, None) if it cannot be
        read."""
        try:
            con = sqlite3.connect(f"file:{tr.db}?mode=ro", uri=True, timeout=10)
            n, faulted = con.execute(
                "SELECT count(*), coalesce(sum(f > 0), 0) FROM (SELECT sum(minflt + majflt) "
                "AS f FROM process_stats WHERE comm = 'bench_churn' AND pid != ? "
                "AND start_time BETWEEN ? AND ? GROUP BY pid, start_time)",
                (parent, t0 - 2, t1 + 2)).fetchone()
            con.close()
        except sqlite3.Error as e:
            log(f"{tr.name}: reading {tr.db}: {e}")
            return None, None
        return n, faulted

    def run_churn(self):
        """Bounded memory: per wave of short-lived processes, mmlockd's peak RSS (VmHWM reset
        before the wave), its RSS once CHURN_WINDOWS more windows were stored (the wave's
        processes written, then dropped, the heap trimmed), processes_tracked, and the wave's
        processes that got rows; on the daemon's default windows, the defaults and all
        collectors on both sources."""
        out = []
        for config in CHURN_CONFIGS:
            tr, interval = self.footprint_tracer(config)
            pid = tr.proc.pid
            rows = []

            def sample(label, extra):
                st = tr.status() or {"events": []}
                s, lost = Mmlockd.counts(st)
                row = {"config": config, "when": label, "rss_kb": proc_status_kb(pid, "VmRSS"),
                       "hwm_kb": proc_status_kb(pid, "VmHWM"),
                       "processes_tracked": st.get("processes_tracked"),
                       "live_processes": live_processes(),
                       "windows_stored": st.get("windows_stored"), "events": s, "lost": lost,
                       "interval_s": interval}
                row.update(extra)
                rows.append(row)
                log(f"churn {config} {label}: {row}")

            try:
                sample("start", {"wave": 0})
                for wave in range(1, self.args.churn_waves + 1):
                    hwm_reset = reset_hwm(pid)
                    t0 = time.time()
                    p = subprocess.Popen(
                        [self.bins["churn"], "--procs", str(self.args.churn_procs), "--threads",
                         str(self.args.churn_threads), "--parallel", "8"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        start_new_session=True)
                    self.children.append(p)
                    try:
                        so, se = p.communicate(timeout=1800)
                    except subprocess.TimeoutExpired:
                        stop_process(p, signal.SIGKILL)
                        raise RuntimeError(f"churn wave {wave} under {config}: not done in 30 min")
                    self.children.remove(p)
                    t1 = time.time()
                    if p.returncode != 0:
                        log(f"churn wave {wave} under {config}: status {p.returncode}: "
                            f"{se.strip()}")
                    hwm_wave_end = proc_status_kb(pid, "VmHWM")
                    self.wait_windows(tr, CHURN_WINDOWS, interval)
                    stored, faulted = self.churn_rows(tr, t0, t1, p.pid)
                    sample(f"wave {wave}", {
                        "wave": wave, "churn": parse_kv(so), "wave_s": round(t1 - t0, 1),
                        "wait_s": round(time.time() - t1, 1), "hwm_reset": hwm_reset,
                        "hwm_wave_end_kb": hwm_wave_end,
                        "rows_stored": stored, "rows_with_faults": faulted})
            finally:
                self.stop_tracer(tr)
            churn_verdicts(rows)
            out += rows
        log("footprint, churn:\n" + "\n".join(churn_table(out)))
        return out


# --- report ---------------------------------------------------------------------------------


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def median_interval(xs, level=0.95):
    """A distribution-free @level confidence interval for the median of @xs: the k-th smallest
    and k-th largest, k the most order statistics each side that leave the rest at least @level
    sure to hold the median (binomial, p = 1/2). None below 6 values (no k >= 1 for 95%)."""
    xs = sorted(x for x in xs if x is not None)
    n, k, below = len(xs), 0, 0.0
    while k < n:
        p = math.comb(n, k) / 2**n
        if 2 * (below + p) > 1 - level:
            break
        below += p
        k += 1
    return (xs[k - 1], xs[n - k]) if k >= 1 else None


# The repeatability target: every untraced round within this much of their median.
REPEAT_TARGET = 0.03
# Rounds from which median_interval() has a 95% interval (below it the verdict makes no call).
MIN_INTERVAL_ROUNDS = 6


def spread(xs):
    """Half the range of @xs over their median, (max - min) / 2 / median: "±x%" of the rounds
    around their median; None below 2 values."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return (max(xs) - min(xs)) / 2 / m if m else None


def worst_deviation(xs):
    """(index, deviation) of the value of @xs furthest from their median, the deviation signed
    and relative to the median; None without values."""
    idx = [(i, x) for i, x in enumerate(xs) if x is not None]
    if not idx:
        return None
    m = statistics.median(x for _, x in idx)
    if not m:
        return None
    i, x = max(idx, key=lambda ix: abs(ix[1] - m))
    return i, (x - m) / m


def verdict(ratio, interval, rounds, noise):
    """What the run can say about a configuration against untraced: (kind, text, reason).
    A cost (or a speed-up) only when the 95% interval of the median ratio excludes 1 AND the
    median ratio is further from 1 than @noise, the untraced rounds' own spread (a fraction);
    otherwise not told apart. Below MIN_INTERVAL_ROUNDS paired rounds there is no interval and
    no call."""
    if ratio is None or rounds < MIN_INTERVAL_ROUNDS or interval is None:
        return ("no_interval", f"{rounds} rounds: no 95% interval (needs "
                f"{MIN_INTERVAL_ROUNDS}), no call", "too few rounds")
    lo, hi = interval
    noise_txt = f"±{noise * 100:.1f}% noise" if noise is not None else "noise unknown"
    excludes = lo > 1 or hi < 1
    beyond = noise is not None and abs(1 - ratio) > noise
    if excludes and beyond:
        if ratio < 1:
            return ("cost", f"cost {(1 - ratio) * 100:.1f}% [{(1 - hi) * 100:.1f}-"
                    f"{(1 - lo) * 100:.1f}]", "interval excludes 1, beyond the untraced spread")
        return ("faster", f"faster {(ratio - 1) * 100:.1f}% [{(lo - 1) * 100:.1f}-"
                f"{(hi - 1) * 100:.1f}]", "interval excludes 1, beyond the untraced spread")
    reason = ("interval excludes 1 but the difference is within the untraced spread"
              if excludes else "the interval holds 1")
    return "not_told_apart", f"not told apart from untraced ({noise_txt})", reason


def machine_info():
    info = {"kernel": platform.release(), "machine": platform.machine(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            info["cpu_model"] = m.group(1) if m else "?"
        with open("/proc/meminfo") as f:
            info["mem_total_gib"] = round(int(f.readline().split()[1]) / 2**20, 1)
    except OSError:
        pass
    info["perf"] = subprocess.run(["perf", "version"], capture_output=True,
                                  text=True).stdout.strip()
    try:
        with open("/etc/debian_version") as f:
            info["debian"] = f.read().strip()
    except OSError:
        pass
    vm = open("/proc/vmstat").read()
    info["per_vma_lock_stats"] = "vma_lock_success" in vm
    return info


def summarize(bench, configs):
    rows = {}
    for w in bench.args.workloads:
        runs = [r for r in bench.runs if r["workload"] == w]
        base = {r["rep"]: r["result"]["rounds_per_s"] for r in runs if r["config"] == "none"}
        base_w = {r["rep"]: r["result"].get("writer_ops_per_s") for r in runs
                  if r["config"] == "none"}
        bmed = median(base.values())
        bwmed = median(base_w.values())
        for c in configs:
            rs = [r for r in runs if r["config"] == c]
            tput = [r["result"]["rounds_per_s"] for r in rs]
            wops = [r["result"].get("writer_ops_per_s") for r in rs]
            paired = [r["result"]["rounds_per_s"] / base[r["rep"]] for r in rs
                      if base.get(r["rep"])]
            ev = [r["tracer"].get("events") for r in rs]
            cpu = [r["tracer"].get("cpu_s") for r in rs]
            per_ev = [c_ / e * 1e6 for c_, e in zip(cpu, ev) if c_ is not None and e]
            acc = []
            outcome = []
            for r in rs:
                p = r.get("mmlockd_process")
                kf = r["result"].get("total_minflt", 0) + r["result"].get("total_majflt", 0)
                # The kernel's own count (totals collector) where it runs, else the
                # page_fault_user events the faults/mmaplock collectors saw.
                seen = (p.get("minflt", 0) + p.get("majflt", 0)) if p else 0
                seen = seen or (p["faults"] if p else 0)
                if seen and kf:
                    acc.append(seen / kf)
                if seen:
                    outcome.append(p)
            s = {
                "label": LABELS.get(c, c),
                "runs": len(rs),
                "rounds_per_s": tput,
                "rounds_per_s_median": median(tput),
                "ratio": median(paired),
                "ratio_of_medians": median(tput) / bmed if bmed and tput else None,
                "paired_ratios": [round(x, 4) for x in paired],
                "ratio_interval": median_interval(paired),
                "writer_ops_ratio": (median(wops) / bwmed) if bwmed and median(wops) else None,
                "events_per_s_median": median(r["tracer"].get("events_per_s") for r in rs),
                "measured_events_per_s_median": median(
                    r.get("measured", {}).get("events_per_s") for r in rs),
                "lost_total": sum(r["tracer"].get("lost", 0) or 0 for r in rs),
                "tracer_cpu_s_median": median(cpu),
                "tracer_cores_median": median(
                    r.get("measured", {}).get("tracer_cores") for r in rs),
                "cpu_us_per_event_median": median(per_ev),
                "peak_rss_mib_max": max((r["tracer"].get("peak_rss_kb") or 0) / 1024
                                        for r in rs) if rs else None,
                "data_mib_per_hour_median": median(
                    (r["tracer"].get("data_per_hour") or 0) / 2**20 for r in rs)
                if rs and not untraced(c) else None,
                "faults_seen_over_kernel_median": median(acc),
                "foreign_cores_median": median(
                    r.get("measured", {}).get("foreign_cores") for r in rs),
                "foreign_cores_max": max((r.get("measured", {}).get("foreign_cores") or 0
                                          for r in rs), default=None),
                # Half the range of the rounds' throughput over its median (a fraction).
                "rounds_per_s_spread": spread(tput),
                "runs_with_foreign_perf": sum(
                    1 for r in rs if r.get("measured", {}).get("foreign_perf_users")),
            }
            bpf = [r["measured"]["bpf"] for r in rs if r.get("measured", {}).get("bpf")]
            if bpf:
                s["bpf"] = {k: median(b[k] for b in bpf) for k in (
                    "runs_per_s", "ms_per_s", "workload_cores", "share_of_workload_cpu")}
                names = sorted({n for b in bpf for n in b["programs"]})
                s["bpf"]["programs"] = {n: {k: median(b["programs"].get(n, {}).get(k) for b in bpf)
                                            for k in ("runs_per_s", "ns_per_run", "ms_per_s")}
                                        for n in names}
            if outcome:
                keys = ["faults", "faults_vma", "faults_vma_retry", "faults_mmap_retry",
                        "faults_mmap_abort", "faults_mmap_unknown", "faults_mmap_fallback",
                        "minflt", "majflt", "fallback_locks", "fallback_lock_waits",
                        "split_estimated", "split_faults_seen", "split_err"]
                s["outcomes_last_run"] = {k: outcome[-1].get(k, 0) for k in keys}
            rows[(w, c)] = s
        # The untraced rounds' spread: the noise a difference must exceed to be called (the
        # larger of none's and none_again's where both ran), and the repeatability target.
        unt = [rows[(w, c)] for c in configs if untraced(c) and rows[(w, c)]["runs"]]
        noise = max((u["rounds_per_s_spread"] for u in unt
                     if u["rounds_per_s_spread"] is not None), default=None)
        if (w, "none") in rows:
            nrs = sorted((r for r in runs if r["config"] == "none"), key=lambda r: r["rep"])
            tput = [r["result"]["rounds_per_s"] for r in nrs]
            wd = worst_deviation(tput)
            foreign = [r.get("measured", {}).get("foreign_cores") for r in nrs]
            rows[(w, "none")]["repeatability"] = {
                "target": REPEAT_TARGET, "rounds": len(tput),
                "rounds_per_s": tput,
                "spread": rows[(w, "none")]["rounds_per_s_spread"],
                "worst_rep": nrs[wd[0]]["rep"] if wd else None,
                "worst_deviation": wd[1] if wd else None,
                "within_target": (abs(wd[1]) <= REPEAT_TARGET) if wd and len(tput) > 1
                else None,
                "noise": noise,
                "foreign_cores_median": median(foreign),
                "foreign_cores_max": max((f for f in foreign if f is not None), default=None),
            }
        for c in configs:
            s = rows[(w, c)]
            s["untraced_spread"] = noise
            if c == "none":
                s["verdict_kind"], s["verdict"], s["verdict_reason"] = \
                    "reference", "reference", "the untraced run every ratio is taken against"
                continue
            paired_n = len(s["paired_ratios"])
            s["verdict_kind"], s["verdict"], s["verdict_reason"] = verdict(
                s["ratio"], s["ratio_interval"], paired_n, noise)
            if s["verdict_kind"] in ("cost", "faster"):
                lo, hi = s["ratio_interval"]
                s["cost_pct"] = (1 - s["ratio"]) * 100
                s["cost_interval_pct"] = [(1 - hi) * 100, (1 - lo) * 100]
    return rows


def bpf_floor_ns(row):
    """The statistics' floor, ns a run: the mean of bpf_floor's empty programs' medians; None
    without a bpf_floor run."""
    if not row or "bpf" not in row:
        return None
    ns = [p["ns_per_run"] for p in row["bpf"]["programs"].values() if p["ns_per_run"]]
    return sum(ns) / len(ns) if ns else None


def bpf_net_ms(programs, floor):
    """ms/s of @programs' runs less @floor ns each (none below 0); None without a floor."""
    if floor is None:
        return None
    return sum(p["runs_per_s"] * max(0.0, p["ns_per_run"] - floor) / 1e6
               for p in programs.values() if p["runs_per_s"] and p["ns_per_run"])


def fmt(x, spec=".2f", none="–"):
    return none if x is None else format(x, spec)


def mib(kb):
    return None if kb is None else kb / 1024


def idle_verdict(base, row):
    """PASS/FAIL against IDLE_TARGET at its number of processes; at another number no verdict,
    only what the cost per process measured would give there if linear, a rough guide: it is
    not (on 2026-12-05, 12.6 KiB and 1.6% per 1000 at 2000 processes, 5.2 KiB and 0.26% at
    10 000: the fixed costs of the first thousands)."""
    t = IDLE_TARGET
    if row["idle_procs"] != t["procs"]:
        rss = mib(base["rss_kb"] + row["per_proc_kib"] * t["procs"])
        cpu = base["cpu_pct"] + row["cpu_pct_per_1000"] * t["procs"] / 1000
        return f"not at {t['procs']:,} (linear from here: {rss:.1f} MiB, {cpu:.2f}%)"
    rss, cpu = mib(row["rss_kb"]), row["cpu_pct"]
    bad = [f"RSS {rss:.1f} > {t['rss_mib']} MiB"] if rss > t["rss_mib"] else []
    bad += [f"CPU {cpu:.2f} > {t['cpu_pct']:g}%"] if cpu > t["cpu_pct"] else []
    return "FAIL (" + ", ".join(bad) + ")" if bad else "PASS"


def churn_verdicts(rows):
    """Sets the verdict of each wave of one configuration's @rows against CHURN_TARGETS and the
    rows stored (every process of the wave), and of the last wave also against growth of RSS
    after from wave 2 (from 3 waves)."""
    waves = [r for r in rows if r["wave"]]
    if not waves:
        return
    t = CHURN_TARGETS["all" if "_all" in waves[0]["config"] else "default"]
    second = next((r for r in waves if r["wave"] == 2), None)
    for r in waves:
        bad = []
        if "peak_mib" in t and mib(r["hwm_kb"] or 0) > t["peak_mib"]:
            bad.append(f"peak {mib(r['hwm_kb']):.1f} > {t['peak_mib']} MiB")
        if "after_mib" in t and mib(r["rss_kb"] or 0) > t["after_mib"]:
            bad.append(f"RSS after {mib(r['rss_kb']):.1f} > {t['after_mib']} MiB")
        forked = (r.get("churn") or {}).get("procs")
        if forked and r.get("rows_stored") is not None and r["rows_stored"] < forked:
            bad.append(f"{forked - r['rows_stored']:,} of the wave's processes without a row")
        if forked and r.get("rows_with_faults") is not None and r["rows_with_faults"] < forked:
            bad.append(f"{forked - r['rows_with_faults']:,} of the wave's processes without "
                       "faults")
        if second and r["wave"] > 2 and r["rss_kb"] is not None and second["rss_kb"]:
            r["growth_kb"] = r["rss_kb"] - second["rss_kb"]
            if r is waves[-1] and r["growth_kb"] > CHURN_GROWTH_KIB:
                bad.append(f"RSS after grew {mib(r['growth_kb']):.1f} MiB since wave 2")
        r["verdict"] = "FAIL (" + ", ".join(bad) + ")" if bad else "PASS"


def idle_table(idle):
    t = IDLE_TARGET
    L = [f"| configuration | idle processes | processes_tracked (machine's) | RSS MiB "
         f"| peak RSS MiB | CPU % of a core | per process KiB | CPU % per 1000 processes "
         f"| other load, cores "
         f"| target at {t['procs']:,}: RSS <= {t['rss_mib']} MiB, CPU <= {t['cpu_pct']:g}% |",
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in idle:
        L.append(f"| {LABELS.get(r['config'], r['config'])} | {r['idle_procs']:,} "
                 f"| {r['processes_tracked']} ({r['live_processes']}) "
                 f"| {fmt(mib(r['rss_kb']), '.1f')} "
                 f"| {fmt(mib(r['hwm_kb']), '.1f')} | {fmt(r['cpu_pct'], '.2f')} "
                 f"| {fmt(r.get('per_proc_kib'), '.2f')} "
                 f"| {fmt(r.get('cpu_pct_per_1000'), '.3f')} | {fmt(r['other_cores'], '.2f')} "
                 f"| {r.get('verdict', '–')} |")
    return L


def churn_table(churn):
    tg, td = CHURN_TARGETS["all"], CHURN_TARGETS["default"]
    L = [f"| configuration | when | processes (threads) forked | wave s | peak RSS MiB "
         f"| RSS after MiB | RSS after vs wave 2 MiB | processes_tracked (machine's) "
         f"| rows stored / with faults / forked | events | lost "
         f"| target: default peak <= {td['peak_mib']}, "
         f"after <= {td['after_mib']}; all peak <= {tg['peak_mib']} MiB; no growth; "
         f"every process stored |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in churn:
        ch = r.get("churn") or {}
        forked = f"{ch.get('procs', 0):,} ({ch.get('threads', 0):,})" if ch else "–"
        stored = (f"{r['rows_stored']:,} / {fmt(r.get('rows_with_faults'), ',')} / "
                  f"{ch.get('procs', 0):,}") if ch and r.get("rows_stored") is not None else "–"
        g = r.get("growth_kb")
        L.append(f"| {LABELS.get(r['config'], r['config'])} | {r['when']} | {forked} "
                 f"| {fmt(r.get('wave_s'), '.0f')} | {fmt(mib(r['hwm_kb']), '.1f')} "
                 f"| {fmt(mib(r['rss_kb']), '.1f')} "
                 f"| {fmt(mib(g) if g is not None else None, '+.1f')} "
                 f"| {r['processes_tracked']} ({r['live_processes']}) | {stored} "
                 f"| {r['events']} | {r['lost']} "
                 f"| {r.get('verdict', '–')} |")
    return L


def repeatability_lines(rp):
    """The header lines of a workload's table: the untraced rounds' spread (the noise a
    difference must exceed) and the repeatability target."""
    n, sp, wd = rp["rounds"], rp["spread"], rp["worst_deviation"]
    fc = (f"foreign load in them {fmt(rp['foreign_cores_median'], '.2f')} cores median, "
          f"{fmt(rp['foreign_cores_max'], '.2f')} max")
    L = [f"Untraced rounds (`no tracing`, {n}): "
         f"{' '.join(fmt(x, '.1f') for x in rp['rounds_per_s'])} rounds/s, spread "
         f"{'±' + fmt(sp * 100, '.1f') + '%' if sp is not None else '–'}"
         + (f"; the verdicts take ±{rp['noise'] * 100:.1f}% as the noise (the larger "
            "untraced spread)" if rp.get("noise") is not None and sp is not None
            and rp["noise"] > sp + 1e-12 else "") + f"; {fc}.\n"]
    if rp["within_target"] is None:
        L.append(f"Repeatability (target: every untraced round within "
                 f"±{rp['target'] * 100:g}% of their median): not judged, {n} round(s).\n")
    else:
        L.append(f"Repeatability (target: every untraced round within "
                 f"±{rp['target'] * 100:g}% of their median): "
                 f"{'met' if rp['within_target'] else 'NOT met'}; worst round "
                 f"{rp['worst_rep']} at {wd * 100:+.1f}%.\n")
    return L


def write_report(bench, configs, rows, idle, churn, t_start, t_end):
    a = bench.args
    info = machine_info()
    os.makedirs(a.out, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = {
        "suite": a.suite, "date": stamp, "duration_min": round((t_end - t_start) / 60, 1),
        "machine": info, "mmlockd_version": bench.version,
        "mmlockd_default_collectors": bench.default_collectors,
        "mmlockd_collectors": bench.collectors_all,
        "tracepoints": bench.tracepoints, "callchain_tracepoints": bench.callchain,
        "reps": a.reps, "seconds": a.seconds, "warmup": a.warmup, "configs": configs,
        "workload_params": {w: next((r["params"] for r in bench.runs if r["workload"] == w),
                                    {}) for w in a.workloads},
        "summary": {f"{w}/{c}": s for (w, c), s in rows.items()},
        "repeatability": {w: s["repeatability"] for (w, c), s in rows.items()
                          if "repeatability" in s},
        "idle": idle, "churn": churn, "failures": bench.failures, "runs": bench.runs,
    }
    # --only footprint has no rounds: its own files, not over the suite's.
    name = a.only or ("throughput" if a.suite == "main" else a.suite)
    base = os.path.join(a.out, name)
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
    L = []
    if configs:
        L.append(f"# mmlockd overhead benchmark: suite `{a.suite}`\n")
        L.append(f"{stamp}; {info.get('cpu_model')}, {info['cpus']} CPUs, "
                 f"{info.get('mem_total_gib')} GiB; kernel {info['kernel']}; {info['perf']}; "
                 f"{bench.version} (collectors {', '.join(bench.collectors_all)}; default "
                 f"`{bench.default_collectors}`). {a.reps} interleaved rounds per "
                 f"configuration, {a.warmup:g} s warm-up + {a.seconds:g} s measured per run, "
                 f"at niceness {a.nice}; medians. Run took "
                 f"{doc['duration_min']} min. mmlockd ran with `--interval 1` on a temporary "
                 f"database, default ring size.\n")
        splits = {r["config"]: r["tracer"].get("split") for r in bench.runs
                  if r.get("tracer", {}).get("split")}
        if splits:
            L.append("Fault split per mmlockd configuration (/api/v1/status): " + "; ".join(
                f"{LABELS.get(c, c)}: {sp['mode']}" + (
                    f" {sp['duty_permille'] / 10:g}% ({sp['burst_ms']} ms every "
                    f"{sp['burst_period_ms']} ms) on {sp['source']}" if sp["mode"] == "bursts"
                    else "") for c, sp in splits.items()) + ". In bursts the outcome columns "
                     "below are estimates.\n")
        L.append(f"Tracepoints (mmlockd's, also given to perf stat / perf record): "
                 f"{', '.join('`' + t + '`' for t in bench.tracepoints)}; kernel callchains on "
                 f"{', '.join('`' + t + '`' for t in bench.callchain) or 'none'}.\n")
    else:
        L.append("# mmlockd footprint\n")
        L.append(f"{stamp}; {info.get('cpu_model')}, {info['cpus']} CPUs, "
                 f"{info.get('mem_total_gib')} GiB; kernel {info['kernel']}; {bench.version} "
                 f"(default collectors `{bench.default_collectors}`). `--only footprint`: no "
                 f"workload rounds. Run took {doc['duration_min']} min.\n")
    for w in a.workloads if configs else []:
        p = doc["workload_params"][w]
        L.append(f"\n## {w}\n")
        L.append("Parameters: " + " ".join(f"{k}={v}" for k, v in p.items()
                                           if k != "workload") + "\n")
        rp = rows.get((w, "none"), {}).get("repeatability")
        if rp:
            L += repeatability_lines(rp)
        L.append("| configuration | rounds/s | spread | ratio | 95% interval | verdict "
                 "| per-round ratios | writer ops ratio "
                 "| events/s | lost | tracer CPU s | CPU µs/event | peak RSS MiB "
                 "| data MiB/h | faults seen/kernel | foreign cores |")
        L.append("|---|---:|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for c in configs:
            s = rows[(w, c)]
            iv = s.get("ratio_interval")
            sp = s.get("rounds_per_s_spread")
            L.append(
                f"| {s['label']} | {fmt(s['rounds_per_s_median'], '.1f')} "
                f"| {'±' + fmt(sp * 100, '.1f') + '%' if sp is not None else '–'} "
                f"| {fmt(s['ratio'], '.3f')} "
                f"| {(fmt(iv[0], '.3f') + '-' + fmt(iv[1], '.3f')) if iv else '–'} "
                f"| {s.get('verdict', '–')} "
                f"| {' '.join(fmt(x, '.3f') for x in s['paired_ratios'])} "
                f"| {fmt(s['writer_ops_ratio'], '.3f')} "
                f"| {fmt(s['events_per_s_median'], ',.0f') if not untraced(c) else '–'} "
                f"| {s['lost_total'] if not untraced(c) else '–'} "
                f"| {fmt(s['tracer_cpu_s_median'], '.2f') if not untraced(c) else '–'} "
                f"| {fmt(s['cpu_us_per_event_median'], '.2f')} "
                f"| {fmt(s['peak_rss_mib_max'], '.1f') if not untraced(c) else '–'} "
                f"| {fmt(s['data_mib_per_hour_median'], ',.0f')} "
                f"| {fmt(s['faults_seen_over_kernel_median'], '.4f')} "
                f"| {fmt(s['foreign_cores_median'], '.2f')}"
                f"{' (+perf users ×' + str(s['runs_with_foreign_perf']) + ')' if s['runs_with_foreign_perf'] else ''} |")
        ps = [r for r in bench.runs if r["workload"] == w and r["config"] == "perf_stat"]
        if ps:
            rates = {}
            for r in ps:
                life = r["tracer"]["events"] / r["tracer"]["events_per_s"] \
                    if r["tracer"].get("events_per_s") else None
                for k, v in r["tracer"].get("per_event", {}).items():
                    if life:
                        rates.setdefault(k, []).append(v / life)
            L.append("\nTracepoint rates counted by perf stat (events/s over its run, median): " +
                     ", ".join(f"`{k}` {median(v):,.0f}" for k, v in rates.items()) + "\n")
        bcs = [c for c in configs if "bpf" in rows[(w, c)]]
        if bcs:
            floor = bpf_floor_ns(rows.get((w, "bpf_floor")))
            L.append("\nBPF programs over the measured phase (kernel.bpf_stats_enabled; medians "
                     "of the runs): their time is spent in the traced threads, so it is a share "
                     "of the workload's CPU time. " +
                     (f"Net: less the floor, {floor:.0f} ns a run (the empty programs of "
                      "bpf_floor: what the statistics' own clock reads count).\n"
                      if floor is not None else
                      "(No bpf_floor run: the times include the statistics' own clock reads.)\n"))
            L.append("| configuration | program runs/s | program ms/s | workload cores "
                     "| share of workload CPU | net ms/s | net share |")
            L.append("|---|---:|---:|---:|---:|---:|---:|")
            for c in bcs:
                b = rows[(w, c)]["bpf"]
                share = b["share_of_workload_cpu"]
                net = bpf_net_ms(b["programs"], floor)
                nshare = net / 1e3 / b["workload_cores"] \
                    if net is not None and b["workload_cores"] else None
                L.append(f"| {LABELS.get(c, c)} | {fmt(b['runs_per_s'], ',.0f')} "
                         f"| {fmt(b['ms_per_s'], '.1f')} | {fmt(b['workload_cores'], '.2f')} "
                         f"| {fmt(share * 100 if share is not None else None, '.2f')}% "
                         f"| {fmt(net, '.1f')} "
                         f"| {fmt(nshare * 100 if nshare is not None else None, '.2f')}% |")
            L.append("\n| configuration | program | runs/s | ns/run | ms/s | net ns/run |")
            L.append("|---|---|---:|---:|---:|---:|")
            for c in bcs:
                for n, pr in sorted(rows[(w, c)]["bpf"]["programs"].items(),
                                    key=lambda kv: -(kv[1]["ms_per_s"] or 0)):
                    if not pr["runs_per_s"]:
                        continue
                    net = pr["ns_per_run"] - floor \
                        if floor is not None and pr["ns_per_run"] is not None else None
                    L.append(f"| {LABELS.get(c, c)} | `{n}` | {fmt(pr['runs_per_s'], ',.0f')} "
                             f"| {fmt(pr['ns_per_run'], '.0f')} | {fmt(pr['ms_per_s'], '.2f')} "
                             f"| {fmt(net, '.0f')} |")
        outs = [(c, rows[(w, c)]["outcomes_last_run"]) for c in configs
                if "outcomes_last_run" in rows[(w, c)]]
        if outs:
            L.append("\nFault outcomes mmlockd gave the workload's pid (last run of each "
                     "configuration):\n")
            L.append("| configuration | minflt+majflt (totals) | fallback_locks (fallbacks) "
                     "| fallback_lock_waits | faults (page_fault_user) | vma | vma_retry "
                     "| mmap_retry | mmap_abort | mmap_unknown | fallback (faults) "
                     "| split: classified | error bound |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for c, o in outs:
                L.append(f"| {LABELS.get(c, c)} | {o['minflt'] + o['majflt']} "
                         f"| {o['fallback_locks']} | {o['fallback_lock_waits']} "
                         f"| {o['faults']} | {o['faults_vma']} "
                         f"| {o['faults_vma_retry']} | {o['faults_mmap_retry']} "
                         f"| {o['faults_mmap_abort']} | {o['faults_mmap_unknown']} "
                         f"| {o['faults_mmap_fallback']} "
                         f"| {o.get('split_faults_seen', 0) if o.get('split_estimated') else '-'} "
                         f"| {o.get('split_err', 0) if o.get('split_estimated') else '-'} |")
    if idle:
        L.append("\n## Footprint: idle processes\n")
        L.append(f"mmlockd on its defaults and default windows "
                 f"({idle[0]['interval_s']:g} s), first with nothing started, then with "
                 f"{bench.args.idle_procs:,} processes that only sleep (blocked in read), "
                 f"measured over {bench.args.idle_seconds:g} s once the daemon tracked them and "
                 "one more window was stored. RSS: the highest VmRSS of one reading a second; "
                 "peak: VmHWM (the baseline's since the daemon started, the other since the "
                 "idle processes were started); CPU: utime + stime over the elapsed time; per "
                 "process: the difference to the baseline over the processes; in parentheses "
                 "the processes alive on the machine (another user's count in processes_tracked "
                 "too); other load: the rest of the machine's busy CPU meanwhile.\n")
        L += idle_table(idle)
    if churn:
        L.append("\n## Bounded memory: short-lived processes\n")
        L.append(f"Waves of bench_churn (--procs {bench.args.churn_procs} --threads "
                 f"{bench.args.churn_threads} --parallel 8) on the daemon's default windows "
                 f"({churn[0]['interval_s']:g} s). Peak: VmHWM over the wave and the "
                 f"{CHURN_WINDOWS} windows after it, reset before the wave "
                 f"(/proc/PID/clear_refs); RSS after: once {CHURN_WINDOWS} windows were stored "
                 "after the wave (the daemon trims its heap at the second window with "
                 "(almost) no exit); rows stored: the wave's processes "
                 "(comm bench_churn) with a row in process_stats, with faults: those whose "
                 "rows add up to minflt + majflt > 0 (each child faults); in parentheses the "
                 "processes alive on the machine. No growth: RSS after of the last wave within "
                 f"{CHURN_GROWTH_KIB / 1024:g} MiB of wave 2's.\n")
        L += churn_table(churn)
    if bench.failures:
        L.append(f"\nFailed runs (retried once; not in the medians): {len(bench.failures)}; "
                 "see `failures` in the JSON.\n")
    L.append("\nColumns: see docs/cost.md. JSON with every run: "
             f"`{name}.json`.\n")
    with open(base + ".md", "w") as f:
        f.write("\n".join(L))
    log(f"wrote {base}.md and {base}.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--suite", default="paired", choices=sorted(SUITES) + ["paired"],
                    help="paired (the default): the paired, adjacent measurement "
                    "(bench/paired.py; main.md); main: the per-round throughput view "
                    "(throughput.md); split, breakdown, filters: see above")
    ap.add_argument("--configs", type=lambda s: s.split(","), default=None,
                    help="comma-separated configurations instead of the suite's (first "
                    "should be none)")
    ap.add_argument("--workloads", type=lambda s: s.split(","), default=list(WORKLOADS))
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--nice", type=int, default=-5,
                    help="niceness of the driver, the workloads and the tracers (a shared "
                    "machine's other load then disturbs less)")
    ap.add_argument("--max-quiet-wait", type=float, default=5,
                    help="seconds to wait for an idle machine before each run")
    ap.add_argument("--churn", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the bounded-memory check (short-lived processes)")
    ap.add_argument("--churn-procs", type=int, default=10000)
    ap.add_argument("--churn-threads", type=int, default=4)
    ap.add_argument("--churn-waves", type=int, default=5,
                    help="waves of --churn-procs processes per configuration (growth is "
                    "judged from wave 2 to the last)")
    ap.add_argument("--idle-procs", type=int, default=10000,
                    help="idle processes for the footprint (0: no idle measurement)")
    ap.add_argument("--idle-seconds", type=float, default=30,
                    help="seconds the idle footprint is measured over, each time")
    ap.add_argument("--only", choices=["footprint"], default=None,
                    help="footprint: the idle and churn measurements alone, no workload "
                    "rounds (footprint.md / footprint.json)")
    ap.add_argument("--bpf-stats", action="store_true",
                    help="set kernel.bpf_stats_enabled for the run (restored at exit) and "
                    "report the time mmlockd's BPF programs take per run and per second")
    ap.add_argument("--progress", type=float, default=0, metavar="S",
                    help="have the workloads report their rounds/s every S seconds of the "
                    "warm-up and the measured phase (kept in the JSON as each run's "
                    "\"progress\": is the warm-up long enough, is the phase steady)")
    ap.add_argument("--noise-floor", action="store_true",
                    help="add none_again (a second untraced run each round: the noise floor) "
                    "to the suite's configurations")
    ap.add_argument("--quick", action="store_true",
                    help="paired: the quick form for a change: one workload (mix unless "
                    "--workloads), the controls and the defaults on both sources, fewer pairs "
                    "(about 5 minutes; paired-quick.md)")
    ap.add_argument("--pairs", type=int, default=None,
                    help="paired: on windows per started/stopped configuration (default 7, "
                    "--quick 6)")
    ap.add_argument("--window", type=float, default=1.5,
                    help="paired: seconds of each on and off window")
    ap.add_argument("--fast-pairs", type=int, default=None,
                    help="paired: pairs of each fast configuration (bench-owned programs "
                    "switched in milliseconds: none_fast, inject_fast, floor_all_fast; default "
                    "250, --quick 200)")
    ap.add_argument("--fast-ticks", type=int, default=3,
                    help="paired: ticks in each fast window")
    ap.add_argument("--tick", type=float, default=0.05,
                    help="paired: the workload's tick (--progress), seconds")
    ap.add_argument("--settle", type=float, default=0.5,
                    help="paired: seconds left out after a tracer is ready and after it ended")
    ap.add_argument("--inject-ns", type=int, default=150,
                    help="paired: the injected control's spin per user fault of the workload")
    ap.add_argument("--account-seconds", type=float, default=4,
                    help="paired: the direct account's window per configuration (bpf_stats on)")
    ap.add_argument("--paired-out", default=None,
                    help="paired: report name in --out (default main, --quick paired-quick)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--workload-arg", action="append", default=[], metavar="WORKLOAD:ARG",
                    help="extra argument for one workload, e.g. swapin:--writers=4")
    args = ap.parse_args()
    args.argv = sys.argv[1:]
    if args.suite == "paired":
        if args.pairs is None:
            args.pairs = 6 if args.quick else 7
        if args.fast_pairs is None:
            args.fast_pairs = 200 if args.quick else 250
        if args.quick and "--workloads" not in " ".join(args.argv):
            args.workloads = ["mix"]
    args.workload_args = {}
    for wa in args.workload_arg:
        w, arg = wa.split(":", 1)
        args.workload_args.setdefault(w, []).append(arg)
    for w in args.workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w}")
    if os.geteuid() != 0:
        print("bench: needs root (system-wide perf events, cgroups, swapon)", file=sys.stderr)
        return 77
    if shutil.which("perf") is None:
        print("bench: perf is not installed", file=sys.stderr)
        return 77

    def on_signal(sig, frame):
        raise Interrupted(signal.Signals(sig).name)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    bench = Bench(args)
    t_start = time.time()
    try:
        bench.setup()
        if args.suite == "paired" and args.only != "footprint":
            import paired  # bench/paired.py, beside this file
            paired.run(bench, sys.modules[__name__])
            return 0
        configs = bench.run_suite() if args.only != "footprint" else []
        idle = bench.run_idle() if args.idle_procs > 0 else []
        churn = bench.run_churn() if args.churn and args.churn_waves > 0 else []
        rows = summarize(bench, configs)
        for (w, c), s in rows.items():
            if "repeatability" in s:
                log(f"{w}: " + " ".join(l.strip() for l in repeatability_lines(
                    s["repeatability"])))
        write_report(bench, configs, rows, idle, churn, t_start, time.time())
    except Interrupted as e:
        log(f"interrupted ({e}): cleaning up")
        return 130
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        bench.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
