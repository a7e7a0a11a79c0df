/*
 * The pure part of the totals collector (plugins/totals.c), for unit tests.
 */
#ifndef MM_TOTALS_H
#define MM_TOTALS_H

#include <stdbool.h>
#include <stdint.h>

struct mm_pid_stat {
	uint64_t minflt, majflt;
	uint64_t start_ticks; /* starttime, clock ticks since boot */
	bool kthread;	      /* PF_KTHREAD in flags */
};

/* Parses the text of /proc/PID/stat (or /proc/PID/task/TID/stat). Returns 0, or -EINVAL. */
int mm_totals_parse_stat(const char *text, struct mm_pid_stat *ret);

/* The counts of a process that left /proc: the last reading, unless the exited threads' own
 * counts (what was already dead at the first reading, @base, plus every thread's taskstats exit
 * message, @exits) say more. Lost exit messages can only make the second smaller. */
static inline uint64_t mm_totals_final(uint64_t last, uint64_t base, uint64_t exits)
{
	return base + exits > last ? base + exits : last;
}

#endif
