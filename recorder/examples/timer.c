/*
 * timer.c - the timer thread: a mutex-protected min-heap of deadlines and a
 * condition variable on CLOCK_MONOTONIC, so wall-clock jumps never fire or
 * delay a timer.
 */
#include "timer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <stallscope/stallscope.h>

struct timer_entry {
	uint64_t deadline;
	uint64_t seq; /* ties fire in insertion order */
	timer_fn fn;
	void *arg;
};

struct timer_thread {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct timer_entry *heap;
	size_t len, cap;
	uint64_t next_seq;
	int stopping;
	pthread_t thread;
};

/* Callbacks fired per lock acquisition; bounds the stack buffer, not the rate. */
#define FIRE_BATCH 64

static uint64_t mono_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int entry_before(const struct timer_entry *a, const struct timer_entry *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void heap_push(struct timer_thread *tt, struct timer_entry e)
{
	if (tt->len == tt->cap) {
		size_t cap = tt->cap ? tt->cap * 2 : 256;
		struct timer_entry *h = realloc(tt->heap, cap * sizeof(*h));
		if (!h) {
			/* A lost timer would hang a task forever; failing loudly is kinder. */
			fprintf(stderr, "timer: out of memory\n");
			abort();
		}
		tt->heap = h;
		tt->cap = cap;
	}
	size_t i = tt->len++;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!entry_before(&e, &tt->heap[parent]))
			break;
		tt->heap[i] = tt->heap[parent];
		i = parent;
	}
	tt->heap[i] = e;
}

static struct timer_entry heap_pop(struct timer_thread *tt)
{
	struct timer_entry top = tt->heap[0];
	struct timer_entry last = tt->heap[--tt->len];
	size_t i = 0;
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= tt->len)
			break;
		if (child + 1 < tt->len && entry_before(&tt->heap[child + 1], &tt->heap[child]))
			child++;
		if (!entry_before(&tt->heap[child], &last))
			break;
		tt->heap[i] = tt->heap[child];
		i = child;
	}
	if (tt->len > 0)
		tt->heap[i] = last;
	return top;
}

static void *timer_main(void *arg)
{
	struct timer_thread *tt = arg;
	struct timer_entry due[FIRE_BATCH];

	/* The timer thread wakes tasks; attaching now keeps its first wake hook
	 * free of the one-time attach system call. */
	stallscope_thread_attach();

	pthread_mutex_lock(&tt->lock);
	while (!tt->stopping) {
		if (tt->len == 0) {
			pthread_cond_wait(&tt->cond, &tt->lock);
			continue;
		}
		uint64_t now = mono_now_ns();
		if (tt->heap[0].deadline > now) {
			uint64_t d = tt->heap[0].deadline;
			struct timespec ts = { .tv_sec = (time_t)(d / 1000000000u),
					       .tv_nsec = (long)(d % 1000000000u) };
			int rc = pthread_cond_timedwait(&tt->cond, &tt->lock, &ts);
			(void)rc; /* ETIMEDOUT or a new earlier timer: re-examine either way */
			continue;
		}
		size_t n = 0;
		while (n < FIRE_BATCH && tt->len > 0 && tt->heap[0].deadline <= now)
			due[n++] = heap_pop(tt);
		/* Callbacks take task and queue locks; never hold ours meanwhile. */
		pthread_mutex_unlock(&tt->lock);
		for (size_t i = 0; i < n; i++)
			due[i].fn(due[i].arg, 1);
		pthread_mutex_lock(&tt->lock);
	}
	pthread_mutex_unlock(&tt->lock);
	return NULL;
}

struct timer_thread *timer_thread_start(void)
{
	struct timer_thread *tt = calloc(1, sizeof(*tt));
	if (!tt)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&tt->lock, NULL);
	pthread_cond_init(&tt->cond, &ca);
	pthread_condattr_destroy(&ca);
	int rc = pthread_create(&tt->thread, NULL, timer_main, tt);
	if (rc != 0) {
		errno = rc;
		perror("timer: pthread_create");
		pthread_cond_destroy(&tt->cond);
		pthread_mutex_destroy(&tt->lock);
		free(tt);
		return NULL;
	}
	pthread_setname_np(tt->thread, "ex-timer");
	return tt;
}

void timer_thread_add(struct timer_thread *tt, uint64_t deadline_ns, timer_fn fn, void *arg)
{
	pthread_mutex_lock(&tt->lock);
	struct timer_entry e = { .deadline = deadline_ns, .seq = tt->next_seq++, .fn = fn, .arg = arg };
	heap_push(tt, e);
	/* Only a new earliest deadline shortens the thread's current wait. */
	if (tt->heap[0].seq == e.seq)
		pthread_cond_signal(&tt->cond);
	pthread_mutex_unlock(&tt->lock);
}

void timer_thread_stop(struct timer_thread *tt)
{
	pthread_mutex_lock(&tt->lock);
	tt->stopping = 1;
	pthread_cond_signal(&tt->cond);
	pthread_mutex_unlock(&tt->lock);
	pthread_join(tt->thread, NULL);

	while (tt->len > 0) {
		struct timer_entry e = heap_pop(tt);
		e.fn(e.arg, 0);
	}
	free(tt->heap);
	pthread_cond_destroy(&tt->cond);
	pthread_mutex_destroy(&tt->lock);
	free(tt);
}
