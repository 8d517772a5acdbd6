/*
 * test_query_plans.c - no query of the viewer or the report reads the whole
 * polls table, except those that must (a search by function or location, a
 * pass over every poll, a task's or a location's polls, an export filtered by
 * task): schema 7 has no index on polls(worker_id, ts), and a lane query that
 * forgot poll_chunks (viewer/store/sqlite/poll_chunks.h) would still return
 * the right rows, only from a full scan on every frame. SQLite's plan
 * (EXPLAIN QUERY PLAN) on the schema with its indexes says which. The same
 * for cpu_intervals, a view of cpu_rows (schema 9) whose key replaced the
 * cpu_intervals_by_thread index: a thread's intervals are a range of it.
 */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "read_queries.h"
#include "schema_sql.h"
#include "soft_check.h"
#include "view_queries.h"

/* The plan's step d reads all of polls (as polls, p or q: the aliases the
 * queries use) or of cpu_rows (c: the view's alias, which SQLite keeps when it
 * flattens cpu_intervals into a query). */
static bool scan_of_polls(const char *d)
{
	return strcmp(d, "SCAN polls") == 0 || strcmp(d, "SCAN p") == 0 || strcmp(d, "SCAN q") == 0 ||
	       strncmp(d, "SCAN polls ", 11) == 0 || strncmp(d, "SCAN p ", 7) == 0;
}

static bool scan_of_cpu(const char *d)
{
	return strcmp(d, "SCAN cpu_rows") == 0 || strcmp(d, "SCAN c") == 0 || strncmp(d, "SCAN cpu_rows ", 14) == 0 ||
	       strncmp(d, "SCAN c ", 7) == 0;
}

/* 1: the plan of sql has a step that scan says reads a whole table. */
static int scans(sqlite3 *db, const char *sql, bool (*scan_of)(const char *), char *plan, size_t len)
{
	char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	sqlite3_free(q);
	if (rc != SQLITE_OK) {
		snprintf(plan, len, "prepare: %s", sqlite3_errmsg(db));
		return -1;
	}
	int scan = 0;
	plan[0] = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 3);
		if (d && scan_of(d)) {
			scan = 1;
			snprintf(plan + strlen(plan), len - strlen(plan), "%s; ", d);
		}
	}
	sqlite3_finalize(st);
	return scan;
}

int main(void)
{
	sqlite3 *db;
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "open");
	char *err = NULL;
	CHECK(sqlite3_exec(db, ss_schema_sql, NULL, NULL, &err) == SQLITE_OK, "schema: %s", err ? err : "");
	sqlite3_free(err);
	char plan[2048];
	int checked = 0;
	for (int i = 0; i < SS_V_COUNT; i++) {
		const char *sql = ss_view_sql(i);
		if (!sql || !strstr(sql, "polls"))
			continue;
		bool whole = i == SS_V_SEARCH_BY_FUNCTION || i == SS_V_SEARCH_BY_LOCATION;
		int s = scans(db, sql, scan_of_polls, plan, sizeof plan);
		CHECK(s >= 0, "view query %d: %s", i, plan);
		CHECK(whole || s == 0, "view query %d reads all of polls: %s", i, plan);
		checked++;
	}
	for (int i = 0; i < SS_Q_COUNT; i++) {
		const char *sql = ss_read_sql(i);
		if (!sql || !strstr(sql, "polls"))
			continue;
		bool whole = i == SS_Q_SCAN_POLLS || i == SS_Q_STACK_TASK_POLLS || i == SS_Q_STACK_LOCATION_POLLS ||
			     i == SS_Q_EXPORT_THREAD_SAMPLES;
		int s = scans(db, sql, scan_of_polls, plan, sizeof plan);
		CHECK(s >= 0, "read query %d: %s", i, plan);
		CHECK(whole || s == 0, "read query %d reads all of polls: %s", i, plan);
		checked++;
	}
	/* What the check sees: a lane query without poll_chunks scans. */
	CHECK(scans(db, "SELECT id FROM polls WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3", scan_of_polls, plan,
		    sizeof plan) == 1,
	      "a lane query without poll_chunks is not seen as a scan");
	CHECK(checked >= 15, "only %d queries read polls", checked);
	int cpu_checked = 0;
	for (int i = 0; i < SS_V_COUNT + SS_Q_COUNT; i++) {
		const char *sql = i < SS_V_COUNT ? ss_view_sql(i) : ss_read_sql(i - SS_V_COUNT);
		if (!sql || !strstr(sql, "cpu_intervals"))
			continue;
		int s = scans(db, sql, scan_of_cpu, plan, sizeof plan);
		CHECK(s >= 0, "query %d: %s", i, plan);
		CHECK(s == 0, "%s query %d reads all of cpu_rows: %s", i < SS_V_COUNT ? "view" : "read",
		      i < SS_V_COUNT ? i : i - SS_V_COUNT, plan);
		cpu_checked++;
	}
	CHECK(scans(db, "SELECT ts FROM cpu_intervals WHERE ts >= ?2 AND ts < ?3", scan_of_cpu, plan, sizeof plan) == 1,
	      "a query of cpu_intervals without a thread is not seen as a scan");
	CHECK(cpu_checked >= 10, "only %d queries read cpu_intervals", cpu_checked);
	sqlite3_close(db);
	if (!failures)
		printf("query plans: %d queries that read polls, none scans it but those that must; %d read"
		       " cpu_intervals, none scans it\n", checked, cpu_checked);
	return failures != 0;
}
