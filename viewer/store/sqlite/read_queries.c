/*
 * read_queries.c - see read_queries.h. The statements read what the importer
 * wrote (schema/stallscope.sql); the indexes they rely on are named next to
 * them. Time ranges use "ts < to AND ts + dur >= from" for intervals, so a
 * zero-length one at from still counts, and "ts >= from AND ts < to" for
 * instants.
 */
#include "read_queries.h"
#include "segment_format.h" /* META "switches" */

#include <stddef.h>

#include "poll_chunks.h"

/* Recording filters. */
#define REC_OF(col) "(?1 = 0 OR " col " = ?1)"
#define THREAD_IN_REC(col) "(?1 = 0 OR " col " IN (SELECT id FROM threads WHERE recording_id = ?1))"
#define TASK_IN_REC(col) "(?1 = 0 OR " col " IN (SELECT id FROM tasks WHERE recording_id = ?1))"
/* The export filters: a worker by index (and runtime), a task by number. */
#define WORKER_OK(col) "(?4 IS NULL OR " col " IN (SELECT id FROM workers WHERE idx = ?4 AND " \
	"(?5 IS NULL OR runtime = ?5)))"
#define TASK_OK_POLL(col) "(?6 IS NULL OR " col " IN (SELECT p.id FROM tasks t CROSS JOIN polls p ON " \
	"p.task_id = t.id WHERE t.task = ?6))"
/* An off-CPU sample's time off CPU: the blocked or preempted interval its
 * switch began, which the kernel writes a few microseconds after the sample
 * (a seek on cpu_rows' key, through the view). */
#define OFFCPU_NS(s) "(SELECT c.dur FROM cpu_intervals c WHERE c.thread_id = " s ".thread_id AND c.ts >= " s \
	".ts AND c.ts < " s ".ts + 1000000 AND c.state <> 'on-cpu' ORDER BY c.ts LIMIT 1)"
#define LOC_TEXT(l) "coalesce(" l ".function, '?') || ' (' || coalesce(" l ".file, '?') || ':' || " \
	"coalesce(" l ".line, 0) || ')'"

static const char *const sql[SS_Q_COUNT] = {
	[SS_Q_SCOPE_SPAN] = "SELECT count(*), min(first_ts), max(last_ts) FROM recordings WHERE " REC_OF("id"),

	[SS_Q_SCAN_WORKERS] = "SELECT id, recording_id, thread_id,"
			      " EXISTS (SELECT 1 FROM metadata m WHERE m.recording_id = workers.recording_id"
			      "   AND m.key = '" SS_META_SWITCHES "' AND instr(m.value, '" SS_SWITCHES_NOT_PARKED "') = 1)"
			      " FROM workers WHERE " REC_OF("recording_id") " ORDER BY id",
	[SS_Q_SCAN_CPU] = "SELECT thread_id, state, ts, dur FROM cpu_intervals WHERE ts < ?3 AND ts + dur >= ?2"
			  " AND thread_id IN (SELECT thread_id FROM workers WHERE " REC_OF("recording_id") ")",
	/* Every task of the recordings: the scan counts spawns and ends in the
	 * window, and the tasks alive in it, from the one pass. */
	[SS_Q_SCAN_TASKS] = "SELECT id, spawn_ts, end_ts FROM tasks WHERE " REC_OF("recording_id")
			    " AND ?2 = ?2 AND ?3 = ?3",
	[SS_Q_SCAN_TASK_SPAWNS] = "SELECT id, spawn_ts, end_ts, recording_id, location_id FROM tasks WHERE "
				  REC_OF("recording_id") " AND ?2 = ?2 AND ?3 = ?3",
	[SS_Q_SCAN_THREADS] = "SELECT id, recording_id FROM threads",
	/* The scans below read every row and test the window in C
	 * (ss_scope_overlaps, ss_scope_holds): SQLite would read the time
	 * columns twice. */
	/* In no order: since schema 11 queue_depths is a view of queue_rows and
	 * of the reports polls carry (a sort would cost more than the scan). */
	[SS_Q_SCAN_QUEUES] = "SELECT thread_id, global, local, ts FROM queue_depths WHERE ?1 = ?1 AND ?2 = ?2"
			     " AND ?3 = ?3",
	/* The recording is the worker's, looked up by the scan; a NULL location or
	 * task reads as 0. */
	[SS_Q_SCAN_POLLS] = "SELECT id, location_id, worker_id, dur, task_id, ts, incomplete FROM polls"
			    " WHERE ?1 = ?1 AND ?2 = ?2 AND ?3 = ?3 ORDER BY id",
	[SS_Q_SCAN_WAKES] = "SELECT poll_id, delay, task_id, ts FROM wakes WHERE " TASK_IN_REC("task_id")
			    " AND ?2 = ?2 AND ?3 = ?3 ORDER BY rowid",
	[SS_Q_SCAN_PARKS] = "SELECT worker_id, ts, dur FROM parks WHERE ?1 = ?1 AND ?2 = ?2 AND ?3 = ?3",
	[SS_Q_SCAN_DELAYS_JOIN] = "SELECT coalesce(p.location_id, 0), w.delay, w.ts, w.poll_id FROM wakes w"
				  " JOIN polls p ON p.id = w.poll_id WHERE w.delay IS NOT NULL AND w.ts >= ?2"
				  " AND w.ts < ?3 AND p.ts < ?3 AND p.ts + p.dur >= ?2 AND " TASK_IN_REC("w.task_id")
				  " ORDER BY w.rowid",
	[SS_Q_STALL_POLLS] = "SELECT poll_id, id FROM stalls WHERE poll_id IS NOT NULL",

	[SS_Q_SUM_RECORDINGS] =
		"SELECT r.id, r.executable, r.host, r.pid, r.anchor_real_ns - r.anchor_mono_ns, "
		"  r.first_ts, r.last_ts, "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id), "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id AND s.sealed), "
		"  (SELECT count(*) FROM segments s WHERE s.recording_id = r.id AND s.damage IS NOT NULL "
		"     AND s.damage <> 'truncated'), "
		"  (SELECT coalesce(sum(events), 0) FROM segments s WHERE s.recording_id = r.id), "
		"  (SELECT group_concat(value, '; ') FROM metadata m WHERE m.recording_id = r.id "
		"     AND m.key = 'sampler'), r.arch "
		"FROM recordings r WHERE " REC_OF("r.id") " ORDER BY r.id",
	[SS_Q_SUM_COUNT_RECORDINGS] = "SELECT count(*) FROM recordings",
	[SS_Q_SUM_WORKERS] = "SELECT w.id, coalesce(w.runtime, '?'), w.idx, coalesce(t.name, ''), w.recording_id "
			     "FROM workers w LEFT JOIN threads t ON t.id = w.thread_id WHERE " REC_OF("w.recording_id")
			     " ORDER BY w.recording_id, w.runtime, w.idx, w.id",
	[SS_Q_SUM_STALL_KINDS] = "SELECT coalesce(s.kind, 'unknown'), count(*) FROM stalls s"
				 " LEFT JOIN workers w ON w.id = s.worker_id WHERE " REC_OF("w.recording_id")
				 " AND s.ts < ?3 AND s.ts + coalesce(s.dur, 0) >= ?2 GROUP BY 1 ORDER BY 2 DESC, 1",
	[SS_Q_SUM_STALL_LOCATIONS] =
		"SELECT " LOC_TEXT("l") ", count(*), max(s.dur), group_concat(DISTINCT coalesce(s.kind, 'unknown')), "
		"  (SELECT sc.callsite_id FROM stall_captures sc JOIN stalls s2 ON s2.id = sc.stall_id "
		"     WHERE s2.location_id IS s.location_id AND sc.callsite_id IS NOT NULL "
		"     ORDER BY s2.dur DESC, sc.idx LIMIT 1) "
		"FROM stalls s LEFT JOIN locations l ON l.id = s.location_id LEFT JOIN workers w ON w.id = s.worker_id "
		"WHERE " REC_OF("w.recording_id") " AND s.ts < ?3 AND s.ts + coalesce(s.dur, 0) >= ?2 "
		"GROUP BY s.location_id ORDER BY count(*) DESC, s.location_id LIMIT ?4",
	/* The queues and the task counts come from the scan. */
	[SS_Q_SUM_COUNTS] =
		"SELECT (SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'events' AND ts < ?3 AND ts + dur >= ?2 "
		"     AND " REC_OF("recording_id") "), "
		"  (SELECT coalesce(sum(count), 0) FROM loss WHERE source = 'samples' AND ts < ?3 AND ts + dur >= ?2 "
		"     AND " REC_OF("recording_id") "), "
		"  (SELECT count(*) FROM task_dumps d WHERE d.ts >= ?2 AND d.ts < ?3 AND " TASK_IN_REC("d.task_id") ")",
	[SS_Q_SUM_LOCATION] = "SELECT function, file, line FROM locations WHERE id = ?1",

	[SS_Q_POLL] = "SELECT p.ts, p.dur, p.worker_id, coalesce(w.runtime, '?') || '#' || w.idx, w.thread_id, t.task,"
		      " p.task_id, p.location_id, CASE WHEN l.id IS NULL THEN NULL ELSE " LOC_TEXT("l") " END,"
		      " w.recording_id, p.incomplete FROM polls p JOIN workers w ON w.id = p.worker_id"
		      " LEFT JOIN tasks t ON t.id = p.task_id LEFT JOIN locations l ON l.id = p.location_id"
		      " WHERE p.id = ?1",
	/* cpu_rows' key: the interval open at ?2 by a seek back, then
	 * those starting before ?3 (a thread's intervals do not overlap). */
	[SS_Q_POLL_CPU] = "SELECT state, ts, dur FROM cpu_intervals WHERE thread_id = ?1 AND ts >= coalesce("
			  "(SELECT max(ts) FROM cpu_intervals WHERE thread_id = ?1 AND ts <= ?2), ?2) AND ts < ?3",
	[SS_Q_POLL_STALL] = "SELECT s.kind, c.callsite_id, c.syscall_name, c.reason FROM stalls s"
			    " LEFT JOIN stall_captures c ON c.rowid = (SELECT c2.rowid FROM stall_captures c2"
			    " WHERE c2.stall_id = s.id ORDER BY c2.callsite_id IS NULL, c2.idx LIMIT 1) WHERE s.id = ?1",
	[SS_Q_POLL_SAMPLES] = "SELECT kind, callsite_id, weight FROM samples WHERE thread_id = ?1 AND ts >= ?2"
			      " AND ts < ?3",
	[SS_Q_HAS_CPU] = "SELECT EXISTS (SELECT 1 FROM cpu_intervals WHERE thread_id = ?1)",

	/* poll_chunks; a worker's polls do not overlap, so only the one
	 * begun last at or before ?2 can reach into the range from before. */
	[SS_Q_WORKER_POLLS_IN] = "SELECT id, ts, dur FROM polls WHERE worker_id = ?1 AND ts < ?3 AND ts >= coalesce("
				 "(SELECT max(ts) FROM polls WHERE worker_id = ?1 AND ts <= ?2 AND"
				 SS_POLL_LAST_IDS("id", "?1", "?2") "), ?2) AND" SS_POLL_IDS("id", "?1", "?2", "?3"),
	[SS_Q_TASK_DUMPS] = "SELECT d.task_id, d.callsite_id, coalesce(d.location_id, t.location_id) FROM task_dumps d"
			    " LEFT JOIN tasks t ON t.id = d.task_id WHERE d.task_id IS NOT NULL ORDER BY d.rowid",
	[SS_Q_LOSS] = "SELECT l.recording_id, l.source, group_concat(DISTINCT l.reason), sum(l.count), min(l.ts),"
		      " max(l.ts + l.dur), count(*), CASE l.source WHEN 'events' THEN (SELECT coalesce(sum(events), 0)"
		      " FROM segments s WHERE s.recording_id = l.recording_id) ELSE (SELECT count(*) FROM samples sm"
		      " JOIN threads th ON th.id = sm.thread_id WHERE th.recording_id = l.recording_id) END"
		      " FROM loss l WHERE " REC_OF("l.recording_id") " AND l.ts < ?3 AND l.ts + l.dur >= ?2"
		      " GROUP BY l.recording_id, l.source ORDER BY 1, 2",
	[SS_Q_DAMAGED] = "SELECT recording_id, count(*), group_concat(file, ', ') FROM segments WHERE "
			 REC_OF("recording_id") " AND damage IS NOT NULL AND damage <> 'truncated' AND ?2 = ?2"
			 " AND ?3 = ?3 GROUP BY recording_id ORDER BY recording_id",

	/* A whole trace is one pass over the table; any narrower scope goes
	 * through samples_by_thread and cpu_rows' key per thread. */
	[SS_Q_STACK_ALL_SAMPLES] = "SELECT callsite_id, weight, poll_id FROM samples WHERE kind = ?1",
	[SS_Q_STACK_THREADS] = "SELECT id FROM threads t WHERE EXISTS (SELECT 1 FROM samples s WHERE s.thread_id = t.id)"
			       " OR EXISTS (SELECT 1 FROM cpu_intervals c WHERE c.thread_id = t.id) ORDER BY id",
	[SS_Q_STACK_RECORDING_THREADS] = "SELECT id FROM threads t WHERE recording_id = ?1 AND (EXISTS (SELECT 1"
					 " FROM samples s WHERE s.thread_id = t.id) OR EXISTS (SELECT 1 FROM"
					 " cpu_intervals c WHERE c.thread_id = t.id)) ORDER BY id",
	[SS_Q_STACK_RECORDING] = "SELECT 1 FROM recordings WHERE id = ?1",
	[SS_Q_STACK_SAMPLES_IN] = "SELECT callsite_id, weight, poll_id FROM samples WHERE thread_id = ?1 AND ts >= ?2"
				  " AND ts < ?3 AND kind = ?4",
	[SS_Q_STACK_OFFCPU_IN] = "SELECT ts, callsite_id, poll_id FROM samples WHERE thread_id = ?1 AND ts >= ?2"
				 " AND ts < ?3 AND kind = 'offcpu' ORDER BY ts",
	[SS_Q_STACK_SWITCH_BEFORE] = "SELECT ts FROM cpu_intervals WHERE thread_id = ?1 AND ts <= ?2 ORDER BY ts DESC"
				     " LIMIT 2",
	[SS_Q_STACK_SWITCHES_IN] = "SELECT ts, dur, state FROM cpu_intervals WHERE thread_id = ?1 AND ts >= ?2"
				   " AND ts < ?3 ORDER BY ts",
	/* stalls and their captures are small tables */
	[SS_Q_STACK_CAPTURES] = "SELECT s.thread_id, c.ts, c.callsite_id FROM stall_captures c JOIN stalls s"
				" ON s.id = c.stall_id WHERE c.kind = 'blocked' AND c.callsite_id IS NOT NULL"
				" AND s.thread_id IS NOT NULL ORDER BY s.thread_id, c.ts",
	[SS_Q_STACK_WORKER] = "SELECT thread_id FROM workers WHERE id = ?1",
	[SS_Q_STACK_POLL] = "SELECT w.thread_id, p.ts, p.dur FROM polls p JOIN workers w ON w.id = p.worker_id"
			    " WHERE p.id = ?1",
	[SS_Q_STACK_STALL] = "SELECT coalesce(w.thread_id, s.thread_id), coalesce(p.ts, s.ts), coalesce(p.dur, s.dur)"
			     " FROM stalls s LEFT JOIN polls p ON p.id = s.poll_id LEFT JOIN workers w"
			     " ON w.id = p.worker_id WHERE s.id = ?1",
	/* No index on task_id or location_id: one pass over polls. */
	[SS_Q_STACK_TASK_POLLS] = "SELECT w.thread_id, p.ts, p.dur FROM polls p JOIN workers w ON w.id = p.worker_id"
				  " WHERE p.task_id = ?1 ORDER BY w.thread_id, p.ts",
	[SS_Q_STACK_LOCATION_POLLS] = "SELECT w.thread_id, p.ts, p.dur FROM polls p JOIN workers w"
				      " ON w.id = p.worker_id WHERE p.location_id = ?1 ORDER BY w.thread_id, p.ts",
	[SS_Q_EXPORT_COUNT_WORKERS] = "SELECT count(*) FROM workers WHERE " REC_OF("recording_id") " AND idx = ?4"
				      " AND (?5 IS NULL OR runtime = ?5)",
	[SS_Q_EXPORT_COUNT_TASKS] = "SELECT count(*) FROM tasks WHERE " REC_OF("recording_id") " AND task = ?6",
	[SS_Q_EXPORT_SAMPLES] = "SELECT s.callsite_id, s.thread_id, s.weight, s.ts, CASE WHEN ?7 = 'offcpu' THEN "
				OFFCPU_NS("s") " END, s.worker_id FROM samples s WHERE s.kind = ?7 AND s.ts >= ?2"
				" AND s.ts < ?3 AND " THREAD_IN_REC("s.thread_id") " AND " WORKER_OK("s.worker_id")
				" AND " TASK_OK_POLL("s.poll_id"),
	/* Worker lanes, and the other threads that were sampled. */
	[SS_Q_EXPORT_THREADS] = "SELECT t.id, t.recording_id, t.tid, t.name, w.id, w.runtime, w.idx FROM threads t"
				" LEFT JOIN workers w ON w.thread_id = t.id WHERE " REC_OF("t.recording_id")
				" AND (w.id IS NOT NULL OR EXISTS (SELECT 1 FROM samples s WHERE s.thread_id = t.id"
				" AND s.kind = ?7 AND s.ts >= ?2 AND s.ts < ?3)) AND (?4 IS NULL OR w.id IS NOT NULL)"
				" AND " WORKER_OK("w.id") " ORDER BY t.recording_id, w.id IS NULL, w.runtime, w.idx, t.id",
	/* poll_chunks, with the seek back of SS_Q_WORKER_POLLS_IN. */
	[SS_Q_EXPORT_POLLS] = "SELECT p.id, p.ts, p.dur, p.incomplete, t.task, p.task_id, l.function, CASE WHEN l.id IS"
			      " NULL THEN NULL ELSE " LOC_TEXT("l") " END FROM polls p LEFT JOIN tasks t ON"
			      " t.id = p.task_id LEFT JOIN locations l ON l.id = p.location_id WHERE p.worker_id = ?8"
			      " AND p.ts < ?3 AND p.ts >= coalesce((SELECT max(ts) FROM polls WHERE worker_id = ?8 AND"
			      " ts <= ?2 AND" SS_POLL_LAST_IDS("id", "?8", "?2") "), ?2) AND p.ts + p.dur >= ?2 AND"
			      SS_POLL_IDS("p.id", "?8", "?2", "?3") " AND (?6 IS NULL OR t.task = ?6) ORDER BY p.ts",
	[SS_Q_EXPORT_PARKS] = "SELECT ts, dur, incomplete FROM parks WHERE worker_id = ?8 AND ts < ?3 AND ts >= coalesce("
			      "(SELECT max(ts) FROM parks WHERE worker_id = ?8 AND ts <= ?2), ?2) AND ts + dur >= ?2"
			      " ORDER BY ts",
	[SS_Q_EXPORT_CPU] = "SELECT state, ts, dur FROM cpu_intervals WHERE thread_id = ?8 AND ts < ?3 AND ts >= coalesce("
			    "(SELECT max(ts) FROM cpu_intervals WHERE thread_id = ?8 AND ts <= ?2), ?2) ORDER BY ts",
	[SS_Q_EXPORT_THREAD_SAMPLES] = "SELECT s.ts, s.callsite_id, s.weight, CASE WHEN ?7 = 'offcpu' THEN "
				       OFFCPU_NS("s") " END, s.poll_id FROM samples s WHERE s.thread_id = ?8"
				       " AND s.kind = ?7 AND s.ts >= ?2 AND s.ts < ?3 AND " TASK_OK_POLL("s.poll_id")
				       " ORDER BY s.ts",
	[SS_Q_EXPORT_STALLS] = "SELECT c.ts, c.idx, c.kind, c.syscall_name, c.reason, c.callsite_id, s.id, s.ts, s.dur,"
			       " t.task, CASE WHEN l.id IS NULL THEN NULL ELSE " LOC_TEXT("l") " END FROM stall_captures c"
			       " JOIN stalls s ON s.id = c.stall_id LEFT JOIN tasks t ON t.id = s.task_id"
			       " LEFT JOIN locations l ON l.id = s.location_id WHERE s.worker_id = ?8 AND c.ts >= ?2"
			       " AND c.ts < ?3 AND (?6 IS NULL OR t.task = ?6) ORDER BY c.ts",
	[SS_Q_EXPORT_MAPPINGS] = "SELECT m.id, m.path, m.build_id, m.start, m.\"end\", m.\"offset\" FROM mappings m"
				 " LEFT JOIN recordings r ON r.id = m.recording_id WHERE " REC_OF("m.recording_id")
				 " ORDER BY m.path IS NOT r.executable, m.id",
	[SS_Q_EXPORT_FRAME] = "SELECT mapping_id, inline_depth FROM frames WHERE id = ?1",

	/* samples_by_thread: a poll's samples come together. */
	[SS_Q_CMP_SAMPLES] = "SELECT s.poll_id, s.callsite_id, p.location_id FROM samples s LEFT JOIN polls p ON"
			     " p.id = s.poll_id WHERE s.kind = 'cpu' AND s.ts >= ?2 AND s.ts < ?3 AND "
			     THREAD_IN_REC("s.thread_id") " ORDER BY s.thread_id, s.ts",
	[SS_Q_CALLSITE] = "SELECT parent_id, frame_id FROM callsites WHERE id = ?1",
	[SS_Q_FRAME] = "SELECT f.function, f.file, f.line, m.path, f.rel_pc FROM frames f"
		       " LEFT JOIN mappings m ON m.id = f.mapping_id WHERE f.id = ?1",
	[SS_Q_CALLER_EDGES] = "SELECT DISTINCT c.frame_id, p.frame_id FROM callsites c JOIN callsites p ON p.id = c.parent_id",
};

const char *ss_read_sql(enum ss_read_query q)
{
	return (unsigned)q < SS_Q_COUNT ? sql[q] : NULL;
}

sqlite3_stmt *ss_read_prepare(sqlite3 *db, enum ss_read_query q)
{
	sqlite3_stmt *st = NULL;
	const char *text = ss_read_sql(q);
	if (!text || sqlite3_prepare_v2(db, text, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}
