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

DROP VIEW process_stats;
CREATE VIEW process_stats AS
SELECT
	w.ts_start AS ts_start,
	w.ts_end AS ts_end,
	p.pid AS pid,
	p.start_time AS start_time,
	pw.comm AS comm,
	p.cgroup AS cgroup,
	pw.faults AS faults,
	pw.mmap_lock_read AS mmap_lock_read,
	pw.mmap_lock_write AS mmap_lock_write,
	pw.mmap_lock_trylock_fail AS mmap_lock_trylock_fail,
	pw.mmap_lock_waits AS mmap_lock_waits,
	pw.mmap_lock_wait_ns AS mmap_lock_wait_ns,
	pw.mmap_lock_write_hold_ns AS mmap_lock_write_hold_ns,
	pw.mmap_lock_contended AS mmap_lock_contended,
	pw.faults_vma AS faults_vma,
	pw.faults_vma_retry AS faults_vma_retry,
	pw.faults_mmap_retry AS faults_mmap_retry,
	pw.faults_mmap_abort AS faults_mmap_abort,
	pw.faults_mmap_unknown AS faults_mmap_unknown,
	pw.faults_mmap_fallback AS faults_mmap_fallback,
	pw.faults_mmap_lock_retries AS faults_mmap_lock_retries,
	pw.faults_mmap_lock_wait_ns AS faults_mmap_lock_wait_ns,
	pw.faults_pages_reread AS faults_pages_reread,
	pw.mmap_lock_by_fault AS mmap_lock_by_fault,
	pw.mmap_lock_by_fault_other AS mmap_lock_by_fault_other,
	pw.mmap_lock_by_fault_kernel AS mmap_lock_by_fault_kernel,
	pw.mmap_lock_by_mmap AS mmap_lock_by_mmap,
	pw.mmap_lock_by_munmap AS mmap_lock_by_munmap,
	pw.mmap_lock_by_mremap AS mmap_lock_by_mremap,
	pw.mmap_lock_by_mprotect AS mmap_lock_by_mprotect,
	pw.mmap_lock_by_madvise AS mmap_lock_by_madvise,
	pw.mmap_lock_by_brk AS mmap_lock_by_brk,
	pw.mmap_lock_by_mlock AS mmap_lock_by_mlock,
	pw.mmap_lock_by_mincore AS mmap_lock_by_mincore,
	pw.mmap_lock_by_exit AS mmap_lock_by_exit,
	pw.mmap_lock_by_fork AS mmap_lock_by_fork,
	pw.mmap_lock_by_exec AS mmap_lock_by_exec,
	pw.mmap_lock_by_remote AS mmap_lock_by_remote,
	pw.mmap_lock_by_other AS mmap_lock_by_other,
	pw.mmap_lock_by_unknown AS mmap_lock_by_unknown,
	pw.minflt AS minflt,
	pw.majflt AS majflt,
	pw.fallback_locks AS fallback_locks,
	pw.fallback_lock_waits AS fallback_lock_waits
FROM process_windows AS pw
JOIN windows AS w ON w.id = pw.window_id
JOIN processes AS p ON p.id = pw.process_id;
