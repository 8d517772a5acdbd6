/*
 * view_queries.h - the named read queries of the viewer: the timeline's range
 * queries run every frame, what it loads at open, and the text of its tooltips
 * and Details panel. With read_queries.h (the analysis's) this is every
 * statement that reads a stored trace, so a schema change is an edit here and
 * a second store can answer the same names.
 *
 * Each name says what it binds and returns. Times are database ns; ranges are
 * [?2, ?3) unless said otherwise. The indexes each one relies on are named next
 * to its SQL in view_queries.c: none of them may scan a large table.
 */
#ifndef STALLSCOPE_VIEW_QUERIES_H
#define STALLSCOPE_VIEW_QUERIES_H

#include <sqlite3.h>

enum ss_view_query {
	/* per frame: ?1 worker or thread; *_PREV the row open at ?2 (ts < ?2, the
	 * last one), *_RANGE the rows starting in [?2, ?3), in ts order */
	SS_V_POLL_PREV,         /* id, ts, dur, location_id, task_id, incomplete */
	SS_V_POLL_RANGE,
	SS_V_PARK_PREV,         /* ts, dur */
	SS_V_PARK_RANGE,
	SS_V_CPU_PREV,          /* ts, dur, state */
	SS_V_CPU_RANGE,
	SS_V_SAMPLE_RANGE,      /* ts */
	SS_V_SUMMARY,           /* ?1 bucket, ?2 worker, [?3, ?4): ts, busy, parked, offcpu, polls, max poll */
	/* at open */
	SS_V_FIRST_TS,          /* min(first_ts) of the recordings */
	SS_V_LAST_TS,           /* max(last_ts) */
	SS_V_ANCHOR_MONO,       /* the first recording's clock anchors */
	SS_V_ANCHOR_REAL,
	SS_V_HAS_SUMMARIES,     /* 1 when worker_summaries has a row */
	SS_V_HAS_LEVEL,         /* ?1 bucket ns: 1 when that summary level exists */
	SS_V_WORKER_LANES,      /* id, thread_id, recording_id, runtime, idx, thread name, tid,
	                         * workers of its runtime, has CPU, has samples, recordings,
	                         * parks unswitched (META "switches": no CPU state in parks) */
	SS_V_THREAD_LANES,      /* non-worker threads: id, recording_id, name, tid, has CPU, has samples */
	SS_V_STALLS,            /* id, ts, dur or -1, poll, task, worker, thread, location, detected, kind */
	SS_V_LOCATIONS,         /* id, function, file, line; at most 100000 */
	SS_V_LOSSES,            /* ts, dur, count, recording_id, thread_id or 0, source, reason */
	/* tooltips and Details */
	SS_V_WAKE_NEXT_LINKED,  /* ?1 rowid: rowid, poll_id of the first wake at or after it with a poll */
	SS_V_WAKE_MAX_ROWID,
	SS_V_POLL_ROW,          /* ?1 poll: id, ts, dur, task_id, task, location_id, worker_id, thread_id,
	                         * idx, incomplete, runtime, thread name */
	SS_V_STATE_AT,          /* ?1 thread, ?2 time: state of the interval holding it */
	SS_V_SAMPLE_COUNT,      /* ?1 thread, [?2, ?3): count */
	SS_V_STACK,             /* ?1 callsite: depth, function, file, line, mapping, rel_pc, note; leaf first */
	SS_V_WAKE_ROW,          /* ?1 wake rowid, ?2 poll: ts, delay, waker thread name, waker task */
	SS_V_POLL_CPU_SPLIT,    /* ?1 thread, [?2, ?3): state, time in it */
	SS_V_POLL_TOP_STACKS,   /* ?1 thread, [?2, ?3): callsite_id, samples; the 5 most */
	SS_V_STALL_CAPTURES,    /* ?1 stall: ts, kind, syscall, callsite_id, idx, reason, syscall name */
	SS_V_TASK_ROW,          /* ?1 task: task, location_id, parent task, spawn_ts, end_ts, spawn thread name,
	                         * recording_id */
	SS_V_WORKER_ROW,        /* ?1 worker: runtime, idx, thread name, tid, begin_ts, end_ts */
	SS_V_WORKER_TOTALS,     /* ?1 bucket, ?2 worker: busy, parked, offcpu, polls, max poll */
	SS_V_WORKER_RANGE_TOTALS, /* ?1 worker, [?2, ?3) of 10 ms buckets: busy, parked, offcpu */
	SS_V_COVERED_POLLS,     /* ?1 worker, [?2, ?3): time covered by its polls */
	SS_V_COVERED_PARKS,     /* ?1 worker, [?2, ?3): time covered by its parks */
	SS_V_COVERED_OFFCPU,    /* ?1 thread, [?2, ?3): time off CPU */
	SS_V_LOCATION_TOTALS,   /* ?1 worker, polls starting in [?2, ?3): location_id, polls, time */
	/* the task view (tl_task.c) */
	SS_V_TASK_LIFE,         /* ?1 task: task, recording_id, location_id, parent task or -1, spawn_ts or -1,
	                         * end_ts or -1, spawn thread name */
	SS_V_TASK_POLLS,        /* ?1 worker, [?2, ?3), ?4 task: id, ts, dur, incomplete; in ts order */
	SS_V_TASK_DUMPS,        /* ?1 task: ts, idle or -1, callsite_id or 0, location_id or 0; in ts order */
	SS_V_TASKS_BY_NUMBER,   /* ?1 the runtime's task number: tasks.id of each recording's */
	/* search (ss_search.c): ?2 the most rows; polls id, ts, dur, worker_id, task_id in ts order */
	SS_V_SEARCH_BY_FUNCTION, /* ?1 LIKE pattern (escape \\): polls whose samples or stall captures have a
	                          * frame of a matching function, or spawned at one */
	SS_V_SEARCH_BY_LOCATION, /* ?3 file (or its last components), ?4 line or -1 */
	/* findings (ss_findings.c) */
	SS_V_POLL_AT,           /* ?1 worker, ?2 ts: id, task_id, dur of the longest poll starting there */
	/* the query worker's read transaction */
	SS_V_KEEP_SNAPSHOT,     /* a row while the schema has one */
	SS_V_COUNT
};

/* The SQL of a query (NULL for an out-of-range name), for messages and tests. */
const char *ss_view_sql(enum ss_view_query q);

/* Prepares a query, with SQLITE_PREPARE_PERSISTENT when it is reused for the
 * connection's life. NULL on failure (sqlite3_errmsg says why); the caller
 * finalizes it. */
sqlite3_stmt *ss_view_prepare(sqlite3 *db, enum ss_view_query q, int persistent);

#endif /* STALLSCOPE_VIEW_QUERIES_H */
