#!/bin/sh
# Runs one libFuzzer target for SECONDS from its seeds and prints one line:
#   fuzz_NAME: N executions in S s, M findings (corpus C inputs)
# Usage: run.sh TARGET SECONDS SEED_DIR...
# Every file of the SEED_DIRs runs first (the seeds, and tests/fuzz/regressions/NAME: inputs that
# once found a bug). New inputs go to $CORPUS (default: a temporary directory, removed
# afterwards), never into a seed directory. A finding (crash, leak, sanitizer report, timeout, out of memory) is saved as
# ARTIFACT_DIR/crash-* etc. (default: the current directory) and fails the run: exit 1. The
# per-input timeout is 10 s (FUZZ_TIMEOUT): replay must never take longer on any input.
set -u
target=$1 seconds=$2
shift 2
corpus=${CORPUS:-}
name=$(basename "$target")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$corpus" ] || corpus=$tmp/corpus
mkdir -p "$corpus"
artifacts=${ARTIFACT_DIR:-.}
mkdir -p "$artifacts"
# Leaks count as findings; lsan.supp lists the known ones in libraries that are not ours.
export LSAN_OPTIONS="suppressions=$(dirname "$0")/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
"$target" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$artifacts/$name-" ${FUZZ_ARGS:-} \
	"$corpus" "$@" >"$tmp/log" 2>&1
rc=$?
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/log" | tail -n 1)
# Findings: every artifact libFuzzer wrote in this run.
findings=$(grep -c '^artifact_prefix=.*Test unit written to\|Test unit written to' "$tmp/log")
ncorpus=$(find "$corpus" -type f | wc -l)
echo "$name: ${execs:-0} executions in $seconds s, $findings findings (corpus $ncorpus inputs)"
if [ "$rc" != 0 ] || [ "$findings" != 0 ]; then
	tail -n 60 "$tmp/log"
	exit 1
fi
