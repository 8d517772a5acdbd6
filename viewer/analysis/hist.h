/*
 * hist.h - kept values and their exact quantiles, for the wake-to-poll
 * delays of the scan (scan.h): every value is kept (8 bytes each) and the
 * array sorted once, when a quantile is first asked for.
 *
 * Percentiles are by the nearest-rank definition that the README's SQL uses
 * too: the p-quantile of n values is the value at rank ceil(p * n) in
 * ascending order (1-based), the smallest value with at least a fraction p
 * of the values at or below it.
 *
 * Depends on libc only. Not thread-safe: a hist belongs to one thread.
 */
#ifndef STALLSCOPE_HIST_H
#define STALLSCOPE_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ss_hist {
	uint64_t n;
	uint64_t max;
	uint64_t *v;   /* the n values */
	size_t cap;
	bool sorted;
};

/* Keeps one more value; 0, or -1 when out of memory (h unchanged). */
int ss_hist_add(struct ss_hist *h, uint64_t v);
/* The nearest-rank quantile: the value at rank ceil(pct * n / 100), pct in
 * 1..100 (as "ORDER BY v LIMIT 1 OFFSET rank - 1" would give); -1 when empty.
 * Sorts the values on first use. */
double ss_hist_quantile(struct ss_hist *h, unsigned pct);
/* Sorts v ascending (a radix sort, with qsort when the scratch memory it
 * needs cannot be had); for ss_hist_quantile and its test. */
void ss_sort_u64(uint64_t *v, size_t n);
/* Frees the values; h is empty after. */
void ss_hist_free(struct ss_hist *h);

#endif /* STALLSCOPE_HIST_H */
