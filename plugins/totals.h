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

#endif
