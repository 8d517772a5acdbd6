/*
 * static_spin.c - a statically linked program (the preload shim cannot load into
 * it) with two threads that burn CPU for about a second each, then exit 4.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static void *spin(void *arg)
{
	(void)arg;
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 600000000L);
	return NULL;
}

int main(void)
{
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, spin, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	puts("static_spin: done");
	return 4;
}
