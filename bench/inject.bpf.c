// SPDX-License-Identifier: GPL-2.0-only
/*
 * inject.bpf.c: a known cost for the paired benchmark's control (bench/inject.c loads it,
 * bench/paired.py runs it as the configuration inject). On every user page fault of the
 * process @target_tgid it spins, reading bpf_ktime_get_ns(), until spin_ns have passed since
 * the program began: a set number of nanoseconds per fault of the workload, whose effect on its
 * throughput can be predicted from its faults per second and its CPU time and then compared
 * with what the paired measurement finds. Faults of other processes only pay the pid check.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0; /* 0: every process */
const volatile __u64 spin_ns = 0;

/* The cap keeps the loop bounded for the verifier: a clock read takes tens of ns, so 4096
 * reads outlast any spin_ns the benchmark asks for (microseconds at most). */
#define SPIN_READS_MAX 4096

SEC("tp_btf/page_fault_user")
int inject_page_fault_user(void *ctx)
{
	if (target_tgid && (__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__u64 end = bpf_ktime_get_ns() + spin_ns;
	for (int i = 0; i < SPIN_READS_MAX; i++) {
		if (bpf_ktime_get_ns() >= end)
			break;
	}
	return 0;
}
