#!/bin/bash
# test_agreement.sh: proves that mmlockd's per-process counts agree with an independent count.
#
# Usage: test_agreement.sh MMLOCKD_BINARY WORKLOAD_BINARY
#
# Starts mmlockd (temporary database, loopback port, 1 s windows), runs fault_workload under
# `perf stat` with one counter per metric (tracepoint filters split mmap_lock_acquire_returned
# by mode and success), then compares, for the workload's pid, perf's counts with
#   - the totals /api/v1/processes reports once the workload's work is done (the workload then
#     lingers, idle, until SIGUSR1, so the daemon still lists it as a live process), and
#   - the sums over the process_stats view in SQLite after SIGTERM (which flushes the open window).
# faults, mmap_lock_read and mmap_lock_write must each agree within 1% (mmlockd also sees the few
# events between perf's fork and the exec of the workload, so it may be slightly higher), be
# non-zero, and faults must exceed 100000. Any lost event on the compared tracepoints fails the
# test, since a loss makes the comparison meaningless.
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no perf, or the
# tracepoints do not exist). Environment: WORKLOAD_ARGS (extra workload flags), MMLOCKD_ARGS
# (extra daemon flags, default --ring-pages 1024: the workload makes ~0.5M events/s on 2 CPUs,
# and with the default 256-page rings a busy machine that delays the daemon by ~10 ms makes it
# lose records, which makes any comparison meaningless; bench/ measures losses with defaults;
# with --source auto, mmaplock and faults run on the BPF source where it loads, whose counts are
# then the ones compared: test_bpf compares them with the perf path's),
# KEEP_TMP=1 (keep the temporary directory), TOLERANCE_PCT (default 1).

set -u -o pipefail

TEST_NAME=test_agreement
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

TOL=${TOLERANCE_PCT:-1}
MIN_FAULTS=100000
PERF_PID=
WPID=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	if [ -n "$PERF_PID" ] && kill -0 "$PERF_PID" 2>/dev/null; then
		[ -n "$WPID" ] && kill -KILL "$WPID" 2>/dev/null
		stop_process "$PERF_PID" TERM
	fi
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

daemon_and_workload_args "$@"

# --- can this run at all? -------------------------------------------------------------------
need_root "system-wide tracepoints"
need_perf

need_tracepoints exceptions/page_fault_user mmap_lock/mmap_lock_acquire_returned
if ! perf stat -e exceptions:page_fault_user -e mmap_lock:mmap_lock_acquire_returned \
	-o /dev/null -- true >/dev/null 2>&1; then
	skip "perf cannot open the tracepoints ($(perf stat -e exceptions:page_fault_user \
		-o /dev/null -- true 2>&1 | head -n 1))"
fi

# Missing tools or binaries are failures, not skips: the test could run, the setup is broken.
need_tools curl sqlite3 python3

make_tmp agreement

empty_conf

# --- start the daemon -------------------------------------------------------------------------
start_mmlockd --ring-pages 1024 --collectors all

# Wait until both compared tracepoints are open, on the perf rings or (mmaplock on the BPF
# source, which --source auto picks where it loads) in the kernel.
if ! events_open --or-bpf mmaplock exceptions:page_fault_user mmap_lock:mmap_lock_acquire_returned; then
	log "events in /api/v1/status (name open samples lost error):"
	cat "$TMP/events.txt"
	fatal "mmlockd does not report exceptions:page_fault_user and" \
		"mmap_lock:mmap_lock_acquire_returned as open"
fi
pass "tracepoints open in mmlockd"

# --- the workload under perf stat --------------------------------------------------------------
# The workload creates a done file when its work is over and then lingers, idle and alive, until
# SIGUSR1: mmlockd's snapshot of a live process is read then, without racing the removal of
# exited processes at the next window roll. Counter order matters: perf's CSV does not show the
# filters, its lines come in -e order.
LINGER=60
log "running: perf stat ... -- $WORKLOAD ${WORKLOAD_ARGS:-}"
# shellcheck disable=SC2086 # WORKLOAD_ARGS is a list of words
perf stat -x, -o "$TMP/perf.csv" \
	-e exceptions:page_fault_user \
	-e mmap_lock:mmap_lock_acquire_returned --filter 'write == 0 && success == 1' \
	-e mmap_lock:mmap_lock_acquire_returned --filter 'write == 1 && success == 1' \
	-e mmap_lock:mmap_lock_acquire_returned --filter 'success == 0' \
	-e mmap_lock:mmap_lock_acquire_returned \
	-- "$WORKLOAD" --pid-file "$TMP/workload.pid" --done-file "$TMP/workload.done" \
	--linger "$LINGER" --file-dir "$TMP" ${WORKLOAD_ARGS:-} >"$TMP/workload.out" 2>&1 &
PERF_PID=$!

for _ in $(seq 1500); do # up to ~300 s of work
	[ -e "$TMP/workload.done" ] && break
	kill -0 "$PERF_PID" 2>/dev/null || break
	sleep 0.2
done
if [ ! -e "$TMP/workload.done" ]; then
	cat "$TMP/workload.out"
	fatal "the workload did not finish its work (no done file)"
fi
T_DONE=$(date +%s.%N)
WPID=$(cat "$TMP/workload.pid" 2>/dev/null)
[[ "$WPID" =~ ^[0-9]+$ ]] || fatal "workload wrote no pid file"

# --- the live API, after the work, before SIGTERM ----------------------------------------------
# Wait for a snapshot taken at least 1 s after the work ended whose totals for the pid equal those
# of an earlier snapshot (distinct "taken"): the daemon has drained its rings by then.
api_last=none
api_prev=
api_taken=
for _ in $(seq 60); do # up to ~15 s
	if http_get /api/v1/processes "$TMP/processes.json" &&
		cur=$(status_lines proc "$TMP/processes.json" "$WPID" \
			2>"$TMP/parse.err"); then
		read -r taken counts <<<"$cur"
		if [ "$counts" != none ] && [ "$taken" != "$api_taken" ]; then
			api_last=$counts
			late=$(awk -v t="$taken" -v d="$T_DONE" 'BEGIN { print (t >= d + 1.0) }')
			[ "$late" = 1 ] && [ "$counts" = "$api_prev" ] && break
			api_prev=$counts
			api_taken=$taken
		fi
	fi
	sleep 0.25
done

# Let the workload exit and collect perf's counts.
kill -USR1 "$WPID" 2>/dev/null
for _ in $(seq 100); do # up to ~20 s
	kill -0 "$PERF_PID" 2>/dev/null || break
	sleep 0.2
done
if kill -0 "$PERF_PID" 2>/dev/null; then
	kill -KILL "$WPID" "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_PID=
	cat "$TMP/workload.out"
	fatal "perf stat did not end after the workload was told to exit"
fi
wait "$PERF_PID"
rc=$?
PERF_PID=
T_EXIT=$(date +%s.%N)
cat "$TMP/workload.out"
[ "$rc" -eq 0 ] || fatal "perf stat + workload exited with status $rc"
pass "workload (pid $WPID) ran under perf stat"

# perf 6.1 -x, lines: value,unit,event,run-time,percent,metric,metric-unit ('#' header, blanks).
mapfile -t PERF < <(awk -F, '/^#/ || NF < 3 { next } { print $1 " " $3 }' "$TMP/perf.csv")
expect=(exceptions:page_fault_user mmap_lock:mmap_lock_acquire_returned
	mmap_lock:mmap_lock_acquire_returned mmap_lock:mmap_lock_acquire_returned
	mmap_lock:mmap_lock_acquire_returned)
if [ "${#PERF[@]}" -ne 5 ]; then
	cat "$TMP/perf.csv"
	fatal "expected 5 perf stat lines, got ${#PERF[@]}"
fi
PV=()
for i in 0 1 2 3 4; do
	read -r v ev <<<"${PERF[$i]}"
	if [ "$ev" != "${expect[$i]}" ] || ! [[ "$v" =~ ^[0-9]+$ ]]; then
		cat "$TMP/perf.csv"
		fatal "perf stat line $((i + 1)): '${PERF[$i]}', expected a count of ${expect[$i]}"
	fi
	PV+=("$v")
done
P_FAULTS=${PV[0]} P_READ=${PV[1]} P_WRITE=${PV[2]} P_TFAIL=${PV[3]} P_ACQ=${PV[4]}
log "perf stat: faults $P_FAULTS read $P_READ write $P_WRITE trylock_fail $P_TFAIL" \
	"acquisitions $P_ACQ"

# The filters must partition the unfiltered count, or perf did not apply them.
if [ $((P_READ + P_WRITE + P_TFAIL)) -eq "$P_ACQ" ]; then
	pass "perf filters partition the acquisitions ($P_READ + $P_WRITE + $P_TFAIL = $P_ACQ)"
else
	fail "perf filters do not partition the acquisitions" \
		"($P_READ + $P_WRITE + $P_TFAIL != $P_ACQ): perf ignored a --filter?"
fi
if [ "$P_FAULTS" -gt "$MIN_FAULTS" ] && [ "$P_READ" -gt 0 ] && [ "$P_WRITE" -gt 0 ]; then
	pass "the workload is big enough (faults > $MIN_FAULTS, read and write > 0)"
else
	fail "the workload is too small to mean anything" \
		"(faults $P_FAULTS <= $MIN_FAULTS, or no read/write acquisition)"
fi

# diff_pct PERF MMLOCKD: relative difference in %. within PERF MMLOCKD: |diff| <= TOL.
# compare SOURCE FAULTS READ WRITE TFAIL: prints the table, one check per compared metric.
compare() {
	local src=$1
	local -a names=(faults mmap_lock_read mmap_lock_write mmap_lock_trylock_fail)
	local -a pv=("$P_FAULTS" "$P_READ" "$P_WRITE" "$P_TFAIL")
	local -a mv=("$2" "$3" "$4" "$5")
	local i
	log ""
	log "perf stat vs mmlockd ($src), pid $WPID, tolerance ${TOL}%:"
	printf '  %-24s %12s %12s %9s\n' metric perf mmlockd 'diff %'
	for i in 0 1 2 3; do
		printf '  %-24s %12s %12s %9s%s\n' "${names[$i]}" "${pv[$i]}" "${mv[$i]}" \
			"$(diff_pct "${pv[$i]}" "${mv[$i]}")" "$([ "$i" -eq 3 ] && echo '  (info)')"
	done
	for i in 0 1 2; do
		if [ "${mv[$i]}" -gt 0 ] && within "${pv[$i]}" "${mv[$i]}"; then
			pass "$src ${names[$i]} agrees with perf"
		else
			fail "$src ${names[$i]}: mmlockd ${mv[$i]} vs perf ${pv[$i]}" \
				"($(diff_pct "${pv[$i]}" "${mv[$i]}")%, tolerance ${TOL}%)"
		fi
	done
}

if [ "$api_last" = none ]; then
	cat "$TMP/parse.err" 2>/dev/null
	fail "/api/v1/processes never listed the workload pid $WPID"
else
	pass "/api/v1/processes lists the workload pid $WPID"
	[ "$api_last" = "$api_prev" ] ||
		log "note: the pid's totals in /api/v1/processes had not settled after 15 s"
	# shellcheck disable=SC2086 # four numbers
	compare /api/v1/processes $api_last
fi

# Give mmlockd time to close the windows of the workload (interval 1 s).
sleep "$(awk -v t0="$T_EXIT" -v now="$(date +%s.%N)" 'BEGIN { d = 3 - (now - t0); print (d > 0 ? d : 0) }')"

# --- lost events ---------------------------------------------------------------------------------
log ""
if http_get /api/v1/status "$TMP/status.json" &&
	status_lines events "$TMP/status.json" >"$TMP/events.txt"; then
	log "mmlockd events (/api/v1/status):"
	awk '{ printf "  %-44s open %-5s samples %12s lost %s\n", $1, $2, $3, $4 }' "$TMP/events.txt"
	lost=$(awk '($1 == "exceptions:page_fault_user" ||
		     $1 == "mmap_lock:mmap_lock_acquire_returned") { s += $4 } END { print s + 0 }' \
		"$TMP/events.txt")
	other=$(awk '!($1 == "exceptions:page_fault_user" ||
		      $1 == "mmap_lock:mmap_lock_acquire_returned") { s += $4 } END { print s + 0 }' \
		"$TMP/events.txt")
	[ "$other" -eq 0 ] || log "note: $other events lost on other streams"
	if [ "$lost" -eq 0 ]; then
		pass "no lost events on the compared tracepoints"
	else
		fail "$lost events lost on the compared tracepoints: the comparison is meaningless" \
			"(raise ring_pages?)"
	fi
else
	fail "/api/v1/status did not answer after the workload"
fi

# --- SIGTERM: flush the open window and exit 0 -------------------------------------------------
mmlockd_alive
sigterm_mmlockd

# --- SQLite history ------------------------------------------------------------------------------
if [ ! -s "$DB" ]; then
	fatal "no database at $DB"
fi
if ! row=$(sqlite3 -batch -readonly -noheader -separator ' ' "$DB" \
	"SELECT count(*), count(DISTINCT start_time), coalesce(sum(faults), 0),
		coalesce(sum(mmap_lock_read), 0), coalesce(sum(mmap_lock_write), 0),
		coalesce(sum(mmap_lock_trylock_fail), 0)
	 FROM process_stats WHERE pid = $WPID;" 2>"$TMP/sqlite.err") || [ -z "$row" ]; then
	cat "$TMP/sqlite.err"
	fatal "cannot query process_stats in $DB"
fi
read -r nrows nstarts s_faults s_read s_write s_tfail <<<"$row"
log ""
log "process_stats: $nrows rows for pid $WPID" \
	"($(sqlite3 -batch -readonly -noheader "$DB" \
		"SELECT count(DISTINCT ts_start) FROM process_stats;" 2>/dev/null) windows stored)"
[ "$nstarts" -le 1 ] || log "note: pid $WPID has $nstarts distinct start_time values"
if [ "$nrows" -gt 0 ]; then
	pass "process_stats has rows for pid $WPID"
	compare process_stats "$s_faults" "$s_read" "$s_write" "$s_tfail"
else
	fail "process_stats has no row for pid $WPID"
fi

# Losses after the status query above (e.g. in the final flush) show in the stored windows.
if ev_rows=$(sqlite3 -batch -readonly -noheader -separator ' ' "$DB" \
	"SELECT event, sum(samples), sum(lost) FROM event_windows GROUP BY event ORDER BY event;" \
	2>"$TMP/sqlite.err"); then
	log ""
	log "event_windows (SQLite), summed over the run:"
	awk '{ printf "  %-44s samples %12s lost %s\n", $1, $2, $3 }' <<<"$ev_rows"
	db_lost=$(awk '($1 == "exceptions:page_fault_user" ||
			$1 == "mmap_lock:mmap_lock_acquire_returned") { s += $3 } END { print s + 0 }' \
		<<<"$ev_rows")
	expect_zero "$db_lost" "no lost events on the compared tracepoints in event_windows" \
		"event_windows records $db_lost lost events on the compared tracepoints"
else
	log "note: cannot read event_windows: $(head -n 1 "$TMP/sqlite.err")"
fi

log ""
summary_and_exit
