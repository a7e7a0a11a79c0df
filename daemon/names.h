/*
 * Interned cgroup paths: one copy of each path, shared by its holders and counted, over the one
 * hash table (htab.h) keyed by the path padded to MM_CGROUP_LEN bytes. The process table keeps
 * one set (a host has tens of cgroups and thousands of processes), each snapshot its own, so a
 * snapshot's rows outlive the table's entries. Pure code; not thread-safe.
 */
#ifndef MM_NAMES_H
#define MM_NAMES_H

#include "htab.h"

struct mm_names {
	struct mm_htab t;
};

/* An empty set. Returns 0 or -ENOMEM. */
int mm_names_init(struct mm_names *n);
/* Frees every copy, held or not. */
void mm_names_free(struct mm_names *n);

/* The set's copy of @path (its first MM_CGROUP_LEN - 1 bytes), made at the first reference:
 * valid until its last reference is dropped or the set is freed. "" (not counted) for "". NULL
 * when out of memory. */
const char *mm_names_ref(struct mm_names *n, const char *path);
/* Drops a reference taken by mm_names_ref() on @copy (what it returned). */
void mm_names_unref(struct mm_names *n, const char *copy);

#endif
