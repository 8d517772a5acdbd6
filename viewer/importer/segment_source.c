/*
 * segment_source.c - stallscope's segments as a source of the model: every
 * record of an opened segment (viewer/reader/) turned into the model's
 * definitions and events. The segment's strings stay the reader's; the model
 * resolves them through ss_source while the segment is open. Where three
 * CPUs are there, the reading (decoding and the time-order merge) runs on a
 * thread of its own and hands the model's thread batches (model_pipe.h).
 *
 * Time order: the blocks' floors are read ahead (ss_reader_floors, on a
 * thread of its own while the first block is read), and after each block the
 * merge releases every event up to the least floor of the blocks after it: no
 * event still to come is earlier (merge.h). The read goes no further than the
 * blocks walked (floors_ahead.h), and only the threads those blocks define
 * hold their events back until their definition is read.
 */
#include "segment_source.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "floors_ahead.h"
#include "model.h"
#include "model_pipe.h"

static const char *seg_string(void *ctx, uint64_t id, size_t *len)
{
	const struct ss_string_def *s = ss_reader_string(ctx, id);
	if (!s)
		return NULL;
	*len = s->len;
	return s->data;
}

static uint8_t event_type(uint8_t rec)
{
	switch (rec) {
	case SS_REC_POLL_BEGIN: return SS_EV_POLL_BEGIN;
	case SS_REC_POLL_END: return SS_EV_POLL_END;
	case SS_REC_PARK: return SS_EV_PARK;
	case SS_REC_UNPARK: return SS_EV_UNPARK;
	case SS_REC_SPAWN: return SS_EV_SPAWN;
	case SS_REC_TERMINATE: return SS_EV_TERMINATE;
	case SS_REC_WAKE: return SS_EV_WAKE;
	case SS_REC_QUEUE: return SS_EV_QUEUE;
	case SS_REC_MARK: return SS_EV_MARK;
	case SS_REC_SPAN_BEGIN: return SS_EV_SPAN_BEGIN;
	case SS_REC_SPAN_END: return SS_EV_SPAN_END;
	case SS_REC_WORKER_BEGIN: return SS_EV_WORKER_BEGIN;
	case SS_REC_WORKER_END: return SS_EV_WORKER_END;
	case SS_REC_THREAD_EXIT: return SS_EV_THREAD_EXIT;
	case SS_REC_LOSS: return SS_EV_LOSS;
	case SS_REC_SAMPLE: return SS_EV_SAMPLE;
	case SS_REC_SWITCH: return SS_EV_SWITCH;
	case SS_REC_COMM: return SS_EV_COMM;
	case SS_REC_SAMPLER_LOSS: return SS_EV_SAMPLER_LOSS;
	case SS_REC_STALL: return SS_EV_STALL;
	case SS_REC_STALL_END: return SS_EV_STALL_END;
	case SS_REC_TASK_DUMP: return SS_EV_TASK_DUMP;
	default: return 0;
	}
}

/* The model's event for a timestamped record; false for a record that is not one. */
static bool to_event(const struct ss_record *r, struct ss_event *e)
{
	static const struct ss_event zero; /* copied, not memset: see ss_decode_record */
	*e = zero;
	e->type = event_type(r->type);
	if (!e->type)
		return false;
	e->ts = r->ts;
	e->thread = r->thread;
	switch (r->type) {
	case SS_REC_POLL_BEGIN:
		e->u.poll_begin.task = r->u.poll_begin.task;
		e->u.poll_begin.location = r->u.poll_begin.location;
		break;
	case SS_REC_SPAWN:
		e->u.spawn.task = r->u.spawn.task;
		e->u.spawn.location = r->u.spawn.location;
		break;
	case SS_REC_TERMINATE:
		e->u.terminate.task = r->u.terminate.task;
		break;
	case SS_REC_WAKE:
		e->u.wake.task = r->u.wake.task;
		break;
	case SS_REC_QUEUE:
		e->u.queue.local = r->u.queue.local;
		e->u.queue.global = r->u.queue.global;
		break;
	case SS_REC_MARK:
		e->u.mark.name = r->u.mark.name;
		e->u.mark.value = r->u.mark.value;
		break;
	case SS_REC_SPAN_BEGIN:
	case SS_REC_SPAN_END:
		e->u.span.name = r->u.span.name;
		break;
	case SS_REC_WORKER_BEGIN:
		e->u.worker_begin.runtime = r->u.worker_begin.runtime;
		e->u.worker_begin.index = r->u.worker_begin.index;
		break;
	case SS_REC_LOSS:
		e->u.loss.count = r->u.loss.count;
		e->u.loss.span = r->u.loss.span;
		e->u.loss.reason = r->u.loss.reason;
		break;
	case SS_REC_SAMPLE:
		e->thread = r->u.sample.thread;
		e->tid = r->u.sample.tid;
		e->u.sample.cpu1 = r->u.sample.cpu;
		e->u.sample.weight = r->u.sample.weight;
		e->u.sample.kind = r->u.sample.kind;
		e->u.sample.stack = r->u.sample.stack;
		break;
	case SS_REC_SWITCH:
		e->thread = r->u.switch_rec.thread;
		e->tid = r->u.switch_rec.tid;
		e->u.switch_ev.cpu1 = r->u.switch_rec.cpu;
		e->u.switch_ev.flags = r->u.switch_rec.flags;
		break;
	case SS_REC_COMM:
		e->thread = r->u.comm.thread;
		e->tid = r->u.comm.tid;
		e->u.comm.name = r->u.comm.name;
		e->u.comm.len = r->u.comm.name_len;
		break;
	case SS_REC_SAMPLER_LOSS:
		e->thread = 0;
		e->tid = r->u.sampler_loss.tid;
		e->u.sampler_loss.span = r->u.sampler_loss.span;
		e->u.sampler_loss.count = r->u.sampler_loss.count;
		e->u.sampler_loss.reason = r->u.sampler_loss.reason;
		break;
	case SS_REC_STALL:
		e->thread = r->u.stall.thread;
		e->tid = r->u.stall.tid;
		e->u.stall.task = r->u.stall.task;
		e->u.stall.location = r->u.stall.location;
		e->u.stall.poll_ts = r->u.stall.poll_ts;
		e->u.stall.index = r->u.stall.index;
		e->u.stall.kind = r->u.stall.kind;
		e->u.stall.syscall1 = r->u.stall.syscall1;
		e->u.stall.stack = r->u.stall.stack;
		e->u.stall.reason = r->u.stall.reason;
		e->u.stall.reason_len = r->u.stall.reason_len;
		break;
	case SS_REC_STALL_END:
		e->thread = r->u.stall_end.thread;
		e->tid = r->u.stall_end.tid;
		e->u.stall_end.task = r->u.stall_end.task;
		e->u.stall_end.poll_ts = r->u.stall_end.poll_ts;
		e->u.stall_end.captures = r->u.stall_end.captures;
		break;
	case SS_REC_TASK_DUMP:
		e->thread = r->u.task_dump.thread;
		e->tid = r->u.task_dump.tid;
		e->u.task_dump.task = r->u.task_dump.task;
		e->u.task_dump.location = r->u.task_dump.location;
		e->u.task_dump.idle_ns = r->u.task_dump.idle_ns;
		e->u.task_dump.stack = r->u.task_dump.stack;
		break;
	default:
		break;
	}
	return true;
}

/* Where a unit's records go: straight into the model (one thread), or into
 * the pipe to the model's thread (model_pipe.h). */
struct sink_to {
	struct ss_model *m;
	struct ss_model_pipe *p; /* NULL: the model directly */
};

static int definition(const struct sink_to *to, struct ss_reader *rd, const struct ss_record *r)
{
	struct ss_model *m = to->m;
	size_t fl = 0, nl = 0;
	const char *file, *fn;
	switch (r->type) {
	case SS_REC_LOCATION:
		file = r->u.location.file ? seg_string(rd, r->u.location.file, &fl) : NULL;
		fn = r->u.location.function ? seg_string(rd, r->u.location.function, &nl) : NULL;
		if (to->p)
			return ss_model_pipe_location(to->p, r->u.location.id, file, file ? fl : 0, r->u.location.line,
						      fn, fn ? nl : 0);
		return ss_model_location(m, r->u.location.id, file, file ? fl : 0, r->u.location.line, fn,
					 fn ? nl : 0);
	case SS_REC_THREAD_DEF: {
		const struct ss_thread_def *d = &r->u.thread_def;
		struct ss_model_thread_def t = {
			d->thread, d->tid, d->name, d->name_len, d->runtime, d->worker_index,
			(d->flags & SS_THREAD_F_WORKER) != 0, d->open_task, d->open_location, d->open_since,
			d->parked_since,
		};
		return to->p ? ss_model_pipe_thread_def(to->p, &t) : ss_model_thread_def(m, &t);
	}
	case SS_REC_STACK: {
		uint64_t pcs[SS_MAX_STACK_FRAMES];
		size_t n = ss_stack_frames(r, pcs, SS_MAX_STACK_FRAMES);
		size_t nk = (size_t)(r->u.stack.nkernel < n ? r->u.stack.nkernel : n);
		bool trunc = (r->u.stack.flags & SS_STACK_F_TRUNCATED) != 0;
		return to->p ? ss_model_pipe_stack(to->p, r->u.stack.id, pcs, n, nk, trunc)
			     : ss_model_stack(m, r->u.stack.id, pcs, n, nk, trunc);
	}
	case SS_REC_MAPPING:
		if (to->p)
			return ss_model_pipe_mapping(to->p, r->u.mapping.start, r->u.mapping.end, r->u.mapping.pgoff,
						     r->u.mapping.path, r->u.mapping.path_len, r->u.mapping.build_id,
						     r->u.mapping.build_id_len);
		return ss_model_mapping(m, r->u.mapping.start, r->u.mapping.end, r->u.mapping.pgoff, r->u.mapping.path,
					r->u.mapping.path_len, r->u.mapping.build_id, r->u.mapping.build_id_len);
	case SS_REC_META:
		if (to->p)
			return ss_model_pipe_meta(to->p, r->u.meta.key, r->u.meta.key_len, r->u.meta.value,
						  r->u.meta.value_len);
		return ss_model_meta(m, r->u.meta.key, r->u.meta.key_len, r->u.meta.value, r->u.meta.value_len);
	default:
		return 0; /* strings (the reader keeps them), THREAD, unknown types */
	}
}

struct run {
	struct ss_model *m;
	struct ss_reader *rd;
	uint64_t skip_blocks;
	struct ss_floors_ahead ahead;
	bool floors_in;       /* ahead's floors are in fl (floors_after) */
	/* fl.after[i]: no event of the blocks after block fl.first + i is
	 * earlier (the least floor of those); i < fl.n */
	struct ss_floors_after fl;
	struct ss_segment_run *out;
	void (*block_done)(void *ctx, const struct ss_block_info *b, bool skipped);
	void *ctx;
};

static bool stopped(const struct sink_to *to)
{
	return to->p ? ss_model_pipe_stopped(to->p) : ss_model_failed(to->m);
}

static void floors_after(struct run *u, const struct sink_to *to);

/* Every block of the unit, its records in file order. */
static int read_unit(struct run *u, const struct sink_to *to)
{
	struct ss_block_info b;
	struct ss_record r;
	struct ss_event e;
	while (!stopped(to) && ss_reader_next_block(u->rd, &b)) {
		bool skip = b.index < u->skip_blocks;
		if (to->p)
			ss_model_pipe_skip_events(to->p, skip);
		else
			ss_model_skip_events(u->m, skip);
		u->out->new_blocks += !skip;
		while (ss_reader_next_record(u->rd, &r)) {
			if (to_event(&r, &e)) {
				if (skip)
					continue;
				if (r.is_event && ss_record_counts_as_event(r.type))
					u->out->events++;
				if (to->p)
					ss_model_pipe_event(to->p, &e);
				else
					ss_model_event(u->m, &e);
			} else if (definition(to, u->rd, &r) != 0 && stopped(to)) {
				break;
			}
		}
		if (!u->floors_in)
			floors_after(u, to); /* before the first release */
		if (!stopped(to)) {
			/* The last block walked has no floor after it (an .active
			 * segment's read ends there; the segment's end drains the rest),
			 * nor has a block where no floor is trusted: the window decides. */
			uint64_t i = b.index - u->fl.first;
			bool known = b.index >= u->fl.first && i + 1 < u->fl.n;
			if (to->p)
				known ? ss_model_pipe_release_to(to->p, u->fl.after[i]) : ss_model_pipe_release(to->p);
			else
				known ? ss_model_release_to(u->m, u->fl.after[i]) : ss_model_release(u->m);
		}
		if (u->block_done)
			u->block_done(u->ctx, &b, skip);
	}
	return 0;
}

static int produce(void *ctx, struct ss_model_pipe *p)
{
	struct run *u = ctx;
	struct sink_to to = { u->m, p };
	return read_unit(u, &to);
}

/* Reading on a thread of its own pays only where it gets a CPU of its own:
 * the inserting thread keeps a second one busy, and on two CPUs the three
 * threads together did more work (each event copied once more, and moved
 * between caches) for no gain (interleaved, against one thread: bench_import's
 * 20M events CPU 1.024, wall 0.950; a steady recording CPU 1.063, wall
 * 1.055). STALLSCOPE_IMPORT_PIPELINE=1 or 0 decides it (the tests run both). */
static bool pipeline_wanted(void)
{
	const char *v = getenv("STALLSCOPE_IMPORT_PIPELINE");
	if (v && *v)
		return strcmp(v, "0") != 0;
	cpu_set_t cs;
	return sched_getaffinity(0, sizeof cs, &cs) == 0 && CPU_COUNT(&cs) >= 3;
}

/* Before the first release: the floors read ahead, after each block, and the
 * threads the unit defines (only their events wait for a definition). */
static void floors_after(struct run *u, const struct sink_to *to)
{
	u->floors_in = true;
	ss_floors_ahead_end(&u->ahead, u->rd, u->skip_blocks, &u->fl);
	if (!u->fl.n || !to)
		return;
	if (to->p)
		ss_model_pipe_unit_defines(to->p, u->fl.threads, u->fl.n_threads);
	else
		ss_model_unit_defines(u->m, u->fl.threads, u->fl.n_threads);
}

int ss_segment_source_run(struct ss_model *m, struct ss_reader *rd, const struct ss_symtab *symtab,
			  uint64_t skip_blocks, struct ss_segment_run *out,
			  void (*block_done)(void *ctx, const struct ss_block_info *b, bool skipped), void *ctx)
{
	memset(out, 0, sizeof *out);
	struct ss_source src = { rd, seg_string };
	if (ss_model_segment_begin(m, &src, symtab) != 0)
		return -1;
	struct run u = { .m = m, .rd = rd, .skip_blocks = skip_blocks, .out = out, .block_done = block_done,
			 .ctx = ctx };
	ss_floors_ahead_start(&u.ahead, rd);
	bool started = false;
	if (pipeline_wanted())
		ss_model_pipe_run(m, produce, &u, &started);
	if (!started) {
		struct sink_to to = { m, NULL };
		read_unit(&u, &to);
	}
	if (!u.floors_in)
		floors_after(&u, NULL); /* no block was read: the thread still ends */
	ss_floors_after_free(&u.fl);
	return ss_model_segment_end(m);
}
