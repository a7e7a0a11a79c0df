/*
 * Store thread (see writer.h): a mutex-protected FIFO of closed-window snapshots, drained by one
 * thread that owns the read-write SQLite handle. Retention pruning runs on the same thread at
 * start and then about once an hour.
 */
#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "privilege.h"
#include "snapshot.h"
#include "store.h"

#define MAX_QUEUED 64

struct mm_writer {
	struct mm_store *store;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct mm_snapshot *queue[MAX_QUEUED];
	unsigned head, count;
	bool stopping;
	unsigned retention_days;
	uint64_t stored, errors;
	uint64_t lost_at_stop; /* windows still unstored when stopping gave up */
	uint64_t last_prune_ms;
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
	int r = mm_store_prune(wr->store, now - (uint64_t)days * 86400000ull);
	if (r > 0)
		log_info("store: pruned %d windows older than %u days", r, days);
	wr->last_prune_ms = now;
}

/* Drops the oldest queued window, counted as a store error. Called with the lock held. */
static void drop_oldest(struct mm_writer *wr)
{
	mm_snapshot_unref(wr->queue[wr->head]);
	wr->queue[wr->head] = NULL;
	wr->head = (wr->head + 1) % MAX_QUEUED;
	wr->count--;
	wr->errors++;
}

/* The window being written is out of the queue, so submit() can never drop (and free) it under
 * the writer's feet; a failed one goes back to the front, or is dropped if the queue filled
 * meanwhile. */
static void *writer_thread(void *arg)
{
	struct mm_writer *wr = arg;
	mm_privilege_drop_thread(); /* its database is open; SQLite needs no capability */
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
		if (r == 0 && now_ms() - wr->last_prune_ms > 3600 * 1000)
			prune(wr, days);

		pthread_mutex_lock(&wr->lock);
		if (r == 0) {
			wr->stored++;
			mm_snapshot_unref(w);
			continue;
		}
		wr->errors++;
		if (stopping) {
			/* One last try failed at shutdown: give up on what is left. */
			mm_snapshot_unref(w);
			wr->lost_at_stop++;
			while (wr->count) {
				drop_oldest(wr);
				wr->lost_at_stop++;
			}
			continue;
		}
		if (wr->count == MAX_QUEUED) {
			mm_snapshot_unref(w); /* the oldest: dropped */
		} else {
			wr->head = (wr->head + MAX_QUEUED - 1) % MAX_QUEUED;
			wr->queue[wr->head] = w;
			wr->count++;
		}
		/* Keep it queued; retry when the next window arrives. */
		while (wr->count && !wr->stopping) {
			unsigned before = wr->count;
			pthread_cond_wait(&wr->cond, &wr->lock);
			if (wr->count != before)
				break;
		}
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
		/* The database has been failing for a long time: drop the oldest window. */
		drop_oldest(wr);
		log_warning("store: %d windows waiting, dropping the oldest", MAX_QUEUED);
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
	pthread_mutex_lock(&wr->lock);
	*ret_stored = wr->stored;
	*ret_errors = wr->errors;
	pthread_mutex_unlock(&wr->lock);
}

int mm_writer_stop(struct mm_writer *wr)
{
	if (!wr)
		return 0;
	pthread_mutex_lock(&wr->lock);
	wr->stopping = true;
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
