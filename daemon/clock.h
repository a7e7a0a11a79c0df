/*
 * The window clock: when a collection window closes. One rule for the live daemon and for
 * replay, so both cut the same record stream into the same windows. Windows end on multiples of
 * the interval in wall time (10 s windows end at :00, :10, ...); records carry CLOCK_MONOTONIC
 * time stamps, converted with an offset (wall_ms = mono_ns / 1e6 + offset). A window closes when
 * a record, or a horizon the caller knows no record can still go below, reaches its end.
 *
 * The offset follows the wall clock. A daemon started before NTP set the clock would otherwise
 * stamp its whole life with the startup error. The live loop reads the offset again and hands it
 * to mm_clock_observe(); a move beyond MM_CLOCK_STEP_TOLERANCE_MS is a step, taken at the
 * monotonic time it was seen: records before it keep the old offset, records from it on get the
 * new one, so the stream, which lags the loop, crosses the step in order. The window the step
 * cuts closes at the step, stamped on the clock it started on (its end is the step's instant on
 * that clock, so its length is the time it really lasted); the next window starts at the step's
 * instant on the new clock and ends on the new clock's next interval multiple. No window spans
 * the skew, and none is stamped with a mix of two clocks. Slow corrections (NTP slewing) move
 * CLOCK_MONOTONIC and CLOCK_REALTIME alike and never reach the tolerance.
 *
 * Bounded by the data: a time far past the open window (a machine that slept, a corrupt
 * recording) closes at most two windows, the open one at its end and one spanning the gap up to
 * the boundary before that time, never one empty window per interval; a step adds at most the
 * window it cuts. Pure arithmetic, no I/O.
 */
#ifndef MM_CLOCK_H
#define MM_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* A move of the offset smaller than this is jitter between the two clock reads, not a step. */
#define MM_CLOCK_STEP_TOLERANCE_MS 1000

struct mm_clock {
	uint64_t interval_ms;
	int64_t mono_to_wall_ms; /* the offset in force (before a pending step) */
	uint64_t start_ms;	 /* wall time the open window started */
	uint64_t end_ms;	 /* wall time the open window ends */
	/* A step seen by the loop that the stream has not reached yet: from monotonic time
	 * step_at_ns on, the offset is step_to_wall_ms. step_at_ns 0: none pending. */
	uint64_t step_at_ns;
	int64_t step_to_wall_ms;
};

/* Starts the clock: the open window is the one containing wall time @start_ms, and starts
 * there. */
void mm_clock_init(struct mm_clock *c, unsigned interval_s, int64_t mono_to_wall_ms,
		   uint64_t start_ms);

/* A new interval from now on: the open window now ends at the first multiple of it after
 * @now_ms. */
void mm_clock_set_interval(struct mm_clock *c, unsigned interval_s, uint64_t now_ms);

/* The offset measured at monotonic time @now_ns is @mono_to_wall_ms. When it moved by
 * MM_CLOCK_STEP_TOLERANCE_MS or more from the latest offset (a pending step's, if any), the step
 * is pending from @now_ns on (a second step before the stream reached the first one replaces
 * its offset and keeps its time) and the move is returned (new - latest, ms); else returns 0 and
 * nothing changes. @now_ns must not be before the times the clock was already given. */
int64_t mm_clock_observe(struct mm_clock *c, int64_t mono_to_wall_ms, uint64_t now_ns);

/* The latest offset: the pending step's, else the one in force. */
int64_t mm_clock_latest_offset(const struct mm_clock *c);

/* Wall milliseconds of monotonic time @mono_ns, with the offset in force at that time (0 when
 * that would be before the epoch). */
uint64_t mm_clock_wall_ms(const struct mm_clock *c, uint64_t mono_ns);

/* The end (wall ms) of the next window that time @mono_ns closes, advancing the clock past it,
 * and in *@ret_start_ms (may be NULL) that window's start; 0 when the open window still
 * contains @mono_ns. Call until it returns 0; it returns non-zero at most twice for one
 * @mono_ns. A pending step that @mono_ns reached bounds it: the windows that ended before the
 * step close, then it returns 0 until mm_clock_take_step() took the step. */
uint64_t mm_clock_next_close(struct mm_clock *c, uint64_t mono_ns, uint64_t *ret_start_ms);

/* Takes the pending step when @mono_ns reached it (call after mm_clock_next_close() returned
 * 0): the open window is cut at the step's instant on the old clock, and its start and end are
 * returned in *@ret_start_ms and *@ret_end_ms (*@ret_end_ms 0 when the step cut no time from
 * it); the new open window starts at the step's instant on the new clock, and the new offset is
 * in force. Returns false (and nothing changes) when no step is pending or @mono_ns is before
 * it. */
bool mm_clock_take_step(struct mm_clock *c, uint64_t mono_ns, uint64_t *ret_start_ms,
			uint64_t *ret_end_ms);

#endif
