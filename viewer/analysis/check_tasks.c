/*
 * check_tasks.c - task-leak: live tasks that end the window at their peak,
 * well above the start, with many of them idle (polled, then never woken
 * again): tasks that nothing will ever poll. Where they wait comes from their
 * last task dump (the stack where they returned pending), grouped by its
 * own-code frame.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Idle tasks looked at one by one at most (their dumps), the rest counted. */
#define EXAMINE_TASKS 2000
#define SQL_IDS 1000

struct waits {
	char fn[256];
	int64_t callsite, location_id, n;
};

void ss_check_task_leak(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_TASK_LEAK];
	const struct ss_scan *s = &a->scan;
	/* The peak and the early count are levels the live tasks held, not a
	 * run queue's momentary backlog: on a busy machine a worker kept off its
	 * CPU for a few milliseconds near the end lifted the raw peak over the
	 * leaked tasks by more than the 10% below, and the leak went unreported. */
	int64_t peak = 0, end = s->live[SS_SCAN_LIVE_BUCKETS];
	for (int i = 0; i <= SS_SCAN_LIVE_BUCKETS; i++)
		if (ss_scan_live_held(s->live, i) > peak)
			peak = ss_scan_live_held(s->live, i);
	int64_t early = ss_scan_live_held(s->live, SS_SCAN_LIVE_BUCKETS / 10);
	double idle = (double)s->idle_at_end;
	double ratio = idle / (double)(early > 0 ? early : 1);
	/* At their peak: within 10% of it at the end. */
	bool at_peak = end * 10 >= peak * 9 && end > early;
	int sev = ss_grade(t, ratio);
	if (s->idle_at_end < 10 || !at_peak || sev < 0)
		return;
	struct waits w[16];
	size_t nw = 0;
	size_t look = s->idle_at_end < EXAMINE_TASKS ? s->idle_at_end : EXAMINE_TASKS;
	/* Each idle task's last dump, in one pass over task_dumps (no index on
	 * its task_id). */
	struct ss_hmap want = { 0 };
	struct { int64_t callsite, location_id; } *last = calloc(look ? look : 1, sizeof *last);
	for (size_t i = 0; last && i < look; i++)
		if (ss_hmap_put(&want, (uint64_t)s->idle_tasks[i], 0, i) != 0) {
			free(last);
			last = NULL;
		}
	sqlite3_stmt *st = last ? ss_read_prepare(a->db, SS_Q_TASK_DUMPS) : NULL;
	if (!st) {
		free(last);
		ss_hmap_free(&want);
		ss_analysis_fail(a, "task dumps");
		return;
	}
	uint64_t v;
	while (sqlite3_step(st) == SQLITE_ROW)
		if (ss_hmap_get(&want, (uint64_t)sqlite3_column_int64(st, 0), 0, &v)) {
			last[v].callsite = sqlite3_column_int64(st, 1);
			last[v].location_id = sqlite3_column_int64(st, 2);
		}
	ss_analysis_done(a, st);
	ss_hmap_free(&want);
	for (size_t i = 0; i < look; i++) {
		int64_t cs = last[i].callsite, loc = last[i].location_id;
		const struct ss_stack_frame *of = cs ? ss_callstacks_own_frame(a->stacks, cs, a->frames, SS_STACK_MAX) : NULL;
		const char *fn = of && of->function ? of->function : "";
		size_t j = 0;
		while (j < nw && (strcmp(w[j].fn, fn) || w[j].location_id != loc))
			j++;
		if (j == nw && nw < sizeof w / sizeof w[0]) {
			snprintf(w[nw].fn, sizeof w[nw].fn, "%s", fn);
			w[nw].callsite = cs;
			w[nw].location_id = loc;
			w[nw++].n = 0;
		}
		if (j < nw)
			w[j].n++;
	}
	free(last);
	size_t best = 0;
	for (size_t j = 1; j < nw; j++)
		if (w[j].n > w[best].n)
			best = j;
	char *where = nw && w[best].location_id ? ss_location_text(a, w[best].location_id) : NULL;
	char msg[2048], waits[768] = "";
	if (nw && w[best].fn[0])
		snprintf(waits, sizeof waits, "; %lld of the %zu looked at wait in %s() (their last task dump)%s%s",
			 (long long)w[best].n, look, w[best].fn, where ? ", spawned at " : "", where ? where : "");
	else if (nw && where)
		snprintf(waits, sizeof waits, "; %lld of the %zu looked at were spawned at %s (no task dump says "
			 "where they wait)", (long long)w[best].n, look, where);
	snprintf(msg, sizeof msg, "task leak: %llu tasks are idle at the end (polled, never woken again) against "
		 "%lld alive early on (%.1fx); the live tasks end at their peak (%lld)%s",
		 (unsigned long long)s->idle_at_end, (long long)early, ratio, (long long)peak, waits);
	char *ids = ss_id_list(s->idle_tasks, s->idle_at_end, SQL_IDS);
	size_t len = (ids ? strlen(ids) : 0) + 256;
	char *sql = malloc(len);
	if (sql)
		snprintf(sql, len, "SELECT t.*, (SELECT max(ts) FROM polls p WHERE p.task_id = t.id) AS last_poll_ts "
			 "FROM tasks t WHERE t.id IN (%s) ORDER BY t.id", ids ? ids : "");
	free(ids);
	struct ss_finding f = { .check = "task-leak", .severity = (enum ss_severity)sev, .message = msg,
				.ts = s->live_at[SS_SCAN_LIVE_BUCKETS / 10],
				.dur = (int64_t)((uint64_t)s->live_at[SS_SCAN_LIVE_BUCKETS] -
						 (uint64_t)s->live_at[SS_SCAN_LIVE_BUCKETS / 10]),
				.recording_id = a->scope.recording_id, .location = where, .sql = sql,
				.count = (int64_t)(s->idle_at_end < SQL_IDS ? s->idle_at_end : SQL_IDS),
				.value = ratio, .unit = t->unit };
	if (nw)
		ss_frames_of(a, w[best].callsite, &f, 32);
	ss_emit(a, &f);
	ss_frames_free(f.frames, f.n_frames);
	free(sql);
	free(where);
}
