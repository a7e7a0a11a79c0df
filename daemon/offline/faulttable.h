/*
 * Fault tables for `mmlockd report`: per-process or per-unit rows summed from the history, printed
 * as perf prints its reports (aligned columns, '#' comment lines above them, -x CSV, or JSON), and
 * the side-by-side comparison of two ranges or two databases in the layout of the seeds' tables
 * (an ASCII grid: metric | A | B | change). Pure code: the store fills the rows.
 *
 * Which numbers a row shows depends on the collectors that stored them; a column group whose
 * source columns are 0 over every row is left out rather than printed as zeros that would read as
 * "none happened":
 *   faults     minflt + majflt (totals, the default) where stored, else the sampled user faults
 *   major      majflt (totals)
 *   fallbacks  fallback_locks (fallbacks, the default) where stored, else the faults collector's
 *              faults_mmap_fallback; fallback_pct = fallbacks / faults
 *   waits      fallback_lock_waits: fallbacks that found mmap_lock taken (fallbacks)
 *   vma .. mmap_unknown, split, fb_wait_ms   the fault split, its state (exact, estimated,
 *              not_sampled) and the fallbacks' wait (faults collector; the wait only where
 *              faults were classified one by one); where the split ran in bursts
 *              (split_estimated) the table prints the outcomes as "~N" and adds split_err (the
 *              95% bound on each, summed over windows), not_sampled (faults of windows no burst
 *              covered: with it the outcomes add up to faults) and split_coverage_pct (faults
 *              classified / faults; 100 where every one was, 0 where none); a row never
 *              classified prints "-" (CSV: empty, JSON: null), never 0
 *   lock_waits, wait_ms, avg_wait_us  every mmap_lock wait of the process (mmaplock collector)
 */
#ifndef MM_FAULTTABLE_H
#define MM_FAULTTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "snapshot.h"

/* One process (pid, start_time) or one cgroup, its counters summed over a range. */
struct mm_fault_row {
	int32_t pid;		/* 0 in per-unit rows */
	double start_time;	/* unix seconds; 0 in per-unit rows */
	char comm[MM_COMM_LEN]; /* the name in its latest window; "" in per-unit rows */
	char cgroup[MM_CGROUP_LEN];
	uint64_t processes; /* distinct processes summed into the row */
	struct mm_proc_stats sum;
};

enum mm_fault_format {
	MM_FAULT_TABLE, /* aligned columns */
	MM_FAULT_CSV,	/* one header line, then values separated by opts.sep */
	MM_FAULT_JSON,	/* an array of objects keyed by column */
};

#define MM_FAULT_SORT_MAX 8

struct mm_fault_opts {
	bool by_cgroup; /* per-unit rows (cgroup, processes) instead of per-process */
	enum mm_fault_format format;
	const char *sep;	     /* for MM_FAULT_CSV */
	int sort[MM_FAULT_SORT_MAX]; /* column indexes (mm_fault_column_find), -1 terminated */
	size_t top;		     /* at most this many rows (0: all) */
	unsigned width;		     /* aligned table: lines of at most this many characters,
				      * columns left out to fit (0: every column) */
	/* The range's rows summed without --pid, --comm or --cgroup (NULL: the rows decide): a
	 * collector that stored anything in the range keeps its columns for rows it never saw,
	 * which then read "-" (not sampled), not a table without the split. */
	const struct mm_fault_row *range;
};

/* The column named @key ("faults", "fallback_pct", "pid", ...) or headed so in the table ("fb%",
 * "+-err"), as an index for opts.sort, or -1. */
int mm_fault_column_find(const char *key);

/* Parses a comma-separated list of column keys into opts->sort. Returns 0, or -EINVAL with the
 * offending key and the valid ones in @err. */
int mm_fault_parse_sort(struct mm_fault_opts *opts, const char *list, char *err, size_t errlen);

/* Sorts @rows by opts->sort (numbers largest first, text in byte order; ties by the next key,
 * then faults, then pid), and prints at most opts->top of them with the columns their data has.
 * @comment (may be NULL) is printed above an aligned table as "# " lines, one per '\n'-separated
 * line. Returns 0 or -EIO when writing failed. */
int mm_fault_print(FILE *out, struct mm_fault_row *rows, size_t n, const struct mm_fault_opts *opts,
		   const char *comment);

/* One side of a comparison: everything summed over its range (sum.processes is the process
 * count), the mmap_lock contentions (of lock_stats when the contention collector stored any, else
 * -1 to use sum.mmap_lock_contended), and an optional throughput the user measured. */
struct mm_fault_side {
	const char *label; /* column header: "vanilla", a file name, a range */
	struct mm_fault_row sum;
	int64_t lock_contended;
	const char *throughput; /* as the user gave it (a number), NULL when not given */
	double seconds;		/* the time its windows cover, summed (0: unknown) */
	uint64_t windows;	/* how many windows it sums */
	char source[64];	/* what fed its windows, as mm_store_range's sources: "bpf", "perf",
				 * "bpf+perf", "unknown", "bpf,perf" (mixed); "" none on events */
};

/* Prints the comparison of @a and @b, a the baseline: one grid row per metric their data has
 * (throughput when given, faults, major, fallbacks, fallback share %, fallbacks that waited %,
 * mmap_lock contentions, waits, the split), each with both values and the change of b relative
 * to a in percent ("+31.3%", "-97.9%", "n/a" from 0, "within error" for an estimate's change
 * inside the sides' summed split_err). Counts are per second of each side's seconds (the time
 * its windows cover) when both are known, unless @totals; a figure one side did not collect
 * reads "-" there (no change, never 0), an estimated one "~N"; '#' lines above the grid, wrapped
 * to @width (0: no limit), say the direction and what differs (the collectors each side ran,
 * where its split was estimated, its source when the sources differ or one is unknown, the
 * seconds and windows rates are per). @format CSV (with @sep) gives the grid's cells (a figure
 * not collected empty); JSON numbers: {"a", "b", "baseline", "seconds", "notes", "rows":
 * [{"metric", "unit", "a", "a_estimated", "b", "b_estimated", "change_pct",
 * "within_error"}]}, null where not collected. Returns 0 or -EIO. */
int mm_fault_print_compare(FILE *out, const struct mm_fault_side *a, const struct mm_fault_side *b,
			   bool totals, enum mm_fault_format format, const char *sep,
			   unsigned width);

/* Prints @text as '#' comment lines, one per '\n'-separated line, each wrapped at blanks to
 * lines of at most @width characters (0: no limit; a word longer than that stays whole), the
 * continuation lines indented by two blanks, as perf wraps its header. */
void mm_fault_comment(FILE *out, const char *text, unsigned width);

/* The change from @a to @b as the seeds print it: "+6.3%", "-97.9%", "0.0%", "n/a" when @a is 0
 * and @b is not, "" when both are 0. */
void mm_fault_change(char *buf, size_t len, double a, double b);

/* @v with thousands separators: "3,187,336". */
void mm_fault_thousands(char *buf, size_t len, uint64_t v);

#endif
