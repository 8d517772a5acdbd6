/*
 * check_loss.c - data-loss: events and samples the recorder lost (per
 * recording and kind, with the window they span and why), and segments that
 * were damaged (only their intact prefix was imported). A trace with a hole
 * can hide the very stall someone is looking for, so any loss is a finding.
 */
#include "analysis_private.h"

#include <stdio.h>
#include <string.h>

void ss_check_data_loss(struct ss_analysis *a)
{
	const struct ss_threshold *t = &ss_thresholds[SS_TH_DATA_LOSS];
	sqlite3_stmt *st = ss_analysis_query(a, SS_Q_LOSS);
	while (st && sqlite3_step(st) == SQLITE_ROW && !a->failed) {
		int64_t rec = sqlite3_column_int64(st, 0);
		const char *source = (const char *)sqlite3_column_text(st, 1);
		const char *reasons = (const char *)sqlite3_column_text(st, 2);
		int64_t count = sqlite3_column_int64(st, 3), first = sqlite3_column_int64(st, 4);
		int64_t last = sqlite3_column_int64(st, 5), rows = sqlite3_column_int64(st, 6);
		int64_t recorded = sqlite3_column_int64(st, 7);
		if (count <= 0 || !source)
			continue;
		double pct = 100.0 * (double)count / (double)(recorded + count > 0 ? recorded + count : 1);
		int sev = ss_grade(t, pct);
		if (sev < 0)
			continue;
		char span[32], msg[1024], win[256], sql[512];
		ss_fmt_dur(span, sizeof span, (double)(last - first));
		snprintf(msg, sizeof msg, "recording #%lld lost %lld %s (%.3g%% of them) over %s from %.3f s into the "
			 "trace (%s): the trace has holes there (hatched in the viewer)", (long long)rec,
			 (long long)count, source, pct, span, (double)(first - a->scope.origin) / 1e9,
			 reasons ? reasons : "no reason given");
		ss_scope_sql(&a->scope, "ts", "ts + dur", win, sizeof win);
		snprintf(sql, sizeof sql, "SELECT * FROM loss WHERE recording_id = %lld AND source = '%s'%s ORDER BY ts",
			 (long long)rec, !strcmp(source, "events") ? "events" : "samples", win);
		struct ss_finding f = { .check = "data-loss", .severity = (enum ss_severity)sev, .message = msg,
					.ts = first, .dur = last - first, .recording_id = rec, .sql = sql,
					.count = rows, .value = pct, .unit = t->unit };
		ss_emit(a, &f);
	}
	ss_analysis_done(a, st);
	st = ss_analysis_query(a, SS_Q_DAMAGED);
	while (st && sqlite3_step(st) == SQLITE_ROW && !a->failed) {
		int64_t rec = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
		const char *files = (const char *)sqlite3_column_text(st, 2);
		if (n <= 0)
			continue;
		char msg[1024], sql[256];
		snprintf(msg, sizeof msg, "recording #%lld has %lld damaged segment%s (%.300s): only %s intact prefix "
			 "was imported", (long long)rec, (long long)n, n == 1 ? "" : "s", files ? files : "?",
			 n == 1 ? "its" : "their");
		snprintf(sql, sizeof sql, "SELECT * FROM segments WHERE recording_id = %lld AND damage IS NOT NULL "
			 "AND damage <> 'truncated' ORDER BY seq", (long long)rec);
		struct ss_finding f = { .check = "data-loss", .severity = SS_SEV_WARNING, .message = msg, .ts = -1,
					.dur = -1, .recording_id = rec, .sql = sql, .count = n, .value = (double)n,
					.unit = "segments" };
		ss_emit(a, &f);
	}
	ss_analysis_done(a, st);
}
