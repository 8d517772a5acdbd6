/*
 * pg_import.c - `stallscope import PATH... --db postgresql://...`.
 *
 * An import is one transaction. The rows of the large tables go straight to
 * PostgreSQL from the model with COPY (pg_sink.c, in front of the stage's
 * sink); the rest is staged: the SQLite store takes it into a scratch file
 * exactly as it would for `-o trace.db` (the same model, the same incremental
 * state, so the rows are the same), and at the end every staged row goes to
 * PostgreSQL with COPY. For a recording the shared database already holds, the
 * stage first takes from it what an import continues from (threads, workers,
 * live tasks, the last polls and parks, open stalls and spans, pending wakes,
 * the import_* state, its segments, mappings, frames and stacks): rows that the
 * import may change are moved (DELETE ... RETURNING, inside the transaction)
 * and written back with the rest; rows that never change once written
 * (locations, mappings, frames, callsites) are only copied, and only new ones
 * go back. A failed import rolls back: the database is as before.
 *
 * Ids: the model numbers new rows from far above anything the database holds
 * (FAR), and every new id is moved into ranges reserved on the side connection
 * a chunk at a time (pg_ids.c), as rows are sent. So concurrent imports of
 * different recordings never wait for each other; two of the same recording
 * queue on an advisory lock on its session id.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg_sink.h"
#include "pg_store.h"
#include "poll_chunks.h"
#include "pg_tables.h"
#include "sqlite_store.h"

#define FAR ((int64_t)1 << 40)
/* Polls that ended this close to the end of what the database holds are staged
 * too, so that samples of the new data that fall in them (sampler records reach
 * a segment a little after the hooks' records) are linked as in one import. */
#define POLL_WINDOW_NS 10000000000LL

struct pgi {
	struct ss_pg pg;
	struct ss_sqlite_stage stage;
	struct ss_pg_ids ids;
	struct ss_pg_sink *sink;
	sqlite3_stmt *ins;          /* the statement the copy of a table inserts with */
	const struct pg_table *t;
	sqlite3 *db;
	uint64_t seeded;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The column list of t, each prefixed (an alias and a dot, or ""). */
static void cols_of(const struct pg_table *t, const char *prefix, char *out, size_t len)
{
	size_t n = 0;
	out[0] = 0;
	for (size_t i = 0; i < t->n_cols && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s%s", i ? ", " : "", prefix, t->cols[i].name);
}

static int insert_row(void *ctx, const char *const *v, size_t n)
{
	struct pgi *g = ctx;
	g->seeded++;
	return ss_pg_sqlite_row(&g->pg, g->ins, g->t, v, n);
}

/* Copies the rows of query (columns as table's, in order) into the stage. */
static int stage_rows(struct pgi *g, sqlite3 *db, const char *table, const char *query)
{
	const struct pg_table *t = ss_pg_table(table);
	if (!query) {
		snprintf(g->pg.err, sizeof g->pg.err, "out of memory");
		return -1;
	}
	g->t = t;
	g->ins = ss_pg_sqlite_insert(&g->pg, db, t, "INSERT");
	int rc = g->ins ? ss_pg_copy_out(&g->pg, g->pg.main, query, insert_row, g) : -1;
	sqlite3_finalize(g->ins);
	g->ins = NULL;
	return rc;
}

static int st_prepare(void *ctx, sqlite3 *db, char *err, size_t errlen)
{
	struct pgi *g = ctx;
	int rc = stage_rows(g, db, "locations", "SELECT id, file, line, function FROM locations");
	if (rc)
		snprintf(err, errlen, "%s: %s", g->pg.shown, g->pg.err);
	return rc;
}

/* A pending wake: its wakes row, then the note that points at it. */
static int pending_row(void *ctx, const char *const *v, size_t n)
{
	struct pgi *g = ctx;
	if (n < 8)
		return 0;
	static const struct pg_table wake = { "wakes", { { "task_id", ID_TASK }, { "ts", PGC_INT },
						     { "waker_thread_id", ID_THREAD }, { "waker_task_id", ID_TASK } },
					      4, NULL, 0, 0, NULL, NULL };
	static const struct pg_table note = { "import_pending_wakes", { { "recording_id", ID_RECORDING },
						{ "wake_rowid", PGC_INT }, { "task_id", ID_TASK },
						{ "wake_from", PGC_INT }, { "in_poll", PGC_INT } },
					      5, NULL, 0, 0, NULL, NULL };
	sqlite3_stmt *a = ss_pg_sqlite_insert(&g->pg, g->db, &wake, "INSERT");
	sqlite3_stmt *b = ss_pg_sqlite_insert(&g->pg, g->db, &note, "INSERT");
	const char *wv[4] = { v[2], v[5], v[6], v[7] };
	int rc = a && b ? ss_pg_sqlite_row(&g->pg, a, &wake, wv, 4) : -1;
	char rowid[24];
	snprintf(rowid, sizeof rowid, "%lld", (long long)sqlite3_last_insert_rowid(g->db));
	const char *nv[5] = { v[0], rowid, v[2], v[3], v[4] };
	if (!rc)
		rc = ss_pg_sqlite_row(&g->pg, b, &note, nv, 5);
	sqlite3_finalize(a);
	sqlite3_finalize(b);
	g->seeded++;
	return rc;
}

/* What a resumed recording's import reads or changes, in an order in which
 * each statement still finds the rows its conditions name (threads, workers
 * and the recording go last). {R} is the recording, {SINCE} the end of what
 * the database holds of it minus the poll window, {COLS} the table's columns. */
struct seed {
	const char *table, *sql;   /* sql: a DELETE ... RETURNING or a SELECT */
};

#define TH "(SELECT id FROM threads WHERE recording_id = {R})"
#define WK "(SELECT id FROM workers WHERE recording_id = {R})"
#define MP "(SELECT id FROM mappings WHERE recording_id = {R})"

static const struct seed seeds[] = {
	/* The graveyard is kept as its oldest and newest entries (sqlite_sink.c):
	 * the stage gets the tasks rows that ended since the oldest, whole (the
	 * stage holds no ended tasks to take them from); seed_recording then
	 * deletes the two. */
	{ "import_ended_tasks", "SELECT recording_id, task, id, end_ts FROM tasks WHERE recording_id = {R} AND end_ts >="
				" (SELECT min(end_ts) FROM import_ended_tasks WHERE recording_id = {R}) ORDER BY end_ts, id" },
	{ "spans", "DELETE FROM spans s USING import_open_spans o WHERE s.incomplete <> 0 AND o.thread_id IN " TH
		   " AND o.thread_id = s.thread_id AND o.ts = s.ts AND o.depth = s.depth RETURNING {COLS}" },
	{ "import_thread_state", "DELETE FROM import_thread_state WHERE thread_id IN " TH " RETURNING {COLS}" },
	{ "import_open_spans", "DELETE FROM import_open_spans WHERE thread_id IN " TH " RETURNING {COLS}" },
	{ "import_open_summary", "DELETE FROM import_open_summary WHERE worker_id IN " WK " RETURNING {COLS}" },
	{ "polls", "DELETE FROM polls WHERE worker_id IN " WK " AND (ts + dur >= {SINCE} OR (incomplete <> 0 AND"
		   " ts = (SELECT max(q.ts) FROM polls q WHERE q.worker_id = polls.worker_id))) RETURNING {COLS}" },
	{ "parks", "DELETE FROM parks WHERE worker_id IN " WK " AND incomplete <> 0 AND ts = (SELECT max(q.ts)"
		   " FROM parks q WHERE q.worker_id = parks.worker_id) RETURNING {COLS}" },
	{ "stalls", "DELETE FROM stalls WHERE thread_id IN " TH " AND (dur IS NULL OR poll_id IS NULL)"
		    " RETURNING {COLS}" },
	{ "tasks", "DELETE FROM tasks WHERE recording_id = {R} AND end_ts IS NULL RETURNING {COLS}" },
	{ "segments", "DELETE FROM segments WHERE recording_id = {R} RETURNING {COLS}" },
	{ "metadata", "DELETE FROM metadata WHERE recording_id = {R} RETURNING {COLS}" },
	{ "mappings", "SELECT {COLS} FROM mappings WHERE recording_id = {R}" },
	{ "frames", "SELECT {COLS} FROM frames WHERE mapping_id IN " MP },
	{ "callsites", "SELECT {COLS} FROM callsites WHERE frame_id IN (SELECT id FROM frames WHERE mapping_id IN " MP
		       ")" },
	{ "workers", "DELETE FROM workers WHERE recording_id = {R} RETURNING {COLS}" },
	{ "threads", "DELETE FROM threads WHERE recording_id = {R} RETURNING {COLS}" },
	{ "recordings", "DELETE FROM recordings WHERE id = {R} RETURNING {COLS}" },
};

/* sql with {R}, {SINCE} and {COLS} replaced; NULL when out of memory. */
static char *fill(const char *sql, long long r, long long since, const char *cols)
{
	size_t cap = strlen(sql) + 16 * strlen(cols) + 512, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *s = sql; *s && n + strlen(cols) + 32 < cap;) {
		if (strncmp(s, "{R}", 3) == 0)
			n += (size_t)snprintf(out + n, cap - n, "%lld", r), s += 3;
		else if (strncmp(s, "{SINCE}", 7) == 0)
			n += (size_t)snprintf(out + n, cap - n, "%lld", since), s += 7;
		else if (strncmp(s, "{COLS}", 6) == 0)
			n += (size_t)snprintf(out + n, cap - n, "%s", cols), s += 6;
		else
			out[n++] = *s++;
	}
	out[n] = 0;
	return out;
}

static int seed_recording(struct pgi *g, sqlite3 *db, int64_t rid)
{
	int64_t last = 0;
	char *q = ss_pg_fmt("SELECT last_ts FROM recordings WHERE id = %lld", (long long)rid);
	if (ss_pg_query_int(&g->pg, g->pg.main, q, INT64_MIN / 2 + POLL_WINDOW_NS, &last) != 0) {
		free(q);
		return -1;
	}
	free(q);
	long long r = (long long)rid, since = (long long)(last - POLL_WINDOW_NS);
	/* Pending wakes first: their wakes rows are found by content. */
	char *sql = ss_pg_fmt("DELETE FROM wakes w USING import_pending_wakes p WHERE p.recording_id = %lld"
			      " AND w.task_id = p.task_id AND w.ts = p.ts AND w.poll_id IS NULL AND"
			      " w.waker_thread_id IS NOT DISTINCT FROM p.waker_thread_id AND"
			      " w.waker_task_id IS NOT DISTINCT FROM p.waker_task_id", r);
	if (ss_pg_exec(&g->pg, g->pg.main, sql) != 0) {
		free(sql);
		return -1;
	}
	free(sql);
	const struct pg_table *pw = ss_pg_table("import_pending_wakes");
	char cols[1024];
	cols_of(pw, "", cols, sizeof cols);
	sql = ss_pg_fmt("DELETE FROM import_pending_wakes WHERE recording_id = %lld RETURNING %s", r, cols);
	g->db = db;
	int rc = sql ? ss_pg_copy_out(&g->pg, g->pg.main, sql, pending_row, g) : -1;
	free(sql);
	for (size_t i = 0; !rc && i < sizeof seeds / sizeof seeds[0]; i++) {
		const struct pg_table *t = ss_pg_table(seeds[i].table);
		bool del = strncmp(seeds[i].sql, "DELETE", 6) == 0;
		cols_of(t, del && strstr(seeds[i].sql, " s USING") ? "s." : "", cols, sizeof cols);
		sql = fill(seeds[i].sql, r, since, cols);
		rc = stage_rows(g, db, t->name, sql);
		free(sql);
	}
	/* The stage's polls of the recording (its last ones) get the chunks the
	 * sink's queries read them through (poll_chunks.h). */
	if (!rc) {
		sql = ss_pg_fmt(SS_POLL_CHUNKS_BUILD_WHERE("worker_id IN (SELECT id FROM workers WHERE recording_id = %lld)"),
				r);
		rc = sql && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
		if (sql && rc)
			snprintf(g->pg.err, sizeof g->pg.err, "staging poll_chunks: %s", sqlite3_errmsg(db));
		free(sql);
	}
	if (!rc) {
		sql = ss_pg_fmt("DELETE FROM import_ended_tasks WHERE recording_id = %lld", r);
		rc = sql ? ss_pg_exec(&g->pg, g->pg.main, sql) : -1;
		free(sql);
	}
	return rc;
}

static void st_wrap(void *ctx, struct ss_sink *sink)
{
	struct pgi *g = ctx;
	ss_pg_sink_wrap(g->sink, sink);
}

static int st_seed(void *ctx, sqlite3 *db, uint64_t session, int64_t *id, char *err, size_t errlen)
{
	struct pgi *g = ctx;
	*id = 0;
	/* Two imports of one recording take turns; the second sees the first's rows. */
	char *sql = ss_pg_fmt("SELECT pg_advisory_xact_lock(%lld)", (long long)session);
	int rc = ss_pg_exec(&g->pg, g->pg.main, sql);
	free(sql);
	if (!rc) {
		sql = ss_pg_fmt("SELECT id FROM recordings WHERE session_id = %lld", (long long)session);
		rc = ss_pg_query_int(&g->pg, g->pg.main, sql, 0, id);
		free(sql);
	}
	if (!rc && *id)
		rc = seed_recording(g, db, *id);
	if (rc)
		snprintf(err, errlen, "%s: %s", g->pg.shown, g->pg.err);
	return rc;
}

/* ---- the copy into PostgreSQL ------------------------------------------------------ */

/* The partitions an import's rows go to are made before its transaction
 * touches a partitioned table: CREATE TABLE ... PARTITION OF waits for every
 * transaction that holds a lock on the parent, so one made later could wait
 * for another import that waits for this one, a wait the server cannot see
 * (it goes through the clients). So: the slice of the next free owner id and
 * the one after it, which the ids of any import of usual size fall in; rows of
 * a slice that has no partition yet go to the default partition (and that
 * slice then stays there: a partition cannot be made over rows the default one
 * holds, so a failure here is not an error). */
static void partitions_ahead(struct pgi *g)
{
	for (size_t i = 0; i < ss_pg_n_tables; i++) {
		const struct pg_table *t = &ss_pg_tables[i];
		if (!t->part_col)
			continue;
		long long width = g->pg.width[i];
		int64_t slice = g->stage.floor[t->part_kind] / width;
		for (int64_t s = slice; s < slice + 2; s++) {
			char err[sizeof g->pg.err];
			memcpy(err, g->pg.err, sizeof err);
			ss_pg_ensure_partition(&g->pg, t->name, width, s);
			memcpy(g->pg.err, err, sizeof err);
		}
	}
}

/* Stalls the stage could not link to their poll (it was sent straight to the
 * database): linked there, as the SQLite store links them. */
static int link_stalls(struct pgi *g, sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT id FROM stalls WHERE poll_id IS NULL", -1, &st, NULL) != SQLITE_OK) {
		snprintf(g->pg.err, sizeof g->pg.err, "staging stalls: %s", sqlite3_errmsg(db));
		return -1;
	}
	struct ss_pg_buf ids = { 0 };
	while (sqlite3_step(st) == SQLITE_ROW) {
		ss_pg_buf_ch(&ids, ids.n ? ',' : '(');
		ss_pg_buf_int(&ids, ss_pg_ids_map(&g->ids, ID_STALL, sqlite3_column_int64(st, 0)));
	}
	sqlite3_finalize(st);
	ss_pg_buf_ch(&ids, ')');
	ss_pg_buf_ch(&ids, 0);
	int rc = ids.oom ? -1 : 0;
	if (rc)
		snprintf(g->pg.err, sizeof g->pg.err, "out of memory");
	if (!rc && ids.n > 2) {
		char *sql = ss_pg_fmt("UPDATE stalls SET poll_id = (SELECT p.id FROM polls p WHERE p.worker_id ="
				      " stalls.worker_id AND p.ts = stalls.ts ORDER BY p.id LIMIT 1)"
				      " WHERE poll_id IS NULL AND id IN %s", ids.p);
		rc = ss_pg_exec(&g->pg, g->pg.main, sql);
		free(sql);
	}
	ss_pg_buf_free(&ids);
	return rc;
}

static int push_table(struct pgi *g, sqlite3 *db, const struct pg_table *t, uint64_t *rows)
{
	char cols[1024], *sel;
	if (strcmp(t->name, "schema_info") == 0)
		return 0;
	/* The sink took every summary row (pg_sink.c). */
	if (strcmp(t->name, "worker_summaries") == 0)
		return 0;
	const int64_t *fl = g->stage.floor;
	if (strcmp(t->name, "import_pending_wakes") == 0) {
		sel = ss_pg_fmt("SELECT p.recording_id, p.wake_rowid, p.task_id, p.wake_from, p.in_poll, w.ts,"
				" w.waker_thread_id, w.waker_task_id FROM import_pending_wakes p JOIN wakes w"
				" ON w.rowid = p.wake_rowid");
	} else {
		cols_of(t, "", cols, sizeof cols);
		if (t->new_by_id)
			sel = ss_pg_fmt("SELECT %s FROM %s WHERE %s >= %lld", cols, t->name, t->new_by_id,
					(long long)fl[t->cols[0].kind]);
		else
			sel = ss_pg_fmt("SELECT %s FROM %s", cols, t->name);
	}
	if (!sel) {
		snprintf(g->pg.err, sizeof g->pg.err, "out of memory");
		return -1;
	}
	int rc = ss_pg_copy_in(&g->pg, db, sel, t, t->name, &g->ids, rows);
	free(sel);
	return rc;
}

static int push(struct pgi *g, const char *path, uint64_t *rows)
{
	sqlite3 *db;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		snprintf(g->pg.err, sizeof g->pg.err, "the staged import %s: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -1;
	}
	bool timing = getenv("STALLSCOPE_IMPORT_TIMING") != NULL;
	double t0 = now_s();
	int rc = ss_pg_sink_finish(g->sink, db, rows);
	if (timing)
		fprintf(stderr, "import: streamed rows done %.2f s after the stage\n", now_s() - t0);
	for (size_t i = 0; !rc && i < ss_pg_n_tables; i++) {
		t0 = now_s();
		uint64_t before = *rows;
		rc = push_table(g, db, &ss_pg_tables[i], rows);
		if (timing && *rows > before)
			fprintf(stderr, "import: copy %s: %llu rows in %.2f s\n", ss_pg_tables[i].name,
				(unsigned long long)(*rows - before), now_s() - t0);
	}
	if (!rc)
		rc = ss_pg_sink_link_old_samples(g->sink);
	if (!rc)
		rc = link_stalls(g, db);
	sqlite3_close(db);
	return rc;
}

/* ---- the command ---------------------------------------------------------------------- */

/* A scratch directory for the stage: $TMPDIR or /tmp. */
static int stage_dir(char *dir, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, len, "%s/stallscope-stage-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

int ss_pg_import(const char *url, bool quiet, FILE *log, ss_pg_stage_fn run, void *ctx)
{
	if (!log)
		log = stderr;
	struct pgi *g = calloc(1, sizeof *g);
	if (!g)
		return -1;
	double t0 = now_s();
	char dir[4096] = "", path[4200] = "";
	int rc = -1;
	uint64_t imported = 0, events = 0;
	int holder = 0;
	if (ss_pg_open(&g->pg, url) != 0 || ss_pg_ids_begin(&g->pg, &holder) != 0 ||
	    ss_pg_next_ids(&g->pg, g->stage.floor) != 0 ||
	    (partitions_ahead(g), 0) ||
	    ss_pg_exec(&g->pg, g->pg.main, "BEGIN") != 0) {
		if (!quiet)
			fprintf(log, "stallscope import: %s\n", g->pg.err);
		goto out;
	}
	for (int k = 0; k < ID_COUNT; k++)
		g->stage.floor[k] += FAR;
	ss_pg_ids_init(&g->ids, &g->pg, g->stage.floor, holder);
	char err[256];
	g->sink = ss_pg_sink_new(&g->pg, &g->ids, err, sizeof err);
	if (!g->sink) {
		if (!quiet)
			fprintf(log, "stallscope import: %s\n", err);
		goto out;
	}
	g->stage.ctx = g;
	g->stage.prepare = st_prepare;
	g->stage.seed = st_seed;
	g->stage.wrap = st_wrap;
	if (stage_dir(dir, sizeof dir) != 0) {
		if (!quiet)
			fprintf(log, "stallscope import: cannot make a scratch directory in %s: %s\n",
				getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
		dir[0] = 0;
		goto out;
	}
	snprintf(path, sizeof path, "%s/stage.db", dir);
	rc = run(ctx, path, &g->stage, g->pg.shown, &imported, &events);
	if (rc != 0)
		goto out;
	if (imported == 0) {
		/* Nothing new: leave the database as it is. */
		ss_pg_sink_drain(g->sink);
		ss_pg_exec(&g->pg, g->pg.main, "ROLLBACK");
		ss_pg_ids_drop(&g->ids);
		goto out;
	}
	double t1 = now_s();
	uint64_t rows = 0;
	if (push(g, path, &rows) != 0 || ss_pg_ids_keep(&g->ids) != 0 ||
	    ss_pg_exec(&g->pg, g->pg.main, "COMMIT") != 0) {
		if (!quiet)
			fprintf(log, "stallscope import: writing to %s failed: %s; nothing was imported (%s is as"
				" it was)\n", g->pg.shown, g->pg.err, g->pg.shown);
		rc = -1;
		goto out;
	}
	double t2 = now_s();
	if (!quiet)
		fprintf(log, "stallscope import: %llu rows written to %s (the last %.2f s after the segments"
			" were read); %llu events in %.2f s in all (%.2fM events/s)\n", (unsigned long long)rows, g->pg.shown, t2 - t1,
			(unsigned long long)events, t2 - t0, t2 > t0 ? (double)events / (t2 - t0) / 1e6 : 0);
out:
	if (g->sink) {
		ss_pg_sink_drain(g->sink);
		if (rc) {
			/* the leases are the side session's, not the transaction's */
			ss_pg_exec(&g->pg, g->pg.main, "ROLLBACK");
			ss_pg_ids_drop(&g->ids);
		}
	}
	ss_pg_sink_free(g->sink);
	ss_pg_ids_free(&g->ids);
	ss_pg_close(&g->pg);
	if (path[0])
		unlink(path);
	if (dir[0])
		rmdir(dir);
	free(g);
	return rc;
}
