# The two commands of the README, for a fresh Debian 12 machine (as root):
#   make run    install what is missing, build, run mmlockd in the foreground on its defaults
#   make test   install what is missing, build, run the unit, integration and privileged suites
#   make lab    the kernel lab (lab/README.md): vanilla and patched 6.12 under qemu, ~1 h cold
#   make bench  the overhead benchmark (bench/run.py): 15-20 min, results in bench/results/;
#               BENCH_ARGS="--suite breakdown" for the per-collector costs
#   make install  meson install: binary, unit, mmlockd.conf, mmlockd(8), dashboard and rules
#               under meson's prefix (/usr/local); DESTDIR=D stages them under D
# Also: make build, make clean. ARGS="..." passes flags to mmlockd in `make run`.
BUILD ?= build
ARGS ?=
BENCH_ARGS ?=

.PHONY: all deps build run test clean lab bench install

all: build

deps:
	@./scripts/deps.sh

build: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD) --buildtype=debugoptimized
	@ninja -C $(BUILD)

run: build
	./$(BUILD)/mmlockd $(ARGS)

test: build
	@rc=0; meson test -C $(BUILD) --print-errorlogs --num-processes 1 \
		--suite unit --suite integration --suite privileged || rc=$$?; \
	python3 scripts/test-summary.py $(BUILD)/meson-logs/testlog.json; exit $$rc

lab: build
	@./lab/run.sh all

install: build
	meson install -C $(BUILD) --no-rebuild $(if $(DESTDIR),--destdir $(DESTDIR))

clean:
	rm -rf $(BUILD)

bench: build
	python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)
