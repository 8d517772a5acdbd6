/*
 * summary_levels.h - the bucket sizes of the worker_summaries table
 * (schema/stallscope.sql): a 1-2-5 ladder from 200 us to 1 s (schema version
 * 11 dropped 50 and 100 us, half of the rows: below 200 us the viewer draws
 * the polls themselves, a few rows a pixel column). The 1 ms, 10 ms, 100 ms and 1 s levels are full (every bucket with time in it has a row); the
 * others are sparse, and what they leave out is in their parent, the next full
 * level up. The importer writes these levels; the viewer and the test fixture
 * read them, so all three take them from here.
 */
#ifndef STALLSCOPE_SUMMARY_LEVELS_H
#define STALLSCOPE_SUMMARY_LEVELS_H

#include <stdint.h>

#define SS_SUMMARY_LEVELS 12

static const uint64_t ss_summary_level_ns[SS_SUMMARY_LEVELS] = {
	200000, 500000,
	1000000, 2000000, 5000000,
	10000000, 20000000, 50000000,
	100000000, 200000000, 500000000,
	1000000000,
};

/* The unit of summary_rows.scale: every level is a multiple of it, and the
 * table keeps bucket_ns / SS_SUMMARY_SCALE_NS (schema/stallscope.sql). */
#define SS_SUMMARY_SCALE_NS 50000

/* For each level, the index of its parent; -1 for a full level. */
static const int ss_summary_level_parent[SS_SUMMARY_LEVELS] = {
	2, 2, -1, 5, 5, -1, 8, 8, -1, 11, 11, -1,
};

#endif /* STALLSCOPE_SUMMARY_LEVELS_H */
