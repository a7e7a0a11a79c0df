/*
 * Ordered record queue (see order.h). Records are appended to one byte arena with an index entry
 * each; a flush sorts the index by (time, push sequence), delivers the prefix below the horizon
 * and compacts the remainder into a second arena, kept for the next flush: no allocation per
 * round, so mmlockd does not page-fault on fresh memory over and over (which it would then
 * count). Rings are drained every few milliseconds, so the remainder is small and the copy cheap.
 */
#include "order.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

struct entry {
	uint64_t time_ns;
	uint64_t seq;
	size_t off;
	unsigned stream;
};

struct mm_order {
	uint8_t *arena;
	size_t arena_len, arena_cap;
	uint8_t *spare; /* the previous arena, reused by the next compaction */
	size_t spare_cap;
	struct entry *ents;
	size_t nents, cap_ents;
	uint64_t seq;
};

struct mm_order *mm_order_new(void)
{
	return calloc(1, sizeof(struct mm_order));
}

void mm_order_free(struct mm_order *o)
{
	if (!o)
		return;
	free(o->arena);
	free(o->spare);
	free(o->ents);
	free(o);
}

int mm_order_push(struct mm_order *o, unsigned stream, uint64_t time_ns,
		  const struct perf_event_header *hdr)
{
	size_t len = (hdr->size + 7u) & ~(size_t)7u;
	if (mm_grow((void **)&o->arena, &o->arena_cap, o->arena_len + len, 1, 4096 + 1) < 0 ||
	    mm_grow((void **)&o->ents, &o->cap_ents, o->nents + 1, sizeof(struct entry),
		    4096 / sizeof(struct entry) + 1) < 0)
		return -ENOMEM;
	memcpy(o->arena + o->arena_len, hdr, hdr->size);
	o->ents[o->nents++] = (struct entry){time_ns, o->seq++, o->arena_len, stream};
	o->arena_len += len;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t mm_order_flush(struct mm_order *o, uint64_t horizon_ns,
		      void (*fn)(void *ctx, unsigned stream, uint64_t time_ns,
				 const struct perf_event_header *hdr),
		      void *ctx)
{
	if (!o->nents)
		return 0;
	qsort(o->ents, o->nents, sizeof(struct entry), cmp_entry);
	size_t n = 0;
	while (n < o->nents && o->ents[n].time_ns < horizon_ns) {
		const struct entry *e = &o->ents[n];
		fn(ctx, e->stream, e->time_ns,
		   (const struct perf_event_header *)(o->arena + e->off));
		n++;
	}
	if (n == o->nents) {
		o->nents = 0;
		o->arena_len = 0;
		return n;
	}
	/* Compact the undelivered tail into the spare arena (its records may sit anywhere in this
	 * one), which then becomes the arena. */
	size_t rest = o->nents - n, bytes = 0;
	for (size_t i = n; i < o->nents; i++) {
		const struct perf_event_header *h =
			(const struct perf_event_header *)(o->arena + o->ents[i].off);
		bytes += (h->size + 7u) & ~(size_t)7u;
	}
	if (o->spare_cap < bytes) {
		uint8_t *s = realloc(o->spare, bytes);
		if (s) {
			o->spare = s;
			o->spare_cap = bytes;
		}
	}
	uint8_t *fresh = o->spare_cap >= bytes ? o->spare : NULL;
	if (!fresh) {
		/* Keep the tail where it is; memory is reclaimed on a later flush. */
		memmove(o->ents, o->ents + n, rest * sizeof(struct entry));
		o->nents = rest;
		return n;
	}
	size_t off = 0;
	for (size_t i = n; i < o->nents; i++) {
		const struct perf_event_header *h =
			(const struct perf_event_header *)(o->arena + o->ents[i].off);
		size_t len = (h->size + 7u) & ~(size_t)7u;
		memcpy(fresh + off, h, h->size);
		o->ents[i].off = off;
		off += len;
	}
	size_t fresh_cap = o->spare_cap;
	o->spare = o->arena;
	o->spare_cap = o->arena_cap;
	o->arena = fresh;
	o->arena_cap = fresh_cap;
	o->arena_len = off;
	memmove(o->ents, o->ents + n, rest * sizeof(struct entry));
	o->nents = rest;
	return n;
}

size_t mm_order_count(const struct mm_order *o)
{
	return o->nents;
}

size_t mm_order_bytes(const struct mm_order *o)
{
	return o->arena_len;
}
