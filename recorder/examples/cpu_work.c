/*
 * cpu_work.c - calibration of cpu_spin() against thread CPU time.
 */
#include "cpu_work.h"

#include <time.h>

/* Written once by cpu_calibrate() before any worker exists; thread creation
 * publishes it. */
static uint64_t iters_per_ms = 100000;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cpu_calibrate(void)
{
	uint64_t iters = 1 << 16, x = 1;
	/* Grow until one run is long enough (5 ms) that clock granularity and a
	 * stray interrupt no longer matter; keep the fastest of three runs. */
	for (;;) {
		uint64_t t0 = thread_cpu_ns();
		x = cpu_spin(iters, x);
		uint64_t dt = thread_cpu_ns() - t0;
		if (dt >= 5000000) {
			uint64_t best = dt;
			for (int r = 0; r < 2; r++) {
				t0 = thread_cpu_ns();
				x = cpu_spin(iters, x);
				dt = thread_cpu_ns() - t0;
				if (dt < best)
					best = dt;
			}
			iters_per_ms = iters * 1000000u / best;
			break;
		}
		iters *= 2;
	}
	if (iters_per_ms == 0)
		iters_per_ms = 1;
}

uint64_t cpu_iters_for_us(uint64_t us)
{
	return us * iters_per_ms / 1000u;
}

uint64_t cpu_burn_us(uint64_t us)
{
	return cpu_spin(cpu_iters_for_us(us), us);
}
