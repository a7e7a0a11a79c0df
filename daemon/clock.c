/*
 * The window clock (see clock.h). It replaced two copies that had drifted: main.c compared
 * monotonic nanoseconds, replay.c wall milliseconds, and both closed every empty window of a gap
 * one by one, so one wild time stamp in a recording made replay loop for ever.
 */
#include "clock.h"

static uint64_t boundary_after(const struct mm_clock *c, uint64_t ms)
{
	return (ms / c->interval_ms + 1) * c->interval_ms;
}

void mm_clock_init(struct mm_clock *c, unsigned interval_s, int64_t mono_to_wall_ms,
		   uint64_t start_ms)
{
	c->interval_ms = (uint64_t)(interval_s ? interval_s : 1) * 1000;
	c->mono_to_wall_ms = mono_to_wall_ms;
	c->end_ms = boundary_after(c, start_ms);
}

void mm_clock_set_interval(struct mm_clock *c, unsigned interval_s, uint64_t now_ms)
{
	c->interval_ms = (uint64_t)(interval_s ? interval_s : 1) * 1000;
	c->end_ms = boundary_after(c, now_ms);
}

uint64_t mm_clock_wall_ms(const struct mm_clock *c, uint64_t mono_ns)
{
	int64_t ms = (int64_t)(mono_ns / 1000000) + c->mono_to_wall_ms;
	return ms > 0 ? (uint64_t)ms : 0;
}

uint64_t mm_clock_next_close(struct mm_clock *c, uint64_t mono_ns)
{
	uint64_t wall = mm_clock_wall_ms(c, mono_ns), end = c->end_ms;

	if (wall < end)
		return 0;
	uint64_t next = boundary_after(c, end);
	/* Beyond the window after this one too: one window for the whole gap. */
	if (wall >= next + c->interval_ms)
		next = wall / c->interval_ms * c->interval_ms;
	c->end_ms = next;
	return end;
}
