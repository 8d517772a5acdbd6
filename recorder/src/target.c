/*
 * target.c - which process a session records: this one (the usual case, a
 * program that links libstallscope or runs with the preload shim), or another
 * one that `stallscope record -p PID` follows from outside (recorder/attach/).
 *
 * Everything that reads /proc for the recorded process (thread names, mappings,
 * the executable named in segment headers, its pid) asks here for the path, so
 * the same writer and sampler serve both. Set before stallscope_start() and left
 * alone while a session runs.
 */
#include "recorder-private.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int32_t target_pid; /* 0: this process */

SS_INTERNAL void ss_target_set(int32_t pid)
{
	target_pid = pid > 0 ? pid : 0;
}

SS_INTERNAL int32_t ss_target_pid(void)
{
	return target_pid;
}

SS_INTERNAL uint64_t ss_target_header_pid(void)
{
	return (uint64_t)(target_pid ? target_pid : getpid());
}

SS_INTERNAL int ss_target_proc_path(char *buf, size_t len, const char *fmt, ...)
{
	int n = target_pid ? snprintf(buf, len, "/proc/%d/", (int)target_pid)
			   : snprintf(buf, len, "/proc/self/");
	if (n < 0 || (size_t)n >= len)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - (size_t)n ? -1 : 0;
}
