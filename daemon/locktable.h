/*
 * Lock contention tables: the rows of plugins/contention.c (struct mm_snap_lock) printed the way
 * people already read them, and the small row arithmetic the printers, the store and the report
 * share. Pure code.
 *
 * Two layouts answer "where do we wait for locks":
 *   - perf's: `perf lock contention` columns (contended, total wait, max wait, avg wait, type,
 *     caller), same widths and time units, one row per (type, caller) as perf aggregates (perf
 *     hashes the whole callstack, so it may print one caller on several lines; summing those
 *     gives these rows), longest total wait first. Output from both tools can be diffed.
 *   - seed 004's (an rmap lock report on linux-mm): max, min, max-min, avg and sum of the wait in
 *     ms, count, blocked function (the caller), longest total first.
 * A third, detailed layout keeps one line per process and lock.
 */
#ifndef MM_LOCKTABLE_H
#define MM_LOCKTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "snapshot.h"

/* Prints @rows in perf lock contention's layout (or seed 004's with @seed_table), merged per
 * (type, caller) and sorted by total wait, longest first. The rows are not modified. */
void mm_locktable_print(FILE *out, const struct mm_snap_lock *rows, size_t n, bool seed_table);

/* Prints @rows one line each, longest total wait first: perf's columns plus min and p99 wait,
 * process and lock; each time column in one unit, named in its header ("total wait ms"), and
 * columns left out (named in a '#' line) until a line fits @width (0: every column). */
void mm_locktable_print_detail(FILE *out, const struct mm_snap_lock *rows, size_t n,
			       unsigned width);

/* Formats @ns as perf lock does in a column of @width (>= 4) characters: "%*.2f" with unit h, m,
 * s, ms or us, or an integer with "ns". */
void mm_locktable_time(char *buf, size_t len, uint64_t ns, int width);

/* Adds @src's counts into @dst (contended, waits and histogram summed, max of the maxima, min of
 * the minima; identity fields of @dst kept, comm and holder_comm taken from @src when @dst has
 * none). */
void mm_lock_row_add(struct mm_snap_lock *dst, const struct mm_snap_lock *src);

/* Quantile @q (0..1) of @r's waits: the upper bound of the histogram bucket holding it, capped
 * at r->max_ns; 0 without waits. */
uint64_t mm_lock_row_quantile(const struct mm_snap_lock *r, double q);

/* Sorts by total wait, longest first (then more contended first, then caller). */
void mm_lock_rows_sort(struct mm_snap_lock *rows, size_t n);

/* Merges rows with the same identity in place: with @by_caller, rows of the same (type, caller)
 * (pid -1, start_ms 0, comm and lock "", lock_pid -1, no holder in the result); else of the
 * same (pid, start_ms, type, caller, lock, lock_pid, holder_pid, holder_tid, holder_mode,
 * holder_op). Returns the new count; the array is sorted by total wait. */
size_t mm_lock_rows_merge(struct mm_snap_lock *rows, size_t n, bool by_caller);

/* Keeps the mmap_lock rows of @rows and merges them per waiting process, holder process, mode
 * and operation (type, caller and holder thread left out: "" and -1), longest total wait first.
 * Returns the new count. */
size_t mm_lock_rows_by_holder(struct mm_snap_lock *rows, size_t n);

/* Prints rows of mm_lock_rows_by_holder(): who each process waited behind for mmap_lock
 * (waits, total, max and avg wait, each time column in one unit named in its header; the
 * waiting process; the holder's mode, process, name and operation), fitted to @width as
 * mm_locktable_print_detail() does. */
void mm_locktable_print_holders(FILE *out, const struct mm_snap_lock *rows, size_t n,
				unsigned width);

/* Appends @add to the malloc'ed array *@rows of *@n rows and merges by identity (for summing the
 * windows of a replay or a history query). Returns 0, or -ENOMEM leaving *@rows as it was. */
int mm_lock_rows_append(struct mm_snap_lock **rows, size_t *n, const struct mm_snap_lock *add,
			size_t nadd);

/* The histogram as text, nonzero buckets only: "11:3 12:5" (bucket:count; bucket i counts waits
 * in [2^i, 2^(i+1)) ns), "" when empty. Needs at most MM_LOCK_HIST_TEXT bytes. */
#define MM_LOCK_HIST_TEXT (MM_HIST_BUCKETS * 24)
void mm_lock_hist_format(const struct mm_hist *h, char *buf, size_t len);

/* Parses mm_lock_hist_format()'s text into *@ret. Returns 0 or -EINVAL (*@ret then undefined). */
int mm_lock_hist_parse(const char *s, struct mm_hist *ret);

#endif
