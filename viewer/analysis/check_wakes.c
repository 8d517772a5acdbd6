/*
 * check_wakes.c - sched-delay: how long woken tasks waited for a poll, per
 * spawn location (p50, p99, max over the scope's wakes), graded by the p99,
 * with what the worker that finally polled the task ran during the worst wait.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "task 12 (culprit_spin_long_poll) for 38.0 ms" for the poll that covered
 * most of [from, to) on the worker, or "" when none did. Fills *ran. */
static void ran_instead(struct ss_analysis *a, int64_t worker_id, int64_t from, int64_t to, char *buf,
			size_t len, struct ss_poll_detail *ran, bool *found)
{
	*found = false;
	buf[0] = 0;
	sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_WORKER_POLLS_IN);
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, worker_id);
	sqlite3_bind_int64(st, 2, from);
	sqlite3_bind_int64(st, 3, to);
	int64_t best = 0, best_overlap = 0, covered = 0;
	int n = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0), ts = sqlite3_column_int64(st, 1);
		int64_t dur = sqlite3_column_int64(st, 2);
		int64_t lo = ts > from ? ts : from, hi = dur > 0 && ts <= INT64_MAX - dur ? ts + dur : ts;
		if (hi > to)
			hi = to;
		int64_t ov = hi > lo ? hi - lo : 0;
		covered += ov;
		n++;
		if (ov > best_overlap) {
			best_overlap = ov;
			best = id;
		}
	}
	ss_analysis_release(a, st);
	if (!best || a->failed)
		return;
	if (ss_poll_examine(a, best, ran) != 0)
		return;
	*found = true;
	char d[32], c[32];
	ss_fmt_dur(d, sizeof d, (double)best_overlap);
	ss_fmt_dur(c, sizeof c, (double)covered);
	snprintf(buf, len, "%s ran task %lld%s%s%s for %s of it (%d poll%s, %s in all)", ran->worker,
		 (long long)ran->task, ran->culprit[0] ? " in " : "", ran->culprit,
		 ran->culprit[0] ? "()" : "", d, n, n == 1 ? "" : "s", c);
}

struct loc_rank {
	size_t i;
	double p99;
};

static int by_p99(const void *x, const void *y)
{
	const struct loc_rank *a = x, *b = y;
	return a->p99 < b->p99 ? 1 : a->p99 > b->p99 ? -1 : (a->i > b->i) - (a->i < b->i);
}

void ss_check_sched_delay(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_SCHED_DELAY];
	struct ss_scan *sc = &a->scan;
	struct loc_rank *r = calloc(sc->n_locs ? sc->n_locs : 1, sizeof *r);
	if (!r) {
		ss_analysis_fail(a, "wakes");
		return;
	}
	size_t nr = 0;
	for (size_t i = 0; i < sc->n_locs; i++)
		if (sc->locs[i].h.n >= 5)
			r[nr++] = (struct loc_rank){ i, ss_hist_quantile(&sc->locs[i].h, 99) };
	if (nr)
		qsort(r, nr, sizeof *r, by_p99);
	size_t infos = 0;
	for (size_t k = 0; k < nr && !a->failed; k++) {
		struct ss_scan_location *l = &sc->locs[r[k].i];
		int sev = ss_grade(t, r[k].p99 / 1e6);
		if (sev < 0 || (sev == SS_SEV_INFO && infos++ >= a->top))
			continue;
		double p50 = ss_hist_quantile(&l->h, 50);
		char *where = ss_location_text(a, l->id);
		struct ss_poll_detail polled, ran;
		char instead[512] = "", p50s[32], p99s[32], maxs[32], msg[2048];
		bool have_polled = ss_poll_examine(a, l->worst_poll_id, &polled) == 0, have_ran = false;
		if (have_polled)
			ran_instead(a, polled.worker_id, l->worst_wake_ts, polled.ts, instead, sizeof instead, &ran,
				    &have_ran);
		ss_fmt_dur(p50s, sizeof p50s, p50);
		ss_fmt_dur(p99s, sizeof p99s, r[k].p99);
		ss_fmt_dur(maxs, sizeof maxs, (double)l->h.max);
		snprintf(msg, sizeof msg, "tasks spawned at %s waited p99 %s from wake to poll (p50 %s, max %s, "
			 "%llu wakes)%s%s%s", where ? where : "?", p99s, p50s, maxs, (unsigned long long)l->h.n,
			 have_polled ? "; during the longest wait " : "",
			 have_ran ? instead : have_polled ? polled.worker : "",
			 have_polled && !have_ran ? " ran no other poll (the worker was parked, busy outside "
						     "polls or off CPU)" : "");
		struct ss_finding f = { .check = "sched-delay", .severity = (enum ss_severity)sev, .message = msg,
					.ts = l->worst_wake_ts, .dur = (int64_t)l->h.max,
					.value = r[k].p99 / 1e6, .unit = t->unit, .location = where };
		if (have_polled) {
			f.recording_id = polled.recording_id;
			f.worker_id = polled.worker_id;
			f.worker = polled.worker;
			f.task_id = polled.task_id;
		}
		/* The code responsible: what held the worker meanwhile. */
		if (have_ran)
			ss_frames_of(a, ran.callsite, &f, 32);
		char loc_cond[64], rec_cond[96], win[256], sql[1024];
		if (l->id)
			snprintf(loc_cond, sizeof loc_cond, "p.location_id = %lld", (long long)l->id);
		else
			snprintf(loc_cond, sizeof loc_cond, "p.location_id IS NULL");
		if (a->scope.recording_id)
			snprintf(rec_cond, sizeof rec_cond, " AND w.task_id IN (SELECT id FROM tasks WHERE "
				 "recording_id = %lld)", (long long)a->scope.recording_id);
		else
			rec_cond[0] = 0;
		/* As the scan counts them: the wake in the window, its poll overlapping it. */
		char pwin[160];
		ss_scope_sql(&a->scope, "w.ts", NULL, win, sizeof win);
		ss_scope_sql(&a->scope, "p.ts", "p.ts + p.dur", pwin, sizeof pwin);
		strncat(win, pwin, sizeof win - strlen(win) - 1);
		snprintf(sql, sizeof sql, "SELECT w.ts AS wake_ts, w.delay, w.task_id, w.poll_id, p.worker_id "
			 "FROM wakes w JOIN polls p ON p.id = w.poll_id WHERE %s AND w.delay IS NOT NULL%s%s "
			 "ORDER BY w.delay DESC", loc_cond, rec_cond, win);
		f.sql = sql;
		f.count = (int64_t)l->h.n;
		ss_emit(a, &f);
		ss_frames_free(f.frames, f.n_frames);
		free(where);
	}
	free(r);
}
