/*
 * The outcome of one user page fault from the evidence the BPF program gathered in its window
 * (plugins/bpf/counters.bpf.c). Pure: the program and the unit test (tests/unit/test_bpf_outcome.c)
 * include it after their own definition of __u8/__u16/__u32/__u64, so it includes nothing itself.
 *
 * A window opens at exceptions:page_fault_user and closes at the fault's completion (the
 * minor-faults/major-faults software event of mm_account_fault), at the thread's next fault, at a
 * fault it takes in kernel mode, at an mmap_lock acquisition that is not the fault path's, or when
 * the thread exits. What each field means, and why it is evidence, from the 6.12 sources
 * (arch/x86/mm/fault.c do_user_addr_fault, mm/memory.c, mm/filemap.c):
 *
 *   fallbacks    read acquisitions of mmap_lock through lock_mm_and_find_vma() (the fallback site)
 *   attempt      handle_mm_fault() ran under the per-VMA lock before the first fallback:
 *                filemap:mm_filemap_fault, an mmap_lock event inside handle_mm_fault() (the
 *                anon_vma trylock of __vmf_anon_prepare()), or a voluntary sleep of the thread
 *                (lock_vma_under_rcu() and everything before it in the fault never sleep)
 *   retry_sleep  that sleep was inside __folio_lock_or_retry(): on a first attempt (no
 *                FAULT_FLAG_TRIED) it has dropped the VMA lock and returns VM_FAULT_RETRY
 *                whatever the wait gives (swap-in and folio-lock waits of do_swap_page())
 *   same_page    mm_filemap_fault on the first attempted page, plus mm_filemap_map_pages over
 *                it before any fallback (a retry that fault-around completes)
 *   special      the address lies in the vDSO's special mappings ([vvar], [vvar_vclock],
 *                [vdso]): their vm_ops have no ->map_pages, so vmf_can_call_fault() returns
 *                VM_FAULT_RETRY under the VMA lock without any event (one per exec'd process)
 *   writer       mmap_lock was held for write when the fault began, or was taken for write
 *                before the fallback (mm->mm_lock_seq odd at page_fault_user, or moved by the
 *                fallback): lock_vma_under_rcu() fails on a VMA that a writer has marked
 *   no_vma       the fallback took mmap_lock for write (stack expansion): no VMA contained the
 *                address, so lock_vma_under_rcu() had failed
 *   completed    the fault completed: its completion event came (mm_account_fault's software
 *                event in user mode, sampled: 1 in MM_BPF_COMPLETION_PERIOD), or the window
 *                closed on the thread's next fault, a fault in kernel mode or a system call's
 *                mmap_lock, i.e. the thread went on after the fault (a fault interrupted by a
 *                non-fatal signal counts as completed; one whose thread exits does not)
 *   sleeps       voluntary sleeps seen in the window (the stack is taken for the first
 *                MM_BPF_SLEEP_STACKS only; a swap-in under memcg pressure can sleep in reclaim
 *                several times before its folio lock: at 3 the lab missed ~1% of patched swap
 *                retries; sleeps after the fault, in a system call, close the window instead)
 */
#ifndef MM_BPF_OUTCOME_H
#define MM_BPF_OUTCOME_H

#define MM_BPF_SLEEP_STACKS 16

struct mm_bpf_window {
	__u8 open;
	__u8 attempt;
	__u8 retry_sleep;
	__u8 same_page; /* saturates at 255 */
	__u8 special;
	__u8 writer;
	__u8 no_vma;
	__u8 completed;
	__u8 have_page;
	__u8 falling_back; /* a read start at the fallback site came: what follows is no attempt */
	__u8 sleeps;
	__u8 pad;
	__u32 fallbacks;
	__u32 seq; /* mm->mm_lock_seq at page_fault_user */
	__u32 pad2;
	__u64 mapping; /* the first attempted page: its address_space and index */
	__u64 index;
};

/* In the order of the faults_vma .. faults_mmap_unknown counters. */
enum mm_bpf_outcome {
	MM_BPF_VMA,
	MM_BPF_VMA_RETRY,
	MM_BPF_MMAP_RETRY,
	MM_BPF_MMAP_ABORT,
	MM_BPF_MMAP_UNKNOWN,
};

/*
 * No fallback: vma, or vma_retry when the fault was attempted twice under the VMA lock (two
 * attempts on one page, or a retry sleep and then a completion: patched kernels retry filemap and
 * swap faults under the VMA lock, seeds patches 2/3 and 3/3). A retry sleep without completion
 * (the fault gave up on a signal) stays vma, as the perf path counts it.
 * A fallback: mmap_retry after an attempt, a retry sleep or on a special mapping (the kernel
 * retried); else mmap_abort when a writer held mmap_lock or no VMA was there (the VMA lock could
 * not be taken); else mmap_unknown.
 */
static inline enum mm_bpf_outcome mm_bpf_outcome_of(const struct mm_bpf_window *w)
{
	if (!w->fallbacks)
		return w->same_page >= 2 || (w->retry_sleep && w->completed) ? MM_BPF_VMA_RETRY
									     : MM_BPF_VMA;
	if (w->attempt || w->retry_sleep || w->special)
		return MM_BPF_MMAP_RETRY;
	if (w->writer || w->no_vma)
		return MM_BPF_MMAP_ABORT;
	return MM_BPF_MMAP_UNKNOWN;
}

#endif
