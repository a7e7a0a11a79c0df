/*
 * filemap: the file-fault workload of seed 001 ("mm/filemap: allow filemap faults to retry under
 * the VMA lock") and of the public ioretry model (threads each mapping and reading a file under a
 * memory cgroup), scaled from 40..80 threads on 20 cores to a 2-core machine.
 *
 * A data file (--file-mb, unlinked at once, dropped from the page cache) is read through file
 * mappings by --threads threads inside a temporary memory cgroup whose limit (--limit-mb) is well
 * below the file, so most faults must wait for I/O. A round maps a random --window-kb window of
 * the file (MAP_SHARED, read-only), reads one byte of each page (checking it against the data
 * written) and unmaps it: the munmap of one thread takes mmap_lock for write while the others
 * fault. --munmap-threads more threads loop mmap/munmap of a small anonymous region, paced at
 * --munmap-rate, to add the seed's "parallel munmap". Throughput is fault-thread rounds per second
 * in the measured phase.
 *
 * On a vanilla kernel filemap_fault() that must wait for a page under I/O drops the VMA lock and
 * returns VM_FAULT_RETRY; the retry takes mmap_lock, queued behind the munmaps: that is what the
 * seed's patch turns into a retry under the VMA lock (+31..70%, -98% mmap_lock contentions).
 *
 * Build: see bench/meson.build. Run as root (cgroup).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"

struct opts {
	struct bench_common c;
	unsigned threads, munmappers;
	unsigned long file_mb, window_kb, munmap_rate;
};

struct shared {
	const struct opts *o;
	size_t page, file_len, window;
	int fd;
	atomic_bool stop;
	struct bench_counter *rounds, *unmaps, *bad, *errors;
};

struct worker {
	pthread_t tid;
	struct shared *sh;
	unsigned index;
};

static void *fault_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	size_t nwin = sh->file_len / sh->window;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (w->index + 1);

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		size_t win = bench_rand(&seed) % nwin, off = win * sh->window;
		const volatile unsigned char *p;
		unsigned long bad = 0;

		p = mmap(NULL, sh->window, PROT_READ, MAP_SHARED, sh->fd, (off_t)off);
		if (p == MAP_FAILED) {
			atomic_fetch_add_explicit(&sh->errors[w->index].v, 1, memory_order_relaxed);
			continue;
		}
		for (size_t i = 0; i < sh->window; i += sh->page)
			bad += p[i] != (unsigned char)(((off + i) >> 20) % 251 + 1);
		munmap((void *)p, sh->window);
		if (bad)
			atomic_fetch_add_explicit(&sh->bad[w->index].v, bad, memory_order_relaxed);
		atomic_fetch_add_explicit(&sh->rounds[w->index].v, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *munmap_thread(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct bench_pace pace;

	bench_pace_init(&pace, sh->o->munmap_rate);
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		void *m = mmap(NULL, 4 * sh->page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			continue;
		munmap(m, 4 * sh->page);
		atomic_fetch_add_explicit(&sh->unmaps[w->index].v, 1, memory_order_relaxed);
		bench_pace_tick(&pace);
	}
	return NULL;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [OPTIONS]\n"
		"File-fault workload (seed 001, ioretry model): threads map, read and unmap\n"
		"windows of a file under memory cgroup pressure, with parallel munmap.\n\n"
		"  --threads T        fault threads (default 8)\n"
		"  --munmap-threads M threads looping mmap/munmap of a small region (default 1)\n"
		"  --file-mb MB       the data file (default 512)\n"
		"  --window-kb KB     window mapped and read per round (default 1024)\n"
		"  --munmap-rate R    mmap/munmap pairs per second per munmap thread (default\n"
		"                     20000; 0: as fast as they can)\n"
		"" BENCH_COMMON_USAGE,
		argv0, 8.0, 2.0, 128ul, 0ul);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	/* clang-format off */
	const struct bench_num_opt opts[] = {
		{"threads", NULL, &o->threads},
		{"munmap-threads", NULL, &o->munmappers},
		{"file-mb", &o->file_mb, NULL},
		{"window-kb", &o->window_kb, NULL},
		{"munmap-rate", &o->munmap_rate, NULL},
		{NULL, NULL, NULL},
	};
	/* clang-format on */

	bench_common_defaults(&o->c, 8, 2, 128, 0);
	o->threads = 8;
	o->munmappers = 1;
	o->file_mb = 512;
	o->window_kb = 1024;
	o->munmap_rate = 20000;
	if (bench_parse_args(argc, argv, &o->c, opts, usage) < 0)
		return -1;
	if (!o->threads || !o->file_mb || !o->window_kb || o->window_kb % 4 ||
	    (o->window_kb << 10) > (o->file_mb << 20)) {
		fprintf(stderr, "%s: inconsistent options (see --help)\n", argv[0]);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct shared sh;
	struct bench_env env = {0};
	struct worker *w;
	struct rusage ru0, ru1, rt;
	sigset_t sigs;
	unsigned n = 0, i, nthreads;
	unsigned long r0 = 0, r1 = 0, u0 = 0, u1 = 0, bad, errors;
	uint64_t t0 = 0, t1 = 1;
	int sig = 0, ret = 1;

	bench_block_signals(&sigs);
	if (parse_args(argc, argv, &o))
		return 2;
	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	sh.file_len = o.file_mb << 20;
	sh.window = o.window_kb << 10;
	sh.fd = -1;
	nthreads = o.threads + o.munmappers;
	sh.rounds = calloc(o.threads, sizeof(*sh.rounds));
	sh.bad = calloc(o.threads, sizeof(*sh.bad));
	sh.errors = calloc(o.threads, sizeof(*sh.errors));
	sh.unmaps = calloc(o.munmappers + 1, sizeof(*sh.unmaps));
	w = calloc(nthreads, sizeof(*w));
	if (!sh.rounds || !sh.bad || !sh.errors || !sh.unmaps || !w) {
		fprintf(stderr, "filemap: out of memory\n");
		return 1;
	}

	/* Written outside the cgroup and dropped from the page cache, so every page the threads
	 * read is charged to the cgroup when it is read back. */
	sh.fd = bench_data_file(o.c.dir, o.file_mb, &sigs);
	if (sh.fd < 0 || bench_interrupted(&sigs))
		goto out;
	if (bench_swap_on(&env, &o.c, &sigs) || bench_interrupted(&sigs))
		goto out;
	if (bench_cgroup_create(&env, &o.c) || bench_interrupted(&sigs) ||
	    bench_spawn(&env, &sigs, "filemap"))
		goto out;

	for (i = 0; i < nthreads; i++, n++) {
		w[i].sh = &sh;
		w[i].index = i < o.threads ? i : i - o.threads;
		if (pthread_create(&w[i].tid, NULL, i < o.threads ? fault_thread : munmap_thread,
				   &w[i])) {
			fprintf(stderr, "filemap: pthread_create failed\n");
			goto stop;
		}
	}

	bench_phase("warmup");
	sig = bench_wait(&sigs, o.c.warmup);
	if (sig)
		goto stop;
	getrusage(RUSAGE_SELF, &ru0);
	r0 = bench_sum(sh.rounds, o.threads);
	u0 = bench_sum(sh.unmaps, o.munmappers);
	t0 = bench_now_ns();
	bench_phase("measure");
	sig = bench_wait(&sigs, o.c.seconds);
	t1 = bench_now_ns();
	r1 = bench_sum(sh.rounds, o.threads);
	u1 = bench_sum(sh.unmaps, o.munmappers);
	getrusage(RUSAGE_SELF, &ru1);
	bench_phase("end");
	if (!sig)
		ret = 0;
stop:
	atomic_store(&sh.stop, true);
	for (i = 0; i < n; i++)
		pthread_join(w[i].tid, NULL);
out:
	if (sh.fd >= 0)
		close(sh.fd);
	bench_env_cleanup(&env);
	if (ret) {
		if (sig)
			fprintf(stderr, "filemap: interrupted by signal %d, cleaned up\n", sig);
		return sig ? 128 + sig : 1;
	}
	bad = bench_sum(sh.bad, o.threads);
	errors = bench_sum(sh.errors, o.threads);
	getrusage(RUSAGE_SELF, &rt);
	printf("params: workload=filemap threads=%u munmap_threads=%u file_mb=%lu window_kb=%lu "
	       "munmap_rate=%lu limit_mb=%lu cgroup_v=%d seconds=%.2f warmup=%.2f\n",
	       o.threads, o.munmappers, o.file_mb, o.window_kb, o.munmap_rate, o.c.limit_mb,
	       env.cg_version, o.c.seconds, o.c.warmup);
	printf("result: pid=%d rounds=%lu elapsed_s=%.3f rounds_per_s=%.1f writer_ops_per_s=%.1f "
	       "minflt=%ld majflt=%ld bad=%lu errors=%lu total_minflt=%ld total_majflt=%ld\n",
	       (int)getpid(), r1 - r0, (double)(t1 - t0) / 1e9,
	       (double)(r1 - r0) * 1e9 / (double)(t1 - t0),
	       (double)(u1 - u0) * 1e9 / (double)(t1 - t0), ru1.ru_minflt - ru0.ru_minflt,
	       ru1.ru_majflt - ru0.ru_majflt, bad, errors, rt.ru_minflt, rt.ru_majflt);
	return bad || errors ? 1 : 0;
}
