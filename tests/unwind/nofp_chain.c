/*
 * nofp_chain.c - a program built the way most binaries on a Debian system are:
 * -O2 -fomit-frame-pointer (tests/unwind/meson.build), with a call chain of
 * known depth that the compiler may neither inline, clone nor turn into tail
 * calls (noipa, and work after every call). Worker threads run it through
 * libstallscope's hooks; stallscope_start_from_env() records it.
 *
 *   nofp_chain spin SECONDS THREADS   workers spin in chain_1 -> ... -> chain_6 ->
 *                                     spin_leaf, one poll per ~1 ms of work
 *   nofp_chain stall-running          one worker: a 150 ms poll spinning in
 *                                     chain_1 -> ... -> stall_spin
 *   nofp_chain stall-blocked          one worker: a 150 ms poll blocked in
 *                                     clock_nanosleep under chain_1 -> ... -> stall_sleep
 *   nofp_chain work POLLS THREADS     a fixed amount of work for benchmarks: each
 *                                     worker runs POLLS polls of 50 passes through
 *                                     the chain (tests/bench/bench_unwind.c)
 *
 * The thread's start function is worker_main; the test reads names back from the
 * imported database. chain_3 has a 3 KB frame, so a small stack copy cannot
 * reach past it.
 */
#include <stallscope/stallscope.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOIPA __attribute__((noipa))

static volatile uint64_t sink;
static int mode; /* 0 spin, 1 stall-running, 2 stall-blocked, 3 work */
static uint64_t deadline;
static long work_polls;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static NOIPA uint64_t spin_leaf(uint64_t x)
{
	uint64_t h = x | 1;
	for (int i = 0; i < 200000; i++) {
		h ^= (uint64_t)i;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

static NOIPA uint64_t stall_spin(uint64_t x)
{
	uint64_t end = now_ns() + 150000000ull, h = x;
	while (now_ns() < end)
		h = spin_leaf(h) + 1;
	return h;
}

static NOIPA uint64_t stall_sleep(uint64_t x)
{
	struct timespec ts = { 0, 150000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	return x + 1;
}

static NOIPA uint64_t chain_6(uint64_t x)
{
	uint64_t r = mode == 0 || mode == 3 ? spin_leaf(x) : mode == 1 ? stall_spin(x) : stall_sleep(x);
	sink ^= r;
	return r * 3 + 1;
}
static NOIPA uint64_t chain_5(uint64_t x) { uint64_t r = chain_6(x ^ 5); sink ^= r; return r * 3 + 5; }
static NOIPA uint64_t chain_4(uint64_t x) { uint64_t r = chain_5(x ^ 4); sink ^= r; return r * 3 + 4; }
/* A frame of 3 KB: a stack copy of 1 KiB (STALLSCOPE_STACK_COPY=1K) ends inside
 * it, so the unwinder must stop here and say the stack is truncated. */
static NOIPA uint64_t chain_3(uint64_t x)
{
	volatile unsigned char pad[3072];
	pad[0] = (unsigned char)x;
	pad[sizeof pad - 1] = (unsigned char)(x >> 8);
	uint64_t r = chain_4(x ^ 3 ^ pad[0]);
	sink ^= r ^ pad[sizeof pad - 1];
	return r * 3 + 3;
}
static NOIPA uint64_t chain_2(uint64_t x) { uint64_t r = chain_3(x ^ 2); sink ^= r; return r * 3 + 2; }
static NOIPA uint64_t chain_1(uint64_t x) { uint64_t r = chain_2(x ^ 1); sink ^= r; return r * 3 + 1; }

static NOIPA void *worker_main(void *arg)
{
	uint32_t index = (uint32_t)(uintptr_t)arg;
	stallscope_worker_begin("nofp", index);
	uint32_t loc = stallscope_location(__FILE__, __LINE__, "worker_main");
	uint64_t task = (uint64_t)index << 32;
	if (mode == 3) {
		for (long p = 0; p < work_polls; p++) {
			stallscope_poll_begin(++task, loc);
			for (int k = 0; k < 50; k++)
				sink ^= chain_1(task + (uint64_t)k);
			stallscope_poll_end();
		}
		stallscope_worker_end();
		return NULL;
	}
	do {
		stallscope_poll_begin(++task, loc);
		sink ^= chain_1(task);
		stallscope_poll_end();
	} while (mode == 0 && now_ns() < deadline);
	stallscope_worker_end();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nofp_chain spin SECONDS THREADS | work POLLS THREADS | stall-running | "
			"stall-blocked\n");
		return 2;
	}
	int threads = 1;
	if (strcmp(argv[1], "spin") == 0 && argc == 4) {
		deadline = now_ns() + (uint64_t)(atof(argv[2]) * 1e9);
		threads = atoi(argv[3]);
	} else if (strcmp(argv[1], "work") == 0 && argc == 4) {
		mode = 3;
		work_polls = atol(argv[2]);
		threads = atoi(argv[3]);
	} else if (strcmp(argv[1], "stall-running") == 0) {
		mode = 1;
	} else if (strcmp(argv[1], "stall-blocked") == 0) {
		mode = 2;
	} else {
		fprintf(stderr, "nofp_chain: unknown mode %s\n", argv[1]);
		return 2;
	}
	if (threads < 1 || threads > 64)
		threads = 1;
	if (stallscope_start_from_env() != 0)
		return 1;
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker_main, (void *)(uintptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return stallscope_stop() == 0 ? 0 : 1;
}
