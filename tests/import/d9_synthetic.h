/*
 * d9_synthetic.h - a small Tokio-like dial9 trace whose every derived row is
 * known: two workers of runtime "main", a thread outside the runtime, the
 * flush thread's queue and CPU samples, written as dial9 writes them (one
 * stream per thread batch, batches overlapping in time by seconds, an idle
 * thread's batch drained last, the symbol table appended to the last stream).
 * test_dial9_import.c states what each row must be; the timeline is in
 * D9S_U (1 ms) from D9S_T0.
 */
#ifndef STALLSCOPE_D9_SYNTHETIC_H
#define STALLSCOPE_D9_SYNTHETIC_H

#include <stddef.h>
#include <stdint.h>

#include "d9_builder.h"

#define D9S_U 1000000ull
#define D9S_T0 1000000000000ull
#define D9S_AT(u) (D9S_T0 + (uint64_t)(u) * D9S_U)
#define D9S_REALTIME 1700000000123456789ull
#define D9S_BATCHES 7

/* Appends the trace's first `batches` streams (D9S_BATCHES: all, with the
 * symbol table) to b. */
void d9_synthetic(struct d9b *b, int batches);

#endif /* STALLSCOPE_D9_SYNTHETIC_H */
