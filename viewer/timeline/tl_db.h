/*
 * tl_db.h - the viewer's read-only view of an imported database: what is loaded
 * once at open (time bounds, the wall-clock anchor, the lanes, the stalls and the
 * lost-data ranges, all small) and the prepared range queries through which
 * everything else is fetched for the visible window only.
 *
 * Nothing here loads a table whole: polls, parks, CPU intervals and samples are
 * only ever read through indexed (worker or thread, ts) range queries.
 *
 * Threads: what tl_db_open loads is read-only afterwards and may be read from
 * any thread. The connection, its statements and the budget belong to one
 * thread at a time: the window's query worker (viewer/app/ss_worker.c), or the
 * only thread of --render-png and the tests. The window's main thread never
 * steps a statement.
 */
#ifndef STALLSCOPE_TL_DB_H
#define STALLSCOPE_TL_DB_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store_open.h"

struct ss_examiner;
#include "summary_levels.h"

/* A horizontal lane: a worker (polls, parks, CPU) or a non-worker thread that
 * has CPU samples or switches. */
struct tl_lane {
	int64_t worker_id;      /* 0: a thread lane */
	int64_t thread_id;
	int64_t recording_id;
	int group;              /* index into tl_db.groups */
	char *label;            /* "w0 ex-w0" */
	char *detail;           /* "tid 12227" */
	bool has_cpu;           /* cpu_intervals rows exist for the thread */
	bool parks_unswitched;  /* its CPU state is not recorded inside its parks */
	bool has_samples;
};

struct tl_group {
	char *title;            /* "example — 4 workers", "other threads" */
};

struct tl_stall {
	int64_t id, ts, dur, poll_id, task_id, worker_id, thread_id, location_id, detected_ts;
	char kind[16];          /* 'running', 'blocked', 'runnable', 'unknown' */
	int lane;               /* index into lanes, -1 when the thread has no lane */
};

struct tl_loss {
	int64_t ts, dur, count, recording_id;
	int lane;               /* -1: process-wide (every lane of the recording) */
	char source[12];        /* 'events' or 'samples' */
	char reason[32];
};

#define TL_MAX_LOCATIONS 100000

struct tl_location {
	int64_t id;
	char *name;             /* "function (file:line)", file without directories */
	char *short_name;       /* "function:line" */
};

enum tl_stmt {
	TL_POLL_PREV, TL_POLL_RANGE, TL_PARK_PREV, TL_PARK_RANGE,
	TL_CPU_PREV, TL_CPU_RANGE, TL_SAMPLE_RANGE, TL_SUMMARY,
	TL_STMT_COUNT
};

struct tl_db {
	sqlite3 *db;
	char *path;
	int64_t first_ts, last_ts;          /* over every recording */
	int64_t anchor_mono, anchor_real;   /* of the first recording; 0/0 when unknown */
	struct tl_lane *lanes;
	size_t n_lanes;
	struct tl_group *groups;
	size_t n_groups;
	struct tl_stall *stalls;            /* sorted by ts */
	size_t n_stalls;
	int64_t max_stall_dur;              /* longest stall: how far back a visible one can start */
	struct tl_loss *losses;             /* sorted by ts */
	size_t n_losses;
	struct tl_location *locations;      /* sorted by id (at most TL_MAX_LOCATIONS) */
	size_t n_locations;
	bool have_summaries;
	/* Summary bucket sizes present, ascending, and for each its parent: the
	 * full level holding what a sparse level leaves out (0 when full). An
	 * older database has only the full levels. */
	int64_t levels[SS_SUMMARY_LEVELS], level_parent[SS_SUMMARY_LEVELS];
	size_t n_levels;
	sqlite3_stmt *st[TL_STMT_COUNT];
	/* Every read shares a time budget, re-armed per frame and per query of
	 * the panels: a damaged or hostile file cannot hang the viewer. */
	struct ss_store_budget budget;
	/* Single polls judged by the analysis (verdict, culprit), made on first
	 * use by the thread that owns the connection; see tl_db_examiner. */
	struct ss_examiner *examiner;
};

/* Seconds the reads of a frame (tl_scene_update) and of one panel query may take. */
#define TL_FRAME_BUDGET_S 10.0
#define TL_OPEN_BUDGET_S 30.0

/* Times and durations read from a database are kept within +-2^61 ns (73
 * years): a damaged or hostile file may hold any 64-bit value, and the sum of
 * a time and a duration, or the span of a view, must not overflow. */
#define TL_TIME_LIMIT (INT64_C(1) << 61)

static inline int64_t tl_clamp_time(int64_t t)
{
	return t < -TL_TIME_LIMIT ? -TL_TIME_LIMIT : t > TL_TIME_LIMIT ? TL_TIME_LIMIT : t;
}

static inline int64_t tl_clamp_dur(int64_t d)
{
	return d < 0 ? 0 : d > TL_TIME_LIMIT ? TL_TIME_LIMIT : d;
}

static inline int64_t tl_col_time(sqlite3_stmt *s, int i)
{
	return tl_clamp_time(sqlite3_column_int64(s, i));
}

static inline int64_t tl_col_dur(sqlite3_stmt *s, int i)
{
	return tl_clamp_dur(sqlite3_column_int64(s, i));
}

/* True when the file starts with the SQLite header (else it is taken for a
 * segment file or directory). */
bool tl_is_sqlite_file(const char *path);

/* Opens path read-only. Returns NULL with a message in err (size errlen) when the
 * file is not a stallscope database. */
struct tl_db *tl_db_open(const char *path, char *err, size_t errlen);
void tl_db_close(struct tl_db *d);
/* A tl_db around a connection of the caller's (owned from now on) with
 * nothing loaded (no lanes, stalls or statements), for a second query thread
 * (ss_worker.h) that runs long work beside the window's: the analysis, the
 * SQL console. path is copied. NULL when memory ran out (db is closed). */
struct tl_db *tl_db_wrap(sqlite3 *db, const char *path);

/* True when the spawn locations do not tell the stalled polls apart: there
 * are stalls and all their tasks were spawned in one function (the example
 * runtime spawns every task from one helper). The window then colours by
 * culprit function. */
bool tl_db_locations_alike(const struct tl_db *d);

/* Grants the reads that follow seconds from now (see budget). */
void tl_db_arm(struct tl_db *d, double seconds);
/* Whether the last budget ran out (what was drawn is incomplete). */
bool tl_db_expired(const struct tl_db *d);

/* A prepared statement, reset and with its bindings cleared. */
sqlite3_stmt *tl_db_stmt(struct tl_db *d, enum tl_stmt which);
/* Resets every prepared statement, so none stays active between two pieces of
 * work (an interrupt aimed at one must not outlive it: SQLite clears the flag
 * when a statement starts while no other is active). */
void tl_db_reset_all(struct tl_db *d);

/* The examiner of this connection (viewer/analysis/examine.h), made on the
 * first call; NULL when it cannot be made. Only for the thread that owns the
 * connection, like the statements. */
struct ss_examiner *tl_db_examiner(struct tl_db *d);

/* A location's names, NULL when unknown. */
const struct tl_location *tl_db_location(const struct tl_db *d, int64_t id);

/* Wall-clock (CLOCK_REALTIME ns) of a trace timestamp. */
int64_t tl_db_wall(const struct tl_db *d, int64_t ts);

/* Index of the first stall / loss with ts >= t (binary search). */
size_t tl_db_stall_lower_bound(const struct tl_db *d, int64_t t);
/* Index into lanes of a worker or thread id, -1 when none. */
int tl_db_lane_of_worker(const struct tl_db *d, int64_t worker_id);
int tl_db_lane_of_thread(const struct tl_db *d, int64_t thread_id);

#endif /* STALLSCOPE_TL_DB_H */
