/*
 * clock_step_shim: an LD_PRELOAD library that sets the wall clock of one process, as NTP sets
 * a machine's, without touching the machine's: CLOCK_REALTIME (and gettimeofday, time) read
 * MM_TEST_STEP_MS milliseconds more (negative: less) once MM_TEST_STEP_AFTER_MS milliseconds of
 * CLOCK_MONOTONIC have passed since the library was loaded. CLOCK_MONOTONIC and CLOCK_BOOTTIME
 * stay true, as they do when a clock is set, so test_clock_step.sh sees what mmlockd makes of a
 * step. The real functions are looked up at load, before mmlockd's seccomp filters, and a call
 * costs no system call of its own (the vDSO's clocks).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int64_t step_ns, after_ns = -1, loaded_ns;

static int64_t mono_ns(void)
{
	struct timespec ts;
	real_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* At load, or at the first call when a library's constructor reads the clock before ours. */
__attribute__((constructor)) static void load(void)
{
	const char *step = getenv("MM_TEST_STEP_MS"), *after = getenv("MM_TEST_STEP_AFTER_MS");

	if (real_clock_gettime)
		return;
	real_clock_gettime =
		(int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	if (!real_clock_gettime)
		abort();
	if (!step || !after)
		return;
	step_ns = strtoll(step, NULL, 10) * 1000000;
	after_ns = strtoll(after, NULL, 10) * 1000000;
	loaded_ns = mono_ns();
}

/* The wall clock's error now: 0 before the step, the step after it. */
static int64_t error_ns(void)
{
	return after_ns >= 0 && mono_ns() - loaded_ns >= after_ns ? step_ns : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	load();
	int r = real_clock_gettime(id, ts);
	if (r || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
		return r;
	int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + error_ns();
	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *ret)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (ret)
		*ret = ts.tv_sec;
	return ts.tv_sec;
}
