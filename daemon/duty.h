/*
 * A duty cycle: the schedule the host offers a collector that costs too much to run
 * continuously (plugin.h, MM_DUTY_CYCLED). It runs for a share of each window (duty, per mille),
 * in several short on-periods spread through the window.
 *
 * Time is cut into slots of I / k ms, k = max(2, I) for windows of I seconds (one slot a second,
 * at least two a window so that their spread says something); slots are aligned to wall time, so
 * windows (which end on multiples of I) hold whole slots. Each slot has one on-period of
 * duty * slot ms at an offset drawn from a hash of the slot's number (no aliasing with periodic
 * workloads, and no state: the loop that switches the streams and the host that reads their
 * records in event time compute the same periods), ending at least MM_DUTY_GRACE_MS before the
 * slot does. A period has three phases: ON (every stream of the collector enabled), ENDING (its
 * opener, the event that opens what it follows, is off; the evidence streams stay on for
 * MM_DUTY_GRACE_MS so that what was opened in the period sees its end), then OFF.
 * Pure arithmetic: no I/O, no clock.
 */
#ifndef MM_DUTY_H
#define MM_DUTY_H

#include <stdint.h>

#define MM_DUTY_GRACE_MS 20 /* evidence streams stay on this long after the opener stops */
/* A collector counting in the kernel (the BPF source): its threads flush their counts within
 * 20 ms (counters.bpf.c FLUSH_NS), so a period's counts are read this long after its grace. */
#define MM_DUTY_FLUSH_MS 30

struct mm_duty_period {
	uint64_t on_ms, off_ms; /* wall ms: the opener runs in [on_ms, off_ms) */
};

enum mm_phase {
	MM_PHASE_OFF,
	MM_PHASE_ON,	 /* every stream on */
	MM_PHASE_ENDING, /* the opener off, the evidence streams on */
};

struct mm_duty_clock {
	uint64_t slot_ms, on_ms, seed;
};

/* Periods at @duty_pm per mille (1..999) for windows of @interval_s seconds. */
void mm_duty_clock_init(struct mm_duty_clock *c, unsigned interval_s, unsigned duty_pm,
			uint64_t seed);

/* The on-period of slot @slot (wall ms / slot_ms). */
struct mm_duty_period mm_duty_period_of(const struct mm_duty_clock *c, uint64_t slot);

/* The phase at wall time @now_ms, and in *ret_next_ms the next time it changes. */
enum mm_phase mm_duty_phase_at(const struct mm_duty_clock *c, uint64_t now_ms,
			       uint64_t *ret_next_ms);

#endif
