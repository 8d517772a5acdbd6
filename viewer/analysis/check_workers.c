/*
 * check_workers.c - cpu-starvation, worker-imbalance and queue-buildup: the
 * checks of how the workers of one recording shared the work and the CPUs.
 * One finding per recording at most for each.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The recordings of the scope's workers, ascending; returns how many. */
static size_t recordings_of(const struct ss_scan *s, int64_t *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_workers; i++) {
		size_t j = 0;
		while (j < n && out[j] != s->workers[i].recording_id)
			j++;
		if (j == n && n < max)
			out[n++] = s->workers[i].recording_id;
	}
	return n;
}

/* "example#2" for a worker id. */
static void worker_name(struct ss_analysis *a, int64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "worker %lld", (long long)id);
	for (size_t i = 0; i < a->summary.n_workers; i++)
		if (a->summary.workers[i].id == id) {
			snprintf(buf, len, "%s#%lld", a->summary.workers[i].runtime ? a->summary.workers[i].runtime : "?",
				 (long long)a->summary.workers[i].index);
			return;
		}
}

#define MAX_RECORDINGS 256

void ss_check_cpu_starvation(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_STARVATION];
	const struct ss_scan *s = &a->scan;
	int64_t recs[MAX_RECORDINGS];
	size_t nrec = recordings_of(s, recs, MAX_RECORDINGS);
	for (size_t r = 0; r < nrec && !a->failed; r++) {
		/* Workers over a level, the worst first: the share of the thread's
		 * time (as its CPU intervals cover it) spent runnable, not running. */
		const struct ss_scan_worker *worst = NULL;
		double worst_share = 0;
		size_t over = 0;
		uint64_t intervals = 0;
		char *ids = NULL;
		size_t ids_len = 0;
		for (size_t i = 0; i < s->n_workers; i++) {
			const struct ss_scan_worker *w = &s->workers[i];
			/* A park whose switches were not recorded still is time the
			 * thread did not want a CPU, as a recorded one is blocked. */
			uint64_t known = w->on_cpu + w->blocked + w->preempted +
					 (w->parks_unswitched ? w->parked : 0);
			if (w->recording_id != recs[r] || !w->has_cpu || !known)
				continue;
			double share = 100.0 * (double)w->preempted / (double)known;
			if (ss_grade(t, share) < 0)
				continue;
			over++;
			intervals += w->preempted_n;
			char *n = realloc(ids, ids_len + 24);
			if (!n)
				break;
			ids = n;
			ids_len += (size_t)sprintf(ids + ids_len, "%s%lld", ids_len ? "," : "", (long long)w->id);
			if (!worst || share > worst_share) {
				worst = w;
				worst_share = share;
			}
		}
		if (!worst) {
			free(ids);
			continue;
		}
		char name[96], wt[32], msg[1024], win[256], sql[1024];
		worker_name(a, worst->id, name, sizeof name);
		ss_fmt_dur(wt, sizeof wt, (double)worst->preempted);
		snprintf(msg, sizeof msg, "%zu worker%s spent much of %s time runnable but not running; worst %s: "
			 "%.0f%% of its time (%s) waiting for a CPU: more runnable threads than CPUs, or other "
			 "processes on them", over, over == 1 ? "" : "s", over == 1 ? "its" : "their", name,
			 worst_share, wt);
		ss_scope_sql(&a->scope, "c.ts", "c.ts + c.dur", win, sizeof win);
		snprintf(sql, sizeof sql, "SELECT w.id AS worker_id, c.* FROM cpu_intervals c JOIN workers w ON "
			 "w.thread_id = c.thread_id WHERE w.id IN (%s) AND c.state = 'preempted'%s ORDER BY c.ts",
			 ids ? ids : "", win);
		struct ss_finding f = { .check = "cpu-starvation", .severity = (enum ss_severity)ss_grade(t, worst_share),
					.message = msg, .ts = -1, .dur = (int64_t)worst->preempted,
					.recording_id = recs[r], .worker_id = worst->id, .worker = name, .sql = sql,
					.count = (int64_t)intervals, .value = worst_share, .unit = t->unit };
		ss_emit(a, &f);
		free(ids);
	}
}

void ss_check_imbalance(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_IMBALANCE];
	const struct ss_scan *s = &a->scan;
	int64_t recs[MAX_RECORDINGS];
	size_t nrec = recordings_of(s, recs, MAX_RECORDINGS);
	for (size_t r = 0; r < nrec && !a->failed; r++) {
		const struct ss_scan_worker *most = NULL, *least = NULL;
		size_t with_polls = 0, n = 0;
		for (size_t i = 0; i < s->n_workers; i++) {
			const struct ss_scan_worker *w = &s->workers[i];
			if (w->recording_id != recs[r])
				continue;
			n++;
			with_polls += w->polls > 0;
			if (!most || w->polls > most->polls)
				most = w;
			if (!least || w->polls < least->polls)
				least = w;
		}
		if (n < 2 || !most || most->polls < 100)
			continue;
		double ratio = (double)most->polls / (double)(least->polls ? least->polls : 1);
		int sev = ss_grade(t, ratio);
		if (sev < 0)
			continue;
		char hi[96], lo[96], msg[1024], win[256], sql[1024];
		worker_name(a, most->id, hi, sizeof hi);
		worker_name(a, least->id, lo, sizeof lo);
		snprintf(msg, sizeof msg, "worker imbalance: %s polled %llu times, %s %llu (%.1fx): the work is not "
			 "spread over the workers (no stealing, affinity, or one hot task)", hi,
			 (unsigned long long)most->polls, lo, (unsigned long long)least->polls, ratio);
		ss_scope_sql(&a->scope, "p.ts", "p.ts + p.dur", win, sizeof win);
		snprintf(sql, sizeof sql, "SELECT p.worker_id, count(*) AS polls, sum(p.dur) AS busy_ns FROM polls p "
			 "JOIN workers w ON w.id = p.worker_id WHERE w.recording_id = %lld%s GROUP BY p.worker_id "
			 "ORDER BY polls DESC", (long long)recs[r], win);
		struct ss_finding f = { .check = "worker-imbalance", .severity = (enum ss_severity)sev, .message = msg,
					.ts = -1, .dur = -1, .recording_id = recs[r], .worker_id = most->id,
					.worker = hi, .sql = sql, .count = (int64_t)with_polls, .value = ratio,
					.unit = t->unit };
		ss_emit(a, &f);
	}
}

void ss_check_queue_buildup(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_GLOBAL_QUEUE];
	const struct ss_scan *s = &a->scan;
	for (size_t i = 0; i < s->n_queues && i < MAX_RECORDINGS && !a->failed; i++) {
		const struct ss_scan_queue *q = &s->queues[i];
		int sev = ss_grade(t, (double)q->peak);
		if (sev < 0)
			continue;
		/* The build-up starts when the queue first passes the lowest level
		 * in use (the scan found when); who fed it: the spawn location with
		 * the most spawns from then to the peak. */
		double level = t->info != SS_TH_OFF ? t->info : t->warning != SS_TH_OFF ? t->warning : t->critical;
		int64_t lv = (int64_t)level, first = q->first_over_ts, rows = (int64_t)q->rows_over;
		int64_t loc = q->spawn_location, spawns = q->spawns;
		sqlite3_stmt *st = NULL;
		char *where = loc ? ss_location_text(a, loc) : NULL;
		char d[32], msg[1024], win[256], sql[1024];
		ss_fmt_dur(d, sizeof d, (double)(q->peak_ts - first));
		char fed[640] = "";
		if (where)
			snprintf(fed, sizeof fed, "; most of it spawned at %s (%lld spawns meanwhile)", where,
				 (long long)spawns);
		snprintf(msg, sizeof msg, "global run queue reached %lld tasks (over %g for %s before that peak): "
			 "work arrives faster than the workers serve it%s", (long long)q->peak, level, d, fed);
		struct ss_frame_text frame = { 0 };
		struct ss_finding f = { .check = "queue-buildup", .severity = (enum ss_severity)sev, .message = msg,
					.ts = first, .dur = q->peak_ts - first, .recording_id = q->recording_id,
					.location = where, .count = rows, .value = (double)q->peak,
					.unit = t->unit };
		/* The spawn site is the code responsible. */
		if (loc) {
			st = ss_read_prepare(a->db, SS_Q_SUM_LOCATION);
			if (st) {
				sqlite3_bind_int64(st, 1, loc);
				if (sqlite3_step(st) == SQLITE_ROW) {
					frame.function = (char *)sqlite3_column_text(st, 0);
					frame.file = (char *)sqlite3_column_text(st, 1);
					frame.line = sqlite3_column_int64(st, 2);
					f.frames = &frame;
					f.n_frames = 1;
				}
			}
		}
		ss_scope_sql(&a->scope, "q.ts", NULL, win, sizeof win);
		snprintf(sql, sizeof sql, "SELECT q.* FROM queue_depths q JOIN threads t ON t.id = q.thread_id "
			 "WHERE t.recording_id = %lld AND q.global > %lld%s ORDER BY q.ts", (long long)q->recording_id,
			 (long long)lv, win);
		f.sql = sql;
		ss_emit(a, &f);
		if (loc)
			ss_analysis_done(a, st);
		free(where);
	}
}
