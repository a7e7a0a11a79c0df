/*
 * The fault-completion software events the BPF source samples fault latencies with: minor-faults
 * and major-faults on one CPU, one program run per MM_BPF_COMPLETION_PERIOD faults
 * (mm_account_fault() fires them when a fault completes). User space only: daemon/bpfsource.c
 * opens them for its on_fault_done program, bench/bpf_floor.c (--all) for an empty one, so the
 * benchmark's floor opens what the daemon opens.
 */
#ifndef MM_BPF_COMPLETION_H
#define MM_BPF_COMPLETION_H

#include <linux/perf_event.h>
#include <linux/types.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counters.h" /* MM_BPF_COMPLETION_PERIOD */

/* perf_event_open() of the @major (else minor) faults event on @cpu, @disabled or counting;
 * the fd, or -1 with errno set. */
static inline int mm_bpf_open_completion(int cpu, bool major, bool disabled)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = major ? PERF_COUNT_SW_PAGE_FAULTS_MAJ : PERF_COUNT_SW_PAGE_FAULTS_MIN,
		.sample_period = MM_BPF_COMPLETION_PERIOD,
		.disabled = disabled,
	};
	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

#endif
