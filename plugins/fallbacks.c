/*
 * fallbacks: per-process page-fault fallbacks to mmap_lock and their wait, cheaply enough for
 * the default configuration (no per-fault event, no callchain, one tracepoint).
 *
 * Every fault that falls back from the per-VMA lock (and, on x86, every fault taken in kernel
 * mode on user memory) takes mmap_lock for read in lock_mm_and_find_vma(). The collector samples
 * mmap_lock_acquire_returned filtered in the kernel to write == 0, without callchains, and
 * attributes each sample by its IP: the code that fired the tracepoint. Where the kernel inlines
 * the trace call into lock_mm_and_find_vma (Linux 6.18 on the development machine: the function
 * lives in mm/mmap_lock.c next to the trace helpers) the IP names it, and per thread
 *   acquire_returned(read, success) there          -> fallback_locks += 1
 *   the same after acquire_returned(read, !success) -> fallback_lock_waits += 1 and
 *                                                     fallback_lock_wait_ns += the time between
 * The first attempt is a trylock (6.12's mmap_read_trylock, 6.18's likewise); when it fails the
 * fault sleeps in mmap_read_lock_killable() until the lock is its: the failed attempt marks the
 * start of the wait within a microsecond. An uncontended fallback costs one sample. (start_locking
 * is not sampled: on 6.18 it fires before every attempt, trylocks included, doubling the samples
 * for no information the failed attempt does not give.) A fault retried under mmap_lock calls
 * lock_mm_and_find_vma again and counts twice (the faults collector counts those retries).
 *
 * Kernels that reach the tracepoint through the out-of-line helper __mmap_lock_do_trace_*
 * (6.12, for example: lock_mm_and_find_vma in mm/memory.c) give every read lock the helper's IP,
 * so nothing can be attributed without a callchain: such samples are counted in
 * mmlockd_fallbacks_events_total{name="unattributed"}, the collector says so in its state, and
 * --collectors faults (callchains, costly) gives the fallbacks instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "tidmap.h"

struct thread {
	uint64_t failed_at; /* a failed attempt of the fallback in progress */
};

enum site { SITE_UNKNOWN, SITE_FALLBACK, SITE_HELPER, SITE_OTHER };

#define IP_CACHE 256

struct state {
	const struct mm_tp *acquired;
	const struct tep_format_field *acq_write, *acq_success;
	struct {
		uint64_t ip;
		uint8_t site;
	} cache[IP_CACHE]; /* IP -> site: a handful of call sites fire these tracepoints */
	bool noted;
	int g_bad_field, g_threads_dropped, g_unattributed;
	struct mm_tidmap *threads; /* threads waiting in lock_mm_and_find_vma after a failure */
};

#define MAX_THREADS (1u << 20)

static const struct mm_tp_req tracepoints[] = {
	{"mmap_lock", "mmap_lock_acquire_returned", false, false, "write == 0"},
	{NULL, NULL, false, false, NULL},
};

static bool read_field(struct state *st, struct mm_host *h, const struct tep_format_field *f,
		       const struct mm_sample *s, uint64_t *v)
{
	if (mm_field_read(f, s, v) == 0)
		return true;
	mm_host_global_add(h, st->g_bad_field, 1);
	return false;
}

static enum site classify(struct state *st, struct mm_host *h, uint64_t ip)
{
	unsigned i = (unsigned)((ip * 0x9e3779b97f4a7c15ull) >> 56) % IP_CACHE;
	if (st->cache[i].ip == ip && st->cache[i].site != SITE_UNKNOWN)
		return (enum site)st->cache[i].site;
	const char *sym = ip ? mm_host_symbol(h, ip, NULL) : NULL;
	enum site site = SITE_OTHER;
	if (!sym)
		site = SITE_UNKNOWN;
	else if (!strcmp(sym, "lock_mm_and_find_vma") || !strcmp(sym, "get_mmap_lock_carefully"))
		site = SITE_FALLBACK;
	else if (!strncmp(sym, "__mmap_lock_do_trace_", 21))
		site = SITE_HELPER;
	if (site != SITE_UNKNOWN) {
		st->cache[i].ip = ip;
		st->cache[i].site = (uint8_t)site;
	}
	return site;
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	st->threads = mm_tidmap_new(sizeof(struct thread), MAX_THREADS);
	if (!st->threads) {
		free(st);
		return mm_host_fail(h, "out of memory");
	}
	st->acquired = mm_host_tp(h, "mmap_lock", "mmap_lock_acquire_returned");
	st->acq_write = mm_tp_field(st->acquired, "write");
	st->acq_success = mm_tp_field(st->acquired, "success");
	if (!st->acq_write || !st->acq_success) {
		mm_tidmap_free(st->threads);
		free(st);
		return mm_host_fail(h, "mmap_lock tracepoints lack the fields write, success");
	}
	st->g_bad_field = mm_host_global(h, "fallbacks_events", "bad_field",
					 "fallbacks collector: events that could not be decoded");
	st->g_threads_dropped =
		mm_host_global(h, "fallbacks_events", "threads_dropped",
			       "fallbacks collector: per-thread states refused (table full)");
	st->g_unattributed = mm_host_global(
		h, "fallbacks_events", "unattributed",
		"fallbacks collector: read locks fired from the out-of-line trace helper or from "
		"an unknown address (no callchain to tell a fault fallback from a system call)");
	*ret_state = st;
	return 0;
}

static void sample(void *vst, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = vst;
	uint64_t write, success;
	if (s->tp != st->acquired || !read_field(st, h, st->acq_write, s, &write) || write)
		return;
	enum site site = classify(st, h, s->ip);
	if (site != SITE_FALLBACK) {
		if (site == SITE_HELPER || site == SITE_UNKNOWN) {
			mm_host_global_add(h, st->g_unattributed, 1);
			if (!st->noted && site == SITE_HELPER) {
				st->noted = true;
				mm_host_note(h,
					     "this kernel fires mmap_lock tracepoints from an "
					     "out-of-line helper: fault fallbacks cannot be told "
					     "apart without callchains (use the faults collector)");
			}
		}
		return;
	}
	if (!read_field(st, h, st->acq_success, s, &success))
		return;
	struct thread *t = mm_tidmap_get(st->threads, s->tid, !success);
	if (!success) {
		/* The wait starts at the first failed attempt. */
		if (!t)
			mm_host_global_add(h, st->g_threads_dropped, 1);
		else if (!t->failed_at)
			t->failed_at = s->time_ns ? s->time_ns : 1;
		return;
	}
	struct mm_proc_stats *ps = mm_host_proc(h, s->pid);
	ps->fallback_locks++;
	if (t) {
		ps->fallback_lock_waits++;
		if (s->time_ns >= t->failed_at)
			ps->fallback_lock_wait_ns += s->time_ns - t->failed_at;
		mm_tidmap_remove(st->threads, s->tid);
	}
}

static void thread_exit(void *vst, struct mm_host *h, uint32_t pid, uint32_t tid)
{
	struct state *st = vst;
	mm_tidmap_remove(st->threads, tid);
}

static void free_state(void *vst)
{
	struct state *st = vst;
	if (!st)
		return;
	mm_tidmap_free(st->threads);
	free(st);
}

const struct mm_plugin mm_plugin_fallbacks = {
	.name = "fallbacks",
	.description = "per-process page-fault fallbacks to mmap_lock and their wait (cheap: one "
		       "filtered tracepoint, attributed by IP, no callchains)",
	.tracepoints = tracepoints,
	.init = init,
	.sample = sample,
	.thread_exit = thread_exit,
	.free = free_state,
};
