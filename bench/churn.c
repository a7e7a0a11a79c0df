/*
 * churn: thousands of short-lived processes and threads, for the bounded-memory check of the
 * overhead benchmark (bench/run.py --churn). A profiler that keeps per-process and per-thread
 * state must drop it when processes and threads exit, or its memory grows with the number of
 * processes ever seen; this workload makes that number large in seconds.
 *
 * It forks --procs children, at most --parallel at a time. Each child maps a small anonymous
 * region, starts --threads threads that each fault a few pages of it and take mmap_lock for write
 * once (mmap/munmap of one page), joins them and exits. Prints the counts, the elapsed time and
 * the children's page faults as the kernel accounted them (getrusage(RUSAGE_CHILDREN): minor plus
 * major faults of every reaped child and its threads), which tests compare with what a profiler
 * stored for them (tests/privileged/test_churn.sh). With --pids FILE it also writes one line per
 * reaped child, "pid minflt majflt" (wait4()'s rusage of that child alone), so a test can say
 * which processes a profiler missed or short-counted, not only how many.
 *
 * Build: see bench/meson.build. Needs no privileges.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define PAGES_PER_THREAD 8

static char *region;
static size_t page;

static void *thread_main(void *arg)
{
	size_t index = (size_t)arg;
	char *p = region + index * PAGES_PER_THREAD * page;
	void *m;

	for (size_t i = 0; i < PAGES_PER_THREAD; i++)
		p[i * page] = 1;
	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED)
		munmap(m, page);
	return NULL;
}

static int child(unsigned threads)
{
	pthread_t *t = calloc(threads, sizeof(*t));
	unsigned n;

	region = mmap(NULL, (threads + 1) * PAGES_PER_THREAD * page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!t || region == MAP_FAILED)
		return 1;
	for (n = 0; n < threads; n++)
		if (pthread_create(&t[n], NULL, thread_main, (void *)(size_t)n))
			break;
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return n == threads ? 0 : 1;
}

struct opts {
	unsigned long procs, threads, parallel;
	FILE *pids;
};

/* Reads the command line into @o; returns -1 to go on, else the exit status (help, bad use). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"procs", required_argument, NULL, 'p'},
		{"threads", required_argument, NULL, 't'},
		{"parallel", required_argument, NULL, 'j'},
		{"pids", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		unsigned long v;
		char *end;

		if (c == 'h') {
			printf("Usage: %s [--procs N (5000)] [--threads T (4)] [--parallel J (8)] "
			       "[--pids FILE]\n"
			       "Forks N short-lived processes, J at a time, each with T threads "
			       "that fault a few pages and exit. --pids: one line per reaped "
			       "child, \"pid minflt majflt\".\n",
			       argv[0]);
			return 0;
		}
		if (c == '?')
			return 2;
		if (c == 'o') {
			if (o->pids)
				fclose(o->pids);
			o->pids = fopen(optarg, "we");
			if (!o->pids) {
				fprintf(stderr, "%s: %s: %s\n", argv[0], optarg, strerror(errno));
				return 2;
			}
			continue;
		}
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno || end == optarg || *end || optarg[0] == '-' || !v || v > 10000000) {
			fprintf(stderr, "%s: bad value '%s'\n", argv[0], optarg);
			return 2;
		}
		if (c == 'p')
			o->procs = v;
		else if (c == 't')
			o->threads = v;
		else
			o->parallel = v;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct opts o = {.procs = 5000, .threads = 4, .parallel = 8};
	unsigned long started = 0, running = 0, failed = 0;
	uint64_t t0;
	int status, rc = parse_args(argc, argv, &o);

	if (rc >= 0)
		return rc;
	page = (size_t)sysconf(_SC_PAGESIZE);
	t0 = now_ns();
	while (started < o.procs || running) {
		if (started < o.procs && running < o.parallel) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(child((unsigned)o.threads));
			if (pid < 0) {
				failed++;
				if (!running)
					break;
			} else {
				started++;
				running++;
				continue;
			}
		}
		struct rusage one;
		pid_t done = wait4(-1, &status, 0, &one);
		if (done > 0) {
			running--;
			if (o.pids)
				fprintf(o.pids, "%d %ld %ld\n", (int)done, one.ru_minflt,
					one.ru_majflt);
			failed += !WIFEXITED(status) || WEXITSTATUS(status);
		} else if (errno == ECHILD) {
			running = 0;
		}
	}
	struct rusage ru = {0};
	getrusage(RUSAGE_CHILDREN, &ru);
	printf("result: procs=%lu threads_per_proc=%lu threads=%lu failed=%lu elapsed_s=%.3f "
	       "child_faults=%ld\n",
	       started, o.threads, started * o.threads, failed, (double)(now_ns() - t0) / 1e9,
	       ru.ru_minflt + ru.ru_majflt);
	if (o.pids && fclose(o.pids) != 0)
		failed++;
	return failed ? 1 : 0;
}
