/*
 * compare.h - two stored traces of the same program side by side (before and
 * after a change, a good host and a bad one), as data: `stallscope compare`
 * prints it as a table or JSON.
 *
 * For each trace (A and B) and scope: per spawn location and per culprit
 * function, the complete polls, their p50, p99 and max duration, the share of
 * the scope's CPU samples taken in them, and the p99 wake-to-poll delay of
 * the polls; then B's figure over A's for each. The culprit of a poll is the
 * function of the program's own code (stacks.h) that most of the CPU samples
 * taken during it were in; a function's CPU share counts every CPU sample
 * taken in a poll whose own-code frame is that function. Then the functions
 * whose CPU share moved most, and the findings of each trace's analysis
 * (analysis.h) that the other has not, matched by check, culprit function and
 * spawn location (never by message text).
 *
 * Locations are matched across the traces by function and file, with the
 * line too where one trace has two locations in the same function and file
 * (ids mean nothing outside their database; lines move when code changes).
 *
 * Owned by the caller: ss_compare_free releases everything.
 */
#ifndef STALLSCOPE_COMPARE_H
#define STALLSCOPE_COMPARE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings.h"
#include "scope.h"

/* The figures of one row (a location or a function) in one trace. */
struct ss_cmp_figures {
	uint64_t polls;          /* complete polls */
	double p50, p99, max;    /* their duration, ns; -1 when no poll */
	uint64_t cpu_samples;    /* CPU samples taken in them */
	double cpu_share;        /* cpu_samples over the scope's CPU samples, 0..1; -1 when it has none */
	uint64_t wakes;          /* wakes that led to one of the polls */
	double wake_p99;         /* their wake-to-poll delay, ns; -1 when none */
};

/* How B's figure compares to A's. */
enum ss_cmp_change {
	SS_CMP_NONE,   /* neither has it */
	SS_CMP_RATIO,  /* both have it: ratio = B / A */
	SS_CMP_NEW,    /* only B has it */
	SS_CMP_GONE,   /* only A has it */
};

struct ss_cmp_ratio {
	enum ss_cmp_change change;
	double ratio;
};

enum ss_cmp_metric {
	SS_CMP_POLLS, SS_CMP_P50, SS_CMP_P99, SS_CMP_MAX, SS_CMP_CPU_SHARE, SS_CMP_WAKE_P99, SS_CMP_METRICS
};
/* "polls", "p50", "p99", "max", "cpu_share", "wake_p99" */
extern const char *const ss_cmp_metric_names[SS_CMP_METRICS];

struct ss_cmp_row {
	char *name;              /* location: "function (file:line)" (B's line when both have it);
	                          * function: its name */
	char *function, *file;   /* NULL when unknown */
	int64_t line;            /* 0 when unknown or matched without it */
	struct ss_cmp_figures a, b;
	struct ss_cmp_ratio ratio[SS_CMP_METRICS];
	double change;           /* how much it changed, for the order: the largest |log ratio|,
	                          * new or gone counting as the most */
};

struct ss_cmp_finding {
	const char *check;       /* static */
	enum ss_severity severity_a, severity_b; /* of the worst finding with this key */
	int count_a, count_b;    /* findings with this key in each */
	char *culprit, *location; /* NULL when the findings name none */
	char *message;           /* of the worst one (B's when both have it) */
};

struct ss_cmp_side {
	char *path;
	int64_t recording_id;    /* 0: every recording of the file */
	size_t recordings;       /* in the scope */
	char *executable;        /* of its first recording; NULL when unknown */
	int64_t duration_ns;
	uint64_t polls, cpu_samples, wakes;
	size_t findings;
};

struct ss_comparison {
	struct ss_cmp_side a, b;
	/* the most changed first */
	struct ss_cmp_row *locations;
	size_t n_locations;
	struct ss_cmp_row *functions;
	size_t n_functions;
	/* indexes into functions: the largest move of CPU share first, those that moved only */
	size_t *moves;
	size_t n_moves;
	/* findings by key: only in A, only in B, in both at another severity */
	struct ss_cmp_finding *only_a, *only_b, *changed;
	size_t n_only_a, n_only_b, n_changed;
	bool same_program;       /* the executables' file names are the same (or unknown) */
};

/* Compares trace A (db_a, scope sa) with B. top: rows of the analysis's lists
 * (ss_analysis_run). Returns 0, or -1 with "A: ..." or "B: ..." in err. */
int ss_compare_run(sqlite3 *db_a, const struct ss_scope *sa, const char *path_a, sqlite3 *db_b,
		   const struct ss_scope *sb, const char *path_b, size_t top, struct ss_comparison *out, char *err,
		   size_t errlen);
void ss_compare_free(struct ss_comparison *c);

/* Whether the comparison shows no difference at all: every ratio 1 and no
 * finding in one trace only or at another severity. */
bool ss_compare_identical(const struct ss_comparison *c);

#endif /* STALLSCOPE_COMPARE_H */
