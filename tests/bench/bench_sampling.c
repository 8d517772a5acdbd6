/*
 * bench_sampling.c - what CPU sampling costs, and whether it keeps up.
 *
 *   (a) overhead: the same CPU-bound work (2 workers, each a fixed number of polls
 *       of a hash loop) recorded with cpu_sampling off and on (999 Hz), the two
 *       alternated ABBA-style several times in one run; prints each run, the
 *       median run times and their ratio (target <= 1.01).
 *   (b) writer cost: the writer thread's CPU in each run (process CPU minus the
 *       workers' and the main thread's), and the extra writer CPU of a sampling
 *       run divided by the samples it recorded (decoded from its segments).
 *   (c) sustained: 4 workers for SECONDS (default 60) at default settings, mixing
 *       CPU-bound polls with short sleeps (so there are switches too); prints the
 *       samples, switches and stacks decoded from the segments, and every loss:
 *       SAMPLER_LOSS and LOSS counts from the segments, drops from the stats
 *       (target zero).
 *
 *   (d) against perf (issue 17), with EXAMPLE_RUNTIME given: the example runtime
 *       as a child, CPU time user + system of it and of everything it waited for
 *       (so perf's own process counts for perf), configurations rotated round by
 *       round (A B C, B C A, ...), medians:
 *         steady: 16 workers, 20000 tasks/s for 3 s: plain, full recording,
 *                 `perf record -e cpu-clock -F 999 -g --switch-events`; prints
 *                 both overheads and full / perf (target <= 0.5);
 *         light:  2 workers, starvation at 750 tasks/s for 2 s, plain, full
 *                 recording and the same perf record (target: within 2%).
 *       Every run gets --drain 60, so plain and recorded runs do the same work.
 *       Two more steady rows split full recording's cost: hooks only
 *       (STALLSCOPE_CPU_SAMPLING=0) and sampling without off-CPU stacks
 *       (STALLSCOPE_OFFCPU_STACKS=off).
 *       Three more: full recording with STALLSCOPE_SAMPLER=cpu (per-CPU events
 *       of every process with their CPU-wide switch records, filtered to this
 *       one), with STALLSCOPE_OFFCPU_STACKS=all (a stack at every switch-out, not
 *       only inside polls: what the in-poll filter saves, where it is loaded),
 *       and with STALLSCOPE_SAMPLER=perf (the process's own inherited events,
 *       where as root the default takes the cpu-clock once per CPU for every
 *       process beside the sched_switch program).
 *       OTHER_RUNTIME (another build's example runtime, e.g. main's) adds a row
 *       "full recording, other build" to both, for before/after figures.
 *
 *   (e) the floor: what a 999 Hz cpu-clock sampler costs the sampled threads on
 *       this machine whoever runs it, without the recorder: 2 CPU-bound threads
 *       under perf_event_open events of their own process (per CPU, inherited,
 *       as sampler_percpu.c opens them), rings drained every 10 ms, configurations
 *       rotated round by round: no events; a bare sample (ip, tid, time); + the
 *       kernel and user call chain; + the user registers and an 8 KiB stack copy
 *       (the auto unwinder's); + a 1 KiB copy. Prints the threads' extra CPU per
 *       sample and as a share of the work (the light target is 2%).
 *   (f) the kernel's part of a switch: two threads pinned to one CPU hand a
 *       futex back and forth (every hand-over a switch between them), under the
 *       same kind of events: none; cpu-clock with switch records (what perf
 *       --switch-events opens); + a context-switches event that never samples
 *       (its presence); + a sample at every switch-out with the registers and
 *       1 KiB of stack (the recorder's off-CPU stacks). Prints CPU per switch.
 *
 *       (f2) the same with the two threads on CPUs 0 and 1, so that every
 *       switch is one to or from the idle task, which no context swap spares
 *       (the process's own events are stopped and started at each), and one
 *       more configuration: the cpu-clock once per CPU for every process, no
 *       switch records (as root, the default beside the sched_switch program).
 *
 *   (g) what another process pays: (f)'s futex pair in a child process while this
 *       one holds (f)'s events with a sample per switch-out: none; this
 *       process's own (inherited: the child has none); per CPU for every process
 *       without and with the recorder's BPF pid filter (sampler_bpf.c). Prints
 *       the child's CPU per switch and how many records of other processes
 *       reached our rings a second.
 *
 *   (h) what the recorder pays per switch: (f)'s futex pair as two workers of
 *       this process, recorded (default settings), the process's CPU per switch
 *       (writer included): not recording; hooks only; full recording with the
 *       workers parked across each wait (the in-poll filter, where loaded, drops
 *       those switch-outs in the kernel) and inside a poll across it (kept); full
 *       recording with STALLSCOPE_OFFCPU_STACKS=all, parked (no filter); and
 *       with STALLSCOPE_OFFCPU_STACKS=off (no context-switches event at all); and
 *       parked with STALLSCOPE_SWITCH_SOURCE=events (perf's switch records and
 *       the context-switches event instead of the sched_switch program, which
 *       writes nothing for a parked worker).
 *
 *   (i) what another process pays while this one records (a worker parked): a
 *       child doing a fixed CPU-bound work, and a child running (f)'s futex
 *       pair; its CPU with this process not recording, recording with default
 *       settings (as root the cpu-clock once per CPU for every process, whose
 *       timer interrupts whoever runs, and the sched_switch program run at
 *       every switch of the machine), and with STALLSCOPE_SAMPLER=perf.
 *
 * Usage: bench_sampling [SECONDS] [ROUNDS] [EXAMPLE_RUNTIME [OTHER_RUNTIME]]
 *        (60, 5 rounds of off+on pairs; SECONDS 0 skips (c), ROUNDS also (d)'s
 *        and (e)'s and (f)'s; (e) to (i) run after (a)+(b), or alone with
 *        SECONDS -1; (d) alone with SECONDS -2, (h) alone with SECONDS -3, (i)
 *        alone with SECONDS -4, (f2) alone with SECONDS -5)
 * Figures only: it exits 0 whatever they are (1 when something fails to run).
 */
#include <stallscope/stallscope.h>

#include <asm/perf_regs.h>
#include <dirent.h>
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "segment_reader.h"
#include "sampler-private.h" /* ss_bpf_pid_filter, for (g) */

#include "bench_util.h"

#define MAX_WORKERS 4

static volatile uint64_t sink_v;

/* The unit of work: a multiplicative hash over a counter. */
__attribute__((noinline)) static uint64_t hash_work(uint64_t iters, uint64_t seed)
{
	uint64_t h = seed | 1;
	for (uint64_t i = 0; i < iters; i++) {
		h ^= i;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	return h;
}

/* ---- decoding a session's segments ---- */

struct counts {
	uint64_t samples, cpu_samples, offcpu_samples, switches, stacks, mappings;
	uint64_t sampler_lost, sampler_loss_records, lost_events, loss_records;
	uint64_t events, files, damaged;
	uint64_t bytes;
};

static void count_dir(const char *dir, struct counts *c)
{
	memset(c, 0, sizeof *c);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strstr(de->d_name, ".bin"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct ss_reader *r;
		char err[256];
		if (ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) != 0) {
			c->damaged++;
			continue;
		}
		c->files++;
		struct ss_block_info b;
		while (ss_reader_next_block(r, &b)) {
			struct ss_record rec;
			while (ss_reader_next_record(r, &rec)) {
				if (rec.type == SS_REC_SAMPLE) {
					c->cpu_samples += rec.u.sample.kind == SS_SAMPLE_KIND_CPU;
					c->offcpu_samples += rec.u.sample.kind == SS_SAMPLE_KIND_OFFCPU;
				}
			}
		}
		const struct ss_reader_stats *s = ss_reader_stats(r);
		c->samples += s->by_type[SS_REC_SAMPLE];
		c->switches += s->by_type[SS_REC_SWITCH];
		c->stacks += s->by_type[SS_REC_STACK];
		c->mappings += s->by_type[SS_REC_MAPPING];
		c->sampler_loss_records += s->by_type[SS_REC_SAMPLER_LOSS];
		c->sampler_lost += s->lost_samples;
		c->lost_events += s->lost_events;
		c->loss_records += s->loss_records;
		c->events += s->events;
		c->bytes += s->intact_end;
		c->damaged += ss_reader_damage(r)->kind != SS_DAMAGE_NONE;
		ss_reader_close(r);
	}
	closedir(d);
}

/* ---- a recorded run ---- */

struct job {
	int index;
	uint64_t polls, iters;      /* CPU-bound polls of iters hash steps */
	uint64_t until_ns;          /* (c): run until this time instead */
	uint64_t cpu;               /* the worker's CPU time, ns */
	uint64_t done_polls;
	pthread_barrier_t *go;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	stallscope_worker_begin("bench", (uint32_t)j->index);
	uint32_t loc = stallscope_location(__FILE__, __LINE__, __func__);
	pthread_barrier_wait(j->go);
	uint64_t cpu0 = ns_of_clock(CLOCK_THREAD_CPUTIME_ID), task = (uint64_t)j->index << 40, n = 0;
	if (!j->until_ns) {
		for (uint64_t p = 0; p < j->polls; p++) {
			stallscope_poll_begin(task++, loc);
			sink_v += hash_work(j->iters, p);
			stallscope_poll_end();
		}
		n = j->polls;
	} else {
		/* Sustained: 3 CPU-bound polls, then one that sleeps 1 ms. */
		while (now_ns() < j->until_ns) {
			for (int k = 0; k < 3; k++) {
				stallscope_poll_begin(task++, loc);
				sink_v += hash_work(j->iters, n);
				stallscope_poll_end();
			}
			stallscope_poll_begin(task++, loc);
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
			stallscope_poll_end();
			stallscope_park();
			stallscope_unpark();
			n += 4;
		}
	}
	j->cpu = ns_of_clock(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	j->done_polls = n;
	stallscope_worker_end();
	return NULL;
}

struct result {
	double wall_ms;        /* from the start barrier to the last worker done */
	double workers_cpu_ms;
	double writer_cpu_ms;  /* process CPU - workers - main thread, start to stop */
	struct counts c;
	struct stallscope_stats st;
	uint64_t polls;
	char sampler[16];
};

static int run(int sampling, int nworkers, uint64_t polls, uint64_t iters, double seconds,
	       struct result *res)
{
	memset(res, 0, sizeof *res);
	char dir[] = "/tmp/stallscope-bench-sampling-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.cpu_sampling = sampling;
	uint64_t proc0 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID), main0 = ns_of_clock(CLOCK_THREAD_CPUTIME_ID);
	if (stallscope_start(&cfg) != 0) {
		fprintf(stderr, "bench_sampling: %s\n", stallscope_last_error());
		rm_dir(dir);
		return -1;
	}
	static char mt[65536];
	stallscope_metrics_text(mt, sizeof mt);
	const char *modes[] = { "perf", "timer", "off" };
	for (int i = 0; i < 3; i++) {
		char key[80];
		snprintf(key, sizeof key, "stallscope_sampler_mode{mode=\"%s\"} 1", modes[i]);
		if (strstr(mt, key))
			snprintf(res->sampler, sizeof res->sampler, "%s", modes[i]);
	}
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, (unsigned)nworkers + 1);
	struct job jobs[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	/* Let the writer follow the workers before the clock starts. */
	for (int i = 0; i < nworkers; i++) {
		jobs[i] = (struct job){ .index = i, .polls = polls, .iters = iters, .go = &go };
		pthread_create(&th[i], NULL, worker, &jobs[i]);
	}
	struct timespec settle = { 0, 50000000L };
	nanosleep(&settle, NULL);
	uint64_t t0 = now_ns();
	if (seconds > 0)
		for (int i = 0; i < nworkers; i++)
			jobs[i].until_ns = t0 + (uint64_t)(seconds * 1e9);
	pthread_barrier_wait(&go);
	for (int i = 0; i < nworkers; i++)
		pthread_join(th[i], NULL);
	uint64_t t1 = now_ns();
	stallscope_stop();
	stallscope_get_stats(&res->st);
	uint64_t proc = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID) - proc0;
	uint64_t mainc = ns_of_clock(CLOCK_THREAD_CPUTIME_ID) - main0;
	uint64_t wcpu = 0;
	for (int i = 0; i < nworkers; i++) {
		wcpu += jobs[i].cpu;
		res->polls += jobs[i].done_polls;
	}
	pthread_barrier_destroy(&go);
	res->wall_ms = (double)(t1 - t0) / 1e6;
	res->workers_cpu_ms = (double)wcpu / 1e6;
	res->writer_cpu_ms = (double)(proc - mainc - wcpu) / 1e6;
	count_dir(dir, &res->c);
	rm_dir(dir);
	return 0;
}

/* ---- (d): the example runtime against perf ---- */

/* /proc/loadavg's line, printed beside each part's figures. */
static void read_load(char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen("/proc/loadavg", "r");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
}

#define D_MAX_ROUNDS 25

struct dconf {
	const char *name;
	const char *runtime;
	int recorded;           /* STALLSCOPE_ENABLED=1, default settings */
	int perf;               /* under perf record --switch-events */
	int drain;              /* the runtime knows --drain (knows_drain) */
	const char *env;        /* one more STALLSCOPE_ setting of a recorded run, or NULL */
	double cpu[D_MAX_ROUNDS];
	double med;
};

/* Whether a runtime knows --drain (builds before it do not: their runs then go
 * without it, and plain runs under load may do less work than recorded ones). */
static int knows_drain(const char *runtime)
{
	char cmd[700], line[256];
	snprintf(cmd, sizeof cmd, "'%s' --help 2>&1", runtime);
	FILE *p = popen(cmd, "r");
	int yes = 0;
	while (p && fgets(line, sizeof line, p))
		yes |= strstr(line, "--drain") != NULL;
	if (p)
		pclose(p);
	return yes;
}

/* One run of a child; its CPU seconds (and its waited-for children's), or -1. */
static double child_cpu(const struct dconf *c, char *const wl[], const char *dir)
{
	char outdir[600], perfdata[600];
	snprintf(outdir, sizeof outdir, "STALLSCOPE_OUTPUT_DIR=%s/rec", dir);
	snprintf(perfdata, sizeof perfdata, "%s/perf.data", dir);
	char *argv[40];
	int k = 0;
	if (c->perf) {
		const char *p[] = { "perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g",
				    "--switch-events", "-o" };
		for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
			argv[k++] = (char *)p[i];
		argv[k++] = perfdata;
		argv[k++] = (char *)"--";
	}
	argv[k++] = (char *)c->runtime;
	for (int j = 0; wl[j] && k < 39; j++) {
		if (strcmp(wl[j], "--drain") == 0 && wl[j + 1] && !c->drain) {
			j++;
			continue;
		}
		argv[k++] = wl[j];
	}
	argv[k] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (c->recorded) {
			putenv((char *)"STALLSCOPE_ENABLED=1");
			putenv(outdir);
			if (c->env)
				putenv((char *)c->env);
		}
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	char cmd[1400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/rec' '%s'", dir, perfdata);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_sampling: could not clean %s\n", dir);
	/* wait4's usage covers the child and the children it waited for (perf's
	 * workload under perf). */
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int measure_d(const char *what, char *const wl[], struct dconf *c, int nc, int rounds)
{
	char dir[] = "/tmp/stallscope-bench-sampling-d-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	char load[128];
	read_load(load, sizeof load);
	printf("  %s (load average at start: %s)\n", what, load);
	for (int i = 0; i < nc; i++) {
		c[i].drain = knows_drain(c[i].runtime);
		if (!c[i].drain)
			printf("    (%s: its runtime has no --drain; its runs go without)\n", c[i].name);
	}
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < nc; i++) {
			struct dconf *x = &c[(i + r) % nc]; /* rotated: no configuration always first */
			x->cpu[r] = child_cpu(x, wl, dir);
			if (x->cpu[r] < 0) {
				fprintf(stderr, "bench_sampling: %s failed to run%s\n", x->name,
					x->perf ? " (is perf installed and permitted?)" : "");
				rm_dir(dir);
				return -1;
			}
		}
	}
	rm_dir(dir);
	for (int i = 0; i < nc; i++) {
		printf("    %-34s", c[i].name);
		for (int r = 0; r < rounds; r++)
			printf(" %6.3f", c[i].cpu[r]);
		c[i].med = median(c[i].cpu, rounds);
		printf("   median %6.3f s\n", c[i].med);
	}
	return 0;
}

static int part_d(const char *runtime, const char *other, int rounds)
{
	if (rounds > D_MAX_ROUNDS)
		rounds = D_MAX_ROUNDS;
	printf("(d) against perf: the example runtime as a child, CPU s (user + system, perf's own "
	       "process counted), %d rounds, order rotated\n", rounds);
	char *steady[] = { (char *)"--workers", (char *)"16", (char *)"--scenario", (char *)"steady",
			   (char *)"--rate", (char *)"20000", (char *)"--duration", (char *)"3",
			   (char *)"--drain", (char *)"60", NULL };
	/* The two rows after perf's split full recording's cost: the hooks alone,
	 * and sampling with switch records but no stack at each switch-out. */
	struct dconf sc[9] = {
		{ .name = "plain", .runtime = runtime },
		{ .name = "full recording", .runtime = runtime, .recorded = 1 },
		{ .name = "perf -e cpu-clock --switch-events", .runtime = runtime, .perf = 1 },
		{ .name = "hooks only (CPU_SAMPLING=0)", .runtime = runtime, .recorded = 1,
		  .env = "STALLSCOPE_CPU_SAMPLING=0" },
		{ .name = "sampling, OFFCPU_STACKS=off", .runtime = runtime, .recorded = 1,
		  .env = "STALLSCOPE_OFFCPU_STACKS=off" },
		{ .name = "full, SAMPLER=cpu (all processes)", .runtime = runtime, .recorded = 1,
		  .env = "STALLSCOPE_SAMPLER=cpu" },
		{ .name = "full, OFFCPU_STACKS=all", .runtime = runtime, .recorded = 1,
		  .env = "STALLSCOPE_OFFCPU_STACKS=all" },
		{ .name = "full, SAMPLER=perf (own events)", .runtime = runtime, .recorded = 1,
		  .env = "STALLSCOPE_SAMPLER=perf" },
		{ .name = "full recording, other build", .runtime = other, .recorded = 1 },
	};
	int nsc = other ? 9 : 8;
	if (measure_d("steady: 16 workers, 20000 tasks/s for 3 s", steady, sc, nsc, rounds) != 0)
		return -1;
	char *light[] = { (char *)"--workers", (char *)"2", (char *)"--scenario",
			  (char *)"starvation", (char *)"--rate", (char *)"750", (char *)"--duration",
			  (char *)"2", (char *)"--drain", (char *)"60", NULL };
	/* perf here too: on a VM the sampling interrupt alone can cost more than
	 * the 2% target, whoever samples. */
	struct dconf lc[4] = {
		{ .name = "plain", .runtime = runtime },
		{ .name = "full recording", .runtime = runtime, .recorded = 1 },
		{ .name = "perf -e cpu-clock --switch-events", .runtime = runtime, .perf = 1 },
		{ .name = "full recording, other build", .runtime = other, .recorded = 1 },
	};
	int nlc = other ? 4 : 3;
	if (measure_d("light: 2 workers, starvation, 750 tasks/s for 2 s", light, lc, nlc, rounds) != 0)
		return -1;
	double full = sc[1].med - sc[0].med, perf = sc[2].med - sc[0].med;
	printf("  steady: full recording adds %.3f s, perf --switch-events adds %.3f s: full / perf "
	       "%.4f (target <= 0.5000: %s)\n", full, perf, perf > 0 ? full / perf : 0.0,
	       full < 0 || perf <= 0 ? "NOISE: a recorded run's median below plain's, no verdict"
	       : full / perf <= 0.5 ? "met" : "NOT MET");
	double lo = 100 * (lc[1].med / lc[0].med - 1);
	printf("  light: full recording overhead %+.2f%% (target <= 2%%: %s); perf --switch-events "
	       "%+.2f%%\n", lo, lo <= 2.0 ? "met" : "NOT MET", 100 * (lc[2].med / lc[0].med - 1));
	printf("  steady, split: hooks only add %.3f s, sampling without off-CPU stacks %.3f s, "
	       "full %.3f s (off-CPU stacks %.3f s of it)\n", sc[3].med - sc[0].med,
	       sc[4].med - sc[0].med, full, sc[1].med - sc[4].med);
	printf("  steady, this build: full recording with per-CPU events of every process "
	       "(STALLSCOPE_SAMPLER=cpu) adds %.3f s (full / perf %.4f)\n", sc[5].med - sc[0].med,
	       perf > 0 ? (sc[5].med - sc[0].med) / perf : 0.0);
	printf("  steady, this build: full recording with a stack at every switch-out "
	       "(STALLSCOPE_OFFCPU_STACKS=all, no in-poll filter) adds %.3f s (full / perf %.4f)\n",
	       sc[6].med - sc[0].med, perf > 0 ? (sc[6].med - sc[0].med) / perf : 0.0);
	printf("  steady, this build: full recording with the process's own events "
	       "(STALLSCOPE_SAMPLER=perf; as root the default is the cpu-clock once per CPU for every "
	       "process) adds %.3f s (full / perf %.4f)\n", sc[7].med - sc[0].med,
	       perf > 0 ? (sc[7].med - sc[0].med) / perf : 0.0);
	if (other) {
		double of = sc[8].med - sc[0].med;
		printf("  other build: steady adds %.3f s (full / perf %.4f), light %+.2f%%\n", of,
		       perf > 0 ? of / perf : 0.0, 100 * (lc[3].med / lc[0].med - 1));
	}
	return 0;
}


/* ---- (e): the floor of a 999 Hz sampler --------------------------------------- */

#define E_CONFS 5
#define E_MAX_CPUS 64

struct e_job {
	uint64_t polls, iters, cpu;
	pthread_barrier_t *go;
};

static void *e_worker(void *arg)
{
	struct e_job *j = arg;
	pthread_barrier_wait(j->go);
	uint64_t c0 = ns_of_clock(CLOCK_THREAD_CPUTIME_ID);
	for (uint64_t p = 0; p < j->polls; p++)
		sink_v += hash_work(j->iters, p);
	j->cpu = ns_of_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

/* A software event of this process, disabled, inherited by the threads created
 * afterwards, stamped on CLOCK_MONOTONIC as the recorder's are. */
static void e_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = config;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a->disabled = 1;
	a->inherit = 1;
	a->inherit_thread = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->sample_id_all = 1;
}

/* The CPUs the per-CPU parts open events on (online ones, at most E_MAX_CPUS),
 * and the bytes of each CPU's ring (256 data pages and the header page). */
static long e_cpus(size_t *ring_len)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	*ring_len = (size_t)(256 + 1) * (size_t)sysconf(_SC_PAGESIZE);
	return ncpu > E_MAX_CPUS ? E_MAX_CPUS : ncpu;
}

/* Per CPU, inherited by threads created afterwards; conf 1 bare, 2 + call chain,
 * 3 + registers and 8 KiB of stack, 4 + registers and 1 KiB. Returns the number
 * of CPUs opened (their fds and rings in fds/rings), -1 when perf refuses. */
static int e_open(int conf, int *fds, void **rings, size_t *ring_len)
{
	long ncpu = e_cpus(ring_len);
	for (long c = 0; c < ncpu; c++) {
		struct perf_event_attr a;
		e_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
		a.sample_period = 1001001; /* 999 Hz, as the recorder */
		a.sample_type |= PERF_SAMPLE_IP;
		a.exclude_hv = 1;
		if (conf >= 2)
			a.sample_type |= PERF_SAMPLE_CALLCHAIN;
		if (conf >= 3) {
			a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a.sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |
					     (1ull << PERF_REG_X86_IP);
			a.sample_stack_user = conf == 3 ? 8192 : 1024;
		}
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			a.exclude_kernel = 1; /* unprivileged: user frames only */
			fd = (int)syscall(SYS_perf_event_open, &a, 0, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		}
		void *r = fd < 0 ? MAP_FAILED : mmap(NULL, *ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			for (long k = 0; k < c; k++) {
				munmap(rings[k], *ring_len);
				close(fds[k]);
			}
			return -1;
		}
		fds[c] = fd;
		rings[c] = r;
	}
	return (int)ncpu;
}

/* Counts the samples in each ring and frees the space, as a drain would. */
static uint64_t e_drain(void **rings, int n, size_t ring_len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t size = ring_len - (uint64_t)pg, samples = 0;
	for (int c = 0; c < n; c++) {
		struct perf_event_mmap_page *mp = rings[c];
		const unsigned char *data = (const unsigned char *)rings[c] + pg;
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
		while (tail < head) {
			const struct perf_event_header *h = (const void *)(data + tail % size);
			if (h->size < sizeof *h)
				break;
			samples += h->type == PERF_RECORD_SAMPLE;
			tail += h->size;
		}
		__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	}
	return samples;
}

/* As e_drain, counting records of this process (recs[0]) and of others (recs[1]):
 * samples by their pid, CPU-wide switch records by the task switching. */
static void f_drain(void **rings, int n, size_t ring_len, uint64_t recs[2])
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t size = ring_len - (uint64_t)pg;
	uint32_t me = (uint32_t)getpid();
	for (int c = 0; c < n; c++) {
		struct perf_event_mmap_page *mp = rings[c];
		const unsigned char *data = (const unsigned char *)rings[c] + pg;
		uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE), tail = mp->data_tail;
		while (tail < head) {
			struct perf_event_header h;
			uint32_t pid = 0;
			uint64_t off = tail % size;
			memcpy(&h, data + off, sizeof h); /* 8-aligned: never split */
			if (h.size < sizeof h)
				break;
			uint64_t at = h.type == PERF_RECORD_SAMPLE ? 16 :
				      h.type == PERF_RECORD_SWITCH_CPU_WIDE ? 8 : UINT64_MAX;
			if (at != UINT64_MAX && h.size >= sizeof h + at + 4) {
				uint64_t p = (off + sizeof h + at) % size;
				memcpy(&pid, data + p, 4);
				recs[pid != me]++;
			}
			tail += h.size;
		}
		__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
	}
}

static _Atomic int e_done;

static int part_e(uint64_t iters, int rounds)
{
	static const char *names[E_CONFS] = { "no events", "bare (ip, tid, time)", "+ call chain",
					      "+ regs, 8 KiB stack copy", "+ regs, 1 KiB stack copy" };
	double cpu[E_CONFS][50], per[E_CONFS][50];
	const uint64_t polls = 1200;
	char load[128];
	read_load(load, sizeof load);
	printf("(e) the floor: 2 threads x %llu CPU-bound polls of ~0.5 ms under a 999 Hz cpu-clock "
	       "event per CPU, no recorder; %d rounds, order rotated (load average at start: %s)\n",
	       (unsigned long long)polls, rounds, load);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < E_CONFS; i++) {
			int conf = (i + r) % E_CONFS;
			int fds[E_MAX_CPUS];
			void *rings[E_MAX_CPUS];
			size_t rl = 0;
			int n = 0;
			if (conf && (n = e_open(conf, fds, rings, &rl)) < 0) {
				printf("  SKIP (e): perf_event_open or its ring refused: %s\n", strerror(errno));
				return 0;
			}
			for (int c = 0; c < n; c++)
				ioctl(fds[c], PERF_EVENT_IOC_ENABLE, 0);
			pthread_barrier_t go;
			pthread_barrier_init(&go, NULL, 3);
			struct e_job jobs[2];
			pthread_t th[2];
			for (int k = 0; k < 2; k++) {
				jobs[k] = (struct e_job){ .polls = polls, .iters = iters, .go = &go };
				pthread_create(&th[k], NULL, e_worker, &jobs[k]);
			}
			pthread_barrier_wait(&go);
			/* The drain, as the writer's 10 ms tick: the workers are joined
			 * once both are done (their CPU is their own clock). */
			uint64_t samples = 0;
			atomic_store(&e_done, 0);
			for (;;) {
				struct timespec ts = { 0, 10000000L };
				nanosleep(&ts, NULL);
				if (n)
					samples += e_drain(rings, n, rl);
				if (jobs[0].cpu && jobs[1].cpu)
					break;
			}
			for (int k = 0; k < 2; k++)
				pthread_join(th[k], NULL);
			if (n)
				samples += e_drain(rings, n, rl);
			for (int c = 0; c < n; c++) {
				munmap(rings[c], rl);
				close(fds[c]);
			}
			pthread_barrier_destroy(&go);
			cpu[conf][r] = (double)(jobs[0].cpu + jobs[1].cpu) / 1e6;
			per[conf][r] = (double)samples;
		}
	}
	double base = median(cpu[0], rounds);
	for (int c = 0; c < E_CONFS; c++) {
		double m = median(cpu[c], rounds), ms = median(per[c], rounds);
		printf("  %-26s threads' CPU median %8.1f ms (%+6.2f%%)", names[c], m, 100 * (m / base - 1));
		if (c)
			printf(", %6.0f samples a run: %6.2f us per sample", ms,
			       ms > 0 ? (m - base) * 1e3 / ms : 0.0);
		printf("\n");
	}
	return 0;
}

/* ---- (f): the kernel's part of a switch --------------------------------------- */

#define F_CONFS 8

static _Atomic int f_turn;
static int f_trips;

/* The players on CPUs 0 and 1 instead of both on 0: every switch is then one
 * to or from the idle task ((f) across two CPUs). */
static int f_split;

static void *f_player(void *arg)
{
	int me = (int)(intptr_t)arg;
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(f_split ? me : 0, &cs);
	pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
	for (int i = 0; i < f_trips; i++) {
		while (atomic_load(&f_turn) != me)
			syscall(SYS_futex, &f_turn, FUTEX_WAIT_PRIVATE, !me, NULL, NULL, 0);
		atomic_store(&f_turn, !me);
		syscall(SYS_futex, &f_turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

/* Per CPU for every process (pid -1, cpu N: the events live in the CPU's context
 * and are never scheduled in or out at a switch), cpu-clock at 999 Hz with call
 * chains and CPU-wide switch records (PERF_RECORD_SWITCH_CPU_WIDE, next/prev
 * pid/tid) in one event; with stacks, a context-switches event sampling every
 * switch-out with bp, sp, ip and 1 KiB of stack. What `perf record -a` opens. */
static int f_open_cpu_wide(int stacks, int *fds, void **rings, size_t *rl, int *nfds)
{
	/* stacks -1: the cpu-clock alone, no switch records (what the recorder opens
	 * beside the sched_switch program) */
	int records = stacks >= 0;
	stacks = stacks > 0;
	long ncpu = e_cpus(rl);
	*nfds = 0;
	for (long c = 0; c < ncpu; c++) {
		struct perf_event_attr a;
		e_attr(&a, PERF_COUNT_SW_CPU_CLOCK);
		a.inherit = a.inherit_thread = 0;
		a.sample_period = 1001001;
		a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN;
		a.exclude_hv = 1;
		a.context_switch = records;
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		void *r = fd < 0 ? MAP_FAILED : mmap(NULL, *rl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			for (long k = 0; k < c; k++)
				munmap(rings[k], *rl);
			return -1;
		}
		rings[c] = r;
		fds[(*nfds)++] = fd;
		if (!stacks)
			continue;
		a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a.context_switch = 0;
		a.sample_period = 1;
		a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |
				     (1ull << PERF_REG_X86_IP);
		a.sample_stack_user = 1024;
		int fd2 = (int)syscall(SYS_perf_event_open, &a, -1, (int)c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd2 < 0 || ioctl(fd2, PERF_EVENT_IOC_SET_OUTPUT, fd) != 0) {
			if (fd2 >= 0)
				close(fd2);
			for (long k = 0; k <= c; k++)
				munmap(rings[k], *rl);
			return -1;
		}
		fds[(*nfds)++] = fd2;
	}
	return (int)ncpu;
}

/* conf 1: cpu-clock + switch records; 2: + context-switches counting only;
 * 3: + a sample at each switch-out with bp, sp, ip and 1 KiB of stack;
 * 4: cpu-clock alone (the share of the switch records in 1); 5 and 6: per CPU
 * for every process, as 1 and 3. */
static int f_open(int conf, int *fds, void **rings, size_t *rl, int *nfds)
{
	if (conf >= 5)
		return f_open_cpu_wide(conf == 7 ? -1 : conf == 6, fds, rings, rl, nfds);
	int n = e_open(2, fds, rings, rl); /* cpu-clock with call chains */
	if (n < 0)
		return -1;
	*nfds = n;
	/* e_open's events have no switch records: these ones do. */
	for (int c = 0; c < n && conf != 4; c++) {
		struct perf_event_attr a;
		e_attr(&a, PERF_COUNT_SW_DUMMY);
		a.context_switch = 1;
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, fds[c]) != 0)
			return fd < 0 ? -1 : (close(fd), -1);
		fds[(*nfds)++] = fd;
		if (conf < 2)
			continue;
		a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		a.context_switch = 0;
		a.sample_period = conf == 2 ? 1ull << 40 : 1;
		if (conf == 3) {
			a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
			a.sample_regs_user = (1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) |
					     (1ull << PERF_REG_X86_IP);
			a.sample_stack_user = 1024;
		}
		fd = (int)syscall(SYS_perf_event_open, &a, 0, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 || ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, fds[c]) != 0)
			return fd < 0 ? -1 : (close(fd), -1);
		fds[(*nfds)++] = fd;
	}
	return n;
}

static int part_f(int rounds, int split)
{
	static const char *names[F_CONFS] = { "no events", "cpu-clock + switch records",
					      "+ context-switches event, counting only",
					      "+ sample per switch-out, regs + 1 KiB stack",
					      "cpu-clock alone, no switch records",
					      "per CPU, all processes: cpu-clock + switches",
					      "per CPU, all processes: + switch-out samples",
					      "per CPU, all processes: cpu-clock alone" };
	double us[F_CONFS][50], other[F_CONFS][50];
	f_split = split;
	f_trips = split ? 5000 : 20000; /* a switch to or from idle costs tens of us here */
	char load[128];
	read_load(load, sizeof load);
	printf("(f%s) the kernel's part of a switch: 2 threads on %s hand a futex back and forth "
	       "%d times, %d rounds, order rotated (load average at start: %s)\n", split ? "2" : "",
	       split ? "CPUs 0 and 1 (every switch to or from the idle task)" : "CPU 0", f_trips,
	       rounds, load);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < F_CONFS; i++) {
			int conf = (i + r) % F_CONFS;
			int fds[4 * E_MAX_CPUS], nfds = 0, n = 0;
			uint64_t recs[2] = { 0, 0 };
			void *rings[E_MAX_CPUS];
			size_t rl = 0;
			if (conf && (n = f_open(conf, fds, rings, &rl, &nfds)) < 0) {
				printf("  SKIP (f): perf_event_open refused: %s\n", strerror(errno));
				for (int k = 0; k < nfds; k++)
					close(fds[k]);
				return 0;
			}
			for (int k = 0; k < nfds; k++)
				ioctl(fds[k], PERF_EVENT_IOC_ENABLE, 0);
			atomic_store(&f_turn, 0);
			pthread_t th[2];
			uint64_t c0 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID), w0 = now_ns();
			for (int k = 0; k < 2; k++)
				pthread_create(&th[k], NULL, f_player, (void *)(intptr_t)k);
			for (int done = 0; !done;) {
				struct timespec ts = { 0, 10000000L };
				nanosleep(&ts, NULL);
				if (n)
					f_drain(rings, n, rl, recs);
				done = pthread_tryjoin_np(th[0], NULL) == 0;
			}
			pthread_join(th[1], NULL);
			uint64_t c1 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID);
			if (n)
				f_drain(rings, n, rl, recs);
			other[conf][r] = (double)recs[1] / ((double)(now_ns() - w0) / 1e9);
			for (int k = 0; k < n; k++)
				munmap(rings[k], rl);
			for (int k = 0; k < nfds; k++)
				close(fds[k]);
			us[conf][r] = (double)(c1 - c0) / 1e3 / (2.0 * f_trips);
		}
	}
	double base = median(us[0], rounds);
	for (int c = 0; c < F_CONFS; c++) {
		double m = median(us[c], rounds);
		printf("  %-44s %6.2f us CPU per switch (%+5.2f)", names[c], m, m - base);
		if (c >= 5)
			printf(", other processes' records %.0f a second",
			       median(other[c], rounds));
		printf("\n");
	}
	f_split = 0;
	return 0;
}

/* ---- (h): what the recorder pays per switch, parked or in a poll --------------- */

#define H_CONFS 7

static int h_mode; /* 0 bare, 1 parked across each wait, 2 inside a poll across it */

static void *h_player(void *arg)
{
	int me = (int)(intptr_t)arg;
	cpu_set_t cs;
	CPU_ZERO(&cs);
	CPU_SET(0, &cs);
	pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
	if (h_mode) {
		stallscope_worker_begin("bench-h", (uint32_t)me);
		/* The writer follows a worker (and hands it its in-poll cell) on its
		 * next cycle. */
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
	uint32_t loc = STALLSCOPE_LOCATION();
	for (int i = 0; i < f_trips; i++) {
		if (h_mode == 1)
			stallscope_park();
		else if (h_mode == 2)
			stallscope_poll_begin((uint64_t)i, loc);
		while (atomic_load(&f_turn) != me)
			syscall(SYS_futex, &f_turn, FUTEX_WAIT_PRIVATE, !me, NULL, NULL, 0);
		if (h_mode == 1)
			stallscope_unpark();
		else if (h_mode == 2)
			stallscope_poll_end();
		atomic_store(&f_turn, !me);
		syscall(SYS_futex, &f_turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	if (h_mode)
		stallscope_worker_end();
	return NULL;
}

/* The sampler line of the META records in dir's first segment, "" when none. */
static void h_sampler_meta(const char *dir, char *out, size_t len)
{
	out[0] = 0;
	char path[800];
	snprintf(path, sizeof path, "%s/stallscope.0.bin", dir);
	struct ss_reader *rd;
	char err[256];
	if (ss_reader_open_file(&rd, path, NULL, NULL, err, sizeof err) != 0)
		return;
	struct ss_block_info b;
	while (!out[0] && ss_reader_next_block(rd, &b)) {
		struct ss_record rec;
		while (ss_reader_next_record(rd, &rec))
			if (rec.type == SS_REC_META && rec.u.meta.key_len == 7 &&
			    !memcmp(rec.u.meta.key, "sampler", 7)) {
				snprintf(out, len, "%.*s", (int)rec.u.meta.value_len, rec.u.meta.value);
				break;
			}
	}
	ss_reader_close(rd);
}

/* (f)'s futex pair as two workers of this process, recorded by the recorder
 * itself: what a switch costs the process (every thread, the writer's drain of
 * the records included) parked and inside a poll, against no recording. */
static int part_h(int rounds)
{
	static const char *names[H_CONFS] = {
		"not recording", "hooks only (no sampling), parked",
		"full recording, parked across the wait", "full recording, in a poll across it",
		"full, OFFCPU_STACKS=all, parked", "sampling, OFFCPU_STACKS=off, parked",
		"full, SWITCH_SOURCE=events, parked" };
	double us[H_CONFS][50];
	f_trips = 20000;
	char load[128], tmpl[] = "/tmp/bench-sampling-h-XXXXXX", meta[2][4096] = { "", "" };
	read_load(load, sizeof load);
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return -1;
	}
	printf("(h) the recorder's part of a switch: (f)'s pair as two workers on CPU 0, %d hand-offs, "
	       "the process's CPU, %d rounds, order rotated (load average at start: %s)\n", f_trips,
	       rounds, load);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < H_CONFS; i++) {
			int conf = (i + r) % H_CONFS;
			char dir[128];
			snprintf(dir, sizeof dir, "%s/%d-%d", tmpl, r, conf);
			if (conf) {
				struct stallscope_config cfg;
				stallscope_config_init(&cfg);
				cfg.output_dir = dir;
				cfg.cpu_sampling = conf != 1;
				if (conf == 4)
					cfg.offcpu_stacks = STALLSCOPE_OFFCPU_ALL;
				if (conf == 5)
					cfg.offcpu_stacks = STALLSCOPE_OFFCPU_OFF;
				/* the switch records of the events, not the sched_switch program */
				if (conf == 6)
					setenv("STALLSCOPE_SWITCH_SOURCE", "events", 1);
				else
					unsetenv("STALLSCOPE_SWITCH_SOURCE");
				if (stallscope_start(&cfg) != 0) {
					fprintf(stderr, "bench_sampling: %s\n", stallscope_last_error());
					return -1;
				}
			}
			h_mode = conf == 0 ? 0 : conf == 3 ? 2 : 1;
			atomic_store(&f_turn, 0);
			pthread_t th[2];
			uint64_t c0 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID);
			for (int k = 0; k < 2; k++)
				pthread_create(&th[k], NULL, h_player, (void *)(intptr_t)k);
			for (int k = 0; k < 2; k++)
				pthread_join(th[k], NULL);
			/* The writer's last drain of the run is the run's too. */
			if (conf)
				stallscope_stop();
			uint64_t c1 = ns_of_clock(CLOCK_PROCESS_CPUTIME_ID);
			if (r == 0 && (conf == 2 || conf == 4))
				h_sampler_meta(dir, meta[conf == 4], sizeof meta[0]);
			us[conf][r] = (double)(c1 - c0) / 1e3 / (2.0 * f_trips);
		}
	}
	unsetenv("STALLSCOPE_SWITCH_SOURCE");
	char cmd[800];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_sampling: could not remove %s\n", tmpl);
	double base = median(us[0], rounds);
	for (int c = 0; c < H_CONFS; c++) {
		double m = median(us[c], rounds);
		printf("  %-40s %6.2f us CPU per switch (%+5.2f)\n", names[c], m, m - base);
	}
	printf("  filter: %s\n", strstr(meta[0], "off-CPU stacks inside polls only")
	       ? "on (parked switch-outs dropped in the kernel)"
	       : strstr(meta[0], "off-CPU stacks on") ? "refused: parked switch-outs keep their stacks"
						      : "no off-CPU stacks here");
	double parked = median(us[2], rounds), all = median(us[4], rounds);
	printf("  a parked switch-out: %.2f us with the in-poll filter, %.2f us without it "
	       "(filtered / all %.3f), %.2f us with no off-CPU stacks\n", parked - base, all - base,
	       all - base > 0 ? (parked - base) / (all - base) : 0.0, median(us[5], rounds) - base);
	double ev = median(us[6], rounds);
	printf("  switches: %s; a parked switch %.2f us, %.2f us from the events' switch records "
	       "(program / records %.3f)\n", strstr(meta[0], "sched_switch (raw tracepoint)")
	       ? "from the sched_switch program" : "the events' switch records (program refused)",
	       parked - base, ev - base, ev - base > 0 ? (parked - base) / (ev - base) : 0.0);
	return 0;
}

/* ---- (g): what another process pays ---------------------------------------- */

#define G_CONFS 4

/* (f)'s futex pair, f_trips hand-overs, on the calling process's CPU 0. */
static void f_pair(void)
{
	atomic_store(&f_turn, 0);
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		pthread_create(&th[k], NULL, f_player, (void *)(intptr_t)k);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
}

/* The futex pair of (f) in a child process; its CPU per switch, -1 on failure. */
static double g_bystander(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		f_pair();
		_exit(0);
	}
	return (double)pid;
}

static int part_g(int rounds)
{
	static const char *names[G_CONFS] = {
		"no events", "this process's own events (inherited)",
		"per CPU, all processes, no filter", "per CPU, all processes, BPF pid filter" };
	double us[G_CONFS][50], other[G_CONFS][50];
	f_trips = 20000;
	char load[128];
	read_load(load, sizeof load);
	printf("(g) what another process pays: (f)'s futex pair in a child process while this one "
	       "holds cpu-clock + switch records + a sample per switch-out (regs + 1 KiB stack); "
	       "%d rounds, order rotated (load average at start: %s)\n", rounds, load);
	char why[200] = "";
	int prog = ss_bpf_pid_filter((uint32_t)getpid(), why, sizeof why);
	if (prog < 0)
		printf("  (BPF filter refused: %s; its row is unfiltered)\n", why);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < G_CONFS; i++) {
			int conf = (i + r) % G_CONFS;
			int fds[4 * E_MAX_CPUS], nfds = 0, n = 0;
			void *rings[E_MAX_CPUS];
			size_t rl = 0;
			uint64_t recs[2] = { 0, 0 };
			if (conf && (n = f_open(conf == 1 ? 3 : 6, fds, rings, &rl, &nfds)) < 0) {
				printf("  SKIP (g): perf_event_open refused: %s\n", strerror(errno));
				for (int k = 0; k < nfds; k++)
					close(fds[k]);
				if (prog >= 0)
					close(prog);
				return 0;
			}
			for (int k = 0; k < nfds && conf == 3 && prog >= 0; k++)
				ss_bpf_attach(fds[k], prog);
			for (int k = 0; k < nfds; k++)
				ioctl(fds[k], PERF_EVENT_IOC_ENABLE, 0);
			uint64_t w0 = now_ns();
			pid_t pid = (pid_t)g_bystander();
			int st = 0;
			struct rusage ru;
			memset(&ru, 0, sizeof ru);
			for (int done = 0; pid > 0 && !done;) {
				struct timespec ts = { 0, 10000000L };
				nanosleep(&ts, NULL);
				if (n)
					f_drain(rings, n, rl, recs);
				done = wait4(pid, &st, WNOHANG, &ru) == pid;
			}
			if (n)
				f_drain(rings, n, rl, recs);
			double wall = (double)(now_ns() - w0) / 1e9;
			for (int k = 0; k < n; k++)
				munmap(rings[k], rl);
			for (int k = 0; k < nfds; k++)
				close(fds[k]);
			double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
				     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
			us[conf][r] = cpu * 1e6 / (2.0 * f_trips);
			other[conf][r] = (double)recs[1] / wall;
		}
	}
	if (prog >= 0)
		close(prog);
	double base = median(us[0], rounds);
	for (int c = 0; c < G_CONFS; c++) {
		double m = median(us[c], rounds);
		printf("  %-40s bystander %6.2f us CPU per switch (%+5.2f)", names[c], m, m - base);
		if (c >= 2)
			printf(", other processes' records in our rings %.0f a second",
			       median(other[c], rounds));
		printf("\n");
	}
	return 0;
}

/* ---- (i): what the default recording costs another process ----------------- */

#define I_CONFS 3

/* A child that does a fixed CPU-bound work (2 threads of hash steps, one a CPU)
 * or (f)'s futex pair; its CPU (user + system) in ns, -1 on failure. */
static double i_child(int pair, uint64_t iters)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (pair)
			f_pair();
		else
			sink_v += hash_work(iters, 7);
		_exit(0);
	}
	int st = 0;
	struct rusage ru;
	memset(&ru, 0, sizeof ru);
	if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return (double)ru.ru_utime.tv_sec * 1e9 + (double)ru.ru_utime.tv_usec * 1e3 +
	       (double)ru.ru_stime.tv_sec * 1e9 + (double)ru.ru_stime.tv_usec * 1e3;
}

/* This process parked in a worker (the recorder follows it) while a child works:
 * the child's CPU with this process not recording, recording with the default
 * settings (as root: the cpu-clock once per CPU for every process, other
 * processes' samples dropped in the kernel, and the sched_switch program), and
 * with STALLSCOPE_SAMPLER=perf (the process's own inherited events). */
static _Atomic int i_stop;

static void *i_parked_worker(void *arg)
{
	(void)arg;
	stallscope_worker_begin("bench-i", 0);
	stallscope_park();
	while (!atomic_load(&i_stop)) {
		struct timespec ts = { 0, 5000000L };
		nanosleep(&ts, NULL);
	}
	stallscope_unpark();
	stallscope_worker_end();
	return NULL;
}

static int part_i(uint64_t iters, int rounds)
{
	static const char *names[I_CONFS] = { "not recording", "recording, default settings",
					      "recording, STALLSCOPE_SAMPLER=perf" };
	double cpu[2][I_CONFS][50];
	f_trips = 20000;
	char load[128], tmpl[] = "/tmp/bench-sampling-i-XXXXXX", meta[4096] = "";
	read_load(load, sizeof load);
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return -1;
	}
	printf("(i) what another process pays while this one records: a child doing %llu hash steps "
	       "(CPU-bound) and a child running (f)'s futex pair (%d hand-offs), its CPU, %d rounds, "
	       "order rotated (load average at start: %s)\n", (unsigned long long)iters, f_trips,
	       rounds, load);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < I_CONFS; i++) {
			int conf = (i + r) % I_CONFS;
			char dir[128];
			snprintf(dir, sizeof dir, "%s/%d-%d", tmpl, r, conf);
			pthread_t th;
			if (conf) {
				struct stallscope_config cfg;
				stallscope_config_init(&cfg);
				cfg.output_dir = dir;
				if (conf == 2)
					cfg.sampler = STALLSCOPE_SAMPLER_PERF;
				if (stallscope_start(&cfg) != 0) {
					fprintf(stderr, "bench_sampling: %s\n", stallscope_last_error());
					return -1;
				}
				atomic_store(&i_stop, 0);
				pthread_create(&th, NULL, i_parked_worker, NULL);
				/* followed by the writer's next cycles */
				struct timespec ts = { 0, 100000000L };
				nanosleep(&ts, NULL);
			}
			cpu[0][conf][r] = i_child(0, iters);
			cpu[1][conf][r] = i_child(1, 0);
			if (conf) {
				atomic_store(&i_stop, 1);
				pthread_join(th, NULL);
				stallscope_stop();
				if (r == 0 && conf == 1)
					h_sampler_meta(dir, meta, sizeof meta);
			}
			if (cpu[0][conf][r] < 0 || cpu[1][conf][r] < 0) {
				fprintf(stderr, "bench_sampling: (i) child failed\n");
				return -1;
			}
		}
	}
	char cmd[800];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_sampling: could not remove %s\n", tmpl);
	double b0 = median(cpu[0][0], rounds), b1 = median(cpu[1][0], rounds);
	for (int c = 0; c < I_CONFS; c++) {
		double m0 = median(cpu[0][c], rounds), m1 = median(cpu[1][c], rounds);
		printf("  %-38s CPU-bound child %8.1f ms (%+6.2f%%), futex pair %5.2f us CPU per switch "
		       "(%+5.2f)\n", names[c], m0 / 1e6, 100 * (m0 / b0 - 1), m1 / 1e3 / (2.0 * f_trips),
		       (m1 - b1) / 1e3 / (2.0 * f_trips));
	}
	printf("  default settings here: %s\n", strstr(meta, "cpu-clock per CPU for every process")
	       ? "the cpu-clock once per CPU for every process (its timer interrupts every CPU)"
	       : "the process's own events (this process's threads only)");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	double seconds = argc > 1 ? atof(argv[1]) : 60;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (rounds < 1 || rounds > 50)
		rounds = 5;

	/* Calibrate: iterations for ~0.5 ms per poll, 1200 polls (~0.6 s CPU) a worker. */
	uint64_t c0 = ns_of_clock(CLOCK_THREAD_CPUTIME_ID);
	sink_v += hash_work(10000000, 1);
	double ns_per_iter = (double)(ns_of_clock(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e7;
	uint64_t iters = (uint64_t)(500000 / (ns_per_iter > 0.01 ? ns_per_iter : 0.01));
	const uint64_t polls = 1200;
	printf("bench_sampling: %.2f ns per hash step, %llu steps per poll (~0.5 ms)\n", ns_per_iter,
	       (unsigned long long)iters);
	if (seconds < -4.5)
		return part_f(rounds, 1) != 0;
	if (seconds < -3.5)
		return part_i(iters * 2400, rounds) != 0;
	if (seconds < -2.5)
		return part_h(rounds) != 0;
	if (seconds < -1.5)
		return argc > 3 && part_d(argv[3], argc > 4 ? argv[4] : NULL, rounds) != 0;
	if (seconds < 0)
		return part_e(iters, rounds) != 0 || part_f(rounds, 0) != 0 || part_f(rounds, 1) != 0 ||
		       part_g(rounds) != 0 ||
		       part_h(rounds) != 0 || part_i(iters * 2400, rounds) != 0;

	printf("(a)+(b) overhead: 2 workers x %llu CPU-bound polls, sampling off vs on (999 Hz), "
	       "%d rounds, ABBA order\n", (unsigned long long)polls, rounds);
	double off_wall[50], on_wall[50], off_cpu[50], on_cpu[50], off_wr[50], on_wr[50];
	double ns_per_sample[50];
	uint64_t samples_total = 0;
	char mode[16] = "";
	for (int r = 0; r < rounds; r++) {
		struct result a, b;
		int on_first = r % 2;
		for (int k = 0; k < 2; k++) {
			int sampling = k == 0 ? on_first : !on_first;
			struct result *res = sampling ? &b : &a;
			if (run(sampling, 2, polls, iters, 0, res) != 0)
				return 1;
			printf("  round %d sampling %-3s: wall %8.1f ms, workers CPU %8.1f ms, writer CPU "
			       "%6.1f ms, samples %llu, switches %llu, sampler lost %llu%s%s\n", r + 1,
			       sampling ? "on" : "off", res->wall_ms, res->workers_cpu_ms,
			       res->writer_cpu_ms, (unsigned long long)res->c.samples,
			       (unsigned long long)res->c.switches,
			       (unsigned long long)res->c.sampler_lost, sampling ? ", mode " : "",
			       sampling ? res->sampler : "");
		}
		off_wall[r] = a.wall_ms;
		on_wall[r] = b.wall_ms;
		off_cpu[r] = a.workers_cpu_ms;
		on_cpu[r] = b.workers_cpu_ms;
		off_wr[r] = a.writer_cpu_ms;
		on_wr[r] = b.writer_cpu_ms;
		ns_per_sample[r] = b.c.samples ? (b.writer_cpu_ms - a.writer_cpu_ms) * 1e6 /
						 (double)b.c.samples : 0;
		samples_total += b.c.samples;
		snprintf(mode, sizeof mode, "%s", b.sampler);
	}
	double mw_off = median(off_wall, rounds), mw_on = median(on_wall, rounds);
	double mc_off = median(off_cpu, rounds), mc_on = median(on_cpu, rounds);
	double mr_off = median(off_wr, rounds), mr_on = median(on_wr, rounds);
	printf("  median wall: off %.1f ms, on %.1f ms: ratio on/off %.4f (target <= 1.01)\n", mw_off,
	       mw_on, mw_on / mw_off);
	printf("  median workers' CPU: off %.1f ms, on %.1f ms: ratio %.4f\n", mc_off, mc_on,
	       mc_on / mc_off);
	printf("  (b) median writer CPU per run: off %.2f ms, on %.2f ms; samples recorded %llu in "
	       "%d runs (%.0f a run, sampler mode %s); extra writer CPU per sample: median %.0f ns\n",
	       mr_off, mr_on, (unsigned long long)samples_total, rounds,
	       (double)samples_total / rounds, mode, median(ns_per_sample, rounds));

	if (part_e(iters, rounds) != 0 || part_f(rounds, 0) != 0 || part_f(rounds, 1) != 0 ||
	    part_g(rounds) != 0 ||
	    part_h(rounds) != 0 || part_i(iters * 2400, rounds) != 0)
		return 1;
	if (seconds <= 0)
		return argc > 3 && part_d(argv[3], argc > 4 ? argv[4] : NULL, rounds) != 0;
	printf("(c) sustained: 4 workers, default settings, %.0f s (3 CPU-bound polls of ~0.5 ms, "
	       "then a 1 ms sleep, repeated)\n", seconds);
	struct result s;
	if (run(1, 4, 0, iters, seconds, &s) != 0)
		return 1;
	printf("  sampler mode %s; wall %.1f s; %llu polls; workers CPU %.1f s; writer CPU %.2f s = "
	       "%.2f%% of one core\n", s.sampler, s.wall_ms / 1e3, (unsigned long long)s.polls,
	       s.workers_cpu_ms / 1e3, s.writer_cpu_ms / 1e3, 100.0 * s.writer_cpu_ms / s.wall_ms);
	printf("  decoded from %llu segments (%.1f MiB, %llu damaged): samples %llu (%llu CPU, %llu "
	       "off-CPU) = %.0f/s, switches %llu = %.0f/s, stacks %llu, mappings %llu, events %llu\n",
	       (unsigned long long)s.c.files, (double)s.c.bytes / 1048576.0,
	       (unsigned long long)s.c.damaged, (unsigned long long)s.c.samples,
	       (unsigned long long)s.c.cpu_samples, (unsigned long long)s.c.offcpu_samples,
	       (double)s.c.samples / (s.wall_ms / 1e3), (unsigned long long)s.c.switches,
	       (double)s.c.switches / (s.wall_ms / 1e3), (unsigned long long)s.c.stacks,
	       (unsigned long long)s.c.mappings, (unsigned long long)s.c.events);
	printf("  writer CPU per sample+switch record: %.0f ns\n",
	       s.c.samples + s.c.switches ? s.writer_cpu_ms * 1e6 / (double)(s.c.samples +
									 s.c.switches) : 0.0);
	printf("  lost: SAMPLER_LOSS %llu samples in %llu records, LOSS %llu events in %llu records; "
	       "stats: %llu events dropped, %llu lost on disk (target: all zero)\n",
	       (unsigned long long)s.c.sampler_lost, (unsigned long long)s.c.sampler_loss_records,
	       (unsigned long long)s.c.lost_events, (unsigned long long)s.c.loss_records,
	       (unsigned long long)s.st.events_dropped, (unsigned long long)s.st.events_lost_on_disk);
	return argc > 3 && part_d(argv[3], argc > 4 ? argv[4] : NULL, rounds) != 0;
}
