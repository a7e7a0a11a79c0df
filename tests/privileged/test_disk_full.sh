#!/bin/bash
# test_disk_full.sh: a full disk is counted and logged, the daemon keeps running, and the history
# has no gap once space returns.
#
# Usage: test_disk_full.sh MMLOCKD_BINARY WORKLOAD_BINARY
#
# The database lives on a 16 MiB tmpfs mounted for the test. mmlockd runs with 1 s windows and
# --collectors all under fault_workload; after 3 s a filler file takes every free block. Checks:
#   1. the failed writes are counted: mmlockd_store_errors_total on /metrics and store_errors in
#      /api/v1/status grow, within 15 s;
#   2. and logged, with the reason ("No space left on device" or SQLite's "disk is full");
#   3. the daemon keeps serving /metrics and /api/v1/status during the outage (FULL_S, 6 s);
#   4. after the filler is removed, windows are stored again within 15 s, and the windows closed
#      during the outage were kept and written then: no gap in the history (each window starts
#      where the previous ended), and PRAGMA integrity_check says ok;
#   5. SIGTERM still flushes and exits 0.
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no tracefs, no
# sqlite3, cannot mount tmpfs). Environment: FULL_S, KEEP_TMP=1.

set -u -o pipefail

TEST_NAME=test_disk_full
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

FULL_S=${FULL_S:-6}
WL_PID=
MNT=

daemon_and_workload_args "$@"
need_root "tracepoints, mount"
need_tools sqlite3
find_tracefs

cleanup() {
	stop_process "$DAEMON_PID" KILL 0
	stop_process "$WL_PID" TERM 20
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	remove_tmp
}
make_tmp diskfull
MNT=$TMP/small
mkdir "$MNT"
mount -t tmpfs -o size=16m,mode=0700 mmlockd-test "$MNT" 2>/dev/null || {
	MNT=
	skip "cannot mount a tmpfs"
}
CONF=/dev/null
DB=$MNT/full.db

sql() { sqlite3 -batch "$DB" "$@"; }
# status_field NAME: a number from /api/v1/status, empty when it cannot be read.
status_field() {
	http_get /api/v1/status "$TMP/status.json" &&
		python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
			"$TMP/status.json" "$1"
}
metric() {
	http_get /metrics "$TMP/metrics.txt" && awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics.txt"
}

"$WORKLOAD" --fault-threads 2 --map-threads 1 --seconds 600 --file-mb 0 >"$TMP/workload.out" 2>&1 &
WL_PID=$!
start_mmlockd --collectors all
sleep 3
mmlockd_alive
stored_before=$(status_field windows_stored)
errors_before=$(status_field store_errors)
log "before: $stored_before windows stored, $errors_before store errors"

dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null
log "filled $MNT: $(df -k --output=avail "$MNT" | tail -n 1 | tr -d ' ') KiB left"
t_full=$(date +%s)
errors=$errors_before
for _ in $(seq 75); do
	errors=$(status_field store_errors)
	[ "${errors:-0}" -gt "$errors_before" ] && break
	sleep 0.2
done
if [ "${errors:-0}" -gt "$errors_before" ]; then
	pass "store_errors grew to $errors on a full disk"
else
	fail "store_errors stayed at '$errors' for 15 s on a full disk"
fi
m=$(metric mmlockd_store_errors_total)
[ "${m:-0}" -gt 0 ] && pass "mmlockd_store_errors_total $m on /metrics" ||
	fail "mmlockd_store_errors_total is '$m'"
if grep -E '^<3>.*(No space left on device|disk is full)' "$TMP/mmlockd.log" >"$TMP/full.lines"; then
	pass "logged: $(head -n 1 "$TMP/full.lines")"
else
	fail "no error line naming the full disk in the log"
fi
sleep "$((FULL_S - ($(date +%s) - t_full) > 0 ? FULL_S - ($(date +%s) - t_full) : 0))"
mmlockd_alive
if http_get /metrics "$TMP/metrics.txt" && http_get /api/v1/status "$TMP/status.json"; then
	pass "serves /metrics and /api/v1/status with the disk full"
else
	fail "does not serve /metrics or /api/v1/status with the disk full"
fi
stored_full=$(status_field windows_stored)

rm -f "$MNT/filler"
t_free=$(date +%s)
stored=$stored_full
for _ in $(seq 75); do
	stored=$(status_field windows_stored)
	[ "${stored:-0}" -ge $((stored_full + FULL_S)) ] && break
	sleep 0.2
done
log "after freeing: $stored windows stored ($stored_full while full)"
if [ "${stored:-0}" -ge $((stored_full + FULL_S)) ]; then
	pass "the windows of the outage were stored once space returned ($stored_full -> $stored)"
else
	fail "windows_stored $stored_full -> '$stored' within 15 s of freeing space"
fi
mmlockd_alive
sigterm_mmlockd

check=$(sql 'PRAGMA integrity_check' 2>&1)
[ "$check" = ok ] && pass "integrity_check ok" || fail "integrity_check: $check"
gaps=$(sql 'SELECT count(*) FROM windows a WHERE EXISTS (SELECT 1 FROM windows p WHERE p.id < a.id)
	AND NOT EXISTS (SELECT 1 FROM windows p WHERE p.ts_end = a.ts_start)')
span=$(sql "SELECT count(*) FROM windows WHERE ts_start <= $t_free AND ts_end >= $t_full")
if [ "$gaps" = 0 ] && [ "$span" -ge "$((FULL_S - 1))" ]; then
	pass "no gap in the history: $span windows cover the outage"
else
	fail "history: $gaps gaps, $span windows over the outage"
fi
summary_and_exit
