/*
 * bench_stalls.c - what stall detection and task dumps cost, as ratios measured
 * in one run (the machine is shared and noisy):
 *   1. the watchdog thread's CPU time with 8 busy workers, as % of one core
 *      (target < 0.5 %); hooks only the looks run on the writer's thread, and
 *      then the library's account of that thread's watchdog part is used;
 *   2. stallscope_task_pending() per call with a 20-frame stack, next to a
 *      clock_gettime() measured in the same run (target < 150 ns), and the call
 *      with task dumps off;
 *   3. the example runtime's CPU time per completed task with task dumps on,
 *      relative to off (argv[1] = its path; skipped without it).
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stallscope/stallscope.h>

#include "bench_util.h"

static void sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000L };
	nanosleep(&ts, NULL);
}

static char dir_template[64];

static int start(uint32_t threshold_ms, int dumps)
{
	strcpy(dir_template, "/tmp/bench-stalls-XXXXXX");
	if (!mkdtemp(dir_template))
		return -1;
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir_template;
	cfg.stall_threshold_ms = threshold_ms;
	cfg.task_dump_enabled = dumps;
	cfg.cpu_sampling = 0;
	return stallscope_start(&cfg);
}

static void finish(void)
{
	stallscope_stop();
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir_template);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir_template);
}

/* ---- 1. watchdog CPU ---- */

static _Atomic int stop_flag;

static void *busy_worker(void *arg)
{
	uint32_t idx = (uint32_t)(uintptr_t)arg;
	stallscope_worker_begin("bench", idx);
	uint64_t task = (uint64_t)idx << 32;
	volatile uint64_t x = 0;
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		for (int k = 0; k < 50; k++) {
			stallscope_poll_begin(++task, 0);
			for (int i = 0; i < 2000; i++)
				x += (uint64_t)i * 7;
			stallscope_poll_end();
		}
		stallscope_park();
		sleep_us(500);
		stallscope_unpark();
	}
	stallscope_worker_end();
	return NULL;
}

/* CPU time of the thread named name, in ns, from its schedstat; 0 when not found. */
static uint64_t thread_cpu_by_name(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return 0;
	struct dirent *de;
	uint64_t cpu = 0;
	while ((de = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof comm, f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, name) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", de->d_name);
		f = fopen(path, "r");
		unsigned long long run = 0;
		if (f && fscanf(f, "%llu", &run) == 1)
			cpu = run;
		if (f)
			fclose(f);
	}
	closedir(d);
	return cpu;
}

static void bench_watchdog(void)
{
	uint64_t session_t0 = now_ns();
	if (start(10, 0) != 0) {
		printf("watchdog: cannot start: %s\n", stallscope_last_error());
		return;
	}
	pthread_t th[8];
	atomic_store(&stop_flag, 0);
	for (uintptr_t i = 0; i < 8; i++)
		pthread_create(&th[i], NULL, busy_worker, (void *)i);
	sleep_us(200000);
	/* Hooks only, the looks run on the writer's thread (no ss-watchdog): then
	 * the session's watchdog part of that thread's CPU, as the library
	 * accounts it at stop (its looks, captures, sleeps and wake-ups; not the
	 * writer's cycles), over the whole session. */
	int own = thread_cpu_by_name("ss-watchdog") != 0;
	uint64_t c0 = own ? thread_cpu_by_name("ss-watchdog") : 0, t0 = now_ns();
	sleep_us(3000000);
	uint64_t c1 = own ? thread_cpu_by_name("ss-watchdog") : 0, t1 = now_ns();
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	finish();
	if (!own) {
		static char text[65536];
		const char *key = "stallscope_recorder_cpu_seconds{part=\"watchdog\"} ";
		const char *at = stallscope_metrics_text(text, sizeof text) < sizeof text
					 ? strstr(text, key) : NULL;
		if (!at) {
			printf("watchdog CPU with 8 busy workers (threshold 10 ms, on the writer's thread): "
			       "n/a (the metrics text has no %s)\n", key);
			return;
		}
		c1 = (uint64_t)(strtod(at + strlen(key), NULL) * 1e9);
		t1 = now_ns();
		t0 = session_t0;
	}
	printf("watchdog CPU with 8 busy workers (threshold 10 ms, %s): %.3f ms over %.2f s = "
	       "%.3f %% of one core (target < 0.5 %%)\n",
	       own ? "its thread" : "on the writer's thread, the session's account",
	       (double)(c1 - c0) / 1e6, (double)(t1 - t0) / 1e9,
	       100.0 * (double)(c1 - c0) / (double)(t1 - t0));
}

/* ---- 2. stallscope_task_pending() ---- */

#define BATCH 200
#define BATCHES 100

struct pend_result {
	double on_ns, off_ns, clock_ns;
};

__attribute__((noinline)) static void pending_batch(uint64_t *elapsed, int n)
{
	uint64_t t0 = now_ns();
	for (int i = 0; i < n; i++)
		stallscope_task_pending();
	*elapsed += now_ns() - t0;
	__asm__ volatile("" ::: "memory");
}

/* Recurses to depth frames, then runs the batches: the pending calls see a
 * 20-frame stack (this chain plus the thread's own start frames). */
__attribute__((noinline)) static void deep(int depth, int batches, uint64_t *elapsed)
{
	if (depth > 0) {
		deep(depth - 1, batches, elapsed);
		__asm__ volatile("" ::: "memory"); /* no tail call: keep the frame */
		return;
	}
	for (int b = 0; b < batches; b++) {
		stallscope_poll_begin(1000 + (uint64_t)b, 0);
		pending_batch(elapsed, BATCH);
		stallscope_poll_end();
		/* Let the writer drain the 256-entry pending ring (it cycles every 10 ms). */
		sleep_us(12000);
	}
}

static void *pending_thread(void *arg)
{
	uint64_t *elapsed = arg;
	stallscope_worker_begin("bench", 0);
	deep(16, *elapsed ? (int)*elapsed : BATCHES, elapsed + 1);
	stallscope_worker_end();
	return NULL;
}

static double run_pending(int dumps, int batches)
{
	if (start(0, dumps) != 0) {
		printf("task_pending: cannot start: %s\n", stallscope_last_error());
		return 0;
	}
	uint64_t arg[2] = { (uint64_t)batches, 0 };
	pthread_t th;
	pthread_create(&th, NULL, pending_thread, arg);
	pthread_join(th, NULL);
	finish();
	return (double)arg[1] / ((double)batches * BATCH);
}

static void bench_pending(void)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = now_ns();
	for (int i = 0; i < 1000000; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
	double clock_ns = (double)(now_ns() - t0) / 1e6;
	double on = run_pending(1, BATCHES);
	double off = run_pending(0, 20);
	printf("stallscope_task_pending() with a 20-frame stack: %.1f ns per call (task dumps on), "
	       "%.1f ns (off); clock_gettime %.1f ns in the same run; on = %.1fx clock_gettime "
	       "(target < 150 ns)\n", on, off, clock_ns, on / clock_ns);
}

/* ---- 3. example runtime throughput ---- */

/* Runs the example; returns CPU seconds per 1000 completed tasks, 0 on failure. */
static double run_example(const char *exe, int dumps, unsigned long long *completed_out)
{
	char dir[] = "/tmp/bench-stalls-ex-XXXXXX";
	if (!mkdtemp(dir))
		return 0;
	int p[2];
	if (pipe(p) != 0)
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		setenv("STALLSCOPE_ENABLED", "1", 1);
		setenv("STALLSCOPE_OUTPUT_DIR", dir, 1);
		setenv("STALLSCOPE_TASK_DUMP_ENABLED", dumps ? "1" : "0", 1);
		setenv("STALLSCOPE_CPU_SAMPLING", "0", 1);
		execl(exe, exe, "--scenario", "steady", "--rate", "20000", "--duration", "2",
		      (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char out[8192];
	size_t len = 0;
	ssize_t n;
	while ((n = read(p[0], out + len, sizeof out - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = 0;
	close(p[0]);
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 0;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	const char *c = strstr(out, "completed=");
	unsigned long long completed = c ? strtoull(c + 10, NULL, 10) : 0;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	*completed_out = completed;
	return completed ? cpu * 1000.0 / (double)completed : 0;
}

static void bench_example(const char *exe)
{
	double off = 0, on = 0;
	unsigned long long c_off = 0, c_on = 0, c;
	/* Alternated, so drifts in machine load hit both alike. */
	for (int round = 0; round < 2; round++) {
		off += run_example(exe, 0, &c);
		c_off += c;
		on += run_example(exe, 1, &c);
		c_on += c;
	}
	if (off <= 0 || on <= 0) {
		printf("example runtime: a run failed\n");
		return;
	}
	printf("example runtime steady @ 20000 tasks/s: %.3f ms CPU per 1000 tasks with task dumps "
	       "off (%llu tasks), %.3f ms on (%llu tasks): on/off = %.3f\n", off / 2 * 1000,
	       c_off, on / 2 * 1000, c_on, on / off);
}

int main(int argc, char **argv)
{
	bench_watchdog();
	bench_pending();
	if (argc > 1)
		bench_example(argv[1]);
	else
		printf("example runtime: no path given, skipped\n");
	return 0;
}
