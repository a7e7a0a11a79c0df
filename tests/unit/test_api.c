/*
 * Tests of the JSON API bodies (daemon/api.c) on hand-built snapshots: the output is valid JSON
 * (checked by a strict recursive-descent validator below), the keys of every "window" and "total"
 * object are exactly the names of mm_proc_fields[] in order (the columns of the process_stats
 * view), odd bytes in a comm are escaped, and times are unix seconds with milliseconds.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "check.h"
#include "snaps.h"

/* A strict JSON validator (RFC 8259 syntax; strings must be printable ASCII or escapes, which is
 * what mm_buf_json_str produces for anything else than valid UTF-8). */
static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *value(const char *p);

static const char *string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20)
			return NULL;
		if (c == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
						return NULL;
				p += 5;
			} else if (*p && strchr("\"\\/bfnrt", *p)) {
				p++;
			} else {
				return NULL;
			}
		} else {
			p++;
		}
	}
	return p + 1;
}

static const char *number(const char *p)
{
	const char *start = p;
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > start ? p : NULL;
}

static const char *container(const char *p, char close)
{
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (close == '}') {
			p = string(ws(p));
			if (!p || *(p = ws(p)) != ':')
				return NULL;
			p++;
		}
		p = value(p);
		if (!p)
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *value(const char *p)
{
	p = ws(p);
	if (*p == '{')
		return container(p, '}');
	if (*p == '[')
		return container(p, ']');
	if (*p == '"')
		return string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	return number(p);
}

static bool valid_json(const char *s)
{
	const char *end = value(s);
	return end && *ws(end) == '\0';
}

/* The fault latency quantiles that follow the counters in every stats object. */
static const char *const latency_keys[] = {
	"fault_ns_vma_p50",
	"fault_ns_vma_p99",
	"fault_ns_mmap_p50",
	"fault_ns_mmap_p99",
	"fault_ns_outcome_vma_p50",
	"fault_ns_outcome_vma_p99",
	"fault_ns_outcome_vma_retry_p50",
	"fault_ns_outcome_vma_retry_p99",
	"fault_ns_outcome_mmap_retry_p50",
	"fault_ns_outcome_mmap_retry_p99",
	"fault_ns_outcome_mmap_abort_p50",
	"fault_ns_outcome_mmap_abort_p99",
	"fault_ns_outcome_mmap_unknown_p50",
	"fault_ns_outcome_mmap_unknown_p99",
};
#define NLATENCY (sizeof(latency_keys) / sizeof(latency_keys[0]))

/* Checks that the object starting at @obj ("{...}", values are numbers) has exactly the keys of
 * mm_proc_fields[] in order, then latency_keys[], and returns the value of @want (or -1). */
static double check_stats_object(const char *obj, const char *want)
{
	double found = -1;
	const char *p = obj;
	CHECK(*p == '{');
	if (*p != '{')
		return -1;
	p++;
	for (size_t i = 0; i < mm_proc_nfields + NLATENCY; i++) {
		const char *name = i < mm_proc_nfields ? mm_proc_fields[i].name
						       : latency_keys[i - mm_proc_nfields];
		char key[80];
		int n = snprintf(key, sizeof(key), "\"%s\":", name);
		if (strncmp(p, key, (size_t)n) != 0) {
			fprintf(stderr, "expected key %s at: %.40s\n", key, p);
			CHECK(!"stats keys equal mm_proc_fields names, then the latency quantiles");
			return -1;
		}
		char *end;
		double v = strtod(p + n, &end);
		if (want && !strcmp(want, name))
			found = v;
		p = end;
		CHECK(*p == (i + 1 < mm_proc_nfields + NLATENCY ? ',' : '}'));
		p++;
	}
	return found;
}

static struct mm_snapshot *snap(void)
{
	struct mm_snapshot *s = mm_snapshot_new(2, 1, 2, 2);
	snap_origin(s, "0.1.0", "6.12.0-amd64", 1700000000000, 1700000090250);
	s->window_start_ms = 1700000080000;
	s->interval_s = 10;
	s->procs[0].pid = 4242;
	s->procs[0].start_ms = 1699999999123;
	strcpy(s->procs[0].comm, "postgres");
	s->procs[0].cgroup = mm_snapshot_name(s, "/system.slice/postgresql.service");
	s->windows[0].faults = 5;
	snap_proc_total(&s->procs[0])->faults = 50;
	snap_proc_total(&s->procs[0])->mmap_lock_wait_ns = 123456789;
	/* 98 faults in [2048, 4096) ns and 2 in [2^20, 2^21): p50 4096, p99 2^21 */
	struct mm_proc_hists th_s = {0}, *th = &th_s;
	th->fault_ns_vma_hist.bucket[11] = 98;
	th->fault_ns_vma_hist.bucket[20] = 2;
	/* mmap_retry faults: all in [2^16, 2^17) ns */
	th->fault_ns_outcome_hist[2].bucket[16] = 7;
	snap_proc_set_total_hists(&s->procs[0], th);
	s->procs[1].pid = 7;
	s->procs[1].exited = true;
	strcpy(s->procs[1].comm, "odd");
	mm_snap_proc_add_window(&s->all_window, &s->procs[0]);
	mm_counts_add(mm_stats_counts(&s->all_total), s->procs[0].total);
	mm_hists_add(mm_stats_hists(&s->all_total), th);
	snap_global(&s->globals[0], "vmstat", "pgfault", 30);
	s->globals[0].window = 3;
	strcpy(s->events[0].name, "exceptions:page_fault_user");
	s->events[0].open = true;
	s->events[0].samples = 100;
	s->events[0].lost = 1;
	s->events[0].window_samples = 10;
	strcpy(s->events[1].name, "lock:contention_begin");
	strcpy(s->events[1].error, "No such file or directory");
	strcpy(s->collectors[0].name, "faults");
	strcpy(s->collectors[1].name, "vmstat");
	s->collectors[1].state = MM_COLLECTOR_FAILED;
	strcpy(s->collectors[1].reason, "no \"vma_lock\" counters");
	strcpy(s->collectors[0].source, "bpf");
	strcpy(s->collectors[1].source, "procfs");
	strcpy(s->collectors[1].source_note, "no \"BTF\"");
	s->windows_stored = 8;
	s->windows_lost = 3;
	s->store_errors = 1;
	s->procs_tracked = 2;
	return s;
}

static char *status(const struct mm_snapshot *s)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_api_status(s, &b);
	CHECK(!mm_buf_failed(&b));
	return b.data;
}

static char *processes(const struct mm_snapshot *s)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_api_processes(s, &b);
	CHECK(!mm_buf_failed(&b));
	return b.data;
}

static void test_validator_rejects_broken_json(void)
{
	/* The checks below rely on valid_json; make sure it can say no. */
	CHECK(valid_json("{\"a\":[1,2.5,true,null,\"x\\u00ff\"]}"));
	CHECK(!valid_json("{\"a\":1,}"));
	CHECK(!valid_json("{\"a\":\"\x01\"}"));
	CHECK(!valid_json("{\"a\":01}"));
	CHECK(!valid_json("{\"a\":1} x"));
	CHECK(!valid_json("[1 2]"));
}

static void test_status_is_valid_json_with_all_sections(void)
{
	struct mm_snapshot *s = snap();
	char *t = status(s);

	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"version\":\"0.1.0\"");
	CHECK_CONTAINS(t, "\"kernel\":\"6.12.0-amd64\"");
	CHECK_CONTAINS(t, "\"started\":1700000000.000");
	CHECK_CONTAINS(t, "\"uptime_seconds\":90.250");
	CHECK_CONTAINS(t, "\"interval_seconds\":10");
	CHECK_CONTAINS(t, "\"window_start\":1700000080.000");
	CHECK_CONTAINS(t, "{\"name\":\"faults\",\"state\":\"running\",\"reason\":\"\","
			  "\"source\":\"bpf\",\"source_note\":\"\"}");
	CHECK_CONTAINS(t, "{\"name\":\"vmstat\",\"state\":\"failed\","
			  "\"reason\":\"no \\\"vma_lock\\\" counters\",\"source\":\"procfs\","
			  "\"source_note\":\"no \\\"BTF\\\"\"}");
	CHECK_CONTAINS(t, "{\"name\":\"exceptions:page_fault_user\",\"open\":true,\"error\":\"\","
			  "\"samples\":100,\"lost\":1,\"window_samples\":10,\"window_lost\":0}");
	CHECK_CONTAINS(t, "\"open\":false,\"error\":\"No such file or directory\"");
	CHECK_CONTAINS(t, "\"globals\":[{\"family\":\"vmstat\",\"name\":\"pgfault\",\"window\":3,"
			  "\"total\":30}]");
	CHECK_CONTAINS(t, "\"windows_stored\":8,\"store_errors\":1,\"windows_lost\":3,\"processes_"
			  "tracked\":2,\"all\":{\"window\":{");
	free(t);
	mm_snapshot_unref(s);
}

static void test_status_of_empty_snapshot_is_valid_json(void)
{
	struct mm_snapshot *s = mm_snapshot_new(0, 0, 0, 0);
	char *t = status(s);
	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"collectors\":[],\"split\":{\"mode\":\"\",");
	CHECK_CONTAINS(t, "\"events\":[],\"globals\":[]");
	free(t);
	t = processes(s);
	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"processes\":[]");
	free(t);
	mm_snapshot_unref(s);
}

static void test_process_keys_equal_field_names(void)
{
	struct mm_snapshot *s = snap();
	char *t = processes(s);
	unsigned objects = 0;

	CHECK(valid_json(t));
	for (const char *p = t; (p = strstr(p, "\"window\":")); p++, objects++)
		check_stats_object(p + strlen("\"window\":"), NULL);
	for (const char *p = t; (p = strstr(p, "\"total\":")); p++, objects++)
		check_stats_object(p + strlen("\"total\":"), NULL);
	CHECK_U64(objects, 2 * (s->nprocs + 1)); /* each process and "all" */

	const char *p0 = strstr(t, "\"pid\":4242,");
	CHECK(p0 != NULL);
	if (p0) {
		CHECK(check_stats_object(strstr(p0, "\"window\":") + 9, "faults") == 5);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8, "faults") == 50);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8, "mmap_lock_wait_ns") ==
		      123456789);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8, "fault_ns_vma_p50") == 4096);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8,
					 "fault_ns_outcome_mmap_retry_p99") == 131072);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8,
					 "fault_ns_outcome_vma_p50") == 0);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8, "fault_ns_vma_p99") ==
		      2097152);
		CHECK(check_stats_object(strstr(p0, "\"total\":") + 8, "fault_ns_mmap_p99") == 0);
	}
	const char *all = strstr(t, "\"all\":{");
	CHECK(all != NULL);
	if (all)
		CHECK(check_stats_object(strstr(all, "\"total\":") + 8, "faults") == 50);
	free(t);
	mm_snapshot_unref(s);
}

/* In bursts, the outcomes of a process no burst sampled are null (unknown), of one that has
 * estimated windows its estimates. */
static void test_outcomes_no_burst_sampled_are_null(void)
{
	struct mm_snapshot *s = snap();
	strcpy(s->split.mode, "bursts");
	snap_proc_total(&s->procs[0])->split_estimated = 2;
	snap_proc_total(&s->procs[0])->faults_vma = 40;
	char *t = processes(s);

	CHECK(valid_json(t));
	const char *p0 = strstr(t, "\"pid\":4242,");
	const char *tot = p0 ? strstr(p0, "\"total\":{") : NULL;
	const char *win = p0 ? strstr(p0, "\"window\":{") : NULL;
	CHECK(tot && win);
	if (tot && win) {
		CHECK(strstr(tot, "\"faults_vma\":40,") == strstr(tot, "\"faults_vma\":"));
		CHECK(strstr(win, "\"faults_vma\":null,") == strstr(win, "\"faults_vma\":"));
		CHECK(strstr(win, "\"faults_mmap_fallback\":null") ==
		      strstr(win, "\"faults_mmap_fallback\":"));
	}
	free(t);
	strcpy(s->split.mode, "continuous");
	t = processes(s);
	CHECK(!strstr(t, ":null"));
	free(t);
	mm_snapshot_unref(s);
}

/* A collector that is off has no keys (unknown is not 0), nor has fault latency while it is off;
 * no key appears twice in an object. */
static void test_keys_of_collectors_not_running_are_left_out(void)
{
	struct mm_snapshot *s = snap();
	s->collectors[0].state = MM_COLLECTOR_DISABLED; /* faults */
	strcpy(s->latency.mode, "off");
	char *t = processes(s);

	CHECK(valid_json(t));
	CHECK(!strstr(t, "\"faults_vma\":"));
	CHECK(!strstr(t, "\"split_err\":"));
	CHECK(!strstr(t, "fault_ns_"));
	CHECK_CONTAINS(t, "\"faults\":5,"); /* mmaplock: not listed, so kept */
	const char *w = strstr(t, "\"window\":{"), *end = w ? strchr(w, '}') : NULL;
	CHECK(w && end);
	for (size_t i = 0; w && end && i < mm_proc_nfields; i++) {
		char key[80];
		snprintf(key, sizeof(key), "\"%s\":", mm_proc_fields[i].name);
		const char *k = strstr(w, key);
		CHECK(!(k && k < end && strstr(k + 1, key) && strstr(k + 1, key) < end));
	}
	free(t);
	mm_snapshot_unref(s);
}

static void test_process_identity_and_times(void)
{
	struct mm_snapshot *s = snap();
	char *t = processes(s);

	CHECK_CONTAINS(t, "{\"window_start\":1700000080.000,\"taken\":1700000090.250,");
	CHECK_CONTAINS(t, "{\"pid\":4242,\"comm\":\"postgres\",\"start_time\":1699999999.123,"
			  "\"cgroup\":\"/system.slice/postgresql.service\",\"exited\":false,");
	CHECK_CONTAINS(t, "{\"pid\":7,\"comm\":\"odd\",\"start_time\":0.000,\"cgroup\":\"\","
			  "\"exited\":true,");
	free(t);
	mm_snapshot_unref(s);
}

static void test_odd_comm_bytes_are_escaped(void)
{
	struct mm_snapshot *s = snap();
	strcpy(s->procs[1].comm, "a\"b\\c\n\x01\xff\tz");
	char *t = processes(s);

	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"comm\":\"a\\\"b\\\\c\\n\\u0001\\u00ff\\tz\"");
	free(t);
	mm_snapshot_unref(s);
}

/* The page's header polls the status alone: it carries every process's open-window sums. */
static void test_status_carries_every_processs_sums(void)
{
	struct mm_snapshot *s = snap();
	char *t = status(s);
	const char *all = strstr(t, "\"all\":{\"window\":");

	CHECK(valid_json(t));
	CHECK(all != NULL);
	if (all)
		CHECK(check_stats_object(all + strlen("\"all\":{\"window\":"), "faults") == 5);
	free(t);
	mm_snapshot_unref(s);
}

static char *processes_of(const struct mm_snapshot *s, int32_t pid, uint64_t start_ms)
{
	struct mm_buf b = MM_BUF_INIT;
	mm_api_processes_of(s, pid, start_ms, &b);
	CHECK(!mm_buf_failed(&b));
	return b.data;
}

/* One process's view asks for its pid (and start time): only that row comes back. */
static void test_processes_of_a_pid_lists_only_that_process(void)
{
	struct mm_snapshot *s = snap();
	char *t = processes_of(s, 7, 0);

	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"pid\":7,");
	CHECK(!strstr(t, "\"pid\":4242,"));
	free(t);
	t = processes_of(s, 4242, 1699999999123);
	CHECK_CONTAINS(t, "\"pid\":4242,");
	CHECK(!strstr(t, "\"pid\":7,"));
	free(t);
	t = processes_of(s, 4242, 1699999999124);
	CHECK(valid_json(t));
	CHECK_CONTAINS(t, "\"processes\":[]");
	free(t);
	mm_snapshot_unref(s);
}

int main(void)
{
	RUN(test_validator_rejects_broken_json);
	RUN(test_status_is_valid_json_with_all_sections);
	RUN(test_status_of_empty_snapshot_is_valid_json);
	RUN(test_process_keys_equal_field_names);
	RUN(test_process_identity_and_times);
	RUN(test_keys_of_collectors_not_running_are_left_out);
	RUN(test_outcomes_no_burst_sampled_are_null);
	RUN(test_odd_comm_bytes_are_escaped);
	RUN(test_status_carries_every_processs_sums);
	RUN(test_processes_of_a_pid_lists_only_that_process);
	return check_summary();
}
