#!/bin/bash
# test_browser.sh: the web page in a real browser. Starts mmlockd on its default collectors
# (totals, fallbacks, vmstat) and its default 10-second windows, on a temporary database and a
# free loopback port, with outcome_workload (anon mode: faults, and fallbacks to mmap_lock while
# its writers hold the lock for write) running, plus a short run of a copy of it named
# "<i>xss<script>", and short runs of a copy named "shortlived". Then page.test.mjs drives Debian's chromium through playwright-core (npm,
# scripts/deps.sh) and checks the page as a user sees it (see that file for the list). Then a
# second daemon with the contention collector and a run of holder_workload, for the process
# view's "Waited behind" (page.test.mjs with HOLDER_PID).
#
# Usage: test_browser.sh MMLOCKD OUTCOME_WORKLOAD SOURCE_DIR
# Environment: SHOTS=DIR keeps the screenshots there (default: $TMP/shots, removed with $TMP
# unless KEEP_TMP=1); BROWSER_INTERVAL=S window length (default 10, mmlockd's default);
# CHROMIUM=PATH (default /usr/bin/chromium); HOLDER_WORKLOAD=PATH (tests/meson.build sets it;
# default: holder_workload next to OUTCOME_WORKLOAD; the second run is skipped without it).
# Exit status: 0 every check passed, 1 a check failed, 77 skipped (not root, no chromium, no
# node, no playwright-core, no tracefs).

set -u -o pipefail

TEST_NAME=browser
PASSED=0
FAILED=0
SKIP=77
TMP=
DAEMON_PID=
WL_PID=
# shellcheck source=../privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh"

MMLOCKD=${1:-}
WORKLOAD=${2:-}
SRC=${3:-}
if [ -z "$MMLOCKD" ] || [ -z "$WORKLOAD" ] || [ -z "$SRC" ]; then
	echo "usage: $0 MMLOCKD OUTCOME_WORKLOAD SOURCE_DIR" >&2
	exit 2
fi
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ "$(id -u)" = 0 ] || skip "needs root (tracepoints, /proc of every process)"
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed (Debian package chromium)"
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -f "$SRC/node_modules/playwright-core/package.json" ] ||
	skip "playwright-core is not installed in $SRC/node_modules (scripts/deps.sh runs npm ci)"
find_tracefs

cleanup() {
	stop_process "$WL_PID" TERM
	stop_process "$DAEMON_PID" TERM 150
	remove_tmp
}
trap cleanup EXIT

TMP=$(mktemp -d /var/tmp/mmlockd-browser.XXXXXX)
CONF=/dev/null
DB=$TMP/history.db
SHOTS=${SHOTS:-$TMP/shots}
mkdir -p "$SHOTS"

start_mmlockd --interval "${BROWSER_INTERVAL:-10}"

# The workload: faults and fallbacks for the whole test (until SIGTERM, which it cleans up after).
WL_START=$(date +%s.%N)
"$WORKLOAD" anon --rounds 100000000 --writer-delay-us 200 --dir "$TMP" \
	>"$TMP/workload.out" 2>&1 &
WL_PID=$!
# A process whose name is markup: a copy of the workload, named so, run for a second.
XSS_NAME='<i>xss<script>'
cp "$WORKLOAD" "$TMP/$XSS_NAME"
"$TMP/$XSS_NAME" anon --rounds 300 --writer-delay-us 200 --dir "$TMP" >"$TMP/xss.out" 2>&1 ||
	fail "the copy named $XSS_NAME did not run: $(tail -n 3 "$TMP/xss.out")"

# Short-lived processes (~0.1 s, ~1,200 faults each): with the fault split in bursts (20 ms of
# each second on the defaults) most runs are caught by no burst, the "not sampled" state.
SHORT_NAME=shortlived
cp "$WORKLOAD" "$TMP/$SHORT_NAME"
for _ in $(seq 12); do
	"$TMP/$SHORT_NAME" anon --rounds 3 --writer-delay-us 200 --dir "$TMP" >>"$TMP/short.out" 2>&1 ||
		fail "a run of $SHORT_NAME failed: $(tail -n 3 "$TMP/short.out")"
	sleep 0.3
done

# run_page NAME VAR=VALUE...: page.test.mjs against the daemon on $PORT with the environment
# given, its output in $TMP/NAME.out; counts its "ok" and "FAIL" lines.
run_page() {
	local out=$TMP/$1.out rc failed_before=$FAILED
	shift
	env URL="http://127.0.0.1:$PORT/" SHOTS="$SHOTS" CHROMIUM="$CHROMIUM" NODE_PATH="$SRC/node_modules" "$@" \
		node "$(dirname "$0")/page.test.mjs" "$SRC/node_modules/playwright-core/index.mjs" \
		2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	PASSED=$((PASSED + $(grep -c '^ok ' "$out")))
	FAILED=$((FAILED + $(grep -c '^FAIL ' "$out")))
	[ "$rc" -eq 0 ] || [ "$FAILED" -gt "$failed_before" ] || fail "page.test.mjs exited with status $rc"
	mmlockd_alive
	# Connections the daemon ended early, by reason: what a failed request of the page met.
	if [ "$FAILED" -gt "$failed_before" ]; then
		curl -s "http://127.0.0.1:$PORT/metrics" | grep '^mmlockd_http_connections_aborted_total' |
			sed 's/^/# /'
	fi
}

run_page page WL_PID="$WL_PID" WL_START="$WL_START" XSS_NAME="$XSS_NAME" SHORT_NAME="$SHORT_NAME" \
	MMLOCKD="$MMLOCKD" DB="$DB"

# Second run: whom a process waited behind for mmap_lock, which needs the contention collector
# (opt-in). A daemon with it on a database of its own, and holder_workload (tests/meson.build),
# whose fault threads wait behind its mprotect thread.
HOLDER_WORKLOAD=${HOLDER_WORKLOAD:-$(dirname "$WORKLOAD")/holder_workload}
if [ -x "$HOLDER_WORKLOAD" ]; then
	stop_process "$WL_PID" TERM
	WL_PID=
	stop_process "$DAEMON_PID" TERM 150
	DAEMON_PID=
	mv "$TMP/mmlockd.log" "$TMP/mmlockd-defaults.log"
	DB=$TMP/holders.db
	start_mmlockd --interval 2 --collectors totals,fallbacks,contention --split-duty 0
	if "$HOLDER_WORKLOAD" --seconds 3 --pid-file "$TMP/holder.pid" >"$TMP/holder.out" 2>&1; then
		run_page holders HOLDER_PID="$(cat "$TMP/holder.pid")"
	else
		fail "holder_workload failed: $(tail -n 3 "$TMP/holder.out")"
	fi
else
	log "# SKIP the waited-behind checks: no $HOLDER_WORKLOAD"
fi
log "screenshots: $SHOTS"
summary_and_exit
