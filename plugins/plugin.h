/*
 * The collector interface. A collector is one file in plugins/ that exports one struct mm_plugin,
 * everything it is: the tracepoints it needs and their handlers, the hooks the daemon calls from
 * its single collection thread, its in-kernel part (struct mm_plugin_bpf) and its duty
 * (continuous, or cycled on the host's schedule: struct mm_plugin_cycle, with the hooks that turn
 * what an on-period saw into the window's counts). It
 * touches only per-process statistics and global counters through the host calls
 * (daemon/hostcalls.h); it knows nothing of perf, SQLite or HTTP, so the same collector runs live,
 * on a replayed recording and on the in-kernel source.
 *
 * Hooks run on the collection thread only and must not block (no I/O in sample()).
 */
#ifndef MM_PLUGIN_H
#define MM_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"
#include "stats.h"
#include "bpf/lockflags.h"

struct mm_host;
struct mm_snapshot;
struct mm_tp;
struct tep_format_field;

/* One row of a collector's handler table, in the style of perf's builtin-lock.c: a tracepoint
 * and the function its samples go to. Write rows with designated initializers. */
typedef void (*mm_tp_handler)(void *state, struct mm_host *h, const struct mm_sample *s);
struct mm_tp_req {
	const char *system;    /* e.g. "mmap_lock" */
	const char *name;      /* e.g. "mmap_lock_acquire_returned" */
	mm_tp_handler handler; /* its samples, in timestamp order across all CPUs */
	/* A kernel-side filter (tracefs filter syntax, e.g. "write == 0") that the collector is
	 * content with; NULL: every event. The stream gets it only when every collector asking
	 * for the tracepoint gives the same filter, so the handler must still check the fields. */
	const char *filter;
	bool callchain; /* wants kernel callchains on this event */
	bool optional;	/* the collector runs (degraded) without it */
	/* Fires seldom (a cgroup move): MM_RARE_RING_PAGES data pages per CPU instead of the
	 * configured ring_pages (every ring page is resident from the start), when every collector
	 * asking for it says so. */
	bool rare;
};

/* The ring size of a rare tracepoint: 64 KiB per CPU, some 600 cgroup moves between two reads. */
#define MM_RARE_RING_PAGES 16

/* Waits an in-kernel source paired and summed since its last delivery of the same row (the
 * contention collector on BPF): what the collector's records would have told it. */
struct mm_lock_wait {
	uint32_t pid;	/* thread group of the waiter; 0: the idle task */
	uint32_t flags; /* lock:contention_begin's (LCB_F_*) */
	bool mmap;	/* an mmap_lock: lock is its owner's pid + 1 (0: unknown) */
	uint64_t lock;	/* else the lock's address */
	/* An mmap_lock's holder when the waits began (plugins/bpf/holder.h): thread group + 1 (0:
	 * none named), thread, enum mm_holder_mode, enum mm_lock_source. */
	uint32_t holder_pid, holder_tid, holder_mode, holder_op;
	/* The kernel stack at the begin, innermost first; it may start with frames of the tracing
	 * itself (the BPF program, the tracepoint's iterator), unknown or named so. */
	const uint64_t *ips;
	unsigned nr_ips;
	uint64_t contended, wait_ns; /* since the last delivery */
	uint64_t max_ns, min_ns;     /* of the window so far */
	const uint64_t *hist;	     /* MM_HIST_BUCKETS counts, since the last delivery */
};

/* A kernel function whose text [lo, hi) the in-kernel programs compare stack frames against:
 * the loader finds it in /proc/kallsyms and writes it to element @index of the .rodata array
 * @var (struct { __u64 lo, hi; }[]). A @required one missing keeps the collector on the perf
 * rings, saying "@function not found in the kernel symbols (/proc/kallsyms)@why". */
struct mm_bpf_text {
	const char *var;
	unsigned index;
	const char *function;
	bool required;
	const char *why; /* appended to the reason; "" or NULL: nothing */
};

/* Where kernel counters land: the @n u64s at byte @kernel of the in-kernel per-process value
 * (struct mm_bpf_counts, plugins/bpf/counters.h) are added, as they grow, to the @n u64s at byte
 * @field of struct mm_proc_stats. Written with MM_BPF_FIELD(). */
struct mm_bpf_field {
	uint32_t kernel, field, n;
};
#define MM_BPF_SIZEOF(type, member) sizeof(((type *)0)->member)
/* (The bit-field of negative width stops the build when the two members differ in size.) */
#define MM_BPF_FIELD2(kernel_member, stats_member)                                                 \
	{                                                                                          \
		offsetof(struct mm_bpf_counts, kernel_member),                                     \
			offsetof(struct mm_proc_stats, stats_member),                              \
			MM_BPF_SIZEOF(struct mm_proc_stats, stats_member) / (sizeof(uint64_t)) +   \
				0 * sizeof(struct {                                                \
					int same_size                                              \
					    : MM_BPF_SIZEOF(struct mm_bpf_counts,                  \
							    kernel_member) ==                      \
					      MM_BPF_SIZEOF(struct mm_proc_stats, stats_member)    \
						? 1                                                \
						: -1;                                              \
				})                                                                 \
	}
#define MM_BPF_FIELD(member) MM_BPF_FIELD2(member, member)

/* Sets the .rodata variable @var of the in-kernel object to @value (for configure()). */
typedef void (*mm_bpf_set_fn)(void *ctx, const char *var, uint64_t value);

/* The in-kernel part of a collector: what the BPF object (plugins/bpf/counters.bpf.c, one object
 * whose programs share per-thread state) runs for it, and how its counts come back. The loader
 * (daemon/bpfsource.c) walks the enabled collectors that have one; it knows none by name. */
struct mm_plugin_bpf {
	const char *enable; /* the .rodata flag the programs count this collector by */
	/* Programs loaded and attached while it runs, NULL-terminated. A program no enabled
	 * collector names is not loaded. */
	const char *const *programs;
	/* With the collector cycled (its cycle, at a share under 100%): programs attached for
	 * the on-period and its ending only, and the period's opener, attached for the period
	 * only (daemon/duty.h's phases), unless a collector running continuously needs them
	 * too. NULL: none. */
	const char *const *duty_programs;
	const char *const *opener_programs;
	const struct mm_bpf_text *sites;   /* terminated by function == NULL; NULL: none */
	const struct mm_bpf_field *fields; /* terminated by n == 0; NULL: none */
	/* Fills .rodata it needs beyond its sites (e.g. the vDSO's layout). Optional. */
	void (*configure)(mm_bpf_set_fn set, void *ctx);
	bool latency; /* times faults: fault_latency opens the fault-completion events for it */
	/* With source = auto, runs on BPF only beside a collector that does (its programs are
	 * shared and measured no cheaper alone). */
	bool follows;
	const char *note; /* shown as its source note when on BPF; NULL: none */
};

/* A collector that costs too much to run continuously runs for a share of each window, in
 * on-periods on the schedule the host offers (daemon/duty.h); this is how its users know that
 * schedule. Continuous when --collectors names it, off at a share of 0. */
struct mm_plugin_cycle {
	const char *key;     /* config key setting the share ("split_duty"; flag --split-duty) */
	const char *name;    /* the cycled run, in global counter families ("split") */
	const char *period;  /* one on-period, in counter names and messages ("burst") */
	unsigned default_pm; /* the share, per mille, when --collectors does not name it */
	const char *help;    /* the flag's --help text, lines of at most 50 columns */
	/* Why it runs so, for /api/v1/status: off (a share of 0), continuous (100%), cycled. */
	const char *why_off, *why_continuous, *why_cycled;
};

struct mm_plugin {
	const char *name;	 /* [a-z0-9_]+, used in config and labels */
	const char *description; /* one line */
	bool by_default;	 /* in the default --collectors */
	const char *usage; /* its lines under --collectors in --help, at most 38 columns each */
	/* The handler table, terminated by a row with system == NULL. The host resolves it once,
	 * at start: each open tracepoint's samples go straight to its row's handler. */
	const struct mm_tp_req *tracepoints;

	/* Resolves fields (mm_host_fields) and registers global counters. Called only when every
	 * non-optional tracepoint is open. Returns 0 with *ret_state set, or -errno after
	 * mm_host_fail() saying why. */
	int (*init)(struct mm_host *h, void **ret_state);
	/* A thread exited (pid == tid: the process). Drop per-thread state. Optional. */
	void (*thread_exit)(void *state, struct mm_host *h, uint32_t pid, uint32_t tid);
	/* About once a second, and once before each window closes. Optional. */
	void (*tick)(void *state, struct mm_host *h);
	/* No more events will come (shutdown, end of a replay): account what is pending.
	 * Optional. */
	void (*finish)(void *state, struct mm_host *h);
	/* Adds what the collector keeps outside the per-process counters (e.g. lock rows) to the
	 * snapshot @s being built; with @closing, @s is the closed window's and the collector
	 * starts its next window. Optional. */
	void (*snapshot)(void *state, struct mm_host *h, struct mm_snapshot *s, bool closing);
	/* A collector that can be fed by an in-kernel source instead of records (the contention
	 * collector on BPF): it is initialised and hooked as usual, but no stream is opened for it
	 * (mm_host_fed() is true in its hooks) and its waits come here. Optional. */
	void (*waits)(void *state, struct mm_host *h, const struct mm_lock_wait *w);
	void (*free)(void *state); /* accepts NULL */
	/* Reads every task at once where the host can (mm_host_read_tasks): the host loads its
	 * task iterator only when a running collector says so. */
	bool reads_tasks;
	/* Never looks up kernel addresses (mm_host_symbol): running alone on the perf rings, it
	 * does not keep the kernel symbol table (~6 MiB) loaded. */
	bool no_symbols;
	/* Its in-kernel part; NULL: it counts from records only. */
	const struct mm_plugin_bpf *bpf;

	/* Its duty: continuous (NULL), or cycled on the host's schedule when the configured share
	 * is under 100%. Cycled, it sees a sample of each window, and these
	 * hooks turn the sample into the window's counts; the host calls them whatever source fills
	 * the collector (perf or in-kernel) and whether or not its init ran, on per-process state
	 * it keeps for it: @proc_size bytes beside each process's counters, zeroed when the
	 * process is first seen and freed with it. */
	const struct mm_plugin_cycle *cycle;
	size_t proc_size;
	/* An on-period ended (its records all read): @window holds the process's counts of the open
	 * window so far. Optional. */
	void (*duty_end)(void *proc, const struct mm_proc_stats *window);
	/* The window counts @ps of a process are about to be shown (@closing false: @ps is a copy)
	 * or stored (@closing true: in place, and the per-window part of @proc starts over). @proc
	 * NULL: the counts of processes the host had no room for. @duty_ms: how long the
	 * collector was on duty in the window so far. Optional. */
	void (*window)(void *proc, struct mm_proc_stats *ps, uint64_t duty_ms, bool closing);
};

/* Every collector this build has, NULL-terminated (plugins/registry.c). */
extern const struct mm_plugin *const mm_plugins[];

/* Sets bit i of @silent (MM_PROC_FIELDS_MAX bits, cleared first) for each counter
 * mm_proc_fields[i] of collector @p that its in-kernel part does not count: what stays 0 while
 * @p runs on it with no records of its own (the host's "external" collector). None for a
 * collector without such a part or whose part lists no fields (its counts come from records). */
void mm_plugin_silent_fields(const struct mm_plugin *p, uint64_t *silent);

/* What the host offers collectors (daemon/hostcalls.h, with the host that implements it). */
#include "hostcalls.h"

#endif
