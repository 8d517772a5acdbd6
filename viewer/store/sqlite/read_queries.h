/*
 * read_queries.h - the named read queries of the stored trace: every statement
 * the analysis (report, findings, exports) runs, in one table, so that a schema
 * change is one file's edit and a second store can answer the same names.
 *
 * Queries of a scope take ?1 = recording id (0: all), ?2 = from, ?3 = to
 * (database ns, [from, to)); see viewer/analysis/scope.h. The others say what
 * they take next to their name.
 */
#ifndef STALLSCOPE_READ_QUERIES_H
#define STALLSCOPE_READ_QUERIES_H

#include <sqlite3.h>

enum ss_read_query {
	/* count of recordings, min(first_ts), max(last_ts) of ?1 (0: all) */
	SS_Q_SCOPE_SPAN,
	/* the one-pass scans (viewer/analysis/scan.c), of a scope */
	SS_Q_SCAN_WORKERS,     /* id, recording_id, thread_id; by id */
	SS_Q_SCAN_CPU,         /* thread_id, state, ts, dur of the workers' threads */
	SS_Q_SCAN_TASKS,       /* id, spawn_ts, end_ts of tasks alive in the window */
	SS_Q_SCAN_POLLS,       /* id, location, worker, dur, task, ts, incomplete; by id */
	SS_Q_SCAN_WAKES,       /* poll_id, delay, task_id, ts; by rowid */
	SS_Q_SCAN_PARKS,       /* worker_id, ts, dur */
	SS_Q_SCAN_DELAYS_JOIN, /* location, delay, wake ts, poll id */
	SS_Q_STALL_POLLS,      /* poll_id, id of every stall */
	/* the summary (viewer/analysis/summary.c), of a scope */
	SS_Q_SUM_RECORDINGS,
	SS_Q_SUM_COUNT_RECORDINGS, /* count(*) of recordings, all */
	SS_Q_SUM_WORKERS,
	SS_Q_SUM_STALL_KINDS,
	SS_Q_SUM_STALL_LOCATIONS, /* ?4 = rows */
	SS_Q_SUM_COUNTS,
	SS_Q_SUM_LOCATION,     /* ?1 = location id: function, file, line */
	/* one poll (viewer/analysis/polls.c) */
	SS_Q_POLL,             /* ?1 poll: ts, dur, worker_id, worker, thread_id, task, task_id,
	                        * location_id, location, recording_id, incomplete */
	SS_Q_POLL_CPU,         /* ?1 thread, ?2 from, ?3 to: state, ts, dur of the intervals overlapping */
	SS_Q_POLL_STALL,       /* ?1 stall: kind, first capture's callsite, syscall name, reason */
	SS_Q_POLL_SAMPLES,     /* ?1 thread, ?2 from, ?3 to: kind, callsite_id, weight */
	SS_Q_HAS_CPU,          /* ?1 thread: 1 when it has CPU intervals */
	/* checks (viewer/analysis/check_*.c) */
	SS_Q_WORKER_POLLS_IN,  /* ?1 worker, ?2 from, ?3 to: id, ts, dur of the polls overlapping */
	SS_Q_QUEUE_PEAKS,      /* scope: recording, max global, its ts; per recording */
	SS_Q_QUEUE_FIRST_OVER, /* scope window, ?1 recording, ?4 level: first ts over it, rows over it */
	SS_Q_SPAWNS_NEAR,      /* ?1 recording, ?2 from, ?3 to: location_id, spawns; the most first */
	SS_Q_TASK_DUMPS,       /* task_id, callsite_id, location_id of every task dump, in order */
	SS_Q_LOSS,             /* scope: recording, source, reasons, count, first ts, last end,
	                        * rows, items recorded; per recording and source */
	SS_Q_DAMAGED,          /* scope: recording, damaged segments, their files */
	/* stacks (viewer/analysis/stacks.c) */
	SS_Q_CALLSITE,         /* ?1 callsite: parent_id, frame_id */
	SS_Q_FRAME,            /* ?1 frame: function, file, line, mapping path, rel_pc */
	SS_Q_CALLER_EDGES,     /* every distinct (frame, its caller's frame) of the callsite tree */
	SS_Q_COUNT
};

/* The SQL of a query, for messages and tests. */
const char *ss_read_sql(enum ss_read_query q);

/* Prepares a query; NULL on failure (sqlite3_errmsg says why). The caller
 * finalizes it. */
sqlite3_stmt *ss_read_prepare(sqlite3 *db, enum ss_read_query q);

#endif /* STALLSCOPE_READ_QUERIES_H */
