// SPDX-License-Identifier: GPL-2.0-only
/*
 * counters.bpf.c: the in-kernel half of the BPF source (daemon/bpfsource.c loads it). It counts,
 * per process, what the mmaplock, fallbacks and faults collectors count from perf samples, and
 * pairs and sums the contention collector's lock waits, on the same tracepoints, without writing
 * a sample: per-thread state lives in task storage, per-process
 * counters in a hash keyed by (tgid, group leader's start_boottime) that user space reads once per
 * tick; when the last thread of a process exits, its key goes through a ring buffer so the loader
 * settles it once and deletes it (the map stays bounded by live processes).
 *
 * Cost: the events count into the thread's own task storage (struct thread.acc, no map lookup),
 * which is flushed into the process's entry with atomic adds when the thread leaves the CPU
 * (sched_switch), exits, or has run FLUSH_NS since its last flush (checked at its timed faults and
 * mmap_lock acquisitions): one hash lookup per flush instead of one or more per event, one value
 * per process instead of one per CPU. So a running thread's counts reach the map at most FLUSH_NS
 * late (a window's counts end up to FLUSH_NS before it is read), a sleeping or exited thread's
 * are all there. The fallbacks collector's two counts, at most two per fault fallback, go to the
 * process's entry at once instead (proc_inc()), so that the default's threads have nothing to
 * flush between the split's bursts. The thread's key is read once, when its storage is made; kernel
 * memory is read by direct (BTF) loads, not bpf_probe_read helper calls.
 *
 * Attached (tp_btf: typed arguments, no record format to parse):
 *   exceptions:page_fault_user            faults; opens the thread's fault window
 *   mmap_lock:mmap_lock_start_locking     a wait begins (blocking acquisitions and, since 6.x,
 *                                         trylocks); a read start inside lock_mm_and_find_vma()
 *                                         is a fault fallback
 *   mmap_lock:mmap_lock_acquire_returned  acquisitions by mode, failed trylocks, waits, write
 *                                         holds begin (a read acquisition ends one: downgrade)
 *   mmap_lock:mmap_lock_released          write holds end
 *   lock:contention_begin                 a sleeping rwsem wait between start and acquired;
 *                                         for contention, a wait begins (its stack, its lock:
 *                                         an mm's mmap_lock is named by the mm's owner)
 *   lock:contention_end                   contention: the wait ends; at the thread's next
 *                                         contention_begin, switch or exit (outside the lock's
 *                                         hold: lock_rows()) it is summed into its row of the
 *                                         lock_waits hash (counters.h) of that window's
 *                                         generation (lock_gen), which the loader reads and
 *                                         deletes
 *   sched:sched_process_exit              a thread exits (its window closes, its counts are
 *                                         flushed); the last thread of a process: its counts are
 *                                         final
 *   sched:sched_switch                    the thread leaves the CPU: its counts are flushed; for
 *                                         the faults collector, a voluntary sleep in a window is
 *                                         an attempt under the VMA lock; inside
 *                                         __folio_lock_or_retry(): a retry
 * and for the faults collector only:
 *   exceptions:page_fault_kernel          the user fault is over; the next fallback is this one's
 *   filemap:mm_filemap_fault, _map_pages  attempts on the faulting page (as plugins/faults.c)
 *   filemap:mm_filemap_add_to_page_cache  pages read twice in one window
 * and, as perf_event programs, the minor-faults and major-faults software events on every CPU,
 * sampled (1 in MM_BPF_COMPLETION_PERIOD faults of a CPU: running a program on every fault cost
 * mix ~15 points): mm_account_fault() fires one of them when a fault completes (not on
 * VM_FAULT_RETRY or an error; a retried fault is major), so page_fault_user -> that event is the
 * fault's latency (of the faults page_fault_user timed: one in MM_BPF_TIMED_FAULTS,
 * counters.h), kept in one of two log2 histograms per process: with or without an mmap_lock
 * fallback (a read start at the fallback site) in between; for the faults collector it closes
 * the window, and the latency also goes to the histogram of the fault's outcome. Unsampled
 * faults' windows close at the thread's next event that ends them (outcome.h, "completed").
 * The rules are those of plugins/mmaplock.c, plugins/fallbacks.c and plugins/faults.c, event for
 * event; where they differ it is in what the perf path could not see: sites (the fallback, the
 * anon_vma trylock, __folio_lock_or_retry) are found in short kernel stacks (MAX_FRAMES frames,
 * taken only for read starts on the thread's own mm and for mmap_lock starts in an open window,
 * and only where the tracepoint's site, from perf's registers, does not tell: start_site();
 * MAX_SLEEP_FRAMES for a voluntary sleep in a window before its fallback) instead of the sample
 * IP, so kernels that fire the tracepoint from the out-of-line trace helper (6.12) are counted
 * too; and the faults collector's outcome uses evidence the ring path could not afford
 * (plugins/bpf/outcome.h says what each piece means and why).
 *
 * Everything the loader decides before load is in .rodata (count_*, sites[], vdso_*,
 * reject_for_test), so the verifier removes what is not used; programs no enabled collector needs
 * are not loaded (the loader's autoload switches).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "counters.h"
#include "holder.h"
#include "lockflags.h"
#include "outcome.h"

char LICENSE[] SEC("license") = "GPL";

#define RWSEM_WRITER_LOCKED (1UL << 0) /* kernel/locking/rwsem.c */

#define MAX_FRAMES 8
/* iterator, trace helper, its caller (get_mmap_lock_carefully() if not inlined), and that one's */
#define TRACE_FRAMES	 4
#define FLUSH_NS	 (20 * 1000 * 1000) /* a running thread's counts, at most this late */
#define MAX_SLEEP_FRAMES 12 /* sched_switch: __schedule, schedule, io_schedule, ... first */

const volatile bool count_mmaplock = false;
const volatile bool count_fallbacks = false;
const volatile bool count_faults = false;
const volatile bool count_contention = false;
/* Kernel text of the functions of enum mm_bpf_site (from /proc/kallsyms); [lo, hi). */
const volatile struct {
	__u64 lo, hi;
} sites[MM_BPF_NSITES] = {};
/* The trace helper and iterator (enum mm_bpf_trace_text): a read start's first frame there means
 * its site is further up (start_site()). */
const volatile struct {
	__u64 lo, hi;
} trace_text[MM_BPF_NTRACE_TEXT] = {};
/* The vDSO's special mappings: [mm->context.vdso - vdso_below, mm->context.vdso + vdso_above),
 * measured by the loader on its own mappings ([vvar]..., [vdso]); 0: not checked. */
const volatile __u64 vdso_below = 0, vdso_above = 0;
/* The fault split in bursts (plugins/split.h; the schedule daemon/duty.h), written by the loader
 * while the programs run: duty_off set between bursts (no window opens), duty_gen the current
 * burst. A window opened in a burst and still open at its end (a slow fault: a retry's I/O) closes
 * at its thread's next event that ends it, a later burst's fault at the latest, and is counted then
 * (the fallback and sleep programs stay attached, so its evidence is whole but for the completion
 * event and the filemap ones): dropping it instead biased the bursts against slow faults
 * (split_bpf: 84% of classified faults fell back against 92% exact). Both 0 when the faults
 * collector runs continuously. */
volatile __u32 duty_gen = 0;
volatile __u8 duty_off = 0;
/* A burst's tail: set by the loader when a burst begins, cleared once that burst's counts were
 * read (at its end, MM_DUTY_GRACE_MS + MM_DUTY_FLUSH_MS after its opener stopped) if no other
 * burst has begun. Between bursts and without it, when mmaplock does not count, on_switch and
 * on_start's write starts do nothing at all: they are for the windows (a late one's sleeps and
 * its end) and for flushing the windows' counts, and a task-storage lookup is most of what they
 * cost (bpf_stats, bench_swapin, the defaults: on_switch 168 ns a run net at 32 k/s). Only a
 * window still open then (a fault slower than those 50 ms) misses its later sleeps and closes at
 * its thread's next fault, and a thread that slept since the read hands its last counts to its
 * next flush. Unused unless duty_off. */
volatile __u8 duty_tail = 0;
/* Between bursts, after a burst's tail, with mmaplock not counted: nothing for the programs to
 * do (the split's programs are detached then, or held by the bpf_keep_attached key). */
#define IDLE_BETWEEN_PERIODS() (!count_mmaplock && duty_off && !duty_tail)
/* start_site(): a read start's call site was lock_mm_and_find_vma() itself (the kernel traces it
 * inline); one came through the trace helper all the same (the shortcut is off). Each set once. */
volatile __u8 site_inline = 0, site_through_helper = 0;
#define CHECK_EVERY 64 /* divides 256: struct thread's helper_starts wraps */
/* The contention collector's window generation (struct mm_bpf_lock_key.gen), flipped by the
 * loader at each window's closing tick. */
volatile __u32 lock_gen = 0;
/* The loader's epoch, bumped before it reads the changed map and again between taking each key
 * out of it and reading its entry; from 1 (an entry's epoch starts at 0). */
volatile __u64 tick_epoch = 0;
/* Set by the loader with bpf_refuse = on (a test's knob): makes the verifier refuse on_fault. */
const volatile __u64 reject_for_test = 0;

/* The reasons a fault window closes (enum mm_bpf_stat, MM_BPF_WIN_COMPLETED..MM_BPF_WIN_LEFT):
 * counted in the thread, added to the global counters at its flush (a per-CPU counter's line
 * written on every fault was ~5% of on_fault's time, measured on mix 2026-12-03). */
#define NCLOSES (MM_BPF_WIN_LEFT - MM_BPF_WIN_COMPLETED + 1)

/* The fields a fault touches (on_fault, the window's close) come first, together, and acc's
 * fault counters start acc (counters.h), right after them: a page fault reads and writes three
 * or four cache lines of the thread's storage, not six spread over its ~3 KiB. */
struct thread {
	struct mm_bpf_key key;	  /* the process's, read when the storage was made */
	__u64 fault_ip, fault_sp; /* an open window's user registers (the exception frame) */
	__u64 fault_address;	  /* and its fault's address (special_mapping() at a fallback) */
	__u64 fault_start_ns;	  /* page_fault_user of a fault not completed yet, else 0 */
	__u64 rnd;		  /* timed(): a linear congruential generator's state */
	struct mm_bpf_window win; /* the faults collector's evidence of the open fault */
	__u32 win_gen;		  /* duty_gen when the window opened */
	__u32 closed[NCLOSES];	  /* windows closed, by MM_BPF_WIN_* reason, since the last flush */
	__u8 dirty;		  /* DIRTY_* groups of acc with counts */
	__u8 fault_fellback;	  /* that fault fell back to mmap_lock */
	__u8 nadded;		  /* pages of added[] */
	__u64 flushed_ns;	  /* when acc was last flushed */
	struct mm_bpf_counts acc; /* counted since the last flush */
	__u64 fault_gprs;	  /* a fold of the open window's other registers (gprs_of()) */
	__u64 wait_start_ns;	  /* mmap_lock_start_locking, while waiting */
	__u64 wait_mm;
	__u8 waiting;	    /* between start_locking and acquire_returned */
	__u8 contended;	    /* a sleeping rwsem contention in that wait */
	__u8 at_site;	    /* the pending read start is lock_mm_and_find_vma's */
	__u8 fb_failed;	    /* the last attempt there failed: the next start is its retry */
	__u8 fb_waited;	    /* the fallback in progress has counted its wait */
	__u8 nheld;	    /* mmap_locks held for write (fork nests two) */
	__u8 pending_site;  /* enum mm_bpf_site of the pending read start (faults collector) */
	__u8 helper_starts; /* start_site()'s shortcuts taken: per thread, no shared counter */
	__u8 stack_hits;    /* lock_stack()'s cached stacks: one in CHECK_EVERY is walked too */
	struct {
		__u64 mm, since_ns;
	} held[MM_BPF_MAX_HELD];
	struct {
		__u64 mapping, index;
	} added[MM_BPF_MAX_ADDED]; /* pages added to the page cache in the window */
	struct {
		__u64 addr, begin_ns;
		__u64 wait_ns;		    /* LW_ENDED: its length */
		__u8 used;		    /* 0, LW_OPEN or LW_ENDED */
		struct mm_bpf_lock_key key; /* the row the wait goes to, but for gen */
	} lw[MM_BPF_LOCK_PENDING];	    /* the contention collector's open and ended waits */
	__u64 hmask[MM_BPF_NHISTS];	    /* buckets of each histogram of acc with counts */
};

#define DIRTY_SCALARS 1u
#define DIRTY_HISTS   2u
_Static_assert(MM_BPF_HIST_BUCKETS <= 64, "a bucket mask is a __u64");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384); /* the loader may resize before load */
	__type(key, struct mm_bpf_key);
	__type(value, struct mm_bpf_counts);
} procs SEC(".maps");

/* The process entries that changed since the loader's last tick: it reads only those at a
 * tick (each one it reads, it takes out first, so a change after that puts it back), and every
 * entry only when something was lost (daemon/bpfsource.c). An idle process costs no read. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* as procs */
	__type(key, struct mm_bpf_key);
	__type(value, __u8);
} changed SEC(".maps");

/* A zeroed value to create process entries from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_bpf_counts);
} zero SEC(".maps");

/* The contention collector's rows (counters.h). Preallocated: made in bursts (every row is new
 * after a window's flip), which the allocator of a BPF_F_NO_PREALLOC map refused now and then
 * (-ENOMEM from an empty per-CPU cache, lock_workload: 1 wait in 28000). One value for all CPUs:
 * a per-CPU one would cost max_entries x CPUs of its size. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MM_BPF_LOCK_ROWS);
	__type(key, struct mm_bpf_lock_key);
	__type(value, struct mm_bpf_lock_value);
} lock_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_bpf_lock_value);
} lock_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MM_BPF_NSTATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} exits SEC(".maps");

static __always_inline void stat_add_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);
	if (v)
		*v += n;
}

static __always_inline void stat_add(__u32 idx)
{
	stat_add_n(idx, 1);
}

static __always_inline void key_of(struct task_struct *task, struct mm_bpf_key *key)
{
	key->pid = task->tgid;
	key->pad = 0;
	key->start_boottime_ns = task->group_leader->start_boottime;
}

/* @t's counts since its last flush: the scalars. */
static __always_inline struct mm_bpf_counts *counts(struct thread *t)
{
	t->dirty |= DIRTY_SCALARS;
	return &t->acc;
}

/* Counts @ns in bucket of the @i-th histogram of @t's counts (@h: its buckets). */
static __always_inline void hist_count(struct thread *t, unsigned i, __u64 *h, unsigned b)
{
	asm volatile("" : "+r"(b));
	if (b >= MM_BPF_HIST_BUCKETS)
		return;
	h[b]++;
	asm volatile("" : "+r"(i));
	if (i < MM_BPF_NHISTS)
		t->hmask[i] |= 1ull << b;
	t->dirty |= DIRTY_HISTS;
}

#define NSCALARS (offsetof(struct mm_bpf_counts, mmap_lock_wait_hist) / sizeof(__u64))

/* @c (@t's process's entry) changed: in the changed map, once per tick of the loader. After the
 * counts were added: a loader that takes the entry out of the map after this test reads them. A
 * full map is counted (the loader then reads every entry at the next closing tick) and the next
 * change tries again. */
static __always_inline void mark_changed(struct thread *t, struct mm_bpf_counts *c)
{
	__u64 e = tick_epoch;
	if (c->epoch == e)
		return;
	c->epoch = e;
	__u8 one = 1;
	if (bpf_map_update_elem(&changed, &t->key, &one, BPF_ANY) < 0) {
		c->epoch = 0;
		stat_add(MM_BPF_CHANGES_UNMARKED);
	}
}

/* @t's process's entry, made on first use; NULL when the map is full. */
static __always_inline struct mm_bpf_counts *proc_entry(struct thread *t)
{
	struct mm_bpf_counts *c = bpf_map_lookup_elem(&procs, &t->key);
	if (!c) {
		__u32 z = 0;
		struct mm_bpf_counts *init = bpf_map_lookup_elem(&zero, &z);
		if (init)
			bpf_map_update_elem(&procs, &t->key, init, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&procs, &t->key);
	}
	return c;
}

/* Adds @t's counts to its process's entry (made on first use; atomic adds: the process's other
 * threads flush on other CPUs) and zeroes them. A full map's refusal is counted and the counts
 * wait for a later flush. */
static __noinline void flush(struct thread *t, __u64 now)
{
	t->flushed_ns = now;
	__u8 dirty = t->dirty;
	if (!dirty)
		return;
	t->dirty = 0;
	for (unsigned i = 0; i < NCLOSES; i++) {
		if (!t->closed[i])
			continue;
		stat_add_n(MM_BPF_WIN_COMPLETED + i, t->closed[i]);
		t->closed[i] = 0;
	}
	struct mm_bpf_counts *c = proc_entry(t);
	if (!c) {
		t->dirty = dirty; /* kept for a later flush, when the map has room */
		stat_add(MM_BPF_PROCS_DROPPED);
		return;
	}
	__u64 *src = (__u64 *)&t->acc, *dst = (__u64 *)c;
	if (dirty & DIRTY_SCALARS) {
		for (unsigned i = 0; i < NSCALARS; i++) {
			__u64 v = src[i];
			if (!v)
				continue;
			src[i] = 0;
			__sync_fetch_and_add(&dst[i], v);
		}
	}
	for (unsigned h = 0; h < MM_BPF_NHISTS && (dirty & DIRTY_HISTS); h++) {
		__u64 m = t->hmask[h];
		t->hmask[h] = 0;
		for (unsigned i = 0; i < MM_BPF_HIST_BUCKETS && (m >> i); i++) {
			if (!((m >> i) & 1))
				continue;
			unsigned k = NSCALARS + h * MM_BPF_HIST_BUCKETS + i;
			__u64 v = src[k];
			src[k] = 0;
			__sync_fetch_and_add(&dst[k], v);
		}
	}
	mark_changed(t, c);
	stat_add(MM_BPF_FLUSHES);
}

/* Adds 1 to the scalar at @off of @t's process entry at once (atomic; made on first use): for
 * the fallbacks collector's two counts, which come at most once or twice per fault fallback, so
 * a thread that only falls back has nothing to flush when it leaves the CPU (on_switch's flush was
 * most of its time: bpf_stats, swapin, 343 ns a switch). When the full map refuses the entry
 * (counted), the count waits in the thread's own counts for a flush, as flush() keeps them. */
static __noinline void proc_inc(struct thread *t, __u32 off)
{
	asm volatile("" : "+r"(off));
	if (off > NSCALARS - 1)
		return;
	struct mm_bpf_counts *c = proc_entry(t);
	if (!c) {
		stat_add(MM_BPF_PROCS_DROPPED);
		((__u64 *)counts(t))[off]++;
		return;
	}
	__sync_fetch_and_add((__u64 *)c + off, 1);
	mark_changed(t, c);
}

#define PROC_INC(t, field) proc_inc(t, offsetof(struct mm_bpf_counts, field) / sizeof(__u64))

/* The current thread's state; with @create made on first use (its key read then). */
static __always_inline struct thread *thread(bool create)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct thread *t = bpf_task_storage_get(&threads, task, 0,
						create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t) {
		if (create)
			stat_add(MM_BPF_NO_THREAD_STORAGE);
		return NULL;
	}
	if (!t->key.pid && !t->key.start_boottime_ns)
		key_of(task, &t->key);
	return t;
}

/* Flushes @t when it has run FLUSH_NS since its last flush. */
static __always_inline void flush_if_due(struct thread *t, __u64 now)
{
	if (now - t->flushed_ns > FLUSH_NS)
		flush(t, now);
}

static __always_inline unsigned hist_bucket(__u64 ns)
{
	unsigned i = 0;
	/* floor(log2(ns)), ns < 2 in bucket 0, as mm_hist_add(). */
#pragma unroll
	for (int b = 32; b > 0; b >>= 1) {
		if (ns >> b) {
			ns >>= b;
			i += b;
		}
	}
	return i < MM_BPF_HIST_BUCKETS ? i : MM_BPF_HIST_BUCKETS - 1;
}

/* Where the tracepoint fired: the site of enum mm_bpf_site in [first, last] whose function holds
 * the innermost of the first @frames kernel frames that lies in one (the trace helper, if any,
 * and the BPF trampoline come first), as plugins/faults.c reads a callchain; MM_BPF_SITE_OTHER if
 * none. Constant arguments only (the stack buffer's size). */
static __always_inline int site_of(void *ctx, int first, int last, const int frames)
{
	__u64 ips[MAX_SLEEP_FRAMES];
	long n = bpf_get_stack(ctx, ips, frames * sizeof(ips[0]), 0);
	if (n <= 0)
		return MM_BPF_SITE_OTHER;
#pragma unroll
	for (int i = 0; i < frames; i++) {
		if (i * 8 >= n)
			break;
#pragma unroll
		for (int k = first; k <= last; k++)
			if (ips[i] >= sites[k].lo && ips[i] < sites[k].hi)
				return k;
	}
	return MM_BPF_SITE_OTHER;
}

/* The site of a read start of the thread's own mm (on_start), among the sites [FALLBACK, @last]:
 * MM_BPF_SITE_OTHER if none.
 *
 * on_start is a classic tracepoint program: perf_trace_*() fetched its caller's registers for
 * it, so their ip is the site where the kernel inlines the trace call there (6.18:
 * lock_mm_and_find_vma() in mm/mmap_lock.c), read without unwinding. Only when it is the
 * out-of-line trace helper (every read start on 6.12; system calls' and __vmf_anon_prepare()'s
 * on 6.18), the tracepoint iterator (another probe on the tracepoint) or a
 * get_mmap_lock_carefully() the compiler kept apart (enum mm_bpf_trace_text) is a stack taken:
 * TRACE_FRAMES for the fallback site alone, MAX_FRAMES for the faults collector's, as
 * plugins/faults.c reads a callchain; and for the fallback site alone not even then where the
 * first frame is the helper on a kernel seen to trace the site inline (below). (bpf_stats,
 * bench swapin, ~50k read starts a second: a MAX_FRAMES stack from the tp_btf program this was,
 * which begins in the BPF trampoline, cost ~2 us, and any stack from here about as much; the
 * registers' ip ~0.25 us a run in all.) A cheaper test for system calls first (the entry
 * frame's orig_ax, with a mark from page_fault_kernel) was tried and dropped: it missed one
 * fallback of a fault in kernel mode in about one run of test_bpf in three, cause not found. */
static __always_inline int start_site(void *ctx, struct thread *t, const int last)
{
	/* perf_trace_*() stores its registers' address in the record's first 8 bytes for the
	 * program (perf_trace_run_bpf_submit()), which the verifier lets it read by helper only. */
	struct pt_regs *regs = NULL;
	__u64 ip = 0;
	if (bpf_probe_read_kernel(&regs, sizeof(regs), ctx) < 0 || !regs ||
	    bpf_probe_read_kernel(&ip, sizeof(ip), &regs->ip) < 0)
		return site_of(ctx, MM_BPF_SITE_FALLBACK, last, MAX_FRAMES);
#pragma unroll
	for (int k = MM_BPF_SITE_FALLBACK; k <= last; k++) {
		if (ip >= sites[k].lo && ip < sites[k].hi) {
			if (k == MM_BPF_SITE_FALLBACK && !site_inline)
				site_inline = 1;
			return k;
		}
	}
	int through = -1;
#pragma unroll
	for (int k = 0; k < MM_BPF_NTRACE_TEXT; k++)
		if (ip >= trace_text[k].lo && ip < trace_text[k].hi)
			through = k;
	if (through < 0)
		return MM_BPF_SITE_OTHER;
	/* Only the fallback site wanted, on a kernel that traces it inline: the helper is another
	 * caller's, but one in CHECK_EVERY still looks, and the first that finds the site there
	 * ends the shortcut (stat MM_BPF_SITE_THROUGH_HELPER). */
	if (through == MM_BPF_TRACE_HELPER && last == MM_BPF_SITE_FALLBACK && site_inline &&
	    !site_through_helper && (++t->helper_starts % CHECK_EVERY))
		return MM_BPF_SITE_OTHER;
	int site = site_of(ctx, MM_BPF_SITE_FALLBACK, last,
			   last == MM_BPF_SITE_FALLBACK ? TRACE_FRAMES : MAX_FRAMES);
	if (through == MM_BPF_TRACE_HELPER && site == MM_BPF_SITE_FALLBACK && site_inline &&
	    !site_through_helper) {
		site_through_helper = 1;
		stat_add(MM_BPF_SITE_THROUGH_HELPER);
	}
	return site;
}

/* mm->mm_lock_seq: odd while a writer holds mmap_lock (6.12: a seqcount_t begun at every write
 * acquisition, ended at release or downgrade). 0 where the kernel has no such seqcount. */
struct mm_struct___seqcount {
	seqcount_t mm_lock_seq;
} __attribute__((preserve_access_index));

static __always_inline __u32 lock_seq(struct mm_struct *mm)
{
	struct mm_struct___seqcount *m = (void *)mm;
	if (!bpf_core_field_exists(m->mm_lock_seq.sequence))
		return 0;
	return m->mm_lock_seq.sequence;
}

_Static_assert(__builtin_offsetof(struct mm_bpf_counts, faults_mmap_unknown) -
			       __builtin_offsetof(struct mm_bpf_counts, faults_vma) ==
		       MM_BPF_MMAP_UNKNOWN * sizeof(__u64),
	       "faults_vma .. faults_mmap_unknown must follow enum mm_bpf_outcome");

_Static_assert(MM_BPF_MMAP_UNKNOWN + 1 == MM_BPF_NOUTCOMES, "one histogram per outcome");

/* Adds the closed window's outcome to the thread's counts and returns it; -1 if no window was
 * open. */
static __always_inline int close_window(struct thread *t, enum mm_bpf_stat why)
{
	if (!t->win.open)
		return -1;
	t->win.open = 0;
	if (t->win_gen != duty_gen)
		stat_add(MM_BPF_WIN_LATE); /* counted all the same: see duty_gen */
	if (why != MM_BPF_WIN_EXIT)
		t->win.completed = 1; /* the thread went on after the fault (outcome.h) */
	unsigned k = why - MM_BPF_WIN_COMPLETED;
	asm volatile("" : "+r"(k));
	if (k < NCLOSES)
		t->closed[k]++;
	struct mm_bpf_counts *c = counts(t);
	unsigned o = mm_bpf_outcome_of(&t->win);
	asm volatile("" : "+r"(o)); /* bounded below, whatever register clang keeps it in */
	if (o > MM_BPF_MMAP_UNKNOWN)
		return -1;
	(&c->faults_vma)[o]++; /* the outcome counters follow enum mm_bpf_outcome */
	if (t->win.fallbacks) {
		c->faults_mmap_fallback++;
		c->faults_mmap_lock_retries += t->win.fallbacks - 1;
	}
	return (int)o;
}

/* A fold of the user general registers other than ip and sp. A fault's retry, its sleeps and
 * its fallback run in one exception, with the user registers untouched; a later fault of the same
 * loop has the same ip and sp but a different address in some register. With ip and sp alone, a
 * window left open past its burst (on_fault detached) took the next faults' swap-in sleeps at the
 * same instruction for its own: the kernel lab's patched swap runs then called 99% of the bursts'
 * completed faults vma_retry against 81% continuous (lab/results/split.md, 2026-12-03).
 * Folded in bursts only (duty_gen set): when the faults collector runs continuously on_fault
 * sees that next fault and closes the window itself, and a system call or signal handler after
 * the fault has another ip or sp, so the fold (15 loads and their rotations on every fault,
 * ~5% of on_fault's time) would tell nothing more. */
static __always_inline __u64 gprs_of(struct pt_regs *r)
{
	__u64 f = r->ax;
	f = (f << 7 | f >> 57) ^ r->bx;
	f = (f << 7 | f >> 57) ^ r->cx;
	f = (f << 7 | f >> 57) ^ r->dx;
	f = (f << 7 | f >> 57) ^ r->si;
	f = (f << 7 | f >> 57) ^ r->di;
	f = (f << 7 | f >> 57) ^ r->bp;
	f = (f << 7 | f >> 57) ^ r->r8;
	f = (f << 7 | f >> 57) ^ r->r9;
	f = (f << 7 | f >> 57) ^ r->r10;
	f = (f << 7 | f >> 57) ^ r->r11;
	f = (f << 7 | f >> 57) ^ r->r12;
	f = (f << 7 | f >> 57) ^ r->r13;
	f = (f << 7 | f >> 57) ^ r->r14;
	return (f << 7 | f >> 57) ^ r->r15;
}

/* Opens the faults collector's window of a user fault at @address, with its user registers
 * @regs (close_if_left() compares them, and only while a window is open). */
static __always_inline void open_window(struct thread *t, unsigned long address,
					struct pt_regs *regs)
{
	close_window(t, MM_BPF_WIN_NEXT_FAULT);
	__builtin_memset(&t->win, 0, sizeof(t->win));
	t->fault_ip = regs->ip;
	t->fault_sp = regs->sp;
	t->fault_gprs = duty_gen ? gprs_of(regs) : 0; /* only bursts need it: close_if_left() */
	t->nadded = 0;
	t->win.open = 1;
	t->win_gen = duty_gen;
	t->fault_address = address;
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	if (!mm)
		return;
	t->win.seq = lock_seq(mm);
	t->win.writer = t->win.seq & 1;
	if (!t->win.seq) /* or no mm_lock_seq in this kernel: the rwsem's writer bit */
		t->win.writer = mm->mmap_lock.count.counter & RWSEM_WRITER_LOCKED;
}

/* Whether @address lies in @mm's vDSO special mappings (outcome.h, "special"). Asked at a
 * window's first fallback, the only time the outcome reads it: mm->context is a cache line of
 * its own that no fault needs otherwise. */
static __always_inline bool special_mapping(struct mm_struct *mm, __u64 address)
{
#if defined(__TARGET_ARCH_x86)
	if (vdso_above) {
		__u64 vdso = (__u64)mm->context.vdso;
		return vdso && address + vdso_below >= vdso && address < vdso + vdso_above;
	}
#endif
	return false;
}

/* The mmap_lock tracepoints' arguments after mm. Up to 6.12 they pass the memcg path second
 * (`(mm, memcg_path, write[, success])`), since 6.13 not (`(mm, write[, success])`); the host's
 * BTF, which vmlinux.h and BPF_PROG's argument list come from, is the newer one, and a tp_btf
 * program reading 6.12's memcg_path pointer as `write` loads fine and counts every lock as a
 * write. The record's __data_loc_memcg_path field is there exactly when the argument is (CO-RE
 * against the running kernel's BTF). Each load is its own asm with a constant offset: plain C
 * lets clang select the offset and add it to ctx, which the verifier refuses ("dereference of
 * modified ctx ptr"). */
struct trace_event_raw_mmap_lock___memcg_path {
	__u32 __data_loc_memcg_path;
} __attribute__((preserve_access_index));

#define CTX_ARG(ctx, i)                                                                            \
	({                                                                                         \
		__u64 v_;                                                                          \
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(v_) : "r"(ctx), "i"((i)*8));          \
		v_;                                                                                \
	})
#define MMAP_LOCK_ARG(ctx, i)                                                                      \
	(bpf_core_field_exists(struct trace_event_raw_mmap_lock___memcg_path,                      \
			       __data_loc_memcg_path)                                              \
		 ? CTX_ARG(ctx, (i) + 1)                                                           \
		 : CTX_ARG(ctx, i))

static __always_inline bool own_mm(struct mm_struct *mm)
{
	struct task_struct *task = bpf_get_current_task_btf();
	return (__u64)task->mm == (__u64)mm;
}

_Static_assert((MM_BPF_TIMED_FAULTS & (MM_BPF_TIMED_FAULTS - 1)) == 0, "a power of two");

/* Whether @t's fault now is timed (counters.h, MM_BPF_TIMED_FAULTS): a draw from the thread's
 * own generator (Knuth's MMIX constants; its top bits), no helper call. Per fault, not every
 * n-th: a thread faulting alone on a CPU would otherwise time faults in step with that CPU's
 * completion events and sample none, or all, of them. */
static __always_inline bool timed(struct thread *t)
{
	if (!t->rnd) /* seeded once per thread */
		t->rnd = (__u64)bpf_get_prandom_u32() << 32 | 1;
	t->rnd = t->rnd * 6364136223846793005ull + 1442695040888963407ull;
	return (t->rnd >> 60) % MM_BPF_TIMED_FAULTS == 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if (reject_for_test)
		return *(volatile int *)reject_for_test; /* a scalar dereferenced: refused */
	if ((!count_mmaplock && !count_faults) || IDLE_BETWEEN_PERIODS())
		return 0;
	struct thread *t = thread(true);
	if (!t)
		return 0;
	/* The clock only for a fault whose latency may be kept: it was most of this program. A
	 * fault not timed has fault_start_ns 0, which on_fault_done and on_start read as "none". */
	__u64 now = timed(t) ? bpf_ktime_get_ns() : 0;
	if (count_mmaplock)
		counts(t)->faults++;
	t->fault_start_ns = now;
	t->fault_fellback = 0;
	if (count_faults) {
		if (duty_off) /* between bursts: the fault still ends the previous window */
			close_window(t, MM_BPF_WIN_NEXT_FAULT);
		else
			open_window(t, address, regs);
	}
	if (now) /* a thread that only faults flushes within FLUSH_NS + a few faults */
		flush_if_due(t, now);
	return 0;
}

/* A fault in kernel mode on user memory, for the fallbacks collector (kernel_mode_faults): x86
 * takes mmap_lock for it in lock_mm_and_find_vma() without a VMA-lock attempt, so
 * fallback_locks counts it, but it is no user fault's fallback. Not with page faults disabled
 * (the kernel does not handle those: copy_from_user_nofault), nor on a kernel address. A
 * program of its own: on_fault_kernel is the split's and detached between its bursts. */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_kernel_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if (!count_fallbacks || address >= MM_USER_ADDRESS_END)
		return 0;
	if (bpf_get_current_task_btf()->pagefault_disabled)
		return 0;
	struct thread *t = thread(true);
	if (t)
		PROC_INC(t, kernel_mode_faults);
	return 0;
}

/* A fault in kernel mode (copy_to_user() into a fresh page in a system call): the thread's user
 * fault is over, and x86 sends this one straight to lock_mm_and_find_vma()
 * (mmap_lock_by_fault_kernel). */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(on_fault_kernel, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	/* With page faults disabled (a user-stack unwind in an NMI during the user fault,
	 * copy_from_user_nofault) the kernel does not handle it: bad_area_nosemaphore(). */
	if (bpf_get_current_task_btf()->pagefault_disabled)
		return 0;
	struct thread *t = thread(false);
	if (t)
		close_window(t, MM_BPF_WIN_KERNEL_FAULT);
	return 0;
}

/* A fault completed (the software event of mm_account_fault, in the faulting thread). Only a
 * user-mode one ends the thread's user fault: a fault taken in kernel mode (uaccess) completes
 * with kernel regs. */
SEC("perf_event")
int on_fault_done(struct bpf_perf_event_data *ctx)
{
#if defined(__TARGET_ARCH_x86)
	/* A direct 8-byte load: the verifier rewrites ctx loads and refuses narrower ones. */
	__u64 cs = *(volatile __u64 *)((char *)ctx + offsetof(struct pt_regs, cs));
	if ((cs & 3) != 3)
		return 0;
#endif
	struct thread *t = thread(false);
	if (!t)
		return 0;
	/* The clock for a timed fault only (MM_BPF_TIMED_FAULTS), before the window's close. */
	__u64 now = t->fault_start_ns ? bpf_ktime_get_ns() : 0;
	int o = -1;
	if (count_faults && t->win.open) {
		o = close_window(t, MM_BPF_WIN_COMPLETED);
	}
	if (!now)
		return 0;
	__u64 start = t->fault_start_ns;
	t->fault_start_ns = 0;
	if (now < start)
		return 0;
	unsigned b = hist_bucket(now - start);
	struct mm_bpf_counts *c = &t->acc;
	if (count_mmaplock) {
		if (t->fault_fellback)
			hist_count(t, 2, c->fault_ns_mmap_hist, b);
		else
			hist_count(t, 1, c->fault_ns_vma_hist, b);
	}
	asm volatile("" : "+r"(o));
	if (o >= 0 && o < MM_BPF_NOUTCOMES)
		hist_count(t, 3 + (unsigned)o, c->fault_ns_outcome_hist[o], b);
	return 0;
}

/* Closes @t's window when the thread is no longer in that fault: the user registers at the top
 * of its kernel stack are not the fault's (a system call after it, or the next kernel entry).
 * Without a completion event for every fault (1 in MM_BPF_COMPLETION_PERIOD) a window stays open
 * after its fault until something closes it; this keeps a sleep in a later system call from
 * counting as the fault's (and from costing a stack walk). */
static __always_inline void close_if_left(struct thread *t)
{
	if (!t->win.open)
		return;
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (r->ip != t->fault_ip || r->sp != t->fault_sp ||
	    (duty_gen && gprs_of(r) != t->fault_gprs))
		close_window(t, MM_BPF_WIN_LEFT);
}

/* A classic tracepoint program returns whether perf may go on to deliver the record to the perf
 * events open on the tracepoint (perf_trace_run_bpf_submit()): 0 would hide every read start
 * from the perf path and from any other tracer. */
#define KEEP_RECORD 1

/* A classic tracepoint program, not tp_btf: see start_site(). Fields by CO-RE (6.12's record has
 * a memcg path before write). */
SEC("tracepoint/mmap_lock/mmap_lock_start_locking")
int on_start(struct trace_event_raw_mmap_lock *ctx)
{
	struct mm_struct *mm = ctx->mm;
	bool write = ctx->write;
	struct thread *t;
	if (write && !count_mmaplock) {
		/* Only the faults collector looks at write starts, and only in an open window: a
		 * thread that only writes (the bench's mprotect/munmap threads) gets no storage. */
		if (!count_faults || IDLE_BETWEEN_PERIODS())
			return KEEP_RECORD;
		t = thread(false);
		if (!t || !t->win.open)
			return KEEP_RECORD;
	} else {
		t = thread(true);
		if (!t)
			return KEEP_RECORD;
	}
	t->waiting = 1;
	t->contended = 0;
	t->wait_mm = (__u64)mm;
	/* A window its thread has left (a system call after the fault: the writers' munmap) is
	 * closed by its registers first, not found out by a stack walk of its start (~2 us). */
	if (count_faults)
		close_if_left(t);
	bool own = own_mm(mm), in_window = count_faults && t->win.open;
	int site = MM_BPF_SITE_NONE;
	if (own && (in_window || (!write && (count_fallbacks || count_mmaplock || count_faults))))
		/* Between the split's bursts the faults collector's sites are not needed either
		 * (mmap_lock_by_fault_other counts in bursts only). */
		site = count_faults && (in_window || !duty_off)
			       ? start_site(ctx, t, MM_BPF_SITE_HMF_OUTER)
			       : start_site(ctx, t, MM_BPF_SITE_FALLBACK);
	t->at_site = !write && site == MM_BPF_SITE_FALLBACK;
	t->pending_site = write ? MM_BPF_SITE_NONE : site;
	/* After the stack walk: the wait is the lock's, not this program's. Timed only where a
	 * wait is measured (the mmaplock collector's, a fault window's fallback): the first clock
	 * read of a run costs ~55 ns here (bpf_stats, bench swapin: 132 ns a run for a program
	 * that reads it, 76 for an empty one), a third of what a read start cost the default. */
	t->wait_start_ns = count_mmaplock || in_window ? bpf_ktime_get_ns() : 0;
	if (in_window) {
		if (!own || site == MM_BPF_SITE_OTHER) {
			/* A write lock of its own mm: the thread has left the fault (mmap, munmap,
			 * mprotect...). Not a read: reclaim inside a fault under memcg pressure
			 * takes those (6.12 MGLRU's walk_mm() trylocks the mmap_lock of this and
			 * other mms) with the fault's frames beyond the stack taken. The suspected
			 * cause of ~55 fallbacks per lab run (6.12, memcg) outside any window,
			 * which counted as kernel-mode faults' (to be checked in the next run). */
			if (own && write)
				close_window(t, MM_BPF_WIN_SYSCALL);
		} else if (site == MM_BPF_SITE_FALLBACK) {
			/* own: mm is current->mm, typed (the record's is a plain number). */
			struct mm_struct *cur = bpf_get_current_task_btf()->mm;
			if (!t->win.falling_back)
				t->win.special = special_mapping(cur, t->fault_address);
			if (write)
				t->win.no_vma = 1; /* the stack expansion's upgrade */
			else if (!t->win.falling_back && lock_seq(cur) != t->win.seq)
				t->win.writer = 1;
			t->win.falling_back = 1; /* a sleep in its wait is not an attempt */
		} else if (!t->win.falling_back) {
			t->win.attempt = 1; /* inside handle_mm_fault() under the VMA lock */
		}
	}
	if (!t->at_site)
		return KEEP_RECORD;
	if (t->fault_start_ns)
		t->fault_fellback = 1;
	if (!count_fallbacks)
		return KEEP_RECORD;
	/* As plugins/fallbacks.c: a start not right after a failed attempt is a new fallback. */
	if (!t->fb_failed) {
		PROC_INC(t, fallback_locks);
		t->fb_waited = 0;
	}
	t->fb_failed = 0;
	return KEEP_RECORD;
}

/* An index the verifier can bound whatever registers clang keeps it in. */
static __always_inline unsigned held_index(unsigned i)
{
	asm volatile("" : "+r"(i));
	return i & (MM_BPF_MAX_HELD - 1);
}

_Static_assert((MM_BPF_MAX_HELD & (MM_BPF_MAX_HELD - 1)) == 0, "a power of two");

/* Ends @t's write hold of @mm, adding its time to @t's counts. Returns false if @t did not hold
 * it. */
static __always_inline bool end_hold(struct thread *t, __u64 mm, __u64 now)
{
	unsigned n = t->nheld;
	if (!n || n > MM_BPF_MAX_HELD)
		return false;
#pragma unroll
	for (unsigned i = 0; i < MM_BPF_MAX_HELD; i++) {
		if (i >= n || t->held[i].mm != mm)
			continue;
		if (now >= t->held[i].since_ns)
			counts(t)->mmap_lock_write_hold_ns += now - t->held[i].since_ns;
		unsigned last = held_index(n - 1);
		t->held[i] = t->held[last];
		t->nheld = n - 1;
		return true;
	}
	return false;
}

/* A read acquisition on the fault path returned (faults collector): a fallback of the open user
 * fault, or of a fault taken in kernel mode (no window open), or a lock inside the fault. @now:
 * the clock if the caller read it, else 0 (read here if the fallback's wait was timed). */
static __always_inline void fault_acquired(struct thread *t, struct mm_struct *mm, __u64 now,
					   bool success)
{
	if (!success)
		return;
	struct mm_bpf_counts *c = counts(t);
	if (t->pending_site != MM_BPF_SITE_FALLBACK) {
		c->mmap_lock_by_fault_other++;
		return;
	}
	if (!t->win.open) {
		c->mmap_lock_by_fault_kernel++;
		return;
	}
	c->mmap_lock_by_fault++;
	t->win.fallbacks++;
	if (t->waiting && t->wait_mm == (__u64)mm && t->wait_start_ns) {
		if (!now)
			now = bpf_ktime_get_ns();
		if (now >= t->wait_start_ns)
			c->faults_mmap_lock_wait_ns += now - t->wait_start_ns;
	}
}

SEC("tp_btf/mmap_lock_acquire_returned")
int on_acquired(unsigned long long *ctx)
{
	struct mm_struct *mm = (void *)ctx[0];
	bool write = (bool)MMAP_LOCK_ARG(ctx, 1), success = (bool)MMAP_LOCK_ARG(ctx, 2);
	if (write && !count_mmaplock)
		return 0; /* the fallbacks and faults collectors count read acquisitions only */
	/* Only the mmaplock collector times every acquisition (see on_start's clock). */
	__u64 now = count_mmaplock ? bpf_ktime_get_ns() : 0;
	struct thread *t = thread(count_mmaplock);
	if (!t)
		return 0;
	if (count_mmaplock) {
		struct mm_bpf_counts *c = counts(t);
		if (!success)
			c->mmap_lock_trylock_fail++;
		else if (write)
			c->mmap_lock_write++;
		else
			c->mmap_lock_read++;
	}
	/* Between the split's bursts only a window still open (a late one) counts: the perf path
	 * counts the fault paths' acquisitions in bursts only, and without a window every fallback
	 * would pass for a kernel-mode fault's. */
	if (count_faults && !write && t->pending_site < MM_BPF_NSITES && (!duty_off || t->win.open))
		fault_acquired(t, mm, now, success);
	t->pending_site = MM_BPF_SITE_NONE;
	if (count_fallbacks && !write) {
		/* A failed attempt right after a start at the fallback site: it waits. */
		if (!success && t->at_site) {
			if (!t->fb_waited)
				PROC_INC(t, fallback_lock_waits);
			t->fb_waited = 1;
			t->fb_failed = 1;
		}
		t->at_site = 0;
	}
	if (!count_mmaplock)
		return 0;
	if (t->waiting) {
		if (t->wait_mm == (__u64)mm && now >= t->wait_start_ns) {
			__u64 wait = now - t->wait_start_ns;
			struct mm_bpf_counts *c = counts(t);
			c->mmap_lock_waits++;
			c->mmap_lock_wait_ns += wait;
			hist_count(t, 0, c->mmap_lock_wait_hist, hist_bucket(wait));
			if (t->contended)
				c->mmap_lock_contended++;
		} else {
			stat_add(MM_BPF_ACQUIRE_WITHOUT_START);
		}
		t->waiting = 0;
	}
	if (!write && success)
		end_hold(t, (__u64)mm, now); /* mmap_write_downgrade() */
	if (write && success) {
		unsigned n = t->nheld;
		if (n < MM_BPF_MAX_HELD) {
			unsigned k = held_index(n);
			t->held[k].mm = (__u64)mm;
			t->held[k].since_ns = now;
			t->nheld = n + 1;
		} else {
			stat_add(MM_BPF_HOLDS_TOO_NESTED);
		}
	}
	flush_if_due(t, now);
	return 0;
}

SEC("tp_btf/mmap_lock_released")
int on_released(unsigned long long *ctx)
{
	struct mm_struct *mm = (void *)ctx[0];
	bool write = (bool)MMAP_LOCK_ARG(ctx, 1);
	if (!count_mmaplock || !write)
		return 0;
	struct thread *t = thread(false);
	if (!t || !end_hold(t, (__u64)mm, bpf_ktime_get_ns()))
		stat_add(MM_BPF_RELEASE_WITHOUT_ACQUIRE);
	return 0;
}

/* --- the contention collector (plugins/contention.c's rules) --- */

#define LW_OPEN	 1 /* struct thread.lw[].used: a wait begun */
#define LW_ENDED 2 /* ended, not yet in its row (lock_rows()) */

/* An index the verifier can bound whatever registers clang keeps it in. */
static __always_inline unsigned lw_index(unsigned i)
{
	asm volatile("" : "+r"(i));
	return i & (MM_BPF_LOCK_PENDING - 1);
}

_Static_assert((MM_BPF_LOCK_PENDING & (MM_BPF_LOCK_PENDING - 1)) == 0, "a power of two");

/* struct mm_struct's owner (CONFIG_MEMCG), for mmap_locks of other processes' mms. */
struct mm_struct___owner {
	struct task_struct *owner;
} __attribute__((preserve_access_index));

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

#define PF_EXITING_FLAG	   0x00000004 /* include/linux/sched.h PF_EXITING */
#define RWSEM_READER_OWNED 1ul	      /* kernel/locking/rwsem.c: the owner field's flags */
#define RWSEM_OWNER_FLAGS  3ul
#define RWSEM_READER_SHIFT 8 /* the count's readers */

/* What a task in the kernel is doing, from the top pt_regs' orig_ax (holder.h): x86_64 system
 * call numbers of the calls that take mmap_lock, or -1 for a user page fault. */
static __always_inline __u32 op_of_syscall(long nr)
{
	switch (nr) {
	case 9: /* mmap */
		return MM_SRC_MMAP;
	case 10:  /* mprotect */
	case 329: /* pkey_mprotect */
		return MM_SRC_MPROTECT;
	case 11: /* munmap */
		return MM_SRC_MUNMAP;
	case 12: /* brk */
		return MM_SRC_BRK;
	case 25: /* mremap */
		return MM_SRC_MREMAP;
	case 27: /* mincore */
		return MM_SRC_MINCORE;
	case 28:  /* madvise */
	case 440: /* process_madvise */
		return MM_SRC_MADVISE;
	case 149: /* mlock, munlock, mlockall, munlockall */
	case 150:
	case 151:
	case 152:
	case 325: /* mlock2 */
		return MM_SRC_MLOCK;
	case 56: /* clone, fork, vfork */
	case 57:
	case 58:
	case 435: /* clone3 */
		return MM_SRC_FORK;
	case 59:  /* execve */
	case 322: /* execveat */
		return MM_SRC_EXEC;
	case 60:  /* exit */
	case 231: /* exit_group */
		return MM_SRC_EXIT;
	}
	/* Not a system call: the kernel was entered by an exception or an interrupt (their entry
	 * code sets orig_ax to -1), and of those only a page fault takes mmap_lock. */
	if (nr == -1)
		return MM_SRC_FAULT;
	return MM_SRC_OTHER;
}

/* Who held the mmap_lock at @addr (of @lock_mm) when a wait on it began (holder.h): the rwsem's
 * owner field names the writer, or one of the readers as a hint (kept only while the count
 * shows readers: the field is not cleared when readers let go).
 * A writer in the field held the lock when the field was read (it is set after the lock is taken
 * and cleared before it is let go), and a task cannot exit holding a lock; its task_struct and
 * stack are freed only an RCU grace period after it has exited, and this program runs inside an
 * RCU read-side section: so it is read as it is, with no lookup and no reference taken. (With
 * the holder read, on_contention took 3.9 us a run on bench mix against 2.3 us before, 1.7-2.0
 * against 1.5 us on swapin, bpf_stats, 2026-12-06, with or without bpf_task_from_pid for
 * writers alike; where the rest goes was not measured.) A
 * writer that lets go meanwhile is still the one the wait began behind (checking that it still
 * owned the lock lost 6.6% of the waits behind holder_workload's mprotect thread against a
 * pairing of the events, test_holders.sh); what it does is read a moment later. A reader hint
 * may name a task long gone: it is read only when a live task has its pid and is the same task.
 * Anything less is MM_HOLDER_UNKNOWN, never a guess. */
static __noinline void read_holder(struct mm_bpf_lock_key *k, __u64 addr, __u64 lock_mm)
{
	struct rw_semaphore *sem = (void *)addr;
	__u64 owner = (__u64)BPF_CORE_READ(sem, owner.counter);
	__u64 count = (__u64)BPF_CORE_READ(sem, count.counter);
	__u64 ptr = owner & ~RWSEM_OWNER_FLAGS;
	bool reader = owner & RWSEM_READER_OWNED;

	k->holder_mode = MM_HOLDER_UNKNOWN;
	k->holder_op = MM_SRC_UNKNOWN;
	if (!ptr || (reader && !(count >> RWSEM_READER_SHIFT)))
		return;
	struct task_struct *task = (void *)ptr;
	if (reader) {
		struct task_struct *live = bpf_task_from_pid(BPF_CORE_READ(task, pid));
		if (!live)
			return;
		bool same = (__u64)live == ptr;
		bpf_task_release(live);
		if (!same)
			return;
	}
	__u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	__u32 tflags = BPF_CORE_READ(task, flags);
	__u64 tmm = (__u64)BPF_CORE_READ(task, mm);
	/* Its pt_regs lie where current's do in its own stack (task_pt_regs()). */
	struct task_struct *cur = bpf_get_current_task_btf();
	__u64 regs_off = (__u64)bpf_task_pt_regs(cur) - (__u64)cur->stack;
	struct pt_regs *regs = (void *)((__u64)BPF_CORE_READ(task, stack) + regs_off);
	long nr = (long)BPF_CORE_READ(regs, orig_ax);
	k->holder_pid = tgid + 1;
	k->holder_tid = tid;
	k->holder_mode = reader ? MM_HOLDER_READ : MM_HOLDER_WRITE;
	if (tflags & PF_EXITING_FLAG)
		k->holder_op = MM_SRC_EXIT;
	else if (tmm != lock_mm)
		k->holder_op = MM_SRC_REMOTE;
	else
		k->holder_op = op_of_syscall(nr);
}

/* Names the lock of a wait: an rwsem that is current's own mm's mmap_lock, or another mm's (a
 * remote reader: /proc/PID/maps), is "mmap_lock" of the process owning the mm, as the perf path
 * learns owners from the mmap_lock events; anything else is its address. An mmap_lock's holder
 * is read too (read_holder()). */
static __always_inline void name_lock(struct mm_bpf_lock_key *k, __u64 addr, unsigned flags)
{
	k->holder_pid = 0;
	k->holder_tid = 0;
	k->holder_mode = MM_HOLDER_NONE;
	k->holder_op = 0;
	k->kind = MM_BPF_LOCK_ADDR;
	k->lock = addr;
	if (!(flags & (LCB_F_READ | LCB_F_WRITE)) ||
	    (flags & (LCB_F_SPIN | LCB_F_RT | LCB_F_PERCPU | LCB_F_MUTEX)))
		return;
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = task->mm;
	__u64 off = bpf_core_field_offset(struct mm_struct, mmap_lock);
	if (mm && (__u64)mm + off == addr) {
		k->kind = MM_BPF_LOCK_MMAP;
		k->lock = (__u64)task->tgid + 1;
		read_holder(k, addr, (__u64)mm);
		return;
	}
	struct mm_struct___owner *cand = (void *)(addr - off);
	if (!bpf_core_field_exists(cand->owner))
		return;
	struct task_struct *owner = BPF_CORE_READ(cand, owner);
	if (owner && (__u64)BPF_CORE_READ(owner, mm) == (__u64)cand) {
		k->kind = MM_BPF_LOCK_MMAP;
		k->lock = (__u64)BPF_CORE_READ(owner, tgid) + 1;
		read_holder(k, addr, (__u64)cand);
	}
}

/* --- the path cache: a contention's stack without the stack walk ---
 *
 * bpf_get_stack() costs ~3 us a contention whatever it finds (bench mix, --collectors all on BPF:
 * on_contention 2.9 us a run at 11-17 k contentions a second, 2-3% of the workload's CPU, most of
 * what the contention collector costs). The frames it returns past this program's own are return
 * addresses on the kernel stack above the tracepoint's argument array (a tp_btf program's ctx:
 * bpf_trace_run2()'s local array), each at a fixed distance from it for a given call path. So
 * the first walk of a path also finds where its frames lie in the LOCK_WINDOW bytes above ctx
 * (learn_path(): all of them, in order, from the first that lies there: the frames before it are
 * this program's and the BPF dispatch's, the same for every contention), and keeps (frames,
 * offsets) in lock_paths under ctx's depth in its stack and the begin's flags, in one of
 * LOCK_WAYS ways (paths share depths). A later contention with that depth and flags reads the
 * window and takes a way's frames only if every frame from the first is at its offset, else it
 * walks (and learns, into a free way or the next in turn). A wrong hit would need
 * another path whose stack holds all of those return addresses at those offsets. One cached stack
 * in CHECK_EVERY per thread is walked all the same and compared: lock_stacks_cache_wrong counts
 * disagreements (the tests require 0); lock_stacks_from_cache and lock_stacks_walked say how
 * often it pays (bench mix, --collectors all on BPF: 95% from the cache; on_contention 2.9 ->
 * 1.1 us a run; what still walks: the check walks, paths seen for the first time or again after
 * more than LOCK_WAYS others with their depth and flags, and paths that cross from an
 * interrupt's stack to the task's, whose outer frames are not in the window).
 * (Not the program's frame pointer r10: since 6.13 a tracing program's stack may be a private
 * per-CPU one, not the kernel stack.) */
#define LOCK_WINDOW 2048 /* bytes of stack above ctx searched for a path's frames */
#define LOCK_WORDS  (LOCK_WINDOW / 8)
#define LOCK_DEPTH  0x3fff /* ctx's offset in its (16 KiB-aligned) stack: part of the key */
#define LOCK_GLUE   3	   /* frames before the window at most (program, subprogram, dispatch) */
#define LOCK_WAYS   4	   /* paths kept per depth and flags (several share them) */

_Static_assert((LOCK_WORDS & (LOCK_WORDS - 1)) == 0, "a power of two");
_Static_assert(MM_BPF_LOCK_FRAMES <= 16, "lock_path.off[] indexed with & 15");

struct lock_path {
	__u64 ips[MM_BPF_LOCK_FRAMES];
	__u16 off[16]; /* bytes from ctx to ips[i] on the stack, for i >= first */
	__u32 n;       /* frames */
	__u32 first;   /* the first frame in the window */
};

struct lock_path_key {
	__u32 depth; /* ctx's offset in its stack */
	__u32 flags; /* contention_begin's */
	__u32 way;   /* one of LOCK_WAYS paths with the above */
};

struct lock_scratch {
	__u64 base; /* ctx: an address, no longer a pointer to the verifier */
	__u64 words[LOCK_WORDS];
	struct lock_path path;
	struct lock_path_key key;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lock_scratch);
} lock_scratch SEC(".maps");

/* Not preallocated: a path replaced on one CPU while another compares against it is freed only
 * after that program ends (RCU), so a comparison never sees half of two paths. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, struct lock_path_key);
	__type(value, struct lock_path);
} lock_paths SEC(".maps");

/* learn_word()'s state: the window's words (read bytes / 8), and the frame looked for next,
 * from the outermost down. */
struct learn_ctx {
	struct lock_scratch *s;
	__u32 words;
	__u32 i;
};

/* The learning scan's step: word @j from the window's top down. From the top: a stale copy of a
 * frame's return address (left by an earlier, deeper call) lies in an inner frame, below the
 * frame's own slot, so the first match from the top is the slot itself. */
static long learn_word(__u64 j, struct learn_ctx *c)
{
	struct lock_scratch *s = c->s;
	if (j >= c->words)
		return 0;
	__u32 at = c->words - 1 - (__u32)j;
	__u32 i = c->i;
	if (i < 1 || i >= MM_BPF_LOCK_FRAMES)
		return 1;
	if (s->words[at & (LOCK_WORDS - 1)] == s->path.ips[i]) {
		s->path.off[i & 15] = (__u16)(at * 8);
		s->path.first = i;
		c->i = i - 1;
	}
	return 0;
}

/* Reads @size bytes of the stack above ctx into s->words. */
static __always_inline bool read_window(struct lock_scratch *s, __u32 size)
{
	if (size == 0 || size > LOCK_WINDOW)
		return false;
	/* The same size, in a form the verifier bounds whichever register clang checked. */
	asm volatile("" : "+r"(size));
	size = ((size - 1) & (LOCK_WINDOW - 1)) + 1;
	return bpf_probe_read_kernel(s->words, size, (void *)s->base) == 0;
}

/* s->path.ips (@n frames, just walked): where its frames lie above ctx, kept under s->key when
 * all of them from the first were found. */
static __always_inline void learn_path(struct lock_scratch *s, long n)
{
	if (n <= LOCK_GLUE || n > MM_BPF_LOCK_FRAMES)
		return;
	s->path.n = (__u32)n;
	s->path.first = 0;
	/* Up to the stack's top (16 KiB-aligned stacks; a guard page follows), else shorter. */
	__u32 to_top = LOCK_DEPTH + 1 - (__u32)(s->base & LOCK_DEPTH);
	__u32 size = to_top < LOCK_WINDOW ? to_top : LOCK_WINDOW;
	if (!read_window(s, size)) {
		size = LOCK_WINDOW / 4;
		if (!read_window(s, size))
			return;
	}
	/* Every frame from the outermost down, in order (learn_word() looks for a frame only once
	 * the one above it was found): learned if that reached one of frames 1..LOCK_GLUE. */
	struct learn_ctx c = {.s = s, .words = size / 8, .i = (__u32)n - 1};
	bpf_loop(LOCK_WORDS, learn_word, &c, 0);
	if (s->path.first >= 1 && s->path.first <= LOCK_GLUE)
		bpf_map_update_elem(&lock_paths, &s->key, &s->path, BPF_ANY);
}

/* @p's frames from its first, each at its offset in the window just read? */
static __always_inline bool path_holds(struct lock_scratch *s, struct lock_path *p, __u32 pn)
{
	__u32 first = p->first;
	bool found = first >= 1 && first <= LOCK_GLUE;
#pragma unroll
	for (unsigned i = 1; i < MM_BPF_LOCK_FRAMES; i++)
		if (i >= first && i < pn &&
		    s->words[(p->off[i] / 8) & (LOCK_WORDS - 1)] != p->ips[i])
			found = false;
	return found;
}

/* try_way()'s state. */
struct way_ctx {
	struct lock_scratch *s;
	__u32 have;	/* bytes of the window read */
	__u32 free_way; /* the first way with no path, LOCK_WAYS if none */
	__u32 hit;	/* a way's path holds: its frames are in s->path.ips */
};

/* Way @w of s->key: its path, if it holds, copied to s->path.ips (stops the loop). A callback of
 * bpf_loop(), verified once: unrolled, the ways' combinations were too many for the verifier. */
static long try_way(__u64 w, struct way_ctx *c)
{
	struct lock_scratch *s = c->s;
	s->key.way = (__u32)w;
	struct lock_path *p = bpf_map_lookup_elem(&lock_paths, &s->key);
	if (!p) {
		if (c->free_way == LOCK_WAYS)
			c->free_way = (__u32)w;
		return 0;
	}
	__u32 pn = p->n;
	asm volatile("" : "+r"(pn));
	if (pn <= LOCK_GLUE || pn > MM_BPF_LOCK_FRAMES)
		return 0;
	__u32 end = p->off[(pn - 1) & 15] + 8u;
	if (end > c->have) {
		if (!read_window(s, end))
			return 1;
		c->have = end;
	}
	if (!path_holds(s, p, pn))
		return 0;
#pragma unroll
	for (unsigned i = 0; i < MM_BPF_LOCK_FRAMES; i++)
		s->path.ips[i] = p->ips[i];
	c->hit = 1;
	return 1;
}

/* Fills @ips (MM_BPF_LOCK_FRAMES, 0 past the stack's end) with the stack of the contention this
 * lock_begin() runs for: from the path cache when it holds this path, else walked. One
 * bpf_get_stack() call site: its return address is the stack's first frame. */
static __always_inline void lock_stack(void *ctx, struct thread *t, unsigned flags, __u64 *ips)
{
	__u32 z = 0;
	struct lock_scratch *s = bpf_map_lookup_elem(&lock_scratch, &z);
	if (!s) { /* never: a one-element array; the verifier wants the check */
		__builtin_memset(ips, 0, MM_BPF_LOCK_FRAMES * 8);
		return;
	}
	/* Stored as a pointer, read back (volatile: a real load) as a number. */
	s->base = (__u64)ctx;
	s->key.depth = (__u32)(*(volatile __u64 *)&s->base & LOCK_DEPTH);
	s->key.flags = flags;
	/* The ways in turn (try_way()), a path learned into the first free one. */
	struct way_ctx c = {.s = s, .free_way = LOCK_WAYS};
	bpf_loop(LOCK_WAYS, try_way, &c, 0);
	bool cached = c.hit;
	if (cached) {
#pragma unroll
		for (unsigned i = 0; i < MM_BPF_LOCK_FRAMES; i++)
			ips[i] = s->path.ips[i];
		if (++t->stack_hits % CHECK_EVERY) {
			stat_add(MM_BPF_LOCK_STACK_CACHED);
			return;
		}
	}
	/* Walked: a path not cached, or the check of one that is. */
	long n = bpf_get_stack(ctx, s->path.ips, sizeof(s->path.ips), 0);
	stat_add(MM_BPF_LOCK_STACK_WALKED);
	if (n < 0)
		n = 0;
	bool same = true;
#pragma unroll
	for (unsigned i = 0; i < MM_BPF_LOCK_FRAMES; i++) {
		if (i * 8 >= n)
			s->path.ips[i] = 0;
		if (s->path.ips[i] != ips[i])
			same = false;
		ips[i] = s->path.ips[i];
	}
	if (cached && same)
		return;
	if (cached)
		stat_add(MM_BPF_LOCK_STACK_WRONG);
	/* Into a free way, else one in turn. */
	s->key.way = c.free_way < LOCK_WAYS ? c.free_way : (t->stack_hits++ % LOCK_WAYS);
	learn_path(s, n / 8);
}

static __noinline void lock_rows(struct thread *t);

/* A wait begins: paired per thread and lock address as plugins/contention.c on_begin(). */
static __noinline void lock_begin(void *ctx, __u64 addr, unsigned flags)
{
	struct thread *t = thread(true);
	if (!t)
		return;
	lock_rows(t); /* no LW_ENDED slot from here on */
	int slot = -1;
	for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
		if (!t->lw[i].used || t->lw[i].addr != addr)
			continue;
		/* A mutex that stops spinning and sleeps begins again: the first counts. */
		if (t->lw[i].key.flags == (LCB_F_MUTEX | LCB_F_SPIN) && flags == LCB_F_MUTEX)
			return;
		stat_add(MM_BPF_LOCK_BEGIN_NO_END);
		t->lw[i].used = 0;
	}
	if (!(flags & LCB_F_SPIN)) {
		/* A thread sleeps on one lock at a time. */
		for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
			if (t->lw[i].used && !(t->lw[i].key.flags & LCB_F_SPIN)) {
				stat_add(MM_BPF_LOCK_BEGIN_NO_END);
				t->lw[i].used = 0;
				break;
			}
		}
	}
	__u64 oldest = ~0ull;
	int old = 0;
	for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
		if (!t->lw[i].used) {
			slot = (int)i;
			break;
		}
		if (t->lw[i].begin_ns < oldest) {
			oldest = t->lw[i].begin_ns;
			old = (int)i;
		}
	}
	if (slot < 0) {
		stat_add(MM_BPF_LOCK_BEGIN_NO_END);
		slot = old;
	}
	unsigned k = lw_index((unsigned)slot);
	struct mm_bpf_lock_key *key = &t->lw[k].key;
	key->pid = t->key.pid;
	key->flags = flags;
	key->gen = 0;
	name_lock(key, addr, flags);
	lock_stack(ctx, t, flags, key->ips);
	t->lw[k].addr = addr;
	t->lw[k].used = LW_OPEN;
	/* After the stack walk: the wait is the lock's, not this program's. */
	t->lw[k].begin_ns = bpf_ktime_get_ns();
}

/* Adds the thread's ended waits to their rows of this window's generation (lock_waits). Not at
 * contention_end itself: that fires once the waiter holds the lock, so what runs there lengthens
 * the hold every other waiter of the lock waits out (an rwsem's writer: mprotect's mmap_lock,
 * which the faulting readers queue behind). Done at the thread's next contention_begin (about to
 * wait anyway), when it leaves the CPU, and at its exit; the loader reads the rows at its ticks,
 * so a wait reaches them at most that late, in the window it was added in (bench mix,
 * 2026-12-03: the contention collector cost ~2 points of throughput with the row update in the
 * hold, where its programs took ~1% of the CPU). */
static __noinline void lock_rows(struct thread *t)
{
	for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
		if (t->lw[i].used != LW_ENDED)
			continue;
		t->lw[i].used = 0;
		__u64 wait = t->lw[i].wait_ns;
		struct mm_bpf_lock_key *key = &t->lw[i].key;
		key->gen = lock_gen;
		struct mm_bpf_lock_value *v = bpf_map_lookup_elem(&lock_waits, key);
		if (!v) {
			__u32 z = 0;
			struct mm_bpf_lock_value *init = bpf_map_lookup_elem(&lock_zero, &z);
			if (init) {
				init->min_ns = ~0ull;
				bpf_map_update_elem(&lock_waits, key, init, BPF_NOEXIST);
			}
			v = bpf_map_lookup_elem(&lock_waits, key);
		}
		if (!v) {
			stat_add(MM_BPF_LOCK_ROWS_DROPPED);
			continue;
		}
		/* Other CPUs add to the row too: atomic adds; the extremes are plain stores, as
		 * perf lock contention -b keeps them (two waits of one row ending at the same
		 * instant may keep the wrong one). */
		__sync_fetch_and_add(&v->contended, 1);
		__sync_fetch_and_add(&v->wait_ns, wait);
		if (wait > v->max_ns)
			v->max_ns = wait;
		if (wait < v->min_ns)
			v->min_ns = wait;
		unsigned b = hist_bucket(wait);
		asm volatile("" : "+r"(b));
		if (b < MM_BPF_HIST_BUCKETS)
			__sync_fetch_and_add(&v->hist[b], 1);
	}
}

/* A wait ends: its length kept in its slot until lock_rows(). */
static __noinline void lock_end(__u64 addr)
{
	__u64 now = bpf_ktime_get_ns();
	struct thread *t = thread(false);
	if (!t) {
		stat_add(MM_BPF_LOCK_END_NO_BEGIN);
		return;
	}
	for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
		if (t->lw[i].used != LW_OPEN || t->lw[i].addr != addr)
			continue;
		t->lw[i].used = LW_ENDED;
		t->lw[i].wait_ns = now >= t->lw[i].begin_ns ? now - t->lw[i].begin_ns : 0;
		return;
	}
	stat_add(MM_BPF_LOCK_END_NO_BEGIN);
}

/* Waits a thread still had open when it exited: their ends were lost. */
static __always_inline void lock_exit(struct thread *t)
{
	lock_rows(t);
	for (unsigned i = 0; i < MM_BPF_LOCK_PENDING; i++) {
		if (t->lw[i].used) {
			t->lw[i].used = 0;
			stat_add(MM_BPF_LOCK_BEGIN_NO_END);
		}
	}
}

/* tp_btf, not a classic tracepoint program as on_start: trace_call_bpf() drops the perf record
 * of a tracepoint with a classic program when it fires while such a program already runs on the
 * CPU (bpf_prog_active), and contention_begin does, from interrupts, during this program's stack
 * walk: perf lock record beside it lost begins and paired the rest wrong (waits of 15 s).
 * (mmap_lock_start_locking, on_start's, is not traced from interrupts.) The stack is ~3 us whatever
 * its depth (the unwinder walks the program's own frames to reach the tracepoint's) plus ~0.2 us a
 * frame (bpf_stats, bench_mix, --collectors all: 6.4 us a run with 14 frames, 0.26 us without a
 * stack). */
SEC("tp_btf/contention_begin")
int BPF_PROG(on_contention, void *lock_ptr, unsigned int flags)
{
	__u64 lock = (__u64)lock_ptr;
	if (count_mmaplock) {
		struct thread *t = thread(false);
		if (t && t->waiting && (flags & (LCB_F_READ | LCB_F_WRITE)) &&
		    !(flags & LCB_F_SPIN))
			t->contended = 1;
	}
	if (count_contention)
		lock_begin(ctx, lock, flags);
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(on_contention_end, void *lock, int ret)
{
	if (count_contention)
		lock_end((__u64)lock);
	return 0;
}

/* The thread leaves the CPU (it is still current here): its counts are flushed, so a sleeping
 * thread's are all in the map. For the faults collector, a voluntary sleep of a thread in a fault
 * window before any fallback: handle_mm_fault() runs under the VMA lock (lock_vma_under_rcu()
 * and what precedes it never sleep). Where it sleeps, from a short stack taken only here: inside
 * __folio_lock_or_retry() a VM_FAULT_RETRY follows; elsewhere (reclaim, allocation, writeback)
 * the fault goes on. Involuntary switches (preemption, prev_state TASK_RUNNING) say nothing. */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	bool idle = IDLE_BETWEEN_PERIODS();
	if (idle && !count_contention)
		return 0;
	struct thread *t = thread(false);
	if (!t)
		return 0;
	if (count_contention)
		lock_rows(t);
	if (idle)
		return 0;
	if (count_faults && !preempt && prev_state)
		close_if_left(t);
	if (count_faults && !preempt && prev_state && t->win.open && !t->win.falling_back) {
		t->win.attempt = 1;
		if (!t->win.retry_sleep && t->win.sleeps < MM_BPF_SLEEP_STACKS) {
			t->win.sleeps++;
			if (site_of(ctx, MM_BPF_SITE_LOCK_RETRY, MM_BPF_SITE_LOCK_RETRY,
				    MAX_SLEEP_FRAMES) == MM_BPF_SITE_LOCK_RETRY)
				t->win.retry_sleep = 1;
		}
	}
	if (t->dirty)
		flush(t, bpf_ktime_get_ns());
	return 0;
}

/* filemap_fault() ran for a page: an attempt (once per call, so a second one on the same page
 * is a retry). */
SEC("tp_btf/mm_filemap_fault")
int BPF_PROG(on_filemap_fault, struct address_space *mapping, unsigned long index)
{
	if (IDLE_BETWEEN_PERIODS())
		return 0;
	struct thread *t = thread(false);
	if (!t || !t->win.open)
		return 0;
	if (!t->win.falling_back)
		t->win.attempt = 1;
	if (!t->win.have_page) {
		t->win.have_page = 1;
		t->win.mapping = (__u64)mapping;
		t->win.index = index;
	}
	if (t->win.mapping == (__u64)mapping && t->win.index == index && t->win.same_page < 255)
		t->win.same_page++;
	return 0;
}

/* Fault-around mapped [index, last_index] of a file: after an attempt on a page in that range,
 * the retried attempt completing (under the VMA lock if no fallback came before). */
SEC("tp_btf/mm_filemap_map_pages")
int BPF_PROG(on_map_pages, struct address_space *mapping, unsigned long index,
	     unsigned long last_index)
{
	if (IDLE_BETWEEN_PERIODS())
		return 0;
	struct thread *t = thread(false);
	if (!t || !t->win.open || !t->win.have_page || t->win.falling_back)
		return 0;
	if (t->win.mapping == (__u64)mapping && index <= t->win.index &&
	    t->win.index <= last_index && t->win.same_page < 255)
		t->win.same_page++;
	return 0;
}

/* A page entered the page cache: the second time in one window, I/O that a retry repeated. */
SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(on_added, struct folio *folio)
{
	if (IDLE_BETWEEN_PERIODS())
		return 0;
	struct thread *t = thread(false);
	if (!t)
		return 0;
	close_if_left(t); /* read() and readahead in system calls add pages too */
	if (!t->win.open)
		return 0;
	__u64 mapping = (__u64)folio->mapping, index = folio->index;
	unsigned n = t->nadded;
	bool again = false;
	for (unsigned i = 0; i < MM_BPF_MAX_ADDED && i < n; i++)
		again |= t->added[i].mapping == mapping && t->added[i].index == index;
	if (again)
		counts(t)->faults_pages_reread++;
	else if (n < MM_BPF_MAX_ADDED) {
		unsigned k = n & (MM_BPF_MAX_ADDED - 1);
		t->added[k].mapping = mapping;
		t->added[k].index = index;
		t->nadded = n + 1;
	}
	return 0;
}

_Static_assert((MM_BPF_MAX_ADDED & (MM_BPF_MAX_ADDED - 1)) == 0, "a power of two");

/* A thread exits (its open fault is over, its counts are flushed); for the last thread of a
 * process, the process's counters are final: 6.12 passes only the task, 6.18 also group_dead;
 * signal->live reached 0 in do_exit() before this tracepoint on both. (Another thread of the
 * process that is past that point but not yet here flushes after the notification: its counts
 * since its last flush make a new entry, which the loader finds gone at its next sweep.) */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	struct thread *t = thread(false);
	if (t) {
		if (count_faults)
			close_window(t, MM_BPF_WIN_EXIT);
		if (count_contention)
			lock_exit(t);
		flush(t, bpf_ktime_get_ns());
	}
	if (p->signal->live.counter != 0)
		return 0;
	struct mm_bpf_exit *e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);
	if (!e) {
		stat_add(MM_BPF_EXITS_LOST);
		return 0;
	}
	key_of(p, &e->key);
	if (bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->group_leader->comm) < 0)
		e->comm[0] = '\0';
	bpf_ringbuf_submit(e, 0);
	return 0;
}
