/*
 * thread_named.c - starting the recorder's own threads with their names already
 * set. Depends on libc only.
 *
 * `top -H` and a profile of the host tell the recorder's cost apart by the
 * names (ss-writer, ss-watchdog), and they must be there when
 * stallscope_start() returns. Naming another thread (pthread_setname_np) opens,
 * writes and closes /proc/self/task/TID/comm: three system calls with a path
 * walk in procfs, 0.15-0.4 ms of CPU a thread on a VM. A new thread instead
 * inherits its creator's name, so the creator takes the name for the moment of
 * pthread_create and then puts its own back: three prctl calls, no /proc.
 */
#include "recorder-private.h"

#include <string.h>
#include <sys/prctl.h>

/* Like pthread_create (default attributes); the new thread is called name (at
 * most 15 characters) when this returns. With borrow, from its first
 * instruction: the calling thread carries that name between two of its own
 * system calls, nothing of it runs meanwhile but pthread_create. Not where
 * something records the caller's renames: the CPU sampler's perf events ask for
 * COMM records, and the host thread would be seen renamed twice. Without
 * borrow, or where prctl is refused (a sandbox), the name is set from outside
 * after the fact. Any thread; not on the hook path. */
SS_INTERNAL int ss_thread_create_named(pthread_t *th, void *(*fn)(void *), void *arg,
				       const char *name, int borrow)
{
	char own[17] = "";
	int swapped = borrow && prctl(PR_GET_NAME, own, 0, 0, 0) == 0 &&
		      prctl(PR_SET_NAME, name, 0, 0, 0) == 0;
	int rc = pthread_create(th, NULL, fn, arg);
	if (swapped)
		prctl(PR_SET_NAME, own, 0, 0, 0);
	else if (rc == 0)
		pthread_setname_np(*th, name);
	return rc;
}
