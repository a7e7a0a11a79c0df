# shellcheck shell=bash
# Shared by the privileged test scripts (sourced, not run): reporting, what a test needs, its
# temporary directory, finding tracefs, a free loopback port, starting mmlockd and stopping what
# a test started, relative differences. The sourcing script sets TEST_NAME before, then for
# start_mmlockd MMLOCKD, CONF and DB, for within() TOL; make_tmp sets TMP (whose mmlockd.log is
# shown on failure).

# Kept when the script set them before sourcing this file (the integration scripts' TMP).
SKIP=77 # meson's "skipped"
PASSED=${PASSED:-0}
FAILED=${FAILED:-0}
TMP=${TMP:-}
DAEMON_PID=${DAEMON_PID:-}

log() { printf '%s\n' "$*"; }
skip() {
	log "SKIP: $*"
	exit "$SKIP"
}
pass() {
	PASSED=$((PASSED + 1))
	log "PASS: $*"
}
# The BPF source's unpaired or dropped lock waits a run may have, with $1 waits paired in its
# database (lock_stats, every process): 20, or 1 in 500 of those, whichever is more. A tracer
# misses the contentions inside its own machinery (an event that fires, from an interrupt, while
# the same program already runs on the CPU is not traced); how often grows with the machine's load
# and its contentions (26 in one CI run). Used by test_locks.sh (LOCKS_SOURCE=bpf) and
# test_bpf_locks.sh.
bpf_unpaired_allowed() {
	local by_share=$(($1 / 500))
	echo $((by_share > 20 ? by_share : 20))
}

FAILURES=()
fail() {
	FAILED=$((FAILED + 1))
	FAILURES+=("$*")
	log "FAIL: $*"
}

summary_and_exit() {
	if [ "$FAILED" -gt 0 ] && [ -n "$TMP" ] && [ -s "$TMP/mmlockd.log" ]; then
		log "--- mmlockd log (last 100 lines) ---"
		tail -n 100 "$TMP/mmlockd.log"
		log "---"
	fi
	# The failed checks again, last: CI shows only the tail of a failing test's output, and the
	# log above can push them out of it.
	local f
	for f in "${FAILURES[@]}"; do
		log "failed: ${f:0:300}"
	done
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

# daemon_and_workload_args "$@": the privileged scripts' two arguments into MMLOCKD and WORKLOAD;
# anything else prints the usage and exits 2.
daemon_and_workload_args() {
	if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
		echo "usage: $0 MMLOCKD_BINARY WORKLOAD_BINARY" >&2
		exit 2
	fi
	MMLOCKD=$1
	WORKLOAD=$2
}

# What a test needs to run at all. A missing root, perf or tracepoint is a skip (this machine
# cannot run it); a missing tool is a failure (the test could run, the setup is broken).
# need_root WHAT: skips unless root, saying what for.
need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root ($*)"
}

need_perf() {
	command -v perf >/dev/null 2>&1 || skip "perf is not installed"
}

# need_memcg: skips unless a memory cgroup controller is mounted, found as outcome_workload's
# cgroup_setup() finds it (/proc/mounts: a cgroup v1 hierarchy with the memory option, or the
# first cgroup2 mount whose root enables memory for its children). A chroot or container that
# sees /sys but no cgroup hierarchy has none: the workloads that fault under a memory limit
# cannot run there.
need_memcg() {
	local dev dir type opts rest v2=
	while read -r dev dir type opts rest; do
		case $type in
		cgroup) [[ ,$opts, == *,memory,* ]] && return 0 ;;
		cgroup2) [ -n "$v2" ] || v2=$dir ;;
		esac
	done </proc/mounts
	[ -n "$v2" ] && grep -qw memory "$v2/cgroup.subtree_control" 2>/dev/null && return 0
	skip "no memory cgroup controller is mounted (outcome_workload runs its file workloads under a memory limit)"
}

# need_tracepoints SYSTEM/NAME...: finds tracefs (find_tracefs), skips when one does not exist.
need_tracepoints() {
	local tp
	find_tracefs
	for tp in "$@"; do
		[ -d "$TRACEFS/events/$tp" ] || skip "tracepoint ${tp/\//:} does not exist on this kernel"
	done
	no_foreign_bpf "$@"
}

# no_foreign_bpf SYSTEM/NAME...: skips when another program (a user's own mmlockd on the BPF
# source, a bpftrace) holds BPF programs on one of these tracepoints: this test's counts would
# then differ from perf's for reasons of that program (perf's callchains read __traceiter_*
# frames, and events fired from its programs are not traced), not of mmlockd. Called before the
# test starts anything, so every holder is another program.
no_foreign_bpf() {
	command -v bpftool >/dev/null 2>&1 || return 0
	local tp held
	held=$(bpftool perf list 2>/dev/null) || return 0
	for tp in "$@"; do
		local line pid
		line=$(printf '%s\n' "$held" | awk -v n="${tp#*/}" '$NF == n && /tracepoint/ { print; exit }')
		[ -n "$line" ] || continue
		pid=$(printf '%s\n' "$line" | awk '{ print $2 }')
		skip "another program ($(cat "/proc/$pid/comm" 2>/dev/null || echo gone), pid $pid) holds BPF programs on ${tp/\//:}: its counts and callchains would differ from this test's"
	done
}

# runnable_by_nobody BINARY: prints BINARY, or the path of a copy in $TMP/bin when uid 65534
# cannot run it where it is (a clone under /root, mode 0700); $TMP becomes traversable for it.
runnable_by_nobody() {
	if setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$1"; then
		printf '%s\n' "$1"
		return 0
	fi
	chmod go+x "$TMP" && mkdir -p "$TMP/bin" && chmod 755 "$TMP/bin" && cp "$1" "$TMP/bin/" &&
		chmod 755 "$TMP/bin/$(basename "$1")" && printf '%s\n' "$TMP/bin/$(basename "$1")"
}

# need_tools TOOL...
need_tools() {
	local tool
	for tool in "$@"; do
		command -v "$tool" >/dev/null 2>&1 || fatal "required tool '$tool' is not installed"
	done
}

# make_tmp NAME [BASE]: TMP, a new directory BASE/mmlockd-NAME.XXXXXX (BASE: $TMPDIR or /tmp);
# from then on the script's cleanup() runs at exit, and SIGINT/SIGTERM exit 130/143.
make_tmp() {
	TMP=$(mktemp -d "${2:-${TMPDIR:-/tmp}}/mmlockd-$1.XXXXXX") || fatal "mktemp failed"
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# empty_conf: DB in TMP and an empty CONF there, which keeps /etc/mmlockd.conf out of the test.
empty_conf() {
	DB=$TMP/mmlockd.db
	CONF=$TMP/mmlockd.conf
	: >"$CONF"
}

# make_cgroups PATH: creates the cgroup PATH (/NAME) in the unified hierarchy and, where it is
# mounted, the v1 memory hierarchy (whose path mmlockd prefers), and appends each directory made
# to the array CGS, which the script declares and its cleanup() removes; skips when there is no
# hierarchy to create it in, fatal when mkdir fails.
make_cgroups() {
	local h
	for h in /sys/fs/cgroup/unified /sys/fs/cgroup /sys/fs/cgroup/memory; do
		[ -f "$h/cgroup.procs" ] || continue
		[ "$h" = /sys/fs/cgroup ] && [ -d /sys/fs/cgroup/unified ] && continue
		mkdir "$h$1" || fatal "cannot create $h$1"
		CGS+=("$h$1")
	done
	[ ${#CGS[@]} -gt 0 ] || skip "no cgroup hierarchy to create a cgroup in"
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

# perf_enabled: right after `perf record -D -1 --control "fifo:$TMP/ctl,$TMP/ack" ... &` (the
# fifos made, its log in $TMP/perf.log): sets PERF_PID, enables the recording and waits up to
# 60 s for perf's ack; fatal, showing perf's log, when none comes.
perf_enabled() {
	local ack=
	PERF_PID=$!
	exec 7<>"$TMP/ctl" 8<>"$TMP/ack"
	echo enable >&7
	read -r -t 60 ack <&8
	exec 7>&- 8<&-
	if [ "$ack" != ack ]; then
		cat "$TMP/perf.log"
		fatal "perf record did not start"
	fi
	pass "perf record -a (pid $PERF_PID) is counting"
}

# perf_stopped: SIGINT to $PERF_PID, which must then exit 0, or 130 after writing its data
# ("Captured and wrote" in $TMP/perf.log); fatal, showing the log, otherwise. Clears PERF_PID.
perf_stopped() {
	local rc
	kill -INT "$PERF_PID"
	wait "$PERF_PID"
	rc=$?
	PERF_PID=
	if [ "$rc" -ne 0 ] && ! { [ "$rc" -eq 130 ] && grep -q 'Captured and wrote' "$TMP/perf.log"; }; then
		cat "$TMP/perf.log"
		fatal "perf record exited with status $rc"
	fi
}

# events_open [--or-bpf COLLECTOR] EVENT...: polls /api/v1/status, up to ~10 s and while the
# daemon runs, until it reports every EVENT ("system:name") as open, or (--or-bpf) COLLECTOR as
# running on the BPF source, which opens no perf event. Returns 0 or 1; $TMP/events.txt keeps the
# last answer, one "name open samples lost error" line per event.
events_open() {
	local bpf=-
	[ "${1:-}" = --or-bpf ] && { bpf=$2; shift 2; }
	local want="$*"
	for _ in $(seq 50); do
		if http_get /api/v1/status "$TMP/status.json" &&
			python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for e in d.get("events", []):
    print(e.get("name"), "true" if e.get("open") else "false", e.get("samples", 0),
          e.get("lost", 0), (e.get("error") or "-").replace(" ", "_"))
if any(c.get("name") == sys.argv[2] and c.get("source") == "bpf" and c.get("state") == "running"
       for c in d.get("collectors", [])):
    print("BPF true 0 0 -")' "$TMP/status.json" "$bpf" \
				>"$TMP/events.txt" 2>&1 &&
			awk -v want="$want" 'BEGIN { n = split(want, w, " "); for (i = 1; i <= n; i++) need[w[i]] = 1 }
				$1 == "BPF" { bpf = 1 }
				$2 == "true" { delete need[$1] }
				END { if (bpf) exit 0; for (k in need) exit 1 }' "$TMP/events.txt"; then
			return 0
		fi
		kill -0 "$DAEMON_PID" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

free_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# status_lines KIND FILE [PID]: the JSON answer in FILE as lines for awk and read. KIND events
# ("name open samples lost error" per event of /api/v1/status), collectors ("name state reason"),
# globals ("family.name total"), or proc PID (of /api/v1/processes: "taken faults read write
# trylock_fail" summed over PID's entries, or "taken none").
status_lines() {
	python3 - "$@" <<'EOF'
import json, sys

def named(doc, key):
    v = doc.get(key, [])
    if isinstance(v, dict):  # tolerate {"name": {...}}
        v = [dict(x, name=k) for k, x in v.items()]
    return v

cmd = sys.argv[1]
with open(sys.argv[2]) as f:
    doc = json.load(f)
if cmd == "events":
    for e in named(doc, "events"):
        print(e.get("name", "?"),
              "true" if e.get("open", True) else "false",
              int(e.get("samples", 0) or 0), int(e.get("lost", 0) or 0),
              (e.get("error") or "-").replace(" ", "_"))
elif cmd == "collectors":
    for c in named(doc, "collectors"):
        print(c.get("name", "?"), c.get("state", "?"),
              (c.get("reason") or "-").replace(" ", "_"))
elif cmd == "globals":
    for g in doc.get("globals", []):
        print("%s.%s" % (g.get("family", "?"), g.get("name", "?")), int(g.get("total", 0) or 0))
elif cmd == "proc":
    pid = int(sys.argv[3])
    keys = ["faults", "mmap_lock_read", "mmap_lock_write", "mmap_lock_trylock_fail"]
    found = [p for p in doc.get("processes", []) if int(p.get("pid", -1)) == pid]
    taken = doc.get("taken", "-")
    if not found:
        print(taken, "none")
    else:
        print(taken, " ".join(str(sum(int(p.get("total", {}).get(k, 0) or 0) for p in found))
                              for k in keys))
else:
    sys.exit("status_lines: unknown kind " + cmd)
EOF
}

# expect_zero N PASS_MESSAGE FAIL_MESSAGE: passes when N is 0, else fails.
expect_zero() {
	if [ "$1" -eq 0 ]; then
		pass "$2"
	else
		fail "$3"
	fi
}

# http_get PATH OUTFILE: GET http://127.0.0.1:$PORT$PATH into OUTFILE; fails on HTTP errors.
http_get() {
	curl -fsS --noproxy '*' --max-time 5 -o "$2" "http://127.0.0.1:$PORT$1" 2>/dev/null
}

# start_mmlockd [DEFAULT_FLAG...]: starts $MMLOCKD with --config $CONF --db $DB, a free loopback
# port and 1-second windows, then the words of $MMLOCKD_ARGS if it is set and not empty, else
# the DEFAULT_FLAGs; its log goes to $TMP/mmlockd.log. Waits up to ~20 s for /api/v1/status
# (kept in $TMP/status.json), and starts again on another port (twice at most) only when the
# first was taken between free_port and bind. Sets PORT and DAEMON_PID and passes, or is fatal.
start_mmlockd() {
	local flags=("$@") attempt
	[ -n "${MMLOCKD_ARGS:-}" ] && read -ra flags <<<"$MMLOCKD_ARGS"
	for attempt in 1 2 3; do
		PORT=$(free_port) || fatal "no free loopback port"
		"$MMLOCKD" --config "$CONF" --db "$DB" --listen "127.0.0.1:$PORT" --interval 1 \
			"${flags[@]}" >"$TMP/mmlockd.log" 2>&1 &
		DAEMON_PID=$!
		for _ in $(seq 100); do # up to ~20 s
			if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
				wait "$DAEMON_PID"
				log "mmlockd exited during start-up with status $?"
				DAEMON_PID=
				break
			fi
			if http_get /api/v1/status "$TMP/status.json"; then
				pass "mmlockd (pid $DAEMON_PID) answers on 127.0.0.1:$PORT"
				return 0
			fi
			sleep 0.2
		done
		[ -n "$DAEMON_PID" ] && log "mmlockd did not answer /api/v1/status on 127.0.0.1:$PORT"
		if [ -n "$DAEMON_PID" ] || ! grep -qi 'in use' "$TMP/mmlockd.log" 2>/dev/null; then
			break
		fi
		log "port $PORT was taken, retrying ($attempt)"
	done
	fatal "mmlockd did not start"
}

# start_daemon NAME FLAG...: start_mmlockd with its own database $TMP/NAME.db and log
# $TMP/NAME.log (linked as $TMP/mmlockd.log for summary_and_exit), its first status in
# $TMP/NAME.status.json; sets NAME_PID and NAME_PORT and clears DAEMON_PID: for tests that run
# several daemons at once.
start_daemon() {
	local name=$1
	shift
	DB=$TMP/$name.db
	rm -f "$TMP/mmlockd.log"
	start_mmlockd "$@"
	mv "$TMP/mmlockd.log" "$TMP/$name.log"
	ln -sf "$TMP/$name.log" "$TMP/mmlockd.log"
	cp "$TMP/status.json" "$TMP/$name.status.json"
	printf -v "${name}_PID" '%s' "$DAEMON_PID"
	printf -v "${name}_PORT" '%s' "$PORT"
	DAEMON_PID=
}

# collector_source NAME COLLECTOR: the source and state of COLLECTOR in daemon NAME's first
# status ($TMP/NAME.status.json, start_daemon), "absent -" when it does not run.
collector_source() {
	python3 - "$TMP/$1.status.json" "$2" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
c = [c for c in doc.get("collectors", []) if c.get("name") == sys.argv[2]]
print(c[0].get("source", "?"), c[0].get("state", "?")) if c else print("absent -")
EOF
}

# mmlockd_alive: fatal (with its exit status) when the daemon exited on its own before the test
# stopped it.
mmlockd_alive() {
	kill -0 "$DAEMON_PID" 2>/dev/null && return 0
	wait "$DAEMON_PID"
	local rc=$?
	DAEMON_PID=
	fatal "mmlockd exited on its own (status $rc) before the test sent SIGTERM;" \
		"a 'received Terminated' line in its log means someone else signalled it"
}

# sigterm_mmlockd: SIGTERM, which must flush the open window and exit 0 within 15 s (a check);
# SIGKILL after that. Clears DAEMON_PID.
sigterm_mmlockd() {
	local rc
	kill -TERM "$DAEMON_PID"
	for _ in $(seq 150); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		fail "mmlockd did not exit within 15 s of SIGTERM"
		kill -KILL "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	else
		wait "$DAEMON_PID"
		rc=$?
		if [ "$rc" -eq 0 ]; then
			pass "mmlockd exited 0 on SIGTERM"
		else
			fail "mmlockd exited with status $rc on SIGTERM"
		fi
	fi
	DAEMON_PID=
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
