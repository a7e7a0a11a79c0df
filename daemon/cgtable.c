/*
 * The per-unit breakdown of /metrics (see cgtable.h). Pure code.
 *
 * Slots are kept sorted by cgroup path, so each process of a snapshot finds its slot by binary
 * search; with the default 20 slots and a few thousand processes a snapshot costs well under a
 * millisecond. Candidates for free slots are gathered at a window's close only, from that
 * window's processes: one pointer per process, sorted by path to sum per cgroup, then by
 * activity.
 */
#include "cgtable.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	char cgroup[MM_CGROUP_LEN];
	struct mm_proc_stats closed; /* closed windows since the slot was given */
	uint64_t last_active_ms;     /* end of the last window with activity */
};

struct mm_cgtable {
	struct slot *slots; /* sorted by cgroup */
	unsigned n, cap;
	struct mm_proc_stats other; /* closed windows of processes without a slot */
};

struct candidate {
	const char *cgroup;
	uint64_t activity;
};

struct mm_cgtable *mm_cgtable_new(unsigned slots)
{
	struct mm_cgtable *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (mm_cgtable_set_slots(t, slots) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

void mm_cgtable_free(struct mm_cgtable *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static int cmp_slot_name(const void *a, const void *b)
{
	return strcmp(((const struct slot *)a)->cgroup, ((const struct slot *)b)->cgroup);
}

static int cmp_slot_busy(const void *a, const void *b)
{
	uint64_t x = mm_stats_activity(&((const struct slot *)a)->closed);
	uint64_t y = mm_stats_activity(&((const struct slot *)b)->closed);
	return x == y ? cmp_slot_name(a, b) : x > y ? -1 : 1;
}

int mm_cgtable_set_slots(struct mm_cgtable *t, unsigned slots)
{
	if (slots > t->cap || !t->slots) {
		struct slot *v = realloc(t->slots, (slots ? slots : 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->slots = v;
	}
	if (t->n > slots) {
		qsort(t->slots, t->n, sizeof(*t->slots), cmp_slot_busy);
		t->n = slots;
		qsort(t->slots, t->n, sizeof(*t->slots), cmp_slot_name);
	}
	t->cap = slots;
	return 0;
}

/* The slot of @cgroup, or -1 (also for "", a process whose cgroup is unknown). */
static int find(const struct mm_cgtable *t, const char *cgroup)
{
	unsigned lo = 0, hi = t->n;
	if (!cgroup[0])
		return -1;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c = strcmp(cgroup, t->slots[mid].cgroup);
		if (!c)
			return (int)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static int cmp_cg_busy(const void *a, const void *b)
{
	const struct mm_snap_cgroup *x = a, *y = b;
	uint64_t ax = mm_stats_activity(&x->total), ay = mm_stats_activity(&y->total);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return strcmp(x->cgroup, y->cgroup);
}

int mm_cgtable_fill(struct mm_cgtable *t, struct mm_snapshot *s)
{
	struct mm_snap_cgroup *cg = calloc(t->n + 1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	for (unsigned i = 0; i < t->n; i++) {
		memcpy(cg[i].cgroup, t->slots[i].cgroup, sizeof(cg[i].cgroup));
		cg[i].total = t->slots[i].closed;
	}
	struct mm_snap_cgroup *other = &cg[t->n];
	memcpy(other->cgroup, "other", sizeof("other"));
	other->other = true;
	other->total = t->other;
	for (size_t k = 0; k < s->nprocs; k++) {
		const struct mm_snap_proc *p = &s->procs[k];
		int i = find(t, p->cgroup);
		struct mm_snap_cgroup *c = i < 0 ? other : &cg[i];
		mm_snap_proc_add_window(&c->total, p);
		c->processes += !p->exited;
	}
	qsort(cg, t->n, sizeof(*cg), cmp_cg_busy);
	mm_snapshot_set_cgroups(s, cg, t->n + 1);
	return 0;
}

static int cmp_cand_name(const void *a, const void *b)
{
	return strcmp(((const struct candidate *)a)->cgroup, ((const struct candidate *)b)->cgroup);
}

static int cmp_cand_busy(const void *a, const void *b)
{
	const struct candidate *x = a, *y = b;
	if (x->activity != y->activity)
		return x->activity > y->activity ? -1 : 1;
	return strcmp(x->cgroup, y->cgroup);
}

/* The slot to give to a newcomer: a free one, else the one idle longest if it has been idle for
 * MM_CGTABLE_LINGER_MS; -1 when none. */
static int slot_for_newcomer(struct mm_cgtable *t, uint64_t now_ms)
{
	int idlest = -1;
	if (t->n < t->cap)
		return (int)t->n++;
	for (unsigned i = 0; i < t->n; i++)
		if (idlest < 0 || t->slots[i].last_active_ms < t->slots[idlest].last_active_ms)
			idlest = (int)i;
	if (idlest >= 0 && now_ms - t->slots[idlest].last_active_ms >= MM_CGTABLE_LINGER_MS)
		return idlest;
	return -1;
}

int mm_cgtable_close(struct mm_cgtable *t, const struct mm_snapshot *s)
{
	struct candidate *cand = malloc((s->nprocs ? s->nprocs : 1) * sizeof(*cand));
	size_t ncand = 0;

	/* Fold the window first: a cgroup given a slot below counts from the next window on, so
	 * "other" keeps what it showed for it and never goes down. */
	for (size_t k = 0; k < s->nprocs; k++) {
		const struct mm_snap_proc *p = &s->procs[k];
		uint64_t act = mm_stats_activity(p->window);
		int i = find(t, p->cgroup);
		if (i >= 0) {
			mm_snap_proc_add_window(&t->slots[i].closed, p);
			if (act)
				t->slots[i].last_active_ms = s->window_end_ms;
			continue;
		}
		mm_snap_proc_add_window(&t->other, p);
		if (act && p->cgroup[0] && cand)
			cand[ncand++] = (struct candidate){p->cgroup, act};
	}
	if (!cand)
		return -ENOMEM;

	/* One candidate per cgroup, busiest first. */
	qsort(cand, ncand, sizeof(*cand), cmp_cand_name);
	size_t m = 0;
	for (size_t k = 0; k < ncand; k++) {
		if (m && !strcmp(cand[m - 1].cgroup, cand[k].cgroup))
			cand[m - 1].activity += cand[k].activity;
		else
			cand[m++] = cand[k];
	}
	qsort(cand, m, sizeof(*cand), cmp_cand_busy);

	bool changed = false;
	for (size_t k = 0; k < m; k++) {
		int i = slot_for_newcomer(t, s->window_end_ms);
		if (i < 0)
			break;
		struct slot *sl = &t->slots[i];
		memset(sl, 0, sizeof(*sl));
		strncpy(sl->cgroup, cand[k].cgroup, sizeof(sl->cgroup) - 1);
		sl->last_active_ms = s->window_end_ms;
		changed = true;
	}
	if (changed)
		qsort(t->slots, t->n, sizeof(*t->slots), cmp_slot_name);
	free(cand);
	return 0;
}
