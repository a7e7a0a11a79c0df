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

int main(void)
{
	RUN(test_parses_counts_and_start);
	RUN(test_names_with_spaces_and_parentheses);
	RUN(test_kernel_threads_are_flagged);
	RUN(test_truncated_or_garbled_text_is_refused);
	RUN(test_final_count_of_an_exited_process);
	return check_summary();
}
