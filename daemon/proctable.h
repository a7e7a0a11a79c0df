/*
 * The process table: one entry per process seen, keyed by pid while the process lives. A process
 * is identified by pid + start time, so a reused pid always gets a new entry: an entry stops being
 * the live one for its pid when its process exits (PERF_RECORD_EXIT of the thread-group leader) or
 * when a new process with its pid is forked; late events of an exited process still reach it; it
 * is freed after its last window has been handed to the store.
 *
 * Identity, name and cgroup come from a lookup function (by default /proc/PID/{stat,cgroup}), so
 * replayed recordings can supply their own. The cgroup is the one the kernel charges the process's
 * memory to (cgpath.h), read when the process is first seen and at exec, and changed by the
 * kernel's moves (mm_proctable_moved). A lookup that cannot tell it (a v1 host shows an exiting
 * process in "/") never overwrites a known one; a process first seen so takes its parent's at its
 * FORK record, where the kernel put it; one with neither stays unknown ("", stored as such),
 * never "/". Each
 * entry can carry a few bytes of collectors' own per-process state (mm_proctable_reserve), zeroed
 * when the entry is made; the table does not look into them.
 */
#ifndef MM_PROCTABLE_H
#define MM_PROCTABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "snapshot.h"
#include "stats.h"

struct mm_proc_ident {
	uint64_t start_ms; /* unix ms; 0 when unknown */
	char comm[MM_COMM_LEN];
	char cgroup[MM_CGROUP_LEN]; /* the accounting cgroup (cgpath.h); "" when unknown */
};

/* Fills *ret for @pid. Returns 0, or -errno (e.g. -ENOENT: already gone). */
typedef int (*mm_proc_lookup_fn)(void *ctx, uint32_t pid, struct mm_proc_ident *ret);

/* The default lookup, from /proc. */
int mm_proc_lookup_procfs(void *ctx, uint32_t pid, struct mm_proc_ident *ret);

struct mm_proc {
	int32_t pid;
	uint64_t start_ms;
	char comm[MM_COMM_LEN];
	const char *cgroup; /* shared by the table's entries in that cgroup; "" when unknown */
	bool exited;
	bool guessed; /* made while the lookup failed: name and cgroup are not the process's own yet
		       */
	bool nameless_counted; /* stored as "pid-N" once: in mm_proctable_nameless() */
	/* The open window: allocated when a collector first counts something in it, freed when it
	 * closes, so a process that does nothing holds no window (NULL: all zero). */
	struct mm_proc_stats *window;
	/* Sum of closed windows: the counters (NULL while none counted anything), shared with the
	 * snapshots whose rows show them (replaced at the roll rather than changed while shared),
	 */
	struct mm_shared_counts *closed;
	struct mm_hist_set *closed_hists; /* and the histograms with a sample (NULL: none) */
	struct mm_proc_stats *carry;	  /* for the next window: see mm_proctable_counts() */
	void *data; /* the reserved bytes (mm_proctable_reserve), 8-byte aligned; NULL: none */
	struct mm_proc *hnext; /* pid index chain (live entries only) */
	struct mm_proc *next;  /* list of all entries */
};

struct mm_proctable;

/* @lookup (called with @ctx) may be NULL for mm_proc_lookup_procfs. Returns NULL on ENOMEM. */
struct mm_proctable *mm_proctable_new(mm_proc_lookup_fn lookup, void *ctx);
void mm_proctable_free(struct mm_proctable *t); /* accepts NULL */

/* The hierarchy whose moves mm_proctable_moved() follows: the accounting one (mm_cgpath_hierarchy)
 * of this host, which a table with the /proc lookup reads from /proc/self/cgroup; -1 (a table
 * with another lookup, a replay's, until told) follows none. */
void mm_proctable_set_hierarchy(struct mm_proctable *t, int hierarchy);

/* The kernel moved the task @pid into the cgroup @path of hierarchy @hierarchy (the event
 * cgroup:cgroup_attach_task, in record order). When @pid is a live entry (a process, not one of
 * its other threads) and @hierarchy the accounting one, that is its cgroup from now on: a
 * process that joins a unit between fork and exec and leaves before its exec is read, or that
 * moves without exec, is counted where the kernel charges it. */
void mm_proctable_moved(struct mm_proctable *t, uint32_t pid, int hierarchy, const char *path);

/* Gives every entry made from now on @size bytes of ->data, zeroed. Call before the first. */
void mm_proctable_reserve(struct mm_proctable *t, size_t size);

/* The live entry for @pid, created (and looked up) if there is none; NULL only on ENOMEM.
 * @fallback_ms is used as start time when the lookup cannot tell. */
struct mm_proc *mm_proctable_get(struct mm_proctable *t, uint32_t pid, uint64_t fallback_ms);

/* The same for a collector that read the process's identity itself a moment ago (from
 * /proc/PID/stat): @seen (start time and name; cgroup unused) is what an entry
 * made now takes when the lookup fails, i.e. the process left /proc between the two reads. Its
 * start must be the true one: a FORK record still on its way recognizes the entry by it, and a
 * guess (the window's start) would split the process in two. */
struct mm_proc *mm_proctable_get_seen(struct mm_proctable *t, uint32_t pid,
				      const struct mm_proc_ident *seen);

/* Unix ms of a start time in clock ticks since boot (/proc/PID/stat's starttime). */
uint64_t mm_proc_start_ms(uint64_t start_ticks);

/* The same for a start in CLOCK_BOOTTIME ns (a task's start_boottime, as BPF reads it). */
uint64_t mm_proc_boottime_ms(uint64_t boottime_ns);

/* The wall clock was set (a step, clock.h): reads the boot time in unix ms again and, when it
 * moved by MM_CLOCK_STEP_TOLERANCE_MS or more, moves with it the starts computed from now on
 * (mm_proc_start_ms, mm_proc_boottime_ms) and those of every entry of @t, so a process keeps one
 * start (its identity) and that start is on the windows' clock. A process stored before the
 * step is stored after it with its start moved: one process, two rows of processes. Returns the
 * move in ms, 0 when none (a suspend moves the wall clock against CLOCK_MONOTONIC only, not
 * against CLOCK_BOOTTIME: no move here). */
int64_t mm_proctable_follow_clock(struct mm_proctable *t);

/* The same with the boot time given (unix ms), for tests. */
int64_t mm_proctable_boot_moved(struct mm_proctable *t, uint64_t boot_ms);

/* Moves the start of every entry of @t by @delta_ms (what mm_proctable_follow_clock() does to
 * them; replay repeats it from the recording). */
void mm_proctable_shift_starts(struct mm_proctable *t, int64_t delta_ms);

/* A new process @pid was forked by @ppid at @fallback_ms: a live entry with that pid belonged to
 * an earlier process and is retired, unless it is this process already (created from /proc before
 * the FORK record arrived; when that entry's identity was a guess, it takes its parent's name and
 * cgroup now, as a new entry would). Creates the new entry; a child already gone from /proc
 * (records arrive ~0.1 s late, a fork storm's children live a few ms) takes its parent's name and
 * cgroup, as the kernel gave it them at fork, instead of being stored nameless. */
void mm_proctable_fork(struct mm_proctable *t, uint32_t pid, uint32_t ppid, uint64_t fallback_ms);

/* The live entry for @pid, else its newest exited one still held; NULL when there is none (no
 * lookup, nothing created). */
struct mm_proc *mm_proctable_find(struct mm_proctable *t, uint32_t pid);

/* The entry of the process @pid that started at @start_ms (unix ms), live or exited: of the
 * entries for @pid, the one that started last but not after it (allowing the few ticks by which
 * a start read from a FORK record and one read from /proc differ). A pid is reused within seconds
 * in a fork storm: the live entry may be a later process than the one whose counts arrive now.
 * NULL when there is none. */
struct mm_proc *mm_proctable_find_started(struct mm_proctable *t, uint32_t pid, uint64_t start_ms);

/* A new entry for process @pid, started at @start_ms and named @comm, that has exited already
 * (no lookup: it is gone from /proc): for counts that arrive after its exit when no FORK record
 * made it an entry. Freed at the roll after its window. NULL when out of memory. */
struct mm_proc *mm_proctable_add_exited(struct mm_proctable *t, uint32_t pid, uint64_t start_ms,
					const char *comm);

/* The same, for a start known only to lie in [@lo_ms, @hi_ms] (a begin time in whole seconds):
 * the entry found for @hi_ms, unless it started before @lo_ms (with the same few ticks of
 * slack), NULL then too. Such an entry is an earlier process under the pid: the one that started
 * in the range has no entry yet (its FORK record is still on its way). */
struct mm_proc *mm_proctable_find_started_within(struct mm_proctable *t, uint32_t pid,
						 uint64_t lo_ms, uint64_t hi_ms);

/* Process @pid exited: its entry is no longer the live one (it stays until mm_proctable_roll). */
void mm_proctable_exit(struct mm_proctable *t, uint32_t pid);

/* Process @pid is now called @comm (exec or prctl). Only updates an existing live entry. On
 * @exec the cgroup is looked up again: a process can move between fork and exec (systemd starts a
 * service so: the child joins the unit's cgroup, then execs), and the cgroup read when the pid was
 * first seen is its parent's. Taken only if the lookup still shows this process (same start). */
void mm_proctable_comm(struct mm_proctable *t, uint32_t pid, const char *comm, bool exec);

/* Where counts of @p go that a collector adds to the window ending at @end_ms (unix ms; 0: no
 * bound): its window, unless the process started after that end. Counters read from /proc or
 * BPF maps at a tick (a closing one runs after the window's end, seconds after it on a loaded
 * machine, and the open window can lag the wall clock as much) include processes born since:
 * their counts go to a carry instead, which the first window ending after their start begins
 * with, so no window holds counts of a process that did not exist yet. Records never carry:
 * their time lies in the window and after the start. Both come from @t's arenas and are valid
 * until the next mm_proctable_roll(). NULL on ENOMEM. */
struct mm_proc_stats *mm_proctable_counts(struct mm_proctable *t, struct mm_proc *p,
					  uint64_t end_ms);

/* The entries with an open window (valid until the next mm_proctable_counts() or roll), *@ret_n
 * of them: what a walk over the window's activity needs, whatever the number of idle processes.
 */
struct mm_proc *const *mm_proctable_active(const struct mm_proctable *t, size_t *ret_n);

/* @p's open window, or a shared all-zero one when nothing was counted in it yet (read only). */
const struct mm_proc_stats *mm_proc_window(const struct mm_proc *p);

/* Whether @p counted anything in a closed window. */
bool mm_proc_has_closed(const struct mm_proc *p);

/* Whether @p has counted anything, in its open window or before. */
bool mm_proc_has_counts(const struct mm_proc *p);

/* After a window closed, with the next one ending at @next_end_ms (0: unknown): adds each
 * entry's window to its closed sum, starts the next window with its carry unless the process
 * started after @next_end_ms too (or with none), and frees exited entries without a carry.
 * Returns how many it freed. A process whose histograms find no memory to grow into loses
 * those samples (logged); its counters are always kept. */
unsigned mm_proctable_roll(struct mm_proctable *t, uint64_t next_end_ms);

/* What /proc/PID/stat (or /proc/PID/task/TID/stat) says about a task. */
struct mm_pid_stat {
	char comm[MM_COMM_LEN]; /* between the first '(' and the last ')', cut to fit */
	uint64_t minflt, majflt;
	uint64_t start_ticks; /* starttime, clock ticks since boot */
	bool kthread;	      /* PF_KTHREAD in flags */
	bool exiting;	      /* PF_EXITING in flags, or a zombie: its v1 cgroups read "/" */
	bool exited;	      /* state Z or X: a zombie not reaped yet, or being reaped */
};

/* Parses the text of a stat file: "pid (comm) state ppid ...", where comm may hold spaces and
 * parentheses. The one parser of it, for the process table and the collectors. Returns
 * 0, or -EINVAL (*ret untouched). */
int mm_proc_parse_stat(const char *text, struct mm_pid_stat *ret);

/* The list of all entries (live and exited), for iteration via ->next. */
struct mm_proc *mm_proctable_first(struct mm_proctable *t);
uint64_t mm_proctable_count(const struct mm_proctable *t);

/* How many processes were stored without a name ("pid-N": no FORK record, gone from /proc, no
 * name from the collector that asked), ever: counted at the roll after the first window with
 * counts in which they were still nameless (a FORK record that names one before is not a loss).
 */
uint64_t mm_proctable_nameless(const struct mm_proctable *t);

#endif
