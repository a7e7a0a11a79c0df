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
