/*
 * test_live_held.c - ss_scan_live_held (viewer/analysis), the live-task level
 * task-leak judges by:
 *   - on a steady ramp (a leak) it is the ramp itself, and at the ends, the
 *     least of the buckets there are;
 *   - a backlog of one or two buckets (workers off their CPUs for a moment)
 *     lifts it, anywhere, by no more than the ramp's own rise over two
 *     buckets, so the ramp still ends at its peak;
 *   - a level held five buckets or more (a real batch of tasks) does, so a
 *     batch that drains still does not end at its peak.
 */
#include <stdint.h>
#include <stdio.h>

#include "scan.h"
#include "soft_check.h"

#define N (SS_SCAN_LIVE_BUCKETS + 1)

static int64_t held_peak(const int64_t *live)
{
	int64_t peak = 0;
	for (int i = 0; i < N; i++)
		if (ss_scan_live_held(live, i) > peak)
			peak = ss_scan_live_held(live, i);
	return peak;
}

int main(void)
{
	int64_t live[N];
	for (int i = 0; i < N; i++)
		live[i] = i + 10;
	CHECK(ss_scan_live_held(live, 50) == 60 && ss_scan_live_held(live, 10) == 20, "a ramp: its own level");
	CHECK(ss_scan_live_held(live, 0) == 10 && ss_scan_live_held(live, 1) == 10, "the start: its own buckets");
	CHECK(ss_scan_live_held(live, N - 1) == N + 7 && ss_scan_live_held(live, N - 2) == N + 6,
	      "the end: the least of its own buckets");
	CHECK(live[N - 1] * 10 >= held_peak(live) * 9, "a ramp ends at its peak");
	/* One and two buckets backed up by 40 tasks, near the end and 10% in. */
	for (int w = 1; w <= 2; w++)
		for (int at = 0; at + w <= N; at++) {
			int64_t spiked[N];
			for (int i = 0; i < N; i++)
				spiked[i] = live[i] + (i >= at && i < at + w ? 40 : 0);
			/* At most the ramp's own rise over the buckets looked at. */
			CHECK(held_peak(spiked) - held_peak(live) <= SS_SCAN_LIVE_HOLD, "a backlog of %d bucket(s) at %d: "
			      "peak %lld", w, at, (long long)held_peak(spiked));
			CHECK(spiked[N - 1] * 10 >= held_peak(spiked) * 9, "a backlog of %d bucket(s) at %d: "
			      "the ramp still ends at its peak", w, at);
			CHECK(ss_scan_live_held(spiked, 10) - ss_scan_live_held(live, 10) <= SS_SCAN_LIVE_HOLD,
			      "a backlog of %d bucket(s) at %d: the early level", w, at);
		}
	/* A batch of 200 held over buckets 40-44, drained after: the peak (at 42,
	 * the middle), and the end is not at it. */
	int64_t batch[N];
	for (int i = 0; i < N; i++)
		batch[i] = live[i] + (i >= 40 && i < 45 ? 200 : 0);
	CHECK(held_peak(batch) == 200 + 10 + 42, "a held batch is the peak: %lld", (long long)held_peak(batch));
	CHECK(batch[N - 1] * 10 < held_peak(batch) * 9, "a drained batch does not end at its peak");
	if (failures)
		return 1;
	printf("live-held: ok\n");
	return 0;
}
