/*
 * check_polls.c - long-poll and blocking-in-poll: the examined long polls
 * (polls.h) grouped by the code responsible (the own-code frame of the stack
 * that stands for each), then by spawn location; blocked ones also by the
 * system call. Each group is one finding, graded by its worst poll.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ids behind one finding's SQL at most; the message says when a group has more. */
#define SQL_IDS 1000

struct group {
	char culprit[256], syscall[64];
	int64_t location_id;
	size_t n;            /* polls */
	int64_t total, worst_value;
	const struct ss_poll_detail *worst;
	int64_t *ids;        /* the polls, longest first */
	size_t cap;
	int64_t on_cpu, blocked, preempted, dur; /* sums, for the group's verdict */
	bool has_cpu;
};

struct groups {
	struct group *v;
	size_t n, cap;
};

static struct group *group_of(struct groups *g, const char *culprit, const char *syscall, int64_t loc)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].location_id == loc && !strcmp(g->v[i].culprit, culprit) &&
		    !strcmp(g->v[i].syscall, syscall))
			return &g->v[i];
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct group *n = realloc(g->v, cap * sizeof *n);
		if (!n)
			return NULL;
		g->v = n;
		g->cap = cap;
	}
	struct group *e = &g->v[g->n++];
	memset(e, 0, sizeof *e);
	snprintf(e->culprit, sizeof e->culprit, "%s", culprit);
	snprintf(e->syscall, sizeof e->syscall, "%s", syscall);
	e->location_id = loc;
	return e;
}

static int group_add(struct group *e, const struct ss_poll_detail *d, int64_t value)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 16;
		int64_t *n = realloc(e->ids, cap * sizeof *n);
		if (!n)
			return -1;
		e->ids = n;
		e->cap = cap;
	}
	e->ids[e->n++] = d->id;
	e->total += value;
	if (!e->worst || value > e->worst_value) {
		e->worst = d;
		e->worst_value = value;
	}
	if (d->has_cpu) {
		e->has_cpu = true;
		e->on_cpu += d->on_cpu;
		e->blocked += d->blocked;
		e->preempted += d->preempted;
		e->dur += d->dur;
	}
	return 0;
}

static void groups_free(struct groups *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].ids);
	free(g->v);
}

/* Worst severity first, then most time. */
static int by_weight(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	if (a->worst_value != b->worst_value)
		return a->worst_value < b->worst_value ? 1 : -1;
	return a->total < b->total ? 1 : a->total > b->total ? -1 : 0;
}

/* The finding's common part: the worst poll's place, the group's stack and SQL. */
static void fill(struct ss_analysis *a, const struct group *e, struct ss_finding *f, char *location,
		 size_t loclen)
{
	const struct ss_poll_detail *w = e->worst;
	f->ts = w->ts;
	f->dur = w->dur;
	f->recording_id = w->recording_id;
	f->worker_id = w->worker_id;
	f->task_id = w->task_id;
	f->worker = (char *)w->worker;
	snprintf(location, loclen, "%s", w->location);
	f->location = location;
	ss_frames_of(a, w->callsite, f, 32);
	char *ids = ss_id_list(e->ids, e->n, SQL_IDS);
	size_t len = (ids ? strlen(ids) : 0) + 128;
	f->sql = malloc(len);
	if (f->sql)
		snprintf(f->sql, len, "SELECT * FROM poll_view WHERE poll_id IN (%s) ORDER BY dur DESC",
			 ids ? ids : "");
	free(ids);
	f->count = (int64_t)(e->n < SQL_IDS ? e->n : SQL_IDS);
	f->syscall = e->syscall[0] ? (char *)e->syscall : NULL;
}

static void release(struct ss_finding *f)
{
	ss_frames_free(f->frames, f->n_frames);
	free(f->sql);
}

/* " (the N longest are in the SQL)" when a group has more polls than its SQL lists. */
static void more_note(const struct group *e, char *buf, size_t len)
{
	if (e->n > SQL_IDS)
		snprintf(buf, len, " (the %d longest are in the SQL)", SQL_IDS);
	else
		buf[0] = 0;
}

void ss_check_long_poll(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_LONG_POLL];
	struct groups g = { 0 };
	for (size_t i = 0; i < a->n_examined; i++) {
		const struct ss_poll_detail *d = &a->examined[i];
		if (ss_grade(t, (double)d->dur / 1e6) < 0)
			continue;
		struct group *e = group_of(&g, d->culprit, "", d->location_id);
		if (!e || group_add(e, d, d->dur) != 0) {
			ss_analysis_fail(a, "long polls");
			break;
		}
	}
	if (g.n)
		qsort(g.v, g.n, sizeof *g.v, by_weight);
	size_t infos = 0;
	for (size_t i = 0; i < g.n && !a->failed; i++) {
		const struct group *e = &g.v[i];
		int sev = ss_grade(t, (double)e->worst_value / 1e6);
		if (sev == SS_SEV_INFO && infos++ >= a->top)
			continue;
		struct ss_finding f = { .check = "long-poll", .severity = (enum ss_severity)sev,
					.value = (double)e->worst_value / 1e6, .unit = t->unit };
		char location[512], msg[2048], longest[32], total[32], more[64];
		fill(a, e, &f, location, sizeof location);
		ss_fmt_dur(longest, sizeof longest, (double)e->worst_value);
		ss_fmt_dur(total, sizeof total, (double)e->total);
		more_note(e, more, sizeof more);
		const char *verdict = e->has_cpu ? ss_verdict_name(ss_verdict_of(e->dur, e->on_cpu, e->blocked))
						 : "on/off-CPU unknown (no switch records)";
		double level = sev == SS_SEV_CRITICAL ? t->critical : sev == SS_SEV_WARNING ? t->warning : t->info;
		if (e->culprit[0])
			snprintf(msg, sizeof msg, "%zu poll%s over %g ms in %s (longest %s, %s in all) held %s "
				 "without yielding; task spawned at %s; %s%s", e->n, e->n == 1 ? "" : "s", level,
				 e->culprit, longest, total, e->n == 1 ? "its worker" : "their workers", location,
				 verdict, more);
		else
			snprintf(msg, sizeof msg, "%zu poll%s over %g ms (longest %s, %s in all) of tasks spawned "
				 "at %s; no stack recorded during %s reaches the program's own code; %s%s", e->n,
				 e->n == 1 ? "" : "s", level, longest, total, location, e->n == 1 ? "it" : "them",
				 verdict, more);
		f.message = msg;
		ss_emit(a, &f);
		release(&f);
	}
	/* Long polls past the examined ones: counted, not grouped. */
	if (a->scan.long_total > a->n_examined && !a->failed) {
		char msg[256];
		snprintf(msg, sizeof msg, "%llu more polls over %g ms were not examined one by one (the %zu "
			 "longest were); narrow the window with --from/--to to see them",
			 (unsigned long long)(a->scan.long_total - a->n_examined), t->info, a->n_examined);
		struct ss_finding f = { .check = "long-poll", .severity = SS_SEV_INFO, .message = msg, .ts = -1,
					.dur = -1, .unit = t->unit };
		char sql[256];
		snprintf(sql, sizeof sql, "SELECT * FROM polls WHERE dur > %lld ORDER BY dur DESC",
			 (long long)a->scan.long_min_ns);
		f.sql = sql;
		f.count = (int64_t)a->scan.long_total;
		ss_emit(a, &f);
	}
	groups_free(&g);
}

void ss_check_blocking(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_BLOCKING];
	struct groups g = { 0 };
	for (size_t i = 0; i < a->n_examined; i++) {
		const struct ss_poll_detail *d = &a->examined[i];
		if (!ss_poll_blocked(d) || ss_grade(t, (double)d->blocked / 1e6) < 0)
			continue;
		struct group *e = group_of(&g, d->culprit, d->syscall, d->location_id);
		if (!e || group_add(e, d, d->blocked) != 0) {
			ss_analysis_fail(a, "blocking");
			break;
		}
	}
	if (g.n)
		qsort(g.v, g.n, sizeof *g.v, by_weight);
	size_t infos = 0;
	for (size_t i = 0; i < g.n && !a->failed; i++) {
		const struct group *e = &g.v[i];
		int sev = ss_grade(t, (double)e->worst_value / 1e6);
		if (sev == SS_SEV_INFO && infos++ >= a->top)
			continue;
		struct ss_finding f = { .check = "blocking-in-poll", .severity = (enum ss_severity)sev,
					.value = (double)e->worst_value / 1e6, .unit = t->unit };
		char location[512], msg[2048], worst[32], total[32], more[64], share[32];
		fill(a, e, &f, location, sizeof location);
		ss_fmt_dur(worst, sizeof worst, (double)e->worst_value);
		ss_fmt_dur(total, sizeof total, (double)e->total);
		more_note(e, more, sizeof more);
		snprintf(share, sizeof share, "%.0f%%", e->dur ? 100.0 * (double)e->blocked / (double)e->dur : 0);
		const char *who = e->culprit[0] ? e->culprit : "code the recorded stacks do not reach";
		size_t n = e->n;
		if (!strcmp(e->syscall, "futex"))
			snprintf(msg, sizeof msg, "lock contention: %zu poll%s waited on a lock (futex) taken in %s, "
				 "blocked up to %s (%s in all, %s of %s time) while holding %s; task spawned "
				 "at %s%s", n, n == 1 ? "" : "s", who, worst, total, share, n == 1 ? "its" : "their",
				 n == 1 ? "its worker" : "their workers", location, more);
		else
			snprintf(msg, sizeof msg, "%zu poll%s blocked in %s%s%s in %s, up to %s (%s in all, %s of %s "
				 "time): a blocking call on an async worker holds it for every task; task spawned "
				 "at %s%s", n, n == 1 ? "" : "s",
				 e->syscall[0] ? "the system call " : "an unknown system call", e->syscall,
				 e->syscall[0] ? "()" : "", who, worst, total, share, n == 1 ? "its" : "their",
				 location, more);
		f.message = msg;
		ss_emit(a, &f);
		release(&f);
	}
	groups_free(&g);
}
