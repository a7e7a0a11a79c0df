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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <traceevent/event-parse.h>
#include <unistd.h>

#include "config.h"
#include "host.h"
#include "http.h"
#include "log.h"
#include "notify.h"
#include "order.h"
#include "sampler.h"
#include "snapshot.h"
#include "symbols.h"
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
	char tracefs[256];
	int64_t mono_to_wall_ms;
	uint64_t prev_round_ns; /* start of the previous drain round (CLOCK_MONOTONIC) */
	uint64_t next_end_ms;	/* wall time the open window ends */
	uint64_t next_end_mono_ns;
	uint64_t watchdog_usec;
	uint64_t records, order_drops;
	uint64_t last_delivered_ns, late_records;
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

static void close_window(struct daemon *d, uint64_t end_ms)
{
	mm_host_tick(d->host); /* let periodic collectors account up to the boundary */
	struct mm_snapshot *w = mm_host_close_window(d->host, end_ms);
	if (w)
		mm_writer_submit(d->writer, w);
	else
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
	mm_host_record(d->host, stream, hdr);
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

static void open_tp(void *vctx, const char *system, const char *name, bool callchain)
{
	struct open_ctx *c = vctx;
	struct daemon *d = c->d;
	char err[256] = "";
	struct tep_event *ev = NULL;
	int id = -1;
	uint64_t sample_type = 0;
	unsigned stream = mm_host_nstreams(d->host);

	if (c->tracefs_error)
		snprintf(err, sizeof(err), "%s", c->tracefs_error);
	else if (mm_tracefs_event(d->tracefs, d->tep, system, name, &ev, &id, err, sizeof(err)) ==
		 0) {
		if (!d->sampler)
			snprintf(err, sizeof(err), "perf sampler unavailable");
		else
			mm_sampler_add_tp(d->sampler, stream, id, callchain, &sample_type, err,
					  sizeof(err));
	}
	if (err[0])
		log_warning("tracepoint %s:%s: %s", system, name, err);
	else
		log_debug("tracepoint %s:%s: sampling (id %d)", system, name, id);
	mm_host_add_tp(d->host, system, name, ev, sample_type, err[0] ? err : NULL);
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
	d->syms = mm_symbols_new();
	if (!d->syms)
		return log_error_errno(ENOMEM, "out of memory");
	char sym_err[256];
	r = mm_symbols_load_kallsyms(d->syms, "/proc/kallsyms", sym_err, sizeof(sym_err));
	if (r < 0)
		log_warning("kernel symbols: %s", sym_err);
	else
		log_debug("kernel symbols: %d loaded", r);
	mm_host_set_symbols(d->host, d->syms);
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
	mm_host_start(d->host);
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
	    n.ring_pages != d->cfg.ring_pages || strcmp(n.collectors, d->cfg.collectors))
		log_warning("reload: db, listen, ring_pages and collectors take effect at restart, "
			    "ignoring their changes");
	mm_log_set_level(n.log_level);
	mm_http_set_top_n(d->http, n.top_n);
	mm_writer_set_retention(d->writer, n.retention_days);
	if (n.interval_s != d->cfg.interval_s) {
		d->cfg.interval_s = n.interval_s;
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
	d->host = mm_host_new(&d->cfg, NULL, NULL, start_ms);
	d->order = mm_order_new();
	if (!d->host || !d->order)
		return log_error_errno(ENOMEM, "out of memory");
	mm_host_set_clock_offset(d->host, d->mono_to_wall_ms);

	int r = mm_writer_start(d->cfg.db_path, d->cfg.retention_days, &d->writer);
	if (r < 0)
		return r;
	r = setup_sampling(d);
	if (r < 0)
		return r;
	r = mm_http_start(d->cfg.listen, d->cfg.db_path, d->cfg.top_n, &d->http);
	if (r < 0)
		return r;

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
	publish(d);
	mm_notify_watchdog_usec(&d->watchdog_usec);
	mm_notify("READY=1\nSTATUS=collecting");
	log_info("mmlockd %s: collecting; %u-second windows into %s; serving http://%s/",
		 MM_VERSION, d->cfg.interval_s, d->cfg.db_path, d->cfg.listen);

	uint64_t last_tick_ms = wall_ms();
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
		if (now - last_tick_ms >= 1000) {
			last_tick_ms = now;
			mm_host_tick(d->host);
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
	publish(d);
	close(tfd);
	close(sfd);
	close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	struct daemon d = {.argc = argc, .argv = argv};
	enum mm_command cmd;
	char err[512];

	if (mm_config_from_args(&d.cfg, argc, argv, &cmd, err, sizeof(err)) < 0 ||
	    (cmd == MM_CMD_RUN && mm_host_check_collectors(&d.cfg, err, sizeof(err)) < 0)) {
		fprintf(stderr, "mmlockd: %s\nTry 'mmlockd --help'.\n", err);
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

	int r = run(&d);

	mm_http_stop(d.http);
	int w = mm_writer_stop(d.writer);
	mm_sampler_free(d.sampler);
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
