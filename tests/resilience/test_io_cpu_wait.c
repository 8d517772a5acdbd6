/*
 * test_io_cpu_wait.c - a write kept waiting for a CPU is not a slow disk: the
 * hooks-only recorder keeps the stall watchdog's looks on its one thread.
 *
 * Hooks only, a write that takes longer than half the stall threshold moves
 * the looks to a thread of their own for the rest of the session. Measured by
 * the clock alone, a loaded machine's scheduler (whose slices are longer than
 * the 5 ms bar at a 10 ms threshold) made that switch with a fast disk. Here
 * each block write of the writer first waits 20 ms in its CPU's run queue: a
 * SCHED_FIFO thread spins on that CPU (io_spy.c), so the wait is measured as
 * run-queue wait (checked: /proc/thread-self/schedstat).
 *
 *   cpu wait   every block write waits 20 ms for a CPU: after 1.5 s of them
 *              there is no ss-watchdog thread and the gauge
 *              stallscope_watchdog_own_thread is 0.
 *   slow disk  the control: every block write sleeps 20 ms (a slow disk):
 *              the looks move (ss-watchdog, gauge 1).
 *
 * Exits 77 when the machine refuses a SCHED_FIFO thread.
 */
#include <stallscope/stallscope.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_spy.h"
#include "resil.h"
#include "trace_check.h"

/* Records 1.5 s of short polls, hooks only, threshold 10 ms; at the end:
 * whether ss-watchdog runs, the gauge, the block writes made. */
static void record(const char *tag, int *watchdog, long long *gauge, uint64_t *writes)
{
	char *dir = tc_tmpdir(tag);
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "cw", 10);
	uint64_t w0 = atomic_load(&io_spy.writes);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	uint32_t loc = stallscope_location("test_io_cpu_wait.c", 1, "poll");
	stallscope_worker_begin("cw", 1);
	uint64_t t0 = rs_now();
	for (uint64_t task = 1; rs_now() - t0 < 1500000000u; task++) {
		stallscope_poll_begin(task, loc);
		rs_sleep_ms(1);
		stallscope_poll_end();
	}
	stallscope_worker_end();
	*watchdog = io_spy_has_thread("ss-watchdog");
	*gauge = rs_metric("stallscope_watchdog_own_thread");
	*writes = atomic_load(&io_spy.writes) - w0;
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	if (io_spy_preempt_start() != 0) {
		printf("SKIP: no SCHED_FIFO thread (%s)\n", strerror(errno));
		return 77;
	}
	int watchdog;
	long long gauge;
	uint64_t writes;

	printf("cpu wait\n");
	atomic_store(&io_spy.preempt_ns, 20000000u);
	record("cpuwait", &watchdog, &gauge, &writes);
	atomic_store(&io_spy.preempt_ns, 0);
	uint64_t least = atomic_load(&io_spy.preempt_least_ns);
	printf("  %llu block writes, the least run-queue wait in one %.1f ms; ss-watchdog at the "
	       "end: %d, stallscope_watchdog_own_thread %lld\n", (unsigned long long)writes,
	       (double)least / 1e6, watchdog, gauge);
	CHECK(writes >= 3, "only %llu block writes in 1.5 s", (unsigned long long)writes);
	CHECK(least != UINT64_MAX && least >= 15000000u,
	      "the writes were not kept waiting for a CPU (least wait %.1f ms)", (double)least / 1e6);
	CHECK(!watchdog && gauge == 0, "the looks moved to a thread of their own (ss-watchdog %d, "
	      "gauge %lld) though every write was only kept waiting for a CPU", watchdog, gauge);

	printf("slow disk\n");
	atomic_store(&io_spy.write_delay_ns, 20000000u);
	record("slowdisk", &watchdog, &gauge, &writes);
	atomic_store(&io_spy.write_delay_ns, 0);
	printf("  %llu block writes; ss-watchdog at the end: %d, stallscope_watchdog_own_thread "
	       "%lld\n", (unsigned long long)writes, watchdog, gauge);
	CHECK(writes >= 3, "only %llu block writes in 1.5 s", (unsigned long long)writes);
	CHECK(watchdog && gauge == 1, "the looks stayed on the writer's thread (ss-watchdog %d, "
	      "gauge %lld) with every write 20 ms long", watchdog, gauge);
	io_spy_preempt_stop();
	printf("test_io_cpu_wait: ok\n");
	return 0;
}
