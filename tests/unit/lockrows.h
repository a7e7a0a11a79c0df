/*
 * Hand-made lock contention rows for the tests of their tables, JSON, metrics (test_locktable)
 * and storage (test_store_locks).
 */
#ifndef MM_LOCKROWS_H
#define MM_LOCKROWS_H

#include <stdio.h>

#include "snapshot.h"

/* A row of process @pid (comm "p<pid>", no lock holder) with @contended waits of @wait ns in
 * total, the longest @max and the shortest @min; its histogram holds @max once. */
static inline struct mm_snap_lock lock_row(int32_t pid, const char *type, const char *caller,
					   const char *lock, uint64_t contended, uint64_t wait,
					   uint64_t max, uint64_t min)
{
	struct mm_snap_lock r = {.pid = pid, .lock_pid = -1};
	snprintf(r.type, sizeof(r.type), "%s", type);
	snprintf(r.caller, sizeof(r.caller), "%s", caller);
	snprintf(r.lock, sizeof(r.lock), "%s", lock);
	snprintf(r.comm, sizeof(r.comm), "p%d", pid);
	r.contended = contended;
	r.wait_ns = wait;
	r.max_ns = max;
	r.min_ns = min;
	mm_hist_add(&r.hist, max);
	return r;
}

#endif
