/*
 * fallbacks: per-process page-fault fallbacks to mmap_lock, cheaply enough for the default
 * configuration (no event per user fault, no callchain, no event from mmap_lock's writers).
 * Beside them the faults taken in kernel mode on user memory (exceptions:page_fault_kernel,
 * kernel_mode_faults), which take the fallback's lock too on x86 but are no user fault's
 * fallback: the fault split subtracts them (plugins/split.h).
 *
 * Every fault that falls back from the per-VMA lock (and, on x86, every fault taken in kernel
 * mode on user memory) takes mmap_lock for read in lock_mm_and_find_vma(). On 6.18 each attempt
 * there traces mmap_lock_start_locking(read) first, the trylock included, so a fallback is
 *   start, acquired                    (uncontended)
 *   start, acquired(failed), start, acquired   (the trylock failed; it slept for the lock)
 * The collector samples start_locking filtered in the kernel to write == 0, and
 * acquire_returned filtered to write == 0 && success == 0 (failed attempts only), without
 * callchains, and attributes each start by its IP: the code that fired the tracepoint, which is
 * lock_mm_and_find_vma itself where the kernel inlines the trace call there (6.18 on the
 * development machine: the function lives in mm/mmap_lock.c next to the trace helpers). Per
 * thread:
 *   a start at that site not right after a failed attempt -> fallback_locks += 1
 *   a failed attempt right after a start at the site      -> fallback_lock_waits += 1 (it found
 *                                   the lock taken and waits; the retry's start is skipped)
 * (a failed attempt by its thread's last start, not its IP: every attempt traces its start, and
 * a start elsewhere clears the thread's).
 * Successful acquisitions are not sampled: munmap's mmap_write_downgrade() traces one per call
 * while it holds the lock for write, and sampling those cost ~10% of the swap-in workload's
 * throughput (bench, first rounds). So the default has no wait times: the faults and mmaplock
 * collectors (opt-in) time every wait. A fault retried under mmap_lock calls
 * lock_mm_and_find_vma again and counts twice (the faults collector counts those retries).
 *
 * Kernels that reach the tracepoint through the out-of-line helper __mmap_lock_do_trace_*
 * (6.12, for example: lock_mm_and_find_vma in mm/memory.c) give every read lock the helper's IP,
 * and kernels whose trylock traces no start_locking cannot be counted this way either. Read locks
 * through the helper are normal (system calls take them on every kernel) and are counted in
 * mmlockd_fallbacks_events_total{name="unattributed"}; the collector's state says the kernel
 * cannot be read when the first HELPER_VERDICT of them come with none at lock_mm_and_find_vma,
 * or when a failed trylock there has no start before it. --collectors faults (callchains,
 * costly) gives the fallbacks on such kernels. The same happens whenever a second probe (a BPF
 * program) is attached to the tracepoint: perf's IP is then __traceiter_*'s, which calls both;
 * the collector says so at the first such sample. The BPF source (daemon/bpfsource.c) finds the
 * site in a short stack instead and is not affected.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/counters.h"
#include "plugin.h"
#include "tidmap.h"

struct thread {
	bool started; /* a start at the site, not yet followed by a failed attempt */
	bool failed;  /* the last attempt failed: the next start is its retry */
	bool waited;  /* the fallback in progress has counted its wait */
};

enum site { SITE_UNKNOWN, SITE_FALLBACK, SITE_HELPER, SITE_ITER, SITE_OTHER };

#define IP_CACHE 256

struct state {
	/* first, for mm_tidmap_state_*(): threads inside lock_mm_and_find_vma */
	struct mm_tidmap *threads;
	const struct tep_format_field *start_write, *acq[2]; /* acq: write, success */
	const struct tep_format_field *kfault_address;	     /* page_fault_kernel's, or NULL */
	struct {
		uint64_t ip;
		uint8_t site;
	} cache[IP_CACHE]; /* IP -> site: a handful of call sites fire these tracepoints */
	bool noted, noted_trylock, noted_iter;
	uint64_t n_site, n_helper; /* samples at lock_mm_and_find_vma, at the helper */
	int g_bad_field, g_threads_dropped, g_unattributed;
};

#define MAX_THREADS (1u << 20)
/* Read locks through the helper with none at lock_mm_and_find_vma before saying this kernel
 * cannot be read: on a kernel that inlines, process start-up alone (kernel-mode faults of exec)
 * puts samples there long before. */
#define HELPER_VERDICT 1000

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
	else if (!strncmp(sym, "__traceiter_", 12))
		site = SITE_ITER;
	if (site != SITE_UNKNOWN) {
		st->cache[i].ip = ip;
		st->cache[i].site = (uint8_t)site;
	}
	return site;
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = mm_tidmap_state_new(sizeof(*st), sizeof(struct thread), MAX_THREADS);
	if (!st)
		return mm_host_fail(h, "out of memory");
	static const char *const write[] = {"write", NULL}, *const acq[] = {"write", "success",
									    NULL};
	if (!mm_host_fields(h, "mmap_lock", "mmap_lock_start_locking", write, &st->start_write) ||
	    !mm_host_fields(h, "mmap_lock", "mmap_lock_acquire_returned", acq, st->acq)) {
		mm_tidmap_state_free(st);
		return mm_host_fail(h, "mmap_lock tracepoints lack the fields write, success");
	}
	static const char *const address[] = {"address", NULL};
	mm_host_fields(h, "exceptions", "page_fault_kernel", address, &st->kfault_address);
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

static void unattributed(struct state *st, struct mm_host *h, bool *noted, const char *why)
{
	mm_host_global_add(h, st->g_unattributed, 1);
	if (!*noted) {
		*noted = true;
		mm_host_note(h,
			     "%s: fault fallbacks cannot be counted without callchains (use the "
			     "faults collector)",
			     why);
	}
}

/* The thread of a read lock taken at the fault fallback site (lock_mm_and_find_vma); NULL for
 * a lock taken elsewhere (counted when it cannot be told apart) or when the table is full. */
static struct thread *at_fallback(struct state *st, struct mm_host *h, const struct mm_sample *s)
{
	enum site site = classify(st, h, s->ip);
	if (site != SITE_FALLBACK) {
		/* System calls' read locks go through the helper on every kernel; where the fault
		 * path does too, no sample ever names lock_mm_and_find_vma. */
		if (site == SITE_HELPER && ++st->n_helper >= HELPER_VERDICT && !st->n_site)
			unattributed(
				st, h, &st->noted,
				"none of the first read locks came from lock_mm_and_find_vma, "
				"all through the out-of-line trace helper: this kernel does not "
				"inline the trace call there");
		else if (site == SITE_ITER)
			unattributed(
				st, h, &st->noted_iter,
				"another probe (a BPF program: another mmlockd on the BPF "
				"source, bpftrace) is attached to the mmap_lock tracepoints, so "
				"samples carry the tracepoint iterator's IP");
		else if (site == SITE_HELPER || site == SITE_UNKNOWN)
			mm_host_global_add(h, st->g_unattributed, 1);
		return NULL;
	}
	st->n_site++;
	struct thread *t = mm_tidmap_get(st->threads, s->tid, true);
	if (!t)
		mm_host_global_add(h, st->g_threads_dropped, 1);
	return t;
}

/* The streams are unfiltered when another collector wants every event: check the fields. */
static void on_start(void *vst, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = vst;
	uint64_t write;
	if (!mm_field_read_counted(h, st->g_bad_field, st->start_write, s, &write) || write)
		return;
	struct thread *t = at_fallback(st, h, s);
	if (!t) {
		/* A read start elsewhere: the thread's next failed attempt is not a fallback's. */
		struct thread *o = mm_tidmap_get(st->threads, s->tid, false);
		if (o)
			o->started = o->failed = false;
		return;
	}
	if (!t->failed) {
		mm_host_proc(h, s->pid)->fallback_locks++;
		t->waited = false;
	}
	t->failed = false;
	t->started = true;
}

static void on_acquired(void *vst, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = vst;
	uint64_t write, success;
	if (!mm_field_read_counted(h, st->g_bad_field, st->acq[0], s, &write) || write ||
	    !mm_field_read_counted(h, st->g_bad_field, st->acq[1], s, &success) || success)
		return;
	/* A failed attempt is the fallback's when the thread's last read start was at the site
	 * (every attempt traces its start first, and every read start is sampled): its own IP is
	 * not needed, which another probe on this tracepoint would hide (the iterator's). */
	struct thread *t = mm_tidmap_get(st->threads, s->tid, false);
	if (!t || !t->started) {
		if (classify(st, h, s->ip) == SITE_FALLBACK) {
			/* A failed trylock at the site with no start before it. */
			unattributed(st, h, &st->noted_trylock,
				     "this kernel's mmap_read_trylock traces no start_locking");
			if (t)
				mm_tidmap_remove(st->threads, s->tid);
		}
		return;
	}
	if (!t->waited)
		mm_host_proc(h, s->pid)->fallback_lock_waits++;
	t->waited = true;
	t->started = false;
	t->failed = true;
}

/* A fault in kernel mode on user memory (the filter; checked again, as the stream may be shared
 * unfiltered): counted on its own, as fallback_locks counts it too (stats.h). */
static void on_kernel_fault(void *vst, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = vst;
	uint64_t address;
	if (!st->kfault_address ||
	    !mm_field_read_counted(h, st->g_bad_field, st->kfault_address, s, &address) ||
	    address >= MM_USER_ADDRESS_END)
		return;
	mm_host_proc(h, s->pid)->kernel_mode_faults++;
}

static const struct mm_tp_req tracepoints[] = {
	{.system = "mmap_lock",
	 .name = "mmap_lock_start_locking",
	 .handler = on_start,
	 .filter = "write == 0"},
	{.system = "mmap_lock",
	 .name = "mmap_lock_acquire_returned",
	 .handler = on_acquired,
	 .filter = "write == 0 && success == 0"},
	/* x86 only; without it kernel_mode_faults stays 0 and the split's fallback side keeps
	 * them (plugins/split.h). */
	{.system = "exceptions",
	 .name = "page_fault_kernel",
	 .handler = on_kernel_fault,
	 .filter = "address < " MM_USER_ADDRESS_END_TEXT,
	 .optional = true},
	{0},
};

/* On the BPF source: the fallback site's frame found in the start's short stack. */
static const char *const bpf_programs[] = {"on_start", "on_acquired", "on_switch",
					   "on_kernel_fault", NULL};

static const struct mm_bpf_text bpf_sites[] = {
	{.var = "sites",
	 .index = MM_BPF_SITE_FALLBACK,
	 .function = "lock_mm_and_find_vma",
	 .required = true},
	/* Text a read start's first frame may lie in when the site is further up. */
	{.var = "trace_text",
	 .index = MM_BPF_TRACE_HELPER,
	 .function = "__mmap_lock_do_trace_start_locking"},
	{.var = "trace_text",
	 .index = MM_BPF_TRACE_ITER,
	 .function = "__traceiter_mmap_lock_start_locking"},
	{.var = "trace_text",
	 .index = MM_BPF_TRACE_CAREFULLY,
	 .function = "get_mmap_lock_carefully"},
	{0},
};

static const struct mm_bpf_field bpf_fields[] = {
	MM_BPF_FIELD(fallback_locks),
	MM_BPF_FIELD(fallback_lock_waits),
	MM_BPF_FIELD(kernel_mode_faults),
	{0},
};

/* Alone it stays on the perf rings under source = auto: the same run could not tell the two
 * apart (0.945 / 0.973 / 0.922 perf, 0.938 / 0.895 / 0.977 BPF on swapin / filemap / mix,
 * bench/results/split-bpf-20261202.md). With mmaplock or faults on BPF it follows them (one
 * source, shared programs). */
static const struct mm_plugin_bpf bpf = {
	.enable = "count_fallbacks",
	.programs = bpf_programs,
	.sites = bpf_sites,
	.fields = bpf_fields,
	.follows = true,
};

const struct mm_plugin mm_plugin_fallbacks = {
	.name = "fallbacks",
	.description = "per-process page-fault fallbacks to mmap_lock and how many found it taken "
		       "(cheap: filtered read-lock events attributed by IP, no callchains)",
	.by_default = true,
	.usage = "faults that fell back to mmap_lock and\n"
		 "how many found it taken (filtered\n"
		 "read-lock events)",
	.tracepoints = tracepoints,
	.init = init,
	.thread_exit = mm_tidmap_state_forget,
	.free = mm_tidmap_state_free,
	.bpf = &bpf,
};
