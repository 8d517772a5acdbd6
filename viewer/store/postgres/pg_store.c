/*
 * pg_store.c - see pg_store.h: connecting, the schema (made from pg_tables.c,
 * with the large tables partitioned), the id ranges and the partitions, all on
 * the side connection so that a long import never holds a lock another one
 * needs.
 */
#include "pg_store.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "pg_tables.h"
#include "schema_sql.h"

/* The version of PostgreSQL's tables (pg_tables.c), which follow SQLite's
 * schema but not its storage: SQLite's version 6 stored the names of marks
 * and spans once (marks and spans became views there), while PostgreSQL's
 * marks and spans keep their name column, so its tables are still version 5
 * and a store stays usable by the stallscope before. */
#define PG_SCHEMA_VERSION 5
_Static_assert(PG_SCHEMA_VERSION <= SS_SCHEMA_VERSION, "PostgreSQL's tables follow SQLite's schema");

/* Advisory lock keys (the two-int form: a key space apart from the session
 * ids that lock recordings). */
#define LOCK_CLASS 0x5353
#define LOCK_SCHEMA 1

#define PGC(c) ((PGconn *)(c))

bool ss_pg_is_url(const char *s)
{
	return s && (strncmp(s, "postgresql://", 13) == 0 || strncmp(s, "postgres://", 11) == 0 ||
		     (strchr(s, '=') && !strchr(s, '/')) || strstr(s, "dbname=") || strstr(s, "host="));
}

static void set_err(struct ss_pg *p, PGconn *c, const char *what)
{
	const char *m = c ? PQerrorMessage(c) : "";
	snprintf(p->err, sizeof p->err, "%s%s%s", what, m[0] ? ": " : "", m);
	size_t n = strlen(p->err);
	while (n && (p->err[n - 1] == '\n' || p->err[n - 1] == ' '))
		p->err[--n] = 0;
}

char *ss_pg_fmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

int ss_pg_exec(struct ss_pg *p, struct pg_conn *c, const char *sql)
{
	if (!sql) {
		snprintf(p->err, sizeof p->err, "out of memory");
		return -1;
	}
	PGresult *r = PQexec(PGC(c), sql);
	ExecStatusType st = PQresultStatus(r);
	int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
	if (rc) {
		const char *m = PQresultErrorMessage(r);
		snprintf(p->err, sizeof p->err, "%s", m && m[0] ? m : PQerrorMessage(PGC(c)));
		size_t n = strlen(p->err);
		while (n && p->err[n - 1] == '\n')
			p->err[--n] = 0;
	}
	PQclear(r);
	return rc;
}

PGresult *ss_pg_select(struct ss_pg *p, struct pg_conn *c, const char *sql)
{
	if (!sql) {
		snprintf(p->err, sizeof p->err, "out of memory");
		return NULL;
	}
	PGresult *r = PQexec(PGC(c), sql);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		snprintf(p->err, sizeof p->err, "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(PGC(c)));
		size_t n = strlen(p->err);
		while (n && p->err[n - 1] == '\n')
			p->err[--n] = 0;
		PQclear(r);
		return NULL;
	}
	return r;
}

int ss_pg_query_int(struct ss_pg *p, struct pg_conn *c, const char *sql, int64_t dflt, int64_t *out)
{
	*out = dflt;
	PGresult *r = ss_pg_select(p, c, sql);
	if (!r)
		return -1;
	if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		*out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return 0;
}

/* The URL without its password, for messages. */
static void shown_url(char *out, size_t len, const char *url)
{
	const char *at = strchr(url, '@'), *scheme = strstr(url, "://");
	const char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
	if (scheme && at && colon && colon < at)
		snprintf(out, len, "%.*s:***%s", (int)(colon - url), url, at);
	else if (strstr(url, "password="))
		snprintf(out, len, "(a connection string with a password)");
	else
		snprintf(out, len, "%s", url);
}

static PGconn *connect_one(struct ss_pg *p, const char *url)
{
	PGconn *c = PQconnectdb(url);
	if (!c) {
		snprintf(p->err, sizeof p->err, "%s: out of memory", p->shown);
		return NULL;
	}
	if (PQstatus(c) != CONNECTION_OK) {
		char what[600];
		snprintf(what, sizeof what, "cannot connect to %s", p->shown);
		set_err(p, c, what);
		PQfinish(c);
		return NULL;
	}
	/* Quiet NOTICEs ("relation exists, skipping") and a plain text encoding
	 * for COPY. */
	PQclear(PQexec(c, "SET client_min_messages = warning; SET client_encoding = 'UTF8'"));
	return c;
}

/* Ids and numbers are bigint: SQLite's INTEGER is 64 bits. */
static const char *col_type(const struct pg_col *c)
{
	return c->kind == PGC_TEXT ? "text" : "bigint";
}

/* The DDL of one table, from pg_tables.c. */
static char *table_ddl(const struct pg_table *t)
{
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	n += (size_t)snprintf(s + n, cap - n, "CREATE TABLE IF NOT EXISTS %s (", t->name);
	for (size_t i = 0; i < t->n_cols; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s%s %s", i ? ", " : "", t->cols[i].name, col_type(&t->cols[i]));
	if (t->key)
		n += (size_t)snprintf(s + n, cap - n, ", %s", t->key);
	n += (size_t)snprintf(s + n, cap - n, ")");
	if (t->part_col)
		n += (size_t)snprintf(s + n, cap - n, " PARTITION BY RANGE (%s);"
				      "CREATE TABLE IF NOT EXISTS %s_default PARTITION OF %s DEFAULT",
				      t->part_col, t->name, t->name);
	return s;
}

/* What the SQLite schema indexes after a bulk load, and what pulls and fleet
 * queries go through (a recording's rows, by owner). The large tables' indexes
 * are BRIN: an import appends a recording's rows together, so block ranges
 * bound the owner ids (and times) well, and keeping a B-tree up to date row by
 * row cost the server three times what the rows themselves cost, the most of an
 * import's time. Their readers take a recording's rows whole (pulls, prune, the
 * fleet query) or a few rows of one (an import resuming it), where a scan of the
 * recording's block ranges is what a B-tree would cost too. autosummarize has
 * autovacuum summarize each range as it fills (a range not summarized yet is
 * scanned: slower, never wrong). */
#define BRIN(name, on) name " ON " on " WITH (pages_per_range = 32, autosummarize = on)"
static const char *const indexes[] = {
	BRIN("polls_by_worker", "polls USING brin (worker_id, ts)"),
	BRIN("parks_by_worker", "parks USING brin (worker_id, ts)"),
	BRIN("samples_by_thread", "samples USING brin (thread_id, ts)"),
	BRIN("cpu_intervals_by_thread", "cpu_intervals USING brin (thread_id, ts)"),
	"callsites_by_parent ON callsites(parent_id)", "threads_by_recording ON threads(recording_id, thread)",
	"stall_captures_by_stall ON stall_captures(stall_id)", "workers_by_recording ON workers(recording_id)",
	BRIN("tasks_by_recording", "tasks USING brin (recording_id)"),
	"mappings_by_recording ON mappings(recording_id)",
	"frames_by_mapping ON frames(mapping_id)", "callsites_by_frame ON callsites(frame_id)",
	BRIN("wakes_by_task", "wakes USING brin (task_id)"),
	BRIN("queue_depths_by_thread", "queue_depths USING brin (thread_id, ts)"),
	BRIN("marks_by_thread", "marks USING brin (thread_id, ts)"),
	BRIN("spans_by_thread", "spans USING brin (thread_id, ts)"),
	"stalls_by_thread ON stalls(thread_id)", "task_dumps_by_task ON task_dumps(task_id)",
	"loss_by_recording ON loss(recording_id)", "recordings_by_host ON recordings(host)",
	"other_events_by_recording ON other_events(recording_id)",
};

/* Partition widths are fixed when a database is created (prune and every
 * import must agree on them). STALLSCOPE_PG_SMALL_PARTITIONS=1 makes them tiny:
 * for tests, which need partitions that fill up with a few recordings. */
static long long initial_width(const struct pg_table *t)
{
	const char *small = getenv("STALLSCOPE_PG_SMALL_PARTITIONS");
	if (small && strcmp(small, "1") == 0)
		return t->part_kind == ID_TASK ? 1024 : t->part_kind == ID_THREAD ? 16 : 4;
	return t->part_width;
}

/* A database made by an older stallscope: the schema only ever gains columns
 * (as the SQLite migrations add them), so an upgrade adds what is missing;
 * on a table just created this changes nothing. */
static char *add_columns_ddl(const struct pg_table *t)
{
	size_t cap = 4096, n = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	n += (size_t)snprintf(s + n, cap - n, "ALTER TABLE %s", t->name);
	for (size_t i = 0; i < t->n_cols && n < cap; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s ADD COLUMN IF NOT EXISTS %s %s", i ? "," : "",
				      t->cols[i].name, col_type(&t->cols[i]));
	if (n >= cap) {
		free(s);
		return NULL;
	}
	return s;
}

static int create_schema(struct ss_pg *p)
{
	if (ss_pg_exec(p, p->side, "CREATE TABLE IF NOT EXISTS partition_widths (tbl text PRIMARY KEY,"
		       " width bigint NOT NULL)") != 0)
		return -1;
	for (size_t i = 0; i < ss_pg_n_tables; i++) {
		const struct pg_table *t = &ss_pg_tables[i];
		if (!t->part_col)
			continue;
		char *sql = ss_pg_fmt("INSERT INTO partition_widths VALUES ('%s', %lld) ON CONFLICT DO NOTHING",
				      t->name, initial_width(t));
		int rc = ss_pg_exec(p, p->side, sql);
		free(sql);
		if (rc)
			return -1;
	}
	for (size_t i = 0; i < ss_pg_n_tables; i++) {
		char *ddl = table_ddl(&ss_pg_tables[i]);
		int rc = ddl ? ss_pg_exec(p, p->side, ddl) : -1;
		free(ddl);
		char *add = rc ? NULL : add_columns_ddl(&ss_pg_tables[i]);
		rc = rc || !add ? -1 : ss_pg_exec(p, p->side, add);
		free(add);
		if (rc)
			return -1;
	}
	for (size_t i = 0; i < sizeof indexes / sizeof indexes[0]; i++) {
		char *sql = ss_pg_fmt("CREATE INDEX IF NOT EXISTS %s", indexes[i]);
		int rc = ss_pg_exec(p, p->side, sql);
		free(sql);
		if (rc)
			return -1;
	}
	/* The next free id of each kind: ranges are taken from here by UPDATE on
	 * the side connection, so they commit at once and never overlap. */
	if (ss_pg_exec(p, p->side, "CREATE TABLE IF NOT EXISTS import_ids (kind integer PRIMARY KEY,"
		       " next bigint NOT NULL)") != 0)
		return -1;
	for (int k = 0; k < ID_COUNT; k++) {
		char *sql = ss_pg_fmt("INSERT INTO import_ids VALUES (%d, 1) ON CONFLICT DO NOTHING", k);
		int rc = ss_pg_exec(p, p->side, sql);
		free(sql);
		if (rc)
			return -1;
	}
	char *sql = ss_pg_fmt("INSERT INTO schema_info SELECT %d WHERE NOT EXISTS (SELECT 1 FROM schema_info"
			      " WHERE version >= %d)", PG_SCHEMA_VERSION, PG_SCHEMA_VERSION);
	int rc = ss_pg_exec(p, p->side, sql);
	free(sql);
	return rc;
}

static int load_widths(struct ss_pg *p)
{
	for (size_t i = 0; i < ss_pg_n_tables && i < sizeof p->width / sizeof p->width[0]; i++) {
		const struct pg_table *t = &ss_pg_tables[i];
		if (!t->part_col)
			continue;
		int64_t w = 0;
		char *q = ss_pg_fmt("SELECT width FROM partition_widths WHERE tbl = '%s'", t->name);
		int rc = ss_pg_query_int(p, p->side, q, 0, &w);
		free(q);
		if (rc)
			return -1;
		if (w <= 0) {
			snprintf(p->err, sizeof p->err, "partition_widths has no width for %s", t->name);
			return -1;
		}
		p->width[i] = (long long)w;
	}
	return 0;
}

/* The database's schema version: 0 for none yet, -1 on an error, including a
 * version newer than this stallscope knows. */
static int schema_version(struct ss_pg *p)
{
	int64_t have = 0, version = 0;
	if (ss_pg_query_int(p, p->side, "SELECT count(*) FROM pg_tables WHERE tablename = 'import_ids'"
			    " AND schemaname = current_schema()", 0, &have) != 0)
		return -1;
	if (!have)
		return 0;
	if (ss_pg_query_int(p, p->side, "SELECT max(version) FROM schema_info", 0, &version) != 0)
		return -1;
	if (version > PG_SCHEMA_VERSION) {
		snprintf(p->err, sizeof p->err, "%s has stallscope schema version %lld; this stallscope"
			 " knows up to %d: use a newer stallscope", p->shown, (long long)version, PG_SCHEMA_VERSION);
		return -1;
	}
	return (int)version;
}

static int ensure_schema(struct ss_pg *p)
{
	int v = schema_version(p);
	if (v < 0)
		return -1;
	if (v == PG_SCHEMA_VERSION)
		return load_widths(p);
	/* Two first imports at once: one creates, the other finds it made (and
	 * must not run the DDL again: ALTER TABLE would queue behind the first
	 * one's COPY while holding the lock the first one's partitions need). */
	char *lock = ss_pg_fmt("SELECT pg_advisory_lock(%d, %d)", LOCK_CLASS, LOCK_SCHEMA);
	int rc = ss_pg_exec(p, p->side, lock);
	free(lock);
	if (rc)
		return -1;
	v = schema_version(p);
	rc = v < 0 ? -1 : v == PG_SCHEMA_VERSION ? 0 : create_schema(p);
	if (!rc)
		rc = load_widths(p);
	char *unlock = ss_pg_fmt("SELECT pg_advisory_unlock(%d, %d)", LOCK_CLASS, LOCK_SCHEMA);
	ss_pg_exec(p, p->side, unlock);
	free(unlock);
	return rc;
}

int ss_pg_open(struct ss_pg *p, const char *url)
{
	memset(p, 0, sizeof *p);
	shown_url(p->shown, sizeof p->shown, url);
	PGconn *m = connect_one(p, url);
	if (!m)
		return -1;
	p->main = (struct pg_conn *)m;
	PGconn *s = connect_one(p, url);
	if (!s)
		return -1;
	p->side = (struct pg_conn *)s;
	if (ensure_schema(p) != 0) {
		char tmp[sizeof p->err];
		memcpy(tmp, p->err, sizeof tmp);
		size_t n = strlen(p->shown);
		if (n + 2 < sizeof p->err) {
			memcpy(p->err, p->shown, n);
			memcpy(p->err + n, ": ", 2);
			snprintf(p->err + n + 2, sizeof p->err - n - 2, "%.*s", (int)(sizeof p->err - n - 3), tmp);
		}
		return -1;
	}
	return 0;
}

void ss_pg_close(struct ss_pg *p)
{
	if (p->main)
		PQfinish(PGC(p->main));
	if (p->side)
		PQfinish(PGC(p->side));
	p->main = p->side = NULL;
}

int ss_pg_next_ids(struct ss_pg *p, int64_t next[ID_COUNT])
{
	for (int k = 0; k < ID_COUNT; k++) {
		char *sql = ss_pg_fmt("SELECT next FROM import_ids WHERE kind = %d", k);
		int rc = ss_pg_query_int(p, p->side, sql, 1, &next[k]);
		free(sql);
		if (rc)
			return -1;
	}
	return 0;
}

int ss_pg_ensure_partition(struct ss_pg *p, const char *table, long long width, int64_t slice)
{
	int64_t have = 0;
	char *q = ss_pg_fmt("SELECT count(*) FROM pg_class WHERE relname = '%s_p%lld'", table, (long long)slice);
	if (ss_pg_query_int(p, p->side, q, 0, &have) != 0) {
		free(q);
		return -1;
	}
	free(q);
	if (have)
		return 0;
	char *lock = ss_pg_fmt("SELECT pg_advisory_lock(%d, %d)", LOCK_CLASS, LOCK_SCHEMA);
	char *sql = ss_pg_fmt("CREATE TABLE IF NOT EXISTS %s_p%lld PARTITION OF %s FOR VALUES FROM (%lld) TO (%lld)",
			      table, (long long)slice, table, (long long)(slice * width),
			      (long long)((slice + 1) * width));
	char *unlock = ss_pg_fmt("SELECT pg_advisory_unlock(%d, %d)", LOCK_CLASS, LOCK_SCHEMA);
	int rc = ss_pg_exec(p, p->side, lock);
	if (!rc) {
		rc = ss_pg_exec(p, p->side, sql);
		ss_pg_exec(p, p->side, unlock);
	}
	free(lock);
	free(sql);
	free(unlock);
	return rc;
}
