/*
 * The records shared by plugins/bpf/counters.bpf.c (in the kernel) and daemon/bpfsource.c (the
 * loader): the per-process key and counters of the BPF source, its global event counters and the
 * exit notification. Both sides include this after their own definition of __u32/__u64
 * (vmlinux.h in the BPF program, <linux/types.h> in user space), so it includes nothing itself.
 *
 * Every counter of struct mm_bpf_counts has the meaning of the struct mm_proc_stats member of
 * the same name (daemon/stats.h), which the perf path fills; each collector says which of them
 * are its own (struct mm_plugin_bpf fields, plugin.h) and the loader adds their growth there.
 */
#ifndef MM_BPF_COUNTERS_H
#define MM_BPF_COUNTERS_H

/* log2 buckets of the wait histogram: the same as MM_HIST_BUCKETS (daemon/stats.h). */
/* x86_64's user addresses end below this (TASK_SIZE_MAX with 5-level paging, 56 bits, which
 * covers 4-level's 47): a fault above is on kernel memory. One spelling for the BPF program, the
 * perf handler and the perf stream's filter (MM_USER_ADDRESS_END_TEXT). */
#define MM_USER_ADDRESS_END_HEX	 0x100000000000000
#define MM_USER_ADDRESS_END	 ((unsigned long long)MM_USER_ADDRESS_END_HEX)
#define MM_STRINGIFY_(x)	 #x
#define MM_STRINGIFY(x)		 MM_STRINGIFY_(x)
#define MM_USER_ADDRESS_END_TEXT MM_STRINGIFY(MM_USER_ADDRESS_END_HEX)

#define MM_BPF_HIST_BUCKETS 40

/* A process as mmlockd identifies it: thread-group id and the group leader's start time
 * (task_struct.start_boottime, ns since boot: what /proc/PID/stat's starttime counts in clock
 * ticks), so a reused pid is another key. */
struct mm_bpf_key {
	__u32 pid;
	__u32 pad;
	__u64 start_boottime_ns;
};

/* The fault-completion software events (minor-faults, major-faults) run the program on every
 * MM_BPF_COMPLETION_PERIOD-th fault of a CPU: the latency histograms are a sample of those
 * completed faults (of the timed ones among them: MM_BPF_TIMED_FAULTS). At 1 (every fault) they
 * cost mix about 15 points of its throughput; at 8 about as much as none (bench, 2026-12-03). */
#define MM_BPF_COMPLETION_PERIOD 8

/* Of the faults whose completion runs the program, those that page_fault_user timed: one in
 * MM_BPF_TIMED_FAULTS, drawn per fault (so a histogram is a sample of 1 in
 * MM_BPF_COMPLETION_PERIOD x MM_BPF_TIMED_FAULTS completed faults, slow ones as likely as fast
 * ones). The clock read was 30 of on_fault's ~50 ns a run (bpf_stats, bench mix, --collectors
 * all on BPF: 104 -> 72 ns gross without it), the largest per-fault cost left. A power of two. */
#define MM_BPF_TIMED_FAULTS 4

/* Outcomes of enum mm_bpf_outcome (outcome.h): the per-outcome latency histograms. */
#define MM_BPF_NOUTCOMES 5

/* Scalars first, then the histograms (the program flushes them in these two groups). */
struct mm_bpf_counts {
	/* What every fault counts first, in one cache line: the mmaplock collector's faults, */
	__u64 faults;
	/* the faults collector's outcomes in the order of enum mm_bpf_outcome (outcome.h), */
	__u64 faults_vma;
	__u64 faults_vma_retry;
	__u64 faults_mmap_retry;
	__u64 faults_mmap_abort;
	__u64 faults_mmap_unknown;
	__u64 faults_mmap_fallback;
	__u64 faults_mmap_lock_retries;
	/* mmaplock collector */
	__u64 mmap_lock_read;
	__u64 mmap_lock_write;
	__u64 mmap_lock_trylock_fail;
	__u64 mmap_lock_waits;
	__u64 mmap_lock_wait_ns;
	__u64 mmap_lock_write_hold_ns;
	__u64 mmap_lock_contended;
	/* fallbacks collector */
	__u64 fallback_locks;
	__u64 fallback_lock_waits;
	__u64 kernel_mode_faults;
	/* faults collector */
	__u64 faults_mmap_lock_wait_ns;
	__u64 faults_pages_reread;
	/* and the fault paths' acquisitions (the other mmap_lock_by_* need a callchain each) */
	__u64 mmap_lock_by_fault;
	__u64 mmap_lock_by_fault_other;
	__u64 mmap_lock_by_fault_kernel;
	/* log2 ns histograms: mmap_lock waits (mmaplock), */
	__u64 mmap_lock_wait_hist[MM_BPF_HIST_BUCKETS];
	/* user-fault latency, page_fault_user to the fault's completion (mmaplock), */
	__u64 fault_ns_vma_hist[MM_BPF_HIST_BUCKETS];  /* no mmap_lock fallback in the fault */
	__u64 fault_ns_mmap_hist[MM_BPF_HIST_BUCKETS]; /* completed after a fallback */
	/* and by outcome (faults collector) */
	__u64 fault_ns_outcome_hist[MM_BPF_NOUTCOMES][MM_BPF_HIST_BUCKETS];
	/* Not a count: the loader's tick (tick_epoch) in which the entry was last put in the
	 * changed map, so it is put there once a tick at most. */
	__u64 epoch;
};

/* The histograms of struct mm_bpf_counts, from mmap_lock_wait_hist on. */
#define MM_BPF_NHISTS (3 + MM_BPF_NOUTCOMES)

/* Kernel functions the programs look for in short stacks, [lo, hi) each from /proc/kallsyms
 * (the loader fills .rodata sites[]); names in daemon/bpfsource.c. */
enum mm_bpf_site {
	MM_BPF_SITE_FALLBACK, /* lock_mm_and_find_vma: a fault falls back to mmap_lock */
	MM_BPF_SITE_ANON,     /* __vmf_anon_prepare: the anon_vma trylock under the VMA lock */
	MM_BPF_SITE_HMF,      /* __handle_mm_fault, handle_mm_fault: other locks inside a fault */
	MM_BPF_SITE_HMF_OUTER,
	MM_BPF_SITE_LOCK_RETRY, /* __folio_lock_or_retry: a sleep there is a VM_FAULT_RETRY */
	MM_BPF_NSITES,
	MM_BPF_SITE_OTHER = MM_BPF_NSITES, /* none of them: a system call or kernel path */
	MM_BPF_SITE_NONE,		   /* no stack taken */
};

/* Kernel text a read start's first frame may lie in when its site is further up (the loader
 * fills .rodata trace_text[]; missing ones stay empty). */
enum mm_bpf_trace_text {
	MM_BPF_TRACE_HELPER,	/* __mmap_lock_do_trace_start_locking: the out-of-line trace call */
	MM_BPF_TRACE_ITER,	/* __traceiter_mmap_lock_start_locking: more than one probe */
	MM_BPF_TRACE_CAREFULLY, /* get_mmap_lock_carefully, where not inlined into the site */
	MM_BPF_NTRACE_TEXT,
};

/* Indices of the per-CPU array of global counters. */
enum mm_bpf_stat {
	MM_BPF_PROCS_DROPPED,	  /* flushes the full process map refused (counts kept for later) */
	MM_BPF_EXITS_LOST,	  /* exit notifications the full ring buffer refused */
	MM_BPF_NO_THREAD_STORAGE, /* events whose thread got no task storage */
	MM_BPF_ACQUIRE_WITHOUT_START,	/* a wait ended on another mm than it started on */
	MM_BPF_RELEASE_WITHOUT_ACQUIRE, /* a write release with no write hold seen */
	MM_BPF_HOLDS_TOO_NESTED,	/* write holds beyond MM_BPF_MAX_HELD */
	/* faults collector: how fault windows closed */
	MM_BPF_WIN_COMPLETED,	 /* the fault's completion event */
	MM_BPF_WIN_NEXT_FAULT,	 /* the thread's next user fault, without a completion */
	MM_BPF_WIN_KERNEL_FAULT, /* a fault in kernel mode (uaccess in a system call) */
	MM_BPF_WIN_SYSCALL,	 /* an mmap_lock acquisition not on the fault path */
	MM_BPF_WIN_EXIT,	 /* thread exit */
	MM_BPF_WIN_LEFT,	 /* a sleep or page-cache add outside the fault (its regs) */
	MM_BPF_FLUSHES,		 /* a thread's counts added to its process's (map updates) */
	MM_BPF_WIN_LATE, /* windows closed after their burst (split bursts), counted all the same */
	MM_BPF_SITE_THROUGH_HELPER, /* the fallback site traced inline and via the helper both */
	MM_BPF_CHANGES_UNMARKED,    /* changes the full changed map refused (a full walk follows) */
	/* contention collector, as plugins/contention.c's contention_unmatched counters */
	MM_BPF_LOCK_BEGIN_NO_END, /* a wait dropped: its end was lost (or the thread exited) */
	MM_BPF_LOCK_END_NO_BEGIN, /* an end with no open wait of the thread on that lock */
	MM_BPF_LOCK_ROWS_DROPPED, /* waits the full lock map refused */
	MM_BPF_LOCK_STACK_CACHED, /* a wait's stack from the path cache (counters.bpf.c) */
	MM_BPF_LOCK_STACK_WALKED, /* a wait's stack walked (bpf_get_stack) */
	MM_BPF_LOCK_STACK_WRONG,  /* a cached stack its check walk contradicted: must stay 0 */
	MM_BPF_NSTATS
};

/* Their names, in /metrics as mmlockd_bpf_events_total{name=...} (not in the BPF object). */
#ifndef __bpf__
static const char *const mm_bpf_stat_names[MM_BPF_NSTATS] = {
	[MM_BPF_PROCS_DROPPED] = "procs_dropped",
	[MM_BPF_EXITS_LOST] = "exits_lost",
	[MM_BPF_NO_THREAD_STORAGE] = "threads_without_storage",
	[MM_BPF_ACQUIRE_WITHOUT_START] = "acquire_without_start",
	[MM_BPF_RELEASE_WITHOUT_ACQUIRE] = "write_release_without_acquire",
	[MM_BPF_HOLDS_TOO_NESTED] = "write_holds_too_nested",
	[MM_BPF_WIN_COMPLETED] = "fault_windows_completed",
	[MM_BPF_WIN_NEXT_FAULT] = "fault_windows_closed_by_next_fault",
	[MM_BPF_WIN_KERNEL_FAULT] = "fault_windows_closed_by_kernel_fault",
	[MM_BPF_WIN_SYSCALL] = "fault_windows_closed_by_syscall",
	[MM_BPF_WIN_EXIT] = "fault_windows_closed_by_exit",
	[MM_BPF_WIN_LEFT] = "fault_windows_closed_outside_the_fault",
	[MM_BPF_FLUSHES] = "thread_flushes",
	[MM_BPF_WIN_LATE] = "fault_windows_closed_after_their_burst",
	[MM_BPF_SITE_THROUGH_HELPER] = "fallback_site_through_trace_helper",
	[MM_BPF_CHANGES_UNMARKED] = "changes_unmarked",
	[MM_BPF_LOCK_BEGIN_NO_END] = "contention_begin_without_end",
	[MM_BPF_LOCK_END_NO_BEGIN] = "contention_end_without_begin",
	[MM_BPF_LOCK_ROWS_DROPPED] = "contention_waits_dropped",
	[MM_BPF_LOCK_STACK_CACHED] = "lock_stacks_from_cache",
	[MM_BPF_LOCK_STACK_WALKED] = "lock_stacks_walked",
	[MM_BPF_LOCK_STACK_WRONG] = "lock_stacks_cache_wrong",
};
#endif

#define MM_BPF_MAX_HELD	 4
#define MM_BPF_MAX_ADDED 32 /* pages remembered per fault window to spot re-reads */

/* The contention collector on BPF: waits (lock:contention_begin .. _end of one thread on one
 * lock, paired as plugins/contention.c pairs them) summed per window in a per-CPU hash by
 * (process, begin's flags, lock, kernel stack at the begin). The loader reads it at every tick
 * and, at a window's closing tick, flips lock_gen and deletes the old generation's rows. */
#define MM_BPF_LOCK_FRAMES  12 /* the program, tracepoint glue and iterator first, then 8 */
#define MM_BPF_LOCK_PENDING 4  /* waits one thread has open at once (nested) */

enum mm_bpf_lock_kind {
	MM_BPF_LOCK_ADDR, /* lock is the address */
	MM_BPF_LOCK_MMAP, /* an mmap_lock: lock is its owner's tgid + 1 (0: owner unknown) */
};

struct mm_bpf_lock_key {
	__u32 pid;   /* tgid of the waiter (0: the idle task) */
	__u32 flags; /* lock:contention_begin's */
	__u64 lock;  /* see enum mm_bpf_lock_kind */
	__u32 kind;
	__u32 gen; /* lock_gen when the row was made */
	/* For an mmap_lock: who held it when the wait began (holder.h); 0 otherwise. */
	__u32 holder_pid;	       /* its thread group + 1 (0: none named) */
	__u32 holder_tid;	       /* the holding thread */
	__u32 holder_mode;	       /* enum mm_holder_mode */
	__u32 holder_op;	       /* enum mm_lock_source: what it was doing */
	__u64 ips[MM_BPF_LOCK_FRAMES]; /* innermost first, 0 past the stack's end */
};

#define MM_BPF_LOCK_ROWS 8192 /* rows at once (this window's and the next's), ~2.9 MiB */

struct mm_bpf_lock_value {
	__u64 contended, wait_ns, max_ns;
	__u64 min_ns; /* ~0 until the first wait */
	__u32 hist[MM_BPF_HIST_BUCKETS];
};

/* Sent through the ring buffer when the last thread of a process exits: its counters are final
 * and the loader settles and deletes them. With the process's name (its leader's comm): a
 * process that started while the daemon was starting (programs attached, task records not yet
 * on) has no FORK record and, gone from /proc, no other name. */
struct mm_bpf_exit {
	struct mm_bpf_key key;
	char comm[16];
};

#endif
