/*
 * A minimal test harness for the unit tests: each test file defines test functions, runs them with
 * RUN(fn), and returns check_summary() from main. A failed CHECK prints file:line and the
 * expression and marks the current test failed; the summary line is "N passed, M failed".
 */
#ifndef MM_CHECK_H
#define MM_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed, check_cur_failed;

/* Says where a check failed and what it found (@fmt and its arguments), and marks the current
 * test failed. */
static inline void __attribute__((format(printf, 3, 4)))
check_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	check_cur_failed = 1;
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			check_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                 \
	} while (0)

#define CHECK_U64(a, b)                                                                            \
	do {                                                                                       \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
		if (a_ != b_)                                                                      \
			check_fail(__FILE__, __LINE__,                                             \
				   "%s == %" PRIu64 ", expected %s == %" PRIu64, #a, a_, #b, b_);  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                                             \
			check_fail(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a,        \
				   a_ ? a_ : "(null)", b_ ? b_ : "(null)");                        \
	} while (0)

/* Whether @needle occurs in @hay. */
#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_))                                                        \
			check_fail(__FILE__, __LINE__, "\"%s\" not found in %s", n_, #hay);        \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		check_cur_failed = 0;                                                              \
		fn();                                                                              \
		if (check_cur_failed) {                                                            \
			check_failed++;                                                            \
			fprintf(stderr, "FAIL %s\n", #fn);                                         \
		} else {                                                                           \
			check_passed++;                                                            \
			printf("ok   %s\n", #fn);                                                  \
		}                                                                                  \
	} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
