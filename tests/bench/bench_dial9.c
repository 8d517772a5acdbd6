/*
 * bench_dial9.c - import speed of dial9 traces against stallscope's own
 * segments, in one run: the same workload (two workers; per task a spawn, a
 * poll that wakes it, a second poll, its end, a park and an unpark, with the
 * local queue depth changing at every task) written once as a native segment
 * (tests/fuzz/segment_builder.c) and once as a dial9 trace the way dial9
 * writes it (one stream per thread batch of about 1 MiB, batches of the two
 * workers overlapping in time; tests/fuzz/d9_builder.c), raw and gzip. Each is
 * imported into a new database by a child process; rounds interleave the three
 * formats, and the figures are medians of the child's CPU time (user + system,
 * both import threads), so load on the machine moves them less than wall time.
 *
 * Printed: events per CPU second of each, as each format counts its events
 * (a native iteration is 10 records, a dial9 one 9 events: the queue depth
 * rides on the poll), tasks (iterations) per CPU second, and the ratios of
 * native to dial9 on both counts.
 *
 * Usage: bench_dial9 [TASKS] [ROUNDS] [--keep]   (400000 tasks, i.e. ~4M events; 3 rounds;
 * --keep leaves the three input files and says where)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "d9_builder.h"
#include "import.h"
#include "segment_builder.h"

#define T0 1000000000ull
#define STEP 10000ull    /* ns between a worker's tasks */
#define PER_BATCH 12000u /* tasks of one dial9 batch: about 1 MiB */

static uint64_t tasks = 400000;

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* The times of worker w's task i: spawn, poll 1 begin, wake, poll 1 end, poll
 * 2 begin and end, terminate, park, unpark. */
static uint64_t at(int w, uint64_t i, int k)
{
	return T0 + i * STEP + (uint64_t)w * (STEP / 2) + (uint64_t)k * 500;
}

static void native(const char *path)
{
	struct sb_header h = { .session_id = 4242, .pid = 1, .exe = "/bench", .hostname = "bench", .boot_id = "b",
			       .start_ts = T0, .anchor_mono_ns = T0, .anchor_real_ns = 1700000000000000000ull };
	struct sb b;
	sb_init(&b, &h);
	const uint64_t per_block = 2048;
	for (uint64_t first = 0; first < tasks / 2; first += per_block) {
		sb_begin_block(&b);
		if (first == 0) {
			sb_string(&b, 1, "bench");
			sb_string(&b, 2, "src/main.rs");
			sb_location(&b, 3, 2, 10, 0);
			sb_thread_def(&b, 1, 101, "worker-0", 1, 0, SS_THREAD_F_WORKER);
			sb_thread_def(&b, 2, 102, "worker-1", 1, 1, SS_THREAD_F_WORKER);
		}
		for (int w = 0; w < 2; w++) {
			uint64_t end = first + per_block < tasks / 2 ? first + per_block : tasks / 2;
			sb_thread(&b, (uint64_t)w + 1, at(w, first, 0));
			for (uint64_t i = first; i < end; i++) {
				uint64_t task = (uint64_t)w << 40 | (i + 1);
				sb_event(&b, SS_REC_SPAWN, at(w, i, 0), 2, task, (uint64_t)3);
				sb_event(&b, SS_REC_POLL_BEGIN, at(w, i, 1), 2, task, (uint64_t)3);
				sb_event(&b, SS_REC_QUEUE, at(w, i, 1), 2, i & 63, (uint64_t)3);
				sb_event(&b, SS_REC_WAKE, at(w, i, 2), 1, task);
				sb_event(&b, SS_REC_POLL_END, at(w, i, 3), 0);
				sb_event(&b, SS_REC_POLL_BEGIN, at(w, i, 4), 2, task, (uint64_t)3);
				sb_event(&b, SS_REC_POLL_END, at(w, i, 5), 0);
				sb_event(&b, SS_REC_TERMINATE, at(w, i, 6), 1, task);
				sb_event(&b, SS_REC_PARK, at(w, i, 7), 0);
				sb_event(&b, SS_REC_UNPARK, at(w, i, 8), 0);
			}
		}
		sb_end_block(&b, true);
	}
	sb_footer(&b, SS_SEALED_WRITER, 0);
	write_file(path, b.buf, b.len);
	sb_free(&b);
}

static void dial9(const char *raw, const char *gz)
{
	struct d9b b = { 0 };
	struct d9t t;
	d9t_begin(&t, &b, 1);
	d9t_clock_sync(&t, T0, 1700000000000000000ull);
	static const char *k[] = { "runtime.bench" }, *v[] = { "0,1" };
	d9t_metadata(&t, T0, 1, k, v);
	d9t_end(&t);
	uint32_t base = 10;
	for (uint64_t first = 0; first < tasks / 2; first += PER_BATCH) {
		uint64_t end = first + PER_BATCH < tasks / 2 ? first + PER_BATCH : tasks / 2;
		for (int w = 0; w < 2; w++) {
			d9t_begin(&t, &b, base += 10);
			for (uint64_t i = first; i < end; i++) {
				uint64_t task = (uint64_t)w << 40 | (i + 1);
				d9t_spawn(&t, at(w, i, 0), task, "src/main.rs:10:5", true);
				d9t_poll_start(&t, at(w, i, 1), (uint64_t)w, (uint8_t)(i & 63), task, "src/main.rs:10:5");
				d9t_wake(&t, at(w, i, 2), task, task, (uint8_t)w);
				d9t_poll_end(&t, at(w, i, 3), (uint64_t)w);
				d9t_poll_start(&t, at(w, i, 4), (uint64_t)w, (uint8_t)(i & 63), task, "src/main.rs:10:5");
				d9t_poll_end(&t, at(w, i, 5), (uint64_t)w);
				d9t_terminate(&t, at(w, i, 6), task);
				d9t_park(&t, at(w, i, 7), (uint64_t)w, 0, i * 1000, 101 + (uint32_t)w);
				d9t_unpark(&t, at(w, i, 8), (uint64_t)w, (uint8_t)(i & 63), i * 1000 + 10, 0,
					   101 + (uint32_t)w);
			}
			d9t_end(&t);
		}
	}
	write_file(raw, b.buf, b.len);
	uint8_t *z;
	size_t zl;
	d9b_gzip(b.buf, b.len, &z, &zl);
	write_file(gz, z, zl);
	printf("dial9 trace: %.1f MiB raw, %.1f MiB gzip (%.1f bytes an event raw)\n", (double)b.len / (1 << 20),
	       (double)zl / (1 << 20), (double)b.len / (double)(tasks * 9));
	free(z);
	d9b_free(&b);
}

struct run {
	double cpu, wall;
	uint64_t events;
};

/* Imports path into a new database db in a child; its CPU time and events. */
static int import(const char *path, const char *db, struct run *out)
{
	unlink(db);
	int fd[2];
	if (pipe(fd) != 0)
		return -1;
	double t0 = clock_s(CLOCK_MONOTONIC);
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		struct ss_import_options o = { .db_path = db, .quiet = true };
		const char *paths[1] = { path };
		struct ss_import_result res;
		int rc = ss_import_paths(&o, paths, 1, &res);
		if (write(fd[1], &res.events, sizeof res.events) != (ssize_t)sizeof res.events)
			rc = 3;
		_exit(rc);
	}
	close(fd[1]);
	struct rusage ru;
	int status = 0;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || read(fd[0], &out->events, sizeof out->events) <= 0) {
		close(fd[0]);
		return -1;
	}
	close(fd[0]);
	out->wall = clock_s(CLOCK_MONOTONIC) - t0;
	out->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		   (double)ru.ru_stime.tv_usec / 1e6;
	unlink(db);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int rounds = 3, pos = 0;
	bool keep = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--keep") == 0)
			keep = true;
		else if (pos++ == 0)
			tasks = strtoull(argv[i], NULL, 10);
		else
			rounds = atoi(argv[i]);
	}
	if (tasks < 2 || rounds < 1 || rounds > 50) {
		fprintf(stderr, "usage: bench_dial9 [TASKS] [ROUNDS]\n");
		return 2;
	}
	char dir[] = "/tmp/stallscope-bench-dial9-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char seg[320], raw[320], gz[320], db[320], d1[256], d2[256], d3[256];
	snprintf(d1, sizeof d1, "%s/native", dir);
	snprintf(d2, sizeof d2, "%s/raw", dir);
	snprintf(d3, sizeof d3, "%s/gz", dir);
	mkdir(d1, 0700);
	mkdir(d2, 0700);
	mkdir(d3, 0700);
	snprintf(seg, sizeof seg, "%s/bench.0.bin", d1);
	snprintf(raw, sizeof raw, "%s/trace.0.bin", d2);
	snprintf(gz, sizeof gz, "%s/trace.0.bin.gz", d3);
	snprintf(db, sizeof db, "%s/bench.db", dir);
	native(seg);
	dial9(raw, gz);
	const char *name[3] = { "native segments", "dial9 raw", "dial9 gzip" };
	const char *path[3] = { seg, raw, gz };
	double cpu[3][50], wall[3][50];
	uint64_t events[3] = { 0 };
	for (int r = 0; r < rounds; r++) {
		for (int f = 0; f < 3; f++) {
			struct run x;
			if (import(path[f], db, &x) != 0) {
				fprintf(stderr, "bench_dial9: importing %s failed\n", path[f]);
				return 1;
			}
			cpu[f][r] = x.cpu;
			wall[f][r] = x.wall;
			events[f] = x.events;
		}
	}
	double c[3], rate[3], per_task[3];
	printf("%llu tasks on 2 workers, %d interleaved rounds, medians of each import's CPU time:\n",
	       (unsigned long long)tasks, rounds);
	for (int f = 0; f < 3; f++) {
		c[f] = median(cpu[f], rounds);
		double w = median(wall[f], rounds);
		rate[f] = (double)events[f] / c[f];
		per_task[f] = (double)tasks / c[f];
		printf("  %-16s %9llu events  %6.2f s CPU (%5.2f s wall)  %5.2fM events/CPU-s  %5.2fM tasks/CPU-s\n",
		       name[f], (unsigned long long)events[f], c[f], w, rate[f] / 1e6, per_task[f] / 1e6);
	}
	printf("native / dial9 raw:  %.2fx per event, %.2fx per task\n", rate[0] / rate[1], per_task[0] / per_task[1]);
	printf("native / dial9 gzip: %.2fx per event, %.2fx per task\n", rate[0] / rate[2], per_task[0] / per_task[2]);
	if (keep) {
		printf("inputs kept in %s\n", dir);
		return 0;
	}
	unlink(seg);
	unlink(raw);
	unlink(gz);
	rmdir(d1);
	rmdir(d2);
	rmdir(d3);
	rmdir(dir);
	return 0;
}
