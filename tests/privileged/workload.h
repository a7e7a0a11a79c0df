/*
 * Helpers shared by the privileged tests' workloads (fault_workload.c, outcome_workload.c) and
 * the benchmark's (bench/common.c): a monotonic clock, a wait that a signal ends, strict number
 * parsing for options, and the pid file the test scripts wait for; _GNU_SOURCE and the headers
 * they all use. Header-only so each workload still builds alone with gcc -O2 -pthread FILE.c.
 */
#ifndef MM_TEST_WORKLOAD_H
#define MM_TEST_WORKLOAD_H

/* Included first, before any system header. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A whole decimal number 0..@max (no sign, nothing after it). Returns 0, or -1. */
static inline int parse_ulong(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return -1;
	*ret = v;
	return 0;
}

/* A number of seconds 0..86400 (decimals allowed, nothing after it). Returns 0, or -1. */
static inline int parse_seconds(const char *s, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 86400)
		return -1;
	*ret = v;
	return 0;
}

/* Waits @seconds unless a signal of @set (blocked in every thread) comes first. Returns 0 on
 * timeout, else the signal. */
static inline int wait_signal(const sigset_t *set, double seconds)
{
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), now;
	struct timespec ts;
	int sig;

	while ((now = now_ns()) < end) {
		ts.tv_sec = (time_t)((end - now) / 1000000000ull);
		ts.tv_nsec = (long)((end - now) % 1000000000ull);
		sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return sig;
	}
	return 0;
}

/* Writes this process's pid and a newline to @path. Returns 0, or -1 with errno. */
static inline int write_pid_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f);
}

#endif
