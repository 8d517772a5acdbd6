/*
 * recording.c - the state of one recording across its segments: its row, its
 * threads and workers, its live tasks and the source locations they refer to.
 *
 * When a recording is already in the database (an incremental import), its
 * threads, workers, live tasks and its open polls and parks (the rows marked
 * incomplete at the end of the last import) are loaded back, so the new data
 * continues them exactly as if everything had been imported in one run.
 */
#include <stdlib.h>
#include <string.h>

#include "import-private.h"
#include "symbolize.h"

int imp_fail(struct imp *im)
{
	if (!im->failed && !im->o->quiet)
		fprintf(im->log, "stallscope import: database write failed: %s\n", im->db.err);
	im->failed = true;
	return -1;
}

static struct imp_thread *new_thread(struct imp *im, int64_t id, uint64_t thread, uint64_t tid,
				     const char *name, size_t nlen, bool insert)
{
	struct imp_thread *t = calloc(1, sizeof *t);
	if (!t) {
		snprintf(im->db.err, sizeof im->db.err, "out of memory");
		imp_fail(im);
		return NULL;
	}
	t->id = id ? id : ss_db_new_id(&im->db, ID_THREAD);
	t->tid = tid;
	if (insert) {
		struct ss_row *s = ss_row(&im->db, ST_INS_THREAD);
		ss_bind_i(s, 1, t->id);
		ss_bind_i(s, 2, im->rec->id);
		if (thread)
			ss_bind_i(s, 3, (int64_t)thread);
		else
			ss_bind_null(s, 3);
		ss_bind_i(s, 4, (int64_t)tid);
		ss_bind_t(s, 5, name, nlen);
		if (ss_db_step(&im->db, ST_INS_THREAD) != 0) {
			free(t);
			imp_fail(im);
			return NULL;
		}
	}
	return t;
}

/* True (and the event counted) when the recording has as many threads as the
 * importer keeps: the caller leaves the event out. */
static bool over_thread_limit(struct imp *im)
{
	if (im->rec->threads.len + im->rec->sampler_threads.len < im->max_threads)
		return false;
	im->over_thread_limit++;
	return true;
}

struct imp_thread *imp_thread_get(struct imp *im, uint64_t thread)
{
	uint64_t v;
	if (im->tcache && im->tcache_num == thread)
		return im->tcache;
	if (ss_hmap_get(&im->rec->threads, thread, 0, &v)) {
		im->tcache_num = thread;
		return im->tcache = (struct imp_thread *)(uintptr_t)v;
	}
	if (over_thread_limit(im))
		return NULL;
	/* An event of a thread with no THREAD_DEF (thread 0, or a damaged stream):
	 * still gets a row so nothing is dropped. */
	struct imp_thread *t = new_thread(im, 0, thread, 0, NULL, 0, true);
	if (t && ss_hmap_put(&im->rec->threads, thread, 0, (uint64_t)(uintptr_t)t) != 0) {
		free(t);
		imp_fail(im);
		return NULL;
	}
	return t;
}

struct imp_thread *imp_sampler_thread(struct imp *im, uint64_t thread, uint64_t tid)
{
	if (thread)
		return imp_thread_get(im, thread);
	uint64_t v;
	if (ss_hmap_get(&im->rec->sampler_threads, tid, 0, &v))
		return (struct imp_thread *)(uintptr_t)v;
	if (over_thread_limit(im))
		return NULL;
	struct imp_thread *t = new_thread(im, 0, 0, tid, NULL, 0, true);
	if (t && ss_hmap_put(&im->rec->sampler_threads, tid, 0, (uint64_t)(uintptr_t)t) != 0) {
		free(t);
		imp_fail(im);
		return NULL;
	}
	return t;
}

int imp_make_worker(struct imp *im, struct imp_thread *t, const char *runtime, size_t rlen,
		    uint64_t idx, uint64_t ts)
{
	struct ss_row *s;
	if (t->worker_id) {
		s = ss_row(&im->db, ST_UPD_WORKER_RUNTIME);
		ss_bind_i(s, 1, t->worker_id);
		ss_bind_t(s, 2, runtime, rlen);
		ss_bind_i(s, 3, (int64_t)idx);
		ss_bind_z(s, 4, (int64_t)ts);
		return ss_db_step(&im->db, ST_UPD_WORKER_RUNTIME) ? imp_fail(im) : 0;
	}
	t->worker_id = ss_db_new_id(&im->db, ID_WORKER);
	s = ss_row(&im->db, ST_INS_WORKER);
	ss_bind_i(s, 1, t->worker_id);
	ss_bind_i(s, 2, im->rec->id);
	ss_bind_i(s, 3, t->id);
	ss_bind_t(s, 4, runtime, rlen);
	ss_bind_i(s, 5, (int64_t)idx);
	ss_bind_z(s, 6, (int64_t)ts);
	return ss_db_step(&im->db, ST_INS_WORKER) ? imp_fail(im) : 0;
}

int imp_thread_def(struct imp *im, const struct ss_thread_def *d)
{
	uint64_t v;
	struct imp_thread *t;
	bool known = ss_hmap_get(&im->rec->threads, d->thread, 0, &v);
	if (known) {
		t = (struct imp_thread *)(uintptr_t)v;
		if (t->tid != d->tid || !im->skip_events) {
			struct ss_row *s = ss_row(&im->db, ST_UPD_THREAD_NAME);
			ss_bind_i(s, 1, t->id);
			ss_bind_t(s, 2, d->name, d->name_len);
			ss_bind_i(s, 3, (int64_t)d->tid);
			if (ss_db_step(&im->db, ST_UPD_THREAD_NAME) != 0)
				return imp_fail(im);
			t->tid = d->tid;
		}
	} else {
		if (over_thread_limit(im))
			return 0;
		t = new_thread(im, 0, d->thread, d->tid, d->name, d->name_len, true);
		if (!t || ss_hmap_put(&im->rec->threads, d->thread, 0, (uint64_t)(uintptr_t)t) != 0) {
			free(t);
			return imp_fail(im);
		}
	}
	if ((d->flags & SS_THREAD_F_WORKER) && !t->worker_id) {
		size_t rl;
		const char *rt = imp_str(im, d->runtime, &rl);
		if (imp_make_worker(im, t, rt, rl, d->worker_index, 0) != 0)
			return -1;
	}
	if (im->skip_events)
		return 0;
	/* Stitching: only a definition that precedes the thread's events in this
	 * segment describes the state at the segment's start. */
	if (t->seg_serial == im->seg_serial)
		return 0;
	if (t->in_poll && !(d->open_since && d->open_since == t->poll_ts && d->open_task == t->poll_task))
		if (imp_close_poll(im, t, t->last_ts, true) != 0) /* it ended in data we lack */
			return -1;
	if (!t->in_poll && d->open_since && t->worker_id) {
		if (imp_open_poll(im, t, d->open_since, d->open_task, d->open_location) != 0)
			return -1;
		if (d->open_since > t->last_ts)
			t->last_ts = d->open_since;
	}
	if (t->parked && d->parked_since != t->park_ts)
		if (imp_close_park(im, t, t->last_ts, true) != 0)
			return -1;
	if (!t->parked && d->parked_since && t->worker_id) {
		t->parked = true;
		t->park_ts = d->parked_since;
		if (d->parked_since > t->last_ts)
			t->last_ts = d->parked_since;
	}
	t->seg_serial = im->seg_serial;
	return 0;
}

/* ---- tasks ---------------------------------------------------------------- */

struct evict_ctx {
	uint64_t *keys;
	size_t n;
};

static void idle_task_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)b;
	struct evict_ctx *c = ctx;
	const struct imp_task *k = (const struct imp_task *)(uintptr_t)val;
	if (!k->polling && !k->wake_pending)
		c->keys[c->n++] = a;
}

/* max_live_tasks reached: every task not being polled and not waiting
 * for a poll is written out (still alive: no end) and forgotten. */
static int evict_idle_tasks(struct imp *im)
{
	struct ss_hmap *m = &im->rec->tasks;
	struct evict_ctx c = { malloc(m->len * sizeof *c.keys), 0 };
	if (!c.keys)
		return imp_fail(im);
	if (!im->warned_tasks && !im->o->quiet)
		fprintf(im->log, "stallscope import: warning: more than %llu live tasks in one recording: idle"
			" ones are written out, and a task seen again gets a second row\n",
			(unsigned long long)im->max_live_tasks);
	im->warned_tasks = true;
	ss_hmap_foreach(m, idle_task_cb, &c);
	int rc = 0;
	for (size_t i = 0; i < c.n && !rc; i++) {
		uint64_t v;
		if (!ss_hmap_get(m, c.keys[i], 0, &v))
			continue;
		struct imp_task *k = (struct imp_task *)(uintptr_t)v;
		rc = imp_task_flush(im, k, 0);
		ss_hmap_del(m, c.keys[i], 0);
		free(k);
	}
	free(c.keys);
	return rc;
}

struct imp_task *imp_task_get(struct imp *im, uint64_t task)
{
	uint64_t v;
	if (ss_hmap_get(&im->rec->tasks, task, 0, &v))
		return (struct imp_task *)(uintptr_t)v;
	if (im->rec->tasks.len >= im->max_live_tasks && evict_idle_tasks(im) != 0)
		return NULL;
	struct imp_task *k = calloc(1, sizeof *k);
	if (!k) {
		snprintf(im->db.err, sizeof im->db.err, "out of memory");
		imp_fail(im);
		return NULL;
	}
	k->id = ss_db_new_id(&im->db, ID_TASK);
	k->task = task;
	if (ss_hmap_put(&im->rec->tasks, task, 0, (uint64_t)(uintptr_t)k) != 0) {
		free(k);
		return NULL;
	}
	return k;
}

/* ---- the graveyard: tasks that ended a moment ago ------------------------- */

static struct imp_task *ghost(struct imp *im, uint64_t task)
{
	uint64_t v;
	return ss_hmap_get(&im->rec->ended, task, 0, &v) ? (struct imp_task *)(uintptr_t)v : NULL;
}

static int bury(struct imp *im, struct imp_task *k)
{
	struct imp_recording *rc = im->rec;
	/* Evict what ended longer ago than records can come late. */
	while (rc->grave_n) {
		struct imp_task *old = rc->grave[rc->grave_head];
		if (old->end_ts + IMP_GRAVE_NS >= k->end_ts)
			break;
		rc->grave_head = (rc->grave_head + 1) % rc->grave_cap;
		rc->grave_n--;
		if (ghost(im, old->task) == old)
			ss_hmap_del(&rc->ended, old->task, 0);
		int frc = imp_task_flush(im, old, 0); /* a wake it got late */
		free(old);
		if (frc != 0) {
			free(k);
			return -1;
		}
	}
	if (rc->grave_n == rc->grave_cap) {
		size_t nc = rc->grave_cap ? rc->grave_cap * 2 : 1024;
		struct imp_task **ng = malloc(nc * sizeof *ng);
		if (!ng) {
			free(k);
			return imp_fail(im);
		}
		for (size_t i = 0; i < rc->grave_n; i++)
			ng[i] = rc->grave[(rc->grave_head + i) % rc->grave_cap];
		free(rc->grave);
		rc->grave = ng;
		rc->grave_head = 0;
		rc->grave_cap = nc;
	}
	rc->grave[(rc->grave_head + rc->grave_n++) % rc->grave_cap] = k;
	if (ss_hmap_put(&rc->ended, k->task, 0, (uint64_t)(uintptr_t)k) != 0) {
		rc->grave_n--;
		free(k);
		return imp_fail(im);
	}
	return 0;
}

struct imp_task *imp_task_at(struct imp *im, uint64_t task, uint64_t ts)
{
	uint64_t v;
	struct imp_task *live = ss_hmap_get(&im->rec->tasks, task, 0, &v) ? (struct imp_task *)(uintptr_t)v : NULL;
	if (live && (!live->spawn_ts || live->spawn_ts <= ts))
		return live;
	/* Before its TERMINATE: an ended task's record that came late. */
	struct imp_task *g = ghost(im, task);
	if (g && ts <= g->end_ts)
		return g;
	return live ? live : imp_task_get(im, task);
}

int imp_task_end(struct imp *im, uint64_t task, uint64_t ts)
{
	uint64_t v;
	struct imp_task *k = ss_hmap_get(&im->rec->tasks, task, 0, &v) ? (struct imp_task *)(uintptr_t)v : NULL;
	if (!k) {
		struct imp_task *g = ghost(im, task);
		if (g && g->end_ts == ts)
			return 0; /* the same end again (a re-sent record) */
		if (!(k = imp_task_get(im, task)))
			return -1;
	}
	k->end_ts = ts ? ts : 1;
	int rc = imp_task_flush(im, k, k->end_ts);
	ss_hmap_del(&im->rec->tasks, k->task, 0);
	if (rc != 0) {
		free(k);
		return rc;
	}
	return bury(im, k);
}

static int write_wake(struct imp *im, struct imp_task *k, int64_t poll_id, uint64_t poll_ts)
{
	if (k->wake_rowid) {
		/* Written by the import that ended before this poll. Superseded by a
		 * newer wake, the row stays as it is; leading to this poll, it moves
		 * to the end: wakes stay in the order of the polls they led to. */
		int64_t rowid = k->wake_rowid;
		k->wake_rowid = 0;
		if (!poll_id) {
			k->wake_pending = false;
			return 0;
		}
		struct ss_row *d = ss_row(&im->db, ST_DEL_WAKE);
		ss_bind_i(d, 1, rowid);
		if (ss_db_step(&im->db, ST_DEL_WAKE) != 0)
			return imp_fail(im);
	}
	struct ss_row *s = ss_row(&im->db, ST_INS_WAKE);
	ss_bind_i(s, 1, k->id);
	ss_bind_i(s, 2, (int64_t)k->wake_ts);
	ss_bind_z(s, 3, k->waker_thread_id);
	ss_bind_z(s, 4, k->waker_task_id);
	ss_bind_z(s, 5, poll_id);
	if (poll_id)
		ss_bind_i(s, 6, poll_ts > k->wake_from ? (int64_t)(poll_ts - k->wake_from) : 0);
	else
		ss_bind_null(s, 6);
	k->wake_pending = false;
	return ss_db_step(&im->db, ST_INS_WAKE) ? imp_fail(im) : 0;
}

/* A poll of k starts: a pending wake now knows its poll and delay. */
int imp_task_polled(struct imp *im, struct imp_task *k, int64_t poll_id, uint64_t ts)
{
	k->polling = true;
	return k->wake_pending ? write_wake(im, k, poll_id, ts) : 0;
}

int imp_task_woken(struct imp *im, struct imp_task *k, uint64_t ts, int64_t waker_thread,
		   int64_t waker_task)
{
	/* An earlier wake with no poll since is superseded: the delay is measured
	 * from the last wake before the poll. */
	if (k->wake_pending && write_wake(im, k, 0, 0) != 0)
		return -1;
	k->wake_pending = true;
	k->wake_in_poll = k->polling;
	k->wake_ts = k->wake_from = ts;
	k->waker_thread_id = waker_thread;
	k->waker_task_id = waker_task;
	return 0;
}

int imp_task_flush(struct imp *im, struct imp_task *k, uint64_t end_ts)
{
	if (k->wake_pending && write_wake(im, k, 0, 0) != 0)
		return -1;
	struct ss_row *s;
	if (k->persisted) {
		if (!end_ts)
			return 0;
		s = ss_row(&im->db, ST_UPD_TASK_END);
		ss_bind_i(s, 1, k->id);
		ss_bind_i(s, 2, (int64_t)end_ts);
		return ss_db_step(&im->db, ST_UPD_TASK_END) ? imp_fail(im) : 0;
	}
	s = ss_row(&im->db, ST_INS_TASK);
	ss_bind_i(s, 1, k->id);
	ss_bind_i(s, 2, im->rec->id);
	ss_bind_i(s, 3, (int64_t)k->task);
	ss_bind_z(s, 4, k->location_id);
	ss_bind_z(s, 5, k->parent_id);
	ss_bind_z(s, 6, (int64_t)k->spawn_ts);
	ss_bind_z(s, 7, (int64_t)end_ts);
	ss_bind_z(s, 8, k->spawn_thread_id);
	k->persisted = true;
	return ss_db_step(&im->db, ST_INS_TASK) ? imp_fail(im) : 0;
}

/* ---- locations ------------------------------------------------------------- */

int imp_location_def(struct imp *im, const struct ss_location_def *l)
{
	size_t fl, nl;
	const char *file = imp_str(im, l->file, &fl), *fn = imp_str(im, l->function, &nl);
	uint64_t h = imp_fnv(file ? file : "", fl, 0xcbf29ce484222325ull);
	h = imp_fnv("\0", 1, h);
	h = imp_fnv(fn ? fn : "", nl, h);
	h ^= (uint64_t)(file == NULL) << 1 | (uint64_t)(fn == NULL);
	uint64_t id;
	if (!ss_hmap_get(&im->locations, h, l->line, &id)) {
		id = (uint64_t)ss_db_new_id(&im->db, ID_LOCATION);
		struct ss_row *s = ss_row(&im->db, ST_INS_LOCATION);
		ss_bind_i(s, 1, (int64_t)id);
		ss_bind_t(s, 2, file, fl);
		ss_bind_i(s, 3, (int64_t)l->line);
		ss_bind_t(s, 4, fn, nl);
		if (ss_db_step(&im->db, ST_INS_LOCATION) != 0)
			return imp_fail(im);
		if (ss_hmap_put(&im->locations, h, l->line, id) != 0)
			return -1;
	}
	return ss_hmap_put(&im->seg_locs, l->id, 0, id);
}

int64_t imp_location(struct imp *im, uint64_t seg_loc)
{
	uint64_t v;
	if (!seg_loc || !ss_hmap_get(&im->seg_locs, seg_loc, 0, &v))
		return 0;
	return (int64_t)v;
}

/* ---- the recording --------------------------------------------------------- */

static int64_t find_recording(struct imp *im, uint64_t session)
{
	sqlite3_stmt *s;
	int64_t id = 0;
	if (sqlite3_prepare_v2(im->db.db, "SELECT id FROM recordings WHERE session_id = ?", -1, &s, NULL)
	    != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, (int64_t)session);
	if (sqlite3_step(s) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return id;
}

/* resume(), with a map from threads.id to the threads it loads. */
static int resume_threads(struct imp *im, struct ss_hmap *by_id)
{
	struct imp_recording *rc = im->rec;
	sqlite3_stmt *s;
	int64_t rid = rc->id;
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT t.id, t.thread, t.tid, w.id FROM threads t LEFT JOIN workers w"
			       " ON w.thread_id = t.id WHERE t.recording_id = ?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		bool sampler = sqlite3_column_type(s, 1) == SQLITE_NULL;
		uint64_t num = (uint64_t)sqlite3_column_int64(s, 1), tid = (uint64_t)sqlite3_column_int64(s, 2);
		struct imp_thread *t = new_thread(im, sqlite3_column_int64(s, 0), num, tid, NULL, 0, false);
		if (!t)
			break;
		t->worker_id = sqlite3_column_int64(s, 3);
		ss_hmap_put(sampler ? &rc->sampler_threads : &rc->threads, sampler ? tid : num, 0,
			    (uint64_t)(uintptr_t)t);
		ss_hmap_put(by_id, (uint64_t)t->id, 0, (uint64_t)(uintptr_t)t);
	}
	sqlite3_finalize(s);

	/* CPU states and queue depths where the previous import ended. */
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT c.thread_id, c.cpu_state, c.cpu_since, c.cpu, c.queue_local, c.queue_global"
			       " FROM import_thread_state c JOIN threads t ON t.id = c.thread_id"
			       " WHERE t.recording_id = ?1", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t v;
		if (!ss_hmap_get(by_id, (uint64_t)sqlite3_column_int64(s, 0), 0, &v))
			continue;
		struct imp_thread *t = (struct imp_thread *)(uintptr_t)v;
		int state = sqlite3_column_int(s, 1);
		if (state >= 1 && state <= 3) {
			t->cpu_state = state;
			t->cpu_since = (uint64_t)sqlite3_column_int64(s, 2);
			t->cpu_num = sqlite3_column_type(s, 3) == SQLITE_NULL ? 0 : sqlite3_column_int64(s, 3) + 1;
		}
		if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
			t->queue_known = true;
			t->queue_local = (uint64_t)sqlite3_column_int64(s, 4);
			t->queue_global = (uint64_t)sqlite3_column_int64(s, 5);
		}
	}
	sqlite3_finalize(s);

	/* Spans still open, innermost last. */
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT o.thread_id, o.ts, o.name FROM import_open_spans o JOIN threads t"
			       " ON t.id = o.thread_id WHERE t.recording_id = ?1 ORDER BY o.thread_id, o.depth",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t v;
		if (!ss_hmap_get(by_id, (uint64_t)sqlite3_column_int64(s, 0), 0, &v))
			continue;
		struct imp_thread *t = (struct imp_thread *)(uintptr_t)v;
		const char *name = (const char *)sqlite3_column_text(s, 2);
		if (imp_push_span(im, t, (uint64_t)sqlite3_column_int64(s, 1), name, name ? strlen(name) : 0) != 0)
			break;
	}
	sqlite3_finalize(s);

	/* Stalls whose poll was still running: their STALL_END or further
	 * captures may come now. */
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT s.thread_id, s.ts, s.id FROM stalls s JOIN threads t ON t.id = s.thread_id"
			       " WHERE t.recording_id = ?1 AND s.dur IS NULL", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW)
		ss_hmap_put(&rc->stalls, (uint64_t)sqlite3_column_int64(s, 0), (uint64_t)sqlite3_column_int64(s, 1),
			    (uint64_t)sqlite3_column_int64(s, 2));
	sqlite3_finalize(s);

	/* Summary buckets open where it ended: continued, so only what is new
	 * is added to worker_summaries. */
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT w.thread_id, o.source, o.bucket_ns, o.ts, o.starts, o.busy_ns, o.parked_ns,"
			       " o.offcpu_ns, o.polls, o.max_poll_ns, o.written FROM import_open_summary o"
			       " JOIN workers w ON w.id = o.worker_id WHERE w.recording_id = ?1", -1, &s, NULL)
	    != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t v;
		int src = sqlite3_column_int(s, 1), level = -1;
		uint64_t size = (uint64_t)sqlite3_column_int64(s, 2);
		for (int l = 0; l < SS_SUMMARY_LEVELS; l++)
			if (ss_summary_level_ns[l] == size)
				level = l;
		if (!ss_hmap_get(by_id, (uint64_t)sqlite3_column_int64(s, 0), 0, &v) || level < 0 || src < 0 ||
		    src > 1)
			continue;
		struct imp_thread *t = (struct imp_thread *)(uintptr_t)v;
		if (!imp_summ(t))
			break;
		struct ss_summary_acc *a = &t->summ->acc[src][level];
		uint64_t ts = (uint64_t)sqlite3_column_int64(s, 3);
		*a = (struct ss_summary_acc){ .open = true, .bucket = ts / size, .lo = ts / size * size,
					      .hi = ts / size * size + size, .starts = sqlite3_column_int64(s, 4),
					      .busy = sqlite3_column_int64(s, 5), .parked = sqlite3_column_int64(s, 6),
					      .offcpu = sqlite3_column_int64(s, 7), .polls = sqlite3_column_int64(s, 8),
					      .max_poll = sqlite3_column_int64(s, 9) };
		if (sqlite3_column_int(s, 10)) {
			a->w_busy = a->busy;
			a->w_parked = a->parked;
			a->w_offcpu = a->offcpu;
			a->w_polls = a->polls;
		}
	}
	sqlite3_finalize(s);
	char *drop_sum = sqlite3_mprintf("DELETE FROM import_open_summary WHERE worker_id IN"
					 " (SELECT id FROM workers WHERE recording_id = %lld)", (long long)rid);
	int ds = drop_sum ? ss_db_exec(&im->db, drop_sum) : -1;
	sqlite3_free(drop_sum);
	if (ds != 0)
		return -1;
	char *drop_spans = sqlite3_mprintf("DELETE FROM spans WHERE incomplete AND EXISTS (SELECT 1 FROM"
					   " import_open_spans o JOIN threads t ON t.id = o.thread_id WHERE"
					   " t.recording_id = %lld AND o.thread_id = spans.thread_id AND o.ts ="
					   " spans.ts AND o.depth = spans.depth)", (long long)rid);
	int dsp = drop_spans ? ss_db_exec(&im->db, drop_spans) : -1;
	sqlite3_free(drop_spans);
	if (dsp != 0)
		return -1;
	char *drop_cpu = sqlite3_mprintf("DELETE FROM import_thread_state WHERE thread_id IN"
					 " (SELECT id FROM threads WHERE recording_id = %lld);"
					 "DELETE FROM import_open_spans WHERE thread_id IN"
					 " (SELECT id FROM threads WHERE recording_id = %lld)", (long long)rid,
					 (long long)rid);
	int dc = drop_cpu ? ss_db_exec(&im->db, drop_cpu) : -1;
	sqlite3_free(drop_cpu);
	if (dc != 0)
		return -1;

	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT id, task, location_id, parent_task_id, spawn_ts, spawn_thread_id"
			       " FROM tasks WHERE recording_id = ? AND end_ts IS NULL", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct imp_task *k = calloc(1, sizeof *k);
		if (!k)
			break;
		k->id = sqlite3_column_int64(s, 0);
		k->task = (uint64_t)sqlite3_column_int64(s, 1);
		k->location_id = sqlite3_column_int64(s, 2);
		k->parent_id = sqlite3_column_int64(s, 3);
		k->spawn_ts = (uint64_t)sqlite3_column_int64(s, 4);
		k->spawn_thread_id = sqlite3_column_int64(s, 5);
		k->persisted = true;
		uint64_t old;
		if (ss_hmap_get(&rc->tasks, k->task, 0, &old))
			free((void *)(uintptr_t)old);
		ss_hmap_put(&rc->tasks, k->task, 0, (uint64_t)(uintptr_t)k);
	}
	sqlite3_finalize(s);

	/* Tasks that had just ended. */
	if (sqlite3_prepare_v2(im->db.db, "SELECT task, task_id, end_ts FROM import_ended_tasks"
			       " WHERE recording_id = ?1 ORDER BY end_ts", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		struct imp_task *k = calloc(1, sizeof *k);
		if (!k)
			break;
		k->task = (uint64_t)sqlite3_column_int64(s, 0);
		k->id = sqlite3_column_int64(s, 1);
		k->end_ts = (uint64_t)sqlite3_column_int64(s, 2);
		k->persisted = true;
		if (bury(im, k) != 0)
			break;
	}
	sqlite3_finalize(s);
	char *drop_ended = sqlite3_mprintf("DELETE FROM import_ended_tasks WHERE recording_id = %lld", (long long)rid);
	int de = drop_ended ? ss_db_exec(&im->db, drop_ended) : -1;
	sqlite3_free(drop_ended);
	if (de != 0)
		return -1;

	/* Wakes that were waiting for a poll where the previous import ended. */
	if (sqlite3_prepare_v2(im->db.db,
			       "SELECT p.wake_rowid, t.task, t.id, w.ts, w.waker_thread_id, w.waker_task_id,"
			       " p.wake_from, p.in_poll FROM import_pending_wakes p JOIN tasks t ON t.id = p.task_id"
			       " JOIN wakes w ON w.rowid = p.wake_rowid WHERE p.recording_id = ?1", -1, &s, NULL)
	    != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, rid);
	while (sqlite3_step(s) == SQLITE_ROW) {
		uint64_t v;
		if (!ss_hmap_get(&rc->tasks, (uint64_t)sqlite3_column_int64(s, 1), 0, &v))
			continue; /* ended since: nothing can link it any more */
		struct imp_task *k = (struct imp_task *)(uintptr_t)v;
		if (k->id != sqlite3_column_int64(s, 2))
			continue;
		k->wake_pending = true;
		k->wake_rowid = sqlite3_column_int64(s, 0);
		k->wake_ts = (uint64_t)sqlite3_column_int64(s, 3);
		k->waker_thread_id = sqlite3_column_int64(s, 4);
		k->waker_task_id = sqlite3_column_int64(s, 5);
		k->wake_from = (uint64_t)sqlite3_column_int64(s, 6);
		k->wake_in_poll = sqlite3_column_int(s, 7) != 0;
	}
	sqlite3_finalize(s);
	char *drop = sqlite3_mprintf("DELETE FROM import_pending_wakes WHERE recording_id = %lld", (long long)rid);
	int drc = drop ? ss_db_exec(&im->db, drop) : -1;
	sqlite3_free(drop);
	if (drc != 0)
		return -1;

	/* The last poll and park of each thread, when incomplete, were open where the
	 * previous import ended: reopen them (same poll id) and drop their rows. */
	static const char *const open_sql[2] = {
		"SELECT w.thread_id, p.id, p.ts, p.task_id, p.location_id FROM polls p"
		" JOIN workers w ON w.id = p.worker_id WHERE w.recording_id = ?1 AND p.incomplete"
		" AND p.ts = (SELECT max(ts) FROM polls q WHERE q.worker_id = p.worker_id)",
		"SELECT w.thread_id, 0, p.ts, 0, 0 FROM parks p"
		" JOIN workers w ON w.id = p.worker_id WHERE w.recording_id = ?1 AND p.incomplete"
		" AND p.ts = (SELECT max(ts) FROM parks q WHERE q.worker_id = p.worker_id)",
	};
	for (int kind = 0; kind < 2; kind++) {
		if (sqlite3_prepare_v2(im->db.db, open_sql[kind], -1, &s, NULL) != SQLITE_OK)
			return -1;
		sqlite3_bind_int64(s, 1, rid);
		while (sqlite3_step(s) == SQLITE_ROW) {
			uint64_t v;
			if (ss_hmap_get(by_id, (uint64_t)sqlite3_column_int64(s, 0), 0, &v)) {
				struct imp_thread *t = (struct imp_thread *)(uintptr_t)v;
				uint64_t ts = (uint64_t)sqlite3_column_int64(s, 2);
				if (kind == 0) {
					t->in_poll = true;
					t->poll_id = sqlite3_column_int64(s, 1);
					t->poll_ts = ts;
					t->poll_task_id = sqlite3_column_int64(s, 3);
					t->poll_loc = sqlite3_column_int64(s, 4);
					/* The task number is needed to match THREAD_DEF's open task. */
					for (size_t j = 0; j < rc->tasks.cap; j++)
						if (rc->tasks.slots[j].used &&
						    ((struct imp_task *)(uintptr_t)rc->tasks.slots[j].val)->id ==
							    t->poll_task_id)
							t->poll_task = rc->tasks.slots[j].a;
				} else {
					t->parked = true;
					t->park_ts = ts;
				}
				if (ts > t->last_ts)
					t->last_ts = ts;
			}
		}
		sqlite3_finalize(s);
	}
	char *del = sqlite3_mprintf(
		"DELETE FROM polls WHERE incomplete AND worker_id IN (SELECT id FROM workers WHERE"
		" recording_id = %lld) AND ts = (SELECT max(ts) FROM polls q WHERE q.worker_id ="
		" polls.worker_id);"
		"DELETE FROM parks WHERE incomplete AND worker_id IN (SELECT id FROM workers WHERE"
		" recording_id = %lld) AND ts = (SELECT max(ts) FROM parks q WHERE q.worker_id ="
		" parks.worker_id);", (long long)rid, (long long)rid);
	int rcode = del ? ss_db_exec(&im->db, del) : -1;
	sqlite3_free(del);
	return rcode;
}

/* Loads an existing recording's threads, workers, live tasks and open
 * polls/parks, so this import continues where the last one stopped. */
static int resume(struct imp *im)
{
	struct ss_hmap by_id = { 0 }; /* threads.id -> struct imp_thread * */
	int rc = resume_threads(im, &by_id);
	ss_hmap_free(&by_id);
	return rc;
}

static int load_mappings(struct imp *im)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(im->db.db, "SELECT id, path, build_id, start, \"offset\", \"end\" FROM mappings"
			       " WHERE recording_id = ?", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(s, 1, im->rec->id);
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *path = (const char *)sqlite3_column_text(s, 1);
		if (path && strcmp(path, "[kernel]") == 0) {
			im->rec->kernel_mapping = sqlite3_column_int64(s, 0);
			continue;
		}
		if (path && strcmp(path, "[unknown]") == 0) {
			im->rec->unknown_mapping = sqlite3_column_int64(s, 0);
			continue;
		}
		/* Back from hex to the raw build id the symbolizer compares. */
		const char *hex = (const char *)sqlite3_column_text(s, 2);
		uint8_t bid[64];
		size_t blen = 0;
		while (hex && hex[2 * blen] && hex[2 * blen + 1] && blen < sizeof bid) {
			unsigned byte;
			if (sscanf(hex + 2 * blen, "%2x", &byte) != 1)
				break;
			bid[blen++] = (uint8_t)byte;
		}
		imp_add_map(im, sqlite3_column_int64(s, 0), (uint64_t)sqlite3_column_int64(s, 3),
			    (uint64_t)sqlite3_column_int64(s, 5), (uint64_t)sqlite3_column_int64(s, 4),
			    path, (size_t)sqlite3_column_bytes(s, 1), bid, blen);
		uint64_t key = ss_mapping_key(path, (size_t)sqlite3_column_bytes(s, 1),
					      (const char *)sqlite3_column_text(s, 2));
		ss_hmap_put(&im->rec->mappings, key,
			    (uint64_t)sqlite3_column_int64(s, 3) ^ ((uint64_t)sqlite3_column_int64(s, 4) << 1),
			    (uint64_t)sqlite3_column_int64(s, 0));
	}
	sqlite3_finalize(s);
	return 0;
}

int imp_recording_begin(struct imp *im, const struct ss_segment_header *h)
{
	struct imp_recording *rc = calloc(1, sizeof *rc);
	if (!rc)
		return -1;
	im->rec = rc;
	rc->session_id = h->session_id;
	if (ss_db_flush(&im->db) != 0)
		return imp_fail(im);
	rc->same_machine = ss_sym_boot_id_matches(h->boot_id);
	rc->id = find_recording(im, h->session_id);
	/* Resuming reads back tables: done only once a segment brings new data. */
	if (rc->id) {
		rc->needs_resume = true;
		return 0;
	}
	rc->id = ss_db_new_id(&im->db, ID_RECORDING);
	struct ss_row *s = ss_row(&im->db, ST_INS_RECORDING);
	ss_bind_i(s, 1, rc->id);
	ss_bind_i(s, 2, (int64_t)h->session_id);
	ss_bind_i(s, 3, (int64_t)h->pid);
	ss_bind_t(s, 4, h->exe, strnlen(h->exe, h->exe_len));
	ss_bind_st(s, 5, h->hostname);
	ss_bind_st(s, 6, h->boot_id);
	ss_bind_i(s, 7, (int64_t)h->anchor_mono_ns);
	ss_bind_i(s, 8, (int64_t)h->anchor_real_ns);
	return ss_db_step(&im->db, ST_INS_RECORDING) ? imp_fail(im) : 0;
}

int imp_recording_resume(struct imp *im)
{
	if (!im->rec || !im->rec->needs_resume)
		return 0;
	im->rec->needs_resume = false;
	return resume(im) != 0 || load_mappings(im) != 0 ? imp_fail(im) : 0;
}

static void free_thread_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)ctx, (void)a, (void)b;
	struct imp_thread *t = (struct imp_thread *)(uintptr_t)val;
	for (unsigned i = 0; i < t->n_spans; i++)
		free(t->spans[i].name);
	free(t->spans);
	free(t->summ);
	free(t);
}

struct end_ctx {
	struct imp *im;
	int rc;
};

static void close_thread_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct imp_thread *t = (struct imp_thread *)(uintptr_t)val;
	/* Still in it where the data ends: every thread's events are drained up to
	 * about the same time, so the lower bound runs to the recording's last
	 * event, not to this thread's (a worker parked for the rest of the run
	 * has no event after its PARK). */
	uint64_t end = c->im->rec->last_ts > t->last_ts ? c->im->rec->last_ts : t->last_ts;
	if (t->in_poll && imp_close_poll(c->im, t, end, true) != 0)
		c->rc = -1;
	if (t->parked && imp_close_park(c->im, t, end, true) != 0)
		c->rc = -1;
	if (imp_write_open_spans(c->im, t, end) != 0)
		c->rc = -1;
	if (t->worker_id && t->summ && ss_summary_checkpoint(&c->im->summ, t->summ, t->worker_id) != 0)
		c->rc = -1;
}

struct pending_ctx {
	struct imp *im;
	sqlite3_stmt *wake, *pend;
	int rc;
};

static void persist_wake_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct pending_ctx *c = ctx;
	struct imp_task *k = (struct imp_task *)(uintptr_t)val;
	if (!k->wake_pending || c->rc)
		return;
	sqlite3 *db = c->im->db.db;
	int64_t rowid = k->wake_rowid;
	if (!rowid) {
		sqlite3_bind_int64(c->wake, 1, k->id);
		sqlite3_bind_int64(c->wake, 2, (int64_t)k->wake_ts);
		if (k->waker_thread_id)
			sqlite3_bind_int64(c->wake, 3, k->waker_thread_id);
		else
			sqlite3_bind_null(c->wake, 3);
		if (k->waker_task_id)
			sqlite3_bind_int64(c->wake, 4, k->waker_task_id);
		else
			sqlite3_bind_null(c->wake, 4);
		if (sqlite3_step(c->wake) != SQLITE_DONE)
			c->rc = -1;
		sqlite3_reset(c->wake);
		rowid = sqlite3_last_insert_rowid(db);
	}
	sqlite3_bind_int64(c->pend, 1, c->im->rec->id);
	sqlite3_bind_int64(c->pend, 2, rowid);
	sqlite3_bind_int64(c->pend, 3, k->id);
	sqlite3_bind_int64(c->pend, 4, (int64_t)k->wake_from);
	sqlite3_bind_int(c->pend, 5, k->wake_in_poll);
	if (sqlite3_step(c->pend) != SQLITE_DONE)
		c->rc = -1;
	sqlite3_reset(c->pend);
	k->wake_pending = false;
	k->wake_rowid = 0;
}

/* Wakes still waiting for a poll where this import ends: written now, with
 * their rowid noted in import_pending_wakes, so that the next import of this
 * recording links them instead of leaving them without a poll. The statements
 * run here directly: the batches are flushed first, so the rowid is the row's. */
static int persist_pending_wakes(struct imp *im)
{
	if (ss_db_flush(&im->db) != 0)
		return -1;
	struct pending_ctx c = { im, NULL, NULL, 0 };
	if (sqlite3_prepare_v2(im->db.db, "INSERT INTO wakes(task_id, ts, waker_thread_id, waker_task_id)"
			       " VALUES(?,?,?,?)", -1, &c.wake, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(im->db.db, "INSERT INTO import_pending_wakes(recording_id, wake_rowid, task_id,"
			       " wake_from, in_poll) VALUES(?,?,?,?,?)", -1, &c.pend, NULL) != SQLITE_OK)
		c.rc = -1;
	if (!c.rc)
		ss_hmap_foreach(&im->rec->tasks, persist_wake_cb, &c);
	if (c.rc)
		snprintf(im->db.err, sizeof im->db.err, "%s", sqlite3_errmsg(im->db.db));
	sqlite3_finalize(c.wake);
	sqlite3_finalize(c.pend);
	return c.rc;
}

struct cpu_ctx {
	sqlite3_stmt *st;
	int rc;
};

static void persist_thread_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct cpu_ctx *c = ctx;
	const struct imp_thread *t = (const struct imp_thread *)(uintptr_t)val;
	if ((!t->cpu_state && !t->queue_known) || c->rc)
		return;
	sqlite3_bind_int64(c->st, 1, t->id);
	if (t->cpu_state) {
		sqlite3_bind_int(c->st, 2, t->cpu_state);
		sqlite3_bind_int64(c->st, 3, (int64_t)t->cpu_since);
	} else {
		sqlite3_bind_null(c->st, 2);
		sqlite3_bind_null(c->st, 3);
	}
	if (t->cpu_num)
		sqlite3_bind_int64(c->st, 4, t->cpu_num - 1);
	else
		sqlite3_bind_null(c->st, 4);
	if (t->queue_known) {
		sqlite3_bind_int64(c->st, 5, (int64_t)t->queue_local);
		sqlite3_bind_int64(c->st, 6, (int64_t)t->queue_global);
	} else {
		sqlite3_bind_null(c->st, 5);
		sqlite3_bind_null(c->st, 6);
	}
	if (sqlite3_step(c->st) != SQLITE_DONE)
		c->rc = -1;
	sqlite3_reset(c->st);
}

static void persist_spans_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct cpu_ctx *c = ctx;
	const struct imp_thread *t = (const struct imp_thread *)(uintptr_t)val;
	for (unsigned i = 0; i < t->n_spans && !c->rc; i++) {
		sqlite3_bind_int64(c->st, 1, t->id);
		sqlite3_bind_int(c->st, 2, (int)i);
		sqlite3_bind_int64(c->st, 3, (int64_t)t->spans[i].ts);
		if (t->spans[i].name)
			sqlite3_bind_text(c->st, 4, t->spans[i].name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(c->st, 4);
		if (sqlite3_step(c->st) != SQLITE_DONE)
			c->rc = -1;
		sqlite3_reset(c->st);
	}
}

static void persist_summary_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct cpu_ctx *c = ctx;
	const struct imp_thread *t = (const struct imp_thread *)(uintptr_t)val;
	if (!t->summ || !t->worker_id || c->rc)
		return;
	for (int src = 0; src < 2; src++) {
		for (int l = 0; l < SS_SUMMARY_LEVELS; l++) {
			const struct ss_summary_acc *acc = &t->summ->acc[src][l];
			if (!acc->open)
				continue;
			int64_t v[] = { t->worker_id, src, (int64_t)ss_summary_level_ns[l],
					(int64_t)(acc->bucket * ss_summary_level_ns[l]), acc->starts, acc->busy,
					acc->parked, acc->offcpu, acc->polls, acc->max_poll,
					ss_summary_written(acc, l) };
			for (int i = 0; i < 11; i++)
				sqlite3_bind_int64(c->st, i + 1, v[i]);
			if (sqlite3_step(c->st) != SQLITE_DONE)
				c->rc = -1;
			sqlite3_reset(c->st);
		}
	}
}

/* What a thread is in the middle of where this import ends, for the next
 * import of the recording: its CPU state (the interval has no end yet) and
 * queue depths in import_thread_state, its open spans in import_open_spans,
 * its open summary buckets in import_open_summary. */
static int persist_open_state(struct imp *im)
{
	struct cpu_ctx c = { NULL, 0 };
	if (sqlite3_prepare_v2(im->db.db, "INSERT OR REPLACE INTO import_thread_state(thread_id, cpu_state,"
			       " cpu_since, cpu, queue_local, queue_global) VALUES(?,?,?,?,?,?)", -1, &c.st, NULL)
	    != SQLITE_OK)
		c.rc = -1;
	if (!c.rc) {
		ss_hmap_foreach(&im->rec->threads, persist_thread_cb, &c);
		ss_hmap_foreach(&im->rec->sampler_threads, persist_thread_cb, &c);
	}
	sqlite3_finalize(c.st);
	c.st = NULL;
	if (!c.rc && sqlite3_prepare_v2(im->db.db, "INSERT OR REPLACE INTO import_open_spans(thread_id, depth, ts,"
					" name) VALUES(?,?,?,?)", -1, &c.st, NULL) != SQLITE_OK)
		c.rc = -1;
	if (!c.rc)
		ss_hmap_foreach(&im->rec->threads, persist_spans_cb, &c);
	sqlite3_finalize(c.st);
	c.st = NULL;
	if (!c.rc && sqlite3_prepare_v2(im->db.db, "INSERT OR REPLACE INTO import_open_summary(worker_id, source,"
					" bucket_ns, ts, starts, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns,"
					" written) VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1, &c.st, NULL) != SQLITE_OK)
		c.rc = -1;
	if (!c.rc)
		ss_hmap_foreach(&im->rec->threads, persist_summary_cb, &c);
	if (c.rc)
		snprintf(im->db.err, sizeof im->db.err, "%s", sqlite3_errmsg(im->db.db));
	sqlite3_finalize(c.st);
	return c.rc;
}

/* The graveyard where this import ends: what may still get late records goes
 * to import_ended_tasks for the next import of the recording. */
static int bury_end(struct imp *im)
{
	struct imp_recording *rc = im->rec;
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (!im->failed && (ss_db_flush(&im->db) != 0 ||
			    sqlite3_prepare_v2(im->db.db, "INSERT INTO import_ended_tasks(recording_id, task, task_id,"
					       " end_ts) VALUES(?,?,?,?)", -1, &st, NULL) != SQLITE_OK))
		r = imp_fail(im);
	for (size_t i = 0; i < rc->grave_n; i++) {
		struct imp_task *k = rc->grave[(rc->grave_head + i) % rc->grave_cap];
		if (!im->failed && imp_task_flush(im, k, 0) != 0)
			r = -1;
		if (st && !r) {
			sqlite3_bind_int64(st, 1, rc->id);
			sqlite3_bind_int64(st, 2, (int64_t)k->task);
			sqlite3_bind_int64(st, 3, k->id);
			sqlite3_bind_int64(st, 4, (int64_t)k->end_ts);
			if (sqlite3_step(st) != SQLITE_DONE) {
				snprintf(im->db.err, sizeof im->db.err, "%s", sqlite3_errmsg(im->db.db));
				r = imp_fail(im);
			}
			sqlite3_reset(st);
		}
		free(k);
	}
	sqlite3_finalize(st);
	free(rc->grave);
	rc->grave = NULL;
	rc->grave_n = rc->grave_cap = rc->grave_head = 0;
	ss_hmap_free(&rc->ended);
	return r;
}

static void flush_task_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct imp_task *k = (struct imp_task *)(uintptr_t)val;
	if (imp_task_flush(c->im, k, 0) != 0)
		c->rc = -1;
	free(k);
}

int imp_recording_end(struct imp *im)
{
	struct imp_recording *rc = im->rec;
	if (!rc)
		return 0;
	struct end_ctx c = { im, 0 };
	if (!im->failed) {
		ss_hmap_foreach(&rc->threads, close_thread_cb, &c);
		ss_hmap_foreach(&rc->sampler_threads, close_thread_cb, &c);
	}
	if (!im->failed && persist_pending_wakes(im) != 0)
		c.rc = imp_fail(im);
	if (!im->failed && (ss_db_flush(&im->db) != 0 || persist_open_state(im) != 0))
		c.rc = imp_fail(im);
	ss_hmap_foreach(&rc->tasks, flush_task_cb, &c);
	if (bury_end(im) != 0)
		c.rc = -1;
	/* The next recording may read tables back (resume): no row may wait in a batch. */
	if (!im->failed && ss_db_flush(&im->db) != 0)
		c.rc = imp_fail(im);
	if (!im->failed && rc->first_ts) {
		struct ss_row *s = ss_row(&im->db, ST_UPD_RECORDING_TS);
		ss_bind_i(s, 1, rc->id);
		ss_bind_i(s, 2, (int64_t)rc->first_ts);
		ss_bind_i(s, 3, (int64_t)rc->last_ts);
		if (ss_db_step(&im->db, ST_UPD_RECORDING_TS) != 0)
			c.rc = imp_fail(im);
	}
	ss_hmap_foreach(&rc->threads, free_thread_cb, NULL);
	ss_hmap_foreach(&rc->sampler_threads, free_thread_cb, NULL);
	ss_hmap_free(&rc->threads);
	ss_hmap_free(&rc->sampler_threads);
	ss_hmap_free(&rc->tasks);
	ss_hmap_free(&rc->mappings);
	ss_hmap_free(&rc->stalls);
	imp_free_maps(rc);
	free(rc);
	im->rec = NULL;
	im->tcache = NULL;
	return c.rc;
}
