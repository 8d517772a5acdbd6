/*
 * threads_asleep.h - waits, before a fork, until the process's other threads
 * (or those whose name starts with a prefix) are asleep in a system call.
 *
 * Why: a fork takes only the calling thread along, and a lock another thread
 * holds at that moment stays held in the child for ever. glibc's malloc resets
 * its own, but ASan's allocator before LLVM 18 (GCC 12's libasan) installs no
 * fork handler, so a recorder thread caught allocating (libdw reading the maps,
 * say) left a child's first allocation of that size waiting for ever
 * (preload-san hung so). Waiting narrows that window to the instants between
 * the look and the fork; it cannot close it.
 */
#ifndef STALLSCOPE_TESTS_THREADS_ASLEEP_H
#define STALLSCOPE_TESTS_THREADS_ASLEEP_H

#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* prefix NULL: every thread but the caller; else those whose comm starts
 * with it. Gives up after about 10 s (the fork then takes its chance). */
static inline void threads_asleep(const char *prefix)
{
	char path[300], buf[64];
	for (int tries = 0; tries < 10000; tries++) {
		int busy = 0;
		DIR *d = opendir("/proc/self/task");
		if (!d)
			return;
		for (struct dirent *e; (e = readdir(d));) {
			if (e->d_name[0] == '.' || atoi(e->d_name) == gettid())
				continue;
			FILE *f;
			if (prefix) {
				snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
				if (!(f = fopen(path, "r")))
					continue;
				int named = fgets(buf, sizeof buf, f) && !strncmp(buf, prefix, strlen(prefix));
				fclose(f);
				if (!named)
					continue;
			}
			snprintf(path, sizeof path, "/proc/self/task/%s/syscall", e->d_name);
			if (!(f = fopen(path, "r")))
				continue;
			/* "running", or the number of the system call it sleeps in */
			busy += !fgets(buf, sizeof buf, f) || !strncmp(buf, "running", 7);
			fclose(f);
		}
		closedir(d);
		if (!busy)
			return;
		poll(NULL, 0, 1);
	}
}

#endif
