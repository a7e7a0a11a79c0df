#!/bin/bash
# test_default.sh: mmlockd's default configuration (no --collectors: totals, fallbacks, vmstat,
# cgroups) against independent counts of a real workload that exits.
#
# Usage: test_default.sh MMLOCKD_BINARY WORKLOAD_BINARY
#
# Starts mmlockd with its defaults (temporary database, free loopback port, 1 s windows, default
# ring size, no --collectors) and, once its read-lock tracepoint is open, `perf record -a` of
# mmap_lock:mmap_lock_acquire_returned filtered to 'write == 0 && success == 1' (no callchains;
# enabled through perf's control fifo, so it counts before the workload starts; a second event,
# 'write == 0 && success == 0', is for information). Then runs fault_workload (WORKLOAD_BINARY)
# --fault-threads 2 --map-threads 1 --seconds 3, without --linger: its threads exit, then the
# process, so its last faults reach mmlockd through exit accounting (taskstats), not /proc. At the
# same time a subshell runs 300 /bin/true one after the other: processes that live far less than
# a window. After ~3 s of settling, perf gets SIGINT and mmlockd SIGTERM (which flushes its last
# window; it must exit 0). Checks:
#   1. /api/v1/status: collectors totals, fallbacks, vmstat, cgroups "running", faults "running" in
#      bursts (the fault split of the default; test_split.sh checks what it gives); mmaplock,
#      contention "disabled".
#   2. faults: sum(minflt + majflt) over process_stats for the workload's pid >= the getrusage
#      count of the whole process the workload prints last (since_start: exec and start-up
#      included), and above it by at most MAX_FAULT_TAIL (5): what it faults after that
#      getrusage (0 measured: printing, unmapping and exit fault nothing more).
#   3. fallbacks: sum(fallback_locks) vs perf's successful read locks whose IP is in
#      lock_mm_and_find_vma (perf script -F pid,ip,sym,trace), within FALLBACK_TOL_PCT (0.5)%
#      + 2, for the workload's pid (a handful: its faults complete under the per-VMA lock) and
#      for the 300 /bin/true pids together (~1800: exec faults in kernel mode). Skipped (not
#      failed) when perf saw no sample at all in lock_mm_and_find_vma but some in
#      __mmap_lock_do_trace_acquire_returned: that kernel fires the tracepoint from the
#      out-of-line helper and the collector documents that it cannot attribute then.
#   4. for both: fallback_lock_waits <= fallback_locks and equal, within 0.5% + 2, to perf's
#      failed read attempts at the same site (a contended fallback's trylock fails once, then
#      it sleeps until it has the lock).
#   5. nothing lost: events[].lost in /api/v1/status and lost in event_windows are 0 for every
#      stream, the totals collector saw no taskstats overflow (exit_overflows), perf lost nothing.
#   6. short-lived processes: of the 300 /bin/true pids, at least MIN_TRUE (290) have a process
#      (pid, start_time) named 'true' in process_stats, and every such process has
#      minflt + majflt > 0. The median faults per /bin/true is printed.
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no perf, perf cannot
# record the filtered tracepoint, or the mmap_lock tracepoints do not exist). Environment:
# MMLOCKD_ARGS (daemon flags instead of the default --source perf: the point is the defaults),
# MAX_FAULT_TAIL, FALLBACK_TOL_PCT, MIN_TRUE, KEEP_TMP=1 (keep the temporary directory).

set -u -o pipefail

TEST_NAME=test_default
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

MAX_FAULT_TAIL=${MAX_FAULT_TAIL:-5}
TOL=${FALLBACK_TOL_PCT:-0.5}
MIN_TRUE=${MIN_TRUE:-290}
NTRUE=300
WORKLOAD_FLAGS="--fault-threads 2 --map-threads 1 --seconds 3"
PERF_PID=
WPID=
TRUE_PID=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$TRUE_PID" TERM
	stop_process "$WPID" KILL
	stop_process "$PERF_PID" INT
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

daemon_and_workload_args "$@"

# --- can this run at all? -------------------------------------------------------------------
need_root "system-wide tracepoints, taskstats"
need_perf

need_tracepoints mmap_lock/mmap_lock_acquire_returned mmap_lock/mmap_lock_start_locking

# Missing tools or binaries are failures, not skips: the test could run, the setup is broken.
need_tools curl sqlite3 python3
[ -x /bin/true ] || fatal "/bin/true is missing"

make_tmp default

if ! perf record -o "$TMP/probe.data" -e mmap_lock:mmap_lock_acquire_returned \
	--filter 'write == 0 && success == 1' -- true >"$TMP/probe.log" 2>&1; then
	skip "perf cannot record mmap_lock:mmap_lock_acquire_returned with a filter:" \
		"$(tail -n 1 "$TMP/probe.log")"
fi
rm -f "$TMP/probe.data"

empty_conf

# --- start the daemon, with its defaults ---------------------------------------------------------
# The default collectors on the perf rings: with the BPF source (the default where BPF loads),
# its program on the mmap_lock tracepoints makes perf record's sample IP the tracepoint
# iterator's, so perf could not tell the fallback site below; test_bpf checks the BPF source.
start_mmlockd --source perf

# Wait until the fallbacks collector's read-lock tracepoint is open.
if ! events_open mmap_lock:mmap_lock_acquire_returned; then
	log "events in /api/v1/status (name open samples lost error):"
	cat "$TMP/events.txt"
	fatal "mmlockd does not report mmap_lock:mmap_lock_acquire_returned as open"
fi
pass "mmap_lock:mmap_lock_acquire_returned is open in mmlockd"

# --- 1. the default collectors ----------------------------------------------------------------
if status_lines collectors "$TMP/status.json" >"$TMP/collectors.txt" \
	2>"$TMP/parse.err"; then
	log "collectors (/api/v1/status):"
	awk '{ printf "  %-12s %-9s %s\n", $1, $2, $3 }' "$TMP/collectors.txt"
	bad=
	for want in totals:running fallbacks:running vmstat:running cgroups:running faults:running \
		mmaplock:disabled contention:disabled; do
		name=${want%%:*}
		state=$(awk -v n="$name" '$1 == n { print $2 }' "$TMP/collectors.txt")
		[ "$state" = "${want#*:}" ] || bad="$bad $name=${state:-absent}(want ${want#*:})"
	done
	if [ -z "$bad" ]; then
		pass "default collectors: totals, fallbacks, vmstat, cgroups running, faults in bursts;" \
			"mmaplock, contention disabled"
	else
		fail "collector states in /api/v1/status:$bad"
	fi
else
	cat "$TMP/parse.err"
	fail "cannot read the collectors from /api/v1/status"
fi

# --- perf record -a, enabled before the workload starts ----------------------------------------
mkfifo "$TMP/ctl" "$TMP/ack" || fatal "mkfifo failed"
# The second event (failed read attempts) is compared with the waits (check 4).
perf record -a -m 1024 -D -1 --control "fifo:$TMP/ctl,$TMP/ack" -o "$TMP/perf.data" \
	-e mmap_lock:mmap_lock_acquire_returned --filter 'write == 0 && success == 1' \
	-e mmap_lock:mmap_lock_acquire_returned --filter 'write == 0 && success == 0' \
	>"$TMP/perf.log" 2>&1 &
perf_enabled

# --- the workload and the short-lived processes -------------------------------------------------
# The /bin/true loop writes each child's pid, so the check below looks at exactly those processes.
(
	for _ in $(seq "$NTRUE"); do
		/bin/true &
		echo "$!"
		wait "$!"
	done
) >"$TMP/true.pids" 2>"$TMP/true.err" &
TRUE_PID=$!

log "running: $WORKLOAD $WORKLOAD_FLAGS (and $NTRUE x /bin/true)"
# shellcheck disable=SC2086 # WORKLOAD_FLAGS is a list of words
"$WORKLOAD" $WORKLOAD_FLAGS --pid-file "$TMP/workload.pid" --file-dir "$TMP" \
	>"$TMP/workload.out" 2>&1 &
WPID=$!
wait "$WPID"
rc=$?
cat "$TMP/workload.out"
wait "$TRUE_PID"
true_rc=$?
TRUE_PID=
T_EXIT=$(date +%s.%N)
[ "$rc" -eq 0 ] || fatal "the workload exited with status $rc"
[ "$(cat "$TMP/workload.pid" 2>/dev/null)" = "$WPID" ] || fatal "the workload's pid file is wrong"
[ "$true_rc" -eq 0 ] || fatal "the /bin/true loop exited with status $true_rc"

# "fault_workload: pid P ... faults N (minflt A majflt B) elapsed T s since_start S"
W_LINE=$(grep '^fault_workload: pid ' "$TMP/workload.out" | tail -n 1)
read -r W_PID W_FAULTS <<<"$(awk '{ for (i = 1; i < NF; i++) { if ($i == "pid") p = $(i + 1)
		if ($i == "since_start") f = $(i + 1) } } END { print p, f }' <<<"$W_LINE")"
if ! [[ "$W_FAULTS" =~ ^[0-9]+$ ]] || [ "$W_PID" != "$WPID" ]; then
	fatal "cannot parse the workload's summary line: '$W_LINE'"
fi
pass "workload (pid $WPID) ran and exited; it counted $W_FAULTS faults (getrusage)"

mapfile -t TRUE_PIDS < <(grep -E '^[0-9]+$' "$TMP/true.pids")
[ "${#TRUE_PIDS[@]}" -eq "$NTRUE" ] ||
	fatal "the /bin/true loop reported ${#TRUE_PIDS[@]} pids, expected $NTRUE"
pid_list=$(
	IFS=,
	echo "${TRUE_PIDS[*]}"
)

# Let mmlockd see the exits and close the windows (interval 1 s), then stop perf.
sleep "$(awk -v t0="$T_EXIT" -v now="$(date +%s.%N)" 'BEGIN { d = 3 - (now - t0); print (d > 0 ? d : 0) }')"
perf_stopped

# --- the daemon's status, then SIGTERM -----------------------------------------------------------
mmlockd_alive
status_ok=0
if http_get /api/v1/status "$TMP/status.json" &&
	status_lines events "$TMP/status.json" >"$TMP/events.txt" 2>"$TMP/parse.err" &&
	status_lines globals "$TMP/status.json" >"$TMP/globals.txt" 2>>"$TMP/parse.err"; then
	status_ok=1
fi
sigterm_mmlockd
[ -s "$DB" ] || fatal "no database at $DB"

sql() { # QUERY: one row per line, fields separated by spaces
	sqlite3 -batch -readonly -noheader -separator ' ' "$DB" "$1" 2>>"$TMP/sqlite.err"
}

# --- 5. nothing lost ----------------------------------------------------------------------------
log ""
if [ "$status_ok" -eq 1 ]; then
	log "mmlockd events (/api/v1/status):"
	awk '{ printf "  %-44s open %-5s samples %12s lost %s\n", $1, $2, $3, $4 }' "$TMP/events.txt"
	lost=$(awk '{ s += $4 } END { print s + 0 }' "$TMP/events.txt")
	expect_zero "$lost" "no record lost on any of mmlockd's streams (/api/v1/status)" \
		"$lost records lost on mmlockd's streams (/api/v1/status): the counts are floors"
	overflows=$(awk '$1 == "totals_events.exit_overflows" { print $2 }' "$TMP/globals.txt")
	exits=$(awk '$1 == "totals_events.exit_messages" { print $2 }' "$TMP/globals.txt")
	if [ -z "$overflows" ]; then
		fail "/api/v1/status has no totals_events.exit_overflows counter"
	elif [ "$overflows" -eq 0 ]; then
		pass "no taskstats overflow (${exits:-?} exit messages received)"
	else
		fail "$overflows taskstats overflows: exit messages were lost"
	fi
else
	cat "$TMP/parse.err" 2>/dev/null
	fail "/api/v1/status did not answer after the workload"
fi
if db_lost=$(sql "SELECT coalesce(sum(lost), 0) FROM event_windows;") && [ -n "$db_lost" ]; then
	expect_zero "$db_lost" "no record lost in event_windows" \
		"event_windows records $db_lost lost records"
else
	fail "cannot read event_windows: $(head -n 1 "$TMP/sqlite.err")"
fi
# "LOST events:  N  ( x%)" in the aggregated section (the per-event sections repeat it).
perf_lost=$(perf report -i "$TMP/perf.data" --stats 2>/dev/null |
	awk '$1 == "Aggregated" { agg = 1; next } / stats:$/ { agg = 0 }
		agg && $1 ~ /^LOST/ { s += $3 } END { print s + 0 }')
expect_zero "$perf_lost" "no record lost by perf" \
	"perf lost $perf_lost records: its counts are floors (raise perf record -m?)"

# --- 2. faults ------------------------------------------------------------------------------------
if ! row=$(sql "SELECT count(*), count(DISTINCT start_time), coalesce(sum(minflt), 0),
		coalesce(sum(majflt), 0), coalesce(sum(fallback_locks), 0),
		coalesce(sum(fallback_lock_waits), 0),
		coalesce(group_concat(DISTINCT comm), '-')
	FROM process_stats WHERE pid = $WPID;") || [ -z "$row" ]; then
	cat "$TMP/sqlite.err"
	fatal "cannot query process_stats in $DB"
fi
read -r nrows nstarts m_min m_maj m_fb m_waits m_comm <<<"$row"
log ""
log "process_stats: $nrows rows for pid $WPID (comm $m_comm)," \
	"$(sql "SELECT count(DISTINCT ts_start) FROM process_stats;") windows stored"
[ "$nstarts" -le 1 ] || log "note: pid $WPID has $nstarts distinct start_time values"
[ "$nrows" -gt 0 ] || fatal "process_stats has no row for pid $WPID"
m_faults=$((m_min + m_maj))
tail_faults=$((m_faults - W_FAULTS))
log "faults: mmlockd minflt $m_min + majflt $m_maj = $m_faults, workload (getrusage) $W_FAULTS," \
	"difference $tail_faults"
if [ "$m_faults" -ge "$W_FAULTS" ] && [ "$tail_faults" -le "$MAX_FAULT_TAIL" ]; then
	pass "faults: mmlockd $m_faults vs getrusage $W_FAULTS (+$tail_faults, allowed 0..$MAX_FAULT_TAIL)"
else
	fail "faults: mmlockd $m_faults vs getrusage $W_FAULTS (difference $tail_faults," \
		"allowed 0..$MAX_FAULT_TAIL)"
fi

# --- 3. fallbacks, 4. waits ---------------------------------------------------------------------
# Compared for the workload's pid (the check asked for; it falls back only a few times: its faults
# complete under the per-VMA lock) and, since 300 execs fall back about 1500 times (ELF loading
# and argument copying fault in kernel mode), for the /bin/true pids together.
# perf script lines: "PID mm=... memcg_id=... write=false success=BOOL IP SYM". The collector
# also counts get_mmap_lock_carefully as the fallback site (where it is not inlined).
perf script -i "$TMP/perf.data" -F pid,ip,sym,trace >"$TMP/perf.txt" 2>"$TMP/perf_script.err" ||
	fatal "perf script failed: $(tail -n 1 "$TMP/perf_script.err")"
# workload: successes failed-trylocks; trues: same; then system-wide counts
read -r p_fb p_fail pt_fb pt_fail p_fb_all p_helper p_total <<<"$(awk -v pid="$WPID" \
	-v tpids="$pid_list" '
	BEGIN { n = split(tpids, a, ","); for (i = 1; i <= n; i++) tp[a[i]] = 1 }
	{ site = ($NF == "lock_mm_and_find_vma" || $NF == "get_mmap_lock_carefully") }
	/ success=false / { if (site) { if ($1 == pid) fail++; if ($1 in tp) tfail++ }; next }
	{ total++ }
	site { all++; if ($1 == pid) fb++; if ($1 in tp) tfb++ }
	$NF ~ /^__mmap_lock_do_trace_acquire_returned/ { helper++ }
	END { print fb + 0, fail + 0, tfb + 0, tfail + 0, all + 0, helper + 0, total + 0 }' \
	"$TMP/perf.txt")"
if ! row=$(sql "SELECT coalesce(sum(fallback_locks), 0), coalesce(sum(fallback_lock_waits), 0)
		FROM process_stats WHERE pid IN ($pid_list);") ||
	[ -z "$row" ]; then
	fatal "cannot query process_stats for the /bin/true pids: $(head -n 1 "$TMP/sqlite.err")"
fi
read -r mt_fb mt_waits <<<"$row"
log ""
log "perf: $p_total successful read locks system-wide, $p_fb_all in lock_mm_and_find_vma," \
	"$p_helper in __mmap_lock_do_trace_acquire_returned"

helper_only=0
if [ "$p_fb_all" -eq 0 ] && [ "$p_helper" -gt 0 ]; then
	helper_only=1
	log "SKIP (check): perf saw no read lock in lock_mm_and_find_vma, only in the out-of-line" \
		"helper __mmap_lock_do_trace_acquire_returned: this kernel does not inline the trace" \
		"call, and the fallbacks collector documents that it cannot attribute then"
fi

# Whether mmlockd's $2 is within TOL% + 2 of perf's $1.
close_to_perf() {
	awk -v p="$1" -v m="$2" -v t="$TOL" 'BEGIN { d = m - p; if (d < 0) d = -d
		exit !(d <= p * t / 100.0 + 2) }'
}

# fallback_checks WHAT MMLOCKD_FALLBACKS MMLOCKD_WAITS PERF_FALLBACKS PERF_FAILED_ATTEMPTS
fallback_checks() {
	local what=$1 m=$2 waits=$3 p=$4 pfail=$5
	log ""
	log "fallbacks of $what: mmlockd fallback_locks $m, perf $p, difference $((m - p))" \
		"($(diff_pct "$p" "$m")%)"
	if [ "$helper_only" -eq 1 ]; then
		log "  (not compared: see the SKIP above)"
	elif close_to_perf "$p" "$m"; then
		pass "fallback_locks of $what: mmlockd $m vs perf $p (difference $((m - p))," \
			"allowed ${TOL}% + 2)"
	else
		fail "fallback_locks of $what: mmlockd $m vs perf $p (difference $((m - p))," \
			"allowed ${TOL}% + 2)"
	fi
	log "fallback waits of $what: $waits of $m fallbacks found mmap_lock taken;" \
		"perf saw $pfail failed read attempts there"
	if [ "$waits" -gt "$m" ]; then
		fail "fallback_lock_waits of $what: $waits > fallback_locks $m"
	elif [ "$helper_only" -eq 1 ]; then
		log "  (waits not compared: see the SKIP above)"
	elif close_to_perf "$pfail" "$waits"; then
		pass "fallback_lock_waits of $what: mmlockd $waits vs perf's failed attempts $pfail" \
			"(allowed ${TOL}% + 2; one failed attempt per contended fallback)"
	else
		fail "fallback_lock_waits of $what: mmlockd $waits vs perf's failed attempts $pfail" \
			"(allowed ${TOL}% + 2)"
	fi
}
fallback_checks "pid $WPID" "$m_fb" "$m_waits" "$p_fb" "$p_fail"
fallback_checks "the $NTRUE /bin/true" "$mt_fb" "$mt_waits" "$pt_fb" "$pt_fail"

# --- 6. short-lived processes -------------------------------------------------------------------
# A process is (pid, start_time) in process_stats; comm is per window. The true process of a loop
# pid is its (pid, start_time) that has comm 'true' in some window (the first window may still
# show a placeholder "pid-N" when the exec's COMM record came later). Rows of the same pid under
# another start_time are another process as far as the database says: for these pids that can
# only be a split of the same /bin/true, reported separately.
# pid start_time comm faults fallback_locks, per (pid, start_time, comm) of the loop's pids
sql "SELECT pid, start_time, comm, sum(minflt + majflt), sum(fallback_locks) FROM process_stats
	WHERE pid IN ($pid_list) GROUP BY pid, start_time, comm ORDER BY pid, start_time;" \
	>"$TMP/true_rows.txt" ||
	fatal "cannot query process_stats for the /bin/true pids: $(head -n 1 "$TMP/sqlite.err")"
all_true=$(sql "SELECT count(DISTINCT pid) FROM process_stats WHERE comm = 'true';")
# n_true: pids with a true process; n_zero: true processes with 0 faults; n_split: pids with more
# than one start_time; median: faults per pid over all its rows (what the kernel counted).
read -r n_true n_zero n_split median <<<"$(awk '
	{ k = $1 " " $2; f[k] += $4; per_pid[$1] += $4
	  if (!((k) in seen)) { seen[k] = 1; nid[$1]++ }
	  if ($3 == "true") is_true[k] = 1 }
	END { n = 0; z = 0; sp = 0
		for (k in is_true) { split(k, a, " "); tp[a[1]] = 1; if (f[k] == 0) z++ }
		for (p in tp) v[++n] = per_pid[p]
		for (p in nid) if (nid[p] > 1) sp++
		for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
		med = n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : 0
		print n, z, sp, med }' "$TMP/true_rows.txt")"
log ""
log "/bin/true: $n_true of $NTRUE pids have a process named 'true' in process_stats" \
	"($all_true pids named 'true' in all); median $median faults per /bin/true (all rows of" \
	"the pid); $n_zero true processes with 0 faults; $n_split pids stored as 2+ processes"
if [ "$n_split" -gt 0 ] || [ "$n_zero" -gt 0 ]; then
	log "  pids of the loop stored as several processes or without faults" \
		"(pid start_time comm faults fallback_locks), first 3:"
	awk '{ k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; nid[$1]++ }; f[k] += $4
		  if ($3 == "true") t[k] = 1 }
		END { for (k in t) if (f[k] == 0) { split(k, a, " "); bad[a[1]] = 1 }
		      for (p in nid) if (nid[p] > 1) bad[p] = 1
		      for (p in bad) print p }' "$TMP/true_rows.txt" | sort -n | head -n 3 |
		while read -r p; do awk -v p="$p" '$1 == p { print "    " $0 }' "$TMP/true_rows.txt"; done
fi
if [ "$n_true" -ge "$MIN_TRUE" ]; then
	pass "short-lived processes: $n_true of $NTRUE /bin/true have rows (>= $MIN_TRUE)"
else
	fail "short-lived processes: only $n_true of $NTRUE /bin/true have rows (< $MIN_TRUE)"
fi
if [ "$n_true" -gt 0 ] && [ "$n_zero" -eq 0 ]; then
	pass "every /bin/true process has minflt + majflt > 0 (median $median)"
else
	fail "$n_zero of $n_true /bin/true processes have minflt + majflt = 0 in process_stats" \
		"($n_split pids split: their faults are stored under another start_time)"
fi

log ""
summary_and_exit
