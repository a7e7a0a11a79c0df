/*
 * The duty cycle's schedule (see duty.h). Pure code.
 */
#include "duty.h"

/* splitmix64 of the slot number: spreads the periods' offsets, no statistical claims beyond that.
 */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void mm_duty_clock_init(struct mm_duty_clock *c, unsigned interval_s, unsigned duty_pm,
			uint64_t seed)
{
	uint64_t window_ms = (uint64_t)(interval_s ? interval_s : 1) * 1000;
	unsigned k = interval_s < 2 ? 2 : interval_s;
	c->slot_ms = window_ms / k;
	c->on_ms = c->slot_ms * (duty_pm > 1000 ? 1000 : duty_pm) / 1000;
	if (!c->on_ms)
		c->on_ms = 1;
	c->seed = seed;
}

struct mm_duty_period mm_duty_period_of(const struct mm_duty_clock *c, uint64_t slot)
{
	uint64_t need = c->on_ms + MM_DUTY_GRACE_MS;
	uint64_t room = c->slot_ms > need ? c->slot_ms - need : 0;
	uint64_t on = slot * c->slot_ms + (room ? mix(slot ^ c->seed) % (room + 1) : 0);
	return (struct mm_duty_period){on, on + c->on_ms};
}

enum mm_phase mm_duty_phase_at(const struct mm_duty_clock *c, uint64_t now_ms,
			       uint64_t *ret_next_ms)
{
	enum mm_phase phase = MM_PHASE_OFF;
	uint64_t next = UINT64_MAX, slot = now_ms / c->slot_ms;
	/* The previous slot's grace can reach into this one when a period fills its slot. */
	for (uint64_t j = slot ? slot - 1 : 0; j <= slot + 1; j++) {
		struct mm_duty_period b = mm_duty_period_of(c, j);
		uint64_t edges[3] = {b.on_ms, b.off_ms, b.off_ms + MM_DUTY_GRACE_MS};
		if (now_ms >= edges[0] && now_ms < edges[1])
			phase = MM_PHASE_ON;
		else if (now_ms >= edges[1] && now_ms < edges[2] && phase == MM_PHASE_OFF)
			phase = MM_PHASE_ENDING;
		for (unsigned e = 0; e < 3; e++)
			if (edges[e] > now_ms && edges[e] < next)
				next = edges[e];
	}
	*ret_next_ms = next;
	return phase;
}
