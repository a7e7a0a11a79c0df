/*
 * The window clock (see clock.h). It replaced two copies that had drifted: main.c compared
 * monotonic nanoseconds, replay.c wall milliseconds, and both closed every empty window of a gap
 * one by one, so one wild time stamp in a recording made replay loop for ever.
 *
 * A step is taken where the stream meets it, not where the loop saw it: the loop runs up to a
 * drain round ahead of the records it hands over, and a record stamped before the step was
 * converted, classified and windowed on the old clock; switching the offset early would have
 * moved it, and its window, by the whole skew. The cut window keeps the clock it started on
 * (clock.h); the choice the other way, stamping it on the new clock, would overlap the windows
 * before it by the skew after a backward step.
 */
#include "clock.h"

static uint64_t boundary_after(const struct mm_clock *c, uint64_t ms)
{
	return (ms / c->interval_ms + 1) * c->interval_ms;
}

static uint64_t wall_of(int64_t offset_ms, uint64_t mono_ns)
{
	int64_t ms = (int64_t)(mono_ns / 1000000) + offset_ms;
	return ms > 0 ? (uint64_t)ms : 0;
}

void mm_clock_init(struct mm_clock *c, unsigned interval_s, int64_t mono_to_wall_ms,
		   uint64_t start_ms)
{
	c->interval_ms = (uint64_t)(interval_s ? interval_s : 1) * 1000;
	c->mono_to_wall_ms = mono_to_wall_ms;
	c->start_ms = start_ms;
	c->end_ms = boundary_after(c, start_ms);
	c->step_at_ns = 0;
	c->step_to_wall_ms = 0;
}

void mm_clock_set_interval(struct mm_clock *c, unsigned interval_s, uint64_t now_ms)
{
	c->interval_ms = (uint64_t)(interval_s ? interval_s : 1) * 1000;
	c->end_ms = boundary_after(c, now_ms);
}

int64_t mm_clock_latest_offset(const struct mm_clock *c)
{
	return c->step_at_ns ? c->step_to_wall_ms : c->mono_to_wall_ms;
}

int64_t mm_clock_observe(struct mm_clock *c, int64_t mono_to_wall_ms, uint64_t now_ns)
{
	int64_t moved = mono_to_wall_ms - mm_clock_latest_offset(c);

	if (moved > -MM_CLOCK_STEP_TOLERANCE_MS && moved < MM_CLOCK_STEP_TOLERANCE_MS)
		return 0;
	if (!c->step_at_ns)
		c->step_at_ns = now_ns ? now_ns : 1;
	c->step_to_wall_ms = mono_to_wall_ms;
	return moved;
}

uint64_t mm_clock_wall_ms(const struct mm_clock *c, uint64_t mono_ns)
{
	if (c->step_at_ns && mono_ns >= c->step_at_ns)
		return wall_of(c->step_to_wall_ms, mono_ns);
	return wall_of(c->mono_to_wall_ms, mono_ns);
}

/* The window wall time @wall closes, if any (the rule without steps). */
static uint64_t close_at(struct mm_clock *c, uint64_t wall, uint64_t *ret_start_ms)
{
	uint64_t end = c->end_ms;

	if (wall < end)
		return 0;
	uint64_t next = boundary_after(c, end);
	/* Beyond the window after this one too: one window for the whole gap. */
	if (wall >= next + c->interval_ms)
		next = wall / c->interval_ms * c->interval_ms;
	if (ret_start_ms)
		*ret_start_ms = c->start_ms;
	c->start_ms = end;
	c->end_ms = next;
	return end;
}

uint64_t mm_clock_next_close(struct mm_clock *c, uint64_t mono_ns, uint64_t *ret_start_ms)
{
	/* Up to a step the stream reached, on the old clock. */
	if (c->step_at_ns && mono_ns >= c->step_at_ns)
		return close_at(c, wall_of(c->mono_to_wall_ms, c->step_at_ns), ret_start_ms);
	return close_at(c, mm_clock_wall_ms(c, mono_ns), ret_start_ms);
}

bool mm_clock_take_step(struct mm_clock *c, uint64_t mono_ns, uint64_t *ret_start_ms,
			uint64_t *ret_end_ms)
{
	if (!c->step_at_ns || mono_ns < c->step_at_ns)
		return false;
	uint64_t at = wall_of(c->mono_to_wall_ms, c->step_at_ns);
	*ret_start_ms = c->start_ms;
	*ret_end_ms = at > c->start_ms ? at : 0;
	c->start_ms = wall_of(c->step_to_wall_ms, c->step_at_ns);
	c->end_ms = boundary_after(c, c->start_ms);
	c->mono_to_wall_ms = c->step_to_wall_ms;
	c->step_at_ns = 0;
	return true;
}
