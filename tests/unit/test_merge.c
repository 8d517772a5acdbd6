/*
 * test_merge.c - the model's time-order merge (viewer/model/merge.c):
 *   - runs of several threads, read in file order, come out in time order, with
 *     equal times in arrival order;
 *   - a thread's own records keep their file order even when its timestamps go
 *     backwards (hostile input), and the watchdog's records (stalls, task dumps
 *     in the order they were noticed) are placed by time;
 *   - the window releases only what stream time has moved past; a record that
 *     comes after later ones were released is delivered and counted as late;
 *   - the buffer never holds more than max_buffered records;
 *   - a floor (ss_merge_release_to) releases everything up to it at once and
 *     nothing after it, even what the window would have let go; an event of a
 *     thread not declared in the unit waits for the window as well, with all
 *     after it, until its thread is declared; a drain begins a unit in which
 *     nothing is declared; thread 0 needs no declaring; once the unit says
 *     which threads it defines, only those wait; a declaration costs the
 *     streams of its thread only (32000 threads: about what pushing their
 *     records costs);
 *   - every record type comes back with all its fields, strings included (a
 *     park's CPU clock, an explicit waker, a span's id, parent, fields and
 *     location too);
 *   - a delivery error stops the release and is returned;
 *   - streams far longer than a chunk of entries, with the watchdog's records
 *     placed by time across chunk boundaries, come out in (time, arrival) order,
 *     and a small buffer that fills and empties many times reuses its chunks
 *     (one slab of them); a trim frees the slabs no stream uses, keeps the
 *     others, and what they hold still comes out in order.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "merge.h"
#include "soft_check.h"

#define MAX_OUT 256

static struct ss_event out[MAX_OUT];
static char names[MAX_OUT][64];
static size_t n_out;
static int fail_at = -1;

static int collect(void *ctx, const struct ss_event *r)
{
	(void)ctx;
	if ((int)n_out == fail_at)
		return 7;
	if (n_out < MAX_OUT) {
		out[n_out] = *r;
		/* Strings live in the merge only until it is empty again. */
		if (r->type == SS_EV_COMM)
			snprintf(names[n_out], sizeof names[n_out], "%.*s", (int)r->u.comm.len, r->u.comm.name);
		if (r->type == SS_EV_STALL)
			snprintf(names[n_out], sizeof names[n_out], "%.*s", (int)r->u.stall.reason_len,
				 r->u.stall.reason);
	}
	n_out++;
	return 0;
}

static struct ss_event ev(uint8_t type, uint64_t thread, uint64_t ts, uint64_t task)
{
	struct ss_event r;
	memset(&r, 0, sizeof r);
	r.type = type;
	r.thread = thread;
	r.ts = ts;
	r.u.poll_begin.task = task; /* the first field of every task record */
	return r;
}

static void test_order(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	/* Block 1: thread 1's run, then thread 2's; block 2 continues both. */
	uint64_t t1[] = { 10, 30, 50 }, t2[] = { 20, 40 }, t1b[] = { 60, 80 }, t2b[] = { 55, 70 };
	for (size_t i = 0; i < 3; i++) {
		struct ss_event r = ev(SS_EV_POLL_BEGIN, 1, t1[i], 100 + i);
		CHECK(ss_merge_push(&m, &r) == 0, "push");
	}
	for (size_t i = 0; i < 2; i++) {
		struct ss_event r = ev(SS_EV_WAKE, 2, t2[i], 200 + i);
		CHECK(ss_merge_push(&m, &r) == 0, "push");
	}
	CHECK(ss_merge_release(&m) == 0, "release");
	CHECK(n_out == 0, "%zu released inside the window", n_out);
	for (size_t i = 0; i < 2; i++) {
		struct ss_event a = ev(SS_EV_POLL_END, 1, t1b[i], 0), b = ev(SS_EV_TERMINATE, 2, t2b[i], 300 + i);
		ss_merge_push(&m, &a);
		ss_merge_push(&m, &b);
	}
	/* Equal times on two threads: arrival order. */
	struct ss_event x = ev(SS_EV_SPAWN, 3, 90, 1), y = ev(SS_EV_SPAWN, 4, 90, 2);
	ss_merge_push(&m, &x);
	ss_merge_push(&m, &y);
	CHECK(ss_merge_drain(&m) == 0, "drain");
	uint64_t want[] = { 10, 20, 30, 40, 50, 55, 60, 70, 80, 90, 90 };
	CHECK(n_out == 11, "%zu delivered", n_out);
	for (size_t i = 0; i < 11 && i < n_out; i++)
		CHECK(out[i].ts == want[i], "record %zu at %llu, want %llu", i, (unsigned long long)out[i].ts,
		      (unsigned long long)want[i]);
	CHECK(n_out == 11 && out[9].thread == 3 && out[10].thread == 4, "equal times keep arrival order");
	CHECK(out[0].thread == 1 && out[1].thread == 2 && out[1].type == SS_EV_WAKE &&
		      out[1].u.wake.task == 200, "threads and fields follow their records");
	CHECK(m.late == 0, "%llu late", (unsigned long long)m.late);
	ss_merge_free(&m);
}

static void test_backwards_and_stalls(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	/* Thread 1's clock goes back (hostile): its file order stands. */
	uint64_t ts[] = { 100, 50, 120 };
	for (size_t i = 0; i < 3; i++) {
		struct ss_event r = ev(SS_EV_MARK, 1, ts[i], 0);
		r.u.mark.name = i + 1;
		ss_merge_push(&m, &r);
	}
	/* The watchdog noticed these out of time order. */
	struct ss_event s;
	memset(&s, 0, sizeof s);
	s.type = SS_EV_STALL_END;
	s.ts = 130;
	s.thread = 2;
	ss_merge_push(&m, &s);
	memset(&s, 0, sizeof s);
	s.type = SS_EV_TASK_DUMP;
	s.ts = 60;
	s.thread = 2;
	s.u.task_dump.idle_ns = 1000;
	ss_merge_push(&m, &s);
	memset(&s, 0, sizeof s);
	s.type = SS_EV_STALL;
	s.ts = 110;
	s.thread = 2;
	s.u.stall.reason = "running";
	s.u.stall.reason_len = 7;
	ss_merge_push(&m, &s);
	ss_merge_drain(&m);
	CHECK(n_out == 6, "%zu delivered", n_out);
	/* TASK_DUMP 60, MARK 100 (name 1), MARK 50 -> 100 (name 2), STALL 110, MARK 120, STALL_END 130 */
	uint8_t types[] = { SS_EV_TASK_DUMP, SS_EV_MARK, SS_EV_MARK, SS_EV_STALL, SS_EV_MARK, SS_EV_STALL_END };
	for (size_t i = 0; i < 6 && i < n_out; i++)
		CHECK(out[i].type == types[i], "record %zu is type 0x%x, want 0x%x", i, out[i].type, types[i]);
	CHECK(n_out == 6 && out[1].u.mark.name == 1 && out[2].u.mark.name == 2 && out[2].ts == 50,
	      "a thread's records keep file order and their own times");
	CHECK(n_out == 6 && out[0].ts == 60 && out[0].u.task_dump.idle_ns == 1000, "a dump keeps its times");
	CHECK(n_out == 6 && !strcmp(names[3], "running"), "stall reason '%s'", names[3]);
	ss_merge_free(&m);
}

static void test_window_late_cap(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	const uint64_t s1 = 1000000000ull;
	for (uint64_t t = 1; t <= 5; t++) {
		struct ss_event r = ev(SS_EV_PARK, 1, t * s1, 0);
		ss_merge_push(&m, &r);
	}
	ss_merge_release(&m);
	/* Stream time is at 5 s: the window (2 s) lets 1, 2 and 3 s go. */
	CHECK(n_out == 3, "%zu released by the window", n_out);
	struct ss_event old = ev(SS_EV_UNPARK, 2, 2 * s1 + 5, 0);
	ss_merge_push(&m, &old);
	CHECK(m.late == 1, "%llu late", (unsigned long long)m.late);
	ss_merge_release(&m);
	CHECK(n_out == 4 && out[3].ts == 2 * s1 + 5, "the late record is delivered at the next release");
	ss_merge_drain(&m);
	CHECK(n_out == 6, "%zu after the drain", n_out);
	ss_merge_free(&m);

	ss_merge_init(&m, collect, NULL);
	m.max_buffered = 4;
	n_out = 0;
	for (uint64_t t = 1; t <= 10; t++) {
		struct ss_event r = ev(SS_EV_QUEUE, t % 3, t, 0);
		ss_merge_push(&m, &r);
		CHECK(m.buffered <= 4, "%zu buffered", m.buffered);
	}
	CHECK(n_out == 6 && out[0].ts == 1 && out[5].ts == 6, "the cap releases the earliest (%zu)", n_out);
	ss_merge_drain(&m);
	ss_merge_free(&m);
}

static void test_floor(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	const uint64_t s1 = 1000000000ull;
	ss_merge_declare(&m, 1);
	ss_merge_declare(&m, 2);
	/* 1..4 s on threads 1 and 2; 9 s on thread 1 moves the window past them all */
	for (uint64_t t = 1; t <= 4; t++) {
		struct ss_event r = ev(SS_EV_PARK, 1 + t % 2, t * s1, 0);
		ss_merge_push(&m, &r);
	}
	struct ss_event late = ev(SS_EV_MARK, 1, 9 * s1, 0);
	ss_merge_push(&m, &late);
	CHECK(ss_merge_release_to(&m, 2 * s1) == 0, "release to 2 s");
	CHECK(n_out == 2 && out[1].ts == 2 * s1, "a floor of 2 s released %zu, where the window would have four", n_out);
	/* A switch of thread 3 (no THREAD_DEF read yet) at 2.5 s and one of thread 0. */
	struct ss_event sw = ev(SS_EV_SWITCH, 3, 2 * s1 + s1 / 2, 0), sw0 = ev(SS_EV_SWITCH, 0, 2 * s1 + s1 / 4, 0);
	sw.tid = 33;
	sw0.tid = 44;
	ss_merge_push(&m, &sw);
	ss_merge_push(&m, &sw0);
	CHECK(m.late == 0, "%llu late", (unsigned long long)m.late);
	struct ss_event p3 = ev(SS_EV_PARK, 2, 8 * s1, 0);
	ss_merge_push(&m, &p3); /* stream time 9 s: the window mark is 7 s */
	ss_merge_release_to(&m, 8 * s1);
	/* 2.25 s (thread 0), then 2.5 s: thread 3's, which the window passed */
	CHECK(n_out == 7 && out[2].tid == 44 && out[3].thread == 3, "%zu released past thread 3's switch", n_out);
	CHECK(n_out == 7 && out[6].ts == 8 * s1, "the floor stops at 8 s: %zu released", n_out);
	/* Thread 3 again, at 8.5 s, beyond the window: it holds what follows. */
	sw.ts = 8 * s1 + s1 / 2;
	ss_merge_push(&m, &sw);
	struct ss_event p4 = ev(SS_EV_PARK, 2, 8 * s1 + 3 * s1 / 4, 0);
	ss_merge_push(&m, &p4);
	ss_merge_release_to(&m, 9 * s1);
	CHECK(n_out == 7, "a thread not declared holds the floor (%zu released)", n_out);
	ss_merge_declare(&m, 3);
	ss_merge_release_to(&m, 9 * s1);
	CHECK(n_out == 10 && out[7].thread == 3 && out[9].ts == 9 * s1, "declared, it goes (%zu released)", n_out);
	/* A new unit: thread 3 must be declared again, thread 1 too. */
	ss_merge_drain(&m);
	n_out = 0;
	sw.ts = 1 * s1;
	ss_merge_push(&m, &sw);
	ss_merge_release_to(&m, 5 * s1);
	CHECK(n_out == 0, "a drain forgets the declarations: %zu released", n_out);
	ss_merge_declare(&m, 3);
	ss_merge_release_to(&m, 5 * s1);
	CHECK(n_out == 1, "declared in the new unit: %zu released", n_out);
	/* The threads a unit defines (ss_merge_unit_defines): until it says,
	 * every thread not declared holds the floor; then only those it
	 * defines do, until their declaration; a drain forgets what it said. */
	ss_merge_drain(&m);
	n_out = 0;
	ss_merge_declare(&m, 1);
	struct ss_event sw5 = ev(SS_EV_SWITCH, 5, 1 * s1, 0), p1 = ev(SS_EV_PARK, 1, 2 * s1, 0);
	sw5.tid = 55;
	ss_merge_push(&m, &sw5);
	ss_merge_push(&m, &p1);
	ss_merge_release_to(&m, 3 * s1);
	CHECK(n_out == 0, "thread 5 (not declared; the unit has not said what it defines) holds the floor: %zu released", n_out);
	const uint64_t defined[] = { 6 };
	ss_merge_unit_defines(&m, defined, 1);
	ss_merge_release_to(&m, 3 * s1);
	CHECK(n_out == 2 && out[0].thread == 5, "the unit does not define thread 5: %zu released", n_out);
	struct ss_event sw6 = ev(SS_EV_SWITCH, 6, 3 * s1 + s1 / 2, 0), p2 = ev(SS_EV_PARK, 1, 4 * s1, 0);
	struct ss_event sw7 = ev(SS_EV_SWITCH, 7, 4 * s1 + s1 / 2, 0);
	sw6.tid = 66;
	sw7.tid = 77;
	ss_merge_push(&m, &sw6);
	ss_merge_push(&m, &p2);
	ss_merge_push(&m, &sw7);
	ss_merge_release_to(&m, 5 * s1);
	CHECK(n_out == 2, "thread 6, which the unit defines, holds the floor: %zu released", n_out);
	ss_merge_declare(&m, 6);
	ss_merge_release_to(&m, 5 * s1);
	CHECK(n_out == 5 && out[2].thread == 6 && out[4].thread == 7, "declared, it goes: %zu released", n_out);
	ss_merge_drain(&m);
	n_out = 0;
	ss_merge_push(&m, &sw5);
	ss_merge_release_to(&m, 5 * s1);
	CHECK(n_out == 0, "a drain forgets what the unit defined: %zu released", n_out);
	ss_merge_drain(&m);
	ss_merge_free(&m);
}

static size_t n_counted;

static int count_only(void *ctx, const struct ss_event *r)
{
	(void)ctx, (void)r;
	n_counted++;
	return 0;
}

static double thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n threads' sampler records, each thread declared after its record is
 * pushed, and its record released, while another thread's record (later than
 * all of them) waits for its definition all along: the CPU time of the
 * pushes and of the declarations. Each record's stream is empty again before
 * the next one comes, and trimmed now and then: the streams stay, their
 * memory does not. */
static void declare_cpu(size_t n, double *push, double *declare)
{
	struct ss_merge m;
	ss_merge_init(&m, count_only, NULL);
	n_counted = 0;
	struct ss_event held = ev(SS_EV_SWITCH, 1 + n, 1000000000000ull, 0);
	held.tid = 7;
	CHECK(ss_merge_push(&m, &held) == 0, "push");
	*push = *declare = 0;
	for (size_t i = 0; i < n; i++) {
		struct ss_event r = ev(SS_EV_SWITCH, 1 + i, 1000000 + i, 0);
		r.tid = 100000 + i;
		double t0 = thread_cpu();
		CHECK(ss_merge_push(&m, &r) == 0, "push");
		double t1 = thread_cpu();
		ss_merge_declare(&m, 1 + i);
		*push += t1 - t0;
		*declare += thread_cpu() - t1;
		ss_merge_release_to(&m, UINT64_MAX);
		if (i % 64 == 63)
			ss_merge_trim(&m); /* an empty stream keeps a chunk (64 KiB) till then */
	}
	CHECK(n_counted == n, "each declared record goes: %zu of %zu released", n_counted, n);
	ss_merge_declare(&m, 1 + n);
	ss_merge_release_to(&m, UINT64_MAX);
	CHECK(n_counted == n + 1, "the held one goes once declared");
	ss_merge_free(&m);
}

/* A declaration visits the streams of its thread, not all of them: with
 * 32000 threads (hostile input: samples of that many threads before their
 * definitions) declaring costs about what pushing does. Walking every stream
 * while any waited made it quadratic (seconds of CPU). */
static void test_declare_many(void)
{
	const size_t n = 32000;
	double push, declare;
	declare_cpu(n, &push, &declare);
	CHECK(declare <= 3 * push + 0.005, "declaring %zu threads took %.4f s of CPU, pushing their records %.4f s",
	      n, declare, push);
	printf("merge: %zu threads' records pushed in %.4f s CPU, their threads declared in %.4f s\n", n, push,
	       declare);
}

static void test_fields(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	struct ss_event in[20];
	memset(in, 0, sizeof in);
	size_t n = 0;
	in[n] = ev(SS_EV_POLL_BEGIN, 5, 1, 11), in[n++].u.poll_begin.location = 12;
	in[n] = ev(SS_EV_QUEUE, 5, 2, 0), in[n].u.queue.local = 3, in[n].u.queue.global = 4,
	in[n++].u.queue.unknown = SS_QUEUE_NO_GLOBAL;
	/* what a source may say of parks, wakes and spans */
	in[n] = ev(SS_EV_PARK, 5, 2, 0), in[n].u.park.cpu_ns = 123, in[n++].u.park.flags = SS_PARK_F_CPU;
	in[n] = ev(SS_EV_UNPARK, 5, 2, 0), in[n].u.unpark.cpu_ns = 456, in[n].u.unpark.sched_wait_ns = 78,
	in[n++].u.unpark.flags = SS_PARK_F_CPU | SS_PARK_F_SCHED;
	in[n] = ev(SS_EV_WAKE, 5, 2, 0), in[n].u.wake.task = 30, in[n++].u.wake.waker = 31;
	in[n] = ev(SS_EV_TERMINATE, 5, 2, 0), in[n++].u.terminate.task = 32;
	in[n] = ev(SS_EV_SPAN_BEGIN, 5, 2, 0),
	in[n++].u.span = (__typeof__(in[0].u.span)){ 40, 41, 42, 43, 44 };
	in[n] = ev(SS_EV_SPAN_END, 5, 2, 0), in[n++].u.span = (__typeof__(in[0].u.span)){ 40, 41, 0, 0, 0 };
	in[n] = ev(SS_EV_MARK, 5, 3, 0), in[n].u.mark.name = 9, in[n++].u.mark.value = -42;
	in[n] = ev(SS_EV_WORKER_BEGIN, 5, 4, 0), in[n].u.worker_begin.runtime = 7,
	in[n++].u.worker_begin.index = 2;
	in[n] = ev(SS_EV_LOSS, 5, 5, 0), in[n].u.loss.count = 100, in[n].u.loss.span = 200,
	in[n++].u.loss.reason = 3;
	in[n].type = SS_EV_SAMPLE, in[n].ts = 6, in[n].thread = 5, in[n].tid = 77,
	in[n++].u.sample = (__typeof__(in[0].u.sample)){ 2, 1000, 1, 33 };
	in[n].type = SS_EV_SWITCH, in[n].ts = 7, in[n].thread = 5, in[n].tid = 77,
	in[n++].u.switch_ev = (__typeof__(in[0].u.switch_ev)){ 1, 3 };
	in[n].type = SS_EV_COMM, in[n].ts = 8, in[n].thread = 5, in[n].tid = 77, in[n].u.comm.name = "worker-x",
	in[n++].u.comm.len = 8;
	in[n].type = SS_EV_SAMPLER_LOSS, in[n].ts = 9, in[n].tid = 77,
	in[n++].u.sampler_loss = (__typeof__(in[0].u.sampler_loss)){ 10, 20, 1 };
	in[n].type = SS_EV_STALL, in[n].ts = 10, in[n].thread = 5, in[n].tid = 77,
	in[n].u.stall = (__typeof__(in[0].u.stall)){ 11, 12, 1, 0, 2, 1, 44, "blocked in read", 15 };
	n++;
	in[n].type = SS_EV_STALL_END, in[n].ts = 11, in[n].thread = 5, in[n].tid = 77,
	in[n++].u.stall_end = (__typeof__(in[0].u.stall_end)){ 11, 1, 3 };
	in[n].type = SS_EV_TASK_DUMP, in[n].ts = 12, in[n].thread = 5, in[n].tid = 77,
	in[n++].u.task_dump = (__typeof__(in[0].u.task_dump)){ 11, 12, 5000, 45 };
	for (size_t i = 0; i < n; i++)
		CHECK(ss_merge_push(&m, &in[i]) == 0, "push %u", in[i].type);
	ss_merge_drain(&m);
	CHECK(n_out == n, "%zu of %zu delivered", n_out, n);
	for (size_t i = 0; i < n && i < n_out; i++) {
		const struct ss_event *a = &in[i], *b = &out[i];
		CHECK(a->type == b->type && a->ts == b->ts && a->thread == b->thread && a->tid == b->tid,
		      "event %zu header", i);
		switch (a->type) {
		case SS_EV_COMM:
			CHECK(!strcmp(names[i], "worker-x"), "COMM '%s'", names[i]);
			break;
		case SS_EV_STALL:
			CHECK(!strcmp(names[i], "blocked in read"), "STALL reason '%s'", names[i]);
			CHECK(b->u.stall.task == 11 && b->u.stall.location == 12 && b->u.stall.poll_ts == 1 &&
				      b->u.stall.kind == 2 && b->u.stall.syscall1 == 1 && b->u.stall.stack == 44,
			      "STALL fields");
			break;
		default:
			CHECK(!memcmp(&a->u, &b->u, sizeof a->u), "event %zu (%u) fields", i, a->type);
		}
	}
	ss_merge_free(&m);
}

static void test_error(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect, NULL);
	n_out = 0;
	for (uint64_t t = 1; t <= 5; t++) {
		struct ss_event r = ev(SS_EV_PARK, 1, t, 0);
		ss_merge_push(&m, &r);
	}
	fail_at = 2;
	CHECK(n_out == 0, "nothing delivered yet");
	CHECK(ss_merge_drain(&m) == 7, "the delivery error is returned");
	CHECK(n_out == 2, "%zu delivered before the error", n_out);
	fail_at = -1;
	CHECK(ss_merge_drain(&m) == 0 && n_out == 4, "the rest after it (%zu)", n_out);
	/* After a drain, earlier times (the next recording) are not late. */
	struct ss_event early = ev(SS_EV_PARK, 9, 1, 0), later = ev(SS_EV_PARK, 8, 3, 0);
	ss_merge_push(&m, &later);
	ss_merge_push(&m, &early);
	CHECK(m.late == 0, "%llu late after a drain", (unsigned long long)m.late);
	ss_merge_free(&m);
}

/* ---- many records: chunks --------------------------------------------------- */

#define BIG 60000

struct rec {
	uint64_t key, ts;
	uint32_t seq;
	uint64_t thread, task;
};
static struct rec big_in[BIG], big_out[BIG];
static size_t big_n;

static int collect_big(void *ctx, const struct ss_event *r)
{
	(void)ctx;
	if (big_n < BIG)
		big_out[big_n] = (struct rec){ 0, r->ts, 0, r->thread, r->type == SS_EV_STALL_END ? r->u.stall_end.task
											      : r->u.poll_begin.task };
	big_n++;
	return 0;
}

static int by_key_seq(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_chunks(void)
{
	struct ss_merge m;
	ss_merge_init(&m, collect_big, NULL);
	m.window_ns = UINT64_MAX / 2; /* nothing leaves before the drain */
	m.max_buffered = BIG + 1;
	big_n = 0;
	/* Three threads in long runs of 700 (several chunks each by the end), a
	 * watchdog stream whose records arrive up to 1000 ns late (placed by
	 * time, across chunk boundaries), timestamps that step back now and then
	 * on thread 2 (file order kept). */
	uint64_t seed = 12345, clock[4] = { 0 }, maxk[4] = { 0 };
	size_t n = 0;
	uint32_t seq = 0;
	while (n < BIG) {
		for (uint64_t th = 1; th <= 3 && n < BIG; th++) {
			for (int i = 0; i < 700 && n < BIG; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				clock[th] += 1 + (seed >> 60);
				uint64_t ts = clock[th];
				if (th == 2 && (seed >> 50 & 63) == 0 && ts > 40)
					ts -= 40;
				struct ss_event r = ev(SS_EV_POLL_BEGIN, th, ts, n);
				CHECK(ss_merge_push(&m, &r) == 0, "push");
				if (ts > maxk[th])
					maxk[th] = ts;
				big_in[n] = (struct rec){ maxk[th], ts, seq++, th, n };
				n++;
				if ((seed >> 40 & 15) == 0 && n < BIG) {
					uint64_t st = clock[th] > 1000 ? clock[th] - (seed >> 20 & 1023) : clock[th];
					struct ss_event w = ev(SS_EV_STALL_END, 9, st, 0);
					w.tid = 9;
					w.u.stall_end.task = n;
					CHECK(ss_merge_push(&m, &w) == 0, "push");
					big_in[n] = (struct rec){ st, st, seq++, 9, n };
					n++;
				}
			}
		}
	}
	CHECK(ss_merge_drain(&m) == 0, "drain");
	qsort(big_in, BIG, sizeof *big_in, by_key_seq);
	CHECK(big_n == BIG, "%zu delivered of %d", big_n, BIG);
	size_t bad = 0;
	for (size_t i = 0; i < BIG && i < big_n; i++)
		if (big_out[i].task != big_in[i].task || big_out[i].ts != big_in[i].ts)
			bad++;
	CHECK(bad == 0, "%zu of %d records out of (time, arrival) order", bad, BIG);
	CHECK(m.late == 0, "%llu late", (unsigned long long)m.late);

	/* A buffer of 3000 filled and emptied again and again: records in time
	 * order come out in time order, and the chunks come back for reuse (the
	 * pool never holds more than the buffer needs). */
	ss_merge_free(&m);
	ss_merge_init(&m, collect_big, NULL);
	m.max_buffered = 3000;
	big_n = 0;
	size_t most = 0, most_slabs = 0;
	for (uint64_t t = 1; t <= BIG; t++) {
		struct ss_event r = ev(SS_EV_POLL_BEGIN, 1 + t % 4, t, t);
		CHECK(ss_merge_push(&m, &r) == 0, "push");
		if (t % 5000 == 0) {
			CHECK(ss_merge_drain(&m) == 0, "drain");
			if (m.npool > most)
				most = m.npool;
		}
		if (m.nslabs > most_slabs)
			most_slabs = m.nslabs;
	}
	CHECK(ss_merge_drain(&m) == 0, "drain");
	bad = 0;
	for (size_t i = 0; i < BIG && i < big_n; i++)
		if (big_out[i].ts != i + 1)
			bad++;
	CHECK(big_n == BIG && bad == 0, "%zu delivered, %zu out of order", big_n, bad);
	CHECK(most <= 3000 / 1024 + 1 + 4, "the pool held %zu chunks for a buffer of 3000", most);
	CHECK(most_slabs == 1, "%zu slabs of 32 chunks for a buffer of 3000", most_slabs);
	ss_merge_trim(&m);
	CHECK(m.npool == 0, "trimmed: %zu chunks kept", m.npool);
	CHECK(m.nslabs == 0, "trimmed: %zu slabs kept", m.nslabs);

	/* A trim while a stream holds records keeps that slab (and its free
	 * chunks for reuse); what was buffered still comes out, in order. */
	big_n = 0;
	for (uint64_t t = 1; t <= 2500; t++) {
		struct ss_event r = ev(SS_EV_POLL_BEGIN, t <= 2400 ? 1 + t % 2 : 3, t, t);
		CHECK(ss_merge_push(&m, &r) == 0, "push");
	}
	size_t held = m.buffered;
	ss_merge_trim(&m);
	CHECK(m.nslabs == 1, "trimmed with %zu records held: %zu slabs kept", held, m.nslabs);
	for (uint64_t t = 2501; t <= 5000; t++) {
		struct ss_event r = ev(SS_EV_POLL_BEGIN, 1 + t % 4, t, t);
		CHECK(ss_merge_push(&m, &r) == 0, "push");
	}
	CHECK(ss_merge_drain(&m) == 0, "drain");
	bad = 0;
	for (size_t i = 0; i < big_n; i++)
		if (big_out[i].ts != i + 1)
			bad++;
	CHECK(big_n == 5000 && bad == 0, "after a trim: %zu delivered, %zu out of order", big_n, bad);
	ss_merge_trim(&m);
	CHECK(m.nslabs == 0 && m.npool == 0, "trimmed empty: %zu slabs, %zu chunks kept", m.nslabs, m.npool);
	ss_merge_free(&m);
}

int main(void)
{
	test_order();
	test_backwards_and_stalls();
	test_window_late_cap();
	test_floor();
	test_declare_many();
	test_fields();
	test_error();
	test_chunks();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("merge: ok\n");
	return failures ? 1 : 0;
}
