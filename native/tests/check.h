/* Minimal test helpers: count failures, print them, exit non-zero. */
#ifndef RTQUAL_TEST_CHECK_H
#define RTQUAL_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                                     \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			check_failures++;                                               \
		}                                                                       \
	} while (0)

#define CHECK_STR(a, b)                                                                         \
	do {                                                                                    \
		const char *a_ = (a), *b_ = (b);                                                \
		if (strcmp(a_, b_) != 0) {                                                      \
			fprintf(stderr, "%s:%d: got  %s\n%*s want %s\n", __FILE__, __LINE__, a_, \
				(int)strlen(__FILE__) + 6, "", b_);                             \
			check_failures++;                                                       \
		}                                                                               \
	} while (0)

#define CHECK_DONE()                                                          \
	do {                                                                  \
		if (check_failures)                                           \
			fprintf(stderr, "%d check(s) failed\n", check_failures); \
		return check_failures ? 1 : 0;                                \
	} while (0)

#endif
