/*
 * Lock rows outside the collector: perf lock contention's layout and seed 004's printed to the
 * character (expected lines worked out by hand from perf 6.1's format: widths 10 and 12, time
 * units h/m/s/ms/us with two decimals, ns as integers), merging per (type, caller) and per
 * identity, the histogram text the store keeps, the /api/v1/locks JSON and the /metrics families.
 */
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "check.h"
#include "lockrows.h"
#include "locktable.h"
#include "prom.h"

/* Prints with @fn into a string (caller frees). */
static char *print_to_string(const struct mm_snap_lock *rows, size_t n, int layout)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (layout == 2)
		mm_locktable_print_detail(f, rows, n, 0);
	else
		mm_locktable_print(f, rows, n, layout == 1);
	fclose(f);
	return buf;
}

static void test_times_print_as_perf_prints_them(void)
{
	static const struct {
		uint64_t ns;
		const char *text;
	} cases[] = {
		{0, "        0 ns"},	       {999, "      999 ns"},
		{1000, "     1.00 us"},	       {26310, "    26.31 us"},
		{5432, "     5.43 us"},	       {8410000, "     8.41 ms"},
		{266066000, "   266.07 ms"},   {1500000000, "     1.50 s "},
		{90000000000, "     1.50 m "}, {7200000000000, "     2.00 h "},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mm_locktable_time(buf, sizeof(buf), cases[i].ns, 12);
		CHECK_STR(buf, cases[i].text);
	}
}

static void test_perf_layout_merges_per_type_and_caller(void)
{
	struct mm_snap_lock rows[] = {
		lock_row(10, "spinlock", "folio_lruvec_lock_irqsave+0x5f", "0xffff888100000000",
			 1548, 8410000, 26310, 4000),
		lock_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 185, 266066000,
			 29470000, 3000),
		lock_row(11, "semaphore", "x", "0x1", 1, 999, 999, 999),
		lock_row(12, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 15, 3934000, 1000000,
			 2000),
	};
	char *out = print_to_string(rows, 4, 0);
	CHECK_STR(out, " contended   total wait     max wait     avg wait         type   caller\n"
		       "\n"
		       "       200    270.00 ms     29.47 ms      1.35 ms      rwsem:W   "
		       "do_mprotect_pkey+0xc7\n"
		       "      1548      8.41 ms     26.31 us      5.43 us     spinlock   "
		       "folio_lruvec_lock_irqsave+0x5f\n"
		       "         1       999 ns       999 ns       999 ns    semaphore   x\n");
	free(out);
	/* The input is left alone. */
	CHECK_U64(rows[1].contended, 185);
	CHECK_STR(rows[0].type, "spinlock");
}

static void test_seed_layout_matches_the_rmap_report(void)
{
	/* Seed 004's "Before" line: max 1632 ms, min below 1 ms, sum 31672 ms over 209. */
	struct mm_snap_lock rows[] = {
		lock_row(10, "rwsem:R", "rmap_walk_file", "", 198, 28817000000ull, 601000000,
			 200000),
		lock_row(10, "rwsem:R", "page_lock_anon_vma_read", "", 209, 31672000000ull,
			 1632000000, 300000),
	};
	char *out = print_to_string(rows, 2, 1);
	CHECK_STR(out, "  max_dur(ms)  min_dur(ms)  max-min(dur)ms  avg_dur(ms)  sum_dur(ms)  count"
		       "  blocked_function\n"
		       "         1632            0            1631   151.540670        31672    209"
		       "  page_lock_anon_vma_read\n"
		       "          601            0             600   145.540404        28817    198"
		       "  rmap_walk_file\n");
	free(out);
}

static void test_detail_layout_keeps_processes_and_locks_apart(void)
{
	struct mm_snap_lock rows[] = {
		lock_row(12, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 15, 3934000, 1000000,
			 2000),
		lock_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 185, 266066000,
			 29470000, 3000),
	};
	rows[1].lock_pid = 10;
	char *out = print_to_string(rows, 2, 2);
	CHECK_CONTAINS(out, "mmap_lock[10]");
	CHECK_CONTAINS(out, "p12");
	/* Longest first: pid 10's line comes before pid 12's. */
	CHECK(strstr(out, "p10") && strstr(out, "p12") && strstr(out, "p10") < strstr(out, "p12"));
	free(out);
}

/* mmlockd's own layouts (--detail, --waits) print each time column in one unit, named in its
 * header (not "8.01 s" above "384.28 ms"), and leave columns out, named, to fit a width. */
static void test_detail_and_holder_tables_have_one_unit_per_column_and_fit_a_width(void)
{
	struct mm_snap_lock rows[] = {
		lock_row(12, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 15, 8010000000,
			 384280000, 2000),
		lock_row(10, "rwsem:R", "lock_mm_and_find_vma+0x9e", "mmap_lock", 185, 290330000,
			 29470000, 3000),
	};
	char *out = print_to_string(rows, 2, 2);
	CHECK_CONTAINS(out, "total wait s  max wait ms  min wait us  avg wait ms  p99 wait ms");
	CHECK_CONTAINS(out, "  8.01  ");
	CHECK_CONTAINS(out, "  0.29  "); /* 290.33 ms in the column of seconds */
	free(out);

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	mm_locktable_print_detail(f, rows, 2, 80);
	fclose(f);
	CHECK_CONTAINS(buf, "# left out (--wide shows them): min wait");
	for (const char *p = buf; *p; p = strchr(p, '\n') + 1)
		CHECK(strchr(p, '\n') - p <= 80);
	free(buf);

	mm_lock_rows_by_holder(rows, 2);
	f = open_memstream(&buf, &len);
	mm_locktable_print_holders(f, rows, 2, 0);
	fclose(f);
	CHECK_CONTAINS(buf, "waits  total wait s  max wait ms  avg wait ms");
	free(buf);
}

static void test_rows_merge_by_identity_across_windows(void)
{
	struct mm_snap_lock w1[] = {
		lock_row(10, "rwsem:W", "a+0x1", "mmap_lock", 2, 300, 200, 100),
		lock_row(10, "spinlock", "b+0x2", "0x10", 1, 5, 5, 5),
	};
	struct mm_snap_lock w2[] = {
		lock_row(10, "rwsem:W", "a+0x1", "mmap_lock", 1, 50, 50, 50),
		lock_row(11, "rwsem:W", "a+0x1", "mmap_lock", 1, 1000, 1000, 1000),
	};
	struct mm_snap_lock *all = NULL;
	size_t n = 0;
	CHECK(mm_lock_rows_append(&all, &n, w1, 2) == 0);
	CHECK(mm_lock_rows_append(&all, &n, w2, 2) == 0);
	CHECK_U64(n, 3);
	/* Sorted by total wait: pid 11 (1000), pid 10's rwsem (350), the spinlock (5). */
	CHECK(all[0].pid == 11);
	CHECK(all[1].pid == 10 && !strcmp(all[1].type, "rwsem:W"));
	CHECK_U64(all[1].contended, 3);
	CHECK_U64(all[1].wait_ns, 350);
	CHECK_U64(all[1].max_ns, 200);
	CHECK_U64(all[1].min_ns, 50);
	CHECK_U64(all[1].hist.bucket[7] + all[1].hist.bucket[5], 2); /* 200 and 50 */
	n = mm_lock_rows_merge(all, n, true);
	CHECK_U64(n, 2);
	CHECK_U64(all[0].contended, 4);
	CHECK(all[0].pid == -1 && all[0].lock[0] == '\0');
	free(all);
}

static void test_quantiles_are_capped_at_the_longest_wait(void)
{
	struct mm_snap_lock r = lock_row(1, "spinlock", "c", "", 1, 3000, 3000, 3000);
	/* 3000 ns lies in [2048, 4096): the bucket bound 4096 is capped at max 3000. */
	CHECK_U64(mm_lock_row_quantile(&r, 0.5), 3000);
	for (int i = 0; i < 99; i++)
		mm_hist_add(&r.hist, 100);
	r.contended = 100;
	CHECK_U64(mm_lock_row_quantile(&r, 0.5), 128);
	CHECK_U64(mm_lock_row_quantile(&r, 0.995), 3000);
}

static void test_histogram_text_round_trips(void)
{
	struct mm_hist h = {0}, back;
	char text[MM_LOCK_HIST_TEXT];
	h.bucket[0] = 1;
	h.bucket[9] = 12;
	h.bucket[MM_HIST_BUCKETS - 1] = 18446744073709551615ull;
	mm_lock_hist_format(&h, text, sizeof(text));
	CHECK_STR(text, "0:1 9:12 39:18446744073709551615");
	CHECK(mm_lock_hist_parse(text, &back) == 0);
	CHECK(!memcmp(&h, &back, sizeof(h)));
	CHECK(mm_lock_hist_parse("", &back) == 0 && back.bucket[0] == 0);
	CHECK(mm_lock_hist_parse("40:1", &back) < 0);
	CHECK(mm_lock_hist_parse("3:", &back) < 0);
	CHECK(mm_lock_hist_parse("x", &back) < 0);
	CHECK(mm_lock_hist_parse("3:1x", &back) < 0);
}

static void test_api_rows_use_the_view_keys(void)
{
	struct mm_snap_lock rows[] = {
		lock_row(10, "rwsem:W", "do_mprotect_pkey+0xc7", "mmap_lock", 2, 3000, 2000, 1000),
		lock_row(11, "spinlock", "q\"uote", "0x10", 1, 5, 5, 5),
	};
	rows[0].lock_pid = 10;
	rows[0].start_ms = 1700000000123ull;
	rows[0].holder_pid = 10;
	rows[0].holder_tid = 12;
	strcpy(rows[0].holder_comm, "p10");
	strcpy(rows[0].holder_mode, "write");
	strcpy(rows[0].holder_op, "mprotect");
	rows[1].holder_pid = rows[1].holder_tid = -1;
	struct mm_buf b = MM_BUF_INIT;
	mm_api_locks(rows, 2, &b);
	CHECK(!mm_buf_failed(&b));
	CHECK_CONTAINS(b.data,
		       "{\"pid\":10,\"start_time\":1700000000.123,\"comm\":\"p10\","
		       "\"type\":\"rwsem:W\",\"caller\":\"do_mprotect_pkey+0xc7\","
		       "\"lock\":\"mmap_lock\",\"lock_pid\":10,\"contended\":2,"
		       "\"total_wait_ns\":3000,\"max_wait_ns\":2000,\"min_wait_ns\":1000,"
		       "\"avg_wait_ns\":1500,\"p50_wait_ns\":2000,\"p90_wait_ns\":2000,"
		       "\"p99_wait_ns\":2000,\"holder_mode\":\"write\",\"holder_pid\":10,"
		       "\"holder_tid\":12,\"holder_comm\":\"p10\",\"holder_op\":\"mprotect\"}");
	CHECK_CONTAINS(b.data, "\"caller\":\"q\\\"uote\",\"lock\":\"0x10\",\"lock_pid\":null");
	CHECK_CONTAINS(b.data, "\"holder_mode\":\"\",\"holder_pid\":null,\"holder_tid\":null,"
			       "\"holder_comm\":\"\",\"holder_op\":\"\"}]");
	CHECK(b.data[0] == '[' && b.data[b.len - 1] == ']');
	mm_buf_free(&b);
	mm_buf_puts(&b, "");
	mm_api_locks(NULL, 0, &b);
	CHECK_STR(b.data, "[]");
	mm_buf_free(&b);
}

static void test_metrics_show_the_top_call_sites(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 0, 0, 1);
	enum { N = MM_PROM_LOCK_CALLERS + 1 };
	struct mm_snap_lock *sites = calloc(N, sizeof(*sites));
	strcpy(s->collectors[0].name, "contention");
	sites[0] = lock_row(-1, "rwsem:W", "do_mprotect_pkey+0xc7", "", 200, 270000000, 1, 1);
	for (int i = 1; i < N - 1; i++) {
		char caller[32];
		snprintf(caller, sizeof(caller), "site%d+0x1", i);
		sites[i] = lock_row(-1, "mutex", caller, "", 10, 1000000, 1, 1);
	}
	sites[N - 1] =
		lock_row(-1, "spinlock", "folio_lruvec_lock_irqsave+0x5f", "", 1548, 8410, 1, 1);
	mm_snapshot_set_locks(s, NULL, 0, sites, N);
	struct mm_buf b = MM_BUF_INIT;
	/* At least MM_PROM_LOCK_CALLERS sites, whatever the per-pid --top (0 by default). */
	mm_prom_format(s, 0, &b);
	CHECK(strstr(b.data, "caller=\"site19+0x1\"} 10\n"));
	CHECK_CONTAINS(b.data, "# TYPE mmlockd_lock_contended_total counter\n"
			       "mmlockd_lock_contended_total{type=\"rwsem:W\",caller=\"do_mprotect_"
			       "pkey+0xc7\"} 200\n");
	CHECK_CONTAINS(b.data, "mmlockd_lock_wait_seconds_total{type=\"rwsem:W\",caller=\"do_"
			       "mprotect_pkey+0xc7\"} 0.27\n");
	CHECK(!strstr(b.data, "folio_lruvec"));
	mm_buf_free(&b);
	mm_prom_format(s, N, &b);
	CHECK_CONTAINS(b.data, "mmlockd_lock_wait_seconds_total{type=\"spinlock\",caller=\"folio_"
			       "lruvec_lock_irqsave+0x5f\"} 0.00000841\n");
	mm_buf_free(&b);
	mm_snapshot_unref(s);

	/* Without the collector the families are absent. */
	s = mm_snapshot_new(0, 0, 0, 0);
	mm_prom_format(s, 20, &b);
	CHECK(!strstr(b.data, "mmlockd_lock_"));
	mm_buf_free(&b);
	mm_snapshot_unref(s);
}

int main(void)
{
	RUN(test_times_print_as_perf_prints_them);
	RUN(test_perf_layout_merges_per_type_and_caller);
	RUN(test_seed_layout_matches_the_rmap_report);
	RUN(test_detail_layout_keeps_processes_and_locks_apart);
	RUN(test_detail_and_holder_tables_have_one_unit_per_column_and_fit_a_width);
	RUN(test_rows_merge_by_identity_across_windows);
	RUN(test_quantiles_are_capped_at_the_longest_wait);
	RUN(test_histogram_text_round_trips);
	RUN(test_api_rows_use_the_view_keys);
	RUN(test_metrics_show_the_top_call_sites);
	return check_summary();
}
