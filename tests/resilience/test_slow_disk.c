/*
 * test_slow_disk.c - a slow disk costs the hooks-only recorder a thread, not
 * its stall captures.
 *
 * Hooks only, the writer's thread also takes the stall watchdog's looks; a
 * write that holds that thread holds the looks, and workers stalling on the
 * same slow disk are the stalls most worth explaining. The recorder's block
 * writes and syncs go through io_spy.c, which delays them. A worker spins in
 * polls of 40 ms, 5 ms apart, at a 10 ms threshold: each is captured if a look
 * comes while it is 10 to 40 ms old.
 *
 *   slow writes  every block write takes 150 ms from the start: after the
 *                first one the looks are on a thread of their own (ss-watchdog)
 *                for the rest of the session, and every poll begun after that
 *                write returned is captured. (With the looks held by the
 *                writes, most are not: the writes come back to back.)
 *   slow seal    rotation every second and a seal's fdatasync takes 150 ms:
 *                the looks move before the sync, so the polls during it are
 *                captured too (held, the two or more polls inside 150 ms
 *                would not be), and they stay moved: the sync was slow.
 *   fast seal    the same with a fast disk (and a threshold of 200 ms, so a
 *                loaded machine's sync still counts as fast): the looks move
 *                for the sync (a thread ss-watchdog exists while it runs) and
 *                come back after it: one recorder thread again.
 *   slow start   the first segment file, created by stallscope_start on the
 *                caller's thread, takes 20 ms to open: the looks still move
 *                (ss-watchdog appears), but by the writer's thread: the
 *                caller's timer slack is what it was (the hand-over sets the
 *                slack of the thread it runs on).
 */
#include <stallscope/stallscope.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "io_spy.h"
#include "resil.h"
#include "trace_check.h"

#define TASK0 5000u
#define MAXPOLL 128

static struct {
	uint64_t begun[MAXPOLL]; /* CLOCK_MONOTONIC at each poll's begin */
	uint8_t captured[MAXPOLL];
	uint32_t n;
} P;

static _Atomic int sync_saw_watchdog;

static void sync_hook(void)
{
	if (io_spy_has_thread("ss-watchdog"))
		atomic_store(&sync_saw_watchdog, 1);
}

static void first_capture(const struct ss_record *rec, void *ctx)
{
	(void)ctx;
	if (rec->type == SS_REC_STALL && rec->u.stall.index == 0 && rec->u.stall.task >= TASK0 &&
	    rec->u.stall.task < TASK0 + MAXPOLL)
		P.captured[rec->u.stall.task - TASK0] = 1;
}

/* Records with the writer's I/O as io_spy is set, polls of 40 ms for
 * run_ms; each poll's first capture noted in P. threads_at_end: whether
 * ss-watchdog ran at the end of the polls. */
static void record(const char *tag, uint32_t threshold_ms, uint32_t rotation_s, unsigned run_ms,
		   int *watchdog_at_end)
{
	char *dir = tc_tmpdir(tag);
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "sd", threshold_ms);
	cfg.rotation_period_s = rotation_s;
	cfg.rotation_count = 64;
	cfg.unwind = STALLSCOPE_UNWIND_FP;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	memset(&P, 0, sizeof P);
	uint32_t loc = stallscope_location("test_slow_disk.c", 1, "spin");
	stallscope_worker_begin("slow", 1);
	volatile uint64_t x = 1;
	uint64_t t0 = rs_now();
	while (rs_now() - t0 < (uint64_t)run_ms * 1000000u && P.n < MAXPOLL) {
		P.begun[P.n] = rs_now();
		stallscope_poll_begin(TASK0 + P.n, loc);
		uint64_t end = rs_now() + 40000000u;
		while (rs_now() < end)
			for (int i = 0; i < 1000; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
		stallscope_poll_end();
		P.n++;
		rs_sleep_ms(5);
	}
	stallscope_worker_end();
	*watchdog_at_end = io_spy_has_thread("ss-watchdog");
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	CHECK(tc_each_record(dir, "sd", first_capture, NULL) > 0, "read %s", dir);
	tc_rmrf(dir);
	free(dir);
}

/* Polls begun at or after from (0: all) that have no capture. */
static uint32_t missed(uint64_t from, uint32_t *of)
{
	uint32_t m = 0;
	*of = 0;
	for (uint32_t i = 0; i < P.n; i++) {
		if (P.begun[i] < from)
			continue;
		(*of)++;
		m += !P.captured[i];
	}
	return m;
}

/* Start with the first segment's creation delayed on the caller's thread. */
static void slow_start(void)
{
	char *dir = tc_tmpdir("slowstart");
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "sd", 10);
	int slack0 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	atomic_store(&io_spy.start_open_delay_ns, 20000000u);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	int slack1 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	uint64_t t0 = rs_now();
	while (!io_spy_has_thread("ss-watchdog") && rs_now() - t0 < 5000000000u)
		rs_sleep_ms(1);
	int made = io_spy_has_thread("ss-watchdog");
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	int slack2 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	printf("  caller's timer slack %d ns -> %d ns (after stop %d ns); ss-watchdog: %d\n",
	       slack0, slack1, slack2, made);
	CHECK(atomic_load(&io_spy.start_open_delay_ns) == 0, "start's segment file not delayed");
	CHECK(slack1 == slack0 && slack2 == slack0, "the caller's timer slack went from %d ns to "
	      "%d ns (%d ns after stop)", slack0, slack1, slack2);
	CHECK(made, "no ss-watchdog within 5 s of a start whose segment creation took 20 ms");
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	int at_end;
	uint32_t of, miss;

	printf("slow start\n");
	slow_start();

	printf("slow writes\n");
	atomic_store(&io_spy.write_delay_ns, 150000000u);
	atomic_store(&io_spy.first_write_end, 0);
	record("slowwrite", 10, UINT32_MAX, 1500, &at_end);
	atomic_store(&io_spy.write_delay_ns, 0);
	uint64_t first = atomic_load(&io_spy.first_write_end);
	miss = missed(first, &of);
	printf("  %u of %u polls begun after the first slow write not captured; ss-watchdog at "
	       "the end: %d\n", miss, of, at_end);
	CHECK(first, "no block written");
	CHECK(at_end, "the looks stayed on the writer's thread with writes of 150 ms");
	CHECK(of >= 10, "only %u polls after the first slow write", of);
	CHECK(miss == 0, "%u of %u polls of 40 ms (threshold 10 ms) not captured while every "
	      "write took 150 ms", miss, of);

	printf("slow seal\n");
	io_spy.on_sync = sync_hook;
	atomic_store(&sync_saw_watchdog, 0);
	atomic_store(&io_spy.sync_delay_ns, 150000000u);
	uint64_t syncs0 = atomic_load(&io_spy.syncs);
	record("slowseal", 10, 1, 2600, &at_end);
	atomic_store(&io_spy.sync_delay_ns, 0);
	miss = missed(0, &of);
	printf("  %u of %u polls not captured; %llu seals; ss-watchdog during the sync: %d, at the "
	       "end: %d\n", miss, of, (unsigned long long)(atomic_load(&io_spy.syncs) - syncs0),
	       atomic_load(&sync_saw_watchdog), at_end);
	CHECK(atomic_load(&io_spy.syncs) - syncs0 >= 2, "no rotation in 2.6 s at a period of 1 s");
	CHECK(atomic_load(&sync_saw_watchdog), "no ss-watchdog thread while a seal synced");
	CHECK(at_end, "the looks came back to the writer's thread after a sync of 150 ms");
	CHECK(miss == 0, "%u of %u polls of 40 ms (threshold 10 ms) not captured with seals "
	      "of 150 ms", miss, of);

	printf("fast seal\n");
	atomic_store(&sync_saw_watchdog, 0);
	syncs0 = atomic_load(&io_spy.syncs);
	record("fastseal", 200, 1, 1300, &at_end);
	printf("  %llu seals; ss-watchdog during the sync: %d, at the end: %d\n",
	       (unsigned long long)(atomic_load(&io_spy.syncs) - syncs0),
	       atomic_load(&sync_saw_watchdog), at_end);
	CHECK(atomic_load(&io_spy.syncs) - syncs0 >= 2, "no rotation in 1.3 s at a period of 1 s");
	CHECK(atomic_load(&sync_saw_watchdog), "no ss-watchdog thread while a seal synced");
	CHECK(!at_end, "the looks stayed on a thread of their own after a fast seal");
	printf("test_slow_disk: ok\n");
	return 0;
}
