/*
 * park_poll.h - a worker that alternates PP_ROUNDS times between a 5 ms sleep
 * while parked (stallscope_park) and a 5 ms sleep inside a poll, and keeps each
 * sleep's window as it saw it, for the tests of what the sampler records in
 * parks and in polls (test_offcpu_filter, test_parked_switches). Public API only.
 *
 * pp_record() records a session of it with offcpu_stacks set and decodes the
 * segments. Before its rounds the worker parks and waits for one whole writer
 * cycle: the writer
 * follows a worker (and hands it its in-poll cell) in the cycle that drains its
 * first events, and a park before the cell exists is not what the tests check.
 */
#ifndef STALLSCOPE_TESTS_PARK_POLL_H
#define STALLSCOPE_TESTS_PARK_POLL_H

#include <stallscope/stallscope.h>

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"
#include "writer_cycles.h"

#define PP_ROUNDS 12
#define PP_SLEEP_NS 5000000L

struct pp_window {
	uint64_t b, e;
};

struct pp_run {
	const char *runtime;  /* the worker's runtime name */
	uint32_t tid;
	struct pp_window park[PP_ROUNDS], poll[PP_ROUNDS];
};

static inline uint64_t pp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int pp_inside(const struct pp_window *w, uint64_t ts)
{
	return ts >= w->b && ts <= w->e;
}

static inline void pp_sleep(struct pp_window *w)
{
	struct timespec ts = { 0, PP_SLEEP_NS };
	w->b = pp_now_ns();
	nanosleep(&ts, NULL);
	w->e = pp_now_ns();
}

/* The thread's body (pthread_create's start routine) for a struct pp_run. */
static inline void *pp_worker(void *arg)
{
	struct pp_run *r = arg;
	r->tid = (uint32_t)gettid();
	stallscope_worker_begin(r->runtime, 0);
	uint32_t loc = STALLSCOPE_LOCATION();
	/* A cycle counted as begun after the park drains it, and it has ended once
	 * the next one is counted: two cycles, however late a loaded machine runs
	 * them (a fixed 150 ms was not always enough). */
	stallscope_park();
	CHECK(writer_cycle_wait() == 0, "the writer ran no whole cycle in 60 s");
	stallscope_unpark();
	for (int i = 0; i < PP_ROUNDS; i++) {
		stallscope_park();
		pp_sleep(&r->park[i]);
		stallscope_unpark();
		stallscope_poll_begin(1000 + (uint64_t)i, loc);
		pp_sleep(&r->poll[i]);
		stallscope_poll_end();
	}
	stallscope_worker_end();
	return NULL;
}

/* A session with default settings but offcpu_stacks, the worker run in it, its
 * segments decoded into t; *dir (tc_tmpdir(tag)) is the caller's to remove. */
static inline void pp_record(struct pp_run *r, const char *runtime, const char *tag, int offcpu_stacks,
			     struct tc_trace *t, char **dir)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	*dir = tc_tmpdir(tag);
	cfg.output_dir = *dir;
	cfg.offcpu_stacks = offcpu_stacks;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	memset(r, 0, sizeof *r);
	r->runtime = runtime;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, pp_worker, r) == 0, "pthread_create");
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	CHECK(tc_load_dir(t, *dir, "stallscope", true) == 0, "load %s", *dir);
	CHECK(t->corrupt_segments == 0 && t->truncated_segments == 0, "segments damaged");
}

#endif /* STALLSCOPE_TESTS_PARK_POLL_H */
