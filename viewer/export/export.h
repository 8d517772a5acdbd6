/*
 * export.h - a stored trace in the formats other tools read: folded stacks
 * (flamegraph.pl, inferno, speedscope), Chrome trace event JSON (the Perfetto
 * UI, chrome://tracing) and pprof's gzipped profile.proto (go tool pprof,
 * Pyroscope), each for one scope (viewer/analysis/scope.h) narrowed to a
 * worker, a task, and CPU or off-CPU samples.
 *
 * viewer/export/ holds the format writers (folded.c, chrome.c, pprof.c, with
 * what they share in export.c; profile.proto is the pprof format, compiled by
 * protoc-c at build time) and the JSON writer the CLI's --json outputs share
 * (json_out.h). It reads through the store's named queries
 * (viewer/store/sqlite/read_queries.h) and the analysis's scope and stacks
 * (viewer/analysis/), and depends on SQLite, zlib and protobuf-c (pprof only)
 * and libc; never on GTK. It writes the format to the stream it is given and
 * nothing else: messages go back to the caller in err.
 *
 * Every writer streams: what it keeps in memory grows with the distinct
 * stacks of the scope, never with its events. Not thread-safe: one export per
 * thread and connection.
 */
#ifndef STALLSCOPE_EXPORT_H
#define STALLSCOPE_EXPORT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scope.h"

/* What an exported sample counts. */
enum ss_export_value {
	SS_EXPORT_VALUE_DEFAULT, /* samples for CPU samples, ns for off-CPU samples */
	SS_EXPORT_VALUE_SAMPLES, /* one per sample */
	SS_EXPORT_VALUE_NS,      /* CPU samples: the CPU time each stands for (samples.weight);
	                          * off-CPU samples: the time off CPU that began there */
};

struct ss_export_opts {
	struct ss_scope scope;
	/* --worker: one worker index, of one runtime or of any (runtime NULL) */
	bool has_worker;
	int64_t worker_index;
	const char *runtime;
	/* --task: the runtime's task number (tasks.task) */
	bool has_task;
	int64_t task;
	bool offcpu;             /* off-CPU samples instead of CPU samples */
	enum ss_export_value value;
	const char *source;      /* the database's name, for the output's own notes */
	/* Called every few thousand rows with the rows read so far (NULL: none). */
	void (*progress)(void *ctx, uint64_t rows);
	void *progress_ctx;
};

/* What a writer wrote. */
struct ss_export_stats {
	uint64_t samples;        /* samples exported */
	uint64_t stacks;         /* distinct stacks (folded lines, pprof samples) */
	uint64_t events;         /* Chrome: trace events written */
	uint64_t polls;          /* Chrome: polls written */
	uint64_t value;          /* the sum of what folded lines count */
};

/* Each writer returns 0, or -1 with a one-line message in err: the database
 * could not be read (its time budget ran out), memory ran out, writing to out
 * failed, or the scope holds nothing to export ("no CPU samples in the
 * scope": empty is an error, so a script never takes an empty file for a
 * profile). What was written to out before a failure is not a valid file. */

/* One line per distinct stack: root-first frames joined by ';', a space,
 * the count (or ns); lines sorted. */
int ss_export_folded(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		     char *err, size_t errlen);

/* Chrome trace event JSON: a process per recording, a thread per worker
 * (and per other sampled thread), polls and parks as complete slices,
 * blocked and preempted time as slices on a second track per worker,
 * stall captures and samples as instant events with their stacks. */
int ss_export_chrome(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		     char *err, size_t errlen);

/* Whether this build has the pprof writer (protobuf-c and zlib were found
 * when it was configured). */
bool ss_export_have_pprof(void);

/* A gzipped perftools.profiles.Profile (profile.proto). Without the pprof
 * writer in the build, fails with a message that says so. */
int ss_export_pprof(sqlite3 *db, const struct ss_export_opts *o, FILE *out, struct ss_export_stats *st,
		    char *err, size_t errlen);

/* ---- shared by the writers (export.c) ------------------------------------- */

/* Binds the scope and the filters to a named export query's ?1..?7, and
 * lane to ?8 when the query has it. */
void ss_export_bind(sqlite3_stmt *st, const struct ss_export_opts *o, int64_t lane);

/* Checks that the worker and task filters name something in the scope.
 * Returns 0, or -1 with a message ("no worker example#9 in the trace"). */
int ss_export_check_filters(sqlite3 *db, const struct ss_export_opts *o, char *err, size_t errlen);

/* The samples of the scope added up by (stack, thread). */
struct ss_export_agg_row {
	int64_t callsite_id, thread_id, worker_id; /* callsite 0: no stack; worker 0: none */
	uint64_t samples;
	uint64_t ns;             /* CPU ns (weight), or off-CPU ns, saturating */
};

struct ss_export_agg {
	struct ss_export_agg_row *rows;
	size_t n, cap;
	uint64_t samples, samples_ns;
	int64_t min_weight, max_weight; /* of CPU samples, for pprof's period */
};

/* Reads the scope's samples (o->offcpu picks the kind). Returns 0, or -1
 * with a message, also when the scope has none ("nothing to export: ..."). */
int ss_export_aggregate(sqlite3 *db, const struct ss_export_opts *o, struct ss_export_agg *agg, char *err,
			size_t errlen);
void ss_export_agg_free(struct ss_export_agg *agg);

/* What a row counts under o (samples or ns). */
uint64_t ss_export_row_value(const struct ss_export_opts *o, const struct ss_export_agg_row *r);

/* "no CPU samples in the scope" and the like, naming the filters. */
void ss_export_empty(const struct ss_export_opts *o, const char *what, char *err, size_t errlen);

/* A failed read's message: the budget's when it ran out, else SQLite's. */
void ss_export_db_error(sqlite3 *db, const char *what, char *err, size_t errlen);

#endif /* STALLSCOPE_EXPORT_H */
