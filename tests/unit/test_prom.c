/*
 * Tests of the Prometheus exposition (daemon/prom.c) on hand-built snapshots: families are grouped
 * with one HELP/TYPE each, nanoseconds become exact seconds, top_n bounds the per-process series,
 * label values are escaped, the histogram is cumulative and consistent, and globals, events and
 * collectors appear. Full-format validation by promtool is in promtool_check.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "snaps.h"
#include "plugin.h"
#include "prom.h"

/* Lists every collector of this build in @s, running unless named in @off (comma-separated). */
static void set_collectors(struct mm_snapshot *s, const char *off)
{
	size_t n = 0;
	while (mm_plugins[n])
		n++;
	free(s->collectors);
	s->collectors = calloc(n, sizeof(*s->collectors));
	s->ncollectors = n;
	for (size_t i = 0; i < n; i++) {
		char pat[40];
		snprintf(s->collectors[i].name, sizeof(s->collectors[i].name), "%s",
			 mm_plugins[i]->name);
		snprintf(pat, sizeof(pat), ",%s,", mm_plugins[i]->name);
		char list[200];
		snprintf(list, sizeof(list), ",%s,", off);
		s->collectors[i].state =
			strstr(list, pat) ? MM_COLLECTOR_DISABLED : MM_COLLECTOR_RUNNING;
	}
}

/* A snapshot with @n processes named p0, p1, ... (pids 100, 101, ...) in cgroup /t, busiest
 * first; every collector runs. */
static struct mm_snapshot *snap(size_t n)
{
	struct mm_snapshot *s = mm_snapshot_new(n, 0, 0, 0);
	strcpy(s->version, "0.1.0");
	strcpy(s->kernel, "6.12.0");
	set_collectors(s, "");
	for (size_t i = 0; i < n; i++) {
		s->procs[i].pid = (int32_t)(100 + i);
		s->procs[i].cgroup = "/t";
		snprintf(s->procs[i].comm, sizeof(s->procs[i].comm), "p%u", (unsigned)i % 1000);
		snap_proc_total(&s->procs[i])->faults = 1000 - i;
		snap_proc_total(&s->procs[i])->mmap_lock_read = 7;
		snap_proc_total(&s->procs[i])->mmap_lock_write = 3;
		mm_counts_add(mm_stats_counts(&s->all_total), s->procs[i].total);
	}
	return s;
}

static char *format(const struct mm_snapshot *s, unsigned top_n)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_prom_format(s, top_n, &b);
	CHECK(!mm_buf_failed(&b));
	return b.data; /* caller frees */
}

static unsigned count(const char *hay, const char *needle)
{
	unsigned n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The value of the sample line starting with @prefix followed by a space, or -1. */
static double sample(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, prefix, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static void test_shared_family_has_one_help_and_type_and_both_modes(void)
{
	struct mm_snapshot *s = snap(2);
	char *t = format(s, 10);

	CHECK_U64(count(t, "# HELP mmlockd_mmap_lock_acquisitions_total "), 1);
	CHECK_U64(count(t, "# TYPE mmlockd_mmap_lock_acquisitions_total counter\n"), 1);
	CHECK_U64(count(t, "# HELP mmlockd_process_mmap_lock_acquisitions_total "), 1);
	CHECK_U64(count(t, "# TYPE mmlockd_process_mmap_lock_acquisitions_total counter\n"), 1);
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_acquisitions_total{mode=\"read\"} 14\n");
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_acquisitions_total{mode=\"write\"} 6\n");
	CHECK_CONTAINS(t, "\nmmlockd_process_mmap_lock_acquisitions_total{pid=\"100\",comm=\"p0\","
			  "cgroup=\"/t\","
			  "mode=\"read\"} 7\n");
	CHECK_CONTAINS(t, "\nmmlockd_process_mmap_lock_acquisitions_total{pid=\"101\",comm=\"p1\","
			  "cgroup=\"/t\","
			  "mode=\"write\"} 3\n");
	/* The family's samples follow its TYPE line without another family in between. */
	const char *type = strstr(t, "# TYPE mmlockd_mmap_lock_acquisitions_total");
	const char *next = type ? strstr(type + 1, "# ") : NULL;
	const char *write = strstr(t, "mmlockd_mmap_lock_acquisitions_total{mode=\"write\"}");
	CHECK(type && next && write && write > type && write < next);
	free(t);
	mm_snapshot_unref(s);
}

static void test_every_type_line_is_unique(void)
{
	struct mm_snapshot *s = snap(3);
	s->nglobals = 0;
	char *t = format(s, 3);
	unsigned types = 0;

	for (const char *p = t; (p = strstr(p, "# TYPE ")); p++) {
		const char *end = strchr(p + 7, ' ');
		char name[160];
		snprintf(name, sizeof(name), "# TYPE %.*s ", (int)(end - p - 7), p + 7);
		CHECK_U64(count(t, name), 1);
		snprintf(name, sizeof(name), "# HELP %.*s ", (int)(end - p - 7), p + 7);
		CHECK_U64(count(t, name), 1);
		types++;
	}
	/* Every family of the field table, machine-wide, except the split's sample (the split is
	 * not in bursts) and the histogram's duplicates. */
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const char *prom = mm_proc_fields[i].prom;
		char name[160];
		bool left_out = !strncmp(prom, "page_fault_split_", 17) ||
				!strcmp(prom, "mmap_lock_wait_seconds_total") ||
				!strcmp(prom, "mmap_lock_waits_total");
		snprintf(name, sizeof(name), "# TYPE mmlockd_%s ", prom);
		CHECK_U64(count(t, name), left_out ? 0 : 1);
	}
	CHECK(types > 0);
	free(t);
	mm_snapshot_unref(s);
}

static void test_ns_fields_are_exported_as_exact_seconds(void)
{
	struct mm_snapshot *s = snap(1);
	s->all_total.mmap_lock_wait_ns = 1500000000;
	s->all_total.mmap_lock_write_hold_ns = 1;
	snap_proc_total(&s->procs[0])->mmap_lock_wait_ns = 12000000000;
	snap_proc_total(&s->procs[0])->mmap_lock_write_hold_ns = 0;
	char *t = format(s, 1);

	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_wait_seconds_sum 1.5\n");
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_write_hold_seconds_total 0.000000001\n");
	CHECK_CONTAINS(t, "\nmmlockd_process_mmap_lock_wait_seconds_sum{pid=\"100\",comm=\"p0\","
			  "cgroup=\"/t\"} "
			  "12\n");
	CHECK_CONTAINS(t, "\nmmlockd_process_mmap_lock_write_hold_seconds_total{pid=\"100\","
			  "comm=\"p0\",cgroup=\"/t\"} 0\n");
	/* Counts stay counts. */
	CHECK_CONTAINS(t, "\nmmlockd_user_page_faults_total 1000\n");
	free(t);
	mm_snapshot_unref(s);
}

static void test_top_n_limits_per_process_series(void)
{
	struct mm_snapshot *s = snap(5);
	char *t = format(s, 2);

	CHECK_U64(count(t, "mmlockd_process_user_page_faults_total{"), 2);
	CHECK_CONTAINS(t, "pid=\"100\",comm=\"p0\",cgroup=\"/t\"");
	CHECK_CONTAINS(t, "pid=\"101\",comm=\"p1\",cgroup=\"/t\"");
	CHECK(!strstr(t, "pid=\"102\""));
	CHECK_U64(count(t, "mmlockd_process_mmap_lock_wait_seconds_count{"), 2);
	free(t);

	t = format(s, 1000); /* more than there are */
	CHECK_U64(count(t, "mmlockd_process_user_page_faults_total{"), 5);
	free(t);
	mm_snapshot_unref(s);
}

static void test_top_n_zero_gives_no_process_families(void)
{
	struct mm_snapshot *s = snap(3);
	char *t = format(s, 0);

	CHECK(!strstr(t, "mmlockd_process_"));
	CHECK_CONTAINS(t, "\nmmlockd_user_page_faults_total 2997\n");
	free(t);
	mm_snapshot_unref(s);
}

static void test_reused_pid_gives_one_series(void)
{
	struct mm_snapshot *s = snap(3);
	s->procs[0].exited = true;
	s->procs[1].pid = s->procs[0].pid; /* new process, same pid, same comm */
	strcpy(s->procs[1].comm, "p0");
	char *t = format(s, 3);

	CHECK_U64(count(t, "mmlockd_process_user_page_faults_total{pid=\"100\",comm=\"p0\",cgroup="
			   "\"/t\"}"),
		  1);
	/* The busier one (listed first) is kept, and the slot goes to the next process. */
	CHECK_CONTAINS(t, "mmlockd_process_user_page_faults_total{pid=\"100\",comm=\"p0\",cgroup="
			  "\"/t\"} 1000\n");
	CHECK_CONTAINS(t, "mmlockd_process_user_page_faults_total{pid=\"102\",comm=\"p2\",cgroup="
			  "\"/t\"} 998\n");
	free(t);
	mm_snapshot_unref(s);
}

static void test_label_values_are_escaped(void)
{
	struct mm_snapshot *s = snap(1);
	strcpy(s->procs[0].comm, "a\"b\\c\nd");
	char *t = format(s, 1);

	CHECK_CONTAINS(t, "mmlockd_process_user_page_faults_total{pid=\"100\",comm="
			  "\"a\\\"b\\\\c\\nd\",cgroup=\"/t\"} ");
	/* No raw newline inside a label: every line starts with '#' or the prefix. */
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		CHECK(*p == '#' || strncmp(p, "mmlockd_", 8) == 0);
	free(t);
	mm_snapshot_unref(s);
}

static void test_invalid_utf8_in_comm_is_replaced(void)
{
	struct mm_snapshot *s = snap(1);
	strcpy(s->procs[0].comm, "x\xff\xc3(y\xc3\xa9");
	char *t = format(s, 1);

	/* 0xff and the truncated 0xc3 become U+FFFD; the valid "é" stays. */
	CHECK_CONTAINS(t, "comm=\"x\xef\xbf\xbd\xef\xbf\xbd(y\xc3\xa9\",cgroup=");
	CHECK(!strstr(t, "\xff"));
	free(t);
	mm_snapshot_unref(s);
}

static void test_histogram_is_cumulative_and_ends_with_count(void)
{
	struct mm_snapshot *s = snap(1);
	struct mm_hist *h = &s->all_total.mmap_lock_wait_hist;
	uint64_t waits[] = {0, 1, 500, 1024, 5000, 1000000, 3000000000ull, 1ull << 38};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		mm_hist_add(h, waits[i]);
	s->all_total.mmap_lock_wait_ns = 3001006525ull + (1ull << 38); /* the waits' sum */
	struct mm_proc_hists total = {.mmap_lock_wait_hist = *h};
	snap_proc_set_total_hists(&s->procs[0], &total);
	char *t = format(s, 1);

	/* waits < 2^10 ns: 0, 1, 500 */
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"0.000001024\"}") == 3);
	/* 1024 and 5000 are below 2^14 */
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"0.000016384\"}") == 5);
	/* 3 s is below 2^32 ns = 4.29 s */
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"4.294967296\"}") == 7);
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"17.179869184\"}") == 7);
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"+Inf\"}") == 8);
	CHECK(sample(t, "mmlockd_mmap_lock_wait_seconds_count") == 8);
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_wait_seconds_sum 277.878913469\n");
	CHECK_CONTAINS(t, "# TYPE mmlockd_mmap_lock_wait_seconds histogram\n");

	/* Buckets never decrease, and +Inf is the last one. */
	double prev = -1;
	const char *last = NULL;
	for (const char *p = strstr(t, "mmlockd_mmap_lock_wait_seconds_bucket{"); p;
	     p = strstr(p + 1, "mmlockd_mmap_lock_wait_seconds_bucket{")) {
		if (p[-1] != '\n')
			continue; /* the per-process family contains this name */
		double v = strtod(strstr(p, "} ") + 2, NULL);
		CHECK(v >= prev);
		prev = v;
		last = p;
	}
	CHECK(last && strncmp(last, "mmlockd_mmap_lock_wait_seconds_bucket{le=\"+Inf\"}", 48) == 0);

	CHECK(sample(t, "mmlockd_process_mmap_lock_wait_seconds_bucket{pid=\"100\",comm=\"p0\","
			"cgroup=\"/t\","
			"le=\"+Inf\"}") == 8);
	CHECK(sample(t, "mmlockd_process_mmap_lock_wait_seconds_count{pid=\"100\",comm=\"p0\","
			"cgroup=\"/t\"}") == 8);
	free(t);
	mm_snapshot_unref(s);
}

static void test_globals_events_collectors_and_build_info_appear(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 3, 2, 2);
	snap_origin(s, "0.1.0", "6.12.0-x", 1000, 62500);
	s->windows_stored = 4;
	s->store_errors = 2;
	s->windows_lost = 5;
	s->procs_tracked = 9;
	snap_global(&s->globals[0], "vmstat", "pgfault", 11);
	strcpy(s->globals[0].help, "Deltas of /proc/vmstat.");
	snap_global(&s->globals[1], "unmatched", "released", 5);
	snap_global(&s->globals[2], "vmstat", "vma_lock_abort", 3);
	strcpy(s->events[0].name, "exceptions:page_fault_user");
	s->events[0].open = true;
	s->events[0].samples = 77;
	s->events[0].lost = 2;
	strcpy(s->events[1].name, "lock:contention_begin");
	strcpy(s->collectors[0].name, "faults");
	strcpy(s->collectors[1].name, "vmstat");
	s->collectors[1].state = MM_COLLECTOR_FAILED;
	char *t = format(s, 20);

	CHECK_U64(count(t, "# HELP mmlockd_vmstat_total Deltas of /proc/vmstat.\n"), 1);
	CHECK_CONTAINS(t, "\nmmlockd_vmstat_total{name=\"pgfault\"} 11\n");
	CHECK_CONTAINS(t, "\nmmlockd_vmstat_total{name=\"vma_lock_abort\"} 3\n");
	CHECK_CONTAINS(t, "# HELP mmlockd_unmatched_total ");
	CHECK_CONTAINS(t, "\nmmlockd_unmatched_total{name=\"released\"} 5\n");
	CHECK_CONTAINS(t, "\nmmlockd_events_total{event=\"exceptions:page_fault_user\"} 77\n");
	CHECK_CONTAINS(t, "\nmmlockd_events_lost_total{event=\"exceptions:page_fault_user\"} 2\n");
	CHECK_CONTAINS(t, "\nmmlockd_tracepoint_up{event=\"exceptions:page_fault_user\"} 1\n");
	CHECK_CONTAINS(t, "\nmmlockd_tracepoint_up{event=\"lock:contention_begin\"} 0\n");
	CHECK_CONTAINS(t, "\nmmlockd_collector_up{collector=\"faults\",state=\"running\"} 1\n");
	CHECK_CONTAINS(t, "\nmmlockd_collector_up{collector=\"vmstat\",state=\"failed\"} 0\n");
	CHECK_CONTAINS(t, "\nmmlockd_build_info{version=\"0.1.0\",kernel=\"6.12.0-x\"} 1\n");
	CHECK_CONTAINS(t, "\nmmlockd_uptime_seconds 61.5\n");
	CHECK_CONTAINS(t, "\nmmlockd_windows_stored_total 4\n");
	CHECK_CONTAINS(t, "\nmmlockd_store_errors_total 2\n");
	CHECK_CONTAINS(t, "\nmmlockd_windows_lost_total 5\n");
	CHECK_CONTAINS(t, "\nmmlockd_processes_tracked 9\n");
	free(t);
	mm_snapshot_unref(s);
}

static void test_global_family_clashing_with_builtin_is_renamed(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 3, 1, 0);
	strcpy(s->events[0].name, "a:b");
	snap_global(&s->globals[0], "events", "x", 0); /* would be mmlockd_events_total */
	/* sanitized to mmlockd_page_faults_total */
	snap_global(&s->globals[1], "page-faults", "y", 0);
	snap_global(&s->globals[2], "events", "x", 0); /* same family, same name: dropped */
	char *t = format(s, 0);

	CHECK_U64(count(t, "# TYPE mmlockd_events_total "), 1);
	/* Reserved although its collector is not listed here: a global never takes it. */
	CHECK_U64(count(t, "# TYPE mmlockd_page_faults_total "), 0);
	CHECK_CONTAINS(t, "\nmmlockd_global_events_total{name=\"x\"} 0\n");
	CHECK_U64(count(t, "{name=\"x\"}"), 1);
	CHECK_CONTAINS(t, "\nmmlockd_global_page_faults_total{name=\"y\"} 0\n");
	free(t);
	mm_snapshot_unref(s);
}

static void test_empty_snapshot_has_families_at_0_but_no_process_series(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 0, 0, 0);
	set_collectors(s, "");
	char *t = format(s, 20);

	CHECK_CONTAINS(t, "\nmmlockd_user_page_faults_total 0\n");
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_wait_seconds_bucket{le=\"+Inf\"} 0\n");
	CHECK(!strstr(t, "mmlockd_process_"));
	CHECK(!strstr(t, "mmlockd_events_total"));
	free(t);
	mm_snapshot_unref(s);
}

/* The default configuration (totals, fallbacks, vmstat): none of the opt-in collectors' families
 * is exported, not even at 0, and collector_up lists every collector; a failed collector's
 * families go too. */
static void test_families_of_collectors_not_running_are_absent(void)
{
	struct mm_snapshot *s = snap(2);
	set_collectors(s, "mmaplock,faults,contention");
	/* Globals of a collector and one of nobody's. */
	free(s->globals);
	s->globals = calloc(2, sizeof(*s->globals));
	s->nglobals = 2;
	snap_global(&s->globals[0], "totals_events", "exit_messages", 7);
	strcpy(s->globals[0].collector, "totals");
	snap_global(&s->globals[1], "daemon_things", "x", 3);
	snap_proc_total(&s->procs[0])->minflt = 5;
	s->all_total.minflt = 5;
	char *t = format(s, 2);

	for (size_t i = 0; i < mm_proc_nfields; i++) {
		const struct mm_field *f = &mm_proc_fields[i];
		char name[160];
		bool on = !strcmp(f->collector, "totals") || !strcmp(f->collector, "fallbacks");
		snprintf(name, sizeof(name), "# TYPE mmlockd_%s ", f->prom);
		CHECK(!!strstr(t, name) == on);
		snprintf(name, sizeof(name), "# TYPE mmlockd_process_%s ", f->prom);
		CHECK(!!strstr(t, name) == on);
	}
	CHECK(!strstr(t, "mmap_lock_wait_seconds_bucket"));
	CHECK(!strstr(t, "mmlockd_user_page_faults_total"));
	CHECK(!strstr(t, "mmlockd_page_faults_total"));
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_accounted_total{type=\"minor\"} 5\n");
	CHECK_CONTAINS(t, "\nmmlockd_totals_events_total{name=\"exit_messages\"} 7\n");
	CHECK_CONTAINS(t, "\nmmlockd_collector_up{collector=\"faults\",state=\"disabled\"} 0\n");
	CHECK_CONTAINS(t, "\nmmlockd_collector_up{collector=\"totals\",state=\"running\"} 1\n");
	CHECK_U64(count(t, "\nmmlockd_collector_up{"), s->ncollectors);
	free(t);

	for (size_t i = 0; i < s->ncollectors; i++)
		if (!strcmp(s->collectors[i].name, "totals"))
			s->collectors[i].state = MM_COLLECTOR_FAILED;
	t = format(s, 2);
	CHECK(!strstr(t, "page_faults_accounted_total"));
	CHECK(!strstr(t, "mmlockd_totals_events_total")); /* its globals go with it */
	CHECK_CONTAINS(t, "\nmmlockd_daemon_things_total{name=\"x\"} 3\n");
	CHECK_CONTAINS(t, "# TYPE mmlockd_fault_fallback_locks_total counter\n");
	CHECK_CONTAINS(t, "\nmmlockd_collector_up{collector=\"totals\",state=\"failed\"} 0\n");
	free(t);
	mm_snapshot_unref(s);
}

/* stats.c derives each field's collector from where its member sits in struct mm_proc_stats. */
static void test_each_field_names_the_collector_that_fills_it(void)
{
	static const char *const want[][2] = {
		{"faults", "mmaplock"},
		{"mmap_lock_contended", "mmaplock"},
		{"mmap_lock_wait_ns", "mmaplock"},
		{"faults_vma", "faults"},
		{"faults_pages_reread", "faults"},
		{"mmap_lock_by_unknown", "faults"},
		{"minflt", "totals"},
		{"majflt", "totals"},
		{"fallback_locks", "fallbacks"},
		{"fallback_lock_waits", "fallbacks"},
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		for (size_t i = 0; i < mm_proc_nfields; i++)
			if (!strcmp(mm_proc_fields[i].name, want[k][0]))
				CHECK_STR(mm_proc_fields[i].collector, want[k][1]);
	for (size_t i = 0; i < mm_proc_nfields; i++) {
		bool known = false;
		for (size_t p = 0; mm_plugins[p]; p++)
			known |= !strcmp(mm_plugins[p]->name, mm_proc_fields[i].collector);
		CHECK(known);
	}
}

/* A collector counts as running only when the snapshot says so. */
static void test_snapshot_listing_no_collectors_has_no_counter_families(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 0, 0, 0);
	char *t = format(s, 20);

	for (size_t i = 0; i < mm_proc_nfields; i++) {
		char name[160];
		snprintf(name, sizeof(name), "mmlockd_%s", mm_proc_fields[i].prom);
		CHECK(!strstr(t, name));
	}
	CHECK_CONTAINS(t, "\nmmlockd_build_info{");
	free(t);
	mm_snapshot_unref(s);
}

/* The per-unit families: one series per cgroup of s->cgroups, "other" included, with the running
 * collectors' families only and the process count. */
static void test_cgroup_series_carry_the_cgroup_and_other(void)
{
	struct mm_snapshot *s = snap(0);
	set_collectors(s, "mmaplock,faults,contention");
	struct mm_snap_cgroup *cg = calloc(2, sizeof(*cg));
	strcpy(cg[0].cgroup, "/system.slice/a\"b.service");
	cg[0].processes = 3;
	cg[0].total.minflt = 70;
	cg[0].total.fallback_locks = 9;
	strcpy(cg[1].cgroup, "other");
	cg[1].other = true;
	cg[1].total.majflt = 4;
	mm_snapshot_set_cgroups(s, cg, 2);
	char *t = format(s, 0);

	CHECK_CONTAINS(t, "# TYPE mmlockd_cgroup_page_faults_accounted_total counter\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_page_faults_accounted_total{cgroup=\"/system.slice/"
			  "a\\\"b.service\",type=\"minor\"} 70\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_page_faults_accounted_total{cgroup=\"other\","
			  "type=\"major\"} 4\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_fault_fallback_locks_total{cgroup=\"other\"} 0\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_processes{cgroup=\"/system.slice/a\\\"b.service\"} "
			  "3\n");
	CHECK(!strstr(t, "mmlockd_cgroup_user_page_faults_total"));
	CHECK(!strstr(t, "mmlockd_process_"));
	free(t);
	mm_snapshot_unref(s);
}

/* The defaults (totals, fallbacks, vmstat, faults in bursts): the estimated outcome counts have
 * their own family, with outcome="not_sampled" for the faults no burst covered so that the
 * outcomes add up to page_faults_accounted_total; the families bursts cannot estimate are
 * absent rather than 0; with the split continuous the exact family is back. */
static void test_estimated_outcomes_have_their_own_family_and_add_up(void)
{
	struct mm_snapshot *s = snap(0);
	set_collectors(s, "mmaplock,contention");
	strcpy(s->split.mode, "bursts");
	s->all_total.minflt = 900;
	s->all_total.majflt = 100;
	s->all_total.faults_vma = 600; /* estimated windows: 700 faults */
	s->all_total.faults_mmap_abort = 100;
	s->all_total.faults_mmap_fallback = 100;
	s->all_total.split_estimated = 3;
	char *t = format(s, 0);

	CHECK(!strstr(t, "mmlockd_page_faults_total"));
	CHECK_CONTAINS(t, "# TYPE mmlockd_page_faults_estimated_total counter\n");
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_estimated_total{outcome=\"vma\"} 600\n");
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_estimated_total{outcome=\"mmap_abort\"} 100\n");
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_estimated_total{outcome=\"not_sampled\"} 300\n");
	for (const char *const *f = (const char *const[]){"mmap_lock_acquisitions_by_source_total",
							  "page_fault_mmap_lock_wait_seconds_total",
							  "page_fault_pages_reread_total",
							  "page_fault_mmap_lock_retries_total",
							  "page_fault_fallbacks_total", NULL};
	     *f; f++) {
		char type[160];
		snprintf(type, sizeof(type), "# TYPE mmlockd_%s ", *f);
		CHECK(!strstr(t, type));
	}
	CHECK_CONTAINS(t, "# TYPE mmlockd_page_fault_split_classified_total counter\n");
	free(t);

	strcpy(s->split.mode, "continuous");
	t = format(s, 0);
	CHECK(!strstr(t, "estimated_total{"));
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_total{outcome=\"vma\"} 600\n");
	CHECK_CONTAINS(t, "# TYPE mmlockd_page_fault_mmap_lock_wait_seconds_total counter\n");
	free(t);
	mm_snapshot_unref(s);
}

/* why_not_bpf says why BPF is not used, nothing else: a note of a collector on BPF stays out. */
static void test_why_not_bpf_is_empty_on_bpf(void)
{
	struct mm_snapshot *s = snap(0);
	for (size_t i = 0; i < s->ncollectors; i++) {
		struct mm_snap_collector *c = &s->collectors[i];
		bool bpf = !strcmp(c->name, "faults");
		strcpy(c->source, bpf ? "bpf" : "perf");
		strcpy(c->source_note, bpf ? "callchains: 0 on this source" : "no BTF");
	}
	char *t = format(s, 0);

	CHECK_CONTAINS(t, "{collector=\"faults\",source=\"bpf\",why_not_bpf=\"\"} 1\n");
	CHECK_CONTAINS(t, "{collector=\"mmaplock\",source=\"perf\",why_not_bpf=\"no BTF\"} 1\n");
	CHECK(!strstr(t, "callchains"));
	free(t);
	mm_snapshot_unref(s);
}

/* Fault latency, when sampled, is a histogram family by path, without a made-up _sum; absent
 * when it is off. */
static void test_fault_latency_is_a_histogram_when_sampled(void)
{
	struct mm_snapshot *s = snap(0);
	char *t = format(s, 0);
	CHECK(!strstr(t, "page_fault_latency_seconds"));
	free(t);

	strcpy(s->latency.mode, "sampled");
	mm_hist_add(&s->all_total.fault_ns_vma_hist, 3000);
	mm_hist_add(&s->all_total.fault_ns_vma_hist, 70000);
	mm_hist_add(&s->all_total.fault_ns_mmap_hist, 5000000);
	t = format(s, 0);
	CHECK_CONTAINS(t, "# TYPE mmlockd_page_fault_latency_seconds histogram\n");
	CHECK_CONTAINS(
		t,
		"\nmmlockd_page_fault_latency_seconds_bucket{path=\"vma\",le=\"0.000004096\"} 1\n");
	CHECK_CONTAINS(t,
		       "\nmmlockd_page_fault_latency_seconds_bucket{path=\"vma\",le=\"+Inf\"} 2\n");
	CHECK_CONTAINS(t, "\nmmlockd_page_fault_latency_seconds_count{path=\"mmap_lock\"} 1\n");
	CHECK(!strstr(t, "mmlockd_page_fault_latency_seconds_sum"));
	free(t);
	mm_snapshot_unref(s);
}

/* The bound docs/metrics.md states: the series of the default configuration (totals, fallbacks,
 * vmstat, faults in bursts; top 0, cgroup_top 20) with 20 units and "other". */
static void test_series_on_the_defaults_stay_within_the_documented_bound(void)
{
	struct mm_snapshot *s = snap(0);
	set_collectors(s, "mmaplock,contention");
	strcpy(s->split.mode, "bursts");
	for (size_t i = 0; i < s->ncollectors; i++)
		strcpy(s->collectors[i].source, "bpf");
	struct mm_snap_cgroup *cg = calloc(21, sizeof(*cg));
	for (int i = 0; i < 21; i++) {
		snprintf(cg[i].cgroup, sizeof(cg[i].cgroup),
			 i < 20 ? "/system.slice/u%d.service" : "other", i);
		cg[i].other = i == 20;
		cg[i].total.minflt = 10;
	}
	mm_snapshot_set_cgroups(s, cg, 21);
	char *t = format(s, 0);
	unsigned series = 0;
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		series += *p != '#';
	printf("# series on the defaults with 20 units (no globals, events or lock callers): %u\n",
	       series);
	/* 16 per unit (6 outcomes estimated, 2 accounted, 5 of the split's sample and error, 2 of
	 * fallbacks, processes) and about 32 machine-wide. */
	CHECK(series <= 16 * 21 + 40);
	free(t);
	mm_snapshot_unref(s);
}

/* The wait histogram's _sum and _count are the only wait totals machine-wide and per process:
 * counters with the same values would clash with it under OpenMetrics. Per cgroup, where no
 * histogram is exported, the counters stay. */
static void test_wait_totals_are_the_histogram_only(void)
{
	struct mm_snapshot *s = snap(1);
	struct mm_snap_cgroup *cg = calloc(1, sizeof(*cg));
	strcpy(cg[0].cgroup, "/t");
	cg[0].total.mmap_lock_waits = 4;
	cg[0].total.mmap_lock_wait_ns = 2000000000;
	mm_snapshot_set_cgroups(s, cg, 1);
	s->all_total.mmap_lock_waits = 4;
	s->all_total.mmap_lock_wait_ns = 2000000000;
	char *t = format(s, 1);

	CHECK(!strstr(t, "mmlockd_mmap_lock_wait_seconds_total"));
	CHECK(!strstr(t, "mmlockd_mmap_lock_waits_total"));
	CHECK(!strstr(t, "mmlockd_process_mmap_lock_wait_seconds_total"));
	CHECK(!strstr(t, "mmlockd_process_mmap_lock_waits_total"));
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_wait_seconds_sum 2\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_mmap_lock_wait_seconds_total{cgroup=\"/t\"} 2\n");
	CHECK_CONTAINS(t, "\nmmlockd_cgroup_mmap_lock_waits_total{cgroup=\"/t\"} 4\n");
	free(t);
	mm_snapshot_unref(s);
}

/* The split's sample and error (page_fault_split_*) describe bursts: with the split continuous
 * nothing makes them, so they are not exported as constant zeros. */
static void test_split_sample_families_only_with_the_split_in_bursts(void)
{
	struct mm_snapshot *s = snap(1);
	strcpy(s->split.mode, "continuous");
	char *t = format(s, 1);
	CHECK(!strstr(t, "page_fault_split_"));
	free(t);

	strcpy(s->split.mode, "bursts");
	t = format(s, 1);
	CHECK_CONTAINS(t, "# TYPE mmlockd_page_fault_split_estimated_windows_total counter\n");
	CHECK_CONTAINS(t, "\nmmlockd_page_fault_split_classified_total{kind=\"faults\"} 0\n");
	free(t);
	mm_snapshot_unref(s);
}

/* Per process a labelled series that is 0 is left out (a process meets a few of the 17 sources),
 * a family none of whose series is left has no HELP either; machine-wide every label stays. */
static void test_zero_labelled_series_are_left_out_per_process_only(void)
{
	struct mm_snapshot *s = snap(1);
	snap_proc_total(&s->procs[0])->mmap_lock_by_mprotect = 5;
	s->all_total.mmap_lock_by_mprotect = 5;
	char *t = format(s, 1);

	CHECK_CONTAINS(t, "\nmmlockd_process_mmap_lock_acquisitions_by_source_total{pid=\"100\","
			  "comm=\"p0\",cgroup=\"/t\",source=\"mprotect\"} 5\n");
	CHECK(!strstr(t, "mmlockd_process_mmap_lock_acquisitions_by_source_total{pid=\"100\","
			 "comm=\"p0\",cgroup=\"/t\",source=\"mmap\"}"));
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_acquisitions_by_source_total{source=\"mmap\"} 0\n");
	CHECK(!strstr(t, "mmlockd_process_mmap_lock_wait_behind_seconds_total"));
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_wait_behind_seconds_total{op=\"mmap\"} 0\n");
	free(t);
	mm_snapshot_unref(s);
}

/* HELP says what a family counts for every breakdown: a machine-wide sum is not "the process's". */
static void test_help_of_machine_wide_families_names_no_single_process(void)
{
	struct mm_snapshot *s = snap(1);
	char *t = format(s, 1);
	for (const char *p = t; (p = strstr(p, "# HELP mmlockd_")); p++) {
		const char *end = strchr(p, '\n');
		char line[1024];
		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		if (!strncmp(line, "# HELP mmlockd_process_", 23))
			continue;
		CHECK(!strstr(line, "process's"));
	}
	free(t);
	mm_snapshot_unref(s);
}

/* The two fallback families differ by what they include (kernel-mode faults, retries): each HELP
 * says it, so a reader of /metrics does not take one for the other. */
static void test_help_tells_the_two_fallback_counts_apart(void)
{
	struct mm_snapshot *s = snap(0);
	strcpy(s->split.mode, "continuous");
	char *t = format(s, 0);
	const char *locks = strstr(t, "# HELP mmlockd_fault_fallback_locks_total ");
	const char *faults = strstr(t, "# HELP mmlockd_page_fault_fallbacks_total ");
	CHECK(locks && faults);
	CHECK(strstr(locks, "kernel-mode faults included") < strchr(locks, '\n'));
	CHECK(strstr(faults, "kernel-mode faults not included") < strchr(faults, '\n'));
	free(t);
	mm_snapshot_unref(s);
}

/* The index of counter @name in mm_proc_fields[]. */
static size_t field_index(const char *name)
{
	for (size_t i = 0; i < mm_proc_nfields; i++)
		if (!strcmp(mm_proc_fields[i].name, name))
			return i;
	CHECK(!"no such field");
	return 0;
}

static bool bit(const uint64_t *set, size_t i)
{
	return set[i / 64] & (1ull << (i % 64));
}

/* A collector on BPF fills the counters its in-kernel part lists and no other: the faults
 * collector counts mmap_lock acquisitions by the fault path there but by no system call (those
 * need callchains), so /metrics does not show the system calls' sources as constant zeros,
 * machine-wide either; a collector whose counts come from records (contention) has none. */
static void test_counters_a_bpf_source_never_fills_are_not_exported(void)
{
	uint64_t silent[MM_PROC_FIELDS_MAX / 64];
	struct mm_snapshot *s = snap(0);
	strcpy(s->split.mode, "continuous");
	for (size_t c = 0; c < s->ncollectors; c++) {
		const struct mm_plugin *p = mm_plugins[c];
		mm_plugin_silent_fields(p, silent);
		if (!strcmp(p->name, "faults")) {
			CHECK(bit(silent, field_index("mmap_lock_by_mmap")));
			CHECK(bit(silent, field_index("mmap_lock_by_mprotect")));
			CHECK(!bit(silent, field_index("mmap_lock_by_fault")));
			CHECK(!bit(silent, field_index("mmap_lock_by_fault_kernel")));
			CHECK(!bit(silent, field_index("faults_vma")));
			/* Filled by the split's estimate in user space, on either source. */
			CHECK(!bit(silent, field_index("split_estimated")));
			CHECK(!bit(silent, field_index("split_faults_seen")));
			CHECK(!bit(silent, field_index("split_err")));
			memcpy(s->collectors[c].silent, silent, sizeof(silent));
		} else {
			for (size_t i = 0; i < mm_proc_nfields; i++)
				CHECK(!bit(silent, i));
		}
	}
	char *t = format(s, 0);
	CHECK_CONTAINS(t, "\nmmlockd_mmap_lock_acquisitions_by_source_total{source=\"fault\"} 0\n");
	CHECK(!strstr(t, "{source=\"mmap\"}"));
	CHECK(!strstr(t, "{source=\"mprotect\"}"));
	CHECK_CONTAINS(t, "\nmmlockd_page_faults_total{outcome=\"vma\"} 0\n");
	free(t);
	mm_snapshot_unref(s);
}

int main(void)
{
	RUN(test_counters_a_bpf_source_never_fills_are_not_exported);
	RUN(test_wait_totals_are_the_histogram_only);
	RUN(test_split_sample_families_only_with_the_split_in_bursts);
	RUN(test_zero_labelled_series_are_left_out_per_process_only);
	RUN(test_help_of_machine_wide_families_names_no_single_process);
	RUN(test_help_tells_the_two_fallback_counts_apart);
	RUN(test_estimated_outcomes_have_their_own_family_and_add_up);
	RUN(test_why_not_bpf_is_empty_on_bpf);
	RUN(test_fault_latency_is_a_histogram_when_sampled);
	RUN(test_series_on_the_defaults_stay_within_the_documented_bound);
	RUN(test_shared_family_has_one_help_and_type_and_both_modes);
	RUN(test_every_type_line_is_unique);
	RUN(test_ns_fields_are_exported_as_exact_seconds);
	RUN(test_top_n_limits_per_process_series);
	RUN(test_top_n_zero_gives_no_process_families);
	RUN(test_reused_pid_gives_one_series);
	RUN(test_label_values_are_escaped);
	RUN(test_invalid_utf8_in_comm_is_replaced);
	RUN(test_histogram_is_cumulative_and_ends_with_count);
	RUN(test_globals_events_collectors_and_build_info_appear);
	RUN(test_global_family_clashing_with_builtin_is_renamed);
	RUN(test_empty_snapshot_has_families_at_0_but_no_process_series);
	RUN(test_families_of_collectors_not_running_are_absent);
	RUN(test_snapshot_listing_no_collectors_has_no_counter_families);
	RUN(test_each_field_names_the_collector_that_fills_it);
	RUN(test_cgroup_series_carry_the_cgroup_and_other);
	return check_summary();
}
