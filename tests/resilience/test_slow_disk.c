/*
 * test_slow_disk.c - a slow disk costs the hooks-only recorder a thread, not
 * its stall captures.
 *
 * Hooks only, the writer's thread also takes the stall watchdog's looks; a
 * write that holds that thread holds the looks, and workers stalling on the
 * same slow disk are the stalls most worth explaining. The recorder's block
 * writes and syncs go through io_spy.c, which delays them. A worker spins in
 * polls of 40 ms, 5 ms apart, at a 10 ms threshold: each is captured if a look
 * comes while it is 10 to 40 ms old.
 *
 *   slow writes  every block write takes 150 ms from the start: after the
 *                first one the looks are on a thread of their own (ss-watchdog)
 *                for the rest of the session, and every poll begun after that
 *                write returned is captured. (With the looks held by the
 *                writes, most are not: the writes come back to back.) When
 *                the writer had waited 145 ms for a CPU by the first write's
 *                end, the recorder cannot tell that write slow, and the polls
 *                are judged from the second one.
 *   slow seal    rotation every second and a seal's fdatasync takes 150 ms:
 *                the looks move before the sync, so the polls during it are
 *                captured too (held, the two or more polls inside 150 ms
 *                would not be), and they stay moved: the sync was slow.
 *   fast seal    the same with a fast disk (and a threshold of 200 ms, so a
 *                loaded machine's sync still counts as fast): the looks move
 *                for the sync (a thread ss-watchdog exists while it runs) and
 *                come back after it: one recorder thread again.
 *   no thread    every block write takes 30 ms and the ss-watchdog thread
 *                cannot be made (pthread_create refused on the writer's
 *                thread, io_spy.c): the host is not told but in one log line
 *                and stallscope_errors_total, the looks stay on the writer's
 *                thread (no ss-watchdog, the gauge 0) and go on there: polls
 *                begun after the refusal are still captured (between the
 *                writes: most, not all). The next session makes its thread.
 *   slow start   the first segment file, created by stallscope_start on the
 *                caller's thread, takes 20 ms to open: the looks still move
 *                (ss-watchdog appears), but by the writer's thread: the
 *                caller's timer slack is what it was (the hand-over sets the
 *                slack of the thread it runs on).
 *
 * On a loaded machine a missed poll is left out only where the looks' thread
 * was kept waiting for a CPU (EXCUSE_NS below); the scenario runs again (3
 * times at most) only when that left fewer than 10 polls to judge.
 */
#include <stallscope/stallscope.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "io_spy.h"
#include "resil.h"
#include "trace_check.h"

#define TASK0 5000u
#define MAXPOLL 128

/* A loaded machine may keep the thread that takes the looks waiting for a
 * CPU, and a poll then ends before any look sees it: that is load, not the
 * looks held by a write. With the looks every threshold T (10 ms) while long
 * polls are around, and at the poll's T mark once it is seen, a poll of 40 ms
 * that no look caught between its 10 and 40 ms marks had the looking thread
 * off its times by 20 ms at least (30 ms without a look, less a period). So a
 * missed poll is left out when, at its end, the looking thread was runnable
 * (R: not asleep in a write or a sync, as held looks are) and it waited that
 * long for a CPU from the poll's begin to its next turn on a CPU (schedstat
 * adds a wait only then: one still going on at the poll's end is not in it
 * yet). */
#define EXCUSE_NS 20000000u
#define ATTEMPTS 3

/* The run-queue waits so far of the writer's thread and of ss-watchdog (0
 * until it exists), whether ss-watchdog existed, and the looking thread's
 * state and turns on a CPU so far. */
struct rq_now {
	uint64_t writer, watchdog, slices;
	int own;
	char state, wchan[31];
};

static struct {
	uint64_t begun[MAXPOLL]; /* CLOCK_MONOTONIC at each poll's begin */
	uint8_t captured[MAXPOLL];
	struct rq_now rq[2 * MAXPOLL + 1]; /* at each poll's begin and end, then once more */
	uint32_t n;
} P;

static char writer_dir[64], watchdog_dir[64];

static uint64_t rq_of(const char *dir, uint64_t *slices)
{
	char path[96];
	snprintf(path, sizeof path, "%s/schedstat", dir);
	return dir[0] ? io_spy_schedstat(path, NULL, slices) : 0;
}

static void read_line(const char *dir, const char *file, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(buf, (int)len, f))
		buf[0] = 0;
	if (f)
		fclose(f);
}

/* The looking thread's state and wait channel, read at the end of a poll
 * before it ends: asleep while a poll past its due time is open and not
 * captured, it is not waiting for a CPU. */
static void looker_state(struct rq_now *r)
{
	char buf[512];
	const char *dir = watchdog_dir[0] ? watchdog_dir : writer_dir;
	read_line(dir, "stat", buf, sizeof buf);
	const char *p = strrchr(buf, ')');
	r->state = p && p[1] == ' ' ? p[2] : '?';
	read_line(dir, "wchan", r->wchan, sizeof r->wchan);
}

static struct rq_now rq_read(void)
{
	if (!writer_dir[0])
		io_spy_thread_dir("ss-writer", writer_dir, sizeof writer_dir);
	/* An ss-watchdog made for a seal's sync is joined after it: its task
	 * directory goes, and the looks are the writer's again. */
	if (watchdog_dir[0] && access(watchdog_dir, F_OK) != 0)
		watchdog_dir[0] = 0;
	if (!watchdog_dir[0])
		io_spy_thread_dir("ss-watchdog", watchdog_dir, sizeof watchdog_dir);
	struct rq_now r = { .own = watchdog_dir[0] != 0 };
	uint64_t ws = 0, ds = 0;
	r.writer = rq_of(writer_dir, &ws);
	r.watchdog = rq_of(watchdog_dir, &ds);
	r.slices = r.own ? ds : ws;
	return r;
}

/* Whether poll i's miss is the looking thread's wait for a CPU (above):
 * ss-watchdog's once it exists, else the writer's and (the looks moved
 * meanwhile) what the new ss-watchdog waited since it was made. */
static int excused(uint32_t i, uint64_t *waited)
{
	const struct rq_now *a = &P.rq[2 * i], *e = &P.rq[2 * i + 1], *b = e;
	for (uint32_t k = 2 * i + 2; k <= 2 * P.n && b->slices <= e->slices; k++)
		b = &P.rq[k];
	uint64_t d = b->watchdog > a->watchdog ? b->watchdog - a->watchdog : 0;
	uint64_t w = b->writer > a->writer ? b->writer - a->writer : 0;
	*waited = a->own ? d : w + d;
	return e->state == 'R' && *waited >= EXCUSE_NS;
}

static _Atomic int sync_saw_watchdog;

static void sync_hook(void)
{
	if (io_spy_has_thread("ss-watchdog"))
		atomic_store(&sync_saw_watchdog, 1);
}

static void first_capture(const struct ss_record *rec, void *ctx)
{
	(void)ctx;
	if (rec->type == SS_REC_STALL && rec->u.stall.index == 0 && rec->u.stall.task >= TASK0 &&
	    rec->u.stall.task < TASK0 + MAXPOLL)
		P.captured[rec->u.stall.task - TASK0] = 1;
}

/* Records with the writer's I/O as io_spy is set, polls of 40 ms for
 * run_ms; each poll's first capture noted in P. threads_at_end: whether
 * ss-watchdog ran at the end of the polls. */
static void record(const char *tag, uint32_t threshold_ms, uint32_t rotation_s, unsigned run_ms,
		   int *watchdog_at_end)
{
	char *dir = tc_tmpdir(tag);
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "sd", threshold_ms);
	cfg.rotation_period_s = rotation_s;
	cfg.rotation_count = 64;
	cfg.unwind = STALLSCOPE_UNWIND_FP;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	memset(&P, 0, sizeof P);
	writer_dir[0] = watchdog_dir[0] = 0;
	uint32_t loc = stallscope_location("test_slow_disk.c", 1, "spin");
	stallscope_worker_begin("slow", 1);
	volatile uint64_t x = 1;
	uint64_t t0 = rs_now();
	while (rs_now() - t0 < (uint64_t)run_ms * 1000000u && P.n < MAXPOLL) {
		P.rq[2 * P.n] = rq_read();
		P.begun[P.n] = rs_now();
		stallscope_poll_begin(TASK0 + P.n, loc);
		uint64_t end = rs_now() + 40000000u;
		while (rs_now() < end)
			for (int i = 0; i < 1000; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
		struct rq_now at_end;
		looker_state(&at_end);
		stallscope_poll_end();
		P.rq[2 * P.n + 1] = rq_read();
		P.rq[2 * P.n + 1].state = at_end.state;
		memcpy(P.rq[2 * P.n + 1].wchan, at_end.wchan, sizeof at_end.wchan);
		P.n++;
		rs_sleep_ms(5);
	}
	/* The looking thread's next turn on a CPU, for the last poll's excuse:
	 * its wait is in its schedstat from then (2 s at most). */
	uint64_t t1 = rs_now();
	do {
		rs_sleep_ms(5);
		P.rq[2 * P.n] = rq_read();
	} while (P.n && P.rq[2 * P.n].slices <= P.rq[2 * P.n - 1].slices &&
		 rs_now() - t1 < 2000000000u);
	stallscope_worker_end();
	*watchdog_at_end = io_spy_has_thread("ss-watchdog");
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	CHECK(tc_each_record(dir, "sd", first_capture, NULL) > 0, "read %s", dir);
	tc_rmrf(dir);
	free(dir);
}

/* Polls begun at or after from (0: all) that have no capture, less those
 * the looking thread's waits for a CPU explain (*left_out); *of: how many
 * were judged (begun then, not left out). */
static uint32_t missed(uint64_t from, uint32_t *of, uint32_t *left_out)
{
	uint32_t m = 0;
	*of = *left_out = 0;
	for (uint32_t i = 0; i < P.n; i++) {
		if (P.begun[i] < from)
			continue;
		(*of)++;
		uint64_t waited;
		if (P.captured[i])
			continue;
		int load = excused(i, &waited);
		printf("    poll %u at %.1f ms not captured: the looks' thread %c (%s) at its end, "
		       "%.1f ms waiting for a CPU meanwhile%s\n", i,
		       (double)(P.begun[i] - P.begun[0]) / 1e6, P.rq[2 * i + 1].state,
		       P.rq[2 * i + 1].wchan, (double)waited / 1e6, load ? ": left out" : "");
		*left_out += load;
		m += !load;
	}
	*of -= *left_out;
	return m;
}

/* The recorder's log lines go to stderr: into a file for a session (no
 * thread), given back by log_back, and at exit too, so that a check failing
 * meanwhile still shows its message. */
static char log_path[] = "/tmp/stallscope-nothread-log-XXXXXX";
static int log_saved = -1;

/* stderr back; what went to the file (malloc'd, NULL when none). */
static char *log_back(void)
{
	if (log_saved < 0)
		return NULL;
	fflush(stderr);
	dup2(log_saved, 2);
	close(log_saved);
	log_saved = -1;
	size_t len;
	char *text = rs_read_file(log_path, &len);
	unlink(log_path);
	return text;
}

static void log_back_at_exit(void)
{
	char *text = log_back();
	if (text)
		fputs(text, stderr);
	free(text);
}

/* A session whose writes take 30 ms while the writer's thread cannot make
 * threads (no thread, at the top). */
static void no_thread(void)
{
	int fd = mkstemp(log_path);
	CHECK(fd >= 0, "mkstemp");
	long long errors0 = rs_metric("stallscope_errors_total");
	uint64_t refused0 = atomic_load(&io_spy.threads_refused);
	fflush(stderr);
	log_saved = dup(2);
	CHECK(log_saved >= 0 && dup2(fd, 2) == 2, "dup2");
	close(fd);
	atexit(log_back_at_exit);
	atomic_store(&io_spy.refuse_threads, 1);
	atomic_store(&io_spy.write_delay_ns, 30000000u);
	atomic_store(&io_spy.first_write_end, 0);
	long long looks0 = rs_metric("stallscope_watchdog_looks_total");
	int at_end;
	record("nothread", 10, UINT32_MAX, 1500, &at_end);
	long long looks = rs_metric("stallscope_watchdog_looks_total") - looks0;
	long long gauge = rs_metric("stallscope_watchdog_own_thread");
	atomic_store(&io_spy.write_delay_ns, 0);
	atomic_store(&io_spy.refuse_threads, 0);
	char *text = log_back();
	CHECK(text, "read %s", log_path);
	fputs(text, stderr);
	const char *line = "cannot start a thread for the stall watchdog";
	int lines = 0;
	for (const char *q = text; (q = strstr(q, line)) != NULL; q += strlen(line))
		lines++;
	free(text);
	uint64_t refused = atomic_load(&io_spy.threads_refused) - refused0;
	long long errors = rs_metric("stallscope_errors_total") - errors0;
	uint64_t first = atomic_load(&io_spy.first_write_end);
	uint32_t after = 0, captured = 0;
	for (uint32_t i = 0; i < P.n; i++) {
		after += first && P.begun[i] >= first;
		captured += first && P.begun[i] >= first && P.captured[i];
	}
	printf("  %llu thread creations refused; %d log lines naming it; stallscope_errors_total "
	       "+%lld; ss-watchdog at the end: %d, stallscope_watchdog_own_thread %lld; %lld looks; "
	       "%u of %u polls begun after the first slow write captured\n",
	       (unsigned long long)refused, lines, errors, at_end, gauge, looks, captured, after);
	CHECK(refused >= 1, "the recorder never asked for an ss-watchdog thread with writes of 30 ms");
	CHECK(lines == 1, "%d log lines say the watchdog's thread could not be made (%llu refusals): "
	      "one is due", lines, (unsigned long long)refused);
	CHECK(errors == 1, "stallscope_errors_total grew by %lld for a thread that could not be "
	      "made", errors);
	CHECK(!at_end && gauge == 0, "ss-watchdog at the end %d, gauge %lld: the looks are "
	      "on the writer's thread", at_end, gauge);
	CHECK(after >= 10, "only %u polls after the first slow write", after);
	CHECK(captured * 2 >= after, "only %u of %u polls after the first slow write captured: the "
	      "looks did not go on on the writer's thread", captured, after);
}

/* Start with the first segment's creation delayed on the caller's thread. */
static void slow_start(void)
{
	char *dir = tc_tmpdir("slowstart");
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "sd", 10);
	int slack0 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	atomic_store(&io_spy.start_open_delay_ns, 20000000u);
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	int slack1 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	uint64_t t0 = rs_now();
	while (!io_spy_has_thread("ss-watchdog") && rs_now() - t0 < 5000000000u)
		rs_sleep_ms(1);
	int made = io_spy_has_thread("ss-watchdog");
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	int slack2 = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	printf("  caller's timer slack %d ns -> %d ns (after stop %d ns); ss-watchdog: %d\n",
	       slack0, slack1, slack2, made);
	CHECK(atomic_load(&io_spy.start_open_delay_ns) == 0, "start's segment file not delayed");
	CHECK(slack1 == slack0 && slack2 == slack0, "the caller's timer slack went from %d ns to "
	      "%d ns (%d ns after stop)", slack0, slack1, slack2);
	CHECK(made, "no ss-watchdog within 5 s of a start whose segment creation took 20 ms");
	tc_rmrf(dir);
	free(dir);
}

int main(void)
{
	int at_end;
	uint32_t of, miss, left_out;

	printf("slow start\n");
	slow_start();

	/* Each runs again (ATTEMPTS at most) only when so many misses were left
	 * out that fewer than 10 polls were judged; a miss not left out fails. */
	printf("no thread\n");
	no_thread();

	printf("slow writes\n");
	for (int attempt = 1;; attempt++) {
		atomic_store(&io_spy.write_delay_ns, 150000000u);
		atomic_store(&io_spy.first_write_end, 0);
		atomic_store(&io_spy.second_write_end, 0);
		record("slowwrite", 10, UINT32_MAX, 1500, &at_end);
		atomic_store(&io_spy.write_delay_ns, 0);
		/* The recorder tells a slow write from its wait for a CPU by the
		 * run-queue wait since its last reading (the loop's start, for the
		 * first write): when that is more than the write's 150 ms less T/2
		 * the first write is not known slow, and the second one, measured
		 * exactly, moves the looks (writer.c, io_slow). */
		uint64_t first = atomic_load(&io_spy.first_write_end);
		int unsure = atomic_load(&io_spy.first_write_rq) >= 145000000u;
		uint64_t from = unsure ? atomic_load(&io_spy.second_write_end) : first;
		miss = missed(from, &of, &left_out);
		printf("  %u of %u polls begun after the %s slow write not captured (%u more left "
		       "out: the looks' thread waited for a CPU); ss-watchdog at the end: %d\n", miss,
		       of, unsure ? "second (the writer waited 145 ms and more for a CPU before the "
		       "first)" : "first", left_out, at_end);
		CHECK(first && from, "no block written");
		CHECK(miss == 0, "%u of %u polls of 40 ms (threshold 10 ms) not captured while every "
		      "write took 150 ms", miss, of);
		CHECK(at_end, "the looks stayed on the writer's thread with writes of 150 ms");
		if (of >= 10)
			break;
		CHECK(attempt < ATTEMPTS, "only %u polls after the first slow write judged in the "
		      "last of %d attempts", of, ATTEMPTS);
	}

	printf("slow seal\n");
	io_spy.on_sync = sync_hook;
	for (int attempt = 1;; attempt++) {
		atomic_store(&sync_saw_watchdog, 0);
		atomic_store(&io_spy.sync_delay_ns, 150000000u);
		uint64_t syncs0 = atomic_load(&io_spy.syncs);
		record("slowseal", 10, 1, 2600, &at_end);
		atomic_store(&io_spy.sync_delay_ns, 0);
		miss = missed(0, &of, &left_out);
		printf("  %u of %u polls not captured (%u more left out: the looks' thread waited "
		       "for a CPU); %llu seals; ss-watchdog during the sync: %d, at the end: %d\n",
		       miss, of, left_out,
		       (unsigned long long)(atomic_load(&io_spy.syncs) - syncs0),
		       atomic_load(&sync_saw_watchdog), at_end);
		CHECK(atomic_load(&io_spy.syncs) - syncs0 >= 2, "no rotation in 2.6 s at a period of 1 s");
		CHECK(miss == 0, "%u of %u polls of 40 ms (threshold 10 ms) not captured with seals "
		      "of 150 ms", miss, of);
		CHECK(atomic_load(&sync_saw_watchdog), "no ss-watchdog thread while a seal synced");
		CHECK(at_end, "the looks came back to the writer's thread after a sync of 150 ms");
		if (of >= 10)
			break;
		CHECK(attempt < ATTEMPTS, "only %u polls judged in the last of %d attempts", of,
		      ATTEMPTS);
	}

	printf("fast seal\n");
	atomic_store(&sync_saw_watchdog, 0);
	uint64_t syncs0 = atomic_load(&io_spy.syncs);
	record("fastseal", 200, 1, 1300, &at_end);
	printf("  %llu seals; ss-watchdog during the sync: %d, at the end: %d\n",
	       (unsigned long long)(atomic_load(&io_spy.syncs) - syncs0),
	       atomic_load(&sync_saw_watchdog), at_end);
	CHECK(atomic_load(&io_spy.syncs) - syncs0 >= 2, "no rotation in 1.3 s at a period of 1 s");
	CHECK(atomic_load(&sync_saw_watchdog), "no ss-watchdog thread while a seal synced");
	CHECK(!at_end, "the looks stayed on a thread of their own after a fast seal");
	printf("test_slow_disk: ok\n");
	return 0;
}
