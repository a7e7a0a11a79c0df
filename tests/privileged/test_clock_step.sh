#!/bin/bash
# test_clock_step.sh: mmlockd's windows follow a wall clock that is set while it runs (NTP
# correcting a clock that was wrong at boot), and the prune that follows keeps the history.
#
# Usage: test_clock_step.sh MMLOCKD_BINARY SHIM_LIBRARY
#
# The machine's clock is never touched: mmlockd runs with clock_step_shim.so preloaded, which
# moves its own CLOCK_REALTIME by STEP ms once AFTER_MS (6000) ms have passed since it started
# (CLOCK_MONOTONIC stays true, as it does when a clock is set). Three runs on the defaults with
# 1-second windows, each stopped by SIGTERM ~RUN_S (11) s after its start:
#   forward  an hour forward;
#   back     an hour back;
#   wild     two days forward with --retention 1: the first prune after the step runs on a clock
#            two days past the windows stored before it.
# Checks, for each run (windows in the order they were stored):
#   1. one notice "wall time moved forward|back by S s", S within 0.5 s of the step;
#   2. no window spans the step: every window lasts more than 0 and less than 60 s (not 1 s: a
#      loop that stalled two intervals or more under load closes one window for the gap, clock.h);
#   3. the windows are contiguous but for one gap, the step (within 0.5 s): the window the step
#      cut ends at the step on the old clock, the next starts at the same instant on the new one;
#   4. the first window starts on the true clock (after this script's start, within 30 s), the
#      last ends on the stepped one (this script's time after the stop + the step, within 2 s);
#   5. the windows on the new clock are at least 2 (the step happened inside the run);
#   wild: 6. no window was pruned (the prune counts back from the newest window, and no window is
#      older than the retention before it).
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root). Environment: KEEP_TMP=1 keeps the
# temporary directory.

set -u -o pipefail

TEST_NAME=test_clock_step
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

AFTER_MS=6000
RUN_S=11

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -f "$2" ]; then
	echo "usage: $0 MMLOCKD_BINARY SHIM_LIBRARY" >&2
	exit 2
fi
REAL_MMLOCKD=$(realpath "$1")
SHIM=$(realpath "$2")
need_root "system-wide tracepoints, taskstats"
need_tools curl sqlite3 python3
make_tmp clock-step
empty_conf

# run_stepped NAME STEP_MS [FLAG...]: one run whose clock moves by STEP_MS, then its checks.
run_stepped() {
	local name=$1 step_ms=$2 t0 t1
	shift 2
	MMLOCKD=$TMP/$name-mmlockd
	printf '#!/bin/sh\nexec env LD_PRELOAD=%s MM_TEST_STEP_MS=%s MM_TEST_STEP_AFTER_MS=%s %s "$@"\n' \
		"$SHIM" "$step_ms" "$AFTER_MS" "$REAL_MMLOCKD" >"$MMLOCKD"
	chmod +x "$MMLOCKD"
	DB=$TMP/$name.db
	t0=$(date +%s.%N)
	start_mmlockd "$@"
	cp "$TMP/mmlockd.log" "$TMP/$name.log" 2>/dev/null
	local left
	left=$(python3 -c "print(max(0.0, $t0 + $RUN_S - $(date +%s.%N)))")
	sleep "$left"
	mmlockd_alive
	sigterm_mmlockd
	t1=$(date +%s.%N)
	cp "$TMP/mmlockd.log" "$TMP/$name.log"
	sqlite3 -separator ' ' "$DB" "SELECT ts_start, ts_end FROM windows ORDER BY id" \
		>"$TMP/$name.windows" || fail "$name: cannot read the windows"
	local verdicts
	verdicts=$(python3 - "$TMP/$name.windows" "$TMP/$name.log" "$step_ms" "$t0" "$t1" \
		"$name" <<'PY'
import re, sys
wins = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
log = open(sys.argv[2]).read()
step = int(sys.argv[3]) / 1000.0
t0, t1, name = float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]

def say(ok, what):
    print(("PASS " if ok else "FAIL ") + name + ": " + what)

moves = re.findall(r"wall time moved (forward|back) by ([0-9.]+) s", log)
seen = [(1 if d == "forward" else -1) * float(s) for d, s in moves]
say(len(seen) == 1 and abs(seen[0] - step) < 0.5,
    "one notice of the step, %s (step %.3f s)" % (seen, step))
bad = [w for w in wins if not (0 < w[1] - w[0] < 60)]
say(wins and not bad, "%d windows, none 60 s or longer, or empty: %s" % (len(wins), bad[:3]))
gaps = [(i, b[0] - a[1]) for i, (a, b) in enumerate(zip(wins, wins[1:]))]
jumps = [(i, g) for i, g in gaps if abs(g) > 0.001]
say(len(jumps) == 1 and abs(jumps[0][1] - step) < 0.5,
    "contiguous windows but for one gap of the step: %s" % jumps[:3])
say(wins and t0 - 1 <= wins[0][0] <= t0 + 30 and abs(wins[-1][1] - (t1 + step)) < 2,
    "first window from %.3f (started %.3f), last to %.3f (stopped %.3f + step)"
    % (wins[0][0] if wins else 0, t0, wins[-1][1] if wins else 0, t1))
after = len(wins) - 1 - jumps[0][0] if len(jumps) == 1 else 0
say(after >= 2, "%d windows on the new clock" % after)
if name == "wild":
    pruned = re.findall(r"pruned (\d+) windows", log)
    say(not pruned and len(jumps) == 1 and jumps[0][0] >= 1,
        "nothing pruned (%s), %d windows kept before the step"
        % (pruned, jumps[0][0] + 1 if jumps else 0))
PY
	) || fail "$name: the checks did not run"
	local verdict line
	while IFS= read -r line; do
		verdict=${line%% *}
		if [ "$verdict" = PASS ]; then
			pass "${line#PASS }"
		else
			fail "${line#FAIL }"
		fi
	done <<<"$verdicts"
}

run_stepped forward 3600000
run_stepped back -3600000
run_stepped wild 172800000 --retention 1
summary_and_exit
