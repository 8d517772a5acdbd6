/*
 * import.h - `stallscope import`: segments (files and directories, in any order,
 * of one or several recordings) into the SQLite schema of schema/stallscope.sql.
 *
 * Guarantees: input is read through the segment reader, so a truncated or
 * corrupt segment contributes every intact block and the damage is recorded in
 * `segments` and reported; memory is bounded by one block plus the live state
 * (open polls, live tasks, distinct frames), never by the trace; importing the
 * same input again adds only segments that are new or grew.
 *
 * Rows are inserted by a second thread (db_pipe.c) while this one decodes, unless
 * the database is ":memory:". STALLSCOPE_IMPORT_TIMING=1 in the environment prints
 * the time of each phase (records, indexes, links, commit) on stderr.
 */
#ifndef STALLSCOPE_IMPORT_H
#define STALLSCOPE_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ss_sqlite_stage;

struct ss_import_options {
	const char *db_path;            /* ":memory:" for an in-memory database */
	/* The file stages an import for another database (sqlite_store.h);
	 * target_name is then what messages call the database. NULL: none. */
	const struct ss_sqlite_stage *stage;
	const char *target_name;
	const char *const *debug_dirs;  /* --debug-dir, searched for debug info by build id */
	size_t n_debug_dirs;
	FILE *log;                      /* warnings; NULL = stderr */
	bool quiet;                     /* no warnings or summary on log */
	bool progress;                  /* percent, events/s and ETA on log while importing */
	bool no_symbols;                /* leave frames unsymbolized */
	/* Per interval and summary level, at most this many buckets are written
	 * (bounds the work a hostile timestamp can cause). 0 = 2,000,000. */
	uint64_t max_summary_buckets;
	/* Memory bounds for hostile or runaway input: threads kept per recording
	 * (events of more are left out, with a warning; 0 = 500,000) and live
	 * tasks tracked (past it idle tasks are written out and forgotten; 0 =
	 * 2,000,000). */
	uint64_t max_threads, max_live_tasks;
	bool fuzz_ignore_crc;           /* fuzzing only: reader waives CRC checks */
	/* Set (non-zero) from another thread to stop at the next segment: a new
	 * database is then not made; one imported into in place keeps the
	 * segments read so far, complete and consistent, and the next import
	 * goes on from there. NULL: never. */
	const volatile int *cancel;
};

struct ss_import_result {
	uint64_t files;            /* segment files given (after directory expansion) */
	uint64_t imported;         /* segments that contributed new data */
	uint64_t unchanged;        /* already in the database, nothing new */
	uint64_t damaged;          /* segments with damage (their intact part imported) */
	uint64_t unreadable;       /* files with no usable header */
	uint64_t events;           /* event records imported */
	uint64_t late;             /* records put in order by file position, not time:
				    * they came after what the merge holds (merge.h) */
	uint64_t bytes;            /* bytes of segment files read */
	double seconds;
};

enum {
	SS_IMPORT_OK = 0,
	SS_IMPORT_NOTHING = 1,     /* no input was importable */
	SS_IMPORT_OUTPUT = 2,      /* the database could not be written */
	SS_IMPORT_CANCELLED = 3,   /* options.cancel was set */
};

/* True when the file is one that imports by its content: a stallscope
 * segment (its magic) or a dial9 trace, raw or gzip. Reads its first bytes;
 * false when it cannot be read. */
bool ss_import_is_trace_file(const char *path);

int ss_import_paths(const struct ss_import_options *o, const char *const *paths, size_t n,
		    struct ss_import_result *res);

/* Imports one segment held in memory (fuzzing, tests). */
int ss_import_buffer(const struct ss_import_options *o, const void *buf, size_t len,
		     struct ss_import_result *res);

#endif /* STALLSCOPE_IMPORT_H */
