/*
 * tl_task.h - one task's life read from the trace: its spawn and end, its
 * polls in order with the wake that led to each (when, by whom, how long it
 * waited for a worker), and its task dumps (where it sat idle). The task
 * view draws it; the search finds a task's polls with it.
 *
 * Polls are found per worker through the (worker_id, ts) index within the
 * task's lifetime, never by scanning the polls table.
 */
#ifndef STALLSCOPE_TL_TASK_H
#define STALLSCOPE_TL_TASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tl_db.h"

struct tl_task_poll {
	int64_t id, ts, dur, worker_id;
	int lane;                  /* index into the trace's lanes, -1 when none */
	bool incomplete;
	int64_t wake_ts;           /* the wake that led to it, -1 when none was recorded */
	int64_t delay;             /* wake-to-poll delay, ns; -1 when unknown */
	int64_t waker_task;        /* the task number polled by the waker, -1 when none */
	char waker_thread[64];     /* "" when unknown */
};

struct tl_task_dump {
	int64_t ts, idle, callsite_id, location_id;
};

struct tl_task {
	int64_t id, task, recording_id, location_id;
	int64_t parent_task;       /* the parent's task number, -1 when none */
	int64_t spawn_ts, end_ts;  /* -1: before the data / alive at its end */
	char spawn_thread[64];
	struct tl_task_poll *polls;
	size_t n_polls;
	bool truncated;            /* more polls than asked for */
	struct tl_task_dump *dumps;
	size_t n_dumps;
};

/* Reads task_id (a tasks row id) through conn; meta is the opened trace whose
 * lanes say which workers to look in (conn's own tl_db, or the window's).
 * At most max_polls polls (the first ones), with their wakes when
 * with_wakes. Returns 0, or -1 when there is no such task or the reads
 * failed. Free with tl_task_free. */
int tl_task_load(struct tl_db *conn, const struct tl_db *meta, int64_t task_id, size_t max_polls, bool with_wakes,
		 struct tl_task *out);
void tl_task_free(struct tl_task *t);

/* The tasks rows of a task number (one per recording that has it), at most
 * max; returns how many. */
size_t tl_task_ids(struct tl_db *conn, int64_t task_number, int64_t *out, size_t max);

#endif /* STALLSCOPE_TL_TASK_H */
