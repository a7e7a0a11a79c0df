/*
 * Helpers shared by the privileged tests' workloads (fault_workload.c, outcome_workload.c):
 * a monotonic clock, strict number parsing for options, and the pid file the test scripts wait
 * for. Header-only so each workload still builds alone with gcc -O2 -pthread FILE.c.
 */
#ifndef MM_TEST_WORKLOAD_H
#define MM_TEST_WORKLOAD_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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
