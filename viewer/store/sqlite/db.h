/*
 * db.h - the SQLite store's writing side: opening a database with bulk-load
 * settings, applying the embedded schema, the prepared statement of every row
 * kind, and the pipeline that inserts rows on a second thread. Ids come with the
 * rows (the model assigns them, so rows can refer to each other before they are
 * written); ss_db_next_ids says where each kind's free ids begin.
 */
#ifndef STALLSCOPE_IMPORT_DB_H
#define STALLSCOPE_IMPORT_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sink.h"

enum ss_stmt {
	ST_INS_RECORDING, ST_UPD_RECORDING_FILL, ST_UPD_RECORDING_TS, ST_UPD_RECORDING_ARCH, ST_INS_META,
	ST_INS_THREAD, ST_UPD_THREAD_NAME, ST_UPD_THREAD_EXIT,
	ST_INS_WORKER, ST_UPD_WORKER_END, ST_UPD_WORKER_RUNTIME,
	ST_INS_LOCATION, ST_INS_TASK, ST_UPD_TASK_END,
	ST_INS_POLL, ST_INS_PARK, ST_INS_WAKE, ST_DEL_WAKE, ST_INS_QUEUE, ST_INS_MARK, ST_INS_SPAN, ST_INS_SPAN_EXTRA,
	ST_INS_CPU, ST_INS_SAMPLE, ST_INS_LOSS,
	ST_INS_MAPPING, ST_INS_FRAME, ST_INS_CALLSITE,
	ST_INS_STALL, ST_UPD_STALL_END, ST_INS_STALL_CAPTURE, ST_INS_TASK_DUMP, ST_INS_OTHER,
	ST_UPSERT_SUMMARY, ST_INS_POLL_CHUNK,
	ST_COUNT
};


/* Rows are not bound into SQLite by the code that produces them: they are
 * serialized into chunks that a second thread binds and inserts, so decoding and
 * stitching run in parallel with SQLite on a two-core machine. The producer's
 * handle for building one row: */
struct ss_row {
	struct ss_db *db;
	/* a row of a batched table: its values and types, in the batch's buffer */
	int64_t *v;
	uint8_t *ty;
	struct ss_batch *batch; /* NULL: a row serialized into the chunk */
	int ncols;              /* the batch's columns */
};

struct ss_chunk;
struct ss_pipe;
struct ss_batch;

struct ss_db {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct ss_batch *batch[ST_COUNT]; /* high-volume tables: rows collect here (db_batch.c) */
	bool fresh;          /* the file held no schema before: bulk settings are safe */
	bool indexed;        /* the schema's indexes exist (ss_db_create_indexes ran) */
	char err[512];
	struct ss_row row;
	/* the pipeline (db.c) */
	struct ss_chunk *cur;          /* being filled by the producer */
	size_t op_start;               /* offset of the row being built in cur */
	uint16_t op_values;            /* values bound to it so far */
	struct ss_pipe *pipe;          /* NULL: rows are inserted inline */
	volatile bool failed;          /* an insert failed; err says why */
};

/* Opens (creating) path and applies the schema. memory: use ":memory:" semantics
 * regardless of path (fuzzing). Returns 0, or -1 with d->err set. */
int ss_db_open(struct ss_db *d, const char *path);
/* Prepares all statements (after the schema exists) and, when threaded, starts
 * the inserting thread. */
int ss_db_prepare(struct ss_db *d, bool threaded);
/* Waits until every row handed over is in SQLite; then the caller may use d->db
 * directly. Returns 0, or -1 when an insert failed (d->err). */
int ss_db_sync(struct ss_db *d);
int ss_db_exec(struct ss_db *d, const char *sql);
/* Runs the index part of the schema, once (ss_db_prepare runs it for a fresh
 * database). */
int ss_db_create_indexes(struct ss_db *d);
void ss_db_close(struct ss_db *d);

/* Where the free ids of each kind begin (max + 1, at least 1). */
int ss_db_next_ids(struct ss_db *d, int64_t next[ID_COUNT]);

/* Building a row: ss_row() starts it, the binds give its parameters (1-based,
 * as in the statement's SQL), ss_db_step() hands it over. Texts are copied. */
struct ss_row *ss_row(struct ss_db *d, enum ss_stmt which);
void ss_bind_i(struct ss_row *r, int i, int64_t v);
void ss_bind_null(struct ss_row *r, int i);
void ss_bind_t(struct ss_row *r, int i, const char *p, size_t n); /* NULL p: SQL NULL */

/* 0 binds SQL NULL. */
static inline void ss_bind_z(struct ss_row *r, int i, int64_t v)
{
	if (v)
		ss_bind_i(r, i, v);
	else
		ss_bind_null(r, i);
}
static inline void ss_bind_st(struct ss_row *r, int i, const char *p)
{
	ss_bind_t(r, i, p, p ? strlen(p) : 0);
}

/* Completes the row. Returns 0, or -1 once an insert has failed (d->err). */
int ss_db_step(struct ss_db *d, enum ss_stmt which);
/* Inserts every partly filled batch (after ss_db_sync): before reading tables
 * back, and at the end. */
int ss_db_flush(struct ss_db *d);

#endif /* STALLSCOPE_IMPORT_DB_H */
