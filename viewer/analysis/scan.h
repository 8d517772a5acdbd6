/*
 * scan.h - the figures of a trace that need every poll, park, wake, CPU
 * interval or task, computed in one pass over each table instead of one SQL
 * query per figure (on a 20M-event trace the queries took 20 s, mostly sorting
 * delays for percentiles). The checks and the report's summary read them.
 *
 * Percentiles are exact (hist.h): the delays are kept twice, overall and per
 * location, and sorted when a quantile is asked for.
 *
 * Everything is limited to a scope (scope.h): polls, parks and CPU intervals
 * overlapping its window (their time clipped to it), wakes inside it.
 */
#ifndef STALLSCOPE_SCAN_H
#define STALLSCOPE_SCAN_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "hmap.h"
#include "scope.h"

struct ss_scan_worker {
	int64_t id, recording_id, thread_id;
	uint64_t polls, busy, parked, longest;
	/* The worker thread's time by CPU state (cpu_intervals), in the window;
	 * with parks_unswitched, none inside its parks (FORMAT.md, SWITCH). */
	bool has_cpu, parks_unswitched;
	uint64_t on_cpu, blocked, preempted;
	uint64_t preempted_n;  /* preempted intervals overlapping the window */
};

struct ss_scan_location {
	int64_t id;    /* polls.location_id, 0 when NULL */
	struct ss_hist h;
	/* The wake with the longest delay that led to a poll here. */
	int64_t worst_wake_ts, worst_poll_id;
};

/* One recording's global run queue (queue_depths rows with a global depth,
 * of its threads, in the window). */
struct ss_scan_queue {
	int64_t recording_id;
	int64_t peak, peak_ts;       /* the deepest, and when it was first that deep */
	uint64_t rows;
	/* Over the lowest queue-buildup level in use: the first time and the rows
	 * (peak_ts and 0 when never). */
	int64_t first_over_ts;
	uint64_t rows_over;
	/* For a queue over the lowest queue-buildup level (wants_spawns): the
	 * spawn location with the most tasks of the recording spawned from
	 * first_over_ts to peak_ts (ties: the lower id), 0 when none. */
	bool wants_spawns;
	int64_t spawn_location, spawns;
};

/* A poll as the scan keeps it (the long ones, and the top list). */
struct ss_scan_poll {
	int64_t id, ts, dur, worker_id, task_id, location_id;
	bool incomplete;
};

#define SS_SCAN_LIVE_BUCKETS 100

struct ss_scan {
	struct ss_scan_worker *workers;   /* sorted by id */
	size_t n_workers;
	uint64_t polls;
	uint64_t over[3];                 /* polls over the long-poll info, warning, critical levels */
	struct ss_hist delays;            /* every wake that led to a poll */
	struct ss_scan_location *locs;    /* by the location of the poll the wake led to */
	size_t n_locs, cap_locs;
	struct ss_hmap loc_index;         /* location id -> index in locs */
	uint64_t max_delay;
	/* Polls longer than the shortest level any poll check grades (the
	 * longest first), at most SS_SCAN_MAX_LONG of them; long_total counts
	 * them all. */
	struct ss_scan_poll *long_polls;
	size_t n_long, cap_long;
	uint64_t long_total;
	int64_t long_min_ns;
	/* The top polls by duration, longest first. */
	struct ss_scan_poll *top;
	size_t n_top, want_top;
	/* Tasks alive at the end of the window, and those of them that were
	 * idle there: polled, not running, and not woken since their last poll
	 * (a task waiting in a run queue is runnable, not leaked). */
	uint64_t alive_at_end, idle_at_end;
	int64_t *idle_tasks;              /* ids of the idle ones, ascending */
	/* Live tasks at SS_SCAN_LIVE_BUCKETS + 1 evenly spaced times from the
	 * window's start to its end (the last event's time when open). */
	int64_t live[SS_SCAN_LIVE_BUCKETS + 1];
	int64_t live_at[SS_SCAN_LIVE_BUCKETS + 1]; /* the times of live[] */
	uint64_t tasks_seen;
	/* Tasks of the scope's recordings spawned, and ended, in the window. */
	int64_t spawned, finished;
	/* queue_depths in the window: rows, the deepest global and local queue
	 * (0 when none), and per recording the global queue, by recording id. */
	uint64_t queue_rows;
	int64_t global_max, local_max;
	struct ss_scan_queue *queues;
	size_t n_queues, queues_wanting_spawns;
	struct ss_hmap queue_spawns; /* (queue, location) -> spawns, while the tasks are scanned */
};

#define SS_SCAN_MAX_LONG 100000

/* Scans the scope's polls, parks, wakes, CPU intervals and tasks; keeps the
 * top `top` polls and those over long_min_ns. Returns 0, or -1 with a
 * message in err. */
int ss_scan_run(sqlite3 *db, const struct ss_scope *scope, size_t top, int64_t long_min_ns, struct ss_scan *s,
		char *err, size_t errlen);
/* The parts of ss_scan_run in scan_queues.c: the queue pass (before the
 * task pass), one spawned task for the queues' spawn locations, and the pick
 * of those locations once every task was seen. */
int ss_scan_queues(sqlite3 *db, const struct ss_scope *scope, struct ss_scan *s, char *err, size_t errlen);
int ss_scan_queue_spawn(struct ss_scan *s, int64_t recording_id, int64_t location_id, int64_t spawn_ts);
void ss_scan_queue_spawns_done(struct ss_scan *s);
const struct ss_scan_worker *ss_scan_worker(const struct ss_scan *s, int64_t id);
void ss_scan_free(struct ss_scan *s);
/* The live tasks held around bucket i of live[] (SS_SCAN_LIVE_BUCKETS + 1
 * values): the median of the buckets i - SS_SCAN_LIVE_HOLD to
 * i + SS_SCAN_LIVE_HOLD (on a steady ramp, live[i] itself), or where that
 * runs past either end the least of the buckets there are. Workers kept off
 * their CPUs for a few milliseconds (a busy machine) back up the run queues,
 * lifting live[] for a bucket or two; a level the live tasks hold over 5% of
 * the window is the program's. */
#define SS_SCAN_LIVE_HOLD 2
int64_t ss_scan_live_held(const int64_t *live, int i);

#endif /* STALLSCOPE_SCAN_H */
