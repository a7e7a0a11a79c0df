/*
 * Lock contention tables (see locktable.h). The perf layout follows what `perf lock contention`
 * 6.1 prints: each numeric column right-aligned in its width (contended 10, times 12) followed by
 * one space, then the type right-aligned in 10 after two spaces and the caller after three. Times
 * are shown as perf shows them, including its single-precision division, so the same nanoseconds
 * print the same digits in both tools. The detail and holder layouts are mmlockd's own: one unit
 * per time column, named in its header, and columns left out to fit a width (lt_print).
 */
#include "locktable.h"

#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void mm_locktable_time(char *buf, size_t len, uint64_t ns, int width)
{
	static const struct {
		float base;
		const char *unit;
	} units[] = {
		{1e9f * 3600, "h "}, {1e9f * 60, "m "}, {1e9f, "s "}, {1e6f, "ms"}, {1e3f, "us"},
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if ((float)ns < units[i].base)
			continue;
		float v = (float)ns / units[i].base;
		snprintf(buf, len, "%*.2f %s", width - 3, (double)v, units[i].unit);
		return;
	}
	snprintf(buf, len, "%*" PRIu64 " ns", width - 3, ns);
}

void mm_lock_row_add(struct mm_snap_lock *dst, const struct mm_snap_lock *src)
{
	if (!src->contended)
		return;
	if (!dst->contended || src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
	dst->contended += src->contended;
	dst->wait_ns += src->wait_ns;
	for (unsigned i = 0; i < MM_HIST_BUCKETS; i++)
		dst->hist.bucket[i] += src->hist.bucket[i];
	if (!dst->comm[0])
		memcpy(dst->comm, src->comm, sizeof(dst->comm));
	if (!dst->holder_comm[0])
		memcpy(dst->holder_comm, src->holder_comm, sizeof(dst->holder_comm));
}

uint64_t mm_lock_row_quantile(const struct mm_snap_lock *r, double q)
{
	uint64_t v = mm_hist_quantile_ns(&r->hist, q);
	return v > r->max_ns ? r->max_ns : v;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct mm_snap_lock *x = a, *y = b;
	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	if (x->contended != y->contended)
		return x->contended > y->contended ? -1 : 1;
	int c = strcmp(x->caller, y->caller);
	return c ? c : strcmp(x->type, y->type);
}

void mm_lock_rows_sort(struct mm_snap_lock *rows, size_t n)
{
	if (n > 1)
		qsort(rows, n, sizeof(*rows), cmp_wait);
}

static int cmp_caller(const void *a, const void *b)
{
	const struct mm_snap_lock *x = a, *y = b;
	int c = strcmp(x->type, y->type);
	return c ? c : strcmp(x->caller, y->caller);
}

static int cmp_identity(const void *a, const void *b)
{
	const struct mm_snap_lock *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start_ms != y->start_ms)
		return x->start_ms < y->start_ms ? -1 : 1;
	int c = cmp_caller(a, b);
	if (c)
		return c;
	c = strcmp(x->lock, y->lock);
	if (c)
		return c;
	if (x->lock_pid != y->lock_pid)
		return x->lock_pid < y->lock_pid ? -1 : 1;
	if (x->holder_pid != y->holder_pid)
		return x->holder_pid < y->holder_pid ? -1 : 1;
	if (x->holder_tid != y->holder_tid)
		return x->holder_tid < y->holder_tid ? -1 : 1;
	c = strcmp(x->holder_mode, y->holder_mode);
	return c ? c : strcmp(x->holder_op, y->holder_op);
}

size_t mm_lock_rows_merge(struct mm_snap_lock *rows, size_t n, bool by_caller)
{
	int (*cmp)(const void *, const void *) = by_caller ? cmp_caller : cmp_identity;
	size_t out = 0;

	if (!n)
		return 0;
	qsort(rows, n, sizeof(*rows), cmp);
	for (size_t i = 0; i < n; i++) {
		if (out && !cmp(&rows[out - 1], &rows[i])) {
			mm_lock_row_add(&rows[out - 1], &rows[i]);
			continue;
		}
		if (out != i)
			rows[out] = rows[i];
		if (by_caller) {
			rows[out].pid = -1;
			rows[out].start_ms = 0;
			rows[out].comm[0] = '\0';
			rows[out].lock[0] = '\0';
			rows[out].lock_pid = -1;
			rows[out].holder_pid = rows[out].holder_tid = -1;
			rows[out].holder_comm[0] = '\0';
			rows[out].holder_mode[0] = '\0';
			rows[out].holder_op[0] = '\0';
		}
		out++;
	}
	mm_lock_rows_sort(rows, out);
	return out;
}

int mm_lock_rows_append(struct mm_snap_lock **rows, size_t *n, const struct mm_snap_lock *add,
			size_t nadd)
{
	if (!nadd)
		return 0;
	struct mm_snap_lock *r = realloc(*rows, (*n + nadd) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	memcpy(r + *n, add, nadd * sizeof(*r));
	*rows = r;
	*n = mm_lock_rows_merge(r, *n + nadd, false);
	return 0;
}

/* perf lock's total, max and avg wait columns of @r (32 bytes each). */
static void perf_times(const struct mm_snap_lock *r, char *total, char *max, char *avg)
{
	mm_locktable_time(total, 32, r->wait_ns, 12);
	mm_locktable_time(max, 32, r->max_ns, 12);
	mm_locktable_time(avg, 32, r->contended ? r->wait_ns / r->contended : 0, 12);
}

static void print_perf(FILE *out, const struct mm_snap_lock *rows, size_t n)
{
	char total[32], max[32], avg[32];

	fprintf(out, "%10s %12s %12s %12s   %10s   %s\n\n", "contended", "total wait", "max wait",
		"avg wait", "type", "caller");
	for (size_t i = 0; i < n; i++) {
		const struct mm_snap_lock *r = &rows[i];
		perf_times(r, total, max, avg);
		fprintf(out, "%10" PRIu64 " %s %s %s   %10s   %s\n", r->contended, total, max, avg,
			r->type, r->caller);
	}
}

/* Seed 004's table: whole milliseconds (truncated) except the average. */
static void print_seed(FILE *out, const struct mm_snap_lock *rows, size_t n)
{
	fprintf(out, "%13s%13s%16s%13s%13s%7s  %s\n", "max_dur(ms)", "min_dur(ms)",
		"max-min(dur)ms", "avg_dur(ms)", "sum_dur(ms)", "count", "blocked_function");
	for (size_t i = 0; i < n; i++) {
		const struct mm_snap_lock *r = &rows[i];
		double avg = r->contended ? (double)r->wait_ns / (double)r->contended / 1e6 : 0;
		fprintf(out,
			"%13" PRIu64 "%13" PRIu64 "%16" PRIu64 "%13.6f%13" PRIu64 "%7" PRIu64
			"  %s\n",
			r->max_ns / 1000000, r->min_ns / 1000000, (r->max_ns - r->min_ns) / 1000000,
			avg, r->wait_ns / 1000000, r->contended, r->caller);
	}
}

void mm_locktable_print(FILE *out, const struct mm_snap_lock *rows, size_t n, bool seed_table)
{
	struct mm_snap_lock *merged = n ? malloc(n * sizeof(*merged)) : NULL;
	size_t m = 0;

	if (merged) {
		memcpy(merged, rows, n * sizeof(*merged));
		m = mm_lock_rows_merge(merged, n, true);
		rows = merged;
		n = m;
	} else if (n) {
		log_warning("out of memory merging lock rows; printing them unmerged");
	}
	if (seed_table)
		print_seed(out, rows, n);
	else
		print_perf(out, rows, n);
	free(merged);
}

/* A column of the detail and holder tables (mmlockd's own layouts, not perf's): its header, what
 * it shows of a row, and when it leaves a table too wide (0: never; else the lowest goes first). */
enum lt_field {
	LT_CONTENDED,
	LT_WAITS,
	LT_TOTAL,
	LT_MAX,
	LT_MIN,
	LT_AVG,
	LT_P99,
	LT_TYPE,
	LT_PID,
	LT_COMM,
	LT_LOCK,
	LT_MODE,
	LT_HOLDER,
	LT_HOLDER_COMM,
	LT_CALLER,
	LT_OP,
};

struct lt_col {
	enum lt_field f;
	const char *head;
	int drop; /* 0: kept; 1 leaves first */
};

static bool lt_is_time(enum lt_field f)
{
	return f >= LT_TOTAL && f <= LT_P99;
}

static uint64_t lt_ns(const struct mm_snap_lock *r, enum lt_field f)
{
	switch (f) {
	case LT_TOTAL:
		return r->wait_ns;
	case LT_MAX:
		return r->max_ns;
	case LT_MIN:
		return r->min_ns;
	case LT_AVG:
		return r->contended ? r->wait_ns / r->contended : 0;
	default:
		return mm_lock_row_quantile(r, 0.99);
	}
}

/* The unit of a time column: the largest of s, ms, us in which its largest value is at least 1,
 * else ns. Returns the nanoseconds per unit and its name in @ret_name. */
static double lt_unit(const struct mm_snap_lock *rows, size_t n, enum lt_field f,
		      const char **ret_name)
{
	static const struct {
		double ns;
		const char *name;
	} units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
	uint64_t max = 0;
	for (size_t i = 0; i < n; i++)
		if (lt_ns(&rows[i], f) > max)
			max = lt_ns(&rows[i], f);
	size_t u = 0;
	while (u + 1 < sizeof(units) / sizeof(units[0]) && (double)max < units[u].ns)
		u++;
	*ret_name = units[u].name;
	return units[u].ns;
}

/* The cell of column @c for @r (@unit_ns: the time column's unit). */
static void lt_cell(char *buf, size_t len, const struct mm_snap_lock *r, enum lt_field f,
		    double unit_ns)
{
	if (lt_is_time(f)) {
		snprintf(buf, len, unit_ns > 1 ? "%.2f" : "%.0f", (double)lt_ns(r, f) / unit_ns);
		return;
	}
	switch (f) {
	case LT_CONTENDED:
	case LT_WAITS:
		snprintf(buf, len, "%" PRIu64, r->contended);
		break;
	case LT_TYPE:
		snprintf(buf, len, "%s", r->type);
		break;
	case LT_PID:
		snprintf(buf, len, "%" PRId32, r->pid);
		break;
	case LT_COMM:
		snprintf(buf, len, "%s", r->comm[0] ? r->comm : "-");
		break;
	case LT_LOCK:
		if (r->lock_pid >= 0)
			snprintf(buf, len, "%s[%" PRId32 "]", r->lock, r->lock_pid);
		else
			snprintf(buf, len, "%s", r->lock);
		break;
	case LT_MODE:
		snprintf(buf, len, "%s", r->holder_mode[0] ? r->holder_mode : "-");
		break;
	case LT_HOLDER:
		if (r->holder_pid >= 0)
			snprintf(buf, len, "%" PRId32, r->holder_pid);
		else
			snprintf(buf, len, "-");
		break;
	case LT_HOLDER_COMM:
		snprintf(buf, len, "%s", r->holder_comm[0] ? r->holder_comm : "-");
		break;
	case LT_CALLER:
		snprintf(buf, len, "%s", r->caller);
		break;
	default: /* LT_OP */
		snprintf(buf, len, "%s%s", r->holder_op[0] ? r->holder_op : "-",
			 r->lock_pid >= 0 && r->lock_pid != r->pid ? " (another process's mm)"
								   : "");
		break;
	}
}

#define LT_CELL 160

/* Prints @rows in the columns @cols (@ncols): a time column in one unit, named in its header
 * ("total wait ms"); numbers right-aligned, text left-aligned, the last column unpadded; columns
 * left out, lowest drop rank first, until a line fits @width (0: every column), and named in a
 * '#' line. */
static void lt_print(FILE *out, const struct mm_snap_lock *rows, size_t n,
		     const struct lt_col *cols, size_t ncols, unsigned width)
{
	char heads[16][48], cell[LT_CELL], left[16 * 50] = "";
	double unit[16];
	int w[16];
	bool on[16];
	for (size_t k = 0; k < ncols; k++) {
		const char *name = "";
		unit[k] = lt_is_time(cols[k].f) ? lt_unit(rows, n, cols[k].f, &name) : 0;
		snprintf(heads[k], sizeof(heads[k]), "%s%s%s", cols[k].head, name[0] ? " " : "",
			 name);
		w[k] = (int)strlen(heads[k]);
		on[k] = true;
		for (size_t i = 0; i < n; i++) {
			lt_cell(cell, sizeof(cell), &rows[i], cols[k].f, unit[k]);
			if ((int)strlen(cell) > w[k])
				w[k] = (int)strlen(cell);
		}
	}
	for (int rank = 1; width; rank++) {
		int line = 0, any = 0;
		for (size_t k = 0; k < ncols; k++)
			line += on[k] ? w[k] + 2 : 0;
		if (line - 2 <= (int)width)
			break;
		for (size_t k = 0; k < ncols; k++) {
			if (cols[k].drop != rank)
				continue;
			on[k] = false;
			any = 1;
			snprintf(left + strlen(left), sizeof(left) - strlen(left), "%s%s",
				 left[0] ? ", " : "", cols[k].head);
		}
		if (!any && rank > (int)ncols)
			break;
	}
	if (left[0])
		fprintf(out, "# left out (--wide shows them): %s\n#\n", left);
	for (size_t i = 0; i <= n; i++) {
		size_t last = 0;
		for (size_t k = 0; k < ncols; k++)
			last = on[k] ? k : last;
		for (size_t k = 0; k < ncols; k++) {
			if (!on[k])
				continue;
			bool text = !lt_is_time(cols[k].f) && cols[k].f != LT_CONTENDED &&
				    cols[k].f != LT_WAITS && cols[k].f != LT_PID &&
				    cols[k].f != LT_HOLDER;
			if (i)
				lt_cell(cell, sizeof(cell), &rows[i - 1], cols[k].f, unit[k]);
			const char *v = i ? cell : heads[k];
			if (k == last)
				fprintf(out, "%s\n", v);
			else
				fprintf(out, text ? "%-*s  " : "%*s  ", w[k], v);
		}
	}
}

void mm_locktable_print_detail(FILE *out, const struct mm_snap_lock *rows, size_t n, unsigned width)
{
	static const struct lt_col cols[] = {
		{LT_CONTENDED, "contended", 0}, {LT_TOTAL, "total wait", 0},
		{LT_MAX, "max wait", 4},	{LT_MIN, "min wait", 1},
		{LT_AVG, "avg wait", 3},	{LT_P99, "p99 wait", 2},
		{LT_TYPE, "type", 6},		{LT_PID, "pid", 0},
		{LT_COMM, "comm", 0},		{LT_LOCK, "lock", 5},
		{LT_CALLER, "caller", 0},
	};
	struct mm_snap_lock *sorted = n ? malloc(n * sizeof(*sorted)) : NULL;

	if (sorted) {
		memcpy(sorted, rows, n * sizeof(*sorted));
		mm_lock_rows_sort(sorted, n);
		rows = sorted;
	}
	lt_print(out, rows, n, cols, sizeof(cols) / sizeof(cols[0]), width);
	free(sorted);
}

size_t mm_lock_rows_by_holder(struct mm_snap_lock *rows, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(rows[i].lock, "mmap_lock"))
			continue;
		struct mm_snap_lock *r = &rows[o++];
		*r = rows[i];
		r->type[0] = r->caller[0] = '\0';
		r->holder_tid = -1;
	}
	return mm_lock_rows_merge(rows, o, false);
}

void mm_locktable_print_holders(FILE *out, const struct mm_snap_lock *rows, size_t n,
				unsigned width)
{
	static const struct lt_col cols[] = {
		{LT_WAITS, "waits", 0},
		{LT_TOTAL, "total wait", 0},
		{LT_MAX, "max wait", 1},
		{LT_AVG, "avg wait", 2},
		{LT_PID, "pid", 0},
		{LT_COMM, "comm", 0},
		{LT_MODE, "mode", 0},
		{LT_HOLDER, "holder", 0},
		{LT_HOLDER_COMM, "holder comm", 3},
		{LT_OP, "op", 0},
	};
	lt_print(out, rows, n, cols, sizeof(cols) / sizeof(cols[0]), width);
}

void mm_lock_hist_format(const struct mm_hist *h, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (unsigned i = 0; i < MM_HIST_BUCKETS && used < len; i++) {
		if (!h->bucket[i])
			continue;
		int w = snprintf(buf + used, len - used, "%s%u:%" PRIu64, used ? " " : "", i,
				 h->bucket[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
}

int mm_lock_hist_parse(const char *s, struct mm_hist *ret)
{
	memset(ret, 0, sizeof(*ret));
	while (*s) {
		char *end;
		if (*s == ' ') {
			s++;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -EINVAL;
		unsigned long b = strtoul(s, &end, 10);
		if (*end != ':' || b >= MM_HIST_BUCKETS || end[1] < '0' || end[1] > '9')
			return -EINVAL;
		s = end + 1;
		unsigned long long c = strtoull(s, &end, 10);
		if (*end && *end != ' ')
			return -EINVAL;
		ret->bucket[b] += c;
		s = end;
	}
	return 0;
}
