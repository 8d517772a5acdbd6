/*
 * cpu_work.h - calibrated CPU burning. Loops count iterations rather than watch a
 * clock, so that a task descheduled on a busy machine still does the same amount
 * of work, and a CPU profile shows real on-CPU time in the burning function.
 */
#ifndef EXAMPLE_CPU_WORK_H
#define EXAMPLE_CPU_WORK_H

#include <stdint.h>

/* Measures the loop speed; call once before starting threads. */
void cpu_calibrate(void);

/* Iterations of cpu_spin() that take about us microseconds of CPU. */
uint64_t cpu_iters_for_us(uint64_t us);

/* Always inlined so that the frame on top of a CPU sample is the function that
 * chose to burn, not a shared helper. The asm barrier keeps the loop from being
 * folded away. */
static inline __attribute__((always_inline)) uint64_t cpu_spin(uint64_t iters, uint64_t x)
{
	for (uint64_t i = 0; i < iters; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdull;
		x += i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* A plain burn for ordinary task bodies. */
uint64_t cpu_burn_us(uint64_t us);

#endif /* EXAMPLE_CPU_WORK_H */
