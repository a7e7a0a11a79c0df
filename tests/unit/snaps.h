/*
 * Setters for the hand-built snapshots of the formatting tests (test_api, test_prom, prom_dump),
 * so a test states the values it checks and not the struct layout again.
 */
#ifndef MM_SNAPS_H
#define MM_SNAPS_H

#include <stdio.h>

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

#endif
