-- 004_default_counts.sql: the counters of the default configuration, which must cost the traced
-- workload next to nothing (see README "Benchmarks"), so they come from the kernel's own
-- accounting and from one cheap, filtered tracepoint instead of per-fault events.
-- New columns default to 0 in windows stored before this migration.
--
-- New process_stats columns (INTEGER counts unless noted):
--   minflt, majflt         page faults the kernel accounted to the process in the window
--                          (totals collector: /proc/PID/stat of live processes, taskstats for
--                          threads that exited). Includes faults taken in kernel mode on user
--                          memory and by get_user_pages; a retried fault counts once, as major.
--   fallback_locks         mmap_lock read acquisitions by page-fault fallbacks (fallbacks
--                          collector: mmap_lock_acquire_returned(write=0, success) whose sample
--                          IP is in lock_mm_and_find_vma), user or kernel mode; a fault retried
--                          under mmap_lock counts again
--   fallback_lock_waits    fallbacks that found mmap_lock taken (their trylock failed) and slept
--                          for it. How long they waited is left to the opt-in collectors
--                          (faults_mmap_lock_wait_ns): timing it needs the successful
--                          acquisitions, and sampling those costs the workload too much.
--
-- Example: per process over the last hour, faults and the share that fell back to mmap_lock
--   SELECT pid, comm, sum(minflt + majflt) AS faults, sum(fallback_locks) AS fallbacks,
--          round(100.0 * sum(fallback_locks) / max(sum(minflt + majflt), 1), 2) AS pct,
--          sum(fallback_lock_waits) AS waited
--   FROM process_stats WHERE ts_end > strftime('%s','now') - 3600
--   GROUP BY pid, start_time ORDER BY faults DESC LIMIT 10;

ALTER TABLE process_windows ADD COLUMN minflt INTEGER NOT NULL DEFAULT 0 CHECK (minflt >= 0);
ALTER TABLE process_windows ADD COLUMN majflt INTEGER NOT NULL DEFAULT 0 CHECK (majflt >= 0);
ALTER TABLE process_windows ADD COLUMN fallback_locks INTEGER NOT NULL DEFAULT 0 CHECK (fallback_locks >= 0);
ALTER TABLE process_windows ADD COLUMN fallback_lock_waits INTEGER NOT NULL DEFAULT 0 CHECK (fallback_lock_waits >= 0);
