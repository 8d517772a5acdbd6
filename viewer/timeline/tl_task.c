/*
 * tl_task.c - see tl_task.h.
 */
#include "tl_task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_query.h"
#include "view_queries.h"

static sqlite3_stmt *prep(struct tl_db *db, enum ss_view_query q)
{
	return ss_view_prepare(db->db, q, 0);
}

static void copy_text(char *dst, size_t n, sqlite3_stmt *s, int col)
{
	const char *t = (const char *)sqlite3_column_text(s, col);
	snprintf(dst, n, "%s", t ? t : "");
}

static int cmp_poll(const void *a, const void *b)
{
	const struct tl_task_poll *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void load_wake(struct tl_db *conn, struct tl_task_poll *p)
{
	p->wake_ts = p->delay = p->waker_task = -1;
	int64_t rowid = tl_query_wake_of_poll(conn, p->id);
	if (!rowid)
		return;
	sqlite3_stmt *s = prep(conn, SS_V_WAKE_ROW);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, rowid);
	sqlite3_bind_int64(s, 2, p->id);
	if (sqlite3_step(s) == SQLITE_ROW) {
		p->wake_ts = tl_col_time(s, 0);
		p->delay = sqlite3_column_type(s, 1) == SQLITE_NULL ? -1 : tl_col_dur(s, 1);
		copy_text(p->waker_thread, sizeof p->waker_thread, s, 2);
		p->waker_task = sqlite3_column_int64(s, 3);
	}
	sqlite3_finalize(s);
}

int tl_task_load(struct tl_db *conn, const struct tl_db *meta, int64_t task_id, size_t max_polls, bool with_wakes,
		 struct tl_task *t)
{
	memset(t, 0, sizeof *t);
	tl_db_arm(conn, TL_FRAME_BUDGET_S);
	sqlite3_stmt *s = prep(conn, SS_V_TASK_LIFE);
	if (!s)
		return -1;
	sqlite3_bind_int64(s, 1, task_id);
	if (sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_finalize(s);
		return -1;
	}
	t->id = task_id;
	t->task = sqlite3_column_int64(s, 0);
	t->recording_id = sqlite3_column_int64(s, 1);
	t->location_id = sqlite3_column_int64(s, 2);
	t->parent_task = sqlite3_column_int64(s, 3);
	t->spawn_ts = sqlite3_column_int64(s, 4) < 0 ? -1 : tl_col_time(s, 4);
	t->end_ts = sqlite3_column_int64(s, 5) < 0 ? -1 : tl_col_time(s, 5);
	copy_text(t->spawn_thread, sizeof t->spawn_thread, s, 6);
	sqlite3_finalize(s);

	/* Its polls, worker by worker, inside its life. */
	int64_t from = t->spawn_ts >= 0 ? t->spawn_ts : meta->first_ts;
	int64_t to = t->end_ts >= 0 ? t->end_ts + 1 : meta->last_ts + 1;
	s = prep(conn, SS_V_TASK_POLLS);
	size_t cap = 0;
	for (size_t i = 0; s && i < meta->n_lanes; i++) {
		const struct tl_lane *l = &meta->lanes[i];
		if (!l->worker_id || l->recording_id != t->recording_id)
			continue;
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, l->worker_id);
		sqlite3_bind_int64(s, 2, from);
		sqlite3_bind_int64(s, 3, to);
		sqlite3_bind_int64(s, 4, task_id);
		while (sqlite3_step(s) == SQLITE_ROW) {
			if (t->n_polls >= max_polls) {
				t->truncated = true;
				break;
			}
			if (t->n_polls == cap) {
				cap = cap ? cap * 2 : 64;
				struct tl_task_poll *n = realloc(t->polls, cap * sizeof *n);
				if (!n)
					break;
				t->polls = n;
			}
			struct tl_task_poll *p = &t->polls[t->n_polls++];
			memset(p, 0, sizeof *p);
			p->id = sqlite3_column_int64(s, 0);
			p->ts = tl_col_time(s, 1);
			p->dur = tl_col_dur(s, 2);
			p->incomplete = sqlite3_column_int(s, 3) != 0;
			p->worker_id = l->worker_id;
			p->lane = (int)i;
			p->wake_ts = p->delay = p->waker_task = -1;
		}
	}
	sqlite3_finalize(s);
	if (t->n_polls)
		qsort(t->polls, t->n_polls, sizeof *t->polls, cmp_poll);
	for (size_t i = 0; with_wakes && i < t->n_polls; i++)
		load_wake(conn, &t->polls[i]);

	s = prep(conn, SS_V_TASK_DUMPS);
	cap = 0;
	if (s) {
		sqlite3_bind_int64(s, 1, task_id);
		while (sqlite3_step(s) == SQLITE_ROW) {
			if (t->n_dumps == cap) {
				cap = cap ? cap * 2 : 8;
				struct tl_task_dump *n = realloc(t->dumps, cap * sizeof *n);
				if (!n)
					break;
				t->dumps = n;
			}
			struct tl_task_dump *d = &t->dumps[t->n_dumps++];
			d->ts = tl_col_time(s, 0);
			d->idle = sqlite3_column_int64(s, 1);
			d->callsite_id = sqlite3_column_int64(s, 2);
			d->location_id = sqlite3_column_int64(s, 3);
		}
		sqlite3_finalize(s);
	}
	return tl_db_expired(conn) ? -1 : 0;
}

void tl_task_free(struct tl_task *t)
{
	free(t->polls);
	free(t->dumps);
	memset(t, 0, sizeof *t);
}

size_t tl_task_ids(struct tl_db *conn, int64_t task_number, int64_t *out, size_t max)
{
	sqlite3_stmt *s = prep(conn, SS_V_TASKS_BY_NUMBER);
	size_t n = 0;
	if (!s)
		return 0;
	sqlite3_bind_int64(s, 1, task_number);
	while (n < max && sqlite3_step(s) == SQLITE_ROW)
		out[n++] = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}
