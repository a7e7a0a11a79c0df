#!/bin/bash
# test_cli.sh: what mmlockd tells an operator who types it wrong or lacks a right, and what a
# SIGHUP does with a changed configuration, against the real binary. Every message must be one
# line that says what to do:
#   1. a command after daemon options (`mmlockd --interval 2 report`) says that the command comes
#      first, with its own options; exit 2;
#   2. an unknown option points to --help once; exit 2;
#   3. `report` on a database that does not exist names the path, the daemon and --db;
#   4. SIGHUP after an edit of the configuration file applies interval and logs one line for each
#      changed setting it cannot apply (source, btf, fault_latency, split_duty);
#   5. (root, run as nobody with setpriv) the daemon whose collectors need tracefs stops with one
#      "need root" line and exit status 1, and starts with the collectors that line names,
#      logging no error and at most one warning then;
#   6. (root, as nobody) `report` reads root's stopped database in a directory it cannot write,
#      and creates nothing beside it; a file it cannot read, or one in a directory it cannot
#      search (the unit's /var/lib/mmlockd is 0700), is one line that says run as root;
#      a running daemon's database whose -wal/-shm are root's is one line that says the same;
#   7. (root) `report` on a copy of a database leaves no -wal or -shm beside the copy.
# The daemons run --collectors vmstat --split-duty 0 (no tracepoints) on a free port from the
# kernel and a temporary directory. Usage: test_cli.sh PATH/TO/mmlockd.
set -u -o pipefail
MMLOCKD=$(realpath "${1:?usage: test_cli.sh PATH/TO/mmlockd}")
PASSED=0 FAILED=0 TEST_NAME=test_cli
TMP=$(mktemp -d /tmp/mmlockd-cli.XXXXXX)
DPID=
cleanup() {
	[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh" # pass, fail, summary_and_exit
chmod 0755 "$TMP"
QUIET=(--listen 127.0.0.1:0 --collectors vmstat --split-duty 0)

# one_line NAME WANT_RC FILE TEXT...: the command exited WANT_RC ($RC) and FILE is one line
# holding every TEXT.
one_line() {
	local name=$1 want=$2 file=$3 t
	shift 3
	if [ "$RC" != "$want" ] || [ "$(wc -l <"$file")" != 1 ]; then
		fail "$name: exit $RC (want $want), $(wc -l <"$file") lines: $(head -c 400 "$file")"
		return
	fi
	for t in "$@"; do
		grep -qF -- "$t" "$file" || {
			fail "$name: no '$t' in: $(head -c 400 "$file")"
			return
		}
	done
	pass "$name: $(cat "$file")"
}

# start NAME FLAGS...: the daemon in the background (its log $TMP/NAME.err, pid DPID), as
# ${RUNAS[@]} runs it (setpriv: same pid), until it logs "collecting"; returns 1 if it exits first.
RUNAS=()
start() {
	local name=$1
	shift
	"${RUNAS[@]}" "$MMLOCKD" "$@" 2>"$TMP/$name.err" >/dev/null &
	DPID=$!
	for _ in $(seq 100); do
		grep -q 'collecting' "$TMP/$name.err" && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop() {
	kill -TERM "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=
}

"$MMLOCKD" --interval 2 report >"$TMP/after.out" 2>&1
RC=$?
one_line "command after daemon options" 2 "$TMP/after.out" "'report' is a command" \
	"mmlockd report --help" "'--interval' go without a command"

"$MMLOCKD" --bogus >"$TMP/bogus.out" 2>&1
RC=$?
one_line "unknown option" 2 "$TMP/bogus.out" "'--bogus'" "--help"
[ "$(grep -o -- '--help' "$TMP/bogus.out" | wc -l)" = 1 ] && pass "unknown option: --help named once" ||
	fail "unknown option: --help named $(grep -o -- '--help' "$TMP/bogus.out" | wc -l) times"

"$MMLOCKD" report --db "$TMP/none/mmlockd.db" >"$TMP/missing.out" 2>&1
RC=$?
one_line "report on a missing database" 1 "$TMP/missing.out" "$TMP/none/mmlockd.db does not exist" \
	"is it running" "--db PATH"

# 4. SIGHUP with an edited configuration file.
printf 'interval = 1\ncollectors = vmstat\nsplit_duty = 0\n' >"$TMP/hup.conf"
if start hup --listen 127.0.0.1:0 --config "$TMP/hup.conf" --db "$TMP/hup.db"; then
	printf 'interval = 3\ncollectors = vmstat\nsplit_duty = 5%%\nsource = perf\nbtf = /nonexistent\nfault_latency = on\n' >"$TMP/hup.conf"
	kill -HUP "$DPID"
	for _ in $(seq 50); do
		grep -q 'reloaded configuration' "$TMP/hup.err" && break
		sleep 0.1
	done
	stop
	grep 'reload' "$TMP/hup.err" >"$TMP/hup.lines"
	missing=""
	for k in source split_duty fault_latency btf; do
		[ "$(grep -c "reload: $k changed in $TMP/hup.conf; it takes effect at restart" "$TMP/hup.lines")" = 1 ] ||
			missing="$missing $k"
	done
	if [ -z "$missing" ] && grep -q 'reloaded configuration: interval 3s' "$TMP/hup.lines" &&
		[ "$(grep -c 'reload:' "$TMP/hup.lines")" = 4 ]; then
		pass "SIGHUP applies interval 3s and names each of the 4 settings it cannot apply, one line each"
	else
		fail "SIGHUP: lines for$missing missing, or not 4 of them, or interval not applied: $(tr '\n' ' ' <"$TMP/hup.lines" | head -c 600)"
	fi
else
	fail "SIGHUP: the daemon did not start: $(head -c 400 "$TMP/hup.err")"
fi

if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: the checks as nobody and of root's files need root and a user nobody"
	summary_and_exit
fi
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# 5. The daemon as nobody: tracefs is root's (skipped where nobody can read it).
if "${NOBODY[@]}" test -r /sys/kernel/tracing/events; then
	echo "SKIP: nobody can read tracefs here: the daemon would run"
else
	mkdir "$TMP/nobody" && chown nobody "$TMP/nobody"
	"${NOBODY[@]}" "$MMLOCKD" --listen 127.0.0.1:0 --db "$TMP/nobody/m.db" >"$TMP/noroot.out" 2>&1
	RC=$?
	one_line "daemon as nobody" 1 "$TMP/noroot.out" "need root" "run mmlockd as root" "--collectors"
	[ ! -e "$TMP/nobody/m.db" ] && pass "daemon as nobody: no database created" ||
		fail "daemon as nobody: created $TMP/nobody/m.db before refusing"
	# The alternative the line names runs.
	alt=$(sed -n 's/.*or \(--collectors [^ ]*\( --[a-z-]* 0\)\?\) for .*/\1/p' "$TMP/noroot.out")
	read -ra alt_args <<<"$alt"
	if [ -z "$alt" ]; then
		fail "daemon as nobody: the line names no --collectors to run instead"
	elif RUNAS=("${NOBODY[@]}") && start alt --listen 127.0.0.1:0 --db "$TMP/nobody/m.db" \
		"${alt_args[@]}"; then
		stop
		# What it cannot do is said once: no error, one warning (no task records).
		if [ "$(grep -c '^<3>' "$TMP/alt.err")" = 0 ] && [ "$(grep -c '^<4>' "$TMP/alt.err")" -le 1 ]; then
			pass "daemon as nobody with '$alt' collects, with no error and at most one warning"
		else
			fail "daemon as nobody with '$alt' logs: $(grep '^<[34]>' "$TMP/alt.err" | tr '\n' ' ' | head -c 500)"
		fi
	else
		fail "daemon as nobody with '$alt': $(tr '\n' ' ' <"$TMP/alt.err" | head -c 400)"
		stop
	fi
	RUNAS=()
fi

# 6. root's database as nobody: a stopped one in root's directory (readable file).
mkdir "$TMP/root" && chmod 0755 "$TMP/root"
start fill "${QUIET[@]}" --interval 1 --db "$TMP/root/m.db" && sleep 1.5
stop
chmod 0644 "$TMP/root/m.db"
"${NOBODY[@]}" "$MMLOCKD" report --db "$TMP/root/m.db" >"$TMP/ro.out" 2>"$TMP/ro.err"
RC=$?
if [ "$RC" -le 1 ] && [ ! -s "$TMP/ro.err" ] || grep -q 'no process stored' "$TMP/ro.err"; then
	pass "report as nobody reads root's stopped database ($(head -n 1 "$TMP/ro.out" | head -c 80))"
else
	fail "report as nobody on root's database: exit $RC: $(head -c 400 "$TMP/ro.err")"
fi
left=$(cd "$TMP/root" && ls)
[ "$left" = m.db ] && pass "report as nobody creates nothing beside root's database" ||
	fail "report as nobody left: $left"
chmod 0600 "$TMP/root/m.db"
"${NOBODY[@]}" "$MMLOCKD" report --db "$TMP/root/m.db" >"$TMP/unreadable.out" 2>&1
RC=$?
one_line "report as nobody, database 0600" 1 "$TMP/unreadable.out" "cannot read it" "run this as root"
chmod 0644 "$TMP/root/m.db" && chmod 0700 "$TMP/root"
"${NOBODY[@]}" "$MMLOCKD" report --db "$TMP/root/m.db" >"$TMP/private-dir.out" 2>&1
RC=$?
one_line "report as nobody, directory 0700 (the unit's StateDirectoryMode)" 1 "$TMP/private-dir.out" \
	"cannot read it" "run this as root"
chmod 0755 "$TMP/root"

# A running daemon's database, its -wal and -shm root's (the unit's UMask=0077).
if start live "${QUIET[@]}" --interval 1 --db "$TMP/root/m.db"; then
	sleep 1.5
	chmod 0644 "$TMP/root/m.db"
	chmod 0600 "$TMP/root/m.db-wal" "$TMP/root/m.db-shm"
	"${NOBODY[@]}" "$MMLOCKD" report --db "$TMP/root/m.db" >"$TMP/live.out" 2>&1
	RC=$?
	one_line "report as nobody, daemon running" 1 "$TMP/live.out" "daemon is writing it" "run this as root"
	grep -q 'cannot create' "$TMP/live.out" && fail "report as nobody, daemon running: blames creating files that exist"
	stop
else
	fail "the daemon did not start on $TMP/root/m.db: $(head -c 300 "$TMP/live.err")"
fi

# 7. A copy of the database, owned by nobody, reported on by root.
mkdir "$TMP/copy" && cp "$TMP/root/m.db" "$TMP/copy/" && chown -R nobody "$TMP/copy"
"$MMLOCKD" report --db "$TMP/copy/m.db" >/dev/null 2>"$TMP/copy.err"
left=$(cd "$TMP/copy" && ls)
[ "$left" = m.db ] && pass "report on a copy leaves nothing beside it" ||
	fail "report on a copy left: $left ($(head -c 200 "$TMP/copy.err"))"
summary_and_exit
