/*
 * thresholds.c - see thresholds.h.
 */
#include "thresholds.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ss_threshold ss_thresholds[SS_TH_COUNT] = {
	[SS_TH_LONG_POLL] = { "long-poll", "a poll held its worker this long without yielding", "ms",
			      1, 10, 50 },
	[SS_TH_BLOCKING] = { "blocking-in-poll", "a poll was blocked (off CPU, not runnable) this long, "
			     "and for over 20% of it", "ms", 1, 10, 50 },
	[SS_TH_SCHED_DELAY] = { "sched-delay", "p99 time from a task's wake to its poll, per spawn location "
				"(5 wakes or more)", "ms", 1, 5, 50 },
	[SS_TH_STARVATION] = { "cpu-starvation", "share of a worker thread's time spent runnable but "
			       "not running (waiting for a CPU)", "%", 10, 25, 50 },
	[SS_TH_IMBALANCE] = { "worker-imbalance", "polls of the busiest worker over the least busy one "
			      "(the busiest with 100 polls or more)", "x", SS_TH_OFF, 3, 10 },
	[SS_TH_GLOBAL_QUEUE] = { "queue-buildup", "tasks waiting in the global run queue", "tasks",
				 SS_TH_OFF, 100, 1000 },
	[SS_TH_TASK_LEAK] = { "task-leak", "tasks idle at the end (polled, never woken again) over the "
			      "tasks alive early on, when the live tasks end at their peak (10 idle or more)",
			      "x", SS_TH_OFF, 2, 10 },
	[SS_TH_DATA_LOSS] = { "data-loss", "events lost, as a share of the events recorded (any loss "
			      "at all is over 0)", "%", SS_TH_OFF, 0, 10 },
};

struct ss_threshold *ss_threshold_find(const char *name)
{
	for (int i = 0; i < SS_TH_COUNT; i++)
		if (strcmp(ss_thresholds[i].name, name) == 0)
			return &ss_thresholds[i];
	return NULL;
}

/* One level: a non-negative number or "off". Returns the text after it. */
static const char *parse_level(const char *p, double *v)
{
	if (!strncmp(p, "off", 3) && (p[3] == ',' || p[3] == 0)) {
		*v = SS_TH_OFF;
		return p + 3;
	}
	char *end;
	errno = 0;
	*v = strtod(p, &end);
	if (end == p || errno || !isfinite(*v) || *v < 0)
		return NULL;
	return end;
}

int ss_threshold_set(const char *spec, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	char name[64];
	if (!eq || (size_t)(eq - spec) >= sizeof name) {
		snprintf(err, errlen, "'%s' is not NAME=WARNING,CRITICAL (see --list-thresholds)", spec);
		return -1;
	}
	snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
	struct ss_threshold *t = ss_threshold_find(name);
	if (!t) {
		snprintf(err, errlen, "no threshold '%s' (see --list-thresholds)", name);
		return -1;
	}
	double v[3];
	int n = 0;
	const char *p = eq + 1;
	for (;;) {
		const char *end = n < 3 ? parse_level(p, &v[n]) : NULL;
		if (!end || (*end != 0 && *end != ',')) {
			snprintf(err, errlen, "%s: '%s' is not WARNING,CRITICAL or INFO,WARNING,CRITICAL "
				 "(numbers in %s, or 'off')", name, eq + 1, t->unit);
			return -1;
		}
		n++;
		if (*end == 0)
			break;
		p = end + 1;
	}
	if (n == 1) {
		snprintf(err, errlen, "%s: give WARNING,CRITICAL or INFO,WARNING,CRITICAL", name);
		return -1;
	}
	/* Levels in use must rise with the severity. */
	double last = -1;
	for (int i = 0; i < n; i++) {
		if (v[i] == SS_TH_OFF)
			continue;
		if (v[i] < last) {
			snprintf(err, errlen, "%s: the levels must not fall from one severity to the next", name);
			return -1;
		}
		last = v[i];
	}
	if (n == 2) {
		t->warning = v[0];
		t->critical = v[1];
	} else {
		t->info = v[0];
		t->warning = v[1];
		t->critical = v[2];
	}
	return 0;
}
