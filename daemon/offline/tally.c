/*
 * Run totals and their table (see tally.h).
 */
#include "tally.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

struct row {
	int32_t pid;
	uint64_t start_ms;
	char comm[MM_COMM_LEN];
	struct mm_proc_stats s;
};

struct ev {
	char name[128];
	uint64_t samples, lost;
};

struct mm_tally {
	struct row *rows;
	size_t n, cap;
	struct ev *evs;
	size_t nev;
};

struct mm_tally *mm_tally_new(void)
{
	return calloc(1, sizeof(struct mm_tally));
}

void mm_tally_free(struct mm_tally *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->evs);
	free(t);
}

int mm_tally_add(struct mm_tally *t, const struct mm_snapshot *w)
{
	for (size_t i = 0; i < w->nprocs; i++) {
		const struct mm_snap_proc *p = &w->procs[i];
		if (mm_snap_proc_idle(p))
			continue;
		struct row *r = NULL;
		for (size_t k = 0; k < t->n; k++)
			if (t->rows[k].pid == p->pid && t->rows[k].start_ms == p->start_ms)
				r = &t->rows[k];
		if (!r) {
			if (mm_grow((void **)&t->rows, &t->cap, t->n + 1, sizeof(*t->rows), 64) < 0)
				return -ENOMEM;
			r = &t->rows[t->n++];
			memset(r, 0, sizeof(*r));
			r->pid = p->pid;
			r->start_ms = p->start_ms;
		}
		memcpy(r->comm, p->comm, sizeof(r->comm)); /* the latest name */
		mm_snap_proc_add_window(&r->s, p);
	}
	for (size_t i = 0; i < w->nevents; i++) {
		struct ev *e = NULL;
		for (size_t k = 0; k < t->nev; k++)
			if (!strcmp(t->evs[k].name, w->events[i].name))
				e = &t->evs[k];
		if (!e) {
			struct ev *n = realloc(t->evs, (t->nev + 1) * sizeof(*n));
			if (!n)
				return -ENOMEM;
			t->evs = n;
			e = &t->evs[t->nev++];
			memset(e, 0, sizeof(*e));
			snprintf(e->name, sizeof(e->name), "%s", w->events[i].name);
		}
		e->samples += w->events[i].window_samples;
		e->lost += w->events[i].window_lost;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->s.faults != y->s.faults)
		return x->s.faults > y->s.faults ? -1 : 1;
	uint64_t ax = x->s.mmap_lock_read + x->s.mmap_lock_write;
	uint64_t ay = y->s.mmap_lock_read + y->s.mmap_lock_write;
	if (ax != ay)
		return ax > ay ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

void mm_tally_print(const struct mm_tally *t, FILE *out)
{
	struct row *rows = malloc((t->n ? t->n : 1) * sizeof(*rows));
	if (!rows)
		return;
	if (t->n) /* t->rows is NULL before the first process */
		memcpy(rows, t->rows, t->n * sizeof(*rows));
	qsort(rows, t->n, sizeof(*rows), cmp_row);

	fprintf(out, "%-8s %-16s %10s %10s %9s %10s %10s %12s %9s %10s %10s %10s %12s %9s\n", "pid",
		"comm", "faults", "vma", "vma_retry", "mmap_retry", "mmap_abort", "mmap_unknown",
		"fallback", "lock_retry", "mmap_read", "mmap_write", "wait_us", "contended");
	for (size_t i = 0; i < t->n; i++) {
		const struct mm_proc_stats *s = &rows[i].s;
		fprintf(out,
			"%-8d %-16s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %10" PRIu64
			" %10" PRIu64 " %12" PRIu64 " %9" PRIu64 " %10" PRIu64 " %10" PRIu64
			" %10" PRIu64 " %12" PRIu64 " %9" PRIu64 "\n",
			rows[i].pid, rows[i].comm, s->faults, s->faults_vma, s->faults_vma_retry,
			s->faults_mmap_retry, s->faults_mmap_abort, s->faults_mmap_unknown,
			s->faults_mmap_fallback, s->faults_mmap_lock_retries, s->mmap_lock_read,
			s->mmap_lock_write, s->mmap_lock_wait_ns / 1000, s->mmap_lock_contended);
	}
	fprintf(out, "\nmmap_lock acquisitions by source:\n");
	for (size_t i = 0; i < t->n; i++) {
		fprintf(out, "%-8d %-16s", rows[i].pid, rows[i].comm);
		bool any = false;
		for (size_t f = 0; f < mm_proc_nfields; f++) {
			const char *name = mm_proc_fields[f].name;
			uint64_t v = mm_field_get(&rows[i].s, &mm_proc_fields[f]);
			if (strncmp(name, "mmap_lock_by_", 13) || !v)
				continue;
			fprintf(out, " %s=%" PRIu64, name + 13, v);
			any = true;
		}
		fprintf(out, any ? "\n" : " -\n");
	}
	fprintf(out, "\nevents:\n");
	for (size_t i = 0; i < t->nev; i++)
		fprintf(out, "%-44s samples %12" PRIu64 " lost %8" PRIu64 "\n", t->evs[i].name,
			t->evs[i].samples, t->evs[i].lost);
	free(rows);
}
