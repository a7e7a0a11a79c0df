#!/bin/sh
# Runs prom_dump (a synthetic but realistic snapshot through mm_prom_format) and feeds its output
# to `promtool check metrics`, Prometheus's own parser and linter: any complaint, parse error or
# lint warning, fails the test. Exits 77 (meson's "skipped") when promtool is not installed.
#
# usage: promtool_check.sh PATH/TO/prom_dump
set -eu

dump=${1:?usage: promtool_check.sh PATH/TO/prom_dump}
if ! command -v promtool >/dev/null 2>&1; then
	echo "promtool not found (Debian package prometheus), skipping"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Both configurations: every collector with the split continuous, and the split in bursts with
# fault latency sampled (the estimated outcome family, the latency histogram).
for mode in "" bursts; do
	"$dump" $mode >"$tmp/metrics"
	if [ ! -s "$tmp/metrics" ]; then
		echo "prom_dump $mode printed nothing" >&2
		exit 1
	fi

	rc=0
	promtool check metrics <"$tmp/metrics" >"$tmp/report" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$tmp/report" ]; then
		echo "promtool check metrics failed on prom_dump $mode (exit $rc):" >&2
		cat "$tmp/report" >&2
		exit 1
	fi
	echo "promtool check metrics ${mode:-continuous}: $(grep -c '^# TYPE' "$tmp/metrics") families, no complaints"
done
