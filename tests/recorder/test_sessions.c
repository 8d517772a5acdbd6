/*
 * test_sessions.c - starting and stopping many times in one process: nothing is
 * lost, nothing leaks, and the recorder accounts for its own cost.
 *
 * 40 sessions alternate CPU sampling off and on (a session without sampling
 * leaves the sampler's thread table untouched, so the next sampling session must
 * still find it clean), the stall watchdog on and off, and a metrics file. In
 * each, the main thread and a worker thread of that session make polls with task
 * ids unique to the session, then stop follows at once: stop's promise is that
 * everything buffered is on disk when it returns. Checks:
 *   - every poll of every session is in the segments exactly once, no LOSS, every
 *     segment sealed (the rotation count keeps them all);
 *   - after the last stop the process has the descriptors and threads it had
 *     after the first session (the watchdog's futex wake-up ends its thread; the
 *     writer's and the tour's threads are joined), and its RSS grew by less than
 *     what one more session's thread table, sampler table or ring pages a
 *     session would add if they leaked (a released slot keeps up to 64 KiB of
 *     ring resident, by design, so RSS creeps until each slot used has its
 *     first pages: bounded, and below the limit here; not checked under ASan,
 *     whose quarantine keeps freed memory);
 *   - the metrics file each session leaves says it is over and holds what the
 *     session cost the recorder (stallscope_recorder_cpu_seconds: start, stop and
 *     writer above 0, the watchdog above 0 exactly when it ran) and the wake-up,
 *     cycle and look counters, which never go back and move for the watchdog
 *     only when it ran (cycles in every session: stop's own at least).
 */
#include <stallscope/stallscope.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_check.h"

/* Linked in only by the sanitizer build (tests/recorder/meson.build). */
extern void __asan_init(void) __attribute__((weak));

#define SESSIONS 40
#define POLLS 300u
#define TASK(session, k, worker) ((uint64_t)(session) * 100000u + (worker) * 50000u + (k) + 1)

static uint32_t site(void)
{
	return STALLSCOPE_LOCATION();
}

static void polls(int session, int worker)
{
	for (uint32_t k = 0; k < POLLS; k++) {
		stallscope_poll_begin(TASK(session, k, worker), site());
		stallscope_poll_end();
	}
}

static void *worker(void *arg)
{
	int session = (int)(intptr_t)arg;
	stallscope_worker_begin("sessions", 0);
	polls(session, 1);
	stallscope_worker_end();
	return NULL;
}

static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The value of the metrics line starting with key, or -1. */
static double metric(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	CHECK(f, "metrics file %s missing", path);
	char line[1024];
	double v = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ' ')
			v = strtod(line + strlen(key) + 1, NULL);
	fclose(f);
	return v;
}

int main(void)
{
	char *dir = tc_tmpdir("sessions");
	char metrics[600];
	snprintf(metrics, sizeof metrics, "%s/metrics.prom", dir);
	int fds1 = -1, threads1 = -1;
	long rss5 = 0;
	double wake_writer = 0, wake_watchdog = 0, cycles = 0, looks = 0;
	for (int s = 0; s < SESSIONS; s++) {
		struct stallscope_config cfg;
		stallscope_config_init(&cfg);
		cfg.output_dir = dir;
		cfg.file_prefix = "ses";
		cfg.rotation_count = 1000;
		cfg.cpu_sampling = s % 4 == 3; /* off, off, off, on, ... */
		int watchdog = s % 2 == 0;
		cfg.stall_threshold_ms = watchdog ? 10 : 0;
		cfg.metrics_file = metrics;
		CHECK(stallscope_start(&cfg) == 0, "start %d: %s", s, stallscope_last_error());
		pthread_t th;
		CHECK(pthread_create(&th, NULL, worker, (void *)(intptr_t)s) == 0, "thread");
		polls(s, 0);
		pthread_join(th, NULL);
		CHECK(stallscope_stop() == 0, "stop %d: %s", s, stallscope_last_error());

		CHECK(metric(metrics, "stallscope_active_sessions") == 0, "session %d: metrics say active", s);
		double start = metric(metrics, "stallscope_recorder_cpu_seconds{part=\"start\"}");
		double stop = metric(metrics, "stallscope_recorder_cpu_seconds{part=\"stop\"}");
		double wr = metric(metrics, "stallscope_recorder_cpu_seconds{part=\"writer\"}");
		double wd = metric(metrics, "stallscope_recorder_cpu_seconds{part=\"watchdog\"}");
		CHECK(start > 0 && stop > 0 && wr > 0, "session %d: own CPU start %g stop %g writer %g", s,
		      start, stop, wr);
		CHECK(watchdog ? wd > 0 : wd == 0, "session %d: watchdog %s but its CPU is %g", s,
		      watchdog ? "on" : "off", wd);
		double ww = metric(metrics, "stallscope_recorder_wakeups_total{thread=\"writer\"}");
		double wdw = metric(metrics, "stallscope_recorder_wakeups_total{thread=\"watchdog\"}");
		double cyc = metric(metrics, "stallscope_writer_cycles_total");
		double lk = metric(metrics, "stallscope_watchdog_looks_total");
		/* A session this short may end before a thread's first sleep, or
		 * the watchdog's first look; never before the writer's first cycle. */
		CHECK(ww >= wake_writer, "session %d: writer wake-ups %g, were %g", s, ww, wake_writer);
		CHECK(watchdog ? wdw >= wake_watchdog : wdw == wake_watchdog,
		      "session %d: watchdog wake-ups %g, were %g", s, wdw, wake_watchdog);
		CHECK(cyc > cycles, "session %d: writer cycles %g, were %g", s, cyc, cycles);
		CHECK(watchdog ? lk >= looks : lk == looks, "session %d: watchdog looks %g, were %g", s,
		      lk, looks);
		wake_writer = ww;
		wake_watchdog = wdw;
		cycles = cyc;
		looks = lk;
		if (s == 0) {
			fds1 = tc_fd_count();
			threads1 = thread_count();
		}
		if (s == 4)
			rss5 = tc_rss_kib();
		if (getenv("SESSIONS_RSS"))
			printf("session %d: RSS %ld KiB\n", s, tc_rss_kib());
	}
	CHECK(cycles > 0 && looks > 0, "writer cycles %g, watchdog looks %g", cycles, looks);
	int fds = tc_fd_count(), threads = thread_count();
	long rss = tc_rss_kib();
	CHECK(fds == fds1, "descriptors: %d after the first session, %d after the last", fds1, fds);
	CHECK(threads == threads1, "threads: %d after the first session, %d after the last", threads1, threads);
	CHECK(__asan_init || rss - rss5 < 8192, "RSS grew from %ld KiB after 5 sessions to %ld after %d",
	      rss5, rss, SESSIONS);

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "ses", true) == 0, "load");
	CHECK(t.corrupt_segments == 0 && t.truncated_segments == 0, "damaged segments");
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed && !t.segs[i].active, "segment %s not sealed", t.segs[i].path);
	CHECK(t.lost == 0, "%llu events reported lost", (unsigned long long)t.lost);
	static unsigned char seen[SESSIONS][2][POLLS];
	for (size_t i = 0; i < t.nevents; i++) {
		const struct tc_event *e = &t.events[i];
		if (e->type != SS_REC_POLL_BEGIN)
			continue;
		uint64_t task = e->a - 1;
		uint64_t s = task / 100000u, w = task % 100000u / 50000u, k = task % 50000u;
		CHECK(s < SESSIONS && k < POLLS, "unknown task %llu", (unsigned long long)e->a);
		CHECK(!seen[s][w][k]++, "task %llu written twice", (unsigned long long)e->a);
	}
	for (int s = 0; s < SESSIONS; s++)
		for (int w = 0; w < 2; w++)
			for (uint32_t k = 0; k < POLLS; k++)
				CHECK(seen[s][w][k], "session %d lost poll %u of the %s thread", s, k,
				      w ? "worker" : "main");
	printf("%d sessions, %zu segments, %llu polls, all there; fds %d, threads %d, RSS %ld -> %ld KiB\n",
	       SESSIONS, t.nsegs, (unsigned long long)t.by_type[SS_REC_POLL_BEGIN], fds, threads, rss5, rss);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
	return 0;
}
