// SPDX-License-Identifier: GPL-2.0-only
/*
 * floor.bpf.c: empty BPF programs for the benchmark's calibration (bench/bpf_floor.c loads them,
 * bench/run.py --bpf-stats runs them as the configuration bpf_floor). With
 * kernel.bpf_stats_enabled the kernel times every program run between two sched_clock() reads,
 * so a program that does nothing still shows a run time: on the 2-core development VM ~76 ns a
 * run, as much as many of mmlockd's programs do. Measured on the same tracepoints as mmlockd's
 * programs (one of each kind: a tp_btf program, as most of counters.bpf.c, and a classic
 * tracepoint program, as its on_start), it is subtracted from theirs in the report.
 *
 * With `bench_bpf_floor --all` (the configuration bpf_floor_all) the all_* programs load too: an
 * empty program on every tracepoint `--collectors all --source bpf` attaches, and on the
 * minor/major-faults software events at its sample period: the throughput floor of any design
 * that counts on those hooks, whatever its programs do.
 *
 * With `--all --storage` (bpf_floor_all_storage) each of those programs finds the current
 * thread's task storage (made at its first user fault, as mmlockd's on_fault makes its) and
 * writes one counter there: the least any design pays that keeps per-thread state on those hooks,
 * as counters.bpf.c does (its thread(): the fault window, held locks, waits), before doing
 * anything with it. (Without it each program still loads the flag: two instructions, a hot line.)
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

const volatile bool with_storage = false; /* --storage: set before load */

struct floor_thread {
	__u64 runs;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct floor_thread);
} floor_threads SEC(".maps");

/* The thread's storage (made if @create) and one write to it; nothing without --storage. */
static __always_inline int touch(bool create)
{
	if (!with_storage)
		return 0;
	struct floor_thread *t = bpf_task_storage_get(&floor_threads, bpf_get_current_task_btf(), 0,
						      create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (t)
		t->runs++;
	return 0;
}

SEC("tp_btf/mmap_lock_acquire_returned")
int floor_tp_btf(void *ctx)
{
	return touch(false);
}

/* 1: let perf deliver the record to other tracers (perf_trace_run_bpf_submit()). */
SEC("tracepoint/mmap_lock/mmap_lock_start_locking")
int floor_tracepoint(void *ctx)
{
	touch(false);
	return 1;
}

/* bench_bpf_floor --all: the rest of counters.bpf.c's hooks, each empty. */
SEC("tp_btf/page_fault_user")
int all_page_fault_user(void *ctx)
{
	return touch(true);
}

SEC("tp_btf/page_fault_kernel")
int all_page_fault_kernel(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/mmap_lock_released")
int all_mmap_lock_released(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/contention_begin")
int all_contention_begin(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/contention_end")
int all_contention_end(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/sched_switch")
int all_sched_switch(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/mm_filemap_fault")
int all_filemap_fault(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/mm_filemap_map_pages")
int all_filemap_map_pages(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int all_filemap_add(void *ctx)
{
	return touch(false);
}

SEC("tp_btf/sched_process_exit")
int all_process_exit(void *ctx)
{
	return touch(false);
}

/* Attached by bench_bpf_floor to the fault-completion software events (not by the skeleton). */
SEC("perf_event")
int all_fault_done(void *ctx)
{
	return touch(false);
}
