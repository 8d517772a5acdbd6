/*
 * bench_sustained.c - two threads producing 2M events/s each (poll and park
 * hooks, as a busy runtime does) while the writer shares the machine's two cores.
 * Prints events, drops, bytes per event on disk, and the writer's CPU use.
 *
 * Pacing: each producer emits a burst every millisecond and sleeps until the next
 * one, so the producers leave room for the writer as a real runtime would.
 *
 * Usage: bench_sustained [SECONDS] [EVENTS_PER_SEC_PER_THREAD]   (10, 2000000)
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"

static double seconds = 10;
static long rate = 2000000;
static uint64_t produced[2];
static double producer_cpu[2];

static void *producer(void *arg)
{
	int idx = (int)(intptr_t)arg;
	stallscope_worker_begin("bench", (uint32_t)idx);
	uint32_t loc = stallscope_location(__FILE__, __LINE__, __func__);
	long per_ms = rate / 1000;
	uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), n = 0;
	uint64_t task = (uint64_t)idx << 40;
	for (uint64_t tick = start; tick < end; tick += 1000000) {
		/* 8 events per round: 3 polls and a park/unpark, like a loaded worker. */
		for (long i = 0; i < per_ms; i += 8) {
			for (int p = 0; p < 3; p++) {
				stallscope_poll_begin(task++, loc);
				stallscope_poll_end();
			}
			stallscope_park();
			stallscope_unpark();
			n += 8;
		}
		uint64_t next = tick + 1000000, t = now_ns();
		if (t < next) {
			struct timespec ts = {0, (long)(next - t)};
			nanosleep(&ts, NULL);
		}
	}
	stallscope_worker_end();
	produced[idx] = n + 2;
	producer_cpu[idx] = clock_s(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		rate = atol(argv[2]);
	char dir[] = "/tmp/stallscope-sustained-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	if (stallscope_start(&cfg) != 0) {
		fprintf(stderr, "bench_sustained: %s\n", stallscope_last_error());
		return 1;
	}
	double cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), main_cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	uint64_t t0 = now_ns();
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	stallscope_stop();
	double wall = (double)(now_ns() - t0) / 1e9;
	double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0 - (clock_s(CLOCK_THREAD_CPUTIME_ID) - main_cpu0);
	double writer_cpu = cpu - producer_cpu[0] - producer_cpu[1];

	struct stallscope_stats st;
	stallscope_get_stats(&st);
	uint64_t total = produced[0] + produced[1];
	printf("bench_sustained: 2 threads x %ld events/s for %.1f s (wall %.2f s)\n", rate, seconds, wall);
	printf("  produced %llu, accepted %llu, dropped %llu, written %llu\n",
	       (unsigned long long)total, (unsigned long long)st.events,
	       (unsigned long long)st.events_dropped, (unsigned long long)st.events_written);
	printf("  achieved rate %.2fM events/s per thread\n", (double)total / 2 / wall / 1e6);
	printf("  on disk %llu bytes = %.2f bytes/event (poll/park workload)\n",
	       (unsigned long long)st.bytes_written,
	       st.events_written ? (double)st.bytes_written / (double)st.events_written : 0.0);
	printf("  producer CPU %.2f s + %.2f s, writer CPU %.2f s = %.1f%% of one core, %.1f ns/event\n",
	       producer_cpu[0], producer_cpu[1], writer_cpu, 100.0 * writer_cpu / wall,
	       1e9 * writer_cpu / (double)(st.events_written ? st.events_written : 1));
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_sustained: could not remove %s\n", dir);
	return st.events_dropped ? 2 : 0;
}
