/*
 * The pure part of the totals collector (plugins/totals.c), for unit tests.
 */
#ifndef MM_TOTALS_H
#define MM_TOTALS_H

#include <stdbool.h>
#include <stdint.h>

/* The counts of a process that left /proc: the last reading, unless the exited threads' own
 * counts (what was already dead at the first reading, @base, plus every thread's taskstats exit
 * message, @exits) say more. Lost exit messages can only make the second smaller. */
static inline uint64_t mm_totals_final(uint64_t last, uint64_t base, uint64_t exits)
{
	return base + exits > last ? base + exits : last;
}

/* When the process of a track started, to find its entry among the processes that had its pid
 * (mm_host_proc_started): its /proc start (@proc_start_ms, unix ms; 0: no scan read it), else
 * from the exit messages' begin time (@first_btime_s, unix seconds, the earliest of its threads':
 * the kernel derives it at exit as now - elapsed, whole seconds, so the start may be up to a
 * second later than it says); 0 when neither is known. */
static inline uint64_t mm_totals_start_ms(uint64_t proc_start_ms, uint64_t first_btime_s)
{
	if (proc_start_ms)
		return proc_start_ms;
	return first_btime_s ? first_btime_s * 1000 + 1000 : 0;
}

#endif
