/*
 * tl_query.h - the text behind the tooltip and the side panel: a poll's task,
 * location, times, the wake that led to it, the samples inside it as symbolized
 * stacks; a stall's captures with their backtraces; a time range's per-worker
 * busy / parked / blocked time and its top locations; a task's and a worker's
 * facts. Each function appends plain text (UTF-8, copyable) to a GString.
 *
 * These read the database: the window runs them on its query worker, never on
 * the main thread.
 */
#ifndef STALLSCOPE_TL_QUERY_H
#define STALLSCOPE_TL_QUERY_H

#include <glib.h>
#include <stdint.h>

#include "tl_db.h"

/* Short, for a tooltip (n > 1: the box folds n polls). */
void tl_query_poll_tooltip(struct tl_db *db, int64_t poll_id, uint32_t n, GString *out);
/* Long, for the side panel. */
void tl_query_poll_details(struct tl_db *db, int64_t poll_id, GString *out);
/* A stall (tl_db.stalls[i]) and its captures' backtraces. */
void tl_query_stall_details(struct tl_db *db, const struct tl_stall *st, GString *out);
/* A task: its number, spawn location, parent, spawn and end times. */
void tl_query_task_details(struct tl_db *db, int64_t task_id, GString *out);
/* A worker: runtime, index, thread, and its totals over the whole trace (from
 * the coarsest full summary level: a row per second, not per poll). */
void tl_query_worker_details(struct tl_db *db, int64_t worker_id, GString *out);
/* A time range: per-worker busy, parked and off-CPU time, top locations. */
void tl_query_range_summary(struct tl_db *db, int64_t t0, int64_t t1, GString *out);
/* The rowid of the wakes row that led to poll_id, 0 when none (a binary
 * search on rowid: rows with a poll_id are stored in poll_id order). */
int64_t tl_query_wake_of_poll(struct tl_db *db, int64_t poll_id);
/* One stack, leaf first: "  #0 function (file:line)" lines. */
void tl_query_stack(struct tl_db *db, int64_t callsite_id, GString *out);

#endif /* STALLSCOPE_TL_QUERY_H */
