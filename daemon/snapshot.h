/*
 * A snapshot is an immutable, reference-counted copy of everything mmlockd knows at one moment:
 * per-process statistics for the open window and since start, global counters, per-tracepoint
 * event and loss counts, collector states, lock contention rows. The collection loop builds one
 * every tick and at each window end; the HTTP thread reads the latest published one and the store
 * thread writes the window-end ones. Nobody mutates a snapshot after publishing, so readers need no
 * lock beyond the pointer swap, and collection never waits for HTTP or SQLite.
 *
 * One exception, for the cost of idle processes: the snapshot of the open window published every
 * second holds rows only for the processes that counted something in the window; the others'
 * rows are those of the last closed window's snapshot (@base: their totals have not changed since,
 * their window is empty). The first reader completes it (mm_snapshot_current(), under the
 * snapshot's own lock), so readers still see every process, and the work is done only when
 * someone reads: 10 000 idle processes are not copied and sorted every second for nobody.
 */
#ifndef MM_SNAPSHOT_H
#define MM_SNAPSHOT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#define MM_COMM_LEN   16
#define MM_CGROUP_LEN 256

struct mm_snap_proc {
	int32_t pid;
	uint64_t start_ms;	/* process start time, unix ms (from /proc/PID/stat starttime) */
	char comm[MM_COMM_LEN]; /* latest name (follows exec) */
	/* cgroup v2 path, or the v1 memory controller's, or "": never NULL; the snapshot's own
	 * copy, shared by the rows of that cgroup (mm_snapshot_name), so a row is ~250 bytes less
	 */
	const char *cgroup;
	bool exited; /* the process has exited; kept until its last window is stored */
	/* The window [window_start_ms, window_end_ms): never NULL; the snapshot's own copy
	 * (mm_snapshot.windows), or mm_snap_no_window for a process that counted nothing in it
	 * (most of them: an idle process's row is its total alone). */
	const struct mm_proc_counts *window;
	/* Since mmlockd started (window included): never NULL; the counts @held, or
	 * mm_snap_no_window when the process has counted nothing yet. */
	const struct mm_proc_counts *total;
	/* A reference to the shared counts the total is in (NULL: none): for a process idle in
	 * the window, the process table's own sum of its closed windows, not a copy of it; for
	 * one active in it, the snapshot's sums. */
	struct mm_shared_counts *held;
	/* Their histograms that have a sample, [0] the window's and [1] the total's, each NULL
	 * while every one is empty (most processes: only opt-in collectors fill them). Owned by
	 * the snapshot; read them with mm_snap_proc_hist() or mm_snap_proc_hists(). */
	struct mm_hist_set *hists[2];
};

/* The window of a row that counted nothing (all zero). */
extern const struct mm_proc_counts mm_snap_no_window;

/* Counters shared by the process table and the snapshots' rows, freed with their last
 * reference (taken and dropped from any thread): one process's closed sum (one element), or a
 * snapshot's totals of the processes active in its window (one per such row). Whoever holds the
 * only reference may change them; a shared one is read-only. At 10 000 idle processes a closed
 * window's snapshot was 5.3 MiB of copied totals, made every window; its rows now hold
 * references. */
struct mm_shared_counts {
	int refs; /* atomic */
	struct mm_proc_counts counts[];
};

/* @n zeroed counters, one reference; NULL when out of memory. */
struct mm_shared_counts *mm_shared_counts_new(size_t n);
struct mm_shared_counts *mm_shared_counts_ref(struct mm_shared_counts *c); /* accepts NULL */
void mm_shared_counts_unref(struct mm_shared_counts *c);		   /* accepts NULL */
/* Whether the caller's reference is the only one (then it may write the counts). */
bool mm_shared_counts_alone(const struct mm_shared_counts *c);

/* Histogram @i (MM_HIST_INDEX()) of @p's window (@total false) or since start; an empty one when
 * it has none. */
const struct mm_hist *mm_snap_proc_hist(const struct mm_snap_proc *p, bool total, unsigned i);

/* All of @p's histograms of the window (@total false) or since start, written to @buf. */
const struct mm_proc_hists *mm_snap_proc_hists(const struct mm_snap_proc *p, bool total,
					       struct mm_proc_hists *buf);

/* Whether @p counted nothing in the window. */
bool mm_snap_proc_idle(const struct mm_snap_proc *p);

/* Adds @p's window, counters and histograms, to @dst. */
void mm_snap_proc_add_window(struct mm_proc_stats *dst, const struct mm_snap_proc *p);

/* A counter that belongs to no process, e.g. a /proc/vmstat delta or a collector's count of
 * unmatched events. Exported as mmlockd_<family>_total{name="<name>"}. */
struct mm_snap_global {
	char family[32];
	char name[64];
	char help[160];
	char collector[32]; /* the collector that registered it; "" for the daemon's own */
	uint64_t window;
	uint64_t total;
};

/* One tracepoint (or the task-record stream) the sampler opened or tried to open. */
struct mm_snap_event {
	char name[128];		/* "system:name", e.g. "mmap_lock:mmap_lock_acquire_returned" */
	bool open;		/* being sampled */
	char error[160];	/* why not, when !open */
	uint64_t samples, lost; /* since start */
	uint64_t window_samples, window_lost;
};

enum mm_collector_state {
	MM_COLLECTOR_RUNNING,
	MM_COLLECTOR_DISABLED, /* turned off in the configuration */
	MM_COLLECTOR_FAILED,   /* could not start or failed at run time; see reason */
};

struct mm_snap_collector {
	char name[32];
	enum mm_collector_state state;
	char reason[256];
	char source[16];       /* what feeds it: "perf", "bpf", "procfs" */
	char source_note[192]; /* why not BPF, "" when it runs on BPF or BPF does not apply */
	/* Bit i: counter mm_proc_fields[i] of this collector stays 0 on its source (an in-kernel
	 * part that does not count it), so /metrics leaves it out rather than show a constant 0. */
	uint64_t silent[MM_PROC_FIELDS_MAX / 64];
};

#define MM_LOCK_TYPE_LEN 16
#define MM_LOCK_NAME_LEN 128

/* Lock contention of one process on one lock from one call site (plugins/contention.c), over a
 * window; or, in mm_snapshot.lock_callers, of every process from one call site since start (pid
 * -1, lock "", start_ms 0). Waits are lock:contention_begin -> contention_end of one thread. */
struct mm_snap_lock {
	int32_t pid;		/* thread group of the task that waited; -1 in aggregates */
	uint64_t start_ms;	/* its start time, unix ms (with pid its identity); 0 unknown */
	char comm[MM_COMM_LEN]; /* its name, "" when unknown */
	char type[MM_LOCK_TYPE_LEN]; /* perf lock's type names: "spinlock", "rwsem:R", "mutex"... */
	char caller[MM_LOCK_NAME_LEN]; /* first frame outside lock functions, "sym+0xoff" */
	char lock[MM_LOCK_NAME_LEN];   /* "mmap_lock", a static lock's symbol, or "0x<address>" */
	int32_t lock_pid;	       /* for "mmap_lock": the process owning the mm; else -1 */
	/* For "mmap_lock": who held it when the waits began (plugins/bpf/holder.h). Mode "write",
	 * "read" (one reader named: a hint) or "unknown" (no holder could be named: pid and tid
	 * -1, op "unknown"); "" for other locks. op: what the holder was doing, by the names of
	 * mmap_lock_by_<source> ("mprotect", "munmap", "fault", "remote", ...). */
	int32_t holder_pid, holder_tid;
	char holder_comm[MM_COMM_LEN];
	char holder_mode[8];
	char holder_op[MM_LOCK_TYPE_LEN];
	uint64_t contended;		  /* contentions (begin..end pairs) */
	uint64_t wait_ns, max_ns, min_ns; /* their summed, longest and shortest wait */
	struct mm_hist hist;		  /* their distribution */
};

/* A cgroup with its own /metrics series, or the "other" bucket (daemon/cgtable.h). Its counters
 * start when the cgroup got its series, so they are not its totals since mmlockd started. */
struct mm_snap_cgroup {
	char cgroup[MM_CGROUP_LEN]; /* as mm_snap_proc.cgroup; "other" for the bucket */
	bool other;
	uint64_t processes;	    /* of the snapshot's procs, those in it */
	struct mm_proc_stats total; /* since it got its series (open window included) */
};

struct mm_snapshot {
	int refs; /* atomic; see mm_snapshot_ref/unref */

	char version[32];
	char kernel[128];  /* uname -r */
	uint64_t taken_ms; /* unix ms */
	uint64_t started_ms;
	uint64_t window_start_ms;
	uint64_t window_end_ms; /* == taken_ms for a closed window; 0 while the window is open */
	unsigned interval_s;

	size_t nprocs;
	struct mm_snap_proc
		*procs; /* sorted by total activity, busiest first (mm_snapshot_sort_rows) */
	/* The rows' windows, one slot per row (procs[i].window is &windows[i] as allocated;
	 * the host's builder packs the non-empty ones first and points the others to
	 * mm_snap_no_window: the slots it never writes are never touched, so cost no memory). */
	struct mm_proc_counts *windows;
	/* The totals of the rows active in the window, one slot per row like windows (the
	 * snapshot holds a reference, and each row whose total is here one more). */
	struct mm_shared_counts *sums;
	/* Set while the snapshot is partial (see the top of this file): the closed window's
	 * snapshot whose rows stand for the processes not in procs; NULL once complete. */
	struct mm_snapshot *base;
	pthread_mutex_t complete_lock;
	size_t nglobals;
	struct mm_snap_global *globals;
	size_t nevents;
	struct mm_snap_event *events;
	size_t ncollectors;
	struct mm_snap_collector *collectors;

	/* Sums over every process ever seen, including ones no longer in procs. */
	struct mm_proc_stats all_window;
	struct mm_proc_stats all_total;

	/* The fault split (plugins/split.h), on the host's duty cycle (duty.h): "continuous",
	 * "bursts" or "off"; the burst share, length and period; which source classifies; why this
	 * mode. */
	struct {
		char mode[16];
		unsigned duty_pm;
		uint64_t burst_ms, slot_ms;
		char source[16];
		char why[256];
	} split;

	/* Fault latency (config fault_latency): "sampled", "partial" (some CPUs' completion
	 * events missing) or "off"; why. */
	struct {
		char mode[16];
		char why[256];
	} latency;

	uint64_t windows_stored; /* windows committed to SQLite since start */
	uint64_t store_errors;	 /* windows that failed to store */
	uint64_t windows_lost;	 /* windows never stored (dropped in an outage, given up at stop) */
	uint64_t procs_tracked;	 /* processes in the table now */

	/* Lock contention (plugins/contention.c; empty without it): the window's rows, one per
	 * (process, type, caller, lock), longest total wait first; and the busiest call sites
	 * since start (summed over processes and locks), longest total wait first. */
	size_t nlocks;
	struct mm_snap_lock *locks;
	size_t nlock_callers;
	struct mm_snap_lock *lock_callers;

	/* The per-unit breakdown (daemon/cgtable.h): the cgroups with their own series, busiest
	 * first, then "other"; empty when the builder keeps none. */
	size_t ncgroups;
	struct mm_snap_cgroup *cgroups;

	struct mm_names *names; /* the rows' cgroup paths, one copy each (names.h) */
};

/* Allocates a zeroed snapshot with one reference and room for the given counts (the n* members are
 * set to them; each row's cgroup is ""). Returns NULL on allocation failure. */
struct mm_snapshot *mm_snapshot_new(size_t nprocs, size_t nglobals, size_t nevents,
				    size_t ncollectors);
struct mm_snapshot *mm_snapshot_ref(struct mm_snapshot *s);
void mm_snapshot_unref(struct mm_snapshot *s); /* frees at zero; accepts NULL */

/* Orders rows busiest first: by the activity of their totals, then by pid. */
/* Sorts @n rows busiest first (total activity, then pid), moving each row once. -ENOMEM leaves
 * them as they are. */
int mm_snapshot_sort_rows(struct mm_snap_proc *rows, size_t n);

/* Makes a partial snapshot (@base set) complete: procs gets, besides its rows, a row for each
 * process of @base that is not among them and had not exited (its total as there, its window
 * empty), sorted again; the cgroups' process counts are counted again over all rows. Safe to
 * call from several threads; a no-op on a complete snapshot. Returns 0, or -ENOMEM (the
 * snapshot stays partial). */
int mm_snapshot_complete(struct mm_snapshot *s);

/* The latest published snapshot, completed (mm_snapshot_complete), for readers on any thread:
 * returns a new reference (or NULL before the first publish) that the caller must unref. */
struct mm_snapshot *mm_snapshot_current(void);
/* The latest published snapshot as it was published, for readers of anything but its rows
 * (/api/v1/status): between closing ticks a partial one (only the processes active in the open
 * window), which costs no copy of the idle processes' rows. A new reference, or NULL. */
struct mm_snapshot *mm_snapshot_latest(void);
/* Publishes @s (the caller's reference moves to the publisher); drops the previous one. */
void mm_snapshot_publish(struct mm_snapshot *s);

/* Attaches malloc'ed arrays of lock rows to @s (which takes them over and frees them in
 * mm_snapshot_unref), replacing and freeing any attached before. Either may be NULL with count 0.
 * Only for the snapshot's builder, before it is published. */
void mm_snapshot_set_locks(struct mm_snapshot *s, struct mm_snap_lock *locks, size_t nlocks,
			   struct mm_snap_lock *callers, size_t ncallers);

/* Attaches a malloc'ed array of cgroups to @s (which takes it over), replacing any attached
 * before. Only for the snapshot's builder, before it is published. */
void mm_snapshot_set_cgroups(struct mm_snapshot *s, struct mm_snap_cgroup *cgroups, size_t n);

/* @s's copy of the cgroup path @path (its first MM_CGROUP_LEN - 1 bytes), made at the first
 * call with that path and freed with @s: what a row's cgroup points to. "" for "". NULL when out
 * of memory. Only for the snapshot's builder, or under its completion (not thread-safe). */
const char *mm_snapshot_name(struct mm_snapshot *s, const char *path);

/* Finds a process in @s by pid (the live one if several share it), or NULL. */
const struct mm_snap_proc *mm_snapshot_find(const struct mm_snapshot *s, int32_t pid);

const char *mm_collector_state_name(enum mm_collector_state st);

#endif
