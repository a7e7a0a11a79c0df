/*
 * The fault split in bursts: when the outcome classification (the faults collector) cannot run
 * continuously at a cost production carries, it runs for a share of each window (split_duty), in
 * several short bursts spread through the window, and the outcome shares it measures are applied
 * to the exact totals the default collectors have (minflt + majflt, fallback_locks).
 *
 * Schedule: time is cut into slots of I / k ms, k = max(2, I) for windows of I seconds (one slot
 * a second, at least two a window so that their spread says something); slots are aligned to
 * wall time, so windows (which end on multiples of I) hold whole slots. Each slot has one burst
 * of duty * slot ms at an offset drawn from a hash of the slot's number (no aliasing with
 * periodic workloads, and no state: the loop that switches the streams and the host that reads
 * their records in event time compute the same bursts), ending at least MM_SPLIT_GRACE_MS
 * before the slot does. A burst has three phases: ON (every stream of the collector enabled),
 * ENDING (the event that opens a fault, page_fault_user, is off; the others stay on for
 * MM_SPLIT_GRACE_MS so that faults opened in the burst see their fallback or retry), then OFF.
 * A fault whose window opened outside a burst is never classified.
 *
 * Estimate, per process and window, from the faults classified in its bursts and the exact
 * counts T = minflt + majflt and F = fallback_locks:
 *   vma, vma_retry                   = their share among the classified faults that did not
 *                                      fall back * (T - F)
 *   mmap_retry, mmap_abort, _unknown = their share among the classified fallbacks * F
 *   mmap_fallback                    = the sum of the three (= F)
 * so the outcomes add up to T. A side counted but never classified goes whole to its plain
 * outcome (vma, mmap_unknown) with all of it as the error.
 * Error bound (split_err, in faults, the largest over the five outcomes): the 95% half-width on
 * each share times its side's count, the larger of (a) the Wilson score interval of a binomial
 * share (faults independent) and (b) the between-burst spread (a cluster-sample ratio estimate
 * over the bursts, which catches phases of the workload, with Student's t on bursts - 1 degrees
 * of freedom: a window has few bursts); (b) needs two bursts with faults.
 * Pure arithmetic: no I/O, no clock.
 */
#ifndef MM_SPLIT_H
#define MM_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

#define MM_SPLIT_GRACE_MS 20 /* evidence streams stay on this long after the opener stops */
/* A classifier in the kernel (the BPF source): its threads flush their counts within 20 ms
 * (counters.bpf.c FLUSH_NS), so a burst's counts are read this long after its grace. */
#define MM_SPLIT_FLUSH_MS 30
struct mm_split_burst {
	uint64_t on_ms, off_ms; /* wall ms: the opener runs in [on_ms, off_ms) */
};

enum mm_split_phase {
	MM_SPLIT_OFF,
	MM_SPLIT_ON,	 /* every stream on */
	MM_SPLIT_ENDING, /* the opener off, the evidence streams on */
};

struct mm_split_clock {
	uint64_t slot_ms, burst_ms, seed;
};

/* Bursts at @duty_pm per mille (1..999) for windows of @interval_s seconds. */
void mm_split_clock_init(struct mm_split_clock *c, unsigned interval_s, unsigned duty_pm,
			 uint64_t seed);

/* The burst of slot @slot (wall ms / slot_ms). */
struct mm_split_burst mm_split_burst_of(const struct mm_split_clock *c, uint64_t slot);

/* The phase at wall time @now_ms, and in *ret_next_ms the next time it changes. */
enum mm_split_phase mm_split_phase_at(const struct mm_split_clock *c, uint64_t now_ms,
				      uint64_t *ret_next_ms);

/* Per process, across the bursts of the open window: each burst's counts, for the spread. */
enum {
	MM_SPLIT_VMA,
	MM_SPLIT_VMA_RETRY,
	MM_SPLIT_MMAP_RETRY,
	MM_SPLIT_ABORT,
	MM_SPLIT_UNKNOWN,
	MM_SPLIT_NOUT
};
struct mm_split_acc {
	uint64_t seen[MM_SPLIT_NOUT]; /* the window's raw counts at the end of the last burst */
	unsigned bursts;	      /* bursts in which the process had classified faults */
	double cc[MM_SPLIT_NOUT];     /* sum over bursts of c^2 */
	double cn[MM_SPLIT_NOUT];     /* sum over bursts of c * (the burst's base) */
	double nn[2];		      /* sum over bursts of base^2: [0] faults, [1] fallbacks */
};

/* At the end of a burst: adds the burst's counts (the raw outcome counts in @raw minus those at
 * the previous burst's end) to @acc. */
void mm_split_burst_end(struct mm_split_acc *acc, const struct mm_proc_stats *raw);

/* Turns the raw classified counts of a window in @ps into estimates on its exact totals (see the
 * header comment), fills split_faults_seen, split_fallbacks_seen, split_err, split_estimated and
 * split_observed_ns (@observed_ms: burst time of the window), and zeroes what bursts cannot
 * estimate (mmap_lock_by_*, faults_mmap_lock_retries, faults_mmap_lock_wait_ns,
 * faults_pages_reread: they have no exact total to scale). A window without a classified fault
 * of the process borrows the shares of @prior (the process's raw counts of its earlier windows,
 * MM_SPLIT_NOUT of them; NULL: none), with their binomial error and split_faults_seen 0; with
 * no prior either it keeps its exact counts only (split_estimated 0). @acc may be NULL (no
 * spread). */
void mm_split_estimate(struct mm_proc_stats *ps, const struct mm_split_acc *acc,
		       uint64_t observed_ms, const uint64_t *prior);

/* Adds the raw classified counts of @ps (before mm_split_estimate) to @life. */
void mm_split_add_raw(uint64_t *life, const struct mm_proc_stats *ps);

/* The two-sided 95% quantile of Student's t with @df degrees of freedom (infinite for 0). */
double mm_split_t95(unsigned df);

/* 95% Wilson half-width (plus the centre's distance from @k/@n) of a share @k of @n; 1 for n 0. */
double mm_split_wilson(uint64_t k, uint64_t n);

#endif
