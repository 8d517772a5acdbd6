/*
 * test_flush_deaf.c - a worker that blocks the stall capture's signal does not
 * hold the writer's flush: events still reach the segment file within the
 * flush interval while its captures wait for an answer that never comes.
 *
 * Hooks only (no CPU sampling, no task dumps), so the writer's thread also
 * takes the watchdog's looks and captures (watchdog.c). A "deaf" worker spins
 * in polls of 230 ms with every signal blocked: each capture of it waits the
 * full 50 ms for the handler and reports that the thread did not answer, and
 * there is nearly always one in flight. Two producers make numbered marks
 * (resil.h) every millisecond and log when each was made. Meanwhile this
 * thread reads the active segment file over and over for 3 s: what the file
 * holds at a moment is what a SIGKILL at that moment would leave (the page
 * cache outlives the process). At each read, every mark made more than the
 * flush interval F (100 ms) before the read began must be in the file. A
 * capture that held the thread (a blocking 50 ms wait, as the one-thread
 * change of an earlier round did) lets the file fall 125 ms and more behind.
 *
 * Ages are lower bounds: a missing mark counts as made at the first
 * checkpoint after it, and a read that starts late only finds more; a producer
 * or this thread starved by load cannot make the file look older than it is.
 * What a loaded machine can do is keep the writer's thread waiting for a CPU:
 * a mark's age less that wait meanwhile must be within F. Its schedstat adds a
 * wait only when the wait ends (the thread's next turn on a CPU), so a writer
 * runnable at the read is read at that turn: taken at the read, a wait still
 * going on was left out (a loaded run saw a mark 164.7 ms old "less 1.9 ms"
 * while the writer had sat runnable for 58 ms and more). A writer asleep at
 * the read (on its timer, or held by a capture) has nothing taken off.
 *
 * A third worker spins in 60 ms polls that answer the signal: captures of
 * several threads run side by side, so its polls are captured at the threshold
 * while one of the deaf worker waits. Counted, not timed: a capture of the
 * deaf worker that did not answer was in flight for 50 ms from its begin (the
 * wait for the answer alone takes that long), so a first capture of the other
 * worker begun less than 50 ms after it ran beside it. Captures taken one
 * after the other never do, whatever the load (one in flight at a time: 0 of
 * 41-64), and a thread held by each capture only where both began in the
 * same look (2-4 of 53-126); side by side, about two in three do, since the
 * deaf worker's are in flight about 70% of the time (10-130 and 160-210 ms of
 * its 232). A quarter at least, and 3, must. (The median age of those first
 * captures is printed: 10.1 ms at a 10 ms threshold; one after the other put
 * it at 30-35 ms on a quiet machine, but 19-27 ms beside four busy loops.)
 *
 * Then stop, while the reads go on: it is landed just before a due cycle (65
 * to 74 ms after the last block write, io_spy.c, the writer's period being
 * 75 ms) and just after a capture of the deaf worker signalled it (its 50 ms
 * wait for the answer has begun). Cycles must keep their times while that
 * capture ends: a stop that waited for it first, then ran its final cycle,
 * left marks 105 ms and more old out of the file.
 */
#include <stallscope/stallscope.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_spy.h"
#include "resil.h"
#include "trace_check.h"

#define FLUSH_MS 100u
#define OBSERVE_NS 3000000000ull
#define NPROD 2
#define CKPT_CAP 16384
#define DEAF_TASK 777
#define LOUD_TASK0 1000
#define MAX_LOUD 256

static _Atomic int deaf_stop;
static _Atomic uint32_t deaf_polls;
/* When a capture's signal was first seen pending in the deaf worker's poll. */
static _Atomic uint64_t deaf_signalled;
/* stallscope_stop called and returned (CLOCK_MONOTONIC ns). */
static _Atomic uint64_t stop_called, stop_done;
static const char *dir_g;

/* Spins in 60 ms polls, 5 ms apart, with its signals as they are. */
static void *loud_main(void *arg)
{
	(void)arg;
	uint32_t loc = stallscope_location("test_flush_deaf.c", 2, "loud");
	stallscope_worker_begin("loud", 98);
	volatile uint64_t x = 1;
	for (uint64_t task = LOUD_TASK0; !atomic_load(&deaf_stop) && task < LOUD_TASK0 + MAX_LOUD;
	     task++) {
		stallscope_poll_begin(task, loc);
		uint64_t end = rs_now() + 60000000ull;
		while (rs_now() < end)
			for (int i = 0; i < 1000; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
		stallscope_poll_end();
		rs_sleep_ms(5);
	}
	stallscope_worker_end();
	return NULL;
}

/* Whether a real-time signal (the capture's: nothing else signals this
 * program) is pending for the calling thread. */
static int rt_signal_pending(void)
{
	sigset_t pend;
	if (sigpending(&pend) != 0)
		return 0;
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		if (sigismember(&pend, sig))
			return 1;
	return 0;
}

static void *deaf_main(void *arg)
{
	(void)arg;
	uint32_t loc = stallscope_location("test_flush_deaf.c", 1, "deaf");
	stallscope_worker_begin("deaf", 99);
	volatile uint64_t x = 1;
	while (!atomic_load(&deaf_stop)) {
		stallscope_poll_begin(DEAF_TASK, loc);
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		uint64_t end = rs_now() + 230000000ull;
		int seen = 0;
		while (rs_now() < end) {
			for (int i = 0; i < 1000; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
			if (!seen && rt_signal_pending()) {
				seen = 1;
				atomic_store(&deaf_signalled, rs_now());
			}
		}
		/* The capture signals still pending are taken here, outside the poll. */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		stallscope_poll_end();
		atomic_fetch_add(&deaf_polls, 1);
		rs_sleep_ms(2);
	}
	stallscope_worker_end();
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* STALL records of the deaf task, and those that say it never answered (when
 * they began); the loud worker's first captures (their ages, when they
 * began). */
#define MAX_DEAF 4096
struct caps {
	uint64_t all, unanswered, deaf_at[MAX_DEAF], loud[MAX_LOUD], loud_at[MAX_LOUD];
	size_t nloud;
};

static void count_capture(const struct ss_record *rec, void *ctx)
{
	struct caps *c = ctx;
	if (rec->type != SS_REC_STALL)
		return;
	if (rec->u.stall.task >= LOUD_TASK0 && rec->u.stall.task < LOUD_TASK0 + MAX_LOUD &&
	    rec->u.stall.index == 0 && c->nloud < MAX_LOUD) {
		c->loud_at[c->nloud] = rec->ts;
		c->loud[c->nloud++] = rec->ts - rec->u.stall.poll_ts;
	}
	if (rec->u.stall.task != DEAF_TASK)
		return;
	c->all++;
	char reason[256];
	size_t len = rec->u.stall.reason_len < sizeof reason - 1 ? rec->u.stall.reason_len
								 : sizeof reason - 1;
	memcpy(reason, rec->u.stall.reason, len);
	reason[len] = 0;
	if (strstr(reason, "did not answer") && c->unanswered < MAX_DEAF)
		c->deaf_at[c->unanswered++] = rec->ts;
}

/* First captures of the loud worker begun while an unanswered capture of the
 * deaf worker was still in flight (begun less than 50 ms before). */
static size_t side_by_side(const struct caps *c)
{
	size_t n = 0;
	for (size_t i = 0; i < c->nloud; i++) {
		int beside = 0;
		for (uint64_t k = 0; k < c->unanswered && !beside; k++)
			beside = c->deaf_at[k] < c->loud_at[i] && c->loud_at[i] - c->deaf_at[k] < 50000000u;
		n += beside;
	}
	return n;
}

/* What the file showed: reads, the oldest mark missing at a read (and when),
 * the oldest while stop ran. */
static uint64_t t0, worst, reads, worst_at, worst_stop, reads_stop, raced;
static size_t last_events;

/* The marks found older than F at a read, judged after the run (late_own):
 * less the writer's waits for a CPU meanwhile, what load alone cannot make. */
#define LATE_CAP 65536
struct late {
	uint64_t mark, read; /* made (no later than), and the read's start */
};
static struct late late[LATE_CAP];
static size_t nlate;

/* The writer's thread every millisecond (watch_main): its state and wait
 * channel (/proc/self/task/TID/stat, wchan) and its schedstat: time on a
 * CPU, run-queue wait and turns on a CPU so far. A writer a loaded machine
 * leaves on the run queue is late by that much whatever it does; and what
 * it was doing is printed for a mark found late (sleeping on its timer or on
 * something else, running, or waiting for a CPU). */
#define WATCH_CAP 32768
struct watch {
	uint64_t at, run, wait, turns;
	char state, wchan[31];
};
static struct watch watch[WATCH_CAP];
static _Atomic uint32_t nwatch;
static char writer_dir[48]; /* /proc/self/task/TID */

static void read_small(const char *dir, const char *file, char *buf, size_t len)
{
	char path[96];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

static void *watch_main(void *arg)
{
	(void)arg;
	char path[64];
	snprintf(path, sizeof path, "%s/schedstat", writer_dir);
	while (!atomic_load(&stop_done) && atomic_load(&nwatch) < WATCH_CAP) {
		struct watch *w = &watch[atomic_load(&nwatch)];
		char buf[512];
		w->at = rs_now();
		read_small(writer_dir, "stat", buf, sizeof buf);
		const char *r = strrchr(buf, ')');
		w->state = r && r[1] == ' ' ? r[2] : '?';
		read_small(writer_dir, "wchan", w->wchan, sizeof w->wchan);
		w->wait = io_spy_schedstat(path, &w->run, &w->turns);
		/* Kept only while the thread is there (stop ends it). */
		if (w->turns)
			atomic_fetch_add(&nwatch, 1);
		usleep(1000);
	}
	return NULL;
}

/* The last sample at or before t (the first one for earlier times). */
static const struct watch *watch_at(uint64_t t)
{
	uint32_t lo = 0, hi = atomic_load(&nwatch);
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (watch[mid].at <= t)
			lo = mid;
		else
			hi = mid;
	}
	return &watch[lo];
}

/* The writer's run-queue wait from t to a read at u, the wait still going on
 * at u included: schedstat adds a wait only at the thread's next turn on a
 * CPU, so a writer runnable at u (R) is read at that turn. One asleep at u
 * (on its timer, a lock, a capture's wait) has nothing added: a sleep is not
 * load. At u is the first sample from u on: a sampling thread that load kept
 * from its samples (one loaded run had none for 180 ms) then errs towards
 * load, not towards a late writer. 0 without samples (no schedstat: nothing
 * taken off). */
static uint64_t writer_waited(uint64_t t, uint64_t u)
{
	uint32_t n = atomic_load(&nwatch);
	if (!n)
		return 0;
	const struct watch *a = watch_at(t), *b = watch_at(u), *end = &watch[n - 1];
	if (b < end && b->at < u)
		b++;
	uint64_t turns = b->turns;
	if (b->state == 'R')
		while (b < end && b->turns <= turns)
			b++;
	return b->wait > a->wait ? b->wait - a->wait : 0;
}

/* The oldest late mark less the writer's waits (writer_waited), and which. */
static uint64_t late_own(const struct late **which)
{
	uint64_t own = 0;
	*which = NULL;
	for (size_t i = 0; i < nlate; i++) {
		uint64_t age = late[i].read - late[i].mark;
		uint64_t held = writer_waited(late[i].mark, late[i].read);
		if (age > held && age - held > own) {
			own = age - held;
			*which = &late[i];
		}
	}
	return own;
}

/* The writer from 20 ms before a late mark to the read that missed it: one
 * line per run of samples with the same state and wait channel. */
static int watched(const struct watch *w, const struct late *l)
{
	return w->at + 20000000u >= l->mark && w->at <= l->read + 2000000u;
}

static void watch_print(const struct late *l)
{
	uint32_t n = atomic_load(&nwatch);
	printf("test_flush_deaf: the writer's thread from 20 ms before the late mark (made at "
	       "%.1f ms) to the read that missed it (%.1f ms): state, wait channel, then what "
	       "its CPU time, run-queue wait and turns on a CPU grew by\n",
	       (double)(l->mark - t0) / 1e6, (double)(l->read - t0) / 1e6);
	for (uint32_t i = 0, j; i < n; i = j + 1) {
		j = i;
		if (!watched(&watch[i], l))
			continue;
		while (j + 1 < n && watched(&watch[j + 1], l) && watch[j + 1].state == watch[i].state &&
		       !strcmp(watch[j + 1].wchan, watch[i].wchan))
			j++;
		const struct watch *a = &watch[i], *b = j + 1 < n ? &watch[j + 1] : &watch[j];
		printf("  %8.1f .. %8.1f ms  %c %-24s cpu +%.2f rq +%.2f ms turns +%llu\n",
		       (double)(a->at - t0) / 1e6, (double)(watch[j].at - t0) / 1e6, a->state,
		       a->wchan[0] ? a->wchan : "-", (double)(b->run - a->run) / 1e6,
		       (double)(b->wait - a->wait) / 1e6, (unsigned long long)(b->turns - a->turns));
	}
}

static struct rs_ckpt ckpt[NPROD][CKPT_CAP];
static _Atomic uint32_t nckpt[NPROD];
static struct rs_producer p[NPROD];

/* Reads the active file over and over, until stop has returned. */
static void *reader_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_done)) {
		uint64_t x = rs_now(), sc = atomic_load(&stop_called);
		uint32_t n[NPROD];
		for (int i = 0; i < NPROD; i++)
			n[i] = atomic_load_explicit(&nckpt[i], memory_order_acquire);
		struct tc_trace t;
		/* While stop runs, the last seal renames the file under a read. */
		if (tc_load_dir(&t, dir_g, "fd", true) != 0) {
			CHECK(sc, "load %s", dir_g);
			continue;
		}
		if (atomic_load(&stop_done)) {
			tc_free(&t);
			break;
		}
		CHECK(sc || t.corrupt_segments == 0, "a corrupt segment while recording");
		/* What reached the file stays there: a read that finds fewer events
		 * than the one before listed the directory across the last seal's
		 * rename (the .active name gone, the sealed one not yet listed) and
		 * says nothing about the writer. Only while stop runs. */
		CHECK(sc || t.nevents >= last_events, "%zu events on disk after %zu", t.nevents,
		      last_events);
		if (t.nevents < last_events) {
			raced++;
			tc_free(&t);
			continue;
		}
		last_events = t.nevents;
		reads++;
		reads_stop += sc != 0;
		for (int i = 0; i < NPROD; i++) {
			/* Marks of producer i on disk, then the first one missing. */
			uint64_t cap = n[i] ? ckpt[i][n[i] - 1].seq + 2 : 1;
			uint8_t *seen = calloc(cap, 1);
			CHECK(seen, "oom");
			for (size_t k = 0; k < t.nevents; k++) {
				const struct tc_event *e = &t.events[k];
				if (e->type == SS_REC_MARK && (e->b >> RS_SEQ_BITS) == p[i].tag &&
				    (e->b & RS_SEQ_MASK) < cap)
					seen[e->b & RS_SEQ_MASK] = 1;
			}
			uint64_t missing = 0;
			while (missing < cap && seen[missing])
				missing++;
			free(seen);
			/* The first checkpoint that covers it: made no later than that.
			 * Marks made once stop was called are not recorded at all. */
			for (uint32_t k = 0; k < n[i]; k++) {
				if (ckpt[i][k].seq < missing)
					continue;
				if (sc && ckpt[i][k].ts >= sc)
					break;
				uint64_t age = x > ckpt[i][k].ts ? x - ckpt[i][k].ts : 0;
				if (age > worst) {
					worst = age;
					worst_at = x - t0;
				}
				if (age > (uint64_t)FLUSH_MS * 1000000u && nlate < LATE_CAP)
					late[nlate++] = (struct late){ ckpt[i][k].ts, x };
				if (sc && age > worst_stop)
					worst_stop = age;
				break;
			}
		}
		tc_free(&t);
		rs_sleep_ms(2);
	}
	return NULL;
}

int main(void)
{
	char *dir = tc_tmpdir("flushdeaf");
	dir_g = dir;
	struct stallscope_config cfg;
	rs_hooks_only(&cfg, dir, "fd", 10);
	cfg.max_file_size = 256u << 20; /* one file: no rotation under the reads */
	cfg.rotation_period_s = UINT32_MAX;
	cfg.flush_interval_ms = FLUSH_MS;
	/* Frame-pointer stacks: the first stack unwound by CFI opens libdw in a
	 * writer cycle (milliseconds, tens under ASan on a loaded machine), a cost
	 * of its own that this test is not about. */
	cfg.unwind = STALLSCOPE_UNWIND_FP;
	CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());

	for (int i = 0; i < NPROD; i++) {
		p[i].tag = (uint64_t)i + 1;
		p[i].burst = 1;
		p[i].pause_us = 1000;
		p[i].ckpt = ckpt[i];
		p[i].nckpt = &nckpt[i];
		p[i].ckpt_cap = CKPT_CAP;
	}
	pthread_t deaf, loud;
	CHECK(pthread_create(&deaf, NULL, deaf_main, NULL) == 0, "pthread_create");
	CHECK(pthread_create(&loud, NULL, loud_main, NULL) == 0, "pthread_create");
	rs_producers_start(p, NPROD);
	t0 = rs_now();

	pthread_t rd, wt;
	CHECK(io_spy_thread_dir("ss-writer", writer_dir, sizeof writer_dir), "no ss-writer thread");
	CHECK(pthread_create(&wt, NULL, watch_main, NULL) == 0, "pthread_create");
	CHECK(pthread_create(&rd, NULL, reader_main, NULL) == 0, "pthread_create");
	rs_sleep_ms(OBSERVE_NS / 1000000u);

	/* The stop, landed (see the top): at most 20 s of tries. */
	uint64_t landed = 0, since_write = 0, since_signal = 0, t1 = rs_now();
	while (!landed && rs_now() - t1 < 20000000000ull) {
		uint64_t s0 = atomic_load(&deaf_signalled);
		while (atomic_load(&deaf_signalled) == s0 && rs_now() - t1 < 20000000000ull)
			usleep(200);
		uint64_t x = rs_now(), sig = atomic_load(&deaf_signalled);
		uint64_t w = atomic_load(&io_spy.last_write_end);
		if (x - sig <= 5000000u && x - w >= 65000000u && x - w <= 74000000u) {
			landed = x;
			since_write = x - w;
			since_signal = x - sig;
		}
	}
	atomic_store(&stop_called, rs_now());
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	atomic_store(&stop_done, rs_now());
	pthread_join(rd, NULL);
	pthread_join(wt, NULL);
	atomic_store(&deaf_stop, 1);
	pthread_join(deaf, NULL);
	pthread_join(loud, NULL);
	rs_producers_stop(p, NPROD);
	/* Not landed, the stop's check below would check nothing. Each deaf poll
	 * (about 4 a second) lands it about one time in eight. */
	CHECK(landed, "the stop could not be landed just before a due cycle in 20 s");
	printf("test_flush_deaf: stop landed %.1f ms after the last block write, %.1f ms after a "
	       "capture signalled the deaf worker; it took %.1f ms; %llu reads began while it "
	       "ran, the oldest mark they missed %.1f ms old\n", (double)since_write / 1e6,
	       (double)since_signal / 1e6,
	       (double)(atomic_load(&stop_done) - atomic_load(&stop_called)) / 1e6,
	       (unsigned long long)reads_stop, (double)worst_stop / 1e6);

	static struct caps c;
	CHECK(tc_each_record(dir, "fd", count_capture, &c) > 0, "read %s", dir);
	uint64_t all = c.all, unanswered = c.unanswered, *loud_age = c.loud;
	size_t nloud = c.nloud;
	qsort(loud_age, nloud, sizeof *loud_age, cmp_u64);
	uint64_t loud_median = nloud ? loud_age[nloud / 2] : 0;
	size_t beside = side_by_side(&c);
	printf("test_flush_deaf: %llu reads of the active file in %.1f s; the oldest mark not yet in "
	       "it was at most %.1f ms old (at %.2f s; flush interval %u ms); %u deaf polls, %llu "
	       "captures of them, %llu unanswered\n", (unsigned long long)reads,
	       (double)(atomic_load(&stop_done) - t0) / 1e9, (double)worst / 1e6,
	       (double)worst_at / 1e9, FLUSH_MS,
	       atomic_load(&deaf_polls), (unsigned long long)all, (unsigned long long)unanswered);
	printf("test_flush_deaf: the other worker's first captures, %zu, %zu of them begun while an "
	       "unanswered capture of the deaf worker was in flight: at %.1f ms of their polls "
	       "(median; fastest %.1f, slowest %.1f)\n", nloud, beside, (double)loud_median / 1e6,
	       nloud ? (double)loud_age[0] / 1e6 : 0.0,
	       nloud ? (double)loud_age[nloud - 1] / 1e6 : 0.0);
	/* The scenario happened: captures waited out the answer more than once. */
	CHECK(unanswered >= 3, "only %llu captures of the deaf worker waited for an answer",
	      (unsigned long long)unanswered);
	CHECK(nloud >= 10, "only %zu first captures of the other worker's 60 ms polls", nloud);
	printf("test_flush_deaf: %llu reads during stop raced the last seal's rename (fewer events than "
	       "the read before) and were left out\n", (unsigned long long)raced);
	uint32_t nw = atomic_load(&nwatch);
	const struct late *l;
	uint64_t worst_own = late_own(&l);
	printf("test_flush_deaf: the writer's thread waited %.1f ms for a CPU in all (%s)\n",
	       nw ? (double)(watch[nw - 1].wait - watch[0].wait) / 1e6 : 0.0,
	       nw ? "its schedstat" : "no schedstat found");
	if (worst > (uint64_t)FLUSH_MS * 1000000u)
		printf("test_flush_deaf: less the writer's waits for a CPU meanwhile (the one still "
		       "going on at the read too), at most %.1f ms old\n", (double)worst_own / 1e6);
	if (worst_own > (uint64_t)FLUSH_MS * 1000000u)
		watch_print(l);
	CHECK(worst_own <= (uint64_t)FLUSH_MS * 1000000u,
	      "a mark %.1f ms old was not in the file (%.1f ms less the writer's waits for a CPU; "
	      "flush interval %u ms)", l ? (double)(l->read - l->mark) / 1e6 : 0.0,
	      (double)worst_own / 1e6, FLUSH_MS);
	CHECK(beside >= 3 && beside * 4 >= nloud, "only %zu of %zu first captures of the other worker ran beside a capture "
	      "of the deaf worker (median age %.1f ms): captures taken one after the other", beside,
	      nloud, (double)loud_median / 1e6);
	tc_rmrf(dir);
	free(dir);
	return 0;
}
