/*
 * The store thread (writer.h) against a database another connection keeps locked: a window that
 * fails to store stays queued and is stored with the next one once the lock is gone; beyond the
 * queue's bound the oldest windows are dropped and counted, never the one being written (which
 * was freed under the writer's feet before); stopping stores what is queued.
 * Each failed write waits out the store's 5 s busy timeout, so this test takes ~15 s.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dbfiles.h"
#include "snapshot.h"
#include "writer.h"

static char path[256];
static uint64_t next_ms; /* an hour ago, so the retention of 7 days keeps them */

static struct mm_snapshot *window(void)
{
	struct mm_snapshot *w = mm_snapshot_new(0, 0, 0, 0);
	w->window_start_ms = next_ms;
	w->window_end_ms = next_ms += 1000;
	w->interval_s = 1;
	return w;
}

/* Waits (at most 20 s) until the writer's counts are at least @stored and @errors. */
static void wait_for(struct mm_writer *wr, uint64_t stored, uint64_t errors)
{
	uint64_t s = 0, e = 0;
	for (int i = 0; i < 2000; i++) {
		mm_writer_stats(wr, &s, &e);
		if (s >= stored && e >= errors)
			return;
		usleep(10000);
	}
	fprintf(stderr, "waited for stored %llu errors %llu, have %llu %llu\n",
		(unsigned long long)stored, (unsigned long long)errors, (unsigned long long)s,
		(unsigned long long)e);
}

static long long windows_stored(void)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	long long n = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM windows", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

static sqlite3 *lock_db(void)
{
	sqlite3 *db = NULL;
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK);
	return db;
}

static void unlock_db(sqlite3 *db)
{
	CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
}

static void test_a_failed_window_is_retried_with_the_next(void)
{
	struct mm_writer *wr = NULL;
	uint64_t stored, errors;

	CHECK(mm_writer_start(path, 7, &wr) == 0);
	if (!wr)
		return;
	sqlite3 *db = lock_db();
	mm_writer_submit(wr, window());
	wait_for(wr, 0, 1);
	mm_writer_stats(wr, &stored, &errors);
	CHECK_U64(stored, 0);
	CHECK_U64(errors, 1);
	unlock_db(db);
	mm_writer_submit(wr, window());
	wait_for(wr, 2, 1);
	mm_writer_stats(wr, &stored, &errors);
	CHECK_U64(stored, 2);
	CHECK_U64(errors, 1);
	CHECK(mm_writer_stop(wr) == 0);
	CHECK_U64(windows_stored(), 2);
}

static void test_beyond_the_queue_the_oldest_are_dropped_and_counted(void)
{
	struct mm_writer *wr = NULL;
	uint64_t stored, errors;
	long long before = windows_stored();

	CHECK(mm_writer_start(path, 7, &wr) == 0);
	if (!wr)
		return;
	sqlite3 *db = lock_db();
	for (int i = 0; i < 70; i++) /* the queue holds 64 */
		mm_writer_submit(wr, window());
	/* Six windows are lost: dropped from the full queue, or the one in flight failed and found
	 * the queue full. (A window being written is never freed under the writer's feet.) */
	wait_for(wr, 0, 6);
	mm_writer_stats(wr, &stored, &errors);
	CHECK_U64(stored, 0);
	CHECK_U64(errors, 6);
	unlock_db(db);
	CHECK(mm_writer_stop(wr) == 0); /* stores what is queued */
	long long now = windows_stored() - before;
	CHECK_U64(now, 64); /* the 6 oldest dropped */
}

int main(void)
{
	if (tmpdir_create("writer") < 0)
		return 77;
	snprintf(path, sizeof(path), "%s/history.db", tmpdir);
	next_ms = ((uint64_t)time(NULL) - 3600) * 1000;
	RUN(test_a_failed_window_is_retried_with_the_next);
	RUN(test_beyond_the_queue_the_oldest_are_dropped_and_counted);
	tmpdir_remove();
	return check_summary();
}
