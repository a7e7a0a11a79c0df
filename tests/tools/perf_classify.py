#!/usr/bin/env python3
"""perf_classify.py: classifies user page faults from `perf script` output, apart from mmlockd.

It reads what `perf record` captured of these tracepoints (system-wide or not):

    exceptions:page_fault_user                  a user fault began
    mmap_lock:mmap_lock_start_locking           (counted only)
    mmap_lock:mmap_lock_acquire_returned        WITH a kernel callchain: who took the lock
    filemap:mm_filemap_fault                    an attempt to fault a file page
    filemap:mm_filemap_add_to_page_cache        (counted only)

and applies the rules of the design notes (DESIGN.md, "Classifying a fault"). It was written from
those rules and from the kernel's fault paths, not from mmlockd's code; the callchains are
symbolized by perf, not by mmlockd. The rules as implemented here:

  * Per thread, a fault window opens at page_fault_user and closes at the thread's next fault, at
    an mmap_lock acquisition of the thread that is not on that user fault's path, at the thread's
    exit, when it has been open longer than --window-limit (1 s), or at the end of the data.
  * A callchain is on the user fault's path when the fault entry (asm_exc_page_fault on x86_64)
    is its outermost kernel frame and occurs once: the chain starts in the exception taken from
    user mode. A chain that goes on past the entry, or through it twice, is a fault taken in
    kernel mode (copy_to_user in a syscall, rseq on the way back to user space, ...): it is not
    this user fault's, and it closes the window like any other acquisition from a syscall.
  * On the user fault's path, an acquisition through lock_mm_and_find_vma (or taken by the arch
    fault handler itself, below any handle_mm_fault frame) is a *fallback* to mmap_lock if it
    succeeded; one taken inside handle_mm_fault (e.g. the anon_vma trylock of a first touch) is
    an *attempt* under the VMA lock, as is any mm_filemap_fault.
  * At close:
        vma           no fallback, at most one mm_filemap_fault of the first attempted page
        vma_retry     no fallback, two or more mm_filemap_fault of that page (patched kernels)
        mmap_retry    a fallback, and an attempt before the first fault-path acquisition
        mmap_abort    a fallback, no attempt, the fault path reached mmap_lock less than
                      --abort-gap-us (20 us) after the fault began
        mmap_unknown  a fallback, no attempt, reached later (anonymous and swap faults that
                      waited under the VMA lock and then retried leave no event)
    fallback = mmap_retry + mmap_abort + mmap_unknown; lock_retries = successful fault-path
    acquisitions beyond the first in one window. "Reached" is the first acquire_returned of the
    fault path (the trylock in get_mmap_lock_carefully()), successful or not.

Diagnostics kept per process besides the outcomes: kernel_faults (mmap_lock acquisitions of
faults taken in kernel mode), kfault_in_window (those of them that came while a user fault window
was still open: a classifier that takes every lock_mm_and_find_vma acquisition for a fallback of
the open user fault counts each of them as one; see --kernel-faults-as-fallbacks), lost (perf
PERF_RECORD_LOST lines: any loss makes exact counts meaningless).

Usage:
  perf_classify.py PERF_DATA | --script FILE|-  [--pid PID]... [--tree PID]... [--format F]
  perf_classify.py --self-test     (the rules on synthetic perf script text)
Record the data with, e.g.:
  perf record -a -k mono -m 1024 --kernel-callchains -o perf.data \\
      -e exceptions:page_fault_user -e mmap_lock:mmap_lock_start_locking \\
      -e mmap_lock:mmap_lock_acquire_returned/call-graph=fp/ \\
      -e filemap:mm_filemap_fault -e filemap:mm_filemap_add_to_page_cache
(`-k mono` is the clock mmlockd uses; only differences of times within one thread matter here.)
The data are read with
  perf script -i PERF_DATA --ns -F comm,pid,tid,time,event,trace,ip,sym --show-task-events
              --show-lost-events
which prints the samples in time order, each acquire_returned followed by its callchain.

Python 3 standard library only.
"""

import argparse
import json
import re
import subprocess
import sys

OUTCOMES = ("vma", "vma_retry", "mmap_retry", "mmap_abort", "mmap_unknown")
COUNTERS = ("faults",) + OUTCOMES + ("fallback", "lock_retries")
DIAG = ("kernel_faults", "kfault_in_window", "filemap_faults", "pages_added", "acquisitions",
        "start_lockings", "fault_path_acquisitions", "in_fault_acquisitions",
        "windows_timed_out")

# The exception entry of a page fault, the outermost kernel frame of a fault taken in user mode.
FAULT_ENTRY = {"asm_exc_page_fault",  # x86_64
               "el0_da", "el0_ia",   # arm64 (not tested here)
               }
# Fallback: the generic helper that takes mmap_lock for a fault (mm/memory.c).
FALLBACK_FRAMES = {"lock_mm_and_find_vma"}
# Arch fault handlers: met before any handle_mm_fault frame, they took the lock themselves.
ARCH_HANDLERS = {"do_user_addr_fault", "exc_page_fault", "do_page_fault", "__do_page_fault",
                 "do_mem_abort", "do_translation_fault"}
# Inside handling the fault (under the VMA lock when it comes before a fallback).
IN_FAULT_FRAMES = {"handle_mm_fault", "__handle_mm_fault"}

HEADER = re.compile(r"^\s*(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+"
                    r"(?:\[\d+\]\s+)?(?P<time>\d+\.\d+):\s+(?P<rest>.*)$")
EVENT = re.compile(r"^(?P<event>[\w.-]+:[\w.-]+):\s*(?P<trace>.*)$")
FRAME = re.compile(r"^\s+(?P<addr>[0-9a-fA-F]+)\s+(?P<sym>\S+)")
FIELD = re.compile(r"(\w+)=(\"[^\"]*\"|\S+)")
TASK = re.compile(r"PERF_RECORD_(?P<kind>FORK|EXIT)\((?P<pid>\d+):(?P<tid>\d+)\):"
                  r"\((?P<ppid>\d+):(?P<ptid>\d+)\)")
COMM = re.compile(r"PERF_RECORD_COMM(?: exec)?: (?P<comm>.*):(?P<pid>\d+)/(?P<tid>\d+)\s*$")


def base_name(sym):
    """Symbol without compiler suffixes (.isra.0, .cold, .constprop.0) or +offset."""
    sym = sym.split("+", 1)[0]
    return sym.split(".", 1)[0] if not sym.startswith(".") else sym


def chain_kind(frames, fallback_frames=FALLBACK_FRAMES, kernel_faults_as_fallbacks=False):
    """'fallback', 'in_fault', 'kernel_fault', 'other' or 'unknown' for a kernel callchain
    (innermost frame first)."""
    names = [base_name(f) for f in frames if f and f != "[unknown]"]
    if not names:
        return "unknown"
    entries = [i for i, n in enumerate(names) if n in FAULT_ENTRY]
    user_fault = len(entries) == 1 and entries[0] == len(names) - 1
    if not user_fault:
        if entries or any(n in fallback_frames for n in names):
            # a fault taken in kernel mode (or nested in the return from a user fault)
            for n in names:
                if n in IN_FAULT_FRAMES:
                    break
                if n in fallback_frames or n in ARCH_HANDLERS:
                    return "fallback" if kernel_faults_as_fallbacks else "kernel_fault"
        return "other"
    for n in names:
        if n in fallback_frames:
            return "fallback"
        if n in IN_FAULT_FRAMES:
            return "in_fault"
        if n in ARCH_HANDLERS:
            return "fallback"
    return "other"


class Window:
    __slots__ = ("pid", "start", "page", "same_page", "attempt", "fallbacks", "first_fb")

    def __init__(self, pid, start):
        self.pid = pid
        self.start = start
        self.page = None          # the first attempted (dev, ino, ofs)
        self.same_page = 0        # mm_filemap_fault of that page
        self.attempt = False      # an attempt before the first fault-path acquisition
        self.fallbacks = 0        # successful fault-path acquisitions
        self.first_fb = None      # time of the first fault-path acquire_returned


class Classifier:
    def __init__(self, abort_gap_ns=20000, window_limit_ns=1000000000,
                 kernel_faults_as_fallbacks=False, show=None):
        self.abort_gap_ns = abort_gap_ns
        self.window_limit_ns = window_limit_ns
        self.kfaf = kernel_faults_as_fallbacks
        self.show = show      # keep a line per kernel-mode fault met in an open window
        self.shown = []       # (pid, line)
        self.windows = {}     # tid -> Window
        self.stats = {}       # pid -> {counter: n}
        self.comm = {}        # pid -> latest comm
        self.children = {}    # pid -> set of child pids (process forks only)
        self.lost = 0
        self.samples = 0
        self.unparsed = 0

    def ps(self, pid):
        s = self.stats.get(pid)
        if s is None:
            s = dict.fromkeys(COUNTERS + DIAG, 0)
            self.stats[pid] = s
        return s

    def close(self, tid):
        w = self.windows.pop(tid, None)
        if w is None:
            return
        s = self.ps(w.pid)
        if not w.fallbacks:
            s["vma_retry" if w.same_page >= 2 else "vma"] += 1
            return
        if w.attempt:
            s["mmap_retry"] += 1
        elif w.first_fb - w.start < self.abort_gap_ns:
            s["mmap_abort"] += 1
        else:
            s["mmap_unknown"] += 1
        s["fallback"] += 1
        s["lock_retries"] += w.fallbacks - 1

    def window(self, tid, t):
        w = self.windows.get(tid)
        if w is not None and t - w.start > self.window_limit_ns:
            self.close(tid)
            self.ps(w.pid)["windows_timed_out"] += 1
            return None
        return w

    # --- events ---
    def sample(self, comm, pid, tid, t, event, trace, frames):
        self.samples += 1
        if pid not in self.comm and comm:
            self.comm[pid] = comm
        if event == "exceptions:page_fault_user":
            self.close(tid)
            self.ps(pid)["faults"] += 1
            self.windows[tid] = Window(pid, t)
        elif event == "mmap_lock:mmap_lock_start_locking":
            self.ps(pid)["start_lockings"] += 1
        elif event == "mmap_lock:mmap_lock_acquire_returned":
            self.ps(pid)["acquisitions"] += 1
            f = dict(FIELD.findall(trace))
            success = f.get("success", "true") in ("true", "1")
            kind = chain_kind(frames, kernel_faults_as_fallbacks=self.kfaf)
            w = self.window(tid, t)
            if kind == "kernel_fault":
                self.ps(pid)["kernel_faults"] += 1
                if w is not None:
                    self.ps(pid)["kfault_in_window"] += 1
                    if self.show:
                        self.shown.append((pid, "pid %d tid %d: user fault at %.9f, fault in "
                                           "kernel mode at %.9f (+%.1f us): %s" % (
                                               pid, tid, w.start / 1e9, t / 1e9,
                                               (t - w.start) / 1e3, " < ".join(frames))))
            if kind == "unknown" or w is None:
                return
            if kind == "fallback":
                self.ps(pid)["fault_path_acquisitions"] += 1
                if w.first_fb is None:
                    w.first_fb = t
                if success:
                    w.fallbacks += 1
            elif kind == "in_fault":
                self.ps(pid)["in_fault_acquisitions"] += 1
                if w.first_fb is None:
                    w.attempt = True
            else:  # a syscall or another kernel path: the thread has left the fault
                self.close(tid)
        elif event == "filemap:mm_filemap_fault":
            self.ps(pid)["filemap_faults"] += 1
            w = self.window(tid, t)
            if w is None:
                return
            f = dict(FIELD.findall(trace))
            page = (f.get("dev"), f.get("ino"), f.get("ofs", f.get("index")))
            if w.first_fb is None:
                w.attempt = True
            if w.page is None:
                w.page = page
            if page == w.page:
                w.same_page += 1
        elif event == "filemap:mm_filemap_add_to_page_cache":
            self.ps(pid)["pages_added"] += 1
        # released and other events do not change a window

    def task(self, kind, pid, tid, ppid):
        if kind == "EXIT":
            self.close(tid)
        elif kind == "FORK" and pid != ppid:
            self.children.setdefault(ppid, set()).add(pid)

    def set_comm(self, pid, comm):
        self.comm[pid] = comm

    def finish(self):
        for tid in list(self.windows):
            self.close(tid)

    def tree(self, root):
        out, todo = set(), [root]
        while todo:
            p = todo.pop()
            if p in out:
                continue
            out.add(p)
            todo.extend(self.children.get(p, ()))
        return out


class Fanout:
    """Feeds the same stream to several classifiers (e.g. with and without a rule)."""

    def __init__(self, cls):
        self.cls = cls

    def __getattr__(self, name):
        if name in ("lost", "unparsed", "samples", "comm"):
            return getattr(self.cls[0], name)
        return lambda *a: [getattr(c, name)(*a) for c in self.cls]

    def __setattr__(self, name, value):
        if name == "cls":
            object.__setattr__(self, name, value)
        else:
            for c in self.cls:
                setattr(c, name, value)


def parse(lines, cl):
    cur = None  # pending sample: [comm, pid, tid, time_ns, event, trace, frames]

    def flush():
        nonlocal cur
        if cur is not None:
            cl.sample(*cur)
            cur = None

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            continue
        if cur is not None and line[0] in " \t":
            m = FRAME.match(line)
            if m and not HEADER.match(line):
                cur[6].append(m.group("sym"))
                continue
        m = HEADER.match(line)
        if not m:
            if "PERF_RECORD_LOST" in line:
                flush()
                n = re.search(r"lost[:= ]+(\d+)", line, re.I)
                cl.lost += int(n.group(1)) if n else 1
            else:
                cl.unparsed += 1
            continue
        flush()
        rest = m.group("rest")
        pid, tid = int(m.group("pid")), int(m.group("tid"))
        sec, frac = m.group("time").split(".")
        t = int(sec) * 1000000000 + int((frac + "000000000")[:9])
        if rest.startswith("PERF_RECORD_"):
            tm = TASK.search(rest)
            if tm:
                cl.task(tm.group("kind"), int(tm.group("pid")), int(tm.group("tid")),
                        int(tm.group("ppid")))
            cm = COMM.search(rest)
            if cm and cm.group("pid") == cm.group("tid"):
                cl.set_comm(int(cm.group("pid")), cm.group("comm"))
            elif "PERF_RECORD_LOST" in rest:
                n = re.search(r"lost[:= ]+(\d+)", rest, re.I)
                cl.lost += int(n.group(1)) if n else 1
            continue
        em = EVENT.match(rest)
        if not em:
            cl.unparsed += 1
            continue
        cur = [m.group("comm").strip(), pid, tid, t, em.group("event"), em.group("trace"), []]
    flush()
    cl.finish()


def perf_script_lines(data, perf="perf"):
    cmd = [perf, "script", "-i", data, "--ns", "-F", "comm,pid,tid,time,event,trace,ip,sym",
           "--show-task-events", "--show-lost-events"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         errors="replace", bufsize=1 << 20)
    yield from p.stdout
    if p.wait() != 0:
        raise SystemExit("perf_classify: `%s` failed with status %d" % (" ".join(cmd),
                                                                         p.returncode))

# --- self test: synthetic `perf script` text for each rule -----------------------------------

USER_FB = ["lock_mm_and_find_vma", "exc_page_fault", "asm_exc_page_fault"]
ANON_TRY = ["__mmap_lock_do_trace_acquire_returned", "__vmf_anon_prepare", "do_anonymous_page",
            "__handle_mm_fault", "handle_mm_fault", "exc_page_fault", "asm_exc_page_fault"]
MMAP = ["__mmap_lock_do_trace_acquire_returned", "vm_mmap_pgoff", "ksys_mmap_pgoff",
        "do_syscall_64", "entry_SYSCALL_64_after_hwframe"]
FORK = ["__mmap_lock_do_trace_acquire_returned", "dup_mmap", "copy_process", "kernel_clone",
        "__do_sys_clone", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"]
KFAULT = ["lock_mm_and_find_vma", "exc_page_fault", "asm_exc_page_fault", "_copy_to_user",
          "cp_new_stat", "__do_sys_newfstat", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"]
RSEQ = ["lock_mm_and_find_vma", "exc_page_fault", "asm_exc_page_fault", "__put_user_8",
        "__rseq_handle_notify_resume", "exit_to_user_mode_loop", "irqentry_exit_to_user_mode",
        "asm_exc_page_fault"]


def _synthetic(events):
    """perf script text for (pid, tid, time_us, kind, arg) tuples."""
    out = []
    for pid, tid, us, kind, arg in events:
        t = "%d.%09d" % (1000 + us // 1000000, (us % 1000000) * 1000)
        head = "%16s %d/%d %s: " % ("wl", pid, tid, t)
        if kind == "fault":
            out.append(head + "exceptions:page_fault_user: address=0x%x ip=0x401000 "
                       "error_code=0x6 ffffffff821f5340 exc_page_fault" % arg)
        elif kind == "ff":
            out.append(head + "filemap:mm_filemap_fault: dev=254:0 ino=3c94b ofs=%d "
                       "ffffffff81592c92 filemap_fault" % (arg * 4096))
        elif kind in ("acq", "acqfail"):
            out.append(head + "mmap_lock:mmap_lock_acquire_returned: mm=0xffff888100000000 "
                       "memcg_id=1 write=false success=%s" % ("true" if kind == "acq" else
                                                              "false"))
            out.extend("\tffffffff81000000 %s" % f for f in arg)
            out.append("")
        elif kind == "start":
            out.append(head + "mmap_lock:mmap_lock_start_locking: mm=0xffff888100000000 "
                       "memcg_id=1 write=false ffffffff815df0d4 lock_mm_and_find_vma")
        elif kind == "fork":
            out.append(head + "PERF_RECORD_FORK(%d:%d):(%d:%d)" % (arg, arg, pid, tid))
        elif kind == "exit":
            out.append(head + "PERF_RECORD_EXIT(%d:%d):(1:1)" % (pid, tid))
    return [l + "\n" for l in out]


def self_test():
    A = 0x7f0000000000
    ev = [
        # pid 10: one fault per outcome, plus the window rules
        (10, 10, 0, "fault", A), (10, 10, 10, "ff", 1),                     # vma
        (10, 10, 100, "fault", A), (10, 10, 102, "acq", USER_FB),           # abort (2 us)
        (10, 10, 200, "fault", A), (10, 10, 260, "acq", USER_FB),           # unknown (60 us)
        (10, 10, 300, "fault", A), (10, 10, 301, "ff", 7),                  # retry: an attempt,
        (10, 10, 400, "acq", USER_FB), (10, 10, 401, "ff", 7),              # then the fallback
        (10, 10, 500, "fault", A), (10, 10, 501, "acqfail", ANON_TRY),      # retry: trylock
        (10, 10, 503, "acq", USER_FB),                                      # failed first
        (10, 10, 600, "fault", A), (10, 10, 601, "ff", 3),                  # vma_retry
        (10, 10, 640, "ff", 3),
        (10, 10, 700, "fault", A), (10, 10, 701, "acqfail", USER_FB),       # abort: reached at
        (10, 10, 702, "start", None), (10, 10, 790, "acq", USER_FB),        # the trylock (1 us)
        (10, 10, 791, "acq", USER_FB),                                      # + 1 lock retry
        (10, 10, 800, "fault", A), (10, 10, 801, "acq", MMAP),              # vma: closed by a
        (10, 10, 803, "acq", KFAULT),                                       # syscall first
        (10, 10, 900, "fault", A), (10, 10, 950, "acq", KFAULT),            # vma (naive: unknown)
        (10, 10, 960, "acq", KFAULT),                                       # (naive: lock retry)
        (10, 10, 1000, "fault", A), (10, 10, 1001, "acq", RSEQ),            # vma (naive: abort)
        (10, 10, 1100, "fault", A), (10, 10, 1101, "acq", FORK),            # vma: fork takes two
        (10, 10, 1102, "acq", FORK), (10, 10, 1103, "fork", 11),            # mmap_locks
        (11, 11, 1200, "fault", A), (11, 11, 1205, "acq", USER_FB),         # child: abort
        (11, 11, 1300, "exit", None),
        (10, 12, 1400, "fault", A), (10, 12, 1401, "exit", None),           # thread 12: vma,
        (10, 12, 1402, "acq", USER_FB),                                     # closed at its exit
        (10, 10, 2000, "fault", A), (10, 10, 2000 + 1500000, "acq", USER_FB),  # vma: timed out
        (10, 13, 3000000, "fault", A),                                      # vma: no later event
    ]
    expect = {10: dict(faults=14, vma=8, vma_retry=1, mmap_retry=2, mmap_abort=2, mmap_unknown=1,
                       fallback=5, lock_retries=1, kernel_faults=4, kfault_in_window=2,
                       windows_timed_out=1),
              11: dict(faults=1, vma=0, mmap_abort=1, fallback=1)}
    naive = {10: dict(vma=6, mmap_abort=3, mmap_unknown=2, fallback=7, lock_retries=2)}
    failed = 0
    for label, rule, want in (("rules", False, expect), ("naive", True, naive)):
        cl = Classifier(kernel_faults_as_fallbacks=rule)
        parse(_synthetic(ev), cl)
        for pid, keys in want.items():
            for k, v in keys.items():
                got = cl.stats.get(pid, {}).get(k)
                if got != v:
                    print("self-test %s: pid %d %s = %s, expected %d" % (label, pid, k, got, v))
                    failed += 1
        if label == "rules" and cl.tree(10) != {10, 11}:
            print("self-test: tree(10) = %s" % cl.tree(10))
            failed += 1
    print("perf_classify self-test: %s" % ("ok" if not failed else "%d FAILED" % failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the top of this file for the rules.")
    ap.add_argument("data", nargs="?", help="perf.data file (runs `perf script` on it)")
    ap.add_argument("--script", metavar="FILE",
                    help="read `perf script` text from FILE ('-': stdin) instead")
    ap.add_argument("--perf", default="perf", help="perf binary (default: perf)")
    ap.add_argument("--pid", type=int, action="append", default=[],
                    help="report this process (repeatable)")
    ap.add_argument("--tree", type=int, action="append", default=[],
                    help="report this process and every process it forked, recursively")
    ap.add_argument("--all", action="store_true", help="report every process (the default "
                    "when neither --pid nor --tree is given)")
    ap.add_argument("--format", choices=("table", "json", "expected"), default="table",
                    help="table (default), json, or key=value lines (the .expected files)")
    ap.add_argument("--abort-gap-us", type=float, default=20.0,
                    help="a fallback reached sooner after the fault began is an abort "
                    "(default 20)")
    ap.add_argument("--window-limit", type=float, default=1.0,
                    help="seconds after which an open fault window is closed (default 1)")
    ap.add_argument("--kernel-faults-as-fallbacks", action="store_true",
                    help="count a fault taken in kernel mode as a fallback of the open user "
                    "fault (the naive rule), to measure what that rule changes")
    ap.add_argument("--show-kernel-faults", action="store_true",
                    help="print (to stderr) each fault taken in kernel mode while a user fault "
                    "window of the thread was open, with its callchain")
    ap.add_argument("--also-naive", action="store_true",
                    help="with --format expected: also write the counts under the naive rule "
                    "of --kernel-faults-as-fallbacks, as naive.* keys")
    ap.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                    help="with --format expected: an extra line to write first")
    ap.add_argument("--self-test", action="store_true",
                    help="check the rules on synthetic perf script text and exit")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if bool(a.data) == bool(a.script):
        ap.error("give either a perf.data file or --script FILE")

    cl = Classifier(int(a.abort_gap_us * 1000), int(a.window_limit * 1e9),
                    a.kernel_faults_as_fallbacks, a.show_kernel_faults)
    naive = Classifier(int(a.abort_gap_us * 1000), int(a.window_limit * 1e9), True)
    feed = Fanout([cl, naive]) if a.also_naive else cl
    if a.script:
        f = sys.stdin if a.script == "-" else open(a.script, errors="replace")
        parse(f, feed)
    else:
        parse(perf_script_lines(a.data, a.perf), feed)

    if a.pid or a.tree:
        pids = set(a.pid)
        for r in a.tree:
            pids |= cl.tree(r)
    else:
        pids = set(cl.stats)
    pids = sorted(pids)
    rows = {p: cl.stats.get(p, dict.fromkeys(COUNTERS + DIAG, 0)) for p in pids}
    for pid, line in cl.shown:
        if pid in rows:
            print(line, file=sys.stderr)
    total = {k: sum(r[k] for r in rows.values()) for k in COUNTERS + DIAG}

    if a.format == "json":
        json.dump({"lost": cl.lost, "samples": cl.samples, "unparsed": cl.unparsed,
                   "abort_gap_us": a.abort_gap_us,
                   "processes": [dict(pid=p, comm=cl.comm.get(p, ""), **rows[p]) for p in pids],
                   "total": total}, sys.stdout, indent=1)
        print()
    elif a.format == "expected":
        for h in a.header:
            print(h)
        print("lost=%d" % cl.lost)
        print("pids=%s" % " ".join(str(p) for p in pids))
        for p in pids:
            print("pid.%d.comm=%s" % (p, cl.comm.get(p, "")))
            for k in COUNTERS + DIAG:
                print("pid.%d.%s=%d" % (p, k, rows[p][k]))
        for k in COUNTERS + DIAG:
            print("total.%s=%d" % (k, total[k]))
        if a.also_naive:
            for p in pids:
                r = naive.stats.get(p, dict.fromkeys(COUNTERS, 0))
                for k in COUNTERS:
                    print("naive.pid.%d.%s=%d" % (p, k, r[k]))
    else:
        cols = COUNTERS + ("kernel_faults", "kfault_in_window")
        print("%-8s %-16s " % ("pid", "comm") + " ".join("%12s" % c for c in cols))
        for p in pids:
            print("%-8d %-16s " % (p, cl.comm.get(p, "")[:16]) +
                  " ".join("%12d" % rows[p][c] for c in cols))
        if len(pids) > 1:
            print("%-8s %-16s " % ("total", "") + " ".join("%12d" % total[c] for c in cols))
        print("samples %d, lost %d, unparsed lines %d" % (cl.samples, cl.lost, cl.unparsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
