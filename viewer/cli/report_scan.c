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

static unsigned bucket_of(uint64_t v)
{
	if (v < 128)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= RS_SUB_BITS */
	unsigned sub = (unsigned)(v >> (e - RS_SUB_BITS)) & 127u;
	return 128u + (e - RS_SUB_BITS) * 128u + sub;
}

/* The middle of a bucket's range (its only value below 128). */
static double bucket_value(unsigned i)
{
	if (i < 128)
		return i;
	unsigned e = (i - 128) / 128 + RS_SUB_BITS, sub = (i - 128) % 128;
	double lo = (double)((uint64_t)(128 + sub) << (e - RS_SUB_BITS));
	double width = (double)((uint64_t)1 << (e - RS_SUB_BITS));
	return lo + (width - 1) / 2;
}

static int hist_add(struct rs_hist *h, uint64_t v)
{
	if (!h->b && !(h->b = calloc(RS_BUCKETS, sizeof *h->b)))
		return -1;
	h->b[bucket_of(v)]++;
	h->n++;
	if (v > h->max)
		h->max = v;
	return 0;
}

double rs_quantile(const struct rs_hist *h, double p)
{
	if (!h->n || !h->b)
		return -1;
	uint64_t k = (uint64_t)(p * (double)(h->n - 1)), seen = 0;
	for (unsigned i = 0; i < RS_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > k) {
			double v = bucket_value(i);
			return v < (double)h->max ? v : (double)h->max;
		}
	}
	return -1;
}

static struct rs_hist *loc_hist(struct report_scan *s, int64_t loc)
{
	uint64_t i;
	if (ss_hmap_get(&s->loc_index, (uint64_t)loc, 0, &i))
		return &s->locs[i].h;
	if (s->n_locs >= RS_MAX_LOCATIONS && loc != RS_OTHER_LOCATIONS)
		return loc_hist(s, RS_OTHER_LOCATIONS);
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
		free(s->locs[i].h.b);
	free(s->delays.b);
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

int rs_scan(sqlite3 *db, struct report_scan *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (load_workers(db, s, err, errlen) != 0)
		return -1;
	sqlite3_stmt *p = NULL, *w = NULL, *k = NULL;
	int rc = 0;
	if (sqlite3_prepare_v2(db, "SELECT id, coalesce(location_id, 0), worker_id, dur FROM polls ORDER BY id",
			       -1, &p, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT poll_id, delay FROM wakes WHERE delay IS NOT NULL AND poll_id IS NOT"
				   " NULL ORDER BY rowid", -1, &w, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT worker_id, dur FROM parks", -1, &k, NULL) != SQLITE_OK) {
		rc = fail(db, err, errlen, "report scan");
		goto out;
	}
	/* The next wake to place, and whether wakes come in poll order. */
	bool have_wake = sqlite3_step(w) == SQLITE_ROW, ordered = true;
	int64_t wake_poll = have_wake ? sqlite3_column_int64(w, 0) : 0, last_wake_poll = INT64_MIN;
	while (!rc && sqlite3_step(p) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(p, 0), loc = sqlite3_column_int64(p, 1);
		int64_t dur = sqlite3_column_int64(p, 3);
		uint64_t d = dur > 0 ? (uint64_t)dur : 0;
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
			have_wake = sqlite3_step(w) == SQLITE_ROW;
			wake_poll = have_wake ? sqlite3_column_int64(w, 0) : 0;
		}
	}
	/* A wake left over with a poll id below the last one seen is out of order
	 * too; one above every poll's id has no poll and does not count. */
	if (ordered && have_wake && wake_poll < last_wake_poll)
		ordered = false;
	if (!rc && !ordered)
		rc = delays_by_join(db, s, err, errlen);
	while (!rc && sqlite3_step(k) == SQLITE_ROW) {
		struct rs_worker *wk = (struct rs_worker *)rs_worker(s, sqlite3_column_int64(k, 0));
		int64_t dur = sqlite3_column_int64(k, 1);
		if (wk && dur > 0)
			wk->parked += (uint64_t)dur;
	}
out:
	sqlite3_finalize(p);
	sqlite3_finalize(w);
	sqlite3_finalize(k);
	return rc;
}

void rs_free(struct report_scan *s)
{
	for (size_t i = 0; i < s->n_locs; i++)
		free(s->locs[i].h.b);
	free(s->locs);
	ss_hmap_free(&s->loc_index);
	free(s->delays.b);
	free(s->workers);
	memset(s, 0, sizeof *s);
}
