/*
 * Shared plumbing of the benchmark workloads (see common.h): signals, the temporary memory cgroup,
 * the temporary swap file and unlinked data files. Errors are printed here, where they happen, and
 * returned as -errno; a failed set-up step undoes itself, so bench_env_cleanup() only ever has
 * complete steps to undo.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define V1_MEMCG "/sys/fs/cgroup/memory"

void bench_block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	/* A shell starts background jobs with SIGINT and SIGQUIT ignored, and an ignored signal
	 * never reaches sigtimedwait(): take them back. */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
}

bool bench_interrupted(const sigset_t *set)
{
	sigset_t pending;

	if (sigpending(&pending))
		return false;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(set, sig) == 1 && sigismember(&pending, sig) == 1)
			return true;
	return false;
}

void bench_phase(const char *phase)
{
	printf("# phase %s\n", phase);
	fflush(stdout);
}

unsigned long bench_sum(struct bench_counter *c, unsigned n)
{
	unsigned long s = 0;

	for (unsigned i = 0; i < n; i++)
		s += atomic_load_explicit(&c[i].v, memory_order_relaxed);
	return s;
}

/* Starts, for each kind k of @t, t[k].n threads running t[k].fn, each with its struct bench_worker
 * of @w (which holds them all) as argument. Returns how many started: all unless pthread_create
 * failed (said on stderr, prefixed @name); those are to be joined. */
static unsigned start_threads(struct bench_worker *w, void *sh, const struct bench_threads *t,
			      unsigned kinds, const char *name)
{
	unsigned started = 0;

	for (unsigned k = 0; k < kinds; k++) {
		for (unsigned i = 0; i < t[k].n; i++, started++) {
			w[started].sh = t[k].sh ? t[k].sh : sh;
			w[started].index = i;
			if (pthread_create(&w[started].tid, NULL, t[k].fn, &w[started])) {
				fprintf(stderr, "%s: pthread_create failed\n", name);
				return started;
			}
		}
	}
	return started;
}

int bench_run(const sigset_t *sigs, const struct bench_common *c, void *sh, atomic_bool *stop,
	      const struct bench_threads *t, unsigned kinds, const struct bench_counters k[3],
	      struct bench_measure *m, const char *name)
{
	struct bench_worker *w;
	unsigned total = 0, started;
	int r = -1;

	for (unsigned i = 0; i < kinds; i++)
		total += t[i].n;
	w = calloc(total ? total : 1, sizeof(*w));
	if (!w) {
		fprintf(stderr, "%s: out of memory\n", name);
		return -1;
	}
	started = start_threads(w, sh, t, kinds, name);
	if (started == total)
		r = bench_measure(sigs, c, k, m);
	atomic_store(stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(w[i].tid, NULL);
	free(w);
	return r;
}

static void mmap_loop(const atomic_bool *stop, size_t pages, unsigned long rate,
		      struct bench_counter *count)
{
	size_t len = pages * (size_t)sysconf(_SC_PAGESIZE);
	struct bench_pace pace;

	bench_pace_init(&pace, rate);
	while (!bench_stopped(stop)) {
		void *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			continue;
		munmap(m, len);
		bench_count(count, 1);
		bench_pace_tick(&pace);
	}
}

void *bench_mmap_thread(void *arg)
{
	const struct bench_worker *w = arg;
	const struct bench_mmap_writer *mw = w->sh;

	mmap_loop(mw->stop, mw->pages, mw->rate, &mw->counts[w->index]);
	return NULL;
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* One "# rate" line: set 0's rate since the last one, and the cumulative figures an observer
 * pairs with its own clock (bench/paired.py): mono= CLOCK_MONOTONIC now (s), rounds= and ops=
 * sets 0 and 1 since start, cpu= the process's user + system time (s), flt= its minor + major
 * faults. */
static void print_tick(const char *phase, uint64_t start, uint64_t t, uint64_t t1, unsigned long n,
		       unsigned long n1, const struct bench_counters *k)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("# rate phase=%s t=%.2f rounds_per_s=%.1f mono=%.6f rounds=%lu ops=%lu cpu=%.6f "
	       "flt=%ld\n",
	       phase, (double)(t1 - start) / 1e9, (double)(n1 - n) * 1e9 / (double)(t1 - t),
	       (double)t1 / 1e9, n1, bench_sum(k[1].c, k[1].n),
	       tv_s(&ru.ru_utime) + tv_s(&ru.ru_stime), ru.ru_minflt + ru.ru_majflt);
	fflush(stdout);
}

/* wait_signal() for @seconds, printing a tick every c->progress seconds if set. */
static int wait_progress(const sigset_t *sigs, const struct bench_common *c, double seconds,
			 const struct bench_counters k[3], const char *phase)
{
	uint64_t start = now_ns(), t = start, end = start + (uint64_t)(seconds * 1e9);
	unsigned long n = bench_sum(k[0].c, k[0].n);
	int sig;

	if (!(c->progress > 0))
		return wait_signal(sigs, seconds);
	while (t < end) {
		double step = (double)(end - t) / 1e9;
		uint64_t t1;
		unsigned long n1;

		sig = wait_signal(sigs, step < c->progress ? step : c->progress);
		if (sig)
			return sig;
		t1 = now_ns();
		n1 = bench_sum(k[0].c, k[0].n);
		print_tick(phase, start, t, t1, n, n1, k);
		t = t1;
		n = n1;
	}
	return 0;
}

int bench_measure(const sigset_t *sigs, const struct bench_common *c,
		  const struct bench_counters k[3], struct bench_measure *m)
{
	struct rusage ru0, ru1;
	uint64_t t0;
	int sig;

	memset(m, 0, sizeof(*m));
	bench_phase("warmup");
	sig = wait_progress(sigs, c, c->warmup, k, "warmup");
	if (sig)
		return sig;
	getrusage(RUSAGE_SELF, &ru0);
	for (unsigned i = 0; i < 3; i++)
		m->count[i] = bench_sum(k[i].c, k[i].n);
	t0 = now_ns();
	bench_phase("measure");
	sig = wait_progress(sigs, c, c->seconds, k, "measure");
	m->ns = now_ns() - t0;
	for (unsigned i = 0; i < 3; i++)
		m->count[i] = bench_sum(k[i].c, k[i].n) - m->count[i];
	getrusage(RUSAGE_SELF, &ru1);
	m->minflt = ru1.ru_minflt - ru0.ru_minflt;
	m->majflt = ru1.ru_majflt - ru0.ru_majflt;
	m->utime = tv_s(&ru1.ru_utime) - tv_s(&ru0.ru_utime);
	m->stime = tv_s(&ru1.ru_stime) - tv_s(&ru0.ru_stime);
	bench_phase("end");
	return sig;
}

double bench_rate(const struct bench_measure *m, unsigned k)
{
	return m->ns ? (double)m->count[k] * 1e9 / (double)m->ns : 0;
}

void bench_result(const struct bench_measure *m)
{
	printf("result: pid=%d rounds=%lu elapsed_s=%.3f rounds_per_s=%.1f writer_ops_per_s=%.1f "
	       "minflt=%ld majflt=%ld utime_s=%.3f stime_s=%.3f",
	       (int)getpid(), m->count[0], (double)m->ns / 1e9, bench_rate(m, 0), bench_rate(m, 1),
	       m->minflt, m->majflt, m->utime, m->stime);
}

void bench_result_end(void)
{
	struct rusage rt;

	getrusage(RUSAGE_SELF, &rt);
	printf(" total_minflt=%ld total_majflt=%ld\n", rt.ru_minflt, rt.ru_majflt);
}

int bench_failed(const char *name, int sig)
{
	if (sig > 0)
		fprintf(stderr, "%s: interrupted by signal %d, cleaned up\n", name, sig);
	return sig > 0 ? 128 + sig : 1;
}

void bench_common_defaults(struct bench_common *c, double seconds, double warmup,
			   unsigned long limit_mb, unsigned long swap_mb)
{
	memset(c, 0, sizeof(*c));
	c->seconds = seconds;
	c->warmup = warmup;
	c->dir = "/var/tmp";
	snprintf(c->cgroup_name, sizeof(c->cgroup_name), "mmlockd-bench.%d", (int)getpid());
	c->limit_mb = limit_mb;
	c->swap_mb = swap_mb;
	c->swappiness = 100;
}

/* One line of --help for @o, "  --NAME META" in a column of 21, wrapped at 82 columns. */
static void print_opt(const struct bench_num_opt *o)
{
	enum { COL = 21, WIDTH = 82 };
	char text[512], head[64];
	int at;

	snprintf(head, sizeof(head), "  --%s %s", o->name, o->meta);
	snprintf(text, sizeof(text), "%s (default %lu%s%s)", o->help, o->def,
		 o->zero ? "; 0: " : "", o->zero ? o->zero : "");
	at = printf("%-*s", COL - 1, head);
	for (char *w = strtok(text, " "); w; w = strtok(NULL, " ")) {
		if (at + 1 + (int)strlen(w) > WIDTH)
			at = printf("\n%*s", COL - 1, "") - 1;
		at += printf(" %s", w);
	}
	putchar('\n');
}

static void usage(const char *argv0, const struct bench_common *c, const struct bench_num_opt *opts,
		  const char *about)
{
	printf("Usage: %s [OPTIONS]\n%s\n\n", argv0, about);
	for (size_t i = 0; opts[i].name; i++)
		print_opt(&opts[i]);
	printf("  --seconds S        measured phase (default %.0f)\n"
	       "  --warmup S         unmeasured phase before it (default %.0f)\n"
	       "  --dir DIR          where data and swap files go (default /var/tmp)\n"
	       "  --cgroup-name N    name of the temporary memory cgroup (default "
	       "mmlockd-bench.PID)\n"
	       "  --limit-mb MB      its memory limit (default %lu; 0: run without a cgroup)\n"
	       "  --swap-file PATH   temporary swap file (default DIR/mmlockd-bench.PID.swap)\n"
	       "  --swap-mb MB       its size (default %lu; 0: no swap file)\n"
	       "  --swappiness N     the cgroup's vm swappiness, cgroup v1 only (default 100)\n"
	       "  --progress S       print the rounds/s of every S seconds of both phases\n"
	       "                     (\"# rate\" lines, with the monotonic clock and the "
	       "cumulative\n"
	       "                     rounds, CPU time and faults; default 0: none)\n",
	       c->seconds, c->warmup, c->limit_mb, c->swap_mb);
}

int bench_parse_args(int argc, char **argv, struct bench_common *c,
		     const struct bench_num_opt *opts, const char *about)
{
	static const struct option common[] = {BENCH_COMMON_LONGOPTS};
	enum { OWN_BASE = 2000 };
	size_t n = 0, ncommon = sizeof(common) / sizeof(common[0]);
	for (; opts[n].name; n++) {
		if (opts[n].ul)
			*opts[n].ul = opts[n].def;
		else
			*opts[n].u = (unsigned)opts[n].def;
	}
	struct option *longopts = calloc(n + ncommon + 2, sizeof(*longopts));
	if (!longopts) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		longopts[i] =
			(struct option){opts[i].name, required_argument, NULL, OWN_BASE + (int)i};
	memcpy(longopts + n, common, sizeof(common));
	longopts[n + ncommon] = (struct option){"help", no_argument, NULL, 'h'};

	int code, r = 0;
	while (r == 0 && (code = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		unsigned long v;
		if (code == 'h') {
			usage(argv[0], c, opts, about);
			exit(0);
		} else if (code == '?') {
			r = -1;
		} else if (code >= OWN_BASE && code < OWN_BASE + (int)n) {
			const struct bench_num_opt *o = &opts[code - OWN_BASE];
			if (parse_ulong(optarg, 1ul << 24, &v)) {
				fprintf(stderr, "%s: bad value '%s' for --%s\n", argv[0], optarg,
					o->name);
				r = -1;
			} else if (o->ul) {
				*o->ul = v;
			} else {
				*o->u = (unsigned)v;
			}
		} else if (bench_common_set(c, code, optarg)) {
			r = -1;
		}
	}
	free(longopts);
	if (r == 0 && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", argv[0],
			argv[optind]);
		r = -1;
	}
	return r;
}

int bench_common_set(struct bench_common *c, int code, const char *arg)
{
	int bad = 0;

	switch (code - BENCH_OPT_BASE) {
	case 0:
		bad = parse_seconds(arg, &c->seconds) || !(c->seconds > 0);
		break;
	case 1:
		bad = parse_seconds(arg, &c->warmup);
		break;
	case 2:
		c->dir = arg;
		break;
	case 3:
		bad = !*arg || strchr(arg, '/') || strlen(arg) >= sizeof(c->cgroup_name);
		if (!bad)
			snprintf(c->cgroup_name, sizeof(c->cgroup_name), "%s", arg);
		break;
	case 4:
		bad = parse_ulong(arg, 1ul << 30, &c->limit_mb);
		break;
	case 5:
		c->swap_file = arg;
		break;
	case 6:
		bad = parse_ulong(arg, 1ul << 20, &c->swap_mb);
		break;
	case 7:
		bad = parse_ulong(arg, 200, &c->swappiness);
		break;
	case 8:
		bad = parse_seconds(arg, &c->progress);
		break;
	default:
		bad = 1;
	}
	if (bad)
		fprintf(stderr, "bad value '%s' for a common option\n", arg);
	return bad ? -1 : 0;
}

static int write_str(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static bool file_has_word(const char *path, const char *word)
{
	char buf[512], *tok, *save;
	FILE *f = fopen(path, "re");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(buf, sizeof(buf), f))
		for (tok = strtok_r(buf, " \n", &save); tok && !found;
		     tok = strtok_r(NULL, " \n", &save))
			found = !strcmp(tok, word);
	fclose(f);
	return found;
}

int bench_cgroup_create(struct bench_env *e, const struct bench_common *c)
{
	char root[PATH_MAX], path[PATH_MAX + 64], num[64];
	const char *limit_file;
	struct stat st;
	int err;

	if (!c->limit_mb)
		return 0;
	if (stat(V1_MEMCG "/memory.limit_in_bytes", &st) == 0) {
		e->cg_version = 1;
		snprintf(root, sizeof(root), "%s", V1_MEMCG);
		limit_file = "memory.limit_in_bytes";
	} else {
		const char *v2 = stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0
					 ? "/sys/fs/cgroup/unified"
					 : "/sys/fs/cgroup";

		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", v2);
		if (!file_has_word(path, "memory")) {
			fprintf(stderr,
				"no memory cgroup controller: neither %s nor memory in %s\n",
				V1_MEMCG, path);
			return -ENOENT;
		}
		e->cg_version = 2;
		snprintf(root, sizeof(root), "%s", v2);
		limit_file = "memory.max";
	}
	if (snprintf(e->cg_dir, sizeof(e->cg_dir), "%s/%s", root, c->cgroup_name) >=
	    (int)sizeof(e->cg_dir)) {
		e->cg_dir[0] = '\0';
		return -ENAMETOOLONG;
	}
	if (mkdir(e->cg_dir, 0755)) {
		err = -errno;
		fprintf(stderr, "mkdir %s: %s\n", e->cg_dir, strerror(errno));
		e->cg_dir[0] = '\0';
		return err;
	}
	snprintf(path, sizeof(path), "%s/%s", e->cg_dir, limit_file);
	snprintf(num, sizeof(num), "%lu", c->limit_mb << 20);
	err = write_str(path, num);
	if (!err && e->cg_version == 1) {
		snprintf(path, sizeof(path), "%s/memory.swappiness", e->cg_dir);
		snprintf(num, sizeof(num), "%lu", c->swappiness);
		err = write_str(path, num);
	}
	if (err) {
		fprintf(stderr, "setting up cgroup %s: %s\n", e->cg_dir, strerror(-err));
		rmdir(e->cg_dir);
		e->cg_dir[0] = '\0';
	}
	return err;
}

static void cgroup_remove(struct bench_env *e)
{
	if (!e->cg_dir[0])
		return;
	/* The worker has been reaped; its memory charges never block rmdir. */
	for (int i = 0; i < 50; i++) {
		if (!rmdir(e->cg_dir) || errno == ENOENT)
			break;
		if (errno != EBUSY) {
			fprintf(stderr, "rmdir %s: %s\n", e->cg_dir, strerror(errno));
			break;
		}
		usleep(20000);
	}
	e->cg_dir[0] = '\0';
}

int bench_spawn(struct bench_env *e, const sigset_t *sigs, const char *name)
{
	sigset_t all = *sigs;
	char path[PATH_MAX + 32], num[32];
	int status = 0, sig, forwarded = 0;
	pid_t child;

	sigaddset(&all, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	fflush(stdout);
	child = fork();
	if (child < 0) {
		int err = -errno;

		fprintf(stderr, "%s: fork: %s\n", name, strerror(errno));
		return err;
	}
	if (child == 0) {
		/* Dies with the parent, which alone can tear down. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(1);
		if (e->cg_dir[0]) {
			snprintf(path, sizeof(path), "%s/cgroup.procs", e->cg_dir);
			snprintf(num, sizeof(num), "%d", (int)getpid());
			if (write_str(path, num)) {
				fprintf(stderr, "%s: cannot join %s\n", name, e->cg_dir);
				_exit(1);
			}
		}
		/* The parent tears down; the worker must not. */
		e->cg_dir[0] = '\0';
		e->swap_path[0] = '\0';
		e->swap_active = false;
		e->data_open = false;
		e->sync_dir[0] = '\0';
		printf("# worker %d\n", (int)getpid());
		fflush(stdout);
		return 0;
	}
	for (;;) {
		sig = sigwaitinfo(&all, NULL);
		if (sig == SIGCHLD || sig < 0) {
			if (waitpid(child, &status, WNOHANG) == child)
				break;
			continue;
		}
		/* A stop signal: the worker stops cleanly on SIGTERM; a third one kills it. */
		kill(child, ++forwarded >= 3 ? SIGKILL : SIGTERM);
	}
	bench_env_cleanup(e);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "%s: worker killed by signal %d%s; cleaned up\n", name,
			WTERMSIG(status),
			WTERMSIG(status) == SIGKILL ? " (the cgroup's OOM killer?)" : "");
		exit(128 + WTERMSIG(status));
	}
	exit(WEXITSTATUS(status));
}

/* The mkswap(8) header: version 1, last usable page, no bad pages, signature at the end of the
 * first page. */
static int write_swap_header(int fd, unsigned long mb)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *hdr = calloc(1, (size_t)page);
	uint32_t v;
	int err = 0;

	if (!hdr)
		return -ENOMEM;
	v = 1;
	memcpy(hdr + 1024, &v, 4);
	v = (uint32_t)(((uint64_t)mb << 20) / (uint64_t)page - 1);
	memcpy(hdr + 1028, &v, 4);
	memcpy(hdr + page - 10, "SWAPSPACE2", 10);
	if (pwrite(fd, hdr, (size_t)page, 0) != page)
		err = -EIO;
	free(hdr);
	return err;
}

/* Remembers the directory of @path (itself if !@is_file) as the one to syncfs(). */
static void set_sync_dir(struct bench_env *e, const char *path, bool is_file)
{
	char *slash;

	snprintf(e->sync_dir, sizeof(e->sync_dir), "%s", path);
	if (!is_file)
		return;
	slash = strrchr(e->sync_dir, '/');
	if (!slash)
		snprintf(e->sync_dir, sizeof(e->sync_dir), ".");
	else if (slash == e->sync_dir)
		slash[1] = '\0';
	else
		*slash = '\0';
}

static void sync_fs(const char *dir)
{
	int fd;

	if (!dir[0])
		return;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (syncfs(fd))
		fprintf(stderr, "syncfs %s: %s\n", dir, strerror(errno));
	close(fd);
}

double bench_settle(struct bench_env *e)
{
	uint64_t t0 = now_ns();

	sync_fs(e->sync_dir);
	return (double)(now_ns() - t0) / 1e6;
}

long bench_file_cached_kb(int fd, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page;
	unsigned char *vec = malloc(n ? n : 1);
	void *m;
	long kb = 0;

	if (!vec)
		return -1;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || mincore(m, len, vec)) {
		if (m != MAP_FAILED)
			munmap(m, len);
		free(vec);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		kb += vec[i] & 1;
	munmap(m, len);
	free(vec);
	return kb * (long)(page >> 10);
}

int bench_swap_on(struct bench_env *e, const struct bench_common *c, const sigset_t *sigs)
{
	static char zero[1 << 20];
	int fd, err = 0;

	if (!c->swap_mb)
		return 0;
	if (c->swap_file)
		snprintf(e->swap_path, sizeof(e->swap_path), "%s", c->swap_file);
	else
		snprintf(e->swap_path, sizeof(e->swap_path), "%s/mmlockd-bench.%d.swap", c->dir,
			 (int)getpid());
	fd = open(e->swap_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "creating swap file %s: %s\n", e->swap_path, strerror(errno));
		e->swap_path[0] = '\0';
		return err;
	}
	/* Written, not fallocated: a swap file must have no holes nor unwritten extents. */
	for (unsigned long i = 0; i < c->swap_mb && !err; i++) {
		if (write(fd, zero, sizeof(zero)) != (ssize_t)sizeof(zero))
			err = errno ? -errno : -EIO;
		else if ((i & 63) == 63 && bench_interrupted(sigs))
			err = -EINTR;
	}
	if (!err)
		err = write_swap_header(fd, c->swap_mb);
	if (!err && fsync(fd))
		err = -errno;
	/* Written through the page cache, but swapped to through its blocks: 512 MiB of clean
	 * page cache nobody reads again, dropped so that every run starts with the same free
	 * memory. */
	if (!err)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (!err && !e->sync_dir[0])
		set_sync_dir(e, e->swap_path, true);
	if (!err && swapon(e->swap_path, 0))
		err = -errno;
	if (err) {
		if (err != -EINTR)
			fprintf(stderr, "swap file %s: %s\n", e->swap_path, strerror(-err));
		unlink(e->swap_path);
		e->swap_path[0] = '\0';
		return err;
	}
	e->swap_active = true;
	return 0;
}

static void swap_off(struct bench_env *e)
{
	if (!e->swap_path[0])
		return;
	if (e->swap_active && swapoff(e->swap_path))
		fprintf(stderr, "swapoff %s: %s\n", e->swap_path, strerror(errno));
	e->swap_active = false;
	unlink(e->swap_path);
	e->swap_path[0] = '\0';
}

void bench_env_cleanup(struct bench_env *e)
{
	char path[PATH_MAX + 32];

	/* swapoff reads back what is still in swap (or swap cache) and charges it to the cgroup
	 * that owned it: lift the limit first, or that charge fails and so does swapoff. */
	if (e->cg_dir[0]) {
		snprintf(path, sizeof(path), "%s/%s", e->cg_dir,
			 e->cg_version == 1 ? "memory.limit_in_bytes" : "memory.max");
		write_str(path, e->cg_version == 1 ? "-1" : "max");
	}
	swap_off(e);
	cgroup_remove(e);
	if (e->data_open) {
		close(e->data_fd);
		e->data_open = false;
	}
	/* The files' blocks are free now: their discard (mount -o discard) and the journal
	 * commit happen here, not in the next run's measured phase. */
	sync_fs(e->sync_dir);
	e->sync_dir[0] = '\0';
}

int bench_env_data_file(struct bench_env *e, const struct bench_common *c, unsigned long mb,
			const sigset_t *sigs)
{
	int fd = bench_data_file(c->dir, mb, sigs);

	if (fd < 0)
		return fd;
	e->data_fd = fd;
	e->data_open = true;
	set_sync_dir(e, c->dir, false);
	return fd;
}

int bench_data_file(const char *dir, unsigned long mb, const sigset_t *sigs)
{
	char path[PATH_MAX];
	static unsigned char buf[1 << 20];
	int fd, err = 0;

	if (snprintf(path, sizeof(path), "%s/mmlockd-bench.XXXXXX", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		fprintf(stderr, "creating a data file in %s: %s\n", dir, strerror(errno));
		return err;
	}
	unlink(path);
	for (unsigned long i = 0; i < mb && !err; i++) {
		/* non-zero, different per MiB, so no page is ever a zero page */
		memset(buf, (int)(i % 251) + 1, sizeof(buf));
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			err = errno ? -errno : -EIO;
		else if ((i & 63) == 63 && bench_interrupted(sigs))
			err = -EINTR;
	}
	if (!err && fdatasync(fd))
		err = -errno;
	if (!err)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err) {
		if (err != -EINTR)
			fprintf(stderr, "writing the data file: %s\n", strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

void bench_pace_init(struct bench_pace *p, unsigned long rate)
{
	memset(p, 0, sizeof(*p));
	if (!rate)
		return;
	/* batches of about 2 ms */
	p->batch = rate / 500 ? (unsigned)(rate / 500) : 1;
	p->batch_ns = (uint64_t)p->batch * 1000000000ull / rate;
	p->next_ns = now_ns() + p->batch_ns;
}

void bench_pace_tick(struct bench_pace *p)
{
	struct timespec ts;
	uint64_t now;

	if (!p->batch || ++p->n < p->batch)
		return;
	p->n = 0;
	now = now_ns();
	if (now < p->next_ns) {
		ts.tv_sec = (time_t)(p->next_ns / 1000000000ull);
		ts.tv_nsec = (long)(p->next_ns % 1000000000ull);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	} else if (now - p->next_ns > p->batch_ns) {
		p->next_ns = now; /* behind: no catching up */
	}
	p->next_ns += p->batch_ns;
}
