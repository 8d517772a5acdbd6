/*
 * summary.h - level-of-detail summaries (table worker_summaries) built while
 * importing: per worker and time bucket, the busy, parked and off-CPU time, the
 * polls begun and the longest poll. A zoomed-out viewer reads a few thousand
 * rows instead of millions of polls.
 *
 * Bucket sizes are 50 us and a 1-2-5 ladder from 100 us to 1 s, so a viewer always
 * finds a level between one and 2.5 buckets per pixel. The 1 ms, 10 ms, 100 ms
 * and 1 s levels are full: every bucket with any time in it has a row. The
 * others are sparse: a row only where at least two polls or parks begin (a busy
 * stretch of one long poll would otherwise cost a row per 50 us), and no
 * off-CPU time (0). What a sparse level lacks is in the bucket of the full level
 * above that contains it (its parent).
 *
 * Each worker keeps one open bucket per level and source (hook events and CPU
 * switches arrive in separately ordered streams); a contribution to another
 * bucket writes the open one out with an upsert that adds to what is stored, so
 * out-of-order data and later incremental imports stay exact. At a full level
 * both sources close the same buckets at about the same time: the row one
 * writes waits for the other's of the same bucket and goes out as one (the
 * sum the two upserts would have stored; a conflicting upsert costs the
 * inserting thread about 1 us, and the steady recording had 35k of them).
 */
#ifndef STALLSCOPE_SUMMARY_H
#define STALLSCOPE_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "sink.h"
#include "summary_levels.h"

enum ss_summary_kind { SS_SUM_BUSY, SS_SUM_PARKED, SS_SUM_OFFCPU };

struct ss_summary_acc {
	bool open;
	uint64_t bucket;          /* bucket index (ts / size) */
	uint64_t lo, hi;          /* its time range [lo, hi) */
	int64_t starts;           /* polls and parks begun in it (sparse levels) */
	int64_t busy, parked, offcpu, polls, max_poll;
	/* what of it worker_summaries holds already (an import ended in it) */
	int64_t w_busy, w_parked, w_offcpu, w_polls;
};

struct ss_summary_worker {
	struct ss_summary_acc acc[2][SS_SUMMARY_LEVELS]; /* [source][level] */
	/* a full level's row written by one source, waiting for the other's */
	struct ss_summary_row held[SS_SUMMARY_LEVELS];
	int8_t held_src[SS_SUMMARY_LEVELS]; /* its source + 1, 0: none */
};

struct ss_summary {
	const struct ss_sink *sink;
	uint64_t max_buckets;
};


/* Adds the interval [ts, ts + dur) of a kind to a worker. Returns 0 or -1 (db). */
int ss_summary_add(struct ss_summary *s, struct ss_summary_worker *w, int64_t worker_id,
		   enum ss_summary_kind kind, uint64_t ts, uint64_t dur);
/* The import ends: writes what a worker's open buckets hold that is not in
 * worker_summaries yet, and keeps them open (their state goes to
 * import_open_summary, so that a later import continues them); a row held
 * for the other source goes out too. */
int ss_summary_checkpoint(struct ss_summary *s, struct ss_summary_worker *w, int64_t worker_id);
/* Whether an open bucket is in worker_summaries (a sparse one needs two starts). */
bool ss_summary_written(const struct ss_summary_acc *a, int level);

#endif /* STALLSCOPE_SUMMARY_H */
