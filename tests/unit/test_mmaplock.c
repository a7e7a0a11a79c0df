/*
 * The mmaplock collector driven through the host with hand-built records: what each event
 * sequence must count, per process and per window, including the cases that must not be counted
 * (spinning contention, releases with no acquisition, a thread that exited mid-wait) and pid
 * reuse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "formats.h"
#include "host.h"
#include "records.h"

enum { FAULT, START, ACQ, REL, CB, NTP };

static uint64_t next_start_ms = 1000;
static int lookup_fails;

/* Each new lookup reports a later start time, like a new process would have. */
static int lookup(void *ctx, uint32_t pid, struct mm_proc_ident *ret)
{
	if (lookup_fails)
		return -ENOENT;
	memset(ret, 0, sizeof(*ret));
	ret->start_ms = next_start_ms;
	snprintf(ret->comm, sizeof(ret->comm), "p%u", pid);
	return 0;
}

static void setup(struct rec_fx *f)
{
	static const char *const fmts[NTP] = {fmt_page_fault_user, fmt_mmap_lock_start_locking,
					      fmt_mmap_lock_acquire_returned,
					      fmt_mmap_lock_released, fmt_contention_begin};
	static const char *const sys[NTP] = {"exceptions", "mmap_lock", "mmap_lock", "mmap_lock",
					     "lock"};
	next_start_ms = 1000;
	lookup_fails = 0;
	rec_fx_new(f, "mmaplock", lookup, NULL, 0);
	f->task = rec_add_streams(f->h, f->tep, NTP, fmts, sys, f->ev, f->stream, REC_SAMPLE_TYPE,
				  -1, 0);
	mm_host_start(f->h);
}

static void ev(struct rec_fx *f, int tp, uint32_t pid, uint32_t tid, uint64_t t,
	       const struct rec_field *fields, unsigned n)
{
	struct rec r;
	mm_host_record(f->h, f->stream[tp], rec_sample(&r, f->ev[tp], pid, tid, t, fields, n));
}

#define MM 0xffff888000001000ull

static void start(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, int write)
{
	struct rec_field v[] = {{"mm", MM}, {"write", (uint64_t)write}};
	ev(f, START, pid, tid, t, v, 2);
}

static void acquired(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, int write, int ok)
{
	struct rec_field v[] = {{"mm", MM}, {"write", (uint64_t)write}, {"success", (uint64_t)ok}};
	ev(f, ACQ, pid, tid, t, v, 3);
}

static void released(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, int write)
{
	struct rec_field v[] = {{"mm", MM}, {"write", (uint64_t)write}};
	ev(f, REL, pid, tid, t, v, 2);
}

static void contention(struct rec_fx *f, uint32_t pid, uint32_t tid, uint64_t t, unsigned flags)
{
	struct rec_field v[] = {{"lock_addr", MM + 0x78}, {"flags", flags}};
	ev(f, CB, pid, tid, t, v, 2);
}

static const struct mm_snap_proc *proc(const struct mm_snapshot *s, int32_t pid)
{
	return mm_snapshot_find(s, pid);
}

static void test_faults_are_counted_per_process(void)
{
	struct rec_fx f;
	setup(&f);
	for (int i = 0; i < 5; i++)
		ev(&f, FAULT, 10, 10 + (uint32_t)(i % 2), 100 + (uint64_t)i, NULL, 0);
	ev(&f, FAULT, 20, 21, 200, NULL, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 5000);
	CHECK(proc(s, 10) && proc(s, 20));
	CHECK_U64(proc(s, 10)->window->faults, 5);
	CHECK_U64(proc(s, 20)->window->faults, 1);
	CHECK_U64(s->all_window.faults, 6);
	CHECK_STR(proc(s, 10)->comm, "p10");
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_contended_write_wait_and_hold_are_timed(void)
{
	struct rec_fx f;
	setup(&f);
	start(&f, 10, 11, 1000, 1);
	contention(&f, 10, 11, 1100, 1u << 2); /* rwsem, write */
	acquired(&f, 10, 11, 5000, 1, 1);
	released(&f, 10, 11, 7500, 1);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	const struct mm_snap_proc *p = proc(s, 10);
	CHECK(p != NULL);
	CHECK_U64(p->window->mmap_lock_write, 1);
	CHECK_U64(p->window->mmap_lock_read, 0);
	CHECK_U64(p->window->mmap_lock_waits, 1);
	CHECK_U64(p->window->mmap_lock_wait_ns, 4000);
	CHECK_U64(p->window->mmap_lock_contended, 1);
	CHECK_U64(p->window->mmap_lock_write_hold_ns, 2500);
	/* 4000 ns lies in bucket 11: [2048, 4096) */
	unsigned wait = MM_HIST_INDEX(mmap_lock_wait_hist);
	CHECK_U64(mm_snap_proc_hist(p, false, wait)->bucket[11], 1);
	CHECK_U64(mm_snap_proc_hist(p, true, wait)->bucket[11], 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_spinning_contention_is_not_an_mmap_lock_contention(void)
{
	struct rec_fx f;
	setup(&f);
	start(&f, 10, 11, 1000, 0);
	contention(&f, 10, 11, 1100, 1u << 0); /* the rwsem's wait_lock spinlock */
	acquired(&f, 10, 11, 1200, 0, 1);
	contention(&f, 10, 11, 1300, 1u << 1); /* after the acquisition: not ours */
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_contended, 0);
	CHECK_U64(proc(s, 10)->window->mmap_lock_waits, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_read, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_trylocks_count_but_are_not_waits(void)
{
	struct rec_fx f;
	setup(&f);
	acquired(&f, 10, 11, 100, 0, 1);
	acquired(&f, 10, 11, 200, 0, 0);
	acquired(&f, 10, 12, 300, 1, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_read, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_trylock_fail, 2);
	CHECK_U64(proc(s, 10)->window->mmap_lock_waits, 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_downgrade_ends_the_write_hold(void)
{
	struct rec_fx f;
	setup(&f);
	acquired(&f, 10, 11, 1000, 1, 1);
	acquired(&f, 10, 11, 1600, 0, 1); /* mmap_write_downgrade */
	released(&f, 10, 11, 9000, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_write_hold_ns, 600);
	CHECK_U64(proc(s, 10)->window->mmap_lock_write, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_read, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_fork_holds_two_mmap_locks_for_write_at_once(void)
{
	struct rec_fx f;
	setup(&f);
	const uint64_t parent = MM, child = MM + 0x1000;
	struct rec_field a1[] = {{"mm", parent}, {"write", 1}, {"success", 1}};
	struct rec_field a2[] = {{"mm", child}, {"write", 1}, {"success", 1}};
	struct rec_field r2[] = {{"mm", child}, {"write", 1}};
	struct rec_field r1[] = {{"mm", parent}, {"write", 1}};
	ev(&f, ACQ, 10, 10, 1000, a1, 3);
	ev(&f, ACQ, 10, 10, 1100, a2, 3);
	ev(&f, REL, 10, 10, 1400, r2, 2);
	ev(&f, REL, 10, 10, 2000, r1, 2);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_write, 2);
	CHECK_U64(proc(s, 10)->window->mmap_lock_write_hold_ns, 300 + 1000);
	for (size_t i = 0; i < s->nglobals; i++)
		CHECK_U64(s->globals[i].total, 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static uint64_t global(const struct mm_snapshot *s, const char *name)
{
	for (size_t i = 0; i < s->nglobals; i++)
		if (!strcmp(s->globals[i].name, name))
			return s->globals[i].total;
	return UINT64_MAX;
}

static void test_unpaired_events_are_counted_not_guessed(void)
{
	struct rec_fx f;
	setup(&f);
	released(&f, 10, 11, 500, 1); /* lock taken before we started */
	start(&f, 10, 12, 600, 0);
	struct rec r;
	/* Thread 12 exits mid-wait (its acquisition was lost): the wait is forgotten. */
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 10, 12, 650));
	acquired(&f, 10, 12, 700, 0, 1);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(global(s, "write_release_without_acquire"), 1);
	CHECK_U64(proc(s, 10)->window->mmap_lock_write_hold_ns, 0);
	CHECK_U64(proc(s, 10)->window->mmap_lock_waits, 0);
	CHECK_U64(proc(s, 10)->window->mmap_lock_read, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_pid_reuse_makes_two_processes(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_FORK, 42, 42, 10));
	ev(&f, FAULT, 42, 42, 20, NULL, 0);
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 42, 42, 30));
	next_start_ms = 2000; /* the next process with pid 42 started later */
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_FORK, 42, 42, 40));
	mm_host_record(f.h, f.task, rec_comm(&r, 42, 42, "second", 41));
	ev(&f, FAULT, 42, 42, 50, NULL, 0);
	ev(&f, FAULT, 42, 43, 60, NULL, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	unsigned n = 0;
	uint64_t first = 0, second = 0;
	for (size_t i = 0; i < s->nprocs; i++) {
		if (s->procs[i].pid != 42)
			continue;
		n++;
		if (s->procs[i].exited) {
			first = s->procs[i].window->faults;
			CHECK_U64(s->procs[i].start_ms, 1000);
		} else {
			second = s->procs[i].window->faults;
			CHECK_U64(s->procs[i].start_ms, 2000);
			CHECK_STR(s->procs[i].comm, "second");
		}
	}
	CHECK_U64(n, 2);
	CHECK_U64(first, 1);
	CHECK_U64(second, 2);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_late_events_of_an_exited_process_stay_with_it(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	ev(&f, FAULT, 42, 42, 20, NULL, 0);
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 42, 42, 30));
	lookup_fails = 1;		/* the process is gone from /proc */
	acquired(&f, 42, 44, 40, 1, 1); /* its last thread's exit_mmap */
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(s->nprocs, 1);
	CHECK_U64(s->procs[0].window->faults, 1);
	CHECK_U64(s->procs[0].window->mmap_lock_write, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_windows_roll_into_totals_and_exited_processes_go(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	ev(&f, FAULT, 10, 10, 1, NULL, 0);
	ev(&f, FAULT, 20, 20, 2, NULL, 0);
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 20, 20, 3));
	mm_host_record(f.h, f.stream[FAULT], rec_lost(&r, 7, 4));
	struct mm_snapshot *w = mm_host_close_window(f.h, 10000);
	CHECK_U64(w->window_end_ms, 10000);
	CHECK_U64(w->nprocs, 2);
	CHECK_U64(w->events[f.stream[FAULT]].window_lost, 7);
	CHECK_U64(w->events[f.stream[FAULT]].window_samples, 2);
	mm_snapshot_unref(w);
	ev(&f, FAULT, 10, 10, 5, NULL, 0);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 11000);
	CHECK_U64(s->nprocs, 1); /* pid 20 was stored and forgotten */
	CHECK_U64(s->procs[0].window->faults, 1);
	CHECK_U64(s->procs[0].total->faults, 2);
	CHECK_U64(s->all_total.faults, 3);
	CHECK_U64(s->window_start_ms, 10000);
	CHECK_U64(s->events[f.stream[FAULT]].lost, 7);
	CHECK_U64(s->events[f.stream[FAULT]].window_lost, 0);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static void test_missing_required_tracepoint_fails_only_that_collector(void)
{
	struct mm_config cfg;
	mm_config_defaults(&cfg);
	snprintf(cfg.collectors, sizeof(cfg.collectors), "mmaplock,vmstat");
	struct mm_host *h = mm_host_new(&cfg, lookup, NULL, 0);
	mm_host_add_tp(h, "exceptions", "page_fault_user", NULL, 0, "the kernel has no tracepoint");
	mm_host_add_task_stream(h, REC_TASK_TYPE, NULL);
	mm_host_start(h);
	struct mm_snapshot *s = mm_host_snapshot(h, 1);
	int seen = 0;
	for (size_t i = 0; i < s->ncollectors; i++) {
		if (!strcmp(s->collectors[i].name, "mmaplock")) {
			seen++;
			CHECK(s->collectors[i].state == MM_COLLECTOR_FAILED);
			CHECK_CONTAINS(s->collectors[i].reason, "page_fault_user");
		}
		if (!strcmp(s->collectors[i].name, "vmstat")) {
			seen++;
			CHECK(s->collectors[i].state == MM_COLLECTOR_RUNNING);
		}
	}
	CHECK_U64(seen, 2);
	mm_snapshot_unref(s);
	mm_host_free(h);
}

int main(void)
{
	RUN(test_faults_are_counted_per_process);
	RUN(test_contended_write_wait_and_hold_are_timed);
	RUN(test_spinning_contention_is_not_an_mmap_lock_contention);
	RUN(test_trylocks_count_but_are_not_waits);
	RUN(test_downgrade_ends_the_write_hold);
	RUN(test_fork_holds_two_mmap_locks_for_write_at_once);
	RUN(test_unpaired_events_are_counted_not_guessed);
	RUN(test_pid_reuse_makes_two_processes);
	RUN(test_late_events_of_an_exited_process_stay_with_it);
	RUN(test_windows_roll_into_totals_and_exited_processes_go);
	RUN(test_missing_required_tracepoint_fails_only_that_collector);
	return check_summary();
}
