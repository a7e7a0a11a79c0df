#!/bin/bash
# make_recordings.sh: makes the recordings of tests/data/ and their expected counts.
#
# Usage: make_recordings.sh MMLOCKD_BINARY OUTCOME_WORKLOAD_BINARY [NAME...]
#
# For each NAME (default: all of them) it runs, on this machine and as root,
#   perf record -a (system-wide) of the tracepoints the fault classifier reads, and at the same
#   time `mmlockd record -o NAME.rec -- outcome_workload MODE ...` (the workload's process tree
#   only), then
#   tests/tools/perf_classify.py on perf's data, restricted to the workload's process tree
#   (its pid is the one it writes to --pid-file; children from perf's FORK records),
# and writes tests/data/NAME.rec and tests/data/NAME.expected (key=value lines, see
# perf_classify.py --format expected). The expected counts thus come from perf's separate ring
# buffers and an independent classifier, never from mmlockd's output. A recording is refused
# when either side lost events (the counts could not match then) or when the two saw a different
# number of events of the workload (one of them missed the start or the end).
#
#   NAME           workload                                         what it shows
#   file_munmap    outcome_workload file (64 MB file, 8 MB memcg)   mmap_retry (I/O, VMA lock)
#   anon_mprotect  outcome_workload anon (mprotect, mmap writers)   mmap_abort, mmap_retry
#   swap_cgroup    outcome_workload swap (swap file, 6 MB memcg)    mmap_unknown (swap-in)
#   exec_fresh     outcome_workload exec (3 x fork, exec /bin/true) fresh processes' faults
#
# The cgroup and swap file are the workload's (it removes them itself, also on SIGTERM); this
# script names them (--cgroup, --swap-file) so that its EXIT trap can remove them if the workload
# was killed outright. Everything else lives in a temporary directory on a disk file system
# ($TMPDIR or /var/tmp: a swap file cannot live on tmpfs), removed at exit (KEEP_TMP=1 keeps it).
#
# Environment: OUT_DIR (default: tests/data next to this script), KEEP_TMP=1, PERF (perf binary).
# Exit status: 0 all recordings made, 1 a failure (nothing half-written is left in OUT_DIR),
# 77 cannot run here (not root, no perf or tracepoints, no memory cgroup).

set -u -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
OUT_DIR=${OUT_DIR:-$HERE/../data}
PERF=${PERF:-perf}
CLASSIFY=$HERE/perf_classify.py
ALL_NAMES=(file_munmap anon_mprotect swap_cgroup exec_fresh)
declare -A WARGS=(
	[file_munmap]="file --threads 2 --writers 1 --rounds 2 --pages 250 --file-mb 64 --mem-limit-mb 8"
	[anon_mprotect]="anon --threads 1 --writers 2 --rounds 20 --anon-mb 1 --tail-pages 256"
	[swap_cgroup]="swap --anon-mb 16 --mem-limit-mb 6 --swap-mb 48 --rounds 1"
	[exec_fresh]="exec --children 3 --exec /bin/true"
)
EVENTS=(-e exceptions:page_fault_user -e mmap_lock:mmap_lock_start_locking
	-e mmap_lock:mmap_lock_acquire_returned/call-graph=fp/
	-e filemap:mm_filemap_fault -e filemap:mm_filemap_add_to_page_cache)

TMP=
PERF_PID=
CUR_CG=
CUR_SWAP=
CUR_PIDFILE=

log() { printf '%s\n' "$*" >&2; }
die() {
	log "make_recordings: $*"
	exit 1
}

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local pid
	if [ -n "$CUR_PIDFILE" ] && [ -s "$CUR_PIDFILE" ]; then
		pid=$(cat "$CUR_PIDFILE")
		if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null # the workload removes its cgroup and swap
			for _ in $(seq 100); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
		fi
	fi
	if [ -n "$PERF_PID" ] && kill -0 "$PERF_PID" 2>/dev/null; then
		kill -INT "$PERF_PID" 2>/dev/null
		wait "$PERF_PID" 2>/dev/null
	fi
	# Leftovers of a workload killed outright (names this script chose, nothing else).
	if [ -n "$CUR_CG" ] && [ -d "$CUR_CG" ]; then
		rmdir "$CUR_CG" 2>/dev/null || log "could not remove the cgroup $CUR_CG"
	fi
	if [ -n "$CUR_SWAP" ]; then
		if awk -v f="$CUR_SWAP" '$1 == f { found = 1 } END { exit !found }' /proc/swaps; then
			swapoff "$CUR_SWAP" || log "could not swapoff $CUR_SWAP"
		fi
		rm -f "$CUR_SWAP"
	fi
	if [ -n "$TMP" ] && [ -d "$TMP" ]; then
		if [ "${KEEP_TMP:-0}" = 1 ]; then
			log "kept $TMP"
		else
			rm -rf "$TMP"
		fi
	fi
	rm -f "$OUT_DIR"/*.new
}

if [ $# -lt 2 ]; then
	echo "usage: $0 MMLOCKD_BINARY OUTCOME_WORKLOAD_BINARY [NAME...]" >&2
	echo "names: ${ALL_NAMES[*]}" >&2
	exit 2
fi
MMLOCKD=$(realpath "$1")
WORKLOAD=$(realpath "$2")
shift 2
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL_NAMES[@]}")
for n in "${NAMES[@]}"; do
	[ -n "${WARGS[$n]:-}" ] || die "unknown recording '$n' (known: ${ALL_NAMES[*]})"
done

[ "$(id -u)" -eq 0 ] || {
	log "make_recordings: needs root"
	exit 77
}
command -v "$PERF" >/dev/null 2>&1 || {
	log "make_recordings: perf is not installed"
	exit 77
}
[ -d /sys/fs/cgroup/memory ] || grep -qw memory /sys/fs/cgroup/unified/cgroup.subtree_control \
	2>/dev/null || grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || {
	log "make_recordings: no memory cgroup controller"
	exit 77
}
[ -x "$MMLOCKD" ] || die "$MMLOCKD is not executable"
[ -x "$WORKLOAD" ] || die "$WORKLOAD is not executable"
command -v python3 >/dev/null || die "python3 is required"
mkdir -p "$OUT_DIR" || die "cannot create $OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)

TMP=$(mktemp -d "${TMPDIR:-/var/tmp}/mmlockd-rec.XXXXXX") || die "mktemp failed"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
[ "$(stat -f -c %T "$TMP")" != tmpfs ] ||
	die "$TMP is on tmpfs: set TMPDIR to a directory on a disk file system"

# Starts perf record -a, disabled, and enables it through its control fifo: once the ack
# arrives, every CPU is counting (no race with the workload's start).
start_perf() { # DATA LOG
	rm -f "$TMP/ctl" "$TMP/ack"
	mkfifo "$TMP/ctl" "$TMP/ack" || return 1
	"$PERF" record -a -k mono -m 4096 --kernel-callchains -D -1 --synth task \
		--control "fifo:$TMP/ctl,$TMP/ack" -o "$1" "${EVENTS[@]}" >"$2" 2>&1 &
	PERF_PID=$!
	exec 7<>"$TMP/ctl" 8<>"$TMP/ack"
	echo enable >&7
	local a=
	read -r -t 60 a <&8
	exec 7>&- 8<&-
	[ "$a" = ack ] || {
		cat "$2" >&2
		return 1
	}
}

stop_perf() { # LOG
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID"
	local rc=$?
	PERF_PID=
	# perf record exits 130 after SIGINT; it wrote its data if it says so.
	[ $rc -eq 0 ] || { [ $rc -eq 130 ] && grep -q 'Captured and wrote' "$1"; }
}

# The replay's event counts, "name samples lost" per line.
replay_events() { # REPLAY_OUTPUT
	awk '/^events:/ { on = 1; next } on && NF >= 5 { print $1, $3, $5 }' "$1"
}

FAILED=0
for name in "${NAMES[@]}"; do
	log ""
	log "=== $name: outcome_workload ${WARGS[$name]}"
	CUR_PIDFILE=$TMP/$name.pid
	CUR_CG_NAME=mmlockd-rec.$$.$name
	CUR_CG=
	for root in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
		if [ -e "$root/cgroup.procs" ]; then
			CUR_CG=$root/$CUR_CG_NAME
			break
		fi
	done
	CUR_SWAP=$TMP/$name.swap
	rm -f "$CUR_PIDFILE"

	start_perf "$TMP/$name.perf" "$TMP/$name.perf.log" || die "perf record did not start"
	# shellcheck disable=SC2086 # WARGS is a list of words
	"$MMLOCKD" record -o "$TMP/$name.rec" --log-level warning -- "$WORKLOAD" ${WARGS[$name]} \
		--pid-file "$CUR_PIDFILE" --dir "$TMP" --cgroup "$CUR_CG_NAME" \
		--swap-file "$CUR_SWAP" >"$TMP/$name.record.out" 2>&1
	rc=$?
	# The workload has exited (mmlockd record waits for it): its pid may be reused from now.
	WPID=$(cat "$CUR_PIDFILE" 2>/dev/null)
	CUR_PIDFILE=
	sleep 0.2
	if ! stop_perf "$TMP/$name.perf.log"; then
		cat "$TMP/$name.perf.log" >&2
		log "FAIL: perf record failed"
		FAILED=$((FAILED + 1))
		continue
	fi
	cat "$TMP/$name.record.out" >&2
	if [ $rc -ne 0 ]; then
		log "FAIL: mmlockd record / the workload exited with status $rc"
		FAILED=$((FAILED + 1))
		continue
	fi
	[[ "$WPID" =~ ^[0-9]+$ ]] || die "the workload wrote no pid file"

	kernel=$(uname -r)
	if ! python3 "$CLASSIFY" "$TMP/$name.perf" --perf "$PERF" --tree "$WPID" \
		--format expected --also-naive \
		--header "# $name.expected: expected fault outcomes of $name.rec, per process of the" \
		--header "# workload's tree, from perf record -a of the same live run, classified by" \
		--header "# tests/tools/perf_classify.py (independent of mmlockd). Made by" \
		--header "# tests/tools/make_recordings.sh; naive.* = the same data under the rule that" \
		--header "# counts a fault taken in kernel mode as a fallback of the open user fault." \
		--header "name=$name" \
		--header "workload=outcome_workload ${WARGS[$name]}" \
		--header "kernel=$kernel" \
		--header "made_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		--header "root_pid=$WPID" \
		--header "workload_summary=$(grep -m1 '^outcome_workload: mode' "$TMP/$name.record.out")" \
		>"$OUT_DIR/$name.expected.new"; then
		FAILED=$((FAILED + 1))
		continue
	fi
	get() { sed -n "s/^$1=//p" "$OUT_DIR/$name.expected.new"; }

	# Consistency of the two separate recordings of the same events.
	"$MMLOCKD" replay "$TMP/$name.rec" >"$TMP/$name.replay" 2>/dev/null ||
		die "mmlockd replay $name.rec failed"
	replay_events "$TMP/$name.replay" >"$TMP/$name.events"
	ok=1
	[ "$(get lost)" = 0 ] || {
		log "FAIL: perf lost $(get lost) events: record again on a quieter machine"
		ok=0
	}
	rlost=$(awk '{ s += $3 } END { print s + 0 }' "$TMP/$name.events")
	[ "$rlost" = 0 ] || {
		log "FAIL: mmlockd lost $rlost events: record again (or raise --ring-pages)"
		ok=0
	}
	for pair in exceptions:page_fault_user=faults \
		mmap_lock:mmap_lock_acquire_returned=acquisitions \
		mmap_lock:mmap_lock_start_locking=start_lockings \
		filemap:mm_filemap_fault=filemap_faults \
		filemap:mm_filemap_add_to_page_cache=pages_added; do
		ev=${pair%%=*}
		key=${pair#*=}
		m=$(awk -v e="$ev" '$1 == e { print $2 }' "$TMP/$name.events")
		p=$(get "total.$key")
		if [ "${m:-0}" != "$p" ]; then
			log "FAIL: $ev: mmlockd recorded ${m:-0} events of the tree, perf $p"
			ok=0
		fi
	done
	if [ "$ok" -ne 1 ]; then
		FAILED=$((FAILED + 1))
		continue
	fi
	mv "$TMP/$name.rec" "$OUT_DIR/$name.rec"
	mv "$OUT_DIR/$name.expected.new" "$OUT_DIR/$name.expected"
	log "wrote $OUT_DIR/$name.rec ($(stat -c %s "$OUT_DIR/$name.rec") bytes) and $name.expected"

	# The outcome table, mmlockd's replay next to perf_classify's count.
	log ""
	log "$name: mmlockd replay vs perf_classify (naive rule in brackets where it differs)"
	python3 - "$OUT_DIR/$name.expected" "$TMP/$name.replay" >&2 <<'EOF'
import sys
exp = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l and l[0] != "#")
cols = ["faults", "vma", "vma_retry", "mmap_retry", "mmap_abort", "mmap_unknown", "fallback",
        "lock_retries"]
rep = {}
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 14 and f[0].isdigit():
        v = [int(x) for x in f[-12:-4]]
        old = rep.get(f[0], [0] * 8)
        rep[f[0]] = [a + b for a, b in zip(old, v)]
    if not line.strip():
        break
print("%-8s %-16s %-8s " % ("pid", "comm", "source") + " ".join("%12s" % c for c in cols))
for pid in exp["pids"].split():
    e = [int(exp["pid.%s.%s" % (pid, c)]) for c in cols]
    n = [int(exp.get("naive.pid.%s.%s" % (pid, c), -1)) for c in cols]
    m = rep.get(pid, [0] * 8)
    comm = exp.get("pid.%s.comm" % pid, "")[:16]
    print("%-8s %-16s %-8s " % (pid, comm, "mmlockd") + " ".join("%12d" % x for x in m))
    print("%-8s %-16s %-8s " % ("", "", "perf") + " ".join(
        "%12s" % (("%d" % a) if a == b else "%d[%d]" % (a, b)) for a, b in zip(e, n)))
EOF
done

log ""
if [ "$FAILED" -gt 0 ]; then
	log "make_recordings: $FAILED recording(s) failed"
	exit 1
fi
log "make_recordings: all recordings made in $OUT_DIR"
exit 0
