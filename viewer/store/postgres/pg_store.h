/*
 * pg_store.h - the PostgreSQL store: a shared database of many hosts'
 * recordings in the schema of schema/stallscope.sql (pg_tables.h), reached
 * through libpq. An import streams the large tables' rows from the model with
 * COPY (pg_sink.c) and stages the rest in SQLite with the SQLite store, moved
 * over with COPY at the end (pg_import.c); a recording comes back out into an
 * SQLite file that the viewer, the report and SQL use as usual (pg_pull.c);
 * prune expires old recordings by dropping partitions (pg_prune.c).
 *
 * viewer/store/postgres/ depends on viewer/store/sqlite/ (the staging and the
 * files it pulls into), viewer/model/ (the sink types), libpq, SQLite and libc.
 * Nothing in it prints except through the log a caller passes.
 *
 * Concurrency: any number of imports, pulls and prunes may run at once from any
 * number of hosts. Ids are reserved in ranges on a separate autocommit
 * connection, so imports never wait for each other except on the same
 * recording (a transaction-scoped advisory lock on its session id), and readers
 * always see whole imports (one transaction each).
 */
#ifndef STALLSCOPE_PG_STORE_H
#define STALLSCOPE_PG_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sink.h"

struct pg_conn;  /* PGconn, kept out of the callers' includes */

struct ss_pg {
	struct pg_conn *main;  /* the transaction of an import, or the reads of a pull */
	struct pg_conn *side;  /* autocommit: schema, partitions, id ranges */
	char err[1024];
	char shown[512];       /* the URL for messages, password left out */
	/* Owners per partition of each partitioned table (by index into
	 * ss_pg_tables), as the database was created with: table partition_widths. */
	long long width[64];
};

/* Whether a --db argument names a PostgreSQL database (postgresql:// or
 * postgres:// URI, or a libpq "key=value" string). */
bool ss_pg_is_url(const char *s);

/* Connects (both connections) and makes sure the schema exists (creating it in
 * an empty database, refusing one of a newer version). Returns 0, or -1 with a
 * message in p->err. */
int ss_pg_open(struct ss_pg *p, const char *url);
void ss_pg_close(struct ss_pg *p);

/* ---- the pieces the store's files share (pg_store.c) ------------------------ */

/* Runs sql on c (no result rows expected). Returns 0, or -1 with p->err. */
int ss_pg_exec(struct ss_pg *p, struct pg_conn *c, const char *sql);
/* Runs a query returning one bigint (NULL: dflt). Returns 0, or -1. */
int ss_pg_query_int(struct ss_pg *p, struct pg_conn *c, const char *sql, int64_t dflt, int64_t *out);
/* Runs a query that returns rows; NULL (with p->err) on an error or a NULL sql
 * (out of memory). The caller PQclear()s the result. */
struct pg_result *ss_pg_select(struct ss_pg *p, struct pg_conn *c, const char *sql); /* a PGresult */
/* printf into a fresh buffer (the caller frees it); NULL when out of memory. */
char *ss_pg_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The next free id of each kind (ranges already handed out are used). */
int ss_pg_next_ids(struct ss_pg *p, int64_t next[ID_COUNT]);
/* Partition slice of table t (owner ids [slice * width, (slice + 1) * width)),
 * created on the side connection when missing. */
int ss_pg_ensure_partition(struct ss_pg *p, const char *table, long long width, int64_t slice);

/* ---- the ids of an import (pg_ids.c) -------------------------------------------
 * The model numbers an import's new rows from floor[kind] up (far above what
 * the database holds); each such id is moved into a range the import reserved
 * in import_ids on the side connection, a chunk at a time as the ids come, so
 * that rows can be sent while the import still runs and concurrent imports
 * never wait for each other. Where the import ends, what it did not use of its
 * last chunk goes back when no one reserved after it: a run of imports numbers
 * rows exactly as one SQLite database would. Used from one thread at a time. */
struct ss_pg_ids {
	struct ss_pg *p;
	int64_t floor[ID_COUNT];
	struct ss_pg_id_chunks {
		int64_t *base;  /* the first reserved id of each chunk */
		size_t n, cap;
		int64_t max;    /* the highest index (id - floor) moved, -1: none */
	} k[ID_COUNT];
	bool failed;        /* a reservation failed: p->err says why */
	int holder;         /* the side session's backend pid: the leases' holder */
};
/* Before an import reads import_ids: the side session becomes a lease holder
 * (*holder), and chunks leased to imports that died go back. Returns 0, or -1. */
int ss_pg_ids_begin(struct ss_pg *p, int *holder);
void ss_pg_ids_init(struct ss_pg_ids *ids, struct ss_pg *p, const int64_t floor[ID_COUNT], int holder);
/* v as the database has it: ids below floor[kind] as they are, an import's own
 * moved into its reserved ranges (reserving as needed; on a failure ids->failed
 * is set and v is returned). */
int64_t ss_pg_ids_map_slow(struct ss_pg_ids *ids, int kind, int64_t v);
static inline int64_t ss_pg_ids_map(struct ss_pg_ids *ids, int kind, int64_t v)
{
	if (v < ids->floor[kind])
		return v;
	return ss_pg_ids_map_slow(ids, kind, v);
}
/* The import commits next: gives back the unused end of each kind's last chunk
 * (when it still can) and deletes its leases inside the main transaction.
 * Returns 0, or -1 with p->err. */
int ss_pg_ids_keep(struct ss_pg_ids *ids);
/* The import failed or imported nothing: gives back its chunks (those no later
 * chunk of another import sits on). Returns 0, or -1 with p->err. */
int ss_pg_ids_drop(struct ss_pg_ids *ids);
void ss_pg_ids_free(struct ss_pg_ids *ids);

/* ---- COPY's text format (pg_copy.c) ---------------------------------------------- */

/* A growing buffer of COPY text rows; oom is set when it could not grow. */
struct ss_pg_buf {
	char *p;
	size_t n, cap;
	bool oom;
};
void ss_pg_buf_grow(struct ss_pg_buf *b, size_t need);
static inline void ss_pg_buf_put(struct ss_pg_buf *b, const char *s, size_t n)
{
	if (b->n + n > b->cap)
		ss_pg_buf_grow(b, n);
	if (b->n + n <= b->cap) {
		for (size_t i = 0; i < n; i++)
			b->p[b->n + i] = s[i];
		b->n += n;
	}
}
static inline void ss_pg_buf_ch(struct ss_pg_buf *b, char c)
{
	if (b->n + 1 > b->cap)
		ss_pg_buf_grow(b, 1);
	if (b->n < b->cap)
		b->p[b->n++] = c;
}
void ss_pg_buf_int(struct ss_pg_buf *b, int64_t v);
/* A text, escaped for COPY; a NUL is dropped, an invalid UTF-8 byte becomes U+FFFD. */
void ss_pg_buf_text(struct ss_pg_buf *b, const unsigned char *s, size_t n);
void ss_pg_buf_free(struct ss_pg_buf *b);

/* COPY between the stores (pg_copy.c). */
struct sqlite3;
struct pg_table;
/* Runs `COPY (query) TO STDOUT` on c and hands every row to row() as texts
 * (NULL for SQL NULL), n of them. Returns 0, or -1 with p->err. */
int ss_pg_copy_out(struct ss_pg *p, struct pg_conn *c, const char *query,
		   int (*row)(void *ctx, const char *const *v, size_t n), void *ctx);
/* Inserts a row of texts into table t of an SQLite database (stmt prepared by
 * ss_pg_sqlite_insert, reset here). */
struct sqlite3_stmt *ss_pg_sqlite_insert(struct ss_pg *p, struct sqlite3 *db, const struct pg_table *t,
					 const char *verb);
int ss_pg_sqlite_row(struct ss_pg *p, struct sqlite3_stmt *st, const struct pg_table *t, const char *const *v,
		     size_t n);
/* Copies the rows of `select` (columns as t's) from db into PostgreSQL table
 * dest with COPY, the import's own ids moved by ids. *rows counts them.
 * Returns 0, or -1. */
int ss_pg_copy_in(struct ss_pg *p, struct sqlite3 *db, const char *select, const struct pg_table *t,
		  const char *dest, struct ss_pg_ids *ids, uint64_t *rows);
/* Sends n bytes of COPY text rows into dest(columns of t) on c: one COPY
 * statement. Returns 0, or -1 with a message in err. */
int ss_pg_copy_rows(struct pg_conn *c, const struct pg_table *t, const char *dest, const char *rows, size_t n,
		    char *err, size_t errlen);

/* ---- what the commands call ------------------------------------------------ */

struct ss_sqlite_stage;
/* What builds the stage: the importer, run by the caller's function (the store
 * does not depend on the importer), into stage_db with stage (and target_name in
 * its messages). Returns 0, or a non-zero code of the caller's that
 * ss_pg_import returns as it is; *imported is how many inputs were new. */
typedef int (*ss_pg_stage_fn)(void *ctx, const char *stage_db, const struct ss_sqlite_stage *stage,
			      const char *target_name, uint64_t *imported, uint64_t *events);
/* `stallscope import PATH... --db URL`: stages through run, then copies the rows
 * over in one transaction. Returns 0, run's code, or -1 when the PostgreSQL side
 * failed (said on log unless quiet; the database is as it was). */
int ss_pg_import(const char *url, bool quiet, FILE *log, ss_pg_stage_fn run, void *ctx);

/* Which recordings a pull takes: ids, or by host and wall-clock overlap. */
struct ss_pg_scope {
	const int64_t *ids;
	size_t n_ids;
	const char *host;        /* NULL: any */
	int64_t from_ns, to_ns;  /* wall clock, ns since 1970; 0: open */
};
/* Pulls the recordings of scope into a new SQLite database at out (which must
 * not exist). *n_recordings says how many. Returns 0, or -1 with p->err. */
int ss_pg_pull(struct ss_pg *p, const struct ss_pg_scope *scope, const char *out, size_t *n_recordings,
	       FILE *log, bool progress);

/* Deletes the recordings whose last event is older than now - age_ns;
 * partitions holding only such recordings are dropped whole. dry_run counts
 * only. Returns 0, or -1 with p->err. */
struct ss_pg_prune_result {
	uint64_t recordings, partitions_dropped;
};
int ss_pg_prune(struct ss_pg *p, int64_t age_ns, bool dry_run, struct ss_pg_prune_result *res, FILE *log);

#endif /* STALLSCOPE_PG_STORE_H */
