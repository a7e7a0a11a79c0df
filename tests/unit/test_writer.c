/*
 * The store thread (writer.h) against a database another connection keeps locked: a window that
 * fails to store stays queued and is stored with the next one once the lock is gone; beyond the
 * queue's bound the oldest windows are dropped and counted, never the one being written (which
 * was freed under the writer's feet before); stopping stores what is queued. After an outage
 * longer than the queue (a lock held, or a full disk that is then freed) the writer retries on its
 * own schedule although the full queue's count never changes, stores what is queued and counts
 * the dropped windows as lost. (The 90 s lock and the long full disk of issue 31 are the same
 * mechanism as these: more windows than the queue holds while the database refuses them.)
 * Each failed write waits out the store's 5 s busy timeout, so this test takes ~30 s.
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

static char path[320];
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
	/* The writer's start-up (range sums, ANALYZE, a checkpoint) may hold the database a moment
	 * on a loaded machine: wait for it as a real second writer would. */
	sqlite3_busy_timeout(db, 20000);
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

/* Submits a window every 100 ms, as the collection loop would with the queue full, until @stored
 * windows are stored or 25 s have passed. Returns the windows stored. */
static uint64_t keep_submitting(struct mm_writer *wr, uint64_t stored)
{
	uint64_t s = 0, e = 0;

	for (int i = 0; i < 250; i++) {
		mm_writer_submit(wr, window());
		usleep(100000);
		mm_writer_stats(wr, &s, &e);
		if (s >= stored)
			break;
	}
	return s;
}

static void test_a_full_queue_is_retried_after_the_lock_is_gone(void)
{
	struct mm_writer *wr = NULL;
	uint64_t stored, errors, lost;
	long long before = windows_stored();

	CHECK(mm_writer_start(path, 7, &wr) == 0);
	if (!wr)
		return;
	sqlite3 *db = lock_db();
	for (int i = 0; i < 70; i++)
		mm_writer_submit(wr, window());
	/* Six windows dropped and at least one write failed with the queue full (whichever came
	 * first): the writer is waiting for its retry, not in a write that the unlock would let
	 * through. */
	wait_for(wr, 0, 7);
	unlock_db(db);
	/* Each new window now drops the oldest: the queue's count stays 64. */
	stored = keep_submitting(wr, 64);
	CHECK(stored >= 64);
	mm_writer_stats_lost(wr, &stored, &errors, &lost);
	CHECK(lost >= 6);
	CHECK(mm_writer_stop(wr) == 0);
	CHECK(windows_stored() - before >= 64);
}

/* In a child with its own mount namespace: a database on a 2 MiB tmpfs, filled up by another
 * file while more windows than the queue holds arrive, then freed. Exit 77 when the child cannot
 * mount a tmpfs. */
static int disk_full_child(const char *dir)
{
	struct mm_writer *wr = NULL;
	uint64_t stored, errors, lost;
	char db[300], filler[300], cmd[700];

	snprintf(db, sizeof(db), "%s/full.db", dir);
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	snprintf(path, sizeof(path), "%s", db);
	if (mm_writer_start(db, 7, &wr) < 0)
		return 10;
	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s bs=4k 2>/dev/null", filler);
	if (system(cmd) == -1)
		return 11;
	for (int i = 0; i < 70; i++)
		mm_writer_submit(wr, window());
	wait_for(wr, 0, 7);
	mm_writer_stats_lost(wr, &stored, &errors, &lost);
	if (stored != 0 || errors < 7) {
		fprintf(stderr, "disk full: %llu stored, %llu errors\n", (unsigned long long)stored,
			(unsigned long long)errors);
		return 12;
	}
	unlink(filler);
	stored = keep_submitting(wr, 64);
	mm_writer_stats_lost(wr, &stored, &errors, &lost);
	if (stored < 64 || lost < 6) {
		fprintf(stderr, "after freeing: %llu stored, %llu lost\n",
			(unsigned long long)stored, (unsigned long long)lost);
		return 13;
	}
	return mm_writer_stop(wr) == 0 ? 0 : 14;
}

static void test_a_full_queue_is_retried_after_a_full_disk_is_freed(void)
{
	int r = in_small_tmpfs("full", "2m", disk_full_child);

	if (r == 77) {
		printf("skip test_a_full_queue_is_retried_after_a_full_disk_is_freed: cannot mount "
		       "a tmpfs\n");
		return;
	}
	CHECK_U64(r, 0);
}

int main(void)
{
	if (tmpdir_create("writer") < 0)
		return 77;
	snprintf(path, sizeof(path), "%s/history.db", tmpdir);
	next_ms = ((uint64_t)time(NULL) - 3600) * 1000;
	RUN(test_a_failed_window_is_retried_with_the_next);
	RUN(test_beyond_the_queue_the_oldest_are_dropped_and_counted);
	RUN(test_a_full_queue_is_retried_after_the_lock_is_gone);
	RUN(test_a_full_queue_is_retried_after_a_full_disk_is_freed);
	tmpdir_remove();
	return check_summary();
}
