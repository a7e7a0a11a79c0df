/*
 * The store thread. Closed windows are queued here by the collection loop and written to SQLite
 * on a thread of their own, so a slow disk never stalls collection. A window that fails to store
 * (disk full, locked database) stays queued and is retried on a schedule (every 0.5 s at first,
 * backing off to every 8 s) until the database takes it; the queue is bounded, and windows
 * dropped from it are counted as lost and as store errors, and reported as a gap (log line and
 * sd_notify status) when the database takes windows again. Stopping writes everything still
 * queued: nothing collected is lost on a clean shutdown.
 */
#ifndef MM_WRITER_H
#define MM_WRITER_H

#include <stdint.h>

struct mm_writer;
struct mm_snapshot;

/* Opens the database (on the caller's thread, so start-up errors are reported where they can be
 * fatal) and starts the thread. Returns 0 and *ret, or -errno (already logged). */
int mm_writer_start(const char *db_path, unsigned retention_days, struct mm_writer **ret);

/* Queues closed window @w; the caller's reference moves to the writer. */
void mm_writer_submit(struct mm_writer *wr, struct mm_snapshot *w);

void mm_writer_set_retention(struct mm_writer *wr, unsigned retention_days);

/* Windows stored and store errors (failed writes, and windows dropped from the full queue) since
 * start. */
void mm_writer_stats(struct mm_writer *wr, uint64_t *ret_stored, uint64_t *ret_errors);

/* mm_writer_stats(), and in *@ret_lost (when not NULL) the windows never stored: dropped from the
 * full queue or given up at stop. */
void mm_writer_stats_lost(struct mm_writer *wr, uint64_t *ret_stored, uint64_t *ret_errors,
			  uint64_t *ret_lost);

/* Writes what is queued, stops the thread, closes the database. Returns 0 when every queued
 * window was stored, else -EIO (logged). Accepts NULL. */
int mm_writer_stop(struct mm_writer *wr);

#endif
