/*
 * soft_check.h - CHECK for tests that report every failed check and then exit
 * non-zero (unlike trace_check.h's CHECK, which stops at the first): the file
 * that includes it owns the failure count.
 */
#ifndef STALLSCOPE_SOFT_CHECK_H
#define STALLSCOPE_SOFT_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			failures++;                                             \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
		}                                                               \
	} while (0)

#endif /* STALLSCOPE_SOFT_CHECK_H */
