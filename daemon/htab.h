/*
 * The one hash table: open addressing of fixed-size entries whose first @klen bytes are the key
 * (a multiple of 8, no padding). Tables that only grow within a window (contention rows, call
 * sites, mm owners) or a run (the symbols a recording touches) clear it; per-thread state that
 * comes and goes (tidmap.h, a thin map from thread id over it) removes entries. Pure code.
 */
#ifndef MM_HTAB_H
#define MM_HTAB_H

#include <stdbool.h>
#include <stddef.h>

struct mm_htab {
	unsigned char *slots; /* [u64 used][entry] each */
	size_t esize, klen, cap, used;
};

/* An empty table of @esize-byte entries keyed by their first @klen bytes. Returns 0 or -ENOMEM. */
int mm_htab_init(struct mm_htab *t, size_t esize, size_t klen);
void mm_htab_free(struct mm_htab *t);

/* The entry with @key; with @create and fewer than @max entries, a new zeroed one with the key
 * set. NULL when absent, full or out of memory. Valid until the next create or clear. */
void *mm_htab_get(struct mm_htab *t, const void *key, bool create, size_t max);

/* Removes the entry with @key, if any (entries after it may move: pointers from mm_htab_get
 * and slot numbers are invalid afterwards). */
void mm_htab_remove(struct mm_htab *t, const void *key);

/* Empties @t, giving back memory a burst made it take. */
void mm_htab_clear(struct mm_htab *t);

/* The entry in slot @i (0 <= i < t->cap), or NULL when the slot is free: for walks. */
void *mm_htab_at(const struct mm_htab *t, size_t i);

#endif
