/*
 * thread_self.c - what the recorder knows about the calling thread whatever the
 * session: its worker identity and its stack bounds. Depends on libc only.
 */
#include "thread_self.h"

#include <pthread.h>

SS_INTERNAL __thread uint32_t ss_tls_worker_runtime __attribute__((tls_model("initial-exec")));
SS_INTERNAL __thread uint32_t ss_tls_worker_index __attribute__((tls_model("initial-exec")));
SS_INTERNAL __thread uint64_t ss_tls_stack_lo __attribute__((tls_model("initial-exec")));
SS_INTERNAL __thread uint64_t ss_tls_stack_hi __attribute__((tls_model("initial-exec")));

/* Once per thread, from a control call: pthread_getattr_np may read /proc and
 * allocate (for the main thread), which a hook must never do. */
SS_INTERNAL void ss_learn_stack_bounds(void)
{
	if (ss_tls_stack_hi)
		return;
	pthread_attr_t a;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0) {
		ss_tls_stack_lo = (uint64_t)(uintptr_t)addr;
		ss_tls_stack_hi = (uint64_t)(uintptr_t)addr + size;
	}
	pthread_attr_destroy(&a);
}
