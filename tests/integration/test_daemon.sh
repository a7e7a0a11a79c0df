#!/bin/bash
# test_daemon.sh: the integration suite of the real mmlockd daemon, driven only through its public
# faces: the command line, HTTP on loopback (curl), the SQLite database (sqlite3 CLI), signals and
# stderr. Every daemon runs on a temporary database with `--config /dev/null` (or a temporary
# configuration file), so /etc/mmlockd.conf never interferes, and on a free loopback port.
#
# Usage: test_daemon.sh PATH/TO/mmlockd
#
# Each check is a function named check_<what it proves>; the script prints "ok NAME",
# "FAIL NAME: why" or "skip NAME: why" per check and ends with the line "N passed, M failed".
# Exit status: 0 every check passed, 1 a check failed, 77 nothing could run (a required tool is
# missing). Checks that need root (real tracepoints, switching to nobody) are skipped without it.
# Environment: KEEP_TMP=1 keeps the temporary directory (daemon logs, databases) for inspection;
# CHECKS="check_x check_y" runs only those (the main daemon's checks need check_main_daemon_... first).
#
# Daemons in the run (each logs to $TMP/daemon-NAME.log):
#   main   --interval 1: status, every route, bad requests, SQLite contents, a live workload
#   term   --interval 3600: a workload runs to completion, then SIGTERM must flush the one window
#   int    the same with SIGINT
#   hup    --config FILE: SIGHUP reloads top/interval; a broken file is refused, old one kept
#   nobody run as uid/gid 65534: collectors on tracepoints refused in one line; with totals and
#          vmstat only, HTTP and history keep working
# plus short-lived ones that must fail at start-up (port in use, unwritable database).

set -u -o pipefail

MMLOCKD=${1:-}
if [ -z "$MMLOCKD" ] || [ ! -x "$MMLOCKD" ]; then
	echo "usage: $0 PATH/TO/mmlockd" >&2
	exit 2
fi
case $MMLOCKD in
/*) ;;
*) MMLOCKD=$PWD/$MMLOCKD ;;
esac

for tool in curl sqlite3 python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "skip: $tool is not installed" >&2
		exit 77
	fi
done

PASSED=0
FAILED=0
REASON=
TMP=
declare -A DPID=()  # daemon name -> pid
declare -A DPORT=() # daemon name -> HTTP port
CHILDREN=()         # every background pid started here, for cleanup
HTTP_CODE=
STOP_RC=
STOP_MS=

# The real interpreter, not a pyenv-style shim script, so a workload's pid is the process that
# does the work and its comm is predictable.
PY=$(python3 -c 'import sys; print(sys.executable)')
PY_COMM=$(basename "$PY" | cut -c1-15)
KERNEL=$(uname -r)
VERSION=$("$MMLOCKD" --version 2>/dev/null | awk '{print $2}')

# ---------------------------------------------------------------------------------------------
# Plumbing

now_ms() { date +%s%3N; }

# Whether @1 is a live process (a zombie, exited but not yet reaped, is not).
alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# Waits up to @1 seconds for the command @2... to succeed, polling every 0.1 s.
wait_until() {
	local tries=$(($1 * 10))
	shift
	while [ "$tries" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		tries=$((tries - 1))
	done
	"$@"
}

# Waits up to @2 seconds for pid @1 to exit; kills it if it does not. Sets STOP_RC (exit status,
# 124 when it had to be killed) and STOP_MS (time waited).
reap() {
	local pid=$1 tries=$(($2 * 10)) t0
	t0=$(now_ms)
	while [ "$tries" -gt 0 ] && alive "$pid"; do
		sleep 0.1
		tries=$((tries - 1))
	done
	STOP_MS=$(($(now_ms) - t0))
	if alive "$pid"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		STOP_RC=124
		return
	fi
	wait "$pid" 2>/dev/null
	STOP_RC=$?
}

# A loopback TCP port nothing listens on, outside the ephemeral range so curl's own connections
# do not take it in the meantime.
free_port() {
	python3 - <<'EOF'
import random, socket
for _ in range(200):
    port = random.randint(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
EOF
}

# cleanup runs from the EXIT trap: every daemon and workload still running is stopped (TERM,
# then KILL after 3 s), the temporary directory removed unless KEEP_TMP=1.
# shellcheck disable=SC2317 # invoked by the trap
cleanup() {
	local pid
	trap - EXIT INT TERM HUP
	for pid in "${CHILDREN[@]}"; do
		alive "$pid" && kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${CHILDREN[@]}"; do
		alive "$pid" && reap "$pid" 3
	done
	if [ -n "$TMP" ] && [ -d "$TMP" ]; then
		if [ "${KEEP_TMP:-0}" = 1 ]; then
			echo "kept $TMP"
		else
			rm -rf "$TMP"
		fi
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

TMP=$(mktemp -d /tmp/mmlockd-it.XXXXXX) || exit 1
chmod 755 "$TMP" # the nobody daemon must reach its own directory inside

# Starts daemon @1 on a free port with the flags @2... (`--config /dev/null --collectors all` is
# added unless a --config or --collectors is among them: these checks read every collector's
# counters; tests/privileged/test_default.sh checks the default set against the kernel). RUN_AS, when set, is a command prefix (e.g. setpriv ...). Waits until
# /api/v1/status answers 200, at most 10 s; a port lost to someone else is retried twice. Sets
# DPID[@1] and DPORT[@1]; returns 1 with REASON on failure.
start_daemon() {
	local name=$1 port pid cfg=(--config /dev/null --collectors all) a
	shift
	for a in "$@"; do
		[ "$a" = --config ] && cfg=()
		[ "$a" = --collectors ] && cfg=(--config /dev/null)
	done
	local log="$TMP/daemon-$name.log"
	for _ in 1 2 3; do
		port=$(free_port)
		[ -n "$port" ] || {
			REASON="no free loopback port"
			return 1
		}
		# shellcheck disable=SC2086 # RUN_AS is a word list on purpose
		${RUN_AS:-} "$MMLOCKD" "${cfg[@]}" --listen "127.0.0.1:$port" "$@" 2>>"$log" &
		pid=$!
		CHILDREN+=("$pid")
		DPID[$name]=$pid
		DPORT[$name]=$port
		local tries=100
		while [ "$tries" -gt 0 ] && alive "$pid"; do
			http GET "$port" /api/v1/status
			[ "$HTTP_CODE" = 200 ] && return 0
			sleep 0.1
			tries=$((tries - 1))
		done
		if alive "$pid"; then
			REASON="daemon $name: /api/v1/status did not answer 200 within 10 s (last: $HTTP_CODE)"
			return 1
		fi
		reap "$pid" 1
		grep -qi 'address already in use' "$log" && continue
		REASON="daemon $name exited with status $STOP_RC at start-up: $(tail -n 3 "$log" | tr '\n' ' ')"
		return 1
	done
	REASON="daemon $name: every port tried was taken"
	return 1
}

# Whether daemon @1 was started and still runs; sets REASON otherwise.
running() {
	if [ -z "${DPID[$1]:-}" ]; then
		REASON="daemon $1 was never started"
		return 1
	fi
	if ! alive "${DPID[$1]}"; then
		REASON="daemon $1 (pid ${DPID[$1]}) is not running: $(tail -n 3 "$TMP/daemon-$1.log" | tr '\n' ' ')"
		return 1
	fi
}

# One request: METHOD PORT PATH. Body in $TMP/body, headers in $TMP/headers, status in HTTP_CODE
# ("000" when the connection failed or timed out after 5 s).
http() {
	local method=$1 port=$2 path=$3 opts=()
	case $method in
	GET) ;;
	HEAD) opts=(--head) ;;
	POST) opts=(-X POST --data x) ;;
	*) opts=(-X "$method") ;;
	esac
	: >"$TMP/body"
	: >"$TMP/headers"
	HTTP_CODE=$(curl -sS --max-time 5 "${opts[@]}" -o "$TMP/body" -D "$TMP/headers" \
		-w '%{http_code}' "http://127.0.0.1:$port$path" 2>"$TMP/curl.err") || HTTP_CODE=000
	[ -n "$HTTP_CODE" ] || HTTP_CODE=000
}

# The value of response header @1 of the last request.
header() {
	grep -i "^$1:" "$TMP/headers" | tail -n 1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//'
}

# The last response is a JSON object {"error": "<non-empty string>"} with a JSON content type.
is_json_error() {
	local ct
	ct=$(header Content-Type)
	case $ct in
	application/json*) ;;
	*)
		REASON="Content-Type '$ct', expected application/json"
		return 1
		;;
	esac
	REASON=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
if not isinstance(d, dict) or not isinstance(d.get("error"), str) or not d["error"]:
    sys.exit("body has no non-empty \"error\" string: %r" % (d,))
' "$TMP/body" 2>&1) || return 1
}

# Whether daemon @1's /api/v1/status reports interval_seconds @2.
status_interval_is() {
	http GET "${DPORT[$1]}" /api/v1/status
	grep -q "\"interval_seconds\":$2," "$TMP/body"
}

sql() { sqlite3 -batch -noheader -cmd '.timeout 3000' "$@"; }

# Distinct pids with a mmlockd_process_page_faults_accounted_total series (totals, a default
# collector) in the metrics file @1.
metric_pids() {
	grep '^mmlockd_process_page_faults_accounted_total{' "$1" | sed -E 's/.*pid="([0-9]+)".*/\1/' |
		sort -u | wc -l
}

# A workload that faults in a fresh 16 MiB anonymous mapping page by page (so each touched page
# is one user page fault from user mode) and unmaps it, again and again for @1 seconds. It
# writes "ITERATIONS PAGES_TOUCHED MINFLT END_UNIX_TIME" to @2 at the end. Start it with `&`; $! is its pid.
cat >"$TMP/workload.py" <<'EOF'
import mmap, resource, sys, time
end = time.time() + float(sys.argv[1])
size = 16 << 20
ones = b"\1" * (size // 4096)
n = 0
while True:
    m = mmap.mmap(-1, size)
    m[::4096] = ones
    m.close()
    n += 1
    if time.time() >= end:
        break
    time.sleep(0.02)
with open(sys.argv[2], "w") as f:
    print(n, n * (size // 4096), resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.time(),
          file=f)
EOF

need_root() {
	if [ "$(id -u)" != 0 ]; then
		REASON="needs root (real tracepoints)"
		return 77
	fi
}

run_check() {
	local name=$1 rc
	case " ${CHECKS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
	REASON=
	"$name"
	rc=$?
	if [ "$rc" -eq 0 ]; then
		PASSED=$((PASSED + 1))
		echo "ok $name"
	elif [ "$rc" -eq 77 ]; then
		echo "skip $name: $REASON"
	else
		FAILED=$((FAILED + 1))
		echo "FAIL $name: ${REASON:-no reason given}"
	fi
}

# Runs mmlockd with @2... under a 10 s timeout; @1 is a label for the output files. Sets
# STOP_RC, STOP_MS; stdout and stderr in $TMP/@1.out and $TMP/@1.err.
run_cli() {
	local label=$1 t0
	shift
	t0=$(now_ms)
	timeout -k 2 10 "$MMLOCKD" "$@" >"$TMP/$label.out" 2>"$TMP/$label.err" </dev/null
	STOP_RC=$?
	STOP_MS=$(($(now_ms) - t0))
}

# ---------------------------------------------------------------------------------------------
# 1. Command line

check_help_exits_0_and_lists_every_route_and_option() {
	local w
	run_cli help --help
	[ "$STOP_RC" = 0 ] || {
		REASON="--help exited $STOP_RC"
		return 1
	}
	for w in ' / ' /metrics /api/v1/status /api/v1/processes /api/v1/history --config --db \
		--listen --interval --retention --top --ring-pages --log-level --collectors \
		--version SIGHUP SIGTERM; do
		grep -qF -- "$w" "$TMP/help.out" || {
			REASON="--help output does not mention '$w'"
			return 1
		}
	done
	[ ! -s "$TMP/help.err" ] || {
		REASON="--help wrote to stderr: $(head -n 2 "$TMP/help.err")"
		return 1
	}
	# config.c: --help works whatever state the configuration file is in.
	run_cli help2 --config "$TMP/does-not-exist.conf" --help
	{ [ "$STOP_RC" = 0 ] && grep -q /api/v1/history "$TMP/help2.out"; } || {
		REASON="--help with a missing --config file exited $STOP_RC"
		return 1
	}
}

check_version_prints_version() {
	run_cli version --version
	[ "$STOP_RC" = 0 ] || {
		REASON="--version exited $STOP_RC"
		return 1
	}
	grep -qE '^mmlockd [0-9]+\.[0-9]+\.[0-9]+' "$TMP/version.out" || {
		REASON="--version printed '$(head -c 100 "$TMP/version.out")'"
		return 1
	}
	run_cli version2 -V
	cmp -s "$TMP/version.out" "$TMP/version2.out" || {
		REASON="-V and --version differ"
		return 1
	}
}

# Each bad command line must exit non-zero (not by a signal), quickly, print nothing on stdout,
# and name the problem on stderr (the needle). A mistaken acceptance would start a daemon: it
# gets a temp database and a free port, and the 10 s timeout shows up as status 124.
check_bad_flags_exit_nonzero_naming_the_problem() {
	local port i
	port=$(free_port)
	printf 'interval = 1\nbogus_key = 3\n' >"$TMP/bad.conf"
	printf 'interval = 0\n' >"$TMP/bad2.conf"
	local base=(--db "$TMP/cli.db" --listen "127.0.0.1:$port")
	local -a cases=(
		"--bogus|--bogus"
		"--interval 0|--interval"
		"--interval 3601|--interval"
		"--interval 1x|--interval"
		"--listen nonsense|nonsense"
		"--listen 127.0.0.1:70000|port"
		"--listen 1.2.3:80|--listen"
		"--top -1|--top"
		"--retention 0|--retention"
		"--ring-pages 100|--ring-pages"
		"--log-level loud|--log-level"
		"--collectors A,B|--collectors"
		"--collectors nosuch|nosuch"
		"--interval|--interval"
		"run|run"
		"--config $TMP/does-not-exist.conf|$TMP/does-not-exist.conf"
		"--config $TMP/bad.conf|$TMP/bad.conf:2"
		"--config $TMP/bad2.conf|$TMP/bad2.conf:1"
	)
	for i in "${cases[@]}"; do
		local args=${i%%|*} needle=${i#*|}
		local cfg=(--config /dev/null)
		case $args in --config*) cfg=() ;; esac
		# shellcheck disable=SC2086 # split the case's flags on purpose
		run_cli bad "${cfg[@]}" "${base[@]}" $args
		if [ "$STOP_RC" = 0 ] || [ "$STOP_RC" -ge 124 ]; then
			REASON="'mmlockd $args' exited $STOP_RC, expected a usage error"
			return 1
		fi
		if ! grep -qF -- "$needle" "$TMP/bad.err"; then
			REASON="'mmlockd $args': stderr does not name '$needle': $(head -c 200 "$TMP/bad.err")"
			return 1
		fi
		if [ -s "$TMP/bad.out" ]; then
			REASON="'mmlockd $args' wrote to stdout"
			return 1
		fi
		# A refusal must not wait for anything (a tracefs mount, a lock): bounded to catch
		# a hang, not to time it (3 s failed once at load 10, in 3.5 s).
		if [ "$STOP_MS" -gt 10000 ]; then
			REASON="'mmlockd $args' took ${STOP_MS} ms to fail"
			return 1
		fi
	done
	[ ! -e "$TMP/cli.db" ] || {
		REASON="a rejected command line still created the database"
		return 1
	}
}

# ---------------------------------------------------------------------------------------------
# 2-5. The main daemon: --interval 1

MAIN_T0=
WL1=
WL1_T0=

check_main_daemon_starts_and_serves_status() {
	need_root || return
	MAIN_T0=$(date +%s)
	start_daemon main --db "$TMP/main.db" --interval 1 --top 20 || return 1
	# A workload that lives ~12 s, so it is seen live (after the checks before that one, which
	# took more than 6 s at load 17 on two cores) and then in several stored windows.
	WL1_T0=$(date +%s.%N)
	"$PY" "$TMP/workload.py" 12 "$TMP/wl1.out" &
	WL1=$!
	CHILDREN+=("$WL1")
	http GET "${DPORT[main]}" /api/v1/status
	REASON=$(python3 - "$TMP/body" "$VERSION" "$KERNEL" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
version, kernel = sys.argv[2], sys.argv[3]
errs = []
if d.get("version") != version:
    errs.append("version %r, --version says %r" % (d.get("version"), version))
if d.get("kernel") != kernel:
    errs.append("kernel %r, uname -r says %r" % (d.get("kernel"), kernel))
if d.get("interval_seconds") != 1:
    errs.append("interval_seconds %r, expected 1" % d.get("interval_seconds"))
for k in ("started", "taken", "uptime_seconds", "window_start"):
    if not isinstance(d.get(k), (int, float)):
        errs.append("%s missing or not a number" % k)
coll = {c.get("name"): c for c in d.get("collectors", [])}
for name in ("mmaplock", "vmstat"):
    st = coll.get(name, {}).get("state")
    if st != "running":
        errs.append("collector %s is %r (%s), expected running"
                    % (name, st, coll.get(name, {}).get("reason")))
ev = {e.get("name"): e for e in d.get("events", [])}
# On the BPF source (--source auto where it loads) mmaplock and faults take these in the kernel;
# only contention may still sample the mmap_lock ones.
on_bpf = all(coll.get(n, {}).get("source") == "bpf" for n in ("mmaplock", "faults"))
for name in ("exceptions:page_fault_user", "mmap_lock:mmap_lock_start_locking",
             "mmap_lock:mmap_lock_acquire_returned", "mmap_lock:mmap_lock_released"):
    e = ev.get(name)
    if on_bpf and (e is None or name == "exceptions:page_fault_user"):
        if e is not None:
            errs.append("event %s on the perf rings with mmaplock and faults on BPF" % name)
        continue
    if e is None:
        errs.append("event %s not listed" % name)
    elif e.get("open") is not True:
        errs.append("event %s not open: %r" % (name, e.get("error")))
for name, e in ev.items():
    for k in ("samples", "lost", "window_samples", "window_lost"):
        if not isinstance(e.get(k), int):
            errs.append("event %s: %s missing" % (name, k))
if errs:
    sys.exit("; ".join(errs))
EOF
	) || return 1
}

check_route_index_is_html() {
	running main || return 1
	http GET "${DPORT[main]}" /
	[ "$HTTP_CODE" = 200 ] || {
		REASON="GET / gave $HTTP_CODE"
		return 1
	}
	case $(header Content-Type) in
	text/html*) ;;
	*)
		REASON="GET / Content-Type '$(header Content-Type)'"
		return 1
		;;
	esac
	grep -qi '<html' "$TMP/body" || {
		REASON="GET / body has no <html"
		return 1
	}
}

check_route_metrics_is_valid_prometheus() {
	local ct
	running main || return 1
	# Wait for a window to close, so the window-derived series have values.
	sleep 1
	http GET "${DPORT[main]}" /metrics
	[ "$HTTP_CODE" = 200 ] || {
		REASON="GET /metrics gave $HTTP_CODE"
		return 1
	}
	ct=$(header Content-Type)
	case $ct in
	"text/plain; version=0.0.4"*) ;;
	*)
		REASON="Content-Type '$ct', expected text/plain; version=0.0.4"
		return 1
		;;
	esac
	cp "$TMP/body" "$TMP/metrics.main"
	for m in mmlockd_page_faults_total mmlockd_process_page_faults_total \
		'mmlockd_collector_up{collector="mmaplock"' mmlockd_events_total; do
		grep -qF "$m" "$TMP/metrics.main" || {
			REASON="/metrics has no $m"
			return 1
		}
	done
	# Summed over its series (it may carry labels, e.g. outcome="...").
	awk '/^mmlockd_page_faults_total[ {]/ { s += $NF } END { exit !(s > 0) }' "$TMP/metrics.main" || {
		REASON="mmlockd_page_faults_total does not add up to a positive count: $(grep '^mmlockd_page_faults_total' "$TMP/metrics.main" | tr '\n' ' ')"
		return 1
	}
	grep -qE '^mmlockd_collector_up\{collector="mmaplock"[^}]*\} 1$' "$TMP/metrics.main" || {
		REASON="mmlockd_collector_up for mmaplock is not 1"
		return 1
	}
	if command -v promtool >/dev/null 2>&1; then
		local rc=0
		promtool check metrics <"$TMP/metrics.main" >"$TMP/promtool.out" 2>&1 || rc=$?
		if [ "$rc" != 0 ] || [ -s "$TMP/promtool.out" ]; then
			REASON="promtool check metrics (exit $rc): $(head -n 3 "$TMP/promtool.out" | tr '\n' ' ')"
			return 1
		fi
	fi
}

check_route_status_is_valid_json() {
	running main || return 1
	http GET "${DPORT[main]}" /api/v1/status
	[ "$HTTP_CODE" = 200 ] || {
		REASON="GET /api/v1/status gave $HTTP_CODE"
		return 1
	}
	case $(header Content-Type) in
	application/json*) ;;
	*)
		REASON="Content-Type '$(header Content-Type)'"
		return 1
		;;
	esac
	REASON=$(python3 -m json.tool "$TMP/body" 2>&1 >/dev/null) || return 1
}

check_route_processes_has_window_and_total_counters() {
	running main || return 1
	http GET "${DPORT[main]}" /api/v1/processes
	[ "$HTTP_CODE" = 200 ] || {
		REASON="GET /api/v1/processes gave $HTTP_CODE"
		return 1
	}
	REASON=$(python3 -m json.tool "$TMP/body" 2>&1 >/dev/null) || return 1
	REASON=$(python3 - "$TMP/body" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
keys = ("faults", "mmap_lock_read", "mmap_lock_write", "mmap_lock_wait_ns", "mmap_lock_contended")
procs = d.get("processes")
if not isinstance(procs, list) or not procs:
    sys.exit("no processes listed")
for p in procs + [dict(d.get("all", {}), pid=0, comm="<all>")]:
    for part in ("window", "total"):
        o = p.get(part)
        if not isinstance(o, dict):
            sys.exit("pid %r: no %s object" % (p.get("pid"), part))
        for k in keys:
            if not isinstance(o.get(k), int) or o[k] < 0:
                sys.exit("pid %r: %s.%s missing or negative: %r" % (p.get("pid"), part, k, o.get(k)))
    if not isinstance(p.get("pid"), int) or not isinstance(p.get("comm"), str):
        sys.exit("a process has no pid/comm: %r" % p)
if d["all"]["total"]["faults"] <= 0:
    sys.exit("all.total.faults is %r" % d["all"]["total"]["faults"])
EOF
	) || return 1
}

check_route_processes_shows_the_live_workload() {
	running main || return 1
	[ -n "$WL1" ] || {
		REASON="workload not started"
		return 1
	}
	# Snapshots are published once a second; the workload has been faulting since start-up. Up to
	# 20 s: on a loaded machine (parallel builds) the first snapshot with it can take seconds.
	local tries=100
	while [ "$tries" -gt 0 ]; do
		http GET "${DPORT[main]}" /api/v1/processes
		REASON=$(python3 - "$TMP/body" "$WL1" "$PY_COMM" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
pid, comm = int(sys.argv[2]), sys.argv[3]
p = [p for p in d["processes"] if p["pid"] == pid]
if not p:
    sys.exit("workload pid %d not listed" % pid)
p = p[0]
if p["comm"] != comm or p["total"]["faults"] < 4096:
    sys.exit("workload listed as comm %r with %d faults (expected %r, >= 4096)"
             % (p["comm"], p["total"]["faults"], comm))
EOF
		) && return 0
		sleep 0.2
		tries=$((tries - 1))
	done
	return 1
}

# HEAD over a raw socket (curl --head would not notice a body sent anyway): the GET status, a
# Content-Type, and not one byte after the headers.
check_head_requests_return_headers_only() {
	local len path
	running main || return 1
	http GET "${DPORT[main]}" /
	len=$(wc -c <"$TMP/body")
	for path in / /metrics /api/v1/status /api/v1/processes '/api/v1/history?since=60s' /nope; do
		REASON=$(python3 - "${DPORT[main]}" "$path" "$len" <<'EOF' 2>&1
import socket, sys
port, path, index_len = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(("HEAD %s HTTP/1.0\r\nHost: localhost\r\n\r\n" % path).encode())
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
head, sep, body = data.partition(b"\r\n\r\n")
lines = head.decode("latin-1").split("\r\n")
want = "404" if path == "/nope" else "200"
if not sep or len(lines[0].split()) < 2 or lines[0].split()[1] != want:
    sys.exit("HEAD %s: status line %r, expected %s" % (path, lines[0], want))
hdrs = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
if "content-type" not in hdrs:
    sys.exit("HEAD %s: no Content-Type" % path)
if body:
    sys.exit("HEAD %s: %d body bytes after the headers" % (path, len(body)))
if path == "/" and hdrs.get("content-length") != index_len:
    sys.exit("HEAD /: Content-Length %r, GET / sends %s bytes" % (hdrs.get("content-length"), index_len))
EOF
		) || return 1
	done
}

check_bad_method_is_405_json() {
	running main || return 1
	local m path
	for m in POST PUT DELETE; do
		for path in /metrics /api/v1/status; do
			http "$m" "${DPORT[main]}" "$path"
			[ "$HTTP_CODE" = 405 ] || {
				REASON="$m $path gave $HTTP_CODE, expected 405"
				return 1
			}
			is_json_error || {
				REASON="$m $path: $REASON"
				return 1
			}
			case $(header Allow) in
			*GET*) ;;
			*)
				REASON="$m $path: 405 without an Allow header naming GET"
				return 1
				;;
			esac
		done
	done
}

# GET @2 of the main daemon answers status @1 with a JSON error; 1 with REASON set if not.
expect_json_error() {
	http GET "${DPORT[main]}" "$2"
	[ "$HTTP_CODE" = "$1" ] || {
		REASON="GET $2 gave $HTTP_CODE, expected $1"
		return 1
	}
	is_json_error || {
		REASON="GET $2: $REASON"
		return 1
	}
}

check_unknown_path_is_404_json() {
	running main || return 1
	local path
	for path in /nope /api/v1 /api/v1/statusx /metrics/ /api/v2/status; do
		expect_json_error 404 "$path" || return 1
	done
}

check_history_bad_parameters_are_400_json() {
	running main || return 1
	local q
	for q in pid=abc pid=0 pid=-1 pid= since=garbage since=-5 since=5x since=1.5.5 \
		'since=10&until=5' 'since=now&until=60s' limit=0 limit=100001 limit=abc bogus=1 \
		'pid=1&pid=2' until=yesterday; do
		expect_json_error 400 "/api/v1/history?$q" || return 1
	done
}

# The page's own parameters (order and by of top, ended, the processes filter): a bad value is a
# 400 with a JSON reason, never ignored.
check_page_route_bad_parameters_are_400_json() {
	running main || return 1
	local q
	for q in 'top?order=size' 'top?order=' 'top?by=pid' 'series?ended=2' 'top?ended=yes' \
		'series?order=fallbacks' 'series?by=cgroup' 'processes?pid=abc' 'processes?pid=-1' \
		'processes?start_time=x' 'processes?bogus=1'; do
		expect_json_error 400 "/api/v1/$q" || return 1
	done
}

# One process's view asks for its pid: only that pid comes back, with the sums of all beside it.
check_route_processes_of_a_pid_lists_only_it() {
	running main || return 1
	http GET "${DPORT[main]}" /api/v1/processes
	local pid
	pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["processes"][0]["pid"])' \
		"$TMP/body" 2>/dev/null) || {
		REASON="no process listed"
		return 1
	}
	http GET "${DPORT[main]}" "/api/v1/processes?pid=$pid"
	[ "$HTTP_CODE" = 200 ] || {
		REASON="?pid=$pid gave $HTTP_CODE"
		return 1
	}
	REASON=$(python3 - "$TMP/body" "$pid" <<'PYEOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
pids = {p["pid"] for p in d["processes"]}
if pids != {int(sys.argv[2])}:
    sys.exit("pids %r for ?pid=%s" % (sorted(pids)[:5], sys.argv[2]))
if not isinstance(d.get("all", {}).get("window"), dict):
    sys.exit("no all.window")
PYEOF
	) || return 1
}

check_daemon_still_serves_after_bad_requests() {
	running main || return 1
	http GET "${DPORT[main]}" /api/v1/status
	[ "$HTTP_CODE" = 200 ] || {
		REASON="status gave $HTTP_CODE after the bad requests"
		return 1
	}
	REASON=$(python3 -m json.tool "$TMP/body" 2>&1 >/dev/null) || return 1
}

check_sqlite_windows_are_contiguous_one_second_windows() {
	running main || return 1
	local db=$TMP/main.db now n
	wait_until 5 test "$(sql "$db" 'SELECT count(*) FROM windows WHERE ts_end > ts_start' 2>/dev/null)" -ge 3
	now=$(date +%s)
	n=$(sql "$db" 'SELECT count(*) FROM windows WHERE ts_end > ts_start') || {
		REASON="cannot query windows"
		return 1
	}
	[ "$n" -ge 2 ] || {
		REASON="$n windows with ts_end > ts_start, expected >= 2"
		return 1
	}
	n=$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start < $MAIN_T0 - 2 OR ts_end > $now + 2
		OR ts_end < ts_start OR kernel != '$KERNEL'")
	[ "$n" = 0 ] || {
		REASON="$n windows with times outside [$MAIN_T0, $now] or a wrong kernel: $(sql "$db" 'SELECT * FROM windows LIMIT 3' | tr '\n' ' ')"
		return 1
	}
	# Each window starts where the previous one ended: no time is lost between windows.
	n=$(sql "$db" 'SELECT count(*) FROM windows a JOIN windows b ON b.id = (SELECT min(id) FROM windows WHERE id > a.id)
		WHERE abs(b.ts_start - a.ts_end) > 0.0005')
	[ "$n" = 0 ] || {
		REASON="$n gaps or overlaps between consecutive windows"
		return 1
	}
	# Every window but the first (which starts at start-up) starts and ends on whole seconds.
	# It lasts the interval, or a whole number of intervals when the loop ran late past a
	# boundary (clock.h: one window spans the gap; a loaded 2-core machine does that now and
	# then), so at least half of them last exactly one second.
	n=$(sql "$db" 'SELECT count(*) FROM windows WHERE id > (SELECT min(id) FROM windows)
		AND (ts_end - ts_start < 0.9995 OR ts_end != round(ts_end) OR ts_start != round(ts_start))')
	[ "$n" = 0 ] || {
		REASON="$n later windows are not [k, k+m) whole seconds: $(sql "$db" 'SELECT ts_start, ts_end FROM windows LIMIT 4' | tr '\n' ' ')"
		return 1
	}
	local one long
	one=$(sql "$db" 'SELECT count(*) FROM windows WHERE id > (SELECT min(id) FROM windows)
		AND abs(ts_end - ts_start - 1.0) <= 0.0005')
	long=$(sql "$db" 'SELECT count(*) FROM windows WHERE id > (SELECT min(id) FROM windows)
		AND ts_end - ts_start > 1.0005')
	[ "$one" -ge "$long" ] || {
		REASON="$one windows of 1 s, $long longer (the loop ran late more often than not)"
		return 1
	}
}

check_sqlite_process_stats_has_faults() {
	running main || return 1
	local db=$TMP/main.db n
	n=$(sql "$db" 'SELECT count(*) FROM process_stats WHERE faults > 0') || {
		REASON="cannot query process_stats"
		return 1
	}
	[ "$n" -gt 0 ] || {
		REASON="no process_stats row with faults > 0"
		return 1
	}
	n=$(sql "$db" "SELECT count(*) FROM process_stats WHERE pid <= 0 OR comm = '' OR ts_end < ts_start
		OR start_time > ts_end + 1")
	[ "$n" = 0 ] || {
		REASON="$n process_stats rows with a bad pid, comm or times"
		return 1
	}
}

check_workload_is_stored_with_pid_comm_and_its_faults() {
	running main || return 1
	local db=$TMP/main.db row rows comm faults starts start_time writes
	# The workload runs 12 s; then its last window must close and reach the database.
	reap "$WL1" 20
	{ [ "$STOP_RC" = 0 ] && [ -s "$TMP/wl1.out" ]; } || {
		REASON="the workload failed (status $STOP_RC)"
		return 1
	}
	local iters pages minflt wend
	read -r iters pages minflt wend <"$TMP/wl1.out"
	local q="SELECT count(*), group_concat(DISTINCT comm), sum(faults), count(DISTINCT start_time),
		min(start_time), sum(mmap_lock_write) FROM process_stats WHERE pid = $WL1"
	# Rows for the windows after the workload's exit arrive within ~2 s.
	local tries=50
	while [ "$tries" -gt 0 ]; do
		row=$(sql -separator ' ' "$TMP/main.db" "$q")
		read -r rows comm faults starts start_time writes <<<"$row"
		[ "${faults:-0}" -ge "$pages" ] 2>/dev/null && [ "$rows" -ge 2 ] && break
		sleep 0.1
		tries=$((tries - 1))
	done
	[ "$rows" -ge 2 ] || {
		REASON="workload pid $WL1 (12 s in 1 s windows) has $rows rows in process_stats, expected >= 2"
		return 1
	}
	[ "$comm" = "$PY_COMM" ] || {
		REASON="workload stored with comm '$comm', expected '$PY_COMM'"
		return 1
	}
	[ "$starts" = 1 ] || {
		REASON="workload stored under $starts different start times"
		return 1
	}
	# Every page it touched was a user-mode fault on a fresh mapping.
	[ "${faults:-0}" -ge "$pages" ] 2>/dev/null || {
		REASON="workload stored with $faults faults; it touched $pages fresh pages (rusage minflt $minflt)"
		return 1
	}
	# Each iteration maps and unmaps: at least one write acquisition per iteration.
	[ "${writes:-0}" -ge "$iters" ] 2>/dev/null || {
		REASON="workload stored with $writes mmap_lock writes for $iters mmap/munmap pairs"
		return 1
	}
	python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 2)' \
		"$start_time" "$WL1_T0" || {
		REASON="workload start_time $start_time, but it was started at $WL1_T0"
		return 1
	}
}

check_route_history_returns_stored_rows() {
	running main || return 1
	local cols
	cols=$(sql "$TMP/main.db" 'SELECT name FROM pragma_table_info("process_stats")' | tr '\n' ,)
	http GET "${DPORT[main]}" '/api/v1/history?since=60s'
	[ "$HTTP_CODE" = 200 ] || {
		REASON="GET /api/v1/history?since=60s gave $HTTP_CODE: $(head -c 200 "$TMP/body")"
		return 1
	}
	REASON=$(python3 -m json.tool "$TMP/body" 2>&1 >/dev/null) || return 1
	REASON=$(python3 - "$TMP/body" "$cols" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
cols = set(c for c in sys.argv[2].split(",") if c)
rows = d.get("rows")
if not isinstance(rows, list) or not rows:
    sys.exit("no rows after several windows: %r" % (d,))
if not isinstance(d.get("since"), (int, float)) or not isinstance(d.get("until"), (int, float)):
    sys.exit("since/until missing")
if abs(d["until"] - d["since"] - 60) > 0.01:
    sys.exit("since=60s gave [%r, %r]" % (d["since"], d["until"]))
for r in rows:
    if set(r) != cols:
        sys.exit("row keys %s differ from process_stats columns %s" % (sorted(r), sorted(cols)))
    if r["ts_end"] < d["since"]:
        sys.exit("row ending at %r before since %r" % (r["ts_end"], d["since"]))
EOF
	) || return 1
	http GET "${DPORT[main]}" "/api/v1/history?pid=$WL1&since=5m&until=now&limit=100000"
	[ "$HTTP_CODE" = 200 ] || {
		REASON="?pid=$WL1 gave $HTTP_CODE"
		return 1
	}
	REASON=$(python3 - "$TMP/body" "$WL1" <<'EOF' 2>&1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
pid = int(sys.argv[2])
if len(rows) < 2 or any(r["pid"] != pid for r in rows):
    sys.exit("?pid=%d gave pids %r" % (pid, sorted(set(r["pid"] for r in rows))))
EOF
	) || return 1
	http GET "${DPORT[main]}" '/api/v1/history?since=60s&limit=1'
	REASON=$(python3 -c '
import json, sys
n = len(json.load(open(sys.argv[1]))["rows"])
if n != 1:
    sys.exit("limit=1 gave %d rows" % n)' "$TMP/body" 2>&1) || return 1
}

# ---------------------------------------------------------------------------------------------
# 8a. Start-up failures

check_port_in_use_fails_fast_naming_the_address() {
	running main || return 1
	local addr=127.0.0.1:${DPORT[main]}
	run_cli dup --config /dev/null --db "$TMP/dup.db" --listen "$addr"
	cat "$TMP/dup.err" >>"$TMP/daemon-dup.log"
	if [ "$STOP_RC" = 0 ] || [ "$STOP_RC" -ge 124 ]; then
		REASON="a second daemon on $addr exited $STOP_RC"
		return 1
	fi
	[ "$STOP_MS" -le 5000 ] || {
		REASON="took $STOP_MS ms to give up"
		return 1
	}
	grep -F "$addr" "$TMP/dup.err" | grep -qi 'in use' || {
		REASON="stderr does not name $addr as in use: $(tail -n 2 "$TMP/dup.err" | tr '\n' ' ')"
		return 1
	}
	grep -F "$addr" "$TMP/dup.err" | grep -q '^<3>' || {
		REASON="the failure is not logged at error priority <3>"
		return 1
	}
	running main || return 1
	http GET "${DPORT[main]}" /api/v1/status
	[ "$HTTP_CODE" = 200 ] || {
		REASON="the first daemon stopped answering ($HTTP_CODE)"
		return 1
	}
}

check_unwritable_db_fails_naming_the_path() {
	local p port
	port=$(free_port)
	: >"$TMP/a-file"
	for p in /proc/mmlockd-test.db "$TMP/a-file/mmlockd.db" "$TMP"; do
		run_cli udb --config /dev/null --db "$p" --listen "127.0.0.1:$port"
		cat "$TMP/udb.err" >>"$TMP/daemon-udb.log"
		if [ "$STOP_RC" = 0 ] || [ "$STOP_RC" -ge 124 ]; then
			REASON="--db $p exited $STOP_RC"
			return 1
		fi
		grep -qF -- "$p" "$TMP/udb.err" || {
			REASON="--db $p: stderr does not name the path: $(tail -n 2 "$TMP/udb.err" | tr '\n' ' ')"
			return 1
		}
		# Nothing announced before it works: no "serving" line ahead of the fatal error.
		! grep -qi 'serving' "$TMP/udb.err" || {
			REASON="--db $p: announced serving before failing: $(grep -i serving "$TMP/udb.err")"
			return 1
		}
	done
	[ ! -e /proc/mmlockd-test.db ] || {
		REASON="/proc/mmlockd-test.db exists"
		return 1
	}
}

# A daemon that cannot close its windows on time (stopped for ~3 s, as a loaded machine delays
# it) closes several at once when it runs again, reading /proc (totals) and the BPF maps
# (mmaplock, where BPF loads) seconds after those windows' ends. Processes born meanwhile must
# count in windows that end after their start, never in one that ended before they existed,
# and none of their faults may be lost.
check_a_late_closing_tick_counts_no_process_before_its_birth() {
	local db=$TMP/lag.db i pids=() bad n
	need_root || return
	start_daemon lag --db "$db" --interval 1 --collectors totals,fallbacks,vmstat,mmaplock || return 1
	sleep 1.5
	kill -STOP "${DPID[lag]}"
	for i in 1 2 3 4 5 6; do
		"$PY" "$TMP/workload.py" 0.1 "$TMP/lag-wl$i.out" &
		pids+=("$!")
		[ "$i" = 4 ] && { "$PY" "$TMP/workload.py" 2 "$TMP/lag-long.out" & pids+=("$!"); }
		wait "${pids[-1]}" 2>/dev/null
		sleep 0.3
	done
	kill -CONT "${DPID[lag]}"
	wait "${pids[@]}" 2>/dev/null
	sleep 2.5
	kill -TERM "${DPID[lag]}"
	reap "${DPID[lag]}" 5
	[ "$STOP_RC" = 0 ] || {
		REASON="daemon exit status $STOP_RC after SIGTERM"
		return 1
	}
	bad=$(sql "$db" "SELECT count(*), group_concat(pid || ' ' || comm || ' born ' || start_time ||
		' in window ending ' || ts_end, '; ') FROM process_stats WHERE start_time > ts_end")
	[ "${bad%%|*}" = 0 ] || {
		REASON="${bad%%|*} rows count a process before its birth: ${bad#*|}"
		return 1
	}
	for i in "${!pids[@]}"; do
		n=$(sql "$db" "SELECT coalesce(sum(minflt), 0) FROM process_stats WHERE pid = ${pids[$i]}")
		[ "$n" -gt 4096 ] || {
			REASON="process ${pids[$i]}, born while the daemon was stopped: $n minflt stored"
			return 1
		}
	done
}

# ---------------------------------------------------------------------------------------------
# 6. Shutdown flush

# A daemon with one-hour windows; a workload runs to completion; signal @1 must make the daemon
# exit 0 within 5 s having stored the open window: the workload's faults as shown live just
# before the signal, and at least one fault per page it touched.
shutdown_flush() {
	local sig=$1 name=$2 db=$TMP/$2.db wl live t0 t1 n row rows faults comm
	need_root || return
	t0=$(date +%s)
	start_daemon "$name" --db "$db" --interval 3600 || return 1
	"$PY" "$TMP/workload.py" 1 "$TMP/$name-wl.out" &
	wl=$!
	CHILDREN+=("$wl")
	reap "$wl" 10
	[ "$STOP_RC" = 0 ] || {
		REASON="workload failed ($STOP_RC)"
		return 1
	}
	local iters pages minflt wend
	read -r iters pages minflt wend <"$TMP/$name-wl.out"
	# What the daemon shows for the (exited) workload: the same count in two different snapshots
	# taken at least 0.5 s after it ended (records reach the collectors within ~0.2 s; snapshots
	# are published once a second).
	local tries=40 taken prev_taken='' prev_live=''
	live=
	while [ "$tries" -gt 0 ]; do
		http GET "${DPORT[$name]}" /api/v1/processes
		read -r taken live < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["processes"] if p["pid"] == int(sys.argv[2])]
late = d["taken"] >= float(sys.argv[3]) + 0.5
print(d["taken"] if late else "early", p[0]["total"]["faults"] if p else "none")' \
			"$TMP/body" "$wl" "$wend" 2>/dev/null)
		if [ "${taken:-early}" != early ]; then
			[ "$taken" != "$prev_taken" ] && [ "$live" = "$prev_live" ] && break
			prev_taken=$taken
			prev_live=$live
		fi
		sleep 0.25
		tries=$((tries - 1))
	done
	case $live in
	'' | none)
		# What it listed instead, and what it logged: this failed once (2026-12-03, a fresh
		# clone's CI) and never where it could be looked at.
		REASON="the daemon did not list the exited workload (pid $wl, ended at $wend) in /api/v1/processes: $(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("snapshot taken %s, %d processes listed (pids %s); " % (d.get("taken"), len(d["processes"]),
      " ".join(str(p["pid"]) for p in d["processes"][:12])))' "$TMP/body" 2>&1) log: $(tail -n 3 "$TMP/daemon-$name.log" | tr '\n' ' ')"
		return 1
		;;
	esac
	n=$(sql "$db" 'SELECT count(*) FROM windows')
	[ "$n" = 0 ] || [ "$(($(date +%s) / 3600))" != "$((t0 / 3600))" ] || {
		REASON="$n windows stored before the signal with --interval 3600"
		return 1
	}
	kill "-$sig" "${DPID[$name]}"
	reap "${DPID[$name]}" 5
	[ "$STOP_RC" = 0 ] || {
		REASON="SIG$sig: exit status $STOP_RC after $STOP_MS ms (124: still running after 5 s)"
		return 1
	}
	t1=$(date +%s)
	n=$(sql "$db" 'SELECT count(*) FROM windows')
	# One window, or two if the run straddled a whole hour (windows end on multiples of it).
	if [ "$((t0 / 3600))" = "$((t1 / 3600))" ]; then
		[ "$n" = 1 ] || {
			REASON="$n windows stored, expected exactly 1"
			return 1
		}
	else
		{ [ "$n" -ge 1 ] && [ "$n" -le 2 ]; } || {
			REASON="$n windows stored across an hour boundary, expected 1 or 2"
			return 1
		}
	fi
	row=$(sql -separator ' ' "$db" "SELECT count(*), sum(faults), group_concat(DISTINCT comm)
		FROM process_stats WHERE pid = $wl")
	read -r rows faults comm <<<"$row"
	{ [ "$rows" -ge 1 ] && [ "${faults:-0}" -gt 0 ]; } 2>/dev/null || {
		REASON="workload pid $wl: $rows rows, faults '$faults' after SIG$sig"
		return 1
	}
	[ "$faults" = "$live" ] || {
		REASON="stored $faults faults for pid $wl, the daemon showed $live before SIG$sig"
		return 1
	}
	[ "$faults" -ge "$pages" ] || {
		REASON="stored $faults faults for pid $wl, which touched $pages fresh pages"
		return 1
	}
	[ "$comm" = "$PY_COMM" ] || {
		REASON="workload stored as '$comm', expected '$PY_COMM'"
		return 1
	}
	grep -q '^<6>stopped' "$TMP/daemon-$name.log" || {
		REASON="no 'stopped' line in the log"
		return 1
	}
}

check_sigterm_flushes_the_open_window() { shutdown_flush TERM term; }
check_sigint_flushes_the_open_window() { shutdown_flush INT int; }

# ---------------------------------------------------------------------------------------------
# 7. SIGHUP reload

check_sighup_reloads_top_and_interval() {
	local conf=$TMP/hup.conf db=$TMP/hup.db i n t_reload t_applied
	need_root || return
	printf '# test\ninterval = 1\ntop = 20\nlog_level = info\n' >"$conf"
	start_daemon hup --config "$conf" --db "$db" || return 1
	# Five busy processes, so more than 3 have their own series.
	for i in 1 2 3 4 5; do
		"$PY" "$TMP/workload.py" 15 /dev/null &
		CHILDREN+=("$!")
	done
	n=0
	for i in $(seq 30); do
		http GET "${DPORT[hup]}" /metrics
		n=$(metric_pids "$TMP/body")
		[ "$n" -gt 3 ] && break
		sleep 0.2
	done
	[ "$n" -gt 3 ] || {
		REASON="precondition: only $n pids in mmlockd_process_page_faults_accounted_total before the reload"
		return 1
	}
	printf '# test\ninterval = 2s\ntop = 3\n' >"$conf"
	t_reload=$(date +%s.%N)
	kill -HUP "${DPID[hup]}"
	wait_until 5 grep -q '^<6>reloaded configuration: interval 2s, top 3' "$TMP/daemon-hup.log" || {
		REASON="no '<6>reloaded configuration: interval 2s, top 3' line: $(tail -n 2 "$TMP/daemon-hup.log" | tr '\n' ' ')"
		return 1
	}
	# Applied by now. Not t_reload: windows follow the daemon's clock (monotonic time plus the
	# wall offset it read at start), not date's, and a window it began before it read the signal
	# ends on the old grid (1 s from an odd second, cut at the next even one); a few ms between
	# the two clocks let such a window start after t_reload. Later windows start after this.
	t_applied=$(date +%s.%N)
	running hup || return 1
	http GET "${DPORT[hup]}" /metrics
	n=$(metric_pids "$TMP/body")
	{ [ "$HTTP_CODE" = 200 ] && [ "$n" -ge 1 ] && [ "$n" -le 3 ]; } || {
		REASON="after top = 3: $n pids in mmlockd_process_page_faults_accounted_total (HTTP $HTTP_CODE)"
		return 1
	}
	# The windows that start after the reload last 2 s and end on even seconds.
	HUP_T_RELOAD=$t_applied
	wait_until 8 test "$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= $t_applied")" -ge 2
	n=$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= $t_applied")
	[ "$n" -ge 2 ] || {
		REASON="only $n windows stored in the 8 s after the reload"
		return 1
	}
	n=$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= $t_applied
		AND (abs(ts_end - ts_start - 2.0) > 0.0005 OR CAST(ts_end AS INTEGER) % 2 != 0)")
	[ "$n" = 0 ] || {
		REASON="after interval = 2s (signal at $t_reload, applied by $t_applied), windows are $(sql "$db" "SELECT ts_start || '-' || ts_end FROM windows WHERE ts_start >= $t_reload" | tr '\n' ' ')"
		return 1
	}
	# Not counted (no header promises it), but worth seeing: /api/v1/status after the reload.
	http GET "${DPORT[hup]}" /api/v1/status
	grep -q '"interval_seconds":2,' "$TMP/body" ||
		echo "# note: after reloading interval = 2s, /api/v1/status still says $(grep -o '"interval_seconds":[0-9]*' "$TMP/body")"
}

HUP_T_RELOAD=

check_sighup_with_broken_config_keeps_the_old_one() {
	local conf=$TMP/hup.conf db=$TMP/hup.db n t_bad
	running hup || return 1
	# Valid lines before the bad one must not be applied either: top 50 would give > 3 pids,
	# interval 5 windows of 5 s.
	printf 'top = 50\ninterval = 5\nthis is not a setting\n' >"$conf"
	t_bad=$(date +%s.%N)
	kill -HUP "${DPID[hup]}"
	wait_until 5 grep -qF "$conf:3" "$TMP/daemon-hup.log" || {
		REASON="the broken file was not logged with its name and line: $(tail -n 2 "$TMP/daemon-hup.log" | tr '\n' ' ')"
		return 1
	}
	grep -F "$conf:3" "$TMP/daemon-hup.log" | grep -q '^<[0-3]>' || {
		REASON="the reload failure is not logged at error priority"
		return 1
	}
	# A configuration file that disappeared is refused the same way.
	rm -f "$conf"
	kill -HUP "${DPID[hup]}"
	wait_until 5 grep -qF "reload: cannot open $conf" "$TMP/daemon-hup.log"
	grep -F "reload: cannot open $conf" "$TMP/daemon-hup.log" | grep -q '^<[0-3]>' || {
		REASON="reloading a missing file was not logged as an error naming it"
		return 1
	}
	sleep 0.3
	running hup || return 1
	http GET "${DPORT[hup]}" /metrics
	n=$(metric_pids "$TMP/body")
	{ [ "$HTTP_CODE" = 200 ] && [ "$n" -ge 1 ] && [ "$n" -le 3 ]; } || {
		REASON="after broken reloads: $n pids in /metrics (HTTP $HTTP_CODE), the old top = 3 should hold"
		return 1
	}
	wait_until 6 test "$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= $t_bad")" -ge 2
	n=$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= ${HUP_T_RELOAD:-$t_bad}
		AND abs(ts_end - ts_start - 2.0) > 0.0005")
	{ [ "$n" = 0 ] && [ "$(sql "$db" "SELECT count(*) FROM windows WHERE ts_start >= $t_bad")" -ge 2 ]; } || {
		REASON="after broken reloads, windows are $(sql "$db" "SELECT ts_start || '-' || ts_end FROM windows WHERE ts_start >= $t_bad" | tr '\n' ' '), expected the old 2 s"
		return 1
	}
	kill -TERM "${DPID[hup]}"
	reap "${DPID[hup]}" 5
	[ "$STOP_RC" = 0 ] || {
		REASON="SIGTERM after the reloads: exit status $STOP_RC"
		return 1
	}
}

# ---------------------------------------------------------------------------------------------
# 8b. Without privileges

# Sets NOBODY_MMLOCKD (and NOBODY_ENV) to an mmlockd that uid 65534 can run. A clone under a
# directory only root can traverse (/root, mode 0700) keeps the build out of nobody's reach: the
# binary, and the real one behind the sanitized wrapper (MMLOCKD_REAL), are then copied into $TMP
# (mode 0755) first.
nobody_mmlockd() {
	NOBODY_MMLOCKD=$MMLOCKD
	NOBODY_ENV=
	if [ -n "${MMLOCKD_REAL:-}" ]; then
		NOBODY_ENV="MMLOCKD_REAL=$MMLOCKD_REAL"
	fi
	if setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$MMLOCKD" &&
		{ [ -z "${MMLOCKD_REAL:-}" ] ||
			setpriv --reuid=65534 --regid=65534 --clear-groups -- test -x "$MMLOCKD_REAL"; }; then
		return 0
	fi
	mkdir -p "$TMP/bin" && chmod 755 "$TMP/bin" || return 1
	cp "$MMLOCKD" "$TMP/bin/" || return 1
	NOBODY_MMLOCKD=$TMP/bin/$(basename "$MMLOCKD")
	if [ -n "${MMLOCKD_REAL:-}" ]; then
		cp "$MMLOCKD_REAL" "$TMP/bin/mmlockd-real" || return 1
		NOBODY_ENV="MMLOCKD_REAL=$TMP/bin/mmlockd-real"
	fi
	chmod 755 "$TMP/bin"/*
}

check_unprivileged_daemon_refuses_tracepoints_and_serves_what_it_can() {
	need_root || return
	command -v setpriv >/dev/null 2>&1 || {
		REASON="setpriv not installed"
		return 77
	}
	mkdir -p "$TMP/nobody"
	chown 65534:65534 "$TMP/nobody"
	nobody_mmlockd || {
		REASON="cannot copy $MMLOCKD where nobody can run it"
		return 1
	}
	local as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups -- env $NOBODY_ENV"
	# Collectors on kernel events: one line that says they need root and what any user can
	# run instead, exit 1, no database made.
	# shellcheck disable=SC2086 # as_nobody is a word list on purpose
	timeout -k 2 10 $as_nobody "$NOBODY_MMLOCKD" --config /dev/null --collectors all \
		--db "$TMP/nobody/refused.db" --listen "127.0.0.1:$(free_port)" \
		>/dev/null 2>"$TMP/refused.err" </dev/null
	STOP_RC=$?
	cat "$TMP/refused.err" >>"$TMP/daemon-refused.log"
	if [ "$STOP_RC" != 1 ] || [ "$(grep -c . "$TMP/refused.err")" != 1 ] ||
		! grep -q 'need root' "$TMP/refused.err" || [ -e "$TMP/nobody/refused.db" ]; then
		REASON="nobody with --collectors all: exit $STOP_RC, $(tr '\n' ' ' <"$TMP/refused.err" | head -c 300)"
		return 1
	fi
	# What needs no tracepoint: it serves, vmstat runs, history is kept.
	# shellcheck disable=SC2097,SC2098 # MMLOCKD is start_daemon's, for this call only
	MMLOCKD=$NOBODY_MMLOCKD RUN_AS="$as_nobody" start_daemon nobody --config /dev/null \
		--collectors totals,vmstat --split-duty 0 --db "$TMP/nobody/mmlockd.db" --interval 1 ||
		return 1
	[ "$(stat -c %u "/proc/${DPID[nobody]}")" = 65534 ] || {
		REASON="the daemon does not run as uid 65534"
		return 1
	}
	http GET "${DPORT[nobody]}" /api/v1/status
	REASON=$(python3 - "$TMP/body" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
coll = {c["name"]: c for c in d["collectors"]}
v = coll.get("vmstat")
if not v or v["state"] != "running":
    sys.exit("vmstat is %r, expected running" % (v,))
if any(e["open"] for e in d["events"]):
    sys.exit("events open without privileges: %r" % [e["name"] for e in d["events"] if e["open"]])
EOF
	) || return 1
	http GET "${DPORT[nobody]}" /metrics
	grep -qE '^mmlockd_collector_up\{collector="vmstat"[^}]*\} 1$' "$TMP/body" || {
		REASON="/metrics: vmstat's mmlockd_collector_up is not 1"
		return 1
	}
	# History keeps working: windows are stored, and SIGTERM still stops it cleanly.
	wait_until 4 test "$(sql "$TMP/nobody/mmlockd.db" 'SELECT count(*) FROM windows' 2>/dev/null)" -ge 1
	kill -TERM "${DPID[nobody]}"
	reap "${DPID[nobody]}" 5
	[ "$STOP_RC" = 0 ] || {
		REASON="SIGTERM: exit status $STOP_RC"
		return 1
	}
	n=$(sql "$TMP/nobody/mmlockd.db" 'SELECT count(*) FROM windows')
	[ "$n" -ge 2 ] || {
		REASON="only $n windows stored by the unprivileged daemon"
		return 1
	}
}

check_unprivileged_unwritable_db_fails_naming_the_path() {
	need_root || return
	command -v setpriv >/dev/null 2>&1 || {
		REASON="setpriv not installed"
		return 77
	}
	local port p=$TMP/rootonly/mmlockd.db
	mkdir -p "$TMP/rootonly"
	chmod 755 "$TMP/rootonly"
	port=$(free_port)
	local t0
	t0=$(now_ms)
	nobody_mmlockd || {
		REASON="cannot copy $MMLOCKD where nobody can run it"
		return 1
	}
	# shellcheck disable=SC2086 # NOBODY_ENV: no words, or one assignment
	timeout -k 2 10 setpriv --reuid=65534 --regid=65534 --clear-groups -- env $NOBODY_ENV \
		"$NOBODY_MMLOCKD" --config /dev/null --collectors totals,vmstat --split-duty 0 \
		--db "$p" --listen "127.0.0.1:$port" \
		>"$TMP/ro.out" 2>"$TMP/ro.err" </dev/null
	STOP_RC=$?
	cat "$TMP/ro.err" >>"$TMP/daemon-ro.log"
	if [ "$STOP_RC" = 0 ] || [ "$STOP_RC" -ge 124 ]; then
		REASON="nobody with --db in a root-owned directory: exit $STOP_RC"
		return 1
	fi
	grep -F -- "$p" "$TMP/ro.err" | grep -qi 'permission\|denied\|read-only\|readonly' || {
		REASON="stderr does not name $p with a permission problem: $(tail -n 2 "$TMP/ro.err" | tr '\n' ' ')"
		return 1
	}
}

# ---------------------------------------------------------------------------------------------
# 9. Logs

check_every_log_line_has_a_priority_prefix() {
	local f bad total=0
	for f in "$TMP"/daemon-*.log; do
		[ -e "$f" ] || continue
		total=$((total + $(wc -l <"$f")))
		bad=$(grep -nvE '^<[0-7]>' "$f" | head -n 1)
		[ -z "$bad" ] || {
			REASON="$(basename "$f"): line without a <N> prefix: $bad"
			return 1
		}
	done
	[ "$total" -gt 0 ] || {
		REASON="no daemon logged anything"
		return 1
	}
	grep -qh '^<6>mmlockd .*collecting' "$TMP"/daemon-*.log || {
		REASON="no '<6>mmlockd VERSION: collecting' start-up line"
		return 1
	}
}

# ---------------------------------------------------------------------------------------------

T_START=$(now_ms)

run_check check_help_exits_0_and_lists_every_route_and_option
run_check check_version_prints_version
run_check check_bad_flags_exit_nonzero_naming_the_problem

run_check check_main_daemon_starts_and_serves_status
run_check check_route_index_is_html
run_check check_route_metrics_is_valid_prometheus
run_check check_route_status_is_valid_json
run_check check_route_processes_has_window_and_total_counters
run_check check_route_processes_shows_the_live_workload
run_check check_head_requests_return_headers_only
run_check check_bad_method_is_405_json
run_check check_unknown_path_is_404_json
run_check check_history_bad_parameters_are_400_json
run_check check_page_route_bad_parameters_are_400_json
run_check check_route_processes_of_a_pid_lists_only_it
run_check check_daemon_still_serves_after_bad_requests
run_check check_workload_is_stored_with_pid_comm_and_its_faults
run_check check_sqlite_windows_are_contiguous_one_second_windows
run_check check_sqlite_process_stats_has_faults
run_check check_a_late_closing_tick_counts_no_process_before_its_birth
run_check check_route_history_returns_stored_rows
run_check check_port_in_use_fails_fast_naming_the_address
run_check check_unwritable_db_fails_naming_the_path

run_check check_sigterm_flushes_the_open_window
run_check check_sigint_flushes_the_open_window

run_check check_sighup_reloads_top_and_interval
run_check check_sighup_with_broken_config_keeps_the_old_one

run_check check_unprivileged_daemon_refuses_tracepoints_and_serves_what_it_can
run_check check_unprivileged_unwritable_db_fails_naming_the_path

run_check check_every_log_line_has_a_priority_prefix

if [ "$FAILED" -gt 0 ]; then
	for f in "$TMP"/daemon-*.log; do
		[ -s "$f" ] || continue
		echo "--- $(basename "$f") (last 15 lines) ---"
		tail -n 15 "$f"
	done
fi
echo "# $(($(now_ms) - T_START)) ms"
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
