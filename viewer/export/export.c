/*
 * export.c - see export.h: what the writers share: the filters bound to the
 * named queries, their check, and the samples of a scope added up by stack
 * and thread in one pass (a hash map, no SQL sort), for folded and pprof.
 */
#include "export.h"

#include <stdlib.h>
#include <string.h>

#include "hmap.h"
#include "read_queries.h"

void ss_export_bind(sqlite3_stmt *st, const struct ss_export_opts *o, int64_t lane)
{
	int n = sqlite3_bind_parameter_count(st);
	ss_scope_bind(st, &o->scope);
	if (n >= 4) {
		if (o->has_worker)
			sqlite3_bind_int64(st, 4, o->worker_index);
		else
			sqlite3_bind_null(st, 4);
	}
	if (n >= 5) {
		if (o->has_worker && o->runtime)
			sqlite3_bind_text(st, 5, o->runtime, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 5);
	}
	if (n >= 6) {
		if (o->has_task)
			sqlite3_bind_int64(st, 6, o->task);
		else
			sqlite3_bind_null(st, 6);
	}
	if (n >= 7)
		sqlite3_bind_text(st, 7, o->offcpu ? "offcpu" : "cpu", -1, SQLITE_STATIC);
	if (n >= 8)
		sqlite3_bind_int64(st, 8, lane);
}

void ss_export_db_error(sqlite3 *db, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
}

/* The worker filter as people typed it: "example#3", or "3". */
static void worker_text(const struct ss_export_opts *o, char *buf, size_t len)
{
	if (o->runtime)
		snprintf(buf, len, "%.64s#%lld", o->runtime, (long long)o->worker_index);
	else
		snprintf(buf, len, "#%lld", (long long)o->worker_index);
}

static int count_of(sqlite3 *db, enum ss_read_query q, const struct ss_export_opts *o, int64_t *n, char *err,
		    size_t errlen)
{
	sqlite3_stmt *st = ss_read_prepare(db, q);
	if (!st) {
		ss_export_db_error(db, "filters", err, errlen);
		return -1;
	}
	ss_export_bind(st, o, 0);
	int rc = sqlite3_step(st);
	*n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	if (rc != SQLITE_ROW)
		ss_export_db_error(db, "filters", err, errlen);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -1;
}

int ss_export_check_filters(sqlite3 *db, const struct ss_export_opts *o, char *err, size_t errlen)
{
	int64_t n;
	if (o->has_worker) {
		if (count_of(db, SS_Q_EXPORT_COUNT_WORKERS, o, &n, err, errlen) != 0)
			return -1;
		if (!n) {
			char w[96];
			worker_text(o, w, sizeof w);
			snprintf(err, errlen, "no worker %s in the %s (see the report's workers, or the workers "
				 "table's runtime and idx)", w, o->scope.recording_id ? "recording" : "trace");
			return -1;
		}
	}
	if (o->has_task) {
		if (count_of(db, SS_Q_EXPORT_COUNT_TASKS, o, &n, err, errlen) != 0)
			return -1;
		if (!n) {
			snprintf(err, errlen, "no task %lld in the %s (the tasks table's task column)",
				 (long long)o->task, o->scope.recording_id ? "recording" : "trace");
			return -1;
		}
	}
	return 0;
}

void ss_export_empty(const struct ss_export_opts *o, const char *what, char *err, size_t errlen)
{
	char w[128] = "", t[48] = "";
	if (o->has_worker) {
		char name[96];
		worker_text(o, name, sizeof name);
		snprintf(w, sizeof w, " of worker %s", name);
	}
	if (o->has_task)
		snprintf(t, sizeof t, " of task %lld", (long long)o->task);
	snprintf(err, errlen, "nothing to export: no %s%s%s in the %s", what, w, t,
		 o->scope.windowed ? "window" : o->scope.recording_id ? "recording" : "trace");
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t ss_export_row_value(const struct ss_export_opts *o, const struct ss_export_agg_row *r)
{
	bool ns = o->value == SS_EXPORT_VALUE_NS || (o->value == SS_EXPORT_VALUE_DEFAULT && o->offcpu);
	return ns ? r->ns : r->samples;
}

int ss_export_aggregate(sqlite3 *db, const struct ss_export_opts *o, struct ss_export_agg *agg, char *err,
			size_t errlen)
{
	memset(agg, 0, sizeof *agg);
	sqlite3_stmt *st = ss_read_prepare(db, SS_Q_EXPORT_SAMPLES);
	if (!st) {
		ss_export_db_error(db, "samples", err, errlen);
		return -1;
	}
	ss_export_bind(st, o, 0);
	struct ss_hmap index = { 0 }; /* (callsite, thread) -> row */
	int rc;
	bool oom = false;
	agg->min_weight = INT64_MAX;
	agg->max_weight = INT64_MIN;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t cs = sqlite3_column_int64(st, 0), thread = sqlite3_column_int64(st, 1);
		int64_t weight = sqlite3_column_int64(st, o->offcpu ? 4 : 2);
		uint64_t ns = weight > 0 ? (uint64_t)weight : 0;
		if (!o->offcpu) {
			if (weight < agg->min_weight)
				agg->min_weight = weight;
			if (weight > agg->max_weight)
				agg->max_weight = weight;
		}
		uint64_t v;
		struct ss_export_agg_row *r;
		if (ss_hmap_get(&index, (uint64_t)cs, (uint64_t)thread, &v)) {
			r = &agg->rows[v];
		} else {
			if (agg->n == agg->cap) {
				size_t cap = agg->cap ? agg->cap * 2 : 256;
				struct ss_export_agg_row *nr = realloc(agg->rows, cap * sizeof *nr);
				if (!nr) {
					oom = true;
					break;
				}
				agg->rows = nr;
				agg->cap = cap;
			}
			if (ss_hmap_put(&index, (uint64_t)cs, (uint64_t)thread, agg->n) != 0) {
				oom = true;
				break;
			}
			r = &agg->rows[agg->n++];
			*r = (struct ss_export_agg_row){ .callsite_id = cs > 0 ? cs : 0, .thread_id = thread,
							 .worker_id = sqlite3_column_int64(st, 5) };
		}
		r->samples++;
		r->ns = sat_add(r->ns, ns);
		agg->samples++;
		agg->samples_ns = sat_add(agg->samples_ns, ns);
		if (o->progress && agg->samples % 65536 == 0)
			o->progress(o->progress_ctx, agg->samples);
	}
	ss_hmap_free(&index);
	if (oom) {
		snprintf(err, errlen, "samples: out of memory");
		sqlite3_finalize(st);
		ss_export_agg_free(agg);
		return -1;
	}
	if (rc != SQLITE_DONE) {
		ss_export_db_error(db, "samples", err, errlen);
		sqlite3_finalize(st);
		ss_export_agg_free(agg);
		return -1;
	}
	sqlite3_finalize(st);
	if (!agg->samples) {
		ss_export_empty(o, o->offcpu ? "off-CPU samples" : "CPU samples", err, errlen);
		ss_export_agg_free(agg);
		return -1;
	}
	return 0;
}

void ss_export_agg_free(struct ss_export_agg *agg)
{
	free(agg->rows);
	memset(agg, 0, sizeof *agg);
}
