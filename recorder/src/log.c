/*
 * log.c - the recorder's voice: conditions logged to stderr, and the last
 * control-call error kept for stallscope_last_error(). Depends on libc (and the
 * public header) only, so every recorder file can report without depending on
 * the session.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "stallscope/stallscope.h"

static pthread_mutex_t error_mu = PTHREAD_MUTEX_INITIALIZER;
static char error_buf[2][512];
static _Atomic int error_index = -1;

SS_INTERNAL void ss_log(const char *fmt, ...)
{
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "stallscope: %s\n", msg);
}

SS_INTERNAL void ss_set_error(const char *fmt, ...)
{
	/* Two buffers, so a reader of the previous message is not torn by a new one. */
	pthread_mutex_lock(&error_mu);
	int next = atomic_load(&error_index) == 0 ? 1 : 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(error_buf[next], sizeof error_buf[next], fmt, ap);
	va_end(ap);
	atomic_store(&error_index, next);
	pthread_mutex_unlock(&error_mu);
	fprintf(stderr, "stallscope: %s\n", error_buf[next]);
}

STALLSCOPE_API const char *stallscope_last_error(void)
{
	int i = atomic_load(&error_index);
	return i < 0 ? "" : error_buf[i];
}
