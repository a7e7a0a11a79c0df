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
#   - Prometheus "longterm", a remote-write receiver for "main".
# check_prometheus.py then polls (up to PROM_SECONDS, default 100) until: every recording rule has
# a series (the per-unit ones for the workload's unit); the dashboard's variables resolve; every
# panel's query, variables substituted ($instance = both daemons, $cgroup = the workload's unit,
# $__rate_interval = 1m), returns data (panels of opt-in collectors from "optin"); the alert
# MmlockdEventsLost fires on "optin", and MmlockdStoreErrors, MmlockdCollectorFailed and
# MmlockdDown, whose conditions nothing provokes, stay inactive; "global" has every recorded
# series and no raw one; "longterm" the recorded series and mmlockd_collector_up only. Every
# rule, panel and alert proved is printed as a PASS line. The shipped alerts that compare with an
# hour before (MmlockdFallbackShareJumped, ...) cannot fire in a test of minutes; they are
# evaluated here (health ok) and proved by `promtool test rules` (tests/unit/rules_test.yml).
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

# "main": the docs' scrape job and rule_files line with this test's daemons and the shipped file;
# the docs' remote_write with the receiver's URL.
{
	echo "global: {scrape_interval: 1s, evaluation_interval: 1s}"
	sed -E -e "s|^([[:space:]]*scrape_interval:).*|\1 1s|" \
		-e "s|^rule_files:.*|rule_files: ['$RULES']|" "$TMP/scrape.yml" |
		targets "$TARGETS"
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

log "--- $RULES (as shipped), $DASHBOARD; snippets from $FLEET"
python3 "$(dirname "$0")/check_prometheus.py" --prom "http://$MAIN" \
	--dashboard "$DASHBOARD" --cgroup "$CG" \
	--instance "defaults=127.0.0.1:$defaults_PORT" --instance "optin=127.0.0.1:$optin_PORT" \
	--optin optin --firing MmlockdEventsLost=optin \
	--inactive MmlockdStoreErrors --inactive MmlockdCollectorFailed --inactive MmlockdDown \
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
