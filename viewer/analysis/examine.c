/*
 * examine.c - see examine.h. An examiner is an analysis with nothing but what
 * ss_poll_examine reads (the stacks cache and the stalls by poll), so a poll
 * is judged by exactly the report's code; the scan, the summary and the
 * checks are never run.
 */
#include "examine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_private.h"

/* Culprits cached per poll at most; past it they are examined again. */
#define CULPRIT_CACHE_MAX 1000000

struct ss_examiner {
	struct ss_analysis a;
	/* poll id -> 1 + index into names, or 0: examined, no culprit */
	struct ss_hmap culprit_of;
	char **names;           /* distinct culprit functions */
	size_t n_names, cap_names;
	struct ss_hmap name_index; /* hash of a name -> 1 + index (chained by probing a) */
};

struct ss_examiner *ss_examiner_new(sqlite3 *db)
{
	struct ss_examiner *x = calloc(1, sizeof *x);
	if (!x)
		return NULL;
	x->a.db = db;
	x->a.scope.from = INT64_MIN;
	x->a.scope.to = INT64_MAX;
	x->a.stacks = ss_callstacks_new(db);
	if (!x->a.stacks) {
		free(x);
		return NULL;
	}
	return x;
}

void ss_examiner_free(struct ss_examiner *x)
{
	if (!x)
		return;
	ss_callstacks_free(x->a.stacks);
	ss_hmap_free(&x->a.stall_of_poll);
	/* what ss_poll_examine caches in its analysis: statements, threads with CPU intervals */
	ss_hmap_free(&x->a.has_cpu);
	for (size_t i = 0; i < SS_Q_COUNT; i++)
		sqlite3_finalize(x->a.stmts[i]);
	ss_hmap_free(&x->culprit_of);
	ss_hmap_free(&x->name_index);
	for (size_t i = 0; i < x->n_names; i++)
		free(x->names[i]);
	free(x->names);
	free(x);
}

/* Stalls by poll, read once (an interrupted read is tried again next time). */
static void load_stalls(struct ss_examiner *x)
{
	struct ss_analysis *a = &x->a;
	if (a->stalls_loaded)
		return;
	sqlite3_stmt *st = ss_read_prepare(a->db, SS_Q_STALL_POLLS);
	if (!st) {
		ss_analysis_fail(a, "stalls");
		return;
	}
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (ss_hmap_put(&a->stall_of_poll, (uint64_t)sqlite3_column_int64(st, 0), 0,
				(uint64_t)sqlite3_column_int64(st, 1)) != 0)
			break;
	if (rc == SQLITE_DONE)
		a->stalls_loaded = true;
	else
		ss_hmap_clear(&a->stall_of_poll);
	ss_analysis_done(a, st);
}

int ss_examiner_poll(struct ss_examiner *x, int64_t poll_id, struct ss_poll_detail *out)
{
	struct ss_analysis *a = &x->a;
	a->failed = false;
	a->err[0] = 0;
	load_stalls(x);
	if (a->failed)
		return -1;
	if (ss_poll_examine(a, poll_id, out) != 0) {
		if (!a->failed)
			snprintf(a->err, sizeof a->err, "poll %lld not found", (long long)poll_id);
		return -1;
	}
	return 0;
}

const char *ss_examiner_error(const struct ss_examiner *x)
{
	return x->a.err[0] ? x->a.err : "no error";
}

static uint64_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* 1 + the index of name among the distinct culprits, 0 when memory ran out. */
static uint64_t intern(struct ss_examiner *x, const char *name)
{
	uint64_t h = hash_name(name), v;
	/* Names with the same hash are told apart by the second key. */
	for (uint64_t b = 0; ss_hmap_get(&x->name_index, h, b, &v); b++)
		if (strcmp(x->names[v - 1], name) == 0)
			return v;
		else if (b > 64)
			return 0;
	if (x->n_names == x->cap_names) {
		size_t nc = x->cap_names ? x->cap_names * 2 : 64;
		char **p = realloc(x->names, nc * sizeof *p);
		if (!p)
			return 0;
		x->names = p;
		x->cap_names = nc;
	}
	char *copy = strdup(name);
	if (!copy)
		return 0;
	uint64_t b = 0;
	while (ss_hmap_get(&x->name_index, h, b, &v))
		b++;
	if (ss_hmap_put(&x->name_index, h, b, x->n_names + 1) != 0) {
		free(copy);
		return 0;
	}
	x->names[x->n_names++] = copy;
	return x->n_names;
}

const char *ss_examiner_culprit(struct ss_examiner *x, int64_t poll_id)
{
	uint64_t v;
	if (ss_hmap_get(&x->culprit_of, (uint64_t)poll_id, 0, &v))
		return v ? x->names[v - 1] : NULL;
	struct ss_poll_detail d;
	if (ss_examiner_poll(x, poll_id, &d) != 0)
		return NULL;
	v = d.culprit[0] ? intern(x, d.culprit) : 0;
	if (x->culprit_of.len < CULPRIT_CACHE_MAX)
		ss_hmap_put(&x->culprit_of, (uint64_t)poll_id, 0, v);
	return v ? x->names[v - 1] : NULL;
}

/* Percent of part in whole, rounded; 0 for an empty whole. */
static int pct(int64_t part, int64_t whole)
{
	if (whole <= 0 || part <= 0)
		return 0;
	double p = 100.0 * (double)part / (double)whole;
	return p > 100 ? 100 : (int)(p + 0.5);
}

void ss_poll_split_text(const struct ss_poll_detail *d, char *buf, size_t len)
{
	if (!d->has_cpu) {
		snprintf(buf, len, "no on/off-CPU data");
		return;
	}
	snprintf(buf, len, "%d%% on CPU, %d%% blocked, %d%% preempted", pct(d->on_cpu, d->dur), pct(d->blocked, d->dur),
		 pct(d->preempted, d->dur));
}

void ss_poll_say(const struct ss_poll_detail *d, char *buf, size_t len)
{
	char in[300] = "", from[300] = "", t[32];
	if (d->culprit[0]) {
		snprintf(in, sizeof in, " in %s", d->culprit);
		snprintf(from, sizeof from, ", called from %s", d->culprit);
	}
	if (!d->has_cpu) {
		ss_fmt_dur(t, sizeof t, (double)d->dur);
		snprintf(buf, len, "ran %s%s (no on/off-CPU data for this thread: no verdict)", t, in);
		return;
	}
	int on = pct(d->on_cpu, d->dur), bl = pct(d->blocked, d->dur), pre = pct(d->preempted, d->dur);
	switch (d->verdict) {
	case SS_VERDICT_COMPUTING:
		snprintf(buf, len, "computing%s (%d%% on CPU)", in, on);
		break;
	case SS_VERDICT_PREEMPTED:
		snprintf(buf, len, "computing%s, but preempted for %d%% of it (%d%% on CPU)", in, pre, on);
		break;
	case SS_VERDICT_WAITING_CPU:
		snprintf(buf, len, "waiting for a CPU (runnable but not running %d%% of it)%s", pre, in);
		break;
	case SS_VERDICT_BLOCKED:
		ss_fmt_dur(t, sizeof t, (double)d->blocked);
		if (d->syscall[0])
			snprintf(buf, len, "blocked in %s for %s%s", d->syscall, t, from);
		else
			snprintf(buf, len, "blocked (off CPU, not runnable) for %s%s", t, in);
		break;
	default:
		ss_fmt_dur(t, sizeof t, (double)d->blocked);
		if (d->syscall[0])
			snprintf(buf, len, "partly blocked: in %s for %s (%d%%)%s; %d%% on CPU", d->syscall, t, bl, from, on);
		else
			snprintf(buf, len, "partly blocked: off CPU for %s (%d%%)%s; %d%% on CPU", t, bl, in, on);
		break;
	}
}
