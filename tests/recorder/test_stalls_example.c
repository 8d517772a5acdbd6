/*
 * test_stalls_example.c - stalls and task dumps as the example runtime produces
 * them: its steady scenario must leave no stall of a program's making at the
 * default threshold, and its leak scenario with task dumps on must dump the
 * forgotten tasks. The example's path is argv[1] (meson passes it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_check.h"

#include <dirent.h>

struct counts {
	uint64_t stall_by_kind[6];
	uint64_t stall_ends, dumps, polls;
};

static void count_dir(const char *dir, struct counts *c)
{
	memset(c, 0, sizeof *c);
	DIR *d = opendir(dir);
	CHECK(d, "opendir");
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strstr(de->d_name, ".bin"))
			continue;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		struct ss_reader *r;
		char err[256];
		CHECK(ss_reader_open_file(&r, path, NULL, NULL, err, sizeof err) == 0, "%s", err);
		struct ss_block_info b;
		struct ss_record rec;
		while (ss_reader_next_block(r, &b))
			while (ss_reader_next_record(r, &rec)) {
				if (rec.type == SS_REC_STALL) {
					c->stall_by_kind[rec.u.stall.kind < 6 ? rec.u.stall.kind : 0]++;
					printf("  stall: task %llu kind %s at %.1f ms: %.*s\n",
					       (unsigned long long)rec.u.stall.task,
					       ss_stall_kind_name(rec.u.stall.kind),
					       (double)(rec.ts - rec.u.stall.poll_ts) / 1e6,
					       (int)rec.u.stall.reason_len, rec.u.stall.reason);
				}
				c->stall_ends += rec.type == SS_REC_STALL_END;
				c->dumps += rec.type == SS_REC_TASK_DUMP;
				c->polls += rec.type == SS_REC_POLL_BEGIN;
			}
		CHECK(ss_reader_damage(r)->kind == SS_DAMAGE_NONE, "%s damaged", path);
		ss_reader_close(r);
	}
	closedir(d);
}

static void run_example(const char *exe, const char *dir, const char *scenario, int dumps)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		setenv("STALLSCOPE_ENABLED", "1", 1);
		setenv("STALLSCOPE_OUTPUT_DIR", dir, 1);
		setenv("STALLSCOPE_TASK_DUMP_ENABLED", dumps ? "1" : "0", 1);
		unsetenv("STALLSCOPE_STALL_THRESHOLD_MS"); /* the default, 10 ms */
		execl(exe, exe, "--scenario", scenario, "--duration", "1.5", (char *)NULL);
		_exit(127);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s %s failed (status %d)", exe, scenario, st);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		SKIP("no example runtime path given");
	const char *exe = argv[1];

	char *dir = tc_tmpdir("stall-steady");
	run_example(exe, dir, "steady", 0);
	struct counts c;
	count_dir(dir, &c);
	tc_rmrf(dir);
	free(dir);
	printf("steady: %llu polls, stalls running %llu blocked %llu runnable %llu unknown %llu\n",
	       (unsigned long long)c.polls, (unsigned long long)c.stall_by_kind[1],
	       (unsigned long long)c.stall_by_kind[2], (unsigned long long)c.stall_by_kind[3],
	       (unsigned long long)c.stall_by_kind[4]);
	CHECK(c.polls > 1000, "only %llu polls", (unsigned long long)c.polls);
	/* Steady's polls take microseconds. A capture that finds the thread runnable
	 * but not running is the machine's doing (a loaded VM), not the program's;
	 * one that finds it running or blocked would be a false stall. */
	CHECK(c.stall_by_kind[1] == 0 && c.stall_by_kind[2] == 0,
	      "steady scenario produced running/blocked stalls");
	CHECK(c.dumps == 0, "task dumps written with the feature off");

	dir = tc_tmpdir("stall-leak");
	run_example(exe, dir, "leak", 1);
	count_dir(dir, &c);
	tc_rmrf(dir);
	free(dir);
	printf("leak with task dumps: %llu polls, %llu task dumps\n", (unsigned long long)c.polls,
	       (unsigned long long)c.dumps);
	/* ~100 tasks a second are forgotten for good: each must be dumped. */
	CHECK(c.dumps >= 100, "only %llu task dumps", (unsigned long long)c.dumps);
	printf("PASS\n");
	return 0;
}
