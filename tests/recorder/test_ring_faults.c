/*
 * test_ring_faults.c - a hooked thread takes no page faults in its ring: the
 * writer faults the pages in ahead of it (writer.c, prefault_ring), since a
 * fault costs the thread about 14 us on a VM, ten times the hooks of the 128
 * events a page holds.
 *
 * A worker thread attaches after the writer's first cycles and then makes 16
 * batches of 256 events, 100 ms apart (a pace the writer's cycles keep ahead
 * of): 4096 events, 32 pages of a fresh ring. Its minor faults are counted
 * around the batches only (getrusage RUSAGE_THREAD), so its stack and sleeps do
 * not count. Without the writer's help every page is a fault (32); the test
 * allows 8, so a writer wake-up delayed on a loaded machine does not fail it.
 * All 2048 polls must be in the trace. Under ASan the hooks' stores also touch
 * shadow memory, faults the writer cannot take for them: only the trace is
 * checked there.
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "trace_check.h"
#include "writer_cycles.h"

/* Linked in only by the sanitizer build (tests/recorder/meson.build). */
extern void __asan_init(void) __attribute__((weak));

#define BATCHES 16
#define PAIRS 128

static long faults;

static uint32_t site(void)
{
	return STALLSCOPE_LOCATION();
}

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

static void *worker(void *arg)
{
	(void)arg;
	uint32_t loc = site();
	/* Attaches (claims a slot; its first allocations in this thread) uncounted. */
	stallscope_worker_begin("faults", 0);
	for (int b = 0; b < BATCHES; b++) {
		long f0 = minflt();
		for (uint64_t k = 0; k < PAIRS; k++) {
			stallscope_poll_begin((uint64_t)b * PAIRS + k + 1, loc);
			stallscope_poll_end();
		}
		faults += minflt() - f0;
		usleep(100000);
	}
	stallscope_worker_end();
	return NULL;
}

int main(void)
{
	char *dir = tc_tmpdir("ring-faults");
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "rf";
	cfg.cpu_sampling = 0;
	cfg.stall_threshold_ms = 0;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	/* A whole cycle of the writer's faults the next free slot's first pages in
	 * (a fixed 200 ms was a guess a loaded machine could beat). */
	CHECK(writer_cycle_wait() == 0, "the writer ran no whole cycle in 60 s");
	pthread_t th;
	CHECK(pthread_create(&th, NULL, worker, NULL) == 0, "thread");
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "rf", true) == 0, "load");
	CHECK(t.by_type[SS_REC_POLL_BEGIN] == BATCHES * PAIRS, "%llu polls, expected %d",
	      (unsigned long long)t.by_type[SS_REC_POLL_BEGIN], BATCHES * PAIRS);
	printf("%d events on a fresh ring (%d pages): %ld page faults in the hooks\n",
	       BATCHES * PAIRS * 2, BATCHES * PAIRS * 2 * 32 / 4096, faults);
	CHECK(__asan_init || faults <= 8, "%ld page faults in the hooks of %d events", faults, BATCHES * PAIRS * 2);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	return 0;
}
