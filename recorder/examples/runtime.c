/*
 * runtime.c - the scheduler: task state machine, local and global queues, work
 * stealing, parking, and the stallscope hooks that make it all visible.
 *
 * Locking: each local queue, the global queue, the park lot and the task
 * registry have their own mutex and no code path holds two of them at once, so
 * there is no lock order to get wrong. Task states move by compare-and-swap.
 */
#include "runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Large enough that overflow to the global queue is rare under the demo loads. */
#define LOCAL_CAP 256
/* How often a worker looks at the global queue before its own (Tokio's 61), so
 * injected work is not starved by tasks that keep rescheduling locally. */
#define GLOBAL_CHECK_INTERVAL 61
/* Tasks moved from the global to the local queue in one visit, to keep global
 * lock traffic down without hoarding work that others could run. */
#define GLOBAL_BATCH 8

/*
 * IDLE      waiting for a wake; in no queue
 * SCHEDULED in exactly one queue
 * RUNNING   being polled
 * NOTIFIED  woken while being polled: the poller re-queues it
 * DONE      completed; wakes are ignored
 */
enum task_state { ST_IDLE, ST_SCHEDULED, ST_RUNNING, ST_NOTIFIED, ST_DONE };

struct task {
	uint64_t id;
	uint32_t location;
	_Atomic int state;
	_Atomic uint32_t refs;
	task_poll_fn poll;
	void *ctx;
	task_drop_fn drop;
	struct runtime *rt;
	struct task *next;                 /* global queue link, under global_lock */
	struct task *reg_prev, *reg_next;  /* registry links, under registry_lock */
};

struct local_queue {
	pthread_mutex_t lock;
	struct task *slots[LOCAL_CAP];
	uint32_t head;               /* under lock */
	_Atomic uint32_t len;        /* written under lock, read anywhere as a hint */
};

struct worker {
	struct runtime *rt;
	uint32_t index;
	pthread_t thread;
	int started;
	struct local_queue q;
	uint64_t rng;
	uint32_t tick;
	/* Written only by the worker; read by others only after pthread_join. */
	uint64_t polls, steals, parks;
};

struct runtime {
	const char *name;
	uint32_t nworkers;
	struct worker *workers;

	pthread_mutex_t global_lock;
	struct task *global_head, *global_tail;
	_Atomic uint32_t global_len;

	pthread_mutex_t park_lock;
	pthread_cond_t park_cond;
	_Atomic uint32_t sleepers;
	_Atomic int shutdown;

	pthread_mutex_t registry_lock;
	struct task *registry;

	_Atomic uint64_t next_id;
	_Atomic uint64_t spawned, completed, live;

	struct timer_thread *timer;
	int shut_down;
};

/* The worker running on this thread, so that spawns and wakes from inside a poll
 * go to the local queue, where the data they touch is likely still in cache. */
static _Thread_local struct worker *tls_worker;

/* ---- queues ----------------------------------------------------------------- */

static int local_push(struct local_queue *q, struct task *t)
{
	pthread_mutex_lock(&q->lock);
	uint32_t len = atomic_load(&q->len);
	if (len == LOCAL_CAP) {
		pthread_mutex_unlock(&q->lock);
		return -1;
	}
	q->slots[(q->head + len) % LOCAL_CAP] = t;
	atomic_store(&q->len, len + 1);
	pthread_mutex_unlock(&q->lock);
	return 0;
}

/* Takes up to max tasks from the front: the owner pops 1, a thief takes half. */
static uint32_t local_take(struct local_queue *q, struct task **out, uint32_t max, int half)
{
	pthread_mutex_lock(&q->lock);
	uint32_t len = atomic_load(&q->len);
	uint32_t n = half ? (len + 1) / 2 : len;
	if (n > max)
		n = max;
	for (uint32_t i = 0; i < n; i++) {
		out[i] = q->slots[q->head];
		q->head = (q->head + 1) % LOCAL_CAP;
	}
	atomic_store(&q->len, len - n);
	pthread_mutex_unlock(&q->lock);
	return n;
}

static void global_push(struct runtime *rt, struct task *t)
{
	pthread_mutex_lock(&rt->global_lock);
	t->next = NULL;
	if (rt->global_tail)
		rt->global_tail->next = t;
	else
		rt->global_head = t;
	rt->global_tail = t;
	atomic_fetch_add(&rt->global_len, 1);
	pthread_mutex_unlock(&rt->global_lock);
}

static uint32_t global_take(struct runtime *rt, struct task **out, uint32_t max)
{
	if (atomic_load_explicit(&rt->global_len, memory_order_relaxed) == 0)
		return 0;
	pthread_mutex_lock(&rt->global_lock);
	uint32_t n = 0;
	while (n < max && rt->global_head) {
		struct task *t = rt->global_head;
		rt->global_head = t->next;
		t->next = NULL;
		out[n++] = t;
	}
	if (!rt->global_head)
		rt->global_tail = NULL;
	atomic_fetch_sub(&rt->global_len, n);
	pthread_mutex_unlock(&rt->global_lock);
	return n;
}

/* ---- parking ---------------------------------------------------------------- */

static int has_work(struct runtime *rt)
{
	if (atomic_load(&rt->global_len) > 0)
		return 1;
	for (uint32_t i = 0; i < rt->nworkers; i++)
		if (atomic_load(&rt->workers[i].q.len) > 0)
			return 1;
	return 0;
}

/*
 * No lost wake-ups: a parking worker increments sleepers and then checks the
 * queues; a producer adds to a queue and then checks sleepers. Both are seq_cst,
 * so at least one of them sees the other. The producer signals under park_lock,
 * which the parker holds from its check until pthread_cond_wait releases it.
 */
static void notify_one(struct runtime *rt)
{
	if (atomic_load(&rt->sleepers) == 0)
		return;
	pthread_mutex_lock(&rt->park_lock);
	if (atomic_load(&rt->sleepers) > 0)
		pthread_cond_signal(&rt->park_cond);
	pthread_mutex_unlock(&rt->park_lock);
}

/* Returns 0 when the runtime is shutting down. */
static int park(struct worker *w)
{
	struct runtime *rt = w->rt;
	pthread_mutex_lock(&rt->park_lock);
	atomic_fetch_add(&rt->sleepers, 1);
	if (!atomic_load(&rt->shutdown) && !has_work(rt)) {
		w->parks++;
		stallscope_park();
		do
			pthread_cond_wait(&rt->park_cond, &rt->park_lock);
		while (!atomic_load(&rt->shutdown) && !has_work(rt));
		stallscope_unpark();
	}
	atomic_fetch_sub(&rt->sleepers, 1);
	pthread_mutex_unlock(&rt->park_lock);
	return !atomic_load(&rt->shutdown);
}

/* ---- scheduling ------------------------------------------------------------- */

/* t must be SCHEDULED and owned by the caller (in no queue). */
static void schedule(struct runtime *rt, struct task *t)
{
	struct worker *w = tls_worker;
	if (!w || w->rt != rt || local_push(&w->q, t) != 0)
		global_push(rt, t);
	/* Even a local push notifies: an idle worker can steal it. */
	notify_one(rt);
}

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static struct task *steal(struct worker *w)
{
	struct runtime *rt = w->rt;
	struct task *batch[LOCAL_CAP / 2];
	uint32_t start = (uint32_t)(xorshift64(&w->rng) % rt->nworkers);
	for (uint32_t k = 0; k < rt->nworkers; k++) {
		struct worker *victim = &rt->workers[(start + k) % rt->nworkers];
		if (victim == w || atomic_load_explicit(&victim->q.len, memory_order_relaxed) == 0)
			continue;
		uint32_t n = local_take(&victim->q, batch, LOCAL_CAP / 2, 1);
		if (n == 0)
			continue;
		w->steals += n;
		for (uint32_t i = 1; i < n; i++)
			if (local_push(&w->q, batch[i]) != 0)
				global_push(rt, batch[i]);
		return batch[0];
	}
	return NULL;
}

static struct task *from_global(struct worker *w)
{
	struct runtime *rt = w->rt;
	struct task *batch[GLOBAL_BATCH];
	uint32_t want = atomic_load_explicit(&rt->global_len, memory_order_relaxed) / rt->nworkers + 1;
	if (want > GLOBAL_BATCH)
		want = GLOBAL_BATCH;
	uint32_t n = global_take(rt, batch, want);
	if (n == 0)
		return NULL;
	for (uint32_t i = 1; i < n; i++)
		if (local_push(&w->q, batch[i]) != 0)
			global_push(rt, batch[i]);
	return batch[0];
}

static struct task *find_task(struct worker *w)
{
	struct task *t = NULL;
	if (++w->tick % GLOBAL_CHECK_INTERVAL == 0 && (t = from_global(w)))
		return t;
	if (local_take(&w->q, &t, 1, 0) == 1)
		return t;
	if ((t = from_global(w)))
		return t;
	return steal(w);
}

static void registry_remove(struct runtime *rt, struct task *t)
{
	pthread_mutex_lock(&rt->registry_lock);
	if (t->reg_prev)
		t->reg_prev->reg_next = t->reg_next;
	else
		rt->registry = t->reg_next;
	if (t->reg_next)
		t->reg_next->reg_prev = t->reg_prev;
	t->reg_prev = t->reg_next = NULL;
	pthread_mutex_unlock(&rt->registry_lock);
}

static void complete(struct runtime *rt, struct task *t)
{
	atomic_store(&t->state, ST_DONE);
	stallscope_task_terminate(t->id);
	registry_remove(rt, t);
	if (t->drop)
		t->drop(t->ctx);
	t->ctx = NULL;
	atomic_fetch_add(&rt->completed, 1);
	atomic_fetch_sub(&rt->live, 1);
	task_unref(t); /* the runtime's own reference */
}

static void run_task(struct worker *w, struct task *t)
{
	struct runtime *rt = w->rt;
	atomic_store(&t->state, ST_RUNNING);

	stallscope_poll_begin(t->id, t->location);
	int r = t->poll(t, t->ctx);
	stallscope_poll_end();
	w->polls++;

	if (r == TASK_READY) {
		complete(rt, t);
	} else {
		int expect = ST_RUNNING;
		if (!atomic_compare_exchange_strong(&t->state, &expect, ST_IDLE)) {
			/* NOTIFIED: a wake arrived during the poll and was deferred to us. */
			atomic_store(&t->state, ST_SCHEDULED);
			schedule(rt, t);
		}
	}
	stallscope_queue_depth(atomic_load_explicit(&w->q.len, memory_order_relaxed),
			       atomic_load_explicit(&rt->global_len, memory_order_relaxed));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct runtime *rt = w->rt;
	tls_worker = w;
	stallscope_worker_begin(rt->name, w->index);
	while (!atomic_load_explicit(&rt->shutdown, memory_order_relaxed)) {
		struct task *t = find_task(w);
		if (t)
			run_task(w, t);
		else if (!park(w))
			break;
	}
	stallscope_worker_end();
	tls_worker = NULL;
	return NULL;
}

/* ---- public ----------------------------------------------------------------- */

void task_ref(struct task *task)
{
	atomic_fetch_add_explicit(&task->refs, 1, memory_order_relaxed);
}

void task_unref(struct task *task)
{
	if (atomic_fetch_sub_explicit(&task->refs, 1, memory_order_acq_rel) == 1)
		free(task);
}

uint64_t task_id(const struct task *task)
{
	return task->id;
}

struct runtime *task_runtime(const struct task *task)
{
	return task->rt;
}

void task_wake(struct task *task)
{
	stallscope_task_wake(task->id);
	int s = atomic_load(&task->state);
	for (;;) {
		int next;
		if (s == ST_IDLE)
			next = ST_SCHEDULED;
		else if (s == ST_RUNNING)
			next = ST_NOTIFIED;
		else
			return; /* already scheduled, notified or done */
		if (atomic_compare_exchange_weak(&task->state, &s, next))
			break;
	}
	if (s == ST_IDLE)
		schedule(task->rt, task);
}

static void wake_timer_fired(void *arg, int fired)
{
	struct task *t = arg;
	if (fired)
		task_wake(t);
	task_unref(t);
}

void task_wake_at(struct task *task, uint64_t deadline_ns)
{
	task_ref(task); /* held by the timer until it fires or is cancelled */
	timer_thread_add(task->rt->timer, deadline_ns, wake_timer_fired, task);
}

void runtime_call_at(struct runtime *rt, uint64_t deadline_ns, timer_fn fn, void *arg)
{
	timer_thread_add(rt->timer, deadline_ns, fn, arg);
}

uint64_t runtime_spawn_at(struct runtime *rt, uint32_t location, task_poll_fn poll,
			  void *ctx, task_drop_fn drop)
{
	struct task *t = calloc(1, sizeof(*t));
	if (!t) {
		if (drop)
			drop(ctx);
		return 0;
	}
	t->id = atomic_fetch_add(&rt->next_id, 1);
	t->location = location;
	t->poll = poll;
	t->ctx = ctx;
	t->drop = drop;
	t->rt = rt;
	atomic_init(&t->refs, 1);
	atomic_init(&t->state, ST_SCHEDULED);

	pthread_mutex_lock(&rt->registry_lock);
	t->reg_next = rt->registry;
	if (rt->registry)
		rt->registry->reg_prev = t;
	rt->registry = t;
	pthread_mutex_unlock(&rt->registry_lock);
	atomic_fetch_add(&rt->spawned, 1);
	atomic_fetch_add(&rt->live, 1);

	/* Before it is queued, so the spawn always precedes the first poll. */
	uint64_t id = t->id;
	stallscope_task_spawn(id, location);
	schedule(rt, t);
	return id;
}

void runtime_get_stats(struct runtime *rt, struct runtime_stats *st)
{
	st->spawned = atomic_load(&rt->spawned);
	st->completed = atomic_load(&rt->completed);
	st->live = atomic_load(&rt->live);
	st->polls = st->steals = st->parks = 0;
	if (!rt->shut_down)
		return; /* per-worker counters are private until the join */
	for (uint32_t i = 0; i < rt->nworkers; i++) {
		st->polls += rt->workers[i].polls;
		st->steals += rt->workers[i].steals;
		st->parks += rt->workers[i].parks;
	}
}

struct runtime *runtime_start(const char *name, uint32_t workers)
{
	struct runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	rt->workers = calloc(workers, sizeof(*rt->workers));
	if (!rt->workers) {
		free(rt);
		return NULL;
	}
	rt->name = name;
	rt->nworkers = workers;
	atomic_init(&rt->next_id, 1); /* 0 is "no task" to the caller */
	pthread_mutex_init(&rt->global_lock, NULL);
	pthread_mutex_init(&rt->park_lock, NULL);
	pthread_cond_init(&rt->park_cond, NULL);
	pthread_mutex_init(&rt->registry_lock, NULL);
	for (uint32_t i = 0; i < workers; i++) {
		struct worker *w = &rt->workers[i];
		w->rt = rt;
		w->index = i;
		w->rng = 0x9e3779b97f4a7c15ull * (i + 1);
		pthread_mutex_init(&w->q.lock, NULL);
	}

	rt->timer = timer_thread_start();
	if (!rt->timer) {
		runtime_destroy(rt);
		return NULL;
	}
	for (uint32_t i = 0; i < workers; i++) {
		struct worker *w = &rt->workers[i];
		int rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc != 0) {
			errno = rc;
			perror("runtime: pthread_create");
			runtime_shutdown(rt);
			runtime_destroy(rt);
			return NULL;
		}
		w->started = 1;
		char tname[16];
		snprintf(tname, sizeof(tname), "ex-w%u", i); /* 15 chars at most, the kernel limit */
		pthread_setname_np(w->thread, tname);
	}
	return rt;
}

void runtime_shutdown(struct runtime *rt)
{
	if (rt->shut_down)
		return;
	atomic_store(&rt->shutdown, 1);
	pthread_mutex_lock(&rt->park_lock);
	pthread_cond_broadcast(&rt->park_cond);
	pthread_mutex_unlock(&rt->park_lock);
	for (uint32_t i = 0; i < rt->nworkers; i++)
		if (rt->workers[i].started)
			pthread_join(rt->workers[i].thread, NULL);
	/* After the workers: a poll blocked on a timer (a delayed pipe write) must
	 * still be released, and no worker can add a timer once joined. */
	if (rt->timer)
		timer_thread_stop(rt->timer);
	rt->timer = NULL;
	rt->shut_down = 1;
}

void runtime_destroy(struct runtime *rt)
{
	if (!rt)
		return;
	/* Queues hold no references of their own: every unfinished task is in the
	 * registry, whatever queue it sits in, so dropping from there frees each once. */
	for (;;) {
		pthread_mutex_lock(&rt->registry_lock);
		struct task *t = rt->registry;
		if (t) {
			rt->registry = t->reg_next;
			if (rt->registry)
				rt->registry->reg_prev = NULL;
			t->reg_next = NULL;
		}
		pthread_mutex_unlock(&rt->registry_lock);
		if (!t)
			break;
		atomic_store(&t->state, ST_DONE);
		stallscope_task_terminate(t->id);
		if (t->drop)
			t->drop(t->ctx); /* may unref other tasks; each keeps its own ref until here */
		t->ctx = NULL;
		atomic_fetch_sub(&rt->live, 1);
		task_unref(t);
	}
	for (uint32_t i = 0; i < rt->nworkers; i++)
		pthread_mutex_destroy(&rt->workers[i].q.lock);
	pthread_mutex_destroy(&rt->registry_lock);
	pthread_cond_destroy(&rt->park_cond);
	pthread_mutex_destroy(&rt->park_lock);
	pthread_mutex_destroy(&rt->global_lock);
	free(rt->workers);
	free(rt);
}
