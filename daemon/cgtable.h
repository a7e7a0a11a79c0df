/*
 * The per-unit breakdown of /metrics: which cgroups get their own mmlockd_cgroup_* series, and
 * counters for them and for "other" that only ever grow. Pure code.
 *
 * Per-pid series churn (every short-lived bash or curl is a series that lives once); a cgroup (on
 * a systemd host, the unit) is what operators group by and it stays. But a host can have
 * thousands of cgroups (login scopes, transient scopes), so only @slots of them get series: the
 * busiest in the window that just closed fill free slots, and a slot whose cgroup was idle for
 * MM_CGTABLE_LINGER_MS is given to a busier newcomer. Everything else is "other".
 *
 * Prometheus needs counters that never go down, which a "top N + other" made of cumulative
 * totals breaks (a cgroup entering the top N takes its total out of "other"). So a cgroup's
 * series counts from the window after it got its slot, and "other" keeps what accrued while
 * the cgroup was not selected: every series is monotonic, and the rates of all series add up to
 * the rate of the whole machine. A cgroup that loses its slot ends its series (Prometheus marks
 * it stale); if it gets one again its series starts again from 0 (a counter reset).
 *
 * The table sees processes only through the snapshots the host builds: at every snapshot the
 * open window of each process is added on top of what the closed windows left, at each window's
 * close that window is folded in. Memory: @slots entries, plus a scratch array of one pointer per
 * process at each close.
 */
#ifndef MM_CGTABLE_H
#define MM_CGTABLE_H

#include <stdint.h>

#include "snapshot.h"

/* A slot is taken back from a cgroup that did nothing for this long, when another needs it. */
#define MM_CGTABLE_LINGER_MS (10 * 60 * 1000ull)

struct mm_cgtable;

/* A table with room for @slots cgroups with their own series (0: only "other"). NULL on
 * allocation failure. */
struct mm_cgtable *mm_cgtable_new(unsigned slots);
void mm_cgtable_free(struct mm_cgtable *t); /* accepts NULL */

/* Changes the number of slots (SIGHUP). Shrinking drops the least busy slots, whose series end.
 * Returns 0 or -ENOMEM (the table is unchanged then). */
int mm_cgtable_set_slots(struct mm_cgtable *t, unsigned slots);

/* Attaches to @s (built by the host, with s->procs filled and their open windows in
 * procs[].window) the cgroups with a slot, busiest first, then "other" (other == true, cgroup
 * "other"): each with the counters since it got its slot plus the open windows of its processes,
 * and how many of s->procs are in it. Processes with no known cgroup count in "other". Returns 0
 * or -ENOMEM (s gets no cgroups then). */
int mm_cgtable_fill(struct mm_cgtable *t, struct mm_snapshot *s);

/* Folds the window that @s closed (s->procs[].window, s->window_end_ms) into the table, then
 * gives free or lingering slots to the busiest unselected cgroups of that window. Call once per
 * closed window, after mm_cgtable_fill() of the same snapshot. Returns 0 or -ENOMEM (the
 * counters are folded even then; only new slots are not assigned). */
int mm_cgtable_close(struct mm_cgtable *t, const struct mm_snapshot *s);

#endif
