/*
 * stalls.c - STALL, STALL_END and TASK_DUMP records (0x60..0x62) into stalls,
 * stall_captures and task_dumps. A stalled poll is one stalls row, keyed while it
 * lasts by its thread and start; each capture is a stall_captures row.
 */
#include <string.h>

#include "import-private.h"

static int64_t stack_cs(struct imp *im, uint64_t stack)
{
	uint64_t cs = 0;
	if (stack)
		ss_hmap_get(&im->seg_stacks, stack, 0, &cs);
	return (int64_t)cs;
}

static int stall(struct imp *im, const struct ss_record *r)
{
	const __typeof__(r->u.stall) *st = &r->u.stall;
	struct imp_thread *t = imp_sampler_thread(im, st->thread, st->tid);
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	uint64_t sid;
	const char *kind = ss_stall_kind_name(st->kind);
	if (!ss_hmap_get(&im->rec->stalls, (uint64_t)t->id, st->poll_ts, &sid)) {
		struct imp_task *k = imp_task_at(im, st->task, st->poll_ts);
		if (!k)
			return -1;
		sid = (uint64_t)ss_db_new_id(&im->db, ID_STALL);
		struct ss_row *s = ss_row(&im->db, ST_INS_STALL);
		ss_bind_i(s, 1, (int64_t)sid);
		ss_bind_z(s, 2, t->worker_id);
		ss_bind_i(s, 3, k->id);
		ss_bind_i(s, 4, (int64_t)st->poll_ts);
		ss_bind_st(s, 5, kind);
		ss_bind_i(s, 6, t->id);
		ss_bind_z(s, 7, imp_location(im, st->location));
		ss_bind_i(s, 8, (int64_t)r->ts);
		if (ss_db_step(&im->db, ST_INS_STALL) != 0)
			return imp_fail(im);
		if (ss_hmap_put(&im->rec->stalls, (uint64_t)t->id, st->poll_ts, sid) != 0)
			return -1;
	}
	struct ss_row *s = ss_row(&im->db, ST_INS_STALL_CAPTURE);
	ss_bind_i(s, 1, (int64_t)sid);
	ss_bind_i(s, 2, (int64_t)r->ts);
	ss_bind_st(s, 3, kind);
	if (st->syscall1)
		ss_bind_i(s, 4, (int64_t)st->syscall1 - 1);
	else
		ss_bind_null(s, 4);
	ss_bind_z(s, 5, stack_cs(im, st->stack));
	ss_bind_i(s, 6, (int64_t)st->index);
	ss_bind_t(s, 7, st->reason, st->reason_len);
	return ss_db_step(&im->db, ST_INS_STALL_CAPTURE) ? imp_fail(im) : 0;
}

static int stall_end(struct imp *im, const struct ss_record *r)
{
	const __typeof__(r->u.stall_end) *se = &r->u.stall_end;
	struct imp_thread *t = imp_sampler_thread(im, se->thread, se->tid);
	uint64_t sid;
	if (!t)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	if (!ss_hmap_get(&im->rec->stalls, (uint64_t)t->id, se->poll_ts, &sid))
		return 0;
	ss_hmap_del(&im->rec->stalls, (uint64_t)t->id, se->poll_ts);
	struct ss_row *s = ss_row(&im->db, ST_UPD_STALL_END);
	ss_bind_i(s, 1, (int64_t)sid);
	ss_bind_i(s, 2, r->ts > se->poll_ts ? (int64_t)(r->ts - se->poll_ts) : 0);
	return ss_db_step(&im->db, ST_UPD_STALL_END) ? imp_fail(im) : 0;
}

static int task_dump(struct imp *im, const struct ss_record *r)
{
	const __typeof__(r->u.task_dump) *td = &r->u.task_dump;
	struct imp_thread *t = imp_sampler_thread(im, td->thread, td->tid);
	struct imp_task *k = t ? imp_task_at(im, td->task, r->ts) : NULL;
	if (!t || !k)
		return im->failed ? -1 : 0; /* past the thread limit: left out */
	struct ss_row *s = ss_row(&im->db, ST_INS_TASK_DUMP);
	ss_bind_i(s, 1, k->id);
	ss_bind_i(s, 2, (int64_t)r->ts);
	ss_bind_i(s, 3, (int64_t)td->idle_ns);
	ss_bind_z(s, 4, stack_cs(im, td->stack));
	ss_bind_i(s, 5, t->id);
	ss_bind_z(s, 6, imp_location(im, td->location));
	return ss_db_step(&im->db, ST_INS_TASK_DUMP) ? imp_fail(im) : 0;
}

int imp_stall_record(struct imp *im, const struct ss_record *r)
{
	switch (r->type) {
	case SS_REC_STALL:
		return stall(im, r);
	case SS_REC_STALL_END:
		return stall_end(im, r);
	case SS_REC_TASK_DUMP:
		return task_dump(im, r);
	default:
		return 0; /* 0x63..0x6f: reserved, not known to this build */
	}
}
