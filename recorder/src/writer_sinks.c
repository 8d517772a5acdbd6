/*
 * writer_sinks.c - what does not come from a thread's ring: CPU samples, switches,
 * mappings and thread names from the sampler, stalls and task dumps from the
 * watchdog. Each carries its own time and thread, so it is written as a
 * length-prefixed record into the block being built. Writer thread only.
 */
#include "writer-private.h"
#include "clock.h"
#include "stack_table.h"
#include "unwind.h"

#include <stdio.h>

/* ---- samples, switches and mappings from the sampler -------------------------- */

/* The recorder's thread id for a kernel tid, 0 when the tid has no slot. The last
 * answer is cached: samples come in runs per thread. */
static uint32_t thread_of_tid(uint32_t tid)
{
	static uint32_t last_tid, last_thread;
	if (tid == last_tid && last_thread)
		return last_thread;
	struct ss_pool *p = ss_pool_get();
	for (uint32_t i = 0, span = ss_pool_span(p); i < span; i++) {
		struct ss_slot *s = &p->slots[i];
		uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
		if ((st == SS_SLOT_OWNED || st == SS_SLOT_RETIRED) && s->session == wr.cfg.session &&
		    (uint32_t)s->tid == tid) {
			last_tid = tid;
			last_thread = s->thread_id;
			return s->thread_id;
		}
	}
	/* Newest first: a tid the OS already reused belongs to the latest thread. */
	for (uint32_t k = 0; k < 64 && k < wr.ngone; k++) {
		uint32_t i = (wr.ngone - 1 - k) % 64;
		if (wr.gone[i].tid == tid)
			return wr.gone[i].thread;
	}
	return 0;
}

static int sink_ready(void)
{
	if (!wr.seg_seq1)
		return 0;
	begin_block_if_needed();
	return 1;
}

static void sink_flush_if_full(void)
{
	if (wr.raw_len >= wr.block_target)
		flush_block();
}

static void sink_sample(void *ctx, const struct ss_sample *sm)
{
	(void)ctx;
	if (!sink_ready()) {
		wr.sampler_lost++;
		return;
	}
	uint32_t n = sm->nframes > SS_MAX_FRAMES ? SS_MAX_FRAMES : sm->nframes;
	uint32_t nk = sm->nkernel < n ? sm->nkernel : n, flags = 0;
	const uint64_t *frames = sm->frames;
	/* Kernel frames as the kernel gave them, user frames unwound from the copy
	 * (when it holds something: else auto keeps the kernel's user chain). */
	static uint64_t all[SS_MAX_STACK_FRAMES];
	if (sm->ustack && ss_unwind_mode() != SS_UNWIND_FP &&
	    (sm->ustack->uc->len || ss_unwind_mode() == SS_UNWIND_DWARF || n == nk)) {
		memcpy(all, sm->frames, nk * sizeof *all);
		n = nk + ss_unwind_user(sm->ustack, 0, all + nk, SS_MAX_FRAMES, &flags);
		frames = all;
	}
	uint32_t stack = put_stack(frames, n, nk, flags);
	uint8_t body[64];
	size_t k = ss_put_varint(body, thread_of_tid(sm->tid));
	k += ss_put_varint(body + k, sm->tid);
	k += ss_put_varint(body + k, sm->ts);
	k += ss_put_varint(body + k, sm->cpu == UINT32_MAX ? 0 : (uint64_t)sm->cpu + 1);
	k += ss_put_varint(body + k, sm->weight);
	k += ss_put_varint(body + k, sm->kind);
	k += ss_put_varint(body + k, stack);
	put_lp(SS_REC_SAMPLE, body, k);
	sink_flush_if_full();
}

static void sink_switch(void *ctx, const struct ss_switch *sw)
{
	(void)ctx;
	if (!sink_ready())
		return;
	uint8_t body[64];
	size_t k = ss_put_varint(body, thread_of_tid(sw->tid));
	k += ss_put_varint(body + k, sw->tid);
	k += ss_put_varint(body + k, sw->ts);
	k += ss_put_varint(body + k, sw->cpu == UINT32_MAX ? 0 : (uint64_t)sw->cpu + 1);
	k += ss_put_varint(body + k, (sw->out ? SS_SWITCH_F_OUT : 0) |
					  (sw->preempted ? SS_SWITCH_F_PREEMPT : 0));
	put_lp(SS_REC_SWITCH, body, k);
	sink_flush_if_full();
}

static void sink_mapping(void *ctx, const struct ss_mapping *m)
{
	(void)ctx;
	if (m->ts)
		ss_unwind_mappings_changed(); /* a dlopen: the unwinder must know the code */
	if (!sink_ready())
		return;
	size_t pl = m->path ? strlen(m->path) : 0;
	if (pl > 4096)
		pl = 4096;
	uint8_t body[4096 + 128];
	size_t k = ss_put_varint(body, m->ts);
	k += ss_put_varint(body + k, m->start);
	k += ss_put_varint(body + k, m->end);
	k += ss_put_varint(body + k, m->pgoff);
	k += ss_put_varint(body + k, m->prot);
	uint8_t bl = m->build_id_len > 20 ? 20 : m->build_id_len;
	k += ss_put_varint(body + k, bl);
	memcpy(body + k, m->build_id, bl);
	k += bl;
	k += ss_put_varint(body + k, pl);
	if (pl)
		memcpy(body + k, m->path, pl);
	k += pl;
	put_lp(SS_REC_MAPPING, body, k);
}

static void sink_comm(void *ctx, uint32_t tid, const char *name, uint64_t ts)
{
	(void)ctx;
	if (!sink_ready())
		return;
	size_t nl = strnlen(name, 64);
	uint8_t body[128];
	size_t k = ss_put_varint(body, thread_of_tid(tid));
	k += ss_put_varint(body + k, tid);
	k += ss_put_varint(body + k, ts);
	k += ss_put_varint(body + k, nl);
	memcpy(body + k, name, nl);
	k += nl;
	put_lp(SS_REC_COMM, body, k);
}

static void sink_lost(void *ctx, const struct ss_sampler_lost *l)
{
	(void)ctx;
	if (!sink_ready()) {
		wr.sampler_lost += l->count;
		return;
	}
	uint8_t body[64];
	size_t k = ss_put_varint(body, l->tid);
	k += ss_put_varint(body + k, l->ts);
	k += ss_put_varint(body + k, l->ts_end > l->ts ? l->ts_end - l->ts : 0);
	k += ss_put_varint(body + k, l->count);
	k += ss_put_varint(body + k, l->reason);
	put_lp(SS_REC_SAMPLER_LOSS, body, k);
}

SS_INTERNAL const struct ss_sample_sink sink = {
	.sample = sink_sample, .switch_rec = sink_switch, .mapping = sink_mapping,
	.comm = sink_comm, .lost = sink_lost,
};

static void sink_stall(const struct ss_stall_msg *m)
{
	if (!sink_ready())
		return;
	uint8_t body[400];
	size_t k;
	/* The watchdog's times are stamps; poll_ts converts exactly as its
	 * POLL_BEGIN did (clock.h). */
	uint64_t poll_ts = ss_clock_ns(m->poll_ts), ts = ss_clock_ns(m->ts);
	if (m->is_end) {
		k = ss_put_varint(body, m->thread);
		k += ss_put_varint(body + k, m->tid);
		k += ss_put_varint(body + k, m->task);
		k += ss_put_varint(body + k, poll_ts);
		k += ss_put_varint(body + k, ts);
		k += ss_put_varint(body + k, m->index);
		put_lp(SS_REC_STALL_END, body, k);
		sink_flush_if_full();
		return;
	}
	/* With CFI unwinding the watchdog sent registers and a stack copy: unwound
	 * here, where the unwinder lives, and the reason says how it went. */
	static uint64_t frames[SS_STALL_FRAMES];
	const uint64_t *f = m->frames;
	uint32_t n = m->nframes < SS_STALL_FRAMES ? m->nframes : SS_STALL_FRAMES, flags = 0;
	char reason[sizeof m->reason + 96];
	snprintf(reason, sizeof reason, "%s", m->reason);
	if (m->uc.valid && ss_unwind_mode() != SS_UNWIND_FP) {
		struct ss_ustack us = { &m->uc, ss_stall_msg_stack(m) };
		n = ss_unwind_user(&us, m->blocked, frames, SS_STALL_FRAMES, &flags);
		f = frames;
		size_t used = strlen(reason);
		snprintf(reason + used, sizeof reason - used, "; %u frames %s%s", n,
			 flags & SS_STACK_F_CFI ? "by CFI" : "by frame pointers",
			 flags & SS_STACK_F_TRUNCATED ? ", truncated (the unwinder could not get past "
							"the last)" : "");
	}
	uint32_t stack = put_stack(f, n, 0, flags);
	size_t rl = strnlen(reason, sizeof reason);
	k = ss_put_varint(body, m->thread);
	k += ss_put_varint(body + k, m->tid);
	k += ss_put_varint(body + k, m->task);
	k += ss_put_varint(body + k, m->location);
	k += ss_put_varint(body + k, poll_ts);
	k += ss_put_varint(body + k, ts);
	k += ss_put_varint(body + k, m->index);
	k += ss_put_varint(body + k, m->kind);
	k += ss_put_varint(body + k, m->syscall1);
	k += ss_put_varint(body + k, stack);
	k += ss_put_varint(body + k, rl);
	memcpy(body + k, reason, rl);
	k += rl;
	put_lp(SS_REC_STALL, body, k);
	sink_flush_if_full();
}

static void sink_task_dump(const struct ss_task_dump_msg *m)
{
	if (!sink_ready())
		return;
	uint32_t stack = put_stack(m->frames, m->nframes, 0, 0);
	uint8_t body[96];
	size_t k = ss_put_varint(body, m->task);
	k += ss_put_varint(body + k, m->thread);
	k += ss_put_varint(body + k, m->tid);
	k += ss_put_varint(body + k, m->location);
	k += ss_put_varint(body + k, m->pending_ts);
	k += ss_put_varint(body + k, m->idle_ns);
	k += ss_put_varint(body + k, stack);
	put_lp(SS_REC_TASK_DUMP, body, k);
	sink_flush_if_full();
}

static const struct ss_stall_sink stall_sink = { .stall = sink_stall, .dump = sink_task_dump };

SS_INTERNAL void drain_stalls(uint64_t now, uint64_t lim)
{
	ss_stall_drain(&stall_sink, lim);
	ss_task_dump_emit(&stall_sink, now);
}

/* A worker's lane says what its switch-outs outside polls were; any other
 * thread keeps them all. The cell starts as the drained lane says: a poll
 * begun after the last drain and before the cell is published stays "outside"
 * until its end (its stacks are lost; starting "inside" instead would keep the
 * stacks of the park the worker is usually in when followed). Asked for once
 * per stretch as a worker (a shared bucket gives none, for the session). */
static void give_cell(struct ss_slot *s)
{
	atomic_store_explicit(&s->inpoll_cell,
			      ss_sampler_inpoll_cell((uint32_t)s->tid, s->w_open_since != 0),
			      memory_order_relaxed);
}

/* Starts or stops following a thread with the sampler as it becomes or stops
 * being a worker (or, with all-threads sampling, as it appears and exits). */
SS_INTERNAL void follow_thread(struct ss_slot *s, int exiting)
{
	int want = !exiting && (s->w_runtime || wr.cfg.sample_all_threads);
	if (want && !s->w_sampled) {
		s->w_sampled = 1;
		if (ss_sampler_thread_add((uint32_t)s->tid, s->stack_lo, s->stack_hi) == 0 &&
		    s->w_runtime)
			give_cell(s);
		s->w_cell_asked = s->w_runtime != 0;
	} else if (!want && s->w_sampled) {
		s->w_sampled = s->w_cell_asked = 0;
		atomic_store_explicit(&s->inpoll_cell, NULL, memory_order_relaxed);
		ss_sampler_thread_remove((uint32_t)s->tid);
	} else if (want && !s->w_runtime != !s->w_cell_asked) {
		/* All-threads sampling: still followed, a worker again (its cell back)
		 * or a worker no more. Its hooks write the cell no more, so it says
		 * ALL again: a park the worker ended in would silence the thread's
		 * switches for good (the importer no longer sees it parked). */
		if (s->w_runtime) {
			s->w_cell_asked = 1;
			give_cell(s);
			return;
		}
		s->w_cell_asked = 0;
		_Atomic uint32_t *c = atomic_load_explicit(&s->inpoll_cell, memory_order_relaxed);
		atomic_store_explicit(&s->inpoll_cell, NULL, memory_order_relaxed);
		if (c)
			atomic_store_explicit(c, SS_INPOLL_ALL, memory_order_relaxed);
	}
}

SS_INTERNAL void ss_writer_set_sampling(int on)
{
	atomic_store(&wr.sampling_on, on != 0);
	ss_writer_kick();
}

SS_INTERNAL const char *ss_writer_sampler_status(void)
{
	return wr.sampler_status[0] ? wr.sampler_status : "off";
}
