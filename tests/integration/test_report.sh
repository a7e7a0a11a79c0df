#!/bin/bash
# test_report.sh: `mmlockd report` on real databases, without root. The kernel lab's recordings of
# the same filemap workload on a vanilla and on a patched 6.12 (tests/data/lab-*-filemap-t8.rec.xz)
# are replayed into two databases, and into one database one after the other. Checks:
#   1. --compare --totals of the two databases prints both sides, labelled, with each value equal
#      to the database's own sums (sqlite3 on process_stats) and the change in percent computed from
#      them; the throughput given is compared too; every line under the comments is the grid;
#   2. --compare of two ranges of the one database gives the same table, and two ranges that meet
#      inside a window count that window once (their faults add up to the whole);
#   3. the per-process table, -x CSV and --json agree with process_stats; --sort, --top, --comm;
#   4. a table keeps to 20 lines and $COLUMNS, its '#' lines too (--wide: all columns), --sort
#      takes header labels, --locks honours --comm and has '#' lines, --locks --detail fits
#      $COLUMNS with one unit a time column, --locks cuts perf's lines to $COLUMNS only on a
#      width; --compare names A the baseline and is per second of the time each side's windows
#      cover unless --totals; --compare --json gives numbers, -x the cells; --locks --json;
#      each side's source (windows.source) in its '#' line, and a note when the sides' sources
#      differ; -x rows carry start_time;
#   5. bad input: a bad range or sort key exits 2 with one line saying why, a missing database
#      exits 1.
# Usage: test_report.sh MMLOCKD DATA_DIR. Exit 77 without the recordings or xz.
set -u -o pipefail
MMLOCKD=${1:?mmlockd}
DATA=${2:?data dir}
command -v xz >/dev/null || { echo "SKIP: xz not installed"; exit 77; }
for k in vanilla patched; do
	[ -f "$DATA/lab-$k-filemap-t8.rec.xz" ] || { echo "SKIP: no lab-$k-filemap-t8.rec.xz"; exit 77; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PASSED=0 FAILED=0 TEST_NAME=test_report
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh" # pass, fail, summary_and_exit
sql() { sqlite3 -batch -noheader "$@"; }

for k in vanilla patched; do
	xz -dc "$DATA/lab-$k-filemap-t8.rec.xz" >"$TMP/$k.rec"
	"$MMLOCKD" replay "$TMP/$k.rec" --db "$TMP/$k.db" >/dev/null 2>"$TMP/replay.log" &&
		"$MMLOCKD" replay "$TMP/$k.rec" --db "$TMP/both.db" >/dev/null 2>>"$TMP/replay.log" ||
		{ cat "$TMP/replay.log"; echo "FAIL: replay of $k"; exit 1; }
done

# The expected line of metric @1 for sums @2 (vanilla) and @3 (patched), as the grid prints it.
expect_change() {
	python3 -c '
import sys
a, b = int(sys.argv[1]), int(sys.argv[2])
c = "" if a == b == 0 else "n/a" if a == 0 else "%+.1f%%" % (100.0 * (b - a) / a)
if c == "-100.0%" and b: c = "%+.2f%%" % (100.0 * (b - a) / a)
if c in ("+0.0%", "-0.0%"): c = "0.0%"
print("{:,}|{:,}|{}".format(a, b, c))' "$2" "$3"
}
# The cells of the grid row whose metric is @2 in file @1: "A|B|change".
grid_row() {
	awk -F'|' -v m="$2" '{ x = $2; gsub(/^ +| +$/, "", x) } x == m {
		for (i = 3; i <= 5; i++) { gsub(/^ +| +$/, "", $i) } print $3 "|" $4 "|" $5 }' "$1"
}
check_grid() { # FILE WHAT
	local f=$1 what=$2 ok=1 m col want got
	for m in "mmap_lock fallbacks:faults_mmap_fallback" "faults (user, sampled):faults" \
		"mmap_retry:faults_mmap_retry" "vma_retry:faults_vma_retry" "mmap_lock waits:mmap_lock_waits"; do
		col=${m#*:}
		want=$(expect_change "${m%%:*}" "$(sql "$TMP/vanilla.db" "SELECT sum($col) FROM process_stats")" \
			"$(sql "$TMP/patched.db" "SELECT sum($col) FROM process_stats")")
		got=$(grid_row "$f" "${m%%:*}")
		if [ "$got" != "$want" ]; then
			fail "$what: row '${m%%:*}' is '$got', the databases give '$want'"
			ok=0
		fi
	done
	[ "$ok" = 1 ] && pass "$what: fallbacks, faults, mmap_retry, vma_retry, waits equal the databases' sums, with the change ($(grid_row "$f" "mmap_lock fallbacks"))"
	if [ "$(sed '/^#/d' "$f" | grep -cv '^[+|]')" != 0 ]; then fail "$what: a line outside the grid"; fi
}

"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched.db" --labels Vanilla,Patched --totals \
	--throughput 1069.34,1404.47 >"$TMP/cmp.txt" 2>"$TMP/cmp.err" || fail "--compare exited $?: $(cat "$TMP/cmp.err")"
cat "$TMP/cmp.txt"
if grep -q '^# Vanilla, the baseline: .*vanilla.db, .*kernel 6.12' "$TMP/cmp.txt" &&
	grep -q '^# Patched, compared to Vanilla: .*patched.db' "$TMP/cmp.txt" &&
	grep -q '^# change: Patched relative to Vanilla, the baseline' "$TMP/cmp.txt" &&
	grep -qE '^\| +metric +\| +Vanilla +\| +Patched +\| +change +\|$' "$TMP/cmp.txt" &&
	[ "$(grid_row "$TMP/cmp.txt" throughput)" = "1069.34|1404.47|+31.3%" ]; then
	pass "--compare of two databases: both sides labelled, Vanilla the baseline, throughput +31.3%"
else
	fail "--compare of two databases: header or throughput row wrong"
fi
check_grid "$TMP/cmp.txt" "--compare of two databases"

# The patched run's windows start after the vanilla run's last one ends.
t1=$(sql "$TMP/vanilla.db" "SELECT max(ts_end) FROM windows")
"$MMLOCKD" report --db "$TMP/both.db" --compare "..$t1" "$t1.." --labels Vanilla,Patched --totals >"$TMP/cmp2.txt" 2>&1 ||
	fail "--compare of two ranges exited $?: $(tail -n 2 "$TMP/cmp2.txt")"
check_grid "$TMP/cmp2.txt" "--compare of two ranges of one database"

# Two ranges meeting inside a window share no window: their faults add up to the whole. T is
# inside the second window that holds faults, so both sides have some (a recording's first
# windows may be empty: the lab's of 2026-12-01 start faulting in their third).
mid=$(sql "$TMP/both.db" "SELECT (ts_start + ts_end) / 2 FROM windows w WHERE (SELECT sum(faults)
	FROM process_windows p WHERE p.window_id = w.id) > 0 ORDER BY ts_end LIMIT 1 OFFSET 1")
"$MMLOCKD" report --db "$TMP/both.db" --compare "..$mid" "$mid.." --totals >"$TMP/cmp3.txt" 2>&1
IFS='|' read -r fa fb _ <<<"$(grid_row "$TMP/cmp3.txt" "faults (user, sampled)" | tr -d ,)"
total=$(sql "$TMP/both.db" "SELECT sum(faults) FROM process_stats")
if [ -n "$fa" ] && [ "$fa" -gt 0 ] && [ "$fb" -gt 0 ] && [ $((fa + fb)) = "$total" ]; then
	pass "--compare ..T T.. with T inside a window: $fa + $fb = $total faults, no window twice"
else
	fail "--compare ..T T..: '$fa' + '$fb' != $total"
fi

"$MMLOCKD" report --db "$TMP/both.db" --sort fallbacks --top 1 -x , >"$TMP/top.csv" 2>&1
want=$(sql "$TMP/both.db" "SELECT pid, printf('%.3f', start_time), sum(faults), sum(faults_mmap_fallback) FROM process_stats GROUP BY pid, start_time ORDER BY 4 DESC LIMIT 1" | tr '|' ,)
if [ "$(wc -l <"$TMP/top.csv")" = 2 ] && [ "$(sed -n 2p "$TMP/top.csv" | cut -d, -f1-4)" = "$want" ]; then
	pass "--sort fallbacks --top 1 -x ,: $(sed -n 2p "$TMP/top.csv")"
else
	fail "--sort fallbacks --top 1: '$(cat "$TMP/top.csv")', process_stats says '$want'"
fi
"$MMLOCKD" report --db "$TMP/both.db" --comm labload --json >"$TMP/rows.json" 2>&1
if python3 - "$TMP/rows.json" "$(sql "$TMP/both.db" "SELECT count(DISTINCT pid || start_time), sum(faults_vma_retry) FROM process_stats WHERE comm = 'labload'")" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
n, vr = map(int, sys.argv[2].split("|"))
assert len(rows) == n == 2 and sum(r["vma_retry"] for r in rows) == vr, (rows, n, vr)
assert all(r["comm"] == "labload" for r in rows)
PY
then pass "--comm labload --json: two processes, vma_retry as in process_stats"; else fail "--json rows"; fi

bad() { # EXPECTED_STATUS ARGS...
	local want=$1 rc
	shift
	"$MMLOCKD" report "$@" >"$TMP/bad.out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] && [ -s "$TMP/bad.out" ] || { fail "report $* exited $rc (want $want)"; return; }
	pass "report $* -> $rc: $(head -n 1 "$TMP/bad.out")"
}
# Without --totals the counts are per second of the time each side's windows cover (their
# lengths summed: a gap in the history is no time in which nothing happened).
"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched.db" >"$TMP/rate.txt" 2>&1
secs=$(sql "$TMP/vanilla.db" "SELECT total(ts_end - ts_start) FROM windows")
want=$(python3 -c "import sys; v = $(sql "$TMP/vanilla.db" "SELECT sum(faults) FROM process_stats") / $secs
print(('%.0f' if v >= 100 else '%.2f') % v)")
got=$(grid_row "$TMP/rate.txt" "faults (user, sampled) /s" | cut -d'|' -f1)
if grep -q "^# counts per second of the time each side's windows cover" "$TMP/rate.txt" && [ "$got" = "$want" ]; then
	pass "--compare per second: faults /s $got over $secs s, as the database gives"
else
	fail "--compare per second: faults /s '$got', the database gives '$want' over $secs s"
fi
# --json and -x for --compare and --locks: the grid's cells and notes, the lock rows.
"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched.db" --json >"$TMP/cmp.json" 2>&1
"$MMLOCKD" report --db "$TMP/both.db" --locks --json >"$TMP/locks.json" 2>/dev/null
if python3 - "$TMP/cmp.json" "$TMP/locks.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["a"] == "vanilla" and c["b"] == "patched", c
assert any(n.startswith("counts per second") for n in c["notes"]), c["notes"]
assert c["baseline"] == "a" and c["seconds"][0] > 0, c
fb = [r for r in c["rows"] if r["metric"] == "mmap_lock fallbacks" and r["unit"] == "/s"]
assert fb and isinstance(fb[0]["a"], (int, float)) and isinstance(fb[0]["change_pct"], (int, float)), fb
assert fb[0]["a_estimated"] is False and fb[0]["within_error"] is False, fb
locks = json.load(open(sys.argv[2]))
assert isinstance(locks, list) and locks and "total_wait_ns" in locks[0], locks[:1]
PY
then pass "--compare --json and --locks --json: numbers, the baseline and seconds, the lock rows"
else fail "--compare --json / --locks --json: $(head -c 300 "$TMP/cmp.json")"; fi
"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched.db" -x ';' >"$TMP/cmp.csv" 2>&1
[ "$(head -n 1 "$TMP/cmp.csv")" = "metric;vanilla;patched;change" ] && ! grep -q '^[#+|]' "$TMP/cmp.csv" &&
	pass "--compare -x ';': $(sed -n 2p "$TMP/cmp.csv")" || fail "--compare -x: $(head -n 3 "$TMP/cmp.csv")"
# Each side's source in its '#' line; a note when they differ (a replay ran on perf: the copy of
# the patched database says its windows ran on BPF), in the text and in --json.
cp "$TMP/patched.db" "$TMP/patched-bpf.db"
sql "$TMP/patched-bpf.db" "UPDATE windows SET source = 'bpf'"
"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched-bpf.db" >"$TMP/src.txt" 2>&1
"$MMLOCKD" report --compare "$TMP/vanilla.db" "$TMP/patched-bpf.db" --json >"$TMP/src.json" 2>&1
note='vanilla ran on the perf source, patched-bpf on bpf: the fault split and fallbacks are found by different methods'
if grep -q '^# Vanilla, the baseline: .*, source perf)$' "$TMP/cmp.txt" && ! grep -q 'ran on the' "$TMP/cmp.txt" &&
	grep -q "^# patched-bpf, compared to vanilla: .*, source bpf)$" "$TMP/src.txt" && grep -qF "# $note" "$TMP/src.txt" &&
	python3 -c 'import json, sys; n = json.load(open(sys.argv[1]))["notes"]
assert any(x.startswith(sys.argv[2]) for x in n), n' "$TMP/src.json" "$note"; then
	pass "--compare: each side's source in its header; sources perf and bpf noted (text, --json), the same source not"
else
	fail "--compare sources: $(grep '^#' "$TMP/src.txt" | head -n 5)"
fi
# A table for a person: 20 lines by default, as wide as $COLUMNS (the split's detail left out,
# and said so); --wide and pipes of CSV keep everything.
COLUMNS=80 "$MMLOCKD" report --db "$TMP/both.db" >"$TMP/table.txt" 2>&1
rows=$(grep -vc '^#' "$TMP/table.txt")
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$TMP/table.txt") # '#' lines too
if [ "$rows" -le 21 ] && [ "$widest" -le 80 ] && grep -q '^# left out to fit 80 columns' "$TMP/table.txt"; then
	pass "report on COLUMNS=80: $((rows - 1)) rows, lines of at most $widest characters"
else
	fail "report on COLUMNS=80: $rows lines, widest $widest: $(head -n 5 "$TMP/table.txt")"
fi
COLUMNS=80 "$MMLOCKD" report --db "$TMP/both.db" --wide --sort 'fb%,+-err' >"$TMP/wide.txt" 2>&1 &&
	grep -q 'mmap_unknown' "$TMP/wide.txt" && ! grep -q 'left out' "$TMP/wide.txt" &&
	pass "--wide keeps every column; --sort takes the header's labels (fb%,+-err)" ||
	fail "--wide --sort 'fb%,+-err': $(head -n 3 "$TMP/wide.txt")"
"$MMLOCKD" report --db "$TMP/both.db" --locks --comm nonexistent >"$TMP/locks.txt" 2>/dev/null
[ "$(grep -v '^ *contended' "$TMP/locks.txt" | grep -v '^#' | grep -c .)" = 0 ] &&
	grep -q '^# one line per lock type and caller: 0$' "$TMP/locks.txt" &&
	pass "--locks --comm nonexistent: no row, and its '#' header says so" ||
	fail "--locks ignores --comm: $(head -n 3 "$TMP/locks.txt")"
# --locks on a terminal's width: perf's lines cut to it (the caller); piped, to the character.
COLUMNS=60 "$MMLOCKD" report --db "$TMP/both.db" --locks >"$TMP/locks60.txt" 2>/dev/null
"$MMLOCKD" report --db "$TMP/both.db" --locks >"$TMP/locks0.txt" 2>/dev/null
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$TMP/locks60.txt")
if [ "$widest" -le 60 ] && grep -q '\.\.\.$' "$TMP/locks60.txt" && ! grep -q '\.\.\.$' "$TMP/locks0.txt"; then
	pass "--locks on COLUMNS=60: lines of at most $widest, cut with '...'; whole when piped"
else
	fail "--locks on COLUMNS=60: widest $widest: $(sed -n 9,10p "$TMP/locks60.txt")"
fi
# --waits and --detail: '#' lines like the fault table's, fitted to $COLUMNS, one unit a column.
COLUMNS=80 "$MMLOCKD" report --db "$TMP/both.db" --locks --detail >"$TMP/detail.txt" 2>/dev/null
widest=$(awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' "$TMP/detail.txt")
if grep -q '^# .*both.db, ' "$TMP/detail.txt" && grep -q '^#.*windows covering' "$TMP/detail.txt" &&
	[ "$widest" -le 80 ] &&
	grep -qE '^ *contended +total wait (s|ms|us|ns) ' "$TMP/detail.txt"; then
	pass "--locks --detail on COLUMNS=80: '#' header, lines of at most $widest, unit in the header"
else
	fail "--locks --detail on COLUMNS=80: widest $widest: $(head -n 8 "$TMP/detail.txt")"
fi
# One line that says what to do, for a wrong option and for a range the wrong way round.
"$MMLOCKD" report --bogus >"$TMP/bogus.out" 2>&1
[ $? = 2 ] && [ "$(wc -l <"$TMP/bogus.out")" = 1 ] && grep -q "unknown option '--bogus'" "$TMP/bogus.out" &&
	pass "report --bogus: $(cat "$TMP/bogus.out")" || fail "report --bogus: $(head -c 300 "$TMP/bogus.out")"
"$MMLOCKD" report --db "$TMP/both.db" --compare 1m..3m 3m..1m >"$TMP/range.out" 2>&1
grep -q "starts after it ends" "$TMP/range.out" && [ "$(wc -l <"$TMP/range.out")" = 1 ] &&
	pass "bad range 1m..3m says why: $(cat "$TMP/range.out")" || fail "bad range 1m..3m: $(cat "$TMP/range.out")"
bad 2 --db "$TMP/both.db" --compare "x..y" "1h.."
bad 2 --db "$TMP/both.db" --sort nosuch
bad 2 --db "$TMP/both.db" --compare "$TMP/vanilla.db"
bad 1 --db "$TMP/nonexistent.db"
summary_and_exit
