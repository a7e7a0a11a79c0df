/*
 * Thread-id map (see tidmap.h). Slots are [tid u32 | used u32 | value], the table doubles at half
 * full, and deletion shifts later members of a probe run back so lookups never see holes.
 */
#include "tidmap.h"

#include <stdlib.h>
#include <string.h>

struct mm_tidmap {
	unsigned char *slots;
	size_t slot_size, value_size;
	size_t cap, used, max;
};

struct hdr {
	uint32_t tid;
	uint32_t used;
};

#define SLOT(m, i) ((struct hdr *)((m)->slots + (i) * (m)->slot_size))
#define VALUE(h)   ((void *)((h) + 1))

static size_t home(const struct mm_tidmap *m, uint32_t tid)
{
	return (size_t)((tid * 2654435761u) ^ (tid >> 16)) & (m->cap - 1);
}

struct mm_tidmap *mm_tidmap_new(size_t value_size, size_t max_entries)
{
	struct mm_tidmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->value_size = value_size;
	m->slot_size = (sizeof(struct hdr) + value_size + 7) & ~(size_t)7;
	m->cap = 256;
	m->max = max_entries;
	m->slots = calloc(m->cap, m->slot_size);
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void mm_tidmap_free(struct mm_tidmap *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static struct hdr *find(struct mm_tidmap *m, uint32_t tid)
{
	for (size_t i = home(m, tid);; i = (i + 1) & (m->cap - 1)) {
		struct hdr *h = SLOT(m, i);
		if (!h->used)
			return NULL;
		if (h->tid == tid)
			return h;
	}
}

static struct hdr *insert(struct mm_tidmap *m, uint32_t tid)
{
	size_t i = home(m, tid);
	while (SLOT(m, i)->used)
		i = (i + 1) & (m->cap - 1);
	struct hdr *h = SLOT(m, i);
	h->tid = tid;
	h->used = 1;
	m->used++;
	return h;
}

static int grow(struct mm_tidmap *m)
{
	unsigned char *old = m->slots;
	size_t old_cap = m->cap;
	unsigned char *n = calloc(old_cap * 2, m->slot_size);
	if (!n)
		return -1;
	m->slots = n;
	m->cap = old_cap * 2;
	m->used = 0;
	for (size_t i = 0; i < old_cap; i++) {
		struct hdr *o = (struct hdr *)(old + i * m->slot_size);
		if (o->used)
			memcpy(insert(m, o->tid) + 1, o + 1, m->value_size);
	}
	free(old);
	return 0;
}

void *mm_tidmap_get(struct mm_tidmap *m, uint32_t tid, bool create)
{
	struct hdr *h = find(m, tid);
	if (h || !create)
		return h ? VALUE(h) : NULL;
	if (m->used >= m->max)
		return NULL;
	if ((m->used + 1) * 2 > m->cap && grow(m) < 0)
		return NULL;
	h = insert(m, tid);
	memset(VALUE(h), 0, m->value_size);
	return VALUE(h);
}

void mm_tidmap_remove(struct mm_tidmap *m, uint32_t tid)
{
	struct hdr *h = find(m, tid);
	if (!h)
		return;
	size_t i = (size_t)((unsigned char *)h - m->slots) / m->slot_size;
	h->used = 0;
	m->used--;
	for (size_t j = (i + 1) & (m->cap - 1); SLOT(m, j)->used; j = (j + 1) & (m->cap - 1)) {
		size_t k = home(m, SLOT(m, j)->tid);
		/* j may move back to the hole at i unless its home lies cyclically in (i, j]. */
		bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
		if (stays)
			continue;
		memcpy(SLOT(m, i), SLOT(m, j), m->slot_size);
		SLOT(m, j)->used = 0;
		i = j;
	}
}

size_t mm_tidmap_count(const struct mm_tidmap *m)
{
	return m->used;
}

void mm_tidmap_foreach(struct mm_tidmap *m, void (*fn)(void *ctx, uint32_t tid, void *value),
		       void *ctx)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct hdr *h = SLOT(m, i);
		if (h->used)
			fn(ctx, h->tid, VALUE(h));
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
