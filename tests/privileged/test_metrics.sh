#!/bin/bash
# test_metrics.sh: /metrics and `mmlockd report` as an operator meets them, on mmlockd's defaults.
#
# Usage: test_metrics.sh MMLOCKD_BINARY WORKLOAD_BINARY
#
# Creates a cgroup of its own (mmlockd-test-PID, in the unified hierarchy and, where it is mounted,
# the v1 memory hierarchy, whose path mmlockd prefers) and runs fault_workload in it for 4 s while
# mmlockd runs on its defaults (1 s windows). Then, with the workload gone:
#   1. GET /metrics passes `promtool check metrics`;
#   2. collector_up lists all seven collectors, the default ones running; no family of a collector
#      that is not running is there, under any prefix (mmlockd_, mmlockd_cgroup_,
#      mmlockd_process_), nor its tracepoints; the default collectors' families are;
#   3. no per-pid family (--top is 0 by default);
#   4. the workload's cgroup has its own series: mmlockd_cgroup_page_faults_accounted_total for
#      it is more than a quarter of the workload's own count (it counts from the window after the
#      cgroup got its series) and not above it, and mmlockd_cgroup_processes names it;
#   5. after SIGTERM, `mmlockd report --since 10m` prints the workload's row with faults and
#      fallbacks equal to the sums of process_stats for its pid, and `report --units --cgroup`
#      the cgroup's row equal to the sums of cgroup_stats.
# Then mmlockd --collectors all for ~3 s: promtool-clean, and the opt-in families are there, per
# cgroup too. Exit status: 0 passed, 1 a check failed, 77 skipped (not root, no tracepoints, no
# cgroup hierarchy to make a cgroup in, no promtool). KEEP_TMP=1 keeps the temporary directory.
set -u -o pipefail
TEST_NAME=test_metrics
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"
WPID=
CGS=()

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$WPID" KILL
	stop_process "$DAEMON_PID" TERM
	for d in "${CGS[@]}"; do rmdir "$d" 2>/dev/null; done
	remove_tmp
}

daemon_and_workload_args "$@"
need_root "system-wide tracepoints, cgroups"
need_tracepoints mmap_lock/mmap_lock_start_locking
command -v promtool >/dev/null 2>&1 || skip "promtool not installed (Debian package prometheus)"
need_tools curl sqlite3 python3

make_tmp metrics
empty_conf

CG=/mmlockd-test-$$
make_cgroups "$CG"

sql() { sqlite3 -batch -noheader -cmd '.timeout 3000' "$DB" "$@"; }
# family_present FILE NAME: a "# TYPE NAME " line in the exposition FILE.
family_present() { grep -q "^# TYPE $2 " "$1"; }

start_mmlockd
# As systemd starts a service: a shell is forked in our cgroup, lives there for a while (mmlockd
# sees the pid and reads its cgroup), joins the test's cgroup(s), then execs the workload. mmlockd
# reads the cgroup again on exec, so the workload is counted in the test's cgroup.
procs=$(printf '%s/cgroup.procs ' "${CGS[@]}")
# shellcheck disable=SC2016 # $$ is the inner shell's
sh -c 'sleep 0.5; for f in '"$procs"'; do echo $$ >"$f" || exit 1; done; exec "$0" "$@"' "$WORKLOAD" \
	--fault-threads 2 --map-threads 1 --seconds 4 --pid-file "$TMP/workload.pid" \
	--file-dir "$TMP" >"$TMP/workload.out" 2>&1 &
WPID=$!
wait "$WPID" || fatal "workload failed: $(tail -n 2 "$TMP/workload.out")"
WPID=
# "fault_workload: pid P ... since_start S"
read -r W_PID W_FAULTS <<<"$(awk '{ for (i = 1; i < NF; i++) { if ($i == "pid") p = $(i + 1);
	if ($i == "since_start") f = $(i + 1) } } END { print p, f }' "$TMP/workload.out")"
[ -n "$W_PID" ] && [ -n "$W_FAULTS" ] || fatal "no result line from the workload"
log "workload pid $W_PID in $CG: $W_FAULTS faults (getrusage since exec)"
sleep 2.5 # its last window closes and the next snapshot is published
mmlockd_alive

http_get /metrics "$TMP/metrics" || fatal "GET /metrics failed"
log "defaults: $(grep -c '^mmlockd' "$TMP/metrics") series, $(grep -c '^# TYPE' "$TMP/metrics") families"
if promtool check metrics <"$TMP/metrics" >"$TMP/promtool" 2>&1 && [ ! -s "$TMP/promtool" ]; then
	pass "promtool check metrics: no complaint"
else
	fail "promtool check metrics: $(head -n 3 "$TMP/promtool" | tr '\n' ' ')"
fi

declare -A OFF_FAMILIES=(
	[mmaplock]="user_page_faults_total mmap_lock_acquisitions_total mmap_lock_failed_acquisitions_total mmap_lock_waits_total mmap_lock_wait_seconds_total mmap_lock_write_hold_seconds_total mmap_lock_contended_total mmap_lock_wait_seconds mmaplock_unmatched_total"
	[contention]="lock_contended_total lock_wait_seconds_total contention_unmatched_total"
)
states=$(grep '^mmlockd_collector_up{' "$TMP/metrics" | sed -E 's/.*collector="([^"]+)",state="([^"]+)".*/\1=\2/' | sort | tr '\n' ' ')
# faults runs in bursts for the fault split (split_duty): its families carry estimates.
if [ "$states" = "cgroups=running contention=disabled fallbacks=running faults=running mmaplock=disabled totals=running vmstat=running " ]; then
	pass "collector_up lists every collector: $states"
else
	fail "collector_up: '$states'"
fi
found=""
for c in "${!OFF_FAMILIES[@]}"; do
	for f in ${OFF_FAMILIES[$c]}; do
		for p in mmlockd_ mmlockd_cgroup_ mmlockd_process_; do
			family_present "$TMP/metrics" "$p$f" && found="$found $p$f($c)"
		done
	done
done
grep -qE '^mmlockd_tracepoint_up\{event="lock:' "$TMP/metrics" && found="$found tracepoints-of-disabled-collectors"
if [ -z "$found" ]; then
	pass "no family of the disabled collectors mmaplock, contention"
else
	fail "families of disabled collectors exported:$found"
fi
on_missing=""
for f in mmlockd_page_faults_accounted_total mmlockd_fault_fallback_locks_total \
	mmlockd_fault_fallback_lock_waits_total mmlockd_vmstat_total mmlockd_cgroup_processes \
	mmlockd_cgroup_page_faults_accounted_total mmlockd_cgroup_fault_fallback_locks_total; do
	family_present "$TMP/metrics" "$f" || on_missing="$on_missing $f"
done
if [ -z "$on_missing" ]; then pass "the default collectors' families are there"; else fail "missing:$on_missing"; fi
if grep -q '^mmlockd_process_' "$TMP/metrics"; then
	fail "per-pid series on the defaults (--top 0): $(grep -m1 '^mmlockd_process_' "$TMP/metrics")"
else
	pass "no per-pid series on the defaults"
fi

cg_faults=$(awk -v cg="$CG" 'index($0, "mmlockd_cgroup_page_faults_accounted_total{cgroup=\"" cg "\"") == 1 { s += $NF } END { print s + 0 }' "$TMP/metrics")
cg_procs=$(grep -c "^mmlockd_cgroup_processes{cgroup=\"$CG\"}" "$TMP/metrics")
log "mmlockd_cgroup_page_faults_accounted_total{cgroup=\"$CG\"}: $cg_faults (workload: $W_FAULTS)"
if [ "$cg_procs" -eq 1 ] && [ "$cg_faults" -gt $((W_FAULTS / 4)) ] && [ "$cg_faults" -le "$W_FAULTS" ]; then
	pass "per-unit series for $CG: $cg_faults faults of the workload's $W_FAULTS"
else
	fail "per-unit series for $CG: $cg_faults faults (workload $W_FAULTS), $cg_procs processes lines"
fi

sigterm_mmlockd
first_cg=$(sql "SELECT cgroup FROM process_stats WHERE pid = $W_PID ORDER BY ts_end LIMIT 1")
last_cg=$(sql "SELECT cgroup FROM process_stats WHERE pid = $W_PID ORDER BY ts_end DESC LIMIT 1")
if [ "$last_cg" = "$CG" ]; then
	pass "moved between fork and exec: the workload's windows end in $CG (first stored: $first_cg)"
else
	fail "moved between fork and exec: the workload's last window is in '$last_cg', not $CG"
fi
read -r db_faults db_fb <<<"$(sql "SELECT sum(minflt + majflt), sum(fallback_locks) FROM process_stats WHERE pid = $W_PID" | tr '|' ' ')"
"$MMLOCKD" report --db "$DB" --since 10m >"$TMP/report.txt" 2>&1 || fail "mmlockd report failed: $(tail -n 2 "$TMP/report.txt")"
log "mmlockd report --since 10m (first lines):"
head -n 8 "$TMP/report.txt"
"$MMLOCKD" report --db "$DB" --since 10m --pid "$W_PID" -x , >"$TMP/report.csv" 2>&1
read -r r_faults r_fb <<<"$(python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(rows[0]["faults"], rows[0]["fallbacks"]) if len(rows) == 1 else print("- -")' "$TMP/report.csv")"
table_row=$(awk -v p="$W_PID" '$1 == p' "$TMP/report.txt")
if [ -n "$db_faults" ] && [ "$r_faults" = "$db_faults" ] && [ "$r_fb" = "$db_fb" ] &&
	[ "$(awk '{print $2, $4}' <<<"$table_row")" = "$db_faults $db_fb" ]; then
	pass "report --since 10m: pid $W_PID faults $r_faults fallbacks $r_fb = process_stats ($db_faults, $db_fb)"
else
	fail "report: faults/fallbacks '$r_faults/$r_fb', table row '$table_row', process_stats '$db_faults/$db_fb'"
fi
read -r v_faults v_fb <<<"$(sql "SELECT sum(minflt + majflt), sum(fallback_locks) FROM cgroup_stats WHERE cgroup = '$CG'" | tr '|' ' ')"
"$MMLOCKD" report --db "$DB" --since 10m --units --cgroup "$CG" -x , >"$TMP/units.csv" 2>&1
u_row=$(sed -n 2p "$TMP/units.csv")
if [ "$(cut -d, -f2 <<<"$u_row"),$(cut -d, -f4 <<<"$u_row")" = "$v_faults,$v_fb" ] && [ "${u_row##*,}" = "$CG" ]; then
	pass "report --units --cgroup $CG: $u_row = cgroup_stats ($v_faults, $v_fb)"
else
	fail "report --units: '$u_row', cgroup_stats '$v_faults/$v_fb'"
fi

# --collectors all, briefly: the opt-in families appear, per cgroup too, still promtool-clean.
DB=$TMP/all.db
start_mmlockd --collectors all
sleep 3
http_get /metrics "$TMP/metrics.all" || fatal "GET /metrics (--collectors all) failed"
sigterm_mmlockd
log "--collectors all: $(grep -c '^mmlockd' "$TMP/metrics.all") series, $(grep -c '^# TYPE' "$TMP/metrics.all") families"
missing=""
for f in mmlockd_page_faults_total mmlockd_user_page_faults_total mmlockd_mmap_lock_wait_seconds \
	mmlockd_mmap_lock_acquisitions_by_source_total mmlockd_cgroup_page_faults_total \
	mmlockd_cgroup_mmap_lock_wait_seconds_total mmlockd_page_faults_accounted_total; do
	family_present "$TMP/metrics.all" "$f" || missing="$missing $f"
done
if [ -z "$missing" ] && promtool check metrics <"$TMP/metrics.all" >"$TMP/promtool" 2>&1 && [ ! -s "$TMP/promtool" ]; then
	pass "--collectors all: the opt-in families, per cgroup too, promtool-clean"
else
	fail "--collectors all: missing$missing; promtool: $(head -n 2 "$TMP/promtool" | tr '\n' ' ')"
fi
summary_and_exit
