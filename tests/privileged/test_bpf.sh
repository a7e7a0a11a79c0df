#!/bin/bash
# test_bpf.sh: proves that the BPF source counts what the perf path counts, per process, and
# that every way BPF can be unavailable leaves one clear log line and a daemon on the perf rings.
#
# Usage: test_bpf.sh MMLOCKD_BINARY FAULT_WORKLOAD OUTCOME_WORKLOAD
#
# Agreement: two daemons run at once on the same machine, one with --source perf, one with
# --source bpf, both --collectors mmaplock,fallbacks (1 s windows). Each workload runs once while
# both watch it; after SIGTERM (which flushes the open window) the per-process sums over the
# process_stats view of each database are compared for the workload's pid:
#   faults, mmap_lock_read, mmap_lock_write, mmap_lock_trylock_fail, mmap_lock_contended,
#   fallback_locks (perf: the faults collector's callchain count, see SUM_COLS)
#                                         equal; when the perf daemon lost records, within 0.1%
#                                         or perf short by at most the records it lost;
#                                         without losses perf may be short by 2 or 5 per
#                                         million (short_ok: a known, unexplained shortfall
#                                         of the perf path)
#   mmap_lock_waits                       the same rule
#   mmap_lock_wait_ns, _write_hold_ns     within 1%, or a constant offset of at most
#                                         MAX_OFFSET_NS (5000) per timed event (see "Times"),
#                                         for sums over 1 ms
# The workloads: fault_workload (anonymous, file and copy-on-write faults under the VMA lock and
# an mmap/mprotect/munmap thread), and outcome_workload anon (mprotect writers: fallbacks that
# wait) and exec (short-lived processes: each child is compared too, its counts come through the
# exit ring buffer); in the first pair also outcome_workload file (file faults under a memory
# cgroup: retried under mmap_lock, racing munmap) and swap (swap-ins under a memory cgroup and a
# swap file: retries that no tracepoint shows). A second pair, perf's faults collector against BPF's
# fallbacks collector alone (the default's, which tells the fallback site without a stack on
# x86), compares fallback_locks on all of them.
#
# Fault outcomes (first pair, the faults collector on both sides), per workload process:
#   faults_vma, _vma_retry, _mmap_fallback, _mmap_lock_retries, mmap_lock_by_fault,
#   _fault_other, _fault_kernel       equal (the same rule on the same events; 0.1% if perf lost
#                                     records)
#   faults_mmap_retry                 BPF at least perf's (every attempt perf sees, BPF sees) and
#                                     at most perf's mmap_retry + abort + unknown: what BPF adds is
#                                     the evidence perf has not (a sleep of the faulting thread, in
#                                     __folio_lock_or_retry for swap-ins; the vDSO's special
#                                     mappings; the kernel's mm_lock_seq for aborts)
#   BPF totals                        vma + vma_retry + mmap_retry + mmap_abort + mmap_unknown =
#                                     faults; fallback_locks = mmap_fallback + mmap_lock_retries +
#                                     mmap_lock_by_fault_kernel (the fallbacks collector's count)
#   BPF mmap_unknown                  under 1% of faults
#   swap                              perf's mmap_unknown (it cannot tell these) is at least 90% of
#                                     the fallbacks, BPF's mmap_retry at least 99%, of at least 20
#                                     (how many swap-ins wait for their read varies: 37 to 515 in
#                                     runs of the same workload, with 500+ faults read from swap)
#
# Failure paths, each a daemon with --source auto that must log one "BPF source unavailable"
# line with the reason, show source "perf" and the reason for mmaplock in /api/v1/status, and
# count faults on the perf rings anyway: missing BTF (--btf /nonexistent), a verifier
# rejection (--bpf-refuse on: the verifier's message must be in the line), and an
# unprivileged daemon (user nobody via setpriv: neither BPF nor perf can open, so it refuses to
# start in one line). --source bpf with missing BTF must refuse to start.
#
# Exit status: 0 passed, 1 a check failed, 77 skipped (not root, or BPF cannot load here).
# Environment: KEEP_TMP=1 keeps the temporary directory.
#
# The perf fallbacks collector's own fallback_locks and fallback_lock_waits (first pair) equal
# BPF's: the BPF programs no longer hide its sites (see the check).

set -u -o pipefail

TEST_NAME=test_bpf
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/lib.sh"

perf_PID=
bpf_PID=
WPID=

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	[ -n "$WPID" ] && stop_process "$WPID" KILL 1
	stop_process "$perf_PID" TERM
	stop_process "$bpf_PID" TERM
	stop_process "$DAEMON_PID" TERM
	remove_tmp
}

if [ $# -ne 3 ]; then
	echo "usage: $0 MMLOCKD_BINARY FAULT_WORKLOAD OUTCOME_WORKLOAD" >&2
	exit 2
fi
MMLOCKD=$1
FAULT_WORKLOAD=$2
OUTCOME_WORKLOAD=$3

need_root "BPF and system-wide tracepoints"
need_tools curl sqlite3 python3 setpriv
find_tracefs
need_memcg

make_tmp bpf
chmod 755 "$TMP"
CONF=$TMP/mmlockd.conf
: >"$CONF"
cp /bin/true "$TMP/bpftest_true" || fatal "cannot copy /bin/true"

cat >"$TMP/status.py" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for c in doc.get("collectors", []):
    if c.get("name") == sys.argv[2]:
        print(c.get("source", "?"), "|", c.get("source_note", ""))
        break
else:
    print("absent |")
EOF
latency_mode() { # STATUS_JSON: /api/v1/status's fault_latency mode
	python3 -c 'import json, sys
print(json.load(open(sys.argv[1])).get("fault_latency", {}).get("mode", "absent"))' "$1"
}

# --- can BPF load here? ---------------------------------------------------------------------
DB=$TMP/probe.db
start_mmlockd --collectors mmaplock,fallbacks --source auto
read -r src _ < <(python3 "$TMP/status.py" "$TMP/status.json" mmaplock)
if [ "$src" != bpf ]; then
	why=$(grep -m1 'BPF source' "$TMP/mmlockd.log")
	stop_process "$DAEMON_PID" TERM
	DAEMON_PID=
	skip "the BPF source does not run here: ${why:-no BPF in this build}"
fi
# Fault latency is opt-in (fault_latency = on): its completion events cost every fault.
if [ "$(latency_mode "$TMP/status.json")" = off ]; then
	pass "fault latency off by default (no completion events open)"
else
	fail "fault latency by default: $(latency_mode "$TMP/status.json"), off wanted"
fi
sigterm_mmlockd

# --- agreement --------------------------------------------------------------------------------
# Compared columns are in SUM_COLS; fallback_locks is compared with the faults collector's
# callchain count of the same acquisitions (mmap_lock_by_fault + _fault_kernel), and with the
# perf fallbacks collector's own count below.

# sums DB PID SIDE: the columns of SUM_COLS summed over the pid's windows, one line.
sums() {
	local sel="" c e
	for c in $SUM_COLS; do
		e=$c
		[ "$3" = perf ] && [ "$c" = fallback_locks ] &&
			e="mmap_lock_by_fault + mmap_lock_by_fault_kernel"
		sel="$sel${sel:+, }coalesce(sum($e), 0)"
	done
	sqlite3 -separator ' ' "$1" "SELECT $sel FROM process_stats WHERE pid = $2"
}

lost_of() { # the perf daemon's lost records on the compared tracepoints, from its status
	http_get_port "$perf_PORT" /api/v1/status "$TMP/perf.status.json" &&
		python3 -c 'import json, sys
print(sum(int(e.get("lost", 0)) for e in json.load(open(sys.argv[1])).get("events", [])))' \
			"$TMP/perf.status.json"
}

http_get_port() {
	curl -fsS --noproxy '*' --max-time 5 -o "$3" "http://127.0.0.1:$1$2" 2>/dev/null
}

# short_ok COUNT: how many events the perf path may be short of the BPF source's COUNT without
# a ring loss (see compare()): two, or 5 per million of the count (3 of 1.4 M seen).
short_ok() {
	local n=$(($1 * 5 / 1000000))
	echo $((n > 2 ? n : 2))
}

# compare LABEL PID LOST: every column of the pid in both databases.
compare() {
	local label=$1 pid=$2 lost=$3 p b i=0 c pv bv tol
	read -ra p <<<"$(sums "$TMP/perf.db" "$pid" perf)"
	read -ra b <<<"$(sums "$TMP/bpf.db" "$pid" bpf)"
	for c in $SUM_COLS; do
		pv=${p[$i]:-0}
		bv=${b[$i]:-0}
		i=$((i + 1))
		case $c in
		*_ns) tol=1 ;;
		*) tol=$([ "$lost" -gt 0 ] && echo 0.1 || echo 0) ;;
		esac
		if [[ $c == *_ns ]] && [ "$pv" -lt 1000000 ] && [ "$bv" -lt 1000000 ]; then
			log "  $label $c: perf $pv, bpf $bv (under 1 ms, not compared)"
			continue
		fi
		if [[ $c == *_ns ]] && ! TOL=$tol within "$pv" "$bv"; then
			# See "Times" below: a constant offset per timed event is allowed.
			local n=${p[0]:-0} off
			off=$(awk -v a="$pv" -v b="$bv" -v n="$n" 'BEGIN {
				d = b - a; if (d < 0) d = -d; printf "%d", n ? d / n : d }')
			if [ "$off" -le "$MAX_OFFSET_NS" ]; then
				pass "$label $c: perf $pv, bpf $bv ($(diff_pct "$pv" "$bv")%:" \
					"$off ns per event of the first column, at most $MAX_OFFSET_NS)"
			else
				fail "$label $c: perf $pv, bpf $bv ($(diff_pct "$pv" "$bv")%:" \
					"$off ns per event of the first column, over $MAX_OFFSET_NS)"
			fi
			continue
		fi
		if [[ $c != *_ns ]] && [ "$lost" -gt 0 ] && [ "$bv" -ge "$pv" ] &&
			[ $((bv - pv)) -le "$lost" ]; then
			pass "$label $c: perf $pv, bpf $bv: perf short by $((bv - pv)), within the" \
				"$lost records its rings lost"
		elif [[ $c != *_ns ]] && [ "$bv" -gt "$pv" ] && [ $((bv - pv)) -le "$(short_ok "$pv")" ]; then
			# Seen on most runs (3 of 4 in a row on a quiet machine): the BPF source one
			# or two ahead, in faults (and faults_vma) or in mmap_lock_waits and
			# mmap_lock_write together, for fault_workload only, with no ring losses or
			# out-of-order drops on the perf side; three ahead of 1.4 M faults once under
			# a kernel build's load, which failed a CI run. It is the perf daemon that is
			# short: `perf record -a -e exceptions:page_fault_user` running around the same
			# workload counts exactly the BPF source's faults (twice in a row). Which
			# records of the process the perf path drops or attributes elsewhere is not
			# found yet (not the records delivered after its EXIT record: those revive the
			# exited entry, daemon/proctable.c create(), and still count); see short_ok().
			pass "$label $c: perf $pv, bpf $bv: the perf path short by $((bv - pv))" \
				"(see the comment)"
		elif TOL=$tol within "$pv" "$bv"; then
			pass "$label $c: perf $pv, bpf $bv ($(diff_pct "$pv" "$bv")%, tolerance $tol%)"
		else
			fail "$label $c: perf $pv, bpf $bv ($(diff_pct "$pv" "$bv")%, tolerance $tol%)"
		fi
	done
}

# run_pair PERF_COLLECTORS BPF_COLLECTORS: both daemons at once on the three workloads; sets
# FAULT_PID, ANON_PID, LOST; the databases stay in $TMP/{perf,bpf}.db.
run_pair() {
	PAIR=$((${PAIR:-0} + 1))
	rm -f "$TMP"/perf.db* "$TMP"/bpf.db*
	start_daemon perf --collectors "$1" --source perf --ring-pages 1024 --fault-latency on
	start_daemon bpf --collectors "$2" --source bpf --fault-latency on
	grep -q "BPF source: counting" "$TMP/bpf.log" ||
		fatal "the bpf daemon does not say it counts in the kernel"
	read -r src _ < <(python3 "$TMP/status.py" "$TMP/perf.status.json" mmaplock)
	[ "$src" = perf ] || fatal "--source perf: mmaplock runs on '$src'"
	pass "one daemon on each source (perf: $1; bpf: $2)"
	sleep 1
	rm -f "$TMP/fault.done"
	"$FAULT_WORKLOAD" --seconds 3 --pid-file "$TMP/fault.pid" --file-dir "$TMP" \
		--file-mb 32 --anon-mb 32 --done-file "$TMP/fault.done" --linger 30 \
		>"$TMP/fault.out" 2>&1 &
	WPID=$!
	for _ in $(seq 150); do
		[ -e "$TMP/fault.done" ] && break
		sleep 0.2
	done
	[ -e "$TMP/fault.done" ] || fatal "fault_workload did not finish its work"
	FAULT_PID=$(cat "$TMP/fault.pid")
	sleep 2 # a tick delivers the last counts
	http_get_port "$bpf_PORT" /api/v1/processes "$TMP/bpf.processes.json" ||
		fail "GET /api/v1/processes from the bpf daemon"
	kill -USR1 "$WPID"
	wait "$WPID" || fatal "fault_workload failed"
	WPID=
	"$OUTCOME_WORKLOAD" anon --rounds 40 --dir "$TMP" >"$TMP/anon.out" 2>&1 &
	WPID=$!
	wait "$WPID" || fatal "outcome_workload anon failed: $(tail -n 3 "$TMP/anon.out")"
	ANON_PID=$WPID
	WPID=
	"$OUTCOME_WORKLOAD" exec --children 50 --exec "$TMP/bpftest_true" --dir "$TMP" \
		>"$TMP/exec.out" 2>&1 ||
		fatal "outcome_workload exec failed: $(tail -n 3 "$TMP/exec.out")"
	if [ -n "${WITH_RETRIES:-}" ]; then
		for mode in file swap; do
			"$OUTCOME_WORKLOAD" "$mode" --dir "$TMP" >"$TMP/$mode.out" 2>&1 &
			WPID=$!
			wait "$WPID" ||
				fatal "outcome_workload $mode failed: $(tail -n 3 "$TMP/$mode.out")"
			printf -v "${mode^^}_PID" '%s' "$WPID"
			WPID=
		done
	fi
	sleep 2.5 # two windows: every record of the workloads is delivered and settled
	LOST=$(lost_of) || LOST=0
	log "perf daemon lost $LOST records"
	cp "$TMP/perf.status.json" "$TMP/perf.final.json"
	DAEMON_PID=$perf_PID
	perf_PID=
	sigterm_mmlockd
	DAEMON_PID=$bpf_PID
	bpf_PID=
	sigterm_mmlockd
	cp "$TMP/perf.db" "$TMP/perf.pair$PAIR.db" # for KEEP_TMP=1
	cp "$TMP/bpf.db" "$TMP/bpf.pair$PAIR.db"
}

# Counts: every collector the BPF source serves, and the faults collector on the perf side for
# its callchain count of fallbacks. Its callchains on acquire_returned cost the perf probe
# microseconds per event, which the BPF program (run after it, attached later) then sees as
# lock time: times are compared in the second pair instead.
SUM_COLS="faults mmap_lock_read mmap_lock_write mmap_lock_trylock_fail mmap_lock_contended
fallback_locks mmap_lock_waits"
WITH_RETRIES=1 run_pair mmaplock,fallbacks,faults mmaplock,fallbacks,faults
read -r src _ note < <(python3 "$TMP/status.py" "$TMP/bpf.status.json" faults)
if [ "$src" = bpf ]; then
	pass "the faults collector runs on the bpf source ($note)"
else
	fail "the faults collector runs on '$src' in the bpf daemon: $note"
fi
if [ "$(latency_mode "$TMP/bpf.status.json")" = sampled ]; then
	pass "--fault-latency on: fault latency sampled"
else
	fail "--fault-latency on: fault latency $(latency_mode "$TMP/bpf.status.json"), sampled wanted"
fi
# The perf daemon was asked for latency too, which only the BPF source samples: one line says so.
if [ "$(latency_mode "$TMP/perf.status.json")" = off ] &&
	grep -q "fault latency not sampled: .*needs mmaplock or faults on the BPF source" "$TMP/perf.log"; then
	pass "--fault-latency on with --source perf: off, $(grep -m1 -o 'fault latency not sampled.*' "$TMP/perf.log")"
else
	fail "--fault-latency on with --source perf: $(latency_mode "$TMP/perf.status.json"), no warning line"
fi
# The perf fallbacks collector with the BPF programs attached: on_start shares perf's probe (a
# classic tracepoint program), so start samples keep their site's IP, and failed attempts go by
# their thread's last start, not the iterator's IP (plugins/fallbacks.c): its own counts equal
# BPF's.
for w in "fault_workload:$FAULT_PID" "outcome_workload anon:$ANON_PID" \
	"outcome_workload file:$FILE_PID" "outcome_workload swap:$SWAP_PID"; do
	for c in fallback_locks fallback_lock_waits; do
		q="SELECT coalesce(sum($c), 0) FROM process_stats WHERE pid = ${w#*:}"
		pv=$(sqlite3 "$TMP/perf.db" "$q") bv=$(sqlite3 "$TMP/bpf.db" "$q")
		if [ "$pv" = "$bv" ] || { [ "$LOST" -gt 0 ] && TOL=0.1 within "$pv" "$bv"; }; then
			pass "${w%%:*} $c of the perf fallbacks collector beside BPF: perf $pv, bpf $bv"
		else
			fail "${w%%:*} $c of the perf fallbacks collector beside BPF: perf $pv, bpf $bv"
		fi
	done
done
compare fault_workload "$FAULT_PID" "$LOST"
compare "outcome_workload anon" "$ANON_PID" "$LOST"

OUTCOME_COLS="faults faults_vma faults_vma_retry faults_mmap_retry faults_mmap_abort
faults_mmap_unknown faults_mmap_fallback faults_mmap_lock_retries mmap_lock_by_fault
mmap_lock_by_fault_other mmap_lock_by_fault_kernel fallback_locks"

# outcomes DB PID: OUTCOME_COLS summed over the pid's windows, one line.
outcomes() {
	local sel="" c
	for c in $OUTCOME_COLS; do
		sel="$sel${sel:+, }coalesce(sum($c), 0)"
	done
	sqlite3 -separator ' ' "$1" "SELECT $sel FROM process_stats WHERE pid = $2"
}

# compare_outcomes LABEL PID LOST [swap]: the fault outcome checks of the header.
compare_outcomes() {
	local label=$1 pid=$2 lost=$3 kind=${4:-} c i=0 tol
	local -A p b
	local pv bv
	read -ra pv <<<"$(outcomes "$TMP/perf.db" "$pid")"
	read -ra bv <<<"$(outcomes "$TMP/bpf.db" "$pid")"
	for c in $OUTCOME_COLS; do
		p[$c]=${pv[$i]:-0}
		b[$c]=${bv[$i]:-0}
		i=$((i + 1))
	done
	tol=$([ "$lost" -gt 0 ] && echo 0.1 || echo 0)
	log "  $label outcomes vma/vma_retry/mmap_retry/abort/unknown of faults: perf" \
		"${p[faults_vma]}/${p[faults_vma_retry]}/${p[faults_mmap_retry]}/${p[faults_mmap_abort]}/${p[faults_mmap_unknown]}" \
		"of ${p[faults]}, bpf" \
		"${b[faults_vma]}/${b[faults_vma_retry]}/${b[faults_mmap_retry]}/${b[faults_mmap_abort]}/${b[faults_mmap_unknown]}" \
		"of ${b[faults]}"
	# Fallbacks the perf path missed (short of BPF's faults_mmap_fallback within short_ok):
	# each turned a fallback fault into a vma one there (seen once: perf vma 15247, bpf 15246,
	# mmap_retry 1538 and 1539, 2026-12-03).
	local missed=$((b[faults_mmap_fallback] - p[faults_mmap_fallback]))
	[ "$missed" -gt 0 ] && [ "$missed" -le "$(short_ok "${p[faults_mmap_fallback]}")" ] ||
		missed=0
	for c in faults_vma faults_vma_retry faults_mmap_fallback faults_mmap_lock_retries \
		mmap_lock_by_fault mmap_lock_by_fault_other mmap_lock_by_fault_kernel; do
		if TOL=$tol within "${p[$c]}" "${b[$c]}"; then
			pass "$label $c: perf ${p[$c]}, bpf ${b[$c]} (tolerance $tol%)"
		elif [ "${b[$c]}" -gt "${p[$c]}" ] && [ $((b[$c] - p[$c])) -le "$(short_ok "${p[$c]}")" ]; then
			# The faults the perf path misses (see compare()), completed under the VMA
			# lock: they show in faults_vma too.
			pass "$label $c: perf ${p[$c]}, bpf ${b[$c]}: the perf path short by" \
				"$((b[$c] - p[$c])) (see compare())"
		elif [ "$c" = faults_vma ] && [ "${b[$c]}" -lt "${p[$c]}" ] &&
			[ $((p[$c] - b[$c])) -le "$missed" ]; then
			pass "$label $c: perf ${p[$c]}, bpf ${b[$c]}: perf's vma holds the" \
				"$((p[$c] - b[$c])) of its $missed missed fallbacks"
		else
			fail "$label $c: perf ${p[$c]}, bpf ${b[$c]} (tolerance $tol%)"
		fi
	done
	local hi=$((p[faults_mmap_retry] + p[faults_mmap_abort] + p[faults_mmap_unknown] + missed))
	if [ "${b[faults_mmap_retry]}" -ge "${p[faults_mmap_retry]}" ] &&
		[ "${b[faults_mmap_retry]}" -le "$hi" ]; then
		pass "$label faults_mmap_retry: bpf ${b[faults_mmap_retry]} within perf's" \
			"mmap_retry ${p[faults_mmap_retry]} .. + abort + unknown (+ missed) $hi"
	else
		fail "$label faults_mmap_retry: bpf ${b[faults_mmap_retry]} outside perf's" \
			"mmap_retry ${p[faults_mmap_retry]} .. + abort + unknown (+ missed) $hi"
	fi
	local sum=$((b[faults_vma] + b[faults_vma_retry] + b[faults_mmap_retry] +
		b[faults_mmap_abort] + b[faults_mmap_unknown]))
	[ "$sum" -eq "${b[faults]}" ] &&
		pass "$label bpf outcomes add up to its faults: $sum" ||
		fail "$label bpf outcomes add up to $sum, faults ${b[faults]}"
	local fb=$((b[faults_mmap_fallback] + b[faults_mmap_lock_retries] +
		b[mmap_lock_by_fault_kernel]))
	[ "$fb" -eq "${b[fallback_locks]}" ] &&
		pass "$label bpf fallbacks + retries + kernel-mode faults = fallback_locks: $fb" ||
		fail "$label bpf fallbacks + retries + kernel-mode faults $fb, fallback_locks" \
			"${b[fallback_locks]}"
	if [ $((b[faults_mmap_unknown] * 100)) -lt "${b[faults]}" ] || [ "${b[faults_mmap_unknown]}" = 0 ]; then
		pass "$label bpf mmap_unknown ${b[faults_mmap_unknown]}: under 1% of ${b[faults]} faults"
	else
		fail "$label bpf mmap_unknown ${b[faults_mmap_unknown]}: 1% of ${b[faults]} faults or more"
	fi
	[ "$kind" = swap ] || return 0
	local f=${b[faults_mmap_fallback]}
	if [ "$f" -ge 20 ] && [ $((p[faults_mmap_unknown] * 10)) -ge $((f * 9)) ] &&
		[ $((b[faults_mmap_retry] * 100)) -ge $((f * 99)) ]; then
		pass "$label swap-in retries: of $f fallbacks perf calls ${p[faults_mmap_unknown]}" \
			"mmap_unknown, bpf ${b[faults_mmap_retry]} mmap_retry (sleeps in" \
			"__folio_lock_or_retry)"
	else
		fail "$label swap-in retries: of $f fallbacks (at least 20 wanted) perf" \
			"${p[faults_mmap_unknown]} mmap_unknown (90% wanted), bpf" \
			"${b[faults_mmap_retry]} mmap_retry (99% wanted)"
	fi
}
compare_outcomes fault_workload "$FAULT_PID" "$LOST"
compare_outcomes "outcome_workload anon" "$ANON_PID" "$LOST"
compare_outcomes "outcome_workload file" "$FILE_PID" "$LOST"
compare_outcomes "outcome_workload swap" "$SWAP_PID" "$LOST" swap


# Fault latency (BPF only, with --fault-latency on; page_fault_user to the completion event: 1 in
# 8 faults of a CPU runs the completion program, and 1 in 4 faults is timed, so 1 in 32 is
# sampled): the live process's
# quantiles, which must be there and ordered, under-VMA-lock faults between 256 ns and 1 ms at the
# median, the same faults by outcome (vma) there too; and faults that fell back slower than the
# median of those that did not, when fault_workload's map thread made enough of them for a sample
# (256: some 8 sampled; a quiet run makes 2-9 in all, a busy one thousands).
if lat=$(python3 - "$TMP/bpf.processes.json" "$FAULT_PID" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["processes"] if p["pid"] == int(sys.argv[2])]
if not p:
    sys.exit("pid not listed")
t = p[0]["total"]
q = [t[k] for k in ("fault_ns_vma_p50", "fault_ns_vma_p99", "fault_ns_mmap_p50",
                    "fault_ns_mmap_p99", "fault_ns_outcome_vma_p50", "fault_ns_outcome_vma_p99")]
fb = t["faults_mmap_fallback"]
print(*q, "of", fb, "fallbacks")
ok = 256 <= q[0] <= 1000000 and q[0] <= q[1] and 256 <= q[4] <= q[5]
if fb >= 256:
    ok = ok and 0 < q[2] <= q[3] and q[2] > q[0]
sys.exit(0 if ok else "quantiles out of order or range: %r" % q)
EOF
); then
	pass "fault latency quantiles (vma p50 p99, mmap p50 p99, outcome vma p50 p99, ns): $lat"
else
	fail "fault latency quantiles: $lat"
fi

# The exec children: every pid named bpftest_true (a copy of /bin/true: the daemons see every
# process of the machine, and others run true too) in the perf database must be in the bpf one
# with the same counts, summed over its windows whatever their name (they live a few ms; their
# counts reach the bpf daemon through the exit ring).
read -r np nb same <<<"$(sqlite3 -separator ' ' "$TMP/perf.db" "
	ATTACH '$TMP/bpf.db' AS b;
	WITH k AS (SELECT DISTINCT pid FROM main.process_stats WHERE comm = 'bpftest_true'),
	     p AS (SELECT pid, sum(faults) f,
	                  sum(mmap_lock_by_fault + mmap_lock_by_fault_kernel) l,
	                  sum(faults_vma) v, sum(faults_mmap_fallback) m FROM main.process_stats
	           WHERE pid IN (SELECT pid FROM k) GROUP BY pid),
	     q AS (SELECT pid, sum(faults) f, sum(fallback_locks) l, sum(faults_vma) v,
	                  sum(faults_mmap_fallback) m FROM b.process_stats
	           WHERE pid IN (SELECT pid FROM k) GROUP BY pid)
	SELECT (SELECT count(*) FROM p), (SELECT count(*) FROM q),
	       (SELECT count(*) FROM p JOIN q USING (pid)
	        WHERE p.f = q.f AND p.l = q.l AND p.v = q.v AND p.m = q.m)")"
if [ "${np:-0}" -ge 45 ] && [ "$np" = "$nb" ] && [ "$np" = "$same" ]; then
	pass "short-lived processes: $np exec children in each, all with equal faults, fallbacks," \
		"faults_vma and faults_mmap_fallback"
else
	fail "short-lived processes: perf $np, bpf $nb, equal $same (of at least 45)"
fi
read -r pu bu br <<<"$(sqlite3 -separator ' ' "$TMP/perf.db" "ATTACH '$TMP/bpf.db' AS b;
	SELECT (SELECT coalesce(sum(faults_mmap_unknown), 0) FROM main.process_stats
	        WHERE comm = 'bpftest_true'),
	       (SELECT coalesce(sum(faults_mmap_unknown), 0) FROM b.process_stats WHERE pid IN
	        (SELECT pid FROM main.process_stats WHERE comm = 'bpftest_true')),
	       (SELECT coalesce(sum(faults_mmap_retry), 0) FROM b.process_stats WHERE pid IN
	        (SELECT pid FROM main.process_stats WHERE comm = 'bpftest_true'))")"
if [ "${bu:-1}" = 0 ] && [ "${br:-0}" -ge "${pu:-1}" ]; then
	pass "exec children: perf's $pu mmap_unknown (the first touch of [vdso]) are mmap_retry on" \
		"bpf ($br), none unknown"
else
	fail "exec children: perf $pu mmap_unknown, bpf $bu mmap_unknown and $br mmap_retry"
fi

# Fallbacks without the faults collector (fallbacks alone, and the default's between bursts): the
# BPF program tells lock_mm_and_find_vma()'s read starts by the site in perf's registers, and
# skips trace-helper starts on a kernel that inlines the site (counters.bpf.c, start_site());
# against the perf faults collector's callchains, on every workload, swap-in and file retries
# included.
SUM_COLS="fallback_locks"
WITH_RETRIES=1 run_pair faults fallbacks
compare "fallbacks alone: fault_workload" "$FAULT_PID" "$LOST"
compare "fallbacks alone: outcome_workload anon" "$ANON_PID" "$LOST"
compare "fallbacks alone: outcome_workload file" "$FILE_PID" "$LOST"
compare "fallbacks alone: outcome_workload swap" "$SWAP_PID" "$LOST"

# Times: mmaplock alone on both sides, so neither probe takes a callchain or a stack. Measured
# on 6.18 (2 CPUs, loaded): with both attached, in either attach order, a BPF wait is ~2.5 us
# longer and a BPF write hold ~2.3 us shorter than the perf path's timing of the same event
# (~1 us and ~0.1 us since on_start shares perf's probe as a classic tracepoint program);
# on long (contended) waits that is ~1%, on uncontended ones it doubles them. Why is not
# understood yet (README, "BPF source"): until it is, the times must agree within 1% or differ
# by at most MAX_OFFSET_NS per timed event (waits for wait_ns, write acquisitions for holds).
MAX_OFFSET_NS=${MAX_OFFSET_NS:-5000}
SUM_COLS="mmap_lock_waits mmap_lock_wait_ns"
run_pair mmaplock mmaplock
compare fault_workload "$FAULT_PID" "$LOST"
compare "outcome_workload anon" "$ANON_PID" "$LOST"
SUM_COLS="mmap_lock_write mmap_lock_write_hold_ns"
compare fault_workload "$FAULT_PID" "$LOST"
compare "outcome_workload anon" "$ANON_PID" "$LOST"

# --- failure paths ------------------------------------------------------------------------------
# failure NAME PATTERN OPTION...: a daemon with --source auto and OPTION... must log PATTERN in
# one "BPF source unavailable" line, report mmaplock on perf with that reason, and keep running.
failure() {
	local name=$1 pattern=$2 line src note
	shift 2
	DB=$TMP/$name.db
	start_mmlockd --collectors mmaplock,fallbacks --source auto "$@"
	sleep 1.5
	http_get /api/v1/status "$TMP/status.json"
	read -r src _ note < <(python3 "$TMP/status.py" "$TMP/status.json" mmaplock)
	line=$(grep -c 'BPF source unavailable' "$TMP/mmlockd.log")
	if [ "$line" = 1 ] && grep 'BPF source unavailable' "$TMP/mmlockd.log" | grep -q "$pattern"; then
		pass "$name: one line: $(grep -m1 -o 'BPF source unavailable.*' "$TMP/mmlockd.log")"
	else
		fail "$name: expected one 'BPF source unavailable' line matching '$pattern', got $line"
	fi
	if [ "$src" = perf ] && echo "$note" | grep -q "$pattern"; then
		pass "$name: /api/v1/status shows mmaplock on perf: $note"
	else
		fail "$name: /api/v1/status shows mmaplock on '$src': $note"
	fi
	mmlockd_alive
	cp "$TMP/mmlockd.log" "$TMP/$name.log"
	sigterm_mmlockd
}

failure no_btf 'no kernel BTF at /nonexistent' --btf /nonexistent
failure verifier 'verifier rejected program on_fault: .*invalid mem access' --bpf-refuse on
if faults=$(sqlite3 "$TMP/verifier.db" "SELECT coalesce(sum(faults), 0) FROM process_stats") &&
	[ "$faults" -gt 0 ]; then
	pass "verifier rejection: the perf rings counted $faults faults"
else
	fail "verifier rejection: no faults counted on the perf rings"
fi

# Unprivileged: run as nobody, no capabilities (the database in a directory nobody may write):
# neither BPF nor the perf rings can open, so the daemon refuses in one line that says so and
# what any user can run instead, and makes no database.
mkdir -p "$TMP/nobody" && chown nobody "$TMP/nobody"
timeout -k 2 20 setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
	"$(runnable_by_nobody "$MMLOCKD")" --config "$CONF" --db "$TMP/nobody/mmlockd.db" \
	--listen "127.0.0.1:$(free_port)" --collectors mmaplock,fallbacks --source auto \
	>"$TMP/nobody.log" 2>&1 </dev/null
rc=$?
if [ "$rc" = 1 ] && [ "$(grep -c . "$TMP/nobody.log")" = 1 ] &&
	grep -q 'need root' "$TMP/nobody.log" && [ ! -e "$TMP/nobody/mmlockd.db" ]; then
	pass "unprivileged: exit 1, one line: $(head -c 200 "$TMP/nobody.log")"
else
	fail "unprivileged: exit $rc, not one 'need root' line: $(head -n 5 "$TMP/nobody.log")"
fi

# --source bpf where BPF cannot run: refuses to start, saying why.
"$MMLOCKD" --config "$CONF" --btf /nonexistent --db "$TMP/refuse.db" \
	--listen "127.0.0.1:$(free_port)" --collectors mmaplock --source bpf >"$TMP/refuse.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'source = bpf.*no kernel BTF' "$TMP/refuse.log"; then
	pass "--source bpf without BTF: exit $rc, $(grep -m1 -o 'BPF source.*' "$TMP/refuse.log")"
else
	fail "--source bpf without BTF: exit $rc, $(head -n 3 "$TMP/refuse.log")"
fi

summary_and_exit
