/*
 * labload: the lab's fault workloads, after the two models of the RFC v4 series (seeds 001, 000),
 * small enough for a 2-vCPU guest under TCG. Built static so the initramfs needs no libc.
 *
 *   --mode filemap  reader threads fault random pages of a shared read-only mapping of --file
 *                   (MADV_RANDOM, so every miss is one synchronous page read); run it in a memory
 *                   cgroup smaller than the file so pages keep being reclaimed and re-read.
 *   --mode swap     a non-zero anonymous mapping of --size-mb is written once (pushing most of
 *                   it to swap under the cgroup limit), then reader threads fault random pages
 *                   back in.
 * In both, --writers threads loop mmap()/munmap() of a small anonymous region: two mmap_lock
 * write acquisitions per cycle, the "parallel munmap" pressure of the seeds.
 *
 * Throughput is reads per second over the measured phase (--seconds, after --warmup). The
 * process reads /proc/vmstat at its start and end (and around the measured phase) and prints the
 * deltas of the counters the lab compares mmlockd with, and its own getrusage() fault counts, as
 * key=value lines:
 *   result: mode=... reads=... seconds=... reads_per_s=... minflt=... majflt=...
 *   vmstat_whole: pgfault=... pgmajfault=... vma_lock_success=... ...   (process start -> end)
 *   vmstat_measure: ...                                                  (measured phase only)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ul

static const char *const keys[] = {"pgfault",	     "pgmajfault",     "vma_lock_success",
				   "vma_lock_abort", "vma_lock_retry", "vma_lock_miss",
				   "pswpin",	     "pswpout"};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

struct snap {
	unsigned long long v[NKEYS];
};

static void vmstat(struct snap *s)
{
	char line[256];
	FILE *f = fopen("/proc/vmstat", "r");
	memset(s, 0, sizeof(*s));
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = 0;
		for (unsigned i = 0; i < NKEYS; i++)
			if (!strcmp(line, keys[i]))
				s->v[i] = strtoull(sp + 1, NULL, 10);
	}
	fclose(f);
}

static void print_delta(const char *tag, const struct snap *a, const struct snap *b)
{
	printf("%s:", tag);
	for (unsigned i = 0; i < NKEYS; i++)
		printf(" %s=%llu", keys[i], b->v[i] - a->v[i]);
	printf("\n");
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned char *region;
static size_t npages;
static atomic_int phase; /* 0 warmup, 1 measure, 2 stop */
static atomic_ulong reads_measured;
static atomic_ulong cycles;

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void *reader(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	unsigned long n = 0, sum = 0;
	int ph;
	while ((ph = atomic_load_explicit(&phase, memory_order_relaxed)) < 2) {
		size_t p = xorshift(&seed) % npages;
		sum += region[p * PAGE + (p & 63)];
		if (ph == 1)
			n++;
	}
	atomic_fetch_add(&reads_measured, n);
	return (void *)(uintptr_t)sum;
}

static void *writer(void *arg)
{
	(void)arg;
	unsigned long n = 0;
	while (atomic_load_explicit(&phase, memory_order_relaxed) < 2) {
		void *p = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			continue;
		munmap(p, 16 * PAGE);
		n++;
	}
	atomic_fetch_add(&cycles, n);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: labload --mode filemap|swap [--file PATH] [--size-mb N] "
			"[--threads N] [--writers N] [--seconds S] [--warmup S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct snap s0, s1, s2, s3;
	vmstat(&s0);
	const char *mode = NULL, *file = NULL;
	unsigned long size_mb = 64, threads = 4, writers = 1;
	double seconds = 10, warmup = 2;
	static const struct option lo[] = {{"mode", 1, 0, 'm'},	   {"file", 1, 0, 'f'},
					   {"size-mb", 1, 0, 's'}, {"threads", 1, 0, 't'},
					   {"writers", 1, 0, 'w'}, {"seconds", 1, 0, 'S'},
					   {"warmup", 1, 0, 'W'},  {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			mode = optarg;
			break;
		case 'f':
			file = optarg;
			break;
		case 's':
			size_mb = strtoul(optarg, NULL, 10);
			break;
		case 't':
			threads = strtoul(optarg, NULL, 10);
			break;
		case 'w':
			writers = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			seconds = strtod(optarg, NULL);
			break;
		case 'W':
			warmup = strtod(optarg, NULL);
			break;
		default:
			usage();
		}
	}
	if (!mode || threads < 1 || threads > 256 || writers > 64)
		usage();

	size_t len;
	if (!strcmp(mode, "filemap")) {
		if (!file)
			usage();
		int fd = open(file, O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			perror(file);
			return 1;
		}
		len = st.st_size & ~(PAGE - 1);
		region = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
	} else if (!strcmp(mode, "swap")) {
		len = size_mb << 20;
		region =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (region != MAP_FAILED) {
			madvise((void *)region, len, MADV_NOHUGEPAGE);
			for (size_t off = 0; off < len; off += PAGE) /* non-zero: must go to swap */
				memset((void *)(region + off), (int)(1 + (off / PAGE) % 251), 64);
		}
	} else {
		usage();
	}
	if (region == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	npages = len / PAGE;
	madvise((void *)region, len, MADV_RANDOM);

	pthread_t tid[320];
	unsigned long nt = 0;
	for (unsigned long i = 0; i < threads; i++)
		pthread_create(&tid[nt++], NULL, reader, (void *)(uintptr_t)i);
	for (unsigned long i = 0; i < writers; i++)
		pthread_create(&tid[nt++], NULL, writer, NULL);
	printf("# phase warmup\n");
	fflush(stdout);
	usleep((useconds_t)(warmup * 1e6));
	vmstat(&s1);
	double t0 = now();
	atomic_store(&phase, 1);
	printf("# phase measure\n");
	fflush(stdout);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&phase, 2);
	double t1 = now();
	vmstat(&s2);
	printf("# phase end\n");
	for (unsigned long i = 0; i < nt; i++)
		pthread_join(tid[i], NULL);
	munmap((void *)region, len);

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	unsigned long r = atomic_load(&reads_measured);
	printf("params: mode=%s size_mb=%lu pages=%zu threads=%lu writers=%lu seconds=%.1f "
	       "warmup=%.1f\n",
	       mode, len >> 20, npages, threads, writers, seconds, warmup);
	printf("result: mode=%s reads=%lu seconds=%.3f reads_per_s=%.1f mmap_cycles=%lu minflt=%ld "
	       "majflt=%ld\n",
	       mode, r, t1 - t0, r / (t1 - t0), atomic_load(&cycles), ru.ru_minflt, ru.ru_majflt);
	print_delta("vmstat_measure", &s1, &s2);
	vmstat(&s3);
	print_delta("vmstat_whole", &s0, &s3);
	fflush(stdout);
	return 0;
}
