/*
 * poll_chunks.h - the sparse index of a worker's polls (schema 7): a
 * poll_chunks row per run of about SS_POLL_CHUNK polls of one worker, in start
 * order: the first one's ts and the lowest and highest poll id of the run.
 * Poll ids are handed out in time order across all workers, so a worker's
 * polls in a time range lie in a short range of polls' rowids; the macros
 * below give that range, and a query adds its worker and ts conditions on the
 * rows in it. This replaces polls_by_worker (an index entry per poll, a sixth
 * of the database). Used by the sink (writing) and by the read queries; the
 * macros need only SQLite.
 */
#ifndef SS_POLL_CHUNKS_H
#define SS_POLL_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

/* At most SS_POLL_CHUNK polls per chunk, and a chunk ends once its ids span
 * SS_POLL_CHUNK_SPAN (a worker that polls seldom among busy ones would
 * otherwise have chunks that span thousands of other workers' polls): a lane
 * query, or the link of a sample to its poll, reads at most about a span of
 * rows more than it needs, and the table costs ~33 bytes per chunk. */
#define SS_POLL_CHUNK 64
#define SS_POLL_CHUNK_SPAN 64
#define SS_POLL_CHUNK_SQL "64" /* the same, for SQL text */

/* The chunks of worker W that can hold a poll starting in [s, B], where s is
 * the start of the last poll of W at or before A (A <= B; no poll at or before
 * A: from A). Chunks of a worker hold consecutive polls in start order, so
 * that is the last chunk starting at or before A and those after it up to B. */
#define SS_POLL_CHUNKS_OF(W, A, B)                                                      \
	" FROM poll_chunks WHERE worker_id = " W " AND ts <= " B " AND ts >= coalesce("   \
	"(SELECT max(ts) FROM poll_chunks WHERE worker_id = " W " AND ts <= " A "), " A ")"

/* COL (a polls rowid) in the id range of those chunks: a rowid range, so the
 * polls are read from the table in that range only. */
#define SS_POLL_IDS(COL, W, A, B)                                                    \
	" " COL " BETWEEN (SELECT min(id_lo)" SS_POLL_CHUNKS_OF(W, A, B) ")"          \
	" AND (SELECT max(id_hi)" SS_POLL_CHUNKS_OF(W, A, B) ")"

/* COL in the id range of worker W's last chunk starting at or before T:
 * where its last poll starting at or before T is (two seeks). */
#define SS_POLL_CHUNK_AT(W, T) " FROM poll_chunks WHERE worker_id = " W " AND ts <= " T " ORDER BY ts DESC LIMIT 1"
#define SS_POLL_LAST_IDS(COL, W, T)                                                      \
	" " COL " BETWEEN (SELECT id_lo" SS_POLL_CHUNK_AT(W, T) ") AND (SELECT id_hi" SS_POLL_CHUNK_AT(W, T) ")"

/* Beyond every ts: the last chunk of a worker. */
#define SS_POLL_TS_MAX "9223372036854775807"

/* poll_chunks of the polls of a database that has none (a migrated or a
 * pulled one), by the rule the importer follows: runs of SS_POLL_CHUNK start
 * times of a worker (polls starting at one ts stay in one run), without the
 * span limit (a sample linked in such a chunk reads more rows). */
#define SS_POLL_CHUNKS_BUILD_WHERE(COND)                                                         \
	"INSERT OR REPLACE INTO poll_chunks SELECT worker_id, min(ts), min(id), max(id) FROM"    \
	" (SELECT worker_id, ts, id, (dense_rank() OVER (PARTITION BY worker_id ORDER BY ts) - 1) / " \
	SS_POLL_CHUNK_SQL " AS c FROM polls WHERE " COND ") GROUP BY worker_id, c"
#define SS_POLL_CHUNKS_BUILD SS_POLL_CHUNKS_BUILD_WHERE("1")

/* For a database of schema 6 or older opened read-only (no poll_chunks yet:
 * its next import adds it): one chunk per poll, answered by its
 * polls_by_worker index, so the queries above work there too. */
#define SS_POLL_CHUNKS_COMPAT_VIEW                                                          \
	"CREATE TEMP VIEW IF NOT EXISTS poll_chunks AS SELECT worker_id, ts, id AS id_lo, id AS id_hi" \
	" FROM polls"

struct ss_db;

/* The open chunk of each worker during an import (indexed by workers.id). */
struct ss_poll_chunk_acc {
	int64_t ts, last_ts, id_lo, id_hi;
	uint32_t n;
};
struct ss_poll_chunks {
	struct ss_poll_chunk_acc *w;
	size_t cap;
};

/* A poll row handed to the store: its worker's open chunk takes it, and a
 * full chunk is written (through d's inserting pipe). A chunk is not closed
 * between polls that start at the same ts, so every poll of a chunk starts
 * before the next chunk's ts. 0, or -1 (d->err says why). Not thread-safe:
 * the sink's thread only. */
int ss_poll_chunks_add(struct ss_poll_chunks *c, struct ss_db *d, int64_t worker_id, int64_t id, int64_t ts);
/* Writes every open chunk (where an import ends: the next import starts new
 * ones). */
int ss_poll_chunks_flush(struct ss_poll_chunks *c, struct ss_db *d);
void ss_poll_chunks_free(struct ss_poll_chunks *c);

#endif
