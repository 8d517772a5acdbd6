/*
 * compat_cond.c - pthread_cond_timedwait imported at its GLIBC_2.2.5 (compat)
 * version, as very old programs do. The condition variable is an old-style one
 * (zeroed, never initialised by the new implementation).
 */
#include <pthread.h>
#include <time.h>

__asm__(".symver pthread_cond_timedwait, pthread_cond_timedwait@GLIBC_2.2.5");

int compat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t);

int compat_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t)
{
	return pthread_cond_timedwait(c, m, t);
}

/* The compat implementation allocates the real condition variable on first use;
 * its own destroy frees it. */
__asm__(".symver pthread_cond_destroy, pthread_cond_destroy@GLIBC_2.2.5");
int compat_cond_destroy(pthread_cond_t *c);
int compat_cond_destroy(pthread_cond_t *c)
{
	return pthread_cond_destroy(c);
}
