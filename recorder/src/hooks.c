/*
 * hooks.c - the hot path. Every public hook is: one load of ss_state and a branch
 * when not recording; otherwise a clock read and one 32-byte store into the calling
 * thread's single-producer ring. No locks, no allocation, no system calls, no
 * loops. The clock is ss_stamp(): one rdtsc where the TSC is usable (the writer
 * converts it to CLOCK_MONOTONIC ns, clock.c), else clock_gettime through the
 * vDSO. A full ring drops the event and counts
 * it; the next event that fits is preceded by a LOSS entry carrying the count and
 * time range, so the loss lands in the trace at the place it happened.
 */
#include "recorder-private.h"

SS_INTERNAL _Atomic uint32_t ss_state;
/* initial-exec: a direct %fs-relative access instead of a __tls_get_addr call. */
SS_INTERNAL __thread struct ss_slot *ss_tls_slot __attribute__((tls_model("initial-exec")));
SS_INTERNAL __thread uint32_t ss_tls_session __attribute__((tls_model("initial-exec")));

static inline void put(struct ss_slot *s, uint64_t h, uint32_t kind, uint64_t ts,
		       uint64_t a, uint32_t b, uint64_t c)
{
	struct ss_ev *e = &s->ring[h & s->mask];
	e->ts = ts;
	e->a = a;
	e->c = c;
	e->b = b;
	e->kind = kind;
}

static __attribute__((noinline, cold)) void drop(struct ss_slot *s, uint64_t ts)
{
	uint64_t n = atomic_load_explicit(&s->drop_pending, memory_order_relaxed);
	if (n == 0)
		atomic_store_explicit(&s->drop_first_ts, ts, memory_order_relaxed);
	atomic_store_explicit(&s->drop_last_ts, ts, memory_order_relaxed);
	/* Release: a writer that takes the count (thread gone, or stop) sees its times. */
	atomic_store_explicit(&s->drop_pending, n + 1, memory_order_release);
	atomic_store_explicit(&s->dropped,
			      atomic_load_explicit(&s->dropped, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* Inlined into every hook: a call here would cost as much as the rest together. */
static inline __attribute__((always_inline)) void push(struct ss_slot *s, uint32_t kind,
							uint64_t ts, uint64_t a, uint32_t b,
							uint64_t c)
{
	uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed);
	uint64_t pending = atomic_load_explicit(&s->drop_pending, memory_order_relaxed);
	uint64_t need = SS_UNLIKELY(pending) ? 2 : 1;
	uint64_t cap = s->mask + 1;

	if (SS_UNLIKELY(h + need - s->cached_tail > cap)) {
		/* Acquire pairs with the writer's release of tail: its reads of the
		 * entries we are about to overwrite are finished. */
		s->cached_tail = atomic_load_explicit(&s->tail, memory_order_acquire);
		if (h + need - s->cached_tail > cap) {
			drop(s, ts);
			return;
		}
	}
	if (SS_UNLIKELY(need == 2)) {
		put(s, h++, SS_EV_LOSS,
		    atomic_load_explicit(&s->drop_first_ts, memory_order_relaxed), pending,
		    SS_LOSS_BUFFER_FULL,
		    atomic_load_explicit(&s->drop_last_ts, memory_order_relaxed));
		atomic_store_explicit(&s->drop_pending, 0, memory_order_relaxed);
	}
	put(s, h, kind, ts, a, b, c);
	atomic_store_explicit(&s->head, h + 1, memory_order_release);
}

SS_INTERNAL void ss_push(struct ss_slot *s, uint32_t kind, uint64_t ts, uint64_t a,
			 uint32_t b, uint64_t c)
{
	push(s, kind, ts, a, b, c);
}

/* The common prologue: the slot of the calling thread in this session, or NULL. */
static inline struct ss_slot *slot(void)
{
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_relaxed);
	if (SS_LIKELY(st == 0))
		return NULL;
	if (SS_UNLIKELY(ss_tls_session != st))
		return ss_attach(st);
	return ss_tls_slot;
}

#define HOOK(kind, a, b, c)                                                        \
	do {                                                                       \
		struct ss_slot *s_ = slot();                                       \
		if (s_)                                                            \
			push(s_, (kind), ss_stamp(), (a), (b), (c));                 \
	} while (0)

/* The hooks that shape a worker's lane (polls, parks) also tell the preload shim,
 * if one is loaded, that the program drives this thread itself: one thread-local
 * load and a branch, taken once per thread. */
/* state: what the thread's in-poll cell becomes (ss_inpoll_set): one relaxed
 * load, and a store where the thread has a cell. */
#define LANE_HOOK(kind, a, b, c, state)                                            \
	do {                                                                       \
		struct ss_slot *s_ = slot();                                       \
		if (s_) {                                                          \
			ss_shim_app_owns_thread();                                 \
			push(s_, (kind), ss_stamp(), (a), (b), (c));                 \
			ss_inpoll_set(s_, (state));                                \
		}                                                                  \
	} while (0)

STALLSCOPE_API void stallscope_poll_begin(uint64_t task, uint32_t location)
{
	LANE_HOOK(SS_EV_POLL_BEGIN, task, location, 0, SS_INPOLL_IN);
}

STALLSCOPE_API void stallscope_poll_end(void)
{
	LANE_HOOK(SS_EV_POLL_END, 0, 0, 0, SS_INPOLL_OUT);
}

STALLSCOPE_API void stallscope_park(void)
{
	LANE_HOOK(SS_EV_PARK, 0, 0, 0, SS_INPOLL_PARKED);
}

STALLSCOPE_API void stallscope_unpark(void)
{
	LANE_HOOK(SS_EV_UNPARK, 0, 0, 0, SS_INPOLL_OUT);
}

STALLSCOPE_API void stallscope_task_spawn(uint64_t task, uint32_t location)
{
	HOOK(SS_EV_SPAWN, task, location, 0);
}

STALLSCOPE_API void stallscope_task_terminate(uint64_t task)
{
	HOOK(SS_EV_TERMINATE, task, 0, 0);
}

STALLSCOPE_API void stallscope_task_wake(uint64_t task)
{
	HOOK(SS_EV_WAKE, task, 0, 0);
}

STALLSCOPE_API void stallscope_queue_depth(uint32_t local, uint32_t global)
{
	HOOK(SS_EV_QUEUE, local, global, 0);
}

STALLSCOPE_API void stallscope_mark(uint32_t name, int64_t value)
{
	HOOK(SS_EV_MARK, (uint64_t)value, name, 0);
}

STALLSCOPE_API void stallscope_span_begin(uint32_t name)
{
	HOOK(SS_EV_SPAN_BEGIN, 0, name, 0);
}

STALLSCOPE_API void stallscope_span_end(uint32_t name)
{
	HOOK(SS_EV_SPAN_END, 0, name, 0);
}

STALLSCOPE_API int stallscope_is_recording(void)
{
	return atomic_load_explicit(&ss_state, memory_order_relaxed) != 0;
}
