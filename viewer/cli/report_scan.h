/*
 * report_scan.h - the figures of `stallscope report` that need every poll, park
 * or wake, computed in one pass over each table instead of one SQL query per
 * figure (on a 20M-event trace the queries took 20 s, mostly sorting delays
 * for percentiles).
 *
 * Percentiles are exact, by the nearest-rank definition that the README's SQL
 * uses too: the p-quantile of n values is the value at rank ceil(p * n) in
 * ascending order (1-based), the smallest value with at least a fraction p of
 * the values at or below it. The values are kept (8 bytes each, twice: overall
 * and per location) and sorted when a quantile is asked for.
 */
#ifndef STALLSCOPE_REPORT_SCAN_H
#define STALLSCOPE_REPORT_SCAN_H

#include <stdbool.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

struct rs_hist {
	uint64_t n;
	uint64_t max;
	uint64_t *v;   /* the n values */
	size_t cap;
	bool sorted;
};

struct rs_worker {
	int64_t id;
	uint64_t polls, busy, parked, longest;
};

struct rs_location {
	int64_t id;    /* polls.location_id, 0 when NULL */
	struct rs_hist h;
};

struct report_scan {
	struct rs_worker *workers;   /* sorted by id */
	size_t n_workers;
	uint64_t polls, over1ms, over10ms, over50ms;
	struct rs_hist delays;       /* every wake that led to a poll */
	struct rs_location *locs;    /* by the location of the poll the wake led to */
	size_t n_locs, cap_locs;
	struct ss_hmap loc_index;    /* location id -> index in locs */
	uint64_t max_delay;
	/* Tasks alive at the end of the data, and those of them that were idle
	 * there: polled, not running, and not woken since their last poll (a
	 * task waiting in a run queue is runnable, not leaked). */
	uint64_t alive_at_end, idle_at_end;
};

/* Scans polls, parks and wakes. Returns 0, or -1 with a message in err. */
int rs_scan(sqlite3 *db, struct report_scan *s, char *err, size_t errlen);
/* The nearest-rank quantile: the value at rank ceil(pct * n / 100), pct in
 * 1..100 (as "ORDER BY v LIMIT 1 OFFSET rank - 1" would give); -1 when empty.
 * Sorts the values on first use. */
double rs_quantile(struct rs_hist *h, unsigned pct);
const struct rs_worker *rs_worker(const struct report_scan *s, int64_t id);
void rs_free(struct report_scan *s);

#endif /* STALLSCOPE_REPORT_SCAN_H */
