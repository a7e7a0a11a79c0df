/*
 * Fault tables and the A/B comparison of `mmlockd report` (see faulttable.h). Pure code.
 *
 * Every column is one entry of cols[]: its key (sort key, CSV header, JSON key), its header in the
 * aligned table, how to print it, and the group that decides whether the data has it. Cells are
 * formatted to strings first, so widths are known before the first line is printed, as perf does.
 * An aligned table wider than opts.width loses columns in the order of drop_order[] (the cgroup,
 * last, is cut first) and says which; --wide (width 0) keeps all.
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

enum kind { K_INT, K_TEXT, K_PCT, K_MS, K_US };
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
	C_MAJOR,	C_CGROUP,  C_SPLIT,	 C_WAITS,
};

/* What the rows' data has, decided once over all of them (see faulttable.h). */
struct sources {
	bool totals, fallbacks, split, estimate, fbwait, lock, holders;
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
	return (struct sources){totals > 0,   fallbacks > 0 || !split, split > 0,
				estimate > 0, fbwait || exact,	       lock > 0,
				holders > 0};
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

/* Faults of an estimated row's windows that no burst covered: its faults minus its outcomes. */
static uint64_t num_not_sampled(const struct mm_proc_stats *s)
{
	uint64_t all = s->minflt + s->majflt, outs = outcomes(s);
	return split_state(s) == S_EXACT || all < outs ? 0 : all - outs;
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

/* Column @c of @r as text: "" where its split is unknown (not a 0). Percentages keep their
 * precision in CSV and JSON (@exact): a share of 0.004% is not 0.00. */
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
	if (cols[c].kind == K_PCT && exact) {
		snprintf(buf, len, "%.6g", num(r, c, src));
		return;
	}
	if (cols[c].kind == K_PCT) {
		double v = num(r, c, src);
		snprintf(buf, len, v > 0 && v < 0.005 ? "%.1g" : "%.2f", v);
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
		snprintf(buf, len, "%.3f", num(r, c, src));
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

/* Leaves columns out of @shown/@width, in drop_order[], until a line fits @max (the cgroup, the
 * last column, is cut to what is left first, down to 12 characters); their keys go to @left. */
static size_t fit(int *shown, int *width, size_t nshown, int max, char *left, size_t leftlen)
{
	size_t o = 0;
	left[0] = '\0';
	for (size_t k = 0; k < nshown; k++) {
		int over = line_width(width, nshown) - max;
		if (shown[k] == C_CGROUP && over > 0 && width[k] > 12)
			width[k] -= over < width[k] - 12 ? over : width[k] - 12;
	}
	for (size_t d = 0; d < sizeof(drop_order) / sizeof(drop_order[0]); d++) {
		int over = line_width(width, nshown) - max;
		if (over <= 0)
			break;
		for (size_t k = 0; k < nshown; k++) {
			if (shown[k] != drop_order[d])
				continue;
			if (shown[k] == C_CGROUP && width[k] - over >= 12) {
				width[k] -= over;
				break;
			}
			o += (size_t)snprintf(left + o, o < leftlen ? leftlen - o : 0, "%s%s",
					      o ? " " : "", cols[shown[k]].key);
			memmove(&shown[k], &shown[k + 1], (nshown - k - 1) * sizeof(*shown));
			memmove(&width[k], &width[k + 1], (nshown - k - 1) * sizeof(*width));
			nshown--;
			break;
		}
	}
	return nshown;
}

static int print_table(FILE *out, const struct mm_fault_row *rows, size_t n, const int *all,
		       size_t nall, const struct sources *src, const char *comment, unsigned max)
{
	int width[C_N] = {0}, shown[C_N];
	size_t nshown = nall;
	char buf[CELL_LEN], left[256];
	bool unknown = false;

	memcpy(shown, all, nall * sizeof(*shown));
	for (size_t k = 0; k < nshown; k++)
		width[k] = (int)strlen(cols[shown[k]].head);
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
		nshown = fit(shown, width, nshown, (int)max, left, sizeof(left));
	for (const char *p = comment; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		fprintf(out, "# %.*s\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
	if (src->estimate)
		fputs("# ~: estimated from bursts of the fault split (split_duty): the shares "
		      "classified applied to the exact\n# faults and fallbacks; +-err is the 95% "
		      "bound on each, cov% the share of faults classified,\n# unsampled the faults "
		      "of windows no burst covered (outcomes + unsampled = faults)\n",
		      out);
	if (unknown)
		fputs("# -: not sampled, no burst of the fault split caught a fault of it (not 0; "
		      "--split-duty 100% classifies every fault)\n",
		      out);
	if (left[0])
		fprintf(out, "# left out to fit %u columns (--wide shows them): %s\n", max, left);
	if (comment || src->estimate || unknown || left[0])
		fputs("#\n", out);
	/* Numbers right-aligned; text left-aligned, the last column unpadded. */
	for (size_t i = 0; i <= n; i++) {
		for (size_t k = 0; k < nshown; k++) {
			int c = shown[k];
			bool last = k + 1 == nshown;
			const char *v = buf;
			if (i == 0)
				v = cols[c].head;
			else
				table_cell(buf, sizeof(buf), &rows[i - 1], c, src);
			if (!*v)
				v = "-"; /* an unknown cgroup, as ps prints it; an unknown split */
			if (cols[c].kind == K_TEXT && last && (int)strlen(v) > width[k] &&
			    width[k] > 3) /* cut to fit: the end of a path tells it apart */
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

/* One line of the comparison grid. */
struct cmp_line {
	char metric[48];
	char a[48], b[48], change[16];
};

/* The grid being built: its lines; the seconds each side covers (counts become rates when both
 * are known, unless totals are asked for); which side has each collector's data (a figure one
 * side did not collect reads "not collected" there, not 0); which side's split is estimated. */
struct cmp {
	struct cmp_line l[48]; /* at most 16 lines and one per holder operation (17) */
	size_t n;
	double secs[2];
	bool rates;
};

static void set_cell(char *buf, size_t len, bool known, const char *fmt, double v, bool est)
{
	if (!known)
		snprintf(buf, len, "not collected");
	else {
		char num[40];
		snprintf(num, sizeof(num), fmt, v);
		snprintf(buf, len, "%s%s", est ? "~" : "", num);
	}
}

/* A count: its totals, or its rate per second of each side's range (the change is then that of
 * the rates, so ranges of different lengths compare). @known: whether each side collected it;
 * @est: whether each side's value is an estimate. */
static void add_count_of(struct cmp *c, const char *metric, uint64_t a, uint64_t b,
			 const bool known[2], const bool est[2])
{
	struct cmp_line *x = &c->l[c->n++];
	double va = (double)a, vb = (double)b;
	if (c->rates) {
		va /= c->secs[0];
		vb /= c->secs[1];
		snprintf(x->metric, sizeof(x->metric), "%s /s", metric);
		set_cell(x->a, sizeof(x->a), known[0], va >= 100 ? "%.0f" : "%.2f", va, est[0]);
		set_cell(x->b, sizeof(x->b), known[1], vb >= 100 ? "%.0f" : "%.2f", vb, est[1]);
	} else {
		snprintf(x->metric, sizeof(x->metric), "%s", metric);
		if (known[0] && !est[0])
			mm_fault_thousands(x->a, sizeof(x->a), a);
		else
			set_cell(x->a, sizeof(x->a), known[0], "%.0f", va, est[0]);
		if (known[1] && !est[1])
			mm_fault_thousands(x->b, sizeof(x->b), b);
		else
			set_cell(x->b, sizeof(x->b), known[1], "%.0f", vb, est[1]);
	}
	x->change[0] = '\0';
	if (known[0] && known[1])
		mm_fault_change(x->change, sizeof(x->change), va, vb);
}

static void add_count(struct cmp *c, const char *metric, uint64_t a, uint64_t b)
{
	add_count_of(c, metric, a, b, (const bool[]){true, true}, (const bool[]){false, false});
}

static void add_real_of(struct cmp *c, const char *metric, double a, double b, const char *fmt,
			const bool known[2], const bool est[2])
{
	struct cmp_line *x = &c->l[c->n++];
	snprintf(x->metric, sizeof(x->metric), "%s", metric);
	set_cell(x->a, sizeof(x->a), known[0], fmt, a, est[0]);
	set_cell(x->b, sizeof(x->b), known[1], fmt, b, est[1]);
	x->change[0] = '\0';
	if (known[0] && known[1])
		mm_fault_change(x->change, sizeof(x->change), a, b);
}

static void add_real(struct cmp *c, const char *metric, double a, double b, const char *fmt)
{
	add_real_of(c, metric, a, b, fmt, (const bool[]){true, true}, (const bool[]){false, false});
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

/* The comparison table of @n lines, sides labelled @la and @lb. Returns 0 or -EIO. */
static int print_cmp_lines(FILE *out, const struct cmp_line *l, size_t n, const char *la,
			   const char *lb)
{
	int w[4] = {(int)strlen("metric"), (int)strlen(la), (int)strlen(lb), (int)strlen("change")};
	for (size_t i = 0; i < n; i++) {
		const char *v[4] = {l[i].metric, l[i].a, l[i].b, l[i].change};
		for (int k = 0; k < 4; k++)
			if ((int)strlen(v[k]) > w[k])
				w[k] = (int)strlen(v[k]);
	}
	put_rule(out, w);
	fputc('|', out);
	put_centred(out, "metric", w[0]);
	put_centred(out, la, w[1]);
	put_centred(out, lb, w[2]);
	put_centred(out, "change", w[3]);
	fputc('\n', out);
	put_rule(out, w);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "| %-*s |", w[0], l[i].metric);
		put_centred(out, l[i].a, w[1]);
		put_centred(out, l[i].b, w[2]);
		put_centred(out, l[i].change, w[3]);
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

/* The comparison for programs: CSV (metric, the two labels, change; the cells as the grid has
 * them, "~N" and "not collected" included) or JSON ({"a": label, "b": label, "notes": [...],
 * "rows": [{"metric", "a", "b", "change"}]}). */
static int print_compare_data(FILE *out, const struct cmp *c, const char *la, const char *lb,
			      char (*notes)[NOTE_LEN], size_t nn, enum mm_fault_format format,
			      const char *sep)
{
	if (format == MM_FAULT_CSV) {
		const char *head[4] = {"metric", la, lb, "change"};
		for (int k = 0; k < 4; k++) {
			if (k)
				fputs(sep, out);
			put_csv(out, head[k], sep);
		}
		fputc('\n', out);
		for (size_t i = 0; i < c->n; i++) {
			const char *v[4] = {c->l[i].metric, c->l[i].a, c->l[i].b, c->l[i].change};
			for (int k = 0; k < 4; k++) {
				if (k)
					fputs(sep, out);
				put_csv(out, v[k], sep);
			}
			fputc('\n', out);
		}
		return ferror(out) ? -EIO : 0;
	}
	struct mm_buf b = MM_BUF_INIT;
	mm_buf_puts(&b, "{");
	mm_buf_json_key(&b, "a");
	mm_buf_json_str(&b, la);
	mm_buf_puts(&b, ", ");
	mm_buf_json_key(&b, "b");
	mm_buf_json_str(&b, lb);
	mm_buf_puts(&b, ", ");
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
		const char *k[4] = {"metric", "a", "b", "change"};
		const char *v[4] = {c->l[i].metric, c->l[i].a, c->l[i].b, c->l[i].change};
		mm_buf_puts(&b, i ? ",\n  {" : "\n  {");
		for (int j = 0; j < 4; j++) {
			if (j)
				mm_buf_puts(&b, ", ");
			mm_buf_json_key(&b, k[j]);
			mm_buf_json_str(&b, v[j]);
		}
		mm_buf_puts(&b, "}");
	}
	mm_buf_puts(&b, "]}\n");
	int r = mm_buf_failed(&b) ? -ENOMEM : 0;
	if (!r)
		fputs(b.data, out);
	mm_buf_free(&b);
	return r < 0 ? r : ferror(out) ? -EIO : 0;
}

/* What differs between the sides of a comparison, said above the grid (JSON: "notes"), in
 * @notes (8 at most); returns how many. */
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
	for (size_t k = 0; k < sizeof(has) / sizeof(has[0]); k++)
		if (has[k][0] != has[k][1])
			snprintf(notes[nn++], NOTE_LEN,
				 "%s: only %s collected it; the other reads 'not collected'",
				 differ[k][1], has[k][0] ? a->label : b->label);
	nn += source_note(notes[nn], NOTE_LEN, a, b);
	if (est[0] != est[1] && sa->split && sb->split)
		snprintf(notes[nn++], NOTE_LEN,
			 "the split is estimated (bursts) in %s, exact in %s",
			 est[0] ? a->label : b->label, est[0] ? b->label : a->label);
	if (est[0] || est[1])
		snprintf(notes[nn++], NOTE_LEN,
			 "~: estimated from bursts of the fault split (report's split_err and "
			 "not_sampled give the error and what no burst covered)");
	if (rates)
		snprintf(
			notes[nn++], NOTE_LEN,
			"counts per second of each side (%.0f s and %.0f s); --totals for the sums",
			a->seconds, b->seconds);
	return nn;
}

/* The fault split's lines of a comparison: the outcomes, and the fallbacks' wait where a side has
 * it. */
static void compare_split(struct cmp *c, const struct mm_proc_stats *x,
			  const struct mm_proc_stats *y, const bool split[2], const bool est[2],
			  bool any_fbwait, const bool fbwait[2])
{
	const bool exact[2] = {0, 0};
	add_count_of(c, "vma", x->faults_vma, y->faults_vma, split, est);
	add_count_of(c, "vma_retry", x->faults_vma_retry, y->faults_vma_retry, split, est);
	add_count_of(c, "mmap_retry", x->faults_mmap_retry, y->faults_mmap_retry, split, est);
	add_count_of(c, "mmap_abort", x->faults_mmap_abort, y->faults_mmap_abort, split, est);
	add_count_of(c, "mmap_unknown", x->faults_mmap_unknown, y->faults_mmap_unknown, split, est);
	if (any_fbwait)
		add_real_of(c, c->rates ? "fallback wait ms /s" : "fallback wait ms",
			    (double)x->faults_mmap_lock_wait_ns / 1e6 / (c->rates ? c->secs[0] : 1),
			    (double)y->faults_mmap_lock_wait_ns / 1e6 / (c->rates ? c->secs[1] : 1),
			    "%.3f", fbwait, exact);
}

/* Who held mmap_lock (contention collector): the time waited behind each operation either side
 * waited behind. */
static void compare_holders(struct cmp *c, const struct mm_proc_stats *x,
			    const struct mm_proc_stats *y, const bool known[2])
{
	const bool exact[2] = {0, 0};
	const uint64_t *nx = &x->mmap_lock_behind_fault_ns, *ny = &y->mmap_lock_behind_fault_ns;
	for (unsigned op = 0; op < MM_SRC_COUNT; op++) {
		if (!nx[op] && !ny[op])
			continue;
		char metric[48];
		snprintf(metric, sizeof(metric), "waited behind %s ms%s", mm_lock_source_name(op),
			 c->rates ? " /s" : "");
		add_real_of(c, metric, (double)nx[op] / 1e6 / (c->rates ? c->secs[0] : 1),
			    (double)ny[op] / 1e6 / (c->rates ? c->secs[1] : 1), "%.3f", known,
			    exact);
	}
}

int mm_fault_print_compare(FILE *out, const struct mm_fault_side *a, const struct mm_fault_side *b,
			   bool totals, enum mm_fault_format format, const char *sep)
{
	struct mm_fault_row rows[2] = {a->sum, b->sum};
	struct sources src = find_sources(rows, 2), sa = find_sources(&rows[0], 1),
		       sb = find_sources(&rows[1], 1);
	struct cmp c = {.secs = {a->seconds, b->seconds}};
	const struct mm_proc_stats *x = &a->sum.sum, *y = &b->sum.sum;
	const bool split[2] = {sa.split, sb.split}, lock[2] = {sa.lock, sb.lock},
		   fbwait[2] = {sa.fbwait, sb.fbwait};
	const bool est[2] = {x->split_estimated > 0, y->split_estimated > 0}, exact[2] = {0, 0};

	c.rates = !totals && a->seconds > 0 && b->seconds > 0;
	char notes[10][NOTE_LEN];
	size_t nn = compare_notes(notes, a, b, &sa, &sb, c.rates);

	if (a->throughput || b->throughput) {
		struct cmp_line *t = &c.l[c.n++];
		snprintf(t->metric, sizeof(t->metric), "throughput");
		snprintf(t->a, sizeof(t->a), "%s", a->throughput ? a->throughput : "-");
		snprintf(t->b, sizeof(t->b), "%s", b->throughput ? b->throughput : "-");
		t->change[0] = '\0';
		if (a->throughput && b->throughput)
			mm_fault_change(t->change, sizeof(t->change), strtod(a->throughput, NULL),
					strtod(b->throughput, NULL));
	}
	add_count(&c, src.totals ? "faults" : "faults (user, sampled)", row_faults(&rows[0], &src),
		  row_faults(&rows[1], &src));
	if (src.totals)
		add_count_of(&c, "major faults", x->majflt, y->majflt,
			     (const bool[]){sa.totals, sb.totals}, exact);
	add_count(&c, "mmap_lock fallbacks", row_fallbacks(&rows[0], &src),
		  row_fallbacks(&rows[1], &src));
	add_real(&c, "fallback share %",
		 100.0 * ratio((double)row_fallbacks(&rows[0], &src),
			       (double)row_faults(&rows[0], &src)),
		 100.0 * ratio((double)row_fallbacks(&rows[1], &src),
			       (double)row_faults(&rows[1], &src)),
		 "%.2f");
	if (src.fallbacks)
		add_count_of(&c, "fallbacks that waited", x->fallback_lock_waits,
			     y->fallback_lock_waits, (const bool[]){sa.fallbacks, sb.fallbacks},
			     exact);
	if (a->lock_contended >= 0 || b->lock_contended >= 0 || src.lock)
		add_count(&c, "mmap_lock contentions",
			  a->lock_contended >= 0 ? (uint64_t)a->lock_contended
						 : x->mmap_lock_contended,
			  b->lock_contended >= 0 ? (uint64_t)b->lock_contended
						 : y->mmap_lock_contended);
	if (src.lock) {
		add_count_of(&c, "mmap_lock waits", x->mmap_lock_waits, y->mmap_lock_waits, lock,
			     exact);
		add_real_of(&c, c.rates ? "mmap_lock wait ms /s" : "mmap_lock wait ms",
			    (double)x->mmap_lock_wait_ns / 1e6 / (c.rates ? c.secs[0] : 1),
			    (double)y->mmap_lock_wait_ns / 1e6 / (c.rates ? c.secs[1] : 1), "%.3f",
			    lock, exact);
	}
	if (src.split)
		compare_split(&c, x, y, split, est, src.fbwait, fbwait);
	if (src.holders)
		compare_holders(&c, x, y, (const bool[]){sa.holders, sb.holders});
	{
		struct cmp_line *p = &c.l[c.n++];
		snprintf(p->metric, sizeof(p->metric), "processes");
		mm_fault_thousands(p->a, sizeof(p->a), a->sum.processes);
		mm_fault_thousands(p->b, sizeof(p->b), b->sum.processes);
		mm_fault_change(p->change, sizeof(p->change), (double)a->sum.processes,
				(double)b->sum.processes);
	}
	if (format == MM_FAULT_CSV || format == MM_FAULT_JSON)
		return print_compare_data(out, &c, a->label, b->label, notes, nn, format, sep);
	for (size_t i = 0; i < nn; i++)
		fprintf(out, "# %s\n", notes[i]);
	if (nn)
		fputs("#\n", out);
	return print_cmp_lines(out, c.l, c.n, a->label, b->label);
}
