/*
 * fault_workload: a multi-threaded load of user page faults and mmap_lock acquisitions, used by the
 * privileged tests to compare mmlockd's per-process counts with an independent count (perf stat).
 *
 * Fault threads split an anonymous region and a temporary file between them. The file is unlinked
 * as soon as it is created, so nothing is left behind even if the process is killed. Each round,
 * a fault thread writes one byte per page of its anonymous slice (anonymous write faults) and of
 * its slice of a MAP_PRIVATE mapping of the file (copy-on-write faults on page-cache pages), reads
 * one byte per page of its slice of a MAP_SHARED mapping of the file (read faults, batched by
 * fault-around), then drops every page with madvise(MADV_DONTNEED) so the next round faults again.
 * These faults complete under the per-VMA lock, and on 6.18 MADV_DONTNEED takes no mmap_lock
 * either. The mmap_lock traffic comes from the map threads. They loop over small anonymous
 * regions: mmap (write), touch every page (the first touch of a new anonymous VMA falls back to
 * mmap_lock for read), mprotect half of it read-only and back (two writes), mincore (read),
 * MADV_DONTNEED, munmap (write). Each cycle is about 2 read and 4 write acquisitions. Transparent
 * huge pages are turned off for the regions, so every page is one fault.
 *
 * It runs for --seconds, or for exactly --rounds rounds per thread, and writes its pid to
 * --pid-file once started. At the end it prints one summary line: rounds, map cycles, pages
 * touched, the faults the kernel accounted to it (getrusage minflt + majflt) and the elapsed time.
 * It can then create --done-file and stay alive, idle, for --linger seconds or until SIGUSR1, so an
 * observer can read the final counts of a live process.
 *
 * Build: gcc -O2 -pthread -o fault_workload fault_workload.c
 */
#include "workload.h"

#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>

#define MAP_CYCLE_PAGES	 16  /* pages per map-thread region */
#define MAP_ROUND_CYCLES 256 /* map-thread cycles per round */

struct opts {
	unsigned fault_threads;
	unsigned map_threads;
	double seconds;
	unsigned long rounds; /* 0: run for @seconds */
	unsigned long file_mb;
	unsigned long anon_mb;
	const char *pid_file;
	const char *done_file;
	double linger; /* seconds to stay alive after the work, unless SIGUSR1 */
	const char *file_dir;
};

struct shared {
	const struct opts *o;
	size_t page;
	char *anon;
	size_t anon_len;
	char *file_priv;
	char *file_shared;
	size_t file_len;
	uint64_t deadline_ns; /* 0 with --rounds */
	atomic_bool stop;
	pthread_barrier_t start;
};

struct worker {
	pthread_t tid;
	struct shared *sh;
	unsigned index;
	unsigned long rounds;
	unsigned long cycles;	/* map threads */
	unsigned long touched;	/* pages touched */
	unsigned long syscalls; /* mmap/mprotect/madvise/munmap calls */
	int err;		/* errno of the first failure, 0 if none */
	const char *what;	/* which call failed */
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [OPTIONS]\n"
		"Generate user page faults and mmap_lock acquisitions from several threads.\n"
		"\n"
		"  --fault-threads N  threads faulting the anonymous region and the file (default "
		"2)\n"
		"  --map-threads M    threads looping mmap/touch/mprotect/munmap of small regions\n"
		"                     (default 1)\n"
		"  --seconds S        run for S seconds (default 3)\n"
		"  --rounds R         instead, run exactly R rounds per thread (a map-thread round "
		"is\n"
		"                     %d cycles)\n"
		"  --file-mb MB       size of the temporary file faulted through MAP_PRIVATE "
		"writes and\n"
		"                     MAP_SHARED reads (default 64; 0 disables)\n"
		"  --file-dir DIR     where to create it (default $TMPDIR or /tmp); it is unlinked "
		"at once\n"
		"  --anon-mb MB       size of the anonymous region (default 64; 0 disables)\n"
		"  --pid-file PATH    write the process id to PATH once started\n"
		"  --done-file PATH   create PATH when the work is done (after the summary line)\n"
		"  --linger S         then stay alive, idle, for S seconds (default 0) or until "
		"SIGUSR1,\n"
		"                     so observers can read the final counts of a live process\n"
		"  --help             show this text\n"
		"\n"
		"Prints one line: rounds, map cycles, pages touched, faults accounted by the "
		"kernel\n"
		"(getrusage minflt+majflt), elapsed seconds, and the faults since the process\n"
		"started (since_start).\n",
		argv0, MAP_ROUND_CYCLES);
}

enum {
	O_FAULT = 256,
	O_MAP,
	O_SECONDS,
	O_ROUNDS,
	O_FILE_MB,
	O_FILE_DIR,
	O_ANON_MB,
	O_PID,
	O_DONE,
	O_LINGER,
};

/* In the order of the O_ values above: an option's name is longopts[c - O_FAULT].name. */
static const struct option longopts[] = {
	{"fault-threads", required_argument, NULL, O_FAULT},
	{"map-threads", required_argument, NULL, O_MAP},
	{"seconds", required_argument, NULL, O_SECONDS},
	{"rounds", required_argument, NULL, O_ROUNDS},
	{"file-mb", required_argument, NULL, O_FILE_MB},
	{"file-dir", required_argument, NULL, O_FILE_DIR},
	{"anon-mb", required_argument, NULL, O_ANON_MB},
	{"pid-file", required_argument, NULL, O_PID},
	{"done-file", required_argument, NULL, O_DONE},
	{"linger", required_argument, NULL, O_LINGER},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static void default_opts(struct opts *o)
{
	o->fault_threads = 2;
	o->map_threads = 1;
	o->seconds = 3;
	o->rounds = 0;
	o->file_mb = 64;
	o->anon_mb = 64;
	o->pid_file = NULL;
	o->done_file = NULL;
	o->linger = 0;
	o->file_dir = getenv("TMPDIR");
	if (!o->file_dir || !*o->file_dir)
		o->file_dir = "/tmp";
}

/* Sets option @c (an O_ value) of @o from @arg. Returns 0, or -1 when @arg is no valid value. */
static int set_opt(struct opts *o, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case O_FAULT:
		if (parse_ulong(arg, 1024, &v))
			return -1;
		o->fault_threads = v;
		break;
	case O_MAP:
		if (parse_ulong(arg, 1024, &v))
			return -1;
		o->map_threads = v;
		break;
	case O_SECONDS:
		if (parse_seconds(arg, &o->seconds) || !(o->seconds > 0))
			return -1;
		break;
	case O_LINGER:
		return parse_seconds(arg, &o->linger);
	case O_DONE:
		o->done_file = arg;
		break;
	case O_ROUNDS:
		if (parse_ulong(arg, ULONG_MAX, &v) || v == 0)
			return -1;
		o->rounds = v;
		break;
	case O_FILE_MB:
		if (parse_ulong(arg, 1 << 20, &v))
			return -1;
		o->file_mb = v;
		break;
	case O_FILE_DIR:
		o->file_dir = arg;
		break;
	case O_ANON_MB:
		if (parse_ulong(arg, 1 << 20, &v))
			return -1;
		o->anon_mb = v;
		break;
	case O_PID:
		o->pid_file = arg;
		break;
	}
	return 0;
}

/* Whether the options together make a run; if not, says why. Returns 0, or -1. */
static int check_opts(const struct opts *o, const char *argv0)
{
	if (!o->fault_threads && !o->map_threads) {
		fprintf(stderr, "%s: no threads to run\n", argv0);
		return -1;
	}
	if (o->fault_threads && !o->file_mb && !o->anon_mb) {
		fprintf(stderr, "%s: fault threads need --file-mb or --anon-mb > 0\n", argv0);
		return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	default_opts(o);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout, argv[0]);
			exit(0);
		}
		if (c < O_FAULT) { /* '?': unknown option or missing value, getopt said which */
			usage(stderr, argv[0]);
			return -1;
		}
		if (set_opt(o, c, optarg)) {
			fprintf(stderr, "%s: bad value '%s' for --%s\n", argv[0], optarg,
				longopts[c - O_FAULT].name);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return -1;
	}
	return check_opts(o, argv[0]);
}

static bool keep_going(struct shared *sh, unsigned long rounds)
{
	if (atomic_load_explicit(&sh->stop, memory_order_relaxed))
		return false;
	if (sh->o->rounds)
		return rounds < sh->o->rounds;
	if (now_ns() >= sh->deadline_ns) {
		atomic_store(&sh->stop, true);
		return false;
	}
	return true;
}

static void fail(struct worker *w, const char *what)
{
	if (!w->err) {
		w->err = errno ? errno : EIO;
		w->what = what;
	}
	atomic_store(&w->sh->stop, true);
}

/* [*start, *len) = slice @index of @n equal page-aligned slices of @total bytes. */
static void slice(size_t total, size_t page, unsigned index, unsigned n, size_t *start, size_t *len)
{
	size_t pages = total / page;
	size_t first = pages * index / n, last = pages * (index + 1) / n;

	*start = first * page;
	*len = (last - first) * page;
}

static void *fault_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t page = sh->page, a_off, a_len, f_off, f_len, i;
	volatile char sink = 0;

	slice(sh->anon_len, page, w->index, sh->o->fault_threads, &a_off, &a_len);
	slice(sh->file_len, page, w->index, sh->o->fault_threads, &f_off, &f_len);
	pthread_barrier_wait(&sh->start);

	while (keep_going(sh, w->rounds)) {
		char *a = sh->anon + a_off, *p = sh->file_priv + f_off,
		     *s = sh->file_shared + f_off;

		for (i = 0; i < a_len; i += page)
			a[i] = (char)i;
		for (i = 0; i < f_len; i += page)
			p[i] = (char)i;
		for (i = 0; i < f_len; i += page)
			sink += s[i];
		w->touched += (a_len + 2 * f_len) / page;

		if (a_len && madvise(a, a_len, MADV_DONTNEED)) {
			fail(w, "madvise(anon)");
			break;
		}
		if (f_len &&
		    (madvise(p, f_len, MADV_DONTNEED) || madvise(s, f_len, MADV_DONTNEED))) {
			fail(w, "madvise(file)");
			break;
		}
		w->syscalls += !!a_len + 2 * !!f_len;
		w->rounds++;
	}
	(void)sink;
	return NULL;
}

static void *map_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t page = sh->page, len = MAP_CYCLE_PAGES * page, half = len / 2, i;
	unsigned char vec[MAP_CYCLE_PAGES];
	unsigned c;

	pthread_barrier_wait(&sh->start);

	while (keep_going(sh, w->rounds)) {
		for (c = 0; c < MAP_ROUND_CYCLES; c++) {
			char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m == MAP_FAILED) {
				fail(w, "mmap");
				return NULL;
			}
			for (i = 0; i < len; i += page)
				m[i] = 1;
			if (mprotect(m, half, PROT_READ) ||
			    mprotect(m, half, PROT_READ | PROT_WRITE)) {
				fail(w, "mprotect");
				munmap(m, len);
				return NULL;
			}
			if (mincore(m, len, vec)) {
				fail(w, "mincore");
				munmap(m, len);
				return NULL;
			}
			if (madvise(m, len, MADV_DONTNEED)) {
				fail(w, "madvise");
				munmap(m, len);
				return NULL;
			}
			if (munmap(m, len)) {
				fail(w, "munmap");
				return NULL;
			}
			w->touched += MAP_CYCLE_PAGES;
			w->syscalls += 6;
			w->cycles++;
		}
		w->rounds++;
	}
	return NULL;
}

/* A temporary file of @len bytes (non-zero data, so every page is in the page cache), mapped twice.
 * The file is unlinked before returning, whatever happens. */
static int setup_file(struct shared *sh, const char *dir, size_t len)
{
	char path[PATH_MAX];
	char buf[1 << 16];
	size_t done;
	int fd;

	if (snprintf(path, sizeof(path), "%s/fault_workload.XXXXXX", dir) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);

	memset(buf, 0x5a, sizeof(buf));
	for (done = 0; done < len;) {
		size_t n = len - done < sizeof(buf) ? len - done : sizeof(buf);
		ssize_t r = write(fd, buf, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto err;
		}
		done += (size_t)r;
	}
	sh->file_priv = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (sh->file_priv == MAP_FAILED)
		goto err;
	sh->file_shared = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (sh->file_shared == MAP_FAILED) {
		munmap(sh->file_priv, len);
		goto err;
	}
	madvise(sh->file_priv, len, MADV_NOHUGEPAGE);
	close(fd);
	sh->file_len = len;
	return 0;
err:
	close(fd);
	return -1;
}

/* The anonymous region and the temporary file the fault threads share. Returns 0, or -1 after
 * saying what failed. */
static int map_regions(struct shared *sh, const struct opts *o)
{
	if (o->fault_threads && o->anon_mb) {
		sh->anon_len = o->anon_mb << 20;
		sh->anon = mmap(NULL, sh->anon_len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (sh->anon == MAP_FAILED) {
			fprintf(stderr, "fault_workload: mmap %lu MB: %s\n", o->anon_mb,
				strerror(errno));
			return -1;
		}
		madvise(sh->anon, sh->anon_len, MADV_NOHUGEPAGE);
	}
	if (o->fault_threads && o->file_mb && setup_file(sh, o->file_dir, o->file_mb << 20)) {
		fprintf(stderr, "fault_workload: temporary file of %lu MB in %s: %s\n", o->file_mb,
			o->file_dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* Starts @n threads, the fault threads first, each waiting on sh->start. Returns them, or NULL
 * when out of memory; exits when a thread cannot be created. */
static struct worker *start_workers(struct shared *sh, const struct opts *o, unsigned n)
{
	struct worker *w = calloc(n, sizeof(*w));

	if (!w || pthread_barrier_init(&sh->start, NULL, n + 1)) {
		fprintf(stderr, "fault_workload: out of memory\n");
		return NULL;
	}
	for (unsigned i = 0; i < n; i++) {
		bool is_fault = i < o->fault_threads;
		int err;

		w[i].sh = sh;
		w[i].index = is_fault ? i : i - o->fault_threads;
		err = pthread_create(&w[i].tid, NULL, is_fault ? fault_thread : map_thread, &w[i]);
		if (err) {
			fprintf(stderr, "fault_workload: pthread_create: %s\n", strerror(err));
			_exit(1); /* started threads wait on the barrier forever */
		}
	}
	return w;
}

/* Says which threads failed and prints the summary line of the @n threads @w, which ran from
 * @t0 (usage @ru0) to @t1 (@ru1). Returns 1 if a thread failed, else 0. */
static int report(const struct opts *o, const struct worker *w, unsigned n,
		  const struct rusage *ru0, const struct rusage *ru1, uint64_t t0, uint64_t t1)
{
	unsigned long rounds = 0, cycles = 0, touched = 0, syscalls = 0, minflt, majflt;
	int ret = 0;

	for (unsigned i = 0; i < n; i++) {
		if (w[i].err) {
			fprintf(stderr, "fault_workload: %s thread %u: %s: %s\n",
				i < o->fault_threads ? "fault" : "map", w[i].index, w[i].what,
				strerror(w[i].err));
			ret = 1;
		}
		if (i < o->fault_threads)
			rounds += w[i].rounds;
		cycles += w[i].cycles;
		touched += w[i].touched;
		syscalls += w[i].syscalls;
	}
	minflt = (unsigned long)(ru1->ru_minflt - ru0->ru_minflt);
	majflt = (unsigned long)(ru1->ru_majflt - ru0->ru_majflt);

	/* since_start: every fault of the process so far, exec and start-up included (what
	 * /proc/PID/stat shows), for checks of mmlockd's per-process totals. */
	printf("fault_workload: pid %d fault_threads %u map_threads %u fault_rounds %lu "
	       "map_cycles %lu pages_touched %lu mm_syscalls %lu faults %lu (minflt %lu majflt "
	       "%lu) "
	       "elapsed %.3f s since_start %lu\n",
	       (int)getpid(), o->fault_threads, o->map_threads, rounds, cycles, touched, syscalls,
	       minflt + majflt, minflt, majflt, (double)(t1 - t0) / 1e9,
	       (unsigned long)(ru1->ru_minflt + ru1->ru_majflt));
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct shared sh;
	struct worker *w;
	struct rusage ru0, ru1;
	sigset_t usr1;
	unsigned n, i;
	uint64_t t0, t1;
	int ret;

	if (parse_args(argc, argv, &o))
		return 2;
	/* Blocked before any thread exists, so only wait_signal() ever takes it. */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (o.pid_file && write_pid_file(o.pid_file)) {
		fprintf(stderr, "fault_workload: %s: %s\n", o.pid_file, strerror(errno));
		return 1;
	}

	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	if (map_regions(&sh, &o))
		return 1;
	n = o.fault_threads + o.map_threads;
	w = start_workers(&sh, &o, n);
	if (!w)
		return 1;

	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_ns();
	sh.deadline_ns = t0 + (uint64_t)(o.seconds * 1e9);
	pthread_barrier_wait(&sh.start);
	for (i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
	t1 = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	ret = report(&o, w, n, &ru0, &ru1, t0, t1);

	fflush(stdout);
	if (o.done_file && write_pid_file(o.done_file)) {
		fprintf(stderr, "fault_workload: %s: %s\n", o.done_file, strerror(errno));
		ret = 1;
	}
	if (o.linger > 0)
		wait_signal(&usr1, o.linger);

	if (sh.file_len) {
		munmap(sh.file_priv, sh.file_len);
		munmap(sh.file_shared, sh.file_len);
	}
	if (sh.anon_len)
		munmap(sh.anon, sh.anon_len);
	free(w);
	return ret;
}
