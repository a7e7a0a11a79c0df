/*
 * Tests of daemon/store.c against real SQLite files in a temporary directory: schema creation and
 * migration, refusing newer schemas, process identity under pid reuse, what a window writes (and
 * that a failed window writes nothing), pruning, the history JSON, read-only handles and the
 * errno a caller gets for unusable paths. The database is inspected with plain SQLite calls, so
 * the tests check what a `sqlite3` user would see, not what store.c believes it wrote.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "dbfiles.h"
#include "log.h"
#include "snaps.h"
#include "stats.h"
#include "store.h"

/* Runs @sql on @path (created if needed) with plain SQLite. Returns the SQLite result code. */
static int raw_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open(path, &db);

	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static void make_dir_of(const char *path)
{
	char dir[256];

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdir(dir, 0700);
}

/* Value of counter @f of a test process: distinct per process (@k) and per field. */
static uint64_t field_value(unsigned k, size_t f)
{
	return 1000u * k + f + 1;
}

static void set_proc(struct mm_snap_proc *p, int32_t pid, uint64_t start_ms, const char *comm,
		     const char *cgroup, unsigned k)
{
	p->pid = pid;
	p->start_ms = start_ms;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	p->cgroup = cgroup; /* outlives the snapshot */
	struct mm_proc_counts *win = snap_proc_window(p);
	memset(win, 0, sizeof(*win));
	for (size_t f = 0; k && f < mm_proc_nfields; f++)
		*(uint64_t *)((char *)win + mm_proc_fields[f].offset) = field_value(k, f);
	*snap_proc_total(p) = *win;
}

/* A closed window [start_ms, end_ms) with room for the given counts. */
static struct mm_snapshot *new_window(uint64_t start_ms, uint64_t end_ms, size_t nprocs,
				      size_t nglobals, size_t nevents)
{
	struct mm_snapshot *w = mm_snapshot_new(nprocs, nglobals, nevents, 0);

	if (!w)
		abort();
	w->window_start_ms = start_ms;
	w->window_end_ms = end_ms;
	w->taken_ms = end_ms;
	snprintf(w->kernel, sizeof(w->kernel), "6.18.0-test");
	return w;
}

/* Writes a window with one active process (@pid, started at 1 s, counters of @k). */
static int write_simple(struct mm_store *st, uint64_t start_ms, uint64_t end_ms, int32_t pid,
			unsigned k)
{
	struct mm_snapshot *w = new_window(start_ms, end_ms, 1, 0, 0);
	int r;

	set_proc(&w->procs[0], pid, 1000, "simple", "/", k);
	r = mm_store_write_window(st, w);
	mm_snapshot_unref(w);
	return r;
}

static void test_fresh_open_creates_schema_in_wal_mode(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	char buf[64];

	CHECK(mm_store_schema_version() >= 1);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(st != NULL);
	CHECK_U64(q_int(path, "PRAGMA user_version"), mm_store_schema_version());
	CHECK_STR(q_text(path, "PRAGMA journal_mode", buf, sizeof(buf)), "wal");
	CHECK_U64(q_int(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('windows', "
			      "'processes', 'process_windows', 'global_windows', 'event_windows', "
			      "'process_stats')"),
		  6);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 0);
	mm_store_close(st);
}

static void test_missing_directory_is_created_0750_file_0640(void)
{
	const char *path = new_path(); /* its directory does not exist yet */
	struct mm_store *st = NULL;
	char dir[256];
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	CHECK(stat(dir, &sb) < 0);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
	CHECK((sb.st_mode & 0777 & ~0750) == 0);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777 & ~0640) == 0);
	mm_store_close(st);
}

static void test_view_columns_are_head_then_every_counter(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	static const char *const head[] = {"ts_start",	 "ts_end", "pid",
					   "start_time", "comm",   "cgroup"};
	char sql[256], buf[64];

	CHECK(mm_store_open(path, &st) == 0);
	mm_store_close(st);
	CHECK_U64(q_int(path, "SELECT count(*) FROM pragma_table_info('process_stats')"),
		  6 + mm_proc_nfields);
	for (int i = 0; i < 6; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT name FROM pragma_table_info('process_stats') WHERE cid = %d", i);
		CHECK_STR(q_text(path, sql, buf, sizeof(buf)), head[i]);
	}
	for (size_t f = 0; f < mm_proc_nfields; f++) {
		snprintf(sql, sizeof(sql),
			 "SELECT name FROM pragma_table_info('process_stats') WHERE cid = %zu",
			 6 + f);
		CHECK_STR(q_text(path, sql, buf, sizeof(buf)), mm_proc_fields[f].name);
	}
}

/* cgroup_stats (schema/005) is process_stats summed per cgroup per window: three processes in two
 * cgroups over two windows give two rows per window, each the sum of its processes' columns. */
static void test_cgroup_stats_sums_every_counter_per_cgroup_and_window(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	static const char *const head[] = {"ts_start", "ts_end", "kernel", "cgroup", "processes"};
	char sql[512], buf[64];

	CHECK(mm_store_open(path, &st) == 0);
	for (unsigned win = 0; win < 2; win++) {
		struct mm_snapshot *w =
			new_window(10000 + 10000 * win, 20000 + 10000 * win, 3, 0, 0);
		set_proc(&w->procs[0], 100, 1000, "a", "/system.slice/a.service", 1);
		set_proc(&w->procs[1], 101, 1000, "a2", "/system.slice/a.service", 2);
		set_proc(&w->procs[2], 200, 1000, "b", "/system.slice/b.service", 3 + win);
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	mm_store_close(st);

	CHECK_U64(q_int(path, "SELECT count(*) FROM pragma_table_info('cgroup_stats')"),
		  5 + mm_proc_nfields);
	for (int i = 0; i < 5; i++) {
		snprintf(sql, sizeof(sql),
			 "SELECT name FROM pragma_table_info('cgroup_stats') WHERE cid = %d", i);
		CHECK_STR(q_text(path, sql, buf, sizeof(buf)), head[i]);
	}
	CHECK_U64(q_int(path, "SELECT count(*) FROM cgroup_stats"), 4);
	CHECK_U64(q_int(path, "SELECT processes FROM cgroup_stats WHERE ts_start = 10 AND "
			      "cgroup = '/system.slice/a.service'"),
		  2);
	CHECK_STR(q_text(path, "SELECT kernel FROM cgroup_stats LIMIT 1", buf, sizeof(buf)),
		  "6.18.0-test");
	for (size_t f = 0; f < mm_proc_nfields; f++) {
		const char *c = mm_proc_fields[f].name;
		snprintf(sql, sizeof(sql),
			 "SELECT name FROM pragma_table_info('cgroup_stats') WHERE cid = %zu",
			 5 + f);
		CHECK_STR(q_text(path, sql, buf, sizeof(buf)), c);
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM cgroup_stats WHERE ts_start = 10 AND "
			 "cgroup = '/system.slice/a.service'",
			 c);
		CHECK_U64(q_int(path, sql), field_value(1, f) + field_value(2, f));
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM cgroup_stats WHERE ts_start = 20 AND "
			 "cgroup = '/system.slice/b.service'",
			 c);
		CHECK_U64(q_int(path, sql), field_value(4, f));
	}
}

/* mm_store_fault_rows(): per process, per cgroup and overall sums of the windows in range, with
 * the pid, cgroup (the cgroup and those below it, not a sibling sharing a prefix) and comm
 * filters of `mmlockd report`. */
static void test_fault_rows_sum_per_process_cgroup_and_all_with_filters(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_fault_row *rows = NULL;
	size_t n = 0;
	size_t fmin = 0;

	for (size_t f = 0; f < mm_proc_nfields; f++)
		if (!strcmp(mm_proc_fields[f].name, "minflt"))
			fmin = f;
	CHECK(mm_store_open(path, &st) == 0);
	for (unsigned win = 0; win < 3; win++) {
		struct mm_snapshot *w = new_window(10000 * (win + 1), 10000 * (win + 2), 3, 0, 0);
		set_proc(&w->procs[0], 100, 1000, win == 2 ? "a-exec" : "a", "/a", 1);
		set_proc(&w->procs[1], 101, 1000, "a2", "/a/sub", 2);
		set_proc(&w->procs[2], 200, 1000, "b", "/ab", 3);
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	mm_store_close(st);
	CHECK(mm_store_open_readonly(path, &st) == 0);

	struct mm_fault_query q = {.since_s = 0, .until_s = 1e12, .pid = -1};
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 3);
	for (size_t i = 0; i < n; i++) {
		unsigned k = rows[i].pid == 100 ? 1 : rows[i].pid == 101 ? 2 : 3;
		CHECK_U64(rows[i].sum.minflt, 3 * field_value(k, fmin));
		CHECK_U64(rows[i].processes, 1);
		if (k == 1)
			CHECK_STR(rows[i].comm, "a-exec"); /* the latest window's name */
	}
	free(rows);

	/* Windows [20, 30) and [30, 40) only; /a and below, not /ab. */
	q = (struct mm_fault_query){.since_s = 20.5,
				    .until_s = 35,
				    .pid = -1,
				    .cgroup = "/a",
				    .group = MM_FAULT_BY_CGROUP};
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 2);
	for (size_t i = 0; i < n; i++)
		CHECK(!strcmp(rows[i].cgroup, "/a") || !strcmp(rows[i].cgroup, "/a/sub"));
	free(rows);

	q.group = MM_FAULT_ALL;
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 1);
	CHECK_U64(rows[0].processes, 2);
	CHECK_U64(rows[0].sum.minflt, 2 * (field_value(1, fmin) + field_value(2, fmin)));
	free(rows);

	q = (struct mm_fault_query){.since_s = 0, .until_s = 1e12, .pid = 100, .comm = "a"};
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 1);
	CHECK_U64(rows[0].sum.minflt, 2 * field_value(1, fmin));
	free(rows);

	/* Nothing matches: no per-process row, one zero row overall. */
	q = (struct mm_fault_query){.since_s = 0, .until_s = 1e12, .pid = -1, .comm = "nosuch"};
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 0);
	free(rows);
	q.group = MM_FAULT_ALL;
	CHECK(mm_store_fault_rows(st, &q, &rows, &n) == 0);
	CHECK_U64(n, 1);
	CHECK_U64(rows[0].processes, 0);
	free(rows);

	struct mm_store_range rg;
	CHECK(mm_store_range(st, 15, 35, &rg) == 0);
	CHECK_U64(rg.windows, 3);
	CHECK(rg.first_s == 10 && rg.last_s == 40);
	CHECK_STR(rg.kernels, "6.18.0-test");
	mm_store_close(st);
}

/* Writes the window [start_ms, end_ms) of one process whose collectors ran as @spec says:
 * "name:source:state" items separated by spaces, state R(unning), D(isabled) or F(ailed). */
static int write_sourced(struct mm_store *st, uint64_t start_ms, uint64_t end_ms, const char *spec)
{
	char buf[256], *save = NULL;
	size_t n = 0;

	for (const char *p = spec; *p; p++)
		n += *p == ' ';
	struct mm_snapshot *w = mm_snapshot_new(1, 0, 0, spec[0] ? n + 1 : 0);
	if (!w)
		abort();
	w->window_start_ms = start_ms;
	w->window_end_ms = w->taken_ms = end_ms;
	set_proc(&w->procs[0], 42, 1000, "w", "/", 1);
	snprintf(buf, sizeof(buf), "%s", spec);
	n = 0;
	for (char *item = strtok_r(buf, " ", &save); item; item = strtok_r(NULL, " ", &save)) {
		struct mm_snap_collector *c = &w->collectors[n++];
		char state = 'R';
		sscanf(item, "%31[^:]:%15[^:]:%c", c->name, c->source, &state);
		c->state = state == 'R'	  ? MM_COLLECTOR_RUNNING
			   : state == 'D' ? MM_COLLECTOR_DISABLED
					  : MM_COLLECTOR_FAILED;
	}
	int r = mm_store_write_window(st, w);
	mm_snapshot_unref(w);
	return r;
}

/* windows.source (schema/007) is the sources of the running collectors on events, '+'-joined;
 * the range gives the distinct ones of its windows. */
static void test_window_source_is_what_its_event_collectors_ran_on(void)
{
	/* The collectors of a window, the source it gets. */
	static const char *const cases[][2] = {
		{"totals:procfs:R fallbacks:bpf:R faults:bpf:R vmstat:procfs:R", "bpf"},
		{"totals:procfs:R fallbacks:perf:R contention:perf:D mmaplock:bpf:F", "perf"},
		{"fallbacks:perf:R contention:bpf:R", "bpf+perf"},
		{"totals:procfs:R vmstat:procfs:R fallbacks:perf:D", ""},
		{"", ""},
	};
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_store_range rg;
	char sql[128], buf[64];

	CHECK(mm_store_open(path, &st) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(write_sourced(st, 10000 * (i + 1), 10000 * (i + 2), cases[i][0]) == 0);
		snprintf(sql, sizeof(sql), "SELECT source FROM windows WHERE ts_start = %zu",
			 10 * (i + 1));
		CHECK_STR(q_text(path, sql, buf, sizeof(buf)), cases[i][1]);
		snprintf(sql, sizeof(sql),
			 "SELECT source IS NULL FROM windows WHERE ts_start = %zu", 10 * (i + 1));
		CHECK_U64(q_int(path, sql), 0);
	}
	CHECK(mm_store_range(st, 0, 1e12, &rg) == 0);
	CHECK_STR(rg.sources, "bpf,bpf+perf,perf");
	CHECK(mm_store_range(st, 10, 20, &rg) == 0);
	CHECK_STR(rg.sources, "bpf");
	CHECK(mm_store_range(st, 40, 60, &rg) == 0); /* windows on /proc alone */
	CHECK_U64(rg.windows, 2);
	CHECK_STR(rg.sources, "");
	mm_store_close(st);
}

/* The comparison of ranges [since, until) of the database at @path as a malloc'ed string, each
 * side's source as the range gives it (what `mmlockd report --compare` does). */
static char *compare_ranges(const char *path, double a_since, double a_until, double b_since,
			    double b_until)
{
	struct mm_fault_side side[2] = {{.label = "A", .lock_contended = -1},
					{.label = "B", .lock_contended = -1}};
	const double range[2][2] = {{a_since, a_until}, {b_since, b_until}};
	struct mm_store *st = NULL;
	char *text = NULL;
	size_t len = 0;

	CHECK(mm_store_open_readonly(path, &st) == 0);
	for (int k = 0; st && k < 2; k++) {
		struct mm_store_range rg;
		CHECK(mm_store_range(st, range[k][0], range[k][1], &rg) == 0);
		snprintf(side[k].source, sizeof(side[k].source), "%s", rg.sources);
	}
	mm_store_close(st);
	FILE *f = open_memstream(&text, &len);
	CHECK(mm_fault_print_compare(f, &side[0], &side[1], true, MM_FAULT_TABLE, NULL, 0) == 0);
	fclose(f);
	return text;
}

/* A database of schema 6 migrates to 007 with its windows' source NULL (unknown); windows stored
 * after it have theirs, and comparing ranges of different sources, or of an unknown one, says so
 * above the grid, while ranges of one source compare without a note. */
static void test_pre_007_windows_have_an_unknown_source_and_compare_notes_it(void)
{
	extern const char *const mm_schema_sql[];
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_store_range rg;

	make_dir_of(path);
	for (unsigned k = 0; k < 6; k++)
		CHECK(raw_exec(path, mm_schema_sql[k]) == SQLITE_OK);
	CHECK(raw_exec(path,
		       "PRAGMA user_version = 6;"
		       "INSERT INTO windows (ts_start, ts_end, kernel) VALUES (0, 10, '6.12');") ==
	      SQLITE_OK);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK_U64(q_int(path, "PRAGMA user_version"), mm_store_schema_version());
	CHECK_U64(q_int(path, "SELECT source FROM windows WHERE ts_start = 0"), -2); /* NULL */
	CHECK(write_sourced(st, 10000, 20000, "totals:procfs:R fallbacks:bpf:R") == 0);
	CHECK(write_sourced(st, 20000, 30000, "totals:procfs:R fallbacks:bpf:R") == 0);
	CHECK(write_sourced(st, 30000, 40000, "totals:procfs:R fallbacks:perf:R") == 0);
	CHECK(mm_store_range(st, 0, 20, &rg) == 0);
	CHECK_STR(rg.sources, "bpf,unknown");
	CHECK(rg.covered_s == 20); /* what rates are per: the windows' lengths summed */
	CHECK(mm_store_range(st, 0, 10, &rg) == 0);
	CHECK_STR(rg.sources, "unknown");
	mm_store_close(st);

	char *text = compare_ranges(path, 10, 20, 20, 30); /* bpf and bpf */
	CHECK(text && !strstr(text, "ran on"));
	free(text);
	text = compare_ranges(path, 10, 30, 30, 40);
	CHECK_CONTAINS(text, "# A ran on the bpf source, B on perf: the fault split and fallbacks "
			     "are found by different methods (docs/sources.md)\n");
	free(text);
	text = compare_ranges(path, 0, 10, 30, 40);
	CHECK_CONTAINS(text, "# A ran on the unknown source, B on perf ('unknown': stored before "
			     "mmlockd recorded the source)");
	free(text);
}

static void test_reopen_applies_nothing_and_keeps_data(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_simple(st, 1000, 11000, 42, 1) == 0);
	mm_store_close(st);
	/* A migration re-run would fail on CREATE TABLE or empty the tables. */
	CHECK(raw_exec(path, "CREATE TABLE marker (x)") == SQLITE_OK);
	st = NULL;
	CHECK(mm_store_open(path, &st) == 0);
	CHECK_U64(q_int(path, "PRAGMA user_version"), mm_store_schema_version());
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats WHERE pid = 42"), 1);
	CHECK(write_simple(st, 11000, 21000, 42, 2) == 0);
	mm_store_close(st);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats WHERE pid = 42"), 2);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes"), 1);
}

static void test_newer_schema_version_is_refused_untouched(void)
{
	const char *path = new_path();
	struct mm_store *st = (struct mm_store *)0x1;
	char sql[64], buf[64];

	make_dir_of(path);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", mm_store_schema_version() + 1);
	CHECK(raw_exec(path, sql) == SQLITE_OK);
	CHECK(mm_store_open(path, &st) < 0);
	CHECK(st == (struct mm_store *)0x1); /* untouched on failure */
	CHECK_U64(q_int(path, "PRAGMA user_version"), mm_store_schema_version() + 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM sqlite_schema"), 0);
	CHECK_STR(q_text(path, "PRAGMA journal_mode", buf, sizeof(buf)), "delete");
	CHECK(mm_store_open_readonly(path, &st) < 0);
}

static void test_another_applications_database_is_refused_untouched(void)
{
	const char *path = new_path();
	struct mm_store *st = (struct mm_store *)0x1;
	char buf[64];

	make_dir_of(path);
	CHECK(raw_exec(path, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES ('keep');") ==
	      SQLITE_OK);
	CHECK_U64(q_int(path, "PRAGMA user_version"), 0);
	CHECK(mm_store_open(path, &st) == -EBADMSG);
	CHECK(st == (struct mm_store *)0x1);
	CHECK(mm_store_open_readonly(path, &st) == -EBADMSG);
	/* Nothing of mmlockd's was added, not even WAL mode. */
	CHECK_U64(q_int(path, "PRAGMA user_version"), 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM sqlite_master"), 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM notes"), 1);
	CHECK_STR(q_text(path, "PRAGMA journal_mode", buf, sizeof(buf)), "delete");

	/* Another application's id is refused whatever the file holds. */
	path = new_path();
	make_dir_of(path);
	CHECK(raw_exec(path, "PRAGMA application_id = 1234") == SQLITE_OK);
	CHECK(mm_store_open(path, &st) == -EBADMSG);
	CHECK_U64(q_int(path, "PRAGMA application_id"), 1234);
	CHECK_U64(q_int(path, "SELECT count(*) FROM sqlite_master"), 0);
}

/* The whole file at @path into a malloc'd buffer (*ret_len bytes), or NULL. */
static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (data = malloc((size_t)n)) && fread(data, 1, (size_t)n, f) != (size_t)n) {
		free(data);
		data = NULL;
	}
	*ret_len = data ? (size_t)n : 0;
	fclose(f);
	return data;
}

/* Another application's file whose tables have mmlockd's names and whose user_version looks like
 * an earlier schema: refused, and not a byte of it changed (it was once migrated, switched to WAL
 * and given three tables before a later check refused it). */
static void test_a_look_alike_foreign_file_is_refused_byte_for_byte_untouched(void)
{
	const char *path = new_path();
	struct mm_store *st = (struct mm_store *)0x1;
	char wal[300];
	size_t n0 = 0, n1 = 0;

	make_dir_of(path);
	CHECK(raw_exec(path, "CREATE TABLE windows (id INTEGER PRIMARY KEY, note TEXT);"
			     "CREATE TABLE processes (id INTEGER PRIMARY KEY, name TEXT);"
			     "CREATE TABLE process_windows (a INTEGER, b INTEGER);"
			     "INSERT INTO windows (note) VALUES ('keep');"
			     "PRAGMA user_version = 2;") == SQLITE_OK);
	char *before = slurp(path, &n0);
	CHECK(before != NULL);
	CHECK(mm_store_open(path, &st) == -EBADMSG);
	CHECK(st == (struct mm_store *)0x1);
	CHECK(mm_store_open_readonly(path, &st) < 0);
	char *after = slurp(path, &n1);
	CHECK(after != NULL);
	CHECK_U64(n1, n0);
	CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	CHECK(access(wal, F_OK) < 0);
	free(before);
	free(after);

	/* The same tables as an earlier mmlockd's schema 2 are still adopted. */
	path = new_path();
	make_dir_of(path);
	for (unsigned k = 0; k < 2; k++) {
		extern const char *const mm_schema_sql[];
		CHECK(raw_exec(path, mm_schema_sql[k]) == SQLITE_OK);
	}
	CHECK(raw_exec(path, "PRAGMA user_version = 2") == SQLITE_OK);
	CHECK(mm_store_open(path, &st) == 0);
	if (st != (struct mm_store *)0x1)
		mm_store_close(st);
	CHECK_U64(q_int(path, "PRAGMA user_version"), mm_store_schema_version());
}

static void test_new_database_is_stamped_with_mmlockds_application_id(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;

	CHECK(mm_store_open(path, &st) == 0);
	mm_store_close(st);
	CHECK_U64(q_int(path, "PRAGMA application_id"), 0x6d6d6c6b);
	CHECK(mm_store_open(path, &st) == 0);
	mm_store_close(st);
}

static void test_earlier_mmlockd_database_is_adopted_and_stamped(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;

	/* An earlier mmlockd wrote no application_id: the same database with the id cleared. */
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_simple(st, 1000, 2000, 7, 1) == 0);
	mm_store_close(st);
	CHECK(raw_exec(path, "PRAGMA application_id = 0") == SQLITE_OK);
	CHECK(mm_store_open_readonly(path, &st) == 0); /* read as it is, not written */
	mm_store_close(st);
	CHECK_U64(q_int(path, "PRAGMA application_id"), 0);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_simple(st, 2000, 3000, 7, 1) == 0);
	mm_store_close(st);
	CHECK_U64(q_int(path, "PRAGMA application_id"), 0x6d6d6c6b);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats"), 2);
}

static void test_not_a_database_is_refused(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	FILE *f;

	make_dir_of(path);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("this is not an SQLite database, but it is long enough to have a header....\n", f);
	fclose(f);
	CHECK(mm_store_open(path, &st) == -EBADMSG);
	CHECK(st == NULL);
}

/* Checks every counter of the process_stats row of (pid, start_time). */
static void check_row(const char *path, int pid, const char *start_time, const char *ts_start,
		      unsigned k)
{
	char sql[512];

	for (size_t f = 0; f < mm_proc_nfields; f++) {
		snprintf(sql, sizeof(sql),
			 "SELECT %s FROM process_stats WHERE pid = %d AND start_time = %s "
			 "AND ts_start = %s",
			 mm_proc_fields[f].name, pid, start_time, ts_start);
		CHECK_U64(q_int(path, sql), field_value(k, f));
	}
}

static void test_pid_reuse_gives_two_processes_with_own_values(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(100250, 110250, 2, 0, 0);
	char buf[64];

	/* pid 500 exited and was reused within the window. */
	set_proc(&w->procs[0], 500, 50123, "old", "/a", 1);
	set_proc(&w->procs[1], 500, 105000, "new", "/b", 2);
	w->procs[0].exited = true;
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);
	mm_store_close(st);

	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats WHERE pid = 500"), 2);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid = 500"), 2);
	CHECK_STR(q_text(path, "SELECT comm FROM process_stats WHERE start_time = 50.123", buf,
			 sizeof(buf)),
		  "old");
	CHECK_STR(q_text(path, "SELECT cgroup FROM process_stats WHERE start_time = 105", buf,
			 sizeof(buf)),
		  "/b");
	CHECK_STR(q_text(path,
			 "SELECT printf('%.3f-%.3f', ts_start, ts_end) FROM process_stats "
			 "LIMIT 1",
			 buf, sizeof(buf)),
		  "100.250-110.250");
	check_row(path, 500, "50.123", "100.25", 1);
	check_row(path, 500, "105.0", "100.25", 2);
}

static void test_comm_is_per_window_and_process_keeps_identity(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(0, 10000, 1, 0, 0);
	char buf[64];

	CHECK(mm_store_open(path, &st) == 0);
	set_proc(&w->procs[0], 77, 5000, "sh", "/old", 1);
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);
	w = new_window(10000, 20000, 1, 0, 0);
	set_proc(&w->procs[0], 77, 5000, "python3", "/new", 1); /* exec'd, moved cgroup */
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);
	mm_store_close(st);

	CHECK_U64(q_int(path, "SELECT count(*) FROM processes"), 1);
	CHECK_STR(
		q_text(path, "SELECT comm FROM process_stats WHERE ts_start = 0", buf, sizeof(buf)),
		"sh");
	CHECK_STR(q_text(path, "SELECT comm FROM process_stats WHERE ts_start = 10", buf,
			 sizeof(buf)),
		  "python3");
	CHECK_STR(q_text(path, "SELECT comm || ' ' || cgroup FROM processes", buf, sizeof(buf)),
		  "python3 /new");
}

static void test_idle_processes_are_not_written(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(0, 10000, 3, 0, 0);

	set_proc(&w->procs[0], 1, 1000, "busy", "", 1);
	set_proc(&w->procs[1], 2, 1000, "idle", "", 0);
	set_proc(&w->procs[2], 3, 1000, "onefault", "", 0);
	snap_proc_total(&w->procs[1])->faults = 99; /* active before, idle in this window */
	snap_proc_window(&w->procs[2])->faults = 1;
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);
	mm_store_close(st);

	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid = 2"), 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats"), 2);
	CHECK_U64(q_int(path, "SELECT faults + mmap_lock_read FROM process_stats WHERE pid = 3"),
		  1);
}

static void test_globals_and_events_land_in_their_tables(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(0, 10000, 0, 2, 2);

	snprintf(w->globals[0].family, sizeof(w->globals[0].family), "vmstat");
	snprintf(w->globals[0].name, sizeof(w->globals[0].name), "pgfault");
	w->globals[0].window = 12345;
	w->globals[0].total = 99999;
	snprintf(w->globals[1].family, sizeof(w->globals[1].family), "faults");
	snprintf(w->globals[1].name, sizeof(w->globals[1].name), "unmatched");
	w->globals[1].window = 0;
	snprintf(w->events[0].name, sizeof(w->events[0].name), "exceptions:page_fault_user");
	w->events[0].window_samples = 500;
	w->events[0].window_lost = 3;
	w->events[0].samples = 9000;
	snprintf(w->events[1].name, sizeof(w->events[1].name), "mmap_lock:mmap_lock_released");
	w->events[1].window_samples = 7;

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);
	mm_store_close(st);

	CHECK_U64(q_int(path, "SELECT value FROM global_windows WHERE family = 'vmstat' AND "
			      "name = 'pgfault'"),
		  12345);
	CHECK_U64(q_int(path, "SELECT count(*) FROM global_windows"), 2);
	CHECK_U64(q_int(path, "SELECT samples * 1000 + lost FROM event_windows WHERE "
			      "event = 'exceptions:page_fault_user'"),
		  500003);
	CHECK_U64(q_int(path, "SELECT samples FROM event_windows WHERE event = "
			      "'mmap_lock:mmap_lock_released'"),
		  7);
	CHECK_U64(q_int(path, "SELECT count(DISTINCT window_id) FROM event_windows"), 1);
}

static void test_failed_window_keeps_nothing_of_it(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(10000, 20000, 1, 2, 0);

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_simple(st, 0, 10000, 1, 1) == 0);
	/* Two globals with the same family and name violate the primary key, after the window
	 * and the process rows were inserted. */
	set_proc(&w->procs[0], 2, 1000, "victim", "", 1);
	snprintf(w->globals[0].family, sizeof(w->globals[0].family), "dup");
	snprintf(w->globals[0].name, sizeof(w->globals[0].name), "x");
	w->globals[1] = w->globals[0];
	CHECK(mm_store_write_window(st, w) < 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid = 2"), 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM global_windows"), 0);
	/* The handle is still usable. */
	w->globals[1].name[0] = 'y';
	CHECK(mm_store_write_window(st, w) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 2);
	mm_snapshot_unref(w);
	mm_store_close(st);
}

static void test_same_process_twice_in_a_window_is_summed(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(10000, 20000, 2, 0, 0);

	set_proc(&w->procs[0], 7, 1000, "early", "", 3);
	set_proc(&w->procs[1], 7, 1000, "late", "", 4);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_write_window(st, w) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_stats WHERE pid = 7"), 1);
	CHECK_U64(q_int(path, "SELECT faults FROM process_stats WHERE pid = 7"), 3001 + 4001);
	mm_snapshot_unref(w);
	mm_store_close(st);
}

static void test_open_window_is_refused(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w = new_window(10000, 0, 1, 0, 0);

	set_proc(&w->procs[0], 2, 1000, "x", "", 1);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_write_window(st, w) == -EINVAL);
	mm_snapshot_unref(w);
	mm_store_close(st);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 0);
}

static void test_prune_deletes_old_windows_and_orphans_only(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_snapshot *w;

	CHECK(mm_store_open(path, &st) == 0);
	/* pid 10 only in old windows, pid 11 in old and new, pid 12 only new. */
	for (unsigned i = 0; i < 3; i++) {
		w = new_window(i * 10000, (i + 1) * 10000, 2, 1, 1);
		set_proc(&w->procs[0], i < 2 ? 10 : 12, 1000, "p", "", 1);
		set_proc(&w->procs[1], 11, 1000, "q", "", 2);
		snprintf(w->globals[0].family, sizeof(w->globals[0].family), "g");
		snprintf(w->globals[0].name, sizeof(w->globals[0].name), "n");
		snprintf(w->events[0].name, sizeof(w->events[0].name), "a:b");
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	/* Retention 1 s, now 6 s: nothing ended before 5 s. */
	CHECK(mm_store_prune(st, 6000, 1000) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 3);
	/* Windows end at 10, 20, 30 s: "before 20 s" removes only the first (strictly before). */
	CHECK(mm_store_prune(st, 21000, 1000) == 1);
	CHECK(mm_store_prune(st, 21001, 1000) == 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 1);
	CHECK_U64(q_int(path, "SELECT min(ts_end) FROM windows"), 30);
	CHECK_U64(q_int(path, "SELECT count(*) FROM process_windows"), 2);
	CHECK_U64(q_int(path, "SELECT count(*) FROM global_windows"), 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM event_windows"), 1);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid = 10"), 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid IN (11, 12)"), 2);
	/* No retention: everything but the newest window, and its processes stay. */
	CHECK(mm_store_prune(st, UINT64_C(1) << 50, 0) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes WHERE pid IN (11, 12)"), 2);
	mm_store_close(st);
}

#define DAY_MS UINT64_C(86400000)

/* Writes one window of a process ending at each @ends_ms[0..n). */
static void write_ends(struct mm_store *st, const uint64_t *ends_ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK(write_simple(st, ends_ms[i] - 10000, ends_ms[i], 100 + (int32_t)i, 1) == 0);
}

/* Windows that end on days 1..10; a prune with a clock a year ahead counts back from day 10 (as
 * a prune at day 10 would), one with a clock 100 days behind deletes nothing, and no retention
 * keeps the newest window. */
static void test_prune_with_a_wild_clock_keeps_the_history(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	uint64_t ends[10];

	for (unsigned d = 0; d < 10; d++)
		ends[d] = (d + 1) * DAY_MS;
	CHECK(mm_store_open(path, &st) == 0);
	write_ends(st, ends, 10);
	CHECK(mm_store_prune(st, 375 * DAY_MS, 7 * DAY_MS) == 2);
	CHECK_U64(q_int(path, "SELECT min(ts_end) FROM windows"), 3 * DAY_MS / 1000);
	CHECK(mm_store_prune(st, 1 * DAY_MS, 7 * DAY_MS) == 0);
	CHECK(mm_store_prune(st, 0, 7 * DAY_MS) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 8);
	CHECK(mm_store_prune(st, 11 * DAY_MS, 0) == 7);
	CHECK_U64(q_int(path, "SELECT max(ts_end) FROM windows"), 10 * DAY_MS / 1000);
	CHECK_U64(q_int(path, "SELECT count(*) FROM processes"), 1);
	mm_store_close(st);
}

/* A daemon whose clock was 30 days ahead stored days 40 and 41, then the clock was set back and it
 * wrote day 11: the prune at day 11 keeps the window just written and the ones ahead of it. One
 * whose clock was 30 days behind stored day 1 before the step: stamped older than the retention,
 * that one goes, the one written at day 31 after the step stays. */
static void test_prune_keeps_the_window_just_written_after_a_clock_step(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	const uint64_t ahead[] = {40 * DAY_MS, 41 * DAY_MS, 11 * DAY_MS};
	const uint64_t behind[] = {1 * DAY_MS, 31 * DAY_MS};

	CHECK(mm_store_open(path, &st) == 0);
	write_ends(st, ahead, 3);
	CHECK(mm_store_prune(st, 11 * DAY_MS, 7 * DAY_MS) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 3);
	mm_store_close(st);

	path = new_path();
	CHECK(mm_store_open(path, &st) == 0);
	write_ends(st, behind, 2);
	CHECK(mm_store_prune(st, 31 * DAY_MS, 7 * DAY_MS) == 1);
	CHECK_U64(q_int(path, "SELECT ts_end FROM windows"), 31 * DAY_MS / 1000);
	mm_store_close(st);
}

/* Evaluates a JSON expression with SQLite's JSON functions on @json, as text. */
static const char *json_q(const char *json, const char *expr, char *buf, size_t size)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char sql[1024];

	buf[0] = '\0';
	snprintf(sql, sizeof(sql), "SELECT %s", expr);
	if (sqlite3_open(":memory:", &db) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(s, 1, json, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		snprintf(buf, size, "%s", (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(db);
	return buf;
}

static double hist_next; /* where a history page would go on */

/* mm_store_history_json(@st, @pid, @since, @until, @limit) read through json_q(@expr), or
 * "(failed)". */
static const char *history_q(struct mm_store *st, int pid, double since, double until,
			     unsigned limit, const char *expr)
{
	static char buf[256];
	struct mm_buf out = MM_BUF_INIT;
	double next;

	if (mm_store_history_json(st, pid, since, until, limit, 0, &out, &next) < 0)
		snprintf(buf, sizeof(buf), "(failed)");
	else
		json_q(out.data, expr, buf, sizeof(buf));
	mm_buf_free(&out);
	return buf;
}

/* The values of SQL expression @expr over the array's elements (each is `value`),
 * comma-separated. */
#define EACH(expr) "(SELECT group_concat(" expr ") FROM json_each(?1))"

/* Three windows [0,10) [10,20) [20,30) s; pid 1 in all, pid 2 (two incarnations) in the last. */
static struct mm_store *history_fixture(const char *path)
{
	struct mm_store *st = NULL;

	if (mm_store_open(path, &st) < 0)
		return NULL;
	for (unsigned i = 0; i < 3; i++) {
		struct mm_snapshot *w = new_window(i * 10000, (i + 1) * 10000 - (i == 2), 3, 0, 0);

		set_proc(&w->procs[0], 1, 1, "init", "/init.scope", i + 1);
		set_proc(&w->procs[1], 2, 1234567, "a\"b\\c", "/x", i == 2 ? 7 : 0);
		set_proc(&w->procs[2], 2, 2000000, "reused", "/x", i == 2 ? 8 : 0);
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	return st;
}

static void test_history_json_filters_by_pid_and_time(void)
{
	const char *path = new_path();
	struct mm_store *st = history_fixture(path);
	struct mm_buf out = MM_BUF_INIT;
	char buf[256];

	CHECK(st != NULL);
	if (!st)
		return;

	/* Everything, oldest first. */
	CHECK(mm_store_history_json(st, -1, 0, 1e12, 100, 0, &out, &hist_next) == 0);
	CHECK_STR(json_q(out.data, "json_valid(?1)", buf, sizeof(buf)), "1");
	CHECK_STR(json_q(out.data, "json_array_length(?1)", buf, sizeof(buf)), "5");
	CHECK_STR(json_q(out.data, "json_extract(?1, '$[0].ts_start')", buf, sizeof(buf)), "0.0");
	CHECK_STR(json_q(out.data, "json_extract(?1, '$[4].ts_start')", buf, sizeof(buf)), "20.0");
	CHECK_CONTAINS(out.data, "\"ts_end\":29.999,");
	CHECK_CONTAINS(out.data, "\"start_time\":1234.567,");
	CHECK_CONTAINS(out.data, "\"comm\":\"a\\\"b\\\\c\"");

	/* pid 1 only: three rows with its counters. */
	CHECK_STR(history_q(st, 1, 0, 1e12, 100, "json_array_length(?1)"), "3");
	CHECK_STR(history_q(st, 1, 0, 1e12, 100,
			    EACH("json_extract(value, '$.pid') || ':' || json_extract(value, "
				 "'$.faults')")),
		  "1:1001,1:2001,1:3001");

	/* Both incarnations of pid 2. */
	CHECK_STR(history_q(st, 2, 0, 1e12, 100,
			    "(SELECT group_concat(json_extract(value, '$.comm') || '@' || "
			    "json_extract(value, '$.start_time'), ' ') FROM json_each(?1))"),
		  "a\"b\\c@1234.567 reused@2000.0");

	/* Time: ts_end > since and ts_start < until, both strict. */
	CHECK_STR(history_q(st, 1, 10, 20, 100, EACH("json_extract(value, '$.ts_start')")), "10.0");
	CHECK_STR(history_q(st, 1, 9.5, 20.5, 100, "json_array_length(?1)"), "3");

	/* Limit keeps the oldest. */
	CHECK_STR(history_q(st, -1, 0, 1e12, 2, EACH("json_extract(value, '$.ts_start')")),
		  "0.0,10.0");

	/* No rows: an empty array, appended after what was there. */
	mm_buf_reset(&out);
	mm_buf_puts(&out, "x=");
	CHECK(mm_store_history_json(st, 3, 0, 1e12, 100, 0, &out, &hist_next) == 0);
	CHECK_STR(out.data, "x=[]");
	mm_buf_reset(&out);
	CHECK(mm_store_history_json(st, -1, 0, 1e12, 0, 0, &out, &hist_next) == 0);
	CHECK_STR(out.data, "[]");

	mm_buf_free(&out);
	mm_store_close(st);
}

/* The web page's series: windows summed per bucket of step seconds (by their end), with zeros for
 * windows where the filtered processes did nothing, and filters by process identity and cgroup. */
/* A page bounded in bytes ends at a window boundary, and the next page (since= its last
 * window's end) goes on from there: nothing skipped, nothing twice. */
static void test_history_pages_end_on_window_boundaries(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_buf out = MM_BUF_INIT;
	double since = 0, next;
	unsigned pages = 0, rows = 0;

	CHECK(mm_store_open(path, &st) == 0);
	if (!st)
		return;
	for (int k = 0; k < 10; k++) {
		struct mm_snapshot *w = new_window(1000 * (k + 1), 1000 * (k + 2), 3, 0, 0);
		for (int p = 0; p < 3; p++)
			set_proc(&w->procs[p], 10 + p, 1000, "paged", "/", 1);
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	for (;;) {
		mm_buf_reset(&out);
		CHECK(mm_store_history_json(st, -1, since, 1e12, 1000, 2000, &out, &next) == 0);
		pages++;
		for (const char *p = out.data; (p = strstr(p, "\"ts_end\"")); p++)
			rows++;
		if (isnan(next) || pages > 30)
			break;
		CHECK(next > since);
		since = next;
	}
	CHECK(pages > 2);
	CHECK_U64(rows, 30);
	mm_buf_free(&out);
	mm_store_close(st);
}

static void test_series_json_buckets_windows_and_filters(void)
{
	const char *path = new_path();
	struct mm_store *st = history_fixture(path);
	struct mm_store_filter f = MM_STORE_FILTER_ALL;
	struct mm_buf out = MM_BUF_INIT;
	char buf[256];

	CHECK(st != NULL);
	if (!st)
		return;
	/* Ends 10, 20, 29.999 with a 20 s step: buckets {10} and {20, 29.999}. */
	CHECK(mm_store_series_json(st, &f, 0, 30, 20, &out) == 0);
	CHECK_STR(json_q(out.data, "json_valid(?1)", buf, sizeof(buf)), "1");
	CHECK_STR(json_q(out.data, "json_array_length(?1, '$.rows')", buf, sizeof(buf)), "2");
	CHECK_STR(
		json_q(out.data,
		       "(SELECT group_concat(c.key || '=' || json_extract(?1, '$.rows[1][' || "
		       "c.key || ']'), ' ') FROM json_each(?1, '$.columns') AS c WHERE c.value IN "
		       "('ts_start', 'ts_end', 'seconds', 'windows', 'lost'))",
		       buf, sizeof(buf)),
		"0=10.0 1=29.999 2=19.999 3=2 4=0");
	/* faults (field 0 = 1000 k + 1): pid 1 alone, then pid 1 (2001, 3001) + both pid 2s. */
	CHECK_STR(json_q(out.data, "json_extract(?1, '$.columns[5]')", buf, sizeof(buf)), "faults");
	CHECK_STR(json_q(out.data,
			 "json_extract(?1, '$.rows[0][5]') || ',' || "
			 "json_extract(?1, '$.rows[1][5]')",
			 buf, sizeof(buf)),
		  "1001,20004");

	/* One process: the windows it was absent from count zeros. */
	mm_buf_reset(&out);
	f.pid = 2;
	f.start_time = 1234.567;
	CHECK(mm_store_series_json(st, &f, 0, 30, 20, &out) == 0);
	CHECK_STR(json_q(out.data,
			 "json_extract(?1, '$.rows[0][5]') || ',' || "
			 "json_extract(?1, '$.rows[1][5]') || ',' || "
			 "json_extract(?1, '$.rows[1][3]')",
			 buf, sizeof(buf)),
		  "0,7001,2");

	/* A cgroup: both incarnations of pid 2. */
	mm_buf_reset(&out);
	f = MM_STORE_FILTER_ALL;
	f.cgroup = "/x";
	CHECK(mm_store_series_json(st, &f, 0, 30, 20, &out) == 0);
	CHECK_STR(json_q(out.data, "json_extract(?1, '$.rows[1][5]')", buf, sizeof(buf)), "15002");

	/* A range of the last window only, one bucket per window. */
	mm_buf_reset(&out);
	f = MM_STORE_FILTER_ALL;
	CHECK(mm_store_series_json(st, &f, 25, 30, 1, &out) == 0);
	CHECK_STR(json_q(out.data, "json_array_length(?1, '$.rows')", buf, sizeof(buf)), "1");
	CHECK(mm_store_series_json(st, &f, 0, 30, 0, &out) == -EINVAL);

	/* Only the counters asked for: faults (field 0) and the last one. */
	mm_buf_reset(&out);
	f.fields = 1 | (uint64_t)1 << (mm_proc_nfields - 1);
	CHECK(mm_store_series_json(st, &f, 0, 30, 20, &out) == 0);
	CHECK_STR(json_q(out.data,
			 "json_array_length(?1, '$.columns') || ':' || "
			 "json_extract(?1, '$.columns[5]') || ',' || "
			 "json_extract(?1, '$.rows[1][5]')",
			 buf, sizeof(buf)),
		  "7:faults,20004");
	mm_buf_free(&out);
	mm_store_close(st);
}

/* Totals per process (most faults first) and per cgroup over a range. */
static void test_top_json_sums_per_process_and_per_cgroup(void)
{
	const char *path = new_path();
	struct mm_store *st = history_fixture(path);
	struct mm_store_filter f = MM_STORE_FILTER_ALL;
	struct mm_buf out = MM_BUF_INIT;
	char buf[256];

	CHECK(st != NULL);
	if (!st)
		return;
	CHECK(mm_store_top_json(st, &f, false, 0, 30, 10, &out) == 0);
	CHECK_STR(json_q(out.data,
			 "(SELECT group_concat(json_extract(value, '$.pid') || '@' || "
			 "json_extract(value, '$.start_time') || ':' || json_extract(value, "
			 "'$.faults') || '/' || json_extract(value, '$.windows'), ' ') "
			 "FROM json_each(?1))",
			 buf, sizeof(buf)),
		  "2@2000.0:8001/1 2@1234.567:7001/1 1@0.001:6003/3");
	mm_buf_reset(&out);
	CHECK(mm_store_top_json(st, &f, false, 0, 30, 1, &out) == 0);
	CHECK_STR(json_q(out.data, "json_array_length(?1)", buf, sizeof(buf)), "1");

	mm_buf_reset(&out);
	CHECK(mm_store_top_json(st, &f, true, 0, 30, 10, &out) == 0);
	CHECK_STR(json_q(out.data,
			 "(SELECT group_concat(json_extract(value, '$.cgroup') || ':' || "
			 "json_extract(value, '$.faults') || '/' || json_extract(value, "
			 "'$.processes') || '/' || json_extract(value, '$.windows'), ' ') "
			 "FROM json_each(?1))",
			 buf, sizeof(buf)),
		  "/x:15002/2/1 /init.scope:6003/1/3");

	/* Only the first window, and a filter by cgroup. */
	mm_buf_reset(&out);
	f.cgroup = "/init.scope";
	CHECK(mm_store_top_json(st, &f, true, 0, 10, 10, &out) == 0);
	CHECK_STR(json_q(out.data,
			 "json_array_length(?1) || ':' || json_extract(?1, '$[0].faults')", buf,
			 sizeof(buf)),
		  "1:1001");
	mm_buf_free(&out);
	mm_store_close(st);
}

/* The page's lead table asks for the processes that fall back most: with fallbacks_first, a
 * process with fewer faults but more fallbacks comes first, and limit keeps only the rows asked. */
static void test_top_json_orders_by_fallbacks_when_asked(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_store_filter f = MM_STORE_FILTER_ALL;
	struct mm_buf out = MM_BUF_INIT;
	char buf[256];

	CHECK(mm_store_open(path, &st) == 0);
	if (!st)
		return;
	struct mm_snapshot *w = new_window(0, 10000, 3, 0, 0);
	set_proc(&w->procs[0], 10, 1, "faulty", "/a", 5);
	set_proc(&w->procs[1], 11, 1, "fallsback", "/b", 1);
	set_proc(&w->procs[2], 12, 1, "quiet", "/b", 1);
	snap_proc_window(&w->procs[1])->fallback_locks = 900000;
	snap_proc_total(&w->procs[1])->fallback_locks = 900000;
	CHECK(mm_store_write_window(st, w) == 0);
	mm_snapshot_unref(w);

	const char *pids = "(SELECT group_concat(json_extract(value, '$.pid'), ' ') "
			   "FROM json_each(?1))";
	CHECK(mm_store_top_json(st, &f, false, 0, 10, 10, &out) == 0);
	CHECK_STR(json_q(out.data, pids, buf, sizeof(buf)), "10 11 12");
	f.fallbacks_first = true;
	mm_buf_reset(&out);
	CHECK(mm_store_top_json(st, &f, false, 0, 10, 2, &out) == 0);
	CHECK_STR(json_q(out.data, pids, buf, sizeof(buf)), "11 10");
	mm_buf_reset(&out);
	CHECK(mm_store_top_json(st, &f, true, 0, 10, 1, &out) == 0);
	CHECK_STR(json_q(out.data, "json_extract(?1, '$[0].cgroup')", buf, sizeof(buf)), "/b");
	mm_buf_free(&out);
	mm_store_close(st);
}

/* The fault split in bursts: a process no burst caught (split_estimated 0 in windows the bursts
 * observed) has unknown outcomes, null in the range routes, not 0; one that was estimated keeps
 * its estimates, and so does a bucket that holds both. */
static void test_range_routes_give_null_outcomes_for_a_process_no_burst_caught(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	struct mm_store_filter f = MM_STORE_FILTER_ALL;
	struct mm_buf out = MM_BUF_INIT;
	char buf[256];

	CHECK(mm_store_open(path, &st) == 0);
	if (!st)
		return;
	/* Window [0, 10): pid 1 estimated, pid 2 never caught. Window [10, 20): pid 2 alone. */
	for (int k = 0; k < 2; k++) {
		struct mm_snapshot *w = new_window(k * 10000u, (k + 1) * 10000u, 2 - k, 0, 0);
		for (int i = 0; i < 2 - k; i++) {
			struct mm_snap_proc *p = &w->procs[i];
			set_proc(p, k ? 2 : i + 1, 1000, "p", "/", 0);
			struct mm_proc_counts *pw = snap_proc_window(p);
			pw->minflt = 100;
			pw->split_observed_ns = 200000000;
			if (p->pid == 1) {
				pw->split_estimated = 1;
				pw->faults_vma = 90;
				pw->faults_mmap_unknown = pw->faults_mmap_fallback = 10;
				pw->fallback_locks = 10;
			}
			*snap_proc_total(p) = *pw;
		}
		CHECK(mm_store_write_window(st, w) == 0);
		mm_snapshot_unref(w);
	}
	CHECK(mm_store_top_json(st, &f, false, 0, 20, 10, &out) == 0);
	CHECK_STR(
		json_q(out.data,
		       "(SELECT group_concat(json_extract(value, '$.pid') || ':' || "
		       "json_extract(value, '$.minflt') || ':' || "
		       "coalesce(json_extract(value, '$.faults_vma'), 'null') || ':' || "
		       "coalesce(json_extract(value, '$.faults_mmap_fallback'), 'null') || ':' || "
		       "json_extract(value, '$.fallback_locks'), ' ') FROM json_each(?1))",
		       buf, sizeof(buf)),
		"2:200:null:null:0 1:100:90:10:10");
	/* Per cgroup: the unit holds an estimated process, so its outcomes are that estimate. */
	mm_buf_reset(&out);
	CHECK(mm_store_top_json(st, &f, true, 0, 20, 10, &out) == 0);
	CHECK_STR(json_q(out.data, "json_extract(?1, '$[0].faults_vma')", buf, sizeof(buf)), "90");

	/* Series, a bucket per window: the first has pid 1's estimate, the second is unknown. */
	mm_buf_reset(&out);
	CHECK(mm_store_series_json(st, &f, 0, 20, 10, &out) == 0);
	CHECK_STR(
		json_q(out.data,
		       "(SELECT group_concat(coalesce(json_extract(?1, '$.rows[' || r.key || '][' "
		       "|| c.key || ']'), 'null'), ',') FROM json_each(?1, '$.rows') AS r, "
		       "json_each(?1, '$.columns') AS c WHERE c.value = 'faults_vma')",
		       buf, sizeof(buf)),
		"90,null");
	mm_buf_free(&out);
	mm_store_close(st);
}

/* Writes @n windows of 10 s from @start_ms, each with some of 40 processes in 5 cgroups (which
 * and how many change from window to window, values from a fixed seed). */
static int write_busy_windows(struct mm_store *st, uint64_t start_ms, unsigned n, unsigned seed)
{
	static const char *const cgroups[] = {"/a", "/b.slice/c", "/d", "/e", ""};
	int r = 0;

	for (unsigned i = 0; i < n && !r; i++) {
		unsigned active = 1 + (i * 7 + seed) % 12;
		struct mm_snapshot *w = new_window(start_ms + i * 10000ull,
						   start_ms + (i + 1) * 10000ull, active, 0, 0);
		for (unsigned j = 0; j < active; j++) {
			unsigned k = (i / 30 + j * 3 + seed) % 40; /* processes come and go */
			set_proc(&w->procs[j], (int32_t)(100 + k), 1000 + k, "busy", cgroups[k % 5],
				 1 + (i * 13 + j * 7 + seed) % 97);
		}
		r = mm_store_write_window(st, w);
		mm_snapshot_unref(w);
	}
	return r;
}

/* The report's rows for @q, as text, appended to @out. */
static void fault_rows_text(struct mm_store *st, const struct mm_fault_query *q, struct mm_buf *out)
{
	struct mm_fault_row *rows = NULL;
	size_t n = 0;

	CHECK(mm_store_fault_rows(st, q, &rows, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		mm_buf_printf(out, "%d %.3f %s %s %" PRIu64, rows[i].pid, rows[i].start_time,
			      rows[i].comm, rows[i].cgroup, rows[i].processes);
		for (size_t f = 0; f < mm_proc_nfields; f++)
			mm_buf_printf(
				out, " %" PRIu64,
				*(uint64_t *)((char *)&rows[i].sum + mm_proc_fields[f].offset));
		mm_buf_puts(out, "\n");
	}
	free(rows);
}

/* The top (by process, by cgroup), series and report answers over a few ranges, each unaligned
 * to the sums' buckets, appended to @out. */
static void range_answers(struct mm_store *st, double t0, struct mm_buf *out)
{
	static const double ranges[][2] = {{0, 30000},	 {123.4, 9876.5}, {3599, 7201},
					   {1795, 2405}, {-5000, 40000},  {7205, 7499}};
	struct mm_store_filter f = MM_STORE_FILTER_ALL, one = MM_STORE_FILTER_ALL;

	one.cgroup = "/b.slice/c";
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		double since = t0 + ranges[i][0], until = t0 + ranges[i][1];
		CHECK(mm_store_top_json(st, &f, false, since, until, 100, out) == 0);
		CHECK(mm_store_top_json(st, &f, true, since, until, 100, out) == 0);
		CHECK(mm_store_top_json(st, &one, true, since, until, 100, out) == 0);
		CHECK(mm_store_series_json(st, &f, since, until, 600, out) == 0);
		mm_buf_puts(out, "\n");
		struct mm_fault_query q = {.since_s = since, .until_s = until, .pid = -1};
		for (int g = MM_FAULT_BY_PROCESS; g <= MM_FAULT_ALL; g++) {
			q.group = g;
			fault_rows_text(st, &q, out);
		}
		q.pid = 107;
		q.group = MM_FAULT_BY_PROCESS;
		fault_rows_text(st, &q, out);
		q.pid = -1;
		q.cgroup = "/b.slice";
		q.group = MM_FAULT_BY_CGROUP;
		fault_rows_text(st, &q, out);
	}
}

static void test_range_sums_answer_as_every_window_does(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL, *ro = NULL;
	struct mm_buf sums = MM_BUF_INIT, raw = MM_BUF_INIT;
	const uint64_t t0_ms = 1700000000000ull; /* on an hour */

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_busy_windows(st, t0_ms, 1000, 3) == 0); /* 2 h 47 min */
	CHECK(mm_store_open_readonly(path, &ro) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) > 0 FROM range_sums WHERE span = 3600"), 1);
	range_answers(ro, t0_ms / 1000.0, &sums);
	/* Stale sums are not read: the same questions, answered from every window. */
	CHECK(raw_exec(path, "UPDATE range_sums_state SET windows = windows - 1") == SQLITE_OK);
	range_answers(ro, t0_ms / 1000.0, &raw);
	CHECK(!mm_buf_failed(&sums) && !mm_buf_failed(&raw));
	CHECK(sums.len > 1000);
	CHECK_STR(sums.data, raw.data);
	mm_store_close(ro);
	mm_store_close(st);

	/* Lost sums are rebuilt from the windows; after a prune they still agree. */
	CHECK(raw_exec(path, "DELETE FROM range_sums; DELETE FROM range_sums_state") == SQLITE_OK);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(mm_store_prune(st, t0_ms + 10000000ull, 5000000ull) > 0);
	CHECK(mm_store_build_sums(st, NULL, NULL) == 0);
	CHECK_U64(q_int(path, "SELECT count(*) > 0 FROM range_sums WHERE span = 3600"), 1);
	CHECK(mm_store_open_readonly(path, &ro) == 0);
	mm_buf_free(&sums);
	mm_buf_free(&raw);
	range_answers(ro, t0_ms / 1000.0, &sums);
	CHECK(raw_exec(path, "DELETE FROM range_sums_state") == SQLITE_OK);
	range_answers(ro, t0_ms / 1000.0, &raw);
	CHECK_STR(sums.data, raw.data);
	mm_store_close(ro);
	mm_store_close(st);
	mm_buf_free(&sums);
	mm_buf_free(&raw);
}

/* A database another program holds when the sums are first built (a sqlite3 shell's
 * transaction) does not leave the daemon without them: they are tried again a few windows on. */
static void test_range_sums_are_built_after_the_database_was_locked(void)
{
	const char *path = new_path();
	struct mm_store *st = NULL;
	sqlite3 *other = NULL;
	const uint64_t t0_ms = 1700000000000ull;

	CHECK(mm_store_open(path, &st) == 0);
	CHECK(write_busy_windows(st, t0_ms, 20, 5) == 0);
	mm_store_close(st);
	CHECK(raw_exec(path, "DELETE FROM range_sums; DELETE FROM range_sums_state") == SQLITE_OK);
	CHECK(mm_store_open(path, &st) == 0);
	CHECK(sqlite3_open(path, &other) == SQLITE_OK);
	CHECK(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(mm_store_build_sums(st, NULL, NULL) == -EBUSY); /* after the busy timeout */
	CHECK(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(other);
	CHECK(write_busy_windows(st, t0_ms + 20 * 10000ull, 8, 5) == 0);
	CHECK_U64(q_int(path, "SELECT windows FROM range_sums_state"), 28);
	mm_store_close(st);
}

static void test_history_json_keys_are_the_view_columns(void)
{
	const char *path = new_path();
	struct mm_store *st = history_fixture(path);
	struct mm_buf out = MM_BUF_INIT;
	char buf[2048], want[2048];
	size_t n = 0;

	CHECK(st != NULL);
	if (!st)
		return;
	CHECK(mm_store_history_json(st, 1, 0, 1e12, 1, 0, &out, &hist_next) == 0);
	CHECK(out.data && out.data[0] == '[' && out.data[out.len - 1] == ']');
	n += snprintf(want + n, sizeof(want) - n, "ts_start,ts_end,pid,start_time,comm,cgroup");
	for (size_t f = 0; f < mm_proc_nfields; f++)
		n += snprintf(want + n, sizeof(want) - n, ",%s", mm_proc_fields[f].name);
	CHECK_STR(json_q(out.data, "(SELECT group_concat(key) FROM json_each(?1, '$[0]'))", buf,
			 sizeof(buf)),
		  want);
	/* Counters are JSON integers, times JSON reals. */
	CHECK_STR(json_q(out.data, "json_type(?1, '$[0].mmap_lock_wait_ns')", buf, sizeof(buf)),
		  "integer");
	CHECK_STR(json_q(out.data, "json_type(?1, '$[0].ts_end')", buf, sizeof(buf)), "real");
	mm_buf_free(&out);
	mm_store_close(st);
}

static void test_readonly_handle_reads_but_cannot_write(void)
{
	const char *path = new_path();
	struct mm_store *rw = NULL, *ro = NULL;
	struct mm_buf out = MM_BUF_INIT;
	char buf[64];

	CHECK(mm_store_open(path, &rw) == 0);
	CHECK(write_simple(rw, 0, 10000, 5, 1) == 0);
	CHECK(mm_store_open_readonly(path, &ro) == 0);
	if (!ro) {
		mm_store_close(rw);
		return;
	}
	CHECK(write_simple(ro, 10000, 20000, 5, 1) < 0);
	CHECK(mm_store_prune(ro, UINT64_C(1) << 50, 0) < 0);
	CHECK_U64(q_int(path, "SELECT count(*) FROM windows"), 1);

	/* The reader sees what the writer commits while both are open (WAL). */
	CHECK(write_simple(rw, 20000, 30000, 5, 2) == 0);
	CHECK(mm_store_history_json(ro, 5, 0, 1e12, 100, 0, &out, &hist_next) == 0);
	CHECK_STR(json_q(out.data, "json_array_length(?1)", buf, sizeof(buf)), "2");
	mm_buf_free(&out);
	mm_store_close(ro);
	mm_store_close(rw);
}

static void test_readonly_needs_an_existing_current_database(void)
{
	const char *path = new_path();
	struct mm_store *ro = NULL;

	make_dir_of(path);
	CHECK(mm_store_open_readonly(path, &ro) == -ENOENT);
	CHECK(ro == NULL);
	/* An unmigrated file is not readable as history. */
	CHECK(raw_exec(path, "CREATE TABLE t (x)") == SQLITE_OK);
	CHECK(mm_store_open_readonly(path, &ro) < 0);
	CHECK(ro == NULL);
}

static void test_path_under_a_regular_file_gives_enotdir(void)
{
	char file[256], path[300];
	struct mm_store *st = NULL;
	int fd;

	snprintf(file, sizeof(file), "%s/plainfile", tmpdir);
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/history.db", file);
	CHECK(mm_store_open(path, &st) == -ENOTDIR);
	CHECK(st == NULL);
	snprintf(path, sizeof(path), "%s/sub/history.db", file);
	CHECK(mm_store_open(path, &st) == -ENOTDIR);
	CHECK(st == NULL);
}

/* Tries, as a user who owns nothing in @dir: a new database in @dir, one in a missing
 * subdirectory of @dir, and an existing database owned by someone else. Returns a bit per case
 * that did not give -EACCES. */
static int unprivileged_cases(const char *dir, const char *existing)
{
	struct mm_store *st = NULL;
	char path[300];
	int bad = 0;

	snprintf(path, sizeof(path), "%s/new.db", dir);
	if (mm_store_open(path, &st) != -EACCES)
		bad |= 1;
	snprintf(path, sizeof(path), "%s/sub/new.db", dir);
	if (mm_store_open(path, &st) != -EACCES)
		bad |= 2;
	if (mm_store_open(existing, &st) != -EACCES)
		bad |= 4;
	return bad;
}

static void test_unwritable_places_give_eacces(void)
{
	char dir[256], existing[300];
	struct mm_store *st = NULL;
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/locked", tmpdir);
	snprintf(existing, sizeof(existing), "%s/locked/existing.db", tmpdir);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(mm_store_open(existing, &st) == 0);
	mm_store_close(st);
	CHECK(chmod(existing, 0444) == 0);

	if (geteuid() != 0) {
		CHECK(chmod(dir, 0555) == 0);
		CHECK_U64(unprivileged_cases(dir, existing), 0);
		chmod(dir, 0755);
		return;
	}
	/* Root ignores permissions: run the cases as nobody in a child. The temporary directory
	 * must be searchable for that. */
	CHECK(chmod(tmpdir, 0711) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(77);
		_exit(unprivileged_cases(dir, existing));
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	chmod(tmpdir, 0700);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("skip test_unwritable_places_give_eacces: cannot drop privileges\n");
		return;
	}
	CHECK(WIFEXITED(status));
	CHECK_U64(WEXITSTATUS(status), 0);
}

/* In a child with its own mount namespace, a 320 KiB tmpfs fills up (192 KiB held no window once
 * schema 006 came): the write that does not fit gives -ENOSPC and leaves no trace; the windows
 * before it stay. Exit 77 when the child cannot mount (not root, or no CAP_SYS_ADMIN in a
 * container). */
static int disk_full_child(const char *dir)
{
	struct mm_store *st = NULL;
	struct mm_snapshot *w;
	char path[300];
	int r = 0, stored = 0;

	snprintf(path, sizeof(path), "%s/full.db", dir);
	if (mm_store_open(path, &st) < 0)
		return 10;
	char long_cg[MM_CGROUP_LEN];
	memset(long_cg, 'c', sizeof(long_cg) - 1);
	long_cg[sizeof(long_cg) - 1] = '\0';
	for (int i = 0; i < 100000 && r == 0; i++) {
		w = new_window((uint64_t)i * 1000, (uint64_t)(i + 1) * 1000, 20, 0, 0);
		for (int k = 0; k < 20; k++)
			set_proc(&w->procs[k], 100 + i * 20 + k, 1000, "filler", long_cg, 1);
		r = mm_store_write_window(st, w);
		mm_snapshot_unref(w);
		if (r == 0)
			stored++;
	}
	mm_store_close(st);
	if (r != -ENOSPC) {
		fprintf(stderr, "disk full: got %d after %d windows\n", r, stored);
		return 11;
	}
	if (stored < 1 || q_int(path, "SELECT count(*) FROM windows") != stored) {
		fprintf(stderr, "disk full: %d windows stored, %lld in the file\n", stored,
			q_int(path, "SELECT count(*) FROM windows"));
		return 12;
	}
	return 0;
}

static void test_disk_full_gives_enospc_and_keeps_earlier_windows(void)
{
	int r = in_small_tmpfs("full", "320k", disk_full_child);

	if (r == 77) {
		printf("skip test_disk_full_gives_enospc_and_keeps_earlier_windows: cannot mount "
		       "a tmpfs\n");
		return;
	}
	CHECK_U64(r, 0);
}

int main(void)
{
	if (tmpdir_create("store") < 0)
		return 1;
	if (!getenv("MM_TEST_VERBOSE"))
		mm_log_set_level(LOG_CRIT); /* the failure tests log errors on purpose */

	RUN(test_fresh_open_creates_schema_in_wal_mode);
	RUN(test_missing_directory_is_created_0750_file_0640);
	RUN(test_view_columns_are_head_then_every_counter);
	RUN(test_cgroup_stats_sums_every_counter_per_cgroup_and_window);
	RUN(test_fault_rows_sum_per_process_cgroup_and_all_with_filters);
	RUN(test_window_source_is_what_its_event_collectors_ran_on);
	RUN(test_pre_007_windows_have_an_unknown_source_and_compare_notes_it);
	RUN(test_reopen_applies_nothing_and_keeps_data);
	RUN(test_newer_schema_version_is_refused_untouched);
	RUN(test_another_applications_database_is_refused_untouched);
	RUN(test_a_look_alike_foreign_file_is_refused_byte_for_byte_untouched);
	RUN(test_new_database_is_stamped_with_mmlockds_application_id);
	RUN(test_earlier_mmlockd_database_is_adopted_and_stamped);
	RUN(test_not_a_database_is_refused);
	RUN(test_pid_reuse_gives_two_processes_with_own_values);
	RUN(test_comm_is_per_window_and_process_keeps_identity);
	RUN(test_idle_processes_are_not_written);
	RUN(test_globals_and_events_land_in_their_tables);
	RUN(test_failed_window_keeps_nothing_of_it);
	RUN(test_same_process_twice_in_a_window_is_summed);
	RUN(test_open_window_is_refused);
	RUN(test_prune_deletes_old_windows_and_orphans_only);
	RUN(test_prune_with_a_wild_clock_keeps_the_history);
	RUN(test_prune_keeps_the_window_just_written_after_a_clock_step);
	RUN(test_history_json_filters_by_pid_and_time);
	RUN(test_history_pages_end_on_window_boundaries);
	RUN(test_series_json_buckets_windows_and_filters);
	RUN(test_top_json_sums_per_process_and_per_cgroup);
	RUN(test_top_json_orders_by_fallbacks_when_asked);
	RUN(test_range_routes_give_null_outcomes_for_a_process_no_burst_caught);
	RUN(test_range_sums_answer_as_every_window_does);
	RUN(test_range_sums_are_built_after_the_database_was_locked);
	RUN(test_history_json_keys_are_the_view_columns);
	RUN(test_readonly_handle_reads_but_cannot_write);
	RUN(test_readonly_needs_an_existing_current_database);
	RUN(test_path_under_a_regular_file_gives_enotdir);
	RUN(test_unwritable_places_give_eacces);
	RUN(test_disk_full_gives_enospc_and_keeps_earlier_windows);

	tmpdir_remove();
	return check_summary();
}
