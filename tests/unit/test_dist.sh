#!/bin/sh
# The fleet files in dist/ against what mmlockd exports: `promtool check rules` on
# dist/prometheus/mmlockd.rules.yml, `promtool test rules` (tests/unit/rules_test.yml: an alert
# fires on a unit whose fallback share jumps, not on one that was always high), the Grafana
# dashboard is valid JSON with panels and targets, and every mmlockd_* metric name the dashboard
# and the rules use is a family of mmlockd's exposition (prom_dump: every collector running, with
# per-cgroup and per-process series), so a rename cannot leave them reading nothing.
# Exits 77 (skipped) without promtool.
#
# usage: test_dist.sh PATH/TO/prom_dump SOURCE_DIR
set -eu
dump=${1:?usage: test_dist.sh PROM_DUMP SOURCE_DIR}
src=${2:?usage: test_dist.sh PROM_DUMP SOURCE_DIR}
command -v promtool >/dev/null 2>&1 || { echo "SKIP: promtool not found (Debian package prometheus)"; exit 77; }
rules=$src/dist/prometheus/mmlockd.rules.yml
dash=$src/dist/grafana/mmlockd.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

promtool check rules "$rules" >"$tmp/out" 2>&1 || { cat "$tmp/out"; echo "FAIL: promtool check rules"; fail=1; }
grep SUCCESS "$tmp/out" || true
(cd "$src/tests/unit" && promtool test rules rules_test.yml) >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; echo "FAIL: promtool test rules"; fail=1; }
grep -q SUCCESS "$tmp/out" && echo "promtool test rules rules_test.yml: SUCCESS"

python3 - "$dash" <<'PY' || { echo "FAIL: dashboard"; fail=1; }
import json, sys
d = json.load(open(sys.argv[1]))
panels = [p for p in d["panels"] if p["type"] != "row"]
assert d["uid"] and d["title"] and panels, "no uid, title or panels"
for p in panels:
    assert p.get("targets") and all(t.get("expr") for t in p["targets"]), "panel %r has no query" % p["title"]
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "duplicate panel ids"
print("dashboard: %d panels, %d queries" % (len(panels), sum(len(p["targets"]) for p in panels)))
PY

# Both configurations' families (prom_dump bursts: the estimated outcome family).
{ "$dump"; "$dump" bursts; } >"$tmp/metrics"
sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' "$tmp/metrics" | sort -u >"$tmp/families"
# Metric names, not the recording rules' level:metric:operation names.
grep -ohE '(^|[^:a-z0-9_])mmlockd_[a-z0-9_]+' "$rules" "$dash" | sed 's/^[^m]//' | sort -u >"$tmp/used"
missing=$(comm -23 "$tmp/used" "$tmp/families")
if [ -n "$missing" ]; then
	echo "FAIL: used by the dashboard or the rules but not exported: $missing"
	fail=1
else
	echo "all $(wc -l <"$tmp/used") mmlockd_* names of the dashboard and rules are exported families"
fi
exit $fail
