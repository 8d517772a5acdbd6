/*
 * test_query_plans.c - no query of the viewer or the report reads the whole
 * polls table, except those that must (a search by function or location, a
 * pass over every poll, a task's or a location's polls, an export filtered by
 * task): schema 7 has no index on polls(worker_id, ts), and a lane query that
 * forgot poll_chunks (viewer/store/sqlite/poll_chunks.h) would still return
 * the right rows, only from a full scan on every frame. SQLite's plan
 * (EXPLAIN QUERY PLAN) on the schema with its indexes says which.
 */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "read_queries.h"
#include "schema_sql.h"
#include "soft_check.h"
#include "view_queries.h"

/* 1: the plan of sql scans polls (as polls, p or q: the aliases the queries use). */
static int scans_polls(sqlite3 *db, const char *sql, char *plan, size_t len)
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
		if (d && (strcmp(d, "SCAN polls") == 0 || strcmp(d, "SCAN p") == 0 || strcmp(d, "SCAN q") == 0 ||
			  strncmp(d, "SCAN polls ", 11) == 0 || strncmp(d, "SCAN p ", 7) == 0)) {
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
		int s = scans_polls(db, sql, plan, sizeof plan);
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
		int s = scans_polls(db, sql, plan, sizeof plan);
		CHECK(s >= 0, "read query %d: %s", i, plan);
		CHECK(whole || s == 0, "read query %d reads all of polls: %s", i, plan);
		checked++;
	}
	/* What the check sees: a lane query without poll_chunks scans. */
	CHECK(scans_polls(db, "SELECT id FROM polls WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3", plan,
			  sizeof plan) == 1,
	      "a lane query without poll_chunks is not seen as a scan");
	CHECK(checked >= 15, "only %d queries read polls", checked);
	sqlite3_close(db);
	if (!failures)
		printf("query plans: %d queries that read polls, none scans it but those that must\n", checked);
	return failures != 0;
}
