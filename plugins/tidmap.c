/*
 * Thread-id map (see tidmap.h): the one hash table (htab.h) keyed by the tid as a u64, the value
 * after it; its deletion shifts later members of a probe run back so lookups never see holes.
 */
#include "tidmap.h"

#include <stdlib.h>
#include <string.h>

#include "htab.h"

struct mm_tidmap {
	struct mm_htab t; /* entries: the tid as a u64 key, then the value */
	size_t max;
};

struct mm_tidmap *mm_tidmap_new(size_t value_size, size_t max_entries)
{
	struct mm_tidmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->max = max_entries;
	if (mm_htab_init(&m->t, sizeof(uint64_t) + value_size, sizeof(uint64_t)) < 0) {
		free(m);
		return NULL;
	}
	return m;
}

void mm_tidmap_free(struct mm_tidmap *m)
{
	if (!m)
		return;
	mm_htab_free(&m->t);
	free(m);
}

void *mm_tidmap_get(struct mm_tidmap *m, uint32_t tid, bool create)
{
	uint64_t key = tid;
	unsigned char *e = mm_htab_get(&m->t, &key, create, m->max);
	return e ? e + sizeof(key) : NULL;
}

void mm_tidmap_remove(struct mm_tidmap *m, uint32_t tid)
{
	uint64_t key = tid;
	mm_htab_remove(&m->t, &key);
}

size_t mm_tidmap_count(const struct mm_tidmap *m)
{
	return m->t.used;
}

void mm_tidmap_foreach(struct mm_tidmap *m, void (*fn)(void *ctx, uint32_t tid, void *value),
		       void *ctx)
{
	for (size_t i = 0; i < m->t.cap; i++) {
		unsigned char *e = mm_htab_at(&m->t, i);
		if (e)
			fn(ctx, (uint32_t) * (uint64_t *)e, e + sizeof(uint64_t));
	}
}

/* The layout both hooks rely on (tidmap.h). */
struct threads_first {
	struct mm_tidmap *threads;
};

void *mm_tidmap_state_new(size_t state_size, size_t value_size, size_t max_entries)
{
	struct threads_first *st = calloc(1, state_size);
	if (st && !(st->threads = mm_tidmap_new(value_size, max_entries))) {
		free(st);
		return NULL;
	}
	return st;
}

void mm_tidmap_state_forget(void *state, struct mm_host *h, uint32_t pid, uint32_t tid)
{
	mm_tidmap_remove(((struct threads_first *)state)->threads, tid);
}

void mm_tidmap_state_free(void *state)
{
	if (!state)
		return;
	mm_tidmap_free(((struct threads_first *)state)->threads);
	free(state);
}
