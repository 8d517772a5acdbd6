/*
 * d9_reader.h - the dial9 trace reader: dial9-trace-format version 1 (the
 * Tokio profiler dial9's files, raw or gzip) decoded into schemas and typed
 * event values, first in file order, then in time order.
 *
 * viewer/reader/dial9/ holds this reader and nothing that knows what a Tokio
 * event means (that is viewer/importer/dial9_source.c); it depends on libc and
 * zlib only.
 *
 * A file is a sequence of streams, each starting with a header: dial9 writes a
 * thread's buffered batch as its own stream, so a header resets schemas, pools
 * and the timestamp base, and type ids and pool ids mean something else in the
 * next stream. The reader interns schemas, strings and stacks by content
 * (d9_tables.h), so what it hands out is the file's.
 *
 * Use: d9_open_*(), d9_scan() (every event in file order, which also indexes
 * the streams), then d9_merge_begin() and d9_merge_next() (the events again,
 * merged across streams by time: each stream is one thread's events in order,
 * and streams overlap, by up to 30 s when dial9 drained an idle thread late).
 *
 * The input is untrusted. Frames have no length prefix, so malformed bytes (an
 * unknown tag, a value running past the end, a schema re-registered with other
 * fields, an event of a type never defined) end that stream: the damage is
 * recorded with its offset and reason, and reading resumes at the next header,
 * if any. Memory is bounded (d9_format.h); nothing in the input can make the
 * reader read out of bounds, loop without progress, or recurse without bound.
 *
 * Not thread-safe; one reader per file.
 */
#ifndef STALLSCOPE_D9_READER_H
#define STALLSCOPE_D9_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "d9_format.h"
#include "d9_tables.h"

struct d9_reader;

/* A field's value. type is the field's type without the optional bit, or 0
 * for an optional field that is absent. */
struct d9_value {
	uint8_t type;
	uint32_t len;       /* bytes at p: strings, bytes, maps, lists, inline stacks */
	uint32_t count;     /* entries: inline stack addresses, map pairs, list items */
	const uint8_t *p;
	union {
		uint64_t u;     /* varint, u8, u16, u32, bool (0 or 1); pooled string and
				 * pooled stack: the file's id (0: undefined in the stream) */
		int64_t i;      /* i64 */
		double f;       /* f64 */
	};
};

struct d9_event {
	struct d9_schema *schema;
	bool has_ts;
	uint64_t ts;        /* ns; when !has_ts, the stream's last timestamp */
	uint64_t offset;    /* of the event frame in the decompressed stream */
	uint32_t batch;     /* the stream's ordinal in the file, from 0 */
	const struct d9_value *v; /* schema->n_fields values */
	void *priv;
};

struct d9_damage {
	uint64_t offset;    /* decompressed stream offset of the bad frame */
	uint32_t batch;
	char reason[160];
};

struct d9_stats {
	uint64_t bytes;          /* decompressed size */
	uint64_t batches;        /* streams (headers) */
	uint64_t events;         /* events decoded by the scan */
	uint64_t damaged;        /* streams that ended at damage */
	uint64_t unresolved;     /* pool references to an id the stream did not define */
	uint64_t intact_end;     /* offset where the last intact frame ends */
	bool gzip;
	bool tables_full;        /* a string, stack or schema past the bounds */
	bool unindexed;          /* more streams than D9_MAX_BATCHES: the rest in file order */
};

/* Opens a trace. Fails (NULL, message in err) when the input does not start
 * with a version 1 header (after decompression). */
struct d9_reader *d9_open_file(const char *path, char *err, size_t errlen);
struct d9_reader *d9_open_buffer(const void *buf, size_t len, char *err, size_t errlen);
void d9_close(struct d9_reader *r);

/* Every event in file order. fn may stop the scan by returning non-zero
 * (returned). Returns 0 at the end of the data (damage does not fail it). */
int d9_scan(struct d9_reader *r, int (*fn)(void *ctx, const struct d9_event *e), void *ctx);

/* Then the events of the streams from first_batch on, in time order. An
 * event's values are valid until the next call. */
int d9_merge_begin(struct d9_reader *r, uint32_t first_batch);
bool d9_merge_next(struct d9_reader *r, struct d9_event *out);

const struct d9_stats *d9_stats(const struct d9_reader *r);
size_t d9_damage_count(const struct d9_reader *r);
const struct d9_damage *d9_damage_at(const struct d9_reader *r, size_t i);
/* Why decompression ended early, or NULL. */
const char *d9_store_problem(const struct d9_reader *r);
/* Input bytes consumed so far (progress), and the input's size. */
uint64_t d9_input_done(const struct d9_reader *r);
uint64_t d9_input_size(const struct d9_reader *r);

/* The file's strings and stacks, by the ids in values. */
const char *d9_string(const struct d9_reader *r, uint32_t id, size_t *len);
const uint64_t *d9_stack(const struct d9_reader *r, uint32_t id, size_t *count);
/* The file's stack id of a stack value (pooled or inline); 0 when none. */
uint32_t d9_value_stack(struct d9_reader *r, const struct d9_value *v);
size_t d9_schema_count(const struct d9_reader *r);
struct d9_schema *d9_schema_at(const struct d9_reader *r, size_t i);

/* A growable text buffer. */
struct d9_buf {
	char *p;
	size_t len, cap;
	bool failed;        /* memory ran out, or the text passed D9_MAX_JSON */
};
#define D9_MAX_JSON (4u << 20)
void d9_buf_free(struct d9_buf *b);
/* Appends n bytes (sets failed instead past D9_MAX_JSON or out of memory). */
void d9_buf_put(struct d9_buf *b, const char *s, size_t n);
/* The event's fields as a JSON object, in schema order (absent optional
 * fields are null; pooled strings resolved; stacks as arrays of "0x..."
 * addresses; bytes as hex; maps with non-string keys as [key, value] pairs).
 * Replaces b's content; returns 0, or -1 (b->failed) when it would pass
 * D9_MAX_JSON or memory ran out. */
int d9_event_json(struct d9_reader *r, const struct d9_event *e, struct d9_buf *b);
/* A JSON string of len bytes (invalid UTF-8 as U+FFFD) appended to b. */
void d9_json_string(struct d9_buf *b, const char *s, size_t len);

#endif /* STALLSCOPE_D9_READER_H */
