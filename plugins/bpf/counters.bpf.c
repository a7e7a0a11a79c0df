// SPDX-License-Identifier: GPL-2.0-only
/*
 * counters.bpf.c: the in-kernel half of the BPF source (daemon/bpfsource.c loads it). It counts,
 * per process, what the mmaplock and fallbacks collectors count from perf samples, on the same
 * tracepoints, without writing a sample: per-thread state lives in task storage, per-process
 * counters in a per-CPU hash keyed by (tgid, group leader's start_boottime) that user space reads
 * once per tick; when the last thread of a process exits, its key goes through a ring buffer so
 * the loader settles it once and deletes it (the map stays bounded by live processes).
 *
 * Attached (tp_btf: typed arguments, no record format to parse):
 *   exceptions:page_fault_user            faults
 *   mmap_lock:mmap_lock_start_locking     a wait begins (blocking acquisitions and, since 6.x,
 *                                         trylocks); a read start inside lock_mm_and_find_vma()
 *                                         is a fault fallback
 *   mmap_lock:mmap_lock_acquire_returned  acquisitions by mode, failed trylocks, waits, write
 *                                         holds begin (a read acquisition ends one: downgrade)
 *   mmap_lock:mmap_lock_released          write holds end
 *   lock:contention_begin                 a sleeping rwsem wait between start and acquired
 *   sched:sched_process_exit              the last thread of a process exits
 * and, as perf_event programs, the minor-faults and major-faults software events on every CPU:
 * mm_account_fault() fires one of them when a fault completes (not on VM_FAULT_RETRY or an
 * error; a retried fault is major), so page_fault_user -> that event is the fault's latency,
 * kept in one of two log2 histograms per process: with or without an mmap_lock fallback (a read
 * start at the fallback site) in between.
 * The rules are those of plugins/mmaplock.c and plugins/fallbacks.c, event for event; where they
 * differ it is in what the perf path could not see: the fallback site is found in a short kernel
 * stack (up to MAX_FRAMES frames, taken only for read starts on the thread's own mm) instead of
 * the sample IP, so kernels that fire the tracepoint from the out-of-line trace helper (6.12)
 * are counted too.
 *
 * Everything the loader decides before load is in .rodata (count_*, site_*, reject_for_test), so
 * the verifier removes what is not used.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "counters.h"

char LICENSE[] SEC("license") = "GPL";

/* Flags of lock:contention_begin (include/trace/events/lock.h). */
#define LCB_F_SPIN  (1U << 0)
#define LCB_F_READ  (1U << 1)
#define LCB_F_WRITE (1U << 2)

#define MAX_FRAMES 8

const volatile bool count_mmaplock = false;
const volatile bool count_fallbacks = false;
/* [site_lo, site_hi): lock_mm_and_find_vma() in this kernel's text (from /proc/kallsyms). */
const volatile __u64 site_lo = 0, site_hi = 0;
/* Set by the loader for the rejection test only: makes the verifier refuse the program. */
const volatile __u64 reject_for_test = 0;

struct thread {
	__u64 fault_start_ns; /* page_fault_user of a fault not completed yet, else 0 */
	__u8 fault_fellback;  /* that fault fell back to mmap_lock */
	__u64 wait_start_ns;  /* mmap_lock_start_locking, while waiting */
	__u64 wait_mm;
	__u8 waiting;	/* between start_locking and acquire_returned */
	__u8 contended; /* a sleeping rwsem contention in that wait */
	__u8 at_site;	/* the pending read start is lock_mm_and_find_vma's */
	__u8 fb_failed; /* the last attempt there failed: the next start is its retry */
	__u8 fb_waited; /* the fallback in progress has counted its wait */
	__u8 nheld;	/* mmap_locks held for write (fork nests two) */
	struct {
		__u64 mm, since_ns;
	} held[MM_BPF_MAX_HELD];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384); /* the loader may resize before load */
	__type(key, struct mm_bpf_key);
	__type(value, struct mm_bpf_counts);
} procs SEC(".maps");

/* A zeroed value to create process entries from (too large for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_bpf_counts);
} zero SEC(".maps");

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

static __always_inline void stat_add(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);
	if (v)
		(*v)++;
}

static __always_inline void key_of(struct task_struct *task, struct mm_bpf_key *key)
{
	key->pid = BPF_CORE_READ(task, tgid);
	key->pad = 0;
	key->start_boottime_ns = BPF_CORE_READ(task, group_leader, start_boottime);
}

/* The current process's counters (this CPU's copy), created on first use; NULL when the map is
 * full (counted). */
static __always_inline struct mm_bpf_counts *counts(void)
{
	struct mm_bpf_key key;
	key_of(bpf_get_current_task_btf(), &key);
	struct mm_bpf_counts *c = bpf_map_lookup_elem(&procs, &key);
	if (c)
		return c;
	__u32 z = 0;
	struct mm_bpf_counts *init = bpf_map_lookup_elem(&zero, &z);
	if (!init)
		return NULL;
	bpf_map_update_elem(&procs, &key, init, BPF_NOEXIST);
	c = bpf_map_lookup_elem(&procs, &key);
	if (!c)
		stat_add(MM_BPF_PROCS_DROPPED);
	return c;
}

static __always_inline struct thread *thread(bool create)
{
	struct thread *t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
						create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t && create)
		stat_add(MM_BPF_NO_THREAD_STORAGE);
	return t;
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

/* Whether the tracepoint fired inside lock_mm_and_find_vma(): one of the first MAX_FRAMES kernel
 * frames lies in it (the trace helper, if any, and the BPF trampoline come first). */
static __always_inline bool at_fallback_site(void *ctx)
{
	__u64 ips[MAX_FRAMES];
	long n = bpf_get_stack(ctx, ips, sizeof(ips), 0);
	if (n <= 0)
		return false;
#pragma unroll
	for (int i = 0; i < MAX_FRAMES; i++) {
		if (i * 8 < n && ips[i] >= site_lo && ips[i] < site_hi)
			return true;
	}
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
		asm volatile("%0 = *(u64 *)(%1 + %2)" : "=r"(v_) : "r"(ctx), "i"((i) * 8));        \
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
	return (__u64)BPF_CORE_READ(task, mm) == (__u64)mm;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	if (reject_for_test)
		return *(volatile int *)reject_for_test; /* a scalar dereferenced: refused */
	if (!count_mmaplock)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct mm_bpf_counts *c = counts();
	if (c)
		c->faults++;
	struct thread *t = thread(true);
	if (t) {
		t->fault_start_ns = now;
		t->fault_fellback = 0;
	}
	return 0;
}

/* A fault completed (the software event of mm_account_fault, in the faulting thread). Only a
 * user-mode one ends the thread's user fault: a fault taken in kernel mode (uaccess) completes
 * with kernel regs. */
SEC("perf_event")
int on_fault_done(struct bpf_perf_event_data *ctx)
{
	__u64 now = bpf_ktime_get_ns();
#if defined(__TARGET_ARCH_x86)
	/* A direct 8-byte load: the verifier rewrites ctx loads and refuses narrower ones. */
	__u64 cs = *(volatile __u64 *)((char *)ctx + offsetof(struct pt_regs, cs));
	if ((cs & 3) != 3)
		return 0;
#endif
	struct thread *t = thread(false);
	if (!t || !t->fault_start_ns)
		return 0;
	__u64 start = t->fault_start_ns;
	t->fault_start_ns = 0;
	struct mm_bpf_counts *c = counts();
	if (!c || now < start)
		return 0;
	unsigned b = hist_bucket(now - start);
	asm volatile("" : "+r"(b));
	if (b >= MM_BPF_HIST_BUCKETS)
		return 0;
	if (t->fault_fellback)
		c->fault_ns_mmap_hist[b]++;
	else
		c->fault_ns_vma_hist[b]++;
	return 0;
}

SEC("tp_btf/mmap_lock_start_locking")
int on_start(unsigned long long *ctx)
{
	struct mm_struct *mm = (void *)ctx[0];
	bool write = (bool)MMAP_LOCK_ARG(ctx, 1);
	struct thread *t = thread(true);
	if (!t)
		return 0;
	t->waiting = 1;
	t->contended = 0;
	t->wait_mm = (__u64)mm;
	t->at_site = (count_fallbacks || count_mmaplock) && !write && own_mm(mm) &&
		     at_fallback_site(ctx);
	/* After the stack walk: the wait is the lock's, not this program's. */
	t->wait_start_ns = bpf_ktime_get_ns();
	if (!t->at_site)
		return 0;
	if (t->fault_start_ns)
		t->fault_fellback = 1;
	if (!count_fallbacks)
		return 0;
	/* As plugins/fallbacks.c: a start not right after a failed attempt is a new fallback. */
	if (!t->fb_failed) {
		struct mm_bpf_counts *c = counts();
		if (c)
			c->fallback_locks++;
		t->fb_waited = 0;
	}
	t->fb_failed = 0;
	return 0;
}

/* An index the verifier can bound whatever registers clang keeps it in. */
static __always_inline unsigned held_index(unsigned i)
{
	asm volatile("" : "+r"(i));
	return i & (MM_BPF_MAX_HELD - 1);
}

_Static_assert((MM_BPF_MAX_HELD & (MM_BPF_MAX_HELD - 1)) == 0, "a power of two");

/* Ends @t's write hold of @mm, adding its time to @c. Returns false if @t did not hold it. */
static __always_inline bool end_hold(struct thread *t, __u64 mm, __u64 now, struct mm_bpf_counts *c)
{
	unsigned n = t->nheld;
	if (!n || n > MM_BPF_MAX_HELD)
		return false;
#pragma unroll
	for (unsigned i = 0; i < MM_BPF_MAX_HELD; i++) {
		if (i >= n || t->held[i].mm != mm)
			continue;
		if (c && now >= t->held[i].since_ns)
			c->mmap_lock_write_hold_ns += now - t->held[i].since_ns;
		unsigned last = held_index(n - 1);
		t->held[i] = t->held[last];
		t->nheld = n - 1;
		return true;
	}
	return false;
}

SEC("tp_btf/mmap_lock_acquire_returned")
int on_acquired(unsigned long long *ctx)
{
	struct mm_struct *mm = (void *)ctx[0];
	bool write = (bool)MMAP_LOCK_ARG(ctx, 1), success = (bool)MMAP_LOCK_ARG(ctx, 2);
	__u64 now = bpf_ktime_get_ns();
	struct mm_bpf_counts *c = NULL;
	if (count_mmaplock) {
		c = counts();
		if (c) {
			if (!success)
				c->mmap_lock_trylock_fail++;
			else if (write)
				c->mmap_lock_write++;
			else
				c->mmap_lock_read++;
		}
	}
	struct thread *t = thread(count_mmaplock && success && write);
	if (!t)
		return 0;
	if (count_fallbacks && !write) {
		/* A failed attempt right after a start at the fallback site: it waits. */
		if (!success && t->at_site) {
			if (!t->fb_waited) {
				struct mm_bpf_counts *f = c ? c : counts();
				if (f)
					f->fallback_lock_waits++;
			}
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
			if (c) {
				c->mmap_lock_waits++;
				c->mmap_lock_wait_ns += wait;
				unsigned b = hist_bucket(wait);
				asm volatile("" : "+r"(b));
				if (b < MM_BPF_HIST_BUCKETS)
					c->mmap_lock_wait_hist[b]++;
				if (t->contended)
					c->mmap_lock_contended++;
			}
		} else {
			stat_add(MM_BPF_ACQUIRE_WITHOUT_START);
		}
		t->waiting = 0;
	}
	if (!write && success)
		end_hold(t, (__u64)mm, now, c); /* mmap_write_downgrade() */
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
	if (!t || !end_hold(t, (__u64)mm, bpf_ktime_get_ns(), counts()))
		stat_add(MM_BPF_RELEASE_WITHOUT_ACQUIRE);
	return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(on_contention, void *lock, unsigned int flags)
{
	if (!count_mmaplock)
		return 0;
	struct thread *t = thread(false);
	if (t && t->waiting && (flags & (LCB_F_READ | LCB_F_WRITE)) && !(flags & LCB_F_SPIN))
		t->contended = 1;
	return 0;
}

/* The last thread of a process: 6.12 passes only the task, 6.18 also group_dead; signal->live
 * reached 0 in do_exit() before this tracepoint on both. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	struct mm_bpf_exit *e = bpf_ringbuf_reserve(&exits, sizeof(*e), 0);
	if (!e) {
		stat_add(MM_BPF_EXITS_LOST);
		return 0;
	}
	key_of(p, &e->key);
	bpf_ringbuf_submit(e, 0);
	return 0;
}
