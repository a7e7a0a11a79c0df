/*
 * contention: a lock contention profile that agrees with `perf lock contention`, kept per window.
 *
 * lock:contention_begin and lock:contention_end are paired per thread and lock address, the way
 * perf lock (tools/perf/builtin-lock.c, tracepoint mode) does: a begin opens a wait, the end of the
 * same thread on the same address closes it, and a second begin on an address the thread already
 * waits for is ignored (a mutex traces one begin for its optimistic spin and another when it goes
 * to sleep: the first counts). Waits on different addresses nest freely (an rwsem's wait and a
 * contention on its wait_lock, a spinlock taken in an interrupt). Where perf would silently pair
 * across a lost record, the sequence is checked instead: a begin on an address the thread waits for
 * that is not the mutex spin-then-sleep pattern, or a begin of a sleeping lock while the thread
 * already sleeps on another, means an end was lost; the old wait is dropped and counted, never
 * guessed. Ends without a begin are counted too. Idle tasks (tid 0) run on every CPU at once, so
 * their waits are paired per CPU.
 *
 * Each wait is keyed by (process, type, caller, lock) and aggregated per window: count, summed,
 * longest and shortest wait, log2 histogram. A wait belongs to the window in which it ends, so
 * count and wait time always go together (perf counts a contention at its begin even when its end
 * never comes; those are counted here as contention_unmatched{name="begin_without_end"}).
 *   type    from the begin's flags, with perf's names (spinlock, rwlock:R/W, rwsem:R/W, mutex,
 *           rtmutex, rwlock-rt:R/W, pcpu-sem:R/W, semaphore; "unknown" otherwise).
 *   caller  the first kernel frame of the begin's callchain, among the first STACK_DEPTH frames
 *           (perf lock record samples 8), whose function is not a lock or scheduler function,
 *           printed as perf prints it ("sym+0xoff"). This is `perf lock contention --stack-skip 0`;
 *           perf's default (--stack-skip 3) also skips the first 3 frames whatever they are,
 *           which on 6.18 names the caller's caller (__x64_sys_mprotect, not do_mprotect_pkey,
 *           for an rwsem wait in down_write_killable).
 *   lock    "mmap_lock" with the process that owns the mm when the address is an mmap_lock; else a
 *           static lock's kernel symbol; else the address.
 * mmap_lock is recognised from the mmap_lock events (optional): an rwsem contention of a thread
 * between its mmap_lock_start_locking(mm) and mmap_lock_acquire_returned is on mm's mmap_lock,
 * which teaches offsetof(struct mm_struct, mmap_lock) (constant for a kernel) so that contentions
 * of other threads on mm + offset are named too. The owner of an mm is the process that last took
 * it for write (mmap, munmap, mprotect, brk are the owner's own syscalls), else the first that took
 * it at all; remote readers (/proc/PID/maps) never override a writer.
 *
 * "Lock and scheduler functions" are those perf finds between __sched_text_start and
 * __lock_text_end. The host only maps addresses to symbols, and those section markers share their
 * address with the section's first function, so they cannot be seen that way: the functions are
 * listed by name below (checked against kernel 6.18's sections; see lock_function()).
 *
 * On the BPF source (mm_host_fed()) no record comes: plugins/bpf/counters.bpf.c pairs the waits in
 * the kernel by these same rules and the loader delivers each row's growth through the waits hook
 * (on_waits): pid, begin flags, lock (an mmap_lock already named by its owner: the waiter's own mm,
 * or an mm whose owner task points back at it) and the stack at the begin, whose tracing frames
 * (the BPF program, __bpf_trace_*, the iterator) are skipped before the STACK_DEPTH frames are
 * counted. Such a row is keyed, summed and named as a record's wait would be.
 *
 * Memory is bounded: per-thread state exists only while a thread waits, a window keeps at most
 * MAX_WINDOW_KEYS keys (then waits go to the process's (type, caller) row with lock "(other)",
 * and past twice that they are dropped and counted), call sites since start at most MAX_CALLERS.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "htab.h"
#include "locktable.h"
#include "faults.h"
#include "plugin.h"
#include "snapshot.h"
#include "tidmap.h"

/* LCB_F_* (plugin.h) are in the print fmt of lock:contention_begin too. */

#define STACK_DEPTH	    8 /* frames considered for the caller, as perf lock record samples */
#define MAX_PENDING	    4 /* waits one thread can have open at once (nested) */
#define MAX_THREADS	    (1u << 16) /* threads waiting at once */
#define MAX_WINDOW_KEYS	    4096
#define MAX_CALLERS	    16384
#define MAX_MMS		    65536
#define MAX_READERS	    4		/* read holds of one mm remembered at once (the latest) */
#define MAX_SNAP_CALLERS    256		/* call sites put in each snapshot (for /metrics) */
#define IP_CACHE	    4096	/* direct-mapped cache of frame classifications */
#define SRC_CACHE	    1024	/* direct-mapped cache of callchains' holder operations */
#define MMAP_LOCK_OFF_MAX   4096	/* plausible offsetof(struct mm_struct, mmap_lock) */
#define IDLE_TID	    0x80000000u /* tid 0 gets one pseudo-thread per CPU */
#define STATIC_LOCK_MAX_OFF 16384	/* a lock named "sym+off" lies at most this far in sym */

/* --- lock types --- */

static const struct {
	unsigned flags;
	const char *name;
} types[] = {
	{0, "unknown"}, /* index 0: flags not below */
	{LCB_F_SPIN, "spinlock"},
	{LCB_F_SPIN | LCB_F_READ, "rwlock:R"},
	{LCB_F_SPIN | LCB_F_WRITE, "rwlock:W"},
	{LCB_F_READ, "rwsem:R"},
	{LCB_F_WRITE, "rwsem:W"},
	{LCB_F_RT, "rtmutex"},
	{LCB_F_RT | LCB_F_READ, "rwlock-rt:R"},
	{LCB_F_RT | LCB_F_WRITE, "rwlock-rt:W"},
	{LCB_F_PERCPU | LCB_F_READ, "pcpu-sem:R"},
	{LCB_F_PERCPU | LCB_F_WRITE, "pcpu-sem:W"},
	{LCB_F_MUTEX, "mutex"},
	{LCB_F_MUTEX | LCB_F_SPIN, "mutex"}, /* optimistic spinning, then maybe a sleep */
	{0, "semaphore"},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static uint8_t type_of(unsigned flags)
{
	if (flags == 0)
		return NTYPES - 1; /* semaphore */
	for (uint8_t i = 1; i < NTYPES - 1; i++)
		if (types[i].flags == flags)
			return i;
	return 0;
}

/* --- lock and scheduler functions --- */

/* Functions the kernel puts in .sched.text (__sched) and .spinlock.text (__lockfunc), by name
 * without the compiler's ".constprop.0"-style suffixes: kernel 6.18's complete list, plus the
 * lockdep (*_nested) and PREEMPT_RT variants. Space-separated with a space at both ends, so
 * " name " finds a whole name. */
static const char lock_exact[] =
	/* scheduler */
	" __schedule schedule schedule_idle schedule_user schedule_preempt_disabled"
	" schedule_rtlock io_schedule io_schedule_timeout preempt_schedule"
	" preempt_schedule_notrace preempt_schedule_irq preempt_schedule_common __cond_resched"
	" yield yield_to console_conditional_schedule schedule_timeout"
	" schedule_timeout_interruptible schedule_timeout_killable"
	" schedule_timeout_uninterruptible schedule_timeout_idle schedule_hrtimeout"
	" schedule_hrtimeout_range schedule_hrtimeout_range_clock do_nanosleep"
	" hrtimer_nanosleep_restart usleep_range_state"
	/* wait_on_bit, completions */
	" __wait_on_bit __wait_on_bit_lock out_of_line_wait_on_bit out_of_line_wait_on_bit_lock"
	" out_of_line_wait_on_bit_timeout bit_wait bit_wait_io bit_wait_timeout __wait_for_common"
	" wait_for_common wait_for_completion wait_for_completion_io wait_for_completion_timeout"
	" wait_for_completion_io_timeout wait_for_completion_interruptible"
	" wait_for_completion_interruptible_timeout wait_for_completion_killable"
	" wait_for_completion_killable_timeout wait_for_completion_state"
	/* mutex */
	" mutex_lock mutex_lock_io mutex_lock_killable mutex_lock_interruptible mutex_lock_nested"
	" _mutex_lock_nest_lock mutex_lock_io_nested mutex_lock_killable_nested"
	" mutex_lock_interruptible_nested __mutex_lock __mutex_lock_common __mutex_lock_slowpath"
	" __mutex_lock_killable_slowpath __mutex_lock_interruptible_slowpath mutex_unlock"
	" __mutex_unlock_slowpath mutex_trylock ww_mutex_lock ww_mutex_lock_interruptible"
	" ww_mutex_unlock __ww_mutex_lock __ww_mutex_lock_slowpath"
	" __ww_mutex_lock_interruptible_slowpath"
	/* semaphore */
	" down down_interruptible down_killable down_timeout down_trylock up __down __down_common"
	" __down_interruptible __down_killable __down_timeout __up"
	/* rwsem, percpu-rwsem, tty ldsem */
	" down_read down_read_interruptible down_read_killable down_write down_write_killable"
	" down_read_nested down_read_killable_nested down_write_nested down_write_killable_nested"
	" _down_write_nest_lock down_read_non_owner rwsem_down_read_slowpath"
	" rwsem_down_write_slowpath percpu_down_write __percpu_down_read ldsem_down_read"
	" ldsem_down_write"
	/* rt_mutex (and PREEMPT_RT locks) */
	" __rt_mutex_init mark_wakeup_next_waiter try_to_take_rt_mutex remove_waiter"
	" task_blocks_on_rt_mutex __rt_mutex_futex_trylock __rt_mutex_futex_unlock"
	" __rt_mutex_start_proxy_lock rt_mutex_lock rt_mutex_lock_nested"
	" rt_mutex_lock_interruptible rt_mutex_lock_killable rt_mutex_trylock rt_mutex_unlock"
	" rt_mutex_slowlock rt_mutex_slowlock_block rt_mutex_slowunlock rt_mutex_adjust_prio_chain"
	" rt_mutex_adjust_pi rt_mutex_postunlock rt_mutex_futex_trylock rt_mutex_futex_unlock"
	" rt_mutex_init_proxy_locked rt_mutex_proxy_unlock rt_mutex_start_proxy_lock"
	" rt_mutex_wait_proxy_lock rt_mutex_cleanup_proxy_lock"
	/* .spinlock.text outside _raw_* */
	" queued_read_lock_slowpath queued_write_lock_slowpath .slowpath ";

static const char *const lock_prefix[] = {
	"_raw_", /* the spinlock/rwlock API (but not the scheduler's _raw_spin_rq_lock*) */
	"rt_spin_",
	"rt_read_",
	"rt_write_",
	"rtlock_",
	"rwbase_",
	"__rwbase_",
	"__raw_callee_save___pv_queued_spin_unlock",
	/* The tracepoint's own iterator: the chain starts in it when a second probe (a BPF
	 * program of the BPF source, say) is attached to lock:contention_begin beside perf's. */
	"__traceiter_",
};

static const char *const lock_suffix[] = {
	"queued_spin_lock_slowpath", /* native_, __pv_, resilient_ */
	"queued_spin_unlock_slowpath",
	"tas_spin_lock",
};

/* Whether @name (a kernel function, maybe with a ".isra.0"-style suffix) is a lock or scheduler
 * function in perf lock's sense. */
static bool lock_function(const char *name)
{
	char base[128];
	size_t len = strlen(name);

	if (!len)
		return false;
	/* Cut compiler suffixes (".constprop.0", ".isra.0", ".part.0", ".cold"), not a leading
	 * dot. */
	const char *dot = strchr(name + 1, '.');
	if (dot && name[0] != '.')
		len = (size_t)(dot - name);
	if (len >= sizeof(base))
		return false;
	memcpy(base, name, len);
	base[len] = '\0';

	if (!strncmp(base, "_raw_spin_rq_", 13))
		return false;
	for (size_t i = 0; i < sizeof(lock_prefix) / sizeof(lock_prefix[0]); i++)
		if (!strncmp(base, lock_prefix[i], strlen(lock_prefix[i])))
			return true;
	for (size_t i = 0; i < sizeof(lock_suffix) / sizeof(lock_suffix[0]); i++) {
		size_t n = strlen(lock_suffix[i]);
		if (len >= n && !strcmp(base + len - n, lock_suffix[i]))
			return true;
	}
	char word[sizeof(base) + 2];
	snprintf(word, sizeof(word), " %s ", base);
	return strstr(lock_exact, word) != NULL;
}

/* --- state --- */

enum lock_kind {
	LOCK_ADDR,  /* key.lock is the address */
	LOCK_MMAP,  /* key.lock is the owner's pid + 1, 0 when the owner is unknown */
	LOCK_OTHER, /* overflow row of a full window */
};

/* Who held an mmap_lock when a wait on it began (plugins/bpf/holder.h); all 0 for other locks. */
struct holder {
	uint32_t pid;  /* thread group + 1; 0: none named */
	uint32_t tid;  /* the holding thread */
	uint16_t mode; /* enum mm_holder_mode */
	uint16_t op;   /* enum mm_lock_source */
};

struct key {
	uint64_t caller; /* ip of the caller frame, 0 when none was found */
	uint64_t lock;	 /* see enum lock_kind */
	uint32_t pid;
	uint32_t type_kind; /* type index | kind << 8 */
	struct holder holder;
	uint32_t pad; /* zero: keys are compared as bytes */
};

struct row {
	struct key k;
	uint64_t contended, wait_ns, max_ns, min_ns;
	struct mm_hist hist;
};

struct site { /* a call site since start, over every process and lock */
	uint64_t caller;
	uint64_t type;
	uint64_t contended, wait_ns, max_ns, min_ns;
};

/* An mm seen in the mmap_lock events: the process owning it, and who holds its mmap_lock now
 * (the perf path's holders, holder.h). */
struct mm_owner {
	uint64_t mm;
	uint32_t pid;
	uint32_t by_write;
	struct holder writer; /* the write hold not yet released or downgraded; pid 0: none */
	uint32_t nreaders;    /* of reader[], oldest first: read holds not ended */
	struct holder reader[MAX_READERS];
};

struct wait {
	uint64_t addr;
	uint64_t begin_ns;
	uint32_t flags;
	struct key k;
};

struct thread {
	uint64_t mmap_mm; /* mm whose mmap_lock the thread is acquiring (start_locking seen) */
	unsigned n;
	struct wait w[MAX_PENDING]; /* open waits, oldest first */
};

struct ip_class {
	uint64_t ip;
	uint8_t known, lock, has_sym, tracing;
};

struct state {
	const struct mm_tp *begin, *end, *start, *acquired, *released;
	const struct tep_format_field *b_addr, *b_flags, *e_addr;
	const struct tep_format_field *s_mm, *s_write, *a_mm, *a_write, *a_success;
	const struct tep_format_field *r_mm, *r_write;

	int g_begin_no_end, g_end_no_begin, g_threads, g_rows, g_callers, g_short, g_offset;

	struct mm_tidmap *threads;
	struct mm_htab window; /* struct row by key */
	struct mm_htab sites;  /* struct site by (caller, type) */
	struct mm_htab owners; /* struct mm_owner by mm */
	uint64_t window_rows;  /* rows with a real lock in the window (not LOCK_OTHER) */
	int64_t mmap_off;      /* offsetof(struct mm_struct, mmap_lock); 0 until learned */
	struct ip_class ipc[IP_CACHE];
	struct {
		uint64_t hash; /* of the callchain; 0: empty */
		uint16_t op;
	} src[SRC_CACHE];
};

static uint32_t thread_id(const struct mm_sample *s)
{
	return s->tid ? s->tid : IDLE_TID | s->cpu;
}

/* --- callers --- */

static const struct ip_class *classify(struct state *st, struct mm_host *h, uint64_t ip)
{
	struct ip_class *c = &st->ipc[(ip ^ (ip >> 12)) & (IP_CACHE - 1)];
	if (c->known && c->ip == ip)
		return c;
	const char *name = mm_host_symbol(h, ip, NULL);
	*c = (struct ip_class){.ip = ip, .known = 1, .has_sym = name != NULL};
	/* __traceiter_* is the tracepoint's iterator, the first frame whenever a second probe (a
	 * BPF program: the BPF source) is attached; __bpf_trace_* and bpf_trace_run* head a BPF
	 * program's own stacks: tracing, never the caller, and not counted among the STACK_DEPTH
	 * frames (the same event traced alone has no such frame). */
	static const char *const tracing[] = {"__traceiter_", "__bpf_trace_", "bpf_trace_run"};
	for (size_t k = 0; name && k < sizeof(tracing) / sizeof(tracing[0]); k++)
		c->tracing |= !strncmp(name, tracing[k], strlen(tracing[k]));
	c->lock = name && (lock_function(name) || c->tracing);
	return c;
}

/* The ip of the first of the first STACK_DEPTH kernel frames of @ips that has a symbol and is
 * not a lock or scheduler function; 0 when there is none. */
static uint64_t find_caller(struct state *st, struct mm_host *h, const uint64_t *ips, uint64_t n)
{
	unsigned depth = 0;
	for (uint64_t i = 0; i < n && depth < STACK_DEPTH; i++) {
		uint64_t ip = ips[i];
		if (ip == PERF_CONTEXT_USER)
			break;
		if (ip >= PERF_CONTEXT_MAX)
			continue;
		const struct ip_class *c = classify(st, h, ip);
		if (c->tracing)
			continue;
		depth++;
		if (c->has_sym && !c->lock)
			return ip;
	}
	return 0;
}

/* --- mmap_lock owners --- */

static struct mm_owner *note_owner(struct state *st, uint64_t mm, uint32_t pid, bool write)
{
	if (!mm)
		return NULL;
	struct mm_owner key = {.mm = mm};
	struct mm_owner *o = mm_htab_get(&st->owners, &key, false, 0);
	if (!o) {
		/* Insert-only: forget everything when full (exited processes' mms stay until
		 * then); owners are learned again at their next write. */
		if (st->owners.used >= MAX_MMS)
			mm_htab_clear(&st->owners);
		o = mm_htab_get(&st->owners, &key, true, MAX_MMS);
		if (!o)
			return NULL;
		o->pid = pid;
		o->by_write = write;
	} else if (write) {
		o->pid = pid;
		o->by_write = 1;
	}
	return o;
}

static struct mm_owner *find_owner(struct state *st, uint64_t mm)
{
	struct mm_owner key = {.mm = mm};
	return mm_htab_get(&st->owners, &key, false, 0);
}

/* Names @k's mmap_lock from @o, what the mmap_lock events taught of its mm (NULL: nothing): its
 * owner, and the holder for a wait beginning now (perf path): the writer, else the latest reader
 * still holding it (of the last MAX_READERS), else MM_HOLDER_UNKNOWN. */
static unsigned name_mmap_lock(const struct mm_owner *o, struct key *k)
{
	k->lock = o ? (uint64_t)o->pid + 1 : 0;
	if (o && o->writer.pid)
		k->holder = o->writer;
	else if (o && o->nreaders)
		k->holder = o->reader[o->nreaders - 1];
	else
		k->holder = (struct holder){.mode = MM_HOLDER_UNKNOWN, .op = MM_SRC_UNKNOWN};
	return LOCK_MMAP;
}

/* Names the lock at @addr for a wait of @t with @flags: sets k->lock and the kind. */
static unsigned name_lock(struct state *st, struct mm_host *h, struct thread *t, uint64_t addr,
			  unsigned flags, struct key *k)
{
	bool rwsem = (flags & (LCB_F_READ | LCB_F_WRITE)) &&
		     !(flags & (LCB_F_SPIN | LCB_F_RT | LCB_F_PERCPU | LCB_F_MUTEX));
	if (t->mmap_mm && rwsem) {
		/* Nothing but mmap_lock's own rwsem sleeps between start_locking and
		 * acquire_returned. */
		int64_t off = (int64_t)(addr - t->mmap_mm);
		if (off > 0 && off < MMAP_LOCK_OFF_MAX) {
			if (!st->mmap_off)
				st->mmap_off = off;
			else if (st->mmap_off != off)
				mm_host_global_add(h, st->g_offset, 1);
		}
		return name_mmap_lock(find_owner(st, t->mmap_mm), k);
	}
	if (st->mmap_off) {
		const struct mm_owner *o = find_owner(st, addr - (uint64_t)st->mmap_off);
		if (o)
			return name_mmap_lock(o, k);
	}
	k->lock = addr;
	return LOCK_ADDR;
}

/* --- per-thread waits --- */

static void drop_wait(struct thread *t, unsigned i)
{
	memmove(&t->w[i], &t->w[i + 1], (t->n - i - 1) * sizeof(t->w[0]));
	t->n--;
}

static void maybe_forget(struct state *st, struct thread *t, uint32_t tid)
{
	if (!t->n && !t->mmap_mm)
		mm_tidmap_remove(st->threads, tid);
}

/* Waits to add to a row: one from records, or an in-kernel source's sum. */
struct waits {
	uint64_t contended, wait_ns, max_ns, min_ns;
	const uint64_t *hist; /* MM_HIST_BUCKETS counts; NULL: the one wait of wait_ns */
};

static void add_waits(uint64_t *contended, uint64_t *wait_ns, uint64_t *max_ns, uint64_t *min_ns,
		      const struct waits *w)
{
	if (!*contended || w->min_ns < *min_ns)
		*min_ns = w->min_ns;
	*contended += w->contended;
	*wait_ns += w->wait_ns;
	if (w->max_ns > *max_ns)
		*max_ns = w->max_ns;
}

_Static_assert(offsetof(struct mm_proc_stats, mmap_lock_behind_unknown_ns) -
			       offsetof(struct mm_proc_stats, mmap_lock_behind_fault_ns) ==
		       MM_SRC_UNKNOWN * sizeof(uint64_t),
	       "mmap_lock_behind_*_ns members must follow enum mm_lock_source");

/* An mmap_lock wait's time by what its holder did, in the waiter's counters; the holder's
 * process is made known to the host (its name, for the rows: mm_host_proc_name()). */
static void account_holder(struct mm_host *h, const struct key *k, const struct waits *w)
{
	unsigned op = k->holder.mode == MM_HOLDER_UNKNOWN || k->holder.op >= MM_SRC_COUNT
			      ? MM_SRC_UNKNOWN
			      : k->holder.op;
	struct mm_proc_stats *ps = mm_host_proc(h, k->pid);
	ps->mmap_lock_behind_waits += w->contended;
	(&ps->mmap_lock_behind_fault_ns)[op] += w->wait_ns;
	if (k->holder.pid && k->holder.pid - 1 != k->pid)
		mm_host_proc(h, k->holder.pid - 1);
}

static void account(struct state *st, struct mm_host *h, const struct key *k, const struct waits *w)
{
	if (k->holder.mode != MM_HOLDER_NONE)
		account_holder(h, k, w);
	struct site skey = {.caller = k->caller, .type = k->type_kind & 0xff};
	struct site *site = mm_htab_get(&st->sites, &skey, true, MAX_CALLERS);
	if (site)
		add_waits(&site->contended, &site->wait_ns, &site->max_ns, &site->min_ns, w);
	else
		mm_host_global_add(h, st->g_callers, w->contended);

	struct row *r = mm_htab_get(&st->window, k, false, 0);
	if (!r && st->window_rows < MAX_WINDOW_KEYS) {
		r = mm_htab_get(&st->window, k, true, 2 * MAX_WINDOW_KEYS);
		if (r)
			st->window_rows++;
	}
	if (!r) {
		/* The window is full: keep the wait in the process's (type, caller) row. */
		struct key other = *k;
		other.lock = 0;
		other.holder = (struct holder){0};
		other.type_kind = (k->type_kind & 0xff) | LOCK_OTHER << 8;
		r = mm_htab_get(&st->window, &other, true, 2 * MAX_WINDOW_KEYS);
		if (!r) {
			mm_host_global_add(h, st->g_rows, w->contended);
			return;
		}
	}
	add_waits(&r->contended, &r->wait_ns, &r->max_ns, &r->min_ns, w);
	if (!w->hist)
		mm_hist_add(&r->hist, w->wait_ns);
	for (unsigned i = 0; w->hist && i < MM_HIST_BUCKETS; i++)
		r->hist.bucket[i] += w->hist[i];
}

static void on_begin(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t addr, flags;
	if (!mm_field_read_counted(h, st->g_short, st->b_addr, s, &addr) ||
	    !mm_field_read_counted(h, st->g_short, st->b_flags, s, &flags))
		return;
	uint32_t tid = thread_id(s);
	struct thread *t = mm_tidmap_get(st->threads, tid, true);
	if (!t) {
		mm_host_global_add(h, st->g_threads, 1);
		return;
	}
	for (unsigned i = 0; i < t->n; i++) {
		if (t->w[i].addr == addr) {
			/* A mutex that stops spinning and sleeps begins again: the first counts. */
			if (t->w[i].flags == (LCB_F_MUTEX | LCB_F_SPIN) && flags == LCB_F_MUTEX)
				return;
			mm_host_global_add(h, st->g_begin_no_end, 1);
			drop_wait(t, i);
			break;
		}
	}
	if (!(flags & LCB_F_SPIN)) {
		/* A thread sleeps on one lock at a time. */
		for (unsigned i = 0; i < t->n; i++) {
			if (!(t->w[i].flags & LCB_F_SPIN)) {
				mm_host_global_add(h, st->g_begin_no_end, 1);
				drop_wait(t, i);
				break;
			}
		}
	}
	if (t->n == MAX_PENDING) {
		mm_host_global_add(h, st->g_begin_no_end, 1);
		drop_wait(t, 0);
	}

	struct wait *w = &t->w[t->n++];
	memset(w, 0, sizeof(*w));
	w->addr = addr;
	w->begin_ns = s->time_ns;
	w->flags = (uint32_t)flags;
	w->k.pid = s->pid;
	w->k.caller = find_caller(st, h, s->ips, s->nr_ips);
	unsigned kind = name_lock(st, h, t, addr, (unsigned)flags, &w->k);
	w->k.type_kind = type_of((unsigned)flags) | kind << 8;
}

static void on_end(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t addr;
	if (!mm_field_read_counted(h, st->g_short, st->e_addr, s, &addr))
		return;
	uint32_t tid = thread_id(s);
	struct thread *t = mm_tidmap_get(st->threads, tid, false);
	for (unsigned i = 0; t && i < t->n; i++) {
		if (t->w[i].addr != addr)
			continue;
		uint64_t wait = s->time_ns >= t->w[i].begin_ns ? s->time_ns - t->w[i].begin_ns : 0;
		struct waits one = {
			.contended = 1, .wait_ns = wait, .max_ns = wait, .min_ns = wait};
		account(st, h, &t->w[i].k, &one);
		drop_wait(t, i);
		maybe_forget(st, t, tid);
		return;
	}
	mm_host_global_add(h, st->g_end_no_begin, 1);
}

static void on_start_locking(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write;
	if (!st->start) /* its fields are missing */
		return;
	if (!mm_field_read_counted(h, st->g_short, st->s_mm, s, &mm) ||
	    !mm_field_read_counted(h, st->g_short, st->s_write, s, &write))
		return;
	note_owner(st, mm, s->pid, write);
	struct thread *t = mm_tidmap_get(st->threads, thread_id(s), true);
	if (t)
		t->mmap_mm = mm;
	else
		mm_host_global_add(h, st->g_threads, 1);
}

/* What the holder of an acquisition does: its callchain classified (mm_lock_source_of_sample(),
 * a symbol lookup and a table of names per frame), once per distinct callchain: a process's
 * acquisitions come from a few call paths. */
static uint16_t op_of(struct state *st, struct mm_host *h, const struct mm_sample *s)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (uint64_t i = 0; i < s->nr_ips; i++)
		hash = (hash ^ s->ips[i]) * 0x100000001b3ull;
	hash |= 1; /* never 0, the empty slot's */
	unsigned i = (unsigned)(hash >> 40) & (SRC_CACHE - 1);
	if (st->src[i].hash != hash) {
		st->src[i].hash = hash;
		st->src[i].op = (uint16_t)mm_lock_source_of_sample(h, s);
	}
	return st->src[i].op;
}

static void on_acquired(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write, success;
	if (!st->acquired)
		return;
	if (!mm_field_read_counted(h, st->g_short, st->a_mm, s, &mm) ||
	    !mm_field_read_counted(h, st->g_short, st->a_write, s, &write) ||
	    !mm_field_read_counted(h, st->g_short, st->a_success, s, &success))
		return;
	uint32_t tid = thread_id(s);
	struct mm_owner *o = success ? note_owner(st, mm, s->pid, write) : NULL;
	if (o) {
		struct holder me = {.pid = s->pid + 1,
				    .tid = tid,
				    .mode = write ? MM_HOLDER_WRITE : MM_HOLDER_READ,
				    .op = op_of(st, h, s)};
		/* A write hold excludes every other hold, and a read hold a writer (its own,
		 * downgraded, included): what a lost record left behind is forgotten here. */
		if (write) {
			o->writer = me;
			o->nreaders = 0;
		} else {
			o->writer.pid = 0;
			if (o->nreaders == MAX_READERS)
				memmove(&o->reader[0], &o->reader[1],
					--o->nreaders * sizeof(o->reader[0]));
			o->reader[o->nreaders++] = me;
		}
	}
	struct thread *t = mm_tidmap_get(st->threads, tid, false);
	if (t && t->mmap_mm) {
		t->mmap_mm = 0;
		maybe_forget(st, t, tid);
	}
}

/* A hold ends: the mm's writer or one of its readers lets go. */
static void on_released(void *state, struct mm_host *h, const struct mm_sample *s)
{
	struct state *st = state;
	uint64_t mm, write;
	if (!st->released)
		return;
	if (!mm_field_read_counted(h, st->g_short, st->r_mm, s, &mm) ||
	    !mm_field_read_counted(h, st->g_short, st->r_write, s, &write))
		return;
	struct mm_owner *o = find_owner(st, mm);
	uint32_t tid = thread_id(s);
	if (!o)
		return;
	if (write) {
		if (o->writer.tid == tid)
			o->writer.pid = 0;
		return;
	}
	for (unsigned i = o->nreaders; i-- > 0;) {
		if (o->reader[i].tid != tid)
			continue;
		memmove(&o->reader[i], &o->reader[i + 1],
			(--o->nreaders - i) * sizeof(o->reader[0]));
		break;
	}
}

/* Where an in-kernel source's stack becomes the kernel's: after its tracing frames (classify()),
 * and the BPF program's own frame before them, which has no symbol; so the caller is looked for in
 * the frames a perf callchain of the same event has. */
static unsigned tracing_frames(struct state *st, struct mm_host *h, const uint64_t *ips, unsigned n)
{
	unsigned first = 0;
	for (unsigned i = 0; i < n && i < 6; i++)
		if (classify(st, h, ips[i])->tracing)
			first = i + 1;
	return first;
}

/* Waits an in-kernel source paired (mm_host_fed): keyed and summed as records' would be. */
static void on_waits(void *state, struct mm_host *h, const struct mm_lock_wait *lw)
{
	struct state *st = state;
	if (!lw->contended)
		return;
	unsigned skip = tracing_frames(st, h, lw->ips, lw->nr_ips);
	struct key k = {.pid = lw->pid};
	k.caller = find_caller(st, h, lw->ips + skip, lw->nr_ips - skip);
	k.lock = lw->lock;
	k.type_kind = type_of(lw->flags) | (lw->mmap ? LOCK_MMAP : LOCK_ADDR) << 8;
	if (lw->mmap)
		k.holder = (struct holder){.pid = lw->holder_pid,
					   .tid = lw->holder_tid,
					   .mode = (uint16_t)lw->holder_mode,
					   .op = (uint16_t)lw->holder_op};
	struct waits w = {.contended = lw->contended,
			  .wait_ns = lw->wait_ns,
			  .max_ns = lw->max_ns,
			  .min_ns = lw->min_ns,
			  .hist = lw->hist};
	account(st, h, &k, &w);
}

static void thread_exit(void *state, struct mm_host *h, uint32_t pid, uint32_t tid)
{
	struct state *st = state;
	struct thread *t = mm_tidmap_get(st->threads, tid, false);
	if (!t)
		return;
	/* A thread cannot exit while it waits for a lock: those ends were lost. */
	if (t->n)
		mm_host_global_add(h, st->g_begin_no_end, t->n);
	mm_tidmap_remove(st->threads, tid);
}

/* --- snapshots --- */

static void format_caller(struct mm_host *h, uint64_t ip, char *buf, size_t len)
{
	uint64_t start = 0;
	const char *name = ip ? mm_host_symbol(h, ip, &start) : NULL;
	if (!name)
		snprintf(buf, len, "unknown");
	else if (ip != start)
		snprintf(buf, len, "%s+%#llx", name, (unsigned long long)(ip - start));
	else
		snprintf(buf, len, "%s", name);
}

static void format_lock(struct mm_host *h, const struct key *k, struct mm_snap_lock *out)
{
	uint64_t start = 0;
	const char *name;

	out->lock_pid = -1;
	switch (k->type_kind >> 8) {
	case LOCK_MMAP:
		snprintf(out->lock, sizeof(out->lock), "mmap_lock");
		out->lock_pid = k->lock ? (int32_t)(k->lock - 1) : -1;
		break;
	case LOCK_OTHER:
		snprintf(out->lock, sizeof(out->lock), "(other)");
		break;
	default:
		/* A static lock lies inside its variable; past STATIC_LOCK_MAX_OFF from the last
		 * symbol the address is in memory kallsyms does not describe. */
		name = mm_host_symbol(h, k->lock, &start);
		if (name && k->lock - start >= STATIC_LOCK_MAX_OFF)
			name = NULL;
		if (!name)
			snprintf(out->lock, sizeof(out->lock), "%#llx",
				 (unsigned long long)k->lock);
		else if (k->lock != start)
			snprintf(out->lock, sizeof(out->lock), "%s+%#llx", name,
				 (unsigned long long)(k->lock - start));
		else
			snprintf(out->lock, sizeof(out->lock), "%s", name);
		break;
	}
}

static void format_holder(struct mm_host *h, const struct holder *hd, struct mm_snap_lock *out)
{
	static const char *const modes[] = {"", "write", "read", "unknown"};
	out->holder_pid = hd->pid ? (int32_t)(hd->pid - 1) : -1;
	out->holder_tid = hd->pid ? (int32_t)hd->tid : -1;
	snprintf(out->holder_mode, sizeof(out->holder_mode), "%s",
		 hd->mode < sizeof(modes) / sizeof(modes[0]) ? modes[hd->mode] : "unknown");
	if (hd->mode == MM_HOLDER_NONE)
		return;
	snprintf(out->holder_op, sizeof(out->holder_op), "%s",
		 mm_lock_source_name((enum mm_lock_source)hd->op));
	const char *name = hd->pid ? mm_host_proc_name(h, hd->pid - 1) : NULL;
	if (name)
		snprintf(out->holder_comm, sizeof(out->holder_comm), "%s", name);
}

static void snapshot(void *state, struct mm_host *h, struct mm_snapshot *s, bool closing)
{
	struct state *st = state;
	struct mm_snap_lock *rows = NULL, *sites = NULL;
	size_t nrows = 0, nsites = 0;
	struct row *r;
	struct site *c;

	if (st->window.used)
		rows = calloc(st->window.used, sizeof(*rows));
	if (rows) {
		for (size_t i = 0; i < st->window.cap; i++) {
			if (!(r = mm_htab_at(&st->window, i)))
				continue;
			struct mm_snap_lock *o = &rows[nrows++];
			const struct mm_snap_proc *p = mm_snapshot_find(s, (int32_t)r->k.pid);
			o->pid = (int32_t)r->k.pid;
			if (p) {
				o->start_ms = p->start_ms;
				memcpy(o->comm, p->comm, sizeof(o->comm));
			} else if (!r->k.pid) {
				snprintf(o->comm, sizeof(o->comm), "swapper");
			}
			snprintf(o->type, sizeof(o->type), "%s", types[r->k.type_kind & 0xff].name);
			format_caller(h, r->k.caller, o->caller, sizeof(o->caller));
			format_lock(h, &r->k, o);
			format_holder(h, &r->k.holder, o);
			o->contended = r->contended;
			o->wait_ns = r->wait_ns;
			o->max_ns = r->max_ns;
			o->min_ns = r->min_ns;
			o->hist = r->hist;
		}
		mm_lock_rows_sort(rows, nrows);
	}

	if (st->sites.used)
		sites = calloc(st->sites.used, sizeof(*sites));
	if (sites) {
		for (size_t i = 0; i < st->sites.cap; i++) {
			if (!(c = mm_htab_at(&st->sites, i)))
				continue;
			struct mm_snap_lock *o = &sites[nsites++];
			o->pid = -1;
			o->lock_pid = -1;
			o->holder_pid = o->holder_tid = -1;
			snprintf(o->type, sizeof(o->type), "%s", types[c->type].name);
			format_caller(h, c->caller, o->caller, sizeof(o->caller));
			o->contended = c->contended;
			o->wait_ns = c->wait_ns;
			o->max_ns = c->max_ns;
			o->min_ns = c->min_ns;
		}
		mm_lock_rows_sort(sites, nsites);
		if (nsites > MAX_SNAP_CALLERS) {
			struct mm_snap_lock *n = realloc(sites, MAX_SNAP_CALLERS * sizeof(*n));
			if (n)
				sites = n;
			nsites = MAX_SNAP_CALLERS;
		}
	}
	mm_snapshot_set_locks(s, rows, nrows, sites, nsites);

	if (closing) {
		/* Rows that did not make it into the snapshot (out of memory) are lost with the
		 * window, as the host's own counters would be. */
		if (!rows && st->window.used)
			mm_host_global_add(h, st->g_rows, st->window.used);
		mm_htab_clear(&st->window);
		st->window_rows = 0;
	}
}

/* --- life cycle --- */

static void free_state(void *state)
{
	struct state *st = state;
	if (!st)
		return;
	mm_tidmap_free(st->threads);
	mm_htab_free(&st->window);
	mm_htab_free(&st->sites);
	mm_htab_free(&st->owners);
	free(st);
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	st->threads = mm_tidmap_new(sizeof(struct thread), MAX_THREADS);
	if (!st->threads || mm_htab_init(&st->window, sizeof(struct row), sizeof(struct key)) < 0 ||
	    mm_htab_init(&st->sites, sizeof(struct site), 16) < 0 ||
	    mm_htab_init(&st->owners, sizeof(struct mm_owner), 8) < 0) {
		free_state(st);
		return mm_host_fail(h, "out of memory");
	}

	if (mm_host_fed(h)) /* the waits come paired: no record to read */
		goto globals;
	st->begin = mm_host_tp(h, "lock", "contention_begin");
	st->end = mm_host_tp(h, "lock", "contention_end");
	st->b_addr = mm_tp_field(st->begin, "lock_addr");
	st->b_flags = mm_tp_field(st->begin, "flags");
	st->e_addr = mm_tp_field(st->end, "lock_addr");
	if (!st->b_addr || !st->b_flags || !st->e_addr) {
		free_state(st);
		return mm_host_fail(h, "lock:contention_begin/end lack the fields lock_addr/flags "
				       "(unsupported kernel version)");
	}

	st->start = mm_host_tp(h, "mmap_lock", "mmap_lock_start_locking");
	st->acquired = mm_host_tp(h, "mmap_lock", "mmap_lock_acquire_returned");
	st->s_mm = mm_tp_field(st->start, "mm");
	st->s_write = mm_tp_field(st->start, "write");
	st->a_mm = mm_tp_field(st->acquired, "mm");
	st->a_write = mm_tp_field(st->acquired, "write");
	st->a_success = mm_tp_field(st->acquired, "success");
	st->released = mm_host_tp(h, "mmap_lock", "mmap_lock_released");
	st->r_mm = mm_tp_field(st->released, "mm");
	st->r_write = mm_tp_field(st->released, "write");
	if (!st->r_mm || !st->r_write)
		st->released = NULL;
	if (!st->s_mm || !st->s_write || !st->a_mm || !st->a_write || !st->a_success) {
		if (st->start && st->acquired)
			mm_host_note(h, "mmap_lock events lack mm/write/success: mmap_lock "
					"contentions are named by address");
		st->start = st->acquired = NULL;
	}

globals:;
	const char *fam = "contention_unmatched";
	st->g_begin_no_end = mm_host_global(h, fam, "begin_without_end",
					    "Events the contention collector could not pair, or "
					    "could not keep.");
	st->g_end_no_begin = mm_host_global(h, fam, "end_without_begin", NULL);
	st->g_threads = mm_host_global(h, fam, "threads_dropped", NULL);
	st->g_rows = mm_host_global(h, fam, "window_rows_dropped", NULL);
	st->g_callers = mm_host_global(h, fam, "call_sites_dropped", NULL);
	st->g_short = mm_host_global(h, fam, "short_record", NULL);
	st->g_offset = mm_host_global(h, fam, "mmap_lock_offset_mismatch", NULL);
	*ret_state = st;
	return 0;
}

static const struct mm_tp_req tracepoints[] = {
	{.system = "lock", .name = "contention_begin", .handler = on_begin, .callchain = true},
	{.system = "lock", .name = "contention_end", .handler = on_end},
	{.system = "mmap_lock",
	 .name = "mmap_lock_start_locking",
	 .handler = on_start_locking,
	 .optional = true},
	/* Callchains: what a holder was doing (mm_lock_source_of()). */
	{.system = "mmap_lock",
	 .name = "mmap_lock_acquire_returned",
	 .handler = on_acquired,
	 .callchain = true,
	 .optional = true},
	{.system = "mmap_lock",
	 .name = "mmap_lock_released",
	 .handler = on_released,
	 .optional = true},
	{0},
};

/* On the BPF source: waits paired and summed in the kernel, rows handed to on_waits(). Their
 * rows reach the lock map at the thread's next begin or when it leaves the CPU (on_switch). */
static const char *const bpf_programs[] = {"on_contention", "on_contention_end", "on_switch", NULL};

static const struct mm_plugin_bpf bpf = {
	.enable = "count_contention",
	.programs = bpf_programs,
};

const struct mm_plugin mm_plugin_contention = {
	.name = "contention",
	.description = "lock contention per process, type, caller and lock (as perf lock "
		       "contention)",
	.by_default = false,
	.usage = "lock contention by caller, callchains",
	.tracepoints = tracepoints,
	.init = init,
	.thread_exit = thread_exit,
	.snapshot = snapshot,
	.waits = on_waits,
	.free = free_state,
	.bpf = &bpf,
};
