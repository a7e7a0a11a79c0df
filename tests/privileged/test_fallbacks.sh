#!/bin/bash
# test_fallbacks.sh: mmlockd's per-process mmap_lock fallback count, live, against an independent
# count from perf.
#
# Usage: test_fallbacks.sh MMLOCKD_BINARY OUTCOME_WORKLOAD_BINARY
#
# Starts mmlockd (temporary database, free loopback port, 1 s windows) and, once its fault
# tracepoints are open, `perf record -a` of the same tracepoints (kernel callchains on
# mmap_lock_acquire_returned, CLOCK_MONOTONIC like mmlockd; enabled through perf's control fifo,
# so it counts before the workload starts). Then runs `outcome_workload file`: random reads of
# a file four times bigger than a memory cgroup's limit, so most faults need I/O, which on this
# kernel drops the per-VMA lock and retries under mmap_lock (plus a thread mmap/munmapping
# windows of the same file). After the workload exits, perf stops and mmlockd gets SIGTERM
# (which flushes its last window; it must exit 0). Then, for the workload's pid:
#   - the sum of faults_mmap_fallback over process_stats must agree within TOLERANCE_PCT (1%)
#     with the fallbacks tests/tools/perf_classify.py counts from perf's data (a fault window
#     holding a successful mmap_lock acquisition whose callchain passes through
#     lock_mm_and_find_vma), and perf's count must be at least MIN_FALLBACKS (300);
#   - faults must agree within the same tolerance;
#   - neither side may have lost an event of the compared tracepoints.
# The whole outcome table is printed side by side (also perf_classify's counts under mmlockd's
# current rule for faults taken in kernel mode, see tests/unit/test_replay.sh).
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, no perf, perf cannot open the tracepoints,
# the tracepoints do not exist, no memory cgroup controller). Environment: WORKLOAD_ARGS (extra
# workload flags), MMLOCKD_ARGS (daemon flags instead of the default --ring-pages 1024 --collectors
# all --source perf: this test checks the perf path's classifier; test_bpf compares the BPF
# source's with it), TOLERANCE_PCT, MIN_FALLBACKS, KEEP_TMP=1.

set -u -o pipefail

TEST_NAME=test_fallbacks
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

SKIP=77
TOL=${TOLERANCE_PCT:-1}
MIN_FALLBACKS=${MIN_FALLBACKS:-300}
HERE=$(cd "$(dirname "$0")" && pwd)
CLASSIFY=$HERE/../tools/perf_classify.py
PASSED=0
FAILED=0
TMP=
DAEMON_PID=
PERF_PID=
WPID=
CG_NAME=mmlockd-fallbacks.$$
CG_PATH=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$WPID" TERM 100 # it removes its cgroup itself
	stop_process "$PERF_PID" INT
	stop_process "$DAEMON_PID" TERM
	# The workload's cgroup, if it was killed before removing it (a name this test chose).
	if [ -n "$CG_PATH" ] && [ -d "$CG_PATH" ]; then
		rmdir "$CG_PATH" 2>/dev/null || log "could not remove the cgroup $CG_PATH"
	fi
	remove_tmp
}

if [ $# -ne 2 ]; then
	echo "usage: $0 MMLOCKD_BINARY OUTCOME_WORKLOAD_BINARY" >&2
	exit 2
fi
MMLOCKD=$1
WORKLOAD=$2

# --- can this run at all? -------------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root (system-wide tracepoints, a memory cgroup)"
command -v perf >/dev/null 2>&1 || skip "perf is not installed"
find_tracefs
for tp in exceptions/page_fault_user mmap_lock/mmap_lock_acquire_returned \
	mmap_lock/mmap_lock_start_locking filemap/mm_filemap_fault; do
	[ -d "$TRACEFS/events/$tp" ] || skip "tracepoint ${tp/\//:} does not exist on this kernel"
done
for root in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ -f "$root/memory.limit_in_bytes" ] ||
		grep -qw memory "$root/cgroup.subtree_control" 2>/dev/null; then
		CG_PATH=$root/$CG_NAME
		break
	fi
done
[ -n "$CG_PATH" ] || skip "no memory cgroup controller (v1 or v2) is available"

command -v python3 >/dev/null 2>&1 || fatal "required tool 'python3' is not installed"
[ -x "$MMLOCKD" ] || fatal "mmlockd binary '$MMLOCKD' is not executable"
[ -x "$WORKLOAD" ] || fatal "workload binary '$WORKLOAD' is not executable"
[ -f "$CLASSIFY" ] || fatal "$CLASSIFY is missing"

# The workload's file must be on a disk file system (its page cache must be evictable and
# re-read): not tmpfs.
TMP=$(mktemp -d "${TMPDIR:-/var/tmp}/mmlockd-fallbacks.XXXXXX") || fatal "mktemp failed"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[ "$(stat -f -c %T "$TMP")" != tmpfs ] ||
	fatal "$TMP is on tmpfs: set TMPDIR to a directory on a disk file system"
if ! perf record -o "$TMP/probe.data" -e exceptions:page_fault_user \
	-e 'mmap_lock:mmap_lock_acquire_returned/call-graph=fp/' -- true >"$TMP/probe.log" 2>&1; then
	skip "perf cannot record the tracepoints with callchains: $(tail -n 1 "$TMP/probe.log")"
fi
DB=$TMP/mmlockd.db
CONF=$TMP/mmlockd.conf
: >"$CONF"

cat >"$TMP/util.py" <<'EOF'
import json, sqlite3, sys, urllib.request

cmd = sys.argv[1]
if cmd == "status":  # PORT: "name open samples lost" per event, exit 1 if no answer
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/api/v1/status" % sys.argv[2],
                                    timeout=3) as r:
            doc = json.load(r)
    except Exception:
        sys.exit(1)
    ev = doc.get("events", [])
    if isinstance(ev, dict):
        ev = [dict(v, name=k) for k, v in ev.items()]
    for e in ev:
        print(e.get("name", "?"), "true" if e.get("open", True) else "false",
              int(e.get("samples", 0) or 0), int(e.get("lost", 0) or 0))
elif cmd == "db":  # DB PID: key=value sums for the pid, and lost events of all windows
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[2], uri=True)
    cols = ["faults", "faults_vma", "faults_vma_retry", "faults_mmap_retry",
            "faults_mmap_abort", "faults_mmap_unknown", "faults_mmap_fallback",
            "faults_mmap_lock_retries"]
    r = db.execute("SELECT count(*), count(DISTINCT start_time), %s FROM process_stats "
                   "WHERE pid = ?" % ", ".join("coalesce(sum(%s), 0)" % c for c in cols),
                   (int(sys.argv[3]),)).fetchone()
    print("rows=%d" % r[0])
    print("starts=%d" % r[1])
    for c, v in zip(cols, r[2:]):
        print("%s=%d" % (c, v))
    for name, lost in db.execute("SELECT event, sum(lost) FROM event_windows GROUP BY event"):
        print("lost.%s=%d" % (name, lost))
EOF

# --- the daemon ------------------------------------------------------------------------------
start_mmlockd --ring-pages 1024 --collectors all --source perf

COMPARED="exceptions:page_fault_user mmap_lock:mmap_lock_acquire_returned filemap:mm_filemap_fault"
tp_open=0
for _ in $(seq 50); do # up to ~10 s
	if python3 "$TMP/util.py" status "$PORT" >"$TMP/events.txt" 2>/dev/null; then
		n=$(awk -v want="$COMPARED" 'BEGIN { split(want, w, " "); for (i in w) ok[w[i]] = 1 }
			($1 in ok) && $2 == "true"' "$TMP/events.txt" | wc -l)
		if [ "$n" -ge 3 ]; then
			tp_open=1
			break
		fi
	fi
	kill -0 "$DAEMON_PID" 2>/dev/null || break
	sleep 0.2
done
[ "$tp_open" -eq 1 ] || fatal "mmlockd does not report $COMPARED as open"
pass "the fault tracepoints are open in mmlockd"

# --- perf record -a, enabled before the workload starts ----------------------------------------
mkfifo "$TMP/ctl" "$TMP/ack" || fatal "mkfifo failed"
perf record -a -k mono -m 4096 --kernel-callchains -D -1 --synth task \
	--control "fifo:$TMP/ctl,$TMP/ack" -o "$TMP/perf.data" \
	-e exceptions:page_fault_user -e mmap_lock:mmap_lock_start_locking \
	-e 'mmap_lock:mmap_lock_acquire_returned/call-graph=fp/' \
	-e filemap:mm_filemap_fault -e filemap:mm_filemap_add_to_page_cache \
	>"$TMP/perf.log" 2>&1 &
PERF_PID=$!
exec 7<>"$TMP/ctl" 8<>"$TMP/ack"
echo enable >&7
ack=
read -r -t 60 ack <&8
exec 7>&- 8<&-
if [ "$ack" != ack ]; then
	cat "$TMP/perf.log"
	fatal "perf record did not start"
fi
pass "perf record -a (pid $PERF_PID) is counting"

# --- the workload -------------------------------------------------------------------------------
WARGS="file --threads 2 --writers 1 --rounds 2 --pages 1500 --file-mb 64 --mem-limit-mb 16"
log "running: $WORKLOAD $WARGS ${WORKLOAD_ARGS:-}"
# shellcheck disable=SC2086 # word lists
"$WORKLOAD" $WARGS --dir "$TMP" --cgroup "$CG_NAME" --pid-file "$TMP/workload.pid" \
	${WORKLOAD_ARGS:-} >"$TMP/workload.out" 2>&1 &
WPID=$!
wait "$WPID"
rc=$?
cat "$TMP/workload.out"
[ "$rc" -eq 0 ] || fatal "the workload exited with status $rc"
[ "$(cat "$TMP/workload.pid" 2>/dev/null)" = "$WPID" ] || fatal "the workload's pid file is wrong"
pass "workload (pid $WPID) ran"
[ -d "$CG_PATH" ] && fail "the workload left its cgroup $CG_PATH behind"

# Let mmlockd close the windows of the workload's last second, then stop both.
sleep 3
kill -INT "$PERF_PID"
wait "$PERF_PID"
rc=$?
PERF_PID=
if [ "$rc" -ne 0 ] && ! { [ "$rc" -eq 130 ] && grep -q 'Captured and wrote' "$TMP/perf.log"; }; then
	cat "$TMP/perf.log"
	fatal "perf record exited with status $rc"
fi
mmlockd_alive
python3 "$TMP/util.py" status "$PORT" >"$TMP/events.txt" 2>/dev/null
sigterm_mmlockd

# --- the two counts ------------------------------------------------------------------------------
python3 "$CLASSIFY" "$TMP/perf.data" --pid "$WPID" --format expected --also-naive \
	>"$TMP/perf.expected" 2>"$TMP/classify.err" || {
	cat "$TMP/classify.err"
	fatal "perf_classify.py failed"
}
python3 "$TMP/util.py" db "$DB" "$WPID" >"$TMP/db.txt" 2>"$TMP/db.err" || {
	cat "$TMP/db.err"
	fatal "cannot read process_stats from $DB"
}
pget() { sed -n "s/^$1=//p" "$TMP/perf.expected"; }
dget() { sed -n "s/^$1=//p" "$TMP/db.txt"; }

P_LOST=$(pget lost)
M_LOST=0
for ev in $COMPARED mmap_lock:mmap_lock_start_locking; do
	v=$(dget "lost.$ev")
	M_LOST=$((M_LOST + ${v:-0}))
done
if [ "$P_LOST" = 0 ] && [ "$M_LOST" -eq 0 ]; then
	pass "no event lost by perf or by mmlockd (event_windows)"
else
	fail "events lost: perf $P_LOST, mmlockd $M_LOST: the counts cannot be compared" \
		"(other load on the machine? raise --ring-pages / perf -m)"
fi
[ "$(dget rows)" -gt 0 ] || fatal "process_stats has no row for pid $WPID"
[ "$(dget starts)" -le 1 ] || log "note: pid $WPID has several start times in process_stats"

log ""
log "outcomes of pid $WPID: mmlockd (process_stats, summed) vs perf_classify.py (perf record -a)"
printf '  %-14s %12s %12s %9s %14s\n' outcome mmlockd perf 'diff %' 'perf, naive'
for pair in faults:faults vma:faults_vma vma_retry:faults_vma_retry \
	mmap_retry:faults_mmap_retry mmap_abort:faults_mmap_abort \
	mmap_unknown:faults_mmap_unknown fallback:faults_mmap_fallback \
	lock_retries:faults_mmap_lock_retries; do
	k=${pair%%:*}
	c=${pair#*:}
	printf '  %-14s %12s %12s %9s %14s\n' "$k" "$(dget "$c")" "$(pget "pid.$WPID.$k")" \
		"$(diff_pct "$(pget "pid.$WPID.$k")" "$(dget "$c")")" "$(pget "naive.pid.$WPID.$k")"
done
log "  (perf, naive: perf's data under mmlockd's current rule, which also counts faults taken in"
log "   kernel mode during an open user fault as its fallbacks: $(pget "pid.$WPID.kernel_faults")" \
	"such faults, $(pget "pid.$WPID.kfault_in_window") in an open window)"
log ""

P_FB=$(pget "pid.$WPID.fallback")
M_FB=$(dget faults_mmap_fallback)
P_F=$(pget "pid.$WPID.faults")
M_F=$(dget faults)
if [ "$P_FB" -ge "$MIN_FALLBACKS" ]; then
	pass "the workload fell back to mmap_lock often enough ($P_FB >= $MIN_FALLBACKS)"
else
	fail "only $P_FB fallbacks (< $MIN_FALLBACKS): the comparison means little"
fi
if [ "$M_FB" -gt 0 ] && within "$P_FB" "$M_FB"; then
	pass "faults_mmap_fallback agrees with perf: mmlockd $M_FB, perf $P_FB" \
		"($(diff_pct "$P_FB" "$M_FB")%, tolerance ${TOL}%)"
else
	fail "faults_mmap_fallback: mmlockd $M_FB vs perf $P_FB" \
		"($(diff_pct "$P_FB" "$M_FB")%, tolerance ${TOL}%)"
fi
if [ "$M_F" -gt 0 ] && within "$P_F" "$M_F"; then
	pass "faults agree with perf: mmlockd $M_F, perf $P_F ($(diff_pct "$P_F" "$M_F")%)"
else
	fail "faults: mmlockd $M_F vs perf $P_F ($(diff_pct "$P_F" "$M_F")%, tolerance ${TOL}%)"
fi
summary_and_exit
