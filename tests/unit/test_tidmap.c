/*
 * The thread-id map against a plain array model under random inserts and removals (probe runs
 * that wrap around the table, growth), plus the entry bound.
 */
#include <stdlib.h>

#include "check.h"
#include "tidmap.h"

static void test_random_operations_match_a_model(void)
{
	struct mm_tidmap *m = mm_tidmap_new(sizeof(uint64_t), 1u << 20);
	static uint64_t model[5000];
	static bool present[5000];
	srand(12345);
	for (int step = 0; step < 200000; step++) {
		uint32_t tid = (uint32_t)(rand() % 5000);
		int op = rand() % 3;
		if (op == 0) {
			uint64_t *v = mm_tidmap_get(m, tid, true);
			CHECK(v != NULL);
			if (!present[tid])
				CHECK_U64(*v, 0);
			*v = (uint64_t)step;
			model[tid] = (uint64_t)step;
			present[tid] = true;
		} else if (op == 1) {
			mm_tidmap_remove(m, tid);
			present[tid] = false;
		} else {
			uint64_t *v = mm_tidmap_get(m, tid, false);
			if (present[tid] != (v != NULL) || (v && *v != model[tid])) {
				CHECK(!"lookup disagrees with the model");
				break;
			}
		}
	}
	size_t n = 0;
	for (int i = 0; i < 5000; i++)
		n += present[i];
	CHECK_U64(mm_tidmap_count(m), n);
	mm_tidmap_free(m);
}

static void count_entries(void *ctx, uint32_t tid, void *value)
{
	(*(size_t *)ctx)++;
}

static void test_bound_and_foreach(void)
{
	struct mm_tidmap *m = mm_tidmap_new(40, 3);
	CHECK(mm_tidmap_get(m, 1, true) && mm_tidmap_get(m, 2, true) && mm_tidmap_get(m, 3, true));
	CHECK(mm_tidmap_get(m, 4, true) == NULL);
	CHECK(mm_tidmap_get(m, 2, true) != NULL); /* existing entries still found */
	size_t n = 0;
	mm_tidmap_foreach(m, count_entries, &n);
	CHECK_U64(n, 3);
	mm_tidmap_free(m);
	mm_tidmap_free(NULL);
}

int main(void)
{
	RUN(test_random_operations_match_a_model);
	RUN(test_bound_and_foreach);
	return check_summary();
}
