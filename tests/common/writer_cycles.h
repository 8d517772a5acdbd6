/*
 * writer_cycles.h - how many cycles the recorder's writer has begun (the
 * metrics text's stallscope_writer_cycles_total; public API only), for tests that must wait
 * until the writer has done something a cycle does: a cycle counted as begun
 * after a point in time works on what was there at that point, and it has
 * ended once the next one is counted. So "two more than now" means one whole
 * cycle after now, however late a loaded machine runs it.
 */
#ifndef STALLSCOPE_TESTS_WRITER_CYCLES_H
#define STALLSCOPE_TESTS_WRITER_CYCLES_H

#include <stallscope/stallscope.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* UINT64_MAX when the metrics do not say. */
static inline uint64_t writer_cycles(void)
{
	static char text[16384];
	size_t need = stallscope_metrics_text(text, sizeof text);
	const char *key = "\nstallscope_writer_cycles_total ";
	const char *at = need < sizeof text ? strstr(text, key) : NULL;
	return at ? strtoull(at + strlen(key), NULL, 10) : UINT64_MAX;
}

/* Waits until the writer has run one whole cycle from now; 0 when it has, -1
 * when it did not within 60 s (or the metrics do not say). */
static inline int writer_cycle_wait(void)
{
	uint64_t c0 = writer_cycles();
	struct timespec ms = { 0, 1000000L };
	for (int i = 0; i < 60000; i++) {
		uint64_t c = writer_cycles();
		if (c0 == UINT64_MAX || c == UINT64_MAX)
			return -1;
		if (c >= c0 + 2)
			return 0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

#endif
