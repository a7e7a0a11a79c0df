#!/bin/bash
# test_install.sh: what `meson install --destdir D` and `make install DESTDIR=D` lay out, checked
# as an operator would use it:
#   1. the binary in <prefix>/<sbindir>, the unit in <prefix>/lib/systemd/system (or
#      -Dsystemdunitdir), mmlockd.conf in <sysconfdir>, mmlockd.8 in <mandir>/man8, the Grafana
#      dashboard, the Prometheus rules and the pristine mmlockd.conf in <datadir>/mmlockd; make
#      install gives the same files; installing again keeps an edited mmlockd.conf;
#   2. the unit's ExecStart is the installed binary (from meson's prefix, no placeholder left) and
#      the installed binary's default --config is the installed mmlockd.conf;
#   3. `systemd-analyze verify` passes on the installed unit: run with --root=D (a copy of this
#      system's unit directory and /bin/kill next to the installed files, since PID 1 need not be
#      systemd and the prefix is not installed for real), so it checks ExecStart's binary and
#      Documentation=man:mmlockd(8) against what was installed;
#   4. `man -l` renders the page without a groff warning, and its source names every subcommand,
#      HTTP route, metric family (those of prom_dump, i.e. of every collector, plus the families
#      registered at run time) and SQL view.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR PROM_DUMP. Exit 77 without systemd-analyze or man.
set -u -o pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
SRC=$(cd "${2:?source dir}" && pwd)
DUMP=${3:?prom_dump}
for t in systemd-analyze man meson; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh installs it)"; exit 77; }
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PASSED=0 FAILED=0 TEST_NAME=test_install
# shellcheck source=tests/privileged/lib.sh
. "$(dirname "$0")/../privileged/lib.sh" # pass, fail, summary_and_exit

eval "$(meson introspect --buildoptions "$BUILD" | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
p = o["prefix"]
ab = lambda d: d if d.startswith("/") else p + "/" + d
unit = o.get("systemdunitdir") or p + "/lib/systemd/system"
print("PREFIX=%s SBINDIR=%s SYSCONFDIR=%s MANDIR=%s DATADIR=%s UNITDIR=%s" % (p, ab(o["sbindir"]),
      ab(o["sysconfdir"]), ab(o["mandir"]), ab(o["datadir"]), unit))')"

D=$TMP/destdir
meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log"; fatal "meson install --destdir failed"; }
want=("$SBINDIR/mmlockd" "$UNITDIR/mmlockd.service" "$SYSCONFDIR/mmlockd.conf"
	"$MANDIR/man8/mmlockd.8" "$DATADIR/mmlockd/mmlockd.json" "$DATADIR/mmlockd/mmlockd.rules.yml"
	"$DATADIR/mmlockd/mmlockd.conf")
missing=""
for f in "${want[@]}"; do [ -f "$D$f" ] || missing="$missing $f"; done
[ -x "$D$SBINDIR/mmlockd" ] || missing="$missing (executable $SBINDIR/mmlockd)"
if [ -z "$missing" ]; then pass "meson install --destdir lays out ${want[*]}"; else fail "missing after meson install:$missing"; fi

(cd "$D" && find . -type f | sort) >"$TMP/meson.files"
if make -s -C "$SRC" install BUILD="$BUILD" DESTDIR="$TMP/make-destdir" >"$TMP/make.log" 2>&1 &&
	(cd "$TMP/make-destdir" && find . -type f | sort) | cmp -s - "$TMP/meson.files"; then
	pass "make install DESTDIR= installs the same $(wc -l <"$TMP/meson.files") files"
else
	fail "make install DESTDIR=: $(tail -n 3 "$TMP/make.log" | tr '\n' ' ')"
fi

# A second install over the first keeps an edited configuration.
echo "interval = 30" >>"$D$SYSCONFDIR/mmlockd.conf"
meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >"$TMP/install2.log" 2>&1
if tail -n 1 "$D$SYSCONFDIR/mmlockd.conf" | grep -qx 'interval = 30' &&
	cmp -s "$D$DATADIR/mmlockd/mmlockd.conf" "$SRC/dist/mmlockd.conf"; then
	pass "installing again keeps the edited $SYSCONFDIR/mmlockd.conf"
else
	fail "installing again replaced the edited $SYSCONFDIR/mmlockd.conf: $(tail -n 2 "$TMP/install2.log")"
fi

unit=$D$UNITDIR/mmlockd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
if [ "$exec_start" = "$SBINDIR/mmlockd" ] && ! grep -qE '@(sbindir|sysconfdir)@' "$unit"; then
	pass "ExecStart=$exec_start (meson's prefix)"
else
	fail "ExecStart='$exec_start', expected $SBINDIR/mmlockd, or a placeholder is left"
fi
"$D$SBINDIR/mmlockd" --help >"$TMP/help.txt" 2>&1 # not piped into grep -q: SIGPIPE under pipefail
if grep -qF "(default: $SYSCONFDIR/mmlockd.conf, if it exists)" "$TMP/help.txt"; then
	pass "the installed binary reads $SYSCONFDIR/mmlockd.conf by default"
else
	fail "the installed binary's --help does not name $SYSCONFDIR/mmlockd.conf as its --config default"
fi

mkdir -p "$D/usr/lib/systemd" "$D/bin"
cp -a /lib/systemd/system "$D/usr/lib/systemd/" && cp /bin/kill "$D/bin/"
if MANPATH=$D$MANDIR systemd-analyze verify --root="$D" mmlockd.service >"$TMP/verify" 2>&1; then
	pass "systemd-analyze verify on the installed unit (ExecStart, Documentation=man:mmlockd(8))"
else
	fail "systemd-analyze verify: $(tr '\n' ' ' <"$TMP/verify")"
fi

page=$D$MANDIR/man8/mmlockd.8
MANWIDTH=100 man --warnings -l "$page" >"$TMP/man.txt" 2>"$TMP/man.err"
if [ -s "$TMP/man.txt" ] && [ ! -s "$TMP/man.err" ] && grep -q '^NAME' "$TMP/man.txt"; then
	pass "man -l renders mmlockd(8): $(wc -l <"$TMP/man.txt") lines, no warnings"
else
	fail "man -l: $(head -c 300 "$TMP/man.err")"
fi
# The page's source with font escapes removed and '\-' as '-'.
sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$page" >"$TMP/page"
"$DUMP" | sed -n 's/^# TYPE mmlockd_\([^ ]*\) .*/\1/p' |
	sed -e 's/^cgroup_processes$/cgroup_processes/' -e '/^cgroup_processes$/!s/^\(cgroup\|process\)_//' |
	grep -vxE 'unmatched_events_total|global_events_total' | sort -u >"$TMP/families"
# Families prom_dump cannot show: registered by collectors at run time, or contention's.
printf '%s\n' vmstat_total totals_events_total fallbacks_events_total faults_unmatched_total \
	mmaplock_unmatched_total contention_unmatched_total lock_contended_total \
	lock_wait_seconds_total >>"$TMP/families"
words=(report record replay --units --compare --locks /metrics /api/v1/status /api/v1/processes
	/api/v1/history /api/v1/locks /api/v1/series /api/v1/top --source process_stats cgroup_stats lock_stats)
absent=""
while read -r f; do grep -qF "$f" "$TMP/page" || absent="$absent $f"; done <"$TMP/families"
for w in "${words[@]}"; do grep -qF -- "$w" "$TMP/page" || absent="$absent $w"; done
if [ -z "$absent" ]; then
	pass "mmlockd(8) names every subcommand, route, view and the $(wc -l <"$TMP/families") metric families"
else
	fail "mmlockd(8) does not name:$absent"
fi
summary_and_exit
