/*
 * The collector interface. A collector is one file in plugins/ that exports one struct mm_plugin:
 * the tracepoints it needs, and hooks the daemon calls from its single collection thread. It
 * touches only per-process statistics and global counters through the host calls below; it knows
 * nothing of perf, SQLite or HTTP, so the same collector runs live and on a replayed recording.
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
};

/* Waits an in-kernel source paired and summed since its last delivery of the same row (the
 * contention collector on BPF): what the collector's records would have told it. */
struct mm_lock_wait {
	uint32_t pid;	/* thread group of the waiter; 0: the idle task */
	uint32_t flags; /* lock:contention_begin's (LCB_F_*) */
	bool mmap;	/* an mmap_lock: lock is its owner's pid + 1 (0: unknown) */
	uint64_t lock;	/* else the lock's address */
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
	/* With the collector in bursts (its duty, MM_DUTY_BURSTS, and a split duty under 100%):
	 * programs attached for the burst and its ending only, and the burst's opener, attached
	 * for the burst only (split.h's phases), unless a collector running continuously needs
	 * them too. NULL: none. */
	const char *const *burst_programs;
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

/* How a collector runs: continuously, or in bursts on the schedule the host offers (split.h). */
enum mm_duty {
	MM_DUTY_CONTINUOUS,
	MM_DUTY_BURSTS,
};

struct mm_plugin {
	const char *name;	 /* [a-z0-9_]+, used in config and labels */
	const char *description; /* one line */
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
	/* Its in-kernel part; NULL: it counts from records only. */
	const struct mm_plugin_bpf *bpf;

	/* Its duty: continuous, or bursts on the host's schedule (split.h) when the configured
	 * share (split_duty) is under 100%. In bursts it sees a sample of each window, and these
	 * hooks turn the sample into the window's counts; the host calls them whatever source fills
	 * the collector (perf or in-kernel) and whether or not its init ran, on per-process state
	 * it keeps for it: @proc_size bytes beside each process's counters, zeroed when the
	 * process is first seen and freed with it. */
	enum mm_duty duty;
	size_t proc_size;
	/* A burst ended (its records all read): @window holds the process's counts of the open
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

/* --- host calls available to collectors --- */

/* The open tracepoint system:name, or NULL when it is not being sampled. */
const struct mm_tp *mm_host_tp(struct mm_host *h, const char *system, const char *name);

/* A field of @tp's format by name, or NULL. Fields are resolved from the running kernel's format
 * files: never assume offsets. */
const struct tep_format_field *mm_tp_field(const struct mm_tp *tp, const char *name);

/* The open tracepoint system:name with every field of @names (NULL-terminated) resolved into
 * @ret, one per name; NULL when the tracepoint is not open or lacks one of them (whose @ret entry
 * is then NULL). For init(): one call per tracepoint instead of a lookup per field. */
const struct mm_tp *mm_host_fields(struct mm_host *h, const char *system, const char *name,
				   const char *const *names, const struct tep_format_field **ret);

/* Reads numeric field @f of sample @s (which must come from the field's tracepoint). Returns 0,
 * or -EINVAL when the record is too short. */
int mm_field_read(const struct tep_format_field *f, const struct mm_sample *s, uint64_t *ret);

/* mm_field_read() for hooks: a record too short for @f adds 1 to the collector's global counter
 * @bad_id (from mm_host_global) instead of being silently skipped. Returns true when *ret was
 * read. */
bool mm_field_read_counted(struct mm_host *h, int bad_id, const struct tep_format_field *f,
			   const struct mm_sample *s, uint64_t *ret);

/* The statistics of the open window for the process @pid (created on first use; its identity,
 * name and cgroup are looked up by the host). Never NULL: on allocation failure a shared
 * overflow record is returned and counted. */
struct mm_proc_stats *mm_host_proc(struct mm_host *h, uint32_t pid);

/* The same for a process the host already knows (live, or exited and not yet stored), without
 * creating it; NULL otherwise. For collectors that learn of a process from /proc or netlink
 * before its FORK record has been delivered. */
struct mm_proc_stats *mm_host_proc_known(struct mm_host *h, uint32_t pid);

/* The kernel symbol containing @addr (a callchain ip, a static lock's address), or NULL when
 * unknown; *ret_start (optional) gets the symbol's address. */
const char *mm_host_symbol(struct mm_host *h, uint64_t addr, uint64_t *ret_start);

/* True during the tick right before the open window closes (collectors that read /proc once
 * per window do it then). */
bool mm_host_window_closing(const struct mm_host *h);

/* Watches @fd (not owned) of a source that pushes (a BPF ring of process exits, a netlink
 * socket), from init(): the live loop polls it with its own fds and calls @fn(@ctx, h) on the
 * collection thread when it is readable, while the collector runs. Replay has no fds: such
 * sources are live-only. Returns 0, or -ENOSPC beyond MM_HOST_MAX_WATCHES. */
#define MM_HOST_MAX_WATCHES 4
typedef void (*mm_host_watch_fn)(void *ctx, struct mm_host *h);
int mm_host_watch(struct mm_host *h, int fd, mm_host_watch_fn fn, void *ctx);

/* Registers a global counter exported as mmlockd_<family>_total{name="<name>"}; returns its id
 * (>= 0) or -ENOMEM. */
int mm_host_global(struct mm_host *h, const char *family, const char *name, const char *help);
void mm_host_global_add(struct mm_host *h, int id, uint64_t delta);

/* True when the calling collector is fed by an in-kernel source through its waits hook, not by
 * records (its tracepoints are not open: init() must not resolve their fields). */
bool mm_host_fed(const struct mm_host *h);

/* Marks the calling collector failed with a reason shown in /api/v1/status and /metrics; it gets
 * no more hooks. Returns -EIO for `return mm_host_fail(...)` convenience. */
int mm_host_fail(struct mm_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds a note to the calling collector's state (e.g. "optional tracepoint X missing: no
 * contention counts") without failing it. */
void mm_host_note(struct mm_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
