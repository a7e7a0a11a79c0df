/*
 * Replay of a recording (see replay.h). Two passes over the file: the first collects the
 * metadata, tracepoint formats and kernel symbols; the second feeds PROC answers, records and
 * ticks to the host in the order the live run saw them, closing windows on the recorded clock.
 * Nothing depends on the machine replaying, so the output is the same everywhere, every time.
 */
#include "replay.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <traceevent/event-parse.h>

#include "config.h"
#include "host.h"
#include "locktable.h"
#include "log.h"
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
	uint64_t next_end_ms;
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
	if (rp->nanswers == rp->cap) {
		size_t cap = rp->cap ? rp->cap * 2 : 256;
		struct answer *n = realloc(rp->answers, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		rp->answers = n;
		rp->cap = cap;
	}
	rp->answers[rp->nanswers++] = a;
	return 0;
}

static void set_next_end(struct replay *rp, uint64_t after_ms)
{
	uint64_t iv = (uint64_t)rp->interval_s * 1000;
	rp->next_end_ms = (after_ms / iv + 1) * iv;
}

static void close_window(struct replay *rp, uint64_t end_ms)
{
	struct mm_snapshot *w = mm_host_close_window(rp->host, end_ms);
	if (!w)
		return;
	if (mm_tally_add(rp->tally, w) < 0 ||
	    mm_lock_rows_append(&rp->locks, &rp->nlocks, w->locks, w->nlocks) < 0)
		rp->store_err = -ENOMEM;
	if (rp->store) {
		int r = mm_store_write_window(rp->store, w);
		if (r < 0 && !rp->store_err)
			rp->store_err = r;
	}
	mm_snapshot_unref(w);
	set_next_end(rp, end_ms);
}

static uint64_t wall_of(const struct replay *rp, uint64_t mono_ns)
{
	int64_t ms = (int64_t)(mono_ns / 1000000) + rp->mono_to_wall_ms;
	return ms > 0 ? (uint64_t)ms : 0;
}

/* The collectors to run: the recorded ones that read tracepoints (a collector reading /proc, like
 * vmstat, would read this machine's, not the recording's). */
static void replay_collectors(const char *recorded, char *buf, size_t size)
{
	struct mm_config probe;
	mm_config_defaults(&probe);
	snprintf(probe.collectors, sizeof(probe.collectors), "%s", recorded);
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

static int run(const char *path, const char *db, unsigned interval_s, int locks)
{
	struct mm_rec_reader *rd = NULL;
	struct tep_handle *tep = tep_alloc();
	struct mm_symbols *syms = mm_symbols_new();
	struct replay rp = {.interval_s = interval_s};
	struct mm_chunk c;
	char value[256], collectors[256] = "all", kernel[256] = "";
	uint64_t recorded_at_ms = 0, last_ms = 0;
	int r;

	rp.tally = mm_tally_new();
	if (!tep || !syms || !rp.tally) {
		r = log_error_errno(ENOMEM, "out of memory");
		goto out;
	}
	r = mm_rec_open(path, &rd);
	if (r < 0) {
		log_error_errno(
			r, r == -EINVAL ? "%s: not an mmlockd recording" : "cannot open %s: %m",
			path);
		goto out;
	}

	/* Pass 1: metadata and symbols. */
	while ((r = mm_rec_next(rd, &c)) > 0) {
		if (c.type == MM_CHUNK_META) {
			if (mm_rec_meta_get(&c, "collectors", value, sizeof(value)) == 0)
				snprintf(collectors, sizeof(collectors), "%s", value);
			if (mm_rec_meta_get(&c, "kernel", value, sizeof(value)) == 0)
				snprintf(kernel, sizeof(kernel), "%s", value);
			if (mm_rec_meta_get(&c, "recorded_at_ms", value, sizeof(value)) == 0)
				recorded_at_ms = strtoull(value, NULL, 10);
			if (mm_rec_meta_get(&c, "mono_to_wall_ms", value, sizeof(value)) == 0)
				rp.mono_to_wall_ms = strtoll(value, NULL, 10);
			if (!rp.interval_s &&
			    mm_rec_meta_get(&c, "interval_s", value, sizeof(value)) == 0)
				rp.interval_s = (unsigned)strtoul(value, NULL, 10);
		} else if (c.type == MM_CHUNK_SYMBOL) {
			uint64_t addr;
			char type;
			const char *name;
			if (mm_rec_parse_symbol(&c, &addr, &type, &name) == 0 &&
			    mm_symbols_add(syms, addr, type, name) < 0) {
				r = log_error_errno(ENOMEM, "out of memory");
				goto out;
			}
		}
	}
	if (r < 0) {
		log_error("%s: truncated or corrupt recording: %s", path, mm_rec_error(rd));
		goto out;
	}
	mm_symbols_sort(syms);
	if (!rp.interval_s)
		rp.interval_s = 10;

	struct mm_config cfg;
	mm_config_defaults(&cfg);
	cfg.interval_s = rp.interval_s;
	replay_collectors(collectors, cfg.collectors, sizeof(cfg.collectors));
	rp.host = mm_host_new(&cfg, lookup, &rp, recorded_at_ms);
	if (!rp.host) {
		r = log_error_errno(ENOMEM, "out of memory");
		goto out;
	}
	mm_host_set_clock_offset(rp.host, rp.mono_to_wall_ms);
	mm_host_set_symbols(rp.host, syms);
	mm_host_set_kernel(rp.host, kernel);
	if (db && (r = mm_store_open(db, &rp.store)) < 0)
		goto out;

	/* Streams, in index order (the order they were recorded in). */
	mm_rec_rewind(rd);
	while ((r = mm_rec_next(rd, &c)) > 0) {
		struct mm_rec_stream st;
		if (c.type != MM_CHUNK_STREAM)
			continue;
		if (mm_rec_parse_stream(&c, &st) < 0 || st.index != mm_host_nstreams(rp.host)) {
			r = -EINVAL;
			log_error("%s: stream table is inconsistent", path);
			goto out;
		}
		if (st.is_task) {
			mm_host_add_task_stream(rp.host, st.sample_type,
						st.sample_type ? NULL : "not recorded");
			continue;
		}
		struct tep_event *ev = NULL;
		if (st.format[0] && tep_parse_format(tep, &ev, st.format, strlen(st.format),
						     st.system) != TEP_ERRNO__SUCCESS)
			ev = NULL;
		mm_host_add_tp(rp.host, st.system, st.name, ev, st.sample_type,
			       ev ? NULL : "not recorded");
	}
	mm_host_start(rp.host);
	set_next_end(&rp, recorded_at_ms);

	/* Pass 2: the run. */
	mm_rec_rewind(rd);
	while ((r = mm_rec_next(rd, &c)) > 0) {
		if (c.type == MM_CHUNK_PROC) {
			if ((r = add_answer(&rp, &c)) < 0)
				break;
		} else if (c.type == MM_CHUNK_TICK) {
			mm_host_tick(rp.host);
		} else if (c.type == MM_CHUNK_RECORD) {
			unsigned stream;
			uint64_t t;
			const struct perf_event_header *hdr;
			if (mm_rec_parse_record(&c, &stream, &t, &hdr) < 0) {
				r = -EINVAL;
				break;
			}
			if (t) {
				uint64_t ms = wall_of(&rp, t);
				while (ms >= rp.next_end_ms)
					close_window(&rp, rp.next_end_ms);
				if (ms > last_ms)
					last_ms = ms;
			}
			mm_host_record(rp.host, stream, hdr);
		}
	}
	if (r < 0) {
		log_error("%s: truncated or corrupt recording: %s", path, mm_rec_error(rd));
		goto out;
	}
	mm_host_finish(rp.host);
	close_window(&rp, last_ms > recorded_at_ms ? last_ms : recorded_at_ms);
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

int mm_cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{"db", required_argument, NULL, 'b'},
		{"interval", required_argument, NULL, 'i'},
		{"log-level", required_argument, NULL, 'l'},
		{"locks", no_argument, NULL, 'k'},
		{"seed-table", no_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *db = NULL;
	unsigned interval = 0;
	int c, locks = 0;
	bool seed = false;
	char err[256];
	struct mm_config cfg;

	mm_config_defaults(&cfg);
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			db = optarg;
			break;
		case 'i':
		case 'l':
			if (mm_config_set(&cfg, c == 'i' ? "interval" : "log_level", optarg, err,
					  sizeof(err)) < 0) {
				fprintf(stderr, "mmlockd replay: %s\n", err);
				return 2;
			}
			if (c == 'i')
				interval = cfg.interval_s;
			break;
		case 'k':
			locks = 1;
			break;
		case 's':
			seed = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "mmlockd replay: exactly one recording file expected\n%s", usage);
		return 2;
	}
	if (seed && !locks) {
		fprintf(stderr, "mmlockd replay: --seed-table goes with --locks\n");
		return 2;
	}
	mm_log_set_level(cfg.log_level);
	return run(argv[optind], db, interval, locks + seed) < 0 ? 1 : 0;
}
