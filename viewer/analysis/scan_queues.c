/*
 * scan_queues.c - the run-queue part of the scan (scan.h): one pass over
 * queue_depths for the summary's maxima and, per recording, the global
 * queue's peak and when it first went over the lowest queue-buildup level;
 * then, fed by the task scan, which spawn location spawned most from then to
 * the peak. Before this pass the summary and the queue-buildup check read
 * queue_depths three times and grouped it through a sort (a second each on a
 * 20M-event trace).
 *
 * Ties are settled by time: the earliest row that reaches the maximum gives
 * its time (queue_depths lists its rows in no time order since schema 11).
 */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_queries.h"
#include "thresholds.h"

static int fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return -1;
}

/* The queue of a recording, added on first use (kept sorted by recording). */
static struct ss_scan_queue *queue_of(struct ss_scan *s, int64_t rec)
{
	size_t a = 0, b = s->n_queues;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (s->queues[m].recording_id < rec)
			a = m + 1;
		else
			b = m;
	}
	if (a < s->n_queues && s->queues[a].recording_id == rec)
		return &s->queues[a];
	struct ss_scan_queue *n = realloc(s->queues, (s->n_queues + 1) * sizeof *n);
	if (!n)
		return NULL;
	s->queues = n;
	memmove(&n[a + 1], &n[a], (s->n_queues - a) * sizeof *n);
	s->n_queues++;
	n[a] = (struct ss_scan_queue){ .recording_id = rec };
	return &n[a];
}

int ss_scan_queues(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, char *err, size_t errlen)
{
	/* The lowest level in use: a build-up starts when the queue passes it. */
	const struct ss_threshold *t = &ss_thresholds[SS_TH_GLOBAL_QUEUE];
	double level = t->info != SS_TH_OFF ? t->info : t->warning != SS_TH_OFF ? t->warning : t->critical;
	int64_t lv = level < -9e18 ? INT64_MIN : level > 9e18 ? INT64_MAX : (int64_t)level;
	struct ss_hmap rec_of_thread = { 0 };
	sqlite3_stmt *st = ss_read_prepare(db, SS_Q_SCAN_THREADS);
	if (!st)
		return fail(db, err, errlen, "threads");
	int rc = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		if (ss_hmap_put(&rec_of_thread, (uint64_t)sqlite3_column_int64(st, 0), 0,
				(uint64_t)sqlite3_column_int64(st, 1)) != 0)
			rc = fail(NULL, err, errlen, "threads");
	if (sqlite3_finalize(st) != SQLITE_OK && !rc)
		rc = fail(db, err, errlen, "threads");
	st = rc ? NULL : ss_read_prepare(db, SS_Q_SCAN_QUEUES);
	if (!rc && !st)
		rc = fail(db, err, errlen, "queue depths");
	if (st)
		ss_scope_bind(st, scope);
	bool have_global = false, have_local = false;
	/* The thread of the last row, and its recording: rows come in runs of
	 * one thread. */
	int64_t last_thread = 0, last_rec = 0;
	bool last_known = false, have_last = false;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(st, 3);
		if (sqlite3_column_type(st, 3) == SQLITE_NULL || !ss_scope_holds(scope, ts))
			continue;
		int64_t thread = sqlite3_column_int64(st, 0);
		if (!have_last || thread != last_thread) {
			uint64_t v;
			last_known = ss_hmap_get(&rec_of_thread, (uint64_t)thread, 0, &v);
			last_rec = last_known ? (int64_t)v : 0;
			last_thread = thread;
			have_last = true;
		}
		if (scope->recording_id && (!last_known || last_rec != scope->recording_id))
			continue;
		s->queue_rows++;
		bool g_null = sqlite3_column_type(st, 1) == SQLITE_NULL;
		int64_t g = sqlite3_column_int64(st, 1);
		if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
			int64_t l = sqlite3_column_int64(st, 2);
			if (!have_local || l > s->local_max)
				s->local_max = l;
			have_local = true;
		}
		if (g_null)
			continue;
		if (!have_global || g > s->global_max)
			s->global_max = g;
		have_global = true;
		if (!last_known)
			continue;
		struct ss_scan_queue *q = queue_of(s, last_rec);
		if (!q) {
			rc = fail(NULL, err, errlen, "queue depths");
			break;
		}
		if (!q->rows || g > q->peak || (g == q->peak && ts < q->peak_ts)) {
			q->peak = g;
			q->peak_ts = ts;
		}
		q->rows++;
		if (g > lv) {
			if (!q->rows_over || ts < q->first_over_ts)
				q->first_over_ts = ts;
			q->rows_over++;
		}
	}
	if (st && sqlite3_finalize(st) != SQLITE_OK && !rc)
		rc = fail(db, err, errlen, "queue depths");
	ss_hmap_free(&rec_of_thread);
	/* Spawn locations matter only for a queue the check grades: over the
	 * lowest level in use, whatever order the levels were given in. */
	double lowest = SS_TH_OFF;
	const double lvs[3] = { t->info, t->warning, t->critical };
	for (int i = 0; i < 3; i++)
		if (lvs[i] != SS_TH_OFF && (lowest == SS_TH_OFF || lvs[i] < lowest))
			lowest = lvs[i];
	for (size_t i = 0; i < s->n_queues; i++) {
		struct ss_scan_queue *q = &s->queues[i];
		if (!q->rows_over)
			q->first_over_ts = q->peak_ts;
		q->wants_spawns = lowest != SS_TH_OFF && (double)q->peak > lowest;
		s->queues_wanting_spawns += q->wants_spawns;
	}
	return rc;
}

int ss_scan_queue_spawn(struct ss_scan *s, int64_t rec, int64_t location, int64_t spawn_ts)
{
	for (size_t i = 0; i < s->n_queues; i++) {
		struct ss_scan_queue *q = &s->queues[i];
		if (!q->wants_spawns || q->recording_id != rec || spawn_ts < q->first_over_ts || spawn_ts > q->peak_ts)
			continue;
		uint64_t n = 0;
		ss_hmap_get(&s->queue_spawns, i, (uint64_t)location, &n);
		return ss_hmap_put(&s->queue_spawns, i, (uint64_t)location, n + 1);
	}
	return 0;
}

static void most_spawns(void *ctx, uint64_t queue, uint64_t location, uint64_t n)
{
	struct ss_scan_queue *q = &((struct ss_scan *)ctx)->queues[queue];
	int64_t loc = (int64_t)location, c = (int64_t)n;
	/* The most spawns, ties to the lower location id (ORDER BY count DESC,
	 * location_id). */
	if (!q->spawns || c > q->spawns || (c == q->spawns && loc < q->spawn_location)) {
		q->spawns = c;
		q->spawn_location = loc;
	}
}

void ss_scan_queue_spawns_done(struct ss_scan *s)
{
	ss_hmap_foreach(&s->queue_spawns, most_spawns, s);
	ss_hmap_free(&s->queue_spawns);
}
