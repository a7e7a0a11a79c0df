/*
 * The SQLite history. One database file in WAL mode; the schema comes from the numbered
 * migrations in schema/ (compiled in), applied in order, with the version in PRAGMA user_version.
 * Each closed window (with its lock contention rows) is written in one transaction; windows older
 * than the retention are pruned.
 *
 * A store handle belongs to one thread. The writer thread owns a read-write handle; the HTTP
 * thread opens its own read-only handle for history queries (WAL lets it read while the writer
 * writes).
 */
#ifndef MM_STORE_H
#define MM_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "faulttable.h"
#include "snapshot.h"

struct mm_store;

/* Opens (creating the file and its directory if needed) and migrates the database at @path.
 * Returns 0 and sets *ret, or a negative errno after logging one clear line (e.g. "database
 * /x/y.db: schema version 9 is newer than this mmlockd (3)", disk full, permission denied). */
int mm_store_open(const char *path, struct mm_store **ret);

/* Opens an existing database read-only for queries. Same return convention. */
int mm_store_open_readonly(const char *path, struct mm_store **ret);

/* For a one-shot reader (report): opens an existing database read-only, immutable when no -wal
 * file is beside it (no connection has it open), so nothing is created beside the file (no
 * -wal or -shm owned by the reader left in another user's directory, none needed in a
 * directory the reader cannot write); with a -wal (the daemon running) as
 * mm_store_open_readonly. A missing or unreadable file, or an unreadable -wal or -shm, is
 * logged as one line saying what to do. Same return convention. */
int mm_store_open_offline(const char *path, struct mm_store **ret);

void mm_store_close(struct mm_store *st); /* accepts NULL */

/* Makes @path + "-tmp" SQLite's directory for temporary files (the sorter of a long range's
 * query spills there); mm_store_open() makes the directory. SQLite's setting is process-wide and
 * must not change while another thread uses SQLite: call before starting threads that query.
 * Returns 0 or -ENOMEM. */
int mm_store_use_temp_dir(const char *path);

/* Writes that directory's path for the database @path into @buf. Returns 0 or -ENAMETOOLONG. */
int mm_store_temp_dir(const char *path, char *buf, size_t size);

/* Has @check(@arg) called about every millisecond of a query's work on @st (NULL: never); when it
 * returns non-zero the query stops and its call returns -ECANCELED, unlogged. */
void mm_store_set_interrupt(struct mm_store *st, int (*check)(void *arg), void *arg);

/* Refreshes the query planner's statistics (ANALYZE, sampling a bounded number of rows per
 * index: milliseconds whatever the size). Returns 0 or a negative errno (logged). */
int mm_store_analyze(struct mm_store *st);

/* Writes the closed window @w (w->window_end_ms != 0) in one transaction: the window row, every
 * process of w->procs whose window stats are not all zero (process identity = pid + start_ms,
 * so pid reuse never merges two processes), every global and event counter of the window.
 * Returns 0 or a negative errno (logged); on failure nothing of the window is kept. */
int mm_store_write_window(struct mm_store *st, const struct mm_snapshot *w);

/* Makes the range sums that long-range queries read (store.c, "Range sums") ready: rebuilt from
 * the stored windows when they are missing or do not cover them (seconds per million process
 * rows, once after an upgrade), and kept by every window written after. mm_store_write_window()
 * calls it at its first window when nobody did; the writer calls it first with @check
 * (mm_store_set_interrupt()) so that a stop interrupts a long rebuild. On failure the windows
 * are written without them and queries sum the windows. Returns 0 or a negative errno (logged;
 * -ECANCELED when @check stopped it). */
int mm_store_build_sums(struct mm_store *st, int (*check)(void *arg), void *arg);

/* Deletes the windows that ended more than @retention_ms before @now_ms (unix ms) or before the
 * end of the newest window stored, whichever is earlier, with their rows, and the processes no
 * longer referenced. So a clock far ahead of the windows prunes as if it were at the newest one,
 * the newest window is never deleted, and neither is any window that ended within @retention_ms
 * before @now_ms (the window just written, after a clock step back). Returns the number of
 * windows deleted or a negative errno. */
int mm_store_prune(struct mm_store *st, uint64_t now_ms, uint64_t retention_ms);

/* Appends to @out a JSON array of process_stats rows (one object per process per window, keys as
 * the view's columns) with ts_end > since_s and ts_start < until_s, for @pid (or every process when
 * pid < 0), oldest first, at most @limit rows. With @max_bytes (0: no bound), the array ends at
 * the first window boundary after @max_bytes of JSON, and *@ret_next is the ts_end of its last
 * window, where the next page starts (since=); else *@ret_next is NaN. Returns 0 or a negative
 * errno. */
int mm_store_history_json(struct mm_store *st, int pid, double since_s, double until_s,
			  unsigned limit, size_t max_bytes, struct mm_buf *out, double *ret_next);

/* The lock rows (lock_windows, see schema/003_locks.sql) of the windows with ts_end > since_s and
 * ts_start < until_s, for @pid (or every process when pid < 0), summed per (pid, start_time, type,
 * caller, lock, lock_pid) over those windows (mm_lock_row_add), longest total wait first, at most
 * @top rows (0: all). On success *ret_rows is a malloc'ed array (the caller frees it; NULL when
 * there are none) of *ret_n rows. Returns 0 or a negative errno (logged); *ret_* untouched then. */
int mm_store_locks(struct mm_store *st, int pid, double since_s, double until_s, unsigned top,
		   struct mm_snap_lock **ret_rows, size_t *ret_n);

/* What mmlockd report sums: the process_stats rows of the windows with ts_end > since_s and
 * ts_start < until_s, optionally of one pid, of one cgroup and the cgroups below it, of processes
 * named @comm in the window. */
struct mm_fault_query {
	double since_s, until_s;
	int pid;	    /* -1: every process */
	const char *cgroup; /* NULL: every cgroup */
	const char *comm;   /* NULL: every name */
	enum { MM_FAULT_BY_PROCESS, MM_FAULT_BY_CGROUP, MM_FAULT_ALL } group;
};

/* Sums every counter column of those rows per process (pid, start_time; comm of its latest
 * window), per cgroup, or over all of them (one row, also when nothing matched), with the number
 * of distinct processes in each. On success *ret_rows is a malloc'ed array of *ret_n rows (the
 * caller frees it). Returns 0 or a negative errno (logged); *ret_* untouched then. */
int mm_store_fault_rows(struct mm_store *st, const struct mm_fault_query *q,
			struct mm_fault_row **ret_rows, size_t *ret_n);

/* The windows that overlap [since_s, until_s): how many, the first start and last end (unix
 * seconds; 0 without windows), the distinct kernels they ran on ("6.12.117,6.18.44") and the
 * distinct sources of their event collectors (windows.source: "bpf", "perf", "bpf+perf";
 * "unknown" for windows stored before it was recorded; "bpf,perf" when they changed within the
 * range; "" when no window ran a collector on events). */
struct mm_store_range {
	uint64_t windows;
	double first_s, last_s;
	double covered_s; /* the windows' lengths summed: the time they cover */
	char kernels[256];
	char sources[64];
};
int mm_store_range(struct mm_store *st, double since_s, double until_s, struct mm_store_range *ret);

/* The contentions of mmap_lock in the lock rows of the windows that overlap [since_s, until_s)
 * (of process @pid unless < 0, of processes named @comm unless NULL): *ret, or -1 when the range
 * has no lock row at all (the contention collector did not run: not collected, not 0). Returns
 * 0 or a negative errno (logged). */
int mm_store_mmap_lock_contended(struct mm_store *st, int pid, const char *comm, double since_s,
				 double until_s, int64_t *ret);

/* The end of the last window that ended at or before @t (unix seconds), 0 when none did. With
 * it as until_s, the queries above take exactly the windows that ended in (since_s, @t], so two
 * ranges that meet at @t share no window (the one running across @t counts in the later one).
 * Returns 0 or a negative errno (logged). */
int mm_store_window_end_before(struct mm_store *st, double t, double *ret);

/* Which processes a range query of the web page covers, and which counters it sums: every field
 * is optional. */
struct mm_store_filter {
	int pid;	      /* < 0: any */
	double start_time;    /* < 0: any; with pid, one process (its identity) */
	const char *cgroup;   /* NULL: any; else that cgroup (a systemd unit's) exactly */
	uint64_t fields;      /* bit i: counter mm_proc_fields[i]; 0: every counter */
	bool fallbacks_first; /* top: most fallbacks first (then most faults) */
};
#define MM_STORE_FILTER_ALL ((struct mm_store_filter){.pid = -1, .start_time = -1})

/* A downsampled time series of the windows with ts_end > since_s and ts_start < until_s: windows
 * go into buckets of @step_s seconds by their end ((ts_end - since_s) / step_s), and each bucket
 * holds the sums over its windows and over the processes of @f of the counters of @f, with
 * ts_start, ts_end (first start, last end), seconds (the time its windows cover, so count / seconds
 * is a rate), windows and lost (samples lost by every event).
 * Only buckets with windows appear, oldest first; a window with no row of @f counts zeros. Appends
 * {"step":S,"columns":[names],"rows":[[values],...]} to @out.
 * @step_s must be > 0. Returns 0 or a negative errno (logged); @out is as it was then. */
int mm_store_series_json(struct mm_store *st, const struct mm_store_filter *f, double since_s,
			 double until_s, double step_s, struct mm_buf *out);

/* Totals over the windows with ts_end > since_s and ts_start < until_s, one object per process
 * (pid, start_time, comm, cgroup, windows, first, last, then the counters of @f)
 * or, with @by_cgroup, per cgroup (cgroup, processes, windows, first, last, counters), of the
 * processes of @f, most faults (minflt + majflt + faults) first, then most fallbacks (the other
 * way round with @f's fallbacks_first), at most @limit. Appends the JSON array to @out. Returns 0
 * or a negative errno (logged); @out is as it was then. */
int mm_store_top_json(struct mm_store *st, const struct mm_store_filter *f, bool by_cgroup,
		      double since_s, double until_s, unsigned limit, struct mm_buf *out);

/* The schema version this build migrates to. */
int mm_store_schema_version(void);

#endif
