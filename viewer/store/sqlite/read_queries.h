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
	SS_Q_SCAN_WORKERS,     /* id, recording_id, thread_id, parks unswitched (META
	                        * "switches": no CPU state inside its parks); by id */
	SS_Q_SCAN_CPU,         /* thread_id, state, ts, dur of the workers' threads */
	SS_Q_SCAN_TASKS,       /* id, spawn_ts, end_ts of the tasks */
	SS_Q_SCAN_TASK_SPAWNS, /* the same, then recording_id, location_id */
	SS_Q_SCAN_THREADS,     /* id, recording_id of every thread */
	SS_Q_SCAN_QUEUES,      /* thread_id, global, local, ts of the queue depths; in no order */
	SS_Q_SCAN_POLLS,       /* id, location, worker, dur, task, ts, incomplete; by id; every window */
	SS_Q_SCAN_WAKES,       /* poll_id, delay, task_id, ts; by rowid; every window */
	SS_Q_SCAN_PARKS,       /* worker_id, ts, dur; every window */
	SS_Q_SCAN_DELAYS_JOIN, /* location, delay, wake ts, poll id */
	SS_Q_STALL_POLLS,      /* poll_id, id of every stall */
	/* the summary (viewer/analysis/summary.c), of a scope */
	SS_Q_SUM_RECORDINGS,
	SS_Q_SUM_COUNT_RECORDINGS, /* count(*) of recordings, all */
	SS_Q_SUM_WORKERS,
	SS_Q_SUM_STALL_KINDS,
	SS_Q_SUM_STALL_LOCATIONS, /* ?4 = rows */
	SS_Q_SUM_COUNTS,       /* events lost, samples lost, task dumps */
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
	SS_Q_TASK_DUMPS,       /* task_id, callsite_id, location_id of every task dump, in order */
	SS_Q_LOSS,             /* scope: recording, source, reasons, count, first ts, last end,
	                        * rows, items recorded; per recording and source */
	SS_Q_DAMAGED,          /* scope: recording, damaged segments, their files */
	/* the stack views (viewer/analysis/sv_collect.c) */
	SS_Q_STACK_ALL_SAMPLES,   /* ?1 kind: callsite_id, weight, poll_id of every sample */
	SS_Q_STACK_THREADS,       /* id of every thread with samples or CPU intervals */
	SS_Q_STACK_RECORDING_THREADS, /* ... of recording ?1 */
	SS_Q_STACK_RECORDING,     /* 1 when recording ?1 exists */
	SS_Q_STACK_SAMPLES_IN,    /* ?1 thread, ?2 from, ?3 to, ?4 kind: callsite_id, weight, poll_id */
	SS_Q_STACK_OFFCPU_IN,     /* ?1 thread, ?2 from, ?3 to: ts, callsite_id, poll_id of off-CPU samples, by ts */
	SS_Q_STACK_SWITCH_BEFORE, /* ?1 thread, ?2 ts: ts of the two intervals begun last at or before ?2 */
	SS_Q_STACK_SWITCHES_IN,   /* ?1 thread, ?2 from, ?3 to: ts, dur, state of the intervals begun in, by ts */
	SS_Q_STACK_CAPTURES,      /* thread_id, ts, callsite_id of blocked stall captures with a stack, in order */
	SS_Q_STACK_WORKER,        /* ?1 worker: thread_id */
	SS_Q_STACK_POLL,          /* ?1 poll: thread_id, ts, dur */
	SS_Q_STACK_STALL,         /* ?1 stall: thread_id, ts, dur (NULL: never ended) of its poll */
	SS_Q_STACK_TASK_POLLS,    /* ?1 task: thread_id, ts, dur of its polls, by thread and ts */
	SS_Q_STACK_LOCATION_POLLS, /* ?1 location: thread_id, ts, dur of its polls, by thread and ts */
	/* exports (viewer/export/): a scope and ?4 worker index, ?5 runtime, ?6
	 * task number (each NULL: any), ?7 sample kind ('cpu' or 'offcpu'), and
	 * ?8 the worker or thread of the per-lane ones */
	SS_Q_EXPORT_COUNT_WORKERS, /* workers the filter names */
	SS_Q_EXPORT_COUNT_TASKS,   /* tasks the filter names */
	SS_Q_EXPORT_SAMPLES,   /* callsite_id, thread_id, weight, ts, off-CPU ns (offcpu: the interval begun
	                        * at the switch), worker_id */
	SS_Q_EXPORT_THREADS,   /* thread id, recording_id, tid, name, worker id, runtime, idx: the lanes */
	SS_Q_EXPORT_POLLS,     /* ?8 worker: id, ts, dur, incomplete, task, task_id, function, location; by ts */
	SS_Q_EXPORT_PARKS,     /* ?8 worker: ts, dur, incomplete; by ts */
	SS_Q_EXPORT_CPU,       /* ?8 thread: state, ts, dur; by ts */
	SS_Q_EXPORT_THREAD_SAMPLES, /* ?8 thread: ts, callsite_id, weight, off-CPU ns, poll_id; by ts */
	SS_Q_EXPORT_STALLS,    /* ?8 worker: capture ts, idx, kind, syscall name, reason, callsite_id, stall id,
	                        * stall ts, dur, task, location; by ts */
	SS_Q_EXPORT_MAPPINGS,  /* id, path, build_id, start, end, offset; the executables first */
	SS_Q_EXPORT_FRAME,     /* ?1 frame id: mapping_id, inline_depth */
	/* compare (viewer/analysis/compare.c), of a scope */
	SS_Q_CMP_SAMPLES,      /* CPU samples: poll_id, callsite_id, the poll's location_id; by thread, ts */
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
