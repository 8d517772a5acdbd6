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
 *           the wake-ups' cost per second.
 *   light:  2 workers, scenario starvation at 750 tasks/s for 2 s (about 1500
 *           tasks of 1 ms): plain, hooks only (CPU sampling off), full recording,
 *           and hooks only without the stall watchdog (what its ticks cost).
 *           Targets: hooks only within 0.5% of plain ("no fixed cost"), full
 *           within 2%.
 *   steady: 16 workers, scenario steady at 20000 tasks/s for 3 s: plain, hooks
 *           only, hooks + sampling with STALLSCOPE_OFFCPU_STACKS=off, full, and
 *           `perf record -e cpu-clock -F 999 -g --switch-events` and
 *           `perf record -F 999 -g`. Target: full recording adds at most half
 *           of what perf --switch-events adds.
 *
 * Usage: bench_overhead EXAMPLE_RUNTIME [ROUNDS]   (3)
 * Figures only: it exits 0 whatever they are (1 when something fails to run).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_ROUNDS 15
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

struct config {
	const char *name;
	int perf;              /* 0 plain/recorded, 1 perf --switch-events, 2 perf -g */
	const char *env[6];    /* recorder settings; NULL: not recorded */
	double cpu[MAX_ROUNDS], user[MAX_ROUNDS];
	double med, med_user;
	int failed;
};

/* One workload's configurations, rounds times each, interleaved. */
static int measure(const char *runtime, const char *dir, char *const wl[], struct config *c,
		   int nc, int rounds)
{
	char perfdata[4200], outdir[4200], out[4200];
	snprintf(perfdata, sizeof perfdata, "%s/perf.data", dir);
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
			argv[k++] = (char *)runtime;
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
			}
			env[e] = NULL;
			double cpu = run(argv, env, out, &c[i].user[r]);
			unfinished |= cpu >= 0 && !finished(out);
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_overhead EXAMPLE_RUNTIME [ROUNDS]\n");
		return 1;
	}
	const char *runtime = argv[1];
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	if (rounds < 1)
		rounds = 1;
	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
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
		{ .name = "hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" } },
		{ .name = "hooks only, no watchdog",
		  .env = { "STALLSCOPE_CPU_SAMPLING=false", "STALLSCOPE_STALL_THRESHOLD_MS=0" } },
	};
	printf("bench_overhead: CPU seconds (user + system, children included), %d interleaved rounds\n",
	       rounds);
	printf("  idle: 2 workers, steady scenario at 10 tasks/s for 2 s\n");
	if (measure(runtime, dir, idle, ic, 3, rounds) != 0) {
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
	if (measure(runtime, dir, blink, bc, 3, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}

	char *light[] = { (char *)"--workers", (char *)"2", (char *)"--scenario",
			  (char *)"starvation", (char *)"--rate", (char *)"750",
			  (char *)"--duration", (char *)"2", (char *)"--drain", (char *)"60", NULL };
	struct config lc[] = {
		{ .name = "plain" },
		{ .name = "hooks only", .env = { "STALLSCOPE_CPU_SAMPLING=false" } },
		{ .name = "full recording", .env = { "STALLSCOPE_CPU_SAMPLING=true" } },
		{ .name = "hooks only, no watchdog",
		  .env = { "STALLSCOPE_CPU_SAMPLING=false", "STALLSCOPE_STALL_THRESHOLD_MS=0" } },
	};
	printf("  light: 2 workers, starvation scenario at 750 tasks/s for 2 s\n");
	if (measure(runtime, dir, light, lc, 4, rounds) != 0) {
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
	if (measure(runtime, dir, steady, sc, 6, rounds) != 0) {
		rm_dir(dir);
		return 1;
	}
	rmdir(dir);

	printf("  figures (overheads over plain, same run):\n");
	printf("  idle, hooks only: the recorder's fixed cost %.2f CPU ms per second recorded "
	       "(%.2f without the stall watchdog), of which starting and stopping %.2f ms (%.2f)\n",
	       (ic[1].med - ic[0].med) * 1000 / 2, (ic[2].med - ic[0].med) * 1000 / 2,
	       (bc[1].med - bc[0].med) * 1000, (bc[2].med - bc[0].med) * 1000);
	printf("  idle, hooks only: wake-ups alone %.2f CPU ms per second (%.2f without the stall "
	       "watchdog)\n",
	       ((ic[1].med - ic[0].med) - (bc[1].med - bc[0].med)) * 1000 / 1.95,
	       ((ic[2].med - ic[0].med) - (bc[2].med - bc[0].med)) * 1000 / 1.95);
	verdict("light, hooks only: overhead", 100 * (lc[1].med / lc[0].med - 1), 0.5, "%");
	verdict("light, full recording: overhead", 100 * (lc[2].med / lc[0].med - 1), 2.0, "%");
	printf("  light, hooks only without the stall watchdog (STALLSCOPE_STALL_THRESHOLD_MS=0): "
	       "overhead %.4f%%\n", 100 * (lc[3].med / lc[0].med - 1));
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
