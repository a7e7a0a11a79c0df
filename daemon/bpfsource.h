/*
 * The in-kernel (BPF) source: counts what the collectors with an in-kernel part (plugin.h struct
 * mm_plugin_bpf) count, with BPF programs on the same tracepoints (plugins/bpf/counters.bpf.c)
 * instead of a perf sample per event, and delivers the per-process counts into the host's open
 * window at every tick; for a collector fed by waits (one with a waits hook) it pairs and sums the
 * lock waits in the kernel and feeds each row's growth to the collector (mm_host_waits). Outside
 * the pure library: it links libbpf.
 *
 * Shape, so it plugs into whatever loop drives the host:
 *   mm_bpfsrc_open()     before mm_host_wanted(): decides per collector (setting `source`,
 *                        BTF, privileges, the verifier), tells the host which collectors it
 *                        fills (mm_host_set_source) so no perf stream is opened for them
 *   mm_bpfsrc_collect()  the host's counter source (mm_host_set_counter_source): at every
 *                        tick and at the closing tick of each window
 *   mm_bpfsrc_free()     at shutdown, after the last collect
 * A build without BPF (meson -Dbpf=disabled, or no clang/bpftool/BTF at build time) has the
 * same calls; open then says why and every collector stays on the perf rings.
 */
#ifndef MM_BPFSOURCE_H
#define MM_BPFSOURCE_H

#include <stdbool.h>

#include "config.h"
#include "host.h"
#include "duty.h"

struct mm_bpfsrc;
struct mm_symbols;

/* Loads and attaches the BPF programs for the enabled collectors it can count (cfg->source
 * "auto" or "bpf"; "perf" loads nothing). @syms locates the fallback site (lock_mm_and_find_vma).
 * Returns 0 with *ret the source, or with *ret NULL when nothing runs on BPF (the reason is
 * logged once and shown in each collector's source note; with source "auto" that is not an
 * error). With source "bpf", failing to load is fatal: returns -errno after logging why.
 * cfg->btf names the kernel BTF file (else /sys/kernel/btf/vmlinux); cfg->bpf_skip,
 * bpf_keep_attached and bpf_refuse are the benchmarks' and tests' knobs (config.h). */
int mm_bpfsrc_open(struct mm_host *h, const struct mm_config *cfg, const struct mm_symbols *syms,
		   struct mm_bpfsrc **ret);

/* Adds what the programs counted since the last call to the open window (exited processes are
 * settled and their map entries deleted). @closing: the window closes after this call, so
 * processes that vanished without an exit notification are settled too. Accepts NULL. The
 * host's counter-source hook (mm_host_set_counter_source) with @ctx the source. */
void mm_bpfsrc_collect(void *ctx, struct mm_host *h, bool closing);

/* The duty cycle's phase (duty.h), from the loop that switches the perf streams: with a cycled
 * collector on this source, the programs only it needs (its opener programs unless a continuous
 * collector needs them, its duty programs, the completion events) are attached for ON (the
 * opener) and ON + ENDING (the rest) only, and the programs told which period runs. Accepts
 * NULL; nothing without a cycled collector. */
void mm_bpfsrc_set_phase(struct mm_bpfsrc *b, enum mm_phase phase);

void mm_bpfsrc_free(struct mm_bpfsrc *b); /* accepts NULL; detaches the programs */

#endif
