/*
 * findings.h - what a check of a stored trace found, as data: the report prints
 * these as text or JSON, the viewer lists them, CI fails on them. A finding says
 * what kind of problem (check), how bad (severity), where (recording, worker,
 * task, location, time, duration), the code responsible (frames, leaf first;
 * the system call of a block), and the SQL that returns its rows.
 *
 * Owned by the caller: ss_findings_add copies every string; ss_findings_free
 * releases them. Not thread-safe per list.
 */
#ifndef STALLSCOPE_FINDINGS_H
#define STALLSCOPE_FINDINGS_H

#include <stddef.h>
#include <stdint.h>

enum ss_severity { SS_SEV_INFO, SS_SEV_WARNING, SS_SEV_CRITICAL };

struct ss_frame_text {
	char *function, *file; /* NULL when unknown */
	int64_t line;          /* 0 when unknown */
};

struct ss_finding {
	const char *check;           /* "long-poll", "sched-delay", ... (static) */
	enum ss_severity severity;
	char *message;
	int64_t ts, dur;             /* -1 when it has none */
	int64_t recording_id, worker_id, task_id; /* 0 when none */
	char *worker;                /* "example#3", NULL when none */
	char *location;              /* "function (file:line)", NULL when none */
	struct ss_frame_text *frames;
	size_t n_frames;
	int own_frame;               /* index in frames of the code responsible, -1 when none */
	char *syscall;               /* NULL when none */
	char *sql;                   /* returns the rows behind the finding */
	int64_t count;               /* the rows sql returns */
	double value;                /* what was graded, in its threshold's unit */
	const char *unit;            /* of value (static) */
};

struct ss_findings {
	struct ss_finding *v;
	size_t n, cap;
};

/* "critical", "warning", "info". */
const char *ss_severity_name(enum ss_severity s);
/* -1 for an unknown name. */
int ss_severity_parse(const char *name);

/* Appends a copy of f (strings and frames copied; NULL pointers stay NULL).
 * Returns the copy, or NULL when memory ran out. */
struct ss_finding *ss_findings_add(struct ss_findings *l, const struct ss_finding *f);
/* Sorts by severity (critical first), keeping the order of equals. */
void ss_findings_sort(struct ss_findings *l);
void ss_findings_free(struct ss_findings *l);

#endif /* STALLSCOPE_FINDINGS_H */
