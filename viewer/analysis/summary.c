/*
 * summary.c - the figures of a trace people read before the findings:
 * recordings, workers, the longest polls, stalls, wake-to-poll delays,
 * queues, tasks and loss, for the analysis's scope.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

/* Grows *v (of *n elements of size sz) by one zeroed element; NULL when out
 * of memory. */
static void *grow(void *pv, size_t *n, size_t sz)
{
	void **v = pv;
	if ((*n & (*n - 1)) == 0) {
		size_t cap = *n ? *n * 2 : 8;
		void *nv = realloc(*v, cap * sz);
		if (!nv)
			return NULL;
		*v = nv;
	}
	void *e = (char *)*v + *n * sz;
	memset(e, 0, sz);
	(*n)++;
	return e;
}

static void recordings(struct ss_analysis *a, struct ss_summary *s)
{
	sqlite3_stmt *st = ss_analysis_query(a, SS_Q_SUM_RECORDINGS);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct ss_sum_recording *r = grow(&s->recordings, &s->n_recordings, sizeof *r);
		if (!r)
			break;
		r->id = sqlite3_column_int64(st, 0);
		r->executable = col_dup(st, 1);
		r->host = col_dup(st, 2);
		r->pid = sqlite3_column_int64(st, 3);
		r->has_anchor = sqlite3_column_type(st, 4) != SQLITE_NULL;
		/* In doubles first: a hostile file may hold any 64-bit values. */
		double off = sqlite3_column_double(st, 4);
		r->wall_offset = off > -9e18 && off < 9e18 ? (int64_t)off : 0;
		r->first_ts = sqlite3_column_int64(st, 5);
		r->last_ts = sqlite3_column_int64(st, 6);
		r->segments = sqlite3_column_int64(st, 7);
		r->sealed = sqlite3_column_int64(st, 8);
		r->damaged = sqlite3_column_int64(st, 9);
		r->events = sqlite3_column_int64(st, 10);
		r->sampler = col_dup(st, 11);
		r->arch = col_dup(st, 12);
	}
	ss_analysis_done(a, st);
	sqlite3_stmt *all = ss_read_prepare(a->db, SS_Q_SUM_COUNT_RECORDINGS);
	s->several_recordings = all && sqlite3_step(all) == SQLITE_ROW && sqlite3_column_int64(all, 0) > 1;
	ss_analysis_done(a, all);
}

static void workers(struct ss_analysis *a, struct ss_summary *s)
{
	sqlite3_stmt *st = ss_analysis_query(a, SS_Q_SUM_WORKERS);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct ss_sum_worker *w = grow(&s->workers, &s->n_workers, sizeof *w);
		if (!w)
			break;
		w->id = sqlite3_column_int64(st, 0);
		w->runtime = col_dup(st, 1);
		w->index = sqlite3_column_int64(st, 2);
		w->thread = col_dup(st, 3);
		w->recording_id = sqlite3_column_int64(st, 4);
		w->scan = ss_scan_worker(&a->scan, w->id);
	}
	ss_analysis_done(a, st);
}

static void longest(struct ss_analysis *a, struct ss_summary *s)
{
	size_t n = a->scan.n_top;
	if (!n)
		return;
	s->longest = calloc(n, sizeof *s->longest);
	s->longest_stacks = calloc(n, sizeof *s->longest_stacks);
	if (!s->longest || !s->longest_stacks)
		return;
	for (size_t i = 0; i < n && !a->failed; i++) {
		struct ss_poll_detail *d = &s->longest[s->n_longest];
		/* The long ones were examined already. */
		size_t j = 0;
		while (j < a->n_examined && a->examined[j].id != a->scan.top[i].id)
			j++;
		if (j < a->n_examined)
			*d = a->examined[j];
		else if (ss_poll_examine(a, a->scan.top[i].id, d) != 0)
			continue;
		if (d->callsite) {
			size_t nf = ss_callstacks_get(a->stacks, d->callsite, a->frames, 8);
			char buf[1024];
			ss_callstacks_text(a->frames, nf, 8, buf, sizeof buf);
			s->longest_stacks[s->n_longest] = buf[0] ? strdup(buf) : NULL;
		}
		s->n_longest++;
	}
}

static void stalls(struct ss_analysis *a, struct ss_summary *s)
{
	sqlite3_stmt *st = ss_analysis_query(a, SS_Q_SUM_STALL_KINDS);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct ss_sum_stall_kind *k = grow(&s->stall_kinds, &s->n_stall_kinds, sizeof *k);
		if (!k)
			break;
		k->kind = col_dup(st, 0);
		k->count = sqlite3_column_int64(st, 1);
		s->stalls += k->count;
	}
	ss_analysis_done(a, st);
	st = ss_analysis_query(a, SS_Q_SUM_STALL_LOCATIONS);
	if (st)
		sqlite3_bind_int64(st, 4, (int64_t)a->top);
	while (st && sqlite3_step(st) == SQLITE_ROW) {
		struct ss_sum_stall_location *l = grow(&s->stall_locations, &s->n_stall_locations, sizeof *l);
		if (!l)
			break;
		l->location = col_dup(st, 0);
		l->count = sqlite3_column_int64(st, 1);
		l->max_dur = sqlite3_column_int64(st, 2);
		l->kinds = col_dup(st, 3);
		int64_t cs = sqlite3_column_int64(st, 4);
		if (cs > 0) {
			size_t nf = ss_callstacks_get(a->stacks, cs, a->frames, 8);
			char buf[1024];
			ss_callstacks_text(a->frames, nf, 8, buf, sizeof buf);
			l->stack = buf[0] ? strdup(buf) : NULL;
		}
	}
	ss_analysis_done(a, st);
}

/* Worst p99 first; ties by location id. */
static int by_p99_desc(const void *x, const void *y)
{
	const struct ss_sum_wake_location *a = x, *b = y;
	if (a->p99 != b->p99)
		return a->p99 < b->p99 ? 1 : -1;
	return a->location_id < b->location_id ? -1 : a->location_id > b->location_id;
}

char *ss_location_text(struct ss_analysis *a, int64_t location_id)
{
	char buf[512];
	snprintf(buf, sizeof buf, "? (?:0)");
	/* Kept prepared (the summary and the findings name many locations);
	 * a database whose locations cannot be read says "? (?:0)" and goes on. */
	sqlite3_stmt **st_p = &a->stmts[SS_Q_SUM_LOCATION], *st = *st_p;
	if (!st)
		st = *st_p = ss_read_prepare(a->db, SS_Q_SUM_LOCATION);
	if (st) {
		sqlite3_bind_int64(st, 1, location_id);
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *fn = (const char *)sqlite3_column_text(st, 0);
			const char *file = (const char *)sqlite3_column_text(st, 1);
			snprintf(buf, sizeof buf, "%s (%s:%lld)", fn ? fn : "?", file ? file : "?",
				 (long long)sqlite3_column_int64(st, 2));
		}
	}
	ss_analysis_release(a, st);
	return strdup(buf);
}

static void wakes(struct ss_analysis *a, struct ss_summary *s)
{
	struct ss_scan *sc = &a->scan;
	s->wake_p50 = ss_hist_quantile(&sc->delays, 50);
	s->wake_p99 = ss_hist_quantile(&sc->delays, 99);
	s->wake_max = sc->delays.n ? (double)sc->max_delay : -1;
	for (size_t i = 0; i < sc->n_locs; i++) {
		struct ss_scan_location *l = &sc->locs[i];
		if (l->h.n < 5)
			continue;
		struct ss_sum_wake_location *w = grow(&s->wake_locations, &s->n_wake_locations, sizeof *w);
		if (!w)
			break;
		w->location_id = l->id;
		w->wakes = l->h.n;
		w->p50 = ss_hist_quantile(&l->h, 50);
		w->p99 = ss_hist_quantile(&l->h, 99);
		w->max = (double)l->h.max;
	}
	if (s->n_wake_locations)
		qsort(s->wake_locations, s->n_wake_locations, sizeof *s->wake_locations, by_p99_desc);
	for (size_t i = 0; i < s->n_wake_locations; i++)
		s->wake_locations[i].location = ss_location_text(a, s->wake_locations[i].location_id);
}

static void counts(struct ss_analysis *a, struct ss_summary *s)
{
	sqlite3_stmt *st = ss_analysis_query(a, SS_Q_SUM_COUNTS);
	if (st && sqlite3_step(st) == SQLITE_ROW) {
		s->lost_events = sqlite3_column_int64(st, 0);
		s->lost_samples = sqlite3_column_int64(st, 1);
		s->task_dumps = sqlite3_column_int64(st, 2);
	}
	ss_analysis_done(a, st);
	s->global_max = a->scan.global_max;
	s->local_max = a->scan.local_max;
	s->has_queues = a->scan.queue_rows > 0;
	s->spawned = a->scan.spawned;
	s->finished = a->scan.finished;
	s->alive_at_end = (int64_t)a->scan.alive_at_end;
	s->idle_at_end = a->scan.idle_at_end;
	/* As task-leak counts it: the level held 10% in. */
	s->alive_early = ss_scan_live_held(a->scan.live, SS_SCAN_LIVE_BUCKETS / 10);
}

int ss_summary_build(struct ss_analysis *a)
{
	struct ss_summary *s = &a->summary;
	recordings(a, s);
	workers(a, s);
	longest(a, s);
	stalls(a, s);
	wakes(a, s);
	counts(a, s);
	return a->failed ? -1 : 0;
}

void ss_summary_free(struct ss_summary *s)
{
	for (size_t i = 0; i < s->n_recordings; i++) {
		free(s->recordings[i].executable);
		free(s->recordings[i].host);
		free(s->recordings[i].sampler);
		free(s->recordings[i].arch);
	}
	free(s->recordings);
	for (size_t i = 0; i < s->n_workers; i++) {
		free(s->workers[i].runtime);
		free(s->workers[i].thread);
	}
	free(s->workers);
	for (size_t i = 0; i < s->n_longest; i++)
		free(s->longest_stacks[i]);
	free(s->longest);
	free(s->longest_stacks);
	for (size_t i = 0; i < s->n_stall_kinds; i++)
		free(s->stall_kinds[i].kind);
	free(s->stall_kinds);
	for (size_t i = 0; i < s->n_stall_locations; i++) {
		free(s->stall_locations[i].location);
		free(s->stall_locations[i].kinds);
		free(s->stall_locations[i].stack);
	}
	free(s->stall_locations);
	for (size_t i = 0; i < s->n_wake_locations; i++)
		free(s->wake_locations[i].location);
	free(s->wake_locations);
	memset(s, 0, sizeof *s);
}
