/*
 * The live sampler: one perf event per tracepoint per online CPU, system-wide, each with its own
 * ring buffer (so PERF_RECORD_LOST is exact per tracepoint), through libperf. Records are drained
 * into an ordering queue (order.h) tagged with the caller's stream index; this file is the only
 * one that knows libperf.
 */
#ifndef MM_SAMPLER_H
#define MM_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm_sampler;
struct mm_order;

/* @ring_pages: data pages per ring (power of two). Returns 0 and *ret or -errno. Calls
 * libperf_init(). */
int mm_sampler_new(unsigned ring_pages, struct mm_sampler **ret);
void mm_sampler_free(struct mm_sampler *s); /* closes and unmaps everything; accepts NULL */

/* Kernel frames recorded per callchain: enough to get from the tracepoint to the system call or
 * fault entry (plugins walk at most this many). */
#define MM_CALLCHAIN_FRAMES 24

/* Opens tracepoint @tp_id on every online CPU, disabled, with kernel callchains if @callchain and
 * the kernel-side @filter if not NULL (PERF_EVENT_IOC_SET_FILTER), records tagged as @stream, in
 * rings of @ring_pages data pages (a power of two; 0 or more than the sampler's: the sampler's).
 * Returns 0 with the event's sample_type, or -errno with a one-line reason in @err (permission,
 * unsupported, a filter the kernel refuses, out of memory for the rings). */
int mm_sampler_add_tp(struct mm_sampler *s, unsigned stream, int tp_id, bool callchain,
		      const char *filter, unsigned ring_pages, uint64_t *ret_sample_type, char *err,
		      size_t errlen);

/* Opens the task-record stream (COMM, FORK, EXIT of every task). Same conventions. */
int mm_sampler_add_task(struct mm_sampler *s, unsigned stream, uint64_t *ret_sample_type, char *err,
			size_t errlen);

/* Enables (disables) every opened event; enable skips held streams. */
void mm_sampler_enable(struct mm_sampler *s);
void mm_sampler_disable(struct mm_sampler *s);

/* Holds the stream tagged @stream off (@held true) or lets it run, at once while sampling is on
 * (PERF_EVENT_IOC_DISABLE / ENABLE on every CPU): a cycled collector's on-periods (duty.h). A
 * held event stays open, so its tracepoint stays registered: the probe runs and finds no enabled
 * event (a few ns per hit). */
void mm_sampler_hold(struct mm_sampler *s, unsigned stream, bool held);

/* Adds every ring's fd to @epfd (EPOLLIN, data.u64 = @tag). Returns 0 or -errno. */
int mm_sampler_watch(struct mm_sampler *s, int epfd, uint64_t tag);

/* Reads every ring empty into @order, tagging each record with its stream and timestamp. Returns
 * the number of records, or -ENOMEM if the queue could not grow (records left in the rings are read
 * next time). */
long mm_sampler_drain(struct mm_sampler *s, struct mm_order *order);

#endif
