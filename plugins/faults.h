/* The fault classifier's callchain attribution, exposed for unit tests. */
#ifndef MM_FAULTS_H
#define MM_FAULTS_H

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

/* Attributes an mmap_lock event from its kernel callchain, given as symbol names innermost first
 * (NULL for unresolved frames). Compiler suffixes such as ".isra.0" are ignored. */
enum mm_lock_source mm_lock_source_of(const char *const *frames, unsigned n);

const char *mm_lock_source_name(enum mm_lock_source src);

#endif
