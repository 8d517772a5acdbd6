/*
 * test_fsize.c - a file-size limit (RLIMIT_FSIZE) never kills the host and never
 * stops recording for good. Each part runs in a forked child, so the limit does
 * not leak into the test runner.
 *  (a) soft limit 300 KiB with max_file_size 1 MiB: the writer rotates below the
 *      limit: the process is not killed by SIGXFSZ, every segment is <= 300 KiB,
 *      everything decodes and nothing is lost;
 *  (b) soft limit 2 KiB (more than a file header, less than a block): writes fail,
 *      events are dropped and counted (events_lost_on_disk > 0, writer_healthy 0
 *      while failing), no SIGXFSZ; raising the limit again recovers
 *      (writer_healthy 1), later events decode, and a LOSS record (WRITE_FAILED)
 *      accounts for every lost event.
 * The children's main threads print nothing while a limit is in force (a write to
 * a redirected stderr over the limit would raise SIGXFSZ in a thread that does not
 * block it); they print after the limit is lifted.
 */
#include <stallscope/stallscope.h>

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "resil.h"
#include "trace_check.h"

#define NPROD 2

static void set_fsize(rlim_t soft)
{
	struct rlimit rl;
	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0, "getrlimit");
	rl.rlim_cur = soft;
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0, "setrlimit");
}

static void start(const char *dir, const char *prefix)
{
	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	cfg.output_dir = dir;
	cfg.file_prefix = prefix;
	cfg.max_file_size = 1 << 20;
	cfg.rotation_count = 64;
	cfg.rotation_period_s = UINT32_MAX;
	cfg.buffer_events = 1 << 18;
	cfg.cpu_sampling = 0;
	if (stallscope_start(&cfg) != 0) {
		set_fsize(RLIM_INFINITY);
		CHECK(0, "start: %s", stallscope_last_error());
	}
}

static void prepare(struct rs_producer *p, uint64_t tag)
{
	memset(p, 0, NPROD * sizeof *p);
	for (int i = 0; i < NPROD; i++) {
		p[i].tag = tag + (uint64_t)i;
		p[i].burst = 100;
		p[i].pause_us = 1000;
		p[i].noisy = true; /* blocks that compress badly: they reach the limit */
	}
}

static void part_a(const char *dir)
{
	struct rlimit hard;
	CHECK(getrlimit(RLIMIT_FSIZE, &hard) == 0, "getrlimit");
	if (hard.rlim_max != RLIM_INFINITY && hard.rlim_max < (300u << 10))
		SKIP("RLIMIT_FSIZE hard limit %llu is below 300 KiB", (unsigned long long)hard.rlim_max);
	set_fsize(300u << 10);
	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	start(dir, "fa");
	struct rs_producer p[NPROD];
	prepare(p, 1);
	rs_producers_start(p, NPROD);
	uint64_t t0 = rs_now();
	do {
		rs_sleep_ms(20);
		stallscope_get_stats(&s1);
	} while ((s1.bytes_written - s0.bytes_written < (2u << 20) || rs_now() - t0 < 1000000000ull) &&
		 rs_now() - t0 < 20000000000ull);
	rs_producers_stop(p, NPROD);
	int rc = stallscope_stop();
	stallscope_get_stats(&s1);
	set_fsize(RLIM_INFINITY);
	CHECK(rc == 0, "stop: %s", stallscope_last_error());

	struct rs_file f[512];
	int n = rs_list(dir, "fa", f, 512);
	uint64_t biggest = 0;
	for (int i = 0; i < n; i++)
		biggest = f[i].size > biggest ? f[i].size : biggest;
	printf("fsize (a): %d segments, %llu bytes written, biggest %llu (limit %u)\n", n,
	       (unsigned long long)(s1.bytes_written - s0.bytes_written),
	       (unsigned long long)biggest, 300u << 10);
	CHECK(n >= 4, "only %d segments for %llu bytes", n,
	      (unsigned long long)(s1.bytes_written - s0.bytes_written));
	CHECK(biggest <= (300u << 10), "a segment has %llu bytes", (unsigned long long)biggest);
	CHECK(s1.events_lost_on_disk == s0.events_lost_on_disk, "%llu events lost on disk",
	      (unsigned long long)(s1.events_lost_on_disk - s0.events_lost_on_disk));
	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "fa", false) == 0, "load");
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed && t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
	uint64_t marks = t.by_type[SS_REC_MARK], produced = 0;
	for (int i = 0; i < NPROD; i++)
		produced += atomic_load(&p[i].produced);
	CHECK(marks + t.lost / 4 >= produced, "%llu marks of %llu produced (%llu lost)",
	      (unsigned long long)marks, (unsigned long long)produced, (unsigned long long)t.lost);
	tc_free(&t);
}

static void part_b(const char *dir)
{
	struct stallscope_stats s0, s1;
	stallscope_get_stats(&s0);
	start(dir, "fb");
	set_fsize(2048);
	struct rs_producer p[NPROD];
	prepare(p, 11);
	rs_producers_start(p, NPROD);
	/* Failing: the writer reports itself unhealthy and counts what it loses. */
	int unhealthy = 0;
	uint64_t t0 = rs_now();
	while (rs_now() - t0 < 10000000000ull) {
		rs_sleep_ms(10);
		stallscope_get_stats(&s1);
		if (!s1.writer_healthy && s1.events_lost_on_disk > s0.events_lost_on_disk)
			unhealthy++;
		if (unhealthy >= 20)
			break;
	}
	uint64_t lost_while_failing = s1.events_lost_on_disk - s0.events_lost_on_disk;
	uint64_t fail_healthy = s1.writer_healthy;
	set_fsize(RLIM_INFINITY);
	uint64_t lifted_ts = rs_now();
	CHECK(unhealthy >= 20, "writer never reported unhealthy with losses under a 2 KiB limit "
	      "(healthy %llu, lost %llu)", (unsigned long long)fail_healthy,
	      (unsigned long long)lost_while_failing);
	/* Recovery. */
	int healthy = 0;
	t0 = rs_now();
	while (rs_now() - t0 < 10000000000ull) {
		rs_sleep_ms(10);
		stallscope_get_stats(&s1);
		if (s1.writer_healthy && s1.events_written > s0.events_written) {
			healthy = 1;
			break;
		}
	}
	uint64_t recovered_ms = (rs_now() - lifted_ts) / 1000000;
	rs_sleep_ms(300);
	rs_producers_stop(p, NPROD);
	CHECK(stallscope_is_recording(), "recording stopped by the failures");
	int rc = stallscope_stop();
	stallscope_get_stats(&s1);
	printf("fsize (b): %llu events lost while failing; healthy again after %llu ms\n",
	       (unsigned long long)lost_while_failing, (unsigned long long)recovered_ms);
	CHECK(healthy, "writer not healthy within 10 s of lifting the limit");
	CHECK(rc == 0, "stop: %s", stallscope_last_error());
	CHECK(s1.errors > s0.errors, "no error counted");

	struct tc_trace t;
	CHECK(tc_load_dir(&t, dir, "fb", true) == 0, "load");
	for (size_t i = 0; i < t.nsegs; i++)
		CHECK(t.segs[i].sealed && t.segs[i].damage == SS_DAMAGE_NONE, "%s: %s",
		      t.segs[i].path, t.segs[i].damage_reason);
	uint64_t later = 0;
	for (size_t i = 0; i < t.nevents; i++)
		later += t.events[i].type == SS_REC_MARK && t.events[i].ts > lifted_ts;
	uint64_t lost_stats = s1.events_lost_on_disk - s0.events_lost_on_disk;
	uint64_t lost_trace = t.lost_by_reason[SS_LOSS_WRITE_FAILED];
	printf("fsize (b): %llu marks after the limit was lifted; LOSS WRITE_FAILED %llu, stats %llu\n",
	       (unsigned long long)later, (unsigned long long)lost_trace,
	       (unsigned long long)lost_stats);
	CHECK(later > 1000, "only %llu events after recovery", (unsigned long long)later);
	CHECK(lost_trace > 0 && lost_trace == lost_stats, "trace reports %llu lost, stats %llu",
	      (unsigned long long)lost_trace, (unsigned long long)lost_stats);
	/* The gap is covered: the marks missing from the trace are events it says
	 * were lost (at least 3 events per producer iteration; an iteration split
	 * by a block boundary at a failure's start or end loses fewer, hence the
	 * slack). */
	uint64_t marks = t.by_type[SS_REC_MARK], produced = 0;
	for (int i = 0; i < NPROD; i++)
		produced += atomic_load(&p[i].produced);
	CHECK((produced - marks) * 3 <= t.lost + 8, "%llu marks missing, %llu events reported lost",
	      (unsigned long long)(produced - marks), (unsigned long long)t.lost);
	tc_free(&t);
}

static int run_child(void (*fn)(const char *), const char *dir)
{
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		fn(dir);
		fflush(NULL);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(!WIFSIGNALED(st), "child killed by signal %d%s", WTERMSIG(st),
	      WTERMSIG(st) == SIGXFSZ ? " (SIGXFSZ)" : "");
	return WEXITSTATUS(st);
}

int main(void)
{
	char *dir = tc_tmpdir("fsize");
	int a = run_child(part_a, dir);
	CHECK(a == 0 || a == 77, "part (a) failed (%d)", a);
	int b = run_child(part_b, dir);
	CHECK(b == 0, "part (b) failed (%d)", b);
	tc_rmrf(dir);
	free(dir);
	if (a == 77)
		SKIP("part (a) skipped; part (b) passed");
	printf("test_fsize: ok\n");
	return 0;
}
