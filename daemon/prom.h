/*
 * Prometheus text exposition format 0.0.4 for a snapshot. Pure code.
 *
 * All names start with "mmlockd_". Counters end in _total, times are in seconds. For every field of
 * mm_proc_fields[]: a family mmlockd_<prom> summed over all processes (snapshot.all_total), and
 * mmlockd_process_<prom>{pid,comm} for the @top_n busiest processes. The mmap_lock wait
 * histogram is exported as mmlockd_mmap_lock_wait_seconds (all processes) and
 * mmlockd_process_mmap_lock_wait_seconds (top N). Also: mmlockd_events_total{event},
 * mmlockd_events_lost_total{event}, mmlockd_tracepoint_up{event}, mmlockd_collector_up{collector},
 * mmlockd_<family>_total{name} for globals, mmlockd_build_info, mmlockd_uptime_seconds,
 * mmlockd_windows_stored_total, mmlockd_store_errors_total, mmlockd_processes_tracked. With the
 * contention collector, mmlockd_lock_contended_total{type,caller} and
 * mmlockd_lock_wait_seconds_total{type,caller} for the @top_n call sites with the longest total
 * lock wait since start.
 */
#ifndef MM_PROM_H
#define MM_PROM_H

#include "buf.h"
#include "snapshot.h"

/* Appends the exposition of @s to @out. */
void mm_prom_format(const struct mm_snapshot *s, unsigned top_n, struct mm_buf *out);

#endif
