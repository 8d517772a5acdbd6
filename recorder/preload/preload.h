/*
 * preload.h - what the shim's files share: finding the real functions behind
 * the ones we wrap, and the wrapper's frame around a wait.
 */
#ifndef STALLSCOPE_PRELOAD_H
#define STALLSCOPE_PRELOAD_H

#include <errno.h>
#include <stdint.h>

#include "shim-abi.h"

#define SS_PRELOAD_HIDDEN __attribute__((visibility("hidden")))

/* The next definition of name after the shim (version NULL: the default one).
 * Called from the constructor for every wrapped function, and again by a wrapper
 * reached before the constructor ran (another library's constructor). Never NULL
 * for libc functions; NULL only when a library that should provide name (liburing)
 * cannot be found. */
SS_PRELOAD_HIDDEN void *ss_preload_resolve(const char *name, const char *version);
/* Resolves every wrapped function now (constructor). */
SS_PRELOAD_HIDDEN void ss_preload_resolve_waits(void);

#define SS_REAL(ptr, name, version)                                                  \
	__extension__({                                                              \
		__typeof__(ptr) p_ = __atomic_load_n(&(ptr), __ATOMIC_RELAXED);      \
		if (__builtin_expect(!p_, 0)) {                                      \
			p_ = (__typeof__(ptr))ss_preload_resolve(name, version);     \
			__atomic_store_n(&(ptr), p_, __ATOMIC_RELAXED);              \
		}                                                                    \
		p_;                                                                  \
	})

/* The body of a wrapper around a call that may block: errno reaches the real
 * call as the caller left it and the caller as the real call left it; the
 * return value is the real call's. */
#define SS_WAIT_CALL(kind, type, call)                                               \
	do {                                                                         \
		int e_ = errno;                                                      \
		uint32_t t_ = stallscope_shim_wait_begin(kind);                      \
		errno = e_;                                                          \
		type r_ = (call);                                                    \
		e_ = errno;                                                          \
		stallscope_shim_wait_end(t_);                                        \
		errno = e_;                                                          \
		return r_;                                                           \
	} while (0)

#endif /* STALLSCOPE_PRELOAD_H */
