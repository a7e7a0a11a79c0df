/*
 * Shared plumbing of the benchmark workloads: a temporary memory cgroup, a temporary swap file, an
 * unlinked data file, and the run protocol the driver (bench/run.py) reads.
 *
 * Every workload leaves the machine as it found it. It blocks SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * before anything else, so no thread is ever interrupted halfway through a set-up step. The
 * process that creates the swap file and the cgroup stays outside the cgroup: bench_spawn() forks
 * the worker into it and waits, forwarding stop signals, so even a worker killed by the cgroup's
 * OOM killer leaves nothing behind; the parent then swaps the file off, unlinks it and removes the
 * cgroup. The worker receives stop signals with sigtimedwait(), joins its threads and exits. Data
 * files are unlinked the moment they are created. Only a SIGKILL of the parent can leave a cgroup
 * or a swap file behind; they have names the caller chose (--cgroup-name, --swap-file), so the
 * driver removes them after such a death.
 *
 * The run protocol: after set-up the workload prints "# phase warmup", runs its threads for
 * --warmup seconds, prints "# phase measure", counts rounds for --seconds, prints "# phase end",
 * stops, cleans up, then prints one "params:" and one "result:" line of key=value pairs. Every
 * line is flushed at once, so an observer can take its own snapshots at the phase boundaries.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* now_ns(), wait_signal(), parse_ulong(), parse_seconds(): shared with the privileged tests'
 * workloads. */
#include "../tests/privileged/workload.h"

/* One counter per thread, on its own cache line so counting never bounces lines. */
struct bench_counter {
	alignas(64) atomic_ulong v;
};

/* Options every workload takes. */
struct bench_common {
	double seconds;		  /* --seconds: measured phase */
	double warmup;		  /* --warmup: unmeasured phase before it */
	const char *dir;	  /* --dir: where data and swap files go */
	char cgroup_name[128];	  /* --cgroup-name: the temporary memory cgroup */
	unsigned long limit_mb;	  /* --limit-mb: its memory limit, 0 = no cgroup */
	const char *swap_file;	  /* --swap-file: path of the temporary swap file */
	unsigned long swap_mb;	  /* --swap-mb: its size, 0 = no swap file */
	unsigned long swappiness; /* --swappiness: the cgroup's (v1 only), default 100 */
	double progress;	  /* --progress: print "# rate" lines this often, 0 = never */
};

/* State to tear down. */
struct bench_env {
	char cg_dir[PATH_MAX];	  /* created cgroup directory, "" if none */
	int cg_version;		  /* 1 or 2 */
	char swap_path[PATH_MAX]; /* swap file we created, "" if none */
	bool swap_active;	  /* swapon() succeeded on it */
	int data_fd;		  /* bench_env_data_file()'s file, if data_open */
	bool data_open;
	char sync_dir[PATH_MAX]; /* a directory on the filesystem of our files, "" if none */
};

#define BENCH_OPT_BASE 1000
/* Long options shared by every workload: add BENCH_COMMON_LONGOPTS to the option table and pass
 * codes >= BENCH_OPT_BASE to bench_common_set(). */
#define BENCH_COMMON_LONGOPTS                                                                      \
	{"seconds", required_argument, NULL, BENCH_OPT_BASE + 0},                                  \
		{"warmup", required_argument, NULL, BENCH_OPT_BASE + 1},                           \
		{"dir", required_argument, NULL, BENCH_OPT_BASE + 2},                              \
		{"cgroup-name", required_argument, NULL, BENCH_OPT_BASE + 3},                      \
		{"limit-mb", required_argument, NULL, BENCH_OPT_BASE + 4},                         \
		{"swap-file", required_argument, NULL, BENCH_OPT_BASE + 5},                        \
		{"swap-mb", required_argument, NULL, BENCH_OPT_BASE + 6},                          \
		{"swappiness", required_argument, NULL, BENCH_OPT_BASE + 7},                       \
	{                                                                                          \
		"progress", required_argument, NULL, BENCH_OPT_BASE + 8                            \
	}

/* A workload's own numeric option: --NAME META, a whole number 0..2^24, stored in *ul or *u (set
 * exactly one), @def until the command line says otherwise. --help prints it as "--NAME META
 * HELP (default DEF)", with "; 0: ZERO" inside the parentheses when @zero says what 0 means. */
struct bench_num_opt {
	const char *name;
	const char *meta;
	unsigned long *ul;
	unsigned *u;
	unsigned long def;
	const char *help;
	const char *zero;
};

/* Parses the command line: the workload's numeric options @opts (ending with name == NULL; their
 * defaults are set first), the common ones into @c (bench_common_defaults() before), and --help
 * (prints the usage, @about, every option's help, to stdout and exits 0). Returns 0, or -1 after
 * saying why on stderr (unknown option, bad value, an argument that is not an option). */
int bench_parse_args(int argc, char **argv, struct bench_common *c,
		     const struct bench_num_opt *opts, const char *about);

/* Blocks the stop signals in the calling thread (call first thing in main, before any thread
 * exists, so every thread inherits the mask) and returns them in @set. */
void bench_block_signals(sigset_t *set);

/* Whether a stop signal is pending (checked between long set-up steps). */
bool bench_interrupted(const sigset_t *set);

/* Fills @c with the defaults and the given workload defaults. */
void bench_common_defaults(struct bench_common *c, double seconds, double warmup,
			   unsigned long limit_mb, unsigned long swap_mb);

/* Applies the common option @code with @arg. Returns 0, or -1 on a bad value (after a message). */
int bench_common_set(struct bench_common *c, int code, const char *arg);

/* Creates the memory cgroup c->cgroup_name with c->limit_mb (v1 memory controller if mounted,
 * else cgroup v2 where the memory controller is enabled), without entering it. Returns 0 or
 * -errno after a message. */
int bench_cgroup_create(struct bench_env *e, const struct bench_common *c);

/* Forks the worker. In the child (moved into the cgroup, if any) it returns 0. The parent never
 * returns: it waits for the child, forwarding stop signals of @sigs to it as SIGTERM, then calls
 * bench_env_cleanup() and exits with the child's status (128 + signal if it was killed, saying
 * so). Returns -errno if the fork fails. */
int bench_spawn(struct bench_env *e, const sigset_t *sigs, const char *name);

/* Creates, formats and activates a swap file of c->swap_mb at c->swap_file. Returns 0 or -errno
 * after a message; on failure nothing is left behind. */
int bench_swap_on(struct bench_env *e, const struct bench_common *c, const sigset_t *sigs);

/* Tears down whatever bench_cgroup_create(), bench_swap_on() and bench_env_data_file() set up,
 * then bench_settle()s, so that what the teardown left to the filesystem (the blocks of the
 * files it freed, discarded at the next journal commit on a filesystem mounted with discard) is
 * done before the next run starts. Idempotent. Called by the parent of bench_spawn(), or by a
 * process that never spawned. */
void bench_env_cleanup(struct bench_env *e);

/* Creates an unlinked file of @mb MiB of non-zero data in @dir, flushed to disk and dropped from
 * the page cache. Returns its fd (O_RDWR) or -errno after a message. */
int bench_data_file(const char *dir, unsigned long mb, const sigset_t *sigs);

/* bench_data_file() in c->dir, owned by @e: closed by bench_env_cleanup() (the worker closes its
 * own copy), so that its blocks are freed, and their discard done, before the next run. */
int bench_env_data_file(struct bench_env *e, const struct bench_common *c, unsigned long mb,
			const sigset_t *sigs);

/* Makes the state every run starts from the same: syncfs() of the filesystem of @e's files
 * (e->sync_dir), so that no writeback, journal commit or discard from the set-up (or from an
 * earlier run) runs during the measured phase. Call right before bench_spawn(). Returns the
 * milliseconds it took (printed by the workloads as settle_ms). */
double bench_settle(struct bench_env *e);

/* KiB of the first @len bytes of file @fd in the page cache (mincore() of a mapping), -1 if it
 * cannot be told. */
long bench_file_cached_kb(int fd, size_t len);

/* Prints a line and flushes stdout. */
void bench_phase(const char *phase);

/* Adds @n to @c, a counter of the calling thread: relaxed, nothing is ordered by it. */
static inline void bench_count(struct bench_counter *c, unsigned long n)
{
	atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

/* Whether @stop is set, checked by a thread between its rounds. */
static inline bool bench_stopped(const atomic_bool *stop)
{
	return atomic_load_explicit(stop, memory_order_relaxed);
}

/* Sum of @n counters. */
unsigned long bench_sum(struct bench_counter *c, unsigned n);

/* Paces a loop at @rate operations per second, sleeping once per batch of operations. A loop that
 * falls behind (a slow operation, a busy CPU) runs flat out and never makes up more than one batch,
 * so its achieved rate shows what it could do. Rate 0: no pacing. */
struct bench_pace {
	uint64_t next_ns, batch_ns;
	unsigned batch, n;
};

void bench_pace_init(struct bench_pace *p, unsigned long rate);
void bench_pace_tick(struct bench_pace *p);

/* A workload thread: its index among the threads of its kind and the workload's shared state. */
struct bench_worker {
	pthread_t tid;
	void *sh;
	unsigned index;
};

/* The mmap_lock writer of several workloads: a thread (struct bench_threads .fn, with this as its
 * .sh) that maps and unmaps @pages anonymous pages until @stop, at @rate pairs per second (0: flat
 * out), counting the pairs in counts[its index]. */
struct bench_mmap_writer {
	const atomic_bool *stop;
	size_t pages;
	unsigned long rate;
	struct bench_counter *counts;
};

void *bench_mmap_thread(void *arg);

/* Counter sets a workload reads at the edges of the measured phase: set 0 its rounds, set 1 its
 * writers' operations, set 2 one more (may be empty). */
struct bench_counters {
	struct bench_counter *c;
	unsigned n;
};

/* What the measured phase saw: the growth of each counter set, its length, the process's faults. */
struct bench_measure {
	unsigned long count[3];
	uint64_t ns;
	long minflt, majflt;
	double utime, stime; /* the worker's CPU seconds in the measured phase (all its threads) */
};

/* Runs the protocol's phases with the threads running: "# phase warmup", c->warmup seconds,
 * "# phase measure", c->seconds seconds (read into @m), "# phase end". With c->progress, every
 * that many seconds of both phases also a line "# rate phase=P t=S rounds_per_s=R" (set 0's rate
 * over the last step; the driver ignores them): to see whether the warm-up reached a steady
 * state. Returns 0, or the stop signal that cut it short (then @m is incomplete). */
int bench_measure(const sigset_t *sigs, const struct bench_common *c,
		  const struct bench_counters k[3], struct bench_measure *m);

/* One kind of workload thread: how many, and what they run (with their struct bench_worker, whose
 * sh is @sh, or bench_run()'s when NULL). */
struct bench_threads {
	unsigned n;
	void *(*fn)(void *);
	void *sh;
};

/* Starts the threads of @t[0..kinds), each with its struct bench_worker (@sh and its index among
 * its kind), runs the protocol's phases (bench_measure(), into @m) once all started, then sets
 * @stop and joins them. Returns 0, the stop signal that cut the phases short, or -1 after saying
 * on stderr (prefixed @name) that memory ran out or a thread could not be created. */
int bench_run(const sigset_t *sigs, const struct bench_common *c, void *sh, atomic_bool *stop,
	      const struct bench_threads *t, unsigned kinds, const struct bench_counters k[3],
	      struct bench_measure *m, const char *name);

/* Counter set @k of @m per second. */
double bench_rate(const struct bench_measure *m, unsigned k);

/* Prints the head of the "result:" line (pid, rounds, elapsed_s, rounds_per_s, writer_ops_per_s,
 * minflt, majflt, utime_s, stime_s) without a newline; the workload adds its own " key=value"
 * pairs, then bench_result_end() the process's totals and the newline. */
void bench_result(const struct bench_measure *m);
void bench_result_end(void);

/* The exit status of a workload that did not finish (@sig: the stop signal that ended it, or 0 or
 * -1 after a failure already reported): says so for a signal, 128 + @sig, else 1. */
int bench_failed(const char *name, int sig);

/* A small fast PRNG (xorshift64*), per thread. */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

#endif
