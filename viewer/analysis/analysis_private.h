/*
 * analysis_private.h - what the checks share inside viewer/analysis/: the
 * analysis under way, and helpers to grade and emit findings.
 */
#ifndef STALLSCOPE_ANALYSIS_PRIVATE_H
#define STALLSCOPE_ANALYSIS_PRIVATE_H

#include "analysis.h"
#include "hmap.h"
#include "read_queries.h"
#include "stacks.h"
#include "thresholds.h"

struct ss_analysis {
	sqlite3 *db;
	struct ss_scope scope;
	size_t top;
	struct ss_scan scan;
	struct ss_callstacks *stacks;
	struct ss_hmap stall_of_poll;      /* poll id -> stall id */
	bool stalls_loaded;
	/* scan.long_polls[i] examined, for i < n_examined (the longest first) */
	struct ss_poll_detail *examined;
	size_t n_examined;
	struct ss_summary summary;
	struct ss_findings findings;
	bool failed;
	char err[512];
	struct ss_stack_frame frames[SS_STACK_MAX]; /* scratch for one stack */
	/* The statements run once per examined poll, prepared on first use
	 * (ss_analysis_stmt): thousands of polls, each prepare costing as much
	 * as the poll's queries. */
	sqlite3_stmt *stmts[SS_Q_COUNT];
	/* Threads known to have CPU intervals or not (thread id -> 1 or 2). */
	struct ss_hmap has_cpu;
};

/* At most this many long polls are examined one by one (the longest). */
#define SS_EXAMINE_MAX 5000

/* Notes the first error (the rest of the analysis goes on where it can). */
void ss_analysis_fail(struct ss_analysis *a, const char *what);
/* A prepared read query with the scope bound to ?1..?3; NULL after noting
 * the error. */
sqlite3_stmt *ss_analysis_query(struct ss_analysis *a, enum ss_read_query q);
/* finalize, noting a statement whose last step failed */
void ss_analysis_done(struct ss_analysis *a, sqlite3_stmt *st);
/* A read query kept prepared for the analysis's life, reset and with no
 * parameter bound; NULL after noting the error. Give it back with
 * ss_analysis_release, never finalize it. */
sqlite3_stmt *ss_analysis_stmt(struct ss_analysis *a, enum ss_read_query q);
/* Resets a statement of ss_analysis_stmt, noting one whose last step failed. */
void ss_analysis_release(struct ss_analysis *a, sqlite3_stmt *st);

/* The severity value reaches under threshold t (value in t's unit), or -1
 * when it is under every level in use. Levels are "over": strictly greater. */
int ss_grade(const struct ss_threshold *t, double value);

/* "function (file:line)" of a location id, malloc'd ("? (?:0)" when unknown). */
char *ss_location_text(struct ss_analysis *a, int64_t location_id);

/* Fills f's frames (owned by the caller: free with ss_frames_free) from a
 * callsite, leaf first, at most max, and f->own_frame; returns how many. */
size_t ss_frames_of(struct ss_analysis *a, int64_t callsite, struct ss_finding *f, size_t max);
void ss_frames_free(struct ss_frame_text *f, size_t n);

/* The poll ids as "1,2,3" (at most max of them) into a malloc'd string. */
char *ss_id_list(const int64_t *ids, size_t n, size_t max);

/* Adds a finding; notes the error when memory ran out. */
void ss_emit(struct ss_analysis *a, const struct ss_finding *f);

/* The examined long polls (ss_analysis_run examines them before the checks). */
int ss_examine_long_polls(struct ss_analysis *a);

/* The checks, each adding its findings to a->findings. */
void ss_check_long_poll(struct ss_analysis *a);
void ss_check_blocking(struct ss_analysis *a);
void ss_check_sched_delay(struct ss_analysis *a);
void ss_check_cpu_starvation(struct ss_analysis *a);
void ss_check_imbalance(struct ss_analysis *a);
void ss_check_queue_buildup(struct ss_analysis *a);
void ss_check_task_leak(struct ss_analysis *a);
void ss_check_data_loss(struct ss_analysis *a);

/* The summary (ss_analysis_run builds it after the scan). */
int ss_summary_build(struct ss_analysis *a);
void ss_summary_free(struct ss_summary *s);

#endif /* STALLSCOPE_ANALYSIS_PRIVATE_H */
