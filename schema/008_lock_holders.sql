-- 008_lock_holders.sql: who held mmap_lock while a process waited for it (plugins/contention.c,
-- plugins/bpf/holder.h). A wait on an mmap_lock (lock = 'mmap_lock') is attributed to the task
-- that held the lock when the wait began, and what that task was doing; the rows of lock_windows
-- are keyed by it too, so one (process, type, caller, lock) of a window may have one row per holder.
--
-- New columns of lock_windows, and so of the view lock_stats:
--   holder_mode  TEXT     'write' (a writer held it), 'read' (readers did; one is named, as a
--                         hint: others may have held it too), 'unknown' (none could be named:
--                         the holder let go or exited before it was read, or its acquisition was
--                         not seen); '' for other locks and for rows stored before this migration
--   holder_pid   INTEGER  the holder's process (thread group); NULL when none is named
--   holder_tid   INTEGER  the holding thread; NULL when none is named
--   holder_comm  TEXT     the holder process's name, '' when unknown
--   holder_op    TEXT     what the holder was doing, by the names of mmap_lock_by_<source>:
--                         mmap, munmap, mremap, mprotect, madvise, brk, mlock, mincore, exit, fork,
--                         exec, fault (a page fault of the process: a fallback reader, or a stack
--                         expansion writer), fault_other, fault_kernel (perf path only), remote (a
--                         task of another process: /proc/PID/smaps, ptrace, khugepaged), other (a
--                         kernel path or system call not listed), unknown
--
-- New process_stats (and cgroup_stats) columns, the contention collector's per-process sums of
-- the same waits, so that every process and unit has them as counters (/metrics per unit):
--   mmap_lock_behind_waits     INTEGER  the process's waits for an mmap_lock (its own mm's, or
--                                       another's: a remote reader), lock:contention_begin to _end
--   mmap_lock_behind_<op>_ns   INTEGER  their wait time by the holder's op (the names above,
--                                       unknown included), nanoseconds; they sum to the
--                                       process's mmap_lock rows' total_wait_ns
--
-- The view mmap_lock_holders sums the mmap_lock rows per window, waiting process and holder: the
-- question "behind whom did this process wait" in plain SQL.
--
-- Example: what the faults of process 1234 waited behind over the last 10 minutes
--   SELECT holder_op, holder_pid, holder_comm, sum(waits) AS waits,
--          sum(total_wait_ns) / 1e6 AS wait_ms, max(max_wait_ns) / 1e3 AS max_us
--   FROM mmap_lock_holders WHERE pid = 1234 AND ts_end > strftime('%s','now') - 600
--   GROUP BY holder_op, holder_pid ORDER BY wait_ms DESC;

ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_waits INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_waits >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_fault_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_fault_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_fault_other_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_fault_other_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_fault_kernel_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_fault_kernel_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_mmap_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_mmap_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_munmap_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_munmap_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_mremap_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_mremap_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_mprotect_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_mprotect_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_madvise_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_madvise_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_brk_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_brk_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_mlock_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_mlock_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_mincore_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_mincore_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_exit_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_exit_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_fork_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_fork_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_exec_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_exec_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_remote_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_remote_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_other_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_other_ns >= 0);
ALTER TABLE process_windows ADD COLUMN mmap_lock_behind_unknown_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_behind_unknown_ns >= 0);

ALTER TABLE lock_windows ADD COLUMN holder_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE lock_windows ADD COLUMN holder_pid INTEGER;
ALTER TABLE lock_windows ADD COLUMN holder_tid INTEGER;
ALTER TABLE lock_windows ADD COLUMN holder_comm TEXT NOT NULL DEFAULT '';
ALTER TABLE lock_windows ADD COLUMN holder_op TEXT NOT NULL DEFAULT '';

DROP VIEW lock_stats;
CREATE VIEW lock_stats AS
SELECT
	w.ts_start AS ts_start,
	w.ts_end AS ts_end,
	l.pid AS pid,
	l.start_time AS start_time,
	l.comm AS comm,
	l.type AS type,
	l.caller AS caller,
	l.lock AS lock,
	l.lock_pid AS lock_pid,
	l.contended AS contended,
	l.wait_ns AS total_wait_ns,
	l.max_wait_ns AS max_wait_ns,
	l.min_wait_ns AS min_wait_ns,
	l.wait_ns / l.contended AS avg_wait_ns,
	l.p50_wait_ns AS p50_wait_ns,
	l.p90_wait_ns AS p90_wait_ns,
	l.p99_wait_ns AS p99_wait_ns,
	l.hist AS hist,
	l.holder_mode AS holder_mode,
	l.holder_pid AS holder_pid,
	l.holder_tid AS holder_tid,
	l.holder_comm AS holder_comm,
	l.holder_op AS holder_op
FROM lock_windows AS l
JOIN windows AS w ON w.id = l.window_id;

-- mmap_lock_holders columns: ts_start, ts_end (the window), pid, start_time, comm (the waiting
-- process), lock_pid (whose mm's mmap_lock: the waiter's own, or another process's for a remote
-- reader), holder_mode, holder_pid, holder_tid, holder_comm, holder_op (as above), waits,
-- total_wait_ns, max_wait_ns (over the waiter's callers and lock types).
CREATE VIEW mmap_lock_holders AS
SELECT
	w.ts_start AS ts_start,
	w.ts_end AS ts_end,
	l.pid AS pid,
	l.start_time AS start_time,
	max(l.comm) AS comm,
	l.lock_pid AS lock_pid,
	l.holder_mode AS holder_mode,
	l.holder_pid AS holder_pid,
	l.holder_tid AS holder_tid,
	max(l.holder_comm) AS holder_comm,
	l.holder_op AS holder_op,
	sum(l.contended) AS waits,
	sum(l.wait_ns) AS total_wait_ns,
	max(l.max_wait_ns) AS max_wait_ns
FROM lock_windows AS l
JOIN windows AS w ON w.id = l.window_id
WHERE l.lock = 'mmap_lock'
GROUP BY l.window_id, l.pid, l.start_time, l.lock_pid, l.holder_mode, l.holder_pid, l.holder_tid,
	l.holder_op;
