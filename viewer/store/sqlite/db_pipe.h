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
/* A new row, all NULL: returns its values and sets *types (one per column). */
int64_t *ss_batch_row(struct ss_batch *b, uint8_t **types);
int ss_batch_ncols(const struct ss_batch *b);
bool ss_batch_full(const struct ss_batch *b);
/* Copies a text into the batch; *out is the value to store with type TEXT. */
int ss_batch_text(struct ss_batch *b, const char *s, uint32_t len, int64_t *out);
/* Inserts and empties the batch. Returns -1 with d->err on failure. */
int ss_batch_run(struct ss_db *d, struct ss_batch *b);

#endif /* STALLSCOPE_DB_PIPE_H */
