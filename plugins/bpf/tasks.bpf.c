// SPDX-License-Identifier: GPL-2.0-only
/*
 * The task iterator: one record (tasks.h) per task of the machine, read in one pass by
 * daemon/taskiter.c. What a process's threads have run (their runtimes, and the dead threads'
 * summed in signal->sum_sched_runtime) grows whenever one of them runs, and only a running thread
 * can fault, so a process whose sum did not move and none of whose threads is on a CPU has no new
 * faults: the totals collector then skips its /proc/PID/stat (plugins/totals.c).
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tasks.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_KTHREAD 0x00200000

SEC("iter/task")
int dump_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	if (!t)
		return 0;
	struct mm_bpf_task r = {
		.tgid = t->tgid,
		.tid = t->pid,
		.runtime_ns = t->se.sum_exec_runtime,
		.flags = (t->on_cpu ? MM_TASK_ON_CPU : 0) |
			 (t->flags & PF_KTHREAD ? MM_TASK_KTHREAD : 0),
	};
	if (t->pid == t->tgid) {
		r.flags |= MM_TASK_LEADER;
		r.sig_runtime_ns = t->signal->sum_sched_runtime;
		r.start_boottime_ns = t->start_boottime;
	}
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
