/*
 * Replay of a recording (see replay.h). Two passes over the file: the first collects the
 * metadata, tracepoint formats and kernel symbols; the second feeds PROC answers, records, ticks
 * and horizon advances to the host in the order the live run saw them. The host's window clock
 * (clock.h) closes the windows, the same code as in the live daemon, closing tick included; the
 * sinks here are the run tally, the lock accumulator and, with --db, the store. Nothing depends
 * on the machine replaying, so the output is the same everywhere, every time.
 *
 * A recording is input from anywhere: every loop is bounded by the file (the clock closes at most
 * two windows per record), and impossible sizes and time stamps are refused with their offset.
 */
#include "replay.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <traceevent/event-parse.h>

#include "cmdline.h"
#include "config.h"
#include "host.h"
#include "locktable.h"
#include "log.h"
#include "parse.h"
#include "plugin.h"
#include "recording.h"
#include "store.h"
#include "symbols.h"
#include "tally.h"

static const char usage[] =
	"Usage: mmlockd replay FILE [--db PATH] [--interval SECONDS] [--locks [--seed-table]]\n"
	"                           [--log-level LEVEL]\n"
	"\n"
	"Runs the collectors on a recording made by `mmlockd record` and prints, per process, the\n"
	"fault outcomes, mmap_lock acquisitions, waits and their sources, then the events per\n"
	"tracepoint. With --db, also writes the windows to that SQLite database (process_stats,\n"
	"lock_stats). With --locks, prints the lock contention table instead, in perf lock\n"
	"contention's columns, or with --seed-table in seed 004's (max, min, avg, sum, count,\n"
	"blocked function).\n";

/* A recording is made before it is replayed: a record later than now (with a day for the clocks
 * of two machines to disagree) is corruption. */
#define LATEST_SLACK_MS 86400000ull

struct answer {
	uint32_t pid;
	int result;
	bool used;
	struct mm_proc_ident id;
};

struct replay {
	struct answer *answers;
	size_t nanswers, cap;
	struct mm_host *host;
	struct mm_store *store;
	struct mm_tally *tally;
	struct mm_snap_lock *locks; /* summed over windows */
	size_t nlocks;
	int64_t mono_to_wall_ms;
	unsigned interval_s;
	uint64_t recorded_at_ms;
	char collectors[256], kernel[256];
	int store_err;
};

/* The live run's answer to the same question, in the same order. */
static int lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	struct replay *rp = ctx;
	for (size_t i = 0; i < rp->nanswers; i++) {
		struct answer *a = &rp->answers[i];
		if (a->used || a->pid != pid)
			continue;
		a->used = true;
		if (a->result == 0)
			*ret = a->id;
		return a->result;
	}
	return -ENOENT;
}

static int add_answer(struct replay *rp, const struct mm_chunk *c)
{
	struct answer a = {0};
	if (mm_rec_parse_proc(c, &a.pid, &a.result, &a.id) < 0)
		return -EINVAL;
	if (mm_grow((void **)&rp->answers, &rp->cap, rp->nanswers + 1, sizeof(*rp->answers), 256) <
	    0)
		return -ENOMEM;
	rp->answers[rp->nanswers++] = a;
	return 0;
}

/* The replay's sink: the tally, the lock rows summed over windows, the store. */
static void sink(void *ctx, struct mm_snapshot *w)
{
	struct replay *rp = ctx;

	if (mm_tally_add(rp->tally, w) < 0 ||
	    mm_lock_rows_append(&rp->locks, &rp->nlocks, w->locks, w->nlocks) < 0)
		rp->store_err = -ENOMEM;
	if (rp->store) {
		int r = mm_store_write_window(rp->store, w);
		if (r < 0 && !rp->store_err)
			rp->store_err = r;
	}
}

/* The collectors to run: the recorded ones that read tracepoints (a collector reading /proc, like
 * vmstat, would read this machine's, not the recording's). */
static void replay_collectors(const char *recorded, char *buf, size_t size)
{
	struct mm_config probe;
	mm_config_defaults(&probe);
	snprintf(probe.collectors, sizeof(probe.collectors), "%s", recorded);
	mm_config_continuous(&probe);
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; mm_plugins[i]; i++) {
		if (!mm_plugins[i]->tracepoints ||
		    !mm_config_collector_enabled(&probe, mm_plugins[i]->name))
			continue;
		n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", mm_plugins[i]->name);
		if (n >= size)
			break;
	}
}

/* Logs why reading @path stopped at the reader's offset; returns -EINVAL. */
static int corrupt(const char *path, struct mm_rec_reader *rd, const char *why)
{
	log_error("%s: corrupt recording at offset %lld: %s", path, mm_rec_offset(rd), why);
	return -EINVAL;
}

static void read_meta(struct replay *rp, const struct mm_chunk *c)
{
	char value[256];
	unsigned long long v;

	if (mm_rec_meta_get(c, "collectors", value, sizeof(value)) == 0)
		snprintf(rp->collectors, sizeof(rp->collectors), "%s", value);
	if (mm_rec_meta_get(c, "kernel", value, sizeof(value)) == 0)
		snprintf(rp->kernel, sizeof(rp->kernel), "%s", value);
	if (mm_rec_meta_get(c, "recorded_at_ms", value, sizeof(value)) == 0 &&
	    mm_parse_number(value, NULL, 0, UINT64_MAX, &v) == 0)
		rp->recorded_at_ms = v;
	if (mm_rec_meta_get(c, "mono_to_wall_ms", value, sizeof(value)) == 0)
		rp->mono_to_wall_ms = strtoll(value, NULL, 10);
	if (!rp->interval_s && mm_rec_meta_get(c, "interval_s", value, sizeof(value)) == 0 &&
	    mm_parse_number(value, NULL, 1, 3600, &v) == 0)
		rp->interval_s = (unsigned)v;
}

/* Pass 1: metadata and symbols. */
static int read_header(struct replay *rp, const char *path, struct mm_rec_reader *rd,
		       struct mm_symbols *syms)
{
	struct mm_chunk c;
	int r;

	while ((r = mm_rec_next(rd, &c)) > 0) {
		uint64_t addr;
		char type;
		const char *name;

		if (c.type == MM_CHUNK_META)
			read_meta(rp, &c);
		else if (c.type == MM_CHUNK_SYMBOL &&
			 mm_rec_parse_symbol(&c, &addr, &type, &name) == 0 &&
			 mm_symbols_add(syms, addr, type, name) < 0)
			return log_error_errno(ENOMEM, "out of memory");
	}
	if (r < 0)
		return corrupt(path, rd, mm_rec_error(rd));
	mm_symbols_sort(syms);
	if (!rp->interval_s)
		rp->interval_s = 10;
	return 0;
}

/* Whether the first @len bytes of a format (its lines before "print fmt:") are printable text
 * (tabs and newlines aside) whose field declarations close every '[' they open before their ';'.
 * libtraceevent 1.7 reads an array size up to its ']' and dereferences NULL at the end of the
 * text when there is none (fuzz_replay found `__data_loc char[\x1d memcg_path;`). */
static bool fields_well_formed(const char *format, size_t len)
{
	int depth = 0;
	bool in_decl = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)format[i];
		if (ch == '\n') {
			if (depth)
				return false;
			in_decl = false;
			continue;
		}
		if ((ch < 0x20 && ch != '\t') || ch > 0x7e)
			return false;
		if (!in_decl) {
			/* A declaration runs from "field:" to its first ';'. */
			in_decl = i + 6 <= len && !strncmp(format + i, "field:", 6) &&
				  (i == 0 || format[i - 1] == '\t' || format[i - 1] == '\n');
			if (in_decl)
				i += 5;
			continue;
		}
		if (ch == '[')
			depth++;
		else if (ch == ']' && --depth < 0)
			return false;
		else if (ch == ';') {
			if (depth)
				return false;
			in_decl = false;
		}
	}
	return depth == 0;
}

/* Parses a recorded tracepoint format into *ret for its fields only. Collectors read fields
 * by name and never print an event, so the "print fmt:" line is replaced by an empty one:
 * libtraceevent 1.7 dereferences NULL on some malformed print arguments (fuzz_replay found
 * `__print_flags(REC->longs, ...)`, a field that does not exist), and a recording is input from
 * anywhere; the fields are checked first (fields_well_formed()). Returns 0, -EINVAL when they
 * are malformed or libtraceevent refuses them, or -ENOMEM. */
static int parse_fields(struct tep_handle *tep, struct tep_event **ret, const char *format,
			const char *system)
{
	static const char empty_print[] = "print fmt: \"\"\n";
	const char *print = strstr(format, "\nprint fmt:");
	size_t head = print ? (size_t)(print - format) + 1 : strlen(format);
	if (!fields_well_formed(format, head))
		return -EINVAL;
	char *text = malloc(head + sizeof(empty_print));
	if (!text)
		return -ENOMEM;
	memcpy(text, format, head);
	memcpy(text + head, empty_print, sizeof(empty_print));
	enum tep_errno e = tep_parse_format(tep, ret, text, strlen(text), system);
	free(text);
	return e == TEP_ERRNO__SUCCESS ? 0 : -EINVAL;
}

/* The streams, in index order (the order they were recorded in). */
static int add_streams(struct replay *rp, const char *path, struct mm_rec_reader *rd,
		       struct tep_handle *tep)
{
	struct mm_chunk c;
	int r;

	while ((r = mm_rec_next(rd, &c)) > 0) {
		struct mm_rec_stream st;
		struct tep_event *ev = NULL;

		if (c.type != MM_CHUNK_STREAM)
			continue;
		if (mm_rec_parse_stream(&c, &st) < 0 || st.index != mm_host_nstreams(rp->host))
			return corrupt(path, rd, "the stream table is inconsistent");
		if (st.is_task) {
			r = mm_host_add_task_stream(rp->host, st.sample_type,
						    st.sample_type ? NULL : "not recorded");
		} else {
			if (st.format[0] && parse_fields(tep, &ev, st.format, st.system) < 0)
				ev = NULL;
			r = mm_host_add_tp(rp->host, st.system, st.name, ev, st.sample_type,
					   ev ? NULL : "not recorded");
		}
		if (r < 0)
			return log_error_errno(r, "out of memory");
	}
	return r < 0 ? corrupt(path, rd, mm_rec_error(rd)) : 0;
}

/* Pass 2: the run. */
static int feed(struct replay *rp, const char *path, struct mm_rec_reader *rd)
{
	struct mm_rec_feeder f = {.host = rp->host,
				  .mono_to_wall_ms = rp->mono_to_wall_ms,
				  .latest_ms = (uint64_t)time(NULL) * 1000 + LATEST_SLACK_MS};
	struct mm_chunk c;
	char why[160];
	int r;

	while ((r = mm_rec_next(rd, &c)) > 0) {
		if (c.type == MM_CHUNK_PROC && add_answer(rp, &c) < 0)
			return corrupt(path, rd, "malformed process chunk");
		if (mm_rec_feed(&f, &c, why, sizeof(why)) < 0)
			return corrupt(path, rd, why);
	}
	if (r < 0)
		return corrupt(path, rd, mm_rec_error(rd));
	mm_host_finish(rp->host);
	/* After a step back the start of the recording is ahead of the last window: not a bound. */
	mm_host_close_now(rp->host, f.step_at_ns || f.last_ms > rp->recorded_at_ms
					    ? f.last_ms
					    : rp->recorded_at_ms);
	return 0;
}

static int start_host(struct replay *rp, struct mm_symbols *syms)
{
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	cfg.interval_s = rp->interval_s;
	replay_collectors(rp->collectors, cfg.collectors, sizeof(cfg.collectors));
	mm_config_continuous(&cfg);
	rp->host = mm_host_new(&cfg, lookup, rp, rp->recorded_at_ms);
	if (!rp->host || mm_host_add_sink(rp->host, sink, rp) < 0)
		return log_error_errno(ENOMEM, "out of memory");
	mm_host_set_clock_offset(rp->host, rp->mono_to_wall_ms);
	mm_host_set_symbols(rp->host, syms);
	mm_host_set_kernel(rp->host, rp->kernel);
	return 0;
}

static int replay_file(const char *path, const char *db, unsigned interval_s, int locks)
{
	struct mm_rec_reader *rd = NULL;
	struct tep_handle *tep = tep_alloc();
	struct mm_symbols *syms = mm_symbols_new();
	struct replay rp = {.interval_s = interval_s, .collectors = "all"};
	int r;

	rp.tally = mm_tally_new();
	if (!tep || !syms || !rp.tally) {
		r = log_error_errno(ENOMEM, "out of memory");
		goto out;
	}
	r = mm_rec_open(path, &rd);
	if (r < 0) {
		log_error_errno(r,
				r == -EINVAL ? "%s: not an mmlockd recording"
				: r == -ENOEXEC
					? "%s: compressed with xz, which could not "
					  "decompress it (xz says why above; package xz-utils)"
					: "cannot open %s: %m",
				path);
		goto out;
	}
	if ((r = read_header(&rp, path, rd, syms)) < 0 || (r = start_host(&rp, syms)) < 0)
		goto out;
	if (db && (r = mm_store_open(db, &rp.store)) < 0)
		goto out;
	if ((r = mm_rec_rewind(rd)) < 0 || (r = add_streams(&rp, path, rd, tep)) < 0)
		goto out;
	mm_host_start(rp.host);
	if ((r = mm_rec_rewind(rd)) < 0 || (r = feed(&rp, path, rd)) < 0)
		goto out;
	if (rp.store_err < 0) {
		r = log_error_errno(rp.store_err, "writing the windows failed: %m");
		goto out;
	}
	if (locks)
		mm_locktable_print(stdout, rp.locks, rp.nlocks, locks > 1);
	else
		mm_tally_print(rp.tally, stdout);
	r = 0;
out:
	mm_store_close(rp.store);
	mm_host_free(rp.host);
	mm_tally_free(rp.tally);
	mm_symbols_free(syms);
	if (tep)
		tep_free(tep);
	mm_rec_close(rd);
	free(rp.answers);
	free(rp.locks);
	return r;
}

struct replay_args {
	const char *db;
	bool interval, locks, seed;
};

int mm_cmd_replay(int argc, char **argv)
{
	struct replay_args a = {0};
	const struct mm_cmd_opt opts[] = {
		{"log-level", 0, true, "log_level", NULL, NULL},
		{"db", 0, true, NULL, .value = &a.db},
		{"interval", 0, true, "interval", .set = &a.interval},
		{"locks", 0, false, NULL, .set = &a.locks},
		{"seed-table", 0, false, NULL, .set = &a.seed},
		{0},
	};
	const struct mm_cmd cmd = {"replay", usage, opts, false, NULL, NULL};
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	int first = mm_cmd_parse(&cmd, &cfg, argc, argv);
	if (first <= 0)
		return first < 0 ? 2 : 0;
	if (first + 1 != argc) {
		log_error("mmlockd replay: exactly one recording file expected");
		fputs(usage, stderr);
		return 2;
	}
	if (a.seed && !a.locks) {
		log_error("mmlockd replay: --seed-table goes with --locks");
		return 2;
	}
	mm_log_set_level(cfg.log_level);
	return replay_file(argv[first], a.db, a.interval ? cfg.interval_s : 0, a.locks + a.seed) < 0
		       ? 1
		       : 0;
}
