#!/bin/bash
# test_churn.sh: no process of a fork storm is lost, misnamed or short of faults.
#
# Usage: test_churn.sh MMLOCKD_BINARY CHURN_BINARY
#
# For each source (perf, then bpf where the BPF source loads), mmlockd runs on its default
# collectors (1 s windows) while bench_churn forks $CHURN_PROCS (default 2000) short-lived
# children, 8 at a time, each with 4 threads that fault a few pages. Most children live a few
# milliseconds: they are gone from /proc before their FORK record reaches the daemon, so what
# names them is the record itself and their parent, and what counts their faults is taskstats at
# exit. After SIGTERM (which flushes the open window) the database must hold:
#   1. one `processes` row named bench_churn for every child (the independent count: the
#      children bench_churn forked and reaped without failure);
#   2. no child with 0 faults;
#   3. the children's faults (minflt + majflt summed over process_stats) equal to the kernel's
#      own count, getrusage(RUSAGE_CHILDREN) in bench_churn, within CHURN_TOL percent (default
#      0.5: both read the same per-task counters, the difference is what a lost exit message
#      would leave);
#   4. every child stored under its pid with exactly its own faults (wait4()'s, from
#      bench_churn --pids), or counted: the children that are not must be at most what the
#      daemon says it could not attribute (host_events nameless_entries + totals_events
#      exits_unmatched in /api/v1/status). Pids repeat in a storm (pid_max 32768, 4 threads a
#      child): matched per pid as lists of counts.
# CHURN_BUSY=N runs N busy loops beside the storm (other work on the machine: the daemon falls
# behind, records arrive late), CHURN_INTERVAL=S windows of S seconds (10: the default, where a
# pid is reused within one window).
# Exit status: 0 passed, 1 a check failed, 77 skipped (not root). KEEP_TMP=1 keeps the temporary
# directory.
set -u -o pipefail
TEST_NAME=test_churn
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"
CHURN_PROCS=${CHURN_PROCS:-2000}
CHURN_BUSY=${CHURN_BUSY:-0}
CHURN_INTERVAL=${CHURN_INTERVAL:-1}
BUSY_PIDS=()
TOL=${CHURN_TOL:-0.5}
SKIPPED_PARTS=0

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_busy
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

daemon_and_workload_args "$@"
CHURN=$WORKLOAD
need_root "taskstats, system-wide tracepoints"
need_tracepoints mmap_lock/mmap_lock_acquire_returned
need_tools curl sqlite3 python3
make_tmp churn
empty_conf

start_busy() {
	for _ in $(seq "$CHURN_BUSY"); do
		sh -c 'while :; do :; done' &
		BUSY_PIDS+=("$!")
	done
}

stop_busy() {
	local p
	for p in "${BUSY_PIDS[@]}"; do
		stop_process "$p" TERM 10
	done
	BUSY_PIDS=()
}

# unattributed SOURCE: check 4, on the storm's --pids file and the daemon's last status.
unattributed() {
	local src=$1 bad counted
	bad=$(python3 - "$TMP/$src.pids" "$TMP/$src.rows" <<'EOF'
import sys
from collections import defaultdict
want, got = defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    pid, mn, mj = line.split()
    want[pid].append(int(mn) + int(mj))
for line in open(sys.argv[2]):
    pid, f = line.split()
    got[pid].append(int(f))
bad = 0
for pid, w in want.items():
    g = list(got[pid])
    for f in w:
        if f in g:
            g.remove(f)
        else:
            bad += 1
print(bad)
EOF
	)
	counted=$(status_lines globals "$TMP/status.json" |
		awk '$1 == "host_events.nameless_entries" || $1 == "totals_events.exits_unmatched" \
			{ s += $2 } END { print s + 0 }')
	if [ "$bad" -le "$counted" ]; then
		pass "$src: every child stored with its own faults or counted ($bad not," \
			"$counted counted)"
	else
		fail "$src: $bad children not stored with their own faults, only $counted counted"
	fi
}

# wave SOURCE: one daemon on SOURCE, one storm, the four checks.
wave() {
	local src=$1 out cpid failed expect faults rows zero sum
	DB=$TMP/$src.db
	start_mmlockd --source "$src" --interval "$CHURN_INTERVAL"
	if [ "$src" = bpf ] && ! grep -q "BPF source: counting" "$TMP/mmlockd.log"; then
		log "SKIP (part): the BPF source does not run here:" \
			"$(grep -m1 'BPF source' "$TMP/mmlockd.log" || echo 'no BPF in this build')"
		SKIPPED_PARTS=$((SKIPPED_PARTS + 1))
		sigterm_mmlockd
		return
	fi
	sleep 1.5 # the task stream open and a window closed before the storm
	start_busy
	out=$("$CHURN" --procs "$CHURN_PROCS" --threads 4 --parallel 8 --pids "$TMP/$src.pids" &
		echo "pid=$!"
		wait)
	stop_busy
	cpid=$(sed -n 's/^pid=//p' <<<"$out")
	failed=$(sed -n 's/.* failed=\([0-9]*\).*/\1/p' <<<"$out")
	expect=$(sed -n 's/.* procs=\([0-9]*\).*/\1/p' <<<"$out")
	faults=$(sed -n 's/.* child_faults=\([0-9]*\).*/\1/p' <<<"$out")
	log "$src: bench_churn (pid $cpid): $(grep '^result' <<<"$out")"
	[ "$failed" = 0 ] && [ -n "$expect" ] && [ -n "$faults" ] ||
		fatal "$src: bench_churn did not run cleanly: $out"
	sleep $((2 * CHURN_INTERVAL + 1)) # two more scans settle the last exits
	mmlockd_alive
	http_get /api/v1/status "$TMP/status.json" || fail "$src: /api/v1/status unanswered"
	sigterm_mmlockd
	sqlite3 -batch -noheader -separator ' ' "$DB" "
		SELECT p.pid, sum(w.minflt + w.majflt) FROM processes p
		JOIN process_windows w ON w.process_id = p.id
		WHERE p.comm = 'bench_churn' AND p.pid != $cpid GROUP BY p.id" >"$TMP/$src.rows"
	unattributed "$src"
	read -r rows zero sum < <(sqlite3 -batch -noheader -separator ' ' "$DB" "
		SELECT count(*), coalesce(sum(f = 0), 0), coalesce(sum(f), 0) FROM (
			SELECT sum(w.minflt + w.majflt) AS f FROM processes p
			JOIN process_windows w ON w.process_id = p.id
			WHERE p.comm = 'bench_churn' AND p.pid != $cpid GROUP BY p.id)")
	if [ "$rows" = "$expect" ]; then
		pass "$src: all $expect children stored, named bench_churn"
	else
		fail "$src: $rows children stored as bench_churn, $expect forked" \
			"($(sqlite3 "$DB" "SELECT count(*) FROM processes WHERE comm LIKE 'pid-%'")" \
			"rows named pid-N)"
	fi
	expect_zero "$zero" "$src: every child stored with its faults" \
		"$src: $zero children stored with 0 faults"
	if within "$faults" "$sum"; then
		pass "$src: children's faults $sum, getrusage $faults ($(diff_pct "$faults" "$sum")%)"
	else
		fail "$src: children's faults $sum, getrusage $faults" \
			"($(diff_pct "$faults" "$sum")%, allowed $TOL%)"
	fi
}

wave perf
wave bpf
[ "$SKIPPED_PARTS" -gt 0 ] && log "skipped parts: $SKIPPED_PARTS"
summary_and_exit
