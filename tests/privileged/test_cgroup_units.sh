#!/bin/bash
# test_cgroup_units.sh: every process is stored under the cgroup the kernel charges its memory to
# (daemon/cgpath.h), by both sources, short-lived or not; never under "/" when it is not there.
#
# Usage: test_cgroup_units.sh MMLOCKD_BINARY FAULT_WORKLOAD
#
# Two daemons run at once on their defaults (1 s windows): one with --source perf, one with
# --source auto (the BPF source where it loads; the test says when it does not, and then checks
# the perf daemon alone). While both watch, fault_workload runs many times, short (one round over
# 2 MiB: ~40 ms, gone before its FORK record is read, so its /proc files are read while it exits
# or not at all) and long-lived (0.8 s), in cgroups the test creates under a unique name:
#   A  a shell joins the test's memory cgroup (the v1 memory hierarchy where memory is on v1,
#      else the unified one), then forks every run: 24 short, 4 long; stored under A.
#   B  on a hybrid host with memory on v1 only: a shell joins a unified cgroup B2 and a second
#      v1 memory cgroup B1: 12 short, 3 long; stored under B1, the memory controller's path, not
#      B2 (the unified path, which on such a host is not where memory is accounted).
#   C  as systemd or a container runtime starts a process: forked in the test's own cgroup, the
#      child joins A, then execs the workload: 10 short runs (gone before their exec is read: the
#      move is taken from cgroup:cgroup_attach_task, plugins/cgroups.c), 3 long ones; under A.
#   D  moved without exec: a run of 1.5 s started in the test's own cgroup is moved into A by
#      the test 0.5 s in, after the daemons read it; under A.
# Checks, per daemon: every run is stored, each under its expected cgroup and none under "/" or
# unknown (""); and the two daemons give every run the same cgroup. The cgroups are removed at
# exit. Exit status: 0 passed, 1 a check failed, 77 skipped (not root, no tracepoints, no memory
# controller on any hierarchy). KEEP_TMP=1 keeps the temporary directory.
set -u -o pipefail
TEST_NAME=test_cgroup_units
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"
perf_PID=
bpf_PID=
CGS=()

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	stop_process "$perf_PID" TERM
	stop_process "$bpf_PID" TERM
	local i
	for ((i = ${#CGS[@]} - 1; i >= 0; i--)); do rmdir "${CGS[i]}" 2>/dev/null; done
	remove_tmp
}

daemon_and_workload_args "$@"
need_root "system-wide tracepoints, cgroups"
# (Not need_tracepoints: another tracer's programs change counts and callchains, not cgroups.)
find_tracefs
[ -d "$TRACEFS/events/mmap_lock/mmap_lock_start_locking" ] ||
	skip "tracepoint mmap_lock:mmap_lock_start_locking does not exist on this kernel"
need_tools curl sqlite3 python3

# Where memory is accounted: the v1 memory hierarchy when /proc/self/cgroup names memory on a
# v1 line, else the unified hierarchy when its root offers the memory controller.
MEMV1=
UNI=
if grep -Eq '^[1-9][0-9]*:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup; then
	MEMV1=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ { print $2; exit }' /proc/mounts)
	[ -n "$MEMV1" ] || skip "memory is on a v1 hierarchy that is not mounted"
fi
for d in /sys/fs/cgroup/unified /sys/fs/cgroup; do
	if [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ]; then
		UNI=$d
		break
	fi
done
if [ -z "$MEMV1" ] && { [ -z "$UNI" ] || ! grep -qw memory "$UNI/cgroup.controllers"; }; then
	skip "no memory controller on any cgroup hierarchy"
fi
ACCT=${MEMV1:-$UNI}
log "memory is accounted on $ACCT ($([ -n "$MEMV1" ] && echo "cgroup v1" || echo "cgroup v2"))"

make_tmp cgroup-units
empty_conf

NAME=mmlockd-cgtest-$$
A=/$NAME-a
mkdir "$ACCT$A" || fatal "cannot create $ACCT$A"
CGS+=("$ACCT$A")
B1=
B2=
if [ -n "$MEMV1" ] && [ -n "$UNI" ]; then
	B1=/$NAME-b1
	B2=/$NAME-b2
	mkdir "$MEMV1$B1" || fatal "cannot create $MEMV1$B1"
	CGS+=("$MEMV1$B1")
	mkdir "$UNI$B2" || fatal "cannot create $UNI$B2"
	CGS+=("$UNI$B2")
fi

start_daemon perf --source perf
start_daemon bpf --source auto
read -r bpf_src _ <<<"$(collector_source bpf fallbacks)"
if [ "$bpf_src" = bpf ]; then
	DAEMONS=(perf bpf)
else
	log "the BPF source does not run here ($(grep -m1 'BPF source' "$TMP/bpf.log")): perf only"
	stop_process "$bpf_PID" TERM
	bpf_PID=
	DAEMONS=(perf)
fi

SHORT=(--fault-threads 1 --map-threads 0 --anon-mb 2 --file-mb 0 --file-dir "$TMP" --rounds 1)
LONG=(--fault-threads 1 --map-threads 0 --anon-mb 2 --file-mb 0 --file-dir "$TMP" --seconds 0.8)

# runs_in CGROUP_PROCS_FILES SHORT_RUNS LONG_RUNS OUT: a shell joins every cgroup.procs file
# given, then forks the long runs in the background and the short ones one after the other; the
# workloads' summary lines ("pid P ...") go to OUT.
runs_in() {
	local files=$1 short=$2 long=$3 out=$4
	(
		for f in $files; do echo "$BASHPID" >"$f" || exit 1; done
		for _ in $(seq "$long"); do "$WORKLOAD" "${LONG[@]}" >>"$out.long" & done
		for _ in $(seq "$short"); do "$WORKLOAD" "${SHORT[@]}" >>"$out" || exit 1; done
		wait
		cat "$out.long" >>"$out"
	) || fatal "runs in $files failed"
}

# moved_runs N ARGS... OUT: N times, a child of this shell joins A, then execs the workload.
moved_runs() {
	local n=$1 out=${*: -1}
	local args=("${@:2:$#-2}")
	for _ in $(seq "$n"); do
		# shellcheck disable=SC2016 # $$ is the inner shell's
		sh -c 'echo $$ >"$0" || exit 1; exec "$@"' "$ACCT$A/cgroup.procs" \
			"$WORKLOAD" "${args[@]}" >>"$out" || fatal "a moved run failed"
	done
}

T0=$(date +%s)
runs_in "$ACCT$A/cgroup.procs" 24 4 "$TMP/a.out"
[ -n "$B1" ] && runs_in "$MEMV1$B1/cgroup.procs $UNI$B2/cgroup.procs" 12 3 "$TMP/b.out"
moved_runs 3 "${LONG[@]}" "$TMP/c.out"
moved_runs 10 "${SHORT[@]}" "$TMP/c.out"
# D: moved while it runs, by another process, after the daemons have read it (0.5 s in).
"$WORKLOAD" "${LONG[@]}" --seconds 1.5 --pid-file "$TMP/d.pid" >"$TMP/d.out" &
D_PID=$!
for _ in $(seq 50); do [ -s "$TMP/d.pid" ] && break; sleep 0.02; done
sleep 0.5
cat "$TMP/d.pid" >"$ACCT$A/cgroup.procs" || fatal "cannot move the D run into $A"
wait "$D_PID" || fatal "the D run failed"
sleep 2.5 # the last window closes
for d in "${DAEMONS[@]}"; do
	pid_var=${d}_PID
	stop_process "${!pid_var}" TERM 150
	printf -v "$pid_var" '%s' ""
done

pids_of() { awk '{ for (i = 1; i < NF; i++) if ($i == "pid") print $(i + 1) }' "$1"; }
# stored DAEMON PID: the cgroups stored for the run PID ("<none>" when not stored), one line. By
# pid and start, not by name: what a process is called is not what this test checks (the BPF
# daemon has stored a short run under its parent's name, the test script's).
stored() {
	local rows
	rows=$(sqlite3 -batch -noheader "$TMP/$1.db" \
		"SELECT quote(cgroup) FROM processes WHERE pid = $2 AND start_time >= $T0 - 1")
	echo "${rows:-<none>}" | tr '\n' ' ' | sed 's/ $//'
}

# check_runs LABEL OUT CGROUP: every run in OUT stored under CGROUP by every daemon, the same.
check_runs() {
	local label=$1 out=$2 want=$3 n=0 d pid got
	local -A bad=()
	for pid in $(pids_of "$out"); do
		n=$((n + 1))
		local answers=()
		for d in "${DAEMONS[@]}"; do
			got=$(stored "$d" "$pid")
			answers+=("$got")
			[ "$got" = "'$want'" ] || bad[$d]+="$pid=$got "
		done
		[ "${#answers[@]}" -eq 2 ] && [ "${answers[0]}" != "${answers[1]}" ] &&
			bad[agree]+="$pid:${answers[0]}/${answers[1]} "
	done
	[ "$n" -gt 0 ] || fatal "$label: no run printed its pid"
	for d in "${DAEMONS[@]}"; do
		if [ -z "${bad[$d]:-}" ]; then
			pass "$label, $d: all $n runs stored under $want"
		else
			fail "$label, $d: runs not stored under $want: ${bad[$d]}"
		fi
	done
	if [ "${#DAEMONS[@]}" -eq 2 ]; then
		local disagree=${bad[agree]:-}
		expect_zero "${#disagree}" "$label: both sources give every run the same cgroup" \
			"$label: the sources disagree: $disagree"
	fi
}

check_runs "A (forked inside $A)" "$TMP/a.out" "$A"
[ -n "$B1" ] && check_runs "B (unified $B2, v1 memory $B1)" "$TMP/b.out" "$B1"
check_runs "C (forked outside, joined $A, then exec)" "$TMP/c.out" "$A"
check_runs "D (moved into $A while it ran)" "$TMP/d.out" "$A"
summary_and_exit
