/*
 * test_pg_tables.c - the PostgreSQL store's table list (viewer/store/postgres/
 * pg_tables.c) against the SQLite schema it mirrors (schema/stallscope.sql,
 * as embedded in the importer): the same tables, the same columns in the same
 * order, and every column that holds an id marked with an id kind (else an
 * import would not move it into its reserved range, and ids of two hosts'
 * imports would collide). Runs without a server: a schema change that forgets
 * the PostgreSQL side fails here, not in a fleet.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "pg_tables.h"
#include "schema_sql.h"
#include "soft_check.h"

/* Columns named like ids that hold something else. */
static const char *const not_ids[] = { "session_id", "boot_id", "build_id", "span_id", "parent_span_id", NULL };

static int is_id_name(const char *c)
{
	for (size_t i = 0; not_ids[i]; i++)
		if (strcmp(c, not_ids[i]) == 0)
			return 0;
	size_t n = strlen(c);
	return strcmp(c, "id") == 0 || (n > 3 && strcmp(c + n - 3, "_id") == 0);
}

static void unquote(char *out, size_t len, const char *name)
{
	size_t n = strlen(name);
	if (n >= 2 && name[0] == '"')
		snprintf(out, len, "%.*s", (int)(n - 2), name + 1);
	else
		snprintf(out, len, "%s", name);
}

int main(void)
{
	sqlite3 *db;
	CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "open");
	char *err = NULL;
	CHECK(sqlite3_exec(db, ss_schema_sql, NULL, NULL, &err) == SQLITE_OK, "schema: %s", err ? err : "");
	sqlite3_free(err);

	sqlite3_stmt *tables;
	/* SQLite stores marks and spans as views of mark_rows and span_cells +
	 * span_full with their names in names (schema versions 6 and 8), and
	 * tasks and queue_depths as views of task_rows and queue_rows (8), and
	 * cpu_intervals as a view of cpu_rows (9), and worker_summaries as a
	 * view of summary_rows (10); PostgreSQL keeps them as tables with the
	 * views' columns.
	 * poll_chunks (schema version 7) stands for an index of polls that
	 * PostgreSQL keeps (its BRIN polls_by_worker); a pull builds it. */
	sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE (type = 'table' AND name NOT IN ('names',"
			   " 'mark_rows', 'span_cells', 'span_full', 'task_rows', 'queue_rows', 'poll_chunks',"
			   " 'cpu_rows', 'summary_rows')) OR (type = 'view' AND name IN ('marks', 'spans', 'tasks',"
			   " 'queue_depths', 'cpu_intervals', 'worker_summaries'))"
			   " ORDER BY rowid", -1, &tables, NULL);
	size_t seen = 0;
	while (sqlite3_step(tables) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(tables, 0);
		const struct pg_table *t = ss_pg_table(name);
		CHECK(t != NULL, "SQLite table %s has no PostgreSQL table in pg_tables.c", name);
		if (!t)
			continue;
		seen++;
		char sql[200];
		snprintf(sql, sizeof sql, "SELECT name FROM pragma_table_info('%s') ORDER BY cid", name);
		sqlite3_stmt *cols;
		sqlite3_prepare_v2(db, sql, -1, &cols, NULL);
		size_t i = 0;
		while (sqlite3_step(cols) == SQLITE_ROW) {
			const char *c = (const char *)sqlite3_column_text(cols, 0);
			/* polls' queue reports (schema version 11) are rows of
			 * queue_depths, a table in PostgreSQL */
			if (strcmp(name, "polls") == 0 && strncmp(c, "queue_", 6) == 0)
				continue;
			char mine[64] = "";
			if (i < t->n_cols)
				unquote(mine, sizeof mine, t->cols[i].name);
			CHECK(i < t->n_cols && strcmp(mine, c) == 0, "%s: column %zu is %s in SQLite, %s in pg_tables.c",
			      name, i, c, i < t->n_cols ? mine : "(none)");
			if (i < t->n_cols && is_id_name(c))
				CHECK(t->cols[i].kind >= 0 && t->cols[i].kind < ID_COUNT,
				      "%s.%s holds ids but has no id kind in pg_tables.c", name, c);
			i++;
		}
		sqlite3_finalize(cols);
		/* A pending wake also keeps its wakes row there (no rowid to point at). */
		CHECK(i == t->n_cols || (strcmp(name, "import_pending_wakes") == 0 && i < t->n_cols),
		      "%s: %zu columns in SQLite, %zu in pg_tables.c", name, i, t->n_cols);
		if (t->part_col) {
			int found = 0;
			for (size_t k = 0; k < t->n_cols; k++)
				found |= strcmp(t->cols[k].name, t->part_col) == 0 && t->cols[k].kind == t->part_kind;
			CHECK(found, "%s is partitioned on %s, which is not a column of that id kind", name, t->part_col);
		}
	}
	sqlite3_finalize(tables);
	CHECK(seen == ss_pg_n_tables, "pg_tables.c has %zu tables, the SQLite schema %zu of them", ss_pg_n_tables,
	      seen);
	sqlite3_close(db);
	if (!failures)
		printf("pg tables: %zu tables match the SQLite schema\n", seen);
	return failures != 0;
}
