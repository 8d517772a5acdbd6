/*
 * shim_lanes.c - lanes for programs that do not call our hooks: the library side
 * of the preload shim (recorder/preload/). The shim wraps the calls where threads
 * wait (epoll, poll, select, io_uring, condition variables, semaphores) and
 * thread creation, and calls in here; this file turns those calls into the
 * events a runtime would have made:
 *
 *   - every thread is a worker lane of a runtime named after the executable;
 *   - a wait for work is a park (PARK ... UNPARK);
 *   - on a thread that waits on file descriptors (an event loop), the stretch
 *     from one such wait to the next is a loop iteration, recorded as a poll of
 *     the thread's loop task, so the stall watchdog, its classification and its
 *     backtraces work for any event loop. A condition or semaphore wait inside an
 *     iteration is part of the iteration (blocked), not a park.
 *
 * A thread whose program calls a lane hook itself (stallscope_worker_begin, poll,
 * park) belongs to the program from then on: the shim closes what it had open
 * there and records nothing more on it, so there are never two sets of events.
 *
 * The wait pair is hook-path code: no lock, no allocation, no system call (a
 * thread's very first event attaches it, as any first hook does), one clock read
 * on each side, shared by the events at that boundary.
 */
#include "recorder-private.h"
#include "shim-abi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

SS_INTERNAL __thread struct ss_shim_tls ss_shim_tls __attribute__((tls_model("initial-exec")));

/* Loop tasks are the shim's, never a runtime's: the top bits keep them apart
 * from task ids the program itself may record. */
#define LOOP_TASK_BASE (0x5353ull << 48)

static struct {
	int on;                 /* the shim drives this process's recording */
	pid_t pid;              /* the process the session belongs to */
	uint32_t runtime;       /* interned executable name: the lanes' runtime */
	uint32_t loop_loc[SS_SHIM_WAIT_KINDS];
	_Atomic uint32_t next_index;
	char prefix[256];       /* the file prefix of a followed child */
} S;

static _Atomic int names_dirty;

static uint64_t loop_task(const struct ss_slot *s)
{
	return LOOP_TASK_BASE | s->thread_id;
}

/* Interns the lanes' runtime name and the loop locations; control path. */
static void intern_names(void)
{
	/* The name it was run as (redis-server is a link to redis-check-rdb). */
	const char *base = program_invocation_short_name;
	char exe[256];
	if (!base || !*base) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	}
	S.runtime = ss_intern_string(base);
	/* Condition and semaphore waits never open an iteration: no location. */
	static const char *const fn[SS_SHIM_WAIT_KINDS] = {
		NULL, "epoll_wait loop", "poll loop", "select loop", "io_uring loop",
	};
	for (int k = 1; k < SS_SHIM_WAIT_KINDS; k++)
		S.loop_loc[k] = stallscope_location(base, 0, fn[k]);
}

static int env_true(const char *name)
{
	const char *v = getenv(name);
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "on"));
}

/* Starts this process's session: PREFIX for the root process, PREFIX-PID for a
 * followed child. Returns 1, 0 (not this process) or -1. */
static int start_session(void)
{
	struct stallscope_config cfg;
	char err[512] = "";
	int r = ss_config_from_env(&cfg, err, sizeof err);
	if (r == 0)
		return 0;
	if (r < 0) {
		ss_set_error("%s; recording is off", err);
		return -1;
	}
	pid_t self = getpid();
	const char *root = getenv(SS_SHIM_ENV_ROOT_PID);
	char *end = NULL;
	long root_pid = root ? strtol(root, &end, 10) : 0;
	if (root && (end == root || *end))
		root_pid = 0;
	if (!root_pid) {
		/* Preloaded by hand: this process is the root, its children are not
		 * recorded unless asked. */
		char v[24];
		snprintf(v, sizeof v, "%d", (int)self);
		setenv(SS_SHIM_ENV_ROOT_PID, v, 1);
	} else if (root_pid != self) {
		if (!env_true(SS_SHIM_ENV_FOLLOW))
			return 0;
		snprintf(S.prefix, sizeof S.prefix, "%s-%d", cfg.file_prefix, (int)self);
		cfg.file_prefix = S.prefix;
	}
	S.pid = self;
	/* Names first: a thread that sees the session running may use them at once
	 * (interned ids outlive sessions). */
	intern_names();
	S.on = 1;
	if (stallscope_start(&cfg) != 0) {
		S.on = 0;
		return -1;
	}
	return 1;
}

STALLSCOPE_API int stallscope_shim_init(void)
{
	int r = start_session();
	if (r == 1)
		stallscope_shim_thread_begin();
	return r;
}

STALLSCOPE_API int stallscope_shim_creating_internal(void)
{
	return ss_shim_tls.creating_internal;
}

STALLSCOPE_API void stallscope_shim_thread_begin(void)
{
	if (!S.on || ss_shim_tls.app)
		return;
	ss_worker_begin_id(S.runtime, atomic_fetch_add(&S.next_index, 1));
}

/* The open iteration of this thread in the current session, closed at ts. */
static void close_iteration(struct ss_slot *s, uint32_t st, uint64_t ts)
{
	if (ss_shim_tls.iter_session == st && s) {
		ss_push(s, SS_EV_POLL_END, ts, 0, 0, 0);
		ss_inpoll_set(s, SS_INPOLL_OUT);
	}
	ss_shim_tls.iter_session = 0;
}

STALLSCOPE_API void stallscope_shim_thread_end(void)
{
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_acquire);
	if (!st || ss_shim_tls.app || ss_tls_session != st)
		return;
	uint64_t now = ss_stamp();
	close_iteration(ss_tls_slot, st, now);
	if (ss_shim_tls.loop)
		ss_push(ss_tls_slot, SS_EV_TERMINATE, now, loop_task(ss_tls_slot), 0, 0);
}

SS_INTERNAL void ss_shim_take_over(void)
{
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_relaxed);
	if (st && ss_tls_session == st) {
		uint64_t now = ss_stamp();
		if (ss_shim_tls.parked) {
			ss_push(ss_tls_slot, SS_EV_UNPARK, now, 0, 0, 0);
			ss_inpoll_set(ss_tls_slot, SS_INPOLL_OUT);
		}
		close_iteration(ss_tls_slot, st, now);
	}
	ss_shim_tls.app = 1;
	ss_shim_tls.parked = 0;
	ss_shim_tls.iter_session = 0;
}

STALLSCOPE_API void stallscope_shim_fork_child(void)
{
	/* The child's copy of this thread's state describes the parent's session. */
	ss_shim_tls.iter_session = 0;
	ss_shim_tls.parked = 0;
	ss_shim_tls.wait_frame = 0;
	if (!S.on)
		return;
	S.on = 0;
	atomic_store(&S.next_index, 0);
	if (env_true(SS_SHIM_ENV_FOLLOW) && start_session() == 1)
		stallscope_shim_thread_begin();
}

STALLSCOPE_API int stallscope_shim_exec_begin(void)
{
	/* A vfork child runs on its parent's memory: its pid tells it apart. */
	if (!S.on || getpid() != S.pid || !stallscope_is_recording())
		return 0;
	stallscope_stop();
	return 1;
}

STALLSCOPE_API void stallscope_shim_exec_failed(void)
{
	int e = errno;
	if (start_session() == 1)
		stallscope_shim_thread_begin();
	errno = e;
}

STALLSCOPE_API void stallscope_shim_names_changed(void)
{
	atomic_store_explicit(&names_dirty, 1, memory_order_relaxed);
	ss_writer_kick();
}

SS_INTERNAL int ss_shim_take_names_changed(void)
{
	return atomic_exchange_explicit(&names_dirty, 0, memory_order_relaxed);
}

/* ---- the wrapped-call pair (hook path) ------------------------------------------ */

enum { TOKEN_PARK = 1, TOKEN_LOOP = 2 };

STALLSCOPE_API uint32_t stallscope_shim_wait_begin(uint32_t kind)
{
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_relaxed);
	if (SS_LIKELY(!st) || ss_shim_tls.app || !S.on || kind >= SS_SHIM_WAIT_KINDS)
		return 0;
	/* A wait recorded further up this thread's stack is in progress (a wrapped
	 * function calling another): one park is enough. A recorded frame below us
	 * was left by a longjmp out of its wait. */
	uint64_t frame = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	if (ss_shim_tls.wait_frame && ss_shim_tls.wait_frame > frame)
		return 0;
	struct ss_slot *s;
	if (SS_UNLIKELY(ss_tls_session != st)) {
		/* A thread the shim did not start (or one from before this session):
		 * it becomes a lane as it attaches. */
		if (!ss_tls_worker_runtime && S.runtime) {
			ss_tls_worker_runtime = S.runtime;
			ss_tls_worker_index = atomic_fetch_add_explicit(&S.next_index, 1,
									memory_order_relaxed);
		}
		s = ss_attach(st);
		ss_shim_tls.parked = 0;
		ss_shim_tls.iter_session = 0;
	} else {
		s = ss_tls_slot;
	}
	if (!s)
		return 0;
	int fdwait = kind != SS_SHIM_WAIT_WORK;
	if (!fdwait && ss_shim_tls.iter_session == st)
		return 0; /* blocked inside a loop iteration: part of it */
	uint64_t now = ss_stamp();
	if (ss_shim_tls.parked) /* left by a longjmp out of a wait */
		ss_push(s, SS_EV_UNPARK, now, 0, 0, 0);
	close_iteration(s, st, now);
	if (fdwait && !ss_shim_tls.loop) {
		ss_shim_tls.loop = (uint8_t)kind;
		ss_push(s, SS_EV_SPAWN, now, loop_task(s), S.loop_loc[kind], 0);
	}
	ss_push(s, SS_EV_PARK, now, 0, 0, 0);
	ss_inpoll_set(s, SS_INPOLL_PARKED);
	ss_shim_tls.parked = 1;
	ss_shim_tls.wait_frame = frame;
	return fdwait ? TOKEN_LOOP : TOKEN_PARK;
}

STALLSCOPE_API void stallscope_shim_wait_end(uint32_t token)
{
	if (!token)
		return;
	ss_shim_tls.wait_frame = 0;
	ss_shim_tls.parked = 0;
	uint32_t st = atomic_load_explicit(&ss_state, memory_order_relaxed);
	if (!st || ss_tls_session != st || ss_shim_tls.app)
		return; /* the session ended or changed during the wait */
	struct ss_slot *s = ss_tls_slot;
	uint64_t now = ss_stamp();
	ss_push(s, SS_EV_UNPARK, now, 0, 0, 0);
	if (token == TOKEN_LOOP) {
		uint32_t k = ss_shim_tls.loop < SS_SHIM_WAIT_KINDS ? ss_shim_tls.loop : 0;
		ss_push(s, SS_EV_POLL_BEGIN, now, loop_task(s), S.loop_loc[k], 0);
		ss_inpoll_set(s, SS_INPOLL_IN);
		ss_shim_tls.iter_session = st;
	} else {
		ss_inpoll_set(s, SS_INPOLL_OUT);
	}
}
