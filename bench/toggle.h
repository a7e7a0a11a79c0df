/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fast toggle of the paired benchmark's own BPF loaders (bench_inject, bench_bpf_floor with
 * --toggle): the programs stay loaded, and each line "on" or "off" on standard input attaches or
 * detaches every one of them (links made and destroyed: a detached program costs nothing, its
 * tracepoint's static key off when it was the only user); "ok" is printed once done. Standard
 * input's end (or SIGINT/SIGTERM) ends the loop. bench/paired.py switches in milliseconds this
 * way, where starting and stopping a daemon takes a second or more.
 */
#ifndef BENCH_TOGGLE_H
#define BENCH_TOGGLE_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Blocks SIGINT and SIGTERM, kept in @set: the loader then waits for one (bench_wait_stop) or,
 * toggling, lets one end it (bench_toggle). */
static inline void bench_block_stop(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigprocmask(SIG_BLOCK, set, NULL);
}

/* Prints "ready" and waits for SIGINT or SIGTERM (blocked in @set). */
static inline void bench_wait_stop(const sigset_t *set)
{
	int sig;

	printf("ready\n");
	fflush(stdout);
	sigwait(set, &sig);
}

/* Runs the loop; @set(@ctx, on) attaches or detaches, returning 0 or a negative errno. */
static inline int bench_toggle_loop(int (*set)(void *ctx, bool on), void *ctx)
{
	char line[64];
	bool on = false;

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		bool want = !strncmp(line, "on", 2);
		int err = 0;

		if (!want && strncmp(line, "off", 3))
			continue;
		if (want != on)
			err = set(ctx, want);
		if (err) {
			fprintf(stderr, "toggle %s: %s\n", want ? "on" : "off", strerror(-err));
			return 1;
		}
		on = want;
		printf("ok\n");
		fflush(stdout);
	}
	if (on)
		set(ctx, false);
	return 0;
}

/* bench_toggle_loop() with the stop signals of @set let through: one ends the process, and the
 * kernel detaches what it holds. */
static inline int bench_toggle(const sigset_t *set, int (*fn)(void *ctx, bool on), void *ctx)
{
	sigprocmask(SIG_UNBLOCK, set, NULL);
	return bench_toggle_loop(fn, ctx);
}

#endif
