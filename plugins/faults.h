/* The fault classifier's callchain attribution: exposed for unit tests and for the contention
 * collector, which names what an mmap_lock's holder was doing the same way. */
#ifndef MM_FAULTS_H
#define MM_FAULTS_H

#include <linux/types.h>

#include "bpf/holder.h" /* enum mm_lock_source */

/* Attributes an mmap_lock event from its kernel callchain, given as symbol names innermost first
 * (NULL for unresolved frames). Compiler suffixes such as ".isra.0" are ignored. */
enum mm_lock_source mm_lock_source_of(const char *const *frames, unsigned n);

const char *mm_lock_source_name(enum mm_lock_source src);

struct mm_host;
struct mm_sample;

/* mm_lock_source_of() for the kernel callchain of @s (MM_SRC_UNKNOWN without one). */
enum mm_lock_source mm_lock_source_of_sample(struct mm_host *h, const struct mm_sample *s);

#endif
