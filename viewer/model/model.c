/*
 * model.c - the model's life: a recording begun or continued (its state
 * restored from the store), units of ids, events through the merge to the
 * trackers (intervals.c, tasks.c, stacks.c, stalls.c), and where an import
 * ends: open intervals written as incomplete, the state the next import
 * continues from handed to the store.
 */
#include "model_private.h"

int mdl_fail(struct ss_model *m)
{
	if (!m->failed && !m->o.quiet)
		fprintf(m->log, "stallscope import: database write failed: %s\n",
			m->sink.error ? m->sink.error(m->sink.ctx) : "?");
	m->failed = true;
	return -1;
}

bool ss_model_failed(const struct ss_model *m)
{
	return m->failed;
}

uint64_t ss_model_late(const struct ss_model *m)
{
	return m->merge.late;
}

int64_t ss_model_new_id(struct ss_model *m, enum ss_idkind k)
{
	return mdl_new_id(m, k);
}

int64_t ss_model_recording_id(const struct ss_model *m)
{
	return m->rec ? m->rec->id : 0;
}

bool ss_model_recording_known(const struct ss_model *m)
{
	return m->rec && m->rec->known;
}

uint64_t ss_model_over_thread_limit(const struct ss_model *m)
{
	return m->over_thread_limit;
}

uint64_t ss_model_max_threads(const struct ss_model *m)
{
	return m->max_threads;
}

/* The merge hands events back in time order. Only a failed store write stops
 * it: any other error loses that one event. */
static int deliver(void *ctx, const struct ss_event *e)
{
	struct ss_model *m = ctx;
	if (ss_ev_is_hook(e->type))
		mdl_hook_event(m, e);
	else if (e->type >= SS_EV_STALL)
		mdl_stall_event(m, e);
	else
		mdl_sampler_event(m, e);
	return m->failed ? -1 : 0;
}

struct ss_model *ss_model_new(const struct ss_model_options *o, const struct ss_sink *sink, char *err,
			      size_t errlen)
{
	struct ss_model *m = calloc(1, sizeof *m);
	if (!m || !(m->symres = malloc(sizeof *m->symres))) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	m->o = *o;
	m->log = o->log ? o->log : stderr;
	m->sink = *sink;
	m->summ.sink = &m->sink;
	m->summ.max_buckets = o->max_summary_buckets ? o->max_summary_buckets : 2000000;
	m->max_threads = o->max_threads ? o->max_threads : MDL_MAX_THREADS;
	m->max_live_tasks = o->max_live_tasks ? o->max_live_tasks : MDL_MAX_LIVE_TASKS;
	ss_merge_init(&m->merge, deliver, m);
	if (sink->next_ids(sink->ctx, m->next_id) != 0 || sink->load_known(sink->ctx, m) != 0 || m->failed) {
		snprintf(err, errlen, "%s", sink->error ? sink->error(sink->ctx) : "cannot read the store");
		ss_model_free(m);
		return NULL;
	}
	return m;
}

void ss_model_free(struct ss_model *m)
{
	if (!m)
		return;
	if (m->rec) {
		/* Ended without ss_model_recording_end (an error path): free only. */
		mdl_free_threads(m->rec);
		for (size_t i = 0; i < m->rec->tasks.cap; i++)
			if (m->rec->tasks.slots[i].used)
				free((void *)(uintptr_t)m->rec->tasks.slots[i].val);
		ss_hmap_free(&m->rec->tasks);
		mdl_grave_free(&m->rec->grave);
		ss_hmap_free(&m->rec->mappings);
		ss_hmap_free(&m->rec->stalls);
		ss_hmap_free(&m->rec->by_id);
		mdl_free_maps(m->rec);
		free(m->rec);
	}
	ss_hmap_free(&m->locations);
	ss_hmap_free(&m->frames);
	ss_hmap_free(&m->callsites);
	ss_hmap_free(&m->seg_locs);
	ss_hmap_free(&m->seg_stacks);
	ss_merge_free(&m->merge);
	free(m->symres);
	free(m);
}

/* ---- recordings ----------------------------------------------------------------- */

int ss_model_recording(struct ss_model *m, const struct ss_recording_info *info)
{
	if (m->failed)
		return -1;
	if (m->rec && m->rec->session_id == info->session_id)
		return 0;
	if (ss_model_recording_end(m) != 0)
		return -1;
	struct mdl_recording *rc = calloc(1, sizeof *rc);
	if (!rc)
		return mdl_fail(m);
	m->rec = rc;
	rc->session_id = info->session_id;
	rc->same_machine = info->boot_id && ss_sym_boot_id_matches(info->boot_id);
	if (m->sink.find_recording(m->sink.ctx, info->session_id, &rc->id) != 0)
		return mdl_fail(m);
	/* Resuming reads the store: done only once a unit brings new data. */
	if (rc->id) {
		rc->known = rc->needs_resume = true;
		return 0;
	}
	rc->id = mdl_new_id(m, ID_RECORDING);
	struct ss_recording_row r = { rc->id, info->session_id, info->pid, mdl_text(info->exe, info->exe_len),
				      mdl_cstr(info->host), mdl_cstr(info->boot_id), (int64_t)info->anchor_mono_ns,
				      (int64_t)info->anchor_real_ns };
	return MDL_SINK(m, recording, &r);
}

int ss_model_recording_fill(struct ss_model *m, const struct ss_recording_info *info)
{
	if (m->failed || !m->rec)
		return -1;
	struct ss_recording_row r = { m->rec->id, info->session_id, info->pid, mdl_text(info->exe, info->exe_len),
				      mdl_cstr(info->host), mdl_cstr(info->boot_id), (int64_t)info->anchor_mono_ns,
				      (int64_t)info->anchor_real_ns };
	return MDL_SINK(m, recording_fill, &r);
}

struct end_ctx {
	struct ss_model *m;
	int rc;
};

static void close_thread_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct mdl_thread *t = (struct mdl_thread *)(uintptr_t)val;
	/* Still in it where the data ends: every thread's events are drained up to
	 * about the same time, so the lower bound runs to the recording's last
	 * event, not to this thread's (a worker parked for the rest of the run
	 * has no event after its PARK). */
	uint64_t end = c->m->rec->last_ts > t->last_ts ? c->m->rec->last_ts : t->last_ts;
	if (t->in_poll && mdl_close_poll(c->m, t, end, true) != 0)
		c->rc = -1;
	if (t->parked && mdl_close_park(c->m, t, end, true, -1, -1) != 0)
		c->rc = -1;
	if (mdl_write_open_spans(c->m, t, end) != 0)
		c->rc = -1;
	if (t->worker_id && t->summ && ss_summary_checkpoint(&c->m->summ, t->summ, t->worker_id) != 0)
		c->rc = mdl_fail(c->m);
}

/* What a thread is in the middle of, for the next import of the recording: its
 * CPU state (the interval has no end yet) and queue depths, its open spans, its
 * open summary buckets. */
static void thread_state_cb(void *ctx, uint64_t a, uint64_t b, uint64_t val)
{
	(void)a, (void)b;
	struct end_ctx *c = ctx;
	struct ss_model *m = c->m;
	const struct mdl_thread *t = (const struct mdl_thread *)(uintptr_t)val;
	if (c->rc || m->failed)
		return;
	if (t->cpu_state || t->queue_known) {
		struct ss_thread_state s = { t->id, t->cpu_state, (int64_t)t->cpu_since, t->cpu_num - 1, t->queue_known,
					     t->queue_unknown & SS_QUEUE_NO_LOCAL ? -1 : (int64_t)(t->queue_local & INT64_MAX),
					     t->queue_unknown & SS_QUEUE_NO_GLOBAL ? -1
										    : (int64_t)(t->queue_global & INT64_MAX) };
		if (MDL_SINK(m, thread_state, &s) != 0)
			c->rc = -1;
	}
	for (unsigned i = 0; i < t->n_spans && !c->rc; i++) {
		const struct mdl_span *sp = &t->spans[i];
		struct ss_open_span s = { t->id, i, (int64_t)sp->ts, mdl_cstr(sp->name), sp->id, sp->parent,
					  mdl_cstr(sp->fields), sp->location_id };
		if (MDL_SINK(m, open_span, &s) != 0)
			c->rc = -1;
	}
	if (!t->summ || !t->worker_id)
		return;
	for (int src = 0; src < 2 && !c->rc; src++) {
		for (int l = 0; l < SS_SUMMARY_LEVELS && !c->rc; l++) {
			const struct ss_summary_acc *acc = &t->summ->acc[src][l];
			if (!acc->open)
				continue;
			struct ss_open_summary s = {
				t->worker_id, src, l, (int64_t)(acc->bucket * ss_summary_level_ns[l]), acc->starts,
				acc->busy, acc->parked, acc->offcpu, acc->polls, acc->max_poll,
				ss_summary_written(acc, l),
			};
			if (MDL_SINK(m, open_summary, &s) != 0)
				c->rc = -1;
		}
	}
}

int ss_model_recording_end(struct ss_model *m)
{
	struct mdl_recording *rc = m->rec;
	if (!rc)
		return 0;
	struct end_ctx c = { m, 0 };
	if (!m->failed) {
		ss_hmap_foreach(&rc->threads, close_thread_cb, &c);
		ss_hmap_foreach(&rc->sampler_threads, close_thread_cb, &c);
	}
	/* State rows read back what rows were written: the store first takes in
	 * everything handed over so far. */
	if (!m->failed && m->sink.flush(m->sink.ctx) != 0)
		c.rc = mdl_fail(m);
	if (!m->failed) {
		ss_hmap_foreach(&rc->threads, thread_state_cb, &c);
		ss_hmap_foreach(&rc->sampler_threads, thread_state_cb, &c);
	}
	if (mdl_tasks_end(m) != 0)
		c.rc = -1;
	if (!m->failed && m->sink.flush(m->sink.ctx) != 0)
		c.rc = mdl_fail(m);
	if (!m->failed && rc->first_ts &&
	    MDL_SINK(m, recording_span, rc->id, (int64_t)rc->first_ts, (int64_t)rc->last_ts) != 0)
		c.rc = -1;
	mdl_free_threads(rc);
	ss_merge_trim(&m->merge);
	ss_hmap_free(&rc->mappings);
	ss_hmap_free(&rc->stalls);
	ss_hmap_free(&rc->by_id);
	mdl_free_maps(rc);
	free(rc);
	m->rec = NULL;
	m->tcache = NULL;
	return m->failed ? -1 : c.rc;
}

/* ---- units ------------------------------------------------------------------------ */

int ss_model_segment_begin(struct ss_model *m, const struct ss_source *src, const struct ss_symtab *symtab)
{
	if (m->failed || !m->rec)
		return -1;
	if (m->rec->needs_resume) {
		m->rec->needs_resume = false;
		int rc = m->sink.resume(m->sink.ctx, m->rec->id, m);
		ss_hmap_free(&m->rec->by_id);
		if (rc != 0 || m->failed)
			return mdl_fail(m);
	}
	m->src = *src;
	m->symtab = symtab;
	m->seg_serial++;
	m->skip_events = false;
	ss_hmap_clear(&m->seg_locs);
	ss_hmap_clear(&m->seg_stacks);
	return 0;
}

void ss_model_skip_events(struct ss_model *m, bool skip)
{
	m->skip_events = skip;
}

int ss_model_segment_end(struct ss_model *m)
{
	m->skip_events = false;
	/* What events refer to is the unit's. */
	if (!m->failed)
		ss_merge_drain(&m->merge);
	m->symtab = NULL;
	return m->failed ? -1 : 0;
}

int ss_model_event(struct ss_model *m, const struct ss_event *ev)
{
	if (m->failed || !m->rec)
		return -1;
	if (m->skip_events)
		return 0;
	/* -1 without a failed write: memory ran out; that event is lost. */
	return ss_merge_push(&m->merge, ev);
}

int ss_model_other(struct ss_model *m, uint64_t thread, bool has_ts, uint64_t ts, const char *name,
		   size_t name_len, const char *json, size_t json_len)
{
	if (m->failed || !m->rec)
		return -1;
	if (m->skip_events)
		return 0;
	int64_t tid = 0;
	if (thread) {
		struct mdl_thread *t = mdl_thread_get(m, thread);
		if (!t)
			return m->failed ? -1 : 0; /* past the thread limit: left out */
		tid = t->id;
	}
	struct ss_other_row r = { m->rec->id, tid, has_ts, (int64_t)(ts & INT64_MAX), mdl_text(name, name_len),
				  mdl_text(json, json_len) };
	return MDL_SINK(m, other, &r);
}

int ss_model_release(struct ss_model *m)
{
	if (m->failed)
		return -1;
	ss_merge_release(&m->merge);
	return m->failed ? -1 : 0;
}

void ss_model_unit_defines(struct ss_model *m, const uint64_t *threads, size_t n)
{
	ss_merge_unit_defines(&m->merge, threads, n);
}

int ss_model_release_to(struct ss_model *m, uint64_t floor)
{
	if (m->failed)
		return -1;
	ss_merge_release_to(&m->merge, floor);
	return m->failed ? -1 : 0;
}
