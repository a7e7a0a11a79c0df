/*
 * The live pipeline and its loop (see live.h).
 *
 * Records are time-ordered across rings by the ordering queue: a record stamped before the
 * previous round started had a whole round to reach its ring, so everything below that horizon
 * is complete and can go to the host in order; the host's window clock closes windows on the
 * record times and on the horizon (so an idle system still gets its windows). What used to be
 * here and is now the host's: the window clock, the recorder's filter and taps, the sinks.
 *
 * One cleanup style: every function that acquires releases at one `out:` label; destructors
 * accept NULL.
 */
#include "live.h"

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

#include "bpfsource.h"
#include "plugin.h"
#include "taskiter.h"
#include "log.h"
#include "order.h"
#include "sampler.h"
#include "symbols.h"
#include "tracefs.h"

#define ROUND_MS 100
#define MAX_FDS	 (8 + MM_HOST_MAX_WATCHES)

struct watch {
	int fd; /* -1: the rings (registered by the sampler, one entry for all) */
	mm_live_handler fn;
	void *ctx;
};

struct mm_live {
	struct mm_config cfg;
	int64_t mono_to_wall_ms;
	uint64_t start_ms;
	sigset_t signals;
	struct mm_symbols *syms;
	struct tep_handle *tep;
	struct mm_sampler *sampler;
	struct mm_order *order;
	struct mm_host *host;
	struct mm_bpfsrc *bpf;	   /* in-kernel counters (source auto/bpf), when they run */
	struct mm_taskiter *tasks; /* the task iterator (source auto/bpf), when it loads */
	struct mm_live_hooks hooks;
	char tracefs[256];
	const char *tracefs_error; /* while opening streams */
	uint64_t prev_round_ns;	   /* start of the previous drain round (CLOCK_MONOTONIC) */
	bool order_warned;
	struct watch watches[MAX_FDS];
	unsigned nwatches;
	int duty_fd;	     /* timerfd at the next phase edge of the duty cycle (duty.h) */
	enum mm_phase phase; /* the streams are switched for this one */
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

/* Whether an enabled collector reads tracepoints: only then do tracefs and kernel symbols
 * (callchains, the fault path's address on BPF) matter enough to warn when they are missing. */
static bool tracepoints_wanted(const struct mm_config *cfg)
{
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		if ((*p)->tracepoints && (*p)->tracepoints[0].name &&
		    mm_config_collector_enabled(cfg, (*p)->name))
			return true;
	return false;
}

static int load_symbols(struct mm_live *l)
{
	char err[256];

	l->syms = mm_symbols_new();
	if (!l->syms)
		return log_error_errno(ENOMEM, "out of memory");
	int r = mm_symbols_load_kallsyms(l->syms, "/proc/kallsyms", err, sizeof(err));
	if (r < 0)
		mm_log(tracepoints_wanted(&l->cfg) ? LOG_WARNING : LOG_DEBUG, "kernel symbols: %s",
		       err);
	else
		log_debug("kernel symbols: %d loaded", r);
	return 0;
}

int mm_live_new(const struct mm_config *cfg, struct mm_live **ret)
{
	struct mm_live *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return log_error_errno(ENOMEM, "out of memory");
	l->cfg = *cfg;
	l->duty_fd = -1;
	sigemptyset(&l->signals);
	sigaddset(&l->signals, SIGTERM);
	sigaddset(&l->signals, SIGINT);
	sigaddset(&l->signals, SIGHUP);
	r = -pthread_sigmask(SIG_BLOCK, &l->signals, NULL);
	if (r < 0) {
		log_error_errno(r, "cannot block signals: %m");
		goto fail;
	}
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		r = log_error_errno(errno, "cannot ignore SIGPIPE: %m");
		goto fail;
	}
	l->mono_to_wall_ms = (int64_t)(clock_ns(CLOCK_REALTIME) / 1000000) -
			     (int64_t)(clock_ns(CLOCK_MONOTONIC) / 1000000);
	l->start_ms = wall_ms();
	r = load_symbols(l);
	if (r < 0)
		goto fail;
	l->order = mm_order_new();
	l->tep = tep_alloc();
	if (!l->order || !l->tep) {
		r = log_error_errno(ENOMEM, "out of memory");
		goto fail;
	}
	*ret = l;
	return 0;
fail:
	mm_live_free(l);
	return r;
}

void mm_live_free(struct mm_live *l)
{
	if (!l)
		return;
	mm_sampler_free(l->sampler);
	mm_bpfsrc_free(l->bpf);
	mm_host_free(l->host);
	mm_taskiter_free(l->tasks); /* after the host: a collector's last scan may read it */
	mm_symbols_free(l->syms);
	if (l->tep)
		tep_free(l->tep);
	mm_order_free(l->order);
	free(l);
}

const struct mm_symbols *mm_live_symbols(const struct mm_live *l)
{
	return l->syms;
}

uint64_t mm_live_start_ms(const struct mm_live *l)
{
	return l->start_ms;
}

int64_t mm_live_mono_to_wall_ms(const struct mm_live *l)
{
	return l->mono_to_wall_ms;
}

struct mm_host *mm_live_host(struct mm_live *l)
{
	return l->host;
}

/* Registers the stream in the host (which gives it its index), then opens it. A tracepoint
 * that cannot be opened is listed with the reason; only an allocation failure is fatal. */
static int open_tp(void *ctx, const char *system, const char *name, bool callchain,
		   const char *filter)
{
	struct mm_live *l = ctx;
	char err[256] = "";
	struct tep_event *ev = NULL;
	char *format = NULL;
	uint64_t sample_type = 0;
	int id = -1;

	if (l->tracefs_error)
		mm_set_err(err, sizeof(err), "%s", l->tracefs_error);
	else if (mm_tracefs_event(l->tracefs, l->tep, system, name, &ev, &id, &format, err,
				  sizeof(err)) == 0 &&
		 !l->sampler)
		mm_set_err(err, sizeof(err), "perf sampler unavailable");
	int stream = mm_host_add_tp(l->host, system, name, ev, 0, "not opened");
	if (stream < 0) {
		free(format);
		return log_error_errno(stream, "out of memory");
	}
	/* A rare event (cgroup moves) gets small rings: each ring page is touched at start. */
	unsigned pages = mm_host_tp_rare(l->host, system, name) ? MM_RARE_RING_PAGES : 0;
	if (!err[0])
		mm_sampler_add_tp(l->sampler, (unsigned)stream, id, callchain, filter, pages,
				  &sample_type, err, sizeof(err));
	if (err[0])
		log_warning("tracepoint %s:%s: %s", system, name, err);
	else
		log_debug("tracepoint %s:%s: sampling (id %d%s%s%s)", system, name, id,
			  filter ? ", filter \"" : "", filter ? filter : "", filter ? "\"" : "");
	mm_host_stream_opened(l->host, (unsigned)stream, sample_type, err[0] ? err : NULL);
	if (l->hooks.stream)
		l->hooks.stream(l->hooks.ctx, (unsigned)stream, false, sample_type, system, name,
				err[0] || !format ? "" : format);
	free(format);
	return 0;
}

static int open_task_stream(struct mm_live *l)
{
	char err[256] = "";
	uint64_t type = 0;
	int stream = mm_host_add_task_stream(l->host, 0, "not opened");

	if (stream < 0)
		return log_error_errno(stream, "out of memory");
	if (!l->sampler)
		mm_set_err(err, sizeof(err), "perf sampler unavailable");
	else
		mm_sampler_add_task(l->sampler, (unsigned)stream, &type, err, sizeof(err));
	if (err[0])
		log_warning("task records (process names and exits): %s", err);
	mm_host_stream_opened(l->host, (unsigned)stream, type, err[0] ? err : NULL);
	if (l->hooks.stream)
		l->hooks.stream(l->hooks.ctx, (unsigned)stream, true, type, "perf", "task", "");
	return 0;
}

/* Switches the cycled collector's streams for @phase: evidence before the opener on the way in,
 * the opener first on the way out (duty.h). */
static void set_cycled_streams(struct mm_live *l, enum mm_phase phase)
{
	unsigned n = mm_host_nstreams(l->host);
	for (int pass = 0; pass < 2; pass++) {
		enum mm_stream_role role = pass == (phase == MM_PHASE_ON ? 0 : 1)
						   ? MM_STREAM_EVIDENCE
						   : MM_STREAM_OPENER;
		bool on = role == MM_STREAM_OPENER ? phase == MM_PHASE_ON : phase != MM_PHASE_OFF;
		for (unsigned i = 0; i < n; i++)
			if (mm_host_stream_role(l->host, i) == role)
				mm_sampler_hold(l->sampler, i, !on);
	}
	mm_bpfsrc_set_phase(l->bpf, phase);
	l->phase = phase;
}

/* Follows the duty cycle: switches the streams when the phase changed and sets the timer
 * to the next edge. */
static void follow_duty(struct mm_live *l)
{
	uint64_t next;
	enum mm_phase ph = mm_host_phase(l->host, clock_ns(CLOCK_MONOTONIC), &next);
	if (!l->sampler || next == UINT64_MAX || l->duty_fd < 0)
		return;
	if (ph != l->phase)
		set_cycled_streams(l, ph);
	struct itimerspec its = {{0, 0},
				 {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)}};
	if (timerfd_settime(l->duty_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		log_warning("duty cycle timer: %m, ignoring");
}

int mm_live_open(struct mm_live *l, const struct mm_live_hooks *hooks, mm_proc_lookup_fn lookup,
		 void *lookup_ctx, const struct mm_tap *tap, void *tap_ctx)
{
	char tf_err[256] = "";
	int r;

	if (hooks)
		l->hooks = *hooks;
	l->host = mm_host_new(&l->cfg, lookup, lookup_ctx, l->start_ms);
	if (!l->host)
		return log_error_errno(ENOMEM, "out of memory");
	mm_host_set_clock_offset(l->host, l->mono_to_wall_ms);
	mm_host_set_symbols(l->host, l->syms);
	mm_host_set_tap(l->host, tap, tap_ctx);
	if (mm_tracefs_find(l->tracefs, sizeof(l->tracefs), tf_err, sizeof(tf_err)) < 0) {
		/* Not an error for an unprivileged --collectors totals,vmstat. */
		mm_log(tracepoints_wanted(&l->cfg) ? LOG_ERR : LOG_DEBUG, "tracefs: %s", tf_err);
		l->tracefs_error = tf_err;
	}
	r = mm_sampler_new(l->cfg.ring_pages, &l->sampler);
	if (r < 0) {
		log_error_errno(r, "perf sampler: %m");
		l->sampler = NULL;
	}
	/* Before the tracepoints: collectors counted in the kernel need no perf stream. */
	r = mm_bpfsrc_open(l->host, &l->cfg, l->syms, &l->bpf);
	if (r < 0)
		return r;
	if (l->bpf)
		mm_host_set_counter_source(l->host, mm_bpfsrc_collect, l->bpf);
	bool tasks_wanted = false;
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++)
		tasks_wanted |=
			(*p)->reads_tasks && mm_config_collector_enabled(&l->cfg, (*p)->name);
	/* Its load parses the kernel's BTF once more: only for a collector that reads tasks. */
	l->tasks = tasks_wanted ? mm_taskiter_open(&l->cfg) : NULL;
	if (l->tasks)
		mm_host_set_task_reader(l->host, mm_taskiter_read, l->tasks);
	const char *latency_why;
	if (l->cfg.fault_latency && !mm_host_latency_sampled(l->host, &latency_why))
		log_warning("fault latency not sampled: %s", latency_why);
	r = mm_host_wanted(l->host, open_tp, l);
	if (r >= 0)
		r = open_task_stream(l);
	l->tracefs_error = NULL;
	if (r < 0)
		return r;
	mm_host_start(l->host);
	if (!tap && !mm_host_needs_symbols(l->host)) {
		/* The defaults on BPF: nothing reads them any more (a recording keeps them). */
		mm_host_set_symbols(l->host, NULL);
		mm_symbols_free(l->syms);
		l->syms = NULL;
		log_debug("kernel symbols: released, no running collector looks addresses up");
	}
	if (l->sampler) {
		set_cycled_streams(l, MM_PHASE_OFF);
		mm_sampler_enable(l->sampler);
	}
	return 0;
}

int mm_live_watch(struct mm_live *l, int fd, mm_live_handler fn, void *ctx)
{
	if (l->nwatches == MAX_FDS)
		return log_error_errno(ENOSPC, "event loop: more than %d fds", MAX_FDS);
	l->watches[l->nwatches++] = (struct watch){fd, fn, ctx};
	return 0;
}

static void feed(void *ctx, unsigned stream, uint64_t time_ns, const struct perf_event_header *hdr)
{
	mm_host_feed(ctx, stream, time_ns, hdr);
}

/* One drain round; @final delivers everything queued. */
static void round_once(struct mm_live *l, bool final)
{
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	if (l->sampler && mm_sampler_drain(l->sampler, l->order) < 0 && !l->order_warned) {
		l->order_warned = true;
		log_warning("ordering queue: out of memory; records stay in the rings");
	}
	uint64_t horizon = final ? UINT64_MAX : l->prev_round_ns;
	mm_order_flush(l->order, horizon, feed, l->host);
	l->prev_round_ns = start;
	if (!final)
		mm_host_advance(l->host, horizon);
}

/* Reads the wall clock's offset again: the window clock follows a step (clock.h). */
static void observe_clock(struct mm_live *l)
{
	uint64_t mono_ns = clock_ns(CLOCK_MONOTONIC);
	int64_t offset_ms =
		(int64_t)(clock_ns(CLOCK_REALTIME) / 1000000) - (int64_t)(mono_ns / 1000000);

	mm_host_observe_clock(l->host, offset_ms, mono_ns);
}

static int on_signal(void *ctx, int fd)
{
	struct mm_live *l = ctx;
	struct signalfd_siginfo si;
	ssize_t n;

	while ((n = read(fd, &si, sizeof(si))) == sizeof(si)) {
		if (si.ssi_signo != SIGHUP) {
			log_info("received %s, stopping", strsignal((int)si.ssi_signo));
			return MM_LIVE_STOP;
		}
		if (l->hooks.reload)
			l->hooks.reload(l->hooks.ctx);
	}
	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return log_error_errno(errno, "signalfd: %m");
	return MM_LIVE_CONTINUE;
}

static int on_timer(void *ctx, int fd)
{
	uint64_t ticks;
	if (read(fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN && errno != EINTR)
		return log_error_errno(errno, "timerfd: %m");
	return MM_LIVE_CONTINUE;
}

/* A collector's own fd (mm_host_watch). */
static int on_source(void *ctx, int fd)
{
	struct mm_live *l = ctx;
	for (unsigned i = 0; mm_host_watched_fd(l->host, i) >= 0; i++)
		if (mm_host_watched_fd(l->host, i) == fd)
			mm_host_watch_ready(l->host, i);
	return MM_LIVE_CONTINUE;
}

static int on_rings(void *ctx, int fd)
{
	return MM_LIVE_CONTINUE; /* every wakeup is followed by a drain round */
}

/* Creates the loop's own fds, adds them and the rings to the table after the command's, and
 * registers every entry with epoll (data: the entry's index). */
static int setup_loop(struct mm_live *l, int *ret_ep, int *ret_sfd, int *ret_tfd)
{
	struct itimerspec its = {{0, ROUND_MS * 1000000L}, {0, ROUND_MS * 1000000L}};

	*ret_ep = epoll_create1(EPOLL_CLOEXEC);
	if (*ret_ep < 0)
		return log_error_errno(errno, "epoll_create1: %m");
	*ret_sfd = signalfd(-1, &l->signals, SFD_CLOEXEC | SFD_NONBLOCK);
	if (*ret_sfd < 0)
		return log_error_errno(errno, "signalfd: %m");
	*ret_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (*ret_tfd < 0 || timerfd_settime(*ret_tfd, 0, &its, NULL) < 0)
		return log_error_errno(errno, "timerfd: %m");
	uint64_t next;
	mm_host_phase(l->host, clock_ns(CLOCK_MONOTONIC), &next);
	if (next != UINT64_MAX) {
		l->duty_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (l->duty_fd < 0 || mm_live_watch(l, l->duty_fd, on_timer, l) < 0)
			return log_error_errno(errno, "duty cycle timerfd: %m");
	}
	if (mm_live_watch(l, *ret_sfd, on_signal, l) < 0 ||
	    mm_live_watch(l, *ret_tfd, on_timer, l) < 0 ||
	    (l->sampler && mm_live_watch(l, -1, on_rings, l) < 0))
		return -ENOSPC;
	for (unsigned i = 0; mm_host_watched_fd(l->host, i) >= 0; i++)
		if (mm_live_watch(l, mm_host_watched_fd(l->host, i), on_source, l) < 0)
			return -ENOSPC;
	for (unsigned i = 0; i < l->nwatches; i++) {
		struct epoll_event e = {.events = EPOLLIN, .data.u64 = i};
		int fd = l->watches[i].fd, r;

		if (fd < 0)
			r = mm_sampler_watch(l->sampler, *ret_ep, i);
		else
			r = epoll_ctl(*ret_ep, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
		if (r < 0)
			return log_error_errno(r, "cannot watch %s: %m",
					       fd < 0 ? "the perf rings" : "an fd");
	}
	return 0;
}

/* Waits for one batch of events and runs their handlers. Returns CONTINUE, STOP or -errno. */
static int wait_once(struct mm_live *l, int ep)
{
	struct epoll_event evs[16];
	int n = epoll_wait(ep, evs, 16, 1000), verdict = MM_LIVE_CONTINUE;

	if (n < 0 && errno != EINTR)
		return log_error_errno(errno, "epoll_wait: %m");
	for (int i = 0; i < n; i++) {
		struct watch *w = &l->watches[evs[i].data.u64];
		int r = w->fn(w->ctx, w->fd);
		if (r < 0)
			return r;
		if (r == MM_LIVE_STOP)
			verdict = MM_LIVE_STOP;
	}
	return verdict;
}

int mm_live_run(struct mm_live *l)
{
	int ep = -1, sfd = -1, tfd = -1, r;
	/* Monotonic: a step of the wall clock neither skips nor repeats a tick. */
	uint64_t last_tick_ms = clock_ns(CLOCK_MONOTONIC) / 1000000;

	r = setup_loop(l, &ep, &sfd, &tfd);
	if (r < 0)
		goto out;

	l->prev_round_ns = clock_ns(CLOCK_MONOTONIC);
	do {
		follow_duty(l);
		r = wait_once(l, ep);
		observe_clock(l);
		round_once(l, false);
		uint64_t now = clock_ns(CLOCK_MONOTONIC) / 1000000;
		if (now - last_tick_ms >= 1000) {
			last_tick_ms = now;
			mm_host_tick(l->host);
			if (l->hooks.second)
				l->hooks.second(l->hooks.ctx);
		}
	} while (r == MM_LIVE_CONTINUE);
	if (r > 0)
		r = 0;

	if (l->sampler)
		mm_sampler_disable(l->sampler);
	round_once(l, true);
	mm_host_stop(l->host, clock_ns(CLOCK_MONOTONIC));
	uint64_t records, late;
	mm_host_feed_stats(l->host, &records, &late);
	log_info("stopped; %llu records processed, %llu out of order", (unsigned long long)records,
		 (unsigned long long)late);
out:
	if (l->duty_fd >= 0)
		close(l->duty_fd);
	l->duty_fd = -1;
	if (tfd >= 0)
		close(tfd);
	if (sfd >= 0)
		close(sfd);
	if (ep >= 0)
		close(ep);
	return r;
}
