/*
 * view_queries.c - see view_queries.h. The per-frame queries go through
 * poll_chunks (poll_chunks.h) for polls, the (worker_id, ts) key of parks, the (thread_id, ts) indexes of
 * cpu_intervals and samples, and the primary key of summary_rows; the
 * rest look rows up by rowid or by stall_id.
 */
#include "view_queries.h"
#include "segment_format.h" /* META "switches" */

#include <stddef.h>

#include "poll_chunks.h"

/* Rows of summary_rows of the level of bucket_ns ?1 (its key, where the
 * worker_summaries view's computed bucket_ns and ts would scan), and those of
 * them whose bucket starts in [lo, hi): bucket * ?1 >= lo means bucket >= lo / ?1
 * rounded up (SQLite's / truncates, which rounds a negative value up already). */
/* 50000: SS_SUMMARY_SCALE_NS (schema/summary_levels.h; sqlite_sink.c checks it) */
#define SUMMARY_LEVEL "scale = ?1 / 50000 AND ?1 % 50000 = 0"
#define SUMMARY_FROM(lo, hi) \
	" bucket >= " lo " / ?1 + (" lo " % ?1 > 0) AND bucket < " hi " / ?1 + (" hi " % ?1 > 0)"

/* Time of [?2, ?3) covered by the rows of a (key, ts) indexed interval table:
 * the interval open at ?2 by a seek back (the table's rows of one key do not
 * overlap), the rest by range. */
#define COVERED(table, key, extra) \
	"SELECT coalesce(sum(min(ts + dur, ?3) - max(ts, ?2)), 0) FROM (" \
	" SELECT * FROM (SELECT ts, dur FROM " table " WHERE " key " = ?1 AND ts < ?2 " extra \
	" ORDER BY ts DESC LIMIT 1)" \
	" UNION ALL SELECT ts, dur FROM " table " WHERE " key " = ?1 AND ts >= ?2 AND ts < ?3 " extra ")" \
	" WHERE ts + dur > ?2"

/* Polls in which a function ran: the callsites whose frame matches and every
 * callsite under them, then the polls of their samples and stall captures,
 * and the polls spawned at a matching location. */
#define SEARCH_BY_FUNCTION \
	"WITH RECURSIVE hit(id) AS (" \
	"  SELECT c.id FROM callsites c JOIN frames f ON f.id = c.frame_id WHERE f.function LIKE ?1 ESCAPE '\\'" \
	"  UNION SELECT c.id FROM callsites c JOIN hit ON c.parent_id = hit.id)," \
	" p(id) AS (" \
	"  SELECT s.poll_id FROM samples s WHERE s.poll_id IS NOT NULL AND s.callsite_id IN (SELECT id FROM hit)" \
	"  UNION SELECT st.poll_id FROM stall_captures c JOIN stalls st ON st.id = c.stall_id" \
	"   WHERE st.poll_id IS NOT NULL AND c.callsite_id IN (SELECT id FROM hit)" \
	"  UNION SELECT id FROM polls WHERE location_id IN" \
	"   (SELECT id FROM locations WHERE function LIKE ?1 ESCAPE '\\'))" \
	" SELECT polls.id, polls.ts, polls.dur, polls.worker_id, coalesce(polls.task_id, 0)" \
	" FROM p JOIN polls ON polls.id = p.id ORDER BY polls.ts LIMIT ?2"

static const char *const sql[SS_V_COUNT] = {
	/* The poll (park, interval) open at ?2 is the last one starting before
	 * it: polls of a worker do not overlap, so one row is enough. */
	[SS_V_POLL_PREV] = "SELECT id, ts, dur, location_id, task_id, incomplete FROM polls"
			   " WHERE worker_id = ?1 AND ts < ?2 AND" SS_POLL_LAST_IDS("id", "?1", "?2 - 1")
			   " ORDER BY ts DESC LIMIT 1",
	[SS_V_POLL_RANGE] = "SELECT id, ts, dur, location_id, task_id, incomplete FROM polls"
			    " WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3 AND" SS_POLL_IDS("id", "?1", "?2", "?3")
			    " ORDER BY ts",
	[SS_V_PARK_PREV] = "SELECT ts, dur FROM parks WHERE worker_id = ?1 AND ts < ?2"
			   " ORDER BY ts DESC LIMIT 1",
	[SS_V_PARK_RANGE] = "SELECT ts, dur FROM parks WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3"
			    " ORDER BY ts",
	[SS_V_CPU_PREV] = "SELECT ts, dur, state FROM cpu_intervals WHERE thread_id = ?1 AND ts < ?2"
			  " ORDER BY ts DESC LIMIT 1",
	[SS_V_CPU_RANGE] = "SELECT ts, dur, state FROM cpu_intervals WHERE thread_id = ?1"
			   " AND ts >= ?2 AND ts < ?3 ORDER BY ts",
	/* ts only: answered from the (thread_id, ts) index without the table. */
	[SS_V_SAMPLE_RANGE] = "SELECT ts FROM samples WHERE thread_id = ?1 AND ts >= ?2 AND ts < ?3"
			      " ORDER BY ts",
	[SS_V_SUMMARY] = "SELECT bucket * ?1, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns"
			 " FROM summary_rows WHERE " SUMMARY_LEVEL " AND worker_id = ?2 AND"
			 SUMMARY_FROM("?3", "?4") " ORDER BY bucket",

	[SS_V_FIRST_TS] = "SELECT min(first_ts) FROM recordings",
	[SS_V_LAST_TS] = "SELECT max(last_ts) FROM recordings",
	[SS_V_ANCHOR_MONO] = "SELECT anchor_mono_ns FROM recordings ORDER BY id LIMIT 1",
	[SS_V_ANCHOR_REAL] = "SELECT anchor_real_ns FROM recordings ORDER BY id LIMIT 1",
	[SS_V_HAS_SUMMARIES] = "SELECT EXISTS (SELECT 1 FROM summary_rows)",
	/* Through the primary key: a lookup, not a scan. */
	[SS_V_HAS_LEVEL] = "SELECT EXISTS (SELECT 1 FROM summary_rows WHERE " SUMMARY_LEVEL ")",
	/* Workers grouped by recording and runtime, in index order, with the
	 * count of their group for its title. */
	[SS_V_WORKER_LANES] =
		"SELECT w.id, w.thread_id, w.recording_id, coalesce(w.runtime, '?'), w.idx,"
		" t.name, t.tid,"
		" (SELECT count(*) FROM workers w2 WHERE w2.recording_id = w.recording_id"
		"   AND coalesce(w2.runtime, '?') = coalesce(w.runtime, '?')),"
		" EXISTS (SELECT 1 FROM cpu_intervals c WHERE c.thread_id = w.thread_id),"
		" EXISTS (SELECT 1 FROM samples x WHERE x.thread_id = w.thread_id),"
		" (SELECT count(*) FROM recordings),"
		" EXISTS (SELECT 1 FROM metadata m WHERE m.recording_id = w.recording_id"
		"   AND m.key = '" SS_META_SWITCHES "' AND instr(m.value, '" SS_SWITCHES_NOT_PARKED "') = 1)"
		" FROM workers w JOIN threads t ON t.id = w.thread_id"
		" ORDER BY w.recording_id, coalesce(w.runtime, '?'), w.idx, w.id",
	/* EXISTS on the (thread_id, ts) indexes: no scan. */
	[SS_V_THREAD_LANES] =
		"SELECT t.id, t.recording_id, t.name, t.tid,"
		" EXISTS (SELECT 1 FROM cpu_intervals c WHERE c.thread_id = t.id),"
		" EXISTS (SELECT 1 FROM samples x WHERE x.thread_id = t.id)"
		" FROM threads t WHERE NOT EXISTS (SELECT 1 FROM workers w WHERE w.thread_id = t.id)"
		" ORDER BY t.recording_id, t.id",
	/* Stalls are polls past a threshold: few, so the viewer keeps them. */
	[SS_V_STALLS] = "SELECT id, ts, coalesce(dur, -1), coalesce(poll_id, 0), coalesce(task_id, 0),"
			" coalesce(worker_id, 0), coalesce(thread_id, 0), coalesce(location_id, 0),"
			" coalesce(detected_ts, ts), coalesce(kind, 'unknown')"
			" FROM stalls ORDER BY ts, id",
	[SS_V_LOCATIONS] = "SELECT id, coalesce(function, '?'), coalesce(file, ''), coalesce(line, 0)"
			   " FROM locations ORDER BY id LIMIT 100000",
	[SS_V_LOSSES] = "SELECT ts, dur, count, recording_id, coalesce(thread_id, 0), source,"
			" coalesce(reason, '') FROM loss ORDER BY ts",

	/* Rows with a poll_id are in poll_id order (schema), so a binary search
	 * on rowid finds a poll's wake. */
	[SS_V_WAKE_NEXT_LINKED] = "SELECT rowid, poll_id FROM wakes WHERE rowid >= ?1 AND poll_id IS NOT NULL"
				  " ORDER BY rowid LIMIT 1",
	[SS_V_WAKE_MAX_ROWID] = "SELECT coalesce(max(rowid), 0) FROM wakes",
	[SS_V_POLL_ROW] = "SELECT p.id, p.ts, p.dur, coalesce(p.task_id, 0), coalesce(t.task, -1),"
			  " coalesce(p.location_id, 0), p.worker_id, w.thread_id, coalesce(w.idx, -1),"
			  " p.incomplete, coalesce(w.runtime, '?'), coalesce(th.name, '')"
			  " FROM polls p JOIN workers w ON w.id = p.worker_id"
			  " LEFT JOIN tasks t ON t.id = p.task_id LEFT JOIN threads th ON th.id = w.thread_id"
			  " WHERE p.id = ?1",
	[SS_V_STATE_AT] = "SELECT state FROM cpu_intervals WHERE thread_id = ?1 AND ts <= ?2"
			  " AND ts + dur > ?2 ORDER BY ts DESC LIMIT 1",
	[SS_V_SAMPLE_COUNT] = "SELECT count(*) FROM samples WHERE thread_id = ?1 AND ts >= ?2 AND ts < ?3",
	/* The walk starts from one callsite (the callsite_frames view would
	 * expand every stack of the database before filtering). */
	[SS_V_STACK] = "WITH RECURSIVE w(cs, depth) AS (SELECT ?1, 0 UNION ALL"
		       " SELECT c.parent_id, w.depth + 1 FROM w JOIN callsites c ON c.id = w.cs"
		       " WHERE c.parent_id IS NOT NULL AND w.depth < 512)"
		       " SELECT w.depth, f.function, f.file, f.line, m.path, f.rel_pc, f.symbol_note"
		       " FROM w JOIN callsites c ON c.id = w.cs JOIN frames f ON f.id = c.frame_id"
		       " LEFT JOIN mappings m ON m.id = f.mapping_id ORDER BY w.depth",
	[SS_V_WAKE_ROW] = "SELECT w.ts, w.delay, coalesce(th.name, ''), coalesce(t.task, -1)"
			  " FROM wakes w LEFT JOIN threads th ON th.id = w.waker_thread_id"
			  " LEFT JOIN tasks t ON t.id = w.waker_task_id WHERE w.rowid = ?1 AND w.poll_id = ?2",
	/* Intervals are bounded by the recording (10 s back is far past the
	 * longest one), so the range stays on the index. */
	[SS_V_POLL_CPU_SPLIT] = "SELECT state, sum(min(ts + dur, ?3) - max(ts, ?2)) FROM cpu_intervals"
				" WHERE thread_id = ?1 AND ts < ?3 AND ts + dur > ?2 AND ts >= ?2 - 10000000000"
				" GROUP BY state ORDER BY 2 DESC",
	[SS_V_POLL_TOP_STACKS] = "SELECT callsite_id, count(*) FROM samples WHERE thread_id = ?1 AND ts >= ?2"
				 " AND ts < ?3 AND callsite_id IS NOT NULL GROUP BY callsite_id ORDER BY 2 DESC LIMIT 5",
	[SS_V_STALL_CAPTURES] = "SELECT ts, coalesce(kind, 'unknown'), syscall, callsite_id, coalesce(idx, 0),"
				" coalesce(reason, ''), syscall_name FROM stall_captures WHERE stall_id = ?1 ORDER BY idx, ts",
	[SS_V_TASK_ROW] = "SELECT t.task, coalesce(t.location_id, 0), p.task, t.spawn_ts, t.end_ts,"
			  " th.name, t.recording_id FROM tasks t LEFT JOIN tasks p ON p.id = t.parent_task_id"
			  " LEFT JOIN threads th ON th.id = t.spawn_thread_id WHERE t.id = ?1",
	[SS_V_WORKER_ROW] = "SELECT coalesce(w.runtime, '?'), coalesce(w.idx, -1), coalesce(t.name, ''),"
			    " coalesce(t.tid, 0), w.begin_ts, w.end_ts FROM workers w"
			    " JOIN threads t ON t.id = w.thread_id WHERE w.id = ?1",
	[SS_V_WORKER_TOTALS] = "SELECT sum(busy_ns), sum(parked_ns), sum(offcpu_ns), sum(polls), max(max_poll_ns)"
			       " FROM summary_rows WHERE " SUMMARY_LEVEL " AND worker_id = ?2",
	/* the 10 ms level: scale 200 */
	[SS_V_WORKER_RANGE_TOTALS] = "SELECT sum(busy_ns), sum(parked_ns), sum(offcpu_ns) FROM summary_rows"
				     " WHERE scale = 200 AND worker_id = ?1"
				     " AND bucket >= ?2 / 10000000 + (?2 % 10000000 > 0)"
				     " AND bucket < ?3 / 10000000 + (?3 % 10000000 > 0)",
	[SS_V_COVERED_POLLS] = COVERED("polls", "worker_id", "AND" SS_POLL_IDS("id", "?1", "?2 - 1", "?3")),
	[SS_V_COVERED_PARKS] = COVERED("parks", "worker_id", ""),
	[SS_V_COVERED_OFFCPU] = COVERED("cpu_intervals", "thread_id", "AND state <> 'on-cpu'"),
	[SS_V_LOCATION_TOTALS] = "SELECT location_id, count(*), sum(dur) FROM polls"
				 " WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3 AND" SS_POLL_IDS("id", "?1", "?2", "?3")
				 " GROUP BY location_id",

	/* polls through poll_chunks; task_dumps scanned by task: a task has few
	 * dumps, and the view reads one task at a time. */
	[SS_V_TASK_LIFE] = "SELECT t.task, t.recording_id, coalesce(t.location_id, 0), coalesce(p.task, -1),"
			   " coalesce(t.spawn_ts, -1), coalesce(t.end_ts, -1), coalesce(th.name, '')"
			   " FROM tasks t LEFT JOIN tasks p ON p.id = t.parent_task_id"
			   " LEFT JOIN threads th ON th.id = t.spawn_thread_id WHERE t.id = ?1",
	[SS_V_TASK_POLLS] = "SELECT id, ts, dur, incomplete FROM polls WHERE worker_id = ?1 AND ts >= ?2 AND ts < ?3"
			    " AND task_id = ?4 AND" SS_POLL_IDS("id", "?1", "?2", "?3") " ORDER BY ts",
	[SS_V_TASK_DUMPS] = "SELECT ts, coalesce(idle, -1), coalesce(callsite_id, 0), coalesce(location_id, 0)"
			    " FROM task_dumps WHERE task_id = ?1 ORDER BY ts",
	[SS_V_TASKS_BY_NUMBER] = "SELECT id FROM tasks WHERE task = ?1 ORDER BY id",
	/* A search runs on the background worker and may read every sample:
	 * the user waits for it, the frames do not. */
	[SS_V_SEARCH_BY_FUNCTION] = SEARCH_BY_FUNCTION,
	[SS_V_SEARCH_BY_LOCATION] = "SELECT id, ts, dur, worker_id, coalesce(task_id, 0) FROM polls WHERE location_id IN"
				    " (SELECT id FROM locations WHERE (file = ?3 OR file LIKE '%/' || ?3)"
				    " AND (?4 < 0 OR line = ?4)) ORDER BY ts LIMIT ?2",
	[SS_V_POLL_AT] = "SELECT id, coalesce(task_id, 0), dur FROM polls WHERE worker_id = ?1 AND ts = ?2 AND"
			 SS_POLL_LAST_IDS("id", "?1", "?2") " ORDER BY dur DESC LIMIT 1",

	[SS_V_KEEP_SNAPSHOT] = "SELECT 1 FROM sqlite_schema",
};

const char *ss_view_sql(enum ss_view_query q)
{
	return (unsigned)q < SS_V_COUNT ? sql[q] : NULL;
}

/* A database of schema 9 or older has worker_summaries as a table and no
 * summary_rows (until its next import): the same queries on its key, read
 * as they are (the view's computed bucket_ns and ts would scan). */
static const char *const before_v10[SS_V_COUNT] = {
	[SS_V_SUMMARY] = "SELECT ts, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns"
			 " FROM worker_summaries WHERE bucket_ns = ?1 AND worker_id = ?2"
			 " AND ts >= ?3 AND ts < ?4 ORDER BY ts",
	[SS_V_HAS_SUMMARIES] = "SELECT EXISTS (SELECT 1 FROM worker_summaries)",
	[SS_V_HAS_LEVEL] = "SELECT EXISTS (SELECT 1 FROM worker_summaries WHERE bucket_ns = ?1)",
	[SS_V_WORKER_TOTALS] = "SELECT sum(busy_ns), sum(parked_ns), sum(offcpu_ns), sum(polls), max(max_poll_ns)"
			       " FROM worker_summaries WHERE bucket_ns = ?1 AND worker_id = ?2",
	[SS_V_WORKER_RANGE_TOTALS] = "SELECT sum(busy_ns), sum(parked_ns), sum(offcpu_ns) FROM worker_summaries"
				     " WHERE bucket_ns = 10000000 AND worker_id = ?1 AND ts >= ?2 AND ts < ?3",
};

sqlite3_stmt *ss_view_prepare(sqlite3 *db, enum ss_view_query q, int persistent)
{
	sqlite3_stmt *st = NULL;
	const char *text = ss_view_sql(q);
	unsigned flags = persistent ? SQLITE_PREPARE_PERSISTENT : 0;
	if (text && sqlite3_prepare_v3(db, text, -1, flags, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		st = NULL;
		/* only for a database without summary_rows: on one that has it the old
		 * text still prepares (worker_summaries is a view there) and would scan
		 * every frame, hiding why the new one failed */
		if (before_v10[q] &&
		    sqlite3_table_column_metadata(db, NULL, "summary_rows", NULL, NULL, NULL, NULL, NULL,
						  NULL) != SQLITE_OK &&
		    sqlite3_prepare_v3(db, before_v10[q], -1, flags, &st, NULL) != SQLITE_OK) {
			sqlite3_finalize(st);
			st = NULL;
		}
	}
	return st;
}
