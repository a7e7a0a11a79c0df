/*
 * gen_day: writes a day (or --hours H) of history of a busy host into a database, through the
 * daemon's own store (mm_store_write_window), so its rows are exactly those mmlockd writes. It is
 * what the day-of-history test (tests/integration/test_day.sh) and the browser suite's long
 * ranges run the daemon, the page and `mmlockd report` on: no real machine makes 24 hours of
 * history for a test, and a replay at speed would be slower than this.
 *
 * The host, seeded (the same --seed and --end give the same database): LONG_PROCS long-lived
 * processes in UNITS units (cgroup paths), each with its own fault rate, fallback share and
 * share of windows in which it does anything (busy services every window, idle daemons rarely),
 * restarted now and then (a new identity); and churn: every window a few short processes
 * (compilers, shells, cron jobs) that live one to six windows and fault hard while they do. Pids
 * come from a 32768-pid space and are reused once free, as the kernel does. Rates follow the
 * hour of the day. The counts are those of `--collectors all` on the BPF source with the split
 * continuous (exact outcomes), so every figure of the page, the API and `report` has data:
 * minflt/majflt, user faults and their outcomes, fallbacks and the fallbacks that waited,
 * mmap_lock acquisitions by cause, waits and hold times, whom the waits waited behind; lock
 * contention rows (with wait histograms) for the processes that waited, and vmstat globals.
 * Processes idle in a window are in its snapshot but, as in the daemon, get no row.
 *
 * The windows end at --end (default: now, rounded down to the interval), so the daemon's
 * ranges (15 min, 1 h, 24 h, 7 d) cover them. Progress and a summary go to stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snapshot.h"
#include "stats.h"
#include "store.h"

#define LONG_PROCS    560
#define UNITS	      50
#define PID_SPACE     32768
#define PID_FIRST     300
#define MAX_CHURN     256 /* short processes alive at once, at most */
#define LOCK_ROWS_MAX 24  /* lock contention rows per window, at most */

struct opts {
	const char *path;
	double hours;
	unsigned interval_s;
	uint64_t seed;
	uint64_t end_ms;
};

/* One process of the host. */
struct proc {
	int32_t pid;
	uint64_t start_ms;
	char comm[MM_COMM_LEN];
	const char *cgroup;
	double faults_per_s;   /* while active */
	double active_share;   /* of windows in which it counts anything */
	double fallback_share; /* of its user faults */
	double wait_share;     /* of its fallbacks that find mmap_lock taken */
	double retry_share;    /* of its fallbacks that tried under the VMA lock first */
	double abort_share;    /* of its fallbacks that went straight to mmap_lock */
	unsigned windows_left; /* churn: windows it still lives (0: long-lived) */
	bool fresh;	       /* started in this window (exec, fork costs) */
};

struct host {
	uint64_t rng;
	char units[UNITS][MM_CGROUP_LEN];
	struct proc lasting[LONG_PROCS];
	struct proc churn[MAX_CHURN];
	size_t nchurn;
	bool pid_used[PID_SPACE];
	int32_t next_pid;
	uint64_t distinct; /* processes ever made */
	uint64_t rows;	   /* process rows written */
	uint64_t lock_rows;
	size_t live_min;
};

/* splitmix64: a fast generator whose whole state is one seed. */
static uint64_t next_u64(struct host *h)
{
	uint64_t z = (h->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(struct host *h)
{
	return (double)(next_u64(h) >> 11) / 9007199254740992.0;
}

/* Uniform integer in [0, n). */
static unsigned below(struct host *h, unsigned n)
{
	return (unsigned)(uniform(h) * n);
}

/* @mean scaled by a noise factor in [0.5, 1.5), rounded: a count of one window. */
static uint64_t around(struct host *h, double mean)
{
	double v = mean * (0.5 + uniform(h));

	return v < 0 ? 0 : (uint64_t)(v + uniform(h));
}

/* A free pid, the next one after the last given out, as the kernel allocates them. */
static int32_t take_pid(struct host *h)
{
	for (int tries = 0; tries < PID_SPACE; tries++) {
		int32_t pid = h->next_pid++;

		if (h->next_pid >= PID_SPACE)
			h->next_pid = PID_FIRST;
		if (!h->pid_used[pid]) {
			h->pid_used[pid] = true;
			return pid;
		}
	}
	fprintf(stderr, "gen_day: no free pid\n");
	exit(1);
}

static const char *const lasting_names[] = {
	"postgres", "nginx",	 "java",       "python3",    "node",	      "redis-server",
	"mysqld",   "php-fpm",	 "gunicorn",   "celery",     "envoy",	      "containerd-shim",
	"kubelet",  "dockerd",	 "prometheus", "grafana",    "sshd",	      "systemd-journal",
	"rsyslogd", "memcached", "haproxy",    "clickhouse", "elasticsearch", "ruby",
};
static const char *const churn_names[] = {
	"sh",	"bash", "cc1",	"ld",	   "git",  "make",    "cat", "grep",
	"sed",	"awk",	"curl", "gzip",	   "xz",   "python3", "ls",  "ps",
	"date", "true", "as",	"cc1plus", "sort", "find",    "tar", "rsync",
};
#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Fifty units as systemd names them: services, login scopes, containers' scopes. */
static void make_units(struct host *h)
{
	for (unsigned u = 0; u < UNITS; u++) {
		if (u < 30)
			snprintf(h->units[u], MM_CGROUP_LEN, "/system.slice/%s-%02u.service",
				 lasting_names[u % NELEMS(lasting_names)], u);
		else if (u < 40)
			snprintf(h->units[u], MM_CGROUP_LEN,
				 "/user.slice/user-%u.slice/session-%u.scope", 1000 + u % 3, u);
		else
			snprintf(h->units[u], MM_CGROUP_LEN,
				 "/kubepods.slice/kubepods-burstable.slice/pod%08x.slice/"
				 "cri-containerd-%016" PRIx64 ".scope",
				 u * 2654435761u, next_u64(h));
	}
}

/* How @p's fallbacks split: those that tried under the VMA lock first (file-backed faults that
 * waited for I/O), those that went straight to mmap_lock, and the rest, which the events cannot
 * tell apart (anonymous and swap faults). */
static void set_split(struct host *h, struct proc *p)
{
	p->retry_share = 0.1 + 0.6 * uniform(h);
	p->abort_share = (1 - p->retry_share) * (0.3 + 0.6 * uniform(h));
}

/* A new identity for long-lived process @p (first start, or a restart at @now_ms). */
static void start_lasting(struct host *h, struct proc *p, unsigned i, uint64_t now_ms, bool restart)
{
	if (restart)
		h->pid_used[p->pid] = false;
	p->pid = take_pid(h);
	p->start_ms = restart ? now_ms : now_ms - 3600000ull * (1 + below(h, 24 * 30));
	snprintf(p->comm, sizeof(p->comm), "%s", lasting_names[i % NELEMS(lasting_names)]);
	p->cgroup = h->units[i % 40]; /* services and login scopes; pods get churn */
	/* A few busy processes, many moderate, most idle (a host's long tail). */
	double kind = uniform(h);
	p->active_share = kind < 0.2 ? 1.0 : kind < 0.55 ? 0.3 : 0.04;
	p->faults_per_s = kind < 0.2 ? 200 + 4000 * uniform(h) : 5 + 100 * uniform(h);
	p->fallback_share = uniform(h) < 0.1 ? 0.05 + 0.2 * uniform(h) : 0.002 * uniform(h);
	p->wait_share = 0.02 + 0.3 * uniform(h);
	set_split(h, p);
	p->windows_left = 0;
	p->fresh = restart;
	h->distinct++;
}

/* A short process started at @now_ms: a compiler, a shell, a job in a pod. */
static void start_churn(struct host *h, uint64_t now_ms)
{
	struct proc *p = &h->churn[h->nchurn++];

	p->pid = take_pid(h);
	p->start_ms = now_ms;
	snprintf(p->comm, sizeof(p->comm), "%s", churn_names[below(h, NELEMS(churn_names))]);
	p->cgroup = h->units[30 + below(h, UNITS - 30)]; /* login scopes and pods */
	p->active_share = 1.0;
	p->faults_per_s = 50 + 3000 * uniform(h);
	p->fallback_share = 0.005 + 0.05 * uniform(h);
	p->wait_share = 0.05 + 0.2 * uniform(h);
	set_split(h, p);
	p->windows_left = 1 + below(h, 6);
	p->fresh = true;
	h->distinct++;
}

/* The load of the hour: 0.4 at night to 1.6 in the afternoon. */
static double diurnal(uint64_t ms)
{
	double hour = (double)(ms / 1000 % 86400) / 3600.0;

	return 1.0 + 0.6 * sin((hour - 9.0) / 24.0 * 2 * M_PI);
}

/* The outcome of @faults user faults of which @fb fell back, and what the fallbacks cost. */
static void fill_faults(struct host *h, struct mm_proc_counts *c, const struct proc *p,
			uint64_t faults, uint64_t fb)
{
	c->faults = faults;
	c->faults_mmap_fallback = fb;
	c->faults_mmap_retry = (uint64_t)(fb * p->retry_share);
	c->faults_mmap_abort = (uint64_t)(fb * p->abort_share);
	c->faults_mmap_unknown = fb - c->faults_mmap_retry - c->faults_mmap_abort;
	c->faults_vma = faults - fb;
	c->faults_mmap_lock_retries = fb / 40;
	c->faults_pages_reread = c->faults_mmap_retry / 20;
	c->fallback_locks = fb + fb / 12; /* kernel-mode faults fall back too */
	c->fallback_lock_waits = (uint64_t)(c->fallback_locks * p->wait_share);
	c->faults_mmap_lock_wait_ns = c->fallback_lock_waits * around(h, 40000);
}

/* Who took mmap_lock and what the waits cost. */
static void fill_locks(struct host *h, struct mm_proc_counts *c, const struct proc *p)
{
	uint64_t writes = around(h, 2 + c->faults / 200.0);

	c->mmap_lock_by_fault = c->faults_mmap_fallback;
	c->mmap_lock_by_fault_kernel = c->fallback_locks - c->faults_mmap_fallback;
	c->mmap_lock_by_mmap = writes / 2;
	c->mmap_lock_by_munmap = writes / 4;
	c->mmap_lock_by_mprotect = writes / 8;
	c->mmap_lock_by_brk = writes - writes / 2 - writes / 4 - writes / 8;
	c->mmap_lock_by_remote = below(h, 3);
	if (p->fresh) {
		c->mmap_lock_by_exec = 2;
		c->mmap_lock_by_fork = 1;
	}
	if (p->windows_left == 1)
		c->mmap_lock_by_exit = 1;
	c->mmap_lock_write = writes + c->mmap_lock_by_exec + c->mmap_lock_by_exit;
	c->mmap_lock_read = c->fallback_locks + c->mmap_lock_by_remote + c->mmap_lock_by_fork;
	c->mmap_lock_waits = c->fallback_lock_waits + writes * p->wait_share / 2;
	c->mmap_lock_wait_ns = c->faults_mmap_lock_wait_ns + around(h, 30000.0 * writes);
	c->mmap_lock_write_hold_ns = writes * around(h, 6000);
	c->mmap_lock_trylock_fail = c->mmap_lock_waits / 30;
	c->mmap_lock_contended = c->mmap_lock_waits;
	c->mmap_lock_behind_waits = c->mmap_lock_waits;
	c->mmap_lock_behind_mprotect_ns = c->mmap_lock_wait_ns / 2;
	c->mmap_lock_behind_mmap_ns = c->mmap_lock_wait_ns / 4;
	c->mmap_lock_behind_munmap_ns = c->mmap_lock_wait_ns / 8;
	c->mmap_lock_behind_unknown_ns = c->mmap_lock_wait_ns - c->mmap_lock_behind_mprotect_ns -
					 c->mmap_lock_behind_mmap_ns -
					 c->mmap_lock_behind_munmap_ns;
}

/* @p's counts of a window of @interval_s seconds at load @load. */
static void fill_counts(struct host *h, struct mm_proc_counts *c, const struct proc *p,
			unsigned interval_s, double load)
{
	double mean = p->faults_per_s * interval_s * load;

	memset(c, 0, sizeof(*c));
	if (p->fresh)
		mean += 800; /* exec: the binary and its libraries */
	c->minflt = around(h, mean);
	c->majflt = around(h, c->minflt * 0.004);
	if (c->minflt + c->majflt == 0)
		c->minflt = 1;
	uint64_t faults = (c->minflt + c->majflt) * 9 / 10; /* the rest: kernel mode */
	fill_faults(h, c, p, faults, (uint64_t)(faults * p->fallback_share));
	fill_locks(h, c, p);
}

/* Row @src of @w, idle in the window (in the snapshot, as in the daemon's; no row stored). */
static struct mm_snap_proc *put_idle(struct mm_snapshot *w, size_t *n, const struct proc *src)
{
	struct mm_snap_proc *row = &w->procs[(*n)++];

	row->pid = src->pid;
	row->start_ms = src->start_ms;
	memcpy(row->comm, src->comm, sizeof(row->comm));
	row->cgroup = mm_snapshot_name(w, src->cgroup);
	if (!row->cgroup) {
		fprintf(stderr, "gen_day: out of memory\n");
		exit(1);
	}
	return row;
}

/* Row @src of @w with its counts of the window. */
static void put_row(struct host *h, struct mm_snapshot *w, size_t *n, const struct proc *src,
		    unsigned interval_s, double load)
{
	struct mm_snap_proc *row = put_idle(w, n, src);

	fill_counts(h, (struct mm_proc_counts *)row->window, src, interval_s, load);
	row->total = row->window;
}

/* One lock row of @row's waits: on its own mmap_lock behind a writer of its process. */
static void put_lock(struct host *h, struct mm_snap_lock *l, const struct mm_snap_proc *row)
{
	static const char *const ops[] = {"mprotect", "mmap", "munmap"};
	const struct mm_proc_counts *c = row->window;

	memset(l, 0, sizeof(*l));
	l->pid = l->lock_pid = l->holder_pid = l->holder_tid = row->pid;
	l->start_ms = row->start_ms;
	memcpy(l->comm, row->comm, sizeof(l->comm));
	memcpy(l->holder_comm, row->comm, sizeof(l->holder_comm));
	snprintf(l->type, sizeof(l->type), "rwsem:R");
	snprintf(l->caller, sizeof(l->caller), "lock_mm_and_find_vma+0x3a");
	snprintf(l->lock, sizeof(l->lock), "mmap_lock");
	snprintf(l->holder_mode, sizeof(l->holder_mode), "write");
	snprintf(l->holder_op, sizeof(l->holder_op), "%s", ops[below(h, NELEMS(ops))]);
	l->contended = c->mmap_lock_contended;
	l->min_ns = UINT64_MAX;
	for (uint64_t i = 0; i < l->contended; i++) {
		uint64_t ns = (uint64_t)(2000 * exp(4 * uniform(h)));

		mm_hist_add(&l->hist, ns);
		l->wait_ns += ns;
		l->max_ns = ns > l->max_ns ? ns : l->max_ns;
		l->min_ns = ns < l->min_ns ? ns : l->min_ns;
	}
}

/* qsort order of rows: most contended first. */
static int by_contended(const void *a, const void *b)
{
	uint64_t x = (*(const struct mm_snap_proc *const *)a)->window->mmap_lock_contended;
	uint64_t y = (*(const struct mm_snap_proc *const *)b)->window->mmap_lock_contended;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The contention rows of @w: those of its LOCK_ROWS_MAX rows that waited most (more than 20
 * times), as the contention collector's busiest. */
static void put_locks(struct host *h, struct mm_snapshot *w)
{
	struct mm_snap_lock *locks = calloc(LOCK_ROWS_MAX, sizeof(*locks));
	const struct mm_snap_proc **order = calloc(w->nprocs ? w->nprocs : 1, sizeof(*order));
	size_t n = 0, nwaited = 0;

	if (!locks || !order) {
		fprintf(stderr, "gen_day: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < w->nprocs; i++)
		if (w->procs[i].window->mmap_lock_contended > 20)
			order[nwaited++] = &w->procs[i];
	qsort(order, nwaited, sizeof(*order), by_contended);
	for (; n < nwaited && n < LOCK_ROWS_MAX; n++)
		put_lock(h, &locks[n], order[n]);
	free(order);
	h->lock_rows += n;
	mm_snapshot_set_locks(w, locks, n, NULL, 0);
}

/* The window's vmstat counters, tracepoint counts and collectors, as the daemon's. */
static void put_host_counters(struct mm_snapshot *w)
{
	static const char *const collectors[] = {"totals",   "fallbacks", "vmstat",
						 "mmaplock", "faults",	  "contention"};
	uint64_t minflt = 0, majflt = 0;

	for (size_t i = 0; i < w->nprocs; i++) {
		minflt += w->procs[i].window->minflt;
		majflt += w->procs[i].window->majflt;
	}
	snprintf(w->globals[0].family, sizeof(w->globals[0].family), "vmstat");
	snprintf(w->globals[0].name, sizeof(w->globals[0].name), "pgfault");
	w->globals[0].window = minflt + majflt;
	snprintf(w->globals[1].family, sizeof(w->globals[1].family), "vmstat");
	snprintf(w->globals[1].name, sizeof(w->globals[1].name), "pgmajfault");
	w->globals[1].window = majflt;
	snprintf(w->events[0].name, sizeof(w->events[0].name), "exceptions:page_fault_user");
	w->events[0].window_samples = minflt;
	for (size_t i = 0; i < w->ncollectors; i++) {
		struct mm_snap_collector *c = &w->collectors[i];

		snprintf(c->name, sizeof(c->name), "%s", collectors[i]);
		snprintf(c->source, sizeof(c->source), "%s", i < 3 && i != 1 ? "procfs" : "bpf");
		c->state = MM_COLLECTOR_RUNNING;
	}
}

/* The processes of the window ending at @end_ms: the churn that ended goes, new churn comes, now
 * and then a long-lived process restarts. */
static void turn_over(struct host *h, uint64_t start_ms, unsigned interval_s)
{
	size_t kept = 0;

	for (size_t i = 0; i < h->nchurn; i++) {
		if (h->churn[i].windows_left == 0) {
			h->pid_used[h->churn[i].pid] = false;
			continue;
		}
		h->churn[i].fresh = false;
		h->churn[kept++] = h->churn[i];
	}
	h->nchurn = kept;
	for (unsigned i = 0; i < LONG_PROCS; i++)
		h->lasting[i].fresh = false;
	for (unsigned k = 3 + below(h, 8); k > 0 && h->nchurn < MAX_CHURN; k--)
		start_churn(h, start_ms + below(h, interval_s * 1000));
	if (below(h, 20) == 0) {
		unsigned i = below(h, LONG_PROCS);

		start_lasting(h, &h->lasting[i], i, start_ms + below(h, interval_s * 1000), true);
	}
}

/* Builds and stores the window [start_ms, start_ms + interval). Returns 0 or -errno. */
static int write_window(struct host *h, struct mm_store *st, uint64_t start_ms, unsigned interval_s)
{
	uint64_t end_ms = start_ms + interval_s * 1000ull;
	double load = diurnal(end_ms);
	struct mm_snapshot *w = mm_snapshot_new(LONG_PROCS + h->nchurn, 2, 1, 6);
	size_t n = 0;
	int r;

	if (!w)
		return -ENOMEM;
	w->window_start_ms = start_ms;
	w->window_end_ms = w->taken_ms = end_ms;
	w->interval_s = interval_s;
	snprintf(w->kernel, sizeof(w->kernel), "6.12.57+deb13-amd64");
	for (unsigned i = 0; i < LONG_PROCS; i++) {
		struct proc *p = &h->lasting[i];

		if (p->fresh || uniform(h) < p->active_share)
			put_row(h, w, &n, p, interval_s, load);
		else
			put_idle(w, &n, p);
	}
	for (size_t i = 0; i < h->nchurn; i++) {
		put_row(h, w, &n, &h->churn[i], interval_s, load);
		h->churn[i].windows_left--;
	}
	if (n < h->live_min)
		h->live_min = n;
	for (size_t i = 0; i < n; i++)
		h->rows += !mm_snap_proc_idle(&w->procs[i]);
	put_locks(h, w);
	put_host_counters(w);
	r = mm_store_write_window(st, w);
	mm_snapshot_unref(w);
	return r;
}

static int usage(void)
{
	fprintf(stderr, "usage: gen_day DB [--hours H] [--interval S] [--seed N] [--end UNIX_S]\n"
			"Writes H hours (default 24) of S-second windows (default 10) of a busy\n"
			"host, ending at UNIX_S (default: now), into DB (which must not exist).\n");
	return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.hours = 24, .interval_s = 10, .seed = 44};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-' && !o->path) {
			o->path = a;
			continue;
		}
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--hours"))
			o->hours = atof(v);
		else if (!strcmp(a, "--interval"))
			o->interval_s = (unsigned)atoi(v);
		else if (!strcmp(a, "--seed"))
			o->seed = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--end"))
			o->end_ms = (uint64_t)(atof(v) * 1000);
		else
			return usage();
	}
	if (!o->path || o->hours <= 0 || o->interval_s < 1 || o->interval_s > 3600)
		return usage();
	if (access(o->path, F_OK) == 0) {
		fprintf(stderr, "gen_day: %s exists; it writes a new database only\n", o->path);
		return 2;
	}
	if (!o->end_ms)
		o->end_ms = (uint64_t)time(NULL) * 1000;
	o->end_ms -= o->end_ms % (o->interval_s * 1000ull);
	return 0;
}

int main(int argc, char **argv)
{
	static struct host h;
	struct mm_store *st = NULL;
	struct opts o;
	int r = parse_opts(argc, argv, &o);

	if (r)
		return r;
	uint64_t nwin = (uint64_t)(o.hours * 3600 / o.interval_s);
	uint64_t first_ms = o.end_ms - nwin * o.interval_s * 1000ull;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (mm_store_open(o.path, &st) < 0)
		return 1;
	h.rng = o.seed;
	h.next_pid = PID_FIRST;
	h.live_min = SIZE_MAX;
	make_units(&h);
	for (unsigned i = 0; i < LONG_PROCS; i++)
		start_lasting(&h, &h.lasting[i], i, first_ms, false);
	for (uint64_t k = 0; k < nwin; k++) {
		uint64_t start_ms = first_ms + k * o.interval_s * 1000ull;

		turn_over(&h, start_ms, o.interval_s);
		r = write_window(&h, st, start_ms, o.interval_s);
		if (r < 0)
			break;
		if ((k + 1) % 360 == 0 || k + 1 == nwin)
			fprintf(stderr,
				"gen_day: %" PRIu64 "/%" PRIu64 " windows, %" PRIu64
				" process rows, %" PRIu64 " processes\n",
				k + 1, nwin, h.rows, h.distinct);
	}
	mm_store_close(st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r < 0)
		return 1;
	fprintf(stderr,
		"gen_day: %s: %" PRIu64 " windows [%.3f, %.3f], %" PRIu64 " distinct processes, "
		"%zu live at least in each window, %" PRIu64 " process rows, %" PRIu64
		" lock rows, %d units, %.1f s\n",
		o.path, nwin, first_ms / 1000.0, o.end_ms / 1000.0, h.distinct, h.live_min, h.rows,
		h.lock_rows, UNITS, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
