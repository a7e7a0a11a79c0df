/*
 * The table of per-process counters (see stats.h) and histogram arithmetic. Pure code.
 */
#include "stats.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A row of mm_proc_fields[]: F, a count; NS, nanoseconds (exported as seconds); L, a count that is
 * one labelled series ("key=\"value\"") of a family shared with other rows; OUT, one of the five
 * outcomes of the fault split. Each row names the collector that fills it (COLLECTOR, set before
 * its group of rows): /metrics exports a family only while its collector runs. */
#define ROW(member, prom_, label_, help_, kind_)                                                   \
	{                                                                                          \
		.name = #member, .prom = prom_, .prom_label = label_, .help = help_,               \
		.kind = kind_, .offset = offsetof(struct mm_proc_counts, member),                  \
		.collector = COLLECTOR, .cycle = CYCLE                                             \
	}
#define F(member, prom_, help_)		ROW(member, prom_, NULL, help_, MM_FIELD_COUNT)
#define NS(member, prom_, help_)	ROW(member, prom_, NULL, help_, MM_FIELD_NS)
#define L(member, prom_, label_, help_) ROW(member, prom_, label_, help_, MM_FIELD_COUNT)
#define OUT(member, out_)                                                                          \
	{                                                                                          \
		.name = #member, .prom = "page_faults_total",                                      \
		.prom_label = "outcome=\"" out_ "\"", .help = OUT_HELP, .kind = MM_FIELD_COUNT,    \
		.offset = offsetof(struct mm_proc_counts, member), .collector = COLLECTOR,         \
		.outcome = true, .cycle = MM_CYCLE_ESTIMATED,                                      \
		.prom_estimated = "page_faults_estimated_total", .help_estimated = ESTIMATED_HELP  \
	}
/* One source of mmap_lock acquisitions: member mmap_lock_by_<src>, label source="<src>". */
#define SRC(src)                                                                                   \
	L(mmap_lock_by_##src, "mmap_lock_acquisitions_by_source_total", "source=\"" #src "\"",     \
	  SRC_HELP)

#define ESTIMATED_HELP                                                                             \
	"Estimated page faults by how they were handled (the fault split in bursts): the outcome " \
	"shares classified in bursts applied to page_faults_accounted_total less "                 \
	"fault_fallback_locks_total (vma, vma_retry) and to fault_fallback_locks_total less "      \
	"page_faults_kernel_mode_total (mmap_*); outcome=\"kernel_mode\" is "                      \
	"page_faults_kernel_mode_total (no VMA-lock attempt), outcome=\"not_sampled\" counts the " \
	"faults of windows no burst covered, so the outcomes add up to "                           \
	"page_faults_accounted_total. page_fault_split_* give the sample and the error."
#define OUT_HELP                                                                                   \
	"User page faults by how they were handled: vma (under the per-VMA lock), vma_retry "      \
	"(retried under it), mmap_retry (attempted under it, then mmap_lock), mmap_abort "         \
	"(straight to mmap_lock), mmap_unknown (fell back to mmap_lock; whether after an attempt " \
	"or not left no evidence)."
#define KFLT_HELP                                                                                  \
	"Page faults the kernel accounted to processes (/proc/PID/stat minflt/majflt; exited "     \
	"threads from taskstats): user and kernel mode and get_user_pages; a retried fault "       \
	"counts once, as major."
#define SPLIT_HELP                                                                                 \
	"Faults (and of them fallbacks) classified in the bursts of the fault split: the sample "  \
	"the estimated outcome counts come from."
#define BEHIND_HELP                                                                                \
	"Time waited for an mmap_lock (lock:contention_begin to _end), by "                        \
	"what the lock's holder was doing when the wait began (the names of "                      \
	"mmap_lock_acquisitions_by_source_total; unknown: no holder could be named)."
/* One operation of mmap_lock holders: member mmap_lock_behind_<op>_ns, label op="<op>". */
#define BEHIND(op)                                                                                 \
	ROW(mmap_lock_behind_##op##_ns, "mmap_lock_wait_behind_seconds_total", "op=\"" #op "\"",   \
	    BEHIND_HELP, MM_FIELD_NS)
#define SRC_HELP                                                                                   \
	"Successful mmap_lock acquisitions by who took them (kernel callchain): the fault "        \
	"fallback, a fault under the VMA lock, or a system call / kernel path."

const struct mm_field mm_proc_fields[] = {
#define COLLECTOR "mmaplock"
#define CYCLE	  MM_CYCLE_EXACT
	F(faults, "user_page_faults_total", "User page faults (exceptions:page_fault_user)."),
	L(mmap_lock_read, "mmap_lock_acquisitions_total", "mode=\"read\"",
	  "Successful mmap_lock acquisitions, by mode."),
	L(mmap_lock_write, "mmap_lock_acquisitions_total", "mode=\"write\"",
	  "Successful mmap_lock acquisitions, by mode."),
	F(mmap_lock_trylock_fail, "mmap_lock_failed_acquisitions_total",
	  "mmap_lock acquisitions that returned without the lock (failed trylock or killed wait)."),
	F(mmap_lock_waits, "mmap_lock_waits_total",
	  "Blocking mmap_lock acquisitions whose wait (start_locking to acquire_returned) was "
	  "timed."),
	NS(mmap_lock_wait_ns, "mmap_lock_wait_seconds_total",
	   "Time spent waiting for mmap_lock (start_locking to acquire_returned)."),
	NS(mmap_lock_write_hold_ns, "mmap_lock_write_hold_seconds_total",
	   "Time mmap_lock was held for write (acquire_returned to released)."),
	F(mmap_lock_contended, "mmap_lock_contended_total",
	  "mmap_lock acquisitions that were contended (lock:contention_begin while waiting)."),
#undef COLLECTOR
#define COLLECTOR "faults"
	OUT(faults_vma, "vma"),
	OUT(faults_vma_retry, "vma_retry"),
	OUT(faults_mmap_retry, "mmap_retry"),
	OUT(faults_mmap_abort, "mmap_abort"),
	OUT(faults_mmap_unknown, "mmap_unknown"),
	/* The three fallback outcomes' sum: an outcome too (null where no burst sampled). */
	{.name = "faults_mmap_fallback",
	 .prom = "page_fault_fallbacks_total",
	 .help = "User-mode page faults (exceptions:page_fault_user) that fell back to mmap_lock, "
		 "each counted once: mmap_retry + mmap_abort + mmap_unknown of the fault split "
		 "(kernel-mode faults not included; fault_fallback_locks_total counts those and "
		 "every retry too).",
	 .kind = MM_FIELD_COUNT,
	 .offset = offsetof(struct mm_proc_counts, faults_mmap_fallback),
	 .collector = COLLECTOR,
	 .outcome = true,
	 /* Under bursts the estimated outcomes' sum is fault_fallback_locks_total less
	  * page_faults_kernel_mode_total: this family would repeat it. */
	 .cycle = MM_CYCLE_BLIND},
/* Under bursts, what needs every fault seen (split.c zeroes it: no exact total to scale). */
#undef CYCLE
#define CYCLE MM_CYCLE_BLIND
	F(faults_mmap_lock_retries, "page_fault_mmap_lock_retries_total",
	  "Extra mmap_lock acquisitions inside one fault (retries under mmap_lock)."),
	NS(faults_mmap_lock_wait_ns, "page_fault_mmap_lock_wait_seconds_total",
	   "mmap_lock wait of page faults that fell back to mmap_lock."),
	F(faults_pages_reread, "page_fault_pages_reread_total",
	  "Pages added to the page cache twice within one fault (I/O repeated by a retry)."),
	SRC(fault),
	SRC(fault_other),
	SRC(fault_kernel),
	SRC(mmap),
	SRC(munmap),
	SRC(mremap),
	SRC(mprotect),
	SRC(madvise),
	SRC(brk),
	SRC(mlock),
	SRC(mincore),
	SRC(exit),
	SRC(fork),
	SRC(exec),
	SRC(remote),
	SRC(other),
	SRC(unknown),
/* The bursts' sample and error: constant 0 with the split continuous. */
#undef CYCLE
#define CYCLE MM_CYCLE_SAMPLE
	F(split_estimated, "page_fault_split_estimated_windows_total",
	  "Process windows whose page_faults_total outcome counts are estimates: the shares "
	  "classified in bursts (split_duty) applied to the exact fault and fallback counts."),
	NS(split_observed_ns, "page_fault_split_observed_seconds_total",
	   "Time of the process windows during which faults were classified (bursts)."),
	L(split_faults_seen, "page_fault_split_classified_total", "kind=\"faults\"", SPLIT_HELP),
	L(split_fallbacks_seen, "page_fault_split_classified_total", "kind=\"fallbacks\"",
	  SPLIT_HELP),
	F(split_err, "page_fault_split_error_bound_total",
	  "95% error bound, in faults, on each estimated outcome count of a window (the largest "
	  "of the five), summed over windows: a bound on the summed estimates."),
	F(split_err_fallbacks, "page_fault_split_fallback_error_bound_total",
	  "95% error bound, in faults, on each estimated fallback outcome count of a window "
	  "(mmap_retry, mmap_abort, mmap_unknown: the largest of the three), summed over windows."),
#undef COLLECTOR
#define COLLECTOR "totals"
#undef CYCLE
#define CYCLE MM_CYCLE_EXACT
	L(minflt, "page_faults_accounted_total", "type=\"minor\"", KFLT_HELP),
	L(majflt, "page_faults_accounted_total", "type=\"major\"", KFLT_HELP),
#undef COLLECTOR
#define COLLECTOR "fallbacks"
	F(fallback_locks, "fault_fallback_locks_total",
	  "mmap_lock read acquisitions in lock_mm_and_find_vma, the fault fallback's lock "
	  "(kernel-mode faults included: copy_to_user in a system call; a fault retried under "
	  "mmap_lock counts again), from the tracepoint's IP. page_fault_fallbacks_total counts "
	  "user-mode faults once each."),
	F(fallback_lock_waits, "fault_fallback_lock_waits_total",
	  "Fault fallbacks that found mmap_lock taken (an attempt failed before the acquisition)."),
	F(kernel_mode_faults, "page_faults_kernel_mode_total",
	  "Page faults taken in kernel mode on user memory (copy_to_user into a fresh page in a "
	  "system call; exceptions:page_fault_kernel): x86 takes mmap_lock for them without a "
	  "VMA-lock attempt, so fault_fallback_locks_total counts them, but they are not "
	  "fallbacks of user faults."),
#undef COLLECTOR
#define COLLECTOR "contention"
	F(mmap_lock_behind_waits, "mmap_lock_holder_waits_total",
	  "Waits for an mmap_lock (lock:contention_begin to _end) whose holder was looked for: "
	  "mmlockd_mmap_lock_wait_behind_seconds_total says behind what."),
	BEHIND(fault),
	BEHIND(fault_other),
	BEHIND(fault_kernel),
	BEHIND(mmap),
	BEHIND(munmap),
	BEHIND(mremap),
	BEHIND(mprotect),
	BEHIND(madvise),
	BEHIND(brk),
	BEHIND(mlock),
	BEHIND(mincore),
	BEHIND(exit),
	BEHIND(fork),
	BEHIND(exec),
	BEHIND(remote),
	BEHIND(other),
	BEHIND(unknown),
#undef COLLECTOR
#undef CYCLE
};

const size_t mm_proc_nfields = sizeof(mm_proc_fields) / sizeof(mm_proc_fields[0]);
_Static_assert(sizeof(mm_proc_fields) / sizeof(mm_proc_fields[0]) <= MM_PROC_FIELDS_MAX,
	       "raise MM_PROC_FIELDS_MAX");

bool mm_field_is_outcome(const struct mm_field *f)
{
	return f->outcome;
}

uint64_t mm_counts_activity(const struct mm_proc_counts *s)
{
	uint64_t faults = s->minflt + s->majflt;
	if (!faults)
		faults = s->faults;
	return faults + s->fallback_locks + s->mmap_lock_read + s->mmap_lock_write +
	       s->mmap_lock_contended + s->mmap_lock_behind_waits;
}

uint64_t mm_counts_not_sampled(const struct mm_proc_counts *s)
{
	uint64_t covered = s->faults_vma + s->faults_vma_retry + s->faults_mmap_retry +
			   s->faults_mmap_abort + s->faults_mmap_unknown + s->kernel_mode_faults;
	uint64_t all = s->minflt + s->majflt;
	return all > covered ? all - covered : 0;
}

void mm_counts_add(struct mm_proc_counts *dst, const struct mm_proc_counts *src)
{
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		uint64_t *d = (uint64_t *)((char *)dst + mm_proc_fields[i].offset);
		*d += mm_field_get(src, &mm_proc_fields[i]);
	}
}

/* Adds the buckets of @src to @dst. */
static void hist_merge(struct mm_hist *dst, const struct mm_hist *src)
{
	for (unsigned b = 0; b < MM_HIST_BUCKETS; b++)
		dst->bucket[b] += src->bucket[b];
}

void mm_hists_add(struct mm_proc_hists *dst, const struct mm_proc_hists *src)
{
	for (unsigned h = 0; h < MM_PROC_NHISTS; h++)
		hist_merge((struct mm_hist *)dst + h, mm_hists_at(src, h));
}

void mm_stats_add(struct mm_proc_stats *dst, const struct mm_proc_stats *src)
{
	mm_counts_add(mm_stats_counts(dst), mm_stats_counts_c(src));
	mm_hists_add(mm_stats_hists(dst), mm_stats_hists_c(src));
}

bool mm_counts_is_zero(const struct mm_proc_counts *s)
{
	for (size_t i = 0; i < mm_proc_nfields; i++)
		if (mm_field_get(s, &mm_proc_fields[i]))
			return false;
	return true;
}

bool mm_hist_is_zero(const struct mm_hist *h)
{
	for (unsigned i = 0; i < MM_HIST_BUCKETS; i++)
		if (h->bucket[i])
			return false;
	return true;
}

bool mm_hists_is_zero(const struct mm_proc_hists *s)
{
	for (unsigned h = 0; h < MM_PROC_NHISTS; h++)
		if (!mm_hist_is_zero(mm_hists_at(s, h)))
			return false;
	return true;
}

int mm_stats_is_zero(const struct mm_proc_stats *s)
{
	return mm_counts_is_zero(mm_stats_counts_c(s)) && mm_hists_is_zero(mm_stats_hists_c(s));
}

/* The bits of the non-empty histograms of @h (NULL: none). */
static uint16_t present(const struct mm_proc_hists *h)
{
	uint16_t bits = 0;
	for (unsigned i = 0; h && i < MM_PROC_NHISTS; i++)
		if (!mm_hist_is_zero(mm_hists_at(h, i)))
			bits |= (uint16_t)(1u << i);
	return bits;
}

/* Where histogram @i is in @s's array (it must be present). */
static unsigned set_index(const struct mm_hist_set *s, unsigned i)
{
	return (unsigned)__builtin_popcount(s->present & ((1u << i) - 1));
}

const struct mm_hist *mm_hist_set_get(const struct mm_hist_set *s, unsigned i)
{
	static const struct mm_hist none;
	return s && (s->present & (1u << i)) ? &s->h[set_index(s, i)] : &none;
}

const struct mm_proc_hists *mm_hist_set_expand(const struct mm_hist_set *s,
					       struct mm_proc_hists *buf)
{
	struct mm_hist *h = (struct mm_hist *)buf;
	for (unsigned i = 0; i < MM_PROC_NHISTS; i++)
		h[i] = *mm_hist_set_get(s, i);
	return buf;
}

void mm_hist_set_add_to(struct mm_proc_hists *dst, const struct mm_hist_set *s)
{
	struct mm_hist *h = (struct mm_hist *)dst;
	for (unsigned i = 0, k = 0; s && i < MM_PROC_NHISTS; i++) {
		if (s->present & (1u << i))
			hist_merge(&h[i], &s->h[k++]);
	}
}

static size_t set_size(uint16_t present)
{
	return sizeof(struct mm_hist_set) +
	       (size_t)__builtin_popcount(present) * sizeof(struct mm_hist);
}

int mm_hist_set_dup(struct mm_hist_set **dst, const struct mm_hist_set *s)
{
	*dst = NULL;
	if (!s)
		return 0;
	if (!(*dst = malloc(set_size(s->present))))
		return -ENOMEM;
	memcpy(*dst, s, set_size(s->present));
	return 0;
}

int mm_hist_set_add(struct mm_hist_set **dst, const struct mm_proc_hists *src)
{
	uint16_t bits = present(src);
	struct mm_hist_set *s = *dst;
	uint16_t have = s ? s->present : 0;
	if (bits & ~have) { /* a histogram it lacks: a set with room for it */
		struct mm_hist_set *n = malloc(set_size(have | bits));
		if (!n)
			return -ENOMEM;
		n->present = have | bits;
		for (unsigned i = 0, k = 0; i < MM_PROC_NHISTS; i++)
			if (n->present & (1u << i))
				n->h[k++] = *mm_hist_set_get(s, i);
		free(s);
		*dst = s = n;
	}
	for (unsigned i = 0; i < MM_PROC_NHISTS; i++) {
		if (!(bits & (1u << i)))
			continue;
		hist_merge(&s->h[set_index(s, i)], mm_hists_at(src, i));
	}
	return 0;
}

void mm_hist_add(struct mm_hist *h, uint64_t ns)
{
	unsigned i = ns < 2 ? 0 : 63u - (unsigned)__builtin_clzll(ns);
	if (i >= MM_HIST_BUCKETS)
		i = MM_HIST_BUCKETS - 1;
	h->bucket[i]++;
}

uint64_t mm_hist_upper_ns(unsigned i)
{
	if (i >= MM_HIST_BUCKETS - 1)
		return UINT64_MAX;
	return 1ull << (i + 1);
}

uint64_t mm_hist_quantile_ns(const struct mm_hist *h, double q)
{
	uint64_t total = 0, seen = 0;
	for (unsigned i = 0; i < MM_HIST_BUCKETS; i++)
		total += h->bucket[i];
	if (!total)
		return 0;
	double want = q * (double)total;
	for (unsigned i = 0; i < MM_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if ((double)seen >= want && seen)
			return mm_hist_upper_ns(i);
	}
	return mm_hist_upper_ns(MM_HIST_BUCKETS - 1);
}
