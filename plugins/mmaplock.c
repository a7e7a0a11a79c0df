/*
 * mmaplock: per-process page faults and mmap_lock acquisitions.
 *
 * Counts, per process (the thread group of the task that fired the event):
 *   faults                  exceptions:page_fault_user
 *   mmap_lock_read/_write   mmap_lock_acquire_returned with success, by mode. A write-lock
 *                           downgrade (mmap_write_downgrade) is traced as a read acquisition and
 *                           ends the write hold.
 *   mmap_lock_trylock_fail  mmap_lock_acquire_returned without success (failed trylock, or a
 *                           killable wait interrupted)
 *   mmap_lock_waits/_wait_ns/hist  start_locking -> acquire_returned of the same thread (only
 *                           blocking acquisitions trace start_locking; trylocks do not)
 *   mmap_lock_write_hold_ns acquire_returned(write) -> released(write) or downgrade, per mm:
 *                           fork holds the parent's and the child's mmap_lock for write at once
 *   mmap_lock_contended     a lock:contention_begin on a sleeping rwsem (flags READ or WRITE
 *                           without SPIN) between start_locking and acquire_returned of the same
 *                           thread: nothing but the mmap_lock's own rwsem sleeps there.
 * Pairing is per thread and needs the events in time order across CPUs, which the host
 * guarantees. Events that cannot be paired (a release of a write lock taken before mmlockd
 * started, a lost record in between) are counted as globals, never guessed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/counters.h"
#include "plugin.h"
#include "tidmap.h"

#define MAX_HELD 4

struct thread {
	bool waiting;	/* between start_locking and acquire_returned */
	bool contended; /* a rwsem contention was seen in that wait */
	uint64_t wait_start_ns;
	uint64_t wait_mm;
	unsigned nheld; /* mmap_locks held for write (fork nests two) */
	struct {
		uint64_t mm, since_ns;
	} held[MAX_HELD];
};

/* Fields of the mmap_lock events: mm, write, and success on acquire_returned only. */
enum { F_MM, F_WRITE, F_SUCCESS };

struct state {
	/* first, for mm_tidmap_state_*(): threads with a pending wait or write hold */
	struct mm_tidmap *threads;
	const struct mm_tp *contention;
	const struct tep_format_field *start[2], *acq[3], *rel[2], *cb_flags[1];
	int g_unmatched_acquire, g_unmatched_release, g_bad_field, g_threads_dropped, g_too_nested;
};

#define MAX_THREADS (1u << 20)

/* The thread's state, created when @create; NULL when absent or when the table is full. */
static struct thread *get_thread(struct state *st, struct mm_host *h, uint32_t tid, bool create)
{
	struct thread *t = mm_tidmap_get(st->threads, tid, create);
	if (!t && create)
		mm_host_global_add(h, st->g_threads_dropped, 1);
	return t;
}

static void maybe_drop(struct state *st, uint32_t tid, struct thread *t)
{
	if (!t->waiting && !t->nheld)
		mm_tidmap_remove(st->threads, tid);
}

/* Ends the write hold of @mm by @t at @time_ns, adding it to @ps. Returns false if @t did not
 * hold @mm for write. */
static bool end_hold(struct thread *t, uint64_t mm, uint64_t time_ns, struct mm_proc_stats *ps)
{
	for (unsigned i = 0; i < t->nheld; i++) {
		if (t->held[i].mm != mm)
			continue;
		if (time_ns >= t->held[i].since_ns)
			ps->mmap_lock_write_hold_ns += time_ns - t->held[i].since_ns;
		t->held[i] = t->held[--t->nheld];
		return true;
	}
	return false;
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = mm_tidmap_state_new(sizeof(*st), sizeof(struct thread), MAX_THREADS);
	if (!st)
		return mm_host_fail(h, "out of memory");
	static const char *const mm_write[] = {"mm", "write", NULL};
	static const char *const mm_write_success[] = {"mm", "write", "success", NULL};
	static const char *const flags[] = {"flags", NULL};
	if (!mm_host_fields(h, "mmap_lock", "mmap_lock_start_locking", mm_write, st->start) ||
	    !mm_host_fields(h, "mmap_lock", "mmap_lock_acquire_returned", mm_write_success,
			    st->acq) ||
	    !mm_host_fields(h, "mmap_lock", "mmap_lock_released", mm_write, st->rel)) {
		mm_tidmap_state_free(st);
		return mm_host_fail(h, "mmap_lock tracepoints lack the fields mm/write/success "
				       "(unsupported kernel version)");
	}
	st->contention = mm_host_fields(h, "lock", "contention_begin", flags, st->cb_flags);

	st->g_unmatched_acquire = mm_host_global(h, "mmaplock_unmatched", "acquire_without_start",
						 "Events the mmaplock collector could not pair.");
	st->g_unmatched_release =
		mm_host_global(h, "mmaplock_unmatched", "write_release_without_acquire", NULL);
	st->g_bad_field = mm_host_global(h, "mmaplock_unmatched", "short_record", NULL);
	st->g_threads_dropped = mm_host_global(h, "mmaplock_unmatched", "threads_dropped", NULL);
	st->g_too_nested = mm_host_global(h, "mmaplock_unmatched", "write_holds_too_nested", NULL);
	*ret_state = st;
	return 0;
}

static void on_fault(void *state, struct mm_host *h, const struct mm_sample *s)
{
	mm_host_proc(h, s->pid)->faults++;
}

static void on_start(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write;
	if (!mm_field_read_counted(h, st->g_bad_field, st->start[F_MM], s, &mm) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->start[F_WRITE], s, &write))
		return;
	struct thread *t = get_thread(st, h, s->tid, true);
	if (!t)
		return;
	t->waiting = true;
	t->contended = false;
	t->wait_start_ns = s->time_ns;
	t->wait_mm = mm;
}

static void on_acquired(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write, success;
	if (!mm_field_read_counted(h, st->g_bad_field, st->acq[F_MM], s, &mm) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->acq[F_WRITE], s, &write) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->acq[F_SUCCESS], s, &success))
		return;
	struct mm_proc_stats *ps = mm_host_proc(h, s->pid);
	if (!success)
		ps->mmap_lock_trylock_fail++;
	else if (write)
		ps->mmap_lock_write++;
	else
		ps->mmap_lock_read++;

	struct thread *t = get_thread(st, h, s->tid, success && write);
	if (!t)
		return;
	if (t->waiting) {
		if (t->wait_mm == mm && s->time_ns >= t->wait_start_ns) {
			uint64_t wait = s->time_ns - t->wait_start_ns;
			ps->mmap_lock_waits++;
			ps->mmap_lock_wait_ns += wait;
			mm_hist_add(&ps->mmap_lock_wait_hist, wait);
			if (t->contended)
				ps->mmap_lock_contended++;
		} else {
			mm_host_global_add(h, st->g_unmatched_acquire, 1);
		}
		t->waiting = false;
	}
	if (!write && success)
		end_hold(t, mm, s->time_ns, ps); /* mmap_write_downgrade(): the hold ends here */
	if (write && success) {
		if (t->nheld < MAX_HELD)
			t->held[t->nheld++] = (typeof(t->held[0])){mm, s->time_ns};
		else
			mm_host_global_add(h, st->g_too_nested, 1);
	}
	maybe_drop(st, s->tid, t);
}

static void on_released(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write;
	if (!mm_field_read_counted(h, st->g_bad_field, st->rel[F_MM], s, &mm) ||
	    !mm_field_read_counted(h, st->g_bad_field, st->rel[F_WRITE], s, &write))
		return;
	if (!write)
		return;
	struct thread *t = get_thread(st, h, s->tid, false);
	if (!t || !end_hold(t, mm, s->time_ns, mm_host_proc(h, s->pid))) {
		mm_host_global_add(h, st->g_unmatched_release, 1);
		return;
	}
	maybe_drop(st, s->tid, t);
}

static void on_contention(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	struct thread *t = st->contention ? get_thread(st, h, s->tid, false) : NULL;
	if (!t || !t->waiting)
		return;
	uint64_t flags;
	if (!mm_field_read_counted(h, st->g_bad_field, st->cb_flags[0], s, &flags))
		return;
	if ((flags & (LCB_F_READ | LCB_F_WRITE)) && !(flags & LCB_F_SPIN))
		t->contended = true;
}

static const struct mm_tp_req tracepoints[] = {
	{.system = "exceptions", .name = "page_fault_user", .handler = on_fault},
	{.system = "mmap_lock", .name = "mmap_lock_start_locking", .handler = on_start},
	{.system = "mmap_lock", .name = "mmap_lock_acquire_returned", .handler = on_acquired},
	{.system = "mmap_lock", .name = "mmap_lock_released", .handler = on_released},
	{.system = "lock", .name = "contention_begin", .handler = on_contention, .optional = true},
	{0},
};

/* On the BPF source: the same counters, kept per thread in the kernel (counters.bpf.c). */
static const char *const bpf_programs[] = {
	"on_fault", "on_start", "on_acquired", "on_released", "on_contention", "on_switch", NULL,
};

static const struct mm_bpf_field bpf_fields[] = {
	MM_BPF_FIELD(faults),
	MM_BPF_FIELD(mmap_lock_read),
	MM_BPF_FIELD(mmap_lock_write),
	MM_BPF_FIELD(mmap_lock_trylock_fail),
	MM_BPF_FIELD(mmap_lock_waits),
	MM_BPF_FIELD(mmap_lock_wait_ns),
	MM_BPF_FIELD(mmap_lock_write_hold_ns),
	MM_BPF_FIELD(mmap_lock_contended),
	MM_BPF_FIELD(mmap_lock_wait_hist),
	MM_BPF_FIELD(fault_ns_vma_hist),
	MM_BPF_FIELD(fault_ns_mmap_hist),
	{0},
};

static const struct mm_plugin_bpf bpf = {
	.enable = "count_mmaplock",
	.programs = bpf_programs,
	.fields = bpf_fields,
	.latency = true,
};

const struct mm_plugin mm_plugin_mmaplock = {
	.name = "mmaplock",
	.description =
		"per-process page faults and mmap_lock acquisitions, waits, holds, contention",
	.by_default = false,
	.usage = "every mmap_lock acquisition, wait, hold",
	.tracepoints = tracepoints,
	.init = init,
	.thread_exit = mm_tidmap_state_forget,
	.free = mm_tidmap_state_free,
	.bpf = &bpf,
};
