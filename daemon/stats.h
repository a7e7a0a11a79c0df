/*
 * Per-process statistics: the one record that collectors fill and that the store, the JSON API and
 * the Prometheus exporter read. Every counter is described once in mm_proc_fields[] (name, unit,
 * Prometheus name), and those three consumers walk that table instead of naming fields, so adding a
 * counter means: a member here, a row in stats.c, a column in a new schema/ migration.
 *
 * Units are part of the names: *_ns are nanoseconds; everything else is a count.
 */
#ifndef MM_STATS_H
#define MM_STATS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* log2 histogram of waits: bucket i counts waits w with 2^i <= w < 2^(i+1) ns (bucket 0 also
 * holds w = 0); the last bucket holds everything longer. */
#define MM_HIST_BUCKETS 40

struct mm_hist {
	uint64_t bucket[MM_HIST_BUCKETS];
};

/* faults_vma, faults_vma_retry, faults_mmap_retry, faults_mmap_abort, faults_mmap_unknown. */
#define MM_FAULT_OUTCOMES 5

/* The counters of a process (struct mm_proc_stats without its histograms): what every process
 * with any activity holds between windows and in a snapshot (~400 bytes), the histograms being
 * kept apart, only for the few processes with a sample in one (struct mm_proc_hists).
 *
 * Members are grouped by the collector that fills them: mmaplock (faults ..
 * mmap_lock_contended), faults (faults_vma .. split_err_fallbacks), totals (minflt, majflt),
 * fallbacks (fallback_locks .. kernel_mode_faults), contention; each row of stats.c's table
 * names its collector. */
struct mm_proc_counts {
	uint64_t faults;		 /* exceptions:page_fault_user in the process */
	uint64_t mmap_lock_read;	 /* successful mmap_lock read acquisitions (trylocks too) */
	uint64_t mmap_lock_write;	 /* successful mmap_lock write acquisitions */
	uint64_t mmap_lock_trylock_fail; /* acquisitions that returned without the lock */
	uint64_t mmap_lock_waits;	 /* blocking acquisitions timed start_locking -> returned */
	uint64_t mmap_lock_wait_ns;	 /* their summed wait */
	uint64_t mmap_lock_write_hold_ns; /* summed write hold time (acquire -> release) */
	uint64_t mmap_lock_contended;	  /* acquisitions that hit lock:contention_begin */

	/* faults collector (plugins/faults.c): the outcome of every user fault, */
	/* The outcomes of the fault split (mm_field_is_outcome). */
	uint64_t faults_vma;	       /* completed under the per-VMA lock */
	uint64_t faults_vma_retry;     /* retried under the VMA lock (patched kernels) */
	uint64_t faults_mmap_retry;    /* an attempt under the VMA lock, then mmap_lock */
	uint64_t faults_mmap_abort;    /* straight to mmap_lock */
	uint64_t faults_mmap_unknown;  /* fell back; the events cannot show why */
	uint64_t faults_mmap_fallback; /* the three mmap_* outcomes together */
	/* what the fallbacks cost, */
	uint64_t faults_mmap_lock_retries; /* extra mmap_lock acquisitions inside one fault */
	uint64_t faults_mmap_lock_wait_ns; /* mmap_lock wait of fault fallbacks */
	uint64_t faults_pages_reread;	   /* pages added to the page cache twice in one fault */
	/* and who took the mmap_lock (successful acquisitions, by kernel callchain). */
	uint64_t mmap_lock_by_fault;	    /* fault fallback (lock_mm_and_find_vma) */
	uint64_t mmap_lock_by_fault_other;  /* inside a fault handled under the VMA lock */
	uint64_t mmap_lock_by_fault_kernel; /* a fault in kernel mode (uaccess in a syscall) */
	uint64_t mmap_lock_by_mmap;
	uint64_t mmap_lock_by_munmap;
	uint64_t mmap_lock_by_mremap;
	uint64_t mmap_lock_by_mprotect;
	uint64_t mmap_lock_by_madvise;
	uint64_t mmap_lock_by_brk;
	uint64_t mmap_lock_by_mlock;
	uint64_t mmap_lock_by_mincore;
	uint64_t mmap_lock_by_exit;
	uint64_t mmap_lock_by_fork;
	uint64_t mmap_lock_by_exec;
	uint64_t mmap_lock_by_remote; /* /proc/PID, ptrace, process_vm_*, GUP of another mm */
	uint64_t mmap_lock_by_other;
	uint64_t mmap_lock_by_unknown; /* no callchain or no kernel symbols */
	/* The split in bursts (plugins/split.h; the faults collector fills these at window close):
	 * with split_estimated, faults_vma .. faults_mmap_fallback are estimates, the classified
	 * shares applied to minflt + majflt and fallback_locks; with 0 they are exact counts (or
	 * 0). */
	uint64_t split_estimated;      /* 1 per process window whose outcome counts are estimates */
	uint64_t split_observed_ns;    /* time of the window the classification ran (bursts) */
	uint64_t split_faults_seen;    /* faults classified in those bursts */
	uint64_t split_fallbacks_seen; /* of which fell back to mmap_lock */
	uint64_t
		split_err; /* 95% bound, in faults, on each estimated outcome count (the largest) */
	uint64_t split_err_fallbacks; /* the same on the fallback side's outcomes only */

	/* totals collector (plugins/totals.c): what the kernel itself counted for the process,
	 * /proc/PID/stat while it lives and taskstats when its threads exit: */
	uint64_t minflt; /* minor faults (user and kernel mode, get_user_pages) */
	uint64_t majflt; /* major faults, including every fault that was retried */
	/* fallbacks collector (plugins/fallbacks.c): mmap_lock read acquisitions in
	 * lock_mm_and_find_vma, i.e. by fault fallbacks (user or kernel mode), told by IP: */
	uint64_t fallback_locks;
	uint64_t fallback_lock_waits; /* those that found it taken (a failed attempt first) */
	/* faults taken in kernel mode on user memory (exceptions:page_fault_kernel): x86 sends
	 * them to lock_mm_and_find_vma() without a VMA-lock attempt, so fallback_locks counts
	 * them, but they are not fallbacks of user faults */
	uint64_t kernel_mode_faults;
	/* contention collector (plugins/contention.c): the process's waits for an mmap_lock
	 * (lock:contention_begin to _end, its own mm's or another's), and their time by what the
	 * lock's holder was doing when each began (plugins/bpf/holder.h: unknown when none could
	 * be named); the _ns members follow enum mm_lock_source's order. */
	uint64_t mmap_lock_behind_waits;
	uint64_t mmap_lock_behind_fault_ns;
	uint64_t mmap_lock_behind_fault_other_ns;
	uint64_t mmap_lock_behind_fault_kernel_ns;
	uint64_t mmap_lock_behind_mmap_ns;
	uint64_t mmap_lock_behind_munmap_ns;
	uint64_t mmap_lock_behind_mremap_ns;
	uint64_t mmap_lock_behind_mprotect_ns;
	uint64_t mmap_lock_behind_madvise_ns;
	uint64_t mmap_lock_behind_brk_ns;
	uint64_t mmap_lock_behind_mlock_ns;
	uint64_t mmap_lock_behind_mincore_ns;
	uint64_t mmap_lock_behind_exit_ns;
	uint64_t mmap_lock_behind_fork_ns;
	uint64_t mmap_lock_behind_exec_ns;
	uint64_t mmap_lock_behind_remote_ns;
	uint64_t mmap_lock_behind_other_ns;
	uint64_t mmap_lock_behind_unknown_ns;
};

/* The distributions of a process (opt-in collectors: mmaplock, fault_latency on BPF). */
struct mm_proc_hists {
	struct mm_hist mmap_lock_wait_hist; /* distribution of mmap_lock_wait_ns */
	/* BPF source only (daemon/bpfsource.c): user-fault latency, page_fault_user to the fault's
	 * completion (mm_account_fault's software event), by whether it fell back: */
	struct mm_hist fault_ns_vma_hist;  /* completed without an mmap_lock fallback */
	struct mm_hist fault_ns_mmap_hist; /* completed after one */
	/* and by the fault's outcome (faults collector on the BPF source), in the order of
	 * faults_vma .. faults_mmap_unknown; only completed faults have a latency. Histograms
	 * come last: mm_stats_add() walks them from mmap_lock_wait_hist on. */
	struct mm_hist fault_ns_outcome_hist[MM_FAULT_OUTCOMES];
};

/* Everything a collector may fill for a process in a window: the counters, then the histograms,
 * both members reachable by name (ps->faults, ps->mmap_lock_wait_hist: meson builds with
 * -fms-extensions for these anonymous members). Held only while a process is active in a window
 * (proctable.h); mm_stats_counts() and mm_stats_hists() give its two halves. */
struct mm_proc_stats {
	struct mm_proc_counts;
	struct mm_proc_hists;
};

/* The histograms of struct mm_proc_hists as an array: MM_PROC_NHISTS of them, @member's at
 * MM_HIST_INDEX(member), mm_hists_at() the i-th. */
#define MM_PROC_NHISTS	      (sizeof(struct mm_proc_hists) / sizeof(struct mm_hist))
#define MM_HIST_INDEX(member) (offsetof(struct mm_proc_hists, member) / sizeof(struct mm_hist))

static inline const struct mm_hist *mm_hists_at(const struct mm_proc_hists *h, unsigned i)
{
	return (const struct mm_hist *)h + i;
}

static inline struct mm_proc_counts *mm_stats_counts(struct mm_proc_stats *s)
{
	return (struct mm_proc_counts *)s; /* its first member */
}
static inline const struct mm_proc_counts *mm_stats_counts_c(const struct mm_proc_stats *s)
{
	return (const struct mm_proc_counts *)s;
}
static inline struct mm_proc_hists *mm_stats_hists(struct mm_proc_stats *s)
{
	return (struct mm_proc_hists *)((char *)s + sizeof(struct mm_proc_counts));
}
static inline const struct mm_proc_hists *mm_stats_hists_c(const struct mm_proc_stats *s)
{
	return (const struct mm_proc_hists *)((const char *)s + sizeof(struct mm_proc_counts));
}
_Static_assert(offsetof(struct mm_proc_stats, mmap_lock_wait_hist) == sizeof(struct mm_proc_counts),
	       "the histograms follow the counters");

/* The counters of either a struct mm_proc_stats or a struct mm_proc_counts (@s a pointer). */
#define MM_COUNTS(s)                                                                               \
	_Generic((s),                                                                              \
		struct mm_proc_stats *: (const struct mm_proc_counts *)(s),                        \
		const struct mm_proc_stats *: (const struct mm_proc_counts *)(s),                  \
		struct mm_proc_counts *: (const struct mm_proc_counts *)(s),                       \
		const struct mm_proc_counts *: (const struct mm_proc_counts *)(s))

enum mm_field_kind {
	MM_FIELD_COUNT, /* a plain counter */
	MM_FIELD_NS,	/* nanoseconds; exported as seconds */
};

/* What a field is while its collector runs on a duty cycle (the fault split in bursts, split.h):
 * every surface reads this instead of naming families. */
enum mm_field_cycle {
	MM_CYCLE_EXACT, /* exact whatever the cycle (and every field of a collector without one) */
	MM_CYCLE_ESTIMATED, /* an estimate under a cycle: exported as prom_estimated, shown with ≈
			     */
	MM_CYCLE_BLIND,	    /* not known under a cycle (no exact total to scale it to): not shown */
	MM_CYCLE_SAMPLE,    /* describes the cycle's sample and error: shown only under a cycle */
};

struct mm_field {
	const char *name; /* column / JSON key, e.g. "mmap_lock_wait_ns" */
	const char
		*prom; /* Prometheus family without prefix, e.g. "mmap_lock_wait_seconds_total" */
	const char *prom_label; /* extra label "key=\"value\"" within that family, or NULL */
	const char *help;	/* Prometheus HELP text of the family */
	enum mm_field_kind kind;
	size_t offset;	       /* offsetof(struct mm_proc_counts, member), a uint64_t; the same in
				* struct mm_proc_stats */
	const char *collector; /* the collector that fills it (plugins/<collector>.c) */
	bool outcome;	       /* one of the fault split's outcomes (mm_field_is_outcome) */
	enum mm_field_cycle cycle;
	/* MM_CYCLE_ESTIMATED: the family and HELP text of its estimates */
	const char *prom_estimated, *help_estimated;
};

extern const struct mm_field mm_proc_fields[];
extern const size_t mm_proc_nfields;
/* At least mm_proc_nfields (stats.c checks): the size of a bit set of fields. */
#define MM_PROC_FIELDS_MAX 128

/* The value of field @f in @s, a struct mm_proc_stats or struct mm_proc_counts. */
#define mm_field_get(s, f) mm_field_get_counts(MM_COUNTS(s), (f))

static inline uint64_t mm_field_get_counts(const struct mm_proc_counts *s, const struct mm_field *f)
{
	return *(const uint64_t *)((const char *)s + f->offset);
}

/* True for the outcome counts of the fault split (faults_vma .. faults_mmap_fallback): exact when
 * the split runs continuously, estimates where it runs in bursts, and unknown (null on every
 * surface, not 0) for a process no burst caught: split_estimated 0 in a window the bursts
 * observed (split_observed_ns > 0). */
bool mm_field_is_outcome(const struct mm_field *f);

/* How busy a process (or cgroup) was, for picking the busiest: faults (the kernel's count or, when
 * only the opt-in collectors ran, the sampled one), fallbacks and mmap_lock acquisitions. */
/* The faults of an estimated row that no estimate covers (plugins/split.h): minflt + majflt less
 * the five outcomes and the faults taken in kernel mode, 0 if less; outcomes, kernel-mode faults
 * and these add up to the faults. */
uint64_t mm_counts_not_sampled(const struct mm_proc_counts *s);

#define mm_stats_activity(s) mm_counts_activity(MM_COUNTS(s))
uint64_t mm_counts_activity(const struct mm_proc_counts *s);

/* Adds every counter and histogram bucket of @src to @dst. */
void mm_stats_add(struct mm_proc_stats *dst, const struct mm_proc_stats *src);
void mm_counts_add(struct mm_proc_counts *dst, const struct mm_proc_counts *src);
void mm_hists_add(struct mm_proc_hists *dst, const struct mm_proc_hists *src);

/* True when every counter and bucket is zero. */
int mm_stats_is_zero(const struct mm_proc_stats *s);
bool mm_counts_is_zero(const struct mm_proc_counts *s);
bool mm_hists_is_zero(const struct mm_proc_hists *s);
bool mm_hist_is_zero(const struct mm_hist *h);

/* Histograms kept only where they have a sample: bit i of @present says that the i-th histogram
 * of struct mm_proc_hists (MM_HIST_INDEX()) is in @h, in that order; NULL is the empty set. A
 * process with any mostly has one or two of the eight (mmap_lock waits; fault latency when it is
 * on): the process table's sums and the snapshots' rows keep sets, not the 2.5 KiB struct. With
 * every row of a snapshot holding two structs, a churn wave of 10 000 processes x 4 threads
 * under --collectors all peaked at 105 MiB, 61 MiB of it those rows (heaptrack); 51-55 MiB with
 * sets. */
struct mm_hist_set {
	uint16_t present;
	struct mm_hist h[];
};
_Static_assert(MM_PROC_NHISTS <= 16, "a bit per histogram in mm_hist_set.present");

/* Adds @src's histograms (NULL: none) to *@dst, growing it by those it lacks (created on the
 * first non-empty one): a process without a sample keeps none. Returns 0, or -ENOMEM (nothing
 * added, *@dst unchanged). */
int mm_hist_set_add(struct mm_hist_set **dst, const struct mm_proc_hists *src);
/* *@dst becomes a copy of @s (NULL: NULL). Returns 0, or -ENOMEM with *@dst NULL. */
int mm_hist_set_dup(struct mm_hist_set **dst, const struct mm_hist_set *s);
/* Histogram @i (MM_HIST_INDEX()) of @s; an empty one when @s has none. */
const struct mm_hist *mm_hist_set_get(const struct mm_hist_set *s, unsigned i);
/* Adds the histograms of @s to @dst. */
void mm_hist_set_add_to(struct mm_proc_hists *dst, const struct mm_hist_set *s);
/* Every histogram of @s, written to @buf (empty where @s has none). */
const struct mm_proc_hists *mm_hist_set_expand(const struct mm_hist_set *s,
					       struct mm_proc_hists *buf);

/* Records one observation of @ns in @h. */
void mm_hist_add(struct mm_hist *h, uint64_t ns);

/* Upper bound (exclusive) in ns of bucket @i, i.e. 2^(i+1); UINT64_MAX for the last bucket. */
uint64_t mm_hist_upper_ns(unsigned i);

/* Smallest bucket upper bound below which at least fraction @q (0..1) of observations lie;
 * 0 when the histogram is empty. */
uint64_t mm_hist_quantile_ns(const struct mm_hist *h, double q);

#endif
