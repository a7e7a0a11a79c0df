// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_swevent: what the fault-completion software events (plugins/bpf/completion.h: the
 * minor-faults and major-faults events of every CPU, opened by `--fault-latency on`) cost every
 * page fault on the machine, with no program attached. One thread pinned to the last CPU writes
 * one byte of each page of a fresh anonymous mapping (--mib MiB), timed by its own CPU clock;
 * each round measures, in turn, with the events closed, open and enabled, and open but disabled
 * (what the split's bursts leave between bursts), the best of --tries mappings each. An open
 * software event keeps perf_sw_event()'s static key on, so every fault calls __perf_sw_event()
 * whether the event counts or not. Prints one line per round and the medians. Run as root (or
 * with kernel.perf_event_paranoid <= 0).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "completion.h"

#define MAX_FDS 1024

static double thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per fault: the best of @tries mappings of @len bytes. */
static double per_fault(size_t len, int tries)
{
	long page = sysconf(_SC_PAGESIZE);
	double best = 1e18;
	for (int i = 0; i < tries; i++) {
		char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("bench_swevent: mmap");
			exit(1);
		}
		double t0 = thread_ns();
		for (size_t off = 0; off < len; off += (size_t)page)
			p[off] = 1;
		double ns = (thread_ns() - t0) / (double)(len / (size_t)page);
		munmap(p, len);
		if (ns < best)
			best = ns;
	}
	return best;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int rounds = 8, tries = 5;
	size_t mib = 64;
	static const struct option opts[] = {{"rounds", required_argument, NULL, 'r'},
					     {"tries", required_argument, NULL, 't'},
					     {"mib", required_argument, NULL, 'm'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 't')
			tries = atoi(optarg);
		else if (c == 'm')
			mib = (size_t)atol(optarg);
		else {
			printf("usage: bench_swevent [--rounds N (8)] [--tries N (5)] [--mib MiB "
			       "(64)]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (rounds < 1 || rounds > 1000 || tries < 1 || mib < 1 || mib > 65536) {
		fprintf(stderr, "bench_swevent: --rounds 1..1000, --tries >= 1, --mib 1..65536\n");
		return 2;
	}
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)(ncpus > 0 ? ncpus - 1 : 0), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("bench_swevent: sched_setaffinity (unpinned)");
	double *v[3];
	for (int k = 0; k < 3; k++)
		v[k] = calloc((size_t)rounds, sizeof(double));
	int fds[MAX_FDS];
	printf("ns per anonymous write fault, one pinned thread, best of %d x %zu MiB\n", tries,
	       mib);
	printf("%-6s %10s %10s %10s\n", "round", "closed", "enabled", "disabled");
	for (int r = 0; r < rounds; r++) {
		v[0][r] = per_fault(mib << 20, tries);
		int n = 0;
		for (long cpu = 0; cpu < ncpus && n + 2 <= MAX_FDS; cpu++) {
			for (int major = 0; major < 2; major++) {
				int fd = mm_bpf_open_completion((int)cpu, major, false);
				if (fd < 0) {
					fprintf(stderr, "bench_swevent: perf_event_open: %s\n",
						strerror(errno));
					return 1;
				}
				fds[n++] = fd;
			}
		}
		v[1][r] = per_fault(mib << 20, tries);
		for (int i = 0; i < n; i++)
			ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
		v[2][r] = per_fault(mib << 20, tries);
		for (int i = 0; i < n; i++)
			close(fds[i]);
		printf("%-6d %10.0f %10.0f %10.0f\n", r + 1, v[0][r], v[1][r], v[2][r]);
		fflush(stdout);
	}
	double m[3];
	for (int k = 0; k < 3; k++)
		m[k] = median(v[k], rounds);
	printf("%-6s %10.0f %10.0f %10.0f\n", "median", m[0], m[1], m[2]);
	printf("%-6s %10s %+10.0f %+10.0f\n", "cost", "", m[1] - m[0], m[2] - m[0]);
	return 0;
}
