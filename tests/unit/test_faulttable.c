/*
 * Tests of the report tables (daemon/offline/faulttable.c) on hand-made rows: which columns the
 * data decides to show, the faults and fallbacks each column takes from which collector, sorting by
 * any column, --top, aligned output, CSV quoting, JSON, and the comparison grid with its change
 * column in the seeds' layout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "faulttable.h"

static struct mm_fault_row row(int32_t pid, const char *comm, const char *cgroup, uint64_t minflt,
			       uint64_t fallbacks)
{
	struct mm_fault_row r = {.pid = pid, .processes = 1};
	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	snprintf(r.cgroup, sizeof(r.cgroup), "%s", cgroup);
	r.sum.minflt = minflt;
	r.sum.fallback_locks = fallbacks;
	return r;
}

/* The comparison of @a and @b (@totals: sums, not rates) in @format (CSV: with ',') as a
 * malloc'ed string. */
static char *compare_as(const struct mm_fault_side *a, const struct mm_fault_side *b, bool totals,
			enum mm_fault_format format)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(mm_fault_print_compare(f, a, b, totals, format, ",", 0) == 0);
	fclose(f);
	return text;
}

/* The comparison grid of @a and @b as a malloc'ed string. */
static char *compare(const struct mm_fault_side *a, const struct mm_fault_side *b, bool totals)
{
	return compare_as(a, b, totals, MM_FAULT_TABLE);
}

/* Prints @rows with @opts into a malloc'ed string. */
static char *print(struct mm_fault_row *rows, size_t n, const struct mm_fault_opts *opts,
		   const char *comment)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CHECK(mm_fault_print(f, rows, n, opts, comment) == 0);
	fclose(f);
	return text;
}

static struct mm_fault_opts opts_sorted(const char *keys)
{
	struct mm_fault_opts o = {.format = MM_FAULT_TABLE};
	char err[512];
	CHECK(mm_fault_parse_sort(&o, keys, err, sizeof(err)) == 0);
	return o;
}

static void test_default_collectors_show_faults_major_fallbacks_waits_only(void)
{
	struct mm_fault_row rows[] = {row(10, "small", "/a", 100, 1),
				      row(20, "big", "/b", 1000, 5)};
	rows[1].sum.majflt = 7;
	rows[1].sum.fallback_lock_waits = 2;
	struct mm_fault_opts o = opts_sorted("faults");
	char *t = print(rows, 2, &o, "db, range\n2 processes");

	CHECK_CONTAINS(t, "# db, range\n# 2 processes\n#\n");
	CHECK_CONTAINS(t, "pid  faults  major  fallbacks   fb%  waits  comm   cgroup\n");
	/* minflt + majflt, busiest first, fb% of those */
	CHECK_CONTAINS(t, "\n 20    1007      7          5  0.50      2  big    /b\n");
	CHECK_CONTAINS(t, "\n 10     100      0          1  1.00      0  small  /a\n");
	CHECK(!strstr(t, "vma"));
	CHECK(!strstr(t, "wait ms"));
	free(t);
}

static void test_opt_in_data_shows_the_split_and_sampled_faults(void)
{
	struct mm_fault_row r = row(5, "w", "/", 0, 0);
	r.start_time = 1733000000.25;
	r.sum.faults = 50;
	r.sum.faults_vma = 40;
	r.sum.faults_mmap_retry = 10;
	r.sum.faults_mmap_fallback = 10;
	r.sum.faults_mmap_lock_wait_ns = 2500000;
	r.sum.mmap_lock_waits = 4;
	r.sum.mmap_lock_wait_ns = 8000000;
	struct mm_fault_opts o = opts_sorted("faults");
	o.format = MM_FAULT_CSV;
	o.sep = ";";
	char *t = print(&r, 1, &o, NULL);

	/* No totals: faults are the sampled ones, fallbacks the faults collector's, no major. */
	CHECK_STR(t,
		  "pid;start_time;faults;fallbacks;fallback_pct;vma;vma_retry;mmap_retry;"
		  "mmap_abort;mmap_unknown;split;fb_wait_ms;lock_waits;wait_ms;avg_wait_us;comm;"
		  "cgroup\n"
		  "5;1733000000.250;50;10;20.000000;40;0;10;0;0;exact;2.500;4;8.000;2000.0;w;/\n");
	free(t);
}

static void test_estimated_split_reads_as_estimate_with_error_and_coverage(void)
{
	struct mm_fault_row r = row(7, "est", "/", 11000, 1000);
	r.sum.faults_vma = 9000;
	r.sum.faults_mmap_retry = 600;
	r.sum.faults_mmap_unknown = 400;
	r.sum.faults_mmap_fallback = 1000;
	r.sum.split_estimated = 3;
	r.sum.split_faults_seen = 250;
	r.sum.split_err = 120;
	struct mm_fault_opts o = opts_sorted("faults");
	char *t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, "# ~: estimated from bursts");
	CHECK_CONTAINS(t, "+-err");
	CHECK_CONTAINS(t, "~9000");
	CHECK_CONTAINS(t, "~600");
	CHECK_CONTAINS(t, "  ~400  estimated    120       1000  2.27  ");
	free(t);
	o.format = MM_FAULT_CSV;
	t = print(&r, 1, &o, NULL);
	CHECK(!strchr(t, '~')); /* CSV keeps numbers; the split column says it */
	CHECK_CONTAINS(t, "mmap_unknown,split,split_err,not_sampled,split_coverage_pct,");
	/* Outcomes 9000 + 600 + 400 plus 1000 not sampled add up to the 11000 faults. */
	CHECK_CONTAINS(t, ",9000,0,600,0,400,estimated,120,1000,2.272727,");
	free(t);
}

/* A process no burst caught: its split reads "-" (CSV empty, JSON null), never 0 or exact, its
 * coverage 0, and the table says what "-" means. */
static void test_never_sampled_split_is_unknown_not_0(void)
{
	struct mm_fault_row rows[] = {row(7, "est", "/", 10000, 1000), row(8, "xz", "/", 40600, 3)};
	rows[0].sum.faults_vma = 10000;
	rows[0].sum.faults_mmap_abort = 1000;
	rows[0].sum.faults_mmap_fallback = 1000;
	rows[0].sum.split_estimated = 3;
	rows[0].sum.split_faults_seen = 250;
	rows[0].sum.split_err = 120;
	struct mm_fault_opts o = opts_sorted("pid");
	char *t = print(rows, 2, &o, NULL);
	CHECK_CONTAINS(t, "# -: not sampled");
	CHECK_CONTAINS(t, "not_sampled");
	const char *xz =
		strstr(t, "\n  8   40600      0          3   0.01      0       -          -   ");
	CHECK(xz && !strstr(xz, "exact"));
	free(t);
	o.format = MM_FAULT_JSON;
	t = print(rows, 2, &o, NULL);
	CHECK_CONTAINS(t, "\"vma\":null, \"vma_retry\":null");
	CHECK_CONTAINS(t, "\"fallback_pct\":0.007389,");	 /* not rounded to 0.00 */
	CHECK_CONTAINS(t, "{\"pid\":7, \"start_time\":0.000, "); /* the process's identity */
	CHECK_CONTAINS(t, "\"split\":\"not_sampled\", \"split_err\":null, \"not_sampled\":40600");
	free(t);
}

/* A wait column has one unit, named in its header: seconds where a value reaches 1000 ms (not
 * "wait ms 65185.952"), ms otherwise; CSV keeps ms, as its key says. */
static void test_wait_columns_have_one_unit_named_in_the_header(void)
{
	struct mm_fault_row r[2] = {row(1, "a", "/", 100, 1), row(2, "b", "/", 100, 1)};
	r[0].sum.mmap_lock_waits = 10;
	r[0].sum.mmap_lock_wait_ns = 65185952000ull;
	r[1].sum.mmap_lock_waits = 10;
	r[1].sum.mmap_lock_wait_ns = 1714000;
	struct mm_fault_opts o = opts_sorted("pid");
	char *t = print(r, 2, &o, NULL);
	CHECK_CONTAINS(t, "  wait s  ");
	CHECK_CONTAINS(t, "  65.186  ");
	CHECK_CONTAINS(t, "   0.002  ");
	CHECK(!strstr(t, "wait ms"));
	free(t);
	for (int i = 0; i < 2; i++) /* print() sorted the rows */
		if (r[i].pid == 1)
			r[i].sum.mmap_lock_wait_ns = 999000000;
	t = print(r, 2, &o, NULL);
	CHECK_CONTAINS(t, "  wait ms  ");
	CHECK_CONTAINS(t, "  999.000  ");
	free(t);
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	for (int i = 0; i < 2; i++)
		if (r[i].pid == 1)
			r[i].sum.mmap_lock_wait_ns = 65185952000ull;
	t = print(r, 2, &o, NULL);
	CHECK_CONTAINS(t, ",65185.952,");
	free(t);
}

/* --pid of a process no burst caught: the range's other processes had the split, so the one row
 * keeps its columns and reads not sampled ("-", CSV empty, JSON null, its faults unsampled),
 * rather than a table without the split that reads as if no collector ran. */
static void test_filtered_never_sampled_row_keeps_the_split_columns(void)
{
	struct mm_fault_row r = row(8, "xz", "/", 40600, 3);
	struct mm_fault_row range = row(0, "", "", 90000, 1003);
	range.sum.faults_vma = 48000;
	range.sum.faults_mmap_abort = 1000;
	range.sum.split_estimated = 9;
	range.sum.split_err = 300;
	struct mm_fault_opts o = opts_sorted("pid");
	char *t = print(&r, 1, &o, NULL);
	CHECK(!strstr(t, "not_sampled") && !strstr(t, "vma")); /* without the range: no split */
	free(t);
	o.range = &range;
	t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, "# -: not sampled");
	CHECK_CONTAINS(t, "  not_sampled  ");
	CHECK_CONTAINS(t, "mmap_unknown");
	free(t);
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, ",vma,vma_retry,mmap_retry,mmap_abort,mmap_unknown,split,split_err,"
			  "not_sampled,split_coverage_pct,");
	CHECK_CONTAINS(t, ",,,,,,not_sampled,,40600,,");
	free(t);
	o.format = MM_FAULT_JSON;
	t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, "\"vma\":null, ");
	CHECK_CONTAINS(t, "\"split\":\"not_sampled\", \"split_err\":null, \"not_sampled\":40600");
	free(t);
}

/* A table wider than the terminal loses the split's detail first and says so; --wide (0) keeps
 * every column; the header's labels sort too. */
static void test_table_fits_the_width_and_sorts_by_header(void)
{
	struct mm_fault_row r =
		row(7, "est", "/system.slice/a-rather-long-unit-name.service", 10000, 1000);
	r.sum.faults_vma = 9000;
	r.sum.faults_mmap_abort = 1000;
	r.sum.faults_mmap_fallback = 1000;
	r.sum.split_estimated = 3;
	r.sum.split_faults_seen = 250;
	r.sum.split_err = 120;
	r.sum.mmap_lock_waits = 3;
	r.sum.mmap_lock_read = 3;
	struct mm_fault_opts o = opts_sorted("fb%,+-err");
	o.width = 80;
	char *t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t,
		       "# left out to fit 80 columns (--wide shows them; key=value: the same in");
	CHECK_CONTAINS(t, "row): avg_wait_us");
	/* The '#' lines too wrap to the width. */
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		CHECK(strchr(p, '\n') - p <= 80);
	free(t);
	o.width = 0;
	t = print(&r, 1, &o, NULL);
	CHECK(!strstr(t, "left out"));
	CHECK_CONTAINS(t, "avg wait us");
	free(t);
}

/* A column with one value in every row (the split "exact", an outcome never seen) leaves a
 * narrow table before the columns that differ between rows (major), named with its value. */
static void test_constant_columns_leave_a_narrow_table_first(void)
{
	struct mm_fault_row r[3] = {row(7, "a", "/a.service", 10000, 1000),
				    row(8, "b", "/b.service", 9000, 10),
				    row(9, "c", "/c.service", 8000, 300)};
	for (int i = 0; i < 3; i++) {
		r[i].sum.majflt = (uint64_t)(i * 1000 + 7);
		r[i].sum.faults_vma = 5000 + (uint64_t)i;
		r[i].sum.faults_mmap_abort = 10 + (uint64_t)i;
		r[i].sum.faults_mmap_fallback = 10 + (uint64_t)i;
	}
	struct mm_fault_opts o = opts_sorted("faults");
	o.width = 80;
	char *t = print(r, 3, &o, NULL);
	CHECK_CONTAINS(t, "split=exact");
	CHECK_CONTAINS(t, "vma_retry=0");
	CHECK_CONTAINS(t, "  major  ");
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		CHECK(strchr(p, '\n') - p <= 80);
	free(t);
}

/* fb% has one format: two decimals, "<0.01" for a share too small to show, never "4e-05"; CSV
 * and JSON keep fixed-point digits without an exponent. */
static void test_fallback_share_has_one_fixed_format(void)
{
	struct mm_fault_row r[3] = {row(1, "tiny", "/", 2500000, 1), row(2, "some", "/", 1000, 1),
				    row(3, "none", "/", 1000, 0)};
	struct mm_fault_opts o = opts_sorted("pid");
	char *t = print(r, 3, &o, NULL);
	CHECK_CONTAINS(t, " <0.01 ");
	CHECK_CONTAINS(t, "  0.10 ");
	CHECK_CONTAINS(t, "  0.00 ");
	CHECK(!strstr(t, "e-"));
	free(t);
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	t = print(r, 3, &o, NULL);
	CHECK_CONTAINS(t, ",0.000040,");
	CHECK(!strstr(t, "e-"));
	free(t);
}

static void test_sort_by_any_column_and_top(void)
{
	struct mm_fault_row rows[] = {row(1, "c", "/z", 10, 9), row(2, "a", "/y", 30, 1),
				      row(3, "b", "/x", 20, 5)};
	struct mm_fault_opts o = opts_sorted("fallbacks");
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	o.top = 2;
	char *t = print(rows, 3, &o, NULL);
	CHECK_CONTAINS(t, "\n1,0.000,10,0,9,");
	CHECK_CONTAINS(t, "\n3,0.000,20,0,5,");
	CHECK(!strstr(t, "\n2,"));
	free(t);

	o = opts_sorted("comm");
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	t = print(rows, 3, &o, NULL);
	CHECK(strstr(t, "\n2,") < strstr(t, "\n3,") && strstr(t, "\n3,") < strstr(t, "\n1,"));
	free(t);

	char err[512];
	CHECK(mm_fault_parse_sort(&o, "faults,nosuch", err, sizeof(err)) == -EINVAL);
	CHECK_CONTAINS(err, "unknown sort key 'nosuch'");
	CHECK_CONTAINS(err, "fallback_pct");
}

static void test_csv_quotes_and_json_escapes_odd_names(void)
{
	struct mm_fault_row r = row(7, "a,\"b\"", "/s\\x", 1, 0);
	struct mm_fault_opts o = opts_sorted("faults");
	o.format = MM_FAULT_CSV;
	o.sep = ",";
	char *t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, ",\"a,\"\"b\"\"\",/s\\x\n");
	free(t);

	o.format = MM_FAULT_JSON;
	t = print(&r, 1, &o, NULL);
	CHECK_CONTAINS(t, "\"comm\":\"a,\\\"b\\\"\"");
	CHECK_CONTAINS(t, "\"cgroup\":\"/s\\\\x\"");
	CHECK_CONTAINS(t, "\"faults\":1,");
	free(t);

	t = print(NULL, 0, &o, NULL);
	CHECK_STR(t, "[]\n");
	free(t);
}

static void test_per_unit_rows_show_processes_and_no_pid(void)
{
	struct mm_fault_row r = row(0, "", "", 10, 1);
	r.processes = 3;
	struct mm_fault_opts o = opts_sorted("faults");
	o.by_cgroup = true;
	char *t = print(&r, 1, &o, NULL);
	CHECK_STR(t, "procs  faults  major  fallbacks    fb%  waits  cgroup\n"
		     "    3      10      0          1  10.00      0  -\n");
	free(t);
}

static void test_change_and_thousands_read_as_in_the_seeds(void)
{
	static const struct {
		double from, to;
		const char *want;
	} changes[] = {
		{1069.34, 1404.47, "+31.3%"},
		{3187336, 68490, "-97.9%"},
		{6256, 3, "-99.95%"},
		{5, 0, "-100.0%"},
		{0, 3, "n/a"},
		{0, 0, ""},
		{100000, 100001, "0.0%"},
	};
	char b[32];

	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		mm_fault_change(b, sizeof(b), changes[i].from, changes[i].to);
		CHECK_STR(b, changes[i].want);
	}
	mm_fault_thousands(b, sizeof(b), 3187336);
	CHECK_STR(b, "3,187,336");
	mm_fault_thousands(b, sizeof(b), 999);
	CHECK_STR(b, "999");
}

static void test_compare_grid_has_both_sides_and_the_change(void)
{
	struct mm_fault_side a = {
		.label = "Vanilla", .lock_contended = 3187336, .throughput = "1069.34"};
	struct mm_fault_side b = {
		.label = "Patched", .lock_contended = 68490, .throughput = "1404.47"};
	a.sum = row(0, "", "", 1000, 200);
	b.sum = row(0, "", "", 1000, 4);
	char *text = compare(&a, &b, false);

	CHECK_CONTAINS(text, "|         metric          |  Vanilla  | Patched | change |\n");
	CHECK_CONTAINS(text, "| throughput              |  1069.34  | 1404.47 | +31.3% |\n");
	CHECK_CONTAINS(text, "| mmap_lock contentions   | 3,187,336 | 68,490  | -97.9% |\n");
	CHECK_CONTAINS(text, "| mmap_lock fallbacks     |    200    |    4    | -98.0% |\n");
	CHECK_CONTAINS(text, "| fallback share %        |   20.00   |  0.40   | -98.0% |\n");
	CHECK_CONTAINS(text, "| major faults            |     0     |    0    |        |\n");
	/* The direction is said above the grid, then every line is a rule or a row of it. */
	const char *head = "# change: Patched relative to Vanilla, the baseline, as perf diff "
			   "prints it: (B - A) / A\n#\n+";
	CHECK(!strncmp(text, head, strlen(head)));
	for (const char *p = strstr(text, "\n+") + 1; *p; p = strchr(p, '\n') + 1)
		CHECK(*p == '+' || *p == '|');
	free(text);
}

/* Sides of different lengths compare per second of the time their windows cover, which each
 * side's note gives; a figure one side did not collect reads "-" there (CSV empty, JSON null),
 * never 0, with a legend; an estimated one "~N"; fallbacks that waited are a share of the
 * fallbacks, not a rate. */
static void test_compare_normalises_and_marks_unknown_and_estimates(void)
{
	struct mm_fault_side a = {
		.label = "A", .lock_contended = -1, .seconds = 100, .windows = 10};
	struct mm_fault_side b = {.label = "B", .lock_contended = -1, .seconds = 50, .windows = 5};
	a.sum = row(0, "", "", 10000, 200);
	b.sum = row(0, "", "", 10000, 100);
	a.sum.sum.fallback_lock_waits = 50;
	b.sum.sum.fallback_lock_waits = 50;
	a.sum.sum.faults_vma = 9800;
	a.sum.sum.faults_mmap_abort = 200;
	a.sum.sum.faults_mmap_fallback = 200;
	a.sum.sum.split_estimated = 4;
	char *text = compare(&a, &b, false);

	CHECK_CONTAINS(text, "# the fault split (faults collector): only A collected it");
	CHECK(!strstr(text, "exact in B"));
	CHECK_CONTAINS(text, "# counts per second of the time each side's windows cover (A: 10 "
			     "windows, 100.0 s; B: 5 windows, 50.0 s)");
	CHECK_CONTAINS(text, "# -: not collected by that side");
	CHECK_CONTAINS(text, "| faults /s               |  100   |  200  | +100.0% |\n");
	CHECK_CONTAINS(text, "| fallbacks that waited % | 25.00  | 50.00 | +100.0% |\n");
	CHECK_CONTAINS(text, "| mmap_abort /s           | ~2.00  |   -   |         |\n");
	free(text);

	text = compare_as(&a, &b, false, MM_FAULT_CSV);
	CHECK_CONTAINS(text, "\nmmap_abort /s,~2.00,,\n");
	free(text);

	text = compare_as(&a, &b, false, MM_FAULT_JSON);
	CHECK_CONTAINS(text, "{\"a\":\"A\", \"b\":\"B\", \"baseline\":\"a\", \"seconds\":[100, "
			     "50], \"notes\":[\"change: B relative to A");
	CHECK_CONTAINS(text, "{\"metric\":\"mmap_abort\", \"unit\":\"/s\", \"a\":2, "
			     "\"a_estimated\":true, \"b\":null, \"b_estimated\":false, "
			     "\"change_pct\":null, \"within_error\":false}");
	CHECK_CONTAINS(text, "{\"metric\":\"faults\", \"unit\":\"/s\", \"a\":100, "
			     "\"a_estimated\":false, \"b\":200, \"b_estimated\":false, "
			     "\"change_pct\":100, \"within_error\":false}");
	/* Numbers, not the grid's strings ("~98.00", "+100.0%"). */
	CHECK(!strstr(text, "\"a\":\"~") && !strstr(text, "\"b\":\"-\""));
	CHECK(!strstr(text, "\"change_pct\":\""));
	free(text);
	text = compare(&a, &b, true);
	CHECK_CONTAINS(text, "| faults ");
	CHECK_CONTAINS(text, "10,000");
	CHECK(!strstr(text, "/s "));
	free(text);
}

/* mmap_lock contentions of a side with neither the contention nor the mmaplock collector are not
 * collected: "-", not 0.00 per second. */
static void test_compare_contentions_not_collected_read_as_unknown(void)
{
	struct mm_fault_side a = {.label = "A", .lock_contended = -1, .seconds = 10};
	struct mm_fault_side b = {.label = "B", .lock_contended = 300, .seconds = 10};
	a.sum = row(0, "", "", 1000, 20);
	b.sum = row(0, "", "", 1000, 20);
	b.sum.sum.mmap_lock_behind_waits = 30;
	char *text = compare(&a, &b, false);
	CHECK_CONTAINS(text, "| mmap_lock contentions /s |  -   | 30.00 |        |\n");
	free(text);
}

/* A change between two estimates (or an estimate and an exact count) that lies inside the sum
 * of their 95% bounds reads "within error", not "+10110.6%"; outside it, the percentage. */
static void test_compare_change_inside_the_error_bound_reads_within_error(void)
{
	struct mm_fault_side a = {.label = "A", .lock_contended = -1, .seconds = 10};
	struct mm_fault_side b = {.label = "B", .lock_contended = -1, .seconds = 10};
	a.sum = row(0, "", "", 100000, 200);
	b.sum = row(0, "", "", 100000, 200);
	a.sum.sum.faults_vma = 99800;
	a.sum.sum.faults_vma_retry = 2;
	a.sum.sum.faults_mmap_abort = 198;
	a.sum.sum.split_estimated = 3;
	a.sum.sum.split_err = 300;
	b.sum.sum.faults_vma = 99700;
	b.sum.sum.faults_vma_retry = 204;
	b.sum.sum.faults_mmap_abort = 96;
	char *text = compare(&a, &b, true);
	CHECK_CONTAINS(text, "| vma_retry               |   ~2    |   204   | within error |\n");
	free(text);
	/* Nothing on either side: no change to qualify (JSON within_error false). */
	text = compare_as(&a, &b, true, MM_FAULT_JSON);
	CHECK_CONTAINS(text, "{\"metric\":\"mmap_retry\", \"unit\":\"\", \"a\":0, "
			     "\"a_estimated\":true, \"b\":0, \"b_estimated\":false, "
			     "\"change_pct\":null, \"within_error\":false}");
	free(text);
	a.sum.sum.split_err = 100;
	text = compare(&a, &b, true);
	CHECK_CONTAINS(text, "| vma_retry               |   ~2    |   204   |  +10100.0%   |\n");
	free(text);
}

/* Who held mmap_lock: one line per operation either side waited behind, "not collected" on a
 * side without the contention collector, and a note saying so. */
static void test_compare_has_the_time_behind_each_holder_operation(void)
{
	struct mm_fault_side a = {.label = "A", .lock_contended = -1};
	struct mm_fault_side b = {.label = "B", .lock_contended = -1};
	a.sum = row(0, "", "", 1000, 20);
	b.sum = row(0, "", "", 1000, 20);
	a.sum.sum.mmap_lock_behind_waits = 30;
	a.sum.sum.mmap_lock_behind_mprotect_ns = 2500000;
	a.sum.sum.mmap_lock_behind_remote_ns = 1000000;
	char *text = compare(&a, &b, true);
	CHECK_CONTAINS(text, "# who held mmap_lock (contention collector): only A collected it");
	CHECK_CONTAINS(text, "| waited behind mprotect ms | 2.500 |   -   |");
	CHECK_CONTAINS(text, "| waited behind remote ms   | 1.000 |   -   |");
	CHECK(!strstr(text, "behind munmap"));
	free(text);
	b.sum.sum.mmap_lock_behind_waits = 3;
	b.sum.sum.mmap_lock_behind_mprotect_ns = 500000;
	text = compare(&a, &b, true);
	CHECK_CONTAINS(text, "| waited behind mprotect ms | 2.500 | 0.500 | -80.0%  |");
	CHECK_CONTAINS(text, "| waited behind remote ms   | 1.000 | 0.000 | -100.0% |");
	free(text);
}

/* Sides that ran on different sources, or one whose source is unknown (stored before schema 007),
 * get a note in the text and in JSON (CSV has no notes); the same source, or a side with no
 * collector on events, none. */
static void test_compare_notes_sides_on_different_sources(void)
{
	struct mm_fault_side a = {.label = "vanilla", .lock_contended = -1, .source = "bpf"};
	struct mm_fault_side b = {.label = "patched", .lock_contended = -1, .source = "perf"};
	a.sum = row(0, "", "", 1000, 20);
	b.sum = row(0, "", "", 1000, 4);
	char *text = compare_as(&a, &b, true, MM_FAULT_TABLE);
	CHECK_CONTAINS(text,
		       "# vanilla ran on the bpf source, patched on perf: the fault split and "
		       "fallbacks are found by different methods (docs/sources.md)\n#\n+");
	free(text);
	text = compare_as(&a, &b, true, MM_FAULT_JSON);
	CHECK_CONTAINS(text, "(B - A) / A\", \"vanilla ran on the bpf source, patched on perf: ");
	free(text);
	text = compare_as(&a, &b, true, MM_FAULT_CSV);
	CHECK(!strstr(text, "source"));
	free(text);

	snprintf(b.source, sizeof(b.source), "unknown");
	text = compare_as(&a, &b, true, MM_FAULT_TABLE);
	CHECK_CONTAINS(text, "# vanilla ran on the bpf source, patched on unknown ('unknown': "
			     "stored before mmlockd recorded the source): the fault split and "
			     "fallbacks may have been found by different methods");
	free(text);

	/* The same source, or nothing on events on one side: no note at all. */
	static const char *const quiet[][2] = {{"bpf", "bpf"},
					       {"perf", "perf"},
					       {"bpf+perf", "bpf+perf"},
					       {"", "bpf"},
					       {"perf", ""}};
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++) {
		snprintf(a.source, sizeof(a.source), "%s", quiet[i][0]);
		snprintf(b.source, sizeof(b.source), "%s", quiet[i][1]);
		text = compare_as(&a, &b, true, MM_FAULT_TABLE);
		/* no '#' line above the grid but the direction */
		CHECK(!strncmp(text, "# change: ", 10) &&
		      !strncmp(strchr(text, '\n'), "\n#\n+", 4));
		free(text);
		text = compare_as(&a, &b, true, MM_FAULT_JSON);
		CHECK_CONTAINS(text,
			       "\"notes\":[\"change: patched relative to vanilla, the baseline, "
			       "as perf diff prints it: (B - A) / A\"]");
		free(text);
	}
	/* Both sides mixed (the source changed within each range): they may differ. */
	snprintf(a.source, sizeof(a.source), "bpf,perf");
	snprintf(b.source, sizeof(b.source), "bpf,perf");
	text = compare_as(&a, &b, true, MM_FAULT_TABLE);
	CHECK_CONTAINS(text, "# vanilla ran on the bpf,perf source, patched on bpf,perf: the fault "
			     "split and fallbacks may have been found");
	free(text);
}

int main(void)
{
	RUN(test_compare_normalises_and_marks_unknown_and_estimates);
	RUN(test_compare_contentions_not_collected_read_as_unknown);
	RUN(test_compare_change_inside_the_error_bound_reads_within_error);
	RUN(test_constant_columns_leave_a_narrow_table_first);
	RUN(test_fallback_share_has_one_fixed_format);
	RUN(test_filtered_never_sampled_row_keeps_the_split_columns);
	RUN(test_wait_columns_have_one_unit_named_in_the_header);
	RUN(test_default_collectors_show_faults_major_fallbacks_waits_only);
	RUN(test_opt_in_data_shows_the_split_and_sampled_faults);
	RUN(test_estimated_split_reads_as_estimate_with_error_and_coverage);
	RUN(test_never_sampled_split_is_unknown_not_0);
	RUN(test_table_fits_the_width_and_sorts_by_header);
	RUN(test_sort_by_any_column_and_top);
	RUN(test_csv_quotes_and_json_escapes_odd_names);
	RUN(test_per_unit_rows_show_processes_and_no_pid);
	RUN(test_change_and_thousands_read_as_in_the_seeds);
	RUN(test_compare_grid_has_both_sides_and_the_change);
	RUN(test_compare_notes_sides_on_different_sources);
	RUN(test_compare_has_the_time_behind_each_holder_operation);
	return check_summary();
}
