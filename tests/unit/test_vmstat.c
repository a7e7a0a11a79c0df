/*
 * /proc/vmstat parsing and the choice of counters the vmstat collector exports.
 */
#include <stdlib.h>

#include "check.h"
#include "vmstat.h"

static char names[8][64];
static uint64_t values[8];
static unsigned n;

static void collect(void *ctx, const char *name, uint64_t value)
{
	if (n < 8) {
		snprintf(names[n], sizeof(names[n]), "%s", name);
		values[n] = value;
	}
	n++;
}

static void test_lines_are_parsed_and_junk_skipped(void)
{
	n = 0;
	int r = mm_vmstat_parse("nr_free_pages 12\npgfault 903158\nbroken\n"
				"pgmajfault 735 extra\nvma_lock_success 18446744073709551615\n"
				"vma_lock_retry 4",
				collect, NULL);
	CHECK_U64(r, 4);
	CHECK_U64(n, 4);
	CHECK_STR(names[1], "pgfault");
	CHECK_U64(values[1], 903158);
	CHECK_STR(names[2], "vma_lock_success");
	CHECK_U64(values[2], UINT64_MAX);
}

static void test_wanted_counters(void)
{
	CHECK(mm_vmstat_wanted("pgfault"));
	CHECK(mm_vmstat_wanted("pgmajfault"));
	CHECK(mm_vmstat_wanted("vma_lock_abort"));
	CHECK(!mm_vmstat_wanted("nr_free_pages"));
	CHECK(!mm_vmstat_wanted("pgfaultx"));
}

int main(void)
{
	RUN(test_lines_are_parsed_and_junk_skipped);
	RUN(test_wanted_counters);
	return check_summary();
}
