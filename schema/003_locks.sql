-- 003_locks.sql: the lock contention profile (plugins/contention.c). One row per window per
-- (process, lock type, caller, lock): how often the process's tasks waited, how long in total,
-- longest, shortest, and the distribution of the waits. A wait is lock:contention_begin ->
-- lock:contention_end of one thread on one lock, paired as `perf lock contention` pairs them; it
-- belongs to the window in which it ended. The VIEW lock_stats is the user-facing interface (also
-- what `mmlockd report --locks` and GET /api/v1/locks read); lock_windows may change in later
-- migrations, the view's columns only grow.
--
-- Choices, and why:
--   * Rows carry pid, start_time and comm themselves rather than referencing processes: kernel
--     threads contend on locks without ever faulting, so they may have no process row; start_time
--     is 0 when the collector could not learn it.
--   * The histogram is kept as text ("11:3 12:5": bucket:count, nonzero buckets only; bucket i
--     counts waits in [2^i, 2^(i+1)) ns) so that quantiles over any time range can be recomputed
--     by summing buckets; p50/p90/p99 of the window are stored too, for plain SQL.
--   * A rowid table: one window holds a few hundred rows at most (the collector caps it at 4096
--     keys plus one "(other)" row per process and call site), and lock_pid may be NULL.
--
-- lock_stats columns:
--   ts_start, ts_end   REAL     the window, unix seconds (ms precision)
--   pid                INTEGER  process whose task waited (0: the idle task, in an interrupt)
--   start_time         REAL     its start, unix seconds; with pid its identity; 0 when unknown
--   comm               TEXT     its name, '' when unknown
--   type               TEXT     lock type from the begin's flags, with perf lock's names:
--                               spinlock, rwlock:R, rwlock:W, rwsem:R, rwsem:W, mutex, rtmutex,
--                               rwlock-rt:R, rwlock-rt:W, pcpu-sem:R, pcpu-sem:W (percpu rwsem),
--                               semaphore, unknown
--   caller             TEXT     first kernel frame outside lock and scheduler functions, "sym+0xoff"
--                               (perf lock contention --stack-skip 0), 'unknown' when none
--   lock               TEXT     'mmap_lock', a static lock's symbol ('tasklist_lock'), the address
--                               ('0xffff8881...'), or '(other)' for waits a full window could not
--                               key by lock
--   lock_pid           INTEGER  for lock = 'mmap_lock': the process whose mm it is; else NULL
--   contended          INTEGER  waits (contentions), count
--   total_wait_ns      INTEGER  their summed wait, nanoseconds
--   max_wait_ns, min_wait_ns    INTEGER  longest and shortest wait, nanoseconds
--   avg_wait_ns        INTEGER  total_wait_ns / contended
--   p50_wait_ns, p90_wait_ns, p99_wait_ns  INTEGER  quantiles, as the upper bound of the log2
--                               bucket that holds them (at most 2x the true value), capped at
--                               max_wait_ns
--   hist               TEXT     the histogram, as above
--
-- Example: perf lock contention's table for one process over the last 10 minutes
--   SELECT sum(contended) AS contended, sum(total_wait_ns) / 1e6 AS total_ms,
--          max(max_wait_ns) / 1e3 AS max_us, sum(total_wait_ns) / sum(contended) / 1e3 AS avg_us,
--          type, caller
--   FROM lock_stats WHERE pid = 1234 AND ts_end > strftime('%s','now') - 600
--   GROUP BY type, caller ORDER BY sum(total_wait_ns) DESC LIMIT 20;
-- Who waits for whose mmap_lock:
--   SELECT pid, comm, lock_pid, sum(contended), sum(total_wait_ns) / 1e6 AS ms
--   FROM lock_stats WHERE lock = 'mmap_lock' GROUP BY pid, lock_pid ORDER BY ms DESC;

CREATE TABLE lock_windows (
	window_id INTEGER NOT NULL REFERENCES windows (id) ON DELETE CASCADE,
	pid INTEGER NOT NULL,
	start_time REAL NOT NULL DEFAULT 0,
	comm TEXT NOT NULL DEFAULT '',
	type TEXT NOT NULL,
	caller TEXT NOT NULL,
	lock TEXT NOT NULL,
	lock_pid INTEGER,
	contended INTEGER NOT NULL CHECK (contended > 0),
	wait_ns INTEGER NOT NULL CHECK (wait_ns >= 0),
	max_wait_ns INTEGER NOT NULL CHECK (max_wait_ns >= 0),
	min_wait_ns INTEGER NOT NULL CHECK (min_wait_ns >= 0 AND min_wait_ns <= max_wait_ns),
	p50_wait_ns INTEGER NOT NULL DEFAULT 0,
	p90_wait_ns INTEGER NOT NULL DEFAULT 0,
	p99_wait_ns INTEGER NOT NULL DEFAULT 0,
	hist TEXT NOT NULL DEFAULT ''
);
-- Rows of a window (history queries join on it; pruning cascades through it).
CREATE INDEX lock_windows_window ON lock_windows (window_id);

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
	l.hist AS hist
FROM lock_windows AS l
JOIN windows AS w ON w.id = l.window_id;
