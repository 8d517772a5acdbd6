/*
 * bench_util.h - the clock and statistics every benchmark here uses, so each
 * prints figures computed the same way.
 */
#ifndef STALLSCOPE_BENCH_UTIL_H
#define STALLSCOPE_BENCH_UTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Nanoseconds on any clock (a thread's or the process's CPU time too). */
static inline uint64_t ns_of_clock(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ns(void)
{
	return ns_of_clock(CLOCK_MONOTONIC);
}

/* Seconds on any clock: CLOCK_MONOTONIC, or a thread's or the process's CPU time. */
static inline double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v in place; the middle value (the mean of the middle two for even n). */
static inline double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Removes a directory of plain files (a run's segments). */
static inline void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char path[1024];
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

#endif
