/*
 * The fault split in bursts (see split.h): the estimate applied at window close. Pure code.
 *
 * Why the shares are applied this way: the default collectors count every fault (minflt +
 * majflt) and every fallback (fallback_locks) exactly, so a burst has only to say how each side
 * divides: the faults that did not fall back (minflt + majflt - fallback_locks) into vma and
 * vma_retry, the fallbacks into retry / abort / unknown. Estimated outcomes then add up to the
 * exact total and the estimated fallbacks are the exact ones. (A first version applied the vma
 * share of all classified faults to minflt + majflt: a process whose bursts saw no fallback got
 * vma = every fault, next to its exact fallbacks.) A fallback retried under mmap_lock counts twice
 * in fallback_locks and once in the classification: the estimate inherits that (docs/accuracy.md).
 */
#include "split.h"

#include <math.h>
#include <string.h>

#define Z95 1.959964

static void raw_counts(const struct mm_proc_stats *ps, uint64_t *c)
{
	c[MM_SPLIT_VMA] = ps->faults_vma;
	c[MM_SPLIT_VMA_RETRY] = ps->faults_vma_retry;
	c[MM_SPLIT_MMAP_RETRY] = ps->faults_mmap_retry;
	c[MM_SPLIT_ABORT] = ps->faults_mmap_abort;
	c[MM_SPLIT_UNKNOWN] = ps->faults_mmap_unknown;
}

/* Which side an outcome is on: 0 completed without a fallback, 1 fell back. Each side's shares
 * are of that side's classified faults, applied to its exact count. */
static unsigned side_of(unsigned o)
{
	return o >= MM_SPLIT_MMAP_RETRY;
}

void mm_split_burst_end(struct mm_split_acc *acc, const struct mm_proc_stats *raw)
{
	uint64_t now[MM_SPLIT_NOUT], c[MM_SPLIT_NOUT], base[2] = {0, 0};
	raw_counts(raw, now);
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++) {
		c[o] = now[o] >= acc->seen[o] ? now[o] - acc->seen[o] : 0;
		base[side_of(o)] += c[o];
		acc->seen[o] = now[o];
	}
	if (!base[0] && !base[1])
		return;
	acc->bursts++;
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++) {
		acc->cc[o] += (double)c[o] * (double)c[o];
		acc->cn[o] += (double)c[o] * (double)base[side_of(o)];
	}
	for (unsigned b = 0; b < 2; b++)
		acc->nn[b] += (double)base[b] * (double)base[b];
}

double mm_split_wilson(uint64_t k, uint64_t n)
{
	if (!n)
		return 1;
	double nn = (double)n, p = (double)k / nn, z2 = Z95 * Z95;
	double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
	double half = Z95 / (1 + z2 / nn) * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
	return half + fabs(centre - p);
}

/* The two-sided 95% quantile of Student's t with @df degrees of freedom: a window has only a few
 * bursts (5 with 5-second windows), and their spread estimates its variance from those few, so
 * the normal quantile (Z95) would state a bound that covers a phased workload ~80% of the time
 * with 4 bursts (tests/unit/test_split.c). Exact to 3 decimals up to 30, then the Cornish-Fisher
 * expansion (within 0.001 from 30 on). */
double mm_split_t95(unsigned df)
{
	static const double t[] = {
		0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
		2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
	};
	if (df == 0)
		return INFINITY;
	if (df < sizeof(t) / sizeof(t[0]))
		return t[df];
	double z = Z95, n = df, z3 = z * z * z, z5 = z3 * z * z;
	return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n);
}

/* 95% half-width of the share sum(c)/sum(base) of its side, from the spread between bursts (ratio
 * estimator of a cluster sample: var = k/(k-1) * sum (c_i - p base_i)^2 / (sum base)^2, with
 * Student's t on k - 1 degrees of freedom); 0 under two bursts. */
static double spread(const struct mm_split_acc *acc, unsigned o, double c, double base)
{
	if (!acc || acc->bursts < 2 || base <= 0)
		return 0;
	double p = c / base, k = acc->bursts;
	double ss = acc->cc[o] - 2 * p * acc->cn[o] + p * p * acc->nn[side_of(o)];
	if (ss < 0)
		ss = 0;
	return mm_split_t95(acc->bursts - 1) * sqrt(k / (k - 1) * ss) / base;
}

void mm_split_add_raw(uint64_t *life, const struct mm_proc_stats *ps)
{
	uint64_t c[MM_SPLIT_NOUT];
	raw_counts(ps, c);
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++)
		life[o] += c[o];
}

/* The estimates of the five outcomes (@est, in split.h's order) from the classified counts @c
 * (@classified per side) on the exact side counts @total; the bound per side in @err. */
static void estimate_outcomes(const uint64_t *c, const uint64_t *classified, const uint64_t *total,
			      const struct mm_split_acc *acc, uint64_t *est, double *err)
{
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++) {
		unsigned b = side_of(o);
		double e;
		if (!classified[b]) {
			/* Counted but none classified: no evidence of how they divide. They go to
			 * the plain outcome of their side (vma; mmap_unknown), and the whole of
			 * them is the error. */
			est[o] = o == MM_SPLIT_VMA || o == MM_SPLIT_UNKNOWN ? total[b] : 0;
			e = (double)total[b];
		} else {
			double share = (double)c[o] / (double)classified[b];
			est[o] = (uint64_t)llround(share * (double)total[b]);
			double w = mm_split_wilson(c[o], classified[b]);
			double s = spread(acc, o, (double)c[o], (double)classified[b]);
			e = fmax(w, s) * (double)total[b];
		}
		err[b] = fmax(err[b], e);
	}
}

/* The raw counts the estimate works from: the window's own, else @prior's (@borrowed). */
static void sample_of(const struct mm_proc_stats *ps, const uint64_t *prior, uint64_t *c,
		      uint64_t *classified, bool *borrowed)
{
	raw_counts(ps, c);
	classified[0] = classified[1] = 0;
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++)
		classified[side_of(o)] += c[o];
	*borrowed = false;
	if (classified[0] || classified[1] || !prior)
		return;
	for (unsigned o = 0; o < MM_SPLIT_NOUT; o++) {
		c[o] = prior[o];
		classified[side_of(o)] += c[o];
	}
	*borrowed = classified[0] || classified[1];
}

void mm_split_estimate(struct mm_proc_stats *ps, const struct mm_split_acc *acc,
		       uint64_t observed_ms, const uint64_t *prior)
{
	uint64_t c[MM_SPLIT_NOUT], classified[2];
	bool borrowed;
	sample_of(ps, prior, c, classified, &borrowed);
	if (borrowed)
		acc = NULL; /* the spread of other windows' bursts says nothing of this one */
	/* What bursts see but cannot scale to an exact total. */
	ps->faults_mmap_lock_retries = ps->faults_mmap_lock_wait_ns = ps->faults_pages_reread = 0;
	memset(&ps->mmap_lock_by_fault, 0,
	       (size_t)((char *)&ps->mmap_lock_by_unknown - (char *)&ps->mmap_lock_by_fault) +
		       sizeof(ps->mmap_lock_by_unknown));
	ps->split_faults_seen = borrowed ? 0 : classified[0] + classified[1];
	ps->split_fallbacks_seen = borrowed ? 0 : classified[1];
	/* Only where there is something to observe: a window with nothing else stays empty. */
	bool counted = ps->minflt || ps->majflt || ps->fallback_locks ||
		       (!borrowed && (classified[0] || classified[1]));
	ps->split_observed_ns = counted ? observed_ms * 1000000ull : 0;
	ps->split_estimated = ps->split_err = ps->split_err_fallbacks = 0;
	ps->faults_vma = ps->faults_vma_retry = ps->faults_mmap_retry = ps->faults_mmap_abort =
		ps->faults_mmap_unknown = ps->faults_mmap_fallback = 0;
	if (!counted || (!classified[0] && !classified[1]))
		return; /* nothing to estimate, or nothing to estimate it from */
	/* The exact fallbacks of user faults (fallback_locks less the faults taken in kernel mode),
	 * and the faults that did not fall back (docs/accuracy.md's "completed under the per-VMA
	 * lock"). */
	uint64_t all = ps->minflt + ps->majflt, fb = ps->fallback_locks;
	uint64_t k = ps->kernel_mode_faults < fb ? ps->kernel_mode_faults : fb;
	uint64_t total[2] = {all > fb ? all - fb : 0, fb - k}, est[MM_SPLIT_NOUT];
	double err[2] = {0, 0};
	estimate_outcomes(c, classified, total, acc, est, err);
	ps->faults_vma = est[MM_SPLIT_VMA];
	ps->faults_vma_retry = est[MM_SPLIT_VMA_RETRY];
	ps->faults_mmap_retry = est[MM_SPLIT_MMAP_RETRY];
	ps->faults_mmap_abort = est[MM_SPLIT_ABORT];
	ps->faults_mmap_unknown = est[MM_SPLIT_UNKNOWN];
	ps->faults_mmap_fallback =
		est[MM_SPLIT_MMAP_RETRY] + est[MM_SPLIT_ABORT] + est[MM_SPLIT_UNKNOWN];
	ps->split_err = (uint64_t)ceil(fmax(err[0], err[1]));
	ps->split_err_fallbacks = (uint64_t)ceil(err[1]);
	ps->split_estimated = 1;
}
