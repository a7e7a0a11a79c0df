/*
 * The task iterator (plugins/bpf/tasks.bpf.c): every task of the machine in one read, with what
 * each has run. The host offers it to collectors (mm_host_read_tasks, hostcalls.h) where BPF
 * loads; a collector that reads /proc/PID/stat reads it only for the
 * processes that ran since its last scan. Outside the pure library: it links libbpf. Without BPF (a
 * build without it, source = perf, no BTF or no permission) mm_taskiter_open() gives NULL and
 * collectors read /proc.
 */
#ifndef MM_TASKITER_H
#define MM_TASKITER_H

#include "config.h"
#include "hostcalls.h"

struct mm_taskiter;

/* Loads the iterator (cfg->btf as the kernel BTF, else /sys/kernel/btf/vmlinux); NULL when it
 * cannot (said once at debug level: the collectors then read /proc as without it), and with
 * cfg->source "perf" (no BPF at all). */
struct mm_taskiter *mm_taskiter_open(const struct mm_config *cfg);

/* A host task reader (mm_host_set_task_reader): calls @fn for every task. 0 or -errno. */
int mm_taskiter_read(void *it, mm_task_fn fn, void *ctx);

void mm_taskiter_free(struct mm_taskiter *it); /* accepts NULL */

#endif
