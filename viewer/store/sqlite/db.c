/*
 * db.c - see db.h. All inserts of one import run inside one transaction with
 * prepared statements; a fresh database also gets journal_mode=OFF and
 * synchronous=OFF: it is built under a temporary name and renamed into place
 * when complete (viewer/importer/target.c), so a crash only loses a file that
 * nobody sees, while an existing database keeps its rollback journal.
 */
#include "db.h"

#include <stdio.h>
#include <string.h>

#include "db_pipe.h"
#include "poll_chunks.h"
#include "schema_sql.h"

static const char *const stmt_sql[ST_COUNT] = {
	[ST_INS_RECORDING] = "INSERT INTO recordings(id, session_id, pid, executable, host, boot_id,"
		" anchor_mono_ns, anchor_real_ns) VALUES(?,?,?,?,?,?,?,?)",
	[ST_UPD_RECORDING_FILL] = "UPDATE recordings SET pid = coalesce(pid, ?2), executable = coalesce(executable, ?3),"
		" host = coalesce(host, ?4), boot_id = coalesce(boot_id, ?5),"
		" anchor_mono_ns = coalesce(anchor_mono_ns, ?6), anchor_real_ns = coalesce(anchor_real_ns, ?7)"
		" WHERE id = ?1",
	[ST_UPD_RECORDING_TS] = "UPDATE recordings SET first_ts = min(coalesce(first_ts, ?2), ?2),"
		" last_ts = max(coalesce(last_ts, ?3), ?3) WHERE id = ?1",
	[ST_INS_META] = "INSERT OR REPLACE INTO metadata(recording_id, key, value) VALUES(?,?,?)",
	[ST_INS_THREAD] = "INSERT INTO threads(id, recording_id, thread, tid, name) VALUES(?,?,?,?,?)",
	[ST_UPD_THREAD_NAME] = "UPDATE threads SET name = ?2, tid = ?3 WHERE id = ?1",
	[ST_UPD_THREAD_EXIT] = "UPDATE threads SET exit_ts = ?2 WHERE id = ?1",
	[ST_INS_WORKER] = "INSERT INTO workers(id, recording_id, thread_id, runtime, idx, begin_ts)"
		" VALUES(?,?,?,?,?,?)",
	[ST_UPD_WORKER_END] = "UPDATE workers SET end_ts = ?2 WHERE id = ?1",
	[ST_UPD_WORKER_RUNTIME] = "UPDATE workers SET runtime = ?2, idx = ?3,"
		" begin_ts = coalesce(begin_ts, ?4) WHERE id = ?1",
	[ST_INS_LOCATION] = "INSERT INTO locations(id, file, line, function) VALUES(?,?,?,?)",
	/* task_rows' task and life: the sink leaves out what id and spawn_ts say
	 * (schema/stallscope.sql) */
	[ST_INS_TASK] = "INSERT INTO task_rows(id, recording_id, task, location_id, parent_task_id,"
		" spawn_ts, life, spawn_thread_id) VALUES(?,?,?,?,?,?,?,?)",
	[ST_UPD_TASK_END] = "UPDATE task_rows SET life = ?2 - coalesce(spawn_ts, 0) WHERE id = ?1",
	/* queue_*: the worker's queue report the poll carries (sqlite_sink.c) */
	[ST_INS_POLL] = "INSERT INTO polls(id, worker_id, task_id, location_id, ts, dur, incomplete,"
		" queue_lead, queue_local, queue_global) VALUES(?,?,?,?,?,?,?,?,?,?)",
	/* OR IGNORE: parks are keyed on (worker_id, ts, dur, incomplete), and a
	 * zero-length park repeated at one instant (damaged or coarse clocks) is
	 * the same row again, not an error that ends the import. */
	[ST_INS_PARK] = "INSERT OR IGNORE INTO parks(worker_id, ts, dur, incomplete, cpu_begin_ns, cpu_end_ns, sched_wait_ns)"
		" VALUES(?,?,?,?,?,?,?)",
	[ST_INS_WAKE] = "INSERT INTO wakes(task_id, ts, waker_thread_id, waker_task_id, poll_id, delay)"
		" VALUES(?,?,?,?,?,?)",
	[ST_DEL_WAKE] = "DELETE FROM wakes WHERE rowid = ?1",
	[ST_INS_QUEUE] = "INSERT INTO queue_rows(thread_id, ts, local, global) VALUES(?,?,?,?)",
	/* name_id: the sink's cache of names (sqlite_sink.c) */
	[ST_INS_MARK] = "INSERT INTO mark_rows(thread_id, ts, name_id, value) VALUES(?,?,?,?)",
	/* A span without a span id, parent, fields or location is a span_cells
	 * row, one with them a span_full row (schema/stallscope.sql). */
	[ST_INS_SPAN] = "INSERT INTO span_cells(thread_id, ts, dur, name_id, shape) VALUES(?,?,?,?,?)",
	[ST_INS_SPAN_EXTRA] = "INSERT INTO span_full(thread_id, ts, dur, name_id, depth, incomplete, span_id,"
		" parent_span_id, fields, location_id) VALUES(?,?,?,?,?,?,?,?,?,?)",
	/* state: 1 on-cpu, 2 blocked, 3 preempted (sqlite_sink.c); OR IGNORE:
	 * cpu_rows is keyed on (thread_id, ts, dur, state), and an interval
	 * repeated exactly (damaged clocks) is the same row again. */
	[ST_INS_CPU] = "INSERT OR IGNORE INTO cpu_rows(thread_id, ts, dur, state, cpu) VALUES(?,?,?,?,?)",
	[ST_INS_SAMPLE] = "INSERT INTO samples(ts, thread_id, worker_id, poll_id, callsite_id, weight,"
		" kind, cpu) VALUES(?,?,?,NULL,?,?,?,?)",
	[ST_INS_LOSS] = "INSERT INTO loss(recording_id, thread_id, ts, dur, count, source, reason)"
		" VALUES(?,?,?,?,?,?,?)",
	[ST_INS_MAPPING] = "INSERT INTO mappings(id, recording_id, path, build_id, start, \"end\","
		" \"offset\") VALUES(?,?,?,?,?,?,?)",
	[ST_INS_FRAME] = "INSERT INTO frames(id, mapping_id, rel_pc, function, file, line,"
		" inline_depth, symbol_note, mangled) VALUES(?,?,?,?,?,?,?,?,?)",
	[ST_INS_CALLSITE] = "INSERT INTO callsites(id, parent_id, frame_id, depth) VALUES(?,?,?,?)",
	[ST_INS_STALL] = "INSERT INTO stalls(id, worker_id, task_id, ts, kind, thread_id, location_id,"
		" detected_ts) VALUES(?,?,?,?,?,?,?,?)",
	[ST_UPD_STALL_END] = "UPDATE stalls SET dur = ?2 WHERE id = ?1",
	[ST_INS_STALL_CAPTURE] = "INSERT INTO stall_captures(stall_id, ts, kind, syscall, callsite_id,"
		" idx, reason, syscall_name) VALUES(?,?,?,?,?,?,?,?)",
	[ST_UPD_RECORDING_ARCH] = "UPDATE recordings SET arch = ?2 WHERE id = ?1",
	[ST_INS_TASK_DUMP] = "INSERT INTO task_dumps(task_id, ts, idle, callsite_id, thread_id, location_id)"
		" VALUES(?,?,?,?,?,?)",
	[ST_INS_OTHER] = "INSERT INTO other_events(recording_id, thread_id, ts, name, fields) VALUES(?,?,?,?,?)",
	/* scale and bucket: the sink's bucket_ns / 50000 and ts / bucket_ns
	 * (schema/stallscope.sql) */
	[ST_UPSERT_SUMMARY] = "INSERT INTO summary_rows(scale, worker_id, bucket, busy_ns, parked_ns,"
		" offcpu_ns, polls, max_poll_ns) VALUES(?,?,?,?,?,?,?,?)"
		" ON CONFLICT(scale, worker_id, bucket) DO UPDATE SET"
		" busy_ns = busy_ns + excluded.busy_ns, parked_ns = parked_ns + excluded.parked_ns,"
		" offcpu_ns = offcpu_ns + excluded.offcpu_ns, polls = polls + excluded.polls,"
		" max_poll_ns = max(max_poll_ns, excluded.max_poll_ns)",
	/* Two chunks starting at one ts (an open poll continued by the next
	 * import, alone in its chunk): one row covering both. */
	[ST_INS_POLL_CHUNK] = "INSERT INTO poll_chunks(worker_id, ts, id_lo, id_hi) VALUES(?,?,?,?)"
		" ON CONFLICT(worker_id, ts) DO UPDATE SET id_lo = min(id_lo, excluded.id_lo),"
		" id_hi = max(id_hi, excluded.id_hi)",
};

/* A span_rows row that goes to span_cells (migration 8). */
#define SPAN_PLAIN "(span_id IS NULL AND parent_span_id IS NULL AND fields IS NULL AND location_id IS NULL)"

/* What each schema version added, for databases written by an older one
 * (schema/stallscope.sql has the whole current schema). */
const char *const ss_schema_migrations[SS_SCHEMA_VERSION + 1] = {
	[2] = "ALTER TABLE recordings ADD COLUMN arch TEXT;"
	      "ALTER TABLE stall_captures ADD COLUMN syscall_name TEXT;",
	[3] = "ALTER TABLE frames ADD COLUMN mangled TEXT;",
	/* dial9's parks and spans (other_events is a new table: the schema makes it) */
	[4] = "ALTER TABLE parks ADD COLUMN cpu_begin_ns INTEGER;"
	      "ALTER TABLE parks ADD COLUMN cpu_end_ns INTEGER;"
	      "ALTER TABLE parks ADD COLUMN sched_wait_ns INTEGER;"
	      "ALTER TABLE spans ADD COLUMN span_id INTEGER;"
	      "ALTER TABLE spans ADD COLUMN parent_span_id INTEGER;"
	      "ALTER TABLE spans ADD COLUMN fields TEXT;"
	      "ALTER TABLE spans ADD COLUMN location_id INTEGER REFERENCES locations(id);"
	      "ALTER TABLE import_open_spans ADD COLUMN span_id INTEGER;"
	      "ALTER TABLE import_open_spans ADD COLUMN parent_span_id INTEGER;"
	      "ALTER TABLE import_open_spans ADD COLUMN fields TEXT;"
	      "ALTER TABLE import_open_spans ADD COLUMN location_id INTEGER;",
	/* parks clustered on (worker_id, ts) instead of a rowid table and its
	 * parks_by_worker index (dropped with the old table): a third of the
	 * bytes of a park. */
	[5] = "CREATE TABLE parks_v5 (worker_id INTEGER NOT NULL REFERENCES workers(id), ts INTEGER NOT NULL,"
	      " dur INTEGER NOT NULL, incomplete INTEGER NOT NULL DEFAULT 0, cpu_begin_ns INTEGER,"
	      " cpu_end_ns INTEGER, sched_wait_ns INTEGER, PRIMARY KEY (worker_id, ts, dur, incomplete))"
	      " WITHOUT ROWID;"
	      "INSERT OR IGNORE INTO parks_v5 SELECT worker_id, ts, dur, incomplete, cpu_begin_ns, cpu_end_ns,"
	      " sched_wait_ns FROM parks ORDER BY worker_id, ts, dur, incomplete;"
	      "DROP TABLE parks;"
	      "ALTER TABLE parks_v5 RENAME TO parks;",
	/* The names of marks and spans stored once, in names: their rows move to
	 * mark_rows and span_rows (in their order), and the schema then makes
	 * marks and spans views of them with the name spelled out. */
	[6] = "CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
	      "INSERT INTO names(name) SELECT name FROM marks WHERE name IS NOT NULL"
	      " UNION SELECT name FROM spans WHERE name IS NOT NULL;"
	      "CREATE TABLE mark_rows (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " name_id INTEGER REFERENCES names(id), value INTEGER);"
	      "INSERT INTO mark_rows SELECT m.thread_id, m.ts, n.id, m.value FROM marks m"
	      " LEFT JOIN names n ON n.name = m.name ORDER BY m.rowid;"
	      "DROP TABLE marks;"
	      "CREATE TABLE span_rows (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " dur INTEGER NOT NULL, name_id INTEGER REFERENCES names(id), depth INTEGER NOT NULL,"
	      " incomplete INTEGER NOT NULL DEFAULT 0, span_id INTEGER, parent_span_id INTEGER, fields TEXT,"
	      " location_id INTEGER REFERENCES locations(id));"
	      "INSERT INTO span_rows SELECT s.thread_id, s.ts, s.dur, n.id, s.depth, s.incomplete, s.span_id,"
	      " s.parent_span_id, s.fields, s.location_id FROM spans s"
	      " LEFT JOIN names n ON n.name = s.name ORDER BY s.rowid;"
	      "DROP TABLE spans;",
	/* poll_chunks instead of polls_by_worker (poll_chunks.h), built from the
	 * polls already there. */
	[7] = "CREATE TABLE poll_chunks (worker_id INTEGER NOT NULL REFERENCES workers(id), ts INTEGER NOT NULL,"
	      " id_lo INTEGER NOT NULL, id_hi INTEGER NOT NULL, PRIMARY KEY (worker_id, ts)) WITHOUT ROWID;"
	      SS_POLL_CHUNKS_BUILD ";"
	      "DROP INDEX IF EXISTS polls_by_worker;",
	/* tasks and queue_depths become views of narrower tables (the schema
	 * makes the views): the rows move in their order. */
	[8] = "CREATE TABLE task_rows (id INTEGER PRIMARY KEY, recording_id INTEGER NOT NULL REFERENCES recordings(id),"
	      " task INTEGER, location_id INTEGER REFERENCES locations(id),"
	      " parent_task_id INTEGER REFERENCES task_rows(id), spawn_ts INTEGER, life INTEGER,"
	      " spawn_thread_id INTEGER REFERENCES threads(id));"
	      "INSERT INTO task_rows SELECT id, recording_id, CASE WHEN task <> id THEN task END, location_id,"
	      " parent_task_id, spawn_ts, end_ts - coalesce(spawn_ts, 0), spawn_thread_id FROM tasks ORDER BY id;"
	      "DROP TABLE tasks;"
	      "CREATE TABLE queue_rows (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " local INTEGER, global INTEGER);"
	      "INSERT INTO queue_rows SELECT thread_id, ts, local, global FROM queue_depths ORDER BY rowid;"
	      "DROP TABLE queue_depths;"
	      /* span_rows splits into span_cells and span_full (in their order) */
	      "CREATE TABLE span_cells (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " dur INTEGER NOT NULL, name_id INTEGER REFERENCES names(id), shape INTEGER NOT NULL);"
	      "CREATE TABLE span_full (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " dur INTEGER NOT NULL, name_id INTEGER REFERENCES names(id), depth INTEGER NOT NULL,"
	      " incomplete INTEGER NOT NULL DEFAULT 0, span_id INTEGER, parent_span_id INTEGER, fields TEXT,"
	      " location_id INTEGER REFERENCES locations(id));"
	      "INSERT INTO span_cells SELECT thread_id, ts, dur, name_id, depth * 2 + (incomplete <> 0)"
	      " FROM span_rows WHERE " SPAN_PLAIN " ORDER BY rowid;"
	      "INSERT INTO span_full SELECT thread_id, ts, dur, name_id, depth, incomplete, span_id, parent_span_id,"
	      " fields, location_id FROM span_rows WHERE NOT " SPAN_PLAIN " ORDER BY rowid;"
	      "DROP VIEW IF EXISTS spans;"
	      "DROP TABLE span_rows;",
	/* cpu_intervals becomes a view of cpu_rows, clustered on (thread_id, ts)
	 * with the state as a small integer (the schema makes the view); dropping
	 * the table drops cpu_intervals_by_thread. */
	[9] = "CREATE TABLE cpu_rows (thread_id INTEGER NOT NULL REFERENCES threads(id), ts INTEGER NOT NULL,"
	      " dur INTEGER NOT NULL, state NOT NULL, cpu INTEGER, PRIMARY KEY (thread_id, ts, dur, state))"
	      " WITHOUT ROWID;"
	      "INSERT OR IGNORE INTO cpu_rows SELECT thread_id, ts, dur,"
	      " CASE state WHEN 'on-cpu' THEN 1 WHEN 'blocked' THEN 2 WHEN 'preempted' THEN 3 ELSE state END, cpu"
	      " FROM cpu_intervals ORDER BY thread_id, ts, dur, state;"
	      "DROP TABLE cpu_intervals;",
	/* worker_summaries becomes a view of summary_rows, which keeps the level
	 * in units of 50 us and the bucket's number instead of two nanosecond
	 * values (the schema makes the view); the rows move in key order. */
	[10] = "CREATE TABLE summary_rows (scale INTEGER NOT NULL, worker_id INTEGER NOT NULL REFERENCES workers(id),"
	       " bucket INTEGER NOT NULL, busy_ns INTEGER NOT NULL, parked_ns INTEGER NOT NULL,"
	       " offcpu_ns INTEGER NOT NULL, polls INTEGER NOT NULL, max_poll_ns INTEGER NOT NULL,"
	       " PRIMARY KEY (scale, worker_id, bucket)) WITHOUT ROWID;"
	       "INSERT INTO summary_rows SELECT bucket_ns / 50000, worker_id, ts / bucket_ns, busy_ns, parked_ns,"
	       " offcpu_ns, polls, max_poll_ns FROM worker_summaries ORDER BY bucket_ns, worker_id, ts;"
	       "DROP TABLE worker_summaries;",
	/* A worker's queue reports go into its polls' rows (the schema makes the
	 * queue_depths view of both; the rows already in queue_rows stay), and the
	 * 50 us summary level is no longer written: an older database's goes, so
	 * that no level covers only the older part of it. */
	[11] = "ALTER TABLE polls ADD COLUMN queue_lead INTEGER;"
	       "ALTER TABLE polls ADD COLUMN queue_local INTEGER;"
	       "ALTER TABLE polls ADD COLUMN queue_global INTEGER;"
	       "DROP VIEW IF EXISTS queue_depths;"
	       "DELETE FROM summary_rows WHERE scale = 1;",
	/* (and its open 50 us buckets: ss_db_open, since a database written
	 * before import_open_summary existed has none to delete) */
};

static const char *const id_table[ID_COUNT] = {
	[ID_RECORDING] = "recordings", [ID_THREAD] = "threads", [ID_WORKER] = "workers",
	[ID_LOCATION] = "locations", [ID_TASK] = "task_rows", [ID_POLL] = "polls",
	[ID_MAPPING] = "mappings", [ID_FRAME] = "frames", [ID_CALLSITE] = "callsites",
	[ID_STALL] = "stalls", [ID_SEGMENT] = "segments",
};

int ss_db_exec(struct ss_db *d, const char *sql)
{
	char *msg = NULL;
	if (ss_db_sync(d) != 0)
		return -1;
	if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(d->err, sizeof d->err, "%s", msg ? msg : sqlite3_errmsg(d->db));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

static int64_t query_int(struct ss_db *d, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = 0;
	if (sqlite3_prepare_v2(d->db, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

int ss_db_open(struct ss_db *d, const char *path)
{
	memset(d, 0, sizeof *d);
	/* Memory statistics take a global mutex on every allocation; the importer
	 * does not read them. Fails harmlessly when SQLite is already initialized. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	/* One connection used by one thread: no per-call connection mutex. */
	if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		snprintf(d->err, sizeof d->err, "cannot open %s: %s", path,
			 d->db ? sqlite3_errmsg(d->db) : "out of memory");
		return -1;
	}
	/* An existing file that is not a database fails here, before anything is written. */
	int64_t had = 0;
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(d->db, "SELECT count(*) FROM sqlite_master WHERE name = 'schema_info'",
			       -1, &s, NULL) != SQLITE_OK) {
		int code = sqlite3_errcode(d->db);
		snprintf(d->err, sizeof d->err, "%s: %s%s", path, sqlite3_errmsg(d->db),
			 code == SQLITE_CORRUPT || code == SQLITE_NOTADB
				 ? " (not a complete database: an import by stallscope 0.1 that was killed"
				   " leaves such a file; remove it and import again)"
				 : "");
		return -1;
	}
	if (sqlite3_step(s) == SQLITE_ROW)
		had = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	d->fresh = had == 0;
	int64_t version = d->fresh ? SS_SCHEMA_VERSION : query_int(d, "SELECT max(version) FROM schema_info");
	if (version > SS_SCHEMA_VERSION) {
		snprintf(d->err, sizeof d->err, "%s was written by a newer stallscope (schema version %lld)",
			 path, (long long)version);
		return -1;
	}
	/* 16 KiB pages: fewer B-tree splits than the default 4 KiB for
	 * append-only bulk loading, while the part-filled last page of each table
	 * and index and the free tails that splits leave are a quarter of what
	 * 64 KiB pages left (steady recording: 0.37 bytes/event less); only
	 * settable before the first table exists. */
	if (d->fresh && ss_db_exec(d, "PRAGMA page_size=16384") != 0)
		return -1;
	/* secure_delete (on in Debian's SQLite) zeroes what page splits move
	 * away, for nothing in a file nobody has seen yet: 4% of the inserting
	 * thread's CPU on the steady recording (1.29 -> 1.24 s, 6 rounds). */
	if (ss_db_exec(d, d->fresh ? "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA secure_delete=OFF;"
				   : "PRAGMA synchronous=NORMAL;") != 0)
		return -1;
	/* 16 MiB of page cache: the B-tree tails being appended to and the
	 * summaries' upserts need a few MiB of pages. The cache size is
	 * also what each index sorter holds before it spills a sorted run to a
	 * temporary file (temp_store stays FILE), so memory does not grow with the
	 * trace; with 64 MiB and two sorter threads, index building alone took
	 * 150 MB. Two sorter threads shorten index creation. */
	if (ss_db_exec(d, "PRAGMA cache_size=-16384; PRAGMA locking_mode=EXCLUSIVE; PRAGMA threads=2;"
			  "PRAGMA foreign_keys=OFF;") != 0)
		return -1;
	if (ss_db_exec(d, "BEGIN") != 0)
		return -1;
	/* A database of an older schema gets what was added since, before the
	 * schema below (its views may use the new columns). */
	for (int64_t v = version + 1; v <= SS_SCHEMA_VERSION; v++)
		if (ss_schema_migrations[v] && ss_db_exec(d, ss_schema_migrations[v]) != 0)
			return -1;
	if (!d->fresh && version < 11 &&
	    query_int(d, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'import_open_summary'") &&
	    ss_db_exec(d, "DELETE FROM import_open_summary WHERE bucket_ns = 50000") != 0)
		return -1;
	/* Only the table part of the schema: the indexes come at ss_db_prepare
	 * (a fresh database) or after the load. */
	const char *mark = strstr(ss_schema_sql, SS_SCHEMA_INDEX_MARKER);
	size_t n = mark ? (size_t)(mark - ss_schema_sql) : strlen(ss_schema_sql);
	char *tables = sqlite3_mprintf("%.*s", (int)n, ss_schema_sql);
	if (!tables) {
		snprintf(d->err, sizeof d->err, "out of memory");
		return -1;
	}
	int rc = ss_db_exec(d, tables);
	sqlite3_free(tables);
	if (rc != 0)
		return -1;
	if (version < SS_SCHEMA_VERSION || d->fresh) {
		char sql[96];
		snprintf(sql, sizeof sql, "INSERT INTO schema_info(version) VALUES(%d)", SS_SCHEMA_VERSION);
		if (ss_db_exec(d, sql) != 0)
			return -1;
	}
	return 0;
}

int ss_db_next_ids(struct ss_db *d, int64_t next[ID_COUNT])
{
	if (ss_db_sync(d) != 0)
		return -1;
	for (int k = 0; k < ID_COUNT; k++) {
		char sql[128];
		snprintf(sql, sizeof sql, "SELECT coalesce(max(id), 0) + 1 FROM %s", id_table[k]);
		next[k] = query_int(d, sql);
		if (next[k] < 1)
			next[k] = 1;
	}
	return 0;
}

/* poll_chunks too: one row per 64 polls, each of them a bind and a step of
 * its own on the inserting thread (28k on the steady recording, 0.05 s of
 * its CPU); read back only after ss_db_flush (the links, a resume). */
static const enum ss_stmt batched[] = {
	ST_INS_TASK, ST_INS_POLL, ST_INS_PARK, ST_INS_WAKE, ST_INS_QUEUE, ST_INS_MARK, ST_INS_SPAN, ST_INS_SPAN_EXTRA,
	ST_INS_CPU, ST_INS_SAMPLE, ST_INS_OTHER, ST_UPSERT_SUMMARY, ST_INS_POLL_CHUNK,
};

int ss_db_prepare(struct ss_db *d, bool threaded)
{
	d->row.db = d;
	/* Before the first row: statements prepared after a schema change need no
	 * re-preparation at their first step. */
	if (d->fresh && ss_db_create_indexes(d) != 0)
		return -1;
	if (ss_batch_register(d->db) != 0) {
		snprintf(d->err, sizeof d->err, "registering ss_rows: %s", sqlite3_errmsg(d->db));
		return -1;
	}
	for (size_t i = 0; i < sizeof batched / sizeof batched[0]; i++) {
		const char *sql = stmt_sql[batched[i]];
		const char *into = strstr(sql, "INTO ") + 5;
		char table[64];
		snprintf(table, sizeof table, "%.*s", (int)strcspn(into, "("), into);
		if (ss_batch_prepare(d, batched[i], sql, table) != 0)
			return -1;
	}
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(d->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &d->st[i], NULL)
		    != SQLITE_OK) {
			snprintf(d->err, sizeof d->err, "preparing statement %d: %s", i, sqlite3_errmsg(d->db));
			return -1;
		}
	}
	return ss_db_pipe_start(d, threaded);
}

/* A fresh database gets its indexes at ss_db_prepare, before any row, so they
 * are kept up as rows arrive, as in a database imported into again. Building
 * them after the load looked cheaper (one sort instead of a B-tree descent per
 * row) but is not here: on the 20M-event bench the sort of polls_by_worker's 4M
 * entries spilled ~100 MB of runs to temporary files (each fresh page of page
 * cache costs ~14 us on this VM) and the build ran alone, 1.5-1.9 s after the
 * load, while the inserting thread kept up with the model with CPU to spare.
 * Kept up during the load, the index costs that thread ~1 s more, beside
 * the model thread, and the import about the same CPU in all (README). The price is a less densely packed index (72 MB
 * against 66 MB on the bench, measured with 64 KiB pages: pages split where each worker's
 * entries grow), as in any import into an existing database, which keeps its
 * indexes up the same way. */
int ss_db_create_indexes(struct ss_db *d)
{
	if (d->indexed)
		return 0;
	const char *mark = strstr(ss_schema_sql, SS_SCHEMA_INDEX_MARKER);
	if (mark && ss_db_exec(d, mark) != 0)
		return -1;
	d->indexed = true;
	return 0;
}

void ss_db_close(struct ss_db *d)
{
	ss_db_pipe_stop(d);
	for (int i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(d->st[i]);
	}
	ss_batch_free_all(d);
	if (d->db)
		sqlite3_close(d->db);
	memset(d->st, 0, sizeof d->st);
	d->db = NULL;
}
