/*
 * The totals collector's pure parts: reading /proc/PID/stat lines (names with spaces and
 * parentheses, kernel threads, truncated text) and settling a process that left /proc from its
 * last reading, its dead threads' share and its threads' exit messages.
 */
#include <errno.h>
#include <stdio.h>

#include "check.h"
#include "proctable.h"
#include "totals.h"

/* Fields 1..22 of a real line (kernel 6.18), with minflt 1234, majflt 56, starttime 98765. */
#define TAIL                                                                                       \
	" S 1 1234 1234 0 -1 4194560 1234 7 56 0 10 20 0 0 20 0 3 0 98765 123456789 300 "          \
	"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"

static void test_parses_counts_and_start(void)
{
	struct mm_pid_stat st;
	CHECK(mm_proc_parse_stat("4242 (bench_swapin)" TAIL "\n", &st) == 0);
	CHECK_U64(st.minflt, 1234);
	CHECK_U64(st.majflt, 56);
	CHECK_U64(st.start_ticks, 98765);
	CHECK_STR(st.comm, "bench_swapin");
	CHECK(!st.kthread);
}

static void test_names_with_spaces_and_parentheses(void)
{
	struct mm_pid_stat st;
	CHECK(mm_proc_parse_stat("77 (a) b (c) d)" TAIL, &st) == 0);
	CHECK_STR(st.comm, "a) b (c) d");
	CHECK_U64(st.minflt, 1234);
	CHECK_U64(st.start_ticks, 98765);
}

static void test_kernel_threads_are_flagged(void)
{
	struct mm_pid_stat st;
	/* flags 0x208040 = PF_KTHREAD | PF_NOFREEZE | PF_FORKNOEXEC */
	CHECK(mm_proc_parse_stat("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 "
				 "3 0 0",
				 &st) == 0);
	CHECK(st.kthread);
	CHECK_U64(st.start_ticks, 3);
}

static void test_truncated_or_garbled_text_is_refused(void)
{
	struct mm_pid_stat st = {.minflt = 99};
	CHECK(mm_proc_parse_stat("", &st) == -EINVAL);
	CHECK(mm_proc_parse_stat("12 (x", &st) == -EINVAL);
	CHECK(mm_proc_parse_stat("12 (x) S 1 2 3", &st) == -EINVAL);
	CHECK(mm_proc_parse_stat("12 (x) S 1 1 1 0 -1 4194560 12a 0 0", &st) == -EINVAL);
	CHECK_U64(st.minflt, 99); /* untouched on failure */
	/* Every prefix of a good line fails cleanly until field 22 is complete. */
	char line[] = "4242 (w)" TAIL;
	size_t need = strstr(line, "98765") - line + 5;
	for (size_t n = 0; n < sizeof(line); n++) {
		char buf[sizeof(line)];
		memcpy(buf, line, n);
		buf[n] = '\0';
		int r = mm_proc_parse_stat(buf, &st);
		if (n < need - 4)
			CHECK(r == -EINVAL);
		else if (n >= need)
			CHECK(r == 0 && st.start_ticks == 98765);
	}
}

static void test_final_count_of_an_exited_process(void)
{
	/* Every thread's exit message arrived: exactly what they add up to. */
	CHECK_U64(mm_totals_final(1000, 0, 1012), 1012);
	/* A process that was there before mmlockd: its dead threads' share plus the exits. */
	CHECK_U64(mm_totals_final(5000, 4000, 1010), 5010);
	/* Exit messages lost (socket overflow): never below the last reading. */
	CHECK_U64(mm_totals_final(1000, 0, 10), 1000);
	/* No messages at all (no taskstats): the last reading. */
	CHECK_U64(mm_totals_final(777, 0, 0), 777);
}

/* Replays the exit messages of two processes that had pid 24423 in one window (a churn wave of
 * 10 000 processes x 4 threads under pid_max 32768, 8 s apart), in the order the kernel sends
 * them: every message of the first, its last task's (AGROUP) last, then the second's. */
static void test_exits_of_a_reused_pid_are_two_processes(void)
{
	struct mm_totals_exits x = {0};
	CHECK(!mm_totals_exits_add(&x, 10, 0, 1796673222, false));
	CHECK(!mm_totals_exits_add(&x, 11, 1, 1796673222, false));
	CHECK(!mm_totals_exits_add(&x, 12, 0, 1796673222, false));
	CHECK(!mm_totals_exits_add(&x, 45, 0, 1796673222, true));
	CHECK(x.ended);
	CHECK_U64(x.min, 78);
	CHECK_U64(x.maj, 1);
	struct mm_totals_exits first = x;
	/* The second process's first message: the first process is over, its sum kept apart. */
	CHECK(mm_totals_exits_add(&x, 9, 0, 1796673230, false));
	CHECK(!x.ended);
	CHECK_U64(x.min, 9);
	CHECK_U64(x.maj, 0);
	CHECK_U64(x.btime_s, 1796673230);
	CHECK(!mm_totals_exits_add(&x, 66, 2, 1796673230, true));
	CHECK_U64(x.min, 75);
	CHECK_U64(x.maj, 2);
	CHECK_U64(first.btime_s, 1796673222);
	/* Threads start after their process: the earliest begin time is the process's. */
	struct mm_totals_exits y = {0};
	mm_totals_exits_add(&y, 1, 0, 1796673223, false);
	mm_totals_exits_add(&y, 1, 0, 1796673222, true);
	CHECK_U64(y.btime_s, 1796673222);
}

/* The second process of pid 24423 began 8 s after the first, and its exit is settled at the tick
 * that closes the first one's window, before its own FORK record is in: only the first has an
 * entry. The begin time's range must rule that entry out (it started 8 s too early), so the
 * counts wait for the right one instead of going to the first. */
static void test_start_range_of_an_exit_rules_out_an_earlier_process(void)
{
	uint64_t lo = mm_totals_start_lo_ms(0, 1796673230), hi = mm_totals_start_ms(0, 1796673230);
	CHECK_U64(lo, 1796673229000ull);
	CHECK_U64(hi, 1796673231000ull);
	uint64_t first = 1796673222054ull, second = 1796673230010ull;
	CHECK(first < lo);
	CHECK(second >= lo && second <= hi);
	/* A /proc start is exact: both bounds. */
	CHECK_U64(mm_totals_start_lo_ms(second, 1796673230), second);
	CHECK_U64(mm_totals_start_ms(second, 1796673230), second);
	CHECK_U64(mm_totals_start_lo_ms(0, 0), 0); /* nothing known: no bound */
}

int main(void)
{
	RUN(test_parses_counts_and_start);
	RUN(test_names_with_spaces_and_parentheses);
	RUN(test_kernel_threads_are_flagged);
	RUN(test_truncated_or_garbled_text_is_refused);
	RUN(test_final_count_of_an_exited_process);
	RUN(test_exits_of_a_reused_pid_are_two_processes);
	RUN(test_start_range_of_an_exit_rules_out_an_earlier_process);
	return check_summary();
}
