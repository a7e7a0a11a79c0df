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
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

struct opts {
	struct bench_common c;
	unsigned threads, munmappers, prefetch;
	unsigned long file_mb, window_kb, munmap_rate;
};

struct shared {
	const struct opts *o;
	size_t page, file_len, window;
	int fd;
	atomic_bool stop;
	struct bench_counter *rounds, *unmaps, *bad, *errors;
};

static void *fault_thread(void *arg)
{
	struct bench_worker *w = arg;
	struct shared *sh = w->sh;
	size_t nwin = sh->file_len / sh->window;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (w->index + 1);

	while (!bench_stopped(&sh->stop)) {
		size_t win = bench_rand(&seed) % nwin, off = win * sh->window;
		const volatile unsigned char *p;
		unsigned long bad = 0;

		/* The window's I/O asked for at once, before its faults (which then find its folios
		 * cached or locked under that I/O): what is read is the window, not the kernel's
		 * read-around of each missing page (the disk's read_ahead_kb, 8 MiB on some VMs:
		 * 8 times the window, evicting the other threads' windows from the cgroup). */
		if (sh->o->prefetch)
			posix_fadvise(sh->fd, (off_t)off, (off_t)sh->window, POSIX_FADV_WILLNEED);
		p = mmap(NULL, sh->window, PROT_READ, MAP_SHARED, sh->fd, (off_t)off);
		if (p == MAP_FAILED) {
			bench_count(&sh->errors[w->index], 1);
			continue;
		}
		for (size_t i = 0; i < sh->window; i += sh->page)
			bad += p[i] != (unsigned char)(((off + i) >> 20) % 251 + 1);
		munmap((void *)p, sh->window);
		if (bad)
			bench_count(&sh->bad[w->index], bad);
		bench_count(&sh->rounds[w->index], 1);
	}
	return NULL;
}

static const char about[] =
	"File-fault workload (seed 001, ioretry model): threads map, read and unmap\n"
	"windows of a file under memory cgroup pressure, with parallel munmap.";

static int parse_args(int argc, char **argv, struct opts *o)
{
	const struct bench_num_opt opts[] = {
		{"threads", "T", NULL, &o->threads, 8, "fault threads", NULL},
		{"munmap-threads", "M", NULL, &o->munmappers, 1,
		 "threads looping mmap/munmap of a small region", NULL},
		{"file-mb", "MB", &o->file_mb, NULL, 512, "the data file", NULL},
		{"window-kb", "KB", &o->window_kb, NULL, 1024, "window mapped and read per round",
		 NULL},
		{"munmap-rate", "R", &o->munmap_rate, NULL, 20000,
		 "mmap/munmap pairs per second per munmap thread", "as fast as they can"},
		{"prefetch", "0|1", NULL, &o->prefetch, 0,
		 "1: read each window ahead (POSIX_FADV_WILLNEED) before mapping it, so the I/O is "
		 "the window whatever the disk's read_ahead_kb",
		 "the kernel's read-around on each fault that misses"},
		{NULL, NULL, NULL, NULL, 0, NULL, NULL},
	};

	bench_common_defaults(&o->c, 8, 2, 128, 0);
	if (bench_parse_args(argc, argv, &o->c, opts, about) < 0)
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
	struct bench_measure m;
	struct bench_mmap_writer unmappers;
	sigset_t sigs;
	unsigned long bad, errors;
	double settle_ms = 0;
	long cached_kb = -1;
	int sig = -1;

	bench_block_signals(&sigs);
	if (parse_args(argc, argv, &o))
		return 2;
	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	sh.file_len = o.file_mb << 20;
	sh.window = o.window_kb << 10;
	sh.fd = -1;
	sh.rounds = calloc(o.threads, sizeof(*sh.rounds));
	sh.bad = calloc(o.threads, sizeof(*sh.bad));
	sh.errors = calloc(o.threads, sizeof(*sh.errors));
	sh.unmaps = calloc(o.munmappers + 1, sizeof(*sh.unmaps));
	if (!sh.rounds || !sh.bad || !sh.errors || !sh.unmaps) {
		fprintf(stderr, "filemap: out of memory\n");
		return 1;
	}

	/* Written outside the cgroup and dropped from the page cache, so every page the threads
	 * read is charged to the cgroup when it is read back. A new file every run (new blocks,
	 * none of it cached), the filesystem settled before the threads start (no writeback,
	 * journal commit or discard of this run's set-up or an earlier run's files during the
	 * measured phase), a new cgroup: every run starts from the same state. */
	sh.fd = bench_env_data_file(&env, &o.c, o.file_mb, &sigs);
	if (sh.fd < 0 || bench_interrupted(&sigs))
		goto out;
	if (bench_swap_on(&env, &o.c, &sigs) || bench_interrupted(&sigs))
		goto out;
	settle_ms = bench_settle(&env);
	cached_kb = bench_file_cached_kb(sh.fd, sh.file_len);
	if (bench_cgroup_create(&env, &o.c) || bench_interrupted(&sigs) ||
	    bench_spawn(&env, &sigs, "filemap"))
		goto out;

	unmappers = (struct bench_mmap_writer){&sh.stop, 4, o.munmap_rate, sh.unmaps};
	sig = bench_run(
		&sigs, &o.c, &sh, &sh.stop,
		(const struct bench_threads[]){{o.threads, fault_thread, NULL},
					       {o.munmappers, bench_mmap_thread, &unmappers}},
		2,
		(const struct bench_counters[3]){{sh.rounds, o.threads}, {sh.unmaps, o.munmappers}},
		&m, "filemap");
out:
	/* The worker's copy; the parent's is the env's, closed by bench_env_cleanup(). */
	if (sh.fd >= 0 && !env.data_open)
		close(sh.fd);
	bench_env_cleanup(&env);
	if (sig)
		return bench_failed("filemap", sig);
	bad = bench_sum(sh.bad, o.threads);
	errors = bench_sum(sh.errors, o.threads);
	printf("params: workload=filemap threads=%u munmap_threads=%u file_mb=%lu window_kb=%lu "
	       "munmap_rate=%lu prefetch=%u limit_mb=%lu cgroup_v=%d seconds=%.2f warmup=%.2f "
	       "file_cached_kb=%ld settle_ms=%.0f\n",
	       o.threads, o.munmappers, o.file_mb, o.window_kb, o.munmap_rate, o.prefetch,
	       o.c.limit_mb, env.cg_version, o.c.seconds, o.c.warmup, cached_kb, settle_ms);
	bench_result(&m);
	printf(" bad=%lu errors=%lu", bad, errors);
	bench_result_end();
	return bad || errors ? 1 : 0;
}
