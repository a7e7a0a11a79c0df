/*
 * Time ordering of records from several ring buffers. Each tracepoint has its own ring per CPU,
 * and one thread's events (start_locking on CPU 0, acquire_returned on CPU 1 after a migration)
 * land in different rings, so collectors would see them out of order if rings were handled one at
 * a time. Records are copied in as they are drained and handed out sorted by timestamp, but only
 * up to a horizon that the caller knows no ring can still go below (the time the previous drain
 * round started); the rest waits for the next round. Pure code.
 */
#ifndef MM_ORDER_H
#define MM_ORDER_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct mm_order;

struct mm_order *mm_order_new(void);
void mm_order_free(struct mm_order *o); /* accepts NULL */

/* Copies @hdr (hdr->size bytes) in, tagged with @stream (the caller's index of the ring's event)
 * and @time_ns. Returns 0 or -ENOMEM. */
int mm_order_push(struct mm_order *o, unsigned stream, uint64_t time_ns,
		  const struct perf_event_header *hdr);

/* Calls @fn for every queued record with time < @horizon_ns, oldest first (records with equal
 * times keep their push order), then forgets them. Use UINT64_MAX to flush everything. Returns
 * the number of records delivered. The record pointer is valid only during the call. */
size_t mm_order_flush(struct mm_order *o, uint64_t horizon_ns,
		      void (*fn)(void *ctx, unsigned stream, uint64_t time_ns,
				 const struct perf_event_header *hdr),
		      void *ctx);

/* Records queued now, and bytes they take. */
size_t mm_order_count(const struct mm_order *o);
size_t mm_order_bytes(const struct mm_order *o);

#endif
