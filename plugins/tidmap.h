/*
 * A map from thread id to a fixed-size value, for collectors that keep per-thread state between
 * events (a pending lock wait, an open fault window). Open addressing with backward-shift
 * deletion: no tombstones, so a long-running daemon does not degrade as threads come and go.
 * Bounded: creating an entry beyond @max_entries fails. Pure code.
 */
#ifndef MM_TIDMAP_H
#define MM_TIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm_tidmap;

/* Values are @value_size bytes, zeroed when created. Returns NULL on ENOMEM. */
struct mm_tidmap *mm_tidmap_new(size_t value_size, size_t max_entries);
void mm_tidmap_free(struct mm_tidmap *m); /* accepts NULL */

/* The value of @tid; with @create, a zeroed one is made if absent. NULL when absent (or full /
 * out of memory when creating). The pointer is valid until the next create or remove. */
void *mm_tidmap_get(struct mm_tidmap *m, uint32_t tid, bool create);

/* Removes @tid if present. */
void mm_tidmap_remove(struct mm_tidmap *m, uint32_t tid);

size_t mm_tidmap_count(const struct mm_tidmap *m);

/* Calls @fn for every entry (order unspecified). @fn must not create or remove entries; collect
 * tids and remove them afterwards. */
void mm_tidmap_foreach(struct mm_tidmap *m, void (*fn)(void *ctx, uint32_t tid, void *value),
		       void *ctx);

/* For a collector whose state is a struct starting with its thread map
 * (`struct state { struct mm_tidmap *threads; ... }`) and owning nothing else: allocation, and
 * the thread_exit and free hooks (forget the thread; free the map and the state, NULL too). */
struct mm_host;
/* A zeroed state of @state_size bytes whose first member is a new map of @value_size values
 * (at most @max_entries), or NULL on ENOMEM. */
void *mm_tidmap_state_new(size_t state_size, size_t value_size, size_t max_entries);
void mm_tidmap_state_forget(void *state, struct mm_host *h, uint32_t pid, uint32_t tid);
void mm_tidmap_state_free(void *state);

#endif
