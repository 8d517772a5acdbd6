/*
 * intervals.c - a thread's own events into rows: polls, parks, spans (intervals
 * written when they end), spawns, terminations and wakes (tasks.c keeps their
 * state), queue depths, marks, worker lanes and loss. What is still open where
 * the data ends is written by ss_model_recording_end() as incomplete, so the end
 * of a trace never produces a phantom long poll.
 */
#include "model_private.h"
#include "segment_reader.h" /* names of loss reasons */

/* Polls and parks need a worker lane; a thread that polls without having said
 * it is a worker gets an anonymous one rather than losing its polls. */
static int ensure_worker(struct ss_model *m, struct mdl_thread *t)
{
	return t->worker_id ? 0 : mdl_make_worker(m, t, NULL, 0, 0, 0);
}

int mdl_open_poll(struct ss_model *m, struct mdl_thread *t, uint64_t ts, uint64_t task, uint64_t raw_loc)
{
	if (ensure_worker(m, t) != 0)
		return -1;
	struct mdl_task *k = mdl_task_at(m, task, ts);
	if (!k)
		return -1;
	t->in_poll = true;
	t->poll_ts = ts;
	t->poll_task = task;
	t->poll_task_id = k->id;
	t->poll_raw_loc = raw_loc;
	t->poll_loc = mdl_location(m, raw_loc);
	t->poll_id = mdl_new_id(m, ID_POLL);
	if (!k->location_id)
		k->location_id = t->poll_loc;
	return mdl_task_polled(m, k, t->poll_id, ts);
}

int mdl_close_poll(struct ss_model *m, struct mdl_thread *t, uint64_t end, bool incomplete)
{
	t->in_poll = false;
	uint64_t dur = end > t->poll_ts ? end - t->poll_ts : 0;
	if (!t->poll_loc)
		t->poll_loc = mdl_location(m, t->poll_raw_loc);
	struct ss_poll_row r = { t->poll_id, t->worker_id, t->poll_task_id, t->poll_loc, (int64_t)t->poll_ts,
				 (int64_t)dur, incomplete };
	if (MDL_SINK(m, poll, &r) != 0)
		return -1;
	struct mdl_task *k = mdl_task_find(m, t->poll_task);
	if (k && k->id == t->poll_task_id) {
		k->polling = false;
		/* A wake that arrived during this poll: the task could not run again
		 * before the poll ended, so its delay is counted from here (not from
		 * where the data ends: a later import may continue the poll). */
		if (k->wake_pending && k->wake_in_poll && !incomplete) {
			k->wake_in_poll = false;
			if (end > k->wake_from)
				k->wake_from = end;
		}
	}
	/* Incomplete polls stay out of the summaries: a later import may continue
	 * them, and a lower bound would be counted twice. */
	if (!incomplete &&
	    (!mdl_summ(t) || ss_summary_add(&m->summ, t->summ, t->worker_id, SS_SUM_BUSY, t->poll_ts, dur)))
		return mdl_fail(m);
	return 0;
}

int mdl_close_park(struct ss_model *m, struct mdl_thread *t, uint64_t end, bool incomplete, int64_t cpu_end,
		   int64_t sched_wait)
{
	t->parked = false;
	if (ensure_worker(m, t) != 0)
		return -1;
	uint64_t dur = end > t->park_ts ? end - t->park_ts : 0;
	struct ss_park_row r = { t->worker_id, (int64_t)t->park_ts, (int64_t)dur, incomplete,
				 t->park_cpu_known ? (int64_t)(t->park_cpu & INT64_MAX) : -1, cpu_end, sched_wait };
	if (MDL_SINK(m, park, &r) != 0)
		return -1;
	if (!incomplete &&
	    (!mdl_summ(t) || ss_summary_add(&m->summ, t->summ, t->worker_id, SS_SUM_PARKED, t->park_ts, dur)))
		return mdl_fail(m);
	return 0;
}

static int span_row(struct ss_model *m, struct mdl_thread *t, unsigned depth, uint64_t end, bool incomplete)
{
	const struct mdl_span *sp = &t->spans[depth];
	struct ss_span_row r = { t->id, (int64_t)sp->ts, end > sp->ts ? (int64_t)(end - sp->ts) : 0,
				 mdl_cstr(sp->name), depth, incomplete, sp->id, sp->parent, mdl_cstr(sp->fields),
				 sp->location_id };
	return MDL_SINK(m, span, &r);
}

static int write_span(struct ss_model *m, struct mdl_thread *t, uint64_t end, bool incomplete)
{
	int rc = span_row(m, t, t->n_spans - 1, end, incomplete);
	struct mdl_span *sp = &t->spans[--t->n_spans];
	free(sp->name);
	free(sp->fields);
	sp->name = sp->fields = NULL;
	return rc;
}

/* A span end: the innermost span, or the innermost with the source's span id.
 * Spans inside that one have lost their ends: written as incomplete there. */
static int end_span(struct ss_model *m, struct mdl_thread *t, uint64_t ts, uint64_t id)
{
	unsigned d = t->n_spans;
	if (id)
		while (d > 0 && t->spans[d - 1].id != id)
			d--;
	if (d == 0)
		return 0; /* its begin is not in the data */
	while (t->n_spans > d)
		if (write_span(m, t, ts, true) != 0)
			return -1;
	return write_span(m, t, ts, false);
}

int mdl_push_span(struct ss_model *m, struct mdl_thread *t, uint64_t ts, const char *name, size_t len,
		  const struct mdl_span *extra)
{
	if (t->n_spans == MDL_MAX_SPAN_DEPTH && write_span(m, t, ts, true) != 0)
		return -1;
	if (t->n_spans == t->cap_spans) {
		unsigned nc = t->cap_spans ? t->cap_spans * 2 : 4;
		struct mdl_span *sp = realloc(t->spans, nc * sizeof *sp);
		if (!sp)
			return mdl_fail(m);
		t->spans = sp;
		t->cap_spans = nc;
	}
	struct mdl_span *sp = &t->spans[t->n_spans];
	*sp = extra ? *extra : (struct mdl_span){ 0 };
	sp->ts = ts;
	sp->name = name ? strndup(name, len) : NULL;
	sp->fields = extra && extra->fields ? strdup(extra->fields) : NULL;
	t->n_spans++;
	return 0;
}

int mdl_write_open_spans(struct ss_model *m, struct mdl_thread *t, uint64_t end)
{
	/* Rows marked incomplete, to the end of the data; the spans stay open
	 * (the store keeps them as state), and the next import replaces these
	 * rows. */
	for (unsigned i = 0; i < t->n_spans; i++)
		if (span_row(m, t, i, end, true) != 0)
			return -1;
	return 0;
}

int mdl_loss(struct ss_model *m, int64_t thread_id, uint64_t ts, uint64_t span, uint64_t count,
	     const char *source, const char *reason)
{
	struct ss_loss_row r = { m->rec->id, thread_id, (int64_t)ts, (int64_t)span, (int64_t)count, source,
				 reason };
	return MDL_SINK(m, loss, &r);
}

static int spawn(struct ss_model *m, struct mdl_thread *t, const struct ss_event *e)
{
	struct mdl_task *k = mdl_task_find(m, e->u.spawn.task);
	if (k && (k->spawn_ts || k->persisted)) {
		/* The number was reused: the old task's end is not in the data. */
		if (mdl_task_flush(m, k, 0) != 0)
			return -1;
		mdl_task_remove(m, k);
		free(k);
		k = NULL;
	}
	if (!k && !(k = mdl_task_new(m, e->u.spawn.task)))
		return -1;
	k->spawn_ts = e->ts;
	k->location_id = mdl_location(m, e->u.spawn.location);
	k->parent_id = t->in_poll ? t->poll_task_id : 0;
	k->spawn_thread_id = t->id;
	return 0;
}

int mdl_hook_event(struct ss_model *m, const struct ss_event *e)
{
	if (e->type == SS_EV_LOSS && e->thread == 0)
		return mdl_loss(m, 0, e->ts, e->u.loss.span, e->u.loss.count, "events",
				ss_loss_reason_name(e->u.loss.reason));
	struct mdl_thread *t = mdl_thread_get(m, e->thread);
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t ts = e->ts;
	if (ts > t->last_ts)
		t->last_ts = ts;
	t->seg_serial = m->seg_serial;
	struct mdl_recording *rc = m->rec;
	if (!rc->first_ts || ts < rc->first_ts)
		rc->first_ts = ts;
	if (ts > rc->last_ts)
		rc->last_ts = ts;
	size_t len;
	const char *str;

	switch (e->type) {
	case SS_EV_POLL_BEGIN:
		if (t->in_poll && mdl_close_poll(m, t, ts, true) != 0)
			return -1;
		return mdl_open_poll(m, t, ts, e->u.poll_begin.task, e->u.poll_begin.location);
	case SS_EV_POLL_END:
		return t->in_poll ? mdl_close_poll(m, t, ts, false) : 0;
	case SS_EV_PARK:
		if (t->parked && mdl_close_park(m, t, ts, true, -1, -1) != 0)
			return -1;
		if (mdl_cpu_park(m, t, ts, true) != 0)
			return -1;
		t->parked = true;
		t->park_ts = ts;
		t->park_cpu_known = (e->u.park.flags & SS_PARK_F_CPU) != 0;
		t->park_cpu = e->u.park.cpu_ns;
		return 0;
	case SS_EV_UNPARK:
		if (mdl_cpu_park(m, t, ts, false) != 0)
			return -1;
		return t->parked ? mdl_close_park(m, t, ts, false,
						  e->u.unpark.flags & SS_PARK_F_CPU ? (int64_t)(e->u.unpark.cpu_ns & INT64_MAX) : -1,
						  e->u.unpark.flags & SS_PARK_F_SCHED
							  ? (int64_t)(e->u.unpark.sched_wait_ns & INT64_MAX)
							  : -1)
				 : 0;
	case SS_EV_SPAWN:
		return spawn(m, t, e);
	case SS_EV_TERMINATE:
		return mdl_task_end(m, e->u.terminate.task, ts);
	case SS_EV_WAKE: {
		/* The waker: the task the source names, else the one this thread polls. */
		int64_t waker = t->in_poll ? t->poll_task_id : 0;
		if (e->u.wake.waker) {
			struct mdl_task *w = mdl_task_at(m, e->u.wake.waker, ts);
			if (!w)
				return -1;
			waker = w->id;
		}
		struct mdl_task *k = mdl_task_at(m, e->u.wake.task, ts);
		return k ? mdl_task_woken(m, k, ts, t->id, waker) : -1;
	}
	case SS_EV_QUEUE: {
		/* Only changes: the repeats carry no information (see the schema). */
		uint8_t unknown = (uint8_t)(e->u.queue.unknown & (SS_QUEUE_NO_LOCAL | SS_QUEUE_NO_GLOBAL));
		uint64_t local = unknown & SS_QUEUE_NO_LOCAL ? 0 : e->u.queue.local;
		uint64_t global = unknown & SS_QUEUE_NO_GLOBAL ? 0 : e->u.queue.global;
		if (t->queue_known && t->queue_local == local && t->queue_global == global &&
		    t->queue_unknown == unknown)
			return 0;
		t->queue_known = true;
		t->queue_unknown = unknown;
		t->queue_local = local;
		t->queue_global = global;
		struct ss_queue_row r = { t->id, t->worker_id, (int64_t)ts,
					  unknown & SS_QUEUE_NO_LOCAL ? -1 : (int64_t)(local & INT64_MAX),
					  unknown & SS_QUEUE_NO_GLOBAL ? -1 : (int64_t)(global & INT64_MAX) };
		return MDL_SINK(m, queue, &r);
	}
	case SS_EV_MARK: {
		str = mdl_str(m, e->u.mark.name, &len);
		struct ss_mark_row r = { t->id, (int64_t)ts, mdl_text(str, len), e->u.mark.value };
		return MDL_SINK(m, mark, &r);
	}
	case SS_EV_SPAN_BEGIN: {
		str = mdl_str(m, e->u.span.name, &len);
		size_t fl;
		const char *fields = mdl_str(m, e->u.span.fields, &fl);
		struct mdl_span extra = { .id = e->u.span.id, .parent = e->u.span.parent,
					  .location_id = mdl_location(m, e->u.span.location) };
		char *fcopy = fields ? strndup(fields, fl) : NULL;
		extra.fields = fcopy;
		int pushed = mdl_push_span(m, t, ts, str, len, &extra);
		free(fcopy);
		return pushed;
	}
	case SS_EV_SPAN_END:
		return end_span(m, t, ts, e->u.span.id);
	case SS_EV_WORKER_BEGIN:
		str = mdl_str(m, e->u.worker_begin.runtime, &len);
		return mdl_make_worker(m, t, str, len, e->u.worker_begin.index, ts);
	case SS_EV_WORKER_END:
		return t->worker_id ? MDL_SINK(m, worker_end, t->worker_id, (int64_t)ts) : 0;
	case SS_EV_THREAD_EXIT:
		if (t->in_poll && mdl_close_poll(m, t, ts, true) != 0)
			return -1;
		if (t->parked && mdl_close_park(m, t, ts, true, -1, -1) != 0)
			return -1;
		return MDL_SINK(m, thread_exit, t->id, (int64_t)ts);
	case SS_EV_LOSS:
		return mdl_loss(m, t->id, ts, e->u.loss.span, e->u.loss.count, "events",
				ss_loss_reason_name(e->u.loss.reason));
	default:
		return 0;
	}
}
