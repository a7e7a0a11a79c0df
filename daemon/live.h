/*
 * The live pipeline, shared by the daemon and `mmlockd record`: the perf rings as the record
 * source (sampler.c), the ordering queue (order.c), the host with its window clock and sinks
 * (host.c), and the one event loop that drives them. The loop is a table of {fd, handler}: the
 * signalfd, a 100 ms timer, the rings, the collectors' own fds (mm_host_watch), and whatever
 * the command adds (record's child and duration). Each round drains every ring into the queue,
 * feeds the host the records older than the previous round's start, and advances the window clock
 * to that horizon; once a second it runs the collectors' tick and the command's per-second hook
 * (publish, watchdog).
 */
#ifndef MM_LIVE_H
#define MM_LIVE_H

#include <stdint.h>

#include "config.h"
#include "host.h"
#include "proctable.h"

struct mm_live;
struct mm_symbols;

/* What a handler tells the loop: go on, or stop it (drain, close the window, return). */
enum { MM_LIVE_CONTINUE = 0, MM_LIVE_STOP = 1 };

/* A handler for a readable fd; returns MM_LIVE_CONTINUE, MM_LIVE_STOP or -errno (fatal, logged
 * by the handler). */
typedef int (*mm_live_handler)(void *ctx, int fd);

/* The command's part in the loop. Every hook is optional. */
struct mm_live_hooks {
	void (*second)(void *ctx); /* once a second, after the collectors' tick */
	void (*reload)(void *ctx); /* SIGHUP */
	/* The open tracepoint and task streams, as registered (for the recorder). */
	void (*stream)(void *ctx, unsigned index, bool is_task, uint64_t sample_type,
		       const char *system, const char *name, const char *format);
	void *ctx;
};

/* Blocks SIGTERM/SIGINT/SIGHUP (before any thread starts, so only the loop's signalfd sees
 * them), measures the clock offset and loads the kernel symbols. Returns 0 and *ret, or -errno
 * (logged). */
int mm_live_new(const struct mm_config *cfg, struct mm_live **ret);
void mm_live_free(struct mm_live *l); /* accepts NULL */

/* Kernel symbols (owned by @l), the wall time the run started, the clock offset. */
const struct mm_symbols *mm_live_symbols(const struct mm_live *l);
uint64_t mm_live_start_ms(const struct mm_live *l);
int64_t mm_live_mono_to_wall_ms(const struct mm_live *l);

/* Creates the host (@lookup/@lookup_ctx identify processes, NULL: /proc; @tap/@tap_ctx see the
 * record stream, may be NULL), opens one perf stream per tracepoint the collectors want (a
 * missing one only fails the collectors that need it), starts the collectors and enables
 * sampling. Returns 0 or -errno (logged). */
int mm_live_open(struct mm_live *l, const struct mm_live_hooks *hooks, mm_proc_lookup_fn lookup,
		 void *lookup_ctx, const struct mm_tap *tap, void *tap_ctx);

/* The host, after mm_live_open(). */
struct mm_host *mm_live_host(struct mm_live *l);

/* Adds @fd to the loop's table (not owned). Returns 0 or -errno. */
int mm_live_watch(struct mm_live *l, int fd, mm_live_handler fn, void *ctx);

/* Runs the loop until a signal or a handler stops it, then drains the rings, finishes the
 * collectors and closes the open window (to the sinks). Returns 0 or -errno (logged). */
int mm_live_run(struct mm_live *l);

#endif
