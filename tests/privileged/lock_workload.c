/*
 * lock_workload: one process whose threads contend on kernel locks of several types, so the
 * privileged lock test has callers with many contentions to compare between mmlockd and
 * `perf lock contention`. Everything runs in one process (threads only, no fork), because perf
 * lock contention cannot filter a recording by process and mmlockd's rows are per process.
 *
 *   map threads    loop over mmap / touch every page / mprotect half read-only and back / munmap
 *                  of a small anonymous region: rwsem contention on the process's mmap_lock,
 *                  writers (mmap, mprotect, munmap) against readers (the first touch of a new
 *                  VMA falls back to mmap_lock)
 *   pipe threads   writers push small messages into one pipe that one reader drains: mutex
 *                  contention on the pipe's mutex, with optimistic spinning (nested begins)
 *   futex threads  take turns on one pthread mutex with a tiny critical section: futex waits and
 *                  wakes contend on the futex hash bucket's spinlock and the runqueue locks
 *
 * It runs for --seconds, writes its pid to --pid-file once started and prints one summary line.
 *
 * Build: gcc -O2 -pthread -o lock_workload lock_workload.c
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAP_PAGES 16

struct opts {
	unsigned map_threads, pipe_writers, futex_threads;
	double seconds;
	const char *pid_file;
};

static atomic_bool stop;
static atomic_ulong map_cycles, pipe_msgs, futex_turns;
static int pipe_fd[2];
static pthread_mutex_t shared_mutex = PTHREAD_MUTEX_INITIALIZER;
static size_t page;

static void die(const char *what)
{
	fprintf(stderr, "lock_workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *map_thread(void *arg)
{
	size_t len = MAP_PAGES * page;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *p =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		for (size_t off = 0; off < len; off += page)
			p[off] = 1;
		if (mprotect(p, len / 2, PROT_READ) || mprotect(p, len / 2, PROT_READ | PROT_WRITE))
			die("mprotect");
		if (munmap(p, len))
			die("munmap");
		atomic_fetch_add_explicit(&map_cycles, 1, memory_order_relaxed);
	}
	return arg;
}

static void *pipe_writer(void *arg)
{
	char msg[32];

	memset(msg, 'x', sizeof(msg));
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (write(pipe_fd[1], msg, sizeof(msg)) != (ssize_t)sizeof(msg) && errno != EAGAIN)
			die("write to the pipe");
		atomic_fetch_add_explicit(&pipe_msgs, 1, memory_order_relaxed);
	}
	return arg;
}

static void *pipe_reader(void *arg)
{
	char buf[4096];

	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		if (read(pipe_fd[0], buf, sizeof(buf)) < 0 && errno != EAGAIN)
			die("read from the pipe");
	return arg;
}

static void *futex_thread(void *arg)
{
	volatile unsigned long sink = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_mutex_lock(&shared_mutex);
		for (int i = 0; i < 200; i++)
			sink += (unsigned long)i;
		pthread_mutex_unlock(&shared_mutex);
		atomic_fetch_add_explicit(&futex_turns, 1, memory_order_relaxed);
	}
	(void)sink; /* the hold's work, kept by volatile */
	return arg;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: lock_workload [--seconds S] [--map-threads N] [--pipe-writers N]\n"
		   "                     [--futex-threads N] [--pid-file PATH]\n"
		   "Threads contending on mmap_lock (rwsem), a pipe mutex and a futex hash bucket\n"
		   "(spinlock) for S seconds (default 4; defaults 2, 2 and 2 threads).\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"seconds", required_argument, NULL, 's'},
		{"map-threads", required_argument, NULL, 'm'},
		{"pipe-writers", required_argument, NULL, 'w'},
		{"futex-threads", required_argument, NULL, 'f'},
		{"pid-file", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){2, 2, 2, 4.0, NULL};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;
		switch (c) {
		case 's':
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds > 0 && o->seconds <= 3600))
				goto bad;
			break;
		case 'm':
		case 'w':
		case 'f':
			v = strtoul(optarg, &end, 10);
			if (*end || v > 64)
				goto bad;
			*(c == 'm'   ? &o->map_threads
			  : c == 'w' ? &o->pipe_writers
				     : &o->futex_threads) = (unsigned)v;
			break;
		case 'p':
			o->pid_file = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			goto bad;
		}
	}
	if (optind == argc)
		return 0;
bad:
	usage(stderr);
	return -1;
}

int main(int argc, char **argv)
{
	pthread_t tids[256];
	unsigned n = 0;
	struct opts o;
	struct timespec t0, t1;

	if (parse(argc, argv, &o) < 0)
		return 2;
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (pipe2(pipe_fd, O_CLOEXEC))
		die("pipe2");
	if (o.pid_file) {
		FILE *f = fopen(o.pid_file, "we");
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
			die(o.pid_file);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < o.map_threads; i++)
		if (pthread_create(&tids[n++], NULL, map_thread, NULL))
			die("pthread_create");
	for (unsigned i = 0; i < o.pipe_writers; i++)
		if (pthread_create(&tids[n++], NULL, pipe_writer, NULL))
			die("pthread_create");
	if (o.pipe_writers && pthread_create(&tids[n++], NULL, pipe_reader, NULL))
		die("pthread_create");
	for (unsigned i = 0; i < o.futex_threads; i++)
		if (pthread_create(&tids[n++], NULL, futex_thread, NULL))
			die("pthread_create");

	struct timespec d = {(time_t)o.seconds,
			     (long)((o.seconds - (double)(time_t)o.seconds) * 1e9)};
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	atomic_store(&stop, true);
	/* Unblock the pipe: the reader may sleep on an empty pipe, writers on a full one. */
	if (fcntl(pipe_fd[0], F_SETFL, O_NONBLOCK) || fcntl(pipe_fd[1], F_SETFL, O_NONBLOCK))
		die("fcntl");
	char buf[4096];
	while (read(pipe_fd[0], buf, sizeof(buf)) > 0)
		;
	if (write(pipe_fd[1], "x", 1) < 0 && errno != EAGAIN)
		die("write to the pipe");
	for (unsigned i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("lock_workload: pid %d map_cycles %lu pipe_msgs %lu futex_turns %lu elapsed %.3f "
	       "s\n",
	       (int)getpid(), atomic_load(&map_cycles), atomic_load(&pipe_msgs),
	       atomic_load(&futex_turns),
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
