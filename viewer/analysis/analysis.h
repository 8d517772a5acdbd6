/*
 * analysis.h - judging a stored trace: the figures people read first (the
 * summary) and the findings of every check (findings.h), for one scope
 * (scope.h). The CLI prints them as text or JSON, the viewer lists them,
 * `stallscope compare` sets two side by side.
 *
 * viewer/analysis/ holds what judges a stored trace: the thresholds table
 * (thresholds.h), findings as data (findings.h), stacks as the checks read
 * them (stacks.h), the one-pass scan (scan.h), examined polls (polls.h), the
 * checks (check_*.c) and this driver; and the stack views' model (profiles,
 * call trees, the flame graph's layout: sv_profile.h). It depends on the store's read side
 * (viewer/store/sqlite/read_queries.h) and libc, never on GTK or on printing.
 *
 * Not thread-safe: one analysis per thread and connection.
 */
#ifndef STALLSCOPE_ANALYSIS_H
#define STALLSCOPE_ANALYSIS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"
#include "polls.h"
#include "scan.h"
#include "scope.h"

struct ss_sum_recording {
	int64_t id, pid, first_ts, last_ts;
	int64_t wall_offset;       /* realtime - monotonic anchor, ns; 0 when unknown */
	bool has_anchor;
	char *executable, *host, *sampler, *arch; /* NULL when unknown */
	int64_t segments, sealed, damaged, events;
};

struct ss_sum_worker {
	int64_t id, recording_id, index;
	char *runtime, *thread;    /* NULL when unknown */
	const struct ss_scan_worker *scan;
};

struct ss_sum_stall_kind {
	char *kind;
	int64_t count;
};

struct ss_sum_stall_location {
	char *location;
	int64_t count, max_dur;
	char *kinds, *stack;       /* stack NULL when no capture had one */
};

struct ss_sum_wake_location {
	int64_t location_id;
	char *location;
	uint64_t wakes;
	double p50, p99, max;
};

struct ss_summary {
	struct ss_sum_recording *recordings;
	size_t n_recordings;
	struct ss_sum_worker *workers;
	size_t n_workers;
	bool several_recordings;
	/* the longest polls, longest first */
	struct ss_poll_detail *longest;
	char **longest_stacks;     /* "f <- g <- h" or NULL, per longest poll */
	size_t n_longest;
	int64_t stalls;
	struct ss_sum_stall_kind *stall_kinds;
	size_t n_stall_kinds;
	struct ss_sum_stall_location *stall_locations;
	size_t n_stall_locations;
	double wake_p50, wake_p99, wake_max; /* -1 when no wake led to a poll */
	struct ss_sum_wake_location *wake_locations; /* worst p99 first (5 wakes or more) */
	size_t n_wake_locations;
	int64_t global_max, local_max;
	bool has_queues;
	int64_t spawned, finished, alive_at_end, alive_early, task_dumps;
	uint64_t idle_at_end;
	int64_t lost_events, lost_samples;
};

struct ss_analysis;

/* Reads the trace of scope from db (a connection the caller owns and keeps
 * open while the analysis lives), with the top `top` rows in each list, and
 * runs every check. Returns NULL with a message in err when the trace cannot
 * be read (the connection's time budget ran out, a damaged file, no memory). */
struct ss_analysis *ss_analysis_run(sqlite3 *db, const struct ss_scope *scope, size_t top, char *err,
				    size_t errlen);
const struct ss_summary *ss_analysis_summary(const struct ss_analysis *a);
/* Sorted: critical first, then warning, then info; within a severity in
 * the order of the checks table. */
const struct ss_findings *ss_analysis_findings(const struct ss_analysis *a);
const struct ss_scan *ss_analysis_scan(const struct ss_analysis *a);
const struct ss_scope *ss_analysis_scope(const struct ss_analysis *a);
void ss_analysis_free(struct ss_analysis *a);

/* A duration as people read it: "12.34 ms", "850.0 us", "1.20 s"; "-" when
 * negative (none). */
void ss_fmt_dur(char *buf, size_t len, double ns);

/* The checks, for --help and the README: id and one line each. */
struct ss_check_info {
	const char *id, *what;
};
extern const struct ss_check_info ss_check_infos[];
extern const size_t ss_n_check_infos;

#endif /* STALLSCOPE_ANALYSIS_H */
