// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.bpf.c: empty BPF programs for the benchmark's calibration (bench/bpf_floor.c loads them,
 * bench/run.py --bpf-stats runs them as the configuration bpf_floor). With
 * kernel.bpf_stats_enabled the kernel times every program run between two sched_clock() reads,
 * so a program that does nothing still shows a run time: on the 2-core development VM ~76 ns a
 * run, as much as many of mmlockd's programs do. Measured on the same tracepoints as mmlockd's
 * programs (one of each kind: a tp_btf program, as most of counters.bpf.c, and a classic
 * tracepoint program, as its on_start), it is subtracted from theirs in the report.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/mmap_lock_acquire_returned")
int floor_tp_btf(void *ctx)
{
	return 0;
}

/* 1: let perf deliver the record to other tracers (perf_trace_run_bpf_submit()). */
SEC("tracepoint/mmap_lock/mmap_lock_start_locking")
int floor_tracepoint(void *ctx)
{
	return 1;
}
