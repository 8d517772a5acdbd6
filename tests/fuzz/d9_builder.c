/*
 * d9_builder.c - see d9_builder.h.
 */
#include "d9_builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "d9_builder: out of memory\n");
		abort();
	}
	return q;
}

void d9b_free(struct d9b *b)
{
	free(b->buf);
	memset(b, 0, sizeof *b);
}

void d9b_bytes(struct d9b *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 4096;
		while (nc < b->len + n)
			nc *= 2;
		b->buf = xrealloc(b->buf, nc);
		b->cap = nc;
	}
	if (n)
		memcpy(b->buf + b->len, p, n);
	b->len += n;
}

void d9b_u8(struct d9b *b, uint8_t v)
{
	d9b_bytes(b, &v, 1);
}

void d9b_u16(struct d9b *b, uint16_t v)
{
	uint8_t p[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	d9b_bytes(b, p, 2);
}

void d9b_u24(struct d9b *b, uint32_t v)
{
	uint8_t p[3] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16) };
	d9b_bytes(b, p, 3);
}

void d9b_u32(struct d9b *b, uint32_t v)
{
	uint8_t p[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
	d9b_bytes(b, p, 4);
}

void d9b_u64(struct d9b *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		d9b_u8(b, (uint8_t)(v >> (8 * i)));
}

void d9b_varint(struct d9b *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;
		v >>= 7;
		d9b_u8(b, (uint8_t)(c | (v ? 0x80 : 0)));
	} while (v);
}

void d9b_header(struct d9b *b)
{
	d9b_bytes(b, "TRC\0\x01", 5);
}

static void name16(struct d9b *b, const char *s)
{
	size_t n = strlen(s);
	d9b_u16(b, (uint16_t)n);
	d9b_bytes(b, s, n);
}

void d9b_schema(struct d9b *b, uint16_t id, const char *name, bool has_ts, const struct d9b_field *f, size_t n)
{
	d9b_u8(b, 1);
	d9b_u16(b, id);
	name16(b, name);
	d9b_u8(b, has_ts ? 1 : 0);
	d9b_u16(b, (uint16_t)n);
	for (size_t i = 0; i < n; i++) {
		name16(b, f[i].name);
		d9b_u8(b, f[i].type);
	}
}

void d9b_string_pool(struct d9b *b, size_t n, const uint32_t *ids, const char *const *strs)
{
	d9b_u8(b, 3);
	d9b_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		d9b_u32(b, ids[i]);
		d9b_v_string(b, strs[i]);
	}
}

void d9b_stack_pool(struct d9b *b, uint32_t id, const uint64_t *pcs, uint32_t n)
{
	d9b_u8(b, 4);
	d9b_u32(b, 1);
	d9b_u32(b, id);
	d9b_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		d9b_u64(b, pcs[i]);
}

void d9b_ts_reset(struct d9b *b, uint64_t ts)
{
	d9b_u8(b, 5);
	d9b_u64(b, ts);
}

void d9b_annotation(struct d9b *b, uint64_t type_id, uint16_t field, const char *key, const char *value)
{
	d9b_u8(b, 6);
	d9b_varint(b, type_id);
	d9b_u16(b, 1);
	d9b_u16(b, field);
	name16(b, key);
	d9b_v_string(b, value);
}

void d9b_event(struct d9b *b, uint16_t id, bool has_ts, uint32_t delta)
{
	d9b_u8(b, 2);
	d9b_u16(b, id);
	if (has_ts)
		d9b_u24(b, delta);
}

void d9b_v_string(struct d9b *b, const char *s)
{
	size_t n = strlen(s);
	d9b_u32(b, (uint32_t)n);
	d9b_bytes(b, s, n);
}

void d9b_v_stack(struct d9b *b, const uint64_t *pcs, uint32_t n)
{
	d9b_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		d9b_u64(b, pcs[i]);
}

void d9b_v_string_map(struct d9b *b, size_t n, const char *const *keys, const char *const *values)
{
	d9b_u32(b, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		d9b_v_string(b, keys[i]);
		d9b_v_string(b, values[i]);
	}
}

void d9b_gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	size_t cap = deflateBound(&z, (uLong)n) + 64;
	*out = xrealloc(NULL, cap);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	*out_len = cap - z.avail_out;
	deflateEnd(&z);
}

/* ---- the batch writer --------------------------------------------------------------- */

void d9t_begin(struct d9t *t, struct d9b *b, uint32_t string_base)
{
	memset(t, 0, sizeof *t);
	t->b = b;
	t->string_base = string_base;
	t->next_stack = string_base + 500000;
	d9b_header(b);
}

void d9t_continue(struct d9t *t)
{
	(void)t; /* no header: the same stream goes on */
}

void d9t_end(struct d9t *t)
{
	for (size_t i = 0; i < t->n_schemas; i++)
		free(t->schemas[i]);
	for (size_t i = 0; i < t->n_strings; i++)
		free(t->strings[i]);
	t->n_schemas = t->n_strings = 0;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = xrealloc(NULL, n);
	memcpy(p, s, n);
	return p;
}

uint16_t d9t_type(struct d9t *t, const char *name, bool has_ts, const struct d9b_field *f, size_t n)
{
	for (size_t i = 0; i < t->n_schemas; i++)
		if (strcmp(t->schemas[i], name) == 0)
			return (uint16_t)i;
	if (t->n_schemas == D9T_MAX_SCHEMAS)
		abort();
	t->schemas[t->n_schemas] = xstrdup(name);
	d9b_schema(t->b, (uint16_t)t->n_schemas, name, has_ts, f, n);
	return (uint16_t)t->n_schemas++;
}

void d9t_event(struct d9t *t, uint16_t id, uint64_t ts)
{
	if (ts < t->base || ts - t->base > 0xffffff) {
		d9b_ts_reset(t->b, ts);
		t->base = ts;
	}
	d9b_event(t->b, id, true, (uint32_t)(ts - t->base));
	t->base = ts;
}

uint32_t d9t_string(struct d9t *t, const char *s)
{
	for (size_t i = 0; i < t->n_strings; i++)
		if (strcmp(t->strings[i], s) == 0)
			return t->string_base + (uint32_t)i;
	if (t->n_strings == D9T_MAX_STRINGS)
		abort();
	uint32_t id = t->string_base + (uint32_t)t->n_strings;
	t->strings[t->n_strings++] = xstrdup(s);
	d9b_string_pool(t->b, 1, &id, &s);
	return id;
}

static uint32_t stack_of(struct d9t *t, const uint64_t *pcs, uint32_t n)
{
	uint32_t id = t->next_stack++;
	d9b_stack_pool(t->b, id, pcs, n);
	return id;
}

enum { V = 9, U8 = 11, U16 = 12, U32 = 13, PSTR = 7, PSTK = 6, BOOL = 3, SMAP = 10, OPT = 0x80 };

void d9t_poll_start(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t task, const char *loc)
{
	static const struct d9b_field f[] = { { "worker_id", V }, { "local_queue", U8 }, { "task_id", V },
					      { "spawn_loc", PSTR } };
	uint32_t s = d9t_string(t, loc);
	uint16_t id = d9t_type(t, "PollStartEvent", true, f, 4);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
	d9b_u8(t->b, lq);
	d9b_varint(t->b, task);
	d9b_u32(t->b, s);
}

void d9t_poll_end(struct d9t *t, uint64_t ts, uint64_t worker)
{
	static const struct d9b_field f[] = { { "worker_id", V } };
	uint16_t id = d9t_type(t, "PollEndEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
}

void d9t_park(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t cpu, uint32_t tid)
{
	static const struct d9b_field f[] = { { "worker_id", V }, { "local_queue", U8 }, { "cpu_time_ns", V },
					      { "tid", U32 } };
	uint16_t id = d9t_type(t, "WorkerParkEvent", true, f, 4);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
	d9b_u8(t->b, lq);
	d9b_varint(t->b, cpu);
	d9b_u32(t->b, tid);
}

void d9t_unpark(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t cpu, uint64_t sched,
		uint32_t tid)
{
	static const struct d9b_field f[] = { { "worker_id", V }, { "local_queue", U8 }, { "cpu_time_ns", V },
					      { "sched_wait_ns", V }, { "tid", U32 } };
	uint16_t id = d9t_type(t, "WorkerUnparkEvent", true, f, 5);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
	d9b_u8(t->b, lq);
	d9b_varint(t->b, cpu);
	d9b_varint(t->b, sched);
	d9b_u32(t->b, tid);
}

void d9t_queue(struct d9t *t, uint64_t ts, uint8_t global)
{
	static const struct d9b_field f[] = { { "global_queue", U8 } };
	uint16_t id = d9t_type(t, "QueueSampleEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_u8(t->b, global);
}

void d9t_spawn(struct d9t *t, uint64_t ts, uint64_t task, const char *loc, bool instrumented)
{
	static const struct d9b_field f[] = { { "task_id", V }, { "spawn_loc", PSTR }, { "instrumented", BOOL } };
	uint32_t s = d9t_string(t, loc);
	uint16_t id = d9t_type(t, "TaskSpawnEvent", true, f, 3);
	d9t_event(t, id, ts);
	d9b_varint(t->b, task);
	d9b_u32(t->b, s);
	d9b_u8(t->b, instrumented);
}

void d9t_terminate(struct d9t *t, uint64_t ts, uint64_t task)
{
	static const struct d9b_field f[] = { { "task_id", V } };
	uint16_t id = d9t_type(t, "TaskTerminateEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_varint(t->b, task);
}

void d9t_wake(struct d9t *t, uint64_t ts, uint64_t waker, uint64_t woken, uint8_t target_worker)
{
	static const struct d9b_field f[] = { { "waker_task_id", V }, { "woken_task_id", V }, { "target_worker", U8 } };
	uint16_t id = d9t_type(t, "WakeEventEvent", true, f, 3);
	d9t_event(t, id, ts);
	d9b_varint(t->b, waker);
	d9b_varint(t->b, woken);
	d9b_u8(t->b, target_worker);
}

void d9t_cpu_sample(struct d9t *t, uint64_t ts, uint64_t worker, uint32_t tid, uint8_t source, const char *name,
		    const uint64_t *pcs, uint32_t n, int64_t cpu)
{
	static const struct d9b_field f[] = { { "worker_id", V }, { "tid", U32 }, { "source", U8 },
					      { "thread_name", PSTR | OPT }, { "callchain", PSTK }, { "cpu", V | OPT } };
	uint32_t s = name ? d9t_string(t, name) : 0;
	uint32_t k = stack_of(t, pcs, n);
	uint16_t id = d9t_type(t, "CpuSampleEvent", true, f, 6);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
	d9b_u32(t->b, tid);
	d9b_u8(t->b, source);
	d9b_u8(t->b, name ? 1 : 0);
	if (name)
		d9b_u32(t->b, s);
	d9b_u32(t->b, k);
	d9b_u8(t->b, cpu >= 0 ? 1 : 0);
	if (cpu >= 0)
		d9b_varint(t->b, (uint64_t)cpu);
}

void d9t_task_dump(struct d9t *t, uint64_t ts, uint64_t task, const uint64_t *pcs, uint32_t n)
{
	static const struct d9b_field f[] = { { "task_id", V }, { "callchain", PSTK } };
	uint32_t k = stack_of(t, pcs, n);
	uint16_t id = d9t_type(t, "TaskDumpEvent", true, f, 2);
	d9t_event(t, id, ts);
	d9b_varint(t->b, task);
	d9b_u32(t->b, k);
}

void d9t_metadata(struct d9t *t, uint64_t ts, size_t n, const char *const *keys, const char *const *values)
{
	static const struct d9b_field f[] = { { "entries", SMAP } };
	uint16_t id = d9t_type(t, "SegmentMetadataEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_v_string_map(t->b, n, keys, values);
}

void d9t_clock_sync(struct d9t *t, uint64_t ts, uint64_t realtime)
{
	static const struct d9b_field f[] = { { "realtime_ns", V } };
	uint16_t id = d9t_type(t, "ClockSyncEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_varint(t->b, realtime);
}

void d9t_symbol(struct d9t *t, uint64_t ts, uint64_t addr, uint64_t size, const char *name, uint64_t depth,
		const char *file, uint64_t line)
{
	static const struct d9b_field f[] = { { "addr", V }, { "size", V }, { "symbol_name", PSTR },
					      { "inline_depth", V }, { "source_file", PSTR }, { "source_line", V } };
	uint32_t sn = d9t_string(t, name), sf = d9t_string(t, file);
	uint16_t id = d9t_type(t, "SymbolTableEntry", true, f, 6);
	d9t_event(t, id, ts);
	d9b_varint(t->b, addr);
	d9b_varint(t->b, size);
	d9b_u32(t->b, sn);
	d9b_varint(t->b, depth);
	d9b_u32(t->b, sf);
	d9b_varint(t->b, line);
}

static void span(struct d9t *t, bool enter, uint64_t ts, const char *callsite, uint64_t worker, uint64_t sid,
		 uint64_t parent, const char *name, size_t nf, const char *const *fields, const char *const *values)
{
	struct d9b_field f[16];
	size_t n = 0;
	f[n++] = (struct d9b_field){ "worker_id", V };
	f[n++] = (struct d9b_field){ "span_id", V };
	if (enter)
		f[n++] = (struct d9b_field){ "parent_span_id", V | OPT };
	f[n++] = (struct d9b_field){ "span_name", PSTR };
	for (size_t i = 0; i < nf && n < 16; i++)
		f[n++] = (struct d9b_field){ fields[i], PSTR | OPT };
	uint32_t sn = d9t_string(t, name);
	uint32_t vs[16];
	for (size_t i = 0; i < nf && i < 16; i++)
		vs[i] = values[i] ? d9t_string(t, values[i]) : 0;
	char schema[512];
	snprintf(schema, sizeof schema, "%s:%s", enter ? "SpanEnter" : "SpanExit", callsite);
	uint16_t id = d9t_type(t, schema, true, f, n);
	d9t_event(t, id, ts);
	d9b_varint(t->b, worker);
	d9b_varint(t->b, sid);
	if (enter) {
		d9b_u8(t->b, parent ? 1 : 0);
		if (parent)
			d9b_varint(t->b, parent);
	}
	d9b_u32(t->b, sn);
	for (size_t i = 0; i < nf && i < 16; i++) {
		d9b_u8(t->b, values[i] ? 1 : 0);
		if (values[i])
			d9b_u32(t->b, vs[i]);
	}
}

void d9t_span_enter(struct d9t *t, uint64_t ts, const char *callsite, uint64_t worker, uint64_t sid,
		    uint64_t parent, const char *name, size_t nf, const char *const *fields, const char *const *values)
{
	span(t, true, ts, callsite, worker, sid, parent, name, nf, fields, values);
}

void d9t_span_exit(struct d9t *t, uint64_t ts, const char *callsite, uint64_t worker, uint64_t sid,
		   const char *name, size_t nf, const char *const *fields, const char *const *values)
{
	span(t, false, ts, callsite, worker, sid, 0, name, nf, fields, values);
}

void d9t_span_close(struct d9t *t, uint64_t ts, uint64_t sid)
{
	static const struct d9b_field f[] = { { "span_id", V } };
	uint16_t id = d9t_type(t, "SpanCloseEvent", true, f, 1);
	d9t_event(t, id, ts);
	d9b_varint(t->b, sid);
}
