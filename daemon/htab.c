/*
 * The hash table (see htab.h): open addressing, linear probing, doubling at three quarters full
 * (a well-mixed hash keeps probe runs short there: ~2.5 slots for a hit, ~8.5 for a miss; at half
 * full the BPF source's per-process baselines at 10 000 idle processes took 5.3 MiB, now 2.7), and
 * backward-shift deletion (no tombstones, so a long-running daemon does not degrade as keys come
 * and go). A collector's lock rows, the recorder's set of touched symbol addresses, the
 * BPF source's lock rows and, through tidmap.c, every collector's per-thread state use it.
 */
#include "htab.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HT_SLOT(t, i) ((t)->slots + (i) * (8 + (t)->esize))
#define HT_MIN_CAP    256

int mm_htab_init(struct mm_htab *t, size_t esize, size_t klen)
{
	*t = (struct mm_htab){.esize = (esize + 7) & ~(size_t)7, .klen = klen, .cap = HT_MIN_CAP};
	t->slots = calloc(t->cap, 8 + t->esize);
	return t->slots ? 0 : -ENOMEM;
}

static uint64_t ht_hash(const void *key, size_t klen)
{
	uint64_t h = 0x9e3779b97f4a7c15ull, w;
	for (size_t i = 0; i < klen; i += 8) {
		memcpy(&w, (const char *)key + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return h;
}

static void *ht_probe(const struct mm_htab *t, const void *key, size_t *ret_slot)
{
	size_t i = ht_hash(key, t->klen) & (t->cap - 1);
	for (;; i = (i + 1) & (t->cap - 1)) {
		unsigned char *s = HT_SLOT(t, i);
		if (!*(uint64_t *)s) {
			*ret_slot = i;
			return NULL;
		}
		if (!memcmp(s + 8, key, t->klen))
			return s + 8;
	}
}

static int ht_grow(struct mm_htab *t)
{
	struct mm_htab n = *t;
	n.cap = t->cap * 2;
	n.used = 0;
	n.slots = calloc(n.cap, 8 + n.esize);
	if (!n.slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		unsigned char *s = HT_SLOT(t, i);
		size_t slot;
		if (!*(uint64_t *)s)
			continue;
		ht_probe(&n, s + 8, &slot);
		memcpy(HT_SLOT(&n, slot), s, 8 + n.esize);
		n.used++;
	}
	free(t->slots);
	*t = n;
	return 0;
}

/* The entry with @key; with @create and fewer than @max entries, a new zeroed one with the key
 * set. NULL when absent, full or out of memory. */
void *mm_htab_get(struct mm_htab *t, const void *key, bool create, size_t max)
{
	size_t slot;
	void *e = ht_probe(t, key, &slot);
	if (e || !create || t->used >= max)
		return e;
	if ((t->used + 1) * 4 > t->cap * 3) {
		if (ht_grow(t) < 0)
			return NULL;
		ht_probe(t, key, &slot);
	}
	unsigned char *s = HT_SLOT(t, slot);
	memset(s, 0, 8 + t->esize);
	*(uint64_t *)s = 1;
	memcpy(s + 8, key, t->klen);
	t->used++;
	return s + 8;
}

void mm_htab_remove(struct mm_htab *t, const void *key)
{
	size_t i;
	unsigned char *e = ht_probe(t, key, &i);
	if (!e)
		return;
	i = (size_t)(e - 8 - t->slots) / (8 + t->esize);
	*(uint64_t *)HT_SLOT(t, i) = 0;
	t->used--;
	for (size_t j = (i + 1) & (t->cap - 1); *(uint64_t *)HT_SLOT(t, j);
	     j = (j + 1) & (t->cap - 1)) {
		size_t k = ht_hash(HT_SLOT(t, j) + 8, t->klen) & (t->cap - 1);
		/* j may move back to the hole at i unless its home lies cyclically in (i, j]. */
		bool stays = i <= j ? (k > i && k <= j) : (k > i || k <= j);
		if (stays)
			continue;
		memcpy(HT_SLOT(t, i), HT_SLOT(t, j), 8 + t->esize);
		*(uint64_t *)HT_SLOT(t, j) = 0;
		i = j;
	}
}

/* Empties @t, giving back memory a burst made it take. */
void mm_htab_clear(struct mm_htab *t)
{
	if (t->cap > 4 * HT_MIN_CAP) {
		unsigned char *n = calloc(HT_MIN_CAP, 8 + t->esize);
		if (n) {
			free(t->slots);
			t->slots = n;
			t->cap = HT_MIN_CAP;
			t->used = 0;
			return;
		}
	}
	memset(t->slots, 0, t->cap * (8 + t->esize));
	t->used = 0;
}

/* The entry in slot @i (0 <= i < t->cap), or NULL when the slot is free. */
void *mm_htab_at(const struct mm_htab *t, size_t i)
{
	unsigned char *s = HT_SLOT(t, i);
	return *(uint64_t *)s ? s + 8 : NULL;
}

void mm_htab_free(struct mm_htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->used = 0;
}
