/*
 * test_clock.c - whatever the hooks stamp with (the TSC converted by the writer,
 * or clock_gettime), every event's time in the segment is CLOCK_MONOTONIC ns:
 * each MARK carries the CLOCK_MONOTONIC time read just before its hook, so its
 * ts must lie between its own value and the next mark's (read just after). The
 * marks span several of the writer's calibration intervals (100 ms), and a
 * second thread's marks, ordered against the first's by a handshake, must not
 * come out earlier than the mark they follow. Run once with STALLSCOPE_CLOCK_VDSO
 * (exact) and once with STALLSCOPE_CLOCK_AUTO (the TSC where this machine allows
 * it, which META hook_clock says; the conversion may be off by the drift bound).
 */
#include <stallscope/stallscope.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace_check.h"

#define MARKS 3000
/* The conversion's error bound in the TSC case: the writer logs drift past
 * 100 us between calibrations; a sound conversion stays far below. */
#define TSC_SLACK_NS 100000

static uint32_t name_main, name_other;
static _Atomic int turn; /* handshake: the other thread marks after main's mark i */
static _Atomic int stop_other;

static int64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *other(void *arg)
{
	(void)arg;
	int seen = 0;
	while (!atomic_load(&stop_other)) {
		int t = atomic_load(&turn);
		if (t == seen) {
			struct timespec w = {0, 100000};
			nanosleep(&w, NULL);
			continue;
		}
		seen = t;
		stallscope_mark(name_other, t); /* after main's mark number t-1 */
	}
	return NULL;
}

static void run(int32_t clock, const char *tag)
{
	char *dir = tc_tmpdir(tag);
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = "ck";
	cfg.cpu_sampling = 0;
	cfg.hook_clock = clock;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	atomic_store(&turn, 0);
	atomic_store(&stop_other, 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, other, NULL) == 0, "thread");
	static int64_t before[MARKS + 1];
	for (int i = 0; i < MARKS; i++) {
		before[i] = mono();
		stallscope_mark(name_main, before[i]);
		if (i % 100 == 99) {
			atomic_store(&turn, i + 1);
			struct timespec w = {0, 15000000}; /* 30 pauses: 450 ms, 4+ calibrations */
			nanosleep(&w, NULL);
		}
	}
	before[MARKS] = mono();
	atomic_store(&stop_other, 1);
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "ck", true) == 0, "load");
	const char *hc = tc_meta(&t, "hook_clock");
	CHECK(hc, "no META hook_clock");
	int tsc = !strncmp(hc, "tsc:", 4);
	CHECK(tsc || !strncmp(hc, "vdso:", 5), "META hook_clock: %s", hc);
	CHECK(clock != STALLSCOPE_CLOCK_VDSO || !tsc, "asked for vdso, got %s", hc);
	printf("%s: hook_clock %s\n", tag, hc);
	int64_t slack = tsc ? TSC_SLACK_NS : 0, worst = 0;
	int k = 0, others = 0;
	int64_t other_prev = 0;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct tc_event *e = &t.events[i];
		if (e->type != SS_REC_MARK)
			continue;
		int64_t ts = (int64_t)e->ts;
		if (e->a == name_main) {
			CHECK(k < MARKS && (int64_t)e->b == before[k], "mark %d out of order", k);
			int64_t lo = before[k] - ts, hi = ts - before[k + 1];
			int64_t off = lo > hi ? lo : hi;
			if (off > worst)
				worst = off;
			CHECK(ts + slack >= before[k] && ts <= before[k + 1] + slack,
			      "mark %d at %lld ns, not within [%lld, %lld] (+- %lld)", k, (long long)ts,
			      (long long)before[k], (long long)before[k + 1], (long long)slack);
			k++;
		} else if (e->a == name_other) {
			/* After main's mark b-1 and its pause started: not before that mark. */
			int b = (int)e->b;
			CHECK(b >= 1 && b <= MARKS, "other mark %d", b);
			CHECK(ts + slack >= before[b - 1], "the other thread's mark %d at %lld ns, "
			      "before main's mark it follows (%lld)", b, (long long)ts,
			      (long long)before[b - 1]);
			CHECK(ts >= other_prev, "the other thread's times went back");
			other_prev = ts;
			others++;
		}
	}
	CHECK(k == MARKS, "decoded %d of %d marks", k, MARKS);
	CHECK(others >= 1, "no marks from the other thread");
	printf("%s: %d marks, %d on the second thread, worst distance outside the bracket %lld ns\n",
	       tag, k, others, (long long)worst);
	tc_free(&t);
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	name_main = stallscope_name("main");
	name_other = stallscope_name("other");
	run(STALLSCOPE_CLOCK_VDSO, "clock-vdso");
	run(STALLSCOPE_CLOCK_AUTO, "clock-auto");
	/* A value out of range is refused at start, with the reason. */
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.hook_clock = 7;
	CHECK(stallscope_start(&cfg) != 0 && strstr(stallscope_last_error(), "hook_clock"),
	      "hook_clock 7 accepted");
	return 0;
}
