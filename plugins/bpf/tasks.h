/*
 * What the task iterator (tasks.bpf.c) writes for each task of the machine, one fixed-size
 * record per task in tid order: shared by the BPF program and its reader (daemon/taskiter.c).
 */
#ifndef MM_BPF_TASKS_H
#define MM_BPF_TASKS_H

#define MM_TASK_ON_CPU 0x1 /* running now: its runtime is not up to date */
#define MM_TASK_LEADER                                                                             \
	0x2 /* the thread-group leader: sig_runtime_ns and start are its process's                 \
	     */
#define MM_TASK_KTHREAD 0x4

struct mm_bpf_task {
	__u32 tgid, tid;
	__u64 runtime_ns;	 /* the thread's se.sum_exec_runtime */
	__u64 sig_runtime_ns;	 /* leader: signal->sum_sched_runtime (the dead threads'), else 0 */
	__u64 start_boottime_ns; /* leader: the process's start, ns since boot, else 0 */
	__u32 flags;		 /* MM_TASK_* */
	__u32 pad;
};

#endif
