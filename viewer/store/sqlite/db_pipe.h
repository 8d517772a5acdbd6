/*
 * db_pipe.h - the row pipeline between the importer (producer) and the thread
 * that binds and inserts rows into SQLite (consumer). Internal to db.c and
 * db_pipe.c.
 */
#ifndef STALLSCOPE_DB_PIPE_H
#define STALLSCOPE_DB_PIPE_H

#include "db.h"

int ss_db_pipe_start(struct ss_db *d, bool threaded);
void ss_db_pipe_stop(struct ss_db *d);

/* db_batch.c: rows of one table collected for one INSERT ... SELECT. */
int ss_batch_register(sqlite3 *db);
/* Sets d->batch[w] when the statement has the plain VALUES(?, ...) form; table
 * is where its rows go. Returns -1 with d->err on failure. */
int ss_batch_prepare(struct ss_db *d, enum ss_stmt w, const char *sql, const char *table);
void ss_batch_free_all(struct ss_db *d);
/* The rows of one batch: filled on the producer's thread, inserted on the
 * inserting thread, then filled again. */
struct ss_batch_rows {
	int64_t *v;            /* n * ncols values; a text is offset << 32 | length */
	uint8_t *ty;           /* n * ncols types */
	uint32_t *order;       /* a table with importer ids: the rows by id (ss_batch_take) */
	char *text;            /* text values of the batch */
	size_t text_len, text_cap;
	int n;                 /* rows held */
	struct ss_batch_rows *next;
};
/* The producer's side: the next row of the buffer being filled, all NULL
 * (returns its values and sets *types, one per column); ss_batch_commit keeps
 * it and says whether the buffer is full. */
int64_t *ss_batch_row(struct ss_batch *b, uint8_t **types);
bool ss_batch_commit(struct ss_batch *b);
int ss_batch_ncols(const struct ss_batch *b);
/* Copies a text into the buffer being filled; *out is the value to store with type TEXT. */
int ss_batch_text(struct ss_batch *b, const char *s, uint32_t len, int64_t *out);
/* Rows in the buffer being filled. */
bool ss_batch_pending(const struct ss_batch *b);
/* Hands the buffer being filled over (the batch then has none); a table with
 * importer ids has its rows sorted by id here, on the producer's thread. */
struct ss_batch_rows *ss_batch_take(struct ss_batch *b);
/* A new empty buffer for a table of small batches that has not made its
 * most yet (the producer's, instead of waiting for one back), else NULL. */
struct ss_batch_rows *ss_batch_more(struct ss_batch *b);
/* Makes an empty buffer the one being filled. */
void ss_batch_set_fill(struct ss_batch *b, struct ss_batch_rows *r);
/* The buffers inserted and free to fill again (the pipe's lock guards it). */
struct ss_batch_rows **ss_batch_free_list(struct ss_batch *b);
/* Inserts the rows (the inserting thread). Returns -1 with d->err on failure. */
int ss_batch_run(struct ss_db *d, struct ss_batch *b, struct ss_batch_rows *r);

#endif /* STALLSCOPE_DB_PIPE_H */
