#!/usr/bin/env python3
"""CPU time of a fixed amount of faulting under the fault split's configurations.

Throughput on a shared machine swings with the other tenants' load (bench/run.py's ratios spread
0.3..3 there); the CPU time a fixed amount of work takes moves much less, and it is where the
tracing cost lands: the kernel writes samples (and runs disabled probes) in the faulting thread.
For each configuration (no daemon; the default with --split-duty 0; the default, bursts of 2%;
--split-duty 100%, every fault classified on the perf rings) it starts mmlockd, runs
`fault_workload --rounds R --fault-threads 2 --map-threads 0` (a fixed number of faults: two runs
give the same count within a few) and takes the workload's user + system CPU seconds from
getrusage(RUSAGE_CHILDREN); configurations interleave, --reps rounds, medians. Prints a table of
CPU seconds per million faults and the ratio to no daemon (above 1: the configuration costs CPU).
Root only.
"""

import argparse
import importlib.util
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench_run", os.path.join(HERE, "run.py"))
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)

CONFIGS = {"none": None, "nosplit": ["--split-duty", "0"], "default": [],
           "continuous": ["--split-duty", "100%", "--collectors",
                          "totals,fallbacks,vmstat,faults"]}


def one(build, tmp, config, rounds):
    d = None
    if CONFIGS[config] is not None:
        d = subprocess.Popen([os.path.join(build, "mmlockd"), "--config", "/dev/null", "--db",
                              os.path.join(tmp, config + ".db"), "--listen",
                              f"127.0.0.1:{run.free_port()}", "--source", "perf"]
                             + CONFIGS[config], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(2.5)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([os.path.join(build, "tests", "fault_workload"), "--rounds",
                          str(rounds), "--fault-threads", "2", "--map-threads", "0"],
                         capture_output=True, text=True).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if d:
        run.stop_process(d)
    faults = int(re.search(r"faults (\d+)", out).group(1))
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu / faults * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=20)
    a = ap.parse_args()
    res = {c: [] for c in CONFIGS}
    names = list(CONFIGS)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for rep in range(a.reps):
            k = rep % len(names)
            for c in names[k:] + names[:k]:
                res[c].append(one(a.build, tmp, c, a.rounds))
    base = statistics.median(res["none"])
    print(f"fault_workload --rounds {a.rounds} --fault-threads 2 --map-threads 0, {a.reps} "
          f"interleaved rounds; CPU s per million faults (user + system of the workload)\n")
    print("| configuration | median | ratio to none | per round |")
    print("|---|---:|---:|---|")
    for c in names:
        m = statistics.median(res[c])
        print(f"| {c} | {m:.3f} | {m / base:.3f} | {' '.join(f'{x:.2f}' for x in res[c])} |")


if __name__ == "__main__":
    main()
