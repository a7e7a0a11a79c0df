/*
 * JSON bodies of /api/v1/status and /api/v1/processes, built from a snapshot, and of
 * /api/v1/locks, built from lock rows. Pure code.
 * Process objects use the same keys as the process_stats view (pid, comm, start_time, cgroup and
 * every name of mm_proc_fields[]), under "window" and "total".
 */
#ifndef MM_API_H
#define MM_API_H

#include "buf.h"
#include "snapshot.h"

/* The daemon's state (GET /api/v1/status): version, collectors, events, globals, counts of
 * windows and processes, and "all" (every process's sums, "window" and "total"). */
void mm_api_status(const struct mm_snapshot *s, struct mm_buf *out);
/* Every process of the snapshot and "all" (GET /api/v1/processes). */
void mm_api_processes(const struct mm_snapshot *s, struct mm_buf *out);
/* The same with only the processes of pid @pid (every one when < 0) and, when @start_ms is not
 * 0, started at @start_ms (GET /api/v1/processes?pid=&start_time=: one process's view). */
void mm_api_processes_of(const struct mm_snapshot *s, int32_t pid, uint64_t start_ms,
			 struct mm_buf *out);

/* A JSON array of lock contention rows (GET /api/v1/locks), one object per row with the keys of
 * the lock_stats view: pid, start_time, comm, type, caller, lock, lock_pid (null unless the lock
 * is an mmap_lock), holder_mode, holder_pid, holder_tid, holder_comm, holder_op (who held an
 * mmap_lock when the waits began: "" and null for other locks), contended, total_wait_ns,
 * max_wait_ns, min_wait_ns, avg_wait_ns, p50_wait_ns, p90_wait_ns, p99_wait_ns. */
void mm_api_locks(const struct mm_snap_lock *rows, size_t n, struct mm_buf *out);

#endif
