/*
 * verdict.h - "computing or blocked?" for a poll, from how its time split into
 * on a CPU, blocked (off CPU, not runnable) and preempted (off CPU, runnable):
 * the words the report, the viewer and the poll_view of schema/stallscope.sql
 * use. Integer arithmetic, so that the view's SQL gives the very same answer:
 * computing when at most 20% blocked and at least 80% on a CPU; waiting for a
 * CPU when at most 20% blocked and at most 20% on a CPU; blocked when at least
 * 80% blocked.
 */
#ifndef STALLSCOPE_VERDICT_H
#define STALLSCOPE_VERDICT_H

#include <stdint.h>

enum ss_verdict {
	SS_VERDICT_COMPUTING,
	SS_VERDICT_PREEMPTED,   /* computing, but preempted part of the time */
	SS_VERDICT_WAITING_CPU, /* runnable, not running */
	SS_VERDICT_BLOCKED,
	SS_VERDICT_PARTLY_BLOCKED,
};

static inline enum ss_verdict ss_verdict_of(int64_t dur, int64_t on_cpu, int64_t blocked)
{
	if (blocked * 5 <= dur)
		return on_cpu * 5 >= dur * 4 ? SS_VERDICT_COMPUTING
		       : on_cpu * 5 <= dur ? SS_VERDICT_WAITING_CPU
					    : SS_VERDICT_PREEMPTED;
	return blocked * 5 >= dur * 4 ? SS_VERDICT_BLOCKED : SS_VERDICT_PARTLY_BLOCKED;
}

/* As poll_view.verdict says it. */
static inline const char *ss_verdict_name(enum ss_verdict v)
{
	switch (v) {
	case SS_VERDICT_COMPUTING: return "computing";
	case SS_VERDICT_PREEMPTED: return "computing, but preempted part of the time";
	case SS_VERDICT_WAITING_CPU: return "waiting for a CPU";
	case SS_VERDICT_BLOCKED: return "blocked";
	default: return "partly blocked";
	}
}

#endif /* STALLSCOPE_VERDICT_H */
