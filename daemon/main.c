/*
 * mmlockd's entry point: one table of subcommands, as perf and git have it. Without a command,
 * mmlockd is the daemon: the live pipeline (live.h) with two sinks, the store thread (writer.h)
 * for closed windows and the HTTP server (http.h) for the snapshot published once a second.
 * SIGTERM/SIGINT: drain, close the open window, store it, exit 0. SIGHUP: reload the
 * configuration file, naming each changed setting only a restart applies. Exit status 1 for a
 * failure at start or at run time, 2 for a refused command line or configuration (--help and
 * mmlockd(8) document both). `record`, `replay` and `report` (daemon/offline/) run
 * offline or without HTTP and SQLite.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <limits.h>
#include <stdbool.h>

#include "config.h"
#include "host.h"
#include "http.h"
#include "live.h"
#include "log.h"
#include "notify.h"
#include "plugin.h"
#include "record.h"
#include "privilege.h"
#include "replay.h"
#include "report.h"
#include "snapshot.h"
#include "tracefs.h"
#include "writer.h"

struct daemon {
	struct mm_config cfg;
	int argc;
	char **argv;
	struct mm_live *live;
	struct mm_writer *writer;
	struct mm_http *http;
	uint64_t watchdog_usec;
};

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The HTTP sink: a snapshot of the open window, published by one pointer swap. */
static void publish(struct daemon *d)
{
	struct mm_host *h = mm_live_host(d->live);
	uint64_t stored = 0, errors = 0, lost = 0;

	mm_writer_stats_lost(d->writer, &stored, &errors, &lost);
	mm_host_set_store_stats(h, stored, errors, lost);
	struct mm_snapshot *s = mm_host_snapshot(h, wall_ms());
	if (s)
		mm_snapshot_publish(s);
}

static void every_second(void *ctx)
{
	struct daemon *d = ctx;

	publish(d);
	if (d->watchdog_usec)
		mm_notify("WATCHDOG=1");
}

static void reload(void *ctx)
{
	struct daemon *d = ctx;
	struct mm_config n;
	enum mm_command cmd;
	char err[512];

	if (mm_config_from_args(&n, d->argc, d->argv, &cmd, err, sizeof(err)) < 0) {
		log_error("reload: %s; keeping the running configuration", err);
		return;
	}
	const char *later[32]; /* more than there are keys */
	size_t nlater = mm_config_restart_changes(&d->cfg, &n, later, 32);
	for (size_t i = 0; i < nlater && i < 32; i++)
		log_warning("reload: %s changed in %s; it takes effect at restart (systemctl "
			    "restart mmlockd), ignoring",
			    later[i], n.config_path[0] ? n.config_path : "the command line");
	mm_log_set_level(n.log_level);
	mm_http_set_top_n(d->http, n.top_n);
	mm_host_set_cgroup_top(mm_live_host(d->live), n.cgroup_top);
	mm_writer_set_retention(d->writer, n.retention_days);
	if (n.interval_s != d->cfg.interval_s) {
		d->cfg.interval_s = n.interval_s;
		mm_host_set_interval(mm_live_host(d->live), n.interval_s, wall_ms());
	}
	d->cfg.top_n = n.top_n;
	d->cfg.cgroup_top = n.cgroup_top;
	d->cfg.retention_days = n.retention_days;
	d->cfg.log_level = n.log_level;
	log_info("reloaded configuration: interval %us, top %u, cgroup_top %u, retention %u days",
		 d->cfg.interval_s, d->cfg.top_n, d->cfg.cgroup_top, d->cfg.retention_days);
}

static void writer_sink(void *ctx, struct mm_snapshot *w)
{
	mm_writer_submit(ctx, mm_snapshot_ref(w));
}

/* At start, when a collector runs cycled (the fault split, plugin.h): says so, and that its
 * counts are estimates, also (and above all) when --collectors does not name it. */
static void say_cycled(const struct daemon *d)
{
	const struct mm_plugin *p = NULL;
	for (const struct mm_plugin *const *q = mm_plugins; *q; q++)
		if ((*q)->cycle)
			p = *q;
	struct mm_snapshot *s = mm_snapshot_latest();
	char list[sizeof(d->cfg.collectors) + 2], named[64], flag[40];

	snprintf(list, sizeof(list), ",%s,", d->cfg.collectors);
	if (p && s && strcmp(s->split.mode, "off") && strcmp(s->split.mode, "continuous")) {
		snprintf(named, sizeof(named), ",%s,", p->name);
		mm_config_flag_name(p->cycle->key, flag, sizeof(flag));
		log_info("%s: the %s collector runs in %ss, %u.%u%% of each window%s; its counts "
			 "are estimates (--%s 0 stops it, --%s 100%% runs it continuously)",
			 p->cycle->name, p->name, p->cycle->period, s->split.duty_pm / 10,
			 s->split.duty_pm % 10,
			 strcmp(d->cfg.collectors, "all") && !strstr(list, named)
				 ? ", though --collectors does not name it"
				 : "",
			 flag, flag);
	}
	mm_snapshot_unref(s);
}

/* Appends @name to the list @buf ("a,b"). */
static void list_add(char *buf, size_t size, const char *name)
{
	size_t n = strlen(buf);
	snprintf(buf + n, size - n, "%s%s", n ? "," : "", name);
}

/* Started by a user who cannot reach tracefs (not root): the collectors that read tracepoints
 * cannot run, and starting anyway would log a warning per tracepoint and then "collecting" while
 * nothing asked for is collected. One line instead, naming them, why, and the collectors that
 * work for any user (those without tracepoints: /proc and /proc/vmstat); -EPERM. 0 as root,
 * when tracefs is readable, or when no enabled collector needs it. The BPF source is no way
 * out: as nobody with CAP_SYSLOG, CAP_PERFMON and CAP_BPF (ambient), the kernel refused its
 * programs too (EACCES, 6.18, 2026-12-07). */
static int check_unprivileged(const struct mm_config *cfg)
{
	char path[PATH_MAX], why[512], need[256] = "", can[256] = "", off[64] = "";

	if (geteuid() == 0)
		return 0;
	int r = mm_tracefs_find(path, sizeof(path), why, sizeof(why));
	if (r != -EACCES && r != -EPERM)
		return 0;
	for (const struct mm_plugin *const *p = mm_plugins; *p; p++) {
		bool tp = (*p)->tracepoints && (*p)->tracepoints[0].name;
		if (tp && mm_config_collector_enabled(cfg, (*p)->name))
			list_add(need, sizeof(need), (*p)->name);
		if (!tp)
			list_add(can, sizeof(can), (*p)->name);
		else if ((*p)->cycle) /* runs unless its share is 0, whatever --collectors says */
			mm_config_flag_name((*p)->cycle->key, off, sizeof(off));
	}
	if (!*need)
		return 0;
	log_error("mmlockd: collectors %s need root (%s); run mmlockd as root (systemctl start "
		  "mmlockd), or --collectors %s%s%s%s for what any user can count",
		  need, why, can, *off ? " --" : "", off, *off ? " 0" : "");
	return -EPERM;
}

/* Set-up, the loop, shut-down. Returns 0 or -errno (logged). */
static int run_daemon(struct daemon *d)
{
	const struct mm_live_hooks hooks = {.second = every_second, .reload = reload, .ctx = d};
	int r;

	r = check_unprivileged(&d->cfg);
	if (r < 0)
		return r;
	r = mm_live_new(&d->cfg, &d->live);
	if (r < 0)
		return r;
	/* HTTP first: a taken port fails before the database is created or migrated. */
	r = mm_http_start(d->cfg.listen, d->cfg.db_path, d->cfg.top_n, &d->http);
	if (r < 0)
		return r;
	r = mm_writer_start(d->cfg.db_path, d->cfg.retention_days, &d->writer);
	if (r < 0)
		return r;
	r = mm_live_open(d->live, &hooks, NULL, NULL, NULL, NULL);
	if (r < 0)
		return r;
	r = mm_host_add_sink(mm_live_host(d->live), writer_sink, d->writer);
	if (r < 0)
		return log_error_errno(r, "cannot add the store: %m");
	publish(d);
	say_cycled(d);
	mm_privilege_drop_main(); /* every source is set up: privilege.h */
	mm_notify_watchdog_usec(&d->watchdog_usec);
	mm_notify("READY=1\nSTATUS=collecting");
	log_info("mmlockd %s: collecting; %u-second windows into %s; serving http://%s/",
		 MM_VERSION, d->cfg.interval_s, d->cfg.db_path, mm_http_where(d->http));

	r = mm_live_run(d->live);
	mm_notify("STOPPING=1");
	publish(d);
	return r;
}

static bool is_command(const char *name);

/* The daemon's command line was refused (@err says why): one line with what to do, exit status
 * 2. A command after daemon options (`mmlockd --interval 2 report`) is named as such: it comes
 * first and takes its own options. */
static int bad_daemon_args(int argc, char **argv, const char *err)
{
	int i = mm_config_operand(argc, argv);

	if (i > 0 && is_command(argv[i]))
		log_error("mmlockd: '%s' is a command and must come first, with its own options "
			  "(mmlockd %s --help); daemon options such as '%s' go without a command",
			  argv[i], argv[i], argv[1]);
	else
		log_error("mmlockd: %s; see 'mmlockd --help'", err);
	return 2;
}

/* mmlockd without a command: the daemon. */
static int cmd_daemon(int argc, char **argv)
{
	struct daemon d = {.argc = argc, .argv = argv};
	enum mm_command cmd;
	char err[512];

	if (mm_config_from_args(&d.cfg, argc, argv, &cmd, err, sizeof(err)) < 0)
		return bad_daemon_args(argc, argv, err);
	if (cmd == MM_CMD_HELP) {
		fputs(mm_config_usage(), stdout);
		return 0;
	}
	if (cmd == MM_CMD_VERSION) {
		printf("mmlockd %s\n", MM_VERSION);
		return 0;
	}
	mm_log_set_level(d.cfg.log_level);

	int r = run_daemon(&d);
	mm_http_stop(d.http);
	int w = mm_writer_stop(d.writer);
	mm_live_free(d.live);
	mm_snapshot_publish(NULL);
	return r < 0 || w < 0 ? 1 : 0;
}

/* The subcommands: `mmlockd NAME ARGS...` runs fn(ARGS with NAME as argv[0]); anything else is
 * the daemon's command line. Each prints its own --help. */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{"record", mm_cmd_record},
	{"replay", mm_cmd_replay},
	{"report", mm_cmd_report},
};

static bool is_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return true;
	return false;
}

/* Levenshtein distance of @a and @b, for "did you mean" (names are short). */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[32];
	if (la >= 31 || lb >= 31)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* A first argument that is neither an option nor a command: one line naming the closest command
 * (as git does), exit status 2. */
static int unknown_command(const char *name)
{
	size_t best = 0, d = SIZE_MAX;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		size_t x = distance(name, commands[i].name);
		if (x < d) {
			d = x;
			best = i;
		}
	}
	if (d <= 2)
		fprintf(stderr,
			"mmlockd: unknown command '%s'; did you mean 'mmlockd %s'? (the daemon "
			"itself takes options only: mmlockd --help)\n",
			name, commands[best].name);
	else
		fprintf(stderr,
			"mmlockd: unknown command '%s'; the commands are record, replay and "
			"report, "
			"the daemon itself takes options only (mmlockd --help)\n",
			name);
	return 2;
}

int main(int argc, char **argv)
{
	for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	if (argc > 1 && argv[1][0] && argv[1][0] != '-')
		return unknown_command(argv[1]);
	return cmd_daemon(argc, argv);
}
