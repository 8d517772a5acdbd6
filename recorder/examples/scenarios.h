/*
 * scenarios.h - the workloads of the example runtime. Each scenario is a steady
 * stream of short requests plus one pathology whose code sits in a function named
 * culprit_* (or *_task_body), so that a profile can point at it by name.
 */
#ifndef EXAMPLE_SCENARIOS_H
#define EXAMPLE_SCENARIOS_H

#include <stdint.h>
#include <stdio.h>

#include "runtime.h"

struct scenario;
struct scenario_run;

/* NULL when no scenario has that name. */
const struct scenario *scenario_find(const char *name);
const char *scenario_name(const struct scenario *sc);
/* Tasks per second the scenario is designed for, used when --rate is not given. */
double scenario_default_rate(const struct scenario *sc);
void scenario_print_list(FILE *out);

/* NULL when out of memory. The run must outlive every task it spawns: destroy it
 * only after runtime_destroy(). */
struct scenario_run *scenario_run_create(const struct scenario *sc, struct runtime *rt,
					 uint64_t seed);
/* Spawns the next request. Call from one thread only (the load generator). */
void scenario_spawn_one(struct scenario_run *run);
/* Tasks the scenario means to leave unfinished (the leak), so shutdown does not
 * wait for them to drain. */
uint64_t scenario_expected_leftover(struct scenario_run *run);
void scenario_run_destroy(struct scenario_run *run);

#endif /* EXAMPLE_SCENARIOS_H */
