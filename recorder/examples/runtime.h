/*
 * runtime.h - a small work-stealing task runtime, the host that the stallscope
 * example records. N workers, each with a local queue, share a global injection
 * queue; idle workers steal and then park on a condition variable. Tasks are poll
 * functions in the style of Rust futures: they return TASK_READY when finished or
 * TASK_PENDING after arranging to be woken (task_wake, a timer, another task).
 */
#ifndef EXAMPLE_RUNTIME_H
#define EXAMPLE_RUNTIME_H

#include <stdint.h>
#include <time.h>

#include <stallscope/stallscope.h>

#include "timer.h"

enum { TASK_READY = 0, TASK_PENDING = 1 };

struct task;
struct runtime;

/* Runs one step of a task on a worker thread. */
typedef int (*task_poll_fn)(struct task *task, void *ctx);
/* Releases ctx when the task completes or is dropped at shutdown. May be NULL. */
typedef void (*task_drop_fn)(void *ctx);

struct runtime_stats {
	uint64_t spawned;
	uint64_t completed;
	uint64_t live;       /* spawned and neither completed nor dropped */
	uint64_t polls;      /* exact only after runtime_shutdown() */
	uint64_t steals;     /* tasks moved from another worker's local queue */
	uint64_t parks;
};

static inline uint64_t rt_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Creates the runtime and starts its workers and timer thread; NULL on failure
 * (with a message on stderr). name labels the worker lanes in the trace. */
struct runtime *runtime_start(const char *name, uint32_t workers);

/* Spawns a task that will be polled first on some worker. Ownership of ctx passes
 * to the runtime even on failure. Returns the task id, or 0 when out of memory.
 * From a worker the task goes to that worker's local queue, from any other thread
 * to the global queue. Use runtime_spawn() so the trace names the call site. */
uint64_t runtime_spawn_at(struct runtime *rt, uint32_t location, task_poll_fn poll,
			  void *ctx, task_drop_fn drop);
#define runtime_spawn(rt, poll, ctx, drop) \
	runtime_spawn_at((rt), STALLSCOPE_LOCATION(), (poll), (ctx), (drop))

/* Schedules task to be polled again. Callable from any thread by whoever holds a
 * reference; a no-op on a task that is already scheduled or finished. */
void task_wake(struct task *task);

/* Wakes task once the monotonic clock reaches deadline_ns (from the timer thread).
 * The poll must still check the deadline itself: wakes may also come early. */
void task_wake_at(struct task *task, uint64_t deadline_ns);

/* References keep the task's memory valid for a later task_wake() from another
 * thread; the runtime holds one of its own until the task completes. */
void task_ref(struct task *task);
void task_unref(struct task *task);

uint64_t task_id(const struct task *task);
struct runtime *task_runtime(const struct task *task);

/* Runs fn(arg, 1) on the timer thread at deadline_ns, or fn(arg, 0) if the
 * runtime shuts down first. fn must not block. */
void runtime_call_at(struct runtime *rt, uint64_t deadline_ns, timer_fn fn, void *arg);

void runtime_get_stats(struct runtime *rt, struct runtime_stats *st);

/* Stops the workers after their current poll and joins them, then the timer
 * thread. Tasks still queued or pending stay allocated until runtime_destroy(). */
void runtime_shutdown(struct runtime *rt);

/* Drops every remaining task (their drop functions run) and frees the runtime.
 * Only after runtime_shutdown(). */
void runtime_destroy(struct runtime *rt);

#endif /* EXAMPLE_RUNTIME_H */
