/*
 * test_summary.c - the level-of-detail summaries (viewer/model/summary.c) as a
 * sink sees them:
 *   - a worker's polls and parks (hook events) and its off-CPU time (switches)
 *     add up, per level and bucket, to what the intervals hold, whatever order
 *     the two sources close their buckets in;
 *   - a full level's bucket that both sources write while the other's row of
 *     it waits comes to the sink as one row (an upsert that conflicts costs the
 *     inserting thread about 1 us), also where the import ends (checkpoint);
 *   - a sparse level keeps no off-CPU time and writes a bucket only where two
 *     polls or parks begin.
 */
#include <stdlib.h>
#include <string.h>

#include "sink.h"
#include "soft_check.h"
#include "summary.h"

#define MAX_ROWS 4096

static struct ss_summary_row rows[MAX_ROWS];
static size_t n_rows;

static int take(void *ctx, const struct ss_summary_row *r)
{
	(void)ctx;
	if (n_rows < MAX_ROWS)
		rows[n_rows] = *r;
	n_rows++;
	return 0;
}

/* What the sink's upserts would have stored for one key, and how many rows
 * came for it. */
static void stored(int64_t bucket_ns, int64_t ts, struct ss_summary_row *sum, int *count)
{
	memset(sum, 0, sizeof *sum);
	*count = 0;
	for (size_t i = 0; i < n_rows && i < MAX_ROWS; i++) {
		const struct ss_summary_row *r = &rows[i];
		if (r->bucket_ns != bucket_ns || r->ts != ts)
			continue;
		(*count)++;
		sum->busy_ns += r->busy_ns;
		sum->parked_ns += r->parked_ns;
		sum->offcpu_ns += r->offcpu_ns;
		sum->polls += r->polls;
		if (r->max_poll_ns > sum->max_poll_ns)
			sum->max_poll_ns = r->max_poll_ns;
	}
}

int main(void)
{
	struct ss_sink sink;
	memset(&sink, 0, sizeof sink);
	sink.summary = take;
	struct ss_summary s = { &sink, 1000000 };
	struct ss_summary_worker *w = calloc(1, sizeof *w);
	const uint64_t ms = 1000000;
	/* 20 ms: in each millisecond a poll of 300 us and one of 200 us, a park
	 * of the rest; the worker is off CPU 100 us in each, reported by the
	 * switches sometimes before and sometimes after the hooks move on. */
	for (uint64_t b = 0; b < 20; b++) {
		uint64_t t = 100 * ms + b * ms;
		bool switches_first = b % 3 == 0;
		if (switches_first)
			CHECK(ss_summary_add(&s, w, 7, SS_SUM_OFFCPU, t + 600000, 100000) == 0, "offcpu");
		CHECK(ss_summary_add(&s, w, 7, SS_SUM_BUSY, t, 300000) == 0, "poll");
		CHECK(ss_summary_add(&s, w, 7, SS_SUM_BUSY, t + 300000, 200000) == 0, "poll");
		CHECK(ss_summary_add(&s, w, 7, SS_SUM_PARKED, t + 500000, 500000) == 0, "park");
		if (!switches_first)
			CHECK(ss_summary_add(&s, w, 7, SS_SUM_OFFCPU, t + 600000, 100000) == 0, "offcpu");
	}
	CHECK(ss_summary_checkpoint(&s, w, 7) == 0, "checkpoint");
	int twice = 0;
	for (uint64_t b = 0; b < 20; b++) {
		struct ss_summary_row sum;
		int count;
		stored(1000000, (int64_t)(100 * ms + b * ms), &sum, &count);
		CHECK(sum.busy_ns == 500000 && sum.parked_ns == 500000 && sum.offcpu_ns == 100000 && sum.polls == 2 &&
			      sum.max_poll_ns == 300000,
		      "1 ms bucket %llu: busy %lld parked %lld offcpu %lld polls %lld max %lld",
		      (unsigned long long)b, (long long)sum.busy_ns, (long long)sum.parked_ns,
		      (long long)sum.offcpu_ns, (long long)sum.polls, (long long)sum.max_poll_ns);
		twice += count > 1;
	}
	CHECK(twice == 0, "%d of 20 full-level buckets came as two rows (one per source)", twice);
	/* 10 ms: 100..109 and 110..119 ms, both sources in each. */
	for (int k = 0; k < 2; k++) {
		struct ss_summary_row sum;
		int count;
		stored(10000000, (int64_t)(100 + 10 * k) * (int64_t)ms, &sum, &count);
		CHECK(count == 1 && sum.busy_ns == 5000000 && sum.offcpu_ns == 1000000 && sum.polls == 20,
		      "10 ms bucket %d: %d rows, busy %lld offcpu %lld polls %lld", k, count, (long long)sum.busy_ns,
		      (long long)sum.offcpu_ns, (long long)sum.polls);
	}
	/* 500 us (sparse): the first half of each millisecond holds both polls'
	 * starts, the second the park's only: one row per millisecond, no
	 * off-CPU time. */
	size_t sparse = 0;
	for (size_t i = 0; i < n_rows && i < MAX_ROWS; i++)
		if (rows[i].bucket_ns == 500000) {
			sparse++;
			CHECK(rows[i].offcpu_ns == 0 && rows[i].polls == 2 && rows[i].ts % (int64_t)ms == 0,
			      "500 us row at %lld: offcpu %lld polls %lld", (long long)rows[i].ts,
			      (long long)rows[i].offcpu_ns, (long long)rows[i].polls);
		}
	CHECK(sparse == 20, "%zu rows of the 500 us level", sparse);
	free(w);
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("summary: ok\n");
	return failures ? 1 : 0;
}
