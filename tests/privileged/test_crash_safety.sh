#!/bin/bash
# test_crash_safety.sh: SIGKILL never corrupts the history, and loses at most the open window.
#
# Usage: test_crash_safety.sh MMLOCKD_BINARY WORKLOAD_BINARY
#
# fault_workload (WORKLOAD_BINARY: 2 fault threads, 1 mmap/munmap thread) faults for the whole
# test. ROUNDS (default 6) times: mmlockd starts on the same database (1 s windows, --collectors
# all, so every window carries per-process rows), runs a random 1.2-3.2 s, and gets SIGKILL; at a
# random point of a window, sometimes in the middle of a commit. After each kill:
#   1. `PRAGMA integrity_check` says ok and `PRAGMA foreign_key_check` finds nothing;
#   2. at most the open window was lost: the last stored window ends no earlier than one window
#      (1 s) plus SLACK_MS (500: the writer's commit of the window that just closed) before the
#      kill;
#   3. the next start opens the database (the check is start_mmlockd itself).
# At the end: no two stored windows overlap (a restart never rewrites a stored window), the
# windows of each run are contiguous, and every window has the workload's rows.
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no tracefs, no
# sqlite3). Environment: ROUNDS, SLACK_MS, KEEP_TMP=1 (keep the temporary directory).

set -u -o pipefail

TEST_NAME=test_crash_safety
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

ROUNDS=${ROUNDS:-6}
SLACK_MS=${SLACK_MS:-500}
WL_PID=

daemon_and_workload_args "$@"
need_root "tracepoints"
need_tools sqlite3
find_tracefs

cleanup() {
	stop_process "$DAEMON_PID" KILL 0
	stop_process "$WL_PID" TERM 20
	remove_tmp
}
make_tmp crash
CONF=/dev/null
DB=$TMP/crash.db

sql() { sqlite3 -batch "$DB" "$@"; }

"$WORKLOAD" --fault-threads 2 --map-threads 1 --seconds 600 --file-dir "$TMP" \
	>"$TMP/workload.out" 2>&1 &
WL_PID=$!

for round in $(seq "$ROUNDS"); do
	start_mmlockd --collectors all
	mmlockd_alive
	# 1.2 .. 3.2 s, in ms, so the kill lands anywhere in a window.
	sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.3f", 1.2 + (r % 2000) / 1000 }')"
	t_kill=$(date +%s.%N)
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	check=$(sql 'PRAGMA integrity_check' 2>&1)
	fk=$(sql 'PRAGMA foreign_key_check' 2>&1)
	if [ "$check" = ok ] && [ -z "$fk" ]; then
		pass "round $round: integrity_check ok after SIGKILL"
	else
		fail "round $round: integrity_check '$check', foreign_key_check '$fk'"
	fi
	last_end=$(sql 'SELECT coalesce(max(ts_end), 0) FROM windows')
	lost_ms=$(awk -v k="$t_kill" -v e="$last_end" 'BEGIN { printf "%d", (k - e) * 1000 }')
	if [ "$lost_ms" -le $((1000 + SLACK_MS)) ]; then
		pass "round $round: last stored window ends $lost_ms ms before the kill (at most the open window lost)"
	else
		fail "round $round: last stored window ends $lost_ms ms before the kill (> 1 s + ${SLACK_MS} ms)"
	fi
done

overlaps=$(sql 'SELECT count(*) FROM windows a JOIN windows b ON a.id < b.id
	AND a.ts_start < b.ts_end AND b.ts_start < a.ts_end')
[ "$overlaps" = 0 ] && pass "no two stored windows overlap" ||
	fail "$overlaps pairs of stored windows overlap"
# Within a run each window starts where the previous ended; between runs there is a gap (the
# restart). More gaps than restarts means a closed window was lost in a run.
gaps=$(sql 'SELECT count(*) FROM windows a WHERE EXISTS (SELECT 1 FROM windows p WHERE p.id < a.id)
	AND NOT EXISTS (SELECT 1 FROM windows p WHERE p.ts_end = a.ts_start)')
[ "$gaps" -le $((ROUNDS - 1)) ] && pass "$gaps gaps between windows for $((ROUNDS - 1)) restarts" ||
	fail "$gaps gaps between windows, more than the $((ROUNDS - 1)) restarts"
windows=$(sql 'SELECT count(*) FROM windows')
with_wl=$(sql "SELECT count(DISTINCT ts_end) FROM process_stats WHERE pid = $WL_PID")
log "stored $windows windows in $ROUNDS runs, $with_wl with rows of the workload (pid $WL_PID)"
[ "$windows" -ge "$ROUNDS" ] && [ "$with_wl" -ge $((windows * 8 / 10)) ] &&
	pass "the workload is in $with_wl of $windows windows" ||
	fail "the workload is in $with_wl of $windows windows (expected >= $ROUNDS windows, 80% with it)"
kill -0 "$WL_PID" 2>/dev/null && pass "the workload ran throughout" ||
	fail "the workload exited early: $(cat "$TMP/workload.out")"
summary_and_exit
