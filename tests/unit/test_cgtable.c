/*
 * Tests of the per-unit breakdown (daemon/cgtable.c) driven the way the host drives it: a
 * snapshot per tick with the open windows, fill, and at each window's end fill then close. They
 * prove the properties Prometheus needs: at most N cgroups plus "other", every series only grows
 * while it exists, the series add up to the machine's total, slots go to the busiest, a slot
 * lingers before another cgroup takes it, and processes with no known cgroup land in "other".
 */
#include <stdlib.h>
#include <string.h>

#include "cgtable.h"
#include "check.h"

/* A window snapshot with @n processes; process i is in cgroup cg[i] with @flt[i] minor faults. */
static struct mm_snapshot *window(size_t n, const char *const *cg, const uint64_t *flt,
				  uint64_t end_ms)
{
	struct mm_snapshot *s = mm_snapshot_new(n, 0, 0, 0);
	for (size_t i = 0; i < n; i++) {
		s->procs[i].pid = (int32_t)(100 + i);
		s->procs[i].cgroup = mm_snapshot_name(s, cg[i]);
		s->windows[i].minflt = flt[i];
	}
	s->window_end_ms = end_ms;
	return s;
}

static const struct mm_snap_cgroup *find(const struct mm_snapshot *s, const char *cg)
{
	for (size_t i = 0; i < s->ncgroups; i++)
		if (!strcmp(s->cgroups[i].cgroup, cg))
			return &s->cgroups[i];
	return NULL;
}

static uint64_t minflt_of(const struct mm_snapshot *s, const char *cg)
{
	const struct mm_snap_cgroup *c = find(s, cg);
	return c ? c->total.minflt : UINT64_MAX;
}

static void test_busiest_cgroup_gets_a_slot_and_counts_from_the_next_window(void)
{
	struct mm_cgtable *t = mm_cgtable_new(1);
	const char *cg[] = {"/a", "/b", "/b"};
	uint64_t flt[] = {10, 7, 6};
	struct mm_snapshot *s = window(3, cg, flt, 10000);

	CHECK(mm_cgtable_fill(t, s) == 0);
	CHECK_U64(s->ncgroups, 1); /* no slot yet: everything is "other" */
	CHECK_U64(minflt_of(s, "other"), 23);
	CHECK(s->cgroups[0].other);
	CHECK(mm_cgtable_close(t, s) == 0);
	mm_snapshot_unref(s);

	/* /b (13) beat /a (10); its first window stayed in "other". */
	uint64_t flt2[] = {1, 2, 3};
	s = window(3, cg, flt2, 20000);
	CHECK(mm_cgtable_fill(t, s) == 0);
	CHECK_U64(s->ncgroups, 2);
	CHECK_STR(s->cgroups[0].cgroup, "/b");
	CHECK_U64(s->cgroups[0].processes, 2);
	CHECK_U64(minflt_of(s, "/b"), 5);
	CHECK_U64(minflt_of(s, "other"), 24);
	CHECK_STR(s->cgroups[1].cgroup, "other");
	mm_snapshot_unref(s);
	mm_cgtable_free(t);
}

static void test_unknown_cgroup_counts_in_other_and_never_gets_a_slot(void)
{
	struct mm_cgtable *t = mm_cgtable_new(4);
	const char *cg[] = {""};
	uint64_t flt[] = {100};
	for (int w = 1; w <= 3; w++) {
		struct mm_snapshot *s = window(1, cg, flt, 10000u * w);
		CHECK(mm_cgtable_fill(t, s) == 0);
		CHECK_U64(s->ncgroups, 1);
		CHECK_U64(minflt_of(s, "other"), 100u * w);
		CHECK(mm_cgtable_close(t, s) == 0);
		mm_snapshot_unref(s);
	}
	mm_cgtable_free(t);
}

/* Many cgroups, more than slots, busy in turns for 200 windows with snapshots between closes:
 * never more than N + 1 series, each series non-decreasing while it exists (a series that comes
 * back after losing its slot may restart lower: that is a reset Prometheus sees after a gap),
 * and the series present sum to what was counted, less what series that ended took with them. */
static void test_series_only_grow_and_stay_bounded_under_churn(void)
{
	enum { N = 3, CG = 12, P = 24, W = 200 };
	struct mm_cgtable *t = mm_cgtable_new(N);
	char names[CG][16];
	const char *cg[P];
	uint64_t flt[P], last[CG + 1], total = 0, ended = 0;
	bool present[CG + 1] = {false};
	unsigned seed = 1;

	for (int i = 0; i < CG; i++)
		snprintf(names[i], sizeof(names[i]), "/u%d", i);
	for (uint64_t w = 1; w <= W; w++) {
		for (int i = 0; i < P; i++) {
			seed = seed * 1103515245u + 12345u;
			/* Half the cgroups at a time for 70 windows (700 s, longer than the
			 * linger time), so slots change hands. */
			cg[i] = names[(w / 70) % 2 * (CG / 2) + (seed >> 8) % (CG / 2)];
			flt[i] = (seed >> 4) % 50;
		}
		for (int tick = 0; tick < 2; tick++) {
			struct mm_snapshot *s = window(P, cg, flt, w * 10000);
			CHECK(mm_cgtable_fill(t, s) == 0);
			CHECK(s->ncgroups <= N + 1);
			CHECK(s->cgroups[s->ncgroups - 1].other);
			uint64_t sum = 0;
			bool now[CG + 1] = {false};
			for (size_t k = 0; k < s->ncgroups; k++) {
				int id = s->cgroups[k].other ? CG : atoi(s->cgroups[k].cgroup + 2);
				uint64_t v = s->cgroups[k].total.minflt;
				if (present[id])
					CHECK(v >= last[id]);
				last[id] = v;
				now[id] = true;
				sum += v;
			}
			for (int id = 0; id <= CG; id++) {
				if (present[id] && !now[id])
					ended += last[id];
				present[id] = now[id];
			}
			uint64_t window_sum = 0;
			for (int i = 0; i < P; i++)
				window_sum += flt[i];
			CHECK_U64(sum + ended, total + window_sum);
			if (tick == 1) {
				CHECK(mm_cgtable_close(t, s) == 0);
				total += window_sum;
			}
			mm_snapshot_unref(s);
		}
	}
	CHECK(ended > 0); /* slots did change hands */
	mm_cgtable_free(t);
}

static void test_idle_slot_is_taken_only_after_lingering(void)
{
	struct mm_cgtable *t = mm_cgtable_new(1);
	const char *a[] = {"/a"}, *b[] = {"/b"};
	uint64_t one[] = {5}, zero[] = {0};
	struct mm_snapshot *s;

	s = window(1, a, one, 10000);
	mm_cgtable_fill(t, s);
	mm_cgtable_close(t, s); /* /a gets the slot */
	mm_snapshot_unref(s);
	/* /b is busy while /a idles, but not yet for MM_CGTABLE_LINGER_MS. */
	uint64_t end = 10000 + MM_CGTABLE_LINGER_MS - 10000;
	s = window(1, b, one, end);
	mm_cgtable_fill(t, s);
	mm_cgtable_close(t, s);
	mm_snapshot_unref(s);
	s = window(1, a, zero, end + 5000);
	mm_cgtable_fill(t, s);
	CHECK(find(s, "/a") != NULL);
	CHECK(find(s, "/b") == NULL);
	mm_cgtable_close(t, s);
	mm_snapshot_unref(s);
	/* Now /a has idled long enough and /b takes its slot. */
	s = window(1, b, one, 10000 + MM_CGTABLE_LINGER_MS);
	mm_cgtable_fill(t, s);
	mm_cgtable_close(t, s);
	mm_snapshot_unref(s);
	s = window(1, b, one, 20000 + MM_CGTABLE_LINGER_MS);
	mm_cgtable_fill(t, s);
	CHECK(find(s, "/a") == NULL);
	CHECK_U64(minflt_of(s, "/b"), 5);
	mm_snapshot_unref(s);
	mm_cgtable_free(t);
}

static void test_shrinking_keeps_the_busiest_and_zero_slots_give_only_other(void)
{
	struct mm_cgtable *t = mm_cgtable_new(3);
	const char *cg[] = {"/a", "/b", "/c"};
	uint64_t flt[] = {1, 30, 20};
	struct mm_snapshot *s;

	for (int w = 1; w <= 2; w++) {
		s = window(3, cg, flt, 10000u * w);
		mm_cgtable_fill(t, s);
		mm_cgtable_close(t, s);
		mm_snapshot_unref(s);
	}
	CHECK(mm_cgtable_set_slots(t, 2) == 0);
	s = window(3, cg, flt, 30000);
	mm_cgtable_fill(t, s);
	CHECK_U64(s->ncgroups, 3);
	CHECK_STR(s->cgroups[0].cgroup, "/b");
	CHECK_STR(s->cgroups[1].cgroup, "/c");
	CHECK(find(s, "/a") == NULL);
	mm_snapshot_unref(s);

	CHECK(mm_cgtable_set_slots(t, 0) == 0);
	s = window(3, cg, flt, 40000);
	mm_cgtable_fill(t, s);
	mm_cgtable_close(t, s);
	CHECK_U64(s->ncgroups, 1);
	CHECK(s->cgroups[0].other);
	mm_snapshot_unref(s);
	mm_cgtable_free(t);
}

int main(void)
{
	RUN(test_busiest_cgroup_gets_a_slot_and_counts_from_the_next_window);
	RUN(test_unknown_cgroup_counts_in_other_and_never_gets_a_slot);
	RUN(test_series_only_grow_and_stay_bounded_under_churn);
	RUN(test_idle_slot_is_taken_only_after_lingering);
	RUN(test_shrinking_keeps_the_busiest_and_zero_slots_give_only_other);
	return check_summary();
}
