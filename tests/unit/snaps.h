/*
 * Setters for the hand-built snapshots of the formatting tests (test_api, test_prom, prom_dump),
 * so a test states the values it checks and not the struct layout again.
 */
#ifndef MM_SNAPS_H
#define MM_SNAPS_H

#include <stdio.h>
#include <stdlib.h>

#include "snapshot.h"

/* Where and when @s was taken: mmlockd @version on @kernel, started at @started_ms, the snapshot
 * at @taken_ms (unix ms). */
static inline void snap_origin(struct mm_snapshot *s, const char *version, const char *kernel,
			       uint64_t started_ms, uint64_t taken_ms)
{
	snprintf(s->version, sizeof(s->version), "%s", version);
	snprintf(s->kernel, sizeof(s->kernel), "%s", kernel);
	s->started_ms = started_ms;
	s->taken_ms = taken_ms;
}

/* Global counter @family/@name with @total since start (help, collector and window stay as
 * they are). */
static inline void snap_global(struct mm_snap_global *g, const char *family, const char *name,
			       uint64_t total)
{
	snprintf(g->family, sizeof(g->family), "%s", family);
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->total = total;
}

/* Row @p's window, to be written: a hand-built snapshot's rows keep the slot mm_snapshot_new()
 * gave each (snapshot.h), which is the snapshot's own memory. */
static inline struct mm_proc_counts *snap_proc_window(struct mm_snap_proc *p)
{
	return (struct mm_proc_counts *)p->window;
}

/* Row @p's total, to be written: counts of the row's own (the snapshot drops them with it). */
static inline struct mm_proc_counts *snap_proc_total(struct mm_snap_proc *p)
{
	if (!p->held && !(p->held = mm_shared_counts_new(1)))
		abort();
	p->total = &p->held->counts[0];
	return &p->held->counts[0];
}

/* Row @p gets @window and @total, counters and histograms (the snapshot frees its copy). */
static inline void snap_proc_set(struct mm_snap_proc *p, const struct mm_proc_stats *window,
				 const struct mm_proc_stats *total)
{
	*snap_proc_window(p) = *mm_stats_counts_c(window);
	*snap_proc_total(p) = *mm_stats_counts_c(total);
	for (int t = 0; t < 2; t++) {
		free(p->hists[t]);
		p->hists[t] = NULL;
	}
	if (mm_hist_set_add(&p->hists[0], mm_stats_hists_c(window)) < 0 ||
	    mm_hist_set_add(&p->hists[1], mm_stats_hists_c(total)) < 0)
		abort();
}

/* Row @p's histograms since start become @total (its window's stay). */
static inline void snap_proc_set_total_hists(struct mm_snap_proc *p,
					     const struct mm_proc_hists *total)
{
	free(p->hists[1]);
	p->hists[1] = NULL;
	if (mm_hist_set_add(&p->hists[1], total) < 0)
		abort();
}

#endif
