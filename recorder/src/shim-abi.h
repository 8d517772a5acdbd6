/*
 * shim-abi.h - what libstallscope exports for its preload shim
 * (recorder/preload/, libstallscope_preload.so) and nobody else.
 *
 * These functions are exported from libstallscope.so so that the shim and a
 * program that links libstallscope itself share one recorder: one session, one
 * set of segments, and the program's own hooks win on the threads that make
 * them. They are not API: the shim is built from the same tree and changes with
 * them. The wrapped-call pair (wait_begin/wait_end) keeps the hook guarantees (no
 * lock, allocation or system call; one clock read each; errno untouched); every
 * other function is a control call.
 */
#ifndef STALLSCOPE_SHIM_ABI_H
#define STALLSCOPE_SHIM_ABI_H

#include <stdint.h>

#include "stallscope/stallscope.h"

/* What a wrapped call waits for. WORK: a condition variable or semaphore (a
 * worker waiting for work: a park, unless it happens inside a loop iteration).
 * The others are file-descriptor waits: the thread is an event loop, each wait a
 * park and the stretch between two waits a loop-iteration poll. */
enum ss_shim_wait {
	SS_SHIM_WAIT_WORK = 0,
	SS_SHIM_WAIT_EPOLL = 1,
	SS_SHIM_WAIT_POLL = 2,
	SS_SHIM_WAIT_SELECT = 3,
	SS_SHIM_WAIT_URING = 4,
	SS_SHIM_WAIT_KINDS
};

/* Environment the `stallscope record` command sets for the shim (besides the
 * documented STALLSCOPE_* configuration): the pid of the process it started, and
 * whether processes other than that one (its forked or executed children) record
 * too, each into PREFIX-PID.N.bin. */
#define SS_SHIM_ENV_ROOT_PID "STALLSCOPE_PRELOAD_ROOT_PID"
#define SS_SHIM_ENV_FOLLOW "STALLSCOPE_FOLLOW_CHILDREN"

/* From the shim's constructor. Starts recording from the environment when this
 * process is to be recorded (STALLSCOPE_ENABLED, and it is the root process or
 * children are followed) and makes the calling (main) thread a lane. Returns 1
 * when recording, 0 when not asked to, -1 when it could not start (reported on
 * stderr by variable name, as stallscope_start_from_env() does). */
STALLSCOPE_API int stallscope_shim_init(void);

/* In a thread the shim's pthread_create started, before its start routine: make
 * it a lane. _thread_end after the routine returns (or the thread exits). */
STALLSCOPE_API void stallscope_shim_thread_begin(void);
STALLSCOPE_API void stallscope_shim_thread_end(void);

/* 1 while the calling thread is inside stallscope_start() creating the
 * recorder's own threads, which must not become lanes. */
STALLSCOPE_API int stallscope_shim_creating_internal(void);

/* In the child of fork(), after it returned 0: with children followed, a new
 * recording for this process. */
STALLSCOPE_API void stallscope_shim_fork_child(void);

/* Before an exec in the recorded process: stop and seal (1 when a session was
 * stopped). After a failed exec: recording starts again. Safe in a vfork child,
 * where it does nothing: the session is the parent's. */
STALLSCOPE_API int stallscope_shim_exec_begin(void);
STALLSCOPE_API void stallscope_shim_exec_failed(void);

/* A thread was renamed (pthread_setname_np): names are read again. */
STALLSCOPE_API void stallscope_shim_names_changed(void);

/* Hook pair around a wrapped wait that may block. begin returns a token for end
 * (0: nothing recorded, end does nothing). Only calls that can block go here: a
 * zero timeout is not a wait. */
STALLSCOPE_API uint32_t stallscope_shim_wait_begin(uint32_t kind);
STALLSCOPE_API void stallscope_shim_wait_end(uint32_t token);

#endif /* STALLSCOPE_SHIM_ABI_H */
