-- 005_cgroup_stats.sql: the history per unit. Operators group by service, not by pid: every
-- short-lived `bash` or `curl` is a new pid, while its cgroup (on a systemd host its unit, e.g.
-- /system.slice/nginx.service) stays. The VIEW cgroup_stats is process_stats summed per cgroup per
-- window; `mmlockd report --units` and the README's per-unit queries read it.
--
-- cgroup_stats columns:
--   ts_start, ts_end   REAL     the window, unix seconds (ms precision), as in process_stats
--   kernel             TEXT     uname -r at the window's end (split a database by kernel with it)
--   cgroup             TEXT     the cgroup v2 path of the processes ("/system.slice/foo.service",
--                               "/user.slice/user-0.slice/user@0.service"), or the v1 memory
--                               controller's where there is no unified hierarchy; '' when unknown.
--                               A process's cgroup is the latest seen (processes.cgroup), so a
--                               process moved between cgroups counts in its last one.
--   processes          INTEGER  processes of the cgroup with activity in the window
--   every counter of process_stats (faults ... fallback_lock_waits), summed over those
--   processes; see 001, 002 and 004 for what each means. Counters of collectors that did not run
--   are 0, as in process_stats.
--
-- Example: per unit over the last hour, faults, the share that fell back to mmap_lock, and how
-- many of those found it taken (default collectors):
--   SELECT cgroup, sum(minflt + majflt) AS faults, sum(fallback_locks) AS fallbacks,
--          round(100.0 * sum(fallback_locks) / max(sum(minflt + majflt), 1), 2) AS fallback_pct,
--          sum(fallback_lock_waits) AS waited
--   FROM cgroup_stats WHERE ts_end > strftime('%s','now') - 3600
--   GROUP BY cgroup ORDER BY faults DESC LIMIT 10;
--
-- A view, not a table: it costs nothing to store and cannot disagree with process_stats. Summing
-- an hour of 10-second windows over a few hundred processes reads a few hundred thousand rows
-- through the primary keys (milliseconds); a rollup table would be a later migration if history
-- grows to months of thousands of units.

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
	sum(pw.minflt) AS minflt,
	sum(pw.majflt) AS majflt,
	sum(pw.fallback_locks) AS fallback_locks,
	sum(pw.fallback_lock_waits) AS fallback_lock_waits
FROM process_windows AS pw
JOIN windows AS w ON w.id = pw.window_id
JOIN processes AS p ON p.id = pw.process_id
GROUP BY pw.window_id, p.cgroup;
