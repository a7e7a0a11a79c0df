-- 009_split_by_side.sql: the faults taken in kernel mode, counted on their own, and the fault
-- split in bursts (plugins/split.h) with a bound of its own on the fallback side.
--
-- fallback_locks counts every fault-site mmap_lock acquisition, the faults taken in kernel mode
-- included (copy_to_user into a fresh page in a system call: x86 takes mmap_lock for them without
-- a VMA-lock attempt), which the fault split (user faults) never sees. Before this version the
-- estimated fallback outcomes were scaled to all of fallback_locks; from it on, to
-- fallback_locks - kernel_mode_faults.
--
-- New columns of process_windows (and of the views process_stats and cgroup_stats):
--   kernel_mode_faults   INTEGER  faults taken in kernel mode on user memory
--                                 (exceptions:page_fault_kernel; the fallbacks collector, x86):
--                                 in fallback_locks, but no user fault's fallback. 0 before this
--                                 version and where the tracepoint is missing.
--   split_err_fallbacks  INTEGER  95% bound, in faults, on each estimated fallback outcome of the
--                                 window (mmap_retry, mmap_abort, mmap_unknown), the largest;
--                                 split_err stays the largest over every outcome. 0 in exact
--                                 windows and before this version.
--
-- Example: estimated fallbacks per process over the last hour, with their bound and the faults
-- taken in kernel mode beside them
--   SELECT pid, comm, sum(faults_mmap_fallback) AS fallbacks, sum(split_err_fallbacks) AS err,
--          sum(kernel_mode_faults) AS kernel_mode, sum(fallback_locks) AS fallback_locks
--   FROM process_stats WHERE split_estimated > 0 AND ts_end > strftime('%s','now') - 3600
--   GROUP BY pid, start_time ORDER BY fallbacks DESC LIMIT 10;

ALTER TABLE process_windows ADD COLUMN kernel_mode_faults INTEGER NOT NULL DEFAULT 0 CHECK (kernel_mode_faults >= 0);
ALTER TABLE process_windows ADD COLUMN split_err_fallbacks INTEGER NOT NULL DEFAULT 0 CHECK (split_err_fallbacks >= 0);
