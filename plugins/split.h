/*
 * The fault split in bursts: when the outcome classification (the faults collector) cannot run
 * continuously at a cost production carries, it runs for a share of each window (split_duty), on
 * the host's duty cycle (daemon/duty.h): several short bursts spread through the window, and the
 * outcome shares it measures are applied to the exact totals the default collectors have
 * (minflt + majflt, fallback_locks). A fault whose window opened outside a burst is never
 * classified.
 *
 * Estimate, per process and window, from the faults classified in its bursts and the exact
 * counts T = minflt + majflt, F = fallback_locks and K = kernel_mode_faults. F counts the faults
 * taken in kernel mode too (copy_to_user in a system call: x86 sends them to mmap_lock without a
 * VMA-lock attempt), which the classification (user faults) never sees; K counts those alone:
 *   vma, vma_retry                   = their share among the classified faults that did not
 *                                      fall back * (T - F)
 *   mmap_retry, mmap_abort, _unknown = their share among the classified fallbacks * (F - K)
 *   mmap_fallback                    = the sum of the three (= F - K)
 * so the outcomes and the kernel-mode faults add up to T. (Scaling the fallback outcomes by the
 * bursts' own share of kernel-mode fault-site locks instead, mmap_lock_by_fault_kernel, was tried:
 * the bursts saw 2-3 times the user share a continuous daemon counted, tests/privileged
 * test_split.sh's kernel workload.) A side counted but never classified
 * goes whole to its plain outcome (vma, mmap_unknown) with all of it as the error.
 * Error bounds (in faults): the 95% half-width on each share times its side's count, the larger
 * of (a) the Wilson score interval of a binomial
 * share (faults independent) and (b) the between-burst spread (a cluster-sample ratio estimate
 * over the bursts, which catches phases of the workload, with Student's t on bursts - 1 degrees
 * of freedom: a window has few bursts); (b) needs two bursts with faults. split_err is the
 * largest bound over the five outcomes, split_err_fallbacks the largest on the fallback side (the
 * fallbacks are often orders of magnitude fewer than the faults: a bound of their own lets a
 * reader see them).
 * Pure arithmetic: no I/O, no clock.
 */
#ifndef MM_SPLIT_H
#define MM_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

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
 * header comment), fills split_faults_seen, split_fallbacks_seen, split_err, split_err_fallbacks,
 * split_estimated and split_observed_ns (@observed_ms: burst time of the window), and zeroes what
 * bursts cannot estimate (mmap_lock_by_*, faults_mmap_lock_retries, faults_mmap_lock_wait_ns,
 * faults_pages_reread: they have no exact total to scale). A window without a classified fault
 * of the process borrows the shares of @prior (the process's raw counts of its earlier windows,
 * MM_SPLIT_NOUT of them; NULL: none), with their binomial error and split_faults_seen 0; with no
 * prior either it keeps its exact counts only (split_estimated 0). @acc may be NULL (no
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
