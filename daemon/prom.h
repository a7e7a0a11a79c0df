/*
 * Prometheus text exposition format 0.0.4 for a snapshot. Pure code.
 *
 * All names start with "mmlockd_". Counters end in _total, times are in seconds. A family is
 * written only while the collector that fills it runs (s->collectors; mm_field.collector), so a
 * disabled or failed collector exports nothing and mmlockd_collector_up{collector,state} says
 * why. For every field of mm_proc_fields[] whose collector runs: a family mmlockd_<prom> summed
 * over all processes (snapshot.all_total); mmlockd_cgroup_<prom>{cgroup} for each entry of
 * s->cgroups (the units with their own series and "other", daemon/cgtable.h), with
 * mmlockd_cgroup_processes{cgroup}; and mmlockd_process_<prom>{pid,comm,cgroup} for the @top_n
 * busiest processes (0: none). The mmap_lock wait histogram is exported as
 * mmlockd_mmap_lock_wait_seconds (all processes) and mmlockd_process_mmap_lock_wait_seconds
 * (top N). Also: mmlockd_events_total{event}, mmlockd_events_lost_total{event},
 * mmlockd_tracepoint_up{event}, mmlockd_<family>_total{name} for globals, mmlockd_build_info,
 * mmlockd_uptime_seconds, mmlockd_windows_stored_total, mmlockd_store_errors_total,
 * mmlockd_windows_lost_total, mmlockd_processes_tracked. With a collector of lock rows,
 * mmlockd_lock_contended_total{type, caller} and mmlockd_lock_wait_seconds_total{type,caller} for
 * the max(@top_n, MM_PROM_LOCK_CALLERS) call sites with the longest total lock wait since start.
 */
#ifndef MM_PROM_H
#define MM_PROM_H

#include "buf.h"
#include "snapshot.h"

/* Lock call sites with their own series at least (--top raises it). */
#define MM_PROM_LOCK_CALLERS 20

/* Appends the exposition of @s to @out. */
void mm_prom_format(const struct mm_snapshot *s, unsigned top_n, struct mm_buf *out);

#endif
