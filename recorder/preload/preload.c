/*
 * preload.c - libstallscope_preload.so, the shim that `stallscope record` puts
 * in LD_PRELOAD so that a program which never calls our hooks is recorded
 * anyway: its constructor starts the recorder from the STALLSCOPE_* environment
 * (recorder/src/shim_lanes.c decides whether this process records), and the
 * functions below make every thread a lane from its first instruction. The
 * waits are in wrap_waits.c.
 *
 * recorder/preload/ holds the shim: preload.c (threads, fork, exec, _exit),
 * wrap_waits.c (the waits), preload.h (what they share) and preload.map (symbol
 * versions; the shim exports only what it wraps, tests/recorder/test_exports.sh).
 * This folder may depend on recorder/src/shim-abi.h and libc; it links
 * libstallscope.so (found beside it: RUNPATH $ORIGIN), so a program that links
 * libstallscope itself shares the same recorder. Nothing links the shim: `stallscope
 * record` (recorder/cli/record_program.c) finds it by path for LD_PRELOAD.
 *
 * Wrapped here:
 *   pthread_create   the new thread starts in a trampoline that makes it a lane
 *                    before its start routine runs (a static pool of 1024
 *                    hand-over records, no allocation; when all are in use the
 *                    thread becomes a lane at its first wait instead);
 *   fork             with --follow-children the child records on its own;
 *   execve, execv, execvp, execvpe
 *                    the recording is sealed before the process image goes (and
 *                    restarted if exec fails); execl* and posix_spawn children
 *                    are recorded by the shim the new image loads;
 *   pthread_setname_np  names are read again (perf reports renames itself);
 *   _exit            the recording is sealed, as exit() would have.
 * Not seen: statically linked programs (the loader never reads LD_PRELOAD),
 * setuid programs run by another user (secure execution ignores it), system calls
 * made without libc (raw syscall(), liburing's own io_uring_enter, GLib's futex
 * waits behind GCond/GMutex/GAsyncQueue), and anything in a vfork child before it
 * execs (it runs on its parent's memory and is recorded as the parent thread).
 */
#include "preload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

SS_PRELOAD_HIDDEN void *ss_preload_resolve(const char *name, const char *version)
{
	void *p = NULL;
	if (!strncmp(name, "io_uring", 8) || !strncmp(name, "__io_uring", 10)) {
		/* Only liburing defines these: take them from it directly (a failed
		 * RTLD_NEXT lookup of a missing library would allocate its error). */
		void *h = dlopen("liburing.so.2", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			p = dlsym(h, name);
			dlclose(h);
		}
		return p;
	}
	if (version)
		p = dlvsym(RTLD_NEXT, name, version);
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	return p;
}

/* ---- threads ------------------------------------------------------------------- */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn r_create;

#define HANDOVERS 1024
static struct handover {
	void *(*fn)(void *);
	void *arg;
	_Atomic int busy;
} handovers[HANDOVERS];
static _Atomic unsigned handover_hint;

static void thread_end(void *unused)
{
	(void)unused;
	stallscope_shim_thread_end();
}

static void *trampoline(void *p)
{
	struct handover *h = p;
	void *(*fn)(void *) = h->fn;
	void *arg = h->arg;
	atomic_store_explicit(&h->busy, 0, memory_order_release);
	stallscope_shim_thread_begin();
	void *ret;
	/* Also on pthread_exit() and cancellation. */
	pthread_cleanup_push(thread_end, NULL);
	ret = fn(arg);
	pthread_cleanup_pop(1);
	return ret;
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	create_fn f = SS_REAL(r_create, "pthread_create", NULL);
	if (!stallscope_is_recording() || stallscope_shim_creating_internal())
		return f(th, attr, fn, arg);
	unsigned start = atomic_fetch_add_explicit(&handover_hint, 1, memory_order_relaxed);
	for (unsigned k = 0; k < HANDOVERS; k++) {
		struct handover *h = &handovers[(start + k) % HANDOVERS];
		int idle = 0;
		if (!atomic_compare_exchange_strong_explicit(&h->busy, &idle, 1, memory_order_acquire,
							     memory_order_relaxed))
			continue;
		h->fn = fn;
		h->arg = arg;
		int r = f(th, attr, trampoline, h);
		if (r != 0)
			atomic_store_explicit(&h->busy, 0, memory_order_release);
		return r;
	}
	return f(th, attr, fn, arg);
}

static int (*r_setname)(pthread_t, const char *);

int pthread_setname_np(pthread_t th, const char *name)
{
	__typeof__(r_setname) f = SS_REAL(r_setname, "pthread_setname_np", NULL);
	int r = f(th, name);
	if (r == 0)
		stallscope_shim_names_changed();
	return r;
}

/* ---- processes ------------------------------------------------------------------ */

static pid_t (*r_fork)(void);

pid_t fork(void)
{
	__typeof__(r_fork) f = SS_REAL(r_fork, "fork", NULL);
	pid_t r = f();
	if (r == 0) {
		int e = errno;
		stallscope_shim_fork_child();
		errno = e;
	}
	return r;
}

static int (*r_execve)(const char *, char *const[], char *const[]);
static int (*r_execv)(const char *, char *const[]);
static int (*r_execvp)(const char *, char *const[]);
static int (*r_execvpe)(const char *, char *const[], char *const[]);

/* The recording is sealed before the image is replaced; a failed exec gets it
 * back, with errno as exec left it. */
#define SS_EXEC_CALL(call)                                                           \
	do {                                                                         \
		int e_ = errno;                                                      \
		int stopped_ = stallscope_shim_exec_begin();                         \
		errno = e_;                                                          \
		int r_ = (call);                                                     \
		if (stopped_)                                                        \
			stallscope_shim_exec_failed();                               \
		return r_;                                                           \
	} while (0)

int execve(const char *path, char *const argv[], char *const envp[])
{
	__typeof__(r_execve) f = SS_REAL(r_execve, "execve", NULL);
	SS_EXEC_CALL(f(path, argv, envp));
}

int execv(const char *path, char *const argv[])
{
	__typeof__(r_execv) f = SS_REAL(r_execv, "execv", NULL);
	SS_EXEC_CALL(f(path, argv));
}

int execvp(const char *file, char *const argv[])
{
	__typeof__(r_execvp) f = SS_REAL(r_execvp, "execvp", NULL);
	SS_EXEC_CALL(f(file, argv));
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
	__typeof__(r_execvpe) f = SS_REAL(r_execvpe, "execvpe", NULL);
	SS_EXEC_CALL(f(file, argv, envp));
}

/* A program that ends with _exit() skips the exit handlers that seal the
 * recording (shells do, and many a forked worker): seal it here. Only the
 * recorded process itself: a fork or vfork child's _exit is not its parent's end. */
static void (*r__exit)(int);

void _exit(int status)
{
	__typeof__(r__exit) f = SS_REAL(r__exit, "_exit", NULL);
	stallscope_shim_exec_begin();
	f(status);
	__builtin_unreachable();
}

__attribute__((constructor)) static void preload_init(void)
{
	int e = errno;
	ss_preload_resolve_waits();
	(void)SS_REAL(r_create, "pthread_create", NULL);
	(void)SS_REAL(r_fork, "fork", NULL);
	(void)SS_REAL(r_execve, "execve", NULL);
	stallscope_shim_init();
	errno = e;
}
