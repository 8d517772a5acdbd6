/*
 * d9_builder.h - writes dial9-trace-format version 1 in memory, byte for byte
 * as its SPEC.md describes, for the dial9 reader's tests, the import tests, the
 * fuzz seeds and the import benchmark. Written from the spec, independently of
 * the reader, so that a misreading on either side shows.
 *
 * Two levels: frames and values (d9b_*), and a Tokio-like batch writer (d9t_*)
 * that does what dial9's recorder does per thread batch: a header, schemas
 * registered on first use under batch-local type ids, strings and stacks
 * interned per batch, timestamp resets when a delta does not fit 24 bits.
 * Aborts on allocation failure (test code).
 */
#ifndef STALLSCOPE_D9_BUILDER_H
#define STALLSCOPE_D9_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct d9b {
	uint8_t *buf;
	size_t len, cap;
};

void d9b_free(struct d9b *b);
void d9b_bytes(struct d9b *b, const void *p, size_t n);
void d9b_u8(struct d9b *b, uint8_t v);
void d9b_u16(struct d9b *b, uint16_t v);
void d9b_u24(struct d9b *b, uint32_t v);
void d9b_u32(struct d9b *b, uint32_t v);
void d9b_u64(struct d9b *b, uint64_t v);
void d9b_varint(struct d9b *b, uint64_t v);

/* Frames. */
void d9b_header(struct d9b *b);
struct d9b_field {
	const char *name;
	uint8_t type;   /* with the 0x80 optional bit */
};
void d9b_schema(struct d9b *b, uint16_t id, const char *name, bool has_ts, const struct d9b_field *f, size_t n);
void d9b_string_pool(struct d9b *b, size_t n, const uint32_t *ids, const char *const *strs);
void d9b_stack_pool(struct d9b *b, uint32_t id, const uint64_t *pcs, uint32_t n);
void d9b_ts_reset(struct d9b *b, uint64_t ts);
void d9b_annotation(struct d9b *b, uint64_t type_id, uint16_t field, const char *key, const char *value);
/* An event frame's head: the type id and, when has_ts, the 24-bit delta. */
void d9b_event(struct d9b *b, uint16_t id, bool has_ts, uint32_t delta);

/* Values. */
void d9b_v_string(struct d9b *b, const char *s); /* String and Bytes */
void d9b_v_stack(struct d9b *b, const uint64_t *pcs, uint32_t n);
void d9b_v_string_map(struct d9b *b, size_t n, const char *const *keys, const char *const *values);

/* gzip of in (one member), into *out (malloc'ed). */
void d9b_gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len);

/* ---- a Tokio-like batch ------------------------------------------------------- */

#define D9T_MAX_SCHEMAS 64
#define D9T_MAX_STRINGS 1024

struct d9t {
	struct d9b *b;
	uint64_t base;
	char *schemas[D9T_MAX_SCHEMAS];   /* name of batch type id i */
	size_t n_schemas;
	char *strings[D9T_MAX_STRINGS];   /* string of batch pool id i */
	size_t n_strings;
	uint32_t next_stack;
	uint32_t string_base;             /* first pool id of this batch (ids differ per batch) */
};

/* Starts a batch (a header) appending to b. string_base: where its pool ids
 * begin, so batches use different ids for the same string. */
void d9t_begin(struct d9t *t, struct d9b *b, uint32_t string_base);
/* Continues a stream without a header (what dial9's symbolizer appends). */
void d9t_continue(struct d9t *t);
void d9t_end(struct d9t *t);

void d9t_poll_start(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t task, const char *loc);
void d9t_poll_end(struct d9t *t, uint64_t ts, uint64_t worker);
void d9t_park(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t cpu, uint32_t tid);
void d9t_unpark(struct d9t *t, uint64_t ts, uint64_t worker, uint8_t lq, uint64_t cpu, uint64_t sched,
		uint32_t tid);
void d9t_queue(struct d9t *t, uint64_t ts, uint8_t global);
void d9t_spawn(struct d9t *t, uint64_t ts, uint64_t task, const char *loc, bool instrumented);
void d9t_terminate(struct d9t *t, uint64_t ts, uint64_t task);
void d9t_wake(struct d9t *t, uint64_t ts, uint64_t waker, uint64_t woken, uint8_t target_worker);
/* name NULL and cpu < 0: absent. */
void d9t_cpu_sample(struct d9t *t, uint64_t ts, uint64_t worker, uint32_t tid, uint8_t source, const char *name,
		    const uint64_t *pcs, uint32_t n, int64_t cpu);
void d9t_task_dump(struct d9t *t, uint64_t ts, uint64_t task, const uint64_t *pcs, uint32_t n);
void d9t_metadata(struct d9t *t, uint64_t ts, size_t n, const char *const *keys, const char *const *values);
void d9t_clock_sync(struct d9t *t, uint64_t ts, uint64_t realtime);
void d9t_symbol(struct d9t *t, uint64_t ts, uint64_t addr, uint64_t size, const char *name, uint64_t depth,
		const char *file, uint64_t line);
/* callsite: "target::name:file:line"; values[i] NULL: field i absent; parent 0: absent. */
void d9t_span_enter(struct d9t *t, uint64_t ts, const char *callsite, uint64_t worker, uint64_t span,
		    uint64_t parent, const char *name, size_t nf, const char *const *fields, const char *const *values);
void d9t_span_exit(struct d9t *t, uint64_t ts, const char *callsite, uint64_t worker, uint64_t span,
		   const char *name, size_t nf, const char *const *fields, const char *const *values);
void d9t_span_close(struct d9t *t, uint64_t ts, uint64_t span);
/* The batch's type id of a schema, registering it first when new: for events
 * a test writes itself. */
uint16_t d9t_type(struct d9t *t, const char *name, bool has_ts, const struct d9b_field *f, size_t n);
/* The head of an event at ts (a reset first when needed). */
void d9t_event(struct d9t *t, uint16_t id, uint64_t ts);
uint32_t d9t_string(struct d9t *t, const char *s);

#endif /* STALLSCOPE_D9_BUILDER_H */
