/*
 * analysis.c - see analysis.h: the scan, the examined long polls, the summary
 * and the checks, in that order, and what the checks share.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct ss_check_info ss_check_infos[] = {
	{ "long-poll", "polls that held their worker long, grouped by the code responsible, then location" },
	{ "blocking-in-poll", "polls blocked in a system call (off CPU, not runnable) for a large share, by "
			      "call and code; futex waits as lock contention" },
	{ "sched-delay", "wake-to-poll delay per spawn location (p50/p99/max), and what the worker ran instead" },
	{ "cpu-starvation", "workers runnable but not running (waiting for a CPU) for a large share" },
	{ "worker-imbalance", "polls spread unevenly over the workers" },
	{ "queue-buildup", "the global run queue growing: work arrives faster than it is served" },
	{ "task-leak", "live tasks ending at their peak, idle and never woken again" },
	{ "data-loss", "events or samples the recorder lost, and damaged segments" },
};
const size_t ss_n_check_infos = sizeof ss_check_infos / sizeof ss_check_infos[0];

void ss_analysis_fail(struct ss_analysis *a, const char *what)
{
	if (a->failed)
		return;
	a->failed = true;
	snprintf(a->err, sizeof a->err, "%s: %s", what, a->db ? sqlite3_errmsg(a->db) : "out of memory");
}

sqlite3_stmt *ss_analysis_query(struct ss_analysis *a, enum ss_read_query q)
{
	if (a->failed)
		return NULL;
	sqlite3_stmt *st = ss_read_prepare(a->db, q);
	if (!st) {
		ss_analysis_fail(a, "query");
		return NULL;
	}
	ss_scope_bind(st, &a->scope);
	return st;
}

void ss_analysis_done(struct ss_analysis *a, sqlite3_stmt *st)
{
	if (st && sqlite3_finalize(st) != SQLITE_OK)
		ss_analysis_fail(a, "query");
}

sqlite3_stmt *ss_analysis_stmt(struct ss_analysis *a, enum ss_read_query q)
{
	if (a->failed || (unsigned)q >= SS_Q_COUNT)
		return NULL;
	if (!a->stmts[q] && !(a->stmts[q] = ss_read_prepare(a->db, q))) {
		ss_analysis_fail(a, "query");
		return NULL;
	}
	return a->stmts[q];
}

void ss_analysis_release(struct ss_analysis *a, sqlite3_stmt *st)
{
	if (!st)
		return;
	if (sqlite3_reset(st) != SQLITE_OK)
		ss_analysis_fail(a, "query");
	sqlite3_clear_bindings(st);
}

int ss_grade(const struct ss_threshold *t, double value)
{
	if (t->critical != SS_TH_OFF && value > t->critical)
		return SS_SEV_CRITICAL;
	if (t->warning != SS_TH_OFF && value > t->warning)
		return SS_SEV_WARNING;
	if (t->info != SS_TH_OFF && value > t->info)
		return SS_SEV_INFO;
	return -1;
}

void ss_fmt_dur(char *buf, size_t len, double ns)
{
	if (ns < 0)
		snprintf(buf, len, "-");
	else if (ns < 1e3)
		snprintf(buf, len, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", ns / 1e9);
}

size_t ss_frames_of(struct ss_analysis *a, int64_t callsite, struct ss_finding *fd, size_t max)
{
	struct ss_frame_text **out = &fd->frames;
	*out = NULL;
	fd->n_frames = 0;
	fd->own_frame = -1;
	if (callsite <= 0 || !a->stacks)
		return 0;
	size_t n = ss_callstacks_get(a->stacks, callsite, a->frames, max < SS_STACK_MAX ? max : SS_STACK_MAX);
	if (!n)
		return 0;
	struct ss_frame_text *f = calloc(n, sizeof *f);
	if (!f)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char name[256];
		ss_callstacks_frame_name(&a->frames[i], name, sizeof name);
		f[i].function = strdup(name);
		f[i].file = a->frames[i].file ? strdup(a->frames[i].file) : NULL;
		f[i].line = a->frames[i].line;
	}
	*out = f;
	fd->own_frame = ss_callstacks_own(a->stacks, a->frames, n);
	fd->n_frames = n;
	return n;
}

void ss_frames_free(struct ss_frame_text *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++) {
		free(f[i].function);
		free(f[i].file);
	}
	free(f);
}

char *ss_id_list(const int64_t *ids, size_t n, size_t max)
{
	if (n > max)
		n = max;
	char *s = malloc(n * 21 + 1);
	if (!s)
		return NULL;
	size_t used = 0;
	s[0] = 0;
	for (size_t i = 0; i < n; i++)
		used += (size_t)sprintf(s + used, "%s%lld", i ? "," : "", (long long)ids[i]);
	return s;
}

void ss_emit(struct ss_analysis *a, const struct ss_finding *f)
{
	if (!ss_findings_add(&a->findings, f) && !a->failed) {
		a->failed = true;
		snprintf(a->err, sizeof a->err, "findings: out of memory");
	}
}

/* Stalls by poll, for examining polls without an index on stalls.poll_id. */
static void load_stalls(struct ss_analysis *a)
{
	a->stalls_loaded = true;
	sqlite3_stmt *st = ss_read_prepare(a->db, SS_Q_STALL_POLLS);
	if (!st) {
		ss_analysis_fail(a, "stalls");
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		if (ss_hmap_put(&a->stall_of_poll, (uint64_t)sqlite3_column_int64(st, 0), 0,
				(uint64_t)sqlite3_column_int64(st, 1)) != 0)
			break;
	ss_analysis_done(a, st);
}

int ss_examine_long_polls(struct ss_analysis *a)
{
	size_t n = a->scan.n_long < SS_EXAMINE_MAX ? a->scan.n_long : SS_EXAMINE_MAX;
	if (!n)
		return 0;
	a->examined = calloc(n, sizeof *a->examined);
	if (!a->examined)
		return -1;
	for (size_t i = 0; i < n && !a->failed; i++)
		if (ss_poll_examine(a, a->scan.long_polls[i].id, &a->examined[a->n_examined]) == 0)
			a->n_examined++;
	return a->failed ? -1 : 0;
}

struct ss_analysis *ss_analysis_run(sqlite3 *db, const struct ss_scope *scope, size_t top, char *err,
				    size_t errlen)
{
	struct ss_analysis *a = calloc(1, sizeof *a);
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->db = db;
	a->scope = *scope;
	a->top = top;
	a->stacks = ss_callstacks_new(db);
	if (!a->stacks) {
		snprintf(err, errlen, "stacks: %s", sqlite3_errmsg(db));
		ss_analysis_free(a);
		return NULL;
	}
	/* Every poll a poll check may grade: over the lowest level in use. */
	double lo = -1;
	const struct ss_threshold *graded[] = { &ss_thresholds[SS_TH_LONG_POLL], &ss_thresholds[SS_TH_BLOCKING] };
	for (size_t i = 0; i < 2; i++) {
		const double lv[3] = { graded[i]->info, graded[i]->warning, graded[i]->critical };
		for (int j = 0; j < 3; j++)
			if (lv[j] != SS_TH_OFF && (lo < 0 || lv[j] < lo))
				lo = lv[j];
	}
	int64_t long_min = lo < 0 ? INT64_MAX : (int64_t)(lo * 1e6);
	if (ss_scan_run(db, scope, top, long_min, &a->scan, err, errlen) != 0) {
		ss_analysis_free(a);
		return NULL;
	}
	load_stalls(a);
	if (!a->failed)
		ss_examine_long_polls(a);
	if (!a->failed)
		ss_summary_build(a);
	void (*const checks[])(struct ss_analysis *) = {
		ss_check_long_poll, ss_check_blocking, ss_check_sched_delay, ss_check_cpu_starvation,
		ss_check_imbalance, ss_check_queue_buildup, ss_check_task_leak, ss_check_data_loss,
	};
	for (size_t i = 0; i < sizeof checks / sizeof checks[0] && !a->failed; i++)
		checks[i](a);
	if (a->failed) {
		snprintf(err, errlen, "%s", a->err);
		ss_analysis_free(a);
		return NULL;
	}
	ss_findings_sort(&a->findings);
	return a;
}

const struct ss_summary *ss_analysis_summary(const struct ss_analysis *a)
{
	return &a->summary;
}

const struct ss_findings *ss_analysis_findings(const struct ss_analysis *a)
{
	return &a->findings;
}

const struct ss_scan *ss_analysis_scan(const struct ss_analysis *a)
{
	return &a->scan;
}

const struct ss_scope *ss_analysis_scope(const struct ss_analysis *a)
{
	return &a->scope;
}

void ss_analysis_free(struct ss_analysis *a)
{
	if (!a)
		return;
	ss_summary_free(&a->summary);
	ss_findings_free(&a->findings);
	free(a->examined);
	ss_hmap_free(&a->stall_of_poll);
	ss_hmap_free(&a->has_cpu);
	for (size_t i = 0; i < SS_Q_COUNT; i++)
		sqlite3_finalize(a->stmts[i]);
	ss_callstacks_free(a->stacks);
	ss_scan_free(&a->scan);
	free(a);
}
