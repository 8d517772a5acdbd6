/*
 * scenarios.c - request tasks and the pathologies layered on them. Every
 * parameter is drawn at spawn time on the load-generator thread from a seeded
 * generator, so a given --seed gives the same sequence of tasks on every run.
 */
#include "scenarios.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_work.h"

/* Culprits stay real, separately named frames: no inlining, no .constprop/.isra
 * clones that would rename them, and no identical-code folding (gcc's ICF merged
 * two spin loops into one address, so a stack could name the wrong culprit). */
#if defined(__clang__)
#define CULPRIT __attribute__((noinline))
#else
#define CULPRIT __attribute__((noipa))
#endif

enum req_kind {
	K_PLAIN,      /* a few microseconds of CPU */
	K_SLEEP,      /* CPU, a timer of 0.1-2 ms, CPU */
	K_FANOUT,     /* spawns two children and waits for both */
	K_CHILD,
	K_LONG_POLL,  /* spins 15-60 ms inside one poll */
	K_BLOCKING,   /* blocks 10-40 ms in read() inside one poll */
	K_MUTEX_HOLD, /* holds the shared mutex 5-20 ms */
	K_MUTEX_WAIT, /* takes the shared mutex briefly, so waits behind a holder */
	K_HEAVY,      /* ~1 ms of CPU, spawned faster than workers can serve */
	K_LEAK,       /* returns PENDING and is never woken */
};

struct scenario_run;

struct req {
	struct scenario_run *run;
	uint64_t spawned_ns;
	uint64_t deadline_ns;
	uint32_t work_us;
	uint32_t param_us;
	uint8_t kind;
	uint8_t phase;
	_Atomic uint32_t children_left;
	struct task *parent;          /* children: a reference, released on finish */
	struct req *parent_req;
};

typedef void (*pick_fn)(struct scenario_run *run, struct req *r);

struct scenario {
	const char *name;
	const char *description;
	double default_rate;
	pick_fn pick;
};

struct scenario_run {
	const struct scenario *sc;
	struct runtime *rt;
	uint64_t rng;           /* load-generator thread only */
	uint64_t seq;           /* load-generator thread only */
	_Atomic uint64_t leaked;
	_Atomic uint64_t sink;  /* gives burned results an observable effect */
	pthread_mutex_t shared_lock;
	uint64_t shared_state;  /* under shared_lock */
};

static uint64_t rnd(struct scenario_run *run)
{
	/* xorshift64*: tiny, and good enough to vary task parameters. */
	uint64_t x = run->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	run->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_range(struct scenario_run *run, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(rnd(run) % (uint64_t)(hi - lo + 1));
}

static void sink(struct scenario_run *run, uint64_t v)
{
	atomic_fetch_add_explicit(&run->sink, v, memory_order_relaxed);
}

/* ---- culprits ----------------------------------------------------------------- */

CULPRIT static uint64_t culprit_spin_long_poll(uint32_t us)
{
	return cpu_spin(cpu_iters_for_us(us), us);
}

CULPRIT static void long_poll_task_body(struct scenario_run *run, uint32_t us)
{
	/* Using the result after the call keeps it from becoming a tail call, which
	 * would drop this frame from the stack. */
	uint64_t v = culprit_spin_long_poll(us);
	sink(run, v);
}

static void pipe_writer_fire(void *arg, int fired)
{
	int fd = (int)(intptr_t)arg;
	if (fired) {
		char c = 'x';
		ssize_t n = write(fd, &c, 1);
		(void)n; /* a failed write closes the pipe below: the reader sees EOF */
	}
	close(fd);
}

/* Stands for a synchronous client call inside async code: the worker sits in
 * read() until a "backend" (the timer thread) answers us microseconds later. */
CULPRIT static int culprit_blocking_syscall(struct runtime *rt, uint32_t us)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0) {
		struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return 0;
	}
	runtime_call_at(rt, rt_now_ns() + (uint64_t)us * 1000u, pipe_writer_fire,
			(void *)(intptr_t)fds[1]);
	char c = 0;
	ssize_t n;
	do
		n = read(fds[0], &c, 1);
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	return n == 1 ? c : -1;
}

CULPRIT static void culprit_mutex_holder(struct scenario_run *run, uint32_t us)
{
	pthread_mutex_lock(&run->shared_lock);
	run->shared_state += cpu_spin(cpu_iters_for_us(us), run->shared_state);
	pthread_mutex_unlock(&run->shared_lock);
}

CULPRIT static uint64_t culprit_mutex_waiter(struct scenario_run *run)
{
	pthread_mutex_lock(&run->shared_lock);
	uint64_t v = run->shared_state;
	pthread_mutex_unlock(&run->shared_lock);
	return v;
}

CULPRIT static uint64_t starvation_task_work(uint32_t us)
{
	return cpu_spin(cpu_iters_for_us(us), us);
}

/* Returns PENDING without handing its task to any waker: nothing will ever poll
 * it again, yet it stays alive. */
CULPRIT static int culprit_leak_forgotten_waker(struct req *r)
{
	if (r->phase == 0) {
		r->phase = 1;
		uint64_t n = atomic_fetch_add(&r->run->leaked, 1) + 1;
		stallscope_mark(STALLSCOPE_NAME("leaked_tasks"), (int64_t)n);
	}
	stallscope_task_pending(); /* a task dump shows where it was forgotten */
	return TASK_PENDING;
}

/* ---- request tasks --------------------------------------------------------------- */

static void req_drop(void *ctx)
{
	struct req *r = ctx;
	if (r->parent)
		task_unref(r->parent); /* a child dropped before finishing */
	free(r);
}

static int request_poll(struct task *t, void *ctx);

static void spawn_children(struct task *t, struct req *r)
{
	atomic_store(&r->children_left, 2);
	for (int i = 0; i < 2; i++) {
		struct req *c = calloc(1, sizeof(*c));
		if (!c) {
			atomic_fetch_sub(&r->children_left, 1);
			continue;
		}
		c->run = r->run;
		c->spawned_ns = rt_now_ns();
		c->kind = K_CHILD;
		c->work_us = 2 + (r->work_us + (uint32_t)i * 3) % 7;
		c->parent_req = r;
		c->parent = t;
		task_ref(t);
		/* On failure the runtime has already dropped c, and its reference. */
		if (runtime_spawn(task_runtime(t), request_poll, c, req_drop) == 0)
			atomic_fetch_sub(&r->children_left, 1);
	}
}

static void child_finish(struct req *r)
{
	struct task *parent = r->parent;
	r->parent = NULL;
	/* After the decrement the parent may complete and free parent_req: only the
	 * parent task, which we hold a reference to, is touched afterwards. */
	if (atomic_fetch_sub(&r->parent_req->children_left, 1) == 1)
		task_wake(parent);
	task_unref(parent);
}

static int request_step(struct task *t, struct req *r)
{
	struct scenario_run *run = r->run;
	switch (r->kind) {
	case K_PLAIN:
		sink(run, cpu_burn_us(r->work_us));
		return TASK_READY;
	case K_SLEEP:
		if (r->phase == 0) {
			sink(run, cpu_burn_us(r->work_us / 2));
			r->deadline_ns = rt_now_ns() + (uint64_t)r->param_us * 1000u;
			r->phase = 1;
			task_wake_at(t, r->deadline_ns);
			stallscope_task_pending();
			return TASK_PENDING;
		}
		if (rt_now_ns() < r->deadline_ns) {
			stallscope_task_pending();
			return TASK_PENDING; /* early wake; the timer is still armed */
		}
		sink(run, cpu_burn_us(r->work_us - r->work_us / 2));
		return TASK_READY;
	case K_FANOUT:
		if (r->phase == 0) {
			sink(run, cpu_burn_us(r->work_us));
			r->phase = 1;
			spawn_children(t, r);
		}
		if (atomic_load(&r->children_left) > 0) {
			stallscope_task_pending(); /* waits for its children */
			return TASK_PENDING;
		}
		return TASK_READY;
	case K_CHILD:
		sink(run, cpu_burn_us(r->work_us));
		child_finish(r);
		return TASK_READY;
	case K_LONG_POLL:
		sink(run, cpu_burn_us(r->work_us));
		long_poll_task_body(run, r->param_us);
		return TASK_READY;
	case K_BLOCKING: {
		sink(run, cpu_burn_us(r->work_us));
		uint32_t name = STALLSCOPE_NAME("backend_call");
		stallscope_span_begin(name);
		int c = culprit_blocking_syscall(task_runtime(t), r->param_us);
		stallscope_span_end(name);
		sink(run, (uint64_t)c);
		return TASK_READY;
	}
	case K_MUTEX_HOLD:
		culprit_mutex_holder(run, r->param_us);
		return TASK_READY;
	case K_MUTEX_WAIT:
		sink(run, cpu_burn_us(r->work_us));
		sink(run, culprit_mutex_waiter(run));
		return TASK_READY;
	case K_HEAVY:
		sink(run, starvation_task_work(r->param_us));
		return TASK_READY;
	case K_LEAK:
		return culprit_leak_forgotten_waker(r);
	}
	return TASK_READY;
}

static int request_poll(struct task *t, void *ctx)
{
	struct req *r = ctx;
	uint32_t name = STALLSCOPE_NAME("request");
	stallscope_span_begin(name);
	int st = request_step(t, r);
	stallscope_span_end(name);
	if (st == TASK_READY && r->kind != K_CHILD)
		stallscope_mark(STALLSCOPE_NAME("request_latency_us"),
				(int64_t)((rt_now_ns() - r->spawned_ns) / 1000u));
	return st;
}

/* ---- choosing and spawning --------------------------------------------------------- */

static void pick_steady(struct scenario_run *run, struct req *r)
{
	uint32_t x = rnd_range(run, 0, 99);
	r->work_us = rnd_range(run, 2, 10);
	if (x < 60) {
		r->kind = K_PLAIN;
	} else if (x < 90) {
		r->kind = K_SLEEP;
		r->param_us = rnd_range(run, 100, 2000);
	} else {
		r->kind = K_FANOUT;
	}
}

static void pick_long_poll(struct scenario_run *run, struct req *r)
{
	pick_steady(run, r);
	/* 1 in 100 at 2000/s is ~0.75 of a core spinning: visible, not saturating. */
	if (run->seq % 100 == 99) {
		r->kind = K_LONG_POLL;
		r->param_us = rnd_range(run, 15000, 60000);
	}
}

static void pick_blocking(struct scenario_run *run, struct req *r)
{
	pick_steady(run, r);
	if (run->seq % 50 == 49) {
		r->kind = K_BLOCKING;
		r->param_us = rnd_range(run, 10000, 40000);
	}
}

static void pick_mutex(struct scenario_run *run, struct req *r)
{
	pick_steady(run, r);
	/* The lock is held about a quarter of the time at 2000/s: waiters pile up
	 * behind each holder without the whole runtime serialising. */
	if (run->seq % 100 == 99) {
		r->kind = K_MUTEX_HOLD;
		r->param_us = rnd_range(run, 5000, 20000);
	} else if (rnd_range(run, 0, 4) == 0) {
		r->kind = K_MUTEX_WAIT;
	}
}

static void pick_starvation(struct scenario_run *run, struct req *r)
{
	r->kind = K_HEAVY;
	r->param_us = rnd_range(run, 800, 1200);
}

static void pick_leak(struct scenario_run *run, struct req *r)
{
	pick_steady(run, r);
	if (run->seq % 20 == 19)
		r->kind = K_LEAK;
}

static const struct scenario scenarios[] = {
	{ "steady", "short tasks, some awaiting a 0.1-2 ms timer, some fanning out; no long polls",
	  2000, pick_steady },
	{ "long-poll", "steady, plus every 100th task spinning 15-60 ms in culprit_spin_long_poll()",
	  2000, pick_long_poll },
	{ "blocking", "steady, plus every 50th task blocking 10-40 ms in read() in culprit_blocking_syscall()",
	  2000, pick_blocking },
	{ "mutex", "steady, plus culprit_mutex_holder() holding a mutex 5-20 ms while culprit_mutex_waiter() tasks queue on it",
	  2000, pick_mutex },
	{ "starvation", "~1 ms tasks arriving far faster than the workers serve them (culprit_overload_spawn()): the global queue grows",
	  10000, pick_starvation },
	{ "leak", "steady, plus every 20th task parked forever by culprit_leak_forgotten_waker(): live tasks grow",
	  2000, pick_leak },
};

/* Its own function so that the spawn location of the flood names the culprit. */
CULPRIT static uint64_t culprit_overload_spawn(struct scenario_run *run, struct req *r)
{
	return runtime_spawn(run->rt, request_poll, r, req_drop);
}

void scenario_spawn_one(struct scenario_run *run)
{
	struct req *r = calloc(1, sizeof(*r));
	if (!r)
		return;
	r->run = run;
	run->sc->pick(run, r);
	run->seq++;
	r->spawned_ns = rt_now_ns();
	/* One spawn site per kind, so the trace can colour tasks by what they are. */
	switch ((enum req_kind)r->kind) {
	case K_HEAVY:
		culprit_overload_spawn(run, r);
		break;
	case K_LONG_POLL:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_BLOCKING:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_MUTEX_HOLD:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_MUTEX_WAIT:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_LEAK:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_SLEEP:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_FANOUT:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	case K_PLAIN:
	case K_CHILD:
	default:
		runtime_spawn(run->rt, request_poll, r, req_drop);
		break;
	}
}

const struct scenario *scenario_find(const char *name)
{
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(scenarios[i].name, name) == 0)
			return &scenarios[i];
	return NULL;
}

const char *scenario_name(const struct scenario *sc)
{
	return sc->name;
}

double scenario_default_rate(const struct scenario *sc)
{
	return sc->default_rate;
}

void scenario_print_list(FILE *out)
{
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(out, "  %-11s %s (default rate %.0f/s)\n", scenarios[i].name,
			scenarios[i].description, scenarios[i].default_rate);
}

struct scenario_run *scenario_run_create(const struct scenario *sc, struct runtime *rt,
					 uint64_t seed)
{
	struct scenario_run *run = calloc(1, sizeof(*run));
	if (!run)
		return NULL;
	run->sc = sc;
	run->rt = rt;
	/* xorshift must not start at 0; mix so that small seeds differ widely. */
	run->rng = (seed ^ 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
	if (run->rng == 0)
		run->rng = 1;
	pthread_mutex_init(&run->shared_lock, NULL);
	return run;
}

uint64_t scenario_expected_leftover(struct scenario_run *run)
{
	return atomic_load(&run->leaked);
}

void scenario_run_destroy(struct scenario_run *run)
{
	if (!run)
		return;
	pthread_mutex_destroy(&run->shared_lock);
	free(run);
}
