/*
 * swapin: the swap-in workload of seed 000 ("mm/swap: allow swap faults to retry under the VMA
 * lock"), scaled from a 20-core desktop to a 2-core machine.
 *
 * A non-zero anonymous mapping (--map-mb) is held under swap pressure inside a temporary memory
 * cgroup whose limit (--limit-mb) is smaller than the mapping, with a temporary swap file
 * (--swap-mb) as the only place the rest can go. A pressure thread keeps pushing random chunks of
 * the mapping out with MADV_PAGEOUT (the seed's "one pressure thread"), --readers threads fault it
 * back in (a reader pages its chunk out again once read, so every round faults: without that, a
 * round over resident pages costs nanoseconds and rounds/s would measure the hit ratio, and
 * memcg reclaim alone on a tight limit let the OOM killer in), and --writers threads loop
 * mmap/munmap of small regions, taking mmap_lock for write so that swap faults retried under
 * mmap_lock meet writers. Writers are paced
 * (--writer-rate): free-running writers would take both CPUs of a 2-core machine, and a tracer
 * that slowed them would then speed the readers up, hiding its own cost. A reader round reads one
 * byte of each page of a random --chunk-pages chunk, checks it is not zero (a page that came
 * back from swap as zeros would be a kernel bug, reported as "bad"). Throughput is reader rounds
 * per second in the measured phase.
 *
 * On a vanilla kernel a swap fault that finds its folio locked (the swap-in I/O of another thread)
 * returns VM_FAULT_RETRY and is retried under mmap_lock: with writers queued on mmap_lock, that is
 * where the seed's patch gains +6..47%.
 *
 * Build: see bench/meson.build. Run as root (cgroup, swapon).
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
#include <time.h>
#include <unistd.h>

#include "common.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

struct opts {
	struct bench_common c;
	unsigned readers, writers;
	unsigned long map_mb, chunk_pages, pressure_kb, pressure_us, writer_rate;
};

struct shared {
	const struct opts *o;
	size_t page, len;
	unsigned char *map;
	atomic_bool stop;
	struct bench_counter *rounds, *writes, *bad;
	struct bench_counter pageouts;
};

static void *reader(void *arg)
{
	struct bench_worker *w = arg;
	struct shared *sh = w->sh;
	size_t chunk = sh->o->chunk_pages * sh->page, nchunks = sh->len / chunk;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (w->index + 1);

	while (!bench_stopped(&sh->stop)) {
		const volatile unsigned char *p = sh->map + (bench_rand(&seed) % nchunks) * chunk;
		unsigned long zero = 0;

		for (size_t off = 0; off < chunk; off += sh->page)
			zero += p[off] == 0;
		/* Out again at once: whichever reader picks this chunk next faults it back. */
		madvise((void *)p, chunk, MADV_PAGEOUT);
		if (zero)
			bench_count(&sh->bad[w->index], zero);
		bench_count(&sh->rounds[w->index], 1);
	}
	return NULL;
}

static void *pressure(void *arg)
{
	const struct bench_worker *w = arg;
	struct shared *sh = w->sh;
	size_t chunk = sh->o->pressure_kb << 10, nchunks = sh->len / chunk;
	struct timespec pause = {0, (long)sh->o->pressure_us * 1000};
	uint64_t seed = 0x2545f4914f6cdd1dull;

	while (!bench_stopped(&sh->stop)) {
		madvise(sh->map + (bench_rand(&seed) % nchunks) * chunk, chunk, MADV_PAGEOUT);
		bench_count(&sh->pageouts, 1);
		if (sh->o->pressure_us)
			nanosleep(&pause, NULL);
	}
	return NULL;
}

static const char about[] =
	"Swap-in workload (seed 000): readers fault back a non-zero anonymous mapping held\n"
	"under swap pressure in a memory cgroup, writers loop mmap/munmap.";

static int parse_args(int argc, char **argv, struct opts *o)
{
	const struct bench_num_opt opts[] = {
		{"readers", "N", NULL, &o->readers, 4, "reader threads", NULL},
		{"writers", "M", NULL, &o->writers, 2, "mmap/munmap writer threads", NULL},
		{"map-mb", "MB", &o->map_mb, NULL, 128, "the anonymous mapping", NULL},
		{"chunk-pages", "P", &o->chunk_pages, NULL, 16, "pages read per reader round",
		 NULL},
		{"pressure-kb", "KB", &o->pressure_kb, NULL, 1024,
		 "chunk the pressure thread pages out each step",
		 "no pressure thread, the cgroup limit alone"},
		{"pressure-us", "US", &o->pressure_us, NULL, 2000, "pause between its steps", NULL},
		{"writer-rate", "R", &o->writer_rate, NULL, 20000,
		 "mmap/munmap pairs per second per writer",
		 "as fast as they can, which on 2 cores starves the readers"},
		{NULL, NULL, NULL, NULL, 0, NULL, NULL},
	};

	bench_common_defaults(&o->c, 8, 2, 96, 512);
	if (bench_parse_args(argc, argv, &o->c, opts, about) < 0)
		return -1;
	if (!o->readers || !o->map_mb || !o->chunk_pages ||
	    o->chunk_pages * 4096 > o->map_mb << 20 || (o->pressure_kb << 10) > (o->map_mb << 20)) {
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
	struct bench_mmap_writer writers;
	sigset_t sigs;
	unsigned long bad;
	double settle_ms = 0;
	int sig = -1;

	bench_block_signals(&sigs);
	if (parse_args(argc, argv, &o))
		return 2;
	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	sh.len = o.map_mb << 20;
	sh.rounds = calloc(o.readers, sizeof(*sh.rounds));
	sh.bad = calloc(o.readers, sizeof(*sh.bad));
	sh.writes = calloc(o.writers + 1, sizeof(*sh.writes));
	if (!sh.rounds || !sh.bad || !sh.writes) {
		fprintf(stderr, "swapin: out of memory\n");
		return 1;
	}

	/* A new swap file every run (empty), the filesystem settled before the worker starts
	 * (its writeback and an earlier run's discards done), a new cgroup. */
	if (bench_swap_on(&env, &o.c, &sigs) || bench_interrupted(&sigs))
		goto out;
	settle_ms = bench_settle(&env);
	if (bench_cgroup_create(&env, &o.c) || bench_interrupted(&sigs) ||
	    bench_spawn(&env, &sigs, "swapin"))
		goto out;
	sh.map = mmap(NULL, sh.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh.map == MAP_FAILED) {
		fprintf(stderr, "swapin: mmap %lu MB: %s\n", o.map_mb, strerror(errno));
		sh.map = NULL;
		goto out;
	}
	madvise(sh.map, sh.len, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < sh.len; off += sh.page) {
		memset(sh.map + off, (int)((off / sh.page) % 251) + 1, sh.page);
		if ((off & ((64ul << 20) - 1)) == 0 && bench_interrupted(&sigs))
			goto out;
	}

	writers = (struct bench_mmap_writer){&sh.stop, 4, o.writer_rate, sh.writes};
	/* The pressure thread is one more, unless --pressure-kb 0. */
	sig = bench_run(&sigs, &o.c, &sh, &sh.stop,
			(const struct bench_threads[]){{o.readers, reader, NULL},
						       {o.writers, bench_mmap_thread, &writers},
						       {o.pressure_kb ? 1 : 0, pressure, NULL}},
			3,
			(const struct bench_counters[3]){
				{sh.rounds, o.readers}, {sh.writes, o.writers}, {&sh.pageouts, 1}},
			&m, "swapin");
out:
	if (sh.map)
		munmap(sh.map, sh.len);
	bench_env_cleanup(&env);
	if (sig)
		return bench_failed("swapin", sig);
	bad = bench_sum(sh.bad, o.readers);
	printf("params: workload=swapin readers=%u writers=%u map_mb=%lu limit_mb=%lu swap_mb=%lu "
	       "chunk_pages=%lu pressure_kb=%lu pressure_us=%lu writer_rate=%lu cgroup_v=%d "
	       "seconds=%.2f "
	       "warmup=%.2f settle_ms=%.0f\n",
	       o.readers, o.writers, o.map_mb, o.c.limit_mb, o.c.swap_mb, o.chunk_pages,
	       o.pressure_kb, o.pressure_us, o.writer_rate, env.cg_version, o.c.seconds, o.c.warmup,
	       settle_ms);
	bench_result(&m);
	printf(" pageouts_per_s=%.1f bad=%lu", bench_rate(&m, 2), bad);
	bench_result_end();
	return bad ? 1 : 0;
}
