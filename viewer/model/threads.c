/*
 * threads.c - the threads of a recording and their worker lanes: a source's
 * thread numbers and the sampler's bare tids to threads rows, THREAD_DEF's
 * stitching of the poll or park a thread is in where a unit begins.
 */
#include "model_private.h"

static struct mdl_thread *new_thread(struct ss_model *m, int64_t id, uint64_t thread, uint64_t tid,
				     const char *name, size_t nlen, bool insert)
{
	struct mdl_thread *t = calloc(1, sizeof *t);
	if (!t) {
		mdl_fail(m);
		return NULL;
	}
	t->id = id ? id : mdl_new_id(m, ID_THREAD);
	t->tid = tid;
	if (insert) {
		struct ss_thread_row r = { t->id, m->rec->id, thread, tid, mdl_text(name, nlen) };
		if (MDL_SINK(m, thread, &r) != 0) {
			free(t);
			return NULL;
		}
	}
	return t;
}

/* True (and the event counted) when the recording has as many threads as the
 * model keeps: the caller leaves the event out. */
static bool over_thread_limit(struct ss_model *m)
{
	if (m->rec->threads.len + m->rec->sampler_threads.len < m->max_threads)
		return false;
	m->over_thread_limit++;
	return true;
}

struct mdl_thread *mdl_thread_get(struct ss_model *m, uint64_t thread)
{
	uint64_t v;
	if (m->tcache && m->tcache_num == thread)
		return m->tcache;
	if (ss_hmap_get(&m->rec->threads, thread, 0, &v)) {
		m->tcache_num = thread;
		return m->tcache = (struct mdl_thread *)(uintptr_t)v;
	}
	if (over_thread_limit(m))
		return NULL;
	/* An event of a thread with no definition (thread 0, or a damaged
	 * stream): still gets a row so nothing is dropped. */
	struct mdl_thread *t = new_thread(m, 0, thread, 0, NULL, 0, true);
	if (t && ss_hmap_put(&m->rec->threads, thread, 0, (uint64_t)(uintptr_t)t) != 0) {
		free(t);
		mdl_fail(m);
		return NULL;
	}
	return t;
}

struct mdl_thread *mdl_sampler_thread(struct ss_model *m, uint64_t thread, uint64_t tid)
{
	if (thread)
		return mdl_thread_get(m, thread);
	uint64_t v;
	if (ss_hmap_get(&m->rec->sampler_threads, tid, 0, &v))
		return (struct mdl_thread *)(uintptr_t)v;
	if (over_thread_limit(m))
		return NULL;
	struct mdl_thread *t = new_thread(m, 0, 0, tid, NULL, 0, true);
	if (t && ss_hmap_put(&m->rec->sampler_threads, tid, 0, (uint64_t)(uintptr_t)t) != 0) {
		free(t);
		mdl_fail(m);
		return NULL;
	}
	return t;
}

/* By threads.id: only while a recording's state is restored (sink->resume),
 * through a map that lives as long as that. */
struct mdl_thread *mdl_thread_by_id(struct ss_model *m, int64_t id)
{
	uint64_t v;
	return ss_hmap_get(&m->rec->by_id, (uint64_t)id, 0, &v) ? (struct mdl_thread *)(uintptr_t)v : NULL;
}

int mdl_make_worker(struct ss_model *m, struct mdl_thread *t, const char *runtime, size_t rlen, uint64_t idx,
		    uint64_t ts)
{
	if (t->worker_id)
		return MDL_SINK(m, worker_runtime, t->worker_id, mdl_text(runtime, rlen), (int64_t)idx, (int64_t)ts);
	t->worker_id = mdl_new_id(m, ID_WORKER);
	struct ss_worker_row r = { t->worker_id, m->rec->id, t->id, mdl_text(runtime, rlen), (int64_t)idx,
				   (int64_t)ts };
	return MDL_SINK(m, worker, &r);
}

int ss_model_thread_def(struct ss_model *m, const struct ss_model_thread_def *d)
{
	if (m->failed || !m->rec)
		return -1;
	if (!m->merge_elsewhere)
		ss_merge_declare(&m->merge, d->thread); /* the pipe's producer did (pipe.c) */
	uint64_t v;
	struct mdl_thread *t;
	bool known = ss_hmap_get(&m->rec->threads, d->thread, 0, &v);
	if (known) {
		t = (struct mdl_thread *)(uintptr_t)v;
		uint64_t tid = d->partial && !d->tid ? t->tid : d->tid;
		if (d->partial && !d->name) {
			/* nothing to rename (a row's name is set with its tid) */
		} else if (t->tid != tid || !m->skip_events) {
			if (MDL_SINK(m, thread_name, t->id, mdl_text(d->name, d->name_len), tid) != 0)
				return -1;
			t->tid = tid;
		}
	} else {
		if (over_thread_limit(m))
			return 0;
		t = new_thread(m, 0, d->thread, d->tid, d->name, d->name_len, true);
		if (!t || ss_hmap_put(&m->rec->threads, d->thread, 0, (uint64_t)(uintptr_t)t) != 0) {
			free(t);
			return mdl_fail(m);
		}
	}
	if (d->worker && !t->worker_id) {
		size_t rl;
		const char *rt = mdl_str(m, d->runtime, &rl);
		if (mdl_make_worker(m, t, rt, rl, d->worker_index, 0) != 0)
			return -1;
	}
	if (m->skip_events || d->partial)
		return 0;
	/* Stitching: only a definition that precedes the thread's events in this
	 * unit describes the state at the unit's start. */
	if (t->seg_serial == m->seg_serial)
		return 0;
	if (t->in_poll && !(d->open_since && d->open_since == t->poll_ts && d->open_task == t->poll_task))
		if (mdl_close_poll(m, t, t->last_ts, true) != 0) /* it ended in data we lack */
			return -1;
	if (!t->in_poll && d->open_since && t->worker_id) {
		if (mdl_open_poll(m, t, d->open_since, d->open_task, d->open_location) != 0)
			return -1;
		if (d->open_since > t->last_ts)
			t->last_ts = d->open_since;
	}
	/* A park closed here ended in data we lack: its CPU state stays unknown
	 * (as the park left it) until the thread's next SWITCH. */
	if (t->parked && d->parked_since != t->park_ts)
		if (mdl_close_park(m, t, t->last_ts, true, -1, -1) != 0)
			return -1;
	if (!t->parked && d->parked_since && t->worker_id) {
		/* its PARK in data we lack: on a CPU until then, as at a PARK */
		if (mdl_cpu_park(m, t, d->parked_since, true) != 0)
			return -1;
		t->parked = true;
		t->park_cpu_known = false;
		t->park_ts = d->parked_since;
		if (d->parked_since > t->last_ts)
			t->last_ts = d->parked_since;
	}
	t->seg_serial = m->seg_serial;
	return 0;
}

static void free_thread_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)ctx, (void)a, (void)b;
	struct mdl_thread *t = (struct mdl_thread *)(uintptr_t)val;
	for (unsigned i = 0; i < t->n_spans; i++) {
		free(t->spans[i].name);
		free(t->spans[i].fields);
	}
	free(t->spans);
	free(t->summ);
	free(t);
}

void mdl_free_threads(struct mdl_recording *rc)
{
	ss_hmap_foreach(&rc->threads, free_thread_cb, NULL);
	ss_hmap_foreach(&rc->sampler_threads, free_thread_cb, NULL);
	ss_hmap_free(&rc->threads);
	ss_hmap_free(&rc->sampler_threads);
}

/* ---- restoring a recording's threads (sink->resume) --------------------------- */

int ss_model_restore_thread(struct ss_model *m, int64_t id, uint64_t thread, bool sampler_only, uint64_t tid,
			    int64_t worker_id)
{
	struct mdl_thread *t = new_thread(m, id, thread, tid, NULL, 0, false);
	if (!t)
		return -1;
	t->worker_id = worker_id;
	if (ss_hmap_put(sampler_only ? &m->rec->sampler_threads : &m->rec->threads, sampler_only ? tid : thread, 0,
			(uint64_t)(uintptr_t)t) != 0) {
		free(t);
		return mdl_fail(m);
	}
	return ss_hmap_put(&m->rec->by_id, (uint64_t)t->id, 0, (uint64_t)(uintptr_t)t) != 0 ? mdl_fail(m) : 0;
}

int ss_model_restore_thread_state(struct ss_model *m, const struct ss_thread_state *s)
{
	struct mdl_thread *t = mdl_thread_by_id(m, s->thread_id);
	if (!t)
		return 0;
	if (s->cpu_state >= 1 && s->cpu_state <= 3) {
		t->cpu_state = s->cpu_state;
		t->cpu_since = (uint64_t)s->cpu_since;
		t->cpu_num = s->cpu < 0 ? 0 : s->cpu + 1;
	}
	if (s->queue_known) {
		t->queue_known = true;
		t->queue_unknown = (uint8_t)((s->queue_local < 0 ? SS_QUEUE_NO_LOCAL : 0) |
					     (s->queue_global < 0 ? SS_QUEUE_NO_GLOBAL : 0));
		t->queue_local = s->queue_local < 0 ? 0 : (uint64_t)s->queue_local;
		t->queue_global = s->queue_global < 0 ? 0 : (uint64_t)s->queue_global;
	}
	return 0;
}

int ss_model_restore_open_span(struct ss_model *m, const struct ss_open_span *s)
{
	struct mdl_thread *t = mdl_thread_by_id(m, s->thread_id);
	if (!t)
		return 0;
	char *fields = s->fields.p ? strndup(s->fields.p, s->fields.n) : NULL;
	struct mdl_span extra = { .id = s->span_id, .parent = s->parent_span_id, .fields = fields,
				  .location_id = s->location_id };
	int rc = mdl_push_span(m, t, (uint64_t)s->ts, s->name.p, s->name.n, &extra);
	free(fields);
	return rc;
}

int ss_model_restore_open_summary(struct ss_model *m, int64_t thread_id, const struct ss_open_summary *o)
{
	struct mdl_thread *t = mdl_thread_by_id(m, thread_id);
	if (!t || o->level < 0 || o->level >= SS_SUMMARY_LEVELS || o->source < 0 || o->source > 1)
		return 0;
	if (!mdl_summ(t))
		return mdl_fail(m);
	uint64_t size = ss_summary_level_ns[o->level], ts = (uint64_t)o->ts;
	struct ss_summary_acc *a = &t->summ->acc[o->source][o->level];
	*a = (struct ss_summary_acc){ .open = true, .bucket = ts / size, .lo = ts / size * size,
				      .hi = ts / size * size + size, .starts = o->starts, .busy = o->busy,
				      .parked = o->parked, .offcpu = o->offcpu, .polls = o->polls,
				      .max_poll = o->max_poll };
	if (o->written) {
		a->w_busy = a->busy;
		a->w_parked = a->parked;
		a->w_offcpu = a->offcpu;
		a->w_polls = a->polls;
	}
	return 0;
}

int ss_model_restore_open_poll(struct ss_model *m, int64_t thread_id, int64_t poll_id, int64_t ts,
			       int64_t task_id, int64_t location_id)
{
	struct mdl_thread *t = mdl_thread_by_id(m, thread_id);
	if (!t)
		return 0;
	t->in_poll = true;
	t->poll_id = poll_id;
	t->poll_ts = (uint64_t)ts;
	t->poll_task_id = task_id;
	t->poll_loc = location_id;
	/* The task number is needed to match THREAD_DEF's open task. */
	for (size_t j = 0; j < m->rec->tasks.cap; j++)
		if (m->rec->tasks.slots[j].used &&
		    ((struct mdl_task *)(uintptr_t)m->rec->tasks.slots[j].val)->id == task_id)
			t->poll_task = m->rec->tasks.slots[j].a;
	if ((uint64_t)ts > t->last_ts)
		t->last_ts = (uint64_t)ts;
	return 0;
}

int ss_model_restore_open_park(struct ss_model *m, int64_t thread_id, int64_t ts, int64_t cpu_begin)
{
	struct mdl_thread *t = mdl_thread_by_id(m, thread_id);
	if (!t)
		return 0;
	t->parked = true;
	t->park_ts = (uint64_t)ts;
	t->park_cpu_known = cpu_begin >= 0;
	t->park_cpu = cpu_begin >= 0 ? (uint64_t)cpu_begin : 0;
	if ((uint64_t)ts > t->last_ts)
		t->last_ts = (uint64_t)ts;
	return 0;
}
