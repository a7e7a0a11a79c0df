# Shared by the privileged test scripts (sourced, not run): reporting, finding tracefs, a free
# loopback port, relative differences. The sourcing script sets TEST_NAME, PASSED=0, FAILED=0,
# SKIP=77, TMP (its temp dir, whose mmlockd.log is shown on failure) and, for within(), TOL.

log() { printf '%s\n' "$*"; }
skip() {
	log "SKIP: $*"
	exit "$SKIP"
}
pass() {
	PASSED=$((PASSED + 1))
	log "PASS: $*"
}
fail() {
	FAILED=$((FAILED + 1))
	log "FAIL: $*"
}

summary_and_exit() {
	if [ "$FAILED" -gt 0 ] && [ -n "$TMP" ] && [ -s "$TMP/mmlockd.log" ]; then
		log "--- mmlockd log (last 100 lines) ---"
		tail -n 100 "$TMP/mmlockd.log"
		log "---"
	fi
	log "$TEST_NAME: $PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ] && exit 0
	exit 1
}

# A failure that makes the remaining checks pointless.
fatal() {
	fail "$*"
	summary_and_exit
}

# stop_process PID SIGNAL [TENTHS]: when PID runs, sends SIGNAL, waits up to TENTHS tenths of a
# second (default 50) for it to end, then SIGKILL, and reaps it (if it is our child).
stop_process() {
	local pid=$1 sig=$2 tenths=${3:-50}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null
	for _ in $(seq "$tenths"); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# Removes $TMP, or keeps it and says so with KEEP_TMP=1.
remove_tmp() {
	[ -n "$TMP" ] && [ -d "$TMP" ] || return 0
	if [ "${KEEP_TMP:-0}" = 1 ]; then
		log "kept $TMP"
	else
		rm -rf "$TMP"
	fi
}

# Sets TRACEFS to a mounted tracefs (mounting it at /sys/kernel/tracing if needed), or skips.
find_tracefs() {
	TRACEFS=
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		if [ -d "$d/events" ]; then
			TRACEFS=$d
			break
		fi
	done
	if [ -z "$TRACEFS" ] && [ -d /sys/kernel/tracing ]; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && TRACEFS=/sys/kernel/tracing
	fi
	[ -n "$TRACEFS" ] || skip "tracefs is not available"
}

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# (mmlockd - perf) / perf in percent, 3 decimals; "inf" when perf is 0 and mmlockd not.
diff_pct() {
	awk -v p="$1" -v m="$2" 'BEGIN { if (p == 0) { printf "%s", (m == 0 ? "0.000" : "inf"); exit }
		printf "%.3f", (m - p) * 100.0 / p }'
}

# Whether $2 is within TOL percent of $1.
within() {
	awk -v p="$1" -v m="$2" -v t="$TOL" 'BEGIN { if (p == 0) exit !(m == 0)
		d = (m - p) * 100.0 / p; if (d < 0) d = -d; exit !(d <= t) }'
}
