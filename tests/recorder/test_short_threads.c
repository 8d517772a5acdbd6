/*
 * test_short_threads.c - 10,000 short-lived threads neither leak nor lose anything.
 *
 * Threads are created in batches of 16 concurrent ones; each becomes a worker
 * (stallscope_worker_begin), makes 100 hooks, and returns; half of them call
 * stallscope_worker_end() first, half just return (the recorder's thread-exit
 * cleanup must retire their buffers). Checks:
 *   - the process holds the same number of descriptors before start and after stop;
 *   - resident memory grows by less than 64 MiB (buffers of dead threads return to
 *     the pool of 256 slots instead of piling up). A control round of the same
 *     10,000 threads with recording off runs first, and what it grew is taken off:
 *     AddressSanitizer keeps ~55 MiB of per-thread state per 10,000 threads;
 *   - every thread that produced events has a THREAD_DEF and a THREAD_EXIT, and its
 *     events decode in order with its worker identity;
 *   - decoded events + LOSS counts == events produced, exactly, and the stats
 *     counters agree with the decoded trace.
 * The batches are paced (at most ~9 batches ahead of the writer, far below the 256
 * slots) so that the pool is not exhausted merely because a loaded machine starved
 * the writer; NO_BUFFER losses would still be counted in the identity.
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "trace_check.h"

#define NTHREADS 10000u
#define BATCH 16u
#define AHEAD 8u       /* batches the writer may lag behind before we wait */
#define ROUNDS 25u     /* 4 hooks per round: 100 hooks per thread */

static uint32_t loc;

static uint64_t task_id(uint32_t thread, uint32_t k)
{
	return ((uint64_t)(thread + 1) << 20) | k;
}

static int ends_worker(uint32_t i)
{
	return i % 2 == 0;
}

/* Events a thread produces: WORKER_BEGIN, 100 hooks, WORKER_END on half. */
static uint64_t produced_by(uint32_t i)
{
	return 1 + 4 * ROUNDS + (ends_worker(i) ? 1 : 0);
}

static void *short_thread(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg;
	stallscope_worker_begin("short", i);
	for (uint32_t k = 0; k < ROUNDS; k++) {
		stallscope_poll_begin(task_id(i, k), loc);
		stallscope_task_wake(task_id(i, k) + 1);
		stallscope_queue_depth(i, k);
		stallscope_poll_end();
	}
	if (ends_worker(i))
		stallscope_worker_end();
	return NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct lane {
	int64_t producer;
	uint64_t n;       /* events seen on the lane (THREAD_EXIT excluded) */
	int ended, exited;
};

/* Checks one thread's lane against what short_thread() did. */
static void check_lane(const struct tc_trace *t, struct lane *lanes, const struct tc_event *e)
{
	CHECK(e->thread < NTHREADS * 2 + 64, "thread id %llu", (unsigned long long)e->thread);
	struct lane *l = &lanes[e->thread];
	if (e->type == SS_REC_THREAD_EXIT) {
		CHECK(!l->exited, "thread %llu exits twice", (unsigned long long)e->thread);
		l->exited = 1;
		return;
	}
	CHECK(!l->exited, "thread %llu: event 0x%x after its exit", (unsigned long long)e->thread,
	      e->type);
	CHECK(e->type != SS_REC_LOSS || e->c == SS_LOSS_BUFFER_FULL, "loss reason %llu on a thread",
	      (unsigned long long)e->c);
	if (e->type == SS_REC_LOSS)
		return;
	uint64_t n = l->n++;
	if (n == 0) {
		CHECK(e->type == SS_REC_WORKER_BEGIN, "thread %llu: first event 0x%x, want WORKER_BEGIN",
		      (unsigned long long)e->thread, e->type);
		CHECK(!strcmp(tc_string(t, e->a), "short") && e->b < NTHREADS, "worker identity");
		l->producer = (int64_t)e->b;
		return;
	}
	uint32_t i = (uint32_t)l->producer;
	uint64_t h = n - 1;
	if (h == 4 * ROUNDS) {
		CHECK(ends_worker(i) && e->type == SS_REC_WORKER_END, "thread of producer %u: extra 0x%x",
		      i, e->type);
		l->ended = 1;
		return;
	}
	CHECK(h < 4 * ROUNDS, "producer %u: too many events", i);
	uint32_t k = (uint32_t)(h / 4);
	switch (h % 4) {
	case 0:
		CHECK(e->type == SS_REC_POLL_BEGIN && e->a == task_id(i, k) && e->b == loc,
		      "producer %u hook %llu: type 0x%x task %#llx", i, (unsigned long long)h, e->type,
		      (unsigned long long)e->a);
		break;
	case 1:
		CHECK(e->type == SS_REC_WAKE && e->a == task_id(i, k) + 1, "producer %u hook %llu", i,
		      (unsigned long long)h);
		break;
	case 2:
		CHECK(e->type == SS_REC_QUEUE && e->a == i && e->b == k, "producer %u hook %llu", i,
		      (unsigned long long)h);
		break;
	default:
		CHECK(e->type == SS_REC_POLL_END, "producer %u hook %llu", i, (unsigned long long)h);
	}
}

/* The same churn with recording off: hooks are no-ops, nothing is written. */
static void control_round(const pthread_attr_t *attr)
{
	for (uint32_t base = 0; base < NTHREADS; base += BATCH) {
		pthread_t th[BATCH];
		for (uint32_t j = 0; j < BATCH; j++)
			CHECK(pthread_create(&th[j], attr, short_thread, (void *)(uintptr_t)(base + j)) == 0,
			      "pthread_create");
		for (uint32_t j = 0; j < BATCH; j++)
			pthread_join(th[j], NULL);
	}
}

int main(void)
{
	char *dir = tc_tmpdir("short");
	loc = STALLSCOPE_LOCATION();
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "short";
	cfg.cpu_sampling = 0;
	cfg.flush_interval_ms = 1;       /* events_written follows the writer closely */
	cfg.max_file_size = 1ull << 30;
	cfg.rotation_count = 100;
	cfg.rotation_period_s = UINT32_MAX;

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	long rss_control = tc_rss_kib();
	control_round(&attr);
	CHECK(!stallscope_is_recording(), "recording before start");

	int fds_before = tc_fd_count();
	long rss_before = tc_rss_kib();
	long control_growth = rss_before - rss_control > 0 ? rss_before - rss_control : 0;
	struct stallscope_stats before, after;
	stallscope_get_stats(&before);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	uint64_t produced = 0, written_target[NTHREADS / BATCH + 1];
	uint32_t nbatches = 0, waits = 0;
	for (uint32_t base = 0; base < NTHREADS; base += BATCH, nbatches++) {
		if (nbatches >= AHEAD) {
			/* Wait (bounded) until the writer has written batch nbatches-AHEAD,
			 * THREAD_EXIT records included: its slots are back in the pool. */
			uint64_t target = written_target[nbatches - AHEAD], t0 = now_ms();
			struct stallscope_stats st;
			for (;;) {
				stallscope_get_stats(&st);
				if (st.events_written - before.events_written >= target || now_ms() - t0 > 60000)
					break;
				waits++;
				sleep_ms(1);
			}
		}
		pthread_t th[BATCH];
		uint32_t n = NTHREADS - base < BATCH ? NTHREADS - base : BATCH;
		for (uint32_t j = 0; j < n; j++)
			CHECK(pthread_create(&th[j], &attr, short_thread, (void *)(uintptr_t)(base + j)) == 0,
			      "pthread_create %u", base + j);
		for (uint32_t j = 0; j < n; j++) {
			pthread_join(th[j], NULL);
			produced += produced_by(base + j);
		}
		/* Written once drained: the events plus one THREAD_EXIT per thread. */
		written_target[nbatches] = produced + base + n;
	}
	pthread_attr_destroy(&attr);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	stallscope_get_stats(&after);
	int fds_after = tc_fd_count();
	long rss_after = tc_rss_kib();

	CHECK(fds_before >= 0 && fds_after == fds_before, "descriptors: %d before start, %d after stop",
	      fds_before, fds_after);
	CHECK(rss_before > 0 && rss_after - rss_before - control_growth < 64 * 1024,
	      "RSS grew by %ld KiB while recording, %ld KiB in the control round",
	      rss_after - rss_before, control_growth);

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "short", true) == 0, "load");
	CHECK(t.nsegs >= 1 && t.header_failures == 0 && t.corrupt_segments == 0 &&
	      t.truncated_segments == 0, "segments: %zu, damaged", t.nsegs);
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed, "%s not sealed", t.segs[i].path);

	size_t nl = NTHREADS * 2 + 64;
	struct lane *lanes = calloc(nl, sizeof *lanes);
	CHECK(lanes, "out of memory");
	uint64_t decoded = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct tc_event *e = &t.events[i];
		if (e->thread == 0) {
			CHECK(e->type == SS_REC_LOSS && e->c == SS_LOSS_NO_BUFFER,
			      "process-wide event 0x%x reason %llu", e->type, (unsigned long long)e->c);
			continue;
		}
		const struct tc_thread *th = tc_thread(&t, e->thread);
		CHECK(th, "thread %llu has events but no THREAD_DEF", (unsigned long long)e->thread);
		CHECK(th->exited, "thread %llu has no THREAD_EXIT", (unsigned long long)e->thread);
		check_lane(&t, lanes, e);
		decoded += e->type != SS_REC_LOSS && e->type != SS_REC_THREAD_EXIT;
	}
	size_t nthreads = 0;
	uint8_t *seen = calloc(NTHREADS, 1);
	CHECK(seen, "out of memory");
	for (size_t i = 0; i < nl; i++) {
		struct lane *l = &lanes[i];
		if (!l->n)
			continue;
		nthreads++;
		CHECK(l->exited, "thread %zu: no THREAD_EXIT", i);
		uint32_t p = (uint32_t)l->producer;
		CHECK(!seen[p], "producer %u on two lanes", p);
		seen[p] = 1;
		if (t.lost_by_reason[SS_LOSS_NO_BUFFER] == 0)
			CHECK(l->n == produced_by(p), "producer %u: %llu of %llu events", p,
			      (unsigned long long)l->n, (unsigned long long)produced_by(p));
	}
	CHECK(decoded + t.lost == produced, "decoded %llu + lost %llu != produced %llu",
	      (unsigned long long)decoded, (unsigned long long)t.lost, (unsigned long long)produced);
	if (t.lost_by_reason[SS_LOSS_NO_BUFFER] == 0)
		CHECK(nthreads == NTHREADS, "%zu threads decoded", nthreads);
	CHECK(after.events - before.events == decoded, "stats.events grew by %llu, decoded %llu",
	      (unsigned long long)(after.events - before.events), (unsigned long long)decoded);
	CHECK(after.events_dropped - before.events_dropped == t.lost,
	      "stats.events_dropped grew by %llu, LOSS sum %llu",
	      (unsigned long long)(after.events_dropped - before.events_dropped),
	      (unsigned long long)t.lost);
	printf("short_threads: %zu threads, %llu events decoded, %llu lost (%llu no buffer), "
	       "fds %d -> %d, RSS %+ld KiB (control round %+ld KiB), %u pacing waits\n",
	       nthreads, (unsigned long long)decoded, (unsigned long long)t.lost,
	       (unsigned long long)t.lost_by_reason[SS_LOSS_NO_BUFFER], fds_before, fds_after,
	       rss_after - rss_before, control_growth, waits);
	free(seen);
	free(lanes);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	printf("short_threads: ok\n");
	return 0;
}
