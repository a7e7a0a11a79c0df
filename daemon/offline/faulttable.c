/*
 * Fault tables and the A/B comparison of `mmlockd report` (see faulttable.h). Pure code.
 *
 * Every column is one entry of cols[]: its key (sort key, CSV header, JSON key), its header in the
 * aligned table, how to print it, and the group that decides whether the data has it. Cells are
 * formatted to strings first, so widths are known before the first line is printed, as perf does.
 * An aligned table wider than opts.width loses first the columns with one value in every row
 * (named with it: "split=exact"), then columns in the order of drop_order[] (the cgroup, last,
 * is cut first), and says which in '#' lines wrapped to the width; --wide (width 0) keeps all.
 * One format per column: percentages "%.2f" ("<0.01" for a share too small to show), a wait
 * column in ms, or in s (its header says which) where a value reaches 1000 ms.
 *
 * The comparison keeps each line as numbers (both sides, whether each collected it and whether
 * it is an estimate) and formats them at the end: the grid's cells, CSV's, or JSON numbers.
 *
 * Three states of the fault split per row: exact (classified one by one), estimated (bursts:
 * "~N" in the table, split "estimated" in CSV and JSON, with split_err, coverage and the faults
 * no burst covered, not_sampled, so outcomes plus not_sampled add up to faults), or not sampled
 * (no window of it classified: "-" in the table, empty in CSV, null in JSON; never 0).
 */
#include "faulttable.h"

#include "faults.h" /* mm_lock_source_name() */
#include "parse.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

enum kind { K_INT, K_TEXT, K_PCT, K_MS, K_US, K_TIME };
enum group { G_ID, G_ALWAYS, G_TOTALS, G_FALLBACKS, G_SPLIT, G_ESTIMATE, G_FBWAIT, G_LOCK };
enum { M_PROC = 1, M_UNIT = 2, M_BOTH = 3 };

struct col {
	const char *key, *head;
	enum kind kind;
	enum group group;
	unsigned modes;
	bool counter; /* the column is one counter of the row's sum, at offset @off */
	size_t off;
};

/* The last two fields of a column: it shows counter @member of struct mm_proc_stats as is, or
 * num() computes it. */
#define COUNTER(member) true, offsetof(struct mm_proc_stats, member)
#define COMPUTED	false, 0

enum {
	C_PID,
	C_START,
	C_PROCS,
	C_FAULTS,
	C_MAJOR,
	C_FALLBACKS,
	C_FB_PCT,
	C_WAITS,
	C_VMA,
	C_VMA_RETRY,
	C_MMAP_RETRY,
	C_MMAP_ABORT,
	C_MMAP_UNKNOWN,
	C_SPLIT,
	C_SPLIT_ERR,
	C_NOT_SAMPLED,
	C_COVERAGE,
	C_FB_WAIT,
	C_LOCK_WAITS,
	C_WAIT,
	C_AVG_WAIT,
	C_COMM,
	C_CGROUP,
	C_N
};

static const struct col cols[C_N] = {
	[C_PID] = {"pid", "pid", K_INT, G_ID, M_PROC, COMPUTED},
	/* CSV and JSON only: with pid, the process's identity (a pid is reused) */
	[C_START] = {"start_time", "start", K_TIME, G_ID, M_PROC, COMPUTED},
	[C_PROCS] = {"processes", "procs", K_INT, G_ID, M_UNIT, COMPUTED},
	[C_FAULTS] = {"faults", "faults", K_INT, G_ALWAYS, M_BOTH, COMPUTED},
	[C_MAJOR] = {"major", "major", K_INT, G_TOTALS, M_BOTH, COUNTER(majflt)},
	[C_FALLBACKS] = {"fallbacks", "fallbacks", K_INT, G_ALWAYS, M_BOTH, COMPUTED},
	[C_FB_PCT] = {"fallback_pct", "fb%", K_PCT, G_ALWAYS, M_BOTH, COMPUTED},
	[C_WAITS] = {"waits", "waits", K_INT, G_FALLBACKS, M_BOTH, COUNTER(fallback_lock_waits)},
	[C_VMA] = {"vma", "vma", K_INT, G_SPLIT, M_BOTH, COUNTER(faults_vma)},
	[C_VMA_RETRY] = {"vma_retry", "vma_retry", K_INT, G_SPLIT, M_BOTH,
			 COUNTER(faults_vma_retry)},
	[C_MMAP_RETRY] = {"mmap_retry", "mmap_retry", K_INT, G_SPLIT, M_BOTH,
			  COUNTER(faults_mmap_retry)},
	[C_MMAP_ABORT] = {"mmap_abort", "mmap_abort", K_INT, G_SPLIT, M_BOTH,
			  COUNTER(faults_mmap_abort)},
	[C_MMAP_UNKNOWN] = {"mmap_unknown", "mmap_unknown", K_INT, G_SPLIT, M_BOTH,
			    COUNTER(faults_mmap_unknown)},
	[C_SPLIT] = {"split", "split", K_TEXT, G_SPLIT, M_BOTH, COMPUTED},
	[C_SPLIT_ERR] = {"split_err", "+-err", K_INT, G_ESTIMATE, M_BOTH, COUNTER(split_err)},
	[C_NOT_SAMPLED] = {"not_sampled", "unsampled", K_INT, G_ESTIMATE, M_BOTH, COMPUTED},
	[C_COVERAGE] = {"split_coverage_pct", "cov%", K_PCT, G_ESTIMATE, M_BOTH, COMPUTED},
	[C_FB_WAIT] = {"fb_wait_ms", "fb wait ms", K_MS, G_FBWAIT, M_BOTH, COMPUTED},
	[C_LOCK_WAITS] = {"lock_waits", "lock waits", K_INT, G_LOCK, M_BOTH,
			  COUNTER(mmap_lock_waits)},
	[C_WAIT] = {"wait_ms", "wait ms", K_MS, G_LOCK, M_BOTH, COMPUTED},
	[C_AVG_WAIT] = {"avg_wait_us", "avg wait us", K_US, G_LOCK, M_BOTH, COMPUTED},
	[C_COMM] = {"comm", "comm", K_TEXT, G_ID, M_PROC, COMPUTED},
	[C_CGROUP] = {"cgroup", "cgroup", K_TEXT, G_ID, M_BOTH, COMPUTED},
};

/* The order in which columns leave a table too wide for the terminal (the cgroup is cut first):
 * the detail of the split and of every mmap_lock wait before what answers "who falls back". */
static const int drop_order[] = {
	C_AVG_WAIT,	C_WAIT,	   C_LOCK_WAITS, C_COVERAGE,   C_NOT_SAMPLED, C_VMA_RETRY,
	C_MMAP_UNKNOWN, C_FB_WAIT, C_SPLIT_ERR,	 C_MMAP_RETRY, C_MMAP_ABORT,  C_VMA,
	C_SPLIT,	C_CGROUP,  C_MAJOR,	 C_WAITS,
};

/* What the rows' data has, decided once over all of them (see faulttable.h). */
struct sources {
	bool totals, fallbacks, split, estimate, fbwait, lock, holders;
	/* How the aligned table shows its ms columns: in seconds where a value reaches 1000 ms
	 * (one unit per column, named in its header; CSV and JSON keep ms, as their keys say) */
	bool in_s[C_N];
};

/* The outcome counts of @s summed: 0 for a row the split never classified. */
static uint64_t outcomes(const struct mm_proc_stats *s)
{
	return s->faults_vma + s->faults_vma_retry + s->faults_mmap_retry + s->faults_mmap_abort +
	       s->faults_mmap_unknown;
}

static struct sources find_sources(const struct mm_fault_row *rows, size_t n)
{
	uint64_t totals = 0, fallbacks = 0, split = 0, estimate = 0, lock = 0, fbwait = 0,
		 exact = 0, holders = 0;
	for (size_t i = 0; i < n; i++) {
		const struct mm_proc_stats *s = &rows[i].sum;
		totals += s->minflt + s->majflt;
		fallbacks += s->fallback_locks + s->fallback_lock_waits;
		split += outcomes(s) + s->faults_mmap_fallback;
		lock += s->mmap_lock_read + s->mmap_lock_write + s->mmap_lock_waits;
		estimate += s->split_estimated;
		fbwait += s->faults_mmap_lock_wait_ns;
		exact += !s->split_estimated && outcomes(s);
		holders += s->mmap_lock_behind_waits;
	}
	/* Without the faults collector the fallbacks column is the fallbacks collector's, even
	 * when it counted none. The fallbacks' wait is known only where faults were classified
	 * one by one (bursts have no exact total to scale it to). */
	return (struct sources){.totals = totals > 0,
				.fallbacks = fallbacks > 0 || !split,
				.split = split > 0,
				.estimate = estimate > 0,
				.fbwait = fbwait || exact,
				.lock = lock > 0,
				.holders = holders > 0};
}

enum split_state { S_EXACT, S_ESTIMATED, S_UNKNOWN };

static enum split_state split_state(const struct mm_proc_stats *s)
{
	if (s->split_estimated)
		return S_ESTIMATED;
	return outcomes(s) ? S_EXACT : S_UNKNOWN;
}

/* Whether column @c is a figure of the split that a row whose split is unknown does not have. */
static bool split_figure(int c)
{
	return (c >= C_VMA && c <= C_MMAP_UNKNOWN) || c == C_SPLIT_ERR || c == C_FB_WAIT ||
	       c == C_COVERAGE;
}

static bool col_shown(int c, const struct sources *src, bool by_cgroup)
{
	if (!(cols[c].modes & (by_cgroup ? M_UNIT : M_PROC)))
		return false;
	switch (cols[c].group) {
	case G_TOTALS:
		return src->totals;
	case G_FALLBACKS:
		return src->fallbacks;
	case G_SPLIT:
		return src->split;
	case G_ESTIMATE:
		return src->estimate;
	case G_FBWAIT:
		return src->fbwait;
	case G_LOCK:
		return src->lock;
	default:
		return true;
	}
}

static uint64_t row_faults(const struct mm_fault_row *r, const struct sources *src)
{
	return src->totals ? r->sum.minflt + r->sum.majflt : r->sum.faults;
}

static uint64_t row_fallbacks(const struct mm_fault_row *r, const struct sources *src)
{
	return src->fallbacks ? r->sum.fallback_locks : r->sum.faults_mmap_fallback;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

/* The counter that column @c shows (cols[c].counter). */
static uint64_t counter(const struct mm_fault_row *r, int c)
{
	return *(const uint64_t *)((const char *)&r->sum + cols[c].off);
}

/* Faults of an estimated row's windows that no burst covered: its faults minus its outcomes and
 * its kernel-mode faults (split.h: estimated beside the outcomes). */
static uint64_t num_not_sampled(const struct mm_proc_stats *s)
{
	return split_state(s) == S_EXACT ? 0 : mm_counts_not_sampled(MM_COUNTS(s));
}

/* Column @c of @r as a number (text columns: 0). */
static double num(const struct mm_fault_row *r, int c, const struct sources *src)
{
	const struct mm_proc_stats *s = &r->sum;

	if (cols[c].counter)
		return (double)counter(r, c);
	switch (c) {
	case C_PID:
		return r->pid;
	case C_START:
		return r->start_time;
	case C_PROCS:
		return (double)r->processes;
	case C_FAULTS:
		return (double)row_faults(r, src);
	case C_FALLBACKS:
		return (double)row_fallbacks(r, src);
	case C_FB_PCT:
		return 100.0 * ratio((double)row_fallbacks(r, src), (double)row_faults(r, src));
	case C_COVERAGE:
		/* Rows with exact outcomes (continuous) classified every fault, unknown ones
		 * none. */
		return split_state(s) == S_ESTIMATED
			       ? 100.0 * ratio((double)s->split_faults_seen,
					       (double)(s->minflt + s->majflt))
		       : split_state(s) == S_EXACT ? 100.0
						   : 0;
	case C_NOT_SAMPLED:
		return (double)num_not_sampled(s);
	case C_FB_WAIT:
		return (double)s->faults_mmap_lock_wait_ns / 1e6;
	case C_WAIT:
		return (double)s->mmap_lock_wait_ns / 1e6;
	case C_AVG_WAIT:
		return ratio((double)s->mmap_lock_wait_ns, (double)s->mmap_lock_waits) / 1e3;
	}
	return 0;
}

/* Counters are printed from the integers, not through the double (exact beyond 2^53). */
static uint64_t num_int(const struct mm_fault_row *r, int c, const struct sources *src)
{
	if (cols[c].counter)
		return counter(r, c);
	switch (c) {
	case C_FAULTS:
		return row_faults(r, src);
	case C_FALLBACKS:
		return row_fallbacks(r, src);
	case C_PROCS:
		return r->processes;
	case C_NOT_SAMPLED:
		return num_not_sampled(&r->sum);
	default:
		return (uint64_t)num(r, c, src);
	}
}

static const char *text(const struct mm_fault_row *r, int c)
{
	static const char *const state[] = {"exact", "estimated", "not_sampled"};
	if (c == C_SPLIT)
		return state[split_state(&r->sum)];
	return c == C_COMM ? r->comm : r->cgroup;
}

/* Column @c of @r as text: "" where its split is unknown (not a 0). Percentages keep six
 * decimals in CSV and JSON (@exact): a share of 0.004% is not 0.00. */
static void cell_as(char *buf, size_t len, const struct mm_fault_row *r, int c,
		    const struct sources *src, bool exact)
{
	if (split_figure(c) && split_state(&r->sum) == S_UNKNOWN) {
		snprintf(buf, len, "%s", "");
		return;
	}
	if (c == C_NOT_SAMPLED && split_state(&r->sum) != S_ESTIMATED &&
	    split_state(&r->sum) != S_UNKNOWN) {
		snprintf(buf, len, "0");
		return;
	}
	if (cols[c].kind == K_PCT) {
		/* One format per column, as perf prints its percentages: two decimals, "<0.01"
		 * for a share that would read as none; programs get six, never an exponent. */
		double v = num(r, c, src);
		if (exact)
			snprintf(buf, len, "%.6f", v);
		else
			snprintf(buf, len, v > 0 && v < 0.005 ? "<0.01" : "%.2f", v);
		return;
	}
	switch (cols[c].kind) {
	case K_TEXT:
		snprintf(buf, len, "%s", text(r, c));
		break;
	case K_INT:
		snprintf(buf, len, "%" PRIu64, num_int(r, c, src));
		break;
	case K_PCT:
		break; /* above */
	case K_MS:
		snprintf(buf, len, "%.3f", num(r, c, src) / (!exact && src->in_s[c] ? 1000 : 1));
		break;
	case K_TIME:
		snprintf(buf, len, "%.3f", num(r, c, src)); /* unix seconds, as stored */
		break;
	case K_US:
		snprintf(buf, len, "%.1f", num(r, c, src));
		break;
	}
}

/* Column @c of @r as the aligned table prints it (CSV and JSON: cell_as(..., true)). */
static void cell(char *buf, size_t len, const struct mm_fault_row *r, int c,
		 const struct sources *src)
{
	cell_as(buf, len, r, c, src, false);
}

int mm_fault_column_find(const char *key)
{
	for (int c = 0; c < C_N; c++)
		if (!strcmp(cols[c].key, key))
			return c;
	/* What the table's header shows ("fb%", "+-err", "fb wait ms", "procs") too. */
	for (int c = 0; c < C_N; c++)
		if (!strcmp(cols[c].head, key))
			return c;
	return -1;
}

int mm_fault_parse_sort(struct mm_fault_opts *opts, const char *list, char *err, size_t errlen)
{
	char k[64];
	const char *p = list, *item;
	size_t n = 0, klen;

	while (mm_parse_list_next(&p, &item, &klen)) {
		if (!klen)
			continue;
		snprintf(k, sizeof(k), "%.*s", (int)klen, item);
		int c = mm_fault_column_find(k);
		if (c < 0 || n + 1 >= MM_FAULT_SORT_MAX) {
			size_t len = (size_t)snprintf(err, errlen,
						      c < 0 ? "unknown sort key '%s' (keys:"
							    : "too many sort keys at '%s' (keys:",
						      k);
			for (int i = 0; i < C_N && len < errlen; i++)
				len += (size_t)snprintf(err + len, errlen - len, " %s",
							cols[i].key);
			if (len < errlen)
				snprintf(err + len, errlen - len, ")");
			return -EINVAL;
		}
		opts->sort[n++] = c;
	}
	if (!n) {
		snprintf(err, errlen, "empty sort key list");
		return -EINVAL;
	}
	opts->sort[n] = -1;
	return 0;
}

/* qsort has no context argument; the sort runs on one thread at a time (report is a command). */
static const struct mm_fault_opts *sort_opts;
static struct sources sort_src;

static int cmp_col(const struct mm_fault_row *x, const struct mm_fault_row *y, int c)
{
	if (cols[c].kind == K_TEXT)
		return strcmp(text(x, c), text(y, c));
	double a = num(x, c, &sort_src), b = num(y, c, &sort_src);
	return a == b ? 0 : a > b ? -1 : 1;
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct mm_fault_row *x = pa, *y = pb;
	for (size_t k = 0; k < MM_FAULT_SORT_MAX && sort_opts->sort[k] >= 0; k++) {
		int r = cmp_col(x, y, sort_opts->sort[k]);
		if (r)
			return r;
	}
	int r = cmp_col(x, y, C_FAULTS);
	if (r)
		return r;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->cgroup, y->cgroup);
}

#define CELL_LEN (MM_CGROUP_LEN + 8)

/* A cell of the aligned table: an outcome count estimated from bursts reads "~N" (CSV and JSON
 * keep numbers; their split_err and split_coverage_pct say it). */
static void table_cell(char *buf, size_t len, const struct mm_fault_row *r, int c,
		       const struct sources *src)
{
	bool est = r->sum.split_estimated && c >= C_VMA && c <= C_MMAP_UNKNOWN;
	if (est && len > 1) {
		buf[0] = '~';
		cell(buf + 1, len - 1, r, c, src);
	} else {
		cell(buf, len, r, c, src);
	}
}

/* The width of a line of the columns @shown with @width each, two blanks between. */
static int line_width(const int *width, size_t nshown)
{
	int w = 0;
	for (size_t k = 0; k < nshown; k++)
		w += width[k] + (k ? 2 : 0);
	return w;
}

/* Drops column @k of @shown/@width, naming it in @left (at @o): its key, and its value when it is
 * the same in every row (@value non-NULL). Returns the new count. */
static size_t drop_col(int *shown, int *width, size_t nshown, size_t k, const char *value,
		       char *left, size_t leftlen, size_t *o)
{
	*o += (size_t)snprintf(left + *o, *o < leftlen ? leftlen - *o : 0, "%s%s%s%s",
			       *o ? " " : "", cols[shown[k]].key, value ? "=" : "",
			       value ? value : "");
	memmove(&shown[k], &shown[k + 1], (nshown - k - 1) * sizeof(*shown));
	memmove(&width[k], &width[k + 1], (nshown - k - 1) * sizeof(*width));
	return nshown - 1;
}

/* Leaves columns out of @shown/@width until a line fits @max: first those with the same value in
 * every row (@constant[column], their value in @value[column]: they tell nothing a '#' line
 * cannot), then in drop_order[] (the cgroup, the last column, is cut to what is left first, down
 * to 12 characters); their keys go to @left. */
static size_t fit(int *shown, int *width, size_t nshown, int max, const bool *constant,
		  char (*value)[CELL_LEN], char *left, size_t leftlen)
{
	size_t o = 0, nd = sizeof(drop_order) / sizeof(drop_order[0]);
	left[0] = '\0';
	for (size_t k = 0; k < nshown; k++) {
		int over = line_width(width, nshown) - max;
		if (shown[k] == C_CGROUP && over > 0 && width[k] > 12)
			width[k] -= over < width[k] - 12 ? over : width[k] - 12;
	}
	for (size_t d = 0; d < 2 * nd; d++) {
		int over = line_width(width, nshown) - max, c = drop_order[d % nd];
		if (over <= 0)
			break;
		if (d < nd && !constant[c])
			continue;
		for (size_t k = 0; k < nshown; k++) {
			if (shown[k] != c)
				continue;
			if (c == C_CGROUP && width[k] - over >= 12)
				width[k] -= over;
			else
				nshown = drop_col(shown, width, nshown, k, d < nd ? value[c] : NULL,
						  left, leftlen, &o);
			break;
		}
	}
	return nshown;
}

/* The '#' lines above a table: @comment, the legends of what its cells hold, and the columns
 * left out to fit @max; each wrapped to @max. */
static void table_comments(FILE *out, const char *comment, const struct sources *src, bool unknown,
			   const char *left, unsigned max)
{
	char line[512];
	mm_fault_comment(out, comment, max);
	if (src->estimate)
		mm_fault_comment(
			out,
			"~: estimated from bursts of the fault split (split_duty): the "
			"shares classified applied to the exact faults and fallbacks (less "
			"the faults taken in kernel mode, which are no fallbacks); +-err is "
			"the 95% bound on each, cov% the share "
			"of faults classified, unsampled the faults of windows no burst "
			"covered (outcomes + kernel-mode faults + unsampled = faults)",
			max);
	if (unknown)
		mm_fault_comment(out,
				 "-: not sampled, no burst of the fault split caught a fault of it "
				 "(not 0; --split-duty 100% classifies every fault)",
				 max);
	if (left[0]) {
		snprintf(line, sizeof(line),
			 "left out to fit %u columns (--wide shows them; key=value: the same in "
			 "every row): %s",
			 max, left);
		mm_fault_comment(out, line, max);
	}
	if (comment || src->estimate || unknown || left[0])
		fputs("#\n", out);
}

/* Whether column @c of @rows has one value in every row (of two or more): the identity and
 * faults columns never count as that. Its value goes to @value. */
static bool col_constant(const struct mm_fault_row *rows, size_t n, int c,
			 const struct sources *src, char *value)
{
	char buf[CELL_LEN];
	if (n < 2 || cols[c].group == G_ID || c == C_FAULTS)
		return false;
	table_cell(value, CELL_LEN, &rows[0], c, src);
	for (size_t i = 1; i < n; i++) {
		table_cell(buf, sizeof(buf), &rows[i], c, src);
		if (strcmp(buf, value) != 0)
			return false;
	}
	return true;
}

/* The header of column @c in the aligned table: a ms column shown in seconds says so. */
static const char *head(int c, const struct sources *src)
{
	static const char *const in_s[C_N] = {[C_FB_WAIT] = "fb wait s", [C_WAIT] = "wait s"};
	return src->in_s[c] && in_s[c] ? in_s[c] : cols[c].head;
}

/* Sets src->in_s for the ms columns of @rows with a value of 1000 ms or more. */
static void choose_units(struct sources *src, const struct mm_fault_row *rows, size_t n)
{
	for (int c = 0; c < C_N; c++)
		for (size_t i = 0; i < n && cols[c].kind == K_MS && !src->in_s[c]; i++)
			src->in_s[c] = num(&rows[i], c, src) >= 1000;
}

/* One line of the table (@i 0: the header): numbers right-aligned; text left-aligned, the last
 * column unpadded and, cut to fit, keeping its end (the end of a path tells it apart). */
static void table_line(FILE *out, const struct mm_fault_row *rows, size_t i, const int *shown,
		       const int *width, size_t nshown, const struct sources *src)
{
	char buf[CELL_LEN];
	for (size_t k = 0; k < nshown; k++) {
		int c = shown[k];
		bool last = k + 1 == nshown;
		const char *v = buf;
		if (i == 0)
			v = head(c, src);
		else
			table_cell(buf, sizeof(buf), &rows[i - 1], c, src);
		if (!*v)
			v = "-"; /* an unknown cgroup, as ps prints it; an unknown split */
		if (cols[c].kind == K_TEXT && last && (int)strlen(v) > width[k] && width[k] > 3)
			fprintf(out, "...%s", v + strlen(v) - (size_t)(width[k] - 3));
		else if (cols[c].kind == K_TEXT && last)
			fputs(v, out);
		else if (cols[c].kind == K_TEXT)
			fprintf(out, "%-*s", width[k], v);
		else
			fprintf(out, "%*s", width[k], v);
		fputs(last ? "\n" : "  ", out);
	}
}

static int print_table(FILE *out, const struct mm_fault_row *rows, size_t n, const int *all,
		       size_t nall, const struct sources *all_src, const char *comment,
		       unsigned max)
{
	struct sources units = *all_src, *src = &units;
	int width[C_N] = {0}, shown[C_N];
	size_t nshown = nall;
	char buf[CELL_LEN], left[512], value[C_N][CELL_LEN];
	bool unknown = false, constant[C_N] = {false};

	choose_units(src, rows, n);
	nshown = 0;
	for (size_t k = 0; k < nall; k++)
		if (all[k] != C_START) /* a person reads the pid; programs get both */
			shown[nshown++] = all[k];
	for (size_t k = 0; k < nshown; k++) {
		width[k] = (int)strlen(head(shown[k], src));
		constant[shown[k]] = col_constant(rows, n, shown[k], src, value[shown[k]]);
	}
	for (size_t i = 0; i < n; i++) {
		unknown |= src->split && split_state(&rows[i].sum) == S_UNKNOWN;
		for (size_t k = 0; k < nshown; k++) {
			table_cell(buf, sizeof(buf), &rows[i], shown[k], src);
			if ((int)strlen(buf) > width[k])
				width[k] = (int)strlen(buf);
			if (width[k] < 1)
				width[k] = 1;
		}
	}
	left[0] = '\0';
	if (max)
		nshown = fit(shown, width, nshown, (int)max, constant, value, left, sizeof(left));
	table_comments(out, comment, src, unknown, left, max);
	for (size_t i = 0; i <= n; i++)
		table_line(out, rows, i, shown, width, nshown, src);
	return 0;
}

/* A CSV field: quoted when it holds the separator, a quote or a newline (RFC 4180). */
static void put_csv(FILE *out, const char *v, const char *sep)
{
	if (!strpbrk(v, "\"\n\r") && !strstr(v, sep)) {
		fputs(v, out);
		return;
	}
	fputc('"', out);
	for (const char *p = v; *p; p++) {
		if (*p == '"')
			fputc('"', out);
		fputc(*p, out);
	}
	fputc('"', out);
}

static int print_csv(FILE *out, const struct mm_fault_row *rows, size_t n, const int *shown,
		     size_t nshown, const struct sources *src, const char *sep)
{
	char buf[CELL_LEN];
	for (size_t k = 0; k < nshown; k++)
		fprintf(out, "%s%s", k ? sep : "", cols[shown[k]].key);
	fputc('\n', out);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nshown; k++) {
			cell_as(buf, sizeof(buf), &rows[i], shown[k], src, true);
			if (k)
				fputs(sep, out);
			put_csv(out, buf, sep);
		}
		fputc('\n', out);
	}
	return 0;
}

static int print_json(FILE *out, const struct mm_fault_row *rows, size_t n, const int *shown,
		      size_t nshown, const struct sources *src)
{
	struct mm_buf b = MM_BUF_INIT;
	char buf[CELL_LEN];

	mm_buf_puts(&b, "[");
	for (size_t i = 0; i < n; i++) {
		mm_buf_puts(&b, i ? ",\n {" : "\n {");
		for (size_t k = 0; k < nshown; k++) {
			int c = shown[k];
			if (k)
				mm_buf_puts(&b, ", ");
			mm_buf_json_key(&b, cols[c].key);
			cell_as(buf, sizeof(buf), &rows[i], c, src, true);
			if (cols[c].kind == K_TEXT)
				mm_buf_json_str(&b, buf);
			else
				mm_buf_puts(&b, buf[0] ? buf : "null"); /* unknown, not 0 */
		}
		mm_buf_puts(&b, "}");
	}
	mm_buf_puts(&b, n ? "\n]\n" : "]\n");
	int r = mm_buf_failed(&b) ? -ENOMEM : 0;
	if (!r)
		fputs(b.data, out);
	mm_buf_free(&b);
	return r;
}

int mm_fault_print(FILE *out, struct mm_fault_row *rows, size_t n, const struct mm_fault_opts *opts,
		   const char *comment)
{
	struct sources src = find_sources(rows, n);
	int shown[C_N];

	if (opts->range) {
		struct sources all = find_sources(opts->range, 1);
		src.totals |= all.totals;
		src.fallbacks |= all.fallbacks;
		src.split |= all.split;
		src.estimate |= all.estimate;
		src.fbwait |= all.fbwait;
		src.lock |= all.lock;
		src.holders |= all.holders;
	}
	size_t nshown = 0;
	int r;

	sort_opts = opts;
	sort_src = src;
	if (n) /* rows may be NULL when empty (UBSan, build-asan unit suite) */
		qsort(rows, n, sizeof(*rows), cmp_rows);
	if (opts->top && n > opts->top)
		n = opts->top;
	for (int c = 0; c < C_N; c++)
		if (col_shown(c, &src, opts->by_cgroup))
			shown[nshown++] = c;
	switch (opts->format) {
	case MM_FAULT_CSV:
		r = print_csv(out, rows, n, shown, nshown, &src, opts->sep ? opts->sep : ",");
		break;
	case MM_FAULT_JSON:
		r = print_json(out, rows, n, shown, nshown, &src);
		break;
	default:
		r = print_table(out, rows, n, shown, nshown, &src, comment, opts->width);
		break;
	}
	if (r < 0)
		return r;
	return ferror(out) ? -EIO : 0;
}

/* One line of mm_fault_comment(): @len characters of @p. */
static void comment_line(FILE *out, const char *p, size_t len, unsigned width)
{
	const char *lead = "# ";
	while (len) {
		size_t room = width > strlen(lead) + 8 ? width - strlen(lead) : SIZE_MAX, cut = len;
		if (len > room) {
			/* The last blank that fits; else the first one after (a long word). */
			for (cut = room; cut > 0 && p[cut] != ' '; cut--)
				;
			if (!cut)
				for (cut = room; cut < len && p[cut] != ' '; cut++)
					;
		}
		fprintf(out, "%s%.*s\n", lead, (int)cut, p);
		while (cut < len && p[cut] == ' ')
			cut++;
		p += cut;
		len -= cut;
		lead = "#   ";
	}
}

void mm_fault_comment(FILE *out, const char *text, unsigned width)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		if (nl == p)
			fputs("#\n", out);
		comment_line(out, p, (size_t)(nl - p), width);
		p = *nl ? nl + 1 : nl;
	}
}

void mm_fault_change(char *buf, size_t len, double a, double b)
{
	if (a == 0 && b == 0)
		snprintf(buf, len, "%s", "");
	else if (a == 0)
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%+.1f%%", 100.0 * (b - a) / a);
	/* 6256 -> 3 is not a change of -100.0%: one more digit where rounding says so. */
	if (b != 0 && (!strcmp(buf, "-100.0%")))
		snprintf(buf, len, "%+.2f%%", 100.0 * (b - a) / a);
	/* "-0.0%" reads as a change; there is none at this precision. */
	if (!strcmp(buf, "-0.0%") || !strcmp(buf, "+0.0%"))
		snprintf(buf, len, "0.0%%");
}

void mm_fault_thousands(char *buf, size_t len, uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t o = 0;
	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

/* How a value of the comparison prints: a count (thousands separators as a total, "%.0f" or
 * "%.2f" as a rate), milliseconds ("%.3f"), a share in percent ("%.2f"), or the text the user
 * gave (throughput). */
enum cmp_kind { V_COUNT, V_MS, V_PCT, V_GIVEN };

/* One line of the comparison grid: the values of both sides as numbers, whether each side
 * collected it (else "-", never 0) and whether it is an estimate ("~N"), the change from a to b
 * (a is the baseline), and whether that change lies inside the sides' error bound. */
struct cmp_line {
	char metric[48];  /* without the unit */
	const char *unit; /* "/s", "ms", "ms /s", "%", "" */
	enum cmp_kind kind;
	double v[2];
	bool known[2], est[2];
	bool within_error;
	const char *given[2]; /* V_GIVEN: the user's text */
};

/* The grid being built: its lines; the seconds each side's windows cover (counts become rates
 * when both are known, unless totals are asked for). */
struct cmp {
	struct cmp_line l[48]; /* at most 16 lines and one per holder operation (17) */
	size_t n;
	double secs[2];
	bool rates;
};

static const bool BOTH[2] = {true, true}, NEITHER[2] = {false, false};

/* Appends a line; @per_time: a count or a time that becomes a rate when c->rates. */
static struct cmp_line *add_line(struct cmp *c, const char *metric, enum cmp_kind kind, double a,
				 double b, const bool known[2], const bool est[2], bool per_time)
{
	struct cmp_line *x = &c->l[c->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->metric, sizeof(x->metric), "%s", metric);
	x->kind = kind;
	x->v[0] = per_time && c->rates ? a / c->secs[0] : a;
	x->v[1] = per_time && c->rates ? b / c->secs[1] : b;
	x->unit = kind == V_PCT		 ? "%"
		  : kind == V_MS	 ? (c->rates ? "ms /s" : "ms")
		  : per_time && c->rates ? "/s"
					 : "";
	for (int k = 0; k < 2; k++) {
		x->known[k] = known[k];
		x->est[k] = est[k];
	}
	return x;
}

/* A count of both sides (a rate per second of each side's windows unless totals are asked for,
 * so ranges of different lengths compare). */
static struct cmp_line *add_count(struct cmp *c, const char *metric, uint64_t a, uint64_t b,
				  const bool known[2], const bool est[2])
{
	return add_line(c, metric, V_COUNT, (double)a, (double)b, known, est, true);
}

/* The change of line @x from a to b: true with @ret_pct when both sides have it and one is not
 * 0; false otherwise (*@ret_pct NAN for "n/a": from 0 to something). */
static bool line_change(const struct cmp_line *x, double *ret_pct)
{
	*ret_pct = NAN;
	if (!x->known[0] || !x->known[1] || (x->v[0] == 0 && x->v[1] == 0))
		return false;
	if (x->v[0] != 0)
		*ret_pct = 100.0 * (x->v[1] - x->v[0]) / x->v[0];
	return true;
}

/* The cell of side @k of @x as the grid prints it. */
static void line_cell(char *buf, size_t len, const struct cmp_line *x, int k, bool rates)
{
	char num[40];
	double v = x->v[k];
	if (!x->known[k]) {
		snprintf(buf, len, "-");
		return;
	}
	if (x->kind == V_GIVEN)
		snprintf(num, sizeof(num), "%s", x->given[k] ? x->given[k] : "-");
	else if (x->kind == V_MS)
		snprintf(num, sizeof(num), "%.3f", v);
	else if (x->kind == V_PCT)
		snprintf(num, sizeof(num), "%.2f", v);
	else if (rates && x->unit[0])
		snprintf(num, sizeof(num), v >= 100 ? "%.0f" : "%.2f", v);
	else
		mm_fault_thousands(num, sizeof(num), (uint64_t)llround(v));
	snprintf(buf, len, "%s%s", x->est[k] ? "~" : "", num);
}

/* The change column of @x: "+6.3%", "n/a", "" (nothing to compare), "within error". */
static void line_change_text(char *buf, size_t len, const struct cmp_line *x)
{
	double pct;
	buf[0] = '\0';
	if (!line_change(x, &pct))
		return;
	if (x->within_error)
		snprintf(buf, len, "within error");
	else
		mm_fault_change(buf, len, x->v[0], x->v[1]);
}

/* The metric column: the name and its unit ("faults /s", "fallback share %"). */
static void line_metric(char *buf, size_t len, const struct cmp_line *x)
{
	snprintf(buf, len, "%s%s%s", x->metric, x->unit[0] ? " " : "", x->unit);
}

/* "| centred |" with at least one blank either side, as in the seeds. */
static void put_centred(FILE *out, const char *s, int width)
{
	int len = (int)strlen(s), left = (width - len) / 2;
	fprintf(out, " %*s%s%*s |", left, "", s, width - len - left, "");
}

static void put_rule(FILE *out, const int *w)
{
	fputc('+', out);
	for (int k = 0; k < 4; k++) {
		for (int i = 0; i < w[k] + 2; i++)
			fputc('-', out);
		fputc('+', out);
	}
	fputc('\n', out);
}

/* The four cells of @x as the grid prints them: metric, a, b, change. */
static void line_texts(const struct cmp_line *x, bool rates, char (*t)[64])
{
	line_metric(t[0], 64, x);
	line_cell(t[1], 64, x, 0, rates);
	line_cell(t[2], 64, x, 1, rates);
	line_change_text(t[3], 64, x);
}

/* The comparison table of @c, sides labelled @la and @lb. Returns 0 or -EIO. */
static int print_cmp_lines(FILE *out, const struct cmp *c, const char *la, const char *lb)
{
	int w[4] = {(int)strlen("metric"), (int)strlen(la), (int)strlen(lb), (int)strlen("change")};
	char t[4][64];
	for (size_t i = 0; i < c->n; i++) {
		line_texts(&c->l[i], c->rates, t);
		for (int k = 0; k < 4; k++)
			if ((int)strlen(t[k]) > w[k])
				w[k] = (int)strlen(t[k]);
	}
	put_rule(out, w);
	fputc('|', out);
	put_centred(out, "metric", w[0]);
	put_centred(out, la, w[1]);
	put_centred(out, lb, w[2]);
	put_centred(out, "change", w[3]);
	fputc('\n', out);
	put_rule(out, w);
	for (size_t i = 0; i < c->n; i++) {
		line_texts(&c->l[i], c->rates, t);
		fprintf(out, "| %-*s |", w[0], t[0]);
		put_centred(out, t[1], w[1]);
		put_centred(out, t[2], w[2]);
		put_centred(out, t[3], w[3]);
		fputc('\n', out);
		put_rule(out, w);
	}
	return ferror(out) ? -EIO : 0;
}

/* A note above the comparison grid: long enough for two labels of the command line. */
#define NOTE_LEN 512

/* The note on the sides' sources (schema/007_window_source.sql) into @buf, or false for none:
 * when they differ, one is unknown or changed within its range ("bpf,perf"), the fault split and
 * the fallbacks may differ by method alone (docs/sources.md). None when a side ran no collector
 * on events (the collector notes say what that side lacks) or both ran on the same one. */
static bool source_note(char *buf, size_t len, const struct mm_fault_side *a,
			const struct mm_fault_side *b)
{
	const char *x = a->source, *y = b->source;
	bool unknown = strstr(x, "unknown") || strstr(y, "unknown"), same = !strcmp(x, y);

	if (!x[0] || !y[0] || (!unknown && same && !strchr(x, ',')))
		return false;
	snprintf(buf, len,
		 "%s ran on the %s source, %s on %s%s: the fault split and fallbacks %s found by "
		 "different methods (docs/sources.md)",
		 a->label, x, b->label, y,
		 unknown ? " ('unknown': stored before mmlockd recorded the source)" : "",
		 unknown || same ? "may have been" : "are");
	return true;
}

/* The comparison as CSV: metric, the two labels, change, with the cells as the grid prints them
 * except a figure not collected, which is empty. */
static int print_compare_csv(FILE *out, const struct cmp *c, const char *la, const char *lb,
			     const char *sep)
{
	const char *head[4] = {"metric", la, lb, "change"};
	char t[4][64];
	for (int k = 0; k < 4; k++) {
		if (k)
			fputs(sep, out);
		put_csv(out, head[k], sep);
	}
	fputc('\n', out);
	for (size_t i = 0; i < c->n; i++) {
		line_texts(&c->l[i], c->rates, t);
		for (int k = 0; k < 4; k++) {
			if (k)
				fputs(sep, out);
			put_csv(out, k && k < 3 && !c->l[i].known[k - 1] ? "" : t[k], sep);
		}
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}

/* A number of the JSON comparison: null when unknown or not finite. */
static void json_number(struct mm_buf *b, bool known, double v)
{
	if (!known || !isfinite(v))
		mm_buf_puts(b, "null");
	else
		mm_buf_printf(b, "%.17g", v);
}

/* One row of the JSON comparison: numbers, not the grid's strings (null: not collected). */
static void json_row(struct mm_buf *b, const struct cmp_line *x)
{
	double pct;
	bool change = line_change(x, &pct);
	mm_buf_puts(b, "{");
	mm_buf_json_key(b, "metric");
	mm_buf_json_str(b, x->metric);
	mm_buf_puts(b, ", ");
	mm_buf_json_key(b, "unit");
	mm_buf_json_str(b, x->unit);
	for (int k = 0; k < 2; k++) {
		mm_buf_puts(b, k ? ", \"b\":" : ", \"a\":");
		json_number(b, x->known[k],
			    x->kind == V_GIVEN && x->given[k] ? strtod(x->given[k], NULL)
							      : x->v[k]);
		mm_buf_printf(b, ", \"%s_estimated\":%s", k ? "b" : "a",
			      x->known[k] && x->est[k] ? "true" : "false");
	}
	mm_buf_puts(b, ", \"change_pct\":");
	json_number(b, change, pct);
	mm_buf_printf(b, ", \"within_error\":%s}", x->within_error ? "true" : "false");
}

/* The comparison as JSON: {"a": label, "b": label, "baseline": "a", "seconds": [a, b] (null
 * when --totals), "notes": [...], "rows": [{"metric", "unit", "a", "a_estimated", "b",
 * "b_estimated", "change_pct" (of b relative to a; null: none or from 0), "within_error"}]}. */
static int print_compare_json(FILE *out, const struct cmp *c, const char *la, const char *lb,
			      char (*notes)[NOTE_LEN], size_t nn)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_buf_puts(&b, "{");
	mm_buf_json_key(&b, "a");
	mm_buf_json_str(&b, la);
	mm_buf_puts(&b, ", ");
	mm_buf_json_key(&b, "b");
	mm_buf_json_str(&b, lb);
	mm_buf_puts(&b, ", \"baseline\":\"a\", \"seconds\":[");
	json_number(&b, c->rates, c->secs[0]);
	mm_buf_puts(&b, ", ");
	json_number(&b, c->rates, c->secs[1]);
	mm_buf_puts(&b, "], ");
	mm_buf_json_key(&b, "notes");
	mm_buf_puts(&b, "[");
	for (size_t i = 0; i < nn; i++) {
		if (i)
			mm_buf_puts(&b, ", ");
		mm_buf_json_str(&b, notes[i]);
	}
	mm_buf_puts(&b, "],\n ");
	mm_buf_json_key(&b, "rows");
	mm_buf_puts(&b, "[");
	for (size_t i = 0; i < c->n; i++) {
		mm_buf_puts(&b, i ? ",\n  " : "\n  ");
		json_row(&b, &c->l[i]);
	}
	mm_buf_puts(&b, "]}\n");
	int r = mm_buf_failed(&b) ? -ENOMEM : 0;
	if (!r)
		fputs(b.data, out);
	mm_buf_free(&b);
	return r < 0 ? r : ferror(out) ? -EIO : 0;
}

/* What differs between the sides of a comparison, said above the grid (JSON: "notes"), in
 * @notes (10 at most); returns how many. */
static size_t compare_notes(char notes[][NOTE_LEN], const struct mm_fault_side *a,
			    const struct mm_fault_side *b, const struct sources *sa,
			    const struct sources *sb, bool rates)
{
	const struct mm_proc_stats *x = &a->sum.sum, *y = &b->sum.sum;
	const bool est[2] = {x->split_estimated > 0, y->split_estimated > 0};
	size_t nn = 0;
	const char *differ[][2] = {{"totals", "the kernel's fault counts (totals)"},
				   {"fallbacks", "fallbacks (fallbacks collector)"},
				   {"split", "the fault split (faults collector)"},
				   {"lock", "mmap_lock waits (mmaplock collector)"},
				   {"holders", "who held mmap_lock (contention collector)"}};
	const bool has[][2] = {{sa->totals, sb->totals},
			       {sa->fallbacks, sb->fallbacks},
			       {sa->split, sb->split},
			       {sa->lock, sb->lock},
			       {sa->holders, sb->holders}};
	snprintf(notes[nn++], NOTE_LEN,
		 "change: %s relative to %s, the baseline, as perf diff prints it: (B - A) / A",
		 b->label, a->label);
	for (size_t k = 0; k < sizeof(has) / sizeof(has[0]); k++)
		if (has[k][0] != has[k][1])
			snprintf(notes[nn++], NOTE_LEN, "%s: only %s collected it", differ[k][1],
				 has[k][0] ? a->label : b->label);
	nn += source_note(notes[nn], NOTE_LEN, a, b);
	if (est[0] != est[1] && sa->split && sb->split)
		snprintf(notes[nn++], NOTE_LEN,
			 "the split is estimated (bursts) in %s, exact in %s",
			 est[0] ? a->label : b->label, est[0] ? b->label : a->label);
	if (est[0] || est[1])
		snprintf(notes[nn++], NOTE_LEN,
			 "~: estimated from bursts of the fault split; 'within error': the change "
			 "is inside the sum of the sides' 95%% bounds (report's split_err)");
	if (rates)
		snprintf(notes[nn++], NOTE_LEN,
			 "counts per second of the time each side's windows cover (%s: %" PRIu64
			 " windows, %.1f s; %s: %" PRIu64
			 " windows, %.1f s); --totals for the sums",
			 a->label, a->windows, a->seconds, b->label, b->windows, b->seconds);
	return nn;
}

/* Marks line @x within error when both sides have it, one is estimated and the difference is
 * inside the sum of the estimated sides' bounds @err (counts, per second like the line). */
static void mark_error(struct cmp_line *x, const double err[2])
{
	double bound = (x->est[0] ? err[0] : 0) + (x->est[1] ? err[1] : 0), pct;
	x->within_error = (x->est[0] || x->est[1]) && line_change(x, &pct) &&
			  fabs(x->v[1] - x->v[0]) <= bound;
}

/* The 95% bound of @s's estimated fallback outcomes: split_err_fallbacks, or split_err where its
 * windows were stored without it (before schema/009_split_by_side.sql). */
static uint64_t fallback_err(const struct mm_proc_stats *s)
{
	return s->split_err_fallbacks ? s->split_err_fallbacks : s->split_err;
}

/* The fault split's lines of a comparison: the outcomes (an estimated one's change is "within
 * error" inside the bounds), and the fallbacks' wait where a side has it. */
static void compare_split(struct cmp *c, const struct mm_proc_stats *x,
			  const struct mm_proc_stats *y, const bool split[2], const bool est[2],
			  bool any_fbwait, const bool fbwait[2])
{
	const uint64_t xs[] = {x->faults_vma, x->faults_vma_retry, x->faults_mmap_retry,
			       x->faults_mmap_abort, x->faults_mmap_unknown};
	const uint64_t ys[] = {y->faults_vma, y->faults_vma_retry, y->faults_mmap_retry,
			       y->faults_mmap_abort, y->faults_mmap_unknown};
	const char *names[] = {"vma", "vma_retry", "mmap_retry", "mmap_abort", "mmap_unknown"};
	/* The vma side's outcomes within the row's bound, the fallbacks' within their own
	 * (windows stored before schema 009 have only the row's). */
	double err[2][2] = {{(double)x->split_err, (double)y->split_err},
			    {(double)fallback_err(x), (double)fallback_err(y)}};
	for (int k = 0; c->rates && k < 2; k++)
		err[0][k] /= c->secs[k], err[1][k] /= c->secs[k];
	for (size_t o = 0; o < sizeof(names) / sizeof(names[0]); o++)
		mark_error(add_count(c, names[o], xs[o], ys[o], split, est), err[o >= 2]);
	if (any_fbwait)
		add_line(c, "fallback wait", V_MS, (double)x->faults_mmap_lock_wait_ns / 1e6,
			 (double)y->faults_mmap_lock_wait_ns / 1e6, fbwait, NEITHER, true);
}

/* Who held mmap_lock (contention collector): the time waited behind each operation either side
 * waited behind. */
static void compare_holders(struct cmp *c, const struct mm_proc_stats *x,
			    const struct mm_proc_stats *y, const bool known[2])
{
	const uint64_t *nx = &x->mmap_lock_behind_fault_ns, *ny = &y->mmap_lock_behind_fault_ns;
	for (unsigned op = 0; op < MM_SRC_COUNT; op++) {
		if (!nx[op] && !ny[op])
			continue;
		char metric[48];
		snprintf(metric, sizeof(metric), "waited behind %s", mm_lock_source_name(op));
		add_line(c, metric, V_MS, (double)nx[op] / 1e6, (double)ny[op] / 1e6, known,
			 NEITHER, true);
	}
}

/* The lines of faults, fallbacks and mmap_lock waits (everything but the split and holders). */
static void compare_counts(struct cmp *c, const struct mm_fault_side *a,
			   const struct mm_fault_side *b, const struct sources *src,
			   const struct sources *sa, const struct sources *sb)
{
	const struct mm_fault_row *ra = &a->sum, *rb = &b->sum;
	const struct mm_proc_stats *x = &ra->sum, *y = &rb->sum;
	double fa = (double)row_fallbacks(ra, src), fb = (double)row_fallbacks(rb, src);
	/* mmap_lock contentions: the contention collector's rows, else the mmaplock collector's
	 * count; a side with neither did not collect them. */
	const bool contended[2] = {a->lock_contended >= 0 || sa->lock || sa->holders,
				   b->lock_contended >= 0 || sb->lock || sb->holders};

	add_count(c, src->totals ? "faults" : "faults (user, sampled)", row_faults(ra, src),
		  row_faults(rb, src), BOTH, NEITHER);
	if (src->totals)
		add_count(c, "major faults", x->majflt, y->majflt,
			  (const bool[]){sa->totals, sb->totals}, NEITHER);
	add_count(c, "mmap_lock fallbacks", row_fallbacks(ra, src), row_fallbacks(rb, src), BOTH,
		  NEITHER);
	add_line(c, "fallback share", V_PCT, 100.0 * ratio(fa, (double)row_faults(ra, src)),
		 100.0 * ratio(fb, (double)row_faults(rb, src)), BOTH, NEITHER, false);
	if (src->fallbacks)
		add_line(c, "fallbacks that waited", V_PCT,
			 100.0 * ratio((double)x->fallback_lock_waits, fa),
			 100.0 * ratio((double)y->fallback_lock_waits, fb),
			 (const bool[]){sa->fallbacks, sb->fallbacks}, NEITHER, false);
	if (contended[0] || contended[1])
		add_count(c, "mmap_lock contentions",
			  a->lock_contended >= 0 ? (uint64_t)a->lock_contended
						 : x->mmap_lock_contended,
			  b->lock_contended >= 0 ? (uint64_t)b->lock_contended
						 : y->mmap_lock_contended,
			  contended, NEITHER);
	if (src->lock) {
		const bool lock[2] = {sa->lock, sb->lock};
		add_count(c, "mmap_lock waits", x->mmap_lock_waits, y->mmap_lock_waits, lock,
			  NEITHER);
		add_line(c, "mmap_lock wait", V_MS, (double)x->mmap_lock_wait_ns / 1e6,
			 (double)y->mmap_lock_wait_ns / 1e6, lock, NEITHER, true);
	}
}

int mm_fault_print_compare(FILE *out, const struct mm_fault_side *a, const struct mm_fault_side *b,
			   bool totals, enum mm_fault_format format, const char *sep,
			   unsigned width)
{
	struct mm_fault_row rows[2] = {a->sum, b->sum};
	struct sources src = find_sources(rows, 2), sa = find_sources(&rows[0], 1),
		       sb = find_sources(&rows[1], 1);
	struct cmp c = {.secs = {a->seconds, b->seconds}};
	const struct mm_proc_stats *x = &a->sum.sum, *y = &b->sum.sum;
	const bool est[2] = {x->split_estimated > 0, y->split_estimated > 0};

	c.rates = !totals && a->seconds > 0 && b->seconds > 0;
	char notes[12][NOTE_LEN];
	size_t nn = compare_notes(notes, a, b, &sa, &sb, c.rates);

	if (a->throughput || b->throughput) {
		struct cmp_line *t = add_line(
			&c, "throughput", V_GIVEN, a->throughput ? strtod(a->throughput, NULL) : 0,
			b->throughput ? strtod(b->throughput, NULL) : 0,
			(const bool[]){a->throughput != NULL, b->throughput != NULL}, NEITHER,
			false);
		t->given[0] = a->throughput;
		t->given[1] = b->throughput;
	}
	compare_counts(&c, a, b, &src, &sa, &sb);
	if (src.split)
		compare_split(&c, x, y, (const bool[]){sa.split, sb.split}, est, src.fbwait,
			      (const bool[]){sa.fbwait, sb.fbwait});
	if (src.holders)
		compare_holders(&c, x, y, (const bool[]){sa.holders, sb.holders});
	add_line(&c, "processes", V_COUNT, (double)a->sum.processes, (double)b->sum.processes, BOTH,
		 NEITHER, false);
	if (format == MM_FAULT_CSV)
		return print_compare_csv(out, &c, a->label, b->label, sep);
	if (format == MM_FAULT_JSON)
		return print_compare_json(out, &c, a->label, b->label, notes, nn);
	for (size_t i = 0; i < nn; i++)
		mm_fault_comment(out, notes[i], width);
	bool unknown = false;
	for (size_t i = 0; i < c.n; i++)
		unknown |= !c.l[i].known[0] || !c.l[i].known[1];
	if (unknown)
		mm_fault_comment(
			out, "-: not collected by that side (its collector did not run), never 0",
			width);
	fputs("#\n", out);
	return print_cmp_lines(out, &c, a->label, b->label);
}
