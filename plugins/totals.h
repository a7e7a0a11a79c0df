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

/* The earliest the same process can have started: the /proc start, else up to a second before
 * the begin time (the kernel subtracts whole elapsed seconds from whole current seconds). An
 * entry under the pid that started before it is an earlier process's. 0: no bound. */
static inline uint64_t mm_totals_start_lo_ms(uint64_t proc_start_ms, uint64_t first_btime_s)
{
	if (proc_start_ms)
		return proc_start_ms;
	return first_btime_s > 1 ? first_btime_s * 1000 - 1000 : 0;
}

/* One pid's taskstats exit messages, for one process at a time (struct track in totals.c). */
struct mm_totals_exits {
	uint64_t min, maj; /* the threads' final counts, summed */
	uint64_t btime_s;  /* the earliest begin time among them, 0: none */
	bool ended;	   /* the process's last task's message (AGROUP) is in */
};

/* Adds one thread's exit message (@min, @maj, @btime_s, @group_dead: AGROUP) to @x. A process
 * exits before its pid can be reused, so the message of the last task of a process comes before
 * any of the next process under that pid: once @x has ended, a message starts a new process and
 * @x is cleared first. Returns true when it did: the caller must have handed out what @x held
 * (as soon as it ended: in one window, 10 000 processes x 4 threads reuse pids under the default
 * pid_max of 32768, and two processes summed as one gave the first both counts and the second
 * none, 504 in a churn wave). */
static inline bool mm_totals_exits_add(struct mm_totals_exits *x, uint64_t min, uint64_t maj,
				       uint64_t btime_s, bool group_dead)
{
	bool other = x->ended;
	if (other)
		*x = (struct mm_totals_exits){0};
	x->min += min;
	x->maj += maj;
	if (btime_s && (!x->btime_s || btime_s < x->btime_s))
		x->btime_s = btime_s;
	x->ended = group_dead;
	return other;
}

#endif
