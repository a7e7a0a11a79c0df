#!/bin/sh
# Installs what mmlockd needs on Debian 12, by need, then extracts libperf's sources from Debian's
# linux-source-6.12 package into subprojects/libperf/linux/ (ignored by git) and installs the npm
# packages of package-lock.json into node_modules/ (ignored by git).
#   scripts/deps.sh            what building and running need (`make build`, `make run`)
#   scripts/deps.sh --test     that, and the test tools (`make test`, `make fuzz`)
#   scripts/deps.sh [--test] PKG...   more Debian packages the same way (`make deb`: its tools)
# Idempotent and quiet when everything is already there; must run as root when anything is
# missing. README.md ("What the two commands install") lists both sets and how to remove them:
# keep that list in step with this file.
set -eu
cd "$(dirname "$0")/.."

TEST=no
if [ "${1:-}" = --test ]; then
	TEST=yes
	shift
fi

# Building: the compiler and meson; libtraceevent, SQLite and libmicrohttpd; linux-source-6.12 and
# xz for libperf's sources (Debian ships no libperf); python3 for scripts/embed.py (the schema and
# the page embedded into the binary).
PKGS="build-essential meson ninja-build pkg-config libtraceevent-dev libsqlite3-dev libmicrohttpd-dev
linux-source-6.12 xz-utils python3"
# The BPF source (daemon/bpfsource.c, plugins/bpf/): libbpf, clang -target bpf, bpftool for
# vmlinux.h and the skeleton; without them meson builds the perf path only (-Dbpf=auto).
PKGS="$PKGS libbpf-dev clang llvm bpftool"
# daemon/privilege.c: the seccomp filters of the HTTP and collection threads (build and runtime).
PKGS="$PKGS libseccomp-dev libseccomp2"
# npm installs the page's charting library (uPlot, embedded into the binary) from
# package-lock.json: Debian's nodejs and npm, unless a node with npm is installed already
# (NodeSource's nodejs bundles npm and conflicts with Debian's npm package).
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"

if [ "$TEST" = yes ]; then
	# sqlite3 and curl: the integration tests read the database and the HTTP API with them.
	PKGS="$PKGS sqlite3 curl"
	# perf stat / perf lock contention: what the privileged tests compare mmlockd with.
	PKGS="$PKGS linux-perf"
	# promtool (tests/unit/test_dist.sh) and a real Prometheus (tests/prometheus/).
	PKGS="$PKGS prometheus"
	# systemd-analyze verify of the installed unit and drop-ins (test_install.sh); Debian's
	# systemd package carries it even where PID 1 is not systemd. man -l of mmlockd(8).
	PKGS="$PKGS systemd man-db groff-base"
	# The sanitizer and fuzzing build (build-asan/, tests/fuzz/): clang with libFuzzer and the
	# ASan/UBSan runtimes.
	PKGS="$PKGS clang-14 libfuzzer-14-dev libclang-rt-14-dev"
	# The web page's browser tests (tests/browser/) run Debian's chromium.
	PKGS="$PKGS chromium"
	# The house rules' layout check (scripts/house-rules.py, test house_rules): clang-format of
	# the version the tree is laid out with.
	PKGS="$PKGS clang-format-14"
fi
PKGS="$PKGS $*"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "mmlockd: missing Debian packages:$missing; run as root (or apt-get install them)" >&2
		exit 1
	fi
	echo "mmlockd: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	# A fresh machine has no package lists yet; refresh them once before installing.
	apt-get update -q
	apt-get install -y -q --no-install-recommends $missing
fi

SRC=subprojects/libperf/linux
TARBALL=/usr/src/linux-source-6.12.tar.xz
if [ ! -f "$SRC/.complete" ]; then
	echo "mmlockd: extracting libperf sources from $TARBALL"
	rm -rf "$SRC"
	mkdir -p "$SRC"
	xz -T0 -dc "$TARBALL" | tar -x -C "$SRC" --strip-components=1 \
		--wildcards 'linux-source-6.12/tools/lib/perf/*' 'linux-source-6.12/tools/lib/api/*' \
		'linux-source-6.12/tools/lib/*.c' 'linux-source-6.12/tools/lib/*.h' \
		'linux-source-6.12/tools/include/*' 'linux-source-6.12/tools/arch/x86/include/*'
	touch "$SRC/.complete"
fi

# npm packages of package-lock.json into node_modules/, again when the lock file changed since
# the last install: for building, uPlot only (--omit=dev); for testing, also the browser tests'
# driver (playwright-core). The marker holds the lock file and the set installed.
want="$(cat package-lock.json) omit-dev=$([ "$TEST" = yes ] && echo no || echo yes)"
have=$(cat node_modules/.mmlockd-package-lock 2>/dev/null || true)
# The marker of an earlier deps.sh, which always installed both sets.
cmp -s package-lock.json node_modules/.mmlockd-package-lock.json 2>/dev/null &&
	have="$(cat package-lock.json) omit-dev=no"
# A test install serves building as well: no reinstall without the dev packages.
[ "$TEST" = no ] && [ "$have" = "$(cat package-lock.json) omit-dev=no" ] && have=$want
if [ "$have" != "$want" ]; then
	echo "mmlockd: installing the web page's npm packages (package-lock.json)"
	if [ "$TEST" = yes ]; then
		npm ci --no-audit --no-fund --loglevel=error
	else
		npm ci --omit=dev --no-audit --no-fund --loglevel=error
	fi
	printf '%s' "$want" >node_modules/.mmlockd-package-lock
fi
