/*
 * writer_encode.c - records into the block being built: events of a thread's ring,
 * the definitions a segment needs before them (strings, locations, threads with
 * their open poll or park), session metadata, and interned stacks. Writer thread
 * only; the caller reserves room and flushes full blocks.
 */
#include "writer-private.h"
#include "stack_table.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Room for n more bytes; definitions can be long, so the buffer grows for them. */
static int reserve(size_t n)
{
	if (wr.raw_len + n <= wr.raw_cap)
		return 0;
	size_t cap = wr.raw_cap * 2;
	while (cap < wr.raw_len + n)
		cap *= 2;
	uint8_t *r = realloc(wr.raw, cap);
	if (!r)
		return -1;
	wr.raw = r;
	wr.raw_cap = cap;
	return 0;
}

SS_INTERNAL void set_thread(uint32_t thread, uint64_t ts)
{
	put_u8(SS_REC_THREAD);
	put_v(thread);
	put_v(ts);
	wr.cur_thread = thread;
	wr.cur_ts = ts;
}

SS_INTERNAL void put_dt(uint64_t ts)
{
	put_v(ts > wr.cur_ts ? ts - wr.cur_ts : 0);
	if (ts > wr.cur_ts)
		wr.cur_ts = ts;
}

SS_INTERNAL void note_event(uint64_t ts)
{
	if (!wr.block_first_ts || ts < wr.block_first_ts)
		wr.block_first_ts = ts;
	if (ts > wr.block_last_ts)
		wr.block_last_ts = ts;
	wr.block_events++;
}

static __attribute__((format(printf, 2, 3))) void put_meta(const char *key, const char *fmt, ...)
{
	char val[1024]; /* the sampler's line, with every refusal it met, can pass 512 */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof val, fmt, ap);
	va_end(ap);
	size_t kl = strlen(key), vl = strlen(val);
	uint8_t body[1100];
	size_t n = ss_put_varint(body, kl);
	memcpy(body + n, key, kl);
	n += kl;
	n += ss_put_varint(body + n, vl);
	memcpy(body + n, val, vl);
	n += vl;
	if (reserve(n + 16) != 0)
		return;
	put_u8(SS_REC_META);
	put_bytes(body, n);
}

SS_INTERNAL void put_session_meta(void)
{
	const struct stallscope_config *c = wr.cfg.user;
	put_meta("recorder", "libstallscope 0.1.0");
	/* Stall captures name system calls by number: the importer needs the
	 * architecture to name them. */
	struct utsname un;
	if (uname(&un) == 0)
		put_meta("arch", "%s", un.machine);
	put_meta("clock", "CLOCK_MONOTONIC");
	/* What the hooks read: the TSC, converted here, or the vDSO clock (clock.c). */
	put_meta("hook_clock", "%s", wr.clock_status[0] ? wr.clock_status : "vdso");
	put_meta("max_file_size", "%llu", (unsigned long long)c->max_file_size);
	put_meta("rotation_count", "%u", c->rotation_count);
	put_meta("rotation_period_s", "%u", c->rotation_period_s);
	put_meta("flush_interval_ms", "%u", c->flush_interval_ms);
	put_meta("buffer_events", "%u", c->buffer_events);
	put_meta("max_threads", "%u", c->max_threads);
	put_meta("compress", "%s", wr.cfg.compress ? "zstd" : "none");
	put_meta("sampler", "%s", ss_writer_sampler_status());
	/* Whether parked workers' switches are in the data (FORMAT.md). */
	put_meta(SS_META_SWITCHES, "%s", ss_sampler_switches());
	put_meta("unwind", "%s", wr.unwind_status[0] ? wr.unwind_status : "fp");
	put_meta("stalls", "%s", wr.stall_status[0] ? wr.stall_status : "off");
	put_meta("task_dumps", c->task_dump_enabled ? "on: mean idle threshold %u ms" : "off",
		 c->task_dump_idle_threshold_ms);
}

/* Definitions interned since the last call (all of them at a segment start). */
SS_INTERNAL void put_new_defs(void)
{
	uint32_t n = ss_intern_count();
	for (; wr.defs_emitted < n; wr.defs_emitted++) {
		const struct ss_intern_entry *e = ss_intern_entry(wr.defs_emitted);
		if (reserve((size_t)e->len + 48) != 0)
			return;
		if (e->kind == 1) {
			put_u8(SS_REC_STRING);
			put_v(e->id);
			put_bytes(e->str, e->len);
		} else {
			put_u8(SS_REC_LOCATION);
			put_v(e->id);
			put_v(e->file_id);
			put_v(e->line);
			put_v(e->func_id);
		}
	}
}

static void thread_name(int tid, char out[17])
{
	char path[64];
	memset(out, 0, 17);
	int fd = ss_target_proc_path(path, sizeof path, "task/%d/comm", tid) == 0
		? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, 16);
	close(fd);
	if (n > 0)
		out[strcspn(out, "\n")] = 0;
	else
		out[0] = 0;
}

SS_INTERNAL void put_thread_def(struct ss_slot *s)
{
	char name[17];
	thread_name(s->tid, name);
	reserve(128);
	put_u8(SS_REC_THREAD_DEF);
	put_v(s->thread_id);
	put_v((uint64_t)(uint32_t)s->tid);
	put_bytes(name, strlen(name));
	put_v(s->w_runtime);
	put_v(s->w_worker_index);
	put_v(s->w_runtime ? SS_THREAD_F_WORKER : 0);
	put_v(s->w_open_since ? s->w_open_task : 0);
	put_v(s->w_open_since ? s->w_open_loc : 0);
	put_v(s->w_open_since);
	put_v(s->w_parked_since);
	s->w_defined_seg = wr.seg_seq1;
	wr.cur_thread = 0; /* a definition does not change the clock, but be explicit */
}

/* Encodes one ring entry of slot s and updates the writer's view of the thread. */
SS_INTERNAL void put_event(struct ss_slot *s, const struct ss_ev *e)
{
	if (wr.raw_len + MAX_EVENT_BYTES > wr.raw_cap && reserve(MAX_EVENT_BYTES) != 0)
		return;
	if (wr.cur_thread != s->thread_id)
		set_thread(s->thread_id, e->ts);
	switch (e->kind) {
	case SS_EV_POLL_BEGIN:
		put_u8(SS_REC_POLL_BEGIN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		s->w_open_task = e->a; s->w_open_loc = e->b; s->w_open_since = e->ts;
		ss_task_dump_polled(e->a, e->ts);
		break;
	case SS_EV_POLL_END:
		put_u8(SS_REC_POLL_END); put_dt(e->ts);
		s->w_open_since = 0;
		break;
	case SS_EV_PARK:
		put_u8(SS_REC_PARK); put_dt(e->ts);
		s->w_parked_since = e->ts;
		break;
	case SS_EV_UNPARK:
		put_u8(SS_REC_UNPARK); put_dt(e->ts);
		s->w_parked_since = 0;
		break;
	case SS_EV_SPAWN:
		put_u8(SS_REC_SPAWN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		break;
	case SS_EV_TERMINATE:
		put_u8(SS_REC_TERMINATE); put_dt(e->ts); put_v(e->a);
		ss_task_dump_polled(e->a, e->ts);
		break;
	case SS_EV_WAKE:
		put_u8(SS_REC_WAKE); put_dt(e->ts); put_v(e->a);
		break;
	case SS_EV_QUEUE:
		put_u8(SS_REC_QUEUE); put_dt(e->ts); put_v(e->a); put_v(e->b);
		break;
	case SS_EV_MARK:
		put_u8(SS_REC_MARK); put_dt(e->ts); put_v(e->b); put_v(ss_zigzag((int64_t)e->a));
		break;
	case SS_EV_SPAN_BEGIN:
		put_u8(SS_REC_SPAN_BEGIN); put_dt(e->ts); put_v(e->b);
		break;
	case SS_EV_SPAN_END:
		put_u8(SS_REC_SPAN_END); put_dt(e->ts); put_v(e->b);
		break;
	case SS_EV_WORKER_BEGIN:
		put_u8(SS_REC_WORKER_BEGIN); put_dt(e->ts); put_v(e->a); put_v(e->b);
		s->w_runtime = (uint32_t)e->a; s->w_worker_index = e->b;
		break;
	case SS_EV_WORKER_END:
		put_u8(SS_REC_WORKER_END); put_dt(e->ts);
		s->w_runtime = 0; s->w_worker_index = 0;
		break;
	case SS_EV_LOSS:
		put_u8(SS_REC_LOSS); put_dt(e->ts); put_v(e->a);
		put_v(e->c > e->ts ? e->c - e->ts : 0); put_v(e->b);
		wr.foot.dropped_events += e->a;
		wr.foot.loss_records++;
		wr.blk_dropped += e->a;
		wr.blk_loss_records++;
		return; /* a loss is not an event of the thread */
	default:
		return;
	}
	note_event(e->ts);
}

/* A length-prefixed record: the body is built in a scratch buffer first, since its
 * length precedes it. */
SS_INTERNAL void put_lp(uint8_t type, const uint8_t *body, size_t n)
{
	if (reserve(n + 16) != 0)
		return;
	put_u8(type);
	put_bytes(body, n);
}

/* ---- stalls and task dumps (stall.h) ----------------------------------------- */

/* The STACK id of frames in the active segment, writing its definition when new;
 * 0 for no frames. flags (SS_STACK_F_*) are appended to the body only when set,
 * so a frame-pointer recording stays what it was byte for byte. */
SS_INTERNAL uint32_t put_stack(const uint64_t *frames, uint32_t n, uint32_t nkernel, uint32_t flags)
{
	if (!n)
		return 0;
	if (n > SS_MAX_STACK_FRAMES)
		n = SS_MAX_STACK_FRAMES;
	if (nkernel > n)
		nkernel = n;
	int is_new;
	uint32_t id = ss_stacks_intern(frames, n, nkernel, flags, &is_new);
	if (is_new) {
		uint8_t body[SS_MAX_STACK_FRAMES * 10 + 48];
		size_t k = ss_put_varint(body, id);
		k += ss_put_varint(body + k, nkernel);
		k += ss_put_varint(body + k, n);
		for (uint32_t i = 0; i < n; i++)
			k += ss_put_varint(body + k, frames[i]);
		if (flags)
			k += ss_put_varint(body + k, flags);
		put_lp(SS_REC_STACK, body, k);
	}
	return id;
}
