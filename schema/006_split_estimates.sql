-- 006_split_estimates.sql: the fault split in the default configuration. The outcome columns
-- (faults_vma .. faults_mmap_fallback, from 002) used to be exact counts of the opt-in faults
-- collector or 0. The default now runs that classification in bursts (split_duty, default 2% of
-- each window; daemon/split.h) and stores the outcome shares it saw applied to the exact totals:
--   faults_vma, faults_vma_retry      = share among the classified faults * (minflt + majflt)
--   faults_mmap_retry, _abort, _unknown = share among the classified fallbacks * fallback_locks
--   faults_mmap_fallback              = their sum
-- New columns (INTEGER, 0 in windows stored before this migration):
--   split_estimated       1 when the row's outcome columns are such estimates; 0 when they are
--                         exact counts (--split-duty 100%, or --collectors naming faults) or 0
--   split_observed_ns     time of the window during which faults were classified (the bursts);
--                         its share of the window is split_observed_ns / 1e9 / (ts_end - ts_start)
--   split_faults_seen     faults of the process classified in those bursts (the sample);
--                         coverage = split_faults_seen / (minflt + majflt)
--   split_fallbacks_seen  of them, the ones that fell back to mmap_lock
--   split_err             95% error bound, in faults, on each estimated outcome column of the
--                         row (the largest of the five): the larger of the Wilson interval of
--                         the binomial share and the spread between the window's bursts, times
--                         the share's base. Summed over windows it bounds the summed estimates.
-- In bursts the columns that have no exact total to scale (mmap_lock_by_*,
-- faults_mmap_lock_retries, faults_mmap_lock_wait_ns, faults_pages_reread) stay 0. A window
-- in which a process had no fault in any burst borrows the shares of its earlier windows
-- (split_estimated = 1, split_faults_seen = 0, the binomial error of that sample); a process
-- never caught by a burst (one that lives less than a burst period, 1 s, mostly) gets
-- split_estimated = 0 and 0 outcome columns: only its exact counts.
--
-- Example: estimated outcomes per process over the last hour, with coverage and error:
--   SELECT pid, comm, sum(minflt + majflt) AS faults, sum(faults_vma) AS vma,
--          sum(faults_mmap_retry) AS mmap_retry, sum(faults_mmap_abort) AS abort,
--          sum(faults_mmap_unknown) AS unknown, sum(split_err) AS err,
--          round(100.0 * sum(split_faults_seen) / max(sum(minflt + majflt), 1), 2) AS coverage_pct
--   FROM process_stats WHERE split_estimated = 1 AND ts_end > strftime('%s','now') - 3600
--   GROUP BY pid, start_time ORDER BY faults DESC LIMIT 10;

ALTER TABLE process_windows ADD COLUMN split_estimated INTEGER NOT NULL DEFAULT 0 CHECK (split_estimated >= 0);
ALTER TABLE process_windows ADD COLUMN split_observed_ns INTEGER NOT NULL DEFAULT 0 CHECK (split_observed_ns >= 0);
ALTER TABLE process_windows ADD COLUMN split_faults_seen INTEGER NOT NULL DEFAULT 0 CHECK (split_faults_seen >= 0);
ALTER TABLE process_windows ADD COLUMN split_fallbacks_seen INTEGER NOT NULL DEFAULT 0 CHECK (split_fallbacks_seen >= 0);
ALTER TABLE process_windows ADD COLUMN split_err INTEGER NOT NULL DEFAULT 0 CHECK (split_err >= 0);

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
	pw.split_estimated AS split_estimated,
	pw.split_observed_ns AS split_observed_ns,
	pw.split_faults_seen AS split_faults_seen,
	pw.split_fallbacks_seen AS split_fallbacks_seen,
	pw.split_err AS split_err,
	pw.minflt AS minflt,
	pw.majflt AS majflt,
	pw.fallback_locks AS fallback_locks,
	pw.fallback_lock_waits AS fallback_lock_waits
FROM process_windows AS pw
JOIN windows AS w ON w.id = pw.window_id
JOIN processes AS p ON p.id = pw.process_id;

DROP VIEW cgroup_stats;
CREATE VIEW cgroup_stats AS
SELECT
	w.ts_start AS ts_start,
	w.ts_end AS ts_end,
	w.kernel AS kernel,
	p.cgroup AS cgroup,
	count(*) AS processes,
	sum(pw.faults) AS faults,
	sum(pw.mmap_lock_read) AS mmap_lock_read,
	sum(pw.mmap_lock_write) AS mmap_lock_write,
	sum(pw.mmap_lock_trylock_fail) AS mmap_lock_trylock_fail,
	sum(pw.mmap_lock_waits) AS mmap_lock_waits,
	sum(pw.mmap_lock_wait_ns) AS mmap_lock_wait_ns,
	sum(pw.mmap_lock_write_hold_ns) AS mmap_lock_write_hold_ns,
	sum(pw.mmap_lock_contended) AS mmap_lock_contended,
	sum(pw.faults_vma) AS faults_vma,
	sum(pw.faults_vma_retry) AS faults_vma_retry,
	sum(pw.faults_mmap_retry) AS faults_mmap_retry,
	sum(pw.faults_mmap_abort) AS faults_mmap_abort,
	sum(pw.faults_mmap_unknown) AS faults_mmap_unknown,
	sum(pw.faults_mmap_fallback) AS faults_mmap_fallback,
	sum(pw.faults_mmap_lock_retries) AS faults_mmap_lock_retries,
	sum(pw.faults_mmap_lock_wait_ns) AS faults_mmap_lock_wait_ns,
	sum(pw.faults_pages_reread) AS faults_pages_reread,
	sum(pw.mmap_lock_by_fault) AS mmap_lock_by_fault,
	sum(pw.mmap_lock_by_fault_other) AS mmap_lock_by_fault_other,
	sum(pw.mmap_lock_by_fault_kernel) AS mmap_lock_by_fault_kernel,
	sum(pw.mmap_lock_by_mmap) AS mmap_lock_by_mmap,
	sum(pw.mmap_lock_by_munmap) AS mmap_lock_by_munmap,
	sum(pw.mmap_lock_by_mremap) AS mmap_lock_by_mremap,
	sum(pw.mmap_lock_by_mprotect) AS mmap_lock_by_mprotect,
	sum(pw.mmap_lock_by_madvise) AS mmap_lock_by_madvise,
	sum(pw.mmap_lock_by_brk) AS mmap_lock_by_brk,
	sum(pw.mmap_lock_by_mlock) AS mmap_lock_by_mlock,
	sum(pw.mmap_lock_by_mincore) AS mmap_lock_by_mincore,
	sum(pw.mmap_lock_by_exit) AS mmap_lock_by_exit,
	sum(pw.mmap_lock_by_fork) AS mmap_lock_by_fork,
	sum(pw.mmap_lock_by_exec) AS mmap_lock_by_exec,
	sum(pw.mmap_lock_by_remote) AS mmap_lock_by_remote,
	sum(pw.mmap_lock_by_other) AS mmap_lock_by_other,
	sum(pw.mmap_lock_by_unknown) AS mmap_lock_by_unknown,
	sum(pw.split_estimated) AS split_estimated,
	sum(pw.split_observed_ns) AS split_observed_ns,
	sum(pw.split_faults_seen) AS split_faults_seen,
	sum(pw.split_fallbacks_seen) AS split_fallbacks_seen,
	sum(pw.split_err) AS split_err,
	sum(pw.minflt) AS minflt,
	sum(pw.majflt) AS majflt,
	sum(pw.fallback_locks) AS fallback_locks,
	sum(pw.fallback_lock_waits) AS fallback_lock_waits
FROM process_windows AS pw
JOIN windows AS w ON w.id = pw.window_id
JOIN processes AS p ON p.id = pw.process_id
GROUP BY pw.window_id, p.cgroup;
