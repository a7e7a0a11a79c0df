/*
 * `mmlockd report` (see report.h): reads the history read-only, so it runs next to a live daemon
 * (WAL lets readers in while the writer writes) and on a database copied from another machine.
 * The store sums the rows over the windows of the range (mm_store_fault_rows, mm_store_locks);
 * faulttable.c and locktable.c print them. Values (times, counts) go through parse.c like every
 * other command's. A --compare operand is a database when such a file exists or it has no "..";
 * otherwise a range of --db.
 */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "buf.h"
#include "cmdline.h"
#include "config.h"
#include "faulttable.h"
#include "locktable.h"
#include "log.h"
#include "parse.h"
#include "store.h"

#define DEFAULT_TOP 20 /* lines of a table when --top is not given */

static const char usage[] =
	"Usage: mmlockd report [OPTIONS]                  faults per process\n"
	"       mmlockd report --units [OPTIONS]          faults per unit (cgroup)\n"
	"       mmlockd report --compare A B [OPTIONS]    two ranges or two databases\n"
	"       mmlockd report --locks [OPTIONS]          lock contention\n"
	"       mmlockd report --waits [OPTIONS]          who held mmap_lock while processes\n"
	"                                                 waited for it\n"
	"Print what mmlockd stored, summed over a time range, from its SQLite history. Runs\n"
	"next to a live daemon and on a database copied from another machine.\n"
	"\n"
	"Fault table columns (a group the data has not is left out):\n"
	"  pid comm | processes   the process (pid, its latest name) or the unit's process count\n"
	"  faults                 minflt + majflt (totals collector), else sampled user faults\n"
	"  major                  major faults (totals)\n"
	"  fallbacks, fb%         faults that fell back to mmap_lock, and their share of faults\n"
	"                         (fallbacks collector, else the faults collector's)\n"
	"  waits                  fallbacks that found mmap_lock taken (fallbacks)\n"
	"  vma vma_retry mmap_retry mmap_abort mmap_unknown, split, fb wait ms\n"
	"                         the outcome of each fault, exact, estimated (~N, from the\n"
	"                         split's bursts, with +-err, unsampled and cov%) or not\n"
	"                         sampled (-), and the fallbacks' wait (faults)\n"
	"  lock waits, wait ms, avg wait us   every mmap_lock wait (mmaplock)\n"
	"  cgroup                 the cgroup (on systemd, the unit)\n"
	"\n"
	"  --units          one row per cgroup instead of per process\n"
	"  --sort KEYS      sort by these columns (their keys or headers, comma-separated;\n"
	"                   numbers largest first):\n"
	"                   pid processes faults major fallbacks fallback_pct waits vma\n"
	"                   vma_retry mmap_retry mmap_abort mmap_unknown split split_err\n"
	"                   not_sampled split_coverage_pct fb_wait_ms lock_waits\n"
	"                   wait_ms avg_wait_us comm cgroup (default: faults)\n"
	"  -x, --field-separator SEP\n"
	"                   CSV: a header line of column keys, fields separated by SEP\n"
	"  --json           a JSON array of rows keyed by column (--compare: numbers\n"
	"                   and notes; --locks: the rows of GET /api/v1/locks)\n"
	"  --compare A B    A and B side by side with the change of B relative to A, the\n"
	"                   baseline, in percent (as perf diff); each is a database file,\n"
	"                   or a range SINCE..UNTIL of the --db database (either end may\n"
	"                   be empty: '2h..1h', '1h..'); counts per second of the time\n"
	"                   each side's windows cover (ranges of different lengths\n"
	"                   compare); a figure one side did not collect reads '-', an\n"
	"                   estimate '~N', a change inside its error bound 'within\n"
	"                   error'; a '#' line says when the sides ran on different\n"
	"                   sources (in-kernel BPF, perf rings)\n"
	"  --totals         with --compare: the sums instead of the rates\n"
	"  --labels L1,L2   column titles of the comparison (default: the file names or ranges)\n"
	"  --throughput X,Y a throughput you measured for A and B, compared as well\n"
	"  --locks          the lock contention table (perf lock contention's columns:\n"
	"                   contended, total wait, max wait, avg wait, type, caller)\n"
	"  --seed-table     with --locks: max, min, max-min, avg and sum of the wait in ms,\n"
	"                   count, blocked function (the layout of linux-mm rmap lock reports)\n"
	"  --detail         with --locks: one line per process and lock, with min and p99 wait\n"
	"  --waits          mmap_lock waits per waiting process and holder: the holder's\n"
	"                   mode (write; read: one reader named, a hint; unknown), process\n"
	"                   and operation (mmap, munmap, mprotect, fault, remote, ...)\n"
	"                   (contention collector; --json: the rows of GET /api/v1/locks)\n"
	"\n"
	"  --db PATH        database (default " MM_DEFAULT_DB ")\n"
	"  --since T        windows ending after T (default: the oldest)\n"
	"  --until T        windows starting before T (default: now)\n"
	"  --pid N          only process N\n"
	"  --cgroup PATH    only processes in cgroup PATH and the cgroups below it\n"
	"  --comm NAME      only processes named NAME\n"
	"  --top N          at most N lines (default: 20 in a table, all in CSV and JSON;\n"
	"                   0: all)\n"
	"  --wide           every column; otherwise a table keeps to $COLUMNS or the\n"
	"                   terminal's width, leaving out columns with one value in every\n"
	"                   row first, then the split's detail\n"
	"  --help           show this text\n"
	"\n"
	"T is unix seconds, 'now', a duration before now (90s, 15m, 2h, 7d) or a local time\n"
	"'YYYY-MM-DD[ HH:MM[:SS]]'. Callers are named as by `perf lock contention --stack-skip "
	"0`.\n";

/* A "SINCE..UNTIL" range (either end may be empty) into unix seconds: -EINVAL when it is not
 * one, -ERANGE when its start comes after its end. */
static int parse_range(const char *s, double now, double *ret_since, double *ret_until)
{
	const char *dots = strstr(s, "..");
	char since[64];
	double a = 0, b = now;

	if (!dots || (size_t)(dots - s) >= sizeof(since))
		return -EINVAL;
	snprintf(since, sizeof(since), "%.*s", (int)(dots - s), s);
	if ((since[0] && mm_parse_time(since, now, &a) < 0) ||
	    (dots[2] && mm_parse_time(dots + 2, now, &b) < 0))
		return -EINVAL;
	if (a > b)
		return -ERANGE;
	*ret_since = a;
	*ret_until = b;
	return 0;
}

/* The width an aligned table may take: $COLUMNS, else the terminal's when stdout is one, else 0
 * (no limit: a pipe or a file gets every column). */
static unsigned term_width(void)
{
	const char *env = getenv("COLUMNS");
	unsigned long v;
	struct winsize ws;

	if (env && mm_parse_ulong(env, 20, 100000, &v) == 0)
		return (unsigned)v;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 0;
}

struct args {
	const char *db, *since, *until, *cgroup, *comm, *labels, *throughput;
	const char *cmp[2];
	bool locks, waits, seed, detail, json, wide, top_given, totals;
	unsigned long pid, top;
	struct mm_fault_opts fo;
	double now, since_s, until_s;
};

static void local_time(char *buf, size_t len, double t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t <= 0 || !localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "-");
}

/* "DB, FROM .. TO (N windows covering S s, kernel K, source S)" for the comment lines above a
 * table: what was read, and the time its rates are per. */
static void describe(char *buf, size_t len, const char *db, const struct mm_store_range *rg)
{
	char a[32], b[32];
	local_time(a, sizeof(a), rg->first_s);
	local_time(b, sizeof(b), rg->last_s);
	snprintf(buf, len,
		 "%s, %s .. %s (%" PRIu64 " windows covering %.1f s, kernel %s, source %s)", db, a,
		 b, rg->windows, rg->covered_s, rg->kernels[0] ? rg->kernels : "-",
		 rg->sources[0] ? rg->sources : "-");
}

static struct mm_fault_query query_of(const struct args *a, double since, double until, int group)
{
	return (struct mm_fault_query){.since_s = since,
				       .until_s = until,
				       .pid = a->pid ? (int)a->pid : -1,
				       .cgroup = a->cgroup,
				       .comm = a->comm,
				       .group = group};
}

/* Keeps the lock rows of @rows whose process passes --comm and --cgroup: by name, and by the
 * processes the store has in that cgroup over the range (@procs, @nprocs). Returns the count. */
static size_t filter_locks(const struct args *a, struct mm_snap_lock *rows, size_t n,
			   const struct mm_fault_row *procs, size_t nprocs)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		bool keep = !a->comm || !strcmp(rows[i].comm, a->comm);
		if (keep && a->cgroup) {
			keep = false;
			for (size_t k = 0; k < nprocs && !keep; k++)
				keep = procs[k].pid == rows[i].pid &&
				       (uint64_t)(procs[k].start_time * 1000 + 0.5) ==
					       rows[i].start_ms;
		}
		if (keep)
			rows[o++] = rows[i];
	}
	return o;
}

/* The '#' lines above a lock table, as above a fault table: what was read, what a line is and
 * how many there are, wrapped to the table's width. */
static void locks_comment(const struct args *a, const struct mm_store_range *rg, size_t n)
{
	char what[512], line[1024];
	const char *kind = a->waits    ? "waiting process and holder (mmap_lock only)"
			   : a->detail ? "process, lock and caller"
				       : "lock type and caller";
	describe(what, sizeof(what), a->db, rg);
	snprintf(line, sizeof(line), "%s\none line per %s: %zu%s%s", what, kind, n,
		 a->top && n > a->top ? ", the first --top shown (--top 0 shows all)" : "",
		 a->seed || a->detail || a->waits ? ""
						  : "\ntimes as perf lock contention prints them "
						    "(each in its own unit), so the "
						    "two tools' tables diff");
	mm_fault_comment(stdout, line, a->fo.width);
	fputs("#\n", stdout);
}

/* perf's (or seed 004's) lock table of @rows, its lines cut to @width with "..." (0: whole): the
 * caller, the last column, is what runs past a terminal; a pipe gets perf's lines to the
 * character, so the two tools' tables still diff. */
static void print_cut(const struct mm_snap_lock *rows, size_t n, bool seed, unsigned width)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = width ? open_memstream(&text, &len) : NULL;

	mm_locktable_print(f ? f : stdout, rows, n, seed);
	if (!f)
		return;
	fclose(f);
	for (const char *p = text; p && *p;) {
		const char *nl = strchrnul(p, '\n');
		if ((size_t)(nl - p) > width && width > 3)
			printf("%.*s...\n", (int)width - 3, p);
		else
			printf("%.*s\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
	free(text);
}

static int report_locks(const struct args *a)
{
	struct mm_store_range rg;
	struct mm_snap_lock *rows = NULL;
	struct mm_fault_row *procs = NULL;
	struct mm_store *st = NULL;
	size_t n = 0, nprocs = 0;
	int r = mm_store_open_offline(a->db, &st);
	if (r < 0)
		return 1; /* logged */
	r = mm_store_range(st, a->since_s, a->until_s, &rg);
	if (r >= 0)
		r = mm_store_locks(st, a->pid ? (int)a->pid : -1, a->since_s, a->until_s, 0, &rows,
				   &n);
	if (r >= 0 && a->cgroup) {
		struct mm_fault_query q = query_of(a, a->since_s, a->until_s, MM_FAULT_BY_PROCESS);
		r = mm_store_fault_rows(st, &q, &procs, &nprocs);
	}
	mm_store_close(st);
	if (r < 0) {
		free(rows);
		return 1;
	}
	n = filter_locks(a, rows, n, procs, nprocs);
	free(procs);
	if (a->waits)
		n = mm_lock_rows_by_holder(rows, n);
	if (!n)
		fprintf(stderr, "mmlockd report: no %s stored in %s for that range%s%s\n",
			a->waits ? "mmap_lock wait" : "lock contention", a->db,
			a->pid || a->cgroup || a->comm ? " and filter" : "",
			" (the contention collector stores them)");
	if (a->fo.format == MM_FAULT_JSON) {
		/* The rows as GET /api/v1/locks gives them: every field of the table and more. */
		struct mm_buf b = MM_BUF_INIT;
		n = a->detail || a->waits ? n : mm_lock_rows_merge(rows, n, true);
		if (a->top && n > a->top)
			n = a->top;
		mm_api_locks(rows, n, &b);
		mm_buf_puts(&b, "\n");
		r = mm_buf_failed(&b) ? -ENOMEM : 0;
		if (!r)
			fputs(b.data, stdout);
		mm_buf_free(&b);
		free(rows);
		return r < 0 || fflush(stdout) != 0 ? 1 : 0;
	}
	if (!a->detail && !a->waits)
		n = mm_lock_rows_merge(rows, n, true);
	locks_comment(a, &rg, n);
	if (a->detail || a->waits) {
		if (a->top && n > a->top)
			n = a->top;
		(a->waits ? mm_locktable_print_holders : mm_locktable_print_detail)(stdout, rows, n,
										    a->fo.width);
	} else {
		if (a->top && n > a->top)
			n = a->top;
		print_cut(rows, n, a->seed, a->fo.width);
	}
	free(rows);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* The rows of the range summed over every process (no --pid, --comm or --cgroup) into @ret:
 * what the collectors stored, so a filtered table keeps their columns. 0 or -errno (logged). */
static int range_sum(struct mm_store *st, const struct args *a, struct mm_fault_row *ret)
{
	struct mm_fault_query q = {
		.since_s = a->since_s, .until_s = a->until_s, .pid = -1, .group = MM_FAULT_ALL};
	struct mm_fault_row *rows = NULL;
	size_t n = 0;
	int r = mm_store_fault_rows(st, &q, &rows, &n);
	if (r >= 0 && n)
		*ret = rows[0];
	free(rows);
	return r;
}

static int report_faults(const struct args *a)
{
	struct mm_fault_query q =
		query_of(a, a->since_s, a->until_s,
			 a->fo.by_cgroup ? MM_FAULT_BY_CGROUP : MM_FAULT_BY_PROCESS);
	struct mm_fault_row *rows = NULL;
	struct mm_store_range rg;
	struct mm_store *st = NULL;
	struct mm_fault_row range = {.pid = -1};
	struct mm_fault_opts fo = a->fo;
	char comment[512];
	size_t n = 0;
	int r = mm_store_open_offline(a->db, &st);

	if (r < 0)
		return 1; /* logged */
	r = mm_store_range(st, a->since_s, a->until_s, &rg);
	if (r >= 0)
		r = mm_store_fault_rows(st, &q, &rows, &n);
	if (r >= 0 && (a->pid || a->cgroup || a->comm))
		r = range_sum(st, a, &range);
	mm_store_close(st);
	if (r < 0) {
		free(rows);
		return 1;
	}
	fo.range = range.pid < 0 ? NULL : &range;
	if (!n)
		fprintf(stderr, "mmlockd report: no process stored in %s for that range%s\n", a->db,
			a->pid || a->cgroup || a->comm ? " and filter" : "");
	describe(comment, sizeof(comment), a->db, &rg);
	size_t len = strlen(comment);
	if (a->top && n > a->top)
		snprintf(comment + len, sizeof(comment) - len,
			 "\n%zu %s, the first %lu shown (--top 0 shows all)", n,
			 a->fo.by_cgroup ? "cgroups" : "processes", a->top);
	else
		snprintf(comment + len, sizeof(comment) - len, "\n%zu %s", n,
			 a->fo.by_cgroup ? (n == 1 ? "cgroup" : "cgroups")
					 : (n == 1 ? "process" : "processes"));
	r = mm_fault_print(stdout, rows, n, &fo, comment);
	free(rows);
	return r < 0 || fflush(stdout) != 0 ? 1 : 0;
}

/* One side of --compare: @spec is a database file or a range of a->db. */
static int load_side(const struct args *a, const char *spec, struct mm_fault_side *side, char *what,
		     size_t whatlen, char *label, size_t labellen)
{
	const char *db = a->db;
	double since = a->since_s, until = a->until_s;
	struct mm_fault_query q;
	struct mm_fault_row *rows = NULL;
	struct mm_store_range rg;
	struct mm_store *st = NULL;
	size_t n = 0;
	bool range = false;
	int r;

	if (access(spec, F_OK) == 0 || parse_range(spec, a->now, &since, &until) < 0) {
		db = spec;
		since = a->since_s;
		until = a->until_s;
		const char *base = strrchr(spec, '/') ? strrchr(spec, '/') + 1 : spec;
		size_t blen = strlen(base);
		if (blen > 3 && !strcmp(base + blen - 3, ".db"))
			blen -= 3;
		snprintf(label, labellen, "%.*s", (int)blen, base);
	} else {
		snprintf(label, labellen, "%s", spec);
		range = true;
	}
	r = mm_store_open_offline(db, &st);
	if (r < 0)
		return r; /* logged */
	/* Two ranges meeting at a time share no window: each takes the windows that ended in it. */
	if (range)
		r = mm_store_window_end_before(st, until, &until);
	q = query_of(a, since, until, MM_FAULT_ALL);
	if (r >= 0)
		r = mm_store_range(st, since, until, &rg);
	if (r >= 0)
		r = mm_store_fault_rows(st, &q, &rows, &n);
	/* mmap_lock contentions from the contention collector where it stored any rows. */
	int64_t contended = -1;
	if (r >= 0)
		r = mm_store_mmap_lock_contended(st, q.pid, a->comm, since, until, &contended);
	mm_store_close(st);
	if (r < 0) {
		free(rows);
		return r;
	}
	memset(side, 0, sizeof(*side));
	if (n)
		side->sum = rows[0];
	side->lock_contended = contended;
	/* Rates are per second the windows cover: not last - first, which counts a gap in the
	 * history (the daemon stopped) as time in which nothing happened. */
	side->seconds = rg.covered_s;
	side->windows = rg.windows;
	snprintf(side->source, sizeof(side->source), "%s", rg.sources);
	describe(what, whatlen, db, &rg);
	free(rows);
	return 0;
}

/* The '#' line of side @k of --compare: "LABEL, the baseline: WHAT" (a) or "LABEL, compared to
 * BASE: WHAT" (b), wrapped to @width. */
static void print_comment(int k, const char *label, const char *base, const char *what,
			  unsigned width)
{
	char line[1024];
	snprintf(line, sizeof(line), "%s, %s%s: %s", label, k ? "compared to " : "the baseline",
		 k ? base : "", what);
	mm_fault_comment(stdout, line, width);
}

/* Splits "X,Y" into two strings of @buf (which it modifies). */
static int split_pair(char *buf, const char **ret_a, const char **ret_b)
{
	char *comma = strchr(buf, ',');
	if (!comma || comma == buf || !comma[1] || strchr(comma + 1, ','))
		return -EINVAL;
	*comma = '\0';
	*ret_a = buf;
	*ret_b = comma + 1;
	return 0;
}

static int report_compare(const struct args *a)
{
	struct mm_fault_side side[2];
	char what[2][512], label[2][128], labels[256], tput[128];
	const char *l[2] = {NULL, NULL}, *t[2] = {NULL, NULL};

	if (a->labels) {
		snprintf(labels, sizeof(labels), "%s", a->labels);
		if (split_pair(labels, &l[0], &l[1]) < 0) {
			fprintf(stderr, "mmlockd report: --labels wants two names, 'A,B'\n");
			return 2;
		}
	}
	if (a->throughput) {
		snprintf(tput, sizeof(tput), "%s", a->throughput);
		char *end;
		if (split_pair(tput, &t[0], &t[1]) < 0 || (strtod(t[0], &end), *end) ||
		    (strtod(t[1], &end), *end)) {
			fprintf(stderr, "mmlockd report: --throughput wants two numbers, 'X,Y'\n");
			return 2;
		}
	}
	for (int k = 0; k < 2; k++) {
		if (load_side(a, a->cmp[k], &side[k], what[k], sizeof(what[k]), label[k],
			      sizeof(label[k])) < 0)
			return 1;
		side[k].label = l[k] ? l[k] : label[k];
		side[k].throughput = t[k];
		if (a->fo.format == MM_FAULT_TABLE)
			print_comment(k, side[k].label, side[0].label, what[k], a->fo.width);
	}
	if (a->fo.format == MM_FAULT_TABLE && (a->pid || a->cgroup || a->comm))
		printf("# only%s%s%s%s%s%s\n", a->comm ? " comm " : "", a->comm ? a->comm : "",
		       a->cgroup ? " cgroup " : "", a->cgroup ? a->cgroup : "",
		       a->pid ? " pid " : "", a->pid ? "(given)" : "");
	if (a->fo.format == MM_FAULT_TABLE)
		printf("#\n");
	int r = mm_fault_print_compare(stdout, &side[0], &side[1], a->totals, a->fo.format,
				       a->fo.sep ? a->fo.sep : ",", a->fo.width);
	return r < 0 || fflush(stdout) != 0 ? 1 : 0;
}

/* The options that need more than storing what they got (report_option). */
enum { O_PID, O_TOP, O_SORT, O_CSV };

/* One option of parse_args()'s table (mm_cmd_parse's callback): 0, or -EINVAL after saying why. */
static int report_option(void *ctx, int id, const char *arg)
{
	struct args *a = ctx;
	char err[512];

	switch (id) {
	case O_PID:
		if (mm_parse_ulong(arg, 1, INT32_MAX, &a->pid) < 0) {
			fprintf(stderr, "mmlockd report: bad --pid '%s'\n", arg);
			return -EINVAL;
		}
		break;
	case O_TOP:
		if (mm_parse_ulong(arg, 0, UINT32_MAX, &a->top) < 0) {
			fprintf(stderr,
				"mmlockd report: bad --top '%s' (a count of lines; 0: all)\n", arg);
			return -EINVAL;
		}
		a->top_given = true;
		break;
	case O_SORT:
		if (mm_fault_parse_sort(&a->fo, arg, err, sizeof(err)) < 0) {
			fprintf(stderr, "mmlockd report: --sort: %s\n", err);
			return -EINVAL;
		}
		break;
	case O_CSV:
		if (!arg[0]) {
			fprintf(stderr, "mmlockd report: -x needs a separator\n");
			return -EINVAL;
		}
		a->fo.format = MM_FAULT_CSV;
		a->fo.sep = arg;
		break;
	}
	return 0;
}

/* The output options of @a: what goes together, the format, the table's size. 0 or -EINVAL after
 * saying why. */
static int check_outputs(struct args *a)
{
	if (a->json && a->fo.format == MM_FAULT_CSV) {
		fprintf(stderr, "mmlockd report: -x and --json exclude each other\n");
		return -EINVAL;
	}
	if (a->json)
		a->fo.format = MM_FAULT_JSON;
	/* A table for a person: the first 20 lines, as wide as the terminal. CSV and JSON are
	 * for programs: every row and column unless --top says otherwise. */
	if (!a->top_given && a->fo.format == MM_FAULT_TABLE)
		a->top = DEFAULT_TOP;
	a->fo.top = a->top;
	if (!a->wide && a->fo.format == MM_FAULT_TABLE)
		a->fo.width = term_width();
	if (a->locks + a->waits + !!a->cmp[0] + a->fo.by_cgroup > 1) {
		fprintf(stderr, "mmlockd report: --locks, --waits, --compare and --units exclude "
				"each other\n");
		return -EINVAL;
	}
	if ((a->locks || a->waits) && a->fo.format == MM_FAULT_CSV) {
		fprintf(stderr, "mmlockd report: --locks and --waits have --json (the rows of GET "
				"/api/v1/locks), not -x\n");
		return -EINVAL;
	}
	if ((a->seed || a->detail) && !a->locks) {
		fprintf(stderr, "mmlockd report: --seed-table and --detail go with --locks\n");
		return -EINVAL;
	}
	if (a->seed && a->detail) {
		fprintf(stderr, "mmlockd report: --seed-table and --detail exclude each other\n");
		return -EINVAL;
	}
	if ((a->labels || a->throughput) && !a->cmp[0]) {
		fprintf(stderr, "mmlockd report: --labels and --throughput go with --compare\n");
		return -EINVAL;
	}
	return 0;
}

/* The times and --compare's ranges of @a, parsed. 0 or -EINVAL after saying why. */
static int check_times(struct args *a)
{
	for (int k = 0; k < 2; k++) {
		const char *t = k ? a->until : a->since;
		if (t && mm_parse_time(t, a->now, k ? &a->until_s : &a->since_s) < 0) {
			fprintf(stderr,
				"mmlockd report: bad time '%s' for --%s (unix seconds, 'now', 15m, "
				"2h, 7d, or YYYY-MM-DD[ HH:MM[:SS]])\n",
				t, k ? "until" : "since");
			return -EINVAL;
		}
	}
	if (a->since_s > a->until_s) {
		fprintf(stderr, "mmlockd report: --since is after --until\n");
		return -EINVAL;
	}
	for (int k = 0; a->cmp[0] && k < 2; k++) {
		double x, y;
		int pr;
		if (access(a->cmp[k], F_OK) != 0 && strstr(a->cmp[k], "..") &&
		    (pr = parse_range(a->cmp[k], a->now, &x, &y)) < 0) {
			if (pr == -ERANGE)
				fprintf(stderr,
					"mmlockd report: bad range '%s' for --compare: it starts "
					"after "
					"it ends (durations count back from now, so the longer "
					"comes "
					"first, as in '3m..1m')\n",
					a->cmp[k]);
			else
				fprintf(stderr,
					"mmlockd report: bad range '%s' for --compare: "
					"SINCE..UNTIL, "
					"each a time as for --since (15m, 2h, 'YYYY-MM-DD HH:MM', "
					"unix seconds), either may be empty\n",
					a->cmp[k]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Parses the command line into @a. Returns 0, 1 after --help, or -EINVAL after saying why. */
static int parse_args(int argc, char **argv, struct args *a)
{
	const struct mm_cmd_opt opts[] = {
		[O_PID] = {"pid", 0, true, NULL, .set = NULL},
		[O_TOP] = {"top", 0, true, NULL, .set = NULL},
		[O_SORT] = {"sort", 0, true, NULL, .set = NULL},
		[O_CSV] = {"field-separator", 'x', true, NULL, .set = NULL},
		{"locks", 0, false, NULL, .set = &a->locks},
		{"waits", 0, false, NULL, .set = &a->waits},
		{"seed-table", 0, false, NULL, .set = &a->seed},
		{"detail", 0, false, NULL, .set = &a->detail},
		{"json", 0, false, NULL, .set = &a->json},
		{"wide", 0, false, NULL, .set = &a->wide},
		{"totals", 0, false, NULL, .set = &a->totals},
		{"units", 0, false, NULL, .set = &a->fo.by_cgroup},
		{"db", 0, true, NULL, .value = &a->db},
		{"since", 0, true, NULL, .value = &a->since},
		{"until", 0, true, NULL, .value = &a->until},
		{"cgroup", 0, true, NULL, .value = &a->cgroup},
		{"comm", 0, true, NULL, .value = &a->comm},
		{"compare", 0, true, NULL, .value = &a->cmp[0]}, /* B is the operand */
		{"labels", 0, true, NULL, .value = &a->labels},
		{"throughput", 0, true, NULL, .value = &a->throughput},
		{0},
	};
	const struct mm_cmd cmd = {"report", usage, opts, false, report_option, a};
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	int first = mm_cmd_parse(&cmd, &cfg, argc, argv);
	if (first == 0)
		return 1;
	if (first < 0)
		return -EINVAL;
	/* --compare's second operand. */
	if (a->cmp[0]) {
		if (first >= argc) {
			fprintf(stderr, "mmlockd report: --compare needs two operands, A B\n");
			return -EINVAL;
		}
		a->cmp[1] = argv[first++];
	}
	if (first < argc) {
		fprintf(stderr, "mmlockd report: unexpected argument '%s'\n", argv[first]);
		return -EINVAL;
	}
	if (check_outputs(a) < 0 || check_times(a) < 0)
		return -EINVAL;
	return 0;
}

int mm_cmd_report(int argc, char **argv)
{
	struct args a = {.db = MM_DEFAULT_DB, .fo = {.sort = {0, -1}}};
	a.now = (double)time(NULL);
	a.until_s = a.now;
	a.fo.sort[0] = mm_fault_column_find("faults");

	int r = parse_args(argc, argv, &a);
	if (r > 0)
		return 0; /* --help */
	if (r < 0)
		return 2; /* said why, in one line */
	if (a.locks || a.waits)
		return report_locks(&a);
	if (a.cmp[0])
		return report_compare(&a);
	return report_faults(&a);
}
