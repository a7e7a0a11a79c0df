#!/bin/bash
# test_install.sh: what `meson install --destdir D`, `make install DESTDIR=D` and `make uninstall`
# do, checked as an operator would use it:
#   1. the binary in <prefix>/<sbindir>, the unit in <prefix>/lib/systemd/system (or
#      -Dsystemdunitdir), mmlockd.8 in <mandir>/man8, the pristine mmlockd.conf, the unit's
#      drop-ins, the Grafana dashboard and the Prometheus rules in <datadir>/mmlockd, README.md
#      and docs/ in <datadir>/doc/mmlockd; make install gives the same files; nothing is
#      installed as <sysconfdir>/mmlockd.conf, so installing again keeps an operator's edited one;
#      make uninstall removes every installed file and keeps that one;
#   2. the unit's ExecStart is the installed binary (from meson's prefix, no placeholder left) and
#      the installed binary's default --config is <sysconfdir>/mmlockd.conf; --help, the man page,
#      the configuration, the unit and its drop-ins name installed documentation that exists;
#   3. `systemd-analyze verify` passes on the installed unit, alone and with each drop-in in
#      /etc/systemd/system/mmlockd.service.d/: run with --root=D (a copy of this system's unit
#      directory and /bin/kill next to the installed files, since PID 1 need not be systemd and
#      the prefix is not installed for real), so it checks ExecStart's binary and
#      Documentation=man:mmlockd(8) against what was installed; docs/fleet.md and
#      docs/hardening.md name their drop-in and show its settings as it has them;
#   4. `man -l` renders the page without a groff warning, and its source names every option of
#      `mmlockd --help` and of each command's --help, every sort key of `report --help`, every
#      subcommand, HTTP route, SQL view and metric family (those prom_dump formats, every
#      collector in both split modes, and, as root with tracefs, those a daemon running every
#      collector with fault latency serves on /metrics: families registered at run time, the
#      HTTP server's, the latency histogram), and has an EXIT STATUS section as --help has.
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
DOCDIR=$DATADIR/doc/mmlockd
DROPINS=(remote-scrape.conf unix-socket.conf)
want=("$SBINDIR/mmlockd" "$UNITDIR/mmlockd.service" "$MANDIR/man8/mmlockd.8"
	"$DATADIR/mmlockd/mmlockd.json" "$DATADIR/mmlockd/mmlockd.rules.yml"
	"$DATADIR/mmlockd/mmlockd.conf" "$DOCDIR/README.md" "$DOCDIR/docs/fleet.md"
	"$DOCDIR/docs/hardening.md" "$DOCDIR/docs/install.md")
for d in "${DROPINS[@]}"; do want+=("$DATADIR/mmlockd/mmlockd.service.d/$d"); done
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

# The operator's configuration: never installed, so a second install keeps an edited one.
if [ -e "$D$SYSCONFDIR/mmlockd.conf" ]; then
	fail "meson install wrote $SYSCONFDIR/mmlockd.conf, the operator's file"
fi
mkdir -p "$D$SYSCONFDIR"
{ cat "$D$DATADIR/mmlockd/mmlockd.conf"; echo "interval = 30"; } >"$D$SYSCONFDIR/mmlockd.conf"
cp "$D$SYSCONFDIR/mmlockd.conf" "$TMP/edited.conf"
meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet >"$TMP/install2.log" 2>&1
if cmp -s "$D$SYSCONFDIR/mmlockd.conf" "$TMP/edited.conf" &&
	! grep -qE '@(sbindir|sysconfdir|datadir|docdir)@' "$D$DATADIR/mmlockd/mmlockd.conf" &&
	grep -q "^#source = auto" "$D$DATADIR/mmlockd/mmlockd.conf"; then
	pass "installing again keeps the edited $SYSCONFDIR/mmlockd.conf; the pristine copy has its paths and source"
else
	fail "installing again changed $SYSCONFDIR/mmlockd.conf, or the pristine copy has a placeholder or lacks source: $(tail -n 2 "$TMP/install2.log")"
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

# Documentation the installed files point to exists where they say.
docs_named=$({ cat "$TMP/help.txt" "$D$MANDIR/man8/mmlockd.8" "$D$DATADIR/mmlockd/mmlockd.conf" \
	"$unit" "$D$DATADIR"/mmlockd/mmlockd.service.d/*.conf; } | grep -oE "$DOCDIR/[A-Za-z0-9_./-]*[a-z]" | sort -u)
absent=""
for f in $docs_named; do [ -e "$D$f" ] || absent="$absent $f"; done
if [ -n "$docs_named" ] && [ -z "$absent" ]; then
	pass "--help, mmlockd(8), mmlockd.conf, the unit and its drop-ins name $(echo "$docs_named" | wc -l) installed documents under $DOCDIR"
else
	fail "named but not installed:${absent:- (no $DOCDIR path named at all)}"
fi

mkdir -p "$D/usr/lib/systemd" "$D/bin"
cp -a /lib/systemd/system "$D/usr/lib/systemd/" && cp /bin/kill "$D/bin/"
if MANPATH=$D$MANDIR systemd-analyze verify --root="$D" mmlockd.service >"$TMP/verify" 2>&1; then
	pass "systemd-analyze verify on the installed unit (ExecStart, Documentation=man:mmlockd(8))"
else
	fail "systemd-analyze verify: $(tr '\n' ' ' <"$TMP/verify")"
fi
# Each drop-in as an operator installs it, and the page that documents it.
declare -A PAGE=([remote-scrape.conf]=fleet.md [unix-socket.conf]=hardening.md)
for d in "${DROPINS[@]}"; do
	dir=$D/etc/systemd/system/mmlockd.service.d
	mkdir -p "$dir" && cp "$D$DATADIR/mmlockd/mmlockd.service.d/$d" "$dir/"
	if MANPATH=$D$MANDIR systemd-analyze verify --root="$D" mmlockd.service >"$TMP/verify" 2>&1; then
		pass "systemd-analyze verify with the drop-in $d"
	else
		fail "systemd-analyze verify with the drop-in $d: $(tr '\n' ' ' <"$TMP/verify")"
	fi
	rm -r "$dir"
	# Its settings as the page shows them (the page names the binary as the Debian package
	# installs it, the drop-in as this prefix does).
	page=$SRC/docs/${PAGE[$d]}
	missing=""
	while read -r line; do
		grep -qxF -- "$line" <(sed 's|=/[^ ]*/mmlockd|=/usr/sbin/mmlockd|' "$page") ||
			missing="$missing '$line'"
	done < <(grep -vE '^(#|\[|$)' "$D$DATADIR/mmlockd/mmlockd.service.d/$d" | sed 's|=/[^ ]*/mmlockd|=/usr/sbin/mmlockd|')
	if grep -qF "mmlockd.service.d/$d" "$page" && [ -z "$missing" ]; then
		pass "docs/${PAGE[$d]} names the drop-in $d and shows each of its settings"
	else
		fail "docs/${PAGE[$d]} does not name mmlockd.service.d/$d or lacks:$missing"
	fi
done

page=$D$MANDIR/man8/mmlockd.8
MANWIDTH=100 man --warnings -l "$page" >"$TMP/man.txt" 2>"$TMP/man.err"
if [ -s "$TMP/man.txt" ] && [ ! -s "$TMP/man.err" ] && grep -q '^NAME' "$TMP/man.txt"; then
	pass "man -l renders mmlockd(8): $(wc -l <"$TMP/man.txt") lines, no warnings"
else
	fail "man -l: $(head -c 300 "$TMP/man.err")"
fi
# The page's source with font escapes removed and '\-' as '-'.
sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$page" >"$TMP/page"
# The metric families: prom_dump's (every collector; with and without the split in bursts; its
# made-up unmatched_events and global_events left out) and, where a daemon can run every
# collector, those it serves (the collectors' own counters registered at start, the HTTP
# server's, fault latency on the BPF source). Names without mmlockd_, and without the
# cgroup_/process_ of the per-unit and per-process copies the page describes once.
{ "$DUMP"; "$DUMP" bursts; } | sed -n 's/^# TYPE mmlockd_\([^ ]*\) .*/\1/p' |
	grep -vxE 'unmatched_events_total|global_events_total' >"$TMP/families.raw"
live="no daemon (needs root and tracefs)"
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/tracing/events ]; then
	PORT=$(free_port)
	"$BUILD/mmlockd" --config /dev/null --db "$TMP/live.db" --listen "127.0.0.1:$PORT" --interval 1 \
		--collectors all --fault-latency on >"$TMP/live.log" 2>&1 &
	LIVE_PID=$!
	for _ in $(seq 100); do
		grep -q collecting "$TMP/live.log" && break
		kill -0 "$LIVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2.5 # two windows: every family of a running collector is out
	if curl -fsS --noproxy '*' --max-time 10 "http://127.0.0.1:$PORT/metrics" -o "$TMP/live.metrics"; then
		sed -n 's/^# TYPE mmlockd_\([^ ]*\) .*/\1/p' "$TMP/live.metrics" >>"$TMP/families.raw"
		live="a daemon with every collector: $(grep -c '^# TYPE' "$TMP/live.metrics") families"
	else
		fail "the daemon with every collector served no /metrics: $(tail -n 3 "$TMP/live.log" | tr '\n' ' ')"
	fi
	kill -TERM "$LIVE_PID" 2>/dev/null
	wait "$LIVE_PID" 2>/dev/null
fi
sed -e '/^cgroup_processes$/!s/^\(cgroup\|process\)_//' "$TMP/families.raw" | sort -u >"$TMP/families"
words=(report record replay --units --compare --locks /metrics /api/v1/status /api/v1/processes
	/api/v1/history /api/v1/locks /api/v1/series /api/v1/top --source process_stats cgroup_stats lock_stats)
absent=""
while read -r f; do grep -qF "$f" "$TMP/page" || absent="$absent $f"; done <"$TMP/families"
for w in "${words[@]}"; do grep -qF -- "$w" "$TMP/page" || absent="$absent $w"; done
if [ -z "$absent" ]; then
	pass "mmlockd(8) names every subcommand, route, view and the $(wc -l <"$TMP/families") metric families (prom_dump and $live)"
else
	fail "mmlockd(8) does not name:$absent"
fi

# Every option of each --help, and every sort key of report's.
for c in "" report record replay; do "$D$SBINDIR/mmlockd" $c --help; done >"$TMP/helps.txt" 2>&1
grep -oE -- '--[a-z][a-z-]+' "$TMP/helps.txt" | sort -u >"$TMP/options"
sed -n '/--sort KEYS/,/(default/p' "$TMP/helps.txt" | sed -n '/numbers largest first/,$p' |
	tr ' ():' '\n\n\n\n' | grep -xE '[a-z_]+' | grep -vxE 'default|faults?' >"$TMP/sortkeys"
echo faults >>"$TMP/sortkeys"
absent=""
while read -r o; do grep -qF -- "$o" "$TMP/page" || absent="$absent $o"; done <"$TMP/options"
while read -r k; do grep -qwF -- "$k" "$TMP/page" || absent="$absent sort:$k"; done <"$TMP/sortkeys"
if [ -z "$absent" ] && [ "$(wc -l <"$TMP/sortkeys")" -ge 10 ]; then
	pass "mmlockd(8) names the $(wc -l <"$TMP/options") options of the four --help texts and $(wc -l <"$TMP/sortkeys") sort keys"
else
	fail "mmlockd(8) does not name:$absent (sort keys read from report --help: $(wc -l <"$TMP/sortkeys"))"
fi
if grep -q '^\.SH EXIT STATUS' "$page" && grep -q '^Exit status:' "$TMP/help.txt"; then
	pass "mmlockd(8) and --help have an exit status section"
else
	fail "no EXIT STATUS in mmlockd(8) or no 'Exit status:' in --help"
fi

# make uninstall removes what the last install put in D, and keeps the operator's file.
(cd "$D" && find . -type f | sort) >"$TMP/before-uninstall"
if make -s -C "$SRC" uninstall BUILD="$BUILD" >"$TMP/uninstall.log" 2>&1; then
	left=""
	while read -r f; do
		[ "$f" = ".$SYSCONFDIR/mmlockd.conf" ] && continue
		[ -e "$D/$f" ] && grep -qxF "$f" "$TMP/meson.files" && left="$left $f"
	done <"$TMP/before-uninstall"
	if [ -z "$left" ] && cmp -s "$D$SYSCONFDIR/mmlockd.conf" "$TMP/edited.conf"; then
		pass "make uninstall removes the $(wc -l <"$TMP/meson.files") installed files and keeps the edited $SYSCONFDIR/mmlockd.conf"
	else
		fail "make uninstall left:${left:- nothing} (edited conf kept: $(cmp -s "$D$SYSCONFDIR/mmlockd.conf" "$TMP/edited.conf" && echo yes || echo no))"
	fi
else
	fail "make uninstall: $(tail -n 3 "$TMP/uninstall.log" | tr '\n' ' ')"
fi
summary_and_exit
