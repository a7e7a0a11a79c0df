/*
 * The faults collector driven through the host with hand-built records and callchains: each
 * outcome from the event sequence that defines it, retries under mmap_lock, the fallback wait,
 * re-read pages, window closing rules, and attribution of acquisitions by callchain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "faults.h"
#include "formats.h"
#include "host.h"
#include "records.h"
#include "symbols.h"

enum { FAULT, START, ACQ, FF, ADD, MAP, REL, NTP };

/* Fake kernel text: one function per 0x1000 bytes. */
#define A_TRACE	   0xffffffff81001000ull /* __mmap_lock_do_trace_acquire_returned */
#define A_LOCK_MM  0xffffffff81002000ull /* lock_mm_and_find_vma */
#define A_EXC	   0xffffffff81003000ull /* exc_page_fault */
#define A_ANON	   0xffffffff81004000ull /* __vmf_anon_prepare */
#define A_HANDLE   0xffffffff81005000ull /* handle_mm_fault */
#define A_MMAP	   0xffffffff81006000ull /* vm_mmap_pgoff */
#define A_SYSCALL  0xffffffff81007000ull /* do_syscall_64 */
#define A_MPROTECT 0xffffffff81008000ull /* do_mprotect_pkey.isra.0 */
#define A_MYSTERY  0xffffffff81009000ull /* some_other_function */

static void setup(struct rec_fx *f)
{
	static const char *const fmts[NTP] = {fmt_page_fault_user,
					      fmt_mmap_lock_start_locking,
					      fmt_mmap_lock_acquire_returned,
					      fmt_mm_filemap_fault,
					      fmt_mm_filemap_add_to_page_cache,
					      fmt_mm_filemap_map_pages,
					      fmt_mmap_lock_released};
	static const char *const sys[NTP] = {"exceptions", "mmap_lock", "mmap_lock", "filemap",
					     "filemap",	   "filemap",	"mmap_lock"};
	static const struct rec_sym syms[] = {
		{A_TRACE, 'T', "__mmap_lock_do_trace_acquire_returned"},
		{A_LOCK_MM, 'T', "lock_mm_and_find_vma"},
		{A_EXC, 'T', "exc_page_fault"},
		{A_ANON, 't', "__vmf_anon_prepare"},
		{A_HANDLE, 'T', "handle_mm_fault"},
		{A_MMAP, 'T', "vm_mmap_pgoff"},
		{A_SYSCALL, 'T', "do_syscall_64"},
		{A_MPROTECT, 't', "do_mprotect_pkey.isra.0"},
		{A_MYSTERY, 't', "some_other_function"},
	};

	rec_fx_new(f, "faults", rec_lookup, syms, sizeof(syms) / sizeof(syms[0]));
	f->task = rec_add_streams(f->h, f->tep, NTP, fmts, sys, f->ev, f->stream, REC_SAMPLE_TYPE,
				  ACQ, REC_SAMPLE_TYPE_CC);
	mm_host_start(f->h);
}

static void fault(struct rec_fx *f, uint32_t tid, uint64_t t)
{
	struct rec r;
	mm_host_record(f->h, f->stream[FAULT], rec_sample(&r, f->ev[FAULT], 10, tid, t, NULL, 0));
}

static void filemap_fault(struct rec_fx *f, uint32_t tid, uint64_t t, uint64_t index)
{
	struct rec r;
	struct rec_field v[] = {{"i_ino", 77}, {"s_dev", 8}, {"index", index}};
	mm_host_record(f->h, f->stream[FF], rec_sample(&r, f->ev[FF], 10, tid, t, v, 3));
}

static void added(struct rec_fx *f, uint32_t tid, uint64_t t, uint64_t index)
{
	struct rec r;
	struct rec_field v[] = {{"i_ino", 77}, {"s_dev", 8}, {"index", index}};
	mm_host_record(f->h, f->stream[ADD], rec_sample(&r, f->ev[ADD], 10, tid, t, v, 3));
}

static void map_pages(struct rec_fx *f, uint32_t tid, uint64_t t, uint64_t first, uint64_t last)
{
	struct rec r;
	struct rec_field v[] = {
		{"i_ino", 77}, {"s_dev", 8}, {"index", first}, {"last_index", last}};
	mm_host_record(f->h, f->stream[MAP], rec_sample(&r, f->ev[MAP], 10, tid, t, v, 4));
}

static void start(struct rec_fx *f, uint32_t tid, uint64_t t)
{
	struct rec r;
	struct rec_field v[] = {{"mm", 0x1000}, {"write", 0}};
	mm_host_record(f->h, f->stream[START], rec_sample(&r, f->ev[START], 10, tid, t, v, 2));
}

/* An acquisition by the frame at @caller (with the tracing helper inside it), reached the way
 * that caller is: from a user fault's exception entry, or from a system call. */
static void acquired(struct rec_fx *f, uint32_t tid, uint64_t t, int success, uint64_t caller)
{
	struct rec r;
	struct rec_field v[] = {{"mm", 0x1000}, {"write", 0}, {"success", (uint64_t)success}};
	uint64_t ips[4] = {A_TRACE + 0x10, caller + 0x40};
	unsigned n = 2;
	if (caller == A_ANON)
		ips[n++] = A_HANDLE + 0x50;
	if (caller == A_LOCK_MM || caller == A_ANON)
		ips[n++] = A_EXC + 0x30;
	else
		ips[n++] = A_SYSCALL + 0x20;
	mm_host_record(f->h, f->stream[ACQ],
		       rec_sample_cc(&r, f->ev[ACQ], 10, tid, t, ips, n, v, 3));
}

static struct mm_proc_counts totals(struct rec_fx *f)
{
	mm_host_finish(f->h);
	struct mm_snapshot *s = mm_host_snapshot(f->h, 1);
	const struct mm_snap_proc *p = mm_snapshot_find(s, 10);
	struct mm_proc_counts st = p ? *p->window : (struct mm_proc_counts){0};
	mm_snapshot_unref(s);
	return st;
}

static void test_fault_without_fallback_is_vma(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	filemap_fault(&f, 11, 1100, 5);
	fault(&f, 11, 2000); /* closes the first */
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma, 2);
	CHECK_U64(s.faults_mmap_fallback, 0);
	rec_fx_free(&f);
}

static void test_two_attempts_on_one_page_without_fallback_is_vma_retry(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	filemap_fault(&f, 11, 1100, 5);
	filemap_fault(&f, 11, 1200, 6); /* readahead of another page does not count */
	filemap_fault(&f, 11, 90000, 5);
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma_retry, 1);
	CHECK_U64(s.faults_vma, 0);
	rec_fx_free(&f);
}

static void test_retry_completed_by_fault_around_is_vma_retry(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	map_pages(&f, 11, 1050, 0, 15); /* fault-around before the attempt: not a retry */
	filemap_fault(&f, 11, 1100, 5);
	map_pages(&f, 11, 90000, 0, 15); /* the retried attempt mapped it: patched kernel */
	fault(&f, 12, 1000);
	filemap_fault(&f, 12, 1100, 40);
	map_pages(&f, 12, 90000, 0, 15); /* another range: not this fault's page */
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma_retry, 1);
	CHECK_U64(s.faults_vma, 1);
	rec_fx_free(&f);
}

static void test_attempt_then_fallback_is_mmap_retry_with_its_wait(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	filemap_fault(&f, 11, 1100, 5);
	added(&f, 11, 1150, 5);
	acquired(&f, 11, 50000, 0, A_LOCK_MM); /* trylock failed */
	start(&f, 11, 50100);
	acquired(&f, 11, 80100, 1, A_LOCK_MM); /* waited 30 us */
	added(&f, 11, 80200, 5);	       /* the page had to be read again */
	filemap_fault(&f, 11, 80300, 5);
	acquired(&f, 11, 90000, 1, A_LOCK_MM); /* a retry under mmap_lock */
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_mmap_retry, 1);
	CHECK_U64(s.faults_mmap_fallback, 1);
	CHECK_U64(s.faults_mmap_lock_retries, 1);
	CHECK_U64(s.faults_mmap_lock_wait_ns, 30000);
	CHECK_U64(s.faults_pages_reread, 1);
	CHECK_U64(s.mmap_lock_by_fault, 2);
	rec_fx_free(&f);
}

static void test_fallback_without_attempt_is_abort_only_while_a_writer_holds_the_lock(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	/* Thread 13 of the process holds the mmap_lock for write (mprotect marking VMAs). */
	struct rec_field wv[] = {{"mm", 0x1000}, {"write", 1}, {"success", 1}};
	uint64_t wips[3] = {A_TRACE + 0x10, A_MPROTECT + 0x40, A_SYSCALL + 0x20};
	mm_host_record(f.h, f.stream[ACQ],
		       rec_sample_cc(&r, f.ev[ACQ], 10, 13, 500, wips, 3, wv, 3));
	fault(&f, 11, 1000);
	acquired(&f, 11, 3000, 1, A_LOCK_MM); /* its VMA was write-locked: abort */
	struct rec_field rv[] = {{"mm", 0x1000}, {"write", 1}};
	mm_host_record(f.h, f.stream[REL], rec_sample(&r, f.ev[REL], 10, 13, 3500, rv, 2));
	fault(&f, 12, 4000);
	acquired(&f, 12, 5000, 1, A_LOCK_MM); /* no writer: a retry or an abort, cannot tell */
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_mmap_abort, 1);
	CHECK_U64(s.faults_mmap_unknown, 1);
	CHECK_U64(s.faults_mmap_fallback, 2);
	CHECK_U64(s.faults_mmap_retry, 0);
	rec_fx_free(&f);
}

static void test_anon_prepare_trylock_is_an_attempt_not_a_fallback(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	acquired(&f, 11, 1500, 1, A_ANON); /* first touch: anon_vma prepared under mmap_lock */
	fault(&f, 12, 1000);
	acquired(&f, 12, 1500, 0, A_ANON); /* trylock failed: VM_FAULT_RETRY */
	acquired(&f, 12, 90000, 1, A_LOCK_MM);
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma, 1);
	CHECK_U64(s.faults_mmap_retry, 1);
	CHECK_U64(s.mmap_lock_by_fault_other, 1);
	CHECK_U64(s.mmap_lock_by_fault, 1);
	rec_fx_free(&f);
}

static void test_syscall_acquisition_closes_the_window(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	acquired(&f, 11, 2000, 1, A_MMAP);    /* the fault is over: the thread is in mmap() */
	acquired(&f, 11, 3000, 1, A_LOCK_MM); /* no fault window: not a fallback */
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma, 1);
	CHECK_U64(s.faults_mmap_fallback, 0);
	CHECK_U64(s.mmap_lock_by_mmap, 1);
	CHECK_U64(s.mmap_lock_by_fault, 1);
	rec_fx_free(&f);
}

static void test_kernel_mode_fault_is_not_the_user_faults_fallback(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	fault(&f, 11, 1000);
	/* 8 us later the thread, now in a system call, faults on a user buffer in kernel mode */
	struct rec_field v[] = {{"mm", 0x1000}, {"write", 0}, {"success", 1}};
	uint64_t ips[5] = {A_TRACE + 0x10, A_LOCK_MM + 0x40, A_EXC + 0x30, A_MYSTERY + 0x8,
			   A_SYSCALL + 0x20};
	mm_host_record(f.h, f.stream[ACQ],
		       rec_sample_cc(&r, f.ev[ACQ], 10, 11, 9000, ips, 5, v, 3));
	mm_host_record(f.h, f.stream[ACQ],
		       rec_sample_cc(&r, f.ev[ACQ], 10, 11, 9500, ips, 5, v, 3));
	struct mm_proc_counts s = totals(&f);
	CHECK_U64(s.faults_vma, 1);
	CHECK_U64(s.faults_mmap_fallback, 0);
	CHECK_U64(s.faults_mmap_lock_retries, 0);
	CHECK_U64(s.mmap_lock_by_fault_kernel, 2);
	CHECK_U64(s.mmap_lock_by_fault, 0);
	rec_fx_free(&f);
}

static void test_thread_exit_and_finish_close_open_windows(void)
{
	struct rec_fx f;
	struct rec r;
	setup(&f);
	fault(&f, 11, 1000);
	fault(&f, 12, 1000);
	mm_host_record(f.h, f.task, rec_task(&r, PERF_RECORD_EXIT, 10, 11, 2000));
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(mm_snapshot_find(s, 10)->window->faults_vma, 1); /* 12 still open */
	mm_snapshot_unref(s);
	struct mm_proc_counts t = totals(&f); /* finish closes 12 */
	CHECK_U64(t.faults_vma, 2);
	rec_fx_free(&f);
}

static void test_stale_window_is_closed_by_tick(void)
{
	struct rec_fx f;
	setup(&f);
	fault(&f, 11, 1000);
	fault(&f, 12, 3000000000ull); /* 3 s later, another thread */
	mm_host_tick(f.h);
	struct mm_snapshot *s = mm_host_snapshot(f.h, 1);
	CHECK_U64(mm_snapshot_find(s, 10)->window->faults_vma, 1);
	mm_snapshot_unref(s);
	rec_fx_free(&f);
}

static enum mm_lock_source src(const char *a, const char *b, const char *c)
{
	const char *frames[3] = {a, b, c};
	return mm_lock_source_of(frames, 3);
}

static void test_sources_from_callchains(void)
{
	CHECK(src("__mmap_lock_do_trace_acquire_returned", "lock_mm_and_find_vma",
		  "exc_page_fault") == MM_SRC_FAULT);
	/* do_user_addr_fault inlined away, or arm64's handler taking the lock itself */
	CHECK(src("down_read", "do_page_fault", "do_translation_fault") == MM_SRC_FAULT);
	CHECK(src("__vmf_anon_prepare", "do_anonymous_page", "exc_page_fault") ==
	      MM_SRC_FAULT_OTHER);
	CHECK(src(NULL, "vms_complete_munmap_vmas", "__vm_munmap") == MM_SRC_MUNMAP);
	CHECK(src("vms_complete_munmap_vmas", "do_vmi_align_munmap", "__do_sys_brk") == MM_SRC_BRK);
	CHECK(src("x", "do_mprotect_pkey.isra.0", "y") == MM_SRC_MPROTECT);
	CHECK(src("x", "do_mprotect_pkeyz", "y") == MM_SRC_OTHER);
	CHECK(src("dup_mmap", "copy_process", "kernel_clone") == MM_SRC_FORK);
	CHECK(src(NULL, NULL, NULL) == MM_SRC_UNKNOWN);
	/* A fault taken in kernel mode: the fault entry is called from a system call. */
	const char *kernel_fault[] = {"lock_mm_and_find_vma", "exc_page_fault",
				      "asm_exc_page_fault",   "strncpy_from_user",
				      "getname_flags",	      "__x64_sys_execve"};
	CHECK(mm_lock_source_of(kernel_fault, 6) == MM_SRC_FAULT_KERNEL);
	const char *user_fault[] = {"lock_mm_and_find_vma", "exc_page_fault", "asm_exc_page_fault",
				    NULL};
	CHECK(mm_lock_source_of(user_fault, 4) == MM_SRC_FAULT);
	const char *arm64_user[] = {"do_page_fault", "do_translation_fault", "do_mem_abort",
				    "el0_da",	     "el0t_64_sync_handler", "el0t_64_sync"};
	CHECK(mm_lock_source_of(arm64_user, 6) == MM_SRC_FAULT);
	const char *arm64_kernel[] = {"do_page_fault",	      "do_translation_fault",
				      "do_mem_abort",	      "el1_abort",
				      "el1h_64_sync_handler", "__arch_copy_from_user"};
	CHECK(mm_lock_source_of(arm64_kernel, 6) == MM_SRC_FAULT_KERNEL);
	CHECK_STR(mm_lock_source_name(MM_SRC_FAULT_OTHER), "fault_other");
	CHECK_STR(mm_lock_source_name(MM_SRC_UNKNOWN), "unknown");
}

int main(void)
{
	RUN(test_fault_without_fallback_is_vma);
	RUN(test_two_attempts_on_one_page_without_fallback_is_vma_retry);
	RUN(test_retry_completed_by_fault_around_is_vma_retry);
	RUN(test_attempt_then_fallback_is_mmap_retry_with_its_wait);
	RUN(test_fallback_without_attempt_is_abort_only_while_a_writer_holds_the_lock);
	RUN(test_anon_prepare_trylock_is_an_attempt_not_a_fallback);
	RUN(test_syscall_acquisition_closes_the_window);
	RUN(test_kernel_mode_fault_is_not_the_user_faults_fallback);
	RUN(test_thread_exit_and_finish_close_open_windows);
	RUN(test_stale_window_is_closed_by_tick);
	RUN(test_sources_from_callchains);
	return check_summary();
}
