/*
 * The fallbacks collector driven through the host with hand-built records carrying an IP: at
 * lock_mm_and_find_vma a start_locking opens a fallback and a failed attempt makes it a wait
 * (its retry's start is not another fallback); read locks fired elsewhere (a system call's, the
 * out-of-line trace helper's), write locks and successful acquisitions (when another collector
 * leaves the stream unfiltered) do not count; a kernel whose trylock traces no start is detected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "formats.h"
#include "host.h"
#include "records.h"
#include "symbols.h"

enum { START, ACQ, NTP };

#define IP_FALLBACK 0xffffffff815df083ull /* inside lock_mm_and_find_vma */
#define IP_HELPER   0xffffffff815de1b0ull /* inside __mmap_lock_do_trace_acquire_returned */
#define IP_MADVISE  0xffffffff81600040ull /* inside madvise_lock */
#define MM	    0xffff888000001000ull

static void setup(struct rec_fx *f)
{
	static const char *const fmts[NTP] = {fmt_mmap_lock_start_locking,
					      fmt_mmap_lock_acquire_returned};
	static const char *const sys[NTP] = {"mmap_lock", "mmap_lock"};
	static const struct rec_sym syms[] = {
		{0xffffffff815de000ull, 'T', "__mmap_lock_do_trace_start_locking"},
		{0xffffffff815de100ull, 'T', "__mmap_lock_do_trace_acquire_returned"},
		{0xffffffff815def90ull, 'T', "lock_mm_and_find_vma"},
		{0xffffffff815df200ull, 'T', "expand_stack"},
		{0xffffffff81600000ull, 't', "madvise_lock"},
	};

	rec_fx_new(f, "fallbacks", rec_lookup, syms, sizeof(syms) / sizeof(syms[0]));
	f->task = rec_add_streams(f->h, f->tep, NTP, fmts, sys, f->ev, f->stream,
				  REC_SAMPLE_TYPE_IP, -1, 0);
	mm_host_start(f->h);
}

static void start(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t ip, int write)
{
	struct rec r;
	struct rec_field v[] = {{"mm", MM}, {"write", (uint64_t)write}};
	mm_host_record(f->h, f->stream[START],
		       rec_sample_ip(&r, f->ev[START], pid, tid, t, ip, v, 2));
}

static void acquired(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, uint64_t ip,
		     int write, int ok)
{
	struct rec r;
	struct rec_field v[] = {{"mm", MM}, {"write", (uint64_t)write}, {"success", (uint64_t)ok}};
	mm_host_record(f->h, f->stream[ACQ], rec_sample_ip(&r, f->ev[ACQ], pid, tid, t, ip, v, 3));
}

static uint64_t global(const struct mm_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->nglobals; i++)
		if (!strcmp(s->globals[i].family, "fallbacks_events") &&
		    !strcmp(s->globals[i].name, name))
			return s->globals[i].total;
	return UINT64_MAX;
}

static bool noted(const struct mm_snapshot *s, const char *what)
{
	for (size_t i = 0; i < s->ncollectors; i++)
		if (!strcmp(s->collectors[i].name, "fallbacks"))
			return strstr(s->collectors[i].reason, what) != NULL;
	return false;
}

static void test_fallbacks_and_waits(void)
{
	struct rec_fx f;
	setup(&f);
	/* Uncontended: start, acquired. */
	start(&f, 10, 11, 1000, IP_FALLBACK, 0);
	acquired(&f, 10, 11, 3000, IP_FALLBACK, 0, 1);
	/* Contended: start, failed trylock, start (its retry), acquired after the wait. */
	start(&f, 10, 12, 10000, IP_FALLBACK, 0);
	acquired(&f, 10, 12, 10100, IP_FALLBACK, 0, 0);
	start(&f, 10, 12, 10200, IP_FALLBACK, 0);
	acquired(&f, 10, 12, 50000, IP_FALLBACK, 0, 1);
	/* The same thread's next fallback (a retry under mmap_lock, say) counts again. */
	start(&f, 10, 12, 60000, IP_FALLBACK, 0);
	/* A wait killed by a signal: start, failed, start, failed: one fallback, one wait. */
	start(&f, 10, 13, 70000, IP_FALLBACK, 0);
	acquired(&f, 10, 13, 70100, IP_FALLBACK, 0, 0);
	start(&f, 10, 13, 70200, IP_FALLBACK, 0);
	acquired(&f, 10, 13, 90000, IP_FALLBACK, 0, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_proc *p = mm_snapshot_find(s, 10);
	CHECK(p != NULL);
	if (p) {
		CHECK_U64(p->window->fallback_locks, 4);
		CHECK_U64(p->window->fallback_lock_waits, 2);
	}
	CHECK_U64(global(s, "unattributed"), 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_a_trylock_without_start_is_detected(void)
{
	struct rec_fx f;
	setup(&f);
	/* 6.12's shape: the failed trylock comes first, then start and acquired. */
	acquired(&f, 40, 41, 1000, IP_FALLBACK, 0, 0);
	start(&f, 40, 41, 1100, IP_FALLBACK, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(global(s, "unattributed"), 1);
	CHECK(noted(s, "start_locking"));
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_other_read_locks_and_write_locks_are_not_fallbacks(void)
{
	struct rec_fx f;
	setup(&f);
	/* madvise's read lock, inlined trace: not a fault. */
	start(&f, 20, 20, 1000, IP_MADVISE, 0);
	acquired(&f, 20, 20, 2000, IP_MADVISE, 0, 1);
	/* Through the out-of-line helper: cannot tell, counted as unattributed. */
	start(&f, 20, 20, 3000, IP_HELPER - 0x100, 0);
	acquired(&f, 20, 20, 4000, IP_HELPER, 0, 1);
	/* A write lock fired from the fault path (the stack-expansion upgrade) when the stream
	 * is unfiltered (another collector wants every event). */
	start(&f, 20, 21, 5000, IP_FALLBACK, 1);
	acquired(&f, 20, 21, 6000, IP_FALLBACK, 1, 1);
	/* No IP (no symbol): unattributed too. */
	start(&f, 20, 21, 7000, 0, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_proc *p = mm_snapshot_find(s, 20);
	CHECK(!p || (p->window->fallback_locks == 0 && p->window->fallback_lock_waits == 0));
	CHECK_U64(global(s, "unattributed"), 2); /* the helper's start, the start without IP */
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_a_kernel_tracing_only_through_the_helper_is_detected(void)
{
	struct rec_fx f;
	setup(&f);
	/* Where the fault path is inlined, helper samples (system calls) are normal. */
	start(&f, 50, 51, 1, IP_FALLBACK, 0);
	for (uint64_t i = 0; i < 2000; i++)
		start(&f, 50, 51, 10 + i, IP_HELPER - 0x100, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK(!noted(s, "helper"));
	mm_snapshot_unref(s);
	rec_fx_free(&f);
	/* 999 helper samples and nothing else: too early to say. At 1000: said. */
	setup(&f);
	for (uint64_t i = 0; i < 999; i++)
		start(&f, 50, 51, 10 + i, IP_HELPER - 0x100, 0);
	s = mm_host_snapshot(f.h, 1);
	CHECK(!noted(s, "helper"));
	mm_snapshot_unref(s);
	start(&f, 50, 51, 5000, IP_HELPER - 0x100, 0);
	s = mm_host_snapshot(f.h, 1);
	CHECK(noted(s, "helper"));
	CHECK_U64(global(s, "unattributed"), 1000);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_state_of_an_exited_thread_is_dropped(void)
{
	struct rec_fx f;
	setup(&f);
	start(&f, 30, 31, 1000, IP_FALLBACK, 0);
	acquired(&f, 30, 31, 1100, IP_FALLBACK, 0, 0);
	struct rec r;
	mm_host_record(f.h, mm_host_nstreams(f.h) - 1,
		       rec_task(&r, PERF_RECORD_EXIT, 30, 31, 1500));
	/* Thread id 31 reused by a new thread: its start is a new fallback, not a retry. */
	start(&f, 30, 31, 2000, IP_FALLBACK, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_proc *p = mm_snapshot_find(s, 30);
	CHECK(p != NULL);
	if (p) {
		CHECK_U64(p->window->fallback_locks, 2);
		CHECK_U64(p->window->fallback_lock_waits, 1);
	}
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

int main(void)
{
	RUN(test_fallbacks_and_waits);
	RUN(test_a_trylock_without_start_is_detected);
	RUN(test_other_read_locks_and_write_locks_are_not_fallbacks);
	RUN(test_a_kernel_tracing_only_through_the_helper_is_detected);
	RUN(test_state_of_an_exited_thread_is_dropped);
	return check_summary();
}
