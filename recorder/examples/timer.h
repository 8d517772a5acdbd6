/*
 * timer.h - one thread that runs callbacks at monotonic deadlines, kept in a
 * binary min-heap. The runtime builds sleeps and delayed I/O on it.
 */
#ifndef EXAMPLE_TIMER_H
#define EXAMPLE_TIMER_H

#include <stdint.h>

/* fired is 1 at the deadline, 0 when the timer thread stops first, so that the
 * callback can release what arg holds either way. */
typedef void (*timer_fn)(void *arg, int fired);

struct timer_thread;

/* NULL on failure. */
struct timer_thread *timer_thread_start(void);

/* Callable from any thread. Callbacks run on the timer thread in deadline order
 * and must not block, since they delay every later timer. */
void timer_thread_add(struct timer_thread *tt, uint64_t deadline_ns, timer_fn fn, void *arg);

/* Joins the thread, then calls every pending callback with fired = 0. */
void timer_thread_stop(struct timer_thread *tt);

#endif /* EXAMPLE_TIMER_H */
