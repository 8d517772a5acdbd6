/*
 * test_console.c - the SQL console's connection (viewer/store/sqlite/
 * store_console.c) on the fixture: reads, views, recursive queries and the
 * schema PRAGMAs run; every statement that would write, attach, detach,
 * load an extension, change a setting or make a file is refused, whatever
 * its spelling, and afterwards the database file is byte for byte what it
 * was. A runaway recursive query stops when interrupted from another thread.
 * usage: test_console SCHEMA.sql OUTDIR
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "soft_check.h"
#include "store_console.h"

/* Runs every statement of sql; returns the first error code (SQLITE_OK). */
static int run(sqlite3 *db, const char *sql, char *msg, size_t len)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	snprintf(msg, len, "%s", err ? err : "");
	sqlite3_free(err);
	return rc;
}

static char *digest(const char *path)
{
	gchar *data = NULL;
	gsize len = 0;
	if (!g_file_get_contents(path, &data, &len, NULL))
		return g_strdup("unreadable");
	char *d = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
	g_free(data);
	return d;
}

struct runaway {
	sqlite3 *db;
	int rc;
	gint done;
};

static gpointer runaway_main(gpointer p)
{
	struct runaway *r = p;
	char msg[256];
	r->rc = run(r->db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
		    msg, sizeof msg);
	g_atomic_int_set(&r->done, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_console SCHEMA.sql OUTDIR\n");
		return 2;
	}
	g_mkdir_with_parents(argv[2], 0755);
	char path[4096], other[4096], vacuum[4096];
	snprintf(path, sizeof path, "%s/console-fixture.db", argv[2]);
	snprintf(other, sizeof other, "%s/console-other.db", argv[2]);
	snprintf(vacuum, sizeof vacuum, "%s/console-vacuum.db", argv[2]);
	g_unlink(vacuum);
	if (fixture_build_small(path, argv[1]) != 0)
		return 1;
	if (fixture_build_small(other, argv[1]) != 0)
		return 1;
	char *before = digest(path);
	GStatBuf st0;
	g_stat(path, &st0);

	char err[512], msg[512];
	sqlite3 *db = NULL;
	CHECK(ss_store_open_console(path, &db, err, sizeof err) == 0, "console opens the fixture: %s", err);
	if (!db)
		return 1;

	static const char *const allowed[] = {
		"SELECT count(*) FROM polls",
		"SELECT * FROM poll_view ORDER BY dur DESC LIMIT 3",
		"SELECT * FROM stall_view",
		"SELECT stack FROM callsite_text LIMIT 2",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT sum(x) FROM c",
		"PRAGMA table_info(polls)",
		"SELECT abs(-1), lower('A'), printf('%d', 3), json_object('a', 1)",
		"select * from sqlite_master",
	};
	for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
		CHECK(run(db, allowed[i], msg, sizeof msg) == SQLITE_OK, "allowed: %s (%s)", allowed[i], msg);

	char attach[8192], vac[8192];
	snprintf(attach, sizeof attach, "ATTACH '%s' AS other", other);
	snprintf(vac, sizeof vac, "VACUUM INTO '%s'", vacuum);
	const char *const refused[] = {
		"DELETE FROM polls",
		"delete from polls where id > 0",
		"INSERT INTO locations(file, line, function) VALUES ('x', 1, 'y')",
		"UPDATE polls SET dur = 0",
		"REPLACE INTO schema_info VALUES (9)",
		"DROP TABLE polls",
		"DROP VIEW poll_view",
		"CREATE TABLE x(a)",
		"CREATE TEMP TABLE x(a)",
		"CREATE TEMP VIEW v AS SELECT 1",
		"CREATE INDEX i ON polls(dur)",
		"ALTER TABLE polls RENAME TO p",
		attach,
		"ATTACH ':memory:' AS m",
		"DETACH main",
		"SELECT load_extension('/nonexistent/libx.so')",
		"SELECT LOAD_EXTENSION('libx')",
		"PRAGMA query_only = 0",
		"PRAGMA writable_schema = 1",
		"PRAGMA journal_mode = WAL",
		"PRAGMA user_version = 7",
		"PRAGMA user_version",
		"BEGIN",
		"BEGIN IMMEDIATE",
		"SAVEPOINT s",
		"ANALYZE",
		"REINDEX",
		"VACUUM",
		vac,
		"SELECT 1; DELETE FROM polls",
		"WITH d AS (SELECT 1) DELETE FROM polls",
	};
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		int rc = run(db, refused[i], msg, sizeof msg);
		CHECK(rc != SQLITE_OK, "refused: %s", refused[i]);
		if (rc != SQLITE_OK)
			printf("refused: %-60.60s -> %s\n", refused[i], msg);
	}
	CHECK(!g_file_test(vacuum, G_FILE_TEST_EXISTS), "VACUUM INTO made no file");
	sqlite3_stmt *s = NULL;
	sqlite3_prepare_v2(db, "SELECT count(*) FROM polls", -1, &s, NULL);
	int polls = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
	sqlite3_finalize(s);
	CHECK(polls > 0, "the polls are all still there: %d", polls);

	/* Interrupted from another thread, as the console's Cancel does. */
	struct runaway r = { db, 0, 0 };
	GThread *t = g_thread_new("runaway", runaway_main, &r);
	g_usleep(300 * 1000);
	CHECK(!g_atomic_int_get(&r.done), "the runaway query runs");
	gint64 t0 = g_get_monotonic_time();
	sqlite3_interrupt(db);
	g_thread_join(t);
	CHECK(r.rc == SQLITE_INTERRUPT, "it was interrupted (rc %d)", r.rc);
	CHECK(g_get_monotonic_time() - t0 < 2 * G_USEC_PER_SEC, "at once");
	CHECK(run(db, "SELECT 1", msg, sizeof msg) == SQLITE_OK, "the connection works afterwards: %s", msg);
	sqlite3_close(db);

	char *after = digest(path);
	GStatBuf st1;
	g_stat(path, &st1);
	CHECK(strcmp(before, after) == 0, "the database file is unchanged (%s -> %s)", before, after);
	CHECK(st0.st_mtime == st1.st_mtime && st0.st_size == st1.st_size, "and its size and mtime too");
	g_free(before);
	g_free(after);

	/* Not a database at all: the usual one-line message. */
	char junk[4096];
	snprintf(junk, sizeof junk, "%s/console-junk.db", argv[2]);
	g_file_set_contents(junk, "\x7f\x13random bytes, not SQLite at all........", -1, NULL);
	CHECK(ss_store_open_console(junk, &db, err, sizeof err) != 0 && strstr(err, "not an SQLite database"),
	      "random bytes: %s", err);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("console: all checks passed\n");
	return 0;
}
