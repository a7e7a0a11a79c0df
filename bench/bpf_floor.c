// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_bpf_floor: loads and attaches bench/floor.bpf.c's empty programs, prints "ready", and
 * holds them until SIGINT or SIGTERM. bench/run.py reads their run_time_ns / run_cnt from this
 * process's fdinfo, as it reads mmlockd's: what kernel.bpf_stats_enabled itself counts per run.
 * Run as root.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "floor.skel.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		fprintf(stderr,
			"usage: bench_bpf_floor (no arguments; SIGINT or SIGTERM stops it)\n");
		return 2;
	}
	libbpf_set_print(quiet);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct mm_floor *s = mm_floor__open_and_load();
	if (!s) {
		fprintf(stderr, "bench_bpf_floor: loading the empty programs failed: %s\n",
			strerror(errno));
		return 1;
	}
	if (mm_floor__attach(s)) {
		fprintf(stderr, "bench_bpf_floor: attaching them failed: %s\n", strerror(errno));
		mm_floor__destroy(s);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	int sig;
	sigwait(&set, &sig);
	mm_floor__destroy(s);
	return 0;
}
