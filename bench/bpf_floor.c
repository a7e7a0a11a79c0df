// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_bpf_floor: loads and attaches bench/floor.bpf.c's empty programs, prints "ready", and
 * holds them until SIGINT or SIGTERM. bench/run.py reads their run_time_ns / run_cnt from this
 * process's fdinfo, as it reads mmlockd's: what kernel.bpf_stats_enabled itself counts per run.
 * With --all, an empty program on every tracepoint of `mmlockd --collectors all --source bpf`,
 * for the configuration bpf_floor_all: what those hooks cost a workload by themselves; with
 * --all --latency also on the minor/major-faults software events of every CPU at the daemon's
 * sample period (its --fault-latency on), for bpf_floor_all_latency; with --all --storage each
 * program also finds the thread's task storage and writes to it (floor.bpf.c), for
 * bpf_floor_all_storage. With --toggle as the last argument (not with --latency) the programs
 * are loaded and attached and detached on command (toggle.h): bench/paired.py's fast pairs.
 * Run as root.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "completion.h"

#include "floor.skel.h"
#include "toggle.h"

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* The fault-completion events as the daemon opens them (completion.h; enabled: the floor of a
 * run that counts latencies). */
static int attach_completions(struct mm_floor *s, struct bpf_link **links, int max)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	int n = 0;
	for (long cpu = 0; cpu < ncpus; cpu++) {
		for (int k = 0; k < 2 && n < max; k++) {
			int fd = mm_bpf_open_completion((int)cpu, k, false);
			if (fd < 0)
				return -1;
			links[n] = bpf_program__attach_perf_event(s->progs.all_fault_done, fd);
			if (!links[n]) {
				close(fd);
				return -1;
			}
			n++;
		}
	}
	return n;
}

static int set_attached(void *ctx, bool on)
{
	struct mm_floor *s = ctx;

	if (!on) {
		mm_floor__detach(s);
		return 0;
	}
	return mm_floor__attach(s) ? -errno : 0;
}

int main(int argc, char **argv)
{
	bool toggle = argc >= 2 && !strcmp(argv[argc - 1], "--toggle");
	argc -= toggle;
	bool all = argc >= 2 && !strcmp(argv[1], "--all");
	bool latency = all && argc == 3 && !strcmp(argv[2], "--latency");
	bool storage = all && argc == 3 && !strcmp(argv[2], "--storage");
	if (argc > 3 || (argc >= 2 && !all) || (argc == 3 && !latency && !storage) ||
	    (toggle && latency)) {
		fprintf(stderr, "usage: bench_bpf_floor [--all [--latency | --storage]] [--toggle] "
				"(SIGINT or SIGTERM stops it)\n");
		return 2;
	}
	libbpf_set_print(quiet);
	sigset_t set;
	bench_block_stop(&set);
	struct mm_floor *s = mm_floor__open();
	if (!s) {
		fprintf(stderr, "bench_bpf_floor: opening the empty programs failed: %s\n",
			strerror(errno));
		return 1;
	}
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, s->obj)
	{
		if (!strncmp(bpf_program__name(prog), "all_", 4))
			bpf_program__set_autoload(prog, all);
	}
	s->rodata->with_storage = storage;
	if (mm_floor__load(s)) {
		fprintf(stderr, "bench_bpf_floor: loading the empty programs failed: %s\n",
			strerror(errno));
		mm_floor__destroy(s);
		return 1;
	}
	if (toggle) {
		int r = bench_toggle(&set, set_attached, s);
		mm_floor__destroy(s);
		return r;
	}
	if (mm_floor__attach(s)) {
		fprintf(stderr, "bench_bpf_floor: attaching them failed: %s\n", strerror(errno));
		mm_floor__destroy(s);
		return 1;
	}
	struct bpf_link *links[2 * 1024];
	int nlinks = latency ? attach_completions(s, links, 2 * 1024) : 0;
	if (nlinks < 0) {
		fprintf(stderr, "bench_bpf_floor: the fault-completion events: %s\n",
			strerror(errno));
		mm_floor__destroy(s);
		return 1;
	}
	bench_wait_stop(&set);
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	mm_floor__destroy(s);
	return 0;
}
