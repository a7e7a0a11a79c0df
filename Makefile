# The two commands of the README, for a fresh Debian 12 machine (as root):
#   make run    install what building and running need (scripts/deps.sh), build, run mmlockd in
#               the foreground on its defaults
#   make test   install that and the test tools (scripts/deps.sh --test: perf, prometheus,
#               systemd, clang-14/libFuzzer, chromium, ...), build, run the unit, integration,
#               privileged and browser suites
#   make lab    the kernel lab (lab/README.md): vanilla and patched 6.12 under qemu, ~1 h cold
#   make lab-debian  the Debian guest lab (lab/README.md): the package under systemd on Debian
#               12 guests with Debian's 6.1 and 6.12 kernels under qemu, ~25 min cold
#   make bench  the overhead benchmark (bench/run.py; the paired method, bench/paired.py): ~40
#               min, bench/results/main.md; BENCH_ARGS="--quick" for a change (mix, the
#               controls and the defaults, ~5 min); BENCH_ARGS="--suite main" for the per-round
#               throughput view (throughput.md); "--suite breakdown" for per-collector costs;
#               BENCH_ARGS="--only footprint" for mmlockd's own memory and CPU alone (idle
#               processes, churn waves; ~18 min, ~8 min with --churn-procs 2000 --churn-waves 3)
#   make fuzz   the libFuzzer targets (tests/fuzz/) for FUZZ_SECONDS each (default 60), one after
#               the other; prints executions and findings per target. FUZZ_TARGETS="sample config"
#               picks some; the corpus grows in build-asan/fuzz-corpus/, findings land in
#               build-asan/fuzz-findings/.
#   make deb    the Debian package (debian/, dh with meson): installs its build tools and
#               Build-Depends, leaves mmlockd_VERSION_ARCH.deb here and runs lintian on it
#               (docs/install.md)
#   make install  meson install: binary, unit, mmlockd(8), the pristine mmlockd.conf, the unit's
#               drop-ins, dashboard and rules, README.md and docs/ under meson's prefix
#               (/usr/local); DESTDIR=D stages them under D. <sysconfdir>/mmlockd.conf is the
#               operator's: never installed nor removed (docs/install.md)
#   make uninstall  removes what the last make install (or meson install) installed, from
#               meson's install log (build/meson-logs/install-log.txt)
# Also: make build, make clean. ARGS="..." passes flags to mmlockd in `make run`.
# `make test` also builds build-asan/ (clang, ASan+UBSan, -Dfuzz=true) and runs the unit and
# integration suites there, plus a few seconds of each fuzz target (suite fuzz).
BUILD ?= build
ASAN_BUILD ?= build-asan
ARGS ?=
BENCH_ARGS ?=
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= sample recording config route replay

.PHONY: all deps deps-test build build-asan run test clean lab bench install uninstall fuzz deb lab-debian

all: build

deps:
	@./scripts/deps.sh

deps-test:
	@./scripts/deps.sh --test

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) --buildtype=debugoptimized
	@ninja -C $(BUILD)

run: build
	./$(BUILD)/mmlockd $(ARGS)

build-asan: deps-test
	@[ -f $(ASAN_BUILD)/build.ninja ] || CC=clang-14 meson setup $(ASAN_BUILD) \
		--buildtype=debugoptimized -Db_sanitize=address,undefined -Dfuzz=true
	@ninja -C $(ASAN_BUILD)

test: deps-test build build-asan
	@rc=0; meson test -C $(BUILD) --print-errorlogs --num-processes 1 \
		--suite unit --suite integration --suite privileged --suite browser || rc=$$?; \
	meson test -C $(ASAN_BUILD) --print-errorlogs --num-processes 1 \
		--suite unit --suite integration --suite fuzz || rc=$$?; \
	python3 scripts/test-summary.py $(BUILD)/meson-logs/testlog.json \
		$(ASAN_BUILD)/meson-logs/testlog.json; exit $$rc

fuzz: build-asan
	@rc=0; for t in $(FUZZ_TARGETS); do \
		CORPUS=$(ASAN_BUILD)/fuzz-corpus/$$t ARTIFACT_DIR=$(ASAN_BUILD)/fuzz-findings \
		tests/fuzz/run.sh $(ASAN_BUILD)/tests/fuzz/fuzz_$$t $(FUZZ_SECONDS) \
			$(ASAN_BUILD)/tests/fuzz/seeds/$$t \
			$$( [ -d tests/fuzz/regressions/$$t ] && echo tests/fuzz/regressions/$$t ) \
			|| rc=1; \
	done; exit $$rc

lab: build
	@./lab/run.sh all

# the package from `make deb` (built by lab/debian.sh when missing or older than the sources)
lab-debian:
	@./lab/debian.sh all

install: build
	meson install -C $(BUILD) --no-rebuild $(if $(DESTDIR),--destdir $(DESTDIR))

uninstall:
	ninja -C $(BUILD) uninstall

DEB_VERSION = $(shell dpkg-parsechangelog -SVersion 2>/dev/null)
DEB_ARCH = $(shell dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null)
deb:
	@./scripts/deps.sh dpkg-dev debhelper lintian
	@dpkg-checkbuilddeps 2>/dev/null || apt-get build-dep -y -q ./
	dpkg-buildpackage -b -us -uc
	mv ../mmlockd_$(DEB_VERSION)_$(DEB_ARCH).deb ../mmlockd-dbgsym_$(DEB_VERSION)_$(DEB_ARCH).deb \
		../mmlockd_$(DEB_VERSION)_$(DEB_ARCH).buildinfo ../mmlockd_$(DEB_VERSION)_$(DEB_ARCH).changes .
	lintian --fail-on error mmlockd_$(DEB_VERSION)_$(DEB_ARCH).deb

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

bench: build
	python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)
