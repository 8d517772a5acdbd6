/*
 * polls.c - see polls.h.
 *
 * The stack that stands for a poll: its stall capture's (taken while the poll
 * ran over the stall threshold, so it shows what held the worker); else, for
 * a poll that was mostly blocked, the off-CPU sample with the most time; else
 * the CPU samples' most frequent own-code function; else any sample's.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <string.h>

/* The on/blocked/preempted split of [ts, ts + dur) on a thread: the
 * interval open at ts (found by a seek, not a scan from the thread's start)
 * and those starting inside. */
static void cpu_split(struct ss_analysis *a, struct ss_poll_detail *d)
{
	uint64_t known;
	if (ss_hmap_get(&a->has_cpu, (uint64_t)d->thread_id, 0, &known)) {
		d->has_cpu = known == 1;
	} else {
		sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_HAS_CPU);
		if (!st)
			return;
		sqlite3_bind_int64(st, 1, d->thread_id);
		d->has_cpu = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) != 0;
		ss_analysis_release(a, st);
		if (!a->failed && ss_hmap_put(&a->has_cpu, (uint64_t)d->thread_id, 0, d->has_cpu ? 1 : 2) != 0)
			ss_analysis_fail(a, "cpu intervals");
	}
	if (!d->has_cpu)
		return;
	int64_t end = d->ts > INT64_MAX - (d->dur > 0 ? d->dur : 0) ? INT64_MAX : d->ts + (d->dur > 0 ? d->dur : 0);
	sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_POLL_CPU);
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, d->thread_id);
	sqlite3_bind_int64(st, 2, d->ts);
	sqlite3_bind_int64(st, 3, end);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *state = (const char *)sqlite3_column_text(st, 0);
		int64_t ts = sqlite3_column_int64(st, 1), dur = sqlite3_column_int64(st, 2);
		int64_t ie = dur > 0 && ts <= INT64_MAX - dur ? ts + dur : ts;
		int64_t lo = ts > d->ts ? ts : d->ts, hi = ie < end ? ie : end;
		if (!state || hi <= lo)
			continue;
		int64_t part = hi - lo;
		if (!strcmp(state, "on-cpu"))
			d->on_cpu += part;
		else if (!strcmp(state, "blocked"))
			d->blocked += part;
		else if (!strcmp(state, "preempted"))
			d->preempted += part;
	}
	ss_analysis_release(a, st);
	d->verdict = ss_verdict_of(d->dur, d->on_cpu, d->blocked);
}

static void stall_evidence(struct ss_analysis *a, struct ss_poll_detail *d)
{
	uint64_t stall;
	if (!ss_hmap_get(&a->stall_of_poll, (uint64_t)d->id, 0, &stall))
		return;
	sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_POLL_STALL);
	if (!st)
		return;
	sqlite3_bind_int64(st, 1, (int64_t)stall);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		snprintf(d->stall_kind, sizeof d->stall_kind, "%s", kind ? kind : "unknown");
		d->callsite = sqlite3_column_int64(st, 1);
		const char *sc = (const char *)sqlite3_column_text(st, 2);
		const char *why = (const char *)sqlite3_column_text(st, 3);
		if (why)
			snprintf(d->capture, sizeof d->capture, "%.*s", (int)strcspn(why, ";"), why);
		if (sc && kind && !strcmp(kind, "blocked"))
			snprintf(d->syscall, sizeof d->syscall, "%s", sc);
	}
	ss_analysis_release(a, st);
}

/* The own-code function of a callsite's stack, "" when none. */
static const char *own_function(struct ss_analysis *a, int64_t callsite, size_t *own_out, size_t *n_out)
{
	size_t n = ss_callstacks_get(a->stacks, callsite, a->frames, SS_STACK_MAX);
	int own = ss_callstacks_own(a->stacks, a->frames, n);
	*n_out = n;
	*own_out = own < 0 ? 0 : (size_t)own;
	return own < 0 || !a->frames[own].function ? "" : a->frames[own].function;
}

/* Up to this many distinct own functions are counted per poll. */
#define VOTES 16

static void sample_evidence(struct ss_analysis *a, struct ss_poll_detail *d)
{
	sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_POLL_SAMPLES);
	if (!st)
		return;
	int64_t end = d->dur > 0 && d->ts <= INT64_MAX - d->dur ? d->ts + d->dur : d->ts + 1;
	sqlite3_bind_int64(st, 1, d->thread_id);
	sqlite3_bind_int64(st, 2, d->ts);
	sqlite3_bind_int64(st, 3, end);
	struct { char fn[128]; int64_t callsite, votes; } v[VOTES];
	size_t nv = 0;
	int64_t best_off = 0, best_off_weight = INT64_MIN;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		int64_t cs = sqlite3_column_int64(st, 1), w = sqlite3_column_int64(st, 2);
		if (!kind || cs <= 0)
			continue;
		if (!strcmp(kind, "offcpu")) {
			d->offcpu_samples++;
			/* A stack that reaches the program's own code outweighs any
			 * that stops in a library. */
			const struct ss_stack_frame *of = ss_callstacks_own_frame(a->stacks, cs, a->frames, SS_STACK_MAX);
			int64_t rank = of ? w : w - INT64_MAX;
			if (!best_off || rank > best_off_weight) {
				best_off_weight = rank;
				best_off = cs;
			}
			continue;
		}
		d->cpu_samples++;
		const struct ss_stack_frame *of = ss_callstacks_own_frame(a->stacks, cs, a->frames, SS_STACK_MAX);
		const char *fn = of && of->function ? of->function : "";
		size_t i = 0;
		while (i < nv && strcmp(v[i].fn, fn))
			i++;
		if (i == nv && nv < VOTES) {
			snprintf(v[nv].fn, sizeof v[nv].fn, "%s", fn);
			v[nv].callsite = cs;
			v[nv++].votes = 0;
		}
		if (i < nv)
			v[i].votes++;
	}
	ss_analysis_release(a, st);
	/* The capture stands for the poll unless it never reaches own code and
	 * a sample does. */
	if (d->callsite && ss_callstacks_own_frame(a->stacks, d->callsite, a->frames, SS_STACK_MAX))
		return;
	size_t best = 0;
	for (size_t i = 1; i < nv; i++)
		if ((!v[best].fn[0] && v[i].fn[0]) || (!v[best].fn[0] == !v[i].fn[0] && v[i].votes > v[best].votes))
			best = i;
	int64_t pick = best_off && (ss_poll_blocked(d) || !nv) ? best_off : nv ? v[best].callsite : best_off;
	if (pick && (!d->callsite || ss_callstacks_own_frame(a->stacks, pick, a->frames, SS_STACK_MAX)))
		d->callsite = pick;
}

int ss_poll_examine(struct ss_analysis *a, int64_t id, struct ss_poll_detail *d)
{
	memset(d, 0, sizeof *d);
	d->id = id;
	sqlite3_stmt *st = ss_analysis_stmt(a, SS_Q_POLL);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		ss_analysis_release(a, st);
		return -1;
	}
	d->ts = sqlite3_column_int64(st, 0);
	d->dur = sqlite3_column_int64(st, 1);
	d->worker_id = sqlite3_column_int64(st, 2);
	const char *w = (const char *)sqlite3_column_text(st, 3);
	snprintf(d->worker, sizeof d->worker, "%s", w ? w : "?");
	d->thread_id = sqlite3_column_int64(st, 4);
	d->task = sqlite3_column_int64(st, 5);
	d->task_id = sqlite3_column_int64(st, 6);
	d->location_id = sqlite3_column_int64(st, 7);
	const char *l = (const char *)sqlite3_column_text(st, 8);
	snprintf(d->location, sizeof d->location, "%s", l ? l : "? (?:0)");
	d->recording_id = sqlite3_column_int64(st, 9);
	d->incomplete = sqlite3_column_int64(st, 10) != 0;
	ss_analysis_release(a, st);
	cpu_split(a, d);
	stall_evidence(a, d);
	sample_evidence(a, d);
	if (d->callsite) {
		size_t own, n;
		const char *fn = own_function(a, d->callsite, &own, &n);
		snprintf(d->culprit, sizeof d->culprit, "%s", fn);
		if (n) {
			snprintf(d->culprit_file, sizeof d->culprit_file, "%s",
				 a->frames[own].file ? a->frames[own].file : "");
			d->culprit_line = a->frames[own].line;
		}
		if (!d->syscall[0] && ss_poll_blocked(d)) {
			const char *sc = ss_callstacks_syscall(a->stacks, a->frames, n);
			if (sc)
				snprintf(d->syscall, sizeof d->syscall, "%s", sc);
		}
	}
	return a->failed ? -1 : 0;
}
