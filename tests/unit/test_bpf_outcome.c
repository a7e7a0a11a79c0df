/*
 * The BPF source's fault outcome rule (plugins/bpf/outcome.h, run inside the kernel by
 * plugins/bpf/counters.bpf.c) on the evidence that each kernel path leaves in a fault window,
 * path by path as the 6.12 sources take them, and against the perf path's rule on the evidence
 * both can see (plugins/faults.c close_window: fallbacks, an attempt, two attempts on one page, a
 * writer at the start).
 */
#include <linux/types.h>

#include "check.h"

#include "outcome.h"

static struct mm_bpf_window win(void)
{
	struct mm_bpf_window w = {.open = 1};
	return w;
}

static void test_fault_completed_under_the_vma_lock_is_vma(void)
{
	struct mm_bpf_window w = win();
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_VMA);
	/* an anonymous first touch whose anon_vma trylock succeeded; a sleep in reclaim */
	w.attempt = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_VMA);
}

static void test_swap_retry_on_vanilla_is_mmap_retry(void)
{
	/* do_swap_page: __folio_lock_or_retry drops the VMA lock, sleeps, VM_FAULT_RETRY; the
	 * fault falls back to lock_mm_and_find_vma and completes there. No tracepoint shows the
	 * first attempt: the perf path calls this mmap_unknown. */
	struct mm_bpf_window w = win();
	w.attempt = 1;
	w.retry_sleep = 1;
	w.fallbacks = 1;
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_RETRY);
}

static void test_swap_retry_completed_under_the_vma_lock_is_vma_retry(void)
{
	/* patched 6.12 (seeds patch 3/3): VM_FAULT_MAY_USE_VMA_LOCK, one more attempt under the
	 * VMA lock with FAULT_FLAG_TRIED, completed as a major fault without any fallback */
	struct mm_bpf_window w = win();
	w.attempt = 1;
	w.retry_sleep = 1;
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_VMA_RETRY);
}

static void test_retry_sleep_given_up_on_a_signal_stays_vma(void)
{
	/* fault_signal_pending() after the retry: no fallback, no completion */
	struct mm_bpf_window w = win();
	w.attempt = 1;
	w.retry_sleep = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_VMA);
}

static void test_file_retry_by_fault_around_is_vma_retry(void)
{
	/* patched 6.12 (patch 2/3): filemap_fault, retry, filemap_map_pages over the page */
	struct mm_bpf_window w = win();
	w.attempt = 1;
	w.have_page = 1;
	w.same_page = 2;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_VMA_RETRY);
	w.fallbacks = 1; /* vanilla: the second filemap_fault under mmap_lock */
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_RETRY);
}

static void test_vdso_first_touch_is_mmap_retry(void)
{
	/* vmf_can_call_fault(): no ->map_pages, VM_FAULT_RETRY under the VMA lock, no event */
	struct mm_bpf_window w = win();
	w.special = 1;
	w.fallbacks = 1;
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_RETRY);
	w.writer = 1; /* a writer elsewhere in the mm does not mark [vdso] */
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_RETRY);
}

static void test_fallback_while_a_writer_held_mmap_lock_is_abort(void)
{
	struct mm_bpf_window w = win();
	w.writer = 1;
	w.fallbacks = 1;
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_ABORT);
	/* a writer and an attempt: the VMA lock was taken, the retry decides */
	w.attempt = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_RETRY);
}

static void test_stack_expansion_is_abort(void)
{
	/* no VMA at the address: lock_vma_under_rcu fails, lock_mm_and_find_vma upgrades */
	struct mm_bpf_window w = win();
	w.no_vma = 1;
	w.fallbacks = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_ABORT);
}

static void test_fallback_without_evidence_is_unknown(void)
{
	struct mm_bpf_window w = win();
	w.fallbacks = 1;
	w.completed = 1;
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_UNKNOWN);
	w.fallbacks = 3; /* retries under mmap_lock do not make it known */
	CHECK_U64(mm_bpf_outcome_of(&w), MM_BPF_MMAP_UNKNOWN);
}

/* plugins/faults.c's rule, on the evidence it has. */
static enum mm_bpf_outcome perf_rule(unsigned fallbacks, unsigned same_page, int attempt,
				     int writer)
{
	if (!fallbacks)
		return same_page >= 2 ? MM_BPF_VMA_RETRY : MM_BPF_VMA;
	if (attempt)
		return MM_BPF_MMAP_RETRY;
	return writer ? MM_BPF_MMAP_ABORT : MM_BPF_MMAP_UNKNOWN;
}

static void test_same_outcome_as_the_perf_rule_on_the_evidence_both_see(void)
{
	for (unsigned fb = 0; fb < 3; fb++)
		for (unsigned sp = 0; sp < 4; sp++)
			for (int attempt = 0; attempt < 2; attempt++)
				for (int writer = 0; writer < 2; writer++)
					for (int done = 0; done < 2; done++) {
						struct mm_bpf_window w = win();
						w.fallbacks = fb;
						w.same_page = (__u8)sp;
						w.attempt = (__u8)(attempt || sp);
						w.writer = (__u8)writer;
						w.completed = (__u8)done;
						CHECK_U64(mm_bpf_outcome_of(&w),
							  perf_rule(fb, sp, attempt || sp, writer));
					}
}

int main(void)
{
	RUN(test_fault_completed_under_the_vma_lock_is_vma);
	RUN(test_swap_retry_on_vanilla_is_mmap_retry);
	RUN(test_swap_retry_completed_under_the_vma_lock_is_vma_retry);
	RUN(test_retry_sleep_given_up_on_a_signal_stays_vma);
	RUN(test_file_retry_by_fault_around_is_vma_retry);
	RUN(test_vdso_first_touch_is_mmap_retry);
	RUN(test_fallback_while_a_writer_held_mmap_lock_is_abort);
	RUN(test_stack_expansion_is_abort);
	RUN(test_fallback_without_evidence_is_unknown);
	RUN(test_same_outcome_as_the_perf_rule_on_the_evidence_both_see);
	return check_summary();
}
