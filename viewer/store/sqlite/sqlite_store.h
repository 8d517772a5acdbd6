/*
 * sqlite_store.h - the SQLite store: the sink the model writes rows to (the
 * schema of schema/stallscope.sql, rows inserted on a second thread in batches),
 * the state an incremental import continues from (the import_* tables), the
 * segments an import has read, and the end of an import (indexes, the links
 * from samples and stalls to their polls, one commit).
 *
 * viewer/store/sqlite/ holds everything that speaks SQL to a stallscope
 * database: this store, the opening of databases someone sent (store_open.h),
 * and the named read queries. It depends on viewer/model/ (rows, sink), SQLite
 * and libc; readers of the store (analysis, timeline, exports) depend on it,
 * never the other way.
 *
 * One store per import, used from one thread (it runs a second one itself).
 */
#ifndef STALLSCOPE_SQLITE_STORE_H
#define STALLSCOPE_SQLITE_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sink.h"

struct ss_sqlite_store;

/* Opens (creating) path with the schema and the bulk-load settings; threaded
 * inserts on a second thread (not for ":memory:"). Returns NULL with a message
 * in err. */
struct ss_sqlite_store *ss_sqlite_open(const char *path, bool threaded, char *err, size_t errlen);
/* Closes without committing (an import that failed rolls back). */
void ss_sqlite_close(struct ss_sqlite_store *s);
const char *ss_sqlite_error(struct ss_sqlite_store *s);

/* A store that stages an import for another database (viewer/store/postgres/):
 * new ids start at least at floor (above what the other database holds); before
 * the model reads the deduplication tables, prepare() may copy rows in; and a
 * recording this file does not hold is first asked of seed(), which may copy it
 * in (its rows and the state an import continues from) and give its id, so that
 * it resumes exactly as it would in a database that had it all along. Both write
 * with db directly, inside the import's transaction. The stage must outlive the
 * store. */
struct sqlite3;
struct ss_sqlite_stage {
	void *ctx;
	int64_t floor[ID_COUNT];
	int (*prepare)(void *ctx, struct sqlite3 *db, char *err, size_t errlen);
	int (*seed)(void *ctx, struct sqlite3 *db, uint64_t session_id, int64_t *recording_id, char *err,
		    size_t errlen);
	/* NULL, or puts a sink of its own in front of the store's (ss_sqlite_sink):
	 * it may take some rows itself and hand the rest on to *sink's functions. */
	void (*wrap)(void *ctx, struct ss_sink *sink);
};
/* Call before the model is created. Returns 0, or -1 (ss_sqlite_error). */
int ss_sqlite_set_stage(struct ss_sqlite_store *s, const struct ss_sqlite_stage *stage);

/* The store as the model's sink. */
void ss_sqlite_sink(struct ss_sqlite_store *s, struct ss_sink *out);

/* A segment of a recording as the store keeps it (table segments). */
struct ss_segment_info {
	int64_t id, recording_id;
	const char *file;
	uint64_t seq, start_ts, end_ts;  /* end_ts 0: NULL */
	bool sealed;
	uint64_t blocks, bytes, intact_bytes, events;
	const char *damage;              /* NULL: none */
	uint64_t damage_offset;
	int64_t damage_block;            /* < 0: NULL */
	const char *damage_reason, *note;
};

/* Whether the store has segment seq of a recording; fills id, blocks, sealed, events. */
bool ss_sqlite_segment_find(struct ss_sqlite_store *s, int64_t recording_id, uint64_t seq,
			    struct ss_segment_info *out);
int ss_sqlite_segment_write(struct ss_sqlite_store *s, const struct ss_segment_info *seg);

/* The first samples row this import adds (its samples get linked to polls). */
int64_t ss_sqlite_first_new_sample(struct ss_sqlite_store *s);

/* Ends an import: indexes, sample and stall links, commit. phase (may be NULL)
 * is told each step's name; timing prints each step's time on log. */
int ss_sqlite_finish(struct ss_sqlite_store *s, void (*phase)(void *ctx, const char *what), void *ctx,
		     bool timing, FILE *log);

#endif /* STALLSCOPE_SQLITE_STORE_H */
