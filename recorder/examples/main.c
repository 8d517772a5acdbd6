/*
 * main.c - stallscope-example-runtime: flags, recording session, and the load
 * generator that spawns a scenario's requests at a fixed rate for a fixed time.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stallscope/stallscope.h>

#include "cpu_work.h"
#include "runtime.h"
#include "scenarios.h"

/* How long in-flight requests get to finish after the load stops, so a trace
 * normally ends with completions rather than dropped tasks. Starvation's backlog
 * is dropped when it runs out: that backlog is the point of the scenario. */
#define DRAIN_GRACE_NS 300000000ull

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct options {
	unsigned workers;
	double duration_s;
	double rate;
	int rate_set;
	const char *scenario;
	uint64_t seed;
	const char *record_dir;
	double drain_s;        /* how long to wait for the queue to drain */
};

static void usage(FILE *out, const char *argv0)
{
	fprintf(out,
		"usage: %s [options]\n"
		"A small work-stealing task runtime that runs a workload and is recorded by\n"
		"stallscope when STALLSCOPE_ENABLED=1 (see the STALLSCOPE_* variables) or --record.\n"
		"\n"
		"  --workers N        worker threads (default 4)\n"
		"  --duration SECONDS how long to generate load, fractional allowed (default 2)\n"
		"  --rate N           tasks spawned per second (default: the scenario's)\n"
		"  --scenario NAME    workload (default steady), one of:\n",
		argv0);
	scenario_print_list(out);
	fprintf(out,
		"  --seed N           seed of the task parameter generator (default 1)\n"
		"  --drain SECONDS    after the load, wait this long at most for the tasks\n"
		"                     left to finish (default 0.3; a benchmark comparing CPU\n"
		"                     time gives a long one, so every run does the same work)\n"
		"  --record DIR       record into DIR with default settings, ignoring STALLSCOPE_*\n"
		"  -h, --help         this text\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max))
		return -1;
	*out = v;
	return 0;
}

/* Returns 0, 1 when the program should exit successfully (--help), -1 on error. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "duration", required_argument, NULL, 'd' },
		{ "rate", required_argument, NULL, 'r' },
		{ "scenario", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "record", required_argument, NULL, 'R' },
		{ "drain", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	uint64_t v;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			if (parse_u64(optarg, 256, &v) != 0 || v == 0) {
				fprintf(stderr, "%s: --workers must be 1..256, got '%s'\n", argv[0], optarg);
				return -1;
			}
			o->workers = (unsigned)v;
			break;
		case 'd':
			if (parse_double(optarg, 0.001, 86400.0, &o->duration_s) != 0) {
				fprintf(stderr, "%s: --duration must be 0.001..86400 seconds, got '%s'\n",
					argv[0], optarg);
				return -1;
			}
			break;
		case 'r':
			if (parse_double(optarg, 0.1, 10000000.0, &o->rate) != 0) {
				fprintf(stderr, "%s: --rate must be 0.1..10000000 tasks/s, got '%s'\n",
					argv[0], optarg);
				return -1;
			}
			o->rate_set = 1;
			break;
		case 's':
			o->scenario = optarg;
			break;
		case 'S':
			if (parse_u64(optarg, UINT64_MAX, &o->seed) != 0) {
				fprintf(stderr, "%s: --seed must be a non-negative integer, got '%s'\n",
					argv[0], optarg);
				return -1;
			}
			break;
		case 'R':
			o->record_dir = optarg;
			break;
		case 'D':
			if (parse_double(optarg, 0.0, 86400.0, &o->drain_s) != 0) {
				fprintf(stderr, "%s: --drain must be 0..86400 seconds, got '%s'\n", argv[0],
					optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout, argv[0]);
			return 1;
		default:
			usage(stderr, argv[0]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return -1;
	}
	return 0;
}

/* Returns 1 when a session was started (and so must be stopped). */
static int start_recording(const struct options *o)
{
	int rc;
	if (o->record_dir) {
		struct stallscope_config cfg;
		stallscope_config_init(&cfg);
		cfg.output_dir = o->record_dir;
		rc = stallscope_start(&cfg);
	} else {
		rc = stallscope_start_from_env();
	}
	if (rc != 0) {
		/* A profiler that cannot record must not stop the program it profiles. */
		fprintf(stderr, "stallscope-example-runtime: recording not started: %s\n",
			stallscope_last_error());
		return 0;
	}
	return stallscope_is_recording();
}

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000u),
			       .tv_nsec = (long)(deadline_ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !interrupted)
		;
}

/* Spawns at the target rate until the duration ends. Ticks of 1 ms, each catching
 * up to the number of spawns due by now, keep the rate exact on average even when
 * this thread is descheduled. */
static void generate_load(struct scenario_run *run, struct runtime *rt, double rate,
			  uint64_t duration_ns)
{
	uint64_t start = rt_now_ns(), end = start + duration_ns;
	uint64_t spawned = 0, next_tick = start, next_mark = start;
	uint32_t backlog = STALLSCOPE_NAME("live_tasks");
	for (;;) {
		uint64_t now = rt_now_ns();
		if (now >= end || interrupted)
			break;
		uint64_t due = (uint64_t)((double)(now - start) * rate / 1e9) + 1;
		while (spawned < due) {
			scenario_spawn_one(run);
			spawned++;
		}
		if (now >= next_mark) {
			struct runtime_stats st;
			runtime_get_stats(rt, &st);
			stallscope_mark(backlog, (int64_t)st.live);
			next_mark = now + 10000000u;
		}
		next_tick += 1000000u;
		if (next_tick < now)
			next_tick = now; /* fell behind: do not burst to catch up on ticks */
		if (next_tick > end)
			next_tick = end;
		sleep_until(next_tick);
	}
}

static void drain(struct scenario_run *run, struct runtime *rt, uint64_t grace_ns)
{
	uint64_t deadline = rt_now_ns() + grace_ns;
	while (!interrupted && rt_now_ns() < deadline) {
		struct runtime_stats st;
		runtime_get_stats(rt, &st);
		if (st.live <= scenario_expected_leftover(run))
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	struct options o = { .workers = 4, .duration_s = 2.0, .scenario = "steady", .seed = 1,
			     .drain_s = DRAIN_GRACE_NS / 1e9 };
	int prc = parse_args(argc, argv, &o);
	if (prc != 0)
		return prc > 0 ? 0 : 2;
	const struct scenario *sc = scenario_find(o.scenario);
	if (!sc) {
		fprintf(stderr, "%s: unknown scenario '%s'; scenarios:\n", argv[0], o.scenario);
		scenario_print_list(stderr);
		return 2;
	}
	double rate = o.rate_set ? o.rate : scenario_default_rate(sc);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* Before any thread exists, and before recording, so the calibration burn
	 * does not show up in the trace. */
	cpu_calibrate();

	int recording = start_recording(&o);
	/* The load generator spawns and marks; attach now so its first hook does
	 * not pay for the attach. */
	stallscope_thread_attach();

	uint64_t t0 = rt_now_ns();
	struct runtime *rt = runtime_start("example", o.workers);
	if (!rt) {
		fprintf(stderr, "%s: cannot start the runtime\n", argv[0]);
		if (recording)
			stallscope_stop();
		return 1;
	}
	struct scenario_run *run = scenario_run_create(sc, rt, o.seed);
	if (!run) {
		fprintf(stderr, "%s: out of memory\n", argv[0]);
		runtime_shutdown(rt);
		runtime_destroy(rt);
		if (recording)
			stallscope_stop();
		return 1;
	}

	generate_load(run, rt, rate, (uint64_t)(o.duration_s * 1e9));
	drain(run, rt, (uint64_t)(o.drain_s * 1e9));
	runtime_shutdown(rt);
	uint64_t elapsed = rt_now_ns() - t0;

	struct runtime_stats st;
	runtime_get_stats(rt, &st);

	/* Stop before dropping the leftover tasks, so the trace ends with them still
	 * alive (the leak stays visible) instead of a burst of terminations. */
	int stop_failed = recording && stallscope_stop() != 0;
	if (stop_failed)
		fprintf(stderr, "%s: stopping the recording failed: %s\n", argv[0],
			stallscope_last_error());

	char rec[256] = "";
	if (recording) {
		struct stallscope_stats ss;
		stallscope_get_stats(&ss);
		/* Every lost event, as the metrics and the trace's loss records count
		 * them: refused by a full buffer, or accepted and lost to a failed
		 * write (a full disk). */
		snprintf(rec, sizeof(rec),
			 " recorded_events=%llu dropped_events=%llu (buffer %llu, write %llu) segments=%llu"
			 " bytes=%llu",
			 (unsigned long long)ss.events_written,
			 (unsigned long long)(ss.events_dropped + ss.events_lost_on_disk),
			 (unsigned long long)ss.events_dropped, (unsigned long long)ss.events_lost_on_disk,
			 (unsigned long long)ss.segments_sealed, (unsigned long long)ss.bytes_written);
	}
	fprintf(stderr,
		"stallscope-example-runtime: scenario=%s workers=%u rate=%.0f/s spawned=%llu "
		"completed=%llu unfinished=%llu polls=%llu steals=%llu parks=%llu elapsed=%.3fs%s%s\n",
		scenario_name(sc), o.workers, rate, (unsigned long long)st.spawned,
		(unsigned long long)st.completed, (unsigned long long)st.live,
		(unsigned long long)st.polls, (unsigned long long)st.steals,
		(unsigned long long)st.parks, (double)elapsed / 1e9, rec,
		interrupted ? " (interrupted)" : "");

	runtime_destroy(rt);
	scenario_run_destroy(run);
	return stop_failed ? 1 : 0;
}
