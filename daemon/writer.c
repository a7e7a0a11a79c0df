/*
 * Store thread (see writer.h): a mutex-protected FIFO of closed-window snapshots, drained by one
 * thread that owns the read-write SQLite handle. Retention pruning runs on the same thread at
 * start and then about once an hour.
 *
 * Recovery. A window that fails to store goes back to the front of the queue and is retried on a
 * schedule of its own (RETRY_MIN_MS, doubling to RETRY_MAX_MS), whatever the queue does: a full
 * queue drops its oldest window for each new one and its count never changes, so a retry that
 * waited for a change of count (as it once did) never came, and history stopped for good after
 * any outage longer than MAX_QUEUED windows. The windows dropped in one outage are a gap: counted
 * (mm_writer_stats()'s @ret_lost), and when the database takes a window again one log line and the
 * service's status (sd_notify STATUS=) say how many windows were lost and which span of time they
 * covered.
 */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "notify.h"
#include "privilege.h"
#include "snapshot.h"
#include "store.h"

#define MAX_QUEUED   64
#define RETRY_MIN_MS 500
#define RETRY_MAX_MS 8000

struct mm_writer {
	struct mm_store *store;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mm_snapshot *queue[MAX_QUEUED];
	unsigned head, count;
	bool stopping;
	unsigned retention_days;
	uint64_t stored, errors, lost;
	uint64_t lost_at_stop; /* windows still unstored when stopping gave up */
	uint64_t last_prune_ms;
	uint64_t analyzed_at; /* windows stored when the planner statistics were last refreshed */

	/* The current outage: since its first failure, and the windows it dropped. */
	uint64_t failing_since_ms; /* 0: the last write succeeded */
	uint64_t gap_windows, gap_start_ms, gap_end_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void prune(struct mm_writer *wr, unsigned days)
{
	uint64_t now = now_ms();
	int r = mm_store_prune(wr->store, now, (uint64_t)days * 86400000ull);
	if (r > 0)
		log_info("store: pruned %d windows older than %u days", r, days);
	wr->last_prune_ms = now;
}

/* Refreshes the planner's statistics at the start, each time the windows stored since have
 * doubled (from 30) and at every prune: a plan chosen without them over a growing day of history
 * took minutes per query. mm_store_analyze() reads a bounded sample: milliseconds. */
static void analyze(struct mm_writer *wr, bool prune_due)
{
	if (!prune_due && (wr->stored < 30 || wr->stored < 2 * wr->analyzed_at))
		return;
	mm_store_analyze(wr->store); /* logged; the old statistics stay */
	wr->analyzed_at = wr->stored;
}

/* Counts window @w as lost in the current gap and frees it. Called with the lock held. */
static void lose(struct mm_writer *wr, struct mm_snapshot *w)
{
	if (!wr->gap_windows || w->window_start_ms < wr->gap_start_ms)
		wr->gap_start_ms = w->window_start_ms;
	if (w->window_end_ms > wr->gap_end_ms)
		wr->gap_end_ms = w->window_end_ms;
	wr->gap_windows++;
	wr->lost++;
	mm_snapshot_unref(w);
}

/* Drops the oldest queued window, counted as lost and as a store error (it failed to store
 * without a write of its own). Called with the lock held. */
static void drop_oldest(struct mm_writer *wr)
{
	struct mm_snapshot *w = wr->queue[wr->head];

	wr->queue[wr->head] = NULL;
	wr->head = (wr->head + 1) % MAX_QUEUED;
	wr->count--;
	wr->errors++;
	lose(wr, w);
}

static void format_utc(uint64_t ms, char *buf, size_t size)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, size, "%llu", (unsigned long long)t);
}

/* A write succeeded after failures: says how long the database refused windows and, when some
 * were dropped, that they are a gap in the history. Called with the lock held. */
static void outage_ended(struct mm_writer *wr)
{
	uint64_t secs = (now_ms() - wr->failing_since_ms) / 1000;
	char from[32], to[32];

	wr->failing_since_ms = 0;
	if (!wr->gap_windows) {
		log_info("store: the database takes windows again after %llu s; none was lost",
			 (unsigned long long)secs);
		return;
	}
	format_utc(wr->gap_start_ms, from, sizeof(from));
	format_utc(wr->gap_end_ms, to, sizeof(to));
	log_warning("store: the database takes windows again after %llu s; %llu windows from %s "
		    "to %s were lost (a gap in the history; %llu lost since start)",
		    (unsigned long long)secs, (unsigned long long)wr->gap_windows, from, to,
		    (unsigned long long)wr->lost);
	(void)mm_notifyf("STATUS=collecting; history gap: %llu windows lost from %s to %s",
			 (unsigned long long)wr->gap_windows, from, to);
	wr->gap_windows = 0;
	wr->gap_start_ms = wr->gap_end_ms = 0;
}

/* Waits until @deadline_ms (CLOCK_REALTIME, as pthread_cond_timedwait's default clock) or until
 * stopping. Called with the lock held. */
static void wait_until(struct mm_writer *wr, uint64_t deadline_ms)
{
	struct timespec ts = {.tv_sec = (time_t)(deadline_ms / 1000),
			      .tv_nsec = (long)(deadline_ms % 1000) * 1000000};

	while (!wr->stopping && now_ms() < deadline_ms)
		if (pthread_cond_timedwait(&wr->cond, &wr->lock, &ts) == ETIMEDOUT)
			break;
}

/* SQLite's progress check during the range sums' build: a stop ends it. */
static int stop_asked(void *arg)
{
	struct mm_writer *wr = arg;

	return __atomic_load_n(&wr->stopping, __ATOMIC_RELAXED);
}

/* The window being written is out of the queue, so submit() can never drop (and free) it under
 * the writer's feet; a failed one goes back to the front, or is lost if the queue filled
 * meanwhile, and the next attempt comes after the retry delay. */
static void *writer_thread(void *arg)
{
	struct mm_writer *wr = arg;
	unsigned retry_ms = RETRY_MIN_MS;

	mm_privilege_drop_thread(); /* its database is open; SQLite needs no capability */
	/* Before the first window (which waits in the queue meanwhile), and stopped by a stop. */
	mm_store_build_sums(wr->store, stop_asked, wr);
	pthread_mutex_lock(&wr->lock);
	for (;;) {
		while (!wr->count && !wr->stopping)
			pthread_cond_wait(&wr->cond, &wr->lock);
		if (!wr->count && wr->stopping)
			break;
		struct mm_snapshot *w = wr->queue[wr->head];
		wr->queue[wr->head] = NULL;
		wr->head = (wr->head + 1) % MAX_QUEUED;
		wr->count--;
		unsigned days = wr->retention_days;
		bool stopping = wr->stopping;
		pthread_mutex_unlock(&wr->lock);

		int r = mm_store_write_window(wr->store, w);
		bool prune_due = r == 0 && now_ms() - wr->last_prune_ms > 3600 * 1000;
		if (prune_due)
			prune(wr, days);
		if (r == 0)
			analyze(wr, prune_due);

		pthread_mutex_lock(&wr->lock);
		if (r == 0) {
			wr->stored++;
			mm_snapshot_unref(w);
			if (wr->failing_since_ms)
				outage_ended(wr);
			retry_ms = RETRY_MIN_MS;
			continue;
		}
		wr->errors++;
		if (!wr->failing_since_ms)
			wr->failing_since_ms = now_ms();
		if (stopping) {
			/* One last try failed at shutdown: give up on what is left. */
			lose(wr, w);
			wr->lost_at_stop++;
			while (wr->count) {
				drop_oldest(wr);
				wr->lost_at_stop++;
			}
			continue;
		}
		if (wr->count == MAX_QUEUED) {
			lose(wr, w); /* the oldest: dropped */
		} else {
			wr->head = (wr->head + MAX_QUEUED - 1) % MAX_QUEUED;
			wr->queue[wr->head] = w;
			wr->count++;
		}
		wait_until(wr, now_ms() + retry_ms);
		retry_ms = retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
	}
	pthread_mutex_unlock(&wr->lock);
	return NULL;
}

int mm_writer_start(const char *db_path, unsigned retention_days, struct mm_writer **ret)
{
	struct mm_writer *wr = calloc(1, sizeof(*wr));
	if (!wr)
		return log_error_errno(ENOMEM, "store: out of memory");
	int r = mm_store_open(db_path, &wr->store);
	if (r < 0) {
		free(wr);
		return r;
	}
	wr->retention_days = retention_days;
	pthread_mutex_init(&wr->lock, NULL);
	pthread_cond_init(&wr->cond, NULL);
	prune(wr, retention_days);
	analyze(wr, true); /* a database from an earlier run may have grown past its statistics */
	r = pthread_create(&wr->thread, NULL, writer_thread, wr);
	if (r) {
		mm_store_close(wr->store);
		free(wr);
		return log_error_errno(r, "store: cannot start thread: %m");
	}
	*ret = wr;
	return 0;
}

void mm_writer_submit(struct mm_writer *wr, struct mm_snapshot *w)
{
	pthread_mutex_lock(&wr->lock);
	if (wr->count == MAX_QUEUED) {
		/* The database has been failing for a while: drop the oldest window. Logged once
		 * per outage; outage_ended() says how many went. */
		if (!wr->gap_windows)
			log_warning("store: %d windows waiting, dropping the oldest until the "
				    "database takes them again",
				    MAX_QUEUED);
		drop_oldest(wr);
	}
	wr->queue[(wr->head + wr->count) % MAX_QUEUED] = w;
	wr->count++;
	pthread_cond_signal(&wr->cond);
	pthread_mutex_unlock(&wr->lock);
}

void mm_writer_set_retention(struct mm_writer *wr, unsigned retention_days)
{
	pthread_mutex_lock(&wr->lock);
	wr->retention_days = retention_days;
	wr->last_prune_ms = 0; /* prune with the new retention after the next window */
	pthread_mutex_unlock(&wr->lock);
}

void mm_writer_stats(struct mm_writer *wr, uint64_t *ret_stored, uint64_t *ret_errors)
{
	mm_writer_stats_lost(wr, ret_stored, ret_errors, NULL);
}

void mm_writer_stats_lost(struct mm_writer *wr, uint64_t *ret_stored, uint64_t *ret_errors,
			  uint64_t *ret_lost)
{
	pthread_mutex_lock(&wr->lock);
	*ret_stored = wr->stored;
	*ret_errors = wr->errors;
	if (ret_lost)
		*ret_lost = wr->lost;
	pthread_mutex_unlock(&wr->lock);
}

int mm_writer_stop(struct mm_writer *wr)
{
	if (!wr)
		return 0;
	pthread_mutex_lock(&wr->lock);
	__atomic_store_n(&wr->stopping, true,
			 __ATOMIC_RELAXED); /* stop_asked() reads it unlocked */
	pthread_cond_signal(&wr->cond);
	pthread_mutex_unlock(&wr->lock);
	pthread_join(wr->thread, NULL);
	uint64_t lost = wr->lost_at_stop;
	if (lost)
		log_error("store: %llu windows could not be written at shutdown",
			  (unsigned long long)lost);
	mm_store_close(wr->store);
	pthread_mutex_destroy(&wr->lock);
	pthread_cond_destroy(&wr->cond);
	free(wr);
	return lost ? -EIO : 0;
}
