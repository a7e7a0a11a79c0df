#!/usr/bin/env python3
# The Debian guest lab's results (lab/debian.sh results): lab/results/debian.md from the guests'
# outputs (lab/build/debian/run-KERNEL/out), their logs under lab/results/debian-logs/KERNEL/, and
# the recordings under tests/data/debian-KERNEL-filemap.{rec.xz,expect} for the replay test.
# The numbers compare, for the workload process (labload) alone, mmlockd's stored counts with
# labload's own getrusage() and with `perf stat` of the same tracepoints on the same process.
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time

COUNTS = ["minflt", "majflt", "faults", "faults_vma", "faults_vma_retry", "faults_mmap_retry",
          "faults_mmap_abort", "faults_mmap_unknown", "mmap_lock_read", "mmap_lock_write",
          "mmap_lock_waits", "mmap_lock_by_fault", "fallback_locks", "fallback_lock_waits"]
LOGS = ["env.txt", "checks.txt", "install.log", "status-after-install.txt", "journal-reload.txt",
        "journal-watchdog.txt", "journal-warnings.txt", "denials.txt", "security.txt", "report.txt",
        "stop.txt", "upgrade.log", "upgrade-schema.txt", "purge.log", "record.out",
        "numbers-perf.log", "numbers-bpf.log", "numbers-perf.out", "numbers-bpf.out",
        "numbers-perf.perfstat", "numbers-bpf.perfstat", "numbers-perf.report.txt",
        "numbers-bpf.report.txt", "numbers-perf.status.json", "numbers-bpf.status.json",
        "status.json", "status-reload.json"]


def kv(line):
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))


def checks(out):
    rows = {}
    p = os.path.join(out, "checks.txt")
    if os.path.exists(p):
        for line in open(p, errors="replace"):
            parts = line.rstrip("\n").split("|", 2)
            if len(parts) == 3:
                rows[parts[0]] = (parts[1], parts[2])
    return rows


def env(out):
    d = {"symbols": []}
    p = os.path.join(out, "env.txt")
    if not os.path.exists(p):
        return d
    for line in open(p, errors="replace"):
        line = line.strip()
        if line.startswith("symbol "):
            d["symbols"].append(line.split()[1])
        elif line.startswith("Linux "):
            d["uname"] = line
        elif "=" in line and not line.startswith("field"):
            k, v = line.split("=", 1)
            d[k] = v
    d["memcg_field"] = "memcg_path" if "memcg_path" in open(p, errors="replace").read() else "memcg_id"
    return d


def perfstat(path):
    """perf stat -x, output: the counts of the events in the order perf printed them (the
    filtered events have the same name, so the order of PERF_EV in debian-guest.sh names them)."""
    names = ["minor_faults", "major_faults", "page_fault_user", "read_acquired", "write_acquired", "read_start", "acquire_failed"]
    vals = []
    if not os.path.exists(path):
        return {}
    for line in open(path, errors="replace"):
        f = line.strip().split(",")
        if len(f) > 2 and (":" in f[2] or f[2].endswith("-faults")):
            vals.append(int(f[0]) if f[0].isdigit() else None)
    return dict(zip(names, vals))


def workload_db(path):
    if not os.path.exists(path):
        return None
    db = sqlite3.connect(path)
    cols = [r[1] for r in db.execute("PRAGMA table_info(process_stats)")]
    sel = ", ".join(f"coalesce(sum({c}),0)" if c in cols else "0" for c in COUNTS)
    row = db.execute(f"SELECT {sel}, count(DISTINCT pid) FROM process_stats WHERE (pid, start_time) IN "
                     "(SELECT pid, start_time FROM process_stats WHERE comm = 'labload')").fetchone()
    d = dict(zip(COUNTS + ["pids"], row))
    ev = db.execute("SELECT coalesce(sum(lost), 0) FROM event_windows").fetchone()
    d["lost"] = ev[0]
    return d


def status_sources(path):
    if not os.path.exists(path):
        return {}
    try:
        doc = json.load(open(path))
    except ValueError:
        return {}
    res = {}
    for c in doc.get("collectors", []):
        note = c.get("source_note") or c.get("state") or ""
        res[c.get("name")] = (c.get("source", "?"), note)
    return res


def states(path):
    """name -> (state, source, reason) from an /api/v1/status reply."""
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return {}
    return {c.get("name"): (c.get("state", "?"), c.get("source", "?"), c.get("reason", ""))
            for c in doc.get("collectors", [])}


def bpf_why(path):
    """The lines of a --source bpf log that say why the programs did not load."""
    if not os.path.exists(path):
        return []
    keep = [l.strip() for l in open(path, errors="replace")
            if re.search(r"BPF source|verifier|libbpf: (prog|failed|load)|kfunc|not found", l)]
    return [re.sub(r"^<\d>", "", l)[:300] for l in keep][:8]


def journal(out):
    """The unit's journal: how many entries at each priority, and entries whose MESSAGE holds a
    line break or a leftover "<N>" prefix (one line each, priority parsed)."""
    p = os.path.join(out, "journal-mmlockd.json")
    pri, multi, prefix, n = {}, 0, 0, 0
    if not os.path.exists(p):
        return None
    for line in open(p, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("_COMM") != "mmlockd" and e.get("SYSLOG_IDENTIFIER") != "mmlockd":
            continue
        n += 1
        m = e.get("MESSAGE", "")
        if isinstance(m, list):  # bytes: not UTF-8
            m = bytes(m).decode("utf-8", "replace")
        pri[e.get("PRIORITY", "?")] = pri.get(e.get("PRIORITY", "?"), 0) + 1
        multi += "\n" in m
        prefix += bool(re.match(r"<\d>", m))
    return {"entries": n, "priorities": pri, "multiline": multi, "prefix": prefix}


def err(a, b):
    if a is None or b is None:
        return "-"
    if b == 0:
        return "exact" if a == 0 else "n/a"
    e = 100.0 * (a - b) / b
    return f"{e:+.2f}%"


def console_checks(path, rows):
    """Checks the guest printed but did not sync to its disk before it died: from the console."""
    if not os.path.exists(path):
        return
    for line in open(path, errors="replace"):
        m = re.search(r"\[guest [0-9.]+s\] check ([a-z0-9_.]+): (ok|FAIL|skip) \((.*)\)\s*$", line)
        if m and m.group(1) not in rows:
            rows[m.group(1)] = (m.group(2), m.group(3) + " (from the console)")


def recount_denials(out, rows):
    """The guest's first pattern also matched systemd's banner in the kernel log ("+SECCOMP"):
    recount denials.txt without it, and say so."""
    p = os.path.join(out, "denials.txt")
    if "sandbox.denials" not in rows or not os.path.exists(p):
        return
    lines = [l for l in open(p, errors="replace") if l.strip() and "running in system mode" not in l]
    st, fig = rows["sandbox.denials"]
    if st == "FAIL" and not lines and "running in system mode" in fig:
        rows["sandbox.denials"] = ("ok", "0 denial lines (recounted on the host without systemd's "
                                   "banner, whose \"+SECCOMP\" the guest's pattern matched); "
                                   + fig.split("; ")[-1])


def collect(build, kernels):
    data = {}
    for k in kernels:
        out = os.path.join(build, f"run-{k}", "out")
        if not os.path.isdir(out):
            continue
        rows = checks(out)
        run = os.path.join(build, f"run-{k}")
        console_checks(os.path.join(run, "console.log"), rows)
        recount_denials(out, rows)
        inc = os.path.join(run, "incomplete")
        d = {"out": out, "checks": rows,
             "incomplete": open(inc).read().strip() if os.path.exists(inc) else "", "env": env(out), "journal": journal(out),
             "boot_seconds": open(os.path.join(build, f"run-{k}", "boot_seconds")).read().strip()
             if os.path.exists(os.path.join(build, f"run-{k}", "boot_seconds")) else "?"}
        for src in ["perf", "bpf"]:
            res = {}
            p = os.path.join(out, f"numbers-{src}.out")
            if os.path.exists(p):
                for line in open(p, errors="replace"):
                    if line.startswith("result:"):
                        res = kv(line)
            d[src] = {"result": res, "perf": perfstat(os.path.join(out, f"numbers-{src}.perfstat")),
                      "db": workload_db(os.path.join(out, f"numbers-{src}.db")),
                      "sources": status_sources(os.path.join(out, f"numbers-{src}.status.json"))}
        d["perf"]["states"] = states(os.path.join(out, "numbers-perf.status.json"))
        d["service_states"] = states(os.path.join(out, "status.json"))
        d["bpf_why"] = bpf_why(os.path.join(out, "numbers-bpf.log"))
        rec = {}
        p = os.path.join(out, "record.out")
        if os.path.exists(p):
            for line in open(p, errors="replace"):
                if line.startswith("result:"):
                    rec = kv(line)
        d["record"] = rec
        d["rec"] = os.path.join(out, "filemap.rec") if os.path.exists(os.path.join(out, "filemap.rec")) else None
        data[k] = d
    return data


CHECKS = [("guest.pid1", "PID 1"), ("install.apt", "apt-get install of the .deb"),
          ("install.enabled", "enabled at install"), ("install.active", "active (running)"),
          ("service.ready", "READY (Type=notify)"), ("api.status", "curl /api/v1/status"),
          ("api.metrics", "curl /metrics"), ("service.reload", "systemctl reload"),
          ("service.watchdog", "kill -STOP: watchdog restart"),
          ("service.stop", "systemctl stop stores the open window"),
          ("sandbox.denials", "no sandbox denials"), ("service.security", "systemd-analyze security"),
          ("report.history", "mmlockd report on the history"),
          ("numbers.perf.ran", "numbers, --source perf"), ("numbers.perf.load", "--source perf starts"),
          ("numbers.bpf.ran", "numbers, --source bpf"), ("numbers.bpf.load", "--source bpf starts"),
          ("numbers.record", "mmlockd record"), ("package.purge", "apt purge"),
          ("package.upgrade", "upgrade from the previous version"),
          ("upgrade.history", "upgrade keeps the history"), ("upgrade.conffile", "upgrade keeps the conffile edit"),
          ("upgrade.enabled", "upgrade keeps the enablement"), ("upgrade.restarted", "upgrade restarts the service")]


def report(data, kernels):
    ks = [k for k in kernels if k in data]
    L = ["# The Debian guest lab: results", "",
         f"Made by `make lab-debian` (`lab/debian.sh`) on {time.strftime('%Y-%m-%d')}: Debian 12 roots "
         "(debootstrap) booted under `qemu-system-x86_64 -accel tcg` (2 vCPUs, 2 GiB, on a shared 2-core "
         "host) with Debian's own kernel packages and initrds, systemd as PID 1, the package from "
         "`make deb` installed with apt inside the guest; `lab/debian-guest.sh` runs the checks. "
         "See lab/README.md, \"The Debian guest lab\". Raw outputs: `debian-logs/<kernel>/`.", "",
         "## The kernels", "",
         "| | " + " | ".join(f"Debian {k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    def row(name, f):
        L.append(f"| {name} | " + " | ".join(f(data[k]) for k in ks) + " |")
    row("release", lambda d: d["env"].get("uname", "?").split()[2] if d["env"].get("uname") else "?")
    row("CONFIG_PER_VMA_LOCK", lambda d: d["env"].get("CONFIG_PER_VMA_LOCK", "not set"))
    row("CONFIG_PER_VMA_LOCK_STATS", lambda d: d["env"].get("CONFIG_PER_VMA_LOCK_STATS", "not set"))
    row("BTF (/sys/kernel/btf/vmlinux)", lambda d: d["env"].get("btf", "?") + " bytes")
    row("`lock_vma_under_rcu`, `lock_mm_and_find_vma`", lambda d: ", ".join(d["env"]["symbols"]) or "neither")
    row("mmap_lock tracepoints' memcg field", lambda d: d["env"].get("memcg_field", "?"))
    row("boot + checks (s, TCG)", lambda d: d["boot_seconds"])
    row("guest finished", lambda d: "no: " + d["incomplete"].replace("|", "/") if d["incomplete"] else "yes")
    L += ["", "The other kernels of the issue's table: the service checks need systemd as PID 1, which "
          "neither the kernel lab's guests (vanilla and patched 6.12, an initramfs with busybox as "
          "/init) nor this host (6.18, PID 1 not systemd) have, so they ran in the Debian guests only; "
          "the numbers on those kernels, against `CONFIG_PER_VMA_LOCK_STATS` as well, are in "
          "`README.md` beside this file (`make lab`) and in the privileged suite (`make test`, 6.18)."]
    L += ["", "## The checks", "",
          "Each check with its figure, as the guest printed it (`checks.txt`); `-` where it did not run.", "",
          "| check | " + " | ".join(f"Debian {k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    seen = set()
    for key, title in CHECKS:
        if not any(key in data[k]["checks"] for k in ks):
            continue
        seen.add(key)
        L.append(f"| {title} | " + " | ".join(
            (lambda c: f"**{c[0]}**: {c[1]}" if c else "-")(data[k]["checks"].get(key)).replace("|", "/")
            for k in ks) + " |")
    for k in ks:
        for key, (st, fig) in data[k]["checks"].items():
            if key not in seen:
                seen.add(key)
                L.append(f"| {key} | " + " | ".join(
                    (lambda c: f"**{c[0]}**: {c[1]}" if c else "-")(data[j]["checks"].get(key)).replace("|", "/")
                    for j in ks) + " |")
    def jrow(d):
        j = d["journal"]
        if not j:
            return "-"
        return (f"{j['entries']} entries, priorities {', '.join(f'{p}: {n}' for p, n in sorted(j['priorities'].items()))}; "
                f"{j['multiline']} with a line break, {j['prefix']} with a `<N>` prefix left")
    L.append("| journal: one line each, priority parsed | " + " | ".join(jrow(data[k]) for k in ks) + " |")
    L += ["", "## The numbers", "",
          "labload (`--mode filemap --threads 4 --writers 1`, 64 MiB file, `MemoryMax=16M` scope) under "
          "`mmlockd --source SRC --collectors all --interval 1` and, for labload alone, `perf stat` of "
          "`exceptions:page_fault_user` and `mmap_lock:mmap_lock_acquire_returned` / `_start_locking` with "
          "filters. mmlockd's counts are labload's rows in the database (by pid and start time). "
          "`faults (totals)` = minflt + majflt against labload's getrusage(); `faults (faults collector)` "
          "= every page_fault_user the `faults` collector classified, against perf's count; "
          "`mmap_lock read/write` = the `mmaplock` collector's acquisitions against perf's "
          "`acquire_returned` with `write==0 && success==1` / `write==1`; `fallback_locks` (the "
          "`fallbacks` collector) against perf's read `start_locking` (every read attempt: faults and "
          "system calls).", "",
          "| kernel | source | collectors' sources | faults (totals) vs getrusage | faults (faults collector) vs perf; faults before exec (getrusage - perf's minor+major-faults); error without them | "
          "vma / mmap_retry / mmap_unknown | mmap_lock read vs perf | mmap_lock write vs perf | fallback_locks vs perf read starts | lost |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for k in ks:
        for src in ["perf", "bpf"]:
            n = data[k][src]
            db, pf, res = n["db"], n["perf"], n["result"]
            if not db or not res:
                L.append(f"| {k} | {src} | {'; '.join(f'{c}: {s}' for c, (s, _) in n['sources'].items()) or '-'} "
                         "| did not run | | | | | | |")
                continue
            gr = int(res.get("minflt", 0)) + int(res.get("majflt", 0))
            tot = db["minflt"] + db["majflt"]
            # perf stat counts from labload's exec (enable_on_exec); mmlockd and getrusage from
            # the fork: the software fault events (every fault, as getrusage) give that offset
            sw = (pf.get("minor_faults") or 0) + (pf.get("major_faults") or 0)
            off = gr - sw if sw else None
            srcs = ", ".join(f"{c}: {s}" for c, (s, _) in sorted(n["sources"].items()))
            L.append(f"| {k} | {src} | {srcs} | {tot} vs {gr} ({err(tot, gr)}) | "
                     f"{db['faults']} vs {pf.get('page_fault_user')} ({err(db['faults'], pf.get('page_fault_user'))}); "
                     f"{'-' if off is None else off} before exec; "
                     f"{'-' if off is None else err(db['faults'] - off, pf.get('page_fault_user'))} without them | "
                     f"{db['faults_vma']} / {db['faults_mmap_retry']} / {db['faults_mmap_unknown']} | "
                     f"{db['mmap_lock_read']} vs {pf.get('read_acquired')} ({err(db['mmap_lock_read'], pf.get('read_acquired'))}) | "
                     f"{db['mmap_lock_write']} vs {pf.get('write_acquired')} ({err(db['mmap_lock_write'], pf.get('write_acquired'))}) | "
                     f"{db['fallback_locks']} vs {pf.get('read_start')} | {db['lost']} |")
    L += ["", "What `/api/v1/status` said of each collector (state, source, reason) in the `--source perf` run:", ""]
    for k in ks:
        for c, (st, src, why) in sorted(data[k]["perf"]["states"].items()):
            L.append(f"- {k}, `{c}`: {st} on {src}{': ' + why if why else ''}")
    L += ["", "The BPF source (`--source bpf`): why it did not load, from its log:", ""]
    for k in ks:
        for line in data[k]["bpf_why"]:
            L.append(f"- {k}: `{line}`")
    L += ["", "The service's default collectors after install (`/api/v1/status` under the unit, source = auto):", ""]
    for k in ks:
        L.append(f"- {k}: " + "; ".join(f"`{c}` {st} on {src}{' (' + why + ')' if why else ''}"
                                        for c, (st, src, why) in sorted(data[k]["service_states"].items())))
    return "\n".join(L) + "\n"


def write_logs(data, results):
    for k, d in data.items():
        dst = os.path.join(results, "debian-logs", k)
        os.makedirs(dst, exist_ok=True)
        for f in LOGS:
            p = os.path.join(d["out"], f)
            if os.path.exists(p) and os.path.getsize(p) < 512 << 10:
                shutil.copy(p, os.path.join(dst, f))


def write_testdata(data, testdata):
    made = []
    for k, d in data.items():
        res = d["record"]
        if not d["rec"] or not res:
            continue
        base = os.path.join(testdata, f"debian-{k}-filemap")
        with open(d["rec"], "rb") as src, open(base + ".rec.xz", "wb") as dst:
            subprocess.run(["xz", "-9", "-T1", "-c"], stdin=src, stdout=dst, check=True)
        e = d["env"]
        exp = [f"# expectations for debian-{k}-filemap.rec.xz (lab/debian.sh, Debian's {k} kernel):",
               "# labload's getrusage() of that run and what the kernel provides",
               f"kernel=debian-{k}", f"release={e.get('uname', '?').split()[2] if e.get('uname') else '?'}",
               "mode=filemap", f"per_vma_lock={'y' if e.get('CONFIG_PER_VMA_LOCK') == 'y' else 'n'}",
               f"rusage_faults={int(res.get('minflt', 0)) + int(res.get('majflt', 0))}",
               f"majflt={res.get('majflt')}"]
        open(base + ".expect", "w").write("\n".join(exp) + "\n")
        made.append(base)
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--testdata", required=True)
    ap.add_argument("--kernels", nargs="+", default=["6.1", "6.12"])
    a = ap.parse_args()
    data = collect(a.build, a.kernels)
    if not data:
        raise SystemExit(f"no runs in {a.build}")
    open(os.path.join(a.results, "debian.md"), "w").write(report(data, a.kernels))
    write_logs(data, a.results)
    for m in write_testdata(data, a.testdata):
        print("recording:", m)
    print("wrote", os.path.join(a.results, "debian.md"))


if __name__ == "__main__":
    main()
