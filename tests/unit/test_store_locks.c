/*
 * Lock contention rows in the SQLite history (daemon/store.c, schema/003_locks.sql) against real
 * files in a temporary directory: what a window writes to lock_windows and shows in the lock_stats
 * view (checked with plain SQLite, as a `sqlite3` user sees it), that mm_store_locks() sums a
 * process's rows over the windows of a time range and filters by pid, that a failed window keeps
 * none of its lock rows, and that pruning takes them with their window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "check.h"
#include "dbfiles.h"
#include "lockrows.h"
#include "locktable.h"
#include "log.h"
#include "snapshot.h"
#include "store.h"

/* lock_row() with a start time (1000 * pid ms), the holder's pid @lock_pid (-1: none) and a
 * histogram of @max once and @min for every other wait. */
static struct mm_snap_lock stored_row(int32_t pid, const char *type, const char *caller,
				      const char *lock, int32_t lock_pid, uint64_t contended,
				      uint64_t wait, uint64_t max, uint64_t min)
{
	struct mm_snap_lock r = lock_row(pid, type, caller, lock, contended, wait, max, min);

	r.start_ms = 1000 * (uint64_t)pid;
	r.lock_pid = lock_pid;
	for (uint64_t i = 1; i < contended; i++)
		mm_hist_add(&r.hist, min);
	return r;
}

/* A closed window [start_ms, end_ms) carrying copies of @rows. */
static int write_window(struct mm_store *st, uint64_t start_ms, uint64_t end_ms,
			const struct mm_snap_lock *rows, size_t n)
{
	struct mm_snapshot *w = mm_snapshot_new(0, 0, 0, 0);
	struct mm_snap_lock *copy = calloc(n ? n : 1, sizeof(*copy));
	int r;

	memcpy(copy, rows, n * sizeof(*copy));
	w->window_start_ms = start_ms;
	w->window_end_ms = w->taken_ms = end_ms;
	mm_snapshot_set_locks(w, copy, n, NULL, 0);
	r = mm_store_write_window(st, w);
	mm_snapshot_unref(w);
	return r;
}

static void test_a_window_writes_its_rows_to_the_view(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	char buf[256];
	struct mm_snap_lock rows[] = {
		stored_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 10, 3, 7000, 4000,
			   1000),
		stored_row(11, "spinlock", "folio_lruvec_lock_irqsave+0x5f", "0xffff888100000000",
			   -1, 1, 30, 30, 30),
	};

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_window(st, 10000, 20000, rows, 2) == 0);
	mm_store_close(st);
	CHECK(q_int(path, "SELECT count(*) FROM lock_stats") == 2);
	CHECK(q_int(path, "SELECT contended FROM lock_stats WHERE pid = 10") == 3);
	CHECK(q_int(path, "SELECT total_wait_ns FROM lock_stats WHERE pid = 10") == 7000);
	CHECK(q_int(path, "SELECT avg_wait_ns FROM lock_stats WHERE pid = 10") == 2333);
	CHECK(q_int(path, "SELECT max_wait_ns - min_wait_ns FROM lock_stats WHERE pid = 10") ==
	      3000);
	CHECK(q_int(path, "SELECT lock_pid FROM lock_stats WHERE pid = 10") == 10);
	CHECK(q_int(path, "SELECT lock_pid FROM lock_stats WHERE pid = 11") == -2); /* NULL */
	/* Waits 4000, 1000, 1000: the median is in [512, 1024), p99 in [2048, 4096) capped. */
	CHECK(q_int(path, "SELECT p50_wait_ns FROM lock_stats WHERE pid = 10") == 1024);
	CHECK(q_int(path, "SELECT p99_wait_ns FROM lock_stats WHERE pid = 10") == 4000);
	CHECK_STR(q_text(path, "SELECT hist FROM lock_stats WHERE pid = 10", buf, sizeof(buf)),
		  "9:2 11:1");
	CHECK_STR(q_text(path,
			 "SELECT type || ' ' || caller || ' ' || lock || ' ' || comm "
			 "FROM lock_stats WHERE pid = 10",
			 buf, sizeof(buf)),
		  "rwsem:W do_mprotect_pkey+0xc7 mmap_lock p10");
	CHECK(q_int(path, "SELECT ts_end - ts_start FROM lock_stats WHERE pid = 11") == 10);
	CHECK(q_int(path, "SELECT start_time FROM lock_stats WHERE pid = 11") == 11);
}

static void test_query_sums_windows_and_filters(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL, *ro = NULL;
	struct mm_snap_lock w1[] = {
		stored_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 10, 3, 7000, 4000,
			   1000),
		stored_row(11, "spinlock", "x+0x1", "0x10", -1, 1, 30, 30, 30),
	};
	struct mm_snap_lock w2[] = {
		stored_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 10, 2, 9000, 8000,
			   500),
	};
	struct mm_snap_lock w3[] = {
		stored_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 10, 1, 1, 1, 1),
	};
	struct mm_snap_lock *rows = NULL;
	size_t n = 0;

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_window(st, 10000, 20000, w1, 2) == 0);
	CHECK(write_window(st, 20000, 30000, w2, 1) == 0);
	CHECK(write_window(st, 30000, 40000, w3, 1) == 0);
	CHECK(mm_store_open_readonly(path, &ro) == 0);

	/* [10, 30) s: windows 1 and 2. */
	CHECK(mm_store_locks(ro, -1, 10, 30, 0, &rows, &n) == 0);
	CHECK_U64(n, 2);
	if (n == 2) {
		CHECK(rows[0].pid == 10);
		CHECK_U64(rows[0].contended, 5);
		CHECK_U64(rows[0].wait_ns, 16000);
		CHECK_U64(rows[0].max_ns, 8000);
		CHECK_U64(rows[0].min_ns, 500);
		CHECK(rows[0].lock_pid == 10);
		CHECK_U64(rows[0].start_ms, 10000);
		CHECK_STR(rows[0].comm, "p10");
		/* Histograms add up: 4000, 1000, 1000, 8000, 500. */
		uint64_t total = 0;
		for (unsigned i = 0; i < MM_HIST_BUCKETS; i++)
			total += rows[0].hist.bucket[i];
		CHECK_U64(total, 5);
		CHECK_U64(rows[0].hist.bucket[12], 1);
		CHECK(rows[1].pid == 11 && rows[1].lock_pid == -1);
	}
	free(rows);
	rows = NULL;

	/* pid 11 only; top 1 of everything. */
	CHECK(mm_store_locks(ro, 11, 0, 1e12, 0, &rows, &n) == 0);
	CHECK(n == 1 && rows[0].pid == 11);
	free(rows);
	rows = NULL;
	CHECK(mm_store_locks(ro, -1, 0, 1e12, 1, &rows, &n) == 0);
	CHECK(n == 1 && rows[0].contended == 6);
	free(rows);
	rows = NULL;
	/* Nothing in range. */
	CHECK(mm_store_locks(ro, -1, 50, 60, 0, &rows, &n) == 0);
	CHECK(n == 0 && rows == NULL);

	mm_store_close(ro);
	mm_store_close(st);
}

static void test_bad_rows_fail_the_window_and_prune_takes_rows(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snap_lock good[] = {
		stored_row(10, "rwsem:W", "a+0x1", "mmap_lock", 10, 1, 5, 5, 5),
	};
	struct mm_snap_lock bad[] = {
		stored_row(10, "rwsem:W", "a+0x1", "mmap_lock", 10, 1, 5, 5, 5),
		stored_row(11, "rwsem:W", "b+0x1", "x", -1, 1, 5, 5, 9), /* min > max */
	};

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_window(st, 10000, 20000, good, 1) == 0);
	CHECK(write_window(st, 20000, 30000, bad, 2) < 0);
	CHECK(q_int(path, "SELECT count(*) FROM lock_windows") == 1);
	CHECK(q_int(path, "SELECT count(*) FROM windows") == 1);
	CHECK(write_window(st, 30000, 40000, good, 1) == 0);
	CHECK(mm_store_prune(st, 26000, 1000) == 1); /* ended before 25 s */
	CHECK(q_int(path, "SELECT count(*) FROM lock_windows") == 1);
	CHECK(q_int(path, "SELECT ts_start FROM lock_stats") == 30);
	mm_store_close(st);
}

int main(void)
{
	if (tmpdir_create("store-locks") < 0)
		return 1;
	if (!getenv("MM_TEST_VERBOSE"))
		mm_log_set_level(LOG_CRIT); /* the failure test logs an error on purpose */

	RUN(test_a_window_writes_its_rows_to_the_view);
	RUN(test_query_sums_windows_and_filters);
	RUN(test_bad_rows_fail_the_window_and_prune_takes_rows);

	tmpdir_remove();
	return check_summary();
}
