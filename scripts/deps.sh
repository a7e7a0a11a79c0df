#!/bin/sh
# Installs what building and testing mmlockd needs on Debian 12, then extracts libperf's sources
# from Debian's linux-source-6.12 package into subprojects/libperf/linux/ (ignored by git).
# Idempotent and quiet when everything is already there; must run as root when anything is missing.
# Arguments are more Debian packages to install the same way (`make deb`: its packaging tools).
set -eu
cd "$(dirname "$0")/.."

PKGS="build-essential meson ninja-build pkg-config libtraceevent-dev libsqlite3-dev libmicrohttpd-dev
linux-source-6.12 xz-utils sqlite3 curl linux-perf prometheus python3"
# The BPF source (daemon/bpfsource.c, plugins/bpf/): libbpf, clang -target bpf, bpftool for
# vmlinux.h and the skeleton; without them meson builds the perf path only (-Dbpf=auto).
PKGS="$PKGS libbpf-dev clang llvm bpftool"
# systemd-analyze verify of the installed unit (tests/integration/test_install.sh); Debian's
# systemd package carries it even where PID 1 is not systemd.
PKGS="$PKGS systemd"
# man -l of mmlockd(8) (test_install.sh).
PKGS="$PKGS man-db groff-base"
# daemon/privilege.c: the seccomp filters of the HTTP and collection threads (build and runtime).
PKGS="$PKGS libseccomp-dev libseccomp2"
# The sanitizer and fuzzing build of `make test` / `make fuzz` (build-asan/, tests/fuzz/): clang
# with libFuzzer and the ASan/UBSan runtimes.
PKGS="$PKGS clang-14 libfuzzer-14-dev libclang-rt-14-dev"
# The web page's browser tests (tests/browser/) run Debian's chromium.
PKGS="$PKGS chromium"
# npm installs the page's charting library (uPlot, embedded into the binary) and the browser tests'
# driver (playwright-core) from package-lock.json. Debian's nodejs and npm, unless a node with npm
# is installed already (NodeSource's nodejs bundles npm and conflicts with Debian's npm package).
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
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

# npm packages of package-lock.json into node_modules/ (ignored by git), again when the lock file
# changed since the last install.
if ! cmp -s package-lock.json node_modules/.mmlockd-package-lock.json 2>/dev/null; then
	echo "mmlockd: installing the web page's npm packages (package-lock.json)"
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json node_modules/.mmlockd-package-lock.json
fi
