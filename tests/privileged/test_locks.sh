#!/bin/bash
# test_locks.sh: proves that mmlockd's lock contention profile agrees with `perf lock contention`
# for the same run, per caller.
#
# Usage: test_locks.sh MMLOCKD_BINARY LOCK_WORKLOAD_BINARY
#
# Starts mmlockd (temporary database, loopback port, 1 s windows, default collectors), runs
# lock_workload under `perf lock record` while mmlockd collects, and then compares, for the
# workload's pid:
#   perf:    `perf lock contention -i FILE --stack-skip 0` (the first frame outside lock and
#            scheduler functions, as mmlockd names callers; perf's default skip of 3 frames names
#            the caller's caller), its rows summed per (type, caller): perf splits a caller over
#            several rows when the stacks above it differ;
#   mmlockd: the lock_stats view in SQLite after SIGTERM (which flushes the open window), summed
#            over windows and locks per (type, caller).
# Callers are joined by name over all lock types: perf keys its rows by callstack without the lock
# type, so a contention on an rwsem's wait_lock inside that rwsem's wait lands in the rwsem's row,
# where mmlockd keeps a spinlock row. For every caller with at least MIN_CONTENDED (20)
# contentions in either tool:
#   - contended counts agree within TOLERANCE_PCT (2%) (mmlockd may see one more: it also sees
#     the workload's pid between perf's fork and exec, perf enables its events at the exec);
#   - total waits agree within TOLERANCE_PCT plus TRACER_NS (25 us) per contention. Two tracers
#     on one tracepoint stamp it one after the other, each before its own handler (a callchain
#     walk of a few microseconds, longer in its tail), so each tool's waits include some of the
#     other's handlers: microsecond-long spinlock waits differ by tens of percent between any two
#     tracers, millisecond-long rwsem waits by well under 2%. Two `perf lock record` sessions on
#     one run (one per task, one system-wide) differ the same way: 44 waits of
#     irqentry_exit_to_user_mode+0x110 summed to 786 us in one and 302 us in the other. Measured
#     here: perf's begin handler outlasts its end handler by 0.4 us (median) to 11 us (p90), and
#     mmlockd and perf differ by -6 to +1 us per contention; in interrupts more (sched_tick: -17 us
#     per contention on 25, in a fresh-clone CI run), so TRACER_NS is 25 us.
# Also: the workload must give at least 3 such callers, no event may be lost (mmlockd's
# events_lost, perf's "lost" warnings), /api/v1/locks and /metrics must show the contention, and
# `mmlockd report --locks` must print perf's layout and seed 004's.
#
# With LOCKS_SOURCE=bpf (meson test locks_bpf) the contention collector runs on the BPF source
# (--collectors contention --source auto; a skip where that is not BPF): the waits are paired
# and summed in the kernel, and the same comparison holds. Its program on lock:contention_begin
# puts the tracepoint's iterator first in perf's callchains, so perf lock contention is read
# with --stack-skip 1 --max-stack 9 then (the same 8 frames); "lost" is the BPF source's own count of waits it could not keep or
# pair (bpf_events contention_*).
#
# Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not root, no perf, no
# lock:contention_* tracepoints, LOCKS_SOURCE=bpf where BPF does not load). Environment:
# WORKLOAD_ARGS (extra workload flags), MMLOCKD_ARGS (extra daemon flags), LOCKS_SOURCE (perf,
# the default, or bpf), KEEP_TMP=1, TOLERANCE_PCT (default 2), TRACER_NS (25000).

set -u -o pipefail

TEST_NAME=test_locks
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

TOL=${TOLERANCE_PCT:-2}
TRACER_NS=${TRACER_NS:-25000}
SOURCE=${LOCKS_SOURCE:-perf}
MIN_CONTENDED=20
MIN_CALLERS=3

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

daemon_and_workload_args "$@"

# --- can this run at all? -------------------------------------------------------------------
need_root "system-wide tracepoints"
need_perf
need_tracepoints lock/contention_begin lock/contention_end

need_tools curl sqlite3 python3

make_tmp locks

if ! perf lock record -o "$TMP/probe.data" -- true >"$TMP/probe.out" 2>&1; then
	skip "perf lock record cannot trace lock:contention_* ($(head -n 1 "$TMP/probe.out"))"
fi

empty_conf

http_status() { # PATH: prints the HTTP status code
	curl -sS --noproxy '*' --max-time 5 -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$PORT$1" 2>/dev/null
}

# "samples lost open" of tracepoint $2 in the status JSON $1, and the contention collector state.
status_of() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
ev = [e for e in doc.get("events", []) if e.get("name") == sys.argv[2]]
col = [c for c in doc.get("collectors", []) if c.get("name") == "contention"]
e = ev[0] if ev else {}
print(int(e.get("samples", 0)), int(e.get("lost", 0)), "open" if e.get("open") else "closed",
      col[0].get("state", "?") if col else "absent", col[0].get("source", "?") if col else "-")
EOF
}

# The BPF source's waits it could not keep or pair, from the status JSON $1: one number, or with
# a second argument "names" each counter by name.
bpf_lost() {
	python3 - "$1" "${2:-}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
lost = {g["name"]: int(g.get("total", 0)) for g in doc.get("globals", [])
        if g.get("family") == "bpf_events" and g.get("name", "").startswith("contention_")}
print(", ".join("%s %d" % kv for kv in sorted(lost.items())) if sys.argv[2] == "names"
      else sum(lost.values()))
EOF
}

# --- start the daemon -------------------------------------------------------------------------
# On the perf rings only: a BPF program on lock:contention_begin (the BPF source's) makes the
# kernel call the probes through __traceiter_contention_begin, which then heads perf's chains
# too; mmlockd skips that frame (unit test_contention), perf lock contention does not.
if [ "$SOURCE" = bpf ]; then
	start_mmlockd --collectors contention --split-duty 0 --source auto
	read -r _ _ _ B_STATE B_SOURCE < <(status_of "$TMP/status.json" lock:contention_begin)
	if [ "$B_SOURCE" != bpf ]; then
		skip "the BPF source does not run here:" \
			"$(grep -m1 'BPF source' "$TMP/mmlockd.log" || echo "contention on $B_SOURCE")"
	fi
	if [ "$B_STATE" != running ]; then
		fatal "the contention collector is $B_STATE on source $B_SOURCE, not running on bpf"
	fi
	pass "contention collector running on the BPF source"
	B_SAMPLES=0
else
	start_mmlockd --collectors all --source perf
	read -r B_SAMPLES _ B_OPEN B_STATE _ < <(status_of "$TMP/status.json" lock:contention_begin)
	if [ "$B_OPEN" != open ] || [ "$B_STATE" != running ]; then
		fatal "lock:contention_begin is $B_OPEN and the contention collector $B_STATE"
	fi
	pass "lock:contention_begin open, contention collector running"
fi

# --- the workload under perf lock record --------------------------------------------------------
log "running: perf lock record -- $WORKLOAD ${WORKLOAD_ARGS:-}"
T0=$(date +%s.%N)
# shellcheck disable=SC2086 # WORKLOAD_ARGS is a list of words
perf lock record -o "$TMP/perf.data" -- "$WORKLOAD" --pid-file "$TMP/workload.pid" \
	${WORKLOAD_ARGS:-} >"$TMP/workload.out" 2>&1
rc=$?
T1=$(date +%s.%N)
cat "$TMP/workload.out"
[ "$rc" -eq 0 ] || fatal "perf lock record + workload exited with status $rc"
WPID=$(cat "$TMP/workload.pid" 2>/dev/null)
[[ "$WPID" =~ ^[0-9]+$ ]] || fatal "workload wrote no pid file"
pass "workload (pid $WPID) ran under perf lock record"

# Let the 1 s windows of the run close, then look at the live interfaces.
sleep 2.5
http_get /api/v1/status "$TMP/status2.json" || fatal "/api/v1/status did not answer"
read -r E_SAMPLES E_LOST _ _ _ < <(status_of "$TMP/status2.json" lock:contention_begin)
read -r _ END_LOST _ _ _ < <(status_of "$TMP/status2.json" lock:contention_end)
if [ "$SOURCE" = bpf ]; then
	# A tracer cannot see the contentions inside its own machinery (a BPF program's map
	# bucket lock nested in another's), so a few unpaired waits are expected.
	# Checked after SIGTERM, against the waits paired (the database's lock_stats).
	BPF_UNPAIRED=$(bpf_lost "$TMP/status2.json")
	E_LOST=0
	END_LOST=0
else
	RATE=$(awk -v n=$((E_SAMPLES - B_SAMPLES)) -v a="$T0" -v b="$T1" \
		'BEGIN { printf "%.0f", n / (b - a) }')
	log "mmlockd: $((E_SAMPLES - B_SAMPLES)) lock:contention_begin samples system-wide" \
		"during the run, $RATE per second"
fi
if [ "$E_LOST" -eq 0 ] && [ "$END_LOST" -eq 0 ]; then
	pass "mmlockd lost no lock:contention_* event"
else
	fail "mmlockd lost $E_LOST contention_begin and $END_LOST contention_end events"
fi

if http_get "/api/v1/locks?pid=$WPID&since=$T0&top=5" "$TMP/locks.json" &&
	python3 -c 'import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
pid = int(sys.argv[2])
assert rows and len(rows) <= 5 and all(r["pid"] == pid and r["contended"] > 0 for r in rows)
assert all(rows[i]["total_wait_ns"] >= rows[i + 1]["total_wait_ns"] for i in range(len(rows) - 1))' \
		"$TMP/locks.json" "$WPID" 2>"$TMP/locks.err"; then
	pass "/api/v1/locks?pid=$WPID lists the workload's contention, longest wait first"
else
	fail "/api/v1/locks?pid=$WPID: $(head -c 300 "$TMP/locks.json" 2>/dev/null) $(cat "$TMP/locks.err")"
fi
code=$(http_status "/api/v1/locks?top=0")
if [ "$code" = 400 ]; then
	pass "/api/v1/locks?top=0 answers 400"
else
	fail "/api/v1/locks?top=0 answered $code, expected 400"
fi
if http_get /metrics "$TMP/metrics.txt" && grep -q '^mmlockd_lock_contended_total{' "$TMP/metrics.txt" &&
	grep -q '^mmlockd_lock_wait_seconds_total{' "$TMP/metrics.txt"; then
	pass "/metrics has the top lock call sites"
else
	fail "/metrics lacks mmlockd_lock_contended_total / mmlockd_lock_wait_seconds_total"
fi

# --- SIGTERM: flush the open window and exit 0 -------------------------------------------------
sigterm_mmlockd

if [ "$SOURCE" = bpf ]; then
	PAIRED=$(sqlite3 "$DB" 'SELECT coalesce(sum(contended), 0) FROM lock_stats')
	ALLOWED=$(bpf_unpaired_allowed "$PAIRED") # lib.sh says why
	if [ "$BPF_UNPAIRED" -le "$ALLOWED" ]; then
		pass "BPF source: $BPF_UNPAIRED waits unpaired or not kept (bpf_events contention_*)" \
			"of $PAIRED paired on the machine, at most $ALLOWED"
	else
		fail "BPF source: $BPF_UNPAIRED waits unpaired or not kept ($(bpf_lost "$TMP/status2.json" names))" \
			"of $PAIRED paired on the machine, at most $ALLOWED"
	fi
fi

# --- the two tables --------------------------------------------------------------------------------
# On the BPF source the iterator heads perf's chains (see above): skipped, and one frame more
# looked at, so that perf reads the same 8 frames as mmlockd.
STACK=(--stack-skip 0)
[ "$SOURCE" = bpf ] && STACK=(--stack-skip 1 --max-stack 9)
perf lock contention -i "$TMP/perf.data" "${STACK[@]}" -E 1000000 >"$TMP/perf.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fatal "perf lock contention exited with status $rc: $(head -n 3 "$TMP/perf.txt")"
# A BPF program on lock:contention_begin anywhere on the machine (another mmlockd on the BPF
# source, bpftrace) puts the tracepoint iterator first in perf's callchains, so perf's callers
# are shifted and cannot be the reference; this daemon skips that frame, perf cannot.
if [ "$SOURCE" = perf ] && grep -q '__traceiter_contention_begin' "$TMP/perf.txt"; then
	skip "another BPF program is attached to lock:contention_begin (perf lock's callers name" \
		"__traceiter_contention_begin): perf lock contention cannot be the reference now"
fi
if grep -qiE 'lost [0-9]+ (chunks|samples|events)|LOST events' "$TMP/perf.txt"; then
	fail "perf lost events: $(grep -iE 'lost [0-9]+' "$TMP/perf.txt" | head -n 2)"
else
	pass "perf lost no event"
fi
if ! "$MMLOCKD" report --locks --db "$DB" --pid "$WPID" >"$TMP/mmlockd.txt" 2>"$TMP/report.err"; then
	fatal "mmlockd report --locks failed: $(cat "$TMP/report.err")"
fi
PERF_HEADER=' contended   total wait     max wait     avg wait         type   caller'
# Under its '#' lines (range, windows, what a line is), perf's table to the character.
if [ "$(grep -v '^#' "$TMP/mmlockd.txt" | head -n 1)" = "$PERF_HEADER" ] &&
	grep -qxF "$PERF_HEADER" "$TMP/perf.txt"; then
	pass "mmlockd report --locks prints perf lock contention's header"
else
	fail "mmlockd report --locks header: '$(grep -v '^#' "$TMP/mmlockd.txt" | head -n 1)'"
fi
SEED_HEADER='  max_dur(ms)  min_dur(ms)  max-min(dur)ms  avg_dur(ms)  sum_dur(ms)  count  blocked_function'
if "$MMLOCKD" report --locks --seed-table --db "$DB" --pid "$WPID" >"$TMP/seed.txt" 2>&1 &&
	[ "$(grep -v '^#' "$TMP/seed.txt" | head -n 1)" = "$SEED_HEADER" ]; then
	pass "mmlockd report --locks --seed-table prints seed 004's header"
else
	fail "mmlockd report --locks --seed-table: $(head -n 2 "$TMP/seed.txt")"
fi

log ""
log "mmlockd report --locks --pid $WPID (from SQLite) | perf lock contention --stack-skip 0 (top 15 lines each):"
paste -d'|' <(grep -v '^#' "$TMP/mmlockd.txt" | head -n 17 | awk '{ printf "%-100s\n", $0 }') \
	<(sed -n "/^$PERF_HEADER\$/,\$p" "$TMP/perf.txt" | head -n 17)
log ""
log "mmlockd report --locks --seed-table --pid $WPID:"
head -n 8 "$TMP/seed.txt"
log ""

# --- the comparison ----------------------------------------------------------------------------------
python3 - "$TMP/perf.txt" "$DB" "$WPID" "$TOL" "$TRACER_NS" "$MIN_CONTENDED" "$MIN_CALLERS" \
	"$SOURCE" >"$TMP/compare.txt" 2>&1 <<'EOF'
import collections, sqlite3, sys

perf_txt, db, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
tol, tracer_ns = float(sys.argv[4]), float(sys.argv[5])
min_n, min_callers = int(sys.argv[6]), int(sys.argv[7])
bpf = sys.argv[8] == "bpf"
units = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

# caller -> [contended, wait_ns, {type: contended}]
def entry():
    return [0, 0.0, collections.Counter()]
perf, mm = collections.defaultdict(entry), collections.defaultdict(entry)
for line in open(perf_txt):
    f = line.split()
    # contended, total (value unit), max (value unit), avg (value unit), type, caller
    if len(f) != 9 or not f[0].isdigit() or f[2] not in units:
        continue
    e = perf[f[8]]
    e[0] += int(f[0])
    e[1] += float(f[1]) * units[f[2]]
    e[2][f[7]] += int(f[0])
con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
for t, c, n, w in con.execute(
        "SELECT type, caller, sum(contended), sum(total_wait_ns) FROM lock_stats "
        "WHERE pid = ? GROUP BY type, caller", (pid,)):
    e = mm[c]
    e[0] += n
    e[1] += float(w)
    e[2][t] += n

def pct(p, m):
    return (m - p) * 100.0 / p if p else float("inf")

def types(c):
    return "+".join(t for t, _ in c.most_common())

# On the BPF source the iterator takes one of the frames perf lock recorded, and perf names
# "Unknown" the waits whose caller lay just beyond them (run-queue spinlocks deep in the rwsem
# waits of mmap, munmap and faults); mmlockd does not count tracing frames and names them: its
# callers may be ahead by up to that many (seen: 16 to 34 in a run; the two tools' totals for
# the pid agree within 2), and perf's Unknown row is not compared.
unknown = perf["Unknown"][0] if bpf else 0
keys = sorted((k for k in set(perf) | set(mm)
               if max(perf[k][0], mm[k][0]) >= min_n and not (bpf and k == "Unknown")),
              key=lambda k: -perf[k][1])
print("pid %d: %d contentions by perf lock, %d by mmlockd; perf's Unknown: %d" % (
    pid, sum(e[0] for e in perf.values()), sum(e[0] for e in mm.values()), unknown))
print("%-36s %-18s %-18s | %8s %12s | %8s %12s | %6s %7s | %s" % (
    "caller", "perf type", "mmlockd type", "perf n", "perf wait", "mmlockd n", "mmlockd wait",
    "d n%", "d wait%", "checks"))
failed = 0
for k in keys:
    p, m = perf[k], mm[k]
    # mmlockd also sees the workload's pid between perf's fork and its exec (perf enables its
    # events at exec): one contention more is not a disagreement.
    # Behind by up to 3 on BPF: neither tracer sees the contentions inside its own machinery
    # (perf's wake-ups of its reader, a contention nested in a BPF program): seen on
    # try_to_wake_up (123 against 126) and rcu_core (33 against 34).
    ok_n = p[0] > 0 and (abs(pct(p[0], m[0])) <= tol or
                         -(3 if bpf else 0) <= m[0] - p[0] <= 1 + unknown)
    allow = tol / 100.0 * p[1] + tracer_ns * max(p[0], m[0])
    ok_w = p[0] > 0 and abs(m[1] - p[1]) <= allow
    failed += (not ok_n) + (not ok_w)
    print("%-36s %-18s %-18s | %8d %9.3f ms | %8d %9.3f ms | %6.2f %7.2f | n %s, wait %s "
          "(%.1f us/contention)" % (
              k[:36], types(p[2])[:18], types(m[2])[:18], p[0], p[1] / 1e6, m[0], m[1] / 1e6,
              pct(p[0], m[0]), pct(p[1], m[1]), "ok" if ok_n else "FAIL",
              "ok" if ok_w else "FAIL", (m[1] - p[1]) / max(p[0], m[0], 1) / 1e3))
print("callers compared: %d (at least %d contentions in either tool)" % (len(keys), min_n))
if len(keys) < min_callers:
    print("too few callers with %d contentions: the workload is too small" % min_n)
    failed += 1
sys.exit(1 if failed else 0)
EOF
rc=$?
cat "$TMP/compare.txt"
ncallers=$(awk '/^callers compared:/ { print $3 }' "$TMP/compare.txt")
if [ "$rc" -eq 0 ]; then
	pass "contended counts and total waits agree with perf lock contention for all" \
		"${ncallers:-?} callers with >= $MIN_CONTENDED contentions"
else
	fail "mmlockd and perf lock contention disagree (see the table above)"
fi

log ""
summary_and_exit
