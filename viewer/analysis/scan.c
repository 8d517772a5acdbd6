/*
 * scan.c - see scan.h.
 *
 * Wakes are matched to their poll's location by walking polls and wakes side
 * by side in rowid order: the importer stores wakes in the order of the polls
 * they led to (schema/stallscope.sql), so no per-wake lookup is needed. A
 * database where that order does not hold is detected on the way and read
 * through a join instead.
 */
#include "scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_queries.h"
#include "thresholds.h"

static struct ss_scan_location *loc_of(struct ss_scan *s, int64_t loc)
{
	uint64_t i;
	if (ss_hmap_get(&s->loc_index, (uint64_t)loc, 0, &i))
		return &s->locs[i];
	if (s->n_locs == s->cap_locs) {
		size_t nc = s->cap_locs ? s->cap_locs * 2 : 32;
		struct ss_scan_location *l = realloc(s->locs, nc * sizeof *l);
		if (!l)
			return NULL;
		s->locs = l;
		s->cap_locs = nc;
	}
	if (ss_hmap_put(&s->loc_index, (uint64_t)loc, 0, s->n_locs) != 0)
		return NULL;
	s->locs[s->n_locs] = (struct ss_scan_location){ .id = loc };
	return &s->locs[s->n_locs++];
}

static int add_delay(struct ss_scan *s, int64_t loc, int64_t delay, int64_t wake_ts, int64_t poll_id)
{
	uint64_t v = delay > 0 ? (uint64_t)delay : 0;
	struct ss_scan_location *l = loc_of(s, loc);
	if (!l)
		return -1;
	bool worst = l->h.n == 0 || v > l->h.max;
	if (ss_hist_add(&l->h, v) != 0 || ss_hist_add(&s->delays, v) != 0)
		return -1;
	if (worst) {
		l->worst_wake_ts = wake_ts;
		l->worst_poll_id = poll_id;
	}
	if (v > s->max_delay)
		s->max_delay = v;
	return 0;
}

static int by_id(const void *a, const void *b)
{
	int64_t x = ((const struct ss_scan_worker *)a)->id, y = ((const struct ss_scan_worker *)b)->id;
	return x < y ? -1 : x > y;
}

const struct ss_scan_worker *ss_scan_worker(const struct ss_scan *s, int64_t id)
{
	struct ss_scan_worker key = { .id = id };
	return s->n_workers ? bsearch(&key, s->workers, s->n_workers, sizeof key, by_id) : NULL;
}

static int fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
	return -1;
}

static sqlite3_stmt *prep(sqlite3 *db, enum ss_read_query q, const struct ss_scope *scope)
{
	sqlite3_stmt *st = ss_read_prepare(db, q);
	if (st)
		ss_scope_bind(st, scope);
	return st;
}

/* The part of [ts, ts + dur) inside the window. */
static uint64_t clipped(const struct ss_scope *sc, int64_t ts, int64_t dur)
{
	if (dur <= 0)
		return 0;
	int64_t end = ts > INT64_MAX - dur ? INT64_MAX : ts + dur;
	int64_t a = ts > sc->from ? ts : sc->from, b = end < sc->to ? end : sc->to;
	return b > a ? (uint64_t)b - (uint64_t)a : 0;
}

static int load_workers(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, char *err, size_t errlen)
{
	sqlite3_stmt *st = prep(db, SS_Q_SCAN_WORKERS, scope);
	if (!st)
		return fail(db, err, errlen, "workers");
	size_t cap = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (s->n_workers == cap) {
			cap = cap ? cap * 2 : 64;
			struct ss_scan_worker *w = realloc(s->workers, cap * sizeof *w);
			if (!w) {
				sqlite3_finalize(st);
				return fail(NULL, err, errlen, "workers");
			}
			s->workers = w;
		}
		s->workers[s->n_workers++] = (struct ss_scan_worker){
			.id = sqlite3_column_int64(st, 0),
			.recording_id = sqlite3_column_int64(st, 1),
			.thread_id = sqlite3_column_int64(st, 2),
			.parks_unswitched = sqlite3_column_int(st, 3) != 0,
		};
	}
	int rc = sqlite3_finalize(st);
	if (rc != SQLITE_OK)
		return fail(db, err, errlen, "workers");
	/* Ids came sorted; a hostile database may repeat one, which bsearch
	 * tolerates (it finds one of them). */
	if (s->n_workers)
		qsort(s->workers, s->n_workers, sizeof *s->workers, by_id);
	return 0;
}

/* The worker of a thread: a few workers, so a linear search. */
static struct ss_scan_worker *worker_of_thread(struct ss_scan *s, struct ss_hmap *by_thread, int64_t thread)
{
	uint64_t v;
	return ss_hmap_get(by_thread, (uint64_t)thread, 0, &v) ? &s->workers[v] : NULL;
}

static int scan_cpu(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, char *err, size_t errlen)
{
	struct ss_hmap by_thread = { 0 };
	for (size_t i = 0; i < s->n_workers; i++)
		if (ss_hmap_put(&by_thread, (uint64_t)s->workers[i].thread_id, 0, i) != 0) {
			ss_hmap_free(&by_thread);
			return fail(NULL, err, errlen, "cpu intervals");
		}
	sqlite3_stmt *st = prep(db, SS_Q_SCAN_CPU, scope);
	if (!st) {
		ss_hmap_free(&by_thread);
		return fail(db, err, errlen, "cpu intervals");
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct ss_scan_worker *w = worker_of_thread(s, &by_thread, sqlite3_column_int64(st, 0));
		if (!w)
			continue;
		w->has_cpu = true;
		uint64_t d = clipped(scope, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
		const char *state = (const char *)sqlite3_column_text(st, 1);
		if (!state)
			continue;
		if (!strcmp(state, "on-cpu"))
			w->on_cpu += d;
		else if (!strcmp(state, "blocked"))
			w->blocked += d;
		else if (!strcmp(state, "preempted")) {
			w->preempted += d;
			w->preempted_n++;
		}
	}
	int rc = sqlite3_finalize(st);
	ss_hmap_free(&by_thread);
	return rc == SQLITE_OK ? 0 : fail(db, err, errlen, "cpu intervals");
}

/* The wakes that led to a poll, with the poll's location, through a join: for
 * databases whose wakes are not in poll order. */
static int delays_by_join(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, char *err,
			  size_t errlen)
{
	for (size_t i = 0; i < s->n_locs; i++)
		free(s->locs[i].h.v);
	free(s->delays.v);
	s->n_locs = 0;
	ss_hmap_clear(&s->loc_index);
	memset(&s->delays, 0, sizeof s->delays);
	s->max_delay = 0;
	sqlite3_stmt *st = prep(db, SS_Q_SCAN_DELAYS_JOIN, scope);
	if (!st)
		return fail(db, err, errlen, "wakes");
	int rc = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = add_delay(s, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
	int frc = sqlite3_finalize(st);
	if (rc)
		return fail(NULL, err, errlen, "wakes");
	return frc == SQLITE_OK ? 0 : fail(db, err, errlen, "wakes");
}

/* A task alive at the end: its last poll and its last wake that led to none. */
struct live_task {
	int64_t id;
	uint64_t last_poll_ts, pending_wake_ts;
	bool polled, running, woken;
};

/* The first of the bucket times at or after t (SS_SCAN_LIVE_BUCKETS + 1 when
 * none is). */
static int first_at_or_after(const int64_t *at, int64_t t)
{
	int a = 0, b = SS_SCAN_LIVE_BUCKETS + 1;
	while (a < b) {
		int m = (a + b) / 2;
		if (at[m] >= t)
			b = m;
		else
			a = m + 1;
	}
	return a;
}

/* Live tasks over time, and which are alive at the end of the window. */
static int scan_tasks(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, struct ss_hmap *map,
		      struct live_task **out, size_t *n, char *err, size_t errlen)
{
	int64_t lo = scope->from > scope->origin ? scope->from : scope->origin;
	int64_t hi = scope->to < scope->end ? scope->to : scope->end;
	if (hi < lo)
		hi = lo;
	/* The bucket times, lo to hi; unsigned, as any two int64 values of a
	 * hostile file are apart by more than int64 can hold. */
	uint64_t span = (uint64_t)hi - (uint64_t)lo, ustep = span / SS_SCAN_LIVE_BUCKETS;
	int64_t at[SS_SCAN_LIVE_BUCKETS + 1];
	for (int i = 0; i < SS_SCAN_LIVE_BUCKETS; i++)
		at[i] = (int64_t)((uint64_t)lo + ustep * (uint64_t)i);
	at[SS_SCAN_LIVE_BUCKETS] = hi;
	memcpy(s->live_at, at, sizeof at);
	int64_t diff[SS_SCAN_LIVE_BUCKETS + 2] = { 0 };
	/* The tasks' recordings and locations only when a queue needs them. */
	bool spawns = s->queues_wanting_spawns > 0;
	sqlite3_stmt *st = prep(db, spawns ? SS_Q_SCAN_TASK_SPAWNS : SS_Q_SCAN_TASKS, scope);
	size_t cap = 0;
	if (!st)
		return fail(db, err, errlen, "tasks");
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		bool has_spawn = sqlite3_column_type(st, 1) != SQLITE_NULL;
		bool has_end = sqlite3_column_type(st, 2) != SQLITE_NULL;
		int64_t spawn = sqlite3_column_int64(st, 1), end = sqlite3_column_int64(st, 2);
		/* Every task of the scope's recordings is read once, for the
		 * summary's counts and the queues' spawn locations too. */
		if (has_spawn && spawn >= scope->from && spawn < scope->to)
			s->spawned++;
		if (has_end && end >= scope->from && end < scope->to)
			s->finished++;
		if (has_spawn && spawns && sqlite3_column_type(st, 4) != SQLITE_NULL &&
		    ss_scan_queue_spawn(s, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4), spawn) != 0) {
			sqlite3_finalize(st);
			return fail(NULL, err, errlen, "tasks");
		}
		/* Alive some time in the window. */
		if ((has_spawn && spawn >= scope->to) || (has_end && end < scope->from))
			continue;
		s->tasks_seen++;
		/* Alive at the bucket times t with spawn <= t < end: from the first
		 * at or after spawn to the first at or after end. */
		int i0 = has_spawn ? first_at_or_after(at, spawn) : 0;
		int i1 = has_end ? first_at_or_after(at, end) : SS_SCAN_LIVE_BUCKETS + 1;
		if (i0 < i1) {
			diff[i0]++;
			diff[i1]--;
		}
		bool alive_at_end = (!has_spawn || spawn <= hi) && (!has_end || end > hi);
		if (!alive_at_end)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			struct live_task *nv = realloc(*out, cap * sizeof *nv);
			if (!nv) {
				sqlite3_finalize(st);
				return fail(NULL, err, errlen, "tasks");
			}
			*out = nv;
		}
		(*out)[*n] = (struct live_task){ .id = id };
		if (ss_hmap_put(map, (uint64_t)id, 0, *n) != 0) {
			sqlite3_finalize(st);
			return fail(NULL, err, errlen, "tasks");
		}
		(*n)++;
	}
	if (sqlite3_finalize(st) != SQLITE_OK)
		return fail(db, err, errlen, "tasks");
	ss_scan_queue_spawns_done(s);
	int64_t run = 0;
	for (int i = 0; i <= SS_SCAN_LIVE_BUCKETS; i++) {
		run += diff[i];
		s->live[i] = run;
	}
	return 0;
}

int64_t ss_scan_live_held(const int64_t *live, int i)
{
	int lo = i > SS_SCAN_LIVE_HOLD ? i - SS_SCAN_LIVE_HOLD : 0;
	int hi = i + SS_SCAN_LIVE_HOLD < SS_SCAN_LIVE_BUCKETS ? i + SS_SCAN_LIVE_HOLD : SS_SCAN_LIVE_BUCKETS;
	int64_t v[2 * SS_SCAN_LIVE_HOLD + 1];
	int n = 0;
	for (int j = lo; j <= hi; j++) {
		int k = n++;
		for (; k > 0 && v[k - 1] > live[j]; k--)
			v[k] = v[k - 1];
		v[k] = live[j];
	}
	/* A median of fewer buckets would follow a backlog filling most of them. */
	return n == 2 * SS_SCAN_LIVE_HOLD + 1 ? v[SS_SCAN_LIVE_HOLD] : v[0];
}

static int by_dur_desc(const void *a, const void *b)
{
	const struct ss_scan_poll *x = a, *y = b;
	if (x->dur != y->dur)
		return x->dur < y->dur ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Whether keep_top would keep p (by_dur_desc reads only its dur and id). */
static bool top_candidate(const struct ss_scan *s, const struct ss_scan_poll *p)
{
	return s->want_top && (s->n_top < s->want_top || by_dur_desc(p, &s->top[s->n_top - 1]) < 0);
}

/* Keeps the want_top longest polls, longest first (ties: lower id first). */
static void keep_top(struct ss_scan *s, const struct ss_scan_poll *p)
{
	if (!top_candidate(s, p))
		return;
	size_t i = s->n_top < s->want_top ? s->n_top++ : s->n_top - 1;
	while (i > 0 && by_dur_desc(p, &s->top[i - 1]) < 0) {
		s->top[i] = s->top[i - 1];
		i--;
	}
	s->top[i] = *p;
}

static int keep_long(struct ss_scan *s, const struct ss_scan_poll *p)
{
	s->long_total++;
	if (s->n_long == s->cap_long) {
		/* Past the cap: keep the longest half and go on. */
		if (s->cap_long >= 2 * SS_SCAN_MAX_LONG) {
			qsort(s->long_polls, s->n_long, sizeof *s->long_polls, by_dur_desc);
			s->n_long = SS_SCAN_MAX_LONG;
		} else {
			size_t nc = s->cap_long ? s->cap_long * 2 : 256;
			struct ss_scan_poll *n = realloc(s->long_polls, nc * sizeof *n);
			if (!n)
				return -1;
			s->long_polls = n;
			s->cap_long = nc;
		}
	}
	s->long_polls[s->n_long++] = *p;
	return 0;
}

int ss_scan_run(sqlite3 *db, const struct ss_scope *scope, size_t top, int64_t long_min_ns, struct ss_scan *s,
		char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->long_min_ns = long_min_ns;
	s->want_top = top;
	if (top && !(s->top = calloc(top, sizeof *s->top)))
		return fail(NULL, err, errlen, "polls");
	if (load_workers(db, scope, s, err, errlen) != 0 || scan_cpu(db, scope, s, err, errlen) != 0 ||
	    ss_scan_queues(db, scope, s, err, errlen) != 0)
		return -1;
	sqlite3_stmt *p = NULL, *w = NULL, *k = NULL;
	struct ss_hmap live_index = { 0 };
	struct live_task *live = NULL;
	size_t n_live = 0;
	uint64_t v;
	int rc = scan_tasks(db, scope, s, &live_index, &live, &n_live, err, errlen);
	if (rc)
		goto out;
	p = prep(db, SS_Q_SCAN_POLLS, scope);
	w = prep(db, SS_Q_SCAN_WAKES, scope);
	k = prep(db, SS_Q_SCAN_PARKS, scope);
	if (!p || !w || !k) {
		rc = fail(db, err, errlen, "report scan");
		goto out;
	}
	const struct ss_threshold *lp = &ss_thresholds[SS_TH_LONG_POLL];
	const double levels[3] = { lp->info * 1e6, lp->warning * 1e6, lp->critical * 1e6 };
	int sr = SQLITE_DONE, wr = SQLITE_DONE;
	/* The next wake to place, and whether wakes come in poll order. Wakes
	 * that led to no poll are looked at only for the live tasks. */
	bool have_wake, ordered = true;
	int64_t wake_poll = 0, last_wake_poll = INT64_MIN;
#define NEXT_WAKE()                                                                             \
	for (;;) {                                                                              \
		have_wake = (wr = sqlite3_step(w)) == SQLITE_ROW;                               \
		if (!have_wake)                                                                 \
			break;                                                                  \
		if (sqlite3_column_type(w, 3) == SQLITE_NULL ||                                 \
		    !ss_scope_holds(scope, sqlite3_column_int64(w, 3)))                         \
			continue;                                                               \
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
	while (!rc && (sr = sqlite3_step(p)) == SQLITE_ROW) {
		/* The columns every poll needs; the others are read only for the
		 * polls that need them (most do not), as a column read costs as
		 * much as the row's share of the scan. */
		struct ss_scan_poll poll = {
			.id = sqlite3_column_int64(p, 0),
			.worker_id = sqlite3_column_int64(p, 2),
			.dur = sqlite3_column_int64(p, 3),
			.ts = sqlite3_column_int64(p, 5),
		};
		if (sqlite3_column_type(p, 3) == SQLITE_NULL || sqlite3_column_type(p, 5) == SQLITE_NULL ||
		    !ss_scope_overlaps(scope, poll.ts, poll.dur))
			continue;
		struct ss_scan_worker *wk = (struct ss_scan_worker *)ss_scan_worker(s, poll.worker_id);
		if (!wk)
			continue; /* another recording's */
		bool full = false;
#define FULL_POLL()                                                            \
	if (!full) {                                                           \
		poll.location_id = sqlite3_column_int64(p, 1);                 \
		poll.task_id = sqlite3_column_int64(p, 4);                     \
		poll.incomplete = sqlite3_column_int64(p, 6) != 0;             \
		full = true;                                                   \
	}
		uint64_t d = poll.dur > 0 ? (uint64_t)poll.dur : 0;
		if (n_live) {
			FULL_POLL();
			if (ss_hmap_get(&live_index, (uint64_t)poll.task_id, 0, &v)) {
				uint64_t pts = (uint64_t)poll.ts;
				if (!live[v].polled || pts >= live[v].last_poll_ts) {
					live[v].last_poll_ts = pts;
					live[v].running = poll.incomplete;
				}
				live[v].polled = true;
			}
		}
		wk->polls++;
		wk->busy += clipped(scope, poll.ts, poll.dur);
		if (d > wk->longest)
			wk->longest = d;
		s->polls++;
		for (int i = 0; i < 3; i++)
			s->over[i] += levels[i] > 0 && (double)d > levels[i];
		bool is_long = poll.dur > long_min_ns;
		if (is_long || top_candidate(s, &poll)) {
			FULL_POLL();
			keep_top(s, &poll);
		}
		if (is_long && keep_long(s, &poll) != 0)
			rc = fail(NULL, err, errlen, "polls");
		/* Wakes of polls that are gone (ids below this one) are skipped. */
		while (ordered && have_wake && wake_poll <= poll.id) {
			if (wake_poll < last_wake_poll) {
				ordered = false;
				break;
			}
			last_wake_poll = wake_poll;
			if (wake_poll == poll.id) {
				FULL_POLL();
				if (add_delay(s, poll.location_id, sqlite3_column_int64(w, 1), sqlite3_column_int64(w, 3),
					      poll.id) != 0)
					rc = fail(NULL, err, errlen, "wakes");
			}
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
#undef FULL_POLL
	if (!rc && ((sr != SQLITE_DONE && sr != SQLITE_ROW) || (wr != SQLITE_DONE && wr != SQLITE_ROW)))
		rc = fail(db, err, errlen, "polls and wakes");
	s->alive_at_end = n_live;
	if (!rc && n_live && !(s->idle_tasks = calloc(n_live, sizeof *s->idle_tasks)))
		rc = fail(NULL, err, errlen, "tasks");
	for (size_t i = 0; !rc && i < n_live; i++)
		if (live[i].polled && !live[i].running &&
		    !(live[i].woken && live[i].pending_wake_ts >= live[i].last_poll_ts))
			s->idle_tasks[s->idle_at_end++] = live[i].id;
	if (!rc && !ordered)
		rc = delays_by_join(db, scope, s, err, errlen);
	while (!rc && (sr = sqlite3_step(k)) == SQLITE_ROW) {
		int64_t ts = sqlite3_column_int64(k, 1), dur = sqlite3_column_int64(k, 2);
		if (sqlite3_column_type(k, 1) == SQLITE_NULL || sqlite3_column_type(k, 2) == SQLITE_NULL ||
		    !ss_scope_overlaps(scope, ts, dur))
			continue;
		struct ss_scan_worker *wk = (struct ss_scan_worker *)ss_scan_worker(s, sqlite3_column_int64(k, 0));
		if (wk)
			wk->parked += clipped(scope, ts, dur);
	}
	/* A statement that stopped early (a damaged file, the time budget) is an
	 * error, not the end of the data. */
	if (!rc && sr != SQLITE_DONE)
		rc = fail(db, err, errlen, "parks");
	if (!rc && s->n_long)
		qsort(s->long_polls, s->n_long, sizeof *s->long_polls, by_dur_desc);
	if (s->n_long > SS_SCAN_MAX_LONG)
		s->n_long = SS_SCAN_MAX_LONG;
out:
	ss_hmap_free(&live_index);
	free(live);
	sqlite3_finalize(p);
	sqlite3_finalize(w);
	sqlite3_finalize(k);
	return rc;
}

void ss_scan_free(struct ss_scan *s)
{
	for (size_t i = 0; i < s->n_locs; i++)
		free(s->locs[i].h.v);
	free(s->locs);
	ss_hmap_free(&s->loc_index);
	free(s->delays.v);
	free(s->workers);
	free(s->long_polls);
	free(s->top);
	free(s->idle_tasks);
	free(s->queues);
	ss_hmap_free(&s->queue_spawns);
	memset(s, 0, sizeof *s);
}
