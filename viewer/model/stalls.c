/*
 * stalls.c - the watchdog's events into rows: stalls (one per stalled poll,
 * keyed while it lasts by its thread and start), their captures, and task
 * dumps.
 */
#include "model_private.h"
#include "segment_reader.h" /* names of stall kinds */
#include "syscalls.h"

static int stall(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t sid;
	const char *kind = ss_stall_kind_name(e->u.stall.kind);
	if (!ss_hmap_get(&m->rec->stalls, (uint64_t)t->id, e->u.stall.poll_ts, &sid)) {
		struct mdl_task *k = mdl_task_at(m, e->u.stall.task, e->u.stall.poll_ts);
		if (!k)
			return -1;
		sid = (uint64_t)mdl_new_id(m, ID_STALL);
		struct ss_stall_row r = { (int64_t)sid, t->worker_id, k->id, (int64_t)e->u.stall.poll_ts, kind, t->id,
					  mdl_location(m, e->u.stall.location), (int64_t)e->ts };
		if (MDL_SINK(m, stall, &r) != 0)
			return -1;
		if (ss_hmap_put(&m->rec->stalls, (uint64_t)t->id, e->u.stall.poll_ts, sid) != 0)
			return mdl_fail(m);
	}
	int64_t nr = e->u.stall.syscall1 ? (int64_t)e->u.stall.syscall1 - 1 : -1;
	/* Segments of recorders before 0.2 do not say: taken to be this machine's. */
	const char *arch = m->rec->arch[0] ? m->rec->arch : SS_HOST_ARCH;
	struct ss_stall_capture_row c = {
		(int64_t)sid, (int64_t)e->ts, kind, nr, mdl_stack_of(m, e->u.stall.stack), (int64_t)e->u.stall.index,
		mdl_text(e->u.stall.reason, e->u.stall.reason_len), ss_syscall_name(arch, nr),
	};
	return MDL_SINK(m, stall_capture, &c);
}

static int stall_end(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	uint64_t sid;
	if (!t)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	if (!ss_hmap_get(&m->rec->stalls, (uint64_t)t->id, e->u.stall_end.poll_ts, &sid))
		return 0;
	ss_hmap_del(&m->rec->stalls, (uint64_t)t->id, e->u.stall_end.poll_ts);
	return MDL_SINK(m, stall_end, (int64_t)sid,
			e->ts > e->u.stall_end.poll_ts ? (int64_t)(e->ts - e->u.stall_end.poll_ts) : 0);
}

static int task_dump(struct ss_model *m, const struct ss_event *e)
{
	struct mdl_thread *t = mdl_sampler_thread(m, e->thread, e->tid);
	struct mdl_task *k = t ? mdl_task_at(m, e->u.task_dump.task, e->ts) : NULL;
	if (!t || !k)
		return m->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t idle = e->u.task_dump.idle_ns;
	struct ss_task_dump_row r = { k->id, (int64_t)e->ts, idle == SS_IDLE_UNKNOWN ? -1 : (int64_t)(idle & INT64_MAX),
				      mdl_stack_of(m, e->u.task_dump.stack), t->id,
				      mdl_location(m, e->u.task_dump.location) };
	return MDL_SINK(m, task_dump, &r);
}

int mdl_stall_event(struct ss_model *m, const struct ss_event *e)
{
	switch (e->type) {
	case SS_EV_STALL:
		return stall(m, e);
	case SS_EV_STALL_END:
		return stall_end(m, e);
	case SS_EV_TASK_DUMP:
		return task_dump(m, e);
	default:
		return 0;
	}
}

int ss_model_restore_open_stall(struct ss_model *m, int64_t thread_id, int64_t poll_ts, int64_t stall_id)
{
	return ss_hmap_put(&m->rec->stalls, (uint64_t)thread_id, (uint64_t)poll_ts, (uint64_t)stall_id) != 0
		       ? mdl_fail(m)
		       : 0;
}
