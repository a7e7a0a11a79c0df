#!/bin/bash
# test_prometheus.sh: the shipped Prometheus rules (dist/prometheus/mmlockd.rules.yml) and Grafana
# dashboard (dist/grafana/mmlockd.json) against Debian's real Prometheus server scraping real
# daemons, and the fleet snippets of docs/fleet.md run as they are written there.
#
# Usage: test_prometheus.sh MMLOCKD OUTCOME_WORKLOAD SOURCE_DIR
#
# Starts, on 127.0.0.1 and free ports only, with everything under one temporary directory:
#   - mmlockd "defaults" on its default collectors (what a fleet runs), and mmlockd "optin" with
#     the opt-in collectors the dashboard has panels for (mmaplock, faults) on the perf rings with
#     the smallest ring (--ring-pages 8), which the workload overruns: its lost events provoke
#     the MmlockdEventsLost alert. Both with 1-second windows.
#   - outcome_workload anon (faults, and fallbacks to mmap_lock while its writers mprotect) in a
#     cgroup of its own, /mmlockd-prom-PID (unified hierarchy, and v1 memory where mounted).
#   - Prometheus "main" (scrape and rule evaluation every second) with the shipped rules file as
#     it is, scraping both daemons as job "mmlockd" (the scrape job of docs/fleet.md), and
#     remote-writing with the docs' write_relabel_configs;
#   - Prometheus "global", federating from "main" with the docs' federation job;
#   - Prometheus "longterm", a remote-write receiver for "main";
#   - Prometheus "history", scraping "defaults" with a copy of the shipped rules whose only change
#     is the jump alerts' `for: 10m` shortened to 5s, and an hour before backfilled (the unit's
#     recorded fallback-wait rate at 1/s, 70 to 50 minutes ago).
# check_prometheus.py then polls (up to PROM_SECONDS, default 100) until: every recording rule has
# a series (the per-unit ones for the workload's unit); the dashboard's variables resolve; every
# panel's query, variables substituted ($instance = both daemons, $cgroup = the workload's unit,
# $__rate_interval = 1m), returns data (panels of opt-in collectors from "optin"); the alert
# MmlockdEventsLost fires on "optin", and MmlockdStoreErrors, MmlockdCollectorFailed and
# MmlockdDown, whose conditions nothing provokes, stay inactive, and so does
# MmlockdFallbackWaitsJumped, which has no hour before on "main"; on "history" that alert fires
# for the workload's unit (its waits now against the backfilled hour before) and
# MmlockdFallbackShareJumped, with no backfilled share, does not; "global" has every recorded
# series and no raw one; "longterm" the recorded series and mmlockd_collector_up only. Every
# rule, panel and alert proved is printed as a PASS line.
#
# Exit status: 0 passed, 1 a check failed, 77 skipped (not root, no mmap_lock tracepoints, no
# cgroup hierarchy to make a cgroup in). KEEP_TMP=1 keeps the temporary directory (the
# Prometheus configurations and logs).
set -u -o pipefail
TEST_NAME=test_prometheus
PROMS=()
WPID=
CGS=()
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh"

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local p
	stop_process "$WPID" TERM 100
	for p in "${PROMS[@]}"; do stop_process "$p" TERM; done
	stop_process "${defaults_PID:-}" TERM
	stop_process "${optin_PID:-}" TERM # start_daemon's
	for d in "${CGS[@]}"; do rmdir "$d" 2>/dev/null; done
	remove_tmp
}

if [ $# -ne 3 ] || [ ! -x "$1" ] || [ ! -x "$2" ] || [ ! -d "$3" ]; then
	echo "usage: $0 MMLOCKD OUTCOME_WORKLOAD SOURCE_DIR" >&2
	exit 2
fi
MMLOCKD=$1
WORKLOAD=$2
SRC=$(cd "$3" && pwd) || exit 2
RULES=$SRC/dist/prometheus/mmlockd.rules.yml
DASHBOARD=$SRC/dist/grafana/mmlockd.json
FLEET=$SRC/docs/fleet.md
need_root "system-wide tracepoints, cgroups"
need_tracepoints mmap_lock/mmap_lock_start_locking
need_tools prometheus curl python3

make_tmp prometheus /var/tmp
empty_conf

CG=/mmlockd-prom-$$
make_cgroups "$CG"

# snippet MARKER: the fenced yaml block that follows the line "<!-- test_prometheus: MARKER -->"
# in docs/fleet.md, without its indentation.
snippet() {
	awk -v m="<!-- test_prometheus: $1 -->" '
		index($0, m) { found = 1; next }
		found && /```yaml/ { inblock = 1; match($0, /^ */); ind = RLENGTH; next }
		inblock && /```/ { exit }
		inblock { print substr($0, ind + 1) }' "$FLEET"
}
[ -f "$FLEET" ] || fatal "$FLEET is missing"
for m in scrape federation remote_write; do
	snippet "$m" >"$TMP/$m.yml"
	[ -s "$TMP/$m.yml" ] || fatal "no '<!-- test_prometheus: $m -->' yaml block in $FLEET"
done

start_daemon defaults
start_daemon optin --collectors mmaplock,faults --source perf --ring-pages 8
# shellcheck disable=SC2154 # set by start_daemon
TARGETS="'127.0.0.1:$defaults_PORT', '127.0.0.1:$optin_PORT'"
# As systemd starts a service: a shell joins the unit's cgroup(s), then execs the workload.
procs=$(printf '%s/cgroup.procs ' "${CGS[@]}")
# shellcheck disable=SC2016 # $$ is the inner shell's
sh -c 'for f in '"$procs"'; do echo $$ >"$f" || exit 1; done; exec "$0" "$@"' "$WORKLOAD" \
	anon --rounds 100000000 --writer-delay-us 200 --dir "$TMP" >"$TMP/workload.out" 2>&1 &
WPID=$!
log "workload: outcome_workload anon, pid $WPID, in $CG"

# start_prometheus NAME CONFIG [FLAG...]: Prometheus on a free loopback port with its data in
# $TMP/NAME; sets PROM_PORT once /-/ready answers (up to ~30 s), or is fatal.
start_prometheus() {
	local name=$1 conf=$2 port pid
	shift 2
	port=$(free_port) || fatal "no free loopback port"
	promtool check config "$conf" >"$TMP/$name.check" 2>&1 ||
		fatal "promtool check config $name: $(tail -n 3 "$TMP/$name.check" | tr '\n' ' ')"
	prometheus --config.file="$conf" --storage.tsdb.path="$TMP/$name" \
		--web.listen-address="127.0.0.1:$port" "$@" \
		>"$TMP/$name.log" 2>&1 &
	pid=$!
	PROMS+=("$pid")
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || fatal "prometheus $name exited: $(tail -n 3 "$TMP/$name.log")"
		if curl -fsS --noproxy '*' --max-time 2 "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
			pass "prometheus $name (pid $pid) ready on 127.0.0.1:$port"
			PROM_PORT=$port
			return 0
		fi
		sleep 0.2
	done
	fatal "prometheus $name did not become ready: $(tail -n 3 "$TMP/$name.log")"
}

# targets LIST: the snippet's example targets replaced by LIST (its static_configs line).
targets() { sed -E "s|targets: \[[^]]*\]|targets: [$1]|"; }
indent() { sed 's/^/  /'; }

# The receiver of remote write first ("main" writes to it from its start).
cat >"$TMP/longterm.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
EOF
start_prometheus longterm "$TMP/longterm.yml" --web.enable-remote-write-receiver
LONGTERM=127.0.0.1:$PROM_PORT

# scrape_config RULES TARGETS: the docs' scrape job and rule_files line with this test's daemons,
# intervals of a second and the rules file RULES.
scrape_config() {
	echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
	sed -E -e "s|^([[:space:]]*scrape_interval:).*|\1 1s|" \
		-e "s|^rule_files:.*|rule_files: ['$1']|" "$TMP/scrape.yml" | targets "$2"
}
# "main": the shipped file; the docs' remote_write with the receiver's URL.
{
	scrape_config "$RULES" "$TARGETS"
	sed -E "s|url: .*|url: http://$LONGTERM/api/v1/write|" "$TMP/remote_write.yml"
} >"$TMP/main.yml"
grep -q "rule_files: \['$RULES'\]" "$TMP/main.yml" || fatal "the scrape snippet has no rule_files line"
start_prometheus main "$TMP/main.yml"
MAIN=127.0.0.1:$PROM_PORT

# "global": the docs' federation job, federating from "main".
{
	echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
	echo "scrape_configs:"
	targets "'$MAIN'" <"$TMP/federation.yml" | indent
} >"$TMP/global.yml"
start_prometheus global "$TMP/global.yml"
GLOBAL=127.0.0.1:$PROM_PORT

# "history": the shipped rules with only the jump alerts' `for: 10m` shortened to 5s (a test of
# minutes cannot wait ten), scraping the defaults daemon, with an hour before backfilled into its
# storage (promtool tsdb create-blocks-from openmetrics): the recorded fallback-wait rate of the
# workload's unit, 1/s from 70 to 50 minutes ago. The shipped MmlockdFallbackWaitsJumped compares
# the rate now with that (offset 1h): it must fire for the unit once the workload's waits pass the
# rule's floor (10/s) and three times the hour before; MmlockdFallbackShareJumped, whose hour
# before is not there, must not.
sed -E 's/^( +for:) 10m$/\1 5s/' "$RULES" >"$TMP/rules.for5s.yml"
[ "$(diff "$RULES" "$TMP/rules.for5s.yml" | grep -c '^>')" -eq 3 ] ||
	fatal "the three jump alerts' 'for: 10m' are not in $RULES"
now=$(date +%s)
{
	echo "# TYPE cgroup:mmlockd_fault_fallback_waits:rate5m gauge"
	for t in $(seq $((now - 4200)) 15 $((now - 3000))); do
		echo "cgroup:mmlockd_fault_fallback_waits:rate5m{cgroup=\"$CG\",instance=\"127.0.0.1:$defaults_PORT\"} 1 $t"
	done
	echo "# EOF"
} >"$TMP/hour_before.om"
promtool tsdb create-blocks-from openmetrics "$TMP/hour_before.om" "$TMP/history" \
	>"$TMP/backfill.log" 2>&1 || fatal "backfill failed: $(tail -n 3 "$TMP/backfill.log")"
scrape_config "$TMP/rules.for5s.yml" "'127.0.0.1:$defaults_PORT'" >"$TMP/history.yml"
start_prometheus history "$TMP/history.yml"
HISTORY=127.0.0.1:$PROM_PORT

log "--- $RULES (as shipped), $DASHBOARD; snippets from $FLEET"
python3 "$(dirname "$0")/check_prometheus.py" --prom "http://$MAIN" \
	--dashboard "$DASHBOARD" --cgroup "$CG" \
	--instance "defaults=127.0.0.1:$defaults_PORT" --instance "optin=127.0.0.1:$optin_PORT" \
	--optin optin --firing MmlockdEventsLost=optin \
	--inactive MmlockdStoreErrors --inactive MmlockdCollectorFailed --inactive MmlockdDown \
	--inactive MmlockdFallbackWaitsJumped \
	--history "http://$HISTORY" --history-firing MmlockdFallbackWaitsJumped \
	--history-inactive MmlockdFallbackShareJumped \
	--federated "http://$GLOBAL" \
	--remote-write "http://$LONGTERM" \
	--seconds "${PROM_SECONDS:-100}" | tee "$TMP/checks.out"
PASSED=$((PASSED + $(grep -c '^PASS' "$TMP/checks.out")))
while IFS= read -r line; do fail "${line#FAIL: }"; done < <(grep '^FAIL' "$TMP/checks.out")
[ "$(grep -c '^checked' "$TMP/checks.out")" -eq 1 ] || fail "check_prometheus.py did not finish"

kill -0 "$WPID" 2>/dev/null || fail "the workload ended early: $(tail -n 2 "$TMP/workload.out")"
for n in defaults optin; do
	pid_var=${n}_PID
	kill -0 "${!pid_var}" 2>/dev/null || fail "mmlockd $n exited on its own"
done
summary_and_exit
