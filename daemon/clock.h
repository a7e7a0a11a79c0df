/*
 * The window clock: when a collection window closes. One rule for the live daemon and for
 * replay, so both cut the same record stream into the same windows. Windows end on multiples of
 * the interval in wall time (10 s windows end at :00, :10, ...); records carry CLOCK_MONOTONIC
 * time stamps, converted with the offset measured at start (wall_ms = mono_ns / 1e6 + offset).
 * A window closes when a record, or a horizon the caller knows no record can still go below,
 * reaches its end.
 *
 * Bounded by the data: a time far past the open window (a machine that slept, a corrupt
 * recording) closes at most two windows, the open one at its end and one spanning the gap up to
 * the boundary before that time, never one empty window per interval. Pure arithmetic, no I/O.
 */
#ifndef MM_CLOCK_H
#define MM_CLOCK_H

#include <stdint.h>

struct mm_clock {
	uint64_t interval_ms;
	int64_t mono_to_wall_ms;
	uint64_t end_ms; /* wall time the open window ends */
};

/* Starts the clock: the open window is the one containing wall time @start_ms. */
void mm_clock_init(struct mm_clock *c, unsigned interval_s, int64_t mono_to_wall_ms,
		   uint64_t start_ms);

/* A new interval from now on: the open window now ends at the first multiple of it after
 * @now_ms. */
void mm_clock_set_interval(struct mm_clock *c, unsigned interval_s, uint64_t now_ms);

/* Wall milliseconds of monotonic time @mono_ns (0 when that would be before the epoch). */
uint64_t mm_clock_wall_ms(const struct mm_clock *c, uint64_t mono_ns);

/* The end (wall ms) of the next window that time @mono_ns closes, advancing the clock past it; 0
 * when the open window still contains @mono_ns. Call until it returns 0; it returns non-zero at
 * most twice for one @mono_ns. */
uint64_t mm_clock_next_close(struct mm_clock *c, uint64_t mono_ns);

#endif
