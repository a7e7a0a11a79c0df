#!/bin/bash
# test_sleepers.sh: a process that sleeps through windows, faults, and sleeps again is counted
# exactly and on time while the totals collector skips the /proc reads of processes that did not
# run (the BPF task iterator, plugins/totals.c scan_tasks()).
#
# Usage: test_sleepers.sh MMLOCKD_BINARY
#
# Starts mmlockd on its defaults (source auto, 1 s windows), then a python3 child that sleeps
# SLEEP_S (3) s, touches FAULT_MB (64) MiB of fresh anonymous memory and sleeps AFTER_S (8) s more;
# its parent prints the child's minflt + majflt from wait4() (everything, exit included). Checks:
#   1. the iterator runs: totals_events_total{name="stat_reads_skipped"} grew during the sleeps;
#   2. on time: /api/v1/processes, read 2.5 s after the child's faults (by the time it printed,
#      not when this script saw it: on a loaded machine that can be a second later), already has
#      at least the touched pages as the child's minflt (a live reading, not the settling at
#      exit). The second sleep is longer than that, so the child is still alive then: an exited
#      process is no longer among the live rows once the window of its exit is closed;
#   3. exact: sum(minflt + majflt) stored for the child equals wait4()'s count.
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root, or the task iterator does not load here:
# no BPF, no BTF). Environment: KEEP_TMP=1 keeps the temporary directory.

set -u -o pipefail

TEST_NAME=test_sleepers
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

SLEEP_S=3
AFTER_S=8
FAULT_MB=64
CHILD=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$CHILD" KILL
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
	echo "usage: $0 MMLOCKD_BINARY" >&2
	exit 2
fi
MMLOCKD=$1
need_root "taskstats, BPF"
need_tools curl sqlite3 python3
make_tmp sleepers
empty_conf

# skipped: the global's total in /api/v1/status.
skipped() {
	http_get /api/v1/status "$TMP/st.json" || return 1
	status_lines globals "$TMP/st.json" | awk '$1 == "totals_events.stat_reads_skipped" {print $2}'
}

start_mmlockd
sleep 2.5 # two scans: every process known, the second can skip
s0=$(skipped) || fatal "no /api/v1/status"
if [ "${s0:-0}" -eq 0 ]; then
	sleep 2
	s0=$(skipped)
	if [ "${s0:-0}" -eq 0 ]; then
		skip "the task iterator does not run here (no read skipped in 4.5 s of 1 s windows)"
	fi
fi

python3 - "$SLEEP_S" "$FAULT_MB" "$AFTER_S" >"$TMP/child.out" <<'PY' &
import mmap, os, sys, time
sleep_s, mb, after_s = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
pid = os.fork()
if pid == 0:
    time.sleep(sleep_s)
    m = mmap.mmap(-1, mb << 20)
    for off in range(0, mb << 20, 4096):
        m[off] = 1
    print("faulted", time.time(), flush=True)
    time.sleep(after_s)
    os._exit(0)
print("child", pid, flush=True)
_, _, u = os.wait4(pid, 0)
print("rusage", u.ru_minflt + u.ru_majflt, flush=True)
PY
CHILD=$!
for _ in $(seq 100); do
	grep -q '^faulted' "$TMP/child.out" && break
	sleep 0.1
done
CPID=$(sed -n 's/^child //p' "$TMP/child.out")
[ -n "$CPID" ] || fatal "the python3 child did not start"
s1=$(skipped)
if [ "${s1:-0}" -gt "$s0" ]; then
	pass "the task iterator skipped $((s1 - s0)) /proc/PID/stat reads during the first sleep"
else
	fail "no /proc/PID/stat read skipped during the child's sleep ($s0 -> ${s1:-?})"
fi
# 2.5 s after the faults ended, by the child's clock (from now when it printed no time).
python3 -c 'import sys, time; t = float(sys.argv[1] or time.time())
time.sleep(max(0.0, t + 2.5 - time.time()))' \
	"$(sed -n 's/^faulted //p' "$TMP/child.out")"
http_get /api/v1/processes "$TMP/processes.json" || fail "no /api/v1/processes"
live=$(python3 - "$TMP/processes.json" "$CPID" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
print(sum(int((p.get("total") or {}).get("minflt") or 0)
          for p in doc.get("processes", []) if int(p.get("pid", -1)) == pid))
PY
)
pages=$((FAULT_MB * 256))
if [ "${live:-0}" -ge "$pages" ]; then
	pass "on time: $live minor faults of the child shown 2.5 s after its $pages pages were touched"
else
	fail "late: ${live:-0} minor faults of the child shown 2.5 s after it touched $pages pages"
fi
wait "$CHILD"
CHILD=
sleep 2.5 # its exit settled and the window stored
sigterm_mmlockd
rusage=$(sed -n 's/^rusage //p' "$TMP/child.out")
stored=$(sqlite3 "$DB" "SELECT coalesce(sum(minflt + majflt), 0) FROM process_stats
	WHERE pid = $CPID")
if [ -z "$rusage" ]; then
	fail "the parent printed no wait4() count"
elif [ "$stored" -eq "$rusage" ]; then
	pass "exact: $stored faults stored for the child, as wait4() counted"
else
	fail "stored $stored faults for the child, wait4() counted $rusage"
fi
summary_and_exit
