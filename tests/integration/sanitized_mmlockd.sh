#!/bin/sh
# The mmlockd of the sanitizer build (build-asan/, ASan+UBSan), as the integration suite runs it:
# `test_daemon.sh sanitized_mmlockd.sh` with MMLOCKD_REAL=path/to/mmlockd. Instrumented, the
# collection thread decodes records ~3x slower, and with the default 256-page rings the suite's
# exact checks (every fault of a workload stored) lose records on a loaded 2-CPU machine; 1024
# pages per ring keep them exact. Everything else is the daemon's own: exec, so the pid, the
# name, signals and the exit status (a sanitizer report fails the check that stopped it) are
# mmlockd's. Subcommands pass through unchanged; a later --ring-pages on the line wins.
case ${1:-} in
record | replay | report) exec "$MMLOCKD_REAL" "$@" ;;
*) exec "$MMLOCKD_REAL" --ring-pages 1024 "$@" ;;
esac
