/*
 * `mmlockd report` (see report.h): reads the history read-only, so it runs next to a live daemon
 * (WAL lets readers in while the writer writes) and on a database copied from another machine.
 * Lock rows are summed over the windows of the range by the store and printed by locktable.c.
 */
#include "report.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "locktable.h"
#include "log.h"
#include "parse.h"
#include "store.h"

static const char usage[] =
	"Usage: mmlockd report --locks [OPTIONS]\n"
	"Print the lock contention mmlockd stored, summed over a time range.\n"
	"\n"
	"  --locks          the lock contention table (perf lock contention's columns:\n"
	"                   contended, total wait, max wait, avg wait, type, caller)\n"
	"  --seed-table     instead: max, min, max-min, avg and sum of the wait in ms, count,\n"
	"                   blocked function (the layout of linux-mm rmap lock reports)\n"
	"  --detail         instead: one line per process and lock, with min and p99 wait\n"
	"  --db PATH        database (default " MM_DEFAULT_DB ")\n"
	"  --since T        windows ending after T (default: the oldest)\n"
	"  --until T        windows starting before T (default: now)\n"
	"  --pid N          only process N\n"
	"  --top N          at most N lines\n"
	"  --help           show this text\n"
	"\n"
	"T is unix seconds, 'now', a duration before now (90s, 15m, 2h, 7d) or a local time\n"
	"'YYYY-MM-DD[ HH:MM[:SS]]'. Callers are named as by `perf lock contention --stack-skip "
	"0`.\n";

int mm_cmd_report(int argc, char **argv)
{
	enum { O_LOCKS = 256, O_SEED, O_DETAIL, O_DB, O_SINCE, O_UNTIL, O_PID, O_TOP, O_HELP };
	static const struct option opts[] = {
		{"locks", no_argument, NULL, O_LOCKS},
		{"seed-table", no_argument, NULL, O_SEED},
		{"detail", no_argument, NULL, O_DETAIL},
		{"db", required_argument, NULL, O_DB},
		{"since", required_argument, NULL, O_SINCE},
		{"until", required_argument, NULL, O_UNTIL},
		{"pid", required_argument, NULL, O_PID},
		{"top", required_argument, NULL, O_TOP},
		{"help", no_argument, NULL, O_HELP},
		{NULL, 0, NULL, 0},
	};
	const char *db = MM_DEFAULT_DB, *since_s = NULL, *until_s = NULL;
	bool locks = false, seed = false, detail = false;
	unsigned long pid = 0, top = 0;
	struct mm_snap_lock *rows = NULL;
	struct mm_store *st = NULL;
	double now = (double)time(NULL), since = 0, until = now;
	size_t n = 0;
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case O_LOCKS:
			locks = true;
			break;
		case O_SEED:
			seed = true;
			break;
		case O_DETAIL:
			detail = true;
			break;
		case O_DB:
			db = optarg;
			break;
		case O_SINCE:
			since_s = optarg;
			break;
		case O_UNTIL:
			until_s = optarg;
			break;
		case O_PID:
			if (mm_parse_ulong(optarg, 1, INT32_MAX, &pid) < 0) {
				fprintf(stderr, "mmlockd report: bad --pid '%s'\n", optarg);
				goto usage_error;
			}
			break;
		case O_TOP:
			if (mm_parse_ulong(optarg, 1, UINT32_MAX, &top) < 0) {
				fprintf(stderr, "mmlockd report: bad --top '%s'\n", optarg);
				goto usage_error;
			}
			break;
		case O_HELP:
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "mmlockd report: unknown option or missing value in '%s'\n",
				argv[optind - 1]);
			goto usage_error;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "mmlockd report: unexpected argument '%s'\n", argv[optind]);
		goto usage_error;
	}
	if (!locks) {
		fprintf(stderr, "mmlockd report: say what to report (--locks)\n");
		goto usage_error;
	}
	if (seed && detail) {
		fprintf(stderr, "mmlockd report: --seed-table and --detail exclude each other\n");
		goto usage_error;
	}
	for (int k = 0; k < 2; k++) {
		const char *t = k ? until_s : since_s;
		if (t && mm_parse_time(t, now, k ? &until : &since) < 0) {
			fprintf(stderr,
				"mmlockd report: bad time '%s' for --%s (unix seconds, 'now', 15m, "
				"2h, 7d, or YYYY-MM-DD[ HH:MM[:SS]])\n",
				t, k ? "until" : "since");
			goto usage_error;
		}
	}
	if (since > until) {
		fprintf(stderr, "mmlockd report: --since is after --until\n");
		goto usage_error;
	}

	r = mm_store_open_readonly(db, &st);
	if (r < 0)
		return 1; /* logged */
	r = mm_store_locks(st, pid ? (int)pid : -1, since, until, 0, &rows, &n);
	mm_store_close(st);
	if (r < 0)
		return 1;
	if (!n)
		fprintf(stderr, "mmlockd report: no lock contention stored in %s for that range\n",
			db);
	if (detail) {
		if (top && n > top)
			n = top;
		mm_locktable_print_detail(stdout, rows, n);
	} else {
		n = mm_lock_rows_merge(rows, n, true);
		if (top && n > top)
			n = top;
		mm_locktable_print(stdout, rows, n, seed);
	}
	free(rows);
	return fflush(stdout) == 0 ? 0 : 1;

usage_error:
	fprintf(stderr, "Try 'mmlockd report --help'.\n");
	return 2;
}
