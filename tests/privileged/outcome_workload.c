/*
 * outcome_workload: workloads that make the kernel handle user page faults in each way mmlockd
 * tells apart (see plugins/faults.c), for recordings (tests/data/) and privileged tests.
 *
 *   file   File-backed faults under memory-cgroup pressure, racing munmap. A temporary file
 *          bigger than the cgroup's memory limit is written, flushed and dropped from the page
 *          cache; the process then joins a new memory cgroup and fault threads read random pages
 *          of a MAP_SHARED, MADV_RANDOM mapping of it. Most faults find no page in the page
 *          cache: filemap_fault() starts the read, drops the per-VMA lock to wait for the I/O and
 *          returns VM_FAULT_RETRY, and the fault is retried under mmap_lock (mmap_retry). Writer
 *          threads loop mmap / read / munmap of small windows of the same file, so the fallbacks
 *          queue behind munmap's write lock.
 *   anon   Anonymous faults with mprotect and mmap writers. Fault threads write every page of
 *          their slice of one anonymous mapping and drop the pages (MADV_DONTNEED) each round.
 *          Writer 0 flips the protection of a populated tail of the same mapping (never touched
 *          by the fault threads), which splits and merges the mapping: while it holds mmap_lock
 *          for write the VMA is write-locked, so lock_vma_under_rcu() fails and faults go
 *          straight to mmap_lock (mmap_abort, or mmap_unknown when the way there took longer
 *          than 20 us). The other writers loop mmap / first touch / munmap of small regions of
 *          their own (MAP_NORESERVE keeps them from merging into a neighbour); a first touch
 *          needs an anon_vma, whose mmap_lock trylock fails while writer 0 holds the lock, and
 *          the fault is retried under mmap_lock (mmap_retry). How many faults meet a write
 *          hold depends on scheduling: threads are pinned round robin to the allowed CPUs so
 *          that they run side by side, but other load on the machine still varies the counts.
 *   swap   Swap-in under a memory cgroup with a swap file. Creates and enables a swap file and a
 *          memory cgroup whose limit is below the anonymous memory it then writes, so the
 *          cgroup's reclaim swaps pages out; reading them back faults them in from swap. A fault
 *          that must wait for the swap read drops the per-VMA lock, waits, and is retried under
 *          mmap_lock without any event showing the first attempt (mmap_unknown). How much
 *          the cgroup's reclaim writes out before the read-back varies with the machine's
 *          state (one CI run saw 37 swap-in retries where 500 are usual: how many reads a
 *          fault waits for varies too), so it goes on, round after round (at most
 *          MAX_SWAP_ROUNDS), until --min-swapins faults read from swap.
 *   exec   Faults of freshly exec'd processes: forks --children children that each exec
 *          --exec (default /bin/true); fork also holds two mmap_locks at once.
 *   kernel Faults taken in kernel mode beside user ones: as anon, but each round a fault thread
 *          fills the first half of its slice with read() from /dev/zero, so the kernel's
 *          clear_user() faults the fresh pages in kernel mode (x86 takes mmap_lock for them
 *          without a VMA-lock attempt: counted in fallback_locks, but not fallbacks of user
 *          faults), and writes the second half itself (user faults, some aborted by writer 0's
 *          mprotect).
 *
 * Everything it creates (file, cgroup, swap file) is removed at exit, also after SIGINT, SIGTERM
 * or SIGHUP, and the temporary file is unlinked as soon as it is open. A SIGKILL leaves the cgroup
 * and the swap file behind: callers that may kill it pass --cgroup NAME and --swap-file PATH and
 * remove those themselves (tests/tools/make_recordings.sh does).
 *
 * Needs root for the cgroup and the swap file (modes file and swap; --no-cgroup runs file without
 * one). Prints one summary line at the end (faults from getrusage: minflt + majflt).
 *
 * Build: gcc -O2 -pthread -o outcome_workload outcome_workload.c
 */
#include "workload.h"

#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <sys/types.h>
#include <sys/wait.h>

#define WRITER_PAGES	16 /* pages per writer mapping (file: window; anon: region) */
#define MAX_SWAP_ROUNDS 16 /* swap: rounds at most while short of --min-swapins */

enum mode { M_FILE, M_ANON, M_SWAP, M_EXEC, M_KERNEL };
static const char *const mode_names[] = {"file", "anon", "swap", "exec", "kernel"};
#define NMODES (sizeof(mode_names) / sizeof(mode_names[0]))

struct opts {
	enum mode mode;
	unsigned threads;	   /* fault threads */
	unsigned writers;	   /* writer threads (file, anon) */
	unsigned long rounds;	   /* per fault thread */
	unsigned long min_swapins; /* swap: more rounds until this many majflt */
	unsigned long pages;	   /* faults per fault thread per round (file) */
	unsigned long file_mb, anon_mb, mem_limit_mb, swap_mb;
	unsigned long writer_delay_us;
	unsigned long tail_pages; /* anon: pages of the mapping only writer 0 uses */
	unsigned children;
	const char *exec_path;
	const char *dir;
	const char *cgroup_name;
	const char *swap_path;
	bool no_cgroup;
	bool no_pin;
	const char *pid_file, *done_file;
	double linger;
	unsigned long seed;
};

/* --- cleanup state: what this process created and must remove --- */

static struct {
	char cg_path[PATH_MAX];	  /* our memory cgroup, "" if none */
	char cg_orig[PATH_MAX];	  /* the cgroup.procs file to go back to */
	char swap_path[PATH_MAX]; /* our swap file, "" if none */
	bool cg_created, cg_joined, swap_created, swap_on;
} cl;

static atomic_bool stop_flag;	/* a signal asked to stop, or a thread failed */
static atomic_bool faults_done; /* fault threads finished: writers stop */

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, true);
}

static void sleep_us(unsigned long us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) && errno == EINTR && !atomic_load(&stop_flag))
		;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	if (n != (ssize_t)strlen(s)) {
		errno = n < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

/* snprintf into a path buffer; -1 with ENAMETOOLONG if it does not fit. */
__attribute__((format(printf, 3, 4))) static int fmt_path(char *buf, size_t size, const char *fmt,
							  ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* xorshift64*: reproducible page choices per thread and seed. */
static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ull;
}

/* --- memory cgroup (v1 memory controller, or v2 with memory enabled) --- */

/* The mount point of the v2 hierarchy, or of v1's memory controller, from /proc/mounts. */
static int find_memcg(bool *v2, char *mnt, size_t size)
{
	FILE *f = fopen("/proc/mounts", "re");
	char dev[256], dir[PATH_MAX], type[64], optsbuf[1024], v2dir[PATH_MAX] = "";
	bool found = false;
	if (!f)
		return -1;
	while (fscanf(f, "%255s %4095s %63s %1023s %*d %*d", dev, dir, type, optsbuf) == 4) {
		if (!strcmp(type, "cgroup")) {
			char *o, *save = NULL;
			for (o = strtok_r(optsbuf, ",", &save); o; o = strtok_r(NULL, ",", &save))
				if (!strcmp(o, "memory")) {
					snprintf(mnt, size, "%s", dir);
					*v2 = false;
					found = true;
				}
		} else if (!strcmp(type, "cgroup2") && !v2dir[0]) {
			snprintf(v2dir, sizeof(v2dir), "%s", dir);
		}
	}
	fclose(f);
	if (found)
		return 0;
	if (v2dir[0]) {
		char p[PATH_MAX + 32], buf[512] = "";
		snprintf(p, sizeof(p), "%s/cgroup.subtree_control", v2dir);
		FILE *c = fopen(p, "re");
		if (c) {
			if (!fgets(buf, sizeof(buf), c))
				buf[0] = '\0';
			fclose(c);
		}
		if (strstr(buf, "memory")) {
			snprintf(mnt, size, "%s", v2dir);
			*v2 = true;
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

/* The cgroup.procs file of this process's current cgroup in that hierarchy. */
static int current_cgroup_procs(bool v2, const char *mnt, char *ret, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 64];
	if (!f)
		return -1;
	ret[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		char *ctrl = c1 + 1, *path = c2 + 1;
		path[strcspn(path, "\n")] = '\0';
		bool match = false;
		if (v2) {
			match = !*ctrl;
		} else {
			char *o, *save = NULL;
			for (o = strtok_r(ctrl, ",", &save); o; o = strtok_r(NULL, ",", &save))
				if (!strcmp(o, "memory"))
					match = true;
		}
		if (match) {
			if (fmt_path(ret, size, "%s%s/cgroup.procs", mnt,
				     strcmp(path, "/") ? path : ""))
				ret[0] = '\0';
			break;
		}
	}
	fclose(f);
	if (!ret[0]) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static int cgroup_setup(const struct opts *o)
{
	char mnt[PATH_MAX], p[PATH_MAX + 64], val[64];
	bool v2 = false;
	if (find_memcg(&v2, mnt, sizeof(mnt))) {
		fprintf(stderr, "outcome_workload: no memory cgroup controller is mounted\n");
		return -1;
	}
	if (current_cgroup_procs(v2, mnt, cl.cg_orig, sizeof(cl.cg_orig))) {
		fprintf(stderr, "outcome_workload: cannot tell this process's cgroup\n");
		return -1;
	}
	if (o->cgroup_name ? fmt_path(cl.cg_path, sizeof(cl.cg_path), "%s/%s", mnt, o->cgroup_name)
			   : fmt_path(cl.cg_path, sizeof(cl.cg_path), "%s/outcome_workload.%d", mnt,
				      (int)getpid())) {
		fprintf(stderr, "outcome_workload: cgroup path too long\n");
		cl.cg_path[0] = '\0';
		return -1;
	}
	if (mkdir(cl.cg_path, 0755)) {
		fprintf(stderr, "outcome_workload: mkdir %s: %s\n", cl.cg_path, strerror(errno));
		cl.cg_path[0] = '\0';
		return -1;
	}
	cl.cg_created = true;
	snprintf(val, sizeof(val), "%lu", o->mem_limit_mb << 20);
	snprintf(p, sizeof(p), "%s/%s", cl.cg_path, v2 ? "memory.max" : "memory.limit_in_bytes");
	if (write_str(p, val)) {
		fprintf(stderr, "outcome_workload: %s: %s\n", p, strerror(errno));
		return -1;
	}
	if (v2) {
		snprintf(p, sizeof(p), "%s/memory.swap.max", cl.cg_path);
		write_str(p, "max"); /* absent without swap accounting: fine */
	} else {
		snprintf(p, sizeof(p), "%s/memory.swappiness", cl.cg_path);
		write_str(p, "100");
	}
	snprintf(p, sizeof(p), "%s/cgroup.procs", cl.cg_path);
	snprintf(val, sizeof(val), "%d", (int)getpid());
	if (write_str(p, val)) {
		fprintf(stderr, "outcome_workload: %s: %s\n", p, strerror(errno));
		return -1;
	}
	cl.cg_joined = true;
	return 0;
}

/* --- swap file --- */

static int swap_setup(const struct opts *o)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len = o->swap_mb << 20, done;
	char *buf;
	int fd;

	if (o->swap_path ? fmt_path(cl.swap_path, sizeof(cl.swap_path), "%s", o->swap_path)
			 : fmt_path(cl.swap_path, sizeof(cl.swap_path),
				    "%s/outcome_workload.swap.%d", o->dir, (int)getpid())) {
		fprintf(stderr, "outcome_workload: swap file path too long\n");
		cl.swap_path[0] = '\0';
		return -1;
	}
	fd = open(cl.swap_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		fprintf(stderr, "outcome_workload: %s: %s\n", cl.swap_path, strerror(errno));
		cl.swap_path[0] = '\0';
		return -1;
	}
	cl.swap_created = true;
	buf = calloc(1, 1 << 20);
	if (!buf)
		goto err;
	for (done = 0; done < len; done += 1 << 20) /* written, not sparse: swap needs blocks */
		if (write(fd, buf, 1 << 20) != 1 << 20)
			goto err;
	/* The header mkswap writes (include/linux/swap.h, union swap_header): version 1,
	 * last_page, no bad pages, magic SWAPSPACE2 at the end of the first page. */
	memset(buf, 0, page);
	uint32_t version = 1, last_page = (uint32_t)(len / page - 1);
	memcpy(buf + 1024, &version, 4);
	memcpy(buf + 1028, &last_page, 4);
	memcpy(buf + 1036, "outcomewl-uuid!!", 16);
	memcpy(buf + page - 10, "SWAPSPACE2", 10);
	if (pwrite(fd, buf, page, 0) != (ssize_t)page || fsync(fd))
		goto err;
	free(buf);
	buf = NULL;
	close(fd);
	fd = -1;
	if (swapon(cl.swap_path, 0)) {
		fprintf(stderr, "outcome_workload: swapon %s: %s\n", cl.swap_path, strerror(errno));
		return -1;
	}
	cl.swap_on = true;
	return 0;
err:
	fprintf(stderr, "outcome_workload: writing %s: %s\n", cl.swap_path, strerror(errno));
	free(buf);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Undoes whatever was set up, in reverse order. Safe to call twice. */
static void cleanup(void)
{
	if (cl.cg_joined) {
		char val[32];
		snprintf(val, sizeof(val), "%d", (int)getpid());
		if (write_str(cl.cg_orig, val))
			fprintf(stderr, "outcome_workload: leaving the cgroup (%s): %s\n",
				cl.cg_orig, strerror(errno));
		cl.cg_joined = false;
	}
	if (cl.cg_created) {
		int i;
		for (i = 0; i < 50 && rmdir(cl.cg_path) && errno == EBUSY; i++)
			sleep_us(20000);
		if (i == 50 || (access(cl.cg_path, F_OK) == 0))
			fprintf(stderr, "outcome_workload: rmdir %s: %s\n", cl.cg_path,
				strerror(errno));
		cl.cg_created = false;
	}
	if (cl.swap_on) {
		/* Swap areas are global: another process may have pages in ours, and bringing
		 * them back can fail for a moment (ENOMEM when their cgroup is at its limit). */
		int i, r = -1;
		for (i = 0; i < 10 && (r = swapoff(cl.swap_path)) && errno != EINVAL; i++)
			sleep_us(200000);
		if (r)
			fprintf(stderr, "outcome_workload: swapoff %s: %s\n", cl.swap_path,
				strerror(errno));
		cl.swap_on = false;
	}
	if (cl.swap_created) {
		if (unlink(cl.swap_path))
			fprintf(stderr, "outcome_workload: unlink %s: %s\n", cl.swap_path,
				strerror(errno));
		cl.swap_created = false;
	}
}

/* --- threads --- */

struct shared {
	const struct opts *o;
	size_t page;
	char *map; /* file or anonymous mapping the fault threads use */
	size_t map_len;
	size_t work_len; /* the part the fault threads fault (anon: without the writer tail) */
	int fd;		 /* file mode */
	pthread_barrier_t start;
};

struct worker {
	pthread_t tid;
	struct shared *sh;
	unsigned index;
	bool writer;
	unsigned long rounds, touched, cycles;
	int err;
	const char *what;
};

static void fail(struct worker *w, const char *what)
{
	if (!w->err) {
		w->err = errno ? errno : EIO;
		w->what = what;
	}
	atomic_store(&stop_flag, true);
}

static bool stopping(void)
{
	return atomic_load_explicit(&stop_flag, memory_order_relaxed);
}

/* file: random reads of the shared mapping. */
static void *file_fault_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t pages = sh->map_len / sh->page;
	uint64_t s = sh->o->seed * 0x9e3779b97f4a7c15ull + w->index + 1;
	volatile char sink = 0;

	pthread_barrier_wait(&sh->start);
	for (w->rounds = 0; w->rounds < sh->o->rounds && !stopping(); w->rounds++) {
		for (unsigned long i = 0; i < sh->o->pages && !stopping(); i++) {
			sink += sh->map[(rnd(&s) % pages) * sh->page];
			w->touched++;
		}
		/* Unmap our view so the next round faults again (the page cache decides whether
		 * that needs I/O). */
		if (madvise(sh->map, sh->map_len, MADV_DONTNEED)) {
			fail(w, "madvise(MADV_DONTNEED)");
			break;
		}
	}
	(void)sink;
	return NULL;
}

/* file: mmap a small window of the file, read it, munmap, racing the fault threads. */
static void *file_writer_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t pages = sh->map_len / sh->page, len = WRITER_PAGES * sh->page;
	uint64_t s = sh->o->seed * 0xbf58476d1ce4e5b9ull + w->index + 101;
	volatile char sink = 0;

	pthread_barrier_wait(&sh->start);
	while (!atomic_load(&faults_done) && !stopping()) {
		off_t off = (off_t)((rnd(&s) % (pages - WRITER_PAGES)) * sh->page);
		char *m = mmap(NULL, len, PROT_READ, MAP_SHARED, sh->fd, off);
		if (m == MAP_FAILED) {
			fail(w, "mmap");
			break;
		}
		madvise(m, len, MADV_RANDOM);
		for (size_t i = 0; i < len; i += 4 * sh->page) {
			sink += m[i];
			w->touched++;
		}
		if (munmap(m, len)) {
			fail(w, "munmap");
			break;
		}
		w->cycles++;
		if (sh->o->writer_delay_us)
			sleep_us(sh->o->writer_delay_us);
	}
	(void)sink;
	return NULL;
}

/* Fills @len bytes at @a by read() from @fd; false on an error. */
static bool read_into(int fd, char *a, size_t len)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = read(fd, a + done, len - done);
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

/* anon: write every page of the slice, drop them, again. kernel (sh->fd open on /dev/zero): the
 * first half of the slice read() from it instead (kernel-mode faults). */
static void *anon_fault_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t pages = sh->work_len / sh->page;
	size_t first = pages * w->index / sh->o->threads,
	       last = pages * (w->index + 1) / sh->o->threads;
	char *a = sh->map + first * sh->page;
	size_t len = (last - first) * sh->page;
	size_t by_read = sh->fd >= 0 ? (last - first) / 2 * sh->page : 0;

	pthread_barrier_wait(&sh->start);
	for (w->rounds = 0; w->rounds < sh->o->rounds && !stopping(); w->rounds++) {
		if (by_read && !read_into(sh->fd, a, by_read)) {
			fail(w, "read(/dev/zero)");
			break;
		}
		w->touched += by_read / sh->page;
		for (size_t i = by_read; i < len && !stopping(); i += sh->page) {
			a[i] = (char)i;
			w->touched++;
		}
		if (len && madvise(a, len, MADV_DONTNEED)) {
			fail(w, "madvise(MADV_DONTNEED)");
			break;
		}
	}
	return NULL;
}

/* anon, writer 0: flip the protection of the tail of the fault threads' mapping. That splits and
 * merges their VMA, write-locking it, and changes the protection of every populated tail page
 * before mmap_lock is released: the more tail pages, the longer the VMA stays write-locked.
 * Other writers: mmap / first touch / munmap. */
static void *anon_writer_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t len = WRITER_PAGES * sh->page, tail_len = sh->map_len - sh->work_len;
	char *tail = sh->map + sh->work_len;

	pthread_barrier_wait(&sh->start);
	if (w->index == 0)
		for (size_t i = 0; i < tail_len; i += sh->page)
			tail[i] = 1;
	while (!atomic_load(&faults_done) && !stopping()) {
		if (w->index == 0) {
			if (mprotect(tail, tail_len, PROT_READ) ||
			    mprotect(tail, tail_len, PROT_READ | PROT_WRITE)) {
				fail(w, "mprotect");
				break;
			}
		} else {
			/* MAP_NORESERVE: a VMA of its own (neighbours lack VM_NORESERVE, so no
			 * merge), whose first touch must allocate an anon_vma under mmap_lock's
			 * trylock. */
			char *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (m == MAP_FAILED) {
				fail(w, "mmap");
				break;
			}
			for (size_t i = 0; i < len; i += sh->page) {
				m[i] = 1;
				w->touched++;
			}
			if (munmap(m, len)) {
				fail(w, "munmap");
				break;
			}
		}
		w->cycles++;
		if (sh->o->writer_delay_us && w->index > 0)
			sleep_us(sh->o->writer_delay_us);
	}
	return NULL;
}

/* Starts the fault threads and writers, waits for them; returns 0 or -1 (reported). */
static int run_threads(struct shared *sh, void *(*fault_fn)(void *), void *(*writer_fn)(void *),
		       unsigned long *touched, unsigned long *cycles)
{
	const struct opts *o = sh->o;
	unsigned n = o->threads + o->writers, i;
	struct worker *w = calloc(n, sizeof(*w));
	int ret = 0;

	if (!w || pthread_barrier_init(&sh->start, NULL, n + 1)) {
		fprintf(stderr, "outcome_workload: out of memory\n");
		free(w);
		return -1;
	}
	/* Thread k runs on the k-th allowed CPU, round robin: fault threads and writers then run
	 * at the same time on different CPUs rather than taking turns on one, so the writers'
	 * lock holds overlap the faults (how often they do otherwise depends on the scheduler). */
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], ncpus = 0;
	if (!o->no_pin && !sched_getaffinity(0, sizeof(allowed), &allowed))
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	for (i = 0; i < n; i++) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		if (ncpus > 1) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(cpus[i % (unsigned)ncpus], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		w[i].sh = sh;
		w[i].writer = i >= o->threads;
		w[i].index = w[i].writer ? i - o->threads : i;
		int err =
			pthread_create(&w[i].tid, &attr, w[i].writer ? writer_fn : fault_fn, &w[i]);
		pthread_attr_destroy(&attr);
		if (err) {
			fprintf(stderr, "outcome_workload: pthread_create: %s\n", strerror(err));
			cleanup();
			_exit(1); /* started threads wait on the barrier forever */
		}
	}
	pthread_barrier_wait(&sh->start);
	for (i = 0; i < o->threads; i++)
		pthread_join(w[i].tid, NULL);
	atomic_store(&faults_done, true);
	for (; i < n; i++)
		pthread_join(w[i].tid, NULL);
	for (i = 0; i < n; i++) {
		if (w[i].err) {
			fprintf(stderr, "outcome_workload: %s thread %u: %s: %s\n",
				w[i].writer ? "writer" : "fault", w[i].index, w[i].what,
				strerror(w[i].err));
			ret = -1;
		}
		*touched += w[i].touched;
		*cycles += w[i].cycles;
	}
	pthread_barrier_destroy(&sh->start);
	free(w);
	return ret;
}

static int mode_file(const struct opts *o, struct shared *sh, unsigned long *touched,
		     unsigned long *cycles)
{
	char path[PATH_MAX];
	size_t len = o->file_mb << 20;
	char *buf;
	int ret = -1;

	if (fmt_path(path, sizeof(path), "%s/outcome_workload.XXXXXX", o->dir)) {
		fprintf(stderr, "outcome_workload: --dir too long\n");
		return -1;
	}
	sh->fd = mkstemp(path);
	if (sh->fd < 0) {
		fprintf(stderr, "outcome_workload: mkstemp in %s: %s\n", o->dir, strerror(errno));
		return -1;
	}
	unlink(path);
	buf = malloc(1 << 20);
	if (!buf)
		goto out;
	for (size_t done = 0; done < len; done += 1 << 20) {
		memset(buf, (int)(done >> 20) | 1, 1 << 20);
		if (write(sh->fd, buf, 1 << 20) != 1 << 20) {
			fprintf(stderr, "outcome_workload: writing the file: %s\n",
				strerror(errno));
			goto out;
		}
	}
	/* Clean pages can be dropped: none of the file is cached (or charged elsewhere) then. */
	if (fdatasync(sh->fd) || posix_fadvise(sh->fd, 0, 0, POSIX_FADV_DONTNEED)) {
		fprintf(stderr, "outcome_workload: dropping the file's cache: %s\n",
			strerror(errno));
		goto out;
	}
	if (!o->no_cgroup && cgroup_setup(o))
		goto out;
	sh->map_len = len;
	sh->map = mmap(NULL, len, PROT_READ, MAP_SHARED, sh->fd, 0);
	if (sh->map == MAP_FAILED) {
		sh->map = NULL;
		fprintf(stderr, "outcome_workload: mmap the file: %s\n", strerror(errno));
		goto out;
	}
	madvise(sh->map, len, MADV_RANDOM);
	ret = run_threads(sh, file_fault_thread, file_writer_thread, touched, cycles);
out:
	if (sh->map)
		munmap(sh->map, sh->map_len);
	free(buf);
	close(sh->fd);
	return ret;
}

static int mode_anon(const struct opts *o, struct shared *sh, unsigned long *touched,
		     unsigned long *cycles)
{
	sh->work_len = o->anon_mb << 20;
	sh->map_len = sh->work_len + o->tail_pages * sh->page;
	sh->map =
		mmap(NULL, sh->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh->map == MAP_FAILED) {
		fprintf(stderr, "outcome_workload: mmap %lu MB: %s\n", o->anon_mb, strerror(errno));
		return -1;
	}
	madvise(sh->map, sh->map_len, MADV_NOHUGEPAGE);
	if (o->mode == M_KERNEL) {
		sh->fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		if (sh->fd < 0) {
			fprintf(stderr, "outcome_workload: /dev/zero: %s\n", strerror(errno));
			munmap(sh->map, sh->map_len);
			return -1;
		}
	}
	int ret = run_threads(sh, anon_fault_thread, anon_writer_thread, touched, cycles);
	if (sh->fd >= 0)
		close(sh->fd);
	munmap(sh->map, sh->map_len);
	return ret;
}

static long majflt_now(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) ? 0 : ru.ru_majflt;
}

static int mode_swap(const struct opts *o, struct shared *sh, unsigned long *touched,
		     unsigned long *cycles)
{
	size_t len = o->anon_mb << 20, i;
	unsigned long bad = 0;
	int ret = -1;

	if (swap_setup(o) || cgroup_setup(o))
		return -1;
	char *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED) {
		fprintf(stderr, "outcome_workload: mmap %lu MB: %s\n", o->anon_mb, strerror(errno));
		return -1;
	}
	madvise(a, len, MADV_NOHUGEPAGE);
	long majflt0 = majflt_now(), swapins = 0;
	for (unsigned long r = 0;
	     (r < o->rounds || (swapins < (long)o->min_swapins && r < MAX_SWAP_ROUNDS)) &&
	     !stopping();
	     r++) {
		/* Write all: more than the cgroup may hold, so the oldest pages go to swap. */
		for (i = 0; i < len && !stopping(); i += sh->page) {
			a[i] = (char)(i / sh->page + r);
			(*touched)++;
		}
		/* Read all back: the swapped-out pages fault in from the swap file. */
		for (i = 0; i < len && !stopping(); i += sh->page) {
			bad += a[i] != (char)(i / sh->page + r);
			(*touched)++;
		}
		(*cycles)++;
		swapins = majflt_now() - majflt0;
	}
	munmap(a, len);
	if (swapins < (long)o->min_swapins && !stopping())
		fprintf(stderr,
			"outcome_workload: only %ld swap-ins (majflt) in %lu rounds, %lu wanted\n",
			swapins, *cycles, o->min_swapins);
	if (bad)
		fprintf(stderr, "outcome_workload: %lu pages read back wrong\n", bad);
	else
		ret = 0;
	return ret;
}

static int mode_exec(const struct opts *o, unsigned long *cycles)
{
	int ret = 0;
	for (unsigned c = 0; c < o->children && !stopping(); c++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "outcome_workload: fork: %s\n", strerror(errno));
			return -1;
		}
		if (pid == 0) {
			char *argv[] = {(char *)o->exec_path, NULL};
			execv(o->exec_path, argv);
			fprintf(stderr, "outcome_workload: exec %s: %s\n", o->exec_path,
				strerror(errno));
			_exit(127);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "outcome_workload: %s (pid %d) failed (status 0x%x)\n",
				o->exec_path, (int)pid, st);
			ret = -1;
		}
		(*cycles)++;
	}
	return ret;
}

/* --- options --- */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s MODE [OPTIONS]\n"
		"Make the kernel handle user page faults in the ways mmlockd classifies.\n"
		"\n"
		"Modes:\n"
		"  file   random reads of a file bigger than a memory cgroup's limit (faults need\n"
		"         I/O: retried under mmap_lock), while writers mmap/read/munmap windows of "
		"it\n"
		"  anon   anonymous write faults while writers mprotect the same mapping (aborts)\n"
		"         and mmap/touch/munmap small regions (anon_vma trylock retries)\n"
		"  swap   swap file + memory cgroup; write more anonymous memory than the limit,\n"
		"         read it back (swap-in faults)\n"
		"  exec   fork and exec --exec (default /bin/true) --children times\n"
		"  kernel as anon, but half of each slice is filled by read() from /dev/zero\n"
		"         (faults taken in kernel mode)\n"
		"\n"
		"Options (defaults are small, for recordings of about 1 MB):\n"
		"  --threads N        fault threads (file: default 2; anon: default 1)\n"
		"  --writers N        writer threads (file: mmap/read/munmap; anon: writer 0\n"
		"                     mprotect, the others mmap/touch/munmap; default 1 for file,\n"
		"                     2 for anon)\n"
		"  --writer-delay-us U  pause of the writers between cycles (default 0)\n"
		"  --tail-pages N     anon: pages at the end of the mapping whose protection "
		"writer 0\n"
		"                     flips (populated: each mprotect walks them; default 256)\n"
		"  --rounds R         rounds per fault thread (default: file 2, anon 20, swap 1)\n"
		"  --pages P          random page reads per file fault thread per round (default "
		"250)\n"
		"  --file-mb MB       file size (file; default 64)\n"
		"  --anon-mb MB       anonymous memory (anon: default 1; swap: default 16)\n"
		"  --mem-limit-mb MB  memory cgroup limit (file: default 8; swap: default 6)\n"
		"  --swap-mb MB       swap file size (swap; default 48, at least 2 x --anon-mb)\n"
		"  --min-swapins N    swap: more rounds (up to 16) until N faults read from swap\n"
		"                     (majflt; default 1024, 0 for exactly --rounds)\n"
		"  --dir DIR          where the temporary file and swap file go (default $TMPDIR\n"
		"                     or /var/tmp); must be a disk file system, not tmpfs\n"
		"  --cgroup NAME      name of the memory cgroup to create (default\n"
		"                     outcome_workload.PID); it must not exist\n"
		"  --swap-file PATH   swap file to create (default "
		"DIR/outcome_workload.swap.PID);\n"
		"                     it must not exist\n"
		"  --no-cgroup        file mode without a cgroup (only the first reads need I/O)\n"
		"  --no-pin           do not pin thread k to the k-th allowed CPU (file, anon)\n"
		"  --children N       exec mode: children to fork and exec (default 3)\n"
		"  --exec PATH        exec mode: program to exec, without arguments (default "
		"/bin/true)\n"
		"  --seed S           seed of the random page choices (default 1)\n"
		"  --pid-file PATH    write the process id to PATH once started\n"
		"  --done-file PATH   create PATH when the work is done (after the summary line)\n"
		"  --linger S         then stay alive, idle, for S seconds or until SIGUSR1\n"
		"  --help             show this text\n"
		"\n"
		"Creates and removes (also on SIGINT/SIGTERM/SIGHUP) a memory cgroup (file, swap)\n"
		"and a swap file (swap); needs root for them. Prints one summary line.\n",
		argv0);
}

enum {
	O_THREADS = 256,
	O_WRITERS,
	O_WDELAY,
	O_TAIL,
	O_ROUNDS,
	O_PAGES,
	O_FILE_MB,
	O_ANON_MB,
	O_LIMIT_MB,
	O_SWAP_MB,
	O_MIN_SWAPINS,
	O_DIR,
	O_CGROUP,
	O_SWAP_FILE,
	O_NO_CGROUP,
	O_NO_PIN,
	O_CHILDREN,
	O_EXEC,
	O_SEED,
	O_PID,
	O_DONE,
	O_LINGER,
};

/* In the order of the O_ values above: an option's name is longopts[c - O_THREADS].name. */
static const struct option longopts[] = {
	{"threads", required_argument, NULL, O_THREADS},
	{"writers", required_argument, NULL, O_WRITERS},
	{"writer-delay-us", required_argument, NULL, O_WDELAY},
	{"tail-pages", required_argument, NULL, O_TAIL},
	{"rounds", required_argument, NULL, O_ROUNDS},
	{"pages", required_argument, NULL, O_PAGES},
	{"file-mb", required_argument, NULL, O_FILE_MB},
	{"anon-mb", required_argument, NULL, O_ANON_MB},
	{"mem-limit-mb", required_argument, NULL, O_LIMIT_MB},
	{"swap-mb", required_argument, NULL, O_SWAP_MB},
	{"min-swapins", required_argument, NULL, O_MIN_SWAPINS},
	{"dir", required_argument, NULL, O_DIR},
	{"cgroup", required_argument, NULL, O_CGROUP},
	{"swap-file", required_argument, NULL, O_SWAP_FILE},
	{"no-cgroup", no_argument, NULL, O_NO_CGROUP},
	{"no-pin", no_argument, NULL, O_NO_PIN},
	{"children", required_argument, NULL, O_CHILDREN},
	{"exec", required_argument, NULL, O_EXEC},
	{"seed", required_argument, NULL, O_SEED},
	{"pid-file", required_argument, NULL, O_PID},
	{"done-file", required_argument, NULL, O_DONE},
	{"linger", required_argument, NULL, O_LINGER},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* The options whose default depends on the mode, -1 until given. */
struct mode_defaulted {
	long writers, rounds, anon_mb, mem_limit_mb, min_swapins;
};

/* kernel runs on anon's layout. */
static bool anon_layout(enum mode m)
{
	return m == M_ANON || m == M_KERNEL;
}

/* --help anywhere prints the usage and exits; else the first argument names the mode, set in
 * @o. Returns 0, or -1 after saying what is wrong. */
static int parse_mode(int argc, char **argv, struct opts *o)
{
	int c;

	for (c = 1; c < argc; c++)
		if (!strcmp(argv[c], "--help") || !strcmp(argv[c], "-h")) {
			usage(stdout, argv[0]);
			exit(0);
		}
	if (argc < 2 || argv[1][0] == '-') {
		usage(stderr, argv[0]);
		return -1;
	}
	for (c = 0; c < (int)NMODES && strcmp(argv[1], mode_names[c]); c++)
		;
	if (c == (int)NMODES) {
		fprintf(stderr, "%s: unknown mode '%s' (file, anon, swap, exec or kernel)\n",
			argv[0], argv[1]);
		return -1;
	}
	o->mode = (enum mode)c;
	return 0;
}

/* The defaults that the options may change; those that also depend on the mode are set after
 * them (resolve_defaults()). */
static void default_opts(struct opts *o)
{
	o->threads = anon_layout(o->mode) ? 1 : 2;
	o->pages = 250;
	o->tail_pages = 256;
	o->file_mb = 64;
	o->swap_mb = 48;
	o->children = 3;
	o->exec_path = "/bin/true";
	o->seed = 1;
	o->dir = getenv("TMPDIR");
	if (!o->dir || !*o->dir)
		o->dir = "/var/tmp";
}

/* Sets the numeric option @c (an O_ value) to @v. */
static void set_number(struct opts *o, struct mode_defaulted *given, int c, unsigned long v)
{
	switch (c) {
	case O_THREADS:
		o->threads = (unsigned)v;
		break;
	case O_WRITERS:
		given->writers = (long)v;
		break;
	case O_WDELAY:
		o->writer_delay_us = v;
		break;
	case O_TAIL:
		o->tail_pages = v;
		break;
	case O_ROUNDS:
		given->rounds = (long)v;
		break;
	case O_PAGES:
		o->pages = v;
		break;
	case O_FILE_MB:
		o->file_mb = v;
		break;
	case O_ANON_MB:
		given->anon_mb = (long)v;
		break;
	case O_LIMIT_MB:
		given->mem_limit_mb = (long)v;
		break;
	case O_SWAP_MB:
		o->swap_mb = v;
		break;
	case O_MIN_SWAPINS:
		given->min_swapins = (long)v;
		break;
	case O_CHILDREN:
		o->children = (unsigned)v;
		break;
	case O_SEED:
		o->seed = v;
		break;
	}
}

/* Sets option @c (an O_ value) from @arg. Returns 0, or -1 when @arg is no valid value. */
static int set_opt(struct opts *o, struct mode_defaulted *given, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case O_DIR:
		o->dir = arg;
		return 0;
	case O_CGROUP:
		o->cgroup_name = arg;
		return 0;
	case O_SWAP_FILE:
		o->swap_path = arg;
		return 0;
	case O_NO_CGROUP:
		o->no_cgroup = true;
		return 0;
	case O_NO_PIN:
		o->no_pin = true;
		return 0;
	case O_EXEC:
		o->exec_path = arg;
		return 0;
	case O_PID:
		o->pid_file = arg;
		return 0;
	case O_DONE:
		o->done_file = arg;
		return 0;
	case O_LINGER:
		return parse_seconds(arg, &o->linger);
	}
	if (parse_ulong(arg, 1ul << 30, &v))
		return -1;
	set_number(o, given, c, v);
	return 0;
}

/* The mode's defaults of the options not given. */
static void resolve_defaults(struct opts *o, const struct mode_defaulted *given)
{
	bool anon = anon_layout(o->mode), swap = o->mode == M_SWAP;

	o->writers = given->writers >= 0 ? (unsigned)given->writers : anon ? 2 : 1;
	o->rounds = given->rounds >= 0 ? (unsigned long)given->rounds : anon ? 20 : swap ? 1 : 2;
	o->anon_mb = given->anon_mb >= 0 ? (unsigned long)given->anon_mb : swap ? 16 : 1;
	o->min_swapins = given->min_swapins >= 0 ? (unsigned long)given->min_swapins
			 : swap			 ? 1024
						 : 0;
	o->mem_limit_mb = given->mem_limit_mb >= 0 ? (unsigned long)given->mem_limit_mb
			  : swap		   ? 6
						   : 8;
}

/* Whether the options together make a run of the mode; if not, says why. Returns 0, or -1. */
static int check_opts(const struct opts *o, const char *argv0)
{
	bool anon = anon_layout(o->mode);
	const char *why = NULL;

	if ((o->mode == M_FILE || anon) && !o->threads)
		why = "--threads must be > 0";
	else if (o->mode == M_FILE && o->file_mb * 256 <= WRITER_PAGES)
		why = "--file-mb too small";
	else if (anon && !o->tail_pages)
		why = "--tail-pages must be > 0";
	else if ((anon || o->mode == M_SWAP) && !o->anon_mb)
		why = "--anon-mb must be > 0";
	else if ((o->mode == M_FILE || o->mode == M_SWAP) && !o->mem_limit_mb)
		why = "--mem-limit-mb must be > 0";
	else if (o->mode == M_SWAP && o->swap_mb < 2 * o->anon_mb)
		why = "--swap-mb must be at least twice --anon-mb";
	if (why)
		fprintf(stderr, "%s: %s\n", argv0, why);
	return why ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	struct mode_defaulted given = {-1, -1, -1, -1, -1};
	int c;

	memset(o, 0, sizeof(*o));
	if (parse_mode(argc, argv, o))
		return -1;
	default_opts(o);
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c < O_THREADS) { /* '?' (getopt said why), or -h among other letters */
			usage(stderr, argv[0]);
			return -1;
		}
		if (set_opt(o, &given, c, optarg)) {
			fprintf(stderr, "%s: bad value '%s' for --%s\n", argv[0], optarg,
				longopts[c - O_THREADS].name);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return -1;
	}
	resolve_defaults(o, &given);
	return check_opts(o, argv[0]);
}

static void linger(double seconds)
{
	sigset_t set;
	struct timespec ts;
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9), now;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	while ((now = now_ns()) < end && !stopping()) {
		ts.tv_sec = (time_t)((end - now) / 1000000000ull);
		ts.tv_nsec = (long)((end - now) % 1000000000ull);
		if (sigtimedwait(&set, NULL, &ts) >= 0 || errno != EINTR)
			return;
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	struct shared sh;
	struct rusage ru0, ru1;
	struct sigaction sa;
	sigset_t usr1;
	unsigned long touched = 0, cycles = 0;
	uint64_t t0, t1;
	int ret = 0;

	if (parse_args(argc, argv, &o))
		return 2;
	/* Stop cleanly (and clean up) on these; SIGUSR1 is only taken by linger(). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	atexit(cleanup);
	if (o.pid_file && write_pid_file(o.pid_file)) {
		fprintf(stderr, "outcome_workload: %s: %s\n", o.pid_file, strerror(errno));
		return 1;
	}

	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	sh.fd = -1;
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_ns();
	switch (o.mode) {
	case M_FILE:
		ret = mode_file(&o, &sh, &touched, &cycles);
		break;
	case M_ANON:
	case M_KERNEL:
		ret = mode_anon(&o, &sh, &touched, &cycles);
		break;
	case M_SWAP:
		ret = mode_swap(&o, &sh, &touched, &cycles);
		break;
	case M_EXEC:
		ret = mode_exec(&o, &cycles);
		break;
	}
	t1 = now_ns();
	getrusage(RUSAGE_SELF, &ru1);
	cleanup();
	if (stopping() && !ret) {
		fprintf(stderr, "outcome_workload: stopped by a signal\n");
		ret = -1;
	}

	printf("outcome_workload: mode %s pid %d threads %u writers %u pages_touched %lu "
	       "writer_cycles %lu faults %ld (minflt %ld majflt %ld) elapsed %.3f s\n",
	       mode_names[o.mode], (int)getpid(), o.threads, o.writers, touched, cycles,
	       (ru1.ru_minflt - ru0.ru_minflt) + (ru1.ru_majflt - ru0.ru_majflt),
	       ru1.ru_minflt - ru0.ru_minflt, ru1.ru_majflt - ru0.ru_majflt,
	       (double)(t1 - t0) / 1e9);
	fflush(stdout);
	if (o.done_file && write_pid_file(o.done_file)) {
		fprintf(stderr, "outcome_workload: %s: %s\n", o.done_file, strerror(errno));
		ret = -1;
	}
	if (o.linger > 0 && !stopping())
		linger(o.linger);
	return ret ? 1 : 0;
}
