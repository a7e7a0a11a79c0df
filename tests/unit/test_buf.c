/*
 * Text buffer and JSON escaping, and the per-process statistics helpers built on the field table.
 */
#include <stdlib.h>

#include "buf.h"
#include "check.h"
#include "stats.h"

static void test_append_grows_and_printf_handles_long_output(void)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_buf_puts(&b, "abc");
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mm_buf_printf(&b, "%s%d", big, 42);
	CHECK_U64(b.len, 3 + 999 + 2);
	CHECK(!mm_buf_failed(&b));
	CHECK(b.data[b.len] == '\0');
	CHECK_STR(b.data + b.len - 2, "42");
	mm_buf_reset(&b);
	CHECK_U64(b.len, 0);
	CHECK_STR(b.data, "");
	mm_buf_free(&b);
	mm_buf_free(NULL);
}

static void test_json_strings_are_escaped_and_always_valid(void)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_buf_json_str(&b, "a\"b\\c\nd\te\x01");
	CHECK_STR(b.data, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
	mm_buf_reset(&b);
	mm_buf_json_str(&b, "caf\xc3\xa9");
	CHECK_STR(b.data, "\"caf\xc3\xa9\"");
	mm_buf_reset(&b);
	mm_buf_json_str(&b, "bad\xff\xc3"); /* invalid UTF-8 bytes are escaped */
	CHECK_STR(b.data, "\"bad\\u00ff\\u00c3\"");
	mm_buf_reset(&b);
	mm_buf_json_str(&b, "\xe0\x80\x80|\xed\xa0\x80"); /* overlong NUL, a surrogate */
	CHECK_STR(b.data, "\"\\u00e0\\u0080\\u0080|\\u00ed\\u00a0\\u0080\"");
	mm_buf_reset(&b);
	mm_buf_json_str(&b, NULL);
	CHECK_STR(b.data, "null");
	mm_buf_reset(&b);
	mm_buf_json_key(&b, "k");
	CHECK_STR(b.data, "\"k\":");
	mm_buf_free(&b);
}

static void test_field_table_covers_every_counter_once(void)
{
	/* Every uint64_t before the histogram is described exactly once. */
	size_t counters = offsetof(struct mm_proc_stats, mmap_lock_wait_hist) / sizeof(uint64_t);
	CHECK_U64(mm_proc_nfields, counters);
	for (size_t i = 0; i < mm_proc_nfields; i++)
		for (size_t j = i + 1; j < mm_proc_nfields; j++) {
			CHECK(mm_proc_fields[i].offset != mm_proc_fields[j].offset);
			CHECK(strcmp(mm_proc_fields[i].name, mm_proc_fields[j].name) != 0);
		}
}

static void test_stats_add_and_zero(void)
{
	struct mm_proc_stats a = {0}, b = {0};
	CHECK(mm_stats_is_zero(&a));
	b.faults = 3;
	b.mmap_lock_wait_ns = 10;
	mm_hist_add(&b.mmap_lock_wait_hist, 10);
	mm_stats_add(&a, &b);
	mm_stats_add(&a, &b);
	CHECK_U64(a.faults, 6);
	CHECK_U64(a.mmap_lock_wait_ns, 20);
	CHECK_U64(a.mmap_lock_wait_hist.bucket[3], 2);
	CHECK(!mm_stats_is_zero(&a));
}

static void test_histogram_buckets_and_quantiles(void)
{
	struct mm_hist h = {0};
	CHECK_U64(mm_hist_quantile_ns(&h, 0.5), 0);
	mm_hist_add(&h, 0);
	mm_hist_add(&h, 1);
	mm_hist_add(&h, 1024);
	mm_hist_add(&h, UINT64_MAX);
	CHECK_U64(h.bucket[0], 2);
	CHECK_U64(h.bucket[10], 1);
	CHECK_U64(h.bucket[MM_HIST_BUCKETS - 1], 1);
	CHECK_U64(mm_hist_upper_ns(10), 2048);
	CHECK_U64(mm_hist_upper_ns(MM_HIST_BUCKETS - 1), UINT64_MAX);
	CHECK_U64(mm_hist_quantile_ns(&h, 0.5), 2);
	CHECK_U64(mm_hist_quantile_ns(&h, 0.75), 2048);
	CHECK_U64(mm_hist_quantile_ns(&h, 1.0), UINT64_MAX);
}

int main(void)
{
	RUN(test_append_grows_and_printf_handles_long_output);
	RUN(test_json_strings_are_escaped_and_always_valid);
	RUN(test_field_table_covers_every_counter_once);
	RUN(test_stats_add_and_zero);
	RUN(test_histogram_buckets_and_quantiles);
	return check_summary();
}
