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

#include <stdint.h>

#include "buf.h"
#include "snapshot.h"

struct mm_store;

/* Opens (creating the file and its directory if needed) and migrates the database at @path.
 * Returns 0 and sets *ret, or a negative errno after logging one clear line (e.g. "database
 * /x/y.db: schema version 9 is newer than this mmlockd (3)", disk full, permission denied). */
int mm_store_open(const char *path, struct mm_store **ret);

/* Opens an existing database read-only for queries. Same return convention. */
int mm_store_open_readonly(const char *path, struct mm_store **ret);

void mm_store_close(struct mm_store *st); /* accepts NULL */

/* Writes the closed window @w (w->window_end_ms != 0) in one transaction: the window row, every
 * process of w->procs whose window stats are not all zero (process identity = pid + start_ms,
 * so pid reuse never merges two processes), every global and event counter of the window.
 * Returns 0 or a negative errno (logged); on failure nothing of the window is kept. */
int mm_store_write_window(struct mm_store *st, const struct mm_snapshot *w);

/* Deletes windows that ended before @before_ms, with their rows, and processes no longer
 * referenced. Returns the number of windows deleted or a negative errno. */
int mm_store_prune(struct mm_store *st, uint64_t before_ms);

/* Appends to @out a JSON array of process_stats rows (one object per process per window, keys as
 * the view's columns) with ts_end > since_s and ts_start < until_s, for @pid (or every process when
 * pid < 0), oldest first, at most @limit rows. Returns 0 or a negative errno. */
int mm_store_history_json(struct mm_store *st, int pid, double since_s, double until_s,
			  unsigned limit, struct mm_buf *out);

/* The lock rows (lock_windows, see schema/003_locks.sql) of the windows with ts_end > since_s and
 * ts_start < until_s, for @pid (or every process when pid < 0), summed per (pid, start_time, type,
 * caller, lock, lock_pid) over those windows (mm_lock_row_add), longest total wait first, at most
 * @top rows (0: all). On success *ret_rows is a malloc'ed array (the caller frees it; NULL when
 * there are none) of *ret_n rows. Returns 0 or a negative errno (logged); *ret_* untouched then. */
int mm_store_locks(struct mm_store *st, int pid, double since_s, double until_s, unsigned top,
		   struct mm_snap_lock **ret_rows, size_t *ret_n);

/* The schema version this build migrates to. */
int mm_store_schema_version(void);

#endif
