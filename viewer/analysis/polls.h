/*
 * polls.h - one poll examined: where it ran, how its time split between a CPU,
 * blocked and preempted (the verdict), and the evidence of what it was doing:
 * its stall capture, the CPU and off-CPU samples taken during it, the stack
 * that stands for it, the program's own frame in that stack and the system
 * call it was blocked in.
 */
#ifndef STALLSCOPE_POLLS_H
#define STALLSCOPE_POLLS_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict.h"

struct ss_analysis;

struct ss_poll_detail {
	int64_t id, ts, dur, worker_id, task_id, task, location_id, recording_id, thread_id;
	bool incomplete;
	char worker[96];       /* "example#2" */
	char location[512];    /* "function (file:line)", "? (?:0)" when none */
	bool has_cpu;          /* the thread has CPU intervals: the split below is known */
	int64_t on_cpu, blocked, preempted;
	enum ss_verdict verdict;
	char stall_kind[16];   /* "" when the poll did not stall */
	char capture[256];     /* the first capture's evidence, up to its first ';' */
	char syscall[64];      /* the call it was blocked in, "" when unknown or not blocked */
	int64_t callsite;      /* the stack that stands for the poll, 0 when none */
	int64_t cpu_samples, offcpu_samples;
	/* The own-code frame of that stack (stacks.h), "" when none. */
	char culprit[256];
	char culprit_file[256];
	int64_t culprit_line;
};

/* Examines poll id in a's trace. Returns 0, or -1 when it cannot be read
 * (a's error says why). */
int ss_poll_examine(struct ss_analysis *a, int64_t id, struct ss_poll_detail *out);

/* Whether a poll counts as blocked for the blocking check: blocked for more
 * than the verdict's 20% of its time. */
static inline bool ss_poll_blocked(const struct ss_poll_detail *d)
{
	return d->has_cpu && d->blocked * 5 > d->dur;
}

#endif /* STALLSCOPE_POLLS_H */
