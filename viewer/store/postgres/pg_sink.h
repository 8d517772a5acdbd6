/*
 * pg_sink.h - the PostgreSQL store's sink, in front of the staging SQLite
 * store's (ss_sqlite_stage.wrap): the rows of the large tables never go into
 * the stage but straight to PostgreSQL with COPY, formatted on the model's
 * thread and sent by a thread of the sink's own on the import's connection, so
 * the server writes while the model decodes. Polls, parks, wakes, queue depths,
 * marks, spans and CPU intervals are sent as they come; tasks (an import's
 * task may still end), samples (linked to their polls where the import ends)
 * and summary buckets (added up per bucket) are held and sent by finish().
 * Everything else, and the state an import continues from, goes on to the
 * stage. Rows go to the partitioned tables themselves, whose partitions are
 * made before the import's transaction touches them (pg_import.c).
 *
 * Used from one thread (the model's); the main connection is the sender's
 * while rows are in flight: call drain() before using it.
 */
#ifndef STALLSCOPE_PG_SINK_H
#define STALLSCOPE_PG_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "pg_store.h"
#include "sink.h"

struct ss_pg_sink;
struct sqlite3;

/* A sink sending on p->main, its ids moved by ids (both outlive it). NULL when
 * out of memory or the thread cannot start (err says). */
struct ss_pg_sink *ss_pg_sink_new(struct ss_pg *p, struct ss_pg_ids *ids, char *err, size_t errlen);
/* Puts the sink in front of *sink (whose functions it hands the rest to). */
void ss_pg_sink_wrap(struct ss_pg_sink *k, struct ss_sink *sink);
/* Waits until every row handed to the sender is in the database. Returns 0,
 * or -1 when sending failed (the message in p->err). */
int ss_pg_sink_drain(struct ss_pg_sink *k);
/* Where the import ends, with the stage closed by the importer and opened again
 * as stage: sends what was held (samples linked to the polls of this import
 * and the polls the stage holds), waits for the sender, and adds the rows sent
 * to *rows. Returns 0, or -1 with a message in p->err. */
int ss_pg_sink_finish(struct ss_pg_sink *k, struct sqlite3 *stage, uint64_t *rows);
/* After finish() and after the stage's own rows are back in the database (the
 * resumed recording's workers and polls): links the samples of earlier imports
 * that fall in a poll of this one. Returns 0, or -1 with a message in p->err. */
int ss_pg_sink_link_old_samples(struct ss_pg_sink *k);
/* Stops the sender (rows not sent yet are dropped) and frees. */
void ss_pg_sink_free(struct ss_pg_sink *k);

#endif /* STALLSCOPE_PG_SINK_H */
