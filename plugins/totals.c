/*
 * totals: per-process page-fault totals from the kernel's own accounting, at no cost to the
 * traced workload (no tracepoint at all).
 *
 * Live processes: once per window, at the tick right before it closes (mm_host_window_closing),
 * every /proc/PID/stat is read and its minflt/majflt growth since the last reading is added to
 * the process's window (a scan costs ~11 us per process: 2.2% of a core at 2000 processes when
 * it ran every second; per window it is a tenth of that at the default 10 s). Where the host
 * has the BPF task iterator (mm_host_read_tasks), the scan first reads every task's runtime in
 * one pass and reads /proc/PID/stat only for the processes one of whose threads ran since the
 * last reading (only a running thread faults; scan_tasks()): with 10 000 idle processes that
 * was over half the daemon's CPU. Exit messages are
 * a source the host polls (mm_host_watch: drained as they arrive, and at every tick) so the
 * socket never fills, and settle at the next scan, while the processes that exited in the window
 * are still known to the host. Exits: the
 * taskstats netlink family sends one message per exiting thread with that thread's final counts, so
 * a process that leaves /proc between two readings is settled exactly: its total is what was
 * already dead when it was first read (base) plus every exit message of its threads since (the
 * kernel sends them before the process can leave /proc, which is why the messages are drained after
 * the /proc scan). The last reading is a floor (messages can be lost when the socket overflows;
 * counted in mmlockd_totals_events_total).
 *
 * One pid, several processes: under the default pid_max (32768) a churn of 10 000 processes x 4
 * threads reuses pids within one window, and the exit messages of two processes under one pid
 * summed into one track gave the first both processes' counts and the second none (504 of 10 000
 * in a wave beside other load). The message of a process's last task carries AGROUP, and a pid
 * is reused only after that message was sent: the process is handed out then (hand_out()) and a
 * later message starts the next one. Its counts reach the host's entry at the next update, by
 * its start; when that comes only from the exit messages' begin time (whole seconds), the entry
 * must have started within a second of it: an earlier process's entry is not taken for it while
 * its own FORK record is still on its way.
 *
 * Processes that existed before mmlockd started count from their first reading; their dead
 * threads' share at that moment (base) comes from /proc/PID/stat minus the live threads'
 * /proc/PID/task/TID/stat. Processes started later count from zero.
 *
 * What the counts are: the kernel's per-task min_flt/maj_flt (mm_account_fault()): every
 * completed fault on the process's memory, in user and in kernel mode (copy_to_user into a
 * fresh page), and get_user_pages faults; a fault that was retried counts once, as major. Not
 * counted: faults that failed (SIGSEGV). exceptions:page_fault_user (the faults collector)
 * counts user-mode fault entries instead, so the two differ by kernel-mode and failed faults.
 *
 * Live only: a replay has no /proc of the recorded machine, so replays skip this collector.
 */
#include "totals.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "plugin.h"
#include "proctable.h"
#include "taskstats.h"
#include "tidmap.h"

#define MAX_TRACKS   (1u << 22) /* pids: pid_max is at most 4M */
#define RCVBUF	     (16u << 20)
#define SETTLE_SCANS 2

struct track {
	uint32_t pid;
	bool start_known;
	uint64_t start_ticks;
	uint64_t last_min, last_maj; /* the last /proc reading, already accounted */
	uint64_t base_min, base_maj; /* dead threads' share at the first reading */
	struct mm_totals_exits ex;   /* exit messages since (ex.ended: handed out, hand_out()) */
	uint64_t gen;		     /* scan that last saw it in /proc */
	unsigned dead_scans;	     /* scans it waited, gone, for the host to know it */
	bool settled;		     /* accounted and gone: to be removed */
	bool ended_seen;	     /* ended, and a scan found its pid alive once since */
	/* With the task iterator (scan_tasks()): what its threads had run at the last /proc
	 * reading, and in the current scan their sum so far, whether one is on a CPU, the start
	 * its leader gave, and whether a thread exit came since the last reading. */
	bool ran_known, busy, thread_exited;
	uint64_t ran_ns, run_sum_ns, run_gen, iter_start_ns;
};

/* A process whose last task's exit message came (AGROUP): its growth over its last /proc
 * reading, waiting for the next update to reach the host's entry for it (hand_out()). */
struct ended {
	uint32_t pid;
	uint64_t start_lo_ms, start_ms; /* mm_totals_start_lo_ms(), mm_totals_start_ms(); 0: none */
	uint64_t dmin, dmaj;
	unsigned dead_scans;
};

struct state {
	struct mm_tidmap *tracks; /* pid -> struct track */
	struct ended *ended;	  /* processes handed out since the last update, and their room */
	size_t nended, ended_cap;
	uint32_t *gone; /* pids to remove after an update, and their room */
	size_t ngone, gone_cap;
	uint64_t gen;
	uint64_t reg_ticks; /* boot time in ticks when exit messages started */
	long hz;
	struct mm_taskstats *ts;
	uint64_t overflows_seen, malformed_seen;
	int g_exits, g_overflows, g_malformed, g_unreadable, g_drain_errors;
	int g_skipped, g_iter_errors, g_unmatched;
	struct mm_host *h; /* valid during a hook */
	bool final;	   /* during update(): settle whether the host knows them or not */
};

static int read_stat(const char *path, struct mm_pid_stat *ret)
{
	char buf[1024];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -e : -ENOENT; /* a process being reaped reads empty */
	buf[n] = '\0';
	return mm_proc_parse_stat(buf, ret);
}

static struct track *find(struct state *st, uint32_t pid)
{
	return mm_tidmap_get(st->tracks, pid, false);
}

static struct track *create(struct state *st, uint32_t pid)
{
	struct track *t = mm_tidmap_get(st->tracks, pid, true);
	if (t)
		t->pid = pid;
	return t;
}

static void add_to(struct mm_proc_stats *ps, uint64_t dmin, uint64_t dmaj)
{
	ps->minflt += dmin;
	ps->majflt += dmaj;
}

static uint64_t start_ms_of(const struct track *t)
{
	return mm_totals_start_ms(t->start_known ? mm_proc_start_ms(t->start_ticks) : 0,
				  t->ex.btime_s);
}

static uint64_t start_lo_ms_of(const struct track *t)
{
	return mm_totals_start_lo_ms(t->start_known ? mm_proc_start_ms(t->start_ticks) : 0,
				     t->ex.btime_s);
}

/* Adds the last counts (@dmin, @dmaj) of exited process @pid, started between @lo_ms and
 * @start_ms (0: unknown), to the entry the host holds for it, found by its start: in a fork storm
 * its pid may be a later process's by now, whose entry is the live one, or an earlier process's
 * be the only one yet. A process that lived less than a round may be unknown yet (its FORK
 * record is still on its way, ~0.1 s behind; at a closing tick, any process started after the
 * window's end): returns false to be asked again at the next scan (counted in *@dead_scans),
 * unless @force (shutdown, a reused pid) or SETTLE_SCANS scans passed (no task records) make it
 * create the entry. */
static bool account(struct state *st, uint32_t pid, uint64_t lo_ms, uint64_t start_ms,
		    uint64_t dmin, uint64_t dmaj, unsigned *dead_scans, bool force)
{
	struct mm_proc_stats *ps =
		start_ms ? mm_host_proc_started_within(st->h, pid, lo_ms, start_ms)
			 : mm_host_proc_known(st->h, pid);
	if (!ps && !force && (*dead_scans)++ < SETTLE_SCANS)
		return false;
	if (!ps) {
		/* Its own entry is not found (gone before its exit was settled, or never made):
		 * the counts go to the pid's live entry, or one made for it, "pid-N" when /proc
		 * no longer knows the pid. Counted, so that the loss shows. */
		mm_host_global_add(st->h, st->g_unmatched, 1);
		ps = mm_host_proc(st->h, pid);
	}
	add_to(ps, dmin, dmaj);
	return true;
}

/* The process left /proc: account what its exit messages add to the last reading (account()).
 * Returns false to be asked again at the next scan. */
static bool settle(struct state *st, struct track *t, bool force)
{
	uint64_t fmin = mm_totals_final(t->last_min, t->base_min, t->ex.min);
	uint64_t fmaj = mm_totals_final(t->last_maj, t->base_maj, t->ex.maj);
	if (fmin == t->last_min && fmaj == t->last_maj)
		return true;
	return account(st, t->pid, start_lo_ms_of(t), start_ms_of(t), fmin - t->last_min,
		       fmaj - t->last_maj, &t->dead_scans, force);
}

/* The last task of @t's process sent its exit message: the process is complete, and the next
 * message under its pid may be another process's (mm_totals_exits_add). Its growth over the
 * last reading waits in st->ended for the next update; the track keeps the total as its last
 * reading, so that neither settle() nor a scan that finds its zombie adds it again. */
static void hand_out(struct state *st, struct track *t)
{
	uint64_t fmin = mm_totals_final(t->last_min, t->base_min, t->ex.min);
	uint64_t fmaj = mm_totals_final(t->last_maj, t->base_maj, t->ex.maj);
	if (fmin == t->last_min && fmaj == t->last_maj)
		return;
	if (mm_grow((void **)&st->ended, &st->ended_cap, st->nended + 1, sizeof(*st->ended), 256) <
	    0) {
		/* No room to wait: to the entry the host has now, or a counted pid-N one. */
		unsigned scans = SETTLE_SCANS;
		account(st, t->pid, start_lo_ms_of(t), start_ms_of(t), fmin - t->last_min,
			fmaj - t->last_maj, &scans, true);
	} else {
		st->ended[st->nended++] = (struct ended){.pid = t->pid,
							 .start_lo_ms = start_lo_ms_of(t),
							 .start_ms = start_ms_of(t),
							 .dmin = fmin - t->last_min,
							 .dmaj = fmaj - t->last_maj};
	}
	t->last_min = fmin;
	t->last_maj = fmaj;
}

/* The processes handed out since the last update (@final: whether the host knows them or not). */
static void settle_ended(struct state *st, bool final)
{
	size_t keep = 0;
	for (size_t i = 0; i < st->nended; i++) {
		struct ended *e = &st->ended[i];
		if (!account(st, e->pid, e->start_lo_ms, e->start_ms, e->dmin, e->dmaj,
			     &e->dead_scans, final))
			st->ended[keep++] = *e;
	}
	st->nended = keep;
}

static void on_exit_msg(void *ctx, const struct mm_task_exit *e)
{
	struct state *st = ctx;
	uint32_t tgid = e->tgid ? e->tgid : e->pid;
	mm_host_global_add(st->h, st->g_exits, 1);
	struct track *t = find(st, tgid);
	if (!t && !(t = create(st, tgid)))
		return;
	if (t->ex.ended || t->settled) /* the pid reused: the process before was handed out */
		*t = (struct track){.pid = tgid};
	mm_totals_exits_add(&t->ex, e->minflt, e->majflt, e->btime_s, e->group_dead);
	t->thread_exited = true;
	if (t->ex.ended)
		hand_out(st, t);
}

static void drain(struct state *st)
{
	if (!st->ts)
		return;
	if (mm_taskstats_drain(st->ts, on_exit_msg, st) < 0)
		mm_host_global_add(st->h, st->g_drain_errors, 1);
	uint64_t o = mm_taskstats_overflows(st->ts);
	if (o > st->overflows_seen) {
		mm_host_global_add(st->h, st->g_overflows, o - st->overflows_seen);
		st->overflows_seen = o;
	}
	uint64_t m = mm_taskstats_malformed(st->ts);
	if (m > st->malformed_seen) {
		mm_host_global_add(st->h, st->g_malformed, m - st->malformed_seen);
		st->malformed_seen = m;
	}
}

/* The taskstats socket is readable (mm_host_watch): exit messages arrive as they are sent. */
static void exits_ready(void *ctx, struct mm_host *h)
{
	struct state *st = ctx;
	st->h = h;
	drain(st);
}

/* Sum of the live threads' counts of @pid (to learn what its dead threads had at the first
 * reading). */
static void live_threads(uint32_t pid, uint64_t *ret_min, uint64_t *ret_maj)
{
	char path[320];
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	DIR *d = opendir(path);
	*ret_min = *ret_maj = 0;
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		struct mm_pid_stat ts;
		snprintf(path, sizeof(path), "/proc/%u/task/%s/stat", pid, de->d_name);
		if (read_stat(path, &ts) == 0) {
			*ret_min += ts.minflt;
			*ret_maj += ts.majflt;
		}
	}
	closedir(d);
}

/* First reading of a process that was there before exit messages started: its history is not
 * ours; remember what its dead threads hold. */
static void baseline(struct track *t, const struct mm_pid_stat *ps)
{
	uint64_t lmin, lmaj;
	live_threads(t->pid, &lmin, &lmaj);
	t->last_min = ps->minflt;
	t->last_maj = ps->majflt;
	t->base_min = ps->minflt > lmin ? ps->minflt - lmin : 0;
	t->base_maj = ps->majflt > lmaj ? ps->majflt - lmaj : 0;
	t->ex = (struct mm_totals_exits){0};
}

/* Whether a scan that finds @ps under the pid of @t, whose process ended (hand_out()), finds that
 * process (its zombie, or its last moments before it becomes one), not a new one: by its start
 * when a reading gave it; else a new process started after the ended one's (begin-time) start,
 * and a dying one is a zombie by the second scan that finds it. */
static bool ended_still_there(struct track *t, const struct mm_pid_stat *ps)
{
	if (ps->exited)
		return true;
	if (t->start_known)
		return t->start_ticks == ps->start_ticks;
	if (mm_proc_start_ms(ps->start_ticks) > start_ms_of(t) || t->ended_seen)
		return false;
	t->ended_seen = true;
	return true;
}

static void see(struct state *st, uint32_t pid, const struct mm_pid_stat *ps)
{
	struct track *t = find(st, pid);
	if (t && t->ex.ended && ended_still_there(t, ps)) {
		t->gen = st->gen; /* accounted (hand_out()); removed once gone */
		return;
	}
	if (t && (t->settled || t->ex.ended)) /* a new process under a pid already accounted */
		*t = (struct track){.pid = pid};
	if (t && t->start_known && t->start_ticks != ps->start_ticks) {
		/* The pid was reused: the old process is gone. */
		settle(st, t, true);
		*t = (struct track){.pid = pid};
	}
	if (!t && !(t = create(st, pid)))
		return;
	if (!t->start_known) {
		t->start_known = true;
		t->start_ticks = ps->start_ticks;
		if (ps->start_ticks <= st->reg_ticks)
			baseline(t, ps);
	}
	t->gen = st->gen;
	if (ps->minflt >= t->last_min && ps->majflt >= t->last_maj) {
		/* Alive: the host's lookup in /proc gives it its true identity, or, when it exits
		 * right after this reading, the start and name read here. */
		if (ps->minflt > t->last_min || ps->majflt > t->last_maj)
			add_to(mm_host_proc_seen(st->h, pid, mm_proc_start_ms(ps->start_ticks),
						 ps->comm),
			       ps->minflt - t->last_min, ps->majflt - t->last_maj);
		t->last_min = ps->minflt;
		t->last_maj = ps->majflt;
	}
}

static void scan(struct state *st)
{
	st->gen++;
	DIR *d = opendir("/proc");
	if (!d) {
		mm_host_global_add(st->h, st->g_unreadable, 1);
		return;
	}
	struct dirent *de;
	char path[64];
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		uint32_t pid = (uint32_t)strtoul(de->d_name, NULL, 10);
		struct mm_pid_stat ps;
		snprintf(path, sizeof(path), "/proc/%u/stat", pid);
		if (read_stat(path, &ps) < 0 || ps.kthread)
			continue;
		see(st, pid, &ps);
	}
	closedir(d);
}

/* The task iterator's record of one task: adds its runtime to its process's sum. */
static void on_task(void *ctx, const struct mm_task_run *r)
{
	struct state *st = ctx;
	if (r->kthread)
		return;
	struct track *t = find(st, r->tgid);
	if (!t && !(t = create(st, r->tgid)))
		return;
	if (t->run_gen != st->gen) {
		t->run_gen = st->gen;
		t->run_sum_ns = 0;
		t->busy = false;
		t->iter_start_ns = 0;
	}
	t->run_sum_ns += r->runtime_ns;
	t->busy |= r->on_cpu;
	if (r->leader)
		t->iter_start_ns = r->start_boottime_ns;
}

/* Reads /proc/PID/stat of a process the iterator found, unless none of its threads ran since the
 * last reading (same summed runtime, none on a CPU now, no thread exit since, same start): only
 * a running thread faults, so it has nothing new. An exiting thread's message is drained before
 * the iterator runs; one that exits meanwhile is seen at the next scan. */
static void check_task(void *ctx, uint32_t pid, void *value)
{
	struct state *st = ctx;
	struct track *t = value;
	if (t->run_gen != st->gen || t->settled)
		return; /* not among the tasks: gone (settle_gone) */
	uint64_t start_ticks = t->iter_start_ns / (1000000000ull / (uint64_t)st->hz);
	if (t->ran_known && t->start_known && !t->busy && !t->thread_exited &&
	    t->run_sum_ns == t->ran_ns && t->start_ticks == start_ticks) {
		t->gen = st->gen;
		mm_host_global_add(st->h, st->g_skipped, 1);
		return;
	}
	uint64_t ran = t->run_sum_ns;
	char path[64];
	struct mm_pid_stat ps;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (read_stat(path, &ps) < 0 || ps.kthread)
		return;
	see(st, pid, &ps);
	/* see() starts the track over when the pid was reused: look it up again. */
	if ((t = find(st, pid)) != NULL) {
		t->ran_ns = ran;
		t->ran_known = true;
		t->thread_exited = false;
	}
}

/* One scan with the task iterator: false when there is none (the /proc scan then runs). */
static bool scan_tasks(struct state *st)
{
	drain(st);
	st->gen++;
	int r = mm_host_read_tasks(st->h, on_task, st);
	if (r == -ENOTSUP)
		return false;
	if (r < 0) {
		/* A broken read: this scan reads /proc instead, every process. */
		mm_host_global_add(st->h, st->g_iter_errors, 1);
		return false;
	}
	mm_tidmap_foreach(st->tracks, check_task, st);
	return true;
}

/* Settles a process the scan no longer found, once; notes its pid for removal. */
static void settle_gone(void *ctx, uint32_t pid, void *value)
{
	struct state *st = ctx;
	struct track *t = value;

	if (!t->settled && (t->gen == st->gen || !settle(st, t, st->final)))
		return;
	t->settled = true;
	if (mm_grow((void **)&st->gone, &st->gone_cap, st->ngone + 1, sizeof(*st->gone), 256) < 0)
		return; /* removed at a later update */
	st->gone[st->ngone++] = pid;
}

/* Scan, then the messages of everything that exited meanwhile, then settle the processes the
 * scan no longer found (@final: now, whether the host knows them or not). */
static void update(struct state *st, bool final)
{
	if (!scan_tasks(st))
		scan(st);
	drain(st);
	st->final = final;
	settle_ended(st, final);
	mm_tidmap_foreach(st->tracks, settle_gone, st);
	for (size_t i = 0; i < st->ngone; i++)
		mm_tidmap_remove(st->tracks, st->gone[i]);
	st->ngone = 0;
}

static uint64_t boot_ticks_now(long hz)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * (uint64_t)hz + (uint64_t)ts.tv_nsec / (1000000000ull / hz);
}

static void discard(void *ctx, const struct mm_task_exit *e)
{
}

static int init(struct mm_host *h, void **ret_state)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return mm_host_fail(h, "out of memory");
	st->h = h;
	st->tracks = mm_tidmap_new(sizeof(struct track), MAX_TRACKS);
	if (!st->tracks) {
		free(st);
		return mm_host_fail(h, "out of memory");
	}
	st->hz = sysconf(_SC_CLK_TCK);
	if (st->hz <= 0)
		st->hz = 100;
	if (access("/proc/self/stat", R_OK) < 0) {
		mm_tidmap_free(st->tracks);
		free(st);
		return mm_host_fail(h, "/proc is not mounted or not readable");
	}
	st->g_exits = mm_host_global(h, "totals_events", "exit_messages",
				     "totals collector: taskstats exit messages received");
	st->g_overflows = mm_host_global(
		h, "totals_events", "exit_overflows",
		"totals collector: taskstats socket overflows (exit messages lost; those "
		"processes' last window counts up to their last /proc reading)");
	st->g_malformed =
		mm_host_global(h, "totals_events", "exit_malformed",
			       "totals collector: taskstats datagrams skipped as malformed (as "
			       "with overflows, those processes' last window counts up to their "
			       "last /proc reading)");
	st->g_unreadable = mm_host_global(h, "totals_events", "proc_unreadable",
					  "totals collector: scans that could not read /proc");
	st->g_drain_errors =
		mm_host_global(h, "totals_events", "exit_read_errors",
			       "totals collector: errors reading the taskstats socket");
	st->g_unmatched = mm_host_global(
		h, "totals_events", "exits_unmatched",
		"totals collector: exited processes whose own entry was not found when their last "
		"faults were settled (those faults went to the pid's live entry or a pid-N one)");
	st->g_skipped =
		mm_host_global(h, "totals_events", "stat_reads_skipped",
			       "totals collector: /proc/PID/stat reads skipped because none "
			       "of the process's threads ran since the last one (task iterator)");
	st->g_iter_errors =
		mm_host_global(h, "totals_events", "task_iterator_errors",
			       "totals collector: task iterator reads that failed (that "
			       "scan read every /proc/PID/stat)");

	char err[160] = "";
	if (mm_taskstats_open(RCVBUF, &st->ts, err, sizeof(err)) < 0) {
		st->ts = NULL;
		mm_host_note(h,
			     "no exit accounting (%s): a process's faults after its last /proc "
			     "reading (up to a window) are not counted",
			     err);
	} else if (mm_host_watch(h, mm_taskstats_fd(st->ts), exits_ready, st) < 0) {
		log_debug("totals: taskstats socket not watched; drained at each tick only");
	}
	/* Processes started from here on are seen from birth. A tick of slack: starttime has
	 * tick resolution. */
	st->reg_ticks = boot_ticks_now(st->hz) + 1;
	scan(st);
	/* Exit messages of threads that died during the first scan: already in the bases. */
	if (st->ts)
		mm_taskstats_drain(st->ts, discard, NULL);
	*ret_state = st;
	return 0;
}

/* Ticks come about once a second and right before each window closes: scan then, while the
 * processes that exited in the window are still known to the host; drain otherwise. */
static void tick(void *vst, struct mm_host *h)
{
	struct state *st = vst;
	st->h = h;
	if (mm_host_window_closing(h))
		update(st, false);
	else
		drain(st);
}

static void finish(void *vst, struct mm_host *h)
{
	struct state *st = vst;
	st->h = h;
	update(st, true);
}

static void free_state(void *vst)
{
	struct state *st = vst;
	if (!st)
		return;
	mm_tidmap_free(st->tracks);
	free(st->gone);
	free(st->ended);
	mm_taskstats_close(st->ts);
	free(st);
}

const struct mm_plugin mm_plugin_totals = {
	.name = "totals",
	.description = "per-process minor/major fault totals from /proc/PID/stat and taskstats "
		       "exit messages (no tracepoints: free for the workload)",
	.by_default = true,
	.reads_tasks = true,
	.usage = "minor/major faults per process\n"
		 "(/proc/PID/stat + taskstats at exit)",
	.tracepoints = NULL,
	.init = init,
	.tick = tick,
	.finish = finish,
	.free = free_state,
};
