/*
 * attach.h - recording a running process from outside (`stallscope record -p
 * PID`, and statically linked programs under `record -- CMD`).
 *
 * The session runs in the calling process with the usual writer and perf
 * sampler, pointed at the target (recorder/src/target.c): every thread of the
 * target that exists or appears becomes a worker lane with perf_event_open
 * (pid = its tid): CPU samples with user call chains (kernel ones where
 * permitted), switch records for on/off-CPU time, off-CPU stacks where
 * permitted, MMAP2 and COMM records; mappings and names come from /proc/PID.
 * Nothing is written into the target and nothing stops it: it keeps running as
 * it was when the attachment ends. What cannot be seen from outside: parks,
 * polls and loop iterations (those need the preload shim or hooks), and a new
 * thread's first moments (threads are found by scanning /proc/PID/task every
 * 10 ms).
 *
 * recorder/attach/ is attach.h and attach.c, built as the static library
 * stallscope_attach. May depend on recorder/src (it drives the recorder's
 * internals), schema/ and libc; only recorder/cli/ (record -p, static programs)
 * depends on it.
 */
#ifndef STALLSCOPE_ATTACH_H
#define STALLSCOPE_ATTACH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stallscope/stallscope.h"

enum ss_unwind_req { SS_UNWIND_REQ_AUTO = 0, SS_UNWIND_REQ_FP, SS_UNWIND_REQ_DWARF };

struct ss_attach_config {
	pid_t pid;
	/* Output and sampling settings (output_dir, file_prefix, sizes, sample_hz,
	 * offcpu_stacks); the sampler, stalls and task dumps are set by attach. */
	struct stallscope_config rec;
	/* Asked-for stack unwinding. Only frame pointers (the kernel's call chains)
	 * are walked from outside today; any other request is said so in the status. */
	enum ss_unwind_req unwind;
	double duration_s;                  /* 0: until *stop, or the target ends */
	volatile sig_atomic_t *stop;        /* set asynchronously (Ctrl-C) to detach */
	/* pid is our child (a program started for the recording): reap it when it
	 * ends and report its wait status in *child_status. */
	int reap_child;
	int *child_status;
	/* Called once the threads that exist are followed (NULL: nothing to do); the
	 * record command releases a child it holds stopped at its exec here. */
	void (*started)(pid_t pid);
};

struct ss_attach_result {
	uint32_t threads;          /* threads followed over the attachment */
	uint32_t threads_refused;  /* threads perf refused */
	int target_ended;          /* the target exited during the attachment */
	char status[1024];         /* what was recorded and what could not be, and why */
};

/* Checks that pid can be followed by this user: a process of that pid exists and
 * perf_event_open accepts one of its threads. 0, or -1 with the reason in why. */
int ss_attach_check(pid_t pid, char *why, size_t len);

/* Records pid until cfg->stop, cfg->duration_s or the end of the target, then
 * detaches and seals. Returns 0 when a recording was made (res says what it
 * holds), -1 with the reason in err when nothing could be recorded. Not
 * reentrant: one attachment per process at a time. */
int ss_attach_run(const struct ss_attach_config *cfg, struct ss_attach_result *res, char *err,
		  size_t errlen);

#endif /* STALLSCOPE_ATTACH_H */
