/*
 * fuzz_db.c - libFuzzer target for the readers of databases someone sent: one
 * input is a small program that builds a stallscope database (the real schema,
 * then rows with extreme, NULL, negative, text-for-number and related values,
 * cyclic stacks, replaced views), which is then read by `stallscope report`
 * (text and JSON) and, when the viewer is built, rendered as a timeline at two
 * zoom levels. Nothing may crash, overflow or hang: the report and the viewer
 * stop a read that takes longer than their budget.
 *
 * Program: a sequence of operations, each one byte (op % 24) and its operands:
 *   0..19   a row for the table at that index of `tables`, values drawn by
 *           next_value() for each of its columns;
 *   20      replace the callsite_frames view by one that recurses for ever;
 *   21      set every recording's first_ts/last_ts from two drawn values;
 *   22      a recursive view over polls (a hostile "helper" view);
 *   23      make every callsite its own parent (a cycle).
 */
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "fuzz_target.h"
#include "schema_sql.h"

#ifdef FUZZ_DB_RENDER
#include <cairo.h>
#include "tl_png.h"
#endif

static const char *const tables[] = {
	"recordings", "threads", "workers", "locations", "tasks", "polls", "parks", "wakes",
	"queue_depths", "samples", "cpu_intervals", "stalls", "stall_captures", "task_dumps",
	"mappings", "frames", "callsites", "worker_summaries", "loss", "segments",
};
#define N_TABLES (sizeof tables / sizeof tables[0])

struct cursor {
	const uint8_t *p;
	size_t n;
};

static unsigned byte(struct cursor *c)
{
	if (!c->n)
		return 0;
	c->n--;
	return *c->p++;
}

static int64_t bytes64(struct cursor *c)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | byte(c);
	return (int64_t)v;
}

/* Values that break naive arithmetic, ids that join, and a few types SQLite
 * accepts where a number is expected. */
static void bind_value(sqlite3_stmt *st, int i, struct cursor *c)
{
	static const int64_t special[] = { 0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
					   1000000000, 86400000000000, 4294967296 };
	unsigned k = byte(c) % 14;
	switch (k) {
	case 0: sqlite3_bind_null(st, i); break;
	case 1: case 2: case 3: sqlite3_bind_int64(st, i, 1 + byte(c) % 8); break; /* ids that join */
	case 4: sqlite3_bind_int64(st, i, special[byte(c) % (sizeof special / sizeof special[0])]); break;
	case 5: sqlite3_bind_int64(st, i, bytes64(c)); break;
	case 6: sqlite3_bind_int64(st, i, 1000000000 + (int64_t)byte(c) * 1000000); break; /* times */
	case 7: sqlite3_bind_int64(st, i, (int64_t)byte(c) * 100000); break;           /* durations */
	case 8: {
		char txt[48];
		unsigned len = byte(c) % 40;
		for (unsigned j = 0; j < len; j++)
			txt[j] = (char)(byte(c) | 1);
		sqlite3_bind_text(st, i, txt, (int)len, SQLITE_TRANSIENT);
		break;
	}
	case 9: {
		int64_t bits = bytes64(c);
		double d;
		memcpy(&d, &bits, sizeof d); /* NaN and infinities too */
		sqlite3_bind_double(st, i, d);
		break;
	}
	case 10: sqlite3_bind_text(st, i, k & 1 ? "on-cpu" : "blocked", -1, SQLITE_STATIC); break;
	case 11: sqlite3_bind_text(st, i, "running", -1, SQLITE_STATIC); break;
	case 12: sqlite3_bind_blob(st, i, "\0\1\2", 3, SQLITE_STATIC); break;
	default: sqlite3_bind_int64(st, i, byte(c)); break;
	}
}

static int columns(sqlite3 *db, const char *table)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s')", table);
	sqlite3_stmt *st;
	int n = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void build(const char *path, const uint8_t *data, size_t size)
{
	unlink(path);
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		abort();
	sqlite3_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN", NULL, NULL, NULL);
	if (sqlite3_exec(db, ss_schema_sql, NULL, NULL, NULL) != SQLITE_OK)
		abort(); /* the real schema must load */
	struct cursor c = { data, size };
	for (int ops = 0; c.n && ops < 400; ops++) {
		unsigned op = byte(&c) % 24;
		if (op < N_TABLES) {
			int n = columns(db, tables[op]);
			char sql[512];
			int len = snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s VALUES(", tables[op]);
			for (int i = 0; i < n && len < (int)sizeof sql - 4; i++)
				len += snprintf(sql + len, sizeof sql - (size_t)len, i ? ",?" : "?");
			snprintf(sql + len, sizeof sql - (size_t)len, ")");
			sqlite3_stmt *st;
			if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
				continue;
			for (int i = 1; i <= n; i++)
				bind_value(st, i, &c);
			sqlite3_step(st);
			sqlite3_finalize(st);
		} else if (op == 20) {
			sqlite3_exec(db, "DROP VIEW IF EXISTS callsite_frames; CREATE VIEW callsite_frames AS"
				     " WITH RECURSIVE w(callsite_id, depth) AS (SELECT 1, 0 UNION ALL"
				     " SELECT callsite_id, depth + 1 FROM w) SELECT callsite_id, depth, 'f' AS function,"
				     " 'x.c' AS file, 1 AS line, 0 AS rel_pc, 'm' AS mapping FROM w",
				     NULL, NULL, NULL);
		} else if (op == 21) {
			sqlite3_stmt *st;
			if (sqlite3_prepare_v2(db, "UPDATE recordings SET first_ts = ?, last_ts = ?", -1, &st, NULL) ==
			    SQLITE_OK) {
				bind_value(st, 1, &c);
				bind_value(st, 2, &c);
				sqlite3_step(st);
			}
			sqlite3_finalize(st);
		} else if (op == 22) {
			sqlite3_exec(db, "DROP TABLE IF EXISTS wakes; CREATE VIEW wakes AS WITH RECURSIVE"
				     " r(task_id, ts, waker_thread_id, waker_task_id, poll_id, delay) AS"
				     " (SELECT 1, 1, 1, 1, 1, 1 UNION ALL SELECT task_id, ts + 1, 1, 1, poll_id, delay"
				     " FROM r) SELECT * FROM r", NULL, NULL, NULL);
		} else {
			sqlite3_exec(db, "UPDATE callsites SET parent_id = id", NULL, NULL, NULL);
		}
	}
	/* Some inputs get the indexes the importer creates, some do not. */
	if (size & 1) {
		const char *ix = strstr(ss_schema_sql, SS_SCHEMA_INDEX_MARKER);
		if (ix)
			sqlite3_exec(db, ix, NULL, NULL, NULL);
	}
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
}

static char db_path[64];
static FILE *devnull, *real_stderr;

/* The report's own messages ("took longer than 0.5 s") would flood the log:
 * its stderr stream points at /dev/null meanwhile (unless FUZZ_DB_VERBOSE is
 * set). Sanitizer reports write to file descriptor 2 directly and still show. */
static void quiet(bool on)
{
	if (devnull)
		stderr = on ? devnull : real_stderr;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!db_path[0]) {
		snprintf(db_path, sizeof db_path, "/tmp/stallscope-fuzz-db.%ld.db", (long)getpid());
		/* The report prints to stdout. */
		if (!freopen("/dev/null", "w", stdout))
			abort();
		if (!getenv("FUZZ_DB_VERBOSE")) {
			devnull = fopen("/dev/null", "w");
			real_stderr = stderr;
		}
	}
	build(db_path, data, size);
	char a0[] = "report", a1[] = "--timeout", a2[] = "0.5", a3[] = "--json";
	char *argv_text[] = { a0, a1, a2, db_path, NULL };
	char *argv_json[] = { a0, a1, a2, a3, db_path, NULL };
	quiet(true);
	cmd_report(4, argv_text);
	cmd_report(5, argv_json);
	/* Every export format (to stdout: /dev/null here), of CPU samples,
	 * off-CPU samples, or a worker and a window, by turns; then the
	 * database compared with itself, as text or JSON by turns. */
	char e0[] = "export", fmt[] = "--format", q[] = "-q", off[] = "--offcpu";
	char wk[] = "--worker", w1[] = "1", fr[] = "--from", t1[] = "1ms";
	char *formats[] = { (char[]){ "folded" }, (char[]){ "chrome" }, (char[]){ "pprof" } };
	for (int f = 0; f < 3; f++) {
		char *argv_export[] = { e0, a1, a2, q, fmt, formats[f], db_path, off, wk, w1, fr, t1, NULL };
		if (size % 3 == 0)
			cmd_export(7, argv_export);
		else if (size % 3 == 1)
			cmd_export(8, argv_export);
		else
			cmd_export(12, argv_export);
	}
	char c0[] = "compare";
	char *argv_compare[] = { c0, a1, a2, db_path, db_path, a3, NULL };
	cmd_compare(size & 2 ? 6 : 5, argv_compare);
	quiet(false);
#ifdef FUZZ_DB_RENDER
	char err[512];
	struct tl_db *d = tl_db_open(db_path, err, sizeof err);
	if (d) {
		struct tl_png_options o = { .width = 400, .height = 0 };
		cairo_surface_t *surf = tl_png_render_surface(d, &o, NULL);
		if (surf)
			cairo_surface_destroy(surf);
		o.from = (int64_t)(size * 1000);
		o.to = o.from + 1000 + (data && size ? data[0] : 0);
		surf = tl_png_render_surface(d, &o, NULL);
		if (surf)
			cairo_surface_destroy(surf);
		tl_db_close(d);
	}
#endif
	unlink(db_path);
	return 0;
}
