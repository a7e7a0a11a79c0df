/*
 * Snapshot allocation, reference counting and the one published pointer (see snapshot.h).
 */
#include "snapshot.h"

#include <pthread.h>
#include <stdlib.h>

struct mm_snapshot *mm_snapshot_new(size_t nprocs, size_t nglobals, size_t nevents,
				    size_t ncollectors)
{
	struct mm_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->refs = 1;
	s->procs = calloc(nprocs ? nprocs : 1, sizeof(*s->procs));
	s->globals = calloc(nglobals ? nglobals : 1, sizeof(*s->globals));
	s->events = calloc(nevents ? nevents : 1, sizeof(*s->events));
	s->collectors = calloc(ncollectors ? ncollectors : 1, sizeof(*s->collectors));
	if (!s->procs || !s->globals || !s->events || !s->collectors) {
		mm_snapshot_unref(s);
		return NULL;
	}
	s->nprocs = nprocs;
	s->nglobals = nglobals;
	s->nevents = nevents;
	s->ncollectors = ncollectors;
	return s;
}

const struct mm_proc_hists *mm_snap_proc_hists(const struct mm_snap_proc *p, bool total)
{
	static const struct mm_proc_hists none;
	return p->hists ? &p->hists[total] : &none;
}

bool mm_snap_proc_idle(const struct mm_snap_proc *p)
{
	return mm_counts_is_zero(&p->window) && (!p->hists || mm_hists_is_zero(&p->hists[0]));
}

void mm_snap_proc_add_window(struct mm_proc_stats *dst, const struct mm_snap_proc *p)
{
	mm_counts_add(mm_stats_counts(dst), &p->window);
	if (p->hists)
		mm_hists_add(mm_stats_hists(dst), &p->hists[0]);
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
		free(s->procs[i].hists);
	free(s->procs);
	free(s->globals);
	free(s->events);
	free(s->collectors);
	free(s->locks);
	free(s->lock_callers);
	free(s->cgroups);
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

struct mm_snapshot *mm_snapshot_current(void)
{
	pthread_mutex_lock(&current_lock);
	struct mm_snapshot *s = mm_snapshot_ref(current);
	pthread_mutex_unlock(&current_lock);
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
