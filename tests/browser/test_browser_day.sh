#!/bin/bash
# test_browser_day.sh: the web page on a day of history of a busy host, at the 24 h and 7 d
# ranges. gen_day (tests/tools/gen_day.c) writes the day (8 640 windows ending now, ~57 000
# processes, 50 units, lock rows) through the daemon's own store; mmlockd serves it with its
# sandbox on, collecting next to nothing (vmstat only, no fault split, one-hour windows, so the
# day is what the page shows); day.test.mjs drives Debian's chromium through playwright-core
# (npm, scripts/deps.sh) over every view that reads the range (see that file for the checks).
# A run of its own beside test_browser.sh, whose checks need a live workload instead.
#
# Usage: test_browser_day.sh MMLOCKD GEN_DAY SOURCE_DIR
# Environment: SHOTS=DIR keeps the screenshots there (default: $TMP/shots, removed with $TMP
# unless KEEP_TMP=1); DAY_DB=FILE serves a copy of FILE instead of a new day (its windows must
# end near now); CHROMIUM=PATH (default /usr/bin/chromium).
# Exit status: 0 every check passed, 1 a check failed, 77 skipped (not root, no chromium, no
# node, no playwright-core).

set -u -o pipefail

TEST_NAME=browser_day
PASSED=0
FAILED=0
SKIP=77
TMP=
DAEMON_PID=
# shellcheck source=../privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh"

MMLOCKD=${1:-}
GEN_DAY=${2:-}
SRC=${3:-}
if [ -z "$MMLOCKD" ] || [ -z "$GEN_DAY" ] || [ -z "$SRC" ]; then
	echo "usage: $0 MMLOCKD GEN_DAY SOURCE_DIR" >&2
	exit 2
fi
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ "$(id -u)" = 0 ] || skip "needs root (the daemon's sandbox as in production)"
[ -x "$CHROMIUM" ] || skip "$CHROMIUM is not installed (Debian package chromium)"
command -v node >/dev/null 2>&1 || skip "node is not installed"
[ -f "$SRC/node_modules/playwright-core/package.json" ] ||
	skip "playwright-core is not installed in $SRC/node_modules (scripts/deps.sh runs npm ci)"

cleanup() {
	stop_process "$DAEMON_PID" TERM 150
	remove_tmp
}
trap cleanup EXIT

TMP=$(mktemp -d /var/tmp/mmlockd-browser-day.XXXXXX)
CONF=/dev/null
DB=$TMP/day.db
SHOTS=${SHOTS:-$TMP/shots}
mkdir -p "$SHOTS"

if [ -n "${DAY_DB:-}" ]; then
	cp "$DAY_DB" "$DB" || fatal "cannot copy $DAY_DB"
elif "$GEN_DAY" "$DB" 2>"$TMP/gen_day.err"; then
	log "# $(tail -n 1 "$TMP/gen_day.err")"
else
	fatal "gen_day failed: $(tail -n 3 "$TMP/gen_day.err")"
fi

start_mmlockd --interval 3600 --collectors vmstat --split-duty 0

out=$TMP/day.out
env URL="http://127.0.0.1:$PORT/" SHOTS="$SHOTS" CHROMIUM="$CHROMIUM" \
	NODE_PATH="$SRC/node_modules" \
	node "$(dirname "$0")/day.test.mjs" "$SRC/node_modules/playwright-core/index.mjs" 2>&1 |
	tee "$out"
rc=${PIPESTATUS[0]}
PASSED=$((PASSED + $(grep -c '^ok ' "$out")))
FAILED=$((FAILED + $(grep -c '^FAIL ' "$out")))
[ "$rc" -eq 0 ] || [ "$FAILED" -gt 0 ] || fail "day.test.mjs exited with status $rc"
mmlockd_alive
summary_and_exit
