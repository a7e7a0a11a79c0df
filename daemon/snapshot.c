/*
 * Snapshot allocation, reference counting and the one published pointer (see snapshot.h).
 */
#include "snapshot.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"

const char *mm_snapshot_name(struct mm_snapshot *s, const char *path)
{
	if (!s->names) {
		struct mm_names *n = malloc(sizeof(*n));
		if (!n || mm_names_init(n) < 0) {
			free(n);
			return NULL;
		}
		s->names = n;
	}
	return mm_names_ref(s->names, path);
}

const struct mm_proc_counts mm_snap_no_window;

struct mm_shared_counts *mm_shared_counts_new(size_t n)
{
	struct mm_shared_counts *c = calloc(1, sizeof(*c) + n * sizeof(c->counts[0]));
	if (c)
		c->refs = 1;
	return c;
}

struct mm_shared_counts *mm_shared_counts_ref(struct mm_shared_counts *c)
{
	if (c)
		__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	return c;
}

void mm_shared_counts_unref(struct mm_shared_counts *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(c);
}

bool mm_shared_counts_alone(const struct mm_shared_counts *c)
{
	return __atomic_load_n(&c->refs, __ATOMIC_ACQUIRE) == 1;
}

struct mm_snapshot *mm_snapshot_new(size_t nprocs, size_t nglobals, size_t nevents,
				    size_t ncollectors)
{
	struct mm_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->refs = 1;
	pthread_mutex_init(&s->complete_lock, NULL);
	s->procs = calloc(nprocs ? nprocs : 1, sizeof(*s->procs));
	s->windows = calloc(nprocs ? nprocs : 1, sizeof(*s->windows));
	s->sums = mm_shared_counts_new(nprocs ? nprocs : 1);
	s->globals = calloc(nglobals ? nglobals : 1, sizeof(*s->globals));
	s->events = calloc(nevents ? nevents : 1, sizeof(*s->events));
	s->collectors = calloc(ncollectors ? ncollectors : 1, sizeof(*s->collectors));
	if (!s->procs || !s->windows || !s->sums || !s->globals || !s->events || !s->collectors) {
		mm_snapshot_unref(s);
		return NULL;
	}
	for (size_t i = 0; i < nprocs; i++) {
		s->procs[i].cgroup = "";
		s->procs[i].window = &s->windows[i];
		s->procs[i].total = &mm_snap_no_window;
	}
	s->nprocs = nprocs;
	s->nglobals = nglobals;
	s->nevents = nevents;
	s->ncollectors = ncollectors;
	return s;
}

const struct mm_hist *mm_snap_proc_hist(const struct mm_snap_proc *p, bool total, unsigned i)
{
	return mm_hist_set_get(p->hists[total], i);
}

const struct mm_proc_hists *mm_snap_proc_hists(const struct mm_snap_proc *p, bool total,
					       struct mm_proc_hists *buf)
{
	return mm_hist_set_expand(p->hists[total], buf);
}

bool mm_snap_proc_idle(const struct mm_snap_proc *p)
{
	return mm_counts_is_zero(p->window) && !p->hists[0];
}

void mm_snap_proc_add_window(struct mm_proc_stats *dst, const struct mm_snap_proc *p)
{
	mm_counts_add(mm_stats_counts(dst), p->window);
	mm_hist_set_add_to(mm_stats_hists(dst), p->hists[0]);
}

/* Frees row @p's histograms and drops its reference to its total. */
static void drop_row(struct mm_snap_proc *p)
{
	free(p->hists[0]);
	free(p->hists[1]);
	mm_shared_counts_unref(p->held);
}

struct mm_snapshot *mm_snapshot_ref(struct mm_snapshot *s)
{
	if (s)
		__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
	return s;
}

void mm_snapshot_unref(struct mm_snapshot *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; s->procs && i < s->nprocs; i++)
		drop_row(&s->procs[i]);
	free(s->procs);
	free(s->windows);
	mm_shared_counts_unref(s->sums);
	free(s->globals);
	free(s->events);
	free(s->collectors);
	free(s->locks);
	free(s->lock_callers);
	free(s->cgroups);
	mm_snapshot_unref(s->base);
	if (s->names)
		mm_names_free(s->names);
	free(s->names);
	pthread_mutex_destroy(&s->complete_lock);
	free(s);
}

void mm_snapshot_set_locks(struct mm_snapshot *s, struct mm_snap_lock *locks, size_t nlocks,
			   struct mm_snap_lock *callers, size_t ncallers)
{
	free(s->locks);
	free(s->lock_callers);
	s->locks = locks;
	s->nlocks = locks ? nlocks : 0;
	s->lock_callers = callers;
	s->nlock_callers = callers ? ncallers : 0;
}

void mm_snapshot_set_cgroups(struct mm_snapshot *s, struct mm_snap_cgroup *cgroups, size_t n)
{
	free(s->cgroups);
	s->cgroups = cgroups;
	s->ncgroups = cgroups ? n : 0;
}

static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mm_snapshot *current;

/* A row's place in the order: its activity (computed once, not at every comparison) and pid. */
struct order {
	uint64_t activity;
	int32_t pid;
	uint32_t row;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->activity != y->activity)
		return x->activity > y->activity ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

int mm_snapshot_sort_rows(struct mm_snap_proc *rows, size_t n)
{
	if (n < 2)
		return 0;
	struct order *o = malloc(n * sizeof(*o));
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct order){mm_stats_activity(rows[i].total), rows[i].pid, (uint32_t)i};
	qsort(o, n, sizeof(*o), cmp_order);
	/* Row o[i].row goes to place i: follow each cycle of the permutation with one row aside,
	 * so every row moves once (o[i].row is set to i once place i holds its row). */
	for (size_t i = 0; i < n; i++) {
		if (o[i].row == i)
			continue;
		struct mm_snap_proc aside = rows[i];
		size_t j = i;
		while (o[j].row != i) {
			size_t from = o[j].row;
			rows[j] = rows[from];
			o[j].row = (uint32_t)j;
			j = from;
		}
		rows[j] = aside;
		o[j].row = (uint32_t)j;
	}
	free(o);
	return 0;
}

/* A process's identity: pid and start. */
struct ident {
	int32_t pid;
	uint64_t start_ms;
};

static int cmp_ident(const void *a, const void *b)
{
	const struct ident *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

/* @b's row as it stands in a window where it counted nothing: its total, an empty window. */
static int idle_row(struct mm_snapshot *s, struct mm_snap_proc *dst, const struct mm_snap_proc *b)
{
	*dst = *b;
	dst->window = &mm_snap_no_window;
	dst->hists[0] = dst->hists[1] = NULL;
	/* The base's copy goes with the base: the row points to @s's own. */
	if (!(dst->cgroup = mm_snapshot_name(s, b->cgroup)) ||
	    mm_hist_set_dup(&dst->hists[1], b->hists[1]) < 0)
		return -ENOMEM;
	/* Its total is shared, not copied: a reference of its own, the base's goes with it. */
	mm_shared_counts_ref(dst->held);
	return 0;
}

/* Each cgroup's running processes among the rows, as mm_cgtable_fill counts them. */
static void count_cgroup_processes(struct mm_snapshot *s)
{
	struct mm_snap_cgroup *other = NULL;
	for (size_t k = 0; k < s->ncgroups; k++) {
		s->cgroups[k].processes = 0;
		if (s->cgroups[k].other)
			other = &s->cgroups[k];
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct mm_snap_proc *p = &s->procs[i];
		if (p->exited)
			continue;
		struct mm_snap_cgroup *c = other;
		for (size_t k = 0; k < s->ncgroups; k++) {
			if (!s->cgroups[k].other && !strcmp(s->cgroups[k].cgroup, p->cgroup)) {
				c = &s->cgroups[k];
				break;
			}
		}
		if (c)
			c->processes++;
	}
}

static int complete_locked(struct mm_snapshot *s)
{
	const struct mm_snapshot *b = s->base;
	/* The processes in the window, by identity, to leave their base rows out. */
	struct ident *active = malloc((s->nprocs ? s->nprocs : 1) * sizeof(*active));
	struct mm_snap_proc *rows = malloc((s->nprocs + b->nprocs + 1) * sizeof(*rows));
	if (!active || !rows) {
		free(active);
		free(rows);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nprocs; i++)
		active[i] = (struct ident){s->procs[i].pid, s->procs[i].start_ms};
	qsort(active, s->nprocs, sizeof(*active), cmp_ident);
	memcpy(rows, s->procs, s->nprocs * sizeof(*rows));
	size_t n = s->nprocs;
	int r = 0;
	for (size_t i = 0; i < b->nprocs && r == 0; i++) {
		const struct mm_snap_proc *p = &b->procs[i];
		struct ident id = {p->pid, p->start_ms};
		if (p->exited || bsearch(&id, active, s->nprocs, sizeof(*active), cmp_ident))
			continue; /* exited: gone from the table when that window closed */
		r = idle_row(s, &rows[n], p);
		n += r == 0;
	}
	free(active);
	if (r < 0) {
		for (size_t i = s->nprocs; i < n; i++)
			drop_row(&rows[i]);
		free(rows);
		return r;
	}
	mm_snapshot_sort_rows(rows, n); /* out of memory: unsorted, still every row */
	free(s->procs);			/* the rows' histograms and counts moved to rows */
	s->procs = rows;
	s->nprocs = n;
	count_cgroup_processes(s);
	mm_snapshot_unref(s->base);
	s->base = NULL;
	return 0;
}

int mm_snapshot_complete(struct mm_snapshot *s)
{
	int r = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->complete_lock);
	if (s->base)
		r = complete_locked(s);
	pthread_mutex_unlock(&s->complete_lock);
	return r;
}

struct mm_snapshot *mm_snapshot_latest(void)
{
	pthread_mutex_lock(&current_lock);
	struct mm_snapshot *s = mm_snapshot_ref(current);
	pthread_mutex_unlock(&current_lock);
	return s;
}

struct mm_snapshot *mm_snapshot_current(void)
{
	pthread_mutex_lock(&current_lock);
	struct mm_snapshot *s = mm_snapshot_ref(current);
	pthread_mutex_unlock(&current_lock);
	if (s && mm_snapshot_complete(s) < 0)
		log_warning("out of memory completing a snapshot: it shows only the processes "
			    "active in the open window");
	return s;
}

void mm_snapshot_publish(struct mm_snapshot *s)
{
	pthread_mutex_lock(&current_lock);
	struct mm_snapshot *old = current;
	current = s;
	pthread_mutex_unlock(&current_lock);
	mm_snapshot_unref(old);
}

const struct mm_snap_proc *mm_snapshot_find(const struct mm_snapshot *s, int32_t pid)
{
	const struct mm_snap_proc *found = NULL;
	for (size_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pid != pid)
			continue;
		if (!s->procs[i].exited)
			return &s->procs[i];
		if (!found)
			found = &s->procs[i];
	}
	return found;
}

const char *mm_collector_state_name(enum mm_collector_state st)
{
	switch (st) {
	case MM_COLLECTOR_RUNNING:
		return "running";
	case MM_COLLECTOR_DISABLED:
		return "disabled";
	case MM_COLLECTOR_FAILED:
		return "failed";
	}
	return "unknown";
}
