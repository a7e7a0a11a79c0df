/*
 * A minimal test harness for the unit tests: each test file defines test functions, runs them with
 * RUN(fn), and returns check_summary() from main. A failed CHECK prints file:line and the
 * expression and marks the current test failed; the summary line is "N passed, M failed".
 */
#ifndef MM_CHECK_H
#define MM_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed, check_cur_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);   \
			check_cur_failed = 1;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_U64(a, b)                                                                            \
	do {                                                                                       \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
		if (a_ != b_) {                                                                    \
			fprintf(stderr, "%s:%d: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n",  \
				__FILE__, __LINE__, #a, a_, #b, b_);                               \
			check_cur_failed = 1;                                                      \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                           \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,        \
				__LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)");             \
			check_cur_failed = 1;                                                      \
		}                                                                                  \
	} while (0)

/* Whether @needle occurs in @hay. */
#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *h_ = (hay), *n_ = (needle);                                            \
		if (!h_ || !strstr(h_, n_)) {                                                      \
			fprintf(stderr, "%s:%d: \"%s\" not found in %s\n", __FILE__, __LINE__, n_, \
				#hay);                                                             \
			check_cur_failed = 1;                                                      \
		}                                                                                  \
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
