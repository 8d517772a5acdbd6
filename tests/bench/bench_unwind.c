/*
 * bench_unwind.c - what whole stacks cost a program built without frame pointers.
 *
 * The workload is tests/unwind/nofp_chain (-O2 -fomit-frame-pointer): 2 worker
 * threads doing a fixed amount of CPU-bound work under a known call chain, with
 * few hooks (one poll per 50 passes of the chain). Each run is a child process;
 * its CPU time (user + system, every thread of it: the workers, the kernel's
 * stack copies in them, the writer's unwinding) comes from wait4(). The stall
 * watchdog is off (every poll here is long enough to be captured, and the
 * captures would be measured instead of the samples). Runs of
 * every configuration are interleaved, ROUNDS times, and medians compared:
 *
 *   off     STALLSCOPE_ENABLED unset: the baseline
 *   hooks   recording without CPU sampling (STALLSCOPE_CPU_SAMPLING=0): what the
 *           hooks and the writer cost alone
 *   dwarf   recording at 999 Hz with STALLSCOPE_UNWIND=dwarf: the ratio to off is
 *           what the host pays (target <= 1.02); the segments' bytes (zstd) per
 *           CPU sample (target <= 256)
 *   auto    the same with STALLSCOPE_UNWIND=auto
 *   fp      the same with STALLSCOPE_UNWIND=fp (short stacks here, for scale)
 *   perf    `perf record -F 999 --call-graph dwarf` (8 KiB stack copies, like
 *           ours) of the same work: its CPU ratio (perf itself included) and
 *           perf.data bytes per sample, the peer's figures
 *   floor   `perf record -F 999 -e cpu-clock --per-thread` without call chains:
 *           what the kernel's sampling interrupts alone cost on this machine (a
 *           VM makes them dear), the floor under any 999 Hz sampler
 *
 * Usage: bench_unwind NOFP_CHAIN [POLLS [ROUNDS]]     (120 polls per worker, 5)
 * Figures only: exits 0 whatever they are (1 when something fails to run).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "segment_reader.h"

extern char **environ;

enum { OFF, HOOKS, DWARF, AUTO, FP, PERF, FLOOR, NCONF };
static const char *const conf_name[NCONF] = { "off", "hooks", "dwarf", "auto", "fp", "perf", "floor" };

static const char *prog, *perf;
static char tmp[256], polls[32];

/* Runs one configuration; returns its CPU seconds, -1 on failure. */
static double run(int conf, const char *out)
{
	char *envp[300];
	size_t n = 0;
	for (char **e = environ; *e && n < 280; e++)
		if (strncmp(*e, "STALLSCOPE_", 11) != 0)
			envp[n++] = *e;
	char dir[600], perf_out[600];
	snprintf(dir, sizeof dir, "STALLSCOPE_OUTPUT_DIR=%s", out);
	snprintf(perf_out, sizeof perf_out, "%s/perf.data", out);
	if (conf != OFF && conf != PERF && conf != FLOOR) {
		envp[n++] = (char *)"STALLSCOPE_ENABLED=1";
		envp[n++] = dir;
		envp[n++] = (char *)"STALLSCOPE_SAMPLE_HZ=999";
		/* Samples only: every poll here is long, and stall captures (a signal
		 * and /proc reads each) would be measured instead. */
		envp[n++] = (char *)"STALLSCOPE_STALL_THRESHOLD_MS=0";
		envp[n++] = conf == DWARF ? (char *)"STALLSCOPE_UNWIND=dwarf"
			  : conf == AUTO ? (char *)"STALLSCOPE_UNWIND=auto" : (char *)"STALLSCOPE_UNWIND=fp";
		if (conf == HOOKS)
			envp[n++] = (char *)"STALLSCOPE_CPU_SAMPLING=0";
	}
	envp[n] = NULL;
	char *argv_prog[] = { (char *)prog, (char *)"work", polls, (char *)"2", NULL };
	char *argv_perf[] = { (char *)perf, (char *)"record", (char *)"-q", (char *)"-F", (char *)"999",
			      (char *)"--call-graph", (char *)"dwarf,8192", (char *)"-o", perf_out, (char *)"--",
			      (char *)prog, (char *)"work", polls, (char *)"2", NULL };
	char *argv_floor[] = { (char *)perf, (char *)"record", (char *)"-q", (char *)"-F", (char *)"999",
			       (char *)"-e", (char *)"cpu-clock", (char *)"--per-thread", (char *)"-o", perf_out,
			       (char *)"--", (char *)prog, (char *)"work", polls, (char *)"2", NULL };
	char **argv = conf == PERF ? argv_perf : conf == FLOOR ? argv_floor : argv_prog;
	mkdir(out, 0755);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	pid_t pid;
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		fprintf(stderr, "bench_unwind: cannot run %s: %s\n", argv[0], strerror(rc));
		return -1;
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_unwind: %s (%s) failed\n", argv[0], conf_name[conf]);
		return -1;
	}
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

struct disk {
	uint64_t bytes, cpu_samples, stacks, truncated;
};

static struct disk segments(const char *dir)
{
	struct disk r = { 0 };
	DIR *d = opendir(dir);
	if (!d)
		return r;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strstr(de->d_name, ".bin"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct stat sb;
		if (stat(path, &sb) == 0)
			r.bytes += (uint64_t)sb.st_size;
		struct ss_reader *rd;
		char err[256];
		if (ss_reader_open_file(&rd, path, NULL, NULL, err, sizeof err) != 0)
			continue;
		struct ss_block_info b;
		struct ss_record rec;
		while (ss_reader_next_block(rd, &b))
			while (ss_reader_next_record(rd, &rec)) {
				if (rec.type == SS_REC_SAMPLE && rec.u.sample.kind == SS_SAMPLE_KIND_CPU)
					r.cpu_samples++;
				if (rec.type == SS_REC_STACK) {
					r.stacks++;
					r.truncated += (rec.u.stack.flags & SS_STACK_F_TRUNCATED) != 0;
				}
			}
		ss_reader_close(rd);
	}
	closedir(d);
	return r;
}

/* perf.data's size and its sample count (perf report --stats). */
static struct disk perf_data(const char *dir)
{
	struct disk r = { 0 };
	char path[600], cmd[1400];
	snprintf(path, sizeof path, "%s/perf.data", dir);
	struct stat sb;
	if (stat(path, &sb) != 0)
		return r;
	r.bytes = (uint64_t)sb.st_size;
	snprintf(cmd, sizeof cmd, "'%s' report -i '%s' --stats 2>/dev/null", perf, path);
	FILE *p = popen(cmd, "r");
	char line[512];
	while (p && fgets(line, sizeof line, p)) {
		unsigned long long v;
		if (sscanf(line, " SAMPLE events: %llu", &v) == 1)
			r.cpu_samples = v;
	}
	if (p)
		pclose(p);
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_unwind NOFP_CHAIN [POLLS [ROUNDS]]\n");
		return 1;
	}
	prog = argv[1];
	snprintf(polls, sizeof polls, "%s", argc > 2 ? argv[2] : "120");
	int rounds = argc > 3 ? atoi(argv[3]) : 5;
	if (rounds < 1 || rounds > 50)
		rounds = 5;
	perf = access("/usr/bin/perf", X_OK) == 0 ? "/usr/bin/perf" : NULL;
	snprintf(tmp, sizeof tmp, "/tmp/bench_unwind.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	double cpu[NCONF][50];
	struct disk disk[NCONF] = { 0 };
	printf("bench_unwind: %s work %s 2, %d rounds of every configuration, interleaved\n", prog, polls,
	       rounds);
	for (int r = 0; r < rounds; r++) {
		/* Alternate the order, so drift on the machine hits every one alike. */
		for (int k = 0; k < NCONF; k++) {
			int c = r % 2 ? NCONF - 1 - k : k;
			if ((c == PERF || c == FLOOR) && !perf) {
				cpu[c][r] = 0;
				continue;
			}
			char out[400];
			snprintf(out, sizeof out, "%s/%s-%d", tmp, conf_name[c], r);
			cpu[c][r] = run(c, out);
			if (cpu[c][r] < 0)
				return 1;
			struct disk d = c == PERF || c == FLOOR ? perf_data(out) : segments(out);
			disk[c].bytes += d.bytes;
			disk[c].cpu_samples += d.cpu_samples;
			disk[c].stacks += d.stacks;
			disk[c].truncated += d.truncated;
			rm_dir(out);
		}
		printf("  round %d: off %.3f s, hooks %.3f s, dwarf %.3f s, auto %.3f s, fp %.3f s, perf %.3f s, "
		       "floor %.3f s CPU\n", r + 1, cpu[OFF][r], cpu[HOOKS][r], cpu[DWARF][r], cpu[AUTO][r],
		       cpu[FP][r], cpu[PERF][r], cpu[FLOOR][r]);
	}
	rmdir(tmp);
	double med[NCONF];
	for (int c = 0; c < NCONF; c++)
		med[c] = median(cpu[c], rounds);
	printf("CPU (median of %d, user + system of the whole process):\n", rounds);
	printf("  off   %.3f s (baseline)\n", med[OFF]);
	for (int c = HOOKS; c < NCONF; c++) {
		if ((c == PERF || c == FLOOR) && !perf) {
			printf("  %-5s not run: /usr/bin/perf missing (Debian package linux-perf)\n", conf_name[c]);
			continue;
		}
		printf("  %-5s %.3f s, ratio %.4f to off (%+.2f%%)%s\n", conf_name[c], med[c], med[c] / med[OFF],
		       100.0 * (med[c] / med[OFF] - 1),
		       c == PERF ? ", perf record's own CPU included"
		       : c == FLOOR ? ", the kernel's 999 Hz sampling alone (perf, no call chains)" : "");
	}
	printf("  unwinding alone: dwarf / fp %.4f, auto / fp %.4f (the same sampler, copies and CFI on top)\n",
	       med[DWARF] / med[FP], med[AUTO] / med[FP]);
	printf("disk per CPU sample (all rounds):\n");
	for (int c = DWARF; c < FLOOR; c++) {
		if (c == PERF && !perf)
			continue;
		struct disk *d = &disk[c];
		printf("  %-5s %llu samples, %llu bytes: %.1f bytes per sample", conf_name[c],
		       (unsigned long long)d->cpu_samples, (unsigned long long)d->bytes,
		       d->cpu_samples ? (double)d->bytes / (double)d->cpu_samples : 0.0);
		if (c == PERF)
			printf(" (perf.data)\n");
		else
			printf(" (segments, zstd, hooks and metadata included; %llu stacks, %llu truncated)\n",
			       (unsigned long long)d->stacks, (unsigned long long)d->truncated);
	}
	if (perf && disk[DWARF].cpu_samples && disk[PERF].cpu_samples)
		printf("  perf.data / dwarf segments per sample: %.1fx\n",
		       ((double)disk[PERF].bytes / (double)disk[PERF].cpu_samples) /
			       ((double)disk[DWARF].bytes / (double)disk[DWARF].cpu_samples));
	return 0;
}
