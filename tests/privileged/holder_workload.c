/*
 * holder_workload: page faults that wait for mmap_lock behind one known holder, for the
 * privileged holder test (test_holders.sh).
 *
 *   fault threads     each owns a slice of one anonymous region and loops: write one byte of
 *                     every page of a chunk (anonymous faults under the per-VMA lock), drop the
 *                     chunk (MADV_DONTNEED) so the next round faults again
 *   mprotect thread   (named "mprotector") loops mprotect() of a random chunk of the region to
 *                     PROT_EXEC and back: each call splits and merges the region's VMA under
 *                     mmap_lock held for write, write-locking the VMA, so the faults there fall
 *                     back to mmap_lock and wait for it behind this thread
 * With --smaps PID it is something else: one process that reads /proc/PID/smaps_rollup in a loop
 * (mmap_lock of PID held for read through each walk), named "smapsreader": a remote reader
 * that PID's writers wait behind; it stops when PID is gone. With --vmas N: one thread maps N
 * one-page VMAs that cannot merge (alternate protections), touches them, sleeps --seconds and
 * exits: exit_mmap() then removes them under mmap_lock held for write, a holder that exits
 * while a reader of its smaps waits.
 *
 * It runs for --seconds, writes its pid to --pid-file once started and prints one summary line
 * (with the mprotect thread's tid, and every thread's but the timer's).
 *
 * Build: gcc -O2 -pthread -o holder_workload holder_workload.c
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
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_PAGES    64
#define MPROTECT_PAGES 256
#define MAX_THREADS    64

struct opts {
	unsigned fault_threads;
	unsigned long region_mb;
	double seconds;
	const char *pid_file;
	long smaps_pid;	    /* 0: the fault workload */
	unsigned long vmas; /* 0: the fault workload */
};

static atomic_bool stop;
static atomic_ulong fault_rounds, mprotects, smaps_reads;
static atomic_int mprotect_tid;
static atomic_int fault_tids[MAX_THREADS];
static char *region;
static size_t page, region_len, slice_len;

static void die(const char *what)
{
	fprintf(stderr, "holder_workload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *fault_thread(void *arg)
{
	size_t idx = (size_t)arg, chunk = CHUNK_PAGES * page;
	char *slice = region + idx * slice_len;
	unsigned seed = (unsigned)idx * 7919u + 1;

	atomic_store(&fault_tids[idx], (int)gettid());
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t nchunks = slice_len / chunk;
		char *c = slice + (size_t)(rand_r(&seed) % nchunks) * chunk;
		for (size_t off = 0; off < chunk; off += page)
			c[off] = 1;
		if (madvise(c, chunk, MADV_DONTNEED))
			die("madvise");
		atomic_fetch_add_explicit(&fault_rounds, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *mprotect_thread(void *arg)
{
	size_t len = MPROTECT_PAGES * page, npos = region_len / len;
	unsigned seed = 4242;

	pthread_setname_np(pthread_self(), "mprotector");
	atomic_store(&mprotect_tid, (int)gettid());
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *p = region + (size_t)(rand_r(&seed) % npos) * len;
		if (mprotect(p, len, PROT_READ | PROT_WRITE | PROT_EXEC) ||
		    mprotect(p, len, PROT_READ | PROT_WRITE))
			die("mprotect");
		atomic_fetch_add_explicit(&mprotects, 2, memory_order_relaxed);
	}
	return arg;
}

static void read_smaps(long pid)
{
	char path[64], buf[8192];

	prctl(PR_SET_NAME, "smapsreader");
	snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", pid);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT || errno == ESRCH)
				return; /* the process is gone */
			die(path);
		}
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
		atomic_fetch_add_explicit(&smaps_reads, 1, memory_order_relaxed);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: holder_workload [--seconds S] [--fault-threads N] [--region-mb M]\n"
		   "                       [--pid-file PATH] [--smaps PID] [--vmas N]\n"
		   "N threads faulting on an M MiB region (defaults 2, 64) while one thread\n"
		   "mprotects chunks of it, for S seconds (default 4); with --smaps, read\n"
		   "/proc/PID/smaps_rollup in a loop instead; with --vmas, map N one-page VMAs,\n"
		   "sleep S seconds and exit.\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"seconds", required_argument, NULL, 's'},
		{"fault-threads", required_argument, NULL, 't'},
		{"region-mb", required_argument, NULL, 'm'},
		{"pid-file", required_argument, NULL, 'p'},
		{"smaps", required_argument, NULL, 'r'},
		{"vmas", required_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;

	*o = (struct opts){2, 64, 4.0, NULL, 0, 0};
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;
		switch (c) {
		case 's':
			o->seconds = strtod(optarg, &end);
			if (*end || !(o->seconds > 0 && o->seconds <= 3600))
				goto bad;
			break;
		case 't':
		case 'm':
		case 'r':
		case 'v':
			v = strtoul(optarg, &end, 10);
			if (*end || !v || (c == 't' && v > MAX_THREADS) || (c == 'm' && v > 4096) ||
			    (c == 'v' && v > 1000000))
				goto bad;
			if (c == 't')
				o->fault_threads = (unsigned)v;
			else if (c == 'm')
				o->region_mb = v;
			else if (c == 'v')
				o->vmas = v;
			else
				o->smaps_pid = (long)v;
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

/* --vmas: @n one-page mappings, every other one read-only so that none merges. */
static void map_vmas(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		int prot = i % 2 ? PROT_READ : PROT_READ | PROT_WRITE;
		char *p = mmap(NULL, page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		if (prot & PROT_WRITE)
			p[0] = 1;
	}
}

static void *timer(void *arg)
{
	double s = *(const double *)arg;
	struct timespec d = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	atomic_store(&stop, true);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t tids[MAX_THREADS + 2];
	unsigned n = 0;
	struct opts o;

	if (parse(argc, argv, &o) < 0)
		return 2;
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (o.pid_file) {
		FILE *f = fopen(o.pid_file, "we");
		if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
			die(o.pid_file);
	}
	if (pthread_create(&tids[n++], NULL, timer, &o.seconds))
		die("pthread_create");
	if (o.vmas) {
		map_vmas(o.vmas);
		pthread_join(tids[0], NULL);
		printf("holder_workload: pid %d vmas %lu, exiting\n", (int)getpid(), o.vmas);
		fflush(stdout);
		return 0;
	}
	if (o.smaps_pid) {
		read_smaps(o.smaps_pid);
		pthread_join(tids[0], NULL);
		printf("holder_workload: pid %d smaps_reads %lu\n", (int)getpid(),
		       atomic_load(&smaps_reads));
		return 0;
	}
	region_len = o.region_mb << 20;
	slice_len = region_len / o.fault_threads / (CHUNK_PAGES * page) * (CHUNK_PAGES * page);
	if (!slice_len)
		die("--region-mb too small for the threads");
	region = mmap(NULL, region_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < o.fault_threads; i++)
		if (pthread_create(&tids[n++], NULL, fault_thread, (void *)i))
			die("pthread_create");
	if (pthread_create(&tids[n++], NULL, mprotect_thread, NULL))
		die("pthread_create");
	for (unsigned i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	printf("holder_workload: pid %d fault_rounds %lu mprotects %lu mprotect_tid %d tids %d",
	       (int)getpid(), atomic_load(&fault_rounds), atomic_load(&mprotects),
	       atomic_load(&mprotect_tid), atomic_load(&mprotect_tid));
	for (unsigned i = 0; i < o.fault_threads; i++)
		printf(",%d", atomic_load(&fault_tids[i]));
	printf("\n");
	return 0;
}
