/*
 * tasks.c - tasks and their wakes: the live tasks of a recording (written when
 * they end, or where the import ends), the latest wake of each not yet followed
 * by a poll (its delay is known when the poll comes), the graveyard of tasks
 * that just ended (their late records still find them), and the source
 * locations tasks and polls refer to.
 */
#include "model_private.h"

struct evict_ctx {
	uint64_t *keys;
	size_t n;
};

static void idle_task_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)b;
	struct evict_ctx *c = ctx;
	const struct mdl_task *k = (const struct mdl_task *)(uintptr_t)val;
	if (!k->polling && !k->wake_pending)
		c->keys[c->n++] = a;
}

/* max_live_tasks reached: every task not being polled and not waiting for a
 * poll is written out (still alive: no end) and forgotten. */
static int evict_idle_tasks(struct ss_model *m)
{
	struct ss_hmap *map = &m->rec->tasks;
	struct evict_ctx c = { malloc(map->len * sizeof *c.keys), 0 };
	if (!c.keys)
		return mdl_fail(m);
	if (!m->warned_tasks && !m->o.quiet)
		fprintf(m->log, "stallscope import: warning: more than %llu live tasks in one recording: idle"
			" ones are written out, and a task seen again gets a second row\n",
			(unsigned long long)m->max_live_tasks);
	m->warned_tasks = true;
	ss_hmap_foreach(map, idle_task_cb, &c);
	int rc = 0;
	for (size_t i = 0; i < c.n && !rc; i++) {
		uint64_t v;
		if (!ss_hmap_get(map, c.keys[i], 0, &v))
			continue;
		struct mdl_task *k = (struct mdl_task *)(uintptr_t)v;
		rc = mdl_task_flush(m, k, 0);
		mdl_task_remove(m, k);
		free(k);
	}
	free(c.keys);
	return rc;
}

static inline size_t kcache_slot(uint64_t task)
{
	return (size_t)((task * 0x9E3779B97F4A7C15ull) >> 32) & (MDL_KCACHE - 1);
}

struct mdl_task *mdl_task_find(struct ss_model *m, uint64_t task)
{
	struct mdl_recording *rc = m->rec;
	size_t i = kcache_slot(task);
	if (rc->kcache[i].k && rc->kcache[i].task == task)
		return rc->kcache[i].k;
	uint64_t v;
	if (!ss_hmap_get(&rc->tasks, task, 0, &v))
		return NULL;
	rc->kcache[i].task = task;
	rc->kcache[i].k = (struct mdl_task *)(uintptr_t)v;
	return rc->kcache[i].k;
}

/* Every change of the map goes through here or put_task: the cache holds
 * only what the map holds. */
void mdl_task_remove(struct ss_model *m, struct mdl_task *k)
{
	struct mdl_recording *rc = m->rec;
	size_t i = kcache_slot(k->task);
	if (rc->kcache[i].k && rc->kcache[i].task == k->task)
		rc->kcache[i].k = NULL;
	ss_hmap_del(&rc->tasks, k->task, 0);
}

static int put_task(struct ss_model *m, struct mdl_task *k)
{
	struct mdl_recording *rc = m->rec;
	size_t i = kcache_slot(k->task);
	if (ss_hmap_put(&rc->tasks, k->task, 0, (uint64_t)(uintptr_t)k) != 0)
		return -1;
	rc->kcache[i].task = k->task;
	rc->kcache[i].k = k;
	return 0;
}

/* Every caller has just found the number absent: a second probe of the map
 * for it (a cache miss per spawn) is not made. */
struct mdl_task *mdl_task_new(struct ss_model *m, uint64_t task)
{
	struct mdl_task *k;
	if (m->rec->tasks.len >= m->max_live_tasks && evict_idle_tasks(m) != 0)
		return NULL;
	k = calloc(1, sizeof *k);
	if (!k) {
		mdl_fail(m);
		return NULL;
	}
	k->id = mdl_new_id(m, ID_TASK);
	k->task = task;
	if (put_task(m, k) != 0) {
		free(k);
		mdl_fail(m);
		return NULL;
	}
	return k;
}

/* ---- the graveyard: tasks that ended a moment ago ------------------------- */

/* The ghost's own task, made when a late record touches it: the row is
 * written, so only what a late wake or poll changes matters. */
static struct mdl_task *ghost_task(struct ss_model *m, struct mdl_ghost *g)
{
	if (g->full)
		return g->full;
	struct mdl_task *k = calloc(1, sizeof *k);
	if (!k) {
		mdl_fail(m);
		return NULL;
	}
	k->id = g->id;
	k->task = g->task;
	k->end_ts = g->end_ts;
	k->persisted = true;
	k->polling = g->polling;
	g->full = k;
	return k;
}

int mdl_bury(struct ss_model *m, struct mdl_task *k)
{
	struct mdl_grave *gy = &m->rec->grave;
	/* Evict what ended longer ago than records can come late. */
	struct mdl_ghost *old;
	while ((old = mdl_grave_oldest(gy)) && old->end_ts + MDL_GRAVE_NS < k->end_ts) {
		struct mdl_task *full = old->full;
		mdl_grave_pop(gy);
		int frc = full ? mdl_task_flush(m, full, 0) : 0; /* a wake it got late */
		free(full);
		if (frc != 0) {
			free(k);
			return -1;
		}
	}
	/* Its row is written (mdl_task_flush), and a wake it had with it: the
	 * ghost keeps what a late record needs. */
	struct mdl_ghost g = { k->task, k->end_ts, k->id, NULL, k->polling };
	if (k->wake_pending || !k->persisted) {
		g.full = k; /* not the usual path (a restored entry is persisted) */
	} else {
		free(k);
	}
	if (mdl_grave_push(gy, &g) != 0) {
		free(g.full);
		return mdl_fail(m);
	}
	return 0;
}

/* The latest ghost of a number; a lookup the index could not be built for
 * (memory ran out) stops the model rather than mistake an ended task for a new one. */
static struct mdl_ghost *grave_find(struct ss_model *m, uint64_t task)
{
	struct mdl_grave *gy = &m->rec->grave;
	struct mdl_ghost *g = mdl_grave_find(gy, task);
	if (!g && gy->n && !gy->index)
		mdl_fail(m);
	return g;
}

struct mdl_task *mdl_task_at(struct ss_model *m, uint64_t task, uint64_t ts)
{
	struct mdl_task *live = mdl_task_find(m, task);
	if (live && (!live->spawn_ts || live->spawn_ts <= ts))
		return live;
	/* Before its TERMINATE: an ended task's record that came late. */
	struct mdl_ghost *g = grave_find(m, task);
	if (g && ts <= g->end_ts)
		return ghost_task(m, g);
	return live ? live : mdl_task_new(m, task);
}

int mdl_task_end(struct ss_model *m, uint64_t task, uint64_t ts)
{
	struct mdl_task *k = mdl_task_find(m, task);
	if (!k) {
		const struct mdl_ghost *g = grave_find(m, task);
		if (g && g->end_ts == ts)
			return 0; /* the same end again (a re-sent record) */
		if (!(k = mdl_task_new(m, task)))
			return -1;
	}
	k->end_ts = ts ? ts : 1;
	int rc = mdl_task_flush(m, k, k->end_ts);
	mdl_task_remove(m, k);
	if (rc != 0) {
		free(k);
		return rc;
	}
	return mdl_bury(m, k);
}

/* ---- wakes ------------------------------------------------------------------ */

static int write_wake(struct ss_model *m, struct mdl_task *k, int64_t poll_id, uint64_t poll_ts)
{
	if (k->wake_handle) {
		/* Written by the import that ended before this poll. Superseded by a
		 * newer wake, the row stays as it is; leading to this poll, it moves
		 * to the end: wakes stay in the order of the polls they led to. */
		int64_t handle = k->wake_handle;
		k->wake_handle = 0;
		if (!poll_id) {
			k->wake_pending = false;
			return 0;
		}
		if (MDL_SINK(m, wake_delete, handle) != 0)
			return -1;
	}
	struct ss_wake_row r = {
		k->id, (int64_t)k->wake_ts, k->waker_thread_id, k->waker_task_id, poll_id,
		poll_id ? (poll_ts > k->wake_from ? (int64_t)(poll_ts - k->wake_from) : 0) : -1,
	};
	k->wake_pending = false;
	return MDL_SINK(m, wake, &r);
}

/* A poll of k starts: a pending wake now knows its poll and delay. */
int mdl_task_polled(struct ss_model *m, struct mdl_task *k, int64_t poll_id, uint64_t ts)
{
	k->polling = true;
	return k->wake_pending ? write_wake(m, k, poll_id, ts) : 0;
}

int mdl_task_woken(struct ss_model *m, struct mdl_task *k, uint64_t ts, int64_t waker_thread, int64_t waker_task)
{
	/* An earlier wake with no poll since is superseded: the delay is measured
	 * from the last wake before the poll. */
	if (k->wake_pending && write_wake(m, k, 0, 0) != 0)
		return -1;
	k->wake_pending = true;
	k->wake_in_poll = k->polling;
	k->wake_ts = k->wake_from = ts;
	k->waker_thread_id = waker_thread;
	k->waker_task_id = waker_task;
	return 0;
}

int mdl_task_flush(struct ss_model *m, struct mdl_task *k, uint64_t end_ts)
{
	if (k->wake_pending && write_wake(m, k, 0, 0) != 0)
		return -1;
	if (k->persisted)
		return end_ts ? MDL_SINK(m, task_end, k->id, (int64_t)end_ts) : 0;
	struct ss_task_row r = { k->id, m->rec->id, k->task, k->location_id, k->parent_id, (int64_t)k->spawn_ts,
				 (int64_t)end_ts, k->spawn_thread_id };
	k->persisted = true;
	return MDL_SINK(m, task, &r);
}

/* ---- where the import ends -------------------------------------------------- */

struct end_ctx {
	struct ss_model *m;
	int rc;
};

/* Wakes still waiting for a poll: handed to the store with what the next import
 * needs to link them (the store writes their rows and keeps a handle). */
static void pending_wake_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct mdl_task *k = (struct mdl_task *)(uintptr_t)val;
	if (!k->wake_pending || c->rc)
		return;
	struct ss_pending_wake w = {
		.recording_id = c->m->rec->id, .task_id = k->id,
		.wake = { k->id, (int64_t)k->wake_ts, k->waker_thread_id, k->waker_task_id, 0, -1 },
		.handle = k->wake_handle, .wake_from = (int64_t)k->wake_from, .in_poll = k->wake_in_poll,
	};
	if (MDL_SINK(c->m, pending_wake, &w) != 0)
		c->rc = -1;
	k->wake_pending = false;
	k->wake_handle = 0;
}

static void flush_task_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct mdl_task *k = (struct mdl_task *)(uintptr_t)val;
	if (!c->m->failed && mdl_task_flush(c->m, k, 0) != 0)
		c->rc = -1;
	free(k);
}

/* The graveyard where this import ends: what may still get late records goes
 * to the store for the next import of the recording. */
static int bury_end(struct ss_model *m)
{
	struct mdl_grave *gy = &m->rec->grave;
	int r = 0;
	/* Every row first, then every entry: the entries are state a store may
	 * write directly, after the rows it queued (one wait, not one a task). */
	for (size_t i = 0; i < gy->n; i++) {
		struct mdl_task *k = mdl_grave_at(gy, i)->full;
		if (k && !m->failed && mdl_task_flush(m, k, 0) != 0)
			r = -1;
	}
	for (size_t i = 0; i < gy->n; i++) {
		const struct mdl_ghost *g = mdl_grave_at(gy, i);
		struct ss_ended_task e = { m->rec->id, g->task, g->id, (int64_t)g->end_ts };
		if (!m->failed && MDL_SINK(m, ended_task, &e) != 0)
			r = -1;
	}
	mdl_grave_free(gy);
	return r;
}

/* Live tasks where the import ends: their pending wakes go to the store as
 * state, their rows are written (alive: no end), the graveyard is handed over. */
int mdl_tasks_end(struct ss_model *m)
{
	struct end_ctx c = { m, 0 };
	if (!m->failed)
		ss_hmap_foreach(&m->rec->tasks, pending_wake_cb, &c);
	ss_hmap_foreach(&m->rec->tasks, flush_task_cb, &c);
	ss_hmap_free(&m->rec->tasks);
	memset(m->rec->kcache, 0, sizeof m->rec->kcache);
	if (bury_end(m) != 0)
		c.rc = -1;
	return c.rc;
}

/* ---- restoring a recording's tasks (sink->resume) ------------------------------ */

int ss_model_restore_task(struct ss_model *m, const struct ss_task_row *t)
{
	struct mdl_task *k = calloc(1, sizeof *k);
	if (!k)
		return mdl_fail(m);
	k->id = t->id;
	k->task = t->task;
	k->location_id = t->location_id;
	k->parent_id = t->parent_task_id;
	k->spawn_ts = (uint64_t)t->spawn_ts;
	k->spawn_thread_id = t->spawn_thread_id;
	k->persisted = true;
	struct mdl_task *old = mdl_task_find(m, k->task);
	free(old);
	if (put_task(m, k) != 0) {
		free(k);
		return mdl_fail(m);
	}
	return 0;
}

int ss_model_restore_ended_task(struct ss_model *m, uint64_t task, int64_t task_id, int64_t end_ts)
{
	struct mdl_task *k = calloc(1, sizeof *k);
	if (!k)
		return mdl_fail(m);
	k->task = task;
	k->id = task_id;
	k->end_ts = (uint64_t)end_ts;
	k->persisted = true;
	return mdl_bury(m, k);
}

int ss_model_restore_pending_wake(struct ss_model *m, uint64_t task, const struct ss_pending_wake *w)
{
	struct mdl_task *k = mdl_task_find(m, task);
	if (!k || k->id != w->task_id)
		return 0; /* ended since: nothing can link it any more */
	k->wake_pending = true;
	k->wake_handle = w->handle;
	k->wake_ts = (uint64_t)w->wake.ts;
	k->waker_thread_id = w->wake.waker_thread_id;
	k->waker_task_id = w->wake.waker_task_id;
	k->wake_from = (uint64_t)w->wake_from;
	k->wake_in_poll = w->in_poll;
	return 0;
}

/* ---- locations ----------------------------------------------------------------- */

int ss_model_location(struct ss_model *m, uint64_t seg_id, const char *file, size_t fl, uint64_t line,
		      const char *fn, size_t nl)
{
	if (m->failed)
		return -1;
	uint64_t h = mdl_location_key(file, fl, file == NULL, fn, nl, fn == NULL);
	uint64_t id;
	if (!ss_hmap_get(&m->locations, h, line, &id)) {
		id = (uint64_t)mdl_new_id(m, ID_LOCATION);
		struct ss_location_row r = { (int64_t)id, mdl_text(file, fl), (int64_t)line, mdl_text(fn, nl) };
		if (MDL_SINK(m, location, &r) != 0)
			return -1;
		if (ss_hmap_put(&m->locations, h, line, id) != 0)
			return mdl_fail(m);
	}
	return ss_hmap_put(&m->seg_locs, seg_id, 0, id) != 0 ? mdl_fail(m) : 0;
}

int ss_model_known_location(struct ss_model *m, int64_t id, const char *file, size_t file_len, bool file_null,
			    int64_t line, const char *function, size_t function_len, bool function_null)
{
	uint64_t h = mdl_location_key(file, file_len, file_null, function, function_len, function_null);
	return ss_hmap_put(&m->locations, h, (uint64_t)line, (uint64_t)id) != 0 ? mdl_fail(m) : 0;
}

int64_t mdl_location(struct ss_model *m, uint64_t seg_loc)
{
	uint64_t v;
	if (!seg_loc || !ss_hmap_get(&m->seg_locs, seg_loc, 0, &v))
		return 0;
	return (int64_t)v;
}
