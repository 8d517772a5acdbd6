/*
 * pg_store.h - the PostgreSQL store: a shared database of many hosts'
 * recordings in the schema of schema/stallscope.sql (pg_tables.h), reached
 * through libpq. An import stages its rows in SQLite with the SQLite store and
 * moves them over with COPY (pg_import.c); a recording comes back out into an
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
/* Reserves n ids of kind; *first is the first. Returns 0, or -1. */
int ss_pg_reserve_ids(struct ss_pg *p, int kind, int64_t n, int64_t *first);
/* Partition slice of table t (owner ids [slice * width, (slice + 1) * width)),
 * created on the side connection when missing. */
int ss_pg_ensure_partition(struct ss_pg *p, const char *table, long long width, int64_t slice);

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
 * dest with COPY, moving ids >= floor[kind] by delta[kind]. *rows counts them.
 * Returns 0, or -1. */
int ss_pg_copy_in(struct ss_pg *p, struct sqlite3 *db, const char *select, const struct pg_table *t,
		  const char *dest, const int64_t floor[ID_COUNT], const int64_t delta[ID_COUNT], uint64_t *rows);

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
