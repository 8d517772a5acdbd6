/*
 * report_scan.h - the figures of `stallscope report` that need every poll, park
 * or wake, computed in one pass over each table instead of one SQL query per
 * figure (on a 20M-event trace the queries took 20 s, mostly sorting delays
 * for percentiles).
 *
 * Delay percentiles come from log-linear histograms: exact below 128 ns, within
 * 0.4% above (128 sub-buckets per power of two), in bounded memory whatever the
 * number of wakes.
 */
#ifndef STALLSCOPE_REPORT_SCAN_H
#define STALLSCOPE_REPORT_SCAN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

#define RS_SUB_BITS 7
#define RS_BUCKETS (128 + (64 - RS_SUB_BITS) * 128)
/* Per-location delay histograms kept (60 KB each); wakes of further poll
 * locations are counted under location RS_OTHER_LOCATIONS. */
#define RS_MAX_LOCATIONS 1024
#define RS_OTHER_LOCATIONS INT64_MIN

struct rs_hist {
	uint64_t n;
	uint64_t max;  /* largest value: no quantile is reported above it */
	uint64_t *b;   /* RS_BUCKETS counts, allocated on the first value */
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
};

/* Scans polls, parks and wakes. Returns 0, or -1 with a message in err. */
int rs_scan(sqlite3 *db, struct report_scan *s, char *err, size_t errlen);
/* The value below which a fraction p of the histogram's values lie (as
 * "ORDER BY v LIMIT 1 OFFSET floor(p * (n - 1))" would give); -1 when empty. */
double rs_quantile(const struct rs_hist *h, double p);
const struct rs_worker *rs_worker(const struct report_scan *s, int64_t id);
void rs_free(struct report_scan *s);

#endif /* STALLSCOPE_REPORT_SCAN_H */
