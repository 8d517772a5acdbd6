/*
 * bench_overhead.c - what recording costs a real runtime, next to perf, as the
 * ratios issue 17 sets targets for, all measured in one run.
 *
 * The example runtime (recorder/examples) runs each configuration as a child;
 * its CPU time is user + system of the child and everything it waited for
 * (getrusage RUSAGE_CHILDREN), so perf's own process counts for perf. The
 * configurations of a workload alternate round by round (A B C ... A B C ...),
 * so a change in the machine's load hits them alike; figures are medians.
 *
 * The CPU a run uses is only comparable when the runs did the same work: the
 * example runtime generates load for a fixed time and by default waits only
 * 300 ms for the queue to drain, so on a loaded machine a run whose workers got
 * less of a core left tasks unfinished and used less CPU (plain runs that did
 * 800 of 1500 tasks made recording look 40% dearer than it is). So every run
 * gets --drain 60 (all its tasks finish), each run's summary line (spawned=,
 * completed=) is read, and a round in which any configuration still left work
 * unfinished is run again (up to twice the rounds asked for), counted in the
 * output.
 *
 *   idle:   2 workers, scenario steady at 10 tasks/s for 2 s: plain, hooks
 *           only, and hooks only without the stall watchdog. The difference is
 *           the recorder's fixed cost (its threads' wake-ups, its start and
 *           stop), printed as CPU ms per second recorded; the same runs for
 *           50 ms give the cost of starting and stopping, and the difference
 *           the wake-ups' cost per second. The hooks-only runs also write the
 *           metrics file, and its account gives the writer's and watchdog's
 *           wake-ups per second and their CPU (with --other, the other build's
 *           hooks-only runs too).
 *   light:  2 workers, scenario starvation at 750 tasks/s for 2 s (about 1500
 *           tasks of 1 ms): plain, hooks only (CPU sampling off), full recording,
 *           and hooks only without the stall watchdog (what its ticks cost).
 *           Targets: hooks only within 0.5% of plain ("no fixed cost"), full
 *           within 2%. The difference of two totals of about 1.7 s moves by more
 *           than 0.5% between runs on a shared machine, so it is printed twice
 *           more: as the median and interquartile range of the per-round
 *           differences (a round's runs follow each other, so they share its
 *           load), and as a direct account that load cannot fake: the CPU the
 *           library reports it used itself (stallscope_recorder_cpu_seconds in
 *           the metrics file: start, stop, writer and watchdog threads), plus the
 *           hooks' cost (events x the CPU per event measured here, in a child of
 *           the bench, with the same library), over the plain run's CPU. The
 *           hooks-only configurations write that metrics file (twice a run: the
 *           writer's first cycle and stop), so both figures include its cost.
 *           With --other RUNTIME (an example runtime of another build, e.g. main
 *           before a change) the light workload also runs that build's plain and
 *           hooks-only configurations, interleaved with these.
 *   steady: 16 workers, scenario steady at 20000 tasks/s for 3 s: plain, hooks
 *           only, hooks + sampling with STALLSCOPE_OFFCPU_STACKS=off, full, and
 *           `perf record -e cpu-clock -F 999 -g --switch-events` and
 *           `perf record -F 999 -g`. Target: full recording adds at most half
 *           of what perf --switch-events adds.
 *
 * Usage: bench_overhead EXAMPLE_RUNTIME [ROUNDS] [--only idle,light,steady]
 *                       [--other OTHER_RUNTIME]       (3 rounds, every workload)
 * Figures only: it exits 0 whatever they are (1 when something fails to run).
 */
#include <fcntl.h>
#include <stallscope/stallscope.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_ROUNDS 31
#define MAX_CONFIGS 6

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec / 1e6;
}

/* The example runtime's "spawned=N completed=M" in the file at path: 1 when
 * every task spawned was completed (or the line is absent: not the example). */
static int finished(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	char line[2048];
	int ok = 1;
	while (fgets(line, sizeof line, f)) {
		const char *sp = strstr(line, " spawned="), *co = strstr(line, " completed=");
		if (sp && co)
			ok = strtoull(sp + 9, NULL, 10) == strtoull(co + 11, NULL, 10);
	}
	fclose(f);
	return ok;
}

/* Runs argv with env (NAME=VALUE strings, NULL-terminated) added, its output to
 * the file out; returns its CPU seconds (children included) and its user share
 * in *user, or -1. */
static double run(char *const argv[], char *const env[], const char *out, double *user)
{
	struct rusage ru0, ru1;
	getrusage(RUSAGE_CHILDREN, &ru0);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	getrusage(RUSAGE_CHILDREN, &ru1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	*user = tv(ru1.ru_utime) - tv(ru0.ru_utime);
	return *user + tv(ru1.ru_stime) - tv(ru0.ru_stime);
}

/* What the library says it cost itself (its metrics file after stop). */
enum { PART_START, PART_STOP, PART_WRITER, PART_WATCHDOG, NPARTS };
static const char *const part_names[NPARTS] = { "start", "stop", "writer", "watchdog" };

struct account {
	int ok;                /* the library reported its own CPU */
	double part_ms[NPARTS];
	double events, wake_writer, wake_watchdog;
	double captures; /* stall captures, -1 when the library does not say */
};

struct config {
	const char *name;
	int perf;              /* 0 plain/recorded, 1 perf --switch-events, 2 perf -g */
	const char *env[6];    /* recorder settings; NULL: not recorded */
	const char *runtime;   /* another build's example runtime; NULL: the one given */
	int metrics;           /* write and read the metrics file */
	double cpu[MAX_ROUNDS], user[MAX_ROUNDS];
	double by_round[MAX_ROUNDS]; /* cpu[] in round order (median() sorts cpu[]) */
	struct account acct[MAX_ROUNDS];
	double med, med_user;
	int failed;
};

/* The metrics file at path: the recorder's own CPU by part, events, wake-ups.
 * a->ok stays 0 when the library does not report its own CPU (an older build). */
static void read_account(const char *path, struct account *a)
{
	memset(a, 0, sizeof *a);
	a->captures = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[1024];
	int parts = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#')
			continue;
		for (int i = 0; i < NPARTS; i++) {
			char key[96];
			snprintf(key, sizeof key, "stallscope_recorder_cpu_seconds{part=\"%s\"} ", part_names[i]);
			if (!strncmp(line, key, strlen(key))) {
				a->part_ms[i] = strtod(line + strlen(key), NULL) * 1e3;
				parts++;
			}
		}
		const char *ev = "stallscope_events_total ";
		const char *ww = "stallscope_recorder_wakeups_total{thread=\"writer\"} ";
		const char *wd = "stallscope_recorder_wakeups_total{thread=\"watchdog\"} ";
		const char *sc = "stallscope_stall_captures_total ";
		if (!strncmp(line, sc, strlen(sc)))
			a->captures = strtod(line + strlen(sc), NULL);
		if (!strncmp(line, ev, strlen(ev)))
			a->events = strtod(line + strlen(ev), NULL);
		if (!strncmp(line, ww, strlen(ww)))
			a->wake_writer = strtod(line + strlen(ww), NULL);
		if (!strncmp(line, wd, strlen(wd)))
			a->wake_watchdog = strtod(line + strlen(wd), NULL);
	}
	fclose(f);
	a->ok = parts == NPARTS;
}

/* CPU ns one hook event costs with this bench's library, in a child: a worker
 * thread makes batches of `pairs` polls (begin and end: 2 events each) every
 * 10 ms, 64 of them on a fresh 65536-entry ring (cold: each new 4 KiB page of
 * ring is a page fault unless the writer faulted it in ahead, and a light run's
 * rings never wrap, so all its events are cold), then 16 batches more (warm:
 * on pages already there once 64 batches filled the ring, at 512 pairs a
 * batch); and as many batches toggled off, what every hook costs
 * a plain run (a load and a branch), taken off both. The light workload's
 * workers make about 3.75k events a second each (24 pairs a batch is 4.8k);
 * 512 pairs a batch is 102k. Thread CPU time, so load does not count.
 * cold/warm in ns per event, *faults the page faults the thread took in its
 * cold batches (whether the writer's faulting-in kept ahead of it); returns 0,
 * or -1. */
static int hook_ns_per_event(const char *dir, int pairs, double *cold, double *warm, double *faults)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2); /* the recorder's start-up lines */
		char out[4200];
		snprintf(out, sizeof out, "%s/hooks", dir);
		struct stallscope_config c;
		stallscope_config_init(&c);
		c.output_dir = out;
		c.cpu_sampling = 0;
		c.stall_threshold_ms = 0;
		c.buffer_events = 65536;
		double r[3] = { -1, -1, -1 };
		if (stallscope_start(&c) == 0) {
			stallscope_worker_begin("bench", 0);
			uint32_t loc = stallscope_location("bench_overhead.c", 1, "hook_ns_per_event");
			double t[3] = { 0, 0, 0 }; /* off, cold, warm */
			long flt = 0;
			for (int b = 0; b < 160; b++) {
				int on = b % 2 == 0, which = !on ? 0 : b < 128 ? 1 : 2;
				stallscope_set_enabled(on);
				struct rusage u0, u1;
				getrusage(RUSAGE_THREAD, &u0);
				double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
				for (int j = 0; j < pairs; j++) {
					stallscope_poll_begin((uint64_t)j + 1, loc);
					stallscope_poll_end();
				}
				t[which] += clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
				getrusage(RUSAGE_THREAD, &u1);
				if (which == 1)
					flt += u1.ru_minflt - u0.ru_minflt;
				usleep(10000);
			}
			stallscope_set_enabled(1);
			stallscope_worker_end();
			stallscope_stop();
			/* 80 batches off, 64 cold, 16 warm, of 2 * pairs events */
			r[0] = (t[1] - t[0] * 64 / 80) * 1e9 / (64.0 * 2 * pairs);
			r[1] = (t[2] - t[0] * 16 / 80) * 1e9 / (16.0 * 2 * pairs);
			r[2] = (double)flt;
		}
		if (write(p[1], r, sizeof r) != sizeof r)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	double r[3] = { -1, -1, -1 };
	if (read(p[0], r, sizeof r) != sizeof r)
		r[0] = r[1] = -1;
	close(p[0]);
	waitpid(pid, NULL, 0);
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/hooks'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_overhead: could not clean %s/hooks\n", dir);
	*cold = r[0];
	*warm = r[1];
	*faults = r[2];
	return r[0] < 0 ? -1 : 0;
}

/* Quartiles of v[0..n) (sorted in place), interpolated. */
static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	double x = q * (n - 1);
	int i = (int)x;
	return i + 1 < n ? v[i] + (x - i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* One workload's configurations, rounds times each, interleaved. */
static int measure(const char *runtime, const char *dir, char *const wl[], struct config *c,
		   int nc, int rounds)
{
	char perfdata[4200], outdir[4200], out[4200], metrics[4200], metrics_env[4300];
	snprintf(perfdata, sizeof perfdata, "%s/perf.data", dir);
	snprintf(metrics, sizeof metrics, "%s/metrics.prom", dir);
	snprintf(metrics_env, sizeof metrics_env, "STALLSCOPE_METRICS_FILE=%s", metrics);
	snprintf(outdir, sizeof outdir, "STALLSCOPE_OUTPUT_DIR=%s/rec", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	int discarded = 0;
	for (int r = 0; r < rounds; r++) {
		int unfinished = 0;
		for (int i = 0; i < nc; i++) {
			if (c[i].failed)
				continue;
			char *argv[40];
			int k = 0;
			if (c[i].perf) {
				argv[k++] = (char *)"perf";
				argv[k++] = (char *)"record";
				argv[k++] = (char *)"-q";
				if (c[i].perf == 1) {
					argv[k++] = (char *)"-e";
					argv[k++] = (char *)"cpu-clock";
				}
				argv[k++] = (char *)"-F";
				argv[k++] = (char *)"999";
				argv[k++] = (char *)"-g";
				if (c[i].perf == 1)
					argv[k++] = (char *)"--switch-events";
				argv[k++] = (char *)"-o";
				argv[k++] = perfdata;
				argv[k++] = (char *)"--";
			}
			argv[k++] = (char *)(c[i].runtime ? c[i].runtime : runtime);
			for (int j = 0; wl[j]; j++)
				argv[k++] = wl[j];
			argv[k] = NULL;
			char *env[10];
			int e = 0;
			if (c[i].env[0]) {
				env[e++] = (char *)"STALLSCOPE_ENABLED=1";
				env[e++] = outdir;
				for (int j = 0; c[i].env[j]; j++)
					env[e++] = (char *)c[i].env[j];
				if (c[i].metrics)
					env[e++] = metrics_env;
			}
			env[e] = NULL;
			unlink(metrics);
			double cpu = run(argv, env, out, &c[i].user[r]);
			unfinished |= cpu >= 0 && !finished(out);
			if (c[i].metrics)
				read_account(metrics, &c[i].acct[r]);
			char cmd[4400];
			snprintf(cmd, sizeof cmd, "rm -rf '%s/rec' '%s'", dir, perfdata);
			if (system(cmd) != 0)
				fprintf(stderr, "bench_overhead: could not clean %s\n", dir);
			if (cpu < 0) {
				fprintf(stderr, "bench_overhead: %s failed to run%s\n", c[i].name,
					c[i].perf ? " (is perf usable here?)" : "");
				c[i].failed = 1;
				if (!c[i].perf)
					return -1;
				continue;
			}
			c[i].cpu[r] = cpu;
			c[i].by_round[r] = cpu;
		}
		if (unfinished && discarded < 2 * rounds) {
			discarded++;
			r--; /* not the same work: this round again */
		}
	}
	if (discarded)
		printf("    (%d round%s run again: a configuration left tasks unfinished%s)\n", discarded,
		       discarded > 1 ? "s" : "",
		       discarded >= 2 * rounds ? "; the last rounds are kept anyway, compare with care" : "");
	for (int i = 0; i < nc; i++) {
		if (c[i].failed)
			continue;
		printf("    %-28s", c[i].name);
		for (int r = 0; r < rounds; r++)
			printf(" %6.3f", c[i].cpu[r]);
		c[i].med = median(c[i].cpu, rounds);
		c[i].med_user = median(c[i].user, rounds);
		printf("   median %6.3f s (user %6.3f)\n", c[i].med, c[i].med_user);
	}
	return 0;
}

static void verdict(const char *what, double figure, double target, const char *unit)
{
	printf("  %-58s %8.4f%s   target <= %.4f%s: %s\n", what, figure, unit, target, unit,
	       figure <= target ? "met" : "NOT MET");
}

/* The light workload's added figures: per-round differences and the direct
 * account of configuration c against plain p, both against the 0.5% target. */
static void light_figures(const char *what, const struct config *p, const struct config *c, int rounds,
			  double hook_ns)
{
	double d[MAX_ROUNDS], own[MAX_ROUNDS], part[NPARTS][MAX_ROUNDS], hooks[MAX_ROUNDS];
	double ev[MAX_ROUNDS], ww[MAX_ROUNDS], wd[MAX_ROUNDS], caps[MAX_ROUNDS];
	int n = 0;
	for (int r = 0; r < rounds; r++)
		d[r] = 100 * (c->by_round[r] / p->by_round[r] - 1);
	double q1 = quantile(d, rounds, 0.25), q3 = quantile(d, rounds, 0.75);
	char label[200];
	snprintf(label, sizeof label, "%s: per-round overhead, median", what);
	printf("  %s: per-round overhead (hooks only / plain of the same round - 1): interquartile "
	       "range %.4f%% to %.4f%%, %d rounds\n", what, q1, q3, rounds);
	verdict(label, quantile(d, rounds, 0.5), 0.5, "%");
	for (int r = 0; r < rounds; r++) {
		const struct account *a = &c->acct[r];
		if (!a->ok)
			continue;
		hooks[n] = hook_ns > 0 ? a->events * hook_ns / 1e6 : 0;
		own[n] = hooks[n];
		for (int i = 0; i < NPARTS; i++) {
			part[i][n] = a->part_ms[i];
			own[n] += a->part_ms[i];
		}
		ev[n] = a->events;
		ww[n] = a->wake_writer;
		wd[n] = a->wake_watchdog;
		caps[n] = a->captures;
		/* against the plain run's median: a plain run of one round is as
		 * noisy as the difference this replaces */
		own[n] = 100 * own[n] / (p->med * 1e3);
		n++;
	}
	if (!n) {
		printf("  %s: the recorder's own CPU: not reported by this library (no "
		       "stallscope_recorder_cpu_seconds in its metrics)\n", what);
		return;
	}
	char capt[64] = "";
	if (median(caps, n) >= 0)
		snprintf(capt, sizeof capt, ", %.0f stall captures", median(caps, n));
	printf("  %s: the recorder's own CPU per run, medians of %d: start %.3f ms, stop %.3f ms, "
	       "writer %.3f ms (%.0f wake-ups), watchdog %.3f ms (%.0f wake-ups%s), hooks %.0f events x "
	       "%.2f ns (first pass) = %.3f ms\n", what, n, median(part[PART_START], n), median(part[PART_STOP], n),
	       median(part[PART_WRITER], n), median(ww, n), median(part[PART_WATCHDOG], n), median(wd, n),
	       capt, median(ev, n), hook_ns, median(hooks, n));
	double lo = quantile(own, n, 0.25), hi = quantile(own, n, 0.75);
	snprintf(label, sizeof label, "%s: own CPU / plain CPU", what);
	verdict(label, quantile(own, n, 0.5), 0.5, "%");
	printf("  %s: own CPU / plain CPU interquartile range %.4f%% to %.4f%%\n", what, lo, hi);
}

/* The idle workload's wake-ups from the library's own account: what its
 * threads do per second recorded (the scenario runs 2 s), which load cannot
 * fake (a late wake-up is one wake-up). */
static void idle_account(const char *what, const struct config *c, int rounds)
{
	double ww[MAX_ROUNDS], wd[MAX_ROUNDS], pw[MAX_ROUNDS], pd[MAX_ROUNDS];
	int n = 0;
	for (int r = 0; r < rounds; r++) {
		const struct account *a = &c->acct[r];
		if (!a->ok)
			continue;
		ww[n] = a->wake_writer / 2;
		wd[n] = a->wake_watchdog / 2;
		pw[n] = a->part_ms[PART_WRITER] / 2;
		pd[n] = a->part_ms[PART_WATCHDOG] / 2;
		n++;
	}
	if (!n) {
		printf("  %s: wake-ups not reported by this library (no "
		       "stallscope_recorder_wakeups_total in its metrics)\n", what);
		return;
	}
	printf("  %s: per second recorded, medians of %d: writer %.1f wake-ups (%.3f CPU ms), "
	       "watchdog %.1f wake-ups (%.3f CPU ms)\n", what, n, median(ww, n), median(pw, n),
	       median(wd, n), median(pd, n));
}

static int wanted(const char *only, const char *name)
{
	if (!only)
		return 1;
	size_t n = strlen(name);
	for (const char *s = only; (s = strstr(s, name)) != NULL; s += n)
		if ((s == only || s[-1] == ',') && (s[n] == 0 || s[n] == ','))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *runtime = NULL, *other = NULL, *only = NULL;
	int rounds = 3, npos = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--other") && i + 1 < argc) {
			other = argv[++i];
		} else if (argv[i][0] == '-' || npos >= 2) {
			fprintf(stderr, "usage: bench_overhead EXAMPLE_RUNTIME [ROUNDS] [--only idle,light,steady] "
				"[--other OTHER_RUNTIME]\n");
			return 1;
		} else if (npos++ == 0) {
			runtime = argv[i];
		} else {
			rounds = atoi(argv[i]);
		}
	}
	if (!runtime) {
		fprintf(stderr, "usage: bench_overhead EXAMPLE_RUNTIME [ROUNDS] [--only idle,light,steady] "
			"[--other OTHER_RUNTIME]\n");
		return 1;
	}
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	int w_idle = wanted(only, "idle"), w_light = wanted(only, "light"), w_steady = wanted(only, "steady");
	char dir[] = "/tmp/stallscope-bench-overhead-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}

	char *idle[] = { (char *)"--workers", (char *)"2", (char *)"--scenario", (char *)"steady",
			 (char *)"--rate", (char *)"10", (char *)"--duration", (char *)"2",
			 (char *)"--drain", (char *)"60", NULL };
	struct config ic[] = {
		{ .name = "plain" },
		{ .name = "hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" }, .metrics = 1 },
		{ .name = "hooks only, no watchdog",
		  .env = { "STALLSCOPE_CPU_SAMPLING=false", "STALLSCOPE_STALL_THRESHOLD_MS=0" } },
		{ .name = "other build: hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" },
		  .runtime = other, .metrics = 1 },
	};
	printf("bench_overhead: CPU seconds (user + system, children included), %d interleaved rounds\n",
	       rounds);
	printf("  idle: 2 workers, steady scenario at 10 tasks/s for 2 s\n");
	if (w_idle && measure(runtime, dir, idle, ic, other ? 4 : 3, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}
	/* The same for 50 ms: what starting and stopping cost, so that the idle
	 * figure per second is the wake-ups' alone. */
	char *blink[] = { (char *)"--workers", (char *)"2", (char *)"--scenario", (char *)"steady",
			  (char *)"--rate", (char *)"10", (char *)"--duration", (char *)"0.05",
			  (char *)"--drain", (char *)"60", NULL };
	struct config bc[3];
	memcpy(bc, ic, sizeof bc);
	printf("  start and stop: the same for 50 ms\n");
	if (w_idle && measure(runtime, dir, blink, bc, 3, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}

	char *light[] = { (char *)"--workers", (char *)"2", (char *)"--scenario",
			  (char *)"starvation", (char *)"--rate", (char *)"750",
			  (char *)"--duration", (char *)"2", (char *)"--drain", (char *)"60", NULL };
	struct config lc[] = {
		{ .name = "plain" },
		{ .name = "hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" }, .metrics = 1 },
		{ .name = "full recording", .env = { "STALLSCOPE_CPU_SAMPLING=true" } },
		{ .name = "hooks only, no watchdog",
		  .env = { "STALLSCOPE_CPU_SAMPLING=false", "STALLSCOPE_STALL_THRESHOLD_MS=0" }, .metrics = 1 },
		{ .name = "other build: plain", .runtime = other },
		{ .name = "other build: hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" },
		  .runtime = other, .metrics = 1 },
	};
	int nlc = other ? 6 : 4;
	/* The light account charges the hooks what a ring's first pass costs at
	 * 102k events a second (its figure since it was added); the same at the
	 * light workload's own pace (4.8k events a second, a batch of 48 events
	 * after each 10 ms sleep) is printed beside it: there each batch starts on
	 * caches the sleep left cold. The page faults say whether the writer's
	 * faulting-in kept ahead of the producer. */
	double hook_ns = -1, hook_warm = -1, hook_faults = -1, slow_ns = -1, slow_warm = -1,
	       slow_faults = -1;
	if (w_light && hook_ns_per_event(dir, 512, &hook_ns, &hook_warm, &hook_faults) == 0)
		printf("  hooks: %.2f CPU ns per event on a ring's first pass (its pages new; %.0f page "
		       "faults in 65536 events), %.2f on pages already there, at 102k events/s (this "
		       "bench's library, thread CPU, recording on minus off)\n", hook_ns, hook_faults,
		       hook_warm);
	else if (w_light)
		fprintf(stderr, "bench_overhead: the hooks' cost per event was not measured (the "
				"light account's hooks column is 0)\n");
	if (w_light && hook_ns_per_event(dir, 24, &slow_ns, &slow_warm, &slow_faults) == 0)
		printf("  hooks: %.2f CPU ns per event on a ring's first pass (%.0f page faults in 3072 "
		       "events) at the light workload's pace (4.8k events/s, 48 after each 10 ms sleep)\n",
		       slow_ns, slow_faults);
	else if (w_light)
		fprintf(stderr, "bench_overhead: the hooks' cost at the light pace was not measured\n");
	printf("  light: 2 workers, starvation scenario at 750 tasks/s for 2 s%s%s\n",
	       other ? "; other build: " : "", other ? other : "");
	if (w_light && measure(runtime, dir, light, lc, nlc, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}

	char *steady[] = { (char *)"--workers", (char *)"16", (char *)"--scenario",
			   (char *)"steady", (char *)"--rate", (char *)"20000",
			   (char *)"--duration", (char *)"3", (char *)"--drain", (char *)"60", NULL };
	struct config sc[] = {
		{ .name = "plain" },
		{ .name = "hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" } },
		{ .name = "hooks + sampling, offcpu off",
		  .env = { "STALLSCOPE_CPU_SAMPLING=true", "STALLSCOPE_OFFCPU_STACKS=off" } },
		{ .name = "full recording", .env = { "STALLSCOPE_CPU_SAMPLING=true" } },
		{ .name = "perf -e cpu-clock --switch", .perf = 1 },
		{ .name = "perf -F 999 -g", .perf = 2 },
	};
	printf("  steady: 16 workers, steady scenario at 20000 tasks/s for 3 s\n");
	if (w_steady && measure(runtime, dir, steady, sc, 6, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}
	rm_dir(dir);

	printf("  figures (overheads over plain, same run):\n");
	if (w_idle) {
	printf("  idle, hooks only: the recorder's fixed cost %.2f CPU ms per second recorded "
	       "(%.2f without the stall watchdog), of which starting and stopping %.2f ms (%.2f)\n",
	       (ic[1].med - ic[0].med) * 1000 / 2, (ic[2].med - ic[0].med) * 1000 / 2,
	       (bc[1].med - bc[0].med) * 1000, (bc[2].med - bc[0].med) * 1000);
	printf("  idle, hooks only: wake-ups alone %.2f CPU ms per second (%.2f without the stall "
	       "watchdog)\n",
	       ((ic[1].med - ic[0].med) - (bc[1].med - bc[0].med)) * 1000 / 1.95,
	       ((ic[2].med - ic[0].med) - (bc[2].med - bc[0].med)) * 1000 / 1.95);
	idle_account("idle, hooks only", &ic[1], rounds);
	if (other)
		idle_account("idle, other build, hooks only", &ic[3], rounds);
	}
	if (w_light) {
	verdict("light, hooks only: overhead", 100 * (lc[1].med / lc[0].med - 1), 0.5, "%");
	verdict("light, full recording: overhead", 100 * (lc[2].med / lc[0].med - 1), 2.0, "%");
	printf("  light, hooks only without the stall watchdog (STALLSCOPE_STALL_THRESHOLD_MS=0): "
	       "overhead %.4f%%\n", 100 * (lc[3].med / lc[0].med - 1));
	light_figures("light, hooks only", &lc[0], &lc[1], rounds, hook_ns);
	light_figures("light, hooks only, no watchdog", &lc[0], &lc[3], rounds, hook_ns);
	if (other) {
		verdict("light, other build, hooks only: overhead", 100 * (lc[5].med / lc[4].med - 1), 0.5,
			"%");
		light_figures("light, other build, hooks only", &lc[4], &lc[5], rounds, hook_ns);
		printf("  light, this build's plain / the other build's plain: %.4f\n", lc[0].med / lc[4].med);
	}
	}
	if (!w_steady)
		return 0;
	double full = sc[3].med - sc[0].med;
	printf("  steady, added CPU s: hooks only %.3f, sampling without off-CPU stacks %.3f, full %.3f\n",
	       sc[1].med - sc[0].med, sc[2].med - sc[0].med, full);
	if (!sc[4].failed) {
		double perf = sc[4].med - sc[0].med;
		printf("  steady, perf record -e cpu-clock -F 999 -g --switch-events adds %.3f s\n", perf);
		if (perf > 0)
			verdict("steady, full recording added / perf --switch-events added", full / perf,
				0.5, "");
	} else {
		printf("  steady, perf --switch-events: not available here, no ratio\n");
	}
	if (!sc[5].failed)
		printf("  steady, perf record -F 999 -g adds %.3f s (ratio of full recording to it %.3f)\n",
		       sc[5].med - sc[0].med,
		       sc[5].med > sc[0].med ? full / (sc[5].med - sc[0].med) : 0.0);
	return 0;
}
