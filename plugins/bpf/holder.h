/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * holder.h: who took an mmap_lock (the source of an acquisition) and who held one while another
 * task waited for it, once for the BPF program (counters.bpf.c) and the collectors
 * (plugins/faults.c classifies acquisitions, plugins/contention.c attributes mmap_lock waits).
 * Both sides include it after their own __u32 (vmlinux.h, <linux/types.h>), so it includes
 * nothing itself.
 *
 * The holder of an mmap_lock wait is read where the wait begins (lock:contention_begin):
 *   write  a task held the lock for write: on the BPF source the rwsem's owner field (the
 *          writer's task_struct, 6.12 kernel/locking/rwsem.c; it held the lock when the field
 *          was read, so its memory outlives the program's RCU section) and its mm, flags and
 *          system call; on the perf path the last successful write acquisition of that mm not
 *          yet released or downgraded
 *   read   readers held it and one of them is named: on the BPF source the owner field's reader
 *          hint (the last reader to take it, RWSEM_READER_OWNED, kept while the count still shows
 *          readers and the task still lives with that pid); on the perf path the last reader whose
 *          hold has not ended. Other readers may hold it too: a reader is a hint, a writer is not
 *   none   nothing could be named: the owner field was empty (the holder let go as the wait
 *          began), its task no longer lives, a reader hint that no reader backs, or (perf) no
 *          acquisition of the hold was seen (it began before mmlockd did, or a record was lost)
 * What the holder was doing is an enum mm_lock_source: on the perf path the classification of
 * the holder's acquisition callchain (plugins/faults.c); on the BPF source the holder's system
 * call (orig_ax of the pt_regs at the top of its kernel stack, x86_64 numbers), exit when it is
 * exiting, remote when the task's own mm is not the lock's (/proc/PID/smaps, ptrace, khugepaged),
 * fault when the top pt_regs are not a system call's (orig_ax -1: the exception entry of a user
 * page fault, the only one that takes mmap_lock).
 */
#ifndef MM_BPF_HOLDER_H
#define MM_BPF_HOLDER_H

/* Who took an mmap_lock: the fault path's fallback to mmap_lock, another acquisition inside a fault
 * handled under the VMA lock, or a named kernel entry point. */
enum mm_lock_source {
	MM_SRC_FAULT,	    /* fallback: lock_mm_and_find_vma() (or an arch fault handler itself) */
	MM_SRC_FAULT_OTHER, /* inside handle_mm_fault() under the VMA lock, e.g. anon_vma prepare */
	MM_SRC_FAULT_KERNEL, /* a fault taken in kernel mode (copy_from_user in a system call):
			      * x86 sends it straight to mmap_lock; not a user fault's fallback */
	MM_SRC_MMAP,
	MM_SRC_MUNMAP,
	MM_SRC_MREMAP,
	MM_SRC_MPROTECT,
	MM_SRC_MADVISE,
	MM_SRC_BRK,
	MM_SRC_MLOCK,
	MM_SRC_MINCORE,
	MM_SRC_EXIT,
	MM_SRC_FORK,
	MM_SRC_EXEC,
	MM_SRC_REMOTE, /* another task's memory: /proc/PID/..., ptrace, process_vm_*, GUP */
	MM_SRC_OTHER,
	MM_SRC_UNKNOWN, /* no callchain or no symbols */
	MM_SRC_COUNT
};

/* How the holder held the lock (struct mm_bpf_lock_key.holder_mode, struct mm_lock_wait). */
enum mm_holder_mode {
	MM_HOLDER_NONE, /* not an mmap_lock wait: no holder is looked for */
	MM_HOLDER_WRITE,
	MM_HOLDER_READ,
	MM_HOLDER_UNKNOWN, /* an mmap_lock wait whose holder could not be named */
};

#endif
