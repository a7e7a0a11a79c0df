#!/bin/bash
# test_bad_inputs.sh: mmlockd's messages for a careless operator's files (issue 15, item 7), run
# against the real binary, one daemon start per check (--collectors vmstat: no tracepoints, so it
# runs unprivileged too; a free port from the kernel; a database in a temporary directory).
#   1. `collectors = bogus` in a configuration file names FILE:LINE and the known collectors;
#   2. a key given twice names both lines;
#   3. a UTF-8 byte-order mark (and CRLF) is accepted: the daemon starts with the file's interval;
#   4. binary junk in the file is quoted escaped: one line of printable text on stderr;
#   5. another application's SQLite file is refused, and left as it was (no table added, still
#      in its journal mode); a file with another application_id is refused naming it;
#   6. an earlier mmlockd's database (application_id 0) is adopted, stamped and keeps its rows;
#   7. (root, and a file system with chattr +i) an existing database in an immutable directory
#      reports "Operation not permitted", not "No such file or directory";
#   8. (root) an existing database on a read-only file system reports "Read-only file system".
# Usage: test_bad_inputs.sh PATH/TO/mmlockd. Exit status 0, 1 when a check failed.

set -u -o pipefail
MMLOCKD=${1:-}
[ -x "$MMLOCKD" ] || {
	echo "usage: $0 PATH/TO/mmlockd" >&2
	exit 2
}
PASSED=0
FAILED=0
TMP=$(mktemp -d /tmp/mmlockd-bad.XXXXXX)
MNT=
IMMUTABLE=
cleanup() {
	[ -n "$IMMUTABLE" ] && chattr -i "$IMMUTABLE" 2>/dev/null
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh" # pass, fail
sql() { sqlite3 -batch "$@"; }

# run_daemon NAME [FLAG...]: runs mmlockd with the flags until it exits or logs that it collects
# (then SIGTERM); stderr in $TMP/NAME.err, exit status in RC (0 after a clean SIGTERM).
run_daemon() {
	local name=$1 pid
	shift
	"$MMLOCKD" --listen 127.0.0.1:0 --collectors vmstat "$@" 2>"$TMP/$name.err" &
	pid=$!
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		grep -q 'collecting' "$TMP/$name.err" && kill -TERM "$pid" && break
		sleep 0.1
	done
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid"
	RC=$?
}

# expect_error NAME TEXT...: the run failed and its stderr holds every TEXT.
expect_error() {
	local name=$1 t
	shift
	[ "$RC" != 0 ] || {
		fail "$name: exited 0, expected an error"
		return
	}
	for t in "$@"; do
		grep -qF -- "$t" "$TMP/$name.err" || {
			fail "$name: no '$t' in: $(tr '\n' ' ' <"$TMP/$name.err" | head -c 400)"
			return
		}
	done
	pass "$name: $(grep -m1 '^<3>' "$TMP/$name.err")"
}

printf 'interval = 5\ncollectors = bogus\n' >"$TMP/bogus.conf"
run_daemon bogus --config "$TMP/bogus.conf" --db "$TMP/a.db"
expect_error bogus "$TMP/bogus.conf:2:" "unknown collector 'bogus'" "totals"

printf 'interval = 5\ntop = 3\ninterval = 10\n' >"$TMP/dup.conf"
run_daemon duplicate --config "$TMP/dup.conf" --db "$TMP/a.db"
expect_error duplicate "$TMP/dup.conf:3: duplicate key 'interval' (first set on line 1)"

printf '\xef\xbb\xbfinterval = 7\r\ncollectors = vmstat\r\n' >"$TMP/bom.conf"
run_daemon bom --config "$TMP/bom.conf" --db "$TMP/bom.db"
if [ "$RC" = 0 ] && grep -q '7-second windows' "$TMP/bom.err"; then
	pass "bom: a file with a UTF-8 BOM and CRLF lines is read (7-second windows)"
else
	fail "bom: exit $RC: $(tr '\n' ' ' <"$TMP/bom.err" | head -c 400)"
fi

printf 'interval = 5\n\x1b[31mjunk\x01\x80 = 1\n' >"$TMP/junk.conf"
run_daemon junk --config "$TMP/junk.conf" --db "$TMP/a.db"
expect_error junk "$TMP/junk.conf:2: unknown key '\\x1b[31mjunk\\x01\\x80'"
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$TMP/junk.err" ||
	[ "$(wc -l <"$TMP/junk.err")" != 1 ]; then
	fail "junk: stderr has raw control or non-ASCII bytes, or more than one line"
else
	pass "junk: one line of printable text"
fi

sql "$TMP/foreign.db" "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep');"
run_daemon foreign --db "$TMP/foreign.db"
expect_error foreign "not an mmlockd database" "refusing"
tables=$(sql "$TMP/foreign.db" "SELECT group_concat(name) FROM sqlite_master")
mode=$(sql "$TMP/foreign.db" "PRAGMA journal_mode")
[ "$tables" = notes ] && [ "$mode" = delete ] && pass "foreign: the file is left as it was" ||
	fail "foreign: tables now '$tables', journal mode '$mode'"
sql "$TMP/other-id.db" "PRAGMA application_id = 1179406918; CREATE TABLE t (x);"
run_daemon other-id --db "$TMP/other-id.db"
expect_error other-id "belongs to another application (application_id 0x464c5246"

run_daemon earlier --db "$TMP/earlier.db" --interval 1
sleep 1.2
run_daemon earlier --db "$TMP/earlier.db" --interval 1
windows=$(sql "$TMP/earlier.db" "SELECT count(*) FROM windows")
sql "$TMP/earlier.db" "PRAGMA application_id = 0"
run_daemon adopt --db "$TMP/earlier.db" --interval 1
id=$(sql "$TMP/earlier.db" "PRAGMA application_id")
after=$(sql "$TMP/earlier.db" "SELECT count(*) FROM windows")
if [ "$RC" = 0 ] && grep -q "an earlier mmlockd's database" "$TMP/adopt.err" &&
	[ "$id" = 1835887723 ] && [ "$after" -ge "$windows" ] && [ "$windows" -ge 1 ]; then
	pass "adopt: an earlier mmlockd's database is adopted and stamped ($windows -> $after windows)"
else
	fail "adopt: exit $RC, application_id $id, windows $windows -> $after: $(tr '\n' ' ' <"$TMP/adopt.err" | head -c 300)"
fi

if [ "$(id -u)" = 0 ]; then
	mkdir "$TMP/imm"
	cp "$TMP/earlier.db" "$TMP/imm/m.db"
	if chattr +i "$TMP/imm" 2>/dev/null; then
		IMMUTABLE=$TMP/imm
		run_daemon immutable --db "$TMP/imm/m.db"
		expect_error immutable "Operation not permitted"
		grep -q 'No such file or directory' "$TMP/immutable.err" &&
			fail "immutable: still says 'No such file or directory'"
		chattr -i "$TMP/imm"
		IMMUTABLE=
	else
		echo "SKIP: immutable: chattr +i is not supported on $TMP"
	fi
	mkdir "$TMP/ro"
	if mount -t tmpfs -o size=4m mmlockd-test "$TMP/ro" 2>/dev/null; then
		MNT=$TMP/ro
		cp "$TMP/earlier.db" "$TMP/ro/m.db"
		mount -o remount,ro "$TMP/ro"
		run_daemon readonly --db "$TMP/ro/m.db"
		expect_error readonly "Read-only file system"
		umount "$TMP/ro"
		MNT=
	else
		echo "SKIP: readonly: cannot mount a tmpfs"
	fi
else
	echo "SKIP: immutable, readonly: need root"
fi

echo "test_bad_inputs: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
