/*
 * mix: mmap/munmap/mprotect writers against fault readers in one process, with no memory pressure
 * (no cgroup, no swap, no file I/O): the mmap_lock traffic of an ordinary multi-threaded program.
 *
 * Readers each own a slice of one anonymous region. A reader round writes one byte of each page of
 * a random --chunk-pages chunk of its slice (anonymous write faults, handled under the per-VMA
 * lock) and drops the chunk with MADV_DONTNEED so the next round faults again. Writers loop a
 * cycle: mmap a small region (write), touch its pages (the first touch of a new VMA takes the
 * anon_vma trylock), mprotect half of it read-only and back (two writes), munmap (write), and
 * mprotect a random chunk of the readers' region to PROT_EXEC and back: that splits and merges the
 * readers' VMA, write-locking it, so readers faulting there fall back to mmap_lock (aborts) while
 * the writer holds it. Writers are paced (--writer-rate cycles per second each), so a tracer that
 * slows them cannot speed the readers up. Throughput is reader rounds per second in the measured
 * phase; writer cycles per second are reported too.
 *
 * Build: see bench/meson.build. Needs no privileges.
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
#include <unistd.h>

#include "common.h"

#define WRITER_PAGES 16

struct opts {
	struct bench_common c;
	unsigned readers, writers;
	unsigned long anon_mb, chunk_pages, writer_rate;
};

struct shared {
	const struct opts *o;
	size_t page, len;
	char *region;
	atomic_bool stop;
	struct bench_counter *rounds, *cycles, *errors;
};

static void *reader(void *arg)
{
	struct bench_worker *w = arg;
	struct shared *sh = w->sh;
	/* Whole chunks per reader, so every chunk starts on a page (madvise needs it). */
	size_t chunk = sh->o->chunk_pages * sh->page,
	       slice = sh->len / sh->o->readers / chunk * chunk;
	size_t nchunks = slice / chunk;
	char *base = sh->region + w->index * slice;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (w->index + 1);

	while (!bench_stopped(&sh->stop)) {
		char *p = base + (bench_rand(&seed) % nchunks) * chunk;

		for (size_t off = 0; off < chunk; off += sh->page)
			p[off] = (char)off;
		if (madvise(p, chunk, MADV_DONTNEED))
			bench_count(&sh->errors[w->index], 1);
		bench_count(&sh->rounds[w->index], 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	struct bench_worker *w = arg;
	struct shared *sh = w->sh;
	size_t len = WRITER_PAGES * sh->page, half = len / 2, chunk = sh->o->chunk_pages * sh->page;
	size_t nchunks = sh->len / chunk;
	uint64_t seed = 0x2545f4914f6cdd1dull * (w->index + 1);
	unsigned long errors = 0;
	struct bench_pace pace;

	bench_pace_init(&pace, sh->o->writer_rate);
	while (!bench_stopped(&sh->stop)) {
		char *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *r = sh->region + (bench_rand(&seed) % nchunks) * chunk;

		if (m == MAP_FAILED) {
			errors++;
			continue;
		}
		for (size_t off = 0; off < len; off += sh->page)
			m[off] = 1;
		errors += !!mprotect(m, half, PROT_READ);
		errors += !!mprotect(m, half, PROT_READ | PROT_WRITE);
		errors += !!munmap(m, len);
		/* Readers keep write access throughout: only PROT_EXEC changes. */
		errors += !!mprotect(r, chunk, PROT_READ | PROT_WRITE | PROT_EXEC);
		errors += !!mprotect(r, chunk, PROT_READ | PROT_WRITE);
		bench_count(&sh->cycles[w->index], 1);
		bench_pace_tick(&pace);
	}
	bench_count(&sh->errors[sh->o->readers + w->index], errors);
	return NULL;
}

static const char about[] =
	"Mixed workload: fault readers against mmap/munmap/mprotect writers, no memory\n"
	"pressure.";

static int parse_args(int argc, char **argv, struct opts *o)
{
	const struct bench_num_opt opts[] = {
		{"readers", "N", NULL, &o->readers, 2, "fault reader threads", NULL},
		{"writers", "M", NULL, &o->writers, 2, "mmap/mprotect/munmap writer threads", NULL},
		{"anon-mb", "MB", &o->anon_mb, NULL, 64, "the readers' anonymous region", NULL},
		{"chunk-pages", "P", &o->chunk_pages, NULL, 64, "pages written per reader round",
		 NULL},
		{"writer-rate", "R", &o->writer_rate, NULL, 1000, "cycles per second per writer",
		 "as fast as they can"},
		{NULL, NULL, NULL, NULL, 0, NULL, NULL},
	};

	bench_common_defaults(&o->c, 8, 2, 0, 0);
	if (bench_parse_args(argc, argv, &o->c, opts, about) < 0)
		return -1;
	if (!o->readers || !o->anon_mb || !o->chunk_pages ||
	    o->chunk_pages * 4096 * o->readers > o->anon_mb << 20) {
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
	sigset_t sigs;
	unsigned nthreads;
	unsigned long errors;
	int sig = -1;

	bench_block_signals(&sigs);
	if (parse_args(argc, argv, &o))
		return 2;
	memset(&sh, 0, sizeof(sh));
	sh.o = &o;
	sh.page = (size_t)sysconf(_SC_PAGESIZE);
	sh.len = o.anon_mb << 20;
	nthreads = o.readers + o.writers;
	sh.rounds = calloc(o.readers, sizeof(*sh.rounds));
	sh.cycles = calloc(o.writers + 1, sizeof(*sh.cycles));
	sh.errors = calloc(nthreads, sizeof(*sh.errors));
	if (!sh.rounds || !sh.cycles || !sh.errors) {
		fprintf(stderr, "mix: out of memory\n");
		return 1;
	}
	if (bench_swap_on(&env, &o.c, &sigs) || bench_cgroup_create(&env, &o.c) ||
	    bench_spawn(&env, &sigs, "mix"))
		goto out;
	sh.region = mmap(NULL, sh.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh.region == MAP_FAILED) {
		fprintf(stderr, "mix: mmap %lu MB: %s\n", o.anon_mb, strerror(errno));
		sh.region = NULL;
		goto out;
	}
	madvise(sh.region, sh.len, MADV_NOHUGEPAGE);

	sig = bench_run(
		&sigs, &o.c, &sh, &sh.stop,
		(const struct bench_threads[]){{o.readers, reader, NULL},
					       {o.writers, writer, NULL}},
		2, (const struct bench_counters[3]){{sh.rounds, o.readers}, {sh.cycles, o.writers}},
		&m, "mix");
out:
	if (sh.region)
		munmap(sh.region, sh.len);
	bench_env_cleanup(&env);
	if (sig)
		return bench_failed("mix", sig);
	errors = bench_sum(sh.errors, nthreads);
	printf("params: workload=mix readers=%u writers=%u anon_mb=%lu chunk_pages=%lu "
	       "writer_rate=%lu seconds=%.2f warmup=%.2f\n",
	       o.readers, o.writers, o.anon_mb, o.chunk_pages, o.writer_rate, o.c.seconds,
	       o.c.warmup);
	bench_result(&m);
	printf(" errors=%lu", errors);
	bench_result_end();
	return errors ? 1 : 0;
}
