/*
 * mmlockd's entry point and collection loop.
 *
 * Start-up: configuration, tracefs and tracepoint formats, one perf stream per tracepoint the
 * enabled collectors want (a missing tracepoint or a permission problem only disables the
 * collectors that need it), the store thread, the HTTP server. Then one loop on one thread:
 * epoll over the ring fds (woken at a quarter full), a 100 ms timer and a signalfd. Each round
 * drains every ring into the ordering queue and delivers the records older than the previous
 * round's start to the collectors in time order; windows close when that horizon passes their
 * end, and the closed window goes to the store thread. Once a second a snapshot is published for
 * HTTP. SIGTERM/SIGINT: drain, close the open window, store it, exit 0. SIGHUP: reload the
 * configuration file.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <traceevent/event-parse.h>
#include <unistd.h>

#include "bpfsource.h"
#include "config.h"
#include "host.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "order.h"
#include "replay.h"
#include "report.h"
#include "recording.h"
#include "sampler.h"
#include "snapshot.h"
#include "symbols.h"
#include "tally.h"
#include "tracefs.h"
#include "writer.h"

#define ROUND_MS 100

struct daemon {
	struct mm_config cfg;
	int argc;
	char **argv;
	struct mm_host *host;
	struct tep_handle *tep;
	struct mm_sampler *sampler;
	struct mm_order *order;
	struct mm_writer *writer;
	struct mm_http *http;
	struct mm_symbols *syms;
	struct mm_bpfsrc *bpf; /* in-kernel counters, when they run */
	char tracefs[256];
	int64_t mono_to_wall_ms;
	uint64_t prev_round_ns; /* start of the previous drain round (CLOCK_MONOTONIC) */
	uint64_t next_end_ms;	/* wall time the open window ends */
	uint64_t next_end_mono_ns;
	uint64_t watchdog_usec;
	uint64_t records, order_drops;
	uint64_t last_delivered_ns, late_records;

	/* mmlockd record: */
	struct mm_recorder *rec;
	const char *rec_path;
	unsigned duration_s;
	char **command; /* run this and record its process tree */
	pid_t child;
	int child_status;
	struct mm_tally *tally;
	uint32_t follow[64]; /* --pid */
	unsigned nfollow;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

static void set_next_end(struct daemon *d, uint64_t after_ms)
{
	/* Windows end on multiples of the interval, so 10 s windows end at :00, :10, ... */
	uint64_t iv = (uint64_t)d->cfg.interval_s * 1000;
	d->next_end_ms = (after_ms / iv + 1) * iv;
	int64_t mono_ms = (int64_t)d->next_end_ms - d->mono_to_wall_ms;
	d->next_end_mono_ns = mono_ms > 0 ? (uint64_t)mono_ms * 1000000ull : 0;
}

/* Runs the collectors' periodic work; a recording notes when, so replay ticks at the same
 * point of the record stream. */
static void tick(struct daemon *d, bool closing)
{
	mm_bpfsrc_collect(d->bpf, d->host, closing);
	if (closing)
		mm_host_tick_closing(d->host);
	else
		mm_host_tick(d->host);
	if (d->rec)
		mm_recorder_tick(d->rec, d->last_delivered_ns);
}

static void close_window(struct daemon *d, uint64_t end_ms)
{
	tick(d, true); /* let periodic collectors account up to the boundary */
	struct mm_snapshot *w = mm_host_close_window(d->host, end_ms);
	if (w && d->writer) {
		mm_writer_submit(d->writer, w);
	} else if (w) {
		if (d->tally && mm_tally_add(d->tally, w) < 0)
			log_error("out of memory tallying a window");
		mm_snapshot_unref(w);
	} else
		log_error("out of memory closing a window; its counts stay in the totals only");
	set_next_end(d, end_ms);
}

static void deliver(void *ctx, unsigned stream, uint64_t time_ns,
		    const struct perf_event_header *hdr)
{
	struct daemon *d = ctx;
	while (time_ns >= d->next_end_mono_ns)
		close_window(d, d->next_end_ms);
	if (time_ns < d->last_delivered_ns)
		d->late_records++;
	else
		d->last_delivered_ns = time_ns;
	uint64_t type = mm_host_sample_type(d->host, stream);
	bool is_task = mm_host_stream_is_task(d->host, stream);
	if (d->rec && !mm_recorder_wants(d->rec, hdr, type, is_task))
		return;
	mm_host_record(d->host, stream, hdr);
	/* Written after the collectors saw it: the process lookups it caused come first. */
	if (d->rec)
		mm_recorder_record(d->rec, stream, time_ns, hdr, type);
	d->records++;
}

/* One drain round; @final delivers everything queued. */
static void round_once(struct daemon *d, bool final)
{
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	if (d->sampler && mm_sampler_drain(d->sampler, d->order) < 0 && !d->order_drops++)
		log_warning("ordering queue: out of memory; records stay in the rings");
	/* A record stamped before the previous round started had a whole round to reach its
	 * ring, so everything below that horizon is complete and can go out in order. */
	uint64_t horizon = final ? UINT64_MAX : d->prev_round_ns;
	mm_order_flush(d->order, horizon, deliver, d);
	d->prev_round_ns = start;
	/* Close windows whose end the horizon passed even when no record crossed it. */
	while (!final && horizon >= d->next_end_mono_ns)
		close_window(d, d->next_end_ms);
}

static void publish(struct daemon *d)
{
	uint64_t stored = 0, errors = 0;
	mm_writer_stats(d->writer, &stored, &errors);
	mm_host_set_store_stats(d->host, stored, errors);
	struct mm_snapshot *s = mm_host_snapshot(d->host, wall_ms());
	if (s)
		mm_snapshot_publish(s);
}

struct open_ctx {
	struct daemon *d;
	const char *tracefs_error;
};

static void open_tp(void *vctx, const char *system, const char *name, bool callchain,
		    const char *filter)
{
	struct open_ctx *c = vctx;
	struct daemon *d = c->d;
	char err[256] = "";
	struct tep_event *ev = NULL;
	int id = -1;
	uint64_t sample_type = 0;
	unsigned stream = mm_host_nstreams(d->host);
	char *format = NULL;

	if (c->tracefs_error)
		snprintf(err, sizeof(err), "%s", c->tracefs_error);
	else if (mm_tracefs_event(d->tracefs, d->tep, system, name, &ev, &id, &format, err,
				  sizeof(err)) == 0) {
		if (!d->sampler)
			snprintf(err, sizeof(err), "perf sampler unavailable");
		else
			mm_sampler_add_tp(d->sampler, stream, id, callchain, filter, &sample_type,
					  err, sizeof(err));
	}
	if (err[0])
		log_warning("tracepoint %s:%s: %s", system, name, err);
	else
		log_debug("tracepoint %s:%s: sampling (id %d%s%s%s)", system, name, id,
			  filter ? ", filter \"" : "", filter ? filter : "", filter ? "\"" : "");
	mm_host_add_tp(d->host, system, name, ev, sample_type, err[0] ? err : NULL);
	if (d->rec)
		mm_recorder_stream(d->rec, stream, false, sample_type, system, name,
				   err[0] || !format ? "" : format);
	free(format);
}

static int setup_sampling(struct daemon *d)
{
	char tf_err[256] = "";
	struct open_ctx c = {d, NULL};

	if (mm_tracefs_find(d->tracefs, sizeof(d->tracefs), tf_err, sizeof(tf_err)) < 0) {
		log_error("tracefs: %s", tf_err);
		c.tracefs_error = tf_err;
	}
	d->tep = tep_alloc();
	if (!d->tep)
		return log_error_errno(ENOMEM, "libtraceevent: out of memory");
	int r = mm_sampler_new(d->cfg.ring_pages, &d->sampler);
	if (r < 0) {
		log_error_errno(r, "perf sampler: %m");
		d->sampler = NULL;
	}
	/* Before the tracepoints: collectors counted in the kernel need no perf stream. A
	 * recording keeps the raw records, so it always samples. */
	if (!d->rec) {
		r = mm_bpfsrc_open(d->host, &d->cfg, d->syms, &d->bpf);
		if (r < 0)
			return r;
	}
	mm_host_wanted(d->host, open_tp, &c);

	char err[256] = "";
	uint64_t task_type = 0;
	unsigned stream = mm_host_nstreams(d->host);
	if (!d->sampler)
		snprintf(err, sizeof(err), "perf sampler unavailable");
	else
		mm_sampler_add_task(d->sampler, stream, &task_type, err, sizeof(err));
	if (err[0])
		log_warning("task records (process names and exits): %s", err);
	mm_host_add_task_stream(d->host, task_type, err[0] ? err : NULL);
	if (d->rec)
		mm_recorder_stream(d->rec, stream, true, task_type, "perf", "task", "");
	mm_host_start(d->host);
	return 0;
}

/* mmlockd record: starts the command to record, if any, now that sampling runs. */
static int start_recording(struct daemon *d)
{
	d->tally = mm_tally_new();
	if (!d->tally)
		return log_error_errno(ENOMEM, "out of memory");
	if (d->command) {
		d->child = fork();
		if (d->child < 0)
			return log_error_errno(errno, "fork: %m");
		if (d->child == 0) {
			sigset_t none;
			sigemptyset(&none);
			pthread_sigmask(SIG_SETMASK, &none, NULL);
			execvp(d->command[0], d->command);
			fprintf(stderr, "mmlockd record: cannot run %s: %s\n", d->command[0],
				strerror(errno));
			_exit(127);
		}
		mm_recorder_follow(d->rec, (uint32_t)d->child, true);
		log_info("recording %s (pid %d) into %s", d->command[0], (int)d->child,
			 d->rec_path);
	} else {
		log_info("recording %s%u seconds into %s",
			 d->duration_s ? "" : "until stopped, at most ", d->duration_s,
			 d->rec_path);
	}
	return 0;
}

/* Whether the recording should stop: the duration passed, or the recorded command exited (its
 * last records are drained by the final round). */
static bool recording_done(struct daemon *d, uint64_t now_ms, uint64_t stop_ms)
{
	if (stop_ms && now_ms >= stop_ms)
		return true;
	if (d->child > 0 && waitpid(d->child, &d->child_status, WNOHANG) == d->child) {
		d->child = -1;
		return true;
	}
	return false;
}

static int finish_recording(struct daemon *d)
{
	if (d->child > 0) {
		kill(d->child, SIGTERM);
		waitpid(d->child, &d->child_status, 0);
	}
	uint64_t n = mm_recorder_count(d->rec);
	int r = mm_recorder_close(d->rec);
	d->rec = NULL;
	if (r < 0)
		return log_error_errno(r, "writing %s failed: %m", d->rec_path);
	mm_tally_print(d->tally, stdout);
	log_info("recorded %llu records into %s", (unsigned long long)n, d->rec_path);
	if (d->command && WIFEXITED(d->child_status) && WEXITSTATUS(d->child_status))
		log_warning("%s exited with status %d", d->command[0],
			    WEXITSTATUS(d->child_status));
	return 0;
}

static void reload(struct daemon *d)
{
	struct mm_config n;
	enum mm_command cmd;
	char err[512];
	if (mm_config_from_args(&n, d->argc, d->argv, &cmd, err, sizeof(err)) < 0) {
		log_error("reload: %s; keeping the running configuration", err);
		return;
	}
	if (strcmp(n.db_path, d->cfg.db_path) || strcmp(n.listen, d->cfg.listen) ||
	    n.ring_pages != d->cfg.ring_pages || strcmp(n.collectors, d->cfg.collectors) ||
	    strcmp(n.source, d->cfg.source))
		log_warning("reload: db, listen, ring_pages, collectors and source take effect at "
			    "restart, ignoring their changes");
	mm_log_set_level(n.log_level);
	mm_http_set_top_n(d->http, n.top_n);
	mm_writer_set_retention(d->writer, n.retention_days);
	if (n.interval_s != d->cfg.interval_s) {
		d->cfg.interval_s = n.interval_s;
		mm_host_set_interval(d->host, n.interval_s);
		set_next_end(d, wall_ms());
	}
	d->cfg.top_n = n.top_n;
	d->cfg.retention_days = n.retention_days;
	d->cfg.log_level = n.log_level;
	log_info("reloaded configuration: interval %us, top %u, retention %u days",
		 d->cfg.interval_s, d->cfg.top_n, d->cfg.retention_days);
}

static int run(struct daemon *d)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* Blocked before any thread starts, so only the signalfd sees them. */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	d->mono_to_wall_ms = (int64_t)(clock_ns(CLOCK_REALTIME) / 1000000) -
			     (int64_t)(clock_ns(CLOCK_MONOTONIC) / 1000000);
	uint64_t start_ms = wall_ms();
	int r;

	d->syms = mm_symbols_new();
	if (!d->syms)
		return log_error_errno(ENOMEM, "out of memory");
	char sym_err[256];
	r = mm_symbols_load_kallsyms(d->syms, "/proc/kallsyms", sym_err, sizeof(sym_err));
	if (r < 0)
		log_warning("kernel symbols: %s", sym_err);
	else
		log_debug("kernel symbols: %d loaded", r);
	if (d->rec_path) {
		r = mm_recorder_open(d->rec_path, d->syms, &d->rec);
		if (r < 0)
			return log_error_errno(r, "cannot create %s: %m", d->rec_path);
		for (unsigned i = 0; i < d->nfollow; i++)
			mm_recorder_follow(d->rec, d->follow[i], false);
	}
	d->host = mm_host_new(&d->cfg, d->rec ? mm_recorder_lookup : NULL, d->rec, start_ms);
	d->order = mm_order_new();
	if (!d->host || !d->order)
		return log_error_errno(ENOMEM, "out of memory");
	mm_host_set_clock_offset(d->host, d->mono_to_wall_ms);
	mm_host_set_symbols(d->host, d->syms);

	if (!d->rec) {
		/* HTTP first: a taken port fails before the database is created or migrated. */
		r = mm_http_start(d->cfg.listen, d->cfg.db_path, d->cfg.top_n, &d->http);
		if (r < 0)
			return r;
		r = mm_writer_start(d->cfg.db_path, d->cfg.retention_days, &d->writer);
		if (r < 0)
			return r;
	}
	r = setup_sampling(d);
	if (r < 0)
		return r;
	if (d->rec) {
		char meta[512];
		struct mm_snapshot *s = mm_host_snapshot(d->host, start_ms);
		snprintf(meta, sizeof(meta),
			 "kernel=%s\nrecorded_at_ms=%llu\nmono_to_wall_ms=%lld\ninterval_s=%u\n"
			 "collectors=%s\n",
			 s ? s->kernel : "", (unsigned long long)start_ms,
			 (long long)d->mono_to_wall_ms, d->cfg.interval_s, d->cfg.collectors);
		mm_snapshot_unref(s);
		mm_recorder_meta(d->rec, meta);
	}

	int ep = epoll_create1(EPOLL_CLOEXEC);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || sfd < 0 || tfd < 0)
		return log_error_errno(errno, "cannot set up the event loop: %m");
	struct itimerspec its = {{0, ROUND_MS * 1000000L}, {0, ROUND_MS * 1000000L}};
	timerfd_settime(tfd, 0, &its, NULL);
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = 1};
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &e);
	e.data.u64 = 2;
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e);
	if (d->sampler) {
		r = mm_sampler_watch(d->sampler, ep);
		if (r < 0)
			return log_error_errno(r, "cannot watch the perf rings: %m");
		mm_sampler_enable(d->sampler);
	}
	d->prev_round_ns = clock_ns(CLOCK_MONOTONIC);
	set_next_end(d, start_ms);
	uint64_t last_tick_ms = wall_ms(), stop_ms = 0;
	if (d->rec) {
		r = start_recording(d);
		if (r < 0)
			return r;
		stop_ms = d->duration_s ? last_tick_ms + d->duration_s * 1000ull : 0;
	} else {
		publish(d);
		mm_notify_watchdog_usec(&d->watchdog_usec);
		mm_notify("READY=1\nSTATUS=collecting");
		log_info("mmlockd %s: collecting; %u-second windows into %s; serving http://%s/",
			 MM_VERSION, d->cfg.interval_s, d->cfg.db_path, d->cfg.listen);
	}

	r = 0;
	bool running = true;
	while (running) {
		struct epoll_event evs[16];
		int n = epoll_wait(ep, evs, 16, 1000);
		if (n < 0 && errno != EINTR)
			return log_error_errno(errno, "epoll_wait: %m");
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 == 1) {
				struct signalfd_siginfo si;
				while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						reload(d);
					} else {
						log_info("received %s, stopping",
							 strsignal((int)si.ssi_signo));
						running = false;
					}
				}
			} else if (evs[i].data.u64 == 2) {
				uint64_t ticks;
				if (read(tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					log_debug("timerfd: %m");
			}
		}
		round_once(d, false);
		uint64_t now = wall_ms();
		if (d->rec && recording_done(d, now, stop_ms))
			running = false;
		if (now - last_tick_ms >= 1000) {
			last_tick_ms = now;
			tick(d, false);
			if (!d->rec)
				publish(d);
			if (d->watchdog_usec)
				mm_notify("WATCHDOG=1");
		}
	}

	mm_notify("STOPPING=1");
	if (d->sampler)
		mm_sampler_disable(d->sampler);
	round_once(d, true);
	mm_host_finish(d->host);
	close_window(d, wall_ms());
	if (d->rec)
		r = finish_recording(d);
	else
		publish(d);
	close(tfd);
	close(sfd);
	close(ep);
	return r < 0 ? r : 0;
}

static const char record_usage[] =
	"Usage: mmlockd record -o FILE [--duration SECONDS] [--pid PID]... [--collectors LIST]\n"
	"                      [--ring-pages N] [--log-level LEVEL] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Samples the same tracepoints as the daemon and writes the raw records, with the "
	"tracepoint\n"
	"formats, the process identities and the kernel symbols they need, to FILE; `mmlockd "
	"replay\n"
	"FILE` runs the collectors on it again anywhere. Prints the per-process table at the end.\n"
	"\n"
	"  -o, --output FILE     the recording to write (required)\n"
	"  -d, --duration SECS   stop after SECS seconds (default 10; with COMMAND: when it "
	"exits)\n"
	"  -p, --pid PID         keep only this process's records (repeatable; default: all)\n"
	"      --collectors LIST collectors to run (default all)\n"
	"      --ring-pages N    perf ring pages per tracepoint per CPU (default 256)\n"
	"      --log-level L     err|warning|notice|info|debug (default info)\n"
	"  COMMAND               run it once sampling runs, keep only its process tree, stop when "
	"it\n"
	"                        exits\n";

/* Parses `mmlockd record ...` (argv[0] is "record") into @d. Returns 0, 1 after --help, or
 * -EINVAL after printing why. */
static int parse_record(struct daemon *d, int argc, char **argv)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"collectors", required_argument, NULL, 'c'},
		{"ring-pages", required_argument, NULL, 'r'},
		{"log-level", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char err[256];
	int c;
	bool duration_given = false;

	mm_config_defaults(&d->cfg);
	/* A recording is for classifying offline: every collector, not the daemon's cheap set. */
	snprintf(d->cfg.collectors, sizeof(d->cfg.collectors), "all");
	d->duration_s = 10;
	optind = 0;
	while ((c = getopt_long(argc, argv, "+o:d:p:h", opts, NULL)) != -1) {
		char *end;
		unsigned long v;
		switch (c) {
		case 'o':
			d->rec_path = optarg;
			break;
		case 'd':
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v > 86400) {
				fprintf(stderr, "mmlockd record: bad --duration '%s' (0..86400)\n",
					optarg);
				return -EINVAL;
			}
			d->duration_s = (unsigned)v;
			duration_given = true;
			break;
		case 'p':
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || !v || v > 0x3fffffff || d->nfollow == 64) {
				fprintf(stderr, "mmlockd record: bad --pid '%s'\n", optarg);
				return -EINVAL;
			}
			d->follow[d->nfollow++] = (uint32_t)v;
			break;
		case 'c':
		case 'r':
		case 'l': {
			const char *key = c == 'c'   ? "collectors"
					  : c == 'r' ? "ring_pages"
						     : "log_level";
			if (mm_config_set(&d->cfg, key, optarg, err, sizeof(err)) < 0) {
				fprintf(stderr, "mmlockd record: %s\n", err);
				return -EINVAL;
			}
			break;
		}
		case 'h':
			fputs(record_usage, stdout);
			return 1;
		default:
			fputs(record_usage, stderr);
			return -EINVAL;
		}
	}
	if (!d->rec_path) {
		fprintf(stderr, "mmlockd record: -o FILE is required\n%s", record_usage);
		return -EINVAL;
	}
	if (optind < argc) {
		d->command = argv + optind;
		if (!duration_given)
			d->duration_s = 0;
	}
	if (mm_host_check_collectors(&d->cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "mmlockd record: %s\n", err);
		return -EINVAL;
	}
	d->cfg.interval_s = 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct daemon d = {.argc = argc, .argv = argv};
	enum mm_command cmd;
	char err[512];

	if (argc > 1 && !strcmp(argv[1], "report"))
		return mm_cmd_report(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "replay"))
		return mm_cmd_replay(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "record")) {
		int n = parse_record(&d, argc - 1, argv + 1);
		if (n != 0)
			return n < 0 ? 2 : 0;
		mm_log_set_level(d.cfg.log_level);
		goto run;
	}

	if (mm_config_from_args(&d.cfg, argc, argv, &cmd, err, sizeof(err)) < 0 ||
	    (cmd == MM_CMD_RUN && mm_host_check_collectors(&d.cfg, err, sizeof(err)) < 0)) {
		log_error("mmlockd: %s; try 'mmlockd --help'", err);
		return 2;
	}
	if (cmd == MM_CMD_HELP) {
		fputs(mm_config_usage(), stdout);
		return 0;
	}
	if (cmd == MM_CMD_VERSION) {
		printf("mmlockd %s\n", MM_VERSION);
		return 0;
	}
	mm_log_set_level(d.cfg.log_level);

run:;
	int r = run(&d);

	mm_http_stop(d.http);
	int w = mm_writer_stop(d.writer);
	mm_sampler_free(d.sampler);
	mm_bpfsrc_free(d.bpf);
	mm_recorder_close(d.rec);
	mm_tally_free(d.tally);
	mm_host_free(d.host);
	mm_symbols_free(d.syms);
	if (d.tep)
		tep_free(d.tep);
	mm_order_free(d.order);
	mm_snapshot_publish(NULL);
	if (r < 0)
		return 1;
	log_info("stopped; %llu records processed, %llu out of order",
		 (unsigned long long)d.records, (unsigned long long)d.late_records);
	return w < 0 ? 1 : 0;
}
