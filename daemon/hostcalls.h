/*
 * The host calls available to collectors (plugins/plugin.h includes this): how a collector reads
 * tracepoint fields, finds the statistics of a process, registers global counters, watches an
 * fd, and reports failure. The host (daemon/host.c) implements them; they live here, beside it,
 * so the collector interface says what a collector is and this file what the core offers it.
 * Every call is made from the collection thread, from a collector's hooks.
 */
#ifndef MM_HOSTCALLS_H
#define MM_HOSTCALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "sample.h"
#include "stats.h"

struct mm_host;
struct mm_tp;
struct tep_format_field;

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

/* The same for a process whose start (unix ms) and name the collector read itself from /proc a
 * moment ago: they are the entry's when the host's own lookup finds the process gone already
 * (mm_proctable_get_seen). */
struct mm_proc_stats *mm_host_proc_seen(struct mm_host *h, uint32_t pid, uint64_t start_ms,
					const char *comm);

/* The same for a process the host already knows (live, or exited and not yet stored), without
 * creating it; NULL otherwise. For collectors that learn of a process from /proc or netlink
 * before its FORK record has been delivered. */
struct mm_proc_stats *mm_host_proc_known(struct mm_host *h, uint32_t pid);

/* The same for the process @pid that started at @start_ms (unix ms), live or exited
 * (mm_proctable_find_started): for counts that arrive after the process exited, when its pid may
 * already be a new process's. */
struct mm_proc_stats *mm_host_proc_started(struct mm_host *h, uint32_t pid, uint64_t start_ms);

/* The kernel moved the task @pid into the cgroup @path of hierarchy @hierarchy (the first field
 * of its /proc/PID/cgroup line; 0: the unified one): when that is where the host's processes are
 * accounted, the process's cgroup follows (mm_proctable_moved). Does not create an entry. */
void mm_host_proc_moved(struct mm_host *h, uint32_t pid, int hierarchy, const char *path);

/* The counts of process @pid that started at @start_ms (unix ms), named @comm, which has exited
 * and has no entry (its FORK record never came): a new entry, exited already, so that neither
 * the pid's live entry (a later process) nor a nameless one takes its counts. Stored with the
 * window, then dropped. */
struct mm_proc_stats *mm_host_proc_exited(struct mm_host *h, uint32_t pid, uint64_t start_ms,
					  const char *comm);

/* The same for a start known only to lie in [@lo_ms, @hi_ms] (mm_proctable_find_started_within):
 * NULL when the only candidate started before @lo_ms, an earlier process under the pid. */
struct mm_proc_stats *mm_host_proc_started_within(struct mm_host *h, uint32_t pid, uint64_t lo_ms,
						  uint64_t hi_ms);

/* The name of the process @pid as the host knows it (live, or exited and not yet stored), valid
 * until the next host call; NULL when it knows none. */
const char *mm_host_proc_name(struct mm_host *h, uint32_t pid);

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

/* Every task of the machine at once, where the host has a reader for them (the BPF task
 * iterator, daemon/taskiter.h): @fn(@ctx, task) for each, in tid order. Returns 0, -ENOTSUP
 * without a reader (replay, source = perf, no BPF), or -errno. */
struct mm_task_run {
	uint32_t tgid;
	uint64_t runtime_ns; /* what the thread has run; for the leader, plus the dead threads' */
	uint64_t start_boottime_ns; /* the leader's: its process's start, ns since boot; else 0 */
	bool on_cpu;		    /* running now (its runtime lags) */
	bool leader, kthread;
};
typedef void (*mm_task_fn)(void *ctx, const struct mm_task_run *t);
int mm_host_read_tasks(struct mm_host *h, mm_task_fn fn, void *ctx);

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
