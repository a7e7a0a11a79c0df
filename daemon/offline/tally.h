/*
 * Per-process totals over a run, summed from closed windows, and the table `mmlockd record` and
 * `mmlockd replay` print. A process is pid + start time, as everywhere. The output has no wall
 * clock in it and a fixed order, so replaying a recording twice prints identical text. Pure code.
 */
#ifndef MM_TALLY_H
#define MM_TALLY_H

#include <stdio.h>

#include "snapshot.h"

struct mm_tally;

struct mm_tally *mm_tally_new(void);
void mm_tally_free(struct mm_tally *t); /* accepts NULL */

/* Adds the window counts of every process of closed window @w, and its event counts. Returns 0
 * or -ENOMEM. */
int mm_tally_add(struct mm_tally *t, const struct mm_snapshot *w);

/* Prints the per-process table (busiest first), the fault-outcome split, the mmap_lock sources
 * and the events per tracepoint. */
void mm_tally_print(const struct mm_tally *t, FILE *out);

#endif
