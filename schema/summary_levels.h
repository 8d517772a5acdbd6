/*
 * summary_levels.h - the bucket sizes of the worker_summaries table
 * (schema/stallscope.sql): a 1-2-5 ladder from 100 us to 1 s (schema version
 * 11 dropped 50 us, a third of the rows: below 100 us the viewer draws the
 * polls themselves, a few rows a pixel column; without 100 us too, a frame
 * read 1.6 times the rows and cost 1.13 times the CPU, bench_render). The
 * 1 ms, 10 ms, 100 ms and 1 s levels are full (every bucket with time in it
 * has a row); the others are sparse, and what they leave out is in their
 * parent, the next full level up. The importer writes these levels; the viewer and the test fixture
 * read them, so all three take them from here.
 */
#ifndef STALLSCOPE_SUMMARY_LEVELS_H
#define STALLSCOPE_SUMMARY_LEVELS_H

#include <stdint.h>

#define SS_SUMMARY_LEVELS 13

static const uint64_t ss_summary_level_ns[SS_SUMMARY_LEVELS] = {
	100000, 200000, 500000,
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
	3, 3, 3, -1, 6, 6, -1, 9, 9, -1, 12, 12, -1,
};

#endif /* STALLSCOPE_SUMMARY_LEVELS_H */
