/*
 * report_scan.c - see report_scan.h.
 *
 * Wakes are matched to their poll's location by walking polls and wakes side
 * by side in rowid order: the importer stores wakes in the order of the polls
 * they led to (schema/stallscope.sql), so no per-wake lookup is needed. A
 * database where that order does not hold is detected on the way and read
 * through a join instead.
 */
#include "report_scan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hist_add(struct rs_hist *h, uint64_t v)
{
	if (h->n == h->cap) {
		size_t nc = h->cap ? h->cap * 2 : 64;
		uint64_t *nv = realloc(h->v, nc * sizeof *nv);
		if (!nv)
			return -1;
		h->v = nv;
		h->cap = nc;
	}
	h->v[h->n++] = v;
	h->sorted = false;
	if (v > h->max)
		h->max = v;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

double rs_quantile(struct rs_hist *h, unsigned pct)
{
	if (!h->n)
		return -1;
	if (!h->sorted) {
		qsort(h->v, (size_t)h->n, sizeof *h->v, cmp_u64);
		h->sorted = true;
	}
	if (pct > 100)
		pct = 100;
	/* ceil(pct * n / 100) without floating point: the README's SQL does the
	 * same comparison in integers (rn * 100 >= pct * n). */
	uint64_t rank = (pct * h->n + 99) / 100;
	if (rank < 1)
		rank = 1;
	return (double)h->v[rank - 1];
}

static struct rs_hist *loc_hist(struct report_scan *s, int64_t loc)
{
	uint64_t i;
	if (ss_hmap_get(&s->loc_index, (uint64_t)loc, 0, &i))
		return &s->locs[i].h;
	if (s->n_locs == s->cap_locs) {
		size_t nc = s->cap_locs ? s->cap_locs * 2 : 32;
		struct rs_location *l = realloc(s->locs, nc * sizeof *l);
		if (!l)
			return NULL;
		s->locs = l;
		s->cap_locs = nc;
	}
	if (ss_hmap_put(&s->loc_index, (uint64_t)loc, 0, s->n_locs) != 0)
		return NULL;
	s->locs[s->n_locs] = (struct rs_location){ .id = loc };
	return &s->locs[s->n_locs++].h;
}

static int add_delay(struct report_scan *s, int64_t loc, int64_t delay)
{
	uint64_t v = delay > 0 ? (uint64_t)delay : 0;
	struct rs_hist *h = loc_hist(s, loc);
	if (!h || hist_add(h, v) != 0 || hist_add(&s->delays, v) != 0)
		return -1;
	if (v > s->max_delay)
		s->max_delay = v;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	int64_t x = ((const struct rs_worker *)a)->id, y = ((const struct rs_worker *)b)->id;
	return x < y ? -1 : x > y;
}

const struct rs_worker *rs_worker(const struct report_scan *s, int64_t id)
{
	struct rs_worker key = { .id = id };
	return s->n_workers ? bsearch(&key, s->workers, s->n_workers, sizeof key, by_id) : NULL;
}

static int fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return -1;
}

static int load_workers(sqlite3 *db, struct report_scan *s, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT id FROM workers ORDER BY id", -1, &st, NULL) != SQLITE_OK)
		return fail(db, err, errlen, "workers");
	size_t cap = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (s->n_workers == cap) {
			cap = cap ? cap * 2 : 64;
			struct rs_worker *w = realloc(s->workers, cap * sizeof *w);
			if (!w) {
				sqlite3_finalize(st);
				return fail(NULL, err, errlen, "workers");
			}
			s->workers = w;
		}
		s->workers[s->n_workers++] = (struct rs_worker){ .id = sqlite3_column_int64(st, 0) };
	}
	sqlite3_finalize(st);
	return 0;
}

/* The wakes that led to a poll, with the poll's location, through a join: for
 * databases whose wakes are not in poll order. */
static int delays_by_join(sqlite3 *db, struct report_scan *s, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->n_locs; i++)
		free(s->locs[i].h.v);
	free(s->delays.v);
	s->n_locs = 0;
	ss_hmap_clear(&s->loc_index);
	memset(&s->delays, 0, sizeof s->delays);
	s->max_delay = 0;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(p.location_id, 0), w.delay FROM wakes w"
				   " JOIN polls p ON p.id = w.poll_id WHERE w.delay IS NOT NULL", -1, &st, NULL)
	    != SQLITE_OK)
		return fail(db, err, errlen, "wakes");
	int rc = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = add_delay(s, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_finalize(st);
	return rc ? fail(NULL, err, errlen, "wakes") : 0;
}

/* A task alive at the end: its last poll and its last wake that led to none. */
struct live_task {
	uint64_t last_poll_ts, pending_wake_ts;
	bool polled, running, woken;
};

static int load_live_tasks(sqlite3 *db, struct ss_hmap *map, struct live_task **out, size_t *n,
			   char *err, size_t errlen)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	if (sqlite3_prepare_v2(db, "SELECT id FROM tasks WHERE end_ts IS NULL", -1, &st, NULL) != SQLITE_OK)
		return fail(db, err, errlen, "tasks");
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			struct live_task *nv = realloc(*out, cap * sizeof *nv);
			if (!nv) {
				sqlite3_finalize(st);
				return fail(NULL, err, errlen, "tasks");
			}
			*out = nv;
		}
		(*out)[*n] = (struct live_task){ 0 };
		if (ss_hmap_put(map, (uint64_t)sqlite3_column_int64(st, 0), 0, *n) != 0) {
			sqlite3_finalize(st);
			return fail(NULL, err, errlen, "tasks");
		}
		(*n)++;
	}
	sqlite3_finalize(st);
	return 0;
}

int rs_scan(sqlite3 *db, struct report_scan *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (load_workers(db, s, err, errlen) != 0)
		return -1;
	sqlite3_stmt *p = NULL, *w = NULL, *k = NULL;
	struct ss_hmap live_index = { 0 };
	struct live_task *live = NULL;
	size_t n_live = 0;
	uint64_t v;
	int rc = load_live_tasks(db, &live_index, &live, &n_live, err, errlen);
	if (rc)
		goto out;
	if (sqlite3_prepare_v2(db, "SELECT id, coalesce(location_id, 0), worker_id, dur, coalesce(task_id, 0),"
			       " ts, incomplete FROM polls ORDER BY id", -1, &p, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT poll_id, delay, task_id, ts FROM wakes ORDER BY rowid", -1, &w, NULL)
		    != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT worker_id, dur FROM parks", -1, &k, NULL) != SQLITE_OK) {
		rc = fail(db, err, errlen, "report scan");
		goto out;
	}
	/* The next wake to place, and whether wakes come in poll order. Wakes
	 * that led to no poll are looked at only for the live tasks. */
	bool have_wake, ordered = true;
	int64_t wake_poll = 0, last_wake_poll = INT64_MIN;
#define NEXT_WAKE()                                                                             \
	for (;;) {                                                                              \
		have_wake = sqlite3_step(w) == SQLITE_ROW;                                      \
		if (!have_wake)                                                                 \
			break;                                                                  \
		if (sqlite3_column_type(w, 0) != SQLITE_NULL &&                                 \
		    sqlite3_column_type(w, 1) != SQLITE_NULL) {                                 \
			wake_poll = sqlite3_column_int64(w, 0);                                 \
			break;                                                                  \
		}                                                                               \
		if (sqlite3_column_type(w, 0) == SQLITE_NULL &&                                 \
		    ss_hmap_get(&live_index, (uint64_t)sqlite3_column_int64(w, 2), 0, &v)) {    \
			uint64_t wts = (uint64_t)sqlite3_column_int64(w, 3);                    \
			if (!live[v].woken || wts > live[v].pending_wake_ts)                    \
				live[v].pending_wake_ts = wts;                                  \
			live[v].woken = true;                                                   \
		}                                                                               \
	}
	NEXT_WAKE();
	while (!rc && sqlite3_step(p) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(p, 0), loc = sqlite3_column_int64(p, 1);
		int64_t dur = sqlite3_column_int64(p, 3);
		uint64_t d = dur > 0 ? (uint64_t)dur : 0;
		if (n_live && ss_hmap_get(&live_index, (uint64_t)sqlite3_column_int64(p, 4), 0, &v)) {
			uint64_t pts = (uint64_t)sqlite3_column_int64(p, 5);
			if (!live[v].polled || pts >= live[v].last_poll_ts) {
				live[v].last_poll_ts = pts;
				live[v].running = sqlite3_column_int64(p, 6) != 0;
			}
			live[v].polled = true;
		}
		struct rs_worker *wk = (struct rs_worker *)rs_worker(s, sqlite3_column_int64(p, 2));
		if (wk) {
			wk->polls++;
			wk->busy += d;
			if (d > wk->longest)
				wk->longest = d;
		}
		s->polls++;
		s->over1ms += d > 1000000;
		s->over10ms += d > 10000000;
		s->over50ms += d > 50000000;
		/* Wakes of polls that are gone (ids below this one) are skipped. */
		while (ordered && have_wake && wake_poll <= id) {
			if (wake_poll < last_wake_poll) {
				ordered = false;
				break;
			}
			last_wake_poll = wake_poll;
			if (wake_poll == id && add_delay(s, loc, sqlite3_column_int64(w, 1)) != 0)
				rc = fail(NULL, err, errlen, "wakes");
			NEXT_WAKE();
		}
	}
	/* A wake left over with a poll id below the last one seen is out of order
	 * too; one above every poll's id has no poll and does not count. */
	if (ordered && have_wake && wake_poll < last_wake_poll)
		ordered = false;
	/* The rest of the wakes: their pending ones still count for live tasks. */
	while (have_wake)
		NEXT_WAKE();
#undef NEXT_WAKE
	s->alive_at_end = n_live;
	for (size_t i = 0; i < n_live; i++)
		s->idle_at_end += live[i].polled && !live[i].running &&
				  !(live[i].woken && live[i].pending_wake_ts >= live[i].last_poll_ts);
	if (!rc && !ordered)
		rc = delays_by_join(db, s, err, errlen);
	while (!rc && sqlite3_step(k) == SQLITE_ROW) {
		struct rs_worker *wk = (struct rs_worker *)rs_worker(s, sqlite3_column_int64(k, 0));
		int64_t dur = sqlite3_column_int64(k, 1);
		if (wk && dur > 0)
			wk->parked += (uint64_t)dur;
	}
out:
	ss_hmap_free(&live_index);
	free(live);
	sqlite3_finalize(p);
	sqlite3_finalize(w);
	sqlite3_finalize(k);
	return rc;
}

void rs_free(struct report_scan *s)
{
	for (size_t i = 0; i < s->n_locs; i++)
		free(s->locs[i].h.v);
	free(s->locs);
	ss_hmap_free(&s->loc_index);
	free(s->delays.v);
	free(s->workers);
	memset(s, 0, sizeof *s);
}
