/*
 * bench_hooks.c - what one hook costs, next to what one clock read costs in the
 * same run (this machine is shared and noisy; only the ratio travels).
 *
 * Each figure is the median over batches of 30,000 events, a batch small enough
 * to fit half a thread's ring, with a pause between batches for the writer to drain it:
 * we time the hook path, not the drop path.
 *
 * Usage: bench_hooks [BATCHES]   (default 200)
 */
#include <stallscope/stallscope.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define BATCH_PAIRS 15000

static void drain_pause(void)
{
	struct timespec ts = {0, 20 * 1000000};
	nanosleep(&ts, NULL);
}

enum workload { CLOCK_READ, POLL, PARK, DISABLED_POLL };

/* ns per event for one batch */
static double run_batch(enum workload w, uint32_t loc)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = now_ns();
	switch (w) {
	case CLOCK_READ:
		for (int i = 0; i < 2 * BATCH_PAIRS; i++)
			sink += now_ns();
		break;
	case POLL:
	case DISABLED_POLL:
		for (int i = 0; i < BATCH_PAIRS; i++) {
			stallscope_poll_begin((uint64_t)i, loc);
			stallscope_poll_end();
		}
		break;
	case PARK:
		for (int i = 0; i < BATCH_PAIRS; i++) {
			stallscope_park();
			stallscope_unpark();
		}
		break;
	}
	uint64_t t1 = now_ns();
	(void)sink;
	return (double)(t1 - t0) / (2.0 * BATCH_PAIRS);
}

int main(int argc, char **argv)
{
	int batches = argc > 1 ? atoi(argv[1]) : 200;
	if (batches < 5)
		batches = 5;
	char dir[] = "/tmp/stallscope-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	double *clock_v = calloc((size_t)batches, sizeof(double));
	double *poll_v = calloc((size_t)batches, sizeof(double));
	double *park_v = calloc((size_t)batches, sizeof(double));
	double *off_v = calloc((size_t)batches, sizeof(double));

	uint32_t loc = stallscope_location(__FILE__, __LINE__, __func__);
	for (int b = 0; b < batches; b++)
		off_v[b] = run_batch(DISABLED_POLL, loc);

	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	if (stallscope_start(&cfg) != 0) {
		fprintf(stderr, "bench_hooks: %s\n", stallscope_last_error());
		return 1;
	}
	stallscope_worker_begin("bench", 0);
	/* Interleave the workloads so drift in machine load hits them alike. */
	for (int b = 0; b < batches; b++) {
		clock_v[b] = run_batch(CLOCK_READ, loc);
		poll_v[b] = run_batch(POLL, loc);
		drain_pause();
		park_v[b] = run_batch(PARK, loc);
		drain_pause();
	}
	stallscope_worker_end();
	stallscope_stop();
	struct stallscope_stats st;
	stallscope_get_stats(&st);

	double c = median(clock_v, batches), p = median(poll_v, batches);
	double k = median(park_v, batches), o = median(off_v, batches);
	printf("bench_hooks: %d batches of %d events each, medians\n", batches, 2 * BATCH_PAIRS);
	printf("  clock_gettime(CLOCK_MONOTONIC)   %6.1f ns/read\n", c);
	printf("  poll_begin+poll_end, recording   %6.1f ns/event   %.2f clock reads/event\n", p, p / c);
	printf("  park+unpark, recording           %6.1f ns/event   %.2f clock reads/event\n", k, k / c);
	printf("  poll_begin+poll_end, not started %6.1f ns/event   %.2f clock reads/event\n", o, o / c);
	printf("  events %llu, dropped %llu (drops would mean the batches timed the drop path)\n",
	       (unsigned long long)st.events, (unsigned long long)st.events_dropped);
	printf("  on disk: %llu bytes for %llu events = %.2f bytes/event\n",
	       (unsigned long long)st.bytes_written, (unsigned long long)st.events_written,
	       st.events_written ? (double)st.bytes_written / (double)st.events_written : 0.0);

	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_hooks: could not remove %s\n", dir);
	free(clock_v);
	free(poll_v);
	free(park_v);
	free(off_v);
	return 0;
}
