// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_inject: loads bench/inject.bpf.c with --ns N (and --pid PID: only that process's user
 * faults pay), attaches it to exceptions:page_fault_user, prints "ready" and holds it until
 * SIGINT or SIGTERM. The paired benchmark's known cost (bench/paired.py, configuration inject).
 * With --toggle it loads the program and attaches and detaches it on command (toggle.h).
 * Run as root.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.skel.h"
#include "toggle.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int set_attached(void *ctx, bool on)
{
	struct mm_inject *s = ctx;

	if (!on) {
		mm_inject__detach(s);
		return 0;
	}
	return mm_inject__attach(s) ? -errno : 0;
}

static int parse(int argc, char **argv, unsigned long *ns, unsigned long *pid, bool *toggle)
{
	*ns = 0;
	*pid = 0;
	*toggle = false;
	for (int i = 1; i < argc; i += 2) {
		char *end;
		if (!strcmp(argv[i], "--toggle")) {
			*toggle = true;
			i--;
			continue;
		}
		unsigned long *v = !strcmp(argv[i], "--ns")    ? ns
				   : !strcmp(argv[i], "--pid") ? pid
							       : NULL;
		if (!v || i + 1 >= argc)
			return -1;
		errno = 0;
		*v = strtoul(argv[i + 1], &end, 10);
		if (errno || *end || end == argv[i + 1])
			return -1;
	}
	return *ns > 0 && *ns <= 100000 ? 0 : -1;
}

int main(int argc, char **argv)
{
	unsigned long ns, pid;
	bool toggle;
	if (parse(argc, argv, &ns, &pid, &toggle)) {
		fprintf(stderr, "usage: bench_inject --ns N (1..100000) [--pid PID] [--toggle] "
				"(SIGINT or SIGTERM stops it)\n");
		return 2;
	}
	libbpf_set_print(quiet);
	sigset_t set;
	bench_block_stop(&set);
	struct mm_inject *s = mm_inject__open();
	if (!s) {
		fprintf(stderr, "bench_inject: opening: %s\n", strerror(errno));
		return 1;
	}
	s->rodata->spin_ns = ns;
	s->rodata->target_tgid = (unsigned)pid;
	if (mm_inject__load(s) || (!toggle && mm_inject__attach(s))) {
		fprintf(stderr, "bench_inject: loading or attaching: %s\n", strerror(errno));
		mm_inject__destroy(s);
		return 1;
	}
	if (toggle) {
		int r = bench_toggle(&set, set_attached, s);
		mm_inject__destroy(s);
		return r;
	}
	bench_wait_stop(&set);
	mm_inject__destroy(s);
	return 0;
}
