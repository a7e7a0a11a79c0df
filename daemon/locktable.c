/*
 * Lock contention tables (see locktable.h). The perf layout follows what `perf lock contention`
 * 6.1 prints: each numeric column right-aligned in its width (contended 10, times 12) followed by
 * one space, then the type right-aligned in 10 after two spaces and the caller after three. Times
 * are shown as perf shows them, including its single-precision division, so the same nanoseconds
 * print the same digits in both tools.
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

void mm_locktable_print_detail(FILE *out, const struct mm_snap_lock *rows, size_t n)
{
	char total[32], max[32], min[32], avg[32], p99[32], lock[MM_LOCK_NAME_LEN + 16];
	struct mm_snap_lock *sorted = n ? malloc(n * sizeof(*sorted)) : NULL;

	if (sorted) {
		memcpy(sorted, rows, n * sizeof(*sorted));
		mm_lock_rows_sort(sorted, n);
		rows = sorted;
	}
	fprintf(out, "%10s %12s %12s %12s %12s %12s   %10s %8s  %-16s %-24s  %s\n\n", "contended",
		"total wait", "max wait", "min wait", "avg wait", "p99 wait", "type", "pid", "comm",
		"lock", "caller");
	for (size_t i = 0; i < n; i++) {
		const struct mm_snap_lock *r = &rows[i];
		mm_locktable_time(total, sizeof(total), r->wait_ns, 12);
		mm_locktable_time(max, sizeof(max), r->max_ns, 12);
		mm_locktable_time(min, sizeof(min), r->min_ns, 12);
		mm_locktable_time(avg, sizeof(avg), r->contended ? r->wait_ns / r->contended : 0,
				  12);
		mm_locktable_time(p99, sizeof(p99), mm_lock_row_quantile(r, 0.99), 12);
		if (r->lock_pid >= 0)
			snprintf(lock, sizeof(lock), "%s[%" PRId32 "]", r->lock, r->lock_pid);
		else
			snprintf(lock, sizeof(lock), "%s", r->lock);
		fprintf(out, "%10" PRIu64 " %s %s %s %s %s   %10s %8" PRId32 "  %-16s %-24s  %s\n",
			r->contended, total, max, min, avg, p99, r->type, r->pid,
			r->comm[0] ? r->comm : "-", lock, r->caller);
	}
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

void mm_locktable_print_holders(FILE *out, const struct mm_snap_lock *rows, size_t n)
{
	char total[32], max[32], avg[32], holder[16];

	fprintf(out, "%10s %12s %12s %12s %8s  %-16s %-8s %8s  %-16s %s\n\n", "waits", "total wait",
		"max wait", "avg wait", "pid", "comm", "mode", "holder", "holder comm", "op");
	for (size_t i = 0; i < n; i++) {
		const struct mm_snap_lock *r = &rows[i];
		perf_times(r, total, max, avg);
		if (r->holder_pid >= 0)
			snprintf(holder, sizeof(holder), "%" PRId32, r->holder_pid);
		else
			snprintf(holder, sizeof(holder), "-");
		fprintf(out, "%10" PRIu64 " %s %s %s %8" PRId32 "  %-16s %-8s %8s  %-16s %s%s\n",
			r->contended, total, max, avg, r->pid, r->comm[0] ? r->comm : "-",
			r->holder_mode[0] ? r->holder_mode : "-", holder,
			r->holder_comm[0] ? r->holder_comm : "-",
			r->holder_op[0] ? r->holder_op : "-",
			r->lock_pid >= 0 && r->lock_pid != r->pid ? " (another process's mm)" : "");
	}
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
