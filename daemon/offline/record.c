/*
 * `mmlockd record` (see record.h). The recording is the record stream as the collectors saw it:
 * the recorder taps the host, so a process filter (--pid, or COMMAND's process tree) drops the
 * other processes' records from the file and from the printed table alike. A COMMAND's exit and
 * the --duration are fds in the live loop's table (a pidfd, a one-shot timerfd): either stops it.
 */
#include "record.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmdline.h"
#include "config.h"
#include "host.h"
#include "live.h"
#include "log.h"
#include "parse.h"
#include "recording.h"
#include "snapshot.h"
#include "tally.h"

struct record {
	struct mm_config cfg;
	const char *rec_path;
	unsigned duration_s;
	bool duration_given;
	char **command;	     /* run this and record its process tree */
	uint32_t follow[64]; /* --pid */
	unsigned nfollow;

	struct mm_live *live;
	struct mm_recorder *rec;
	struct mm_tally *tally;
	pid_t child;
	int child_status;
	int pidfd, timerfd;
};

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

/* The options that need more than storing what they got (record_option). */
enum { O_DURATION, O_PID };

static int record_option(void *ctx, int id, const char *arg)
{
	struct record *d = ctx;
	unsigned long v;

	switch (id) {
	case O_DURATION:
		if (mm_parse_ulong(arg, 0, 86400, &v) < 0) {
			log_error("mmlockd record: bad --duration '%s' (0..86400)", arg);
			return -EINVAL;
		}
		d->duration_s = (unsigned)v;
		d->duration_given = true;
		break;
	case O_PID:
		if (mm_parse_ulong(arg, 1, 0x3fffffff, &v) < 0 || d->nfollow == 64) {
			log_error("mmlockd record: bad --pid '%s'", arg);
			return -EINVAL;
		}
		d->follow[d->nfollow++] = (uint32_t)v;
		break;
	}
	return 0;
}

/* Parses `mmlockd record ...` (argv[0] is "record") into @d. Returns 0, 1 after --help, or
 * -EINVAL after printing why. */
static int parse_record(struct record *d, int argc, char **argv)
{
	const struct mm_cmd_opt opts[] = {
		[O_DURATION] = {"duration", 'd', true, NULL, .set = NULL},
		[O_PID] = {"pid", 'p', true, NULL, .set = NULL},
		{"output", 'o', true, NULL, .value = &d->rec_path},
		{"collectors", 0, true, "collectors", .set = NULL},
		{"ring-pages", 0, true, "ring_pages", .set = NULL},
		{"log-level", 0, true, "log_level", .set = NULL},
		{0},
	};
	const struct mm_cmd cmd = {"record", record_usage, opts, true, record_option, d};

	mm_config_defaults(&d->cfg);
	/* A recording is for classifying offline: every collector, not the daemon's cheap set. */
	snprintf(d->cfg.collectors, sizeof(d->cfg.collectors), "all");
	/* and the raw records: the BPF source has none (bpfsource.h). */
	snprintf(d->cfg.source, sizeof(d->cfg.source), "perf");
	d->duration_s = 10;
	int first = mm_cmd_parse(&cmd, &d->cfg, argc, argv);
	if (first <= 0)
		return first < 0 ? first : 1;
	if (!d->rec_path) {
		log_error("mmlockd record: -o FILE is required");
		fputs(record_usage, stderr);
		return -EINVAL;
	}
	if (first < argc) {
		d->command = argv + first;
		if (!d->duration_given)
			d->duration_s = 0;
	}
	d->cfg.interval_s = 1;
	mm_config_continuous(&d->cfg);
	return 0;
}

static void stream_chunk(void *ctx, unsigned index, bool is_task, uint64_t sample_type,
			 const char *system, const char *name, const char *format)
{
	mm_recorder_stream(ctx, index, is_task, sample_type, system, name, format);
}

static void tally_sink(void *ctx, struct mm_snapshot *w)
{
	if (mm_tally_add(ctx, w) < 0)
		log_error("out of memory tallying a window");
}

static void write_meta(struct record *d)
{
	struct mm_snapshot *s = mm_host_snapshot(mm_live_host(d->live), mm_live_start_ms(d->live));
	char meta[512];

	snprintf(meta, sizeof(meta),
		 "kernel=%s\nrecorded_at_ms=%llu\nmono_to_wall_ms=%lld\ninterval_s=%u\n"
		 "collectors=%s\n",
		 s ? s->kernel : "", (unsigned long long)mm_live_start_ms(d->live),
		 (long long)mm_live_mono_to_wall_ms(d->live), d->cfg.interval_s, d->cfg.collectors);
	mm_snapshot_unref(s);
	mm_recorder_meta(d->rec, meta);
}

/* The recorded command exited: its last records are drained by the final round. */
static int on_child(void *ctx, int fd)
{
	struct record *d = ctx;
	if (waitpid(d->child, &d->child_status, WNOHANG) == d->child)
		d->child = -1;
	return MM_LIVE_STOP;
}

static int on_duration(void *ctx, int fd)
{
	return MM_LIVE_STOP;
}

static int start_child(struct record *d)
{
	d->child = fork();
	if (d->child < 0)
		return log_error_errno(errno, "fork: %m");
	if (d->child == 0) {
		sigset_t none;
		sigemptyset(&none);
		pthread_sigmask(SIG_SETMASK, &none, NULL);
		execvp(d->command[0], d->command);
		log_error("mmlockd record: cannot run %s: %s", d->command[0], strerror(errno));
		_exit(127);
	}
	mm_recorder_follow(d->rec, (uint32_t)d->child, true);
	d->pidfd = pidfd_open(d->child, 0);
	if (d->pidfd < 0)
		return log_error_errno(errno, "pidfd_open: %m");
	log_info("recording %s (pid %d) into %s", d->command[0], (int)d->child, d->rec_path);
	return mm_live_watch(d->live, d->pidfd, on_child, d);
}

static int start_timer(struct record *d)
{
	struct itimerspec its = {.it_value = {(time_t)d->duration_s, 0}};

	if (!d->duration_s)
		return 0;
	d->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->timerfd < 0 || timerfd_settime(d->timerfd, 0, &its, NULL) < 0)
		return log_error_errno(errno, "timerfd: %m");
	return mm_live_watch(d->live, d->timerfd, on_duration, d);
}

/* Set-up, the loop, shut-down. Returns 0 or -errno (logged). */
static int run_record(struct record *d)
{
	struct mm_live_hooks h = {.stream = stream_chunk};
	int r;

	r = mm_live_new(&d->cfg, &d->live);
	if (r < 0)
		return r;
	r = mm_recorder_open(d->rec_path, mm_live_symbols(d->live), &d->rec);
	if (r < 0)
		return log_error_errno(r, "cannot create %s: %m", d->rec_path);
	for (unsigned i = 0; i < d->nfollow; i++)
		mm_recorder_follow(d->rec, d->follow[i], false);
	d->tally = mm_tally_new();
	if (!d->tally)
		return log_error_errno(ENOMEM, "out of memory");
	h.ctx = d->rec;
	r = mm_live_open(d->live, &h, mm_recorder_lookup, d->rec, &mm_recorder_tap, d->rec);
	if (r < 0)
		return r;
	write_meta(d);
	r = mm_host_add_sink(mm_live_host(d->live), tally_sink, d->tally);
	if (r < 0)
		return log_error_errno(r, "cannot add the tally: %m");
	if (d->command)
		r = start_child(d);
	else
		log_info("recording %s%u seconds into %s",
			 d->duration_s ? "" : "until stopped, at most ", d->duration_s,
			 d->rec_path);
	if (r >= 0)
		r = start_timer(d);
	if (r < 0)
		return r;
	return mm_live_run(d->live);
}

static int finish(struct record *d)
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

int mm_cmd_record(int argc, char **argv)
{
	struct record d = {.pidfd = -1, .timerfd = -1};
	int n = parse_record(&d, argc, argv);

	if (n != 0)
		return n < 0 ? 2 : 0;
	mm_log_set_level(d.cfg.log_level);
	int r = run_record(&d);
	if (r >= 0)
		r = finish(&d);
	else if (d.child > 0)
		kill(d.child, SIGTERM);
	mm_recorder_close(d.rec);
	mm_live_free(d.live);
	mm_tally_free(d.tally);
	if (d.pidfd >= 0)
		close(d.pidfd);
	if (d.timerfd >= 0)
		close(d.timerfd);
	return r < 0 ? 1 : 0;
}
