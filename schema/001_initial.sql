-- 001_initial.sql: the first mmlockd schema. It holds one row per closed collection window, the
-- processes seen (identified by pid AND start time, so a reused pid never merges two processes),
-- each process's counters for each window in which it did anything, and the global and
-- per-tracepoint counters of each window. The VIEW process_stats at the end is the interface for
-- people who open the database with `sqlite3`; the tables under it may change in later
-- migrations, the view's columns only grow.
--
-- How migrations work (daemon/store.c): the files schema/NNN_name.sql are compiled in and applied
-- in order; file NNN brings the database to PRAGMA user_version = NNN. Each file runs inside one
-- transaction that store.c opens (BEGIN IMMEDIATE) and commits together with the user_version
-- update, with foreign_keys=ON. So a migration must not contain BEGIN/COMMIT (store.c refuses one
-- that ends the transaction) and cannot rely on PRAGMA foreign_keys (a no-op inside a
-- transaction). Never change what a released migration does to the tables; add a new file.
--
-- The views process_stats (here) and cgroup_stats (005) have one column per counter of
-- mm_proc_fields[] (daemon/stats.c), in its order. 001 and 005 create them as they were then;
-- store.c writes them again from that table with the last migration, so no later migration
-- repeats them. Adding a per-process counter: a member in daemon/stats.h, a row in
-- mm_proc_fields[], and a new migration doing
--   ALTER TABLE process_windows ADD COLUMN <name> INTEGER NOT NULL DEFAULT 0 CHECK (<name> >= 0);
-- store.c checks at open that every mm_proc_fields[] name is a column of process_windows and of
-- process_stats, and refuses to start otherwise.
--
-- Choices beyond the first sketch, and why:
--   * windows.kernel: `uname -r` at the window's end. The point of the tool is comparing kernels
--     (vanilla vs the per-VMA-lock retry series); a machine rebooted into another kernel keeps
--     the same database, and without this column its history could not be split by kernel.
--   * CHECK constraints on times and counters: a negative counter or a window ending before it
--     starts is a bug upstream; failing the window's transaction beats storing nonsense.
--   * global_windows and event_windows also cascade from windows and are WITHOUT ROWID (small
--     rows always read by their primary key), like process_windows.
--   * No STRICT tables: they need SQLite >= 3.37 to even open the file, and people copy these
--     databases to older machines to analyse them. The CHECKs give the type safety that matters.
--   * The wait histogram (mm_proc_stats.mmap_lock_wait_hist) is not stored yet; it would be a
--     later migration (e.g. a BLOB or per-bucket table) if history needs quantiles.
--
-- Times: unix seconds as REAL with millisecond precision (the daemon writes ms / 1000.0, which a
-- double represents exactly enough to round-trip to the millisecond for any realistic date).
-- Counters are INTEGER (SQLite's 64-bit signed; the daemon clamps at 2^63-1).
--
-- Example (busiest mmap_lock waiters in the last hour, per process):
--   sqlite3 /var/lib/mmlockd/mmlockd.db "
--     SELECT pid, comm, sum(mmap_lock_waits) AS waits,
--            round(sum(mmap_lock_wait_ns) / 1e6, 3) AS wait_ms,
--            round(1.0 * sum(mmap_lock_wait_ns) / max(sum(mmap_lock_waits), 1) / 1e3, 1) AS avg_us
--     FROM process_stats
--     WHERE ts_end > unixepoch('now') - 3600
--     GROUP BY pid, start_time ORDER BY wait_ms DESC LIMIT 10;"
-- (unixepoch() needs sqlite3 >= 3.38; use strftime('%s','now') on older ones.)
-- Per kernel: SELECT w.kernel, sum(pw.faults), sum(pw.mmap_lock_read)
--             FROM process_windows pw JOIN windows w ON w.id = pw.window_id GROUP BY w.kernel;

-- One row per closed collection window [ts_start, ts_end).
CREATE TABLE windows (
	id INTEGER PRIMARY KEY,
	ts_start REAL NOT NULL,                 -- window start, unix seconds (ms precision)
	ts_end REAL NOT NULL,                   -- window end, unix seconds (ms precision)
	kernel TEXT NOT NULL DEFAULT '',        -- uname -r of the running kernel
	CHECK (ts_end >= ts_start)
);
-- Range queries by time (history) and pruning by age.
CREATE INDEX windows_ts_end ON windows (ts_end);

-- One row per process ever stored. A process is identified by (pid, start_time): pids are
-- reused, start times of two processes with the same pid are not. comm and cgroup are the latest
-- seen (updated at every window the process appears in).
CREATE TABLE processes (
	id INTEGER PRIMARY KEY,
	pid INTEGER NOT NULL,
	start_time REAL NOT NULL,               -- process start, unix seconds (ms precision)
	comm TEXT NOT NULL,                     -- latest name (follows exec)
	cgroup TEXT NOT NULL DEFAULT '',        -- latest cgroup path ('' when unknown)
	UNIQUE (pid, start_time)                -- also serves lookups by pid
);

-- A process's counters in one window. Only processes with some activity in the window get a
-- row. One INTEGER column per entry of mm_proc_fields[] (daemon/stats.c), same name.
CREATE TABLE process_windows (
	window_id INTEGER NOT NULL REFERENCES windows (id) ON DELETE CASCADE,
	process_id INTEGER NOT NULL REFERENCES processes (id),
	comm TEXT NOT NULL,                     -- the name during this window (exec changes it)
	faults INTEGER NOT NULL DEFAULT 0 CHECK (faults >= 0),
	mmap_lock_read INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_read >= 0),
	mmap_lock_write INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_write >= 0),
	mmap_lock_trylock_fail INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_trylock_fail >= 0),
	mmap_lock_waits INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_waits >= 0),
	mmap_lock_wait_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_wait_ns >= 0),
	mmap_lock_write_hold_ns INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_write_hold_ns >= 0),
	mmap_lock_contended INTEGER NOT NULL DEFAULT 0 CHECK (mmap_lock_contended >= 0),
	PRIMARY KEY (window_id, process_id)
) WITHOUT ROWID;
-- History of one process; also what the foreign key check uses when processes are pruned.
CREATE INDEX process_windows_process ON process_windows (process_id);

-- Counters that belong to no process (e.g. /proc/vmstat deltas, a collector's unmatched events),
-- as exported on /metrics as mmlockd_<family>_total{name="<name>"}: the window's increase.
CREATE TABLE global_windows (
	window_id INTEGER NOT NULL REFERENCES windows (id) ON DELETE CASCADE,
	family TEXT NOT NULL,
	name TEXT NOT NULL,
	value INTEGER NOT NULL CHECK (value >= 0),
	PRIMARY KEY (window_id, family, name)
) WITHOUT ROWID;

-- Per tracepoint ("system:name"): samples read and samples lost (ring overflow) in the window.
CREATE TABLE event_windows (
	window_id INTEGER NOT NULL REFERENCES windows (id) ON DELETE CASCADE,
	event TEXT NOT NULL,
	samples INTEGER NOT NULL CHECK (samples >= 0),
	lost INTEGER NOT NULL CHECK (lost >= 0),
	PRIMARY KEY (window_id, event)
) WITHOUT ROWID;

-- process_stats: one row per process per window in which the process did anything; a process
-- absent from a window had all-zero counters in it. This is the stable, user-facing view (also
-- the keys of GET /api/v1/history). Counters are the window's increase, not running totals, so
-- sum() over rows gives totals over any time range. Columns:
--   ts_start                 REAL     window start, unix seconds (ms precision)
--   ts_end                   REAL     window end, unix seconds; the window is [ts_start, ts_end)
--   pid                      INTEGER  process id (reused by the kernel: group by pid, start_time)
--   start_time               REAL     process start, unix seconds (ms precision); with pid, the
--                                     process's identity
--   comm                     TEXT     process name during this window (changes on exec)
--   cgroup                   TEXT     latest cgroup v2 path (or v1 memory controller's), '' if
--                                     unknown
--   faults                   INTEGER  user page faults (exceptions:page_fault_user), count
--   mmap_lock_read           INTEGER  successful mmap_lock read acquisitions (trylocks too), count
--   mmap_lock_write          INTEGER  successful mmap_lock write acquisitions, count
--   mmap_lock_trylock_fail   INTEGER  acquisitions that returned without the lock (failed
--                                     trylock or killed wait), count
--   mmap_lock_waits          INTEGER  blocking acquisitions whose wait was timed, count
--   mmap_lock_wait_ns        INTEGER  summed wait of those (start_locking -> acquire_returned),
--                                     nanoseconds; mean wait = mmap_lock_wait_ns / mmap_lock_waits
--   mmap_lock_write_hold_ns  INTEGER  summed time mmap_lock was held for write (acquire ->
--                                     release), nanoseconds
--   mmap_lock_contended      INTEGER  acquisitions that hit lock:contention_begin, count
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
	pw.mmap_lock_contended AS mmap_lock_contended
FROM process_windows AS pw
JOIN windows AS w ON w.id = pw.window_id
JOIN processes AS p ON p.id = pw.process_id;
