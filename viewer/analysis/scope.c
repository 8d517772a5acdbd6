/*
 * scope.c - see scope.h.
 */
#include "scope.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_queries.h"

int ss_scope_resolve(sqlite3 *db, struct ss_scope *s, int64_t recording, bool has_from, int64_t from_rel,
		     bool has_to, int64_t to_rel, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->recording_id = recording;
	sqlite3_stmt *st = ss_read_prepare(db, SS_Q_SCOPE_SPAN);
	if (!st) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		return -1;
	}
	sqlite3_bind_int64(st, 1, recording);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return -1;
	}
	int64_t n = sqlite3_column_int64(st, 0);
	bool have_span = sqlite3_column_type(st, 1) != SQLITE_NULL;
	s->origin = sqlite3_column_int64(st, 1);
	s->end = sqlite3_column_int64(st, 2);
	sqlite3_finalize(st);
	if (n == 0) {
		if (recording)
			snprintf(err, errlen, "there is no recording #%lld (see the recordings table, or the "
				 "report without --recording)", (long long)recording);
		else
			snprintf(err, errlen, "no recording was imported");
		return -1;
	}
	if (!have_span) {
		snprintf(err, errlen, "the recording%s holds no events", recording ? "" : "s");
		return -1;
	}
	s->from = INT64_MIN;
	s->to = INT64_MAX;
	s->windowed = has_from || has_to;
	/* Relative times beyond the trace stay valid (an empty window is
	 * refused below); the sums saturate instead of wrapping. */
	if (has_from && __builtin_add_overflow(s->origin, from_rel, &s->from))
		s->from = INT64_MAX;
	if (has_to && __builtin_add_overflow(s->origin, to_rel, &s->to))
		s->to = INT64_MAX;
	if (s->from >= s->to) {
		snprintf(err, errlen, "the window is empty: --from must be before --to");
		return -1;
	}
	if (has_from && s->from > s->end) {
		snprintf(err, errlen, "--from %lld ns is after the end of the trace (%lld ns from its start)",
			 (long long)from_rel, (long long)(s->end - s->origin));
		return -1;
	}
	return 0;
}

void ss_scope_bind(sqlite3_stmt *st, const struct ss_scope *s)
{
	sqlite3_bind_int64(st, 1, s->recording_id);
	sqlite3_bind_int64(st, 2, s->from);
	sqlite3_bind_int64(st, 3, s->to);
}

bool ss_scope_overlaps(const struct ss_scope *s, int64_t ts, int64_t dur)
{
	if (ts >= s->to)
		return false;
	int64_t end;
	if (!__builtin_add_overflow(ts, dur, &end))
		return end >= s->from;
	/* Past int64 the sum is a double: above every from, or below all but
	 * INT64_MIN, which it may round to. */
	return dur > 0 || (s->from == INT64_MIN && (double)ts + (double)dur >= -0x1p63);
}

bool ss_scope_holds(const struct ss_scope *s, int64_t ts)
{
	return ts >= s->from && ts < s->to;
}

int ss_parse_ns(const char *text, int64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (end == text || errno || !isfinite(v) || v < 0)
		return -1;
	double mul = 1;
	if (!strcmp(end, "") || !strcmp(end, "ns"))
		mul = 1;
	else if (!strcmp(end, "us"))
		mul = 1e3;
	else if (!strcmp(end, "ms"))
		mul = 1e6;
	else if (!strcmp(end, "s"))
		mul = 1e9;
	else
		return -1;
	v *= mul;
	if (v >= 9.2e18)
		return -1;
	*out = (int64_t)llround(v);
	return 0;
}

void ss_scope_sql(const struct ss_scope *s, const char *ts_expr, const char *end_expr, char *buf, size_t len)
{
	char a[160] = "", b[160] = "";
	if (!s->windowed) {
		snprintf(buf, len, "%s", "");
		return;
	}
	if (end_expr) {
		if (s->to != INT64_MAX)
			snprintf(a, sizeof a, " AND %s < %lld", ts_expr, (long long)s->to);
		if (s->from != INT64_MIN)
			snprintf(b, sizeof b, " AND %s >= %lld", end_expr, (long long)s->from);
	} else {
		if (s->from != INT64_MIN)
			snprintf(a, sizeof a, " AND %s >= %lld", ts_expr, (long long)s->from);
		if (s->to != INT64_MAX)
			snprintf(b, sizeof b, " AND %s < %lld", ts_expr, (long long)s->to);
	}
	snprintf(buf, len, "%s%s", a, b);
}
