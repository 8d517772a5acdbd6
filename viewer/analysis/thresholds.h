/*
 * thresholds.h - the one table of the limits findings are graded by: the
 * report's checks, the timeline's duration colours and the README's table all
 * read it, so they cannot disagree. Values are the operators' usual ones
 * (dial9's analysis guide: long poll 1/10/50 ms, scheduling delay 5/50 ms,
 * global queue 100/1000, imbalance 3x, leak 2x).
 *
 * viewer/analysis/ holds what judges a stored trace: this table, findings as
 * data (findings.h), the checks that produce them. It depends on the store's
 * read side (viewer/store/sqlite/) and libc, never on GTK or on printing; the
 * CLI, the viewer and the exports present what it returns.
 */
#ifndef STALLSCOPE_THRESHOLDS_H
#define STALLSCOPE_THRESHOLDS_H

#include <stddef.h>

enum ss_threshold_id {
	SS_TH_LONG_POLL,      /* a poll's duration, ms */
	SS_TH_BLOCKING,       /* time a poll spent blocked (over 20% of it), ms */
	SS_TH_SCHED_DELAY,    /* wake-to-poll delay (p99 of a location), ms */
	SS_TH_STARVATION,     /* a worker thread's runnable-not-running share of its time, % */
	SS_TH_IMBALANCE,      /* polls of the busiest worker over the least busy, ratio */
	SS_TH_GLOBAL_QUEUE,   /* global run-queue depth, tasks */
	SS_TH_TASK_LEAK,      /* tasks idle at the end over those alive early on, ratio */
	SS_TH_DATA_LOSS,      /* events lost, % of those recorded */
	SS_TH_COUNT
};

struct ss_threshold {
	const char *name;     /* as flags and JSON name it: "long-poll" */
	const char *what;     /* one line for the documentation */
	const char *unit;     /* "ms", "tasks", "x" */
	/* a finding when over a level (strictly); SS_TH_OFF = the level is not used */
	double info, warning, critical;
};

#define SS_TH_OFF (-1.0)

/* The table, writable so that flags can override a level for one run. */
extern struct ss_threshold ss_thresholds[SS_TH_COUNT];

/* The threshold of this name, NULL when unknown. */
struct ss_threshold *ss_threshold_find(const char *name);

/* Parses "NAME=W,C" or "NAME=I,W,C" (as --threshold takes it) into the table;
 * a level may be "off". Returns 0, or -1 with a message in err. */
int ss_threshold_set(const char *spec, char *err, size_t errlen);

#endif /* STALLSCOPE_THRESHOLDS_H */
