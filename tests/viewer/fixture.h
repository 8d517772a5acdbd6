/*
 * fixture.h - databases with known rows for the viewer's tests and benchmark,
 * written straight from schema/stallscope.sql (no importer involved, so the
 * viewer's tests do not depend on the importer's state and know exactly where
 * each poll, park, stall and lost range is).
 */
#ifndef STALLSCOPE_TEST_FIXTURE_H
#define STALLSCOPE_TEST_FIXTURE_H

#include <stdint.h>

/* The small fixture's clock: trace start, and ms -> trace ns. */
#define FX_BASE INT64_C(1000000000000)
#define FX_MS(ms) (FX_BASE + (int64_t)((ms) * 1000000.0))

/* Small fixture (1 s, 3 workers of runtime "demo" + one sampled non-worker
 * thread "io-thread"):
 *  w0 (worker 1, thread 2): polls [100,150) loc 1, [200,210) loc 2,
 *     [300,500) loc 3 = a 200 ms stall (stall 1, captures 'running' and
 *     'blocked'); parks [150,200) [210,300) [500,900); CPU: on during polls,
 *     blocked while parked, blocked [350,420) and preempted [420,440) inside
 *     the stall; samples every 1 ms on CPU.
 *  w1 (worker 2, thread 3): polls of 5 ms every 20 ms (loc 2), parked between.
 *  w2 (worker 3, thread 4): polls of 1 ms every 2 ms in [0,400) (loc 1), then
 *     parked [400,1000); events lost on its thread in [600,700).
 *  io-thread (thread 5): samples every 5 ms.
 *  A process-wide sample loss at [950,960).
 * Returns 0, or -1 with a message on stderr. */
int fixture_build_small(const char *db_path, const char *schema_path);

/* Synthetic large database for the benchmark: workers x duration with polls of
 * a few us to a few ms, parks, CPU intervals and samples, about n_events rows
 * in all, plus the summaries. Deterministic (fixed seed). */
int fixture_build_synthetic(const char *db_path, const char *schema_path, uint64_t n_events,
			    int workers);

/* A 12 s, lightly loaded trace: 4 workers of runtime "light", each polling
 * once every 2 ms for 1%, 3%, 10% and 30% of the time (w0..w3), parked in
 * between. Returns 0, or -1 with a message on stderr. */
int fixture_build_light(const char *db_path, const char *schema_path);
/* The same with the parks' CPU state not recorded (META "switches" saying so,
 * no cpu_intervals row inside a park), as the sched_switch program records. */
int fixture_build_light_unswitched(const char *db_path, const char *schema_path);

#endif /* STALLSCOPE_TEST_FIXTURE_H */
