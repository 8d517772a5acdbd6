/*
 * bench_preload.c - what the preload shim costs.
 *
 * 1. A wrapped wait: poll() with a timeout on a pipe that is always readable, so
 *    the call returns at once but is recorded (a park and, on this event-loop
 *    thread, a loop iteration). CPU time per call of the same program run plain
 *    and under the shim with recording on (CPU sampling off, to isolate the
 *    wrapper), interleaved rounds, medians; next to one clock_gettime.
 * 2. A real program: Debian's xz -T2 on generated data, CPU time (user + system,
 *    children included) plain, under `stallscope record` (shim + 999 Hz sampling),
 *    and under `perf record -F 999 -g` (the peer), interleaved, medians.
 * Figures only: no pass or fail.
 * usage: bench_preload STALLSCOPE_CLI PRELOAD_SO [ROUNDS]
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALLS 400000

static double cpu_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_cpu(void)
{
	return cpu_of(CLOCK_THREAD_CPUTIME_ID);
}

/* The measured loop, in a child: prints ns of CPU per call. */
static int child_loop(void)
{
	int p[2];
	if (pipe(p) != 0 || write(p[1], "x", 1) != 1)
		return 1;
	struct pollfd fd = { .fd = p[0], .events = POLLIN };
	double p0 = cpu_of(CLOCK_PROCESS_CPUTIME_ID), t0 = now_cpu();
	for (int i = 0; i < CALLS; i++)
		if (poll(&fd, 1, 1000) != 1)
			return 1;
	double t1 = now_cpu(), p1 = cpu_of(CLOCK_PROCESS_CPUTIME_ID);
	struct timespec ts;
	double c0 = now_cpu();
	for (int i = 0; i < CALLS; i++)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	double c1 = now_cpu();
	/* Under the shim: its hook pair alone, without the system call between. */
	uint32_t (*wb)(uint32_t) = (uint32_t (*)(uint32_t))dlsym(RTLD_DEFAULT, "stallscope_shim_wait_begin");
	void (*we)(uint32_t) = (void (*)(uint32_t))dlsym(RTLD_DEFAULT, "stallscope_shim_wait_end");
	double h = 0;
	if (wb && we) {
		double h0 = now_cpu();
		for (int i = 0; i < CALLS; i++)
			we(wb(1));
		h = (now_cpu() - h0) / CALLS * 1e9;
	}
	/* The process's figure includes the recorder's writer thread encoding the
	 * events (and the program's CPU before the loop, the same in both runs). */
	printf("%.2f %.2f %.2f %.2f\n", (t1 - t0) / CALLS * 1e9, (c1 - c0) / CALLS * 1e9,
	       (p1 - p0) / CALLS * 1e9, h);
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs argv with extra environment; returns the child's CPU seconds (user + sys
 * of it and its children), or -1. out: the first line it printed. */
static double run(char *const argv[], const char *const env[], char *out, size_t outlen)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	struct rusage ru0, ru1;
	getrusage(RUSAGE_CHILDREN, &ru0);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; env && env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		dup2(p[1], 1);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = read(p[0], out, outlen - 1);
	out[n > 0 ? n : 0] = 0;
	char sink[4096];
	while (read(p[0], sink, sizeof sink) > 0)
		;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	getrusage(RUSAGE_CHILDREN, &ru1);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	double u = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
		   (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6;
	double s = (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
		   (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
	return u + s;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--loop"))
		return child_loop();
	if (argc < 3) {
		fprintf(stderr, "usage: bench_preload STALLSCOPE_CLI PRELOAD_SO [ROUNDS]\n");
		return 1;
	}
	const char *cli = argv[1], *shim = argv[2];
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	if (rounds < 1 || rounds > 50)
		rounds = 5;
	char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
	if (sl <= 0)
		return 1;
	self[sl] = 0;
	char dir[] = "/tmp/bench-preload.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char outdir[4200];
	snprintf(outdir, sizeof outdir, "%s/seg", dir);

	/* 1. the wrapped wait */
	double plain[50], shimmed[50], clk[50], pplain[50], pshim[50], hooks[50];
	char *loop_argv[] = { self, (char *)"--loop", NULL };
	const char *env_shim[] = { "LD_PRELOAD", shim, "STALLSCOPE_ENABLED", "1",
				   "STALLSCOPE_OUTPUT_DIR", outdir, "STALLSCOPE_CPU_SAMPLING", "0",
				   NULL };
	for (int r = 0; r < rounds; r++) {
		char line[128];
		double a = 0, b = 0, c = 0, pa = 0, pb = 0, c2 = 0, hk = 0;
		if (run(loop_argv, NULL, line, sizeof line) < 0 ||
		    sscanf(line, "%lf %lf %lf", &a, &c, &pa) != 3)
			return 1;
		plain[r] = a;
		clk[r] = c;
		pplain[r] = pa;
		if (run(loop_argv, env_shim, line, sizeof line) < 0 ||
		    sscanf(line, "%lf %lf %lf %lf", &b, &c2, &pb, &hk) != 4)
			return 1;
		shimmed[r] = b;
		hooks[r] = hk;
		pshim[r] = pb;
	}
	double mp = median(plain, rounds), ms = median(shimmed, rounds), mc = median(clk, rounds);
	printf("wrapped wait (poll on a ready fd, %d calls, %d rounds, CPU time, medians):\n", CALLS,
	       rounds);
	printf("  calling thread: plain %.1f ns/call, under the shim %.1f ns/call: +%.1f ns = %.2f "
	       "clock_gettime (%.1f ns here); ratio %.3f\n", mp, ms, ms - mp,
	       mc > 0 ? (ms - mp) / mc : 0, mc, mp > 0 ? ms / mp : 0);
	double hk = median(hooks, rounds);
	printf("  the shim's hook pair alone (wait_begin + wait_end, 4 events, 2 clock reads): "
	       "%.1f ns = %.2f clock_gettime\n", hk, mc > 0 ? hk / mc : 0);
	double pp = median(pplain, rounds), ps = median(pshim, rounds);
	printf("  whole process (the recorder's writer encoding 4 events a call included): plain "
	       "%.1f ns/call, under the shim %.1f ns/call: ratio %.3f\n", pp, ps, pp > 0 ? ps / pp : 0);

	/* 2. xz -T2 */
	char in[4200];
	snprintf(in, sizeof in, "%s/in.txt", dir);
	FILE *f = fopen(in, "w");
	if (!f)
		return 1;
	unsigned x = 15;
	for (long n = 0; n < 6000000; n++) {
		x = x * 1103515245u + 12345u;
		fputc("abcdefghij  \n"[(x >> 16) % 13], f);
	}
	fclose(f);
	char *xz_plain[] = { (char *)"xz", (char *)"-T2", (char *)"--block-size=512KiB", (char *)"-6",
			     (char *)"-c", in, NULL };
	char *xz_rec[] = { (char *)cli, (char *)"record", (char *)"-o", outdir, (char *)"--",
			   (char *)"xz", (char *)"-T2", (char *)"--block-size=512KiB", (char *)"-6",
			   (char *)"-c", in, NULL };
	char perfdata[4300];
	snprintf(perfdata, sizeof perfdata, "%s/perf.data", dir);
	char *xz_perf[] = { (char *)"perf", (char *)"record", (char *)"-q", (char *)"-F", (char *)"999",
			    (char *)"-g", (char *)"-o", perfdata, (char *)"--", (char *)"xz",
			    (char *)"-T2", (char *)"--block-size=512KiB", (char *)"-6", (char *)"-c",
			    in, NULL };
	double tp[50], tr[50], tf[50];
	int have_perf = 1;
	for (int r = 0; r < rounds; r++) {
		char line[64];
		tp[r] = run(xz_plain, NULL, line, sizeof line);
		tr[r] = run(xz_rec, NULL, line, sizeof line);
		tf[r] = have_perf ? run(xz_perf, NULL, line, sizeof line) : -1;
		if (tf[r] < 0)
			have_perf = 0;
		if (tp[r] < 0 || tr[r] < 0)
			return 1;
	}
	double xp = median(tp, rounds), xr = median(tr, rounds);
	printf("xz -T2 on 6 MB (CPU seconds, user + system, medians of %d interleaved rounds):\n",
	       rounds);
	printf("  plain %.3f s, stallscope record (shim, 999 Hz sampling) %.3f s: ratio %.3f\n", xp,
	       xr, xr / xp);
	if (have_perf) {
		double xf = median(tf, rounds);
		printf("  perf record -F 999 -g %.3f s: ratio %.3f (perf's own process included)\n", xf,
		       xf / xp);
	} else {
		printf("  perf record: not available here\n");
	}
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 0;
}
