/*
 * events.c - the runtime's hook events (0x10..0x1e) into rows: polls, parks,
 * tasks, wakes, queue depths, marks, spans, worker lanes and loss. Intervals are
 * written when they end; what is still open when the data ends is written by
 * imp_recording_end() as incomplete, so the end of a trace never produces a
 * phantom long poll.
 */
#include <stdlib.h>
#include <string.h>

#include "import-private.h"

static struct imp_task *find_task(struct imp *im, uint64_t task)
{
	uint64_t v;
	return ss_hmap_get(&im->rec->tasks, task, 0, &v) ? (struct imp_task *)(uintptr_t)v : NULL;
}

/* Polls and parks need a worker lane; a thread that polls without having said it
 * is a worker gets an anonymous one rather than losing its polls. */
static int ensure_worker(struct imp *im, struct imp_thread *t)
{
	return t->worker_id ? 0 : imp_make_worker(im, t, NULL, 0, 0, 0);
}

int imp_open_poll(struct imp *im, struct imp_thread *t, uint64_t ts, uint64_t task, uint64_t raw_loc)
{
	if (ensure_worker(im, t) != 0)
		return -1;
	struct imp_task *k = imp_task_at(im, task, ts);
	if (!k)
		return -1;
	t->in_poll = true;
	t->poll_ts = ts;
	t->poll_task = task;
	t->poll_task_id = k->id;
	t->poll_raw_loc = raw_loc;
	t->poll_loc = imp_location(im, raw_loc);
	t->poll_id = ss_db_new_id(&im->db, ID_POLL);
	if (!k->location_id)
		k->location_id = t->poll_loc;
	return imp_task_polled(im, k, t->poll_id, ts);
}

int imp_close_poll(struct imp *im, struct imp_thread *t, uint64_t end, bool incomplete)
{
	t->in_poll = false;
	uint64_t dur = end > t->poll_ts ? end - t->poll_ts : 0;
	if (!t->poll_loc)
		t->poll_loc = imp_location(im, t->poll_raw_loc);
	struct ss_row *s = ss_row(&im->db, ST_INS_POLL);
	ss_bind_i(s, 1, t->poll_id);
	ss_bind_i(s, 2, t->worker_id);
	ss_bind_z(s, 3, t->poll_task_id);
	ss_bind_z(s, 4, t->poll_loc);
	ss_bind_i(s, 5, (int64_t)t->poll_ts);
	ss_bind_i(s, 6, (int64_t)dur);
	ss_bind_i(s, 7, incomplete);
	if (ss_db_step(&im->db, ST_INS_POLL) != 0)
		return imp_fail(im);
	struct imp_task *k = find_task(im, t->poll_task);
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
	    (!imp_summ(t) || ss_summary_add(&im->summ, t->summ, t->worker_id, SS_SUM_BUSY, t->poll_ts, dur)))
		return imp_fail(im);
	return 0;
}

int imp_close_park(struct imp *im, struct imp_thread *t, uint64_t end, bool incomplete)
{
	t->parked = false;
	if (ensure_worker(im, t) != 0)
		return -1;
	uint64_t dur = end > t->park_ts ? end - t->park_ts : 0;
	struct ss_row *s = ss_row(&im->db, ST_INS_PARK);
	ss_bind_i(s, 1, t->worker_id);
	ss_bind_i(s, 2, (int64_t)t->park_ts);
	ss_bind_i(s, 3, (int64_t)dur);
	ss_bind_i(s, 4, incomplete);
	if (ss_db_step(&im->db, ST_INS_PARK) != 0)
		return imp_fail(im);
	if (!incomplete &&
	    (!imp_summ(t) || ss_summary_add(&im->summ, t->summ, t->worker_id, SS_SUM_PARKED, t->park_ts, dur)))
		return imp_fail(im);
	return 0;
}

static int span_row(struct imp *im, struct imp_thread *t, unsigned depth, uint64_t end, bool incomplete)
{
	const struct imp_span *sp = &t->spans[depth];
	struct ss_row *s = ss_row(&im->db, ST_INS_SPAN);
	ss_bind_i(s, 1, t->id);
	ss_bind_i(s, 2, (int64_t)sp->ts);
	ss_bind_i(s, 3, end > sp->ts ? (int64_t)(end - sp->ts) : 0);
	ss_bind_t(s, 4, sp->name, sp->name ? strlen(sp->name) : 0);
	ss_bind_i(s, 5, depth);
	ss_bind_i(s, 6, incomplete);
	return ss_db_step(&im->db, ST_INS_SPAN) ? imp_fail(im) : 0;
}

static int write_span(struct imp *im, struct imp_thread *t, uint64_t end, bool incomplete)
{
	int rc = span_row(im, t, t->n_spans - 1, end, incomplete);
	struct imp_span *sp = &t->spans[--t->n_spans];
	free(sp->name);
	sp->name = NULL;
	return rc;
}

int imp_push_span(struct imp *im, struct imp_thread *t, uint64_t ts, const char *name, size_t len)
{
	if (t->n_spans == IMP_MAX_SPAN_DEPTH && write_span(im, t, ts, true) != 0)
		return -1;
	if (t->n_spans == t->cap_spans) {
		unsigned nc = t->cap_spans ? t->cap_spans * 2 : 4;
		struct imp_span *sp = realloc(t->spans, nc * sizeof *sp);
		if (!sp)
			return imp_fail(im);
		t->spans = sp;
		t->cap_spans = nc;
	}
	t->spans[t->n_spans].ts = ts;
	t->spans[t->n_spans].name = name ? strndup(name, len) : NULL;
	t->n_spans++;
	return 0;
}

int imp_write_open_spans(struct imp *im, struct imp_thread *t, uint64_t end)
{
	/* Rows marked incomplete, to the end of the data; the spans stay open
	 * (import_open_spans), and the next import replaces these rows. */
	for (unsigned i = 0; i < t->n_spans; i++)
		if (span_row(im, t, i, end, true) != 0)
			return -1;
	return 0;
}

static int loss(struct imp *im, int64_t thread_id, uint64_t ts, uint64_t span, uint64_t count,
		const char *source, const char *reason)
{
	struct ss_row *s = ss_row(&im->db, ST_INS_LOSS);
	ss_bind_i(s, 1, im->rec->id);
	ss_bind_z(s, 2, thread_id);
	ss_bind_i(s, 3, (int64_t)ts);
	ss_bind_i(s, 4, (int64_t)span);
	ss_bind_i(s, 5, (int64_t)count);
	ss_bind_st(s, 6, source);
	ss_bind_st(s, 7, reason);
	return ss_db_step(&im->db, ST_INS_LOSS) ? imp_fail(im) : 0;
}

int imp_sampler_loss(struct imp *im, const struct ss_record *r)
{
	int64_t tid = 0;
	if (r->u.sampler_loss.tid) {
		struct imp_thread *t = imp_sampler_thread(im, 0, r->u.sampler_loss.tid);
		tid = t ? t->id : 0;
	}
	return loss(im, tid, r->ts, r->u.sampler_loss.span, r->u.sampler_loss.count, "samples",
		    ss_sampler_loss_reason_name(r->u.sampler_loss.reason));
}

static int spawn(struct imp *im, struct imp_thread *t, const struct ss_record *r)
{
	struct imp_task *k = find_task(im, r->u.spawn.task);
	if (k && (k->spawn_ts || k->persisted)) {
		/* The number was reused: the old task's end is not in the data. */
		if (imp_task_flush(im, k, 0) != 0)
			return -1;
		ss_hmap_del(&im->rec->tasks, k->task, 0);
		free(k);
		k = NULL;
	}
	if (!k && !(k = imp_task_get(im, r->u.spawn.task)))
		return -1;
	k->spawn_ts = r->ts;
	k->location_id = imp_location(im, r->u.spawn.location);
	k->parent_id = t->in_poll ? t->poll_task_id : 0;
	k->spawn_thread_id = t->id;
	return 0;
}

static int terminate(struct imp *im, const struct ss_record *r)
{
	return imp_task_end(im, r->u.terminate.task, r->ts);
}

int imp_event(struct imp *im, const struct ss_record *r)
{
	if (r->type == SS_REC_LOSS && r->thread == 0)
		return loss(im, 0, r->ts, r->u.loss.span, r->u.loss.count, "events",
			    ss_loss_reason_name(r->u.loss.reason));
	struct imp_thread *t = imp_thread_get(im, r->thread);
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t ts = r->ts;
	if (ts > t->last_ts)
		t->last_ts = ts;
	t->seg_serial = im->seg_serial;
	struct imp_recording *rc = im->rec;
	if (!rc->first_ts || ts < rc->first_ts)
		rc->first_ts = ts;
	if (ts > rc->last_ts)
		rc->last_ts = ts;
	struct ss_row *s;
	size_t len;
	const char *str;

	switch (r->type) {
	case SS_REC_POLL_BEGIN:
		if (t->in_poll && imp_close_poll(im, t, ts, true) != 0)
			return -1;
		return imp_open_poll(im, t, ts, r->u.poll_begin.task, r->u.poll_begin.location);
	case SS_REC_POLL_END:
		return t->in_poll ? imp_close_poll(im, t, ts, false) : 0;
	case SS_REC_PARK:
		if (t->parked && imp_close_park(im, t, ts, true) != 0)
			return -1;
		t->parked = true;
		t->park_ts = ts;
		return 0;
	case SS_REC_UNPARK:
		return t->parked ? imp_close_park(im, t, ts, false) : 0;
	case SS_REC_SPAWN:
		return spawn(im, t, r);
	case SS_REC_TERMINATE:
		return terminate(im, r);
	case SS_REC_WAKE: {
		struct imp_task *k = imp_task_at(im, r->u.wake.task, ts);
		return k ? imp_task_woken(im, k, ts, t->id, t->in_poll ? t->poll_task_id : 0) : -1;
	}
	case SS_REC_QUEUE:
		/* Only changes: the repeats carry no information (see the schema). */
		if (t->queue_known && t->queue_local == r->u.queue.local && t->queue_global == r->u.queue.global)
			return 0;
		t->queue_known = true;
		t->queue_local = r->u.queue.local;
		t->queue_global = r->u.queue.global;
		s = ss_row(&im->db, ST_INS_QUEUE);
		ss_bind_i(s, 1, t->id);
		ss_bind_z(s, 2, t->worker_id);
		ss_bind_i(s, 3, (int64_t)ts);
		ss_bind_i(s, 4, (int64_t)r->u.queue.local);
		ss_bind_i(s, 5, (int64_t)r->u.queue.global);
		return ss_db_step(&im->db, ST_INS_QUEUE) ? imp_fail(im) : 0;
	case SS_REC_MARK:
		s = ss_row(&im->db, ST_INS_MARK);
		str = imp_str(im, r->u.mark.name, &len);
		ss_bind_i(s, 1, t->id);
		ss_bind_i(s, 2, (int64_t)ts);
		ss_bind_t(s, 3, str, len);
		ss_bind_i(s, 4, r->u.mark.value);
		return ss_db_step(&im->db, ST_INS_MARK) ? imp_fail(im) : 0;
	case SS_REC_SPAN_BEGIN:
		str = imp_str(im, r->u.span.name, &len);
		return imp_push_span(im, t, ts, str, len);
	case SS_REC_SPAN_END:
		return t->n_spans ? write_span(im, t, ts, false) : 0;
	case SS_REC_WORKER_BEGIN:
		str = imp_str(im, r->u.worker_begin.runtime, &len);
		return imp_make_worker(im, t, str, len, r->u.worker_begin.index, ts);
	case SS_REC_WORKER_END:
		if (!t->worker_id)
			return 0;
		s = ss_row(&im->db, ST_UPD_WORKER_END);
		ss_bind_i(s, 1, t->worker_id);
		ss_bind_i(s, 2, (int64_t)ts);
		return ss_db_step(&im->db, ST_UPD_WORKER_END) ? imp_fail(im) : 0;
	case SS_REC_THREAD_EXIT:
		if (t->in_poll && imp_close_poll(im, t, ts, true) != 0)
			return -1;
		if (t->parked && imp_close_park(im, t, ts, true) != 0)
			return -1;
		s = ss_row(&im->db, ST_UPD_THREAD_EXIT);
		ss_bind_i(s, 1, t->id);
		ss_bind_i(s, 2, (int64_t)ts);
		return ss_db_step(&im->db, ST_UPD_THREAD_EXIT) ? imp_fail(im) : 0;
	case SS_REC_LOSS:
		return loss(im, t->id, ts, r->u.loss.span, r->u.loss.count, "events",
			    ss_loss_reason_name(r->u.loss.reason));
	default:
		return 0;
	}
}
