/*
 * test_writer_pace.c - the writer's adaptive sleep keeps the flush promise and
 * the rings' room, shown on a simulated writer (writer_pace.c, linked directly).
 *
 * The simulation replays what writer.c does with the pace: at each wake it
 * drains every event stamped up to the wake, asks ss_pace_sleep() for the next
 * sleep from the fullest ring's backlog, and writes the block when
 * ss_pace_flush_now() says so. Every wake comes late by a random amount up to
 * the margin (a loaded machine), events arrive in idle spells, light trickles,
 * steady streams and bursts, and for flush intervals from 1 ms to 60 s:
 *   - every event is written no later than its stamp plus the flush interval
 *     (what survives a SIGKILL: test_sigkill checks it on real processes);
 *   - once a rate has held for a sleep, no ring holds more than half its
 *     capacity at a wake (no drops for want of draining), down to the old fixed
 *     tick, below which the old writer dropped too;
 *   - a bound from the sampler's rings only ever shortens the sleep (a flush
 *     interval below the tick keeps its promise);
 *   - an idle or light recorder sleeps the whole period (F - 2M, 75 ms at the
 *     default 100 ms), and a busy one no less than the old 10 ms tick.
 * Simulated time: nothing here depends on the machine's load.
 */
#include "writer-private.h"

#include <stdio.h>
#include <stdlib.h>

#include "trace_check.h" /* CHECK */

#define MS 1000000ull

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

/* Events of one ring: when the next one comes, per phase. */
struct phase {
	uint64_t len_ns, gap_ns; /* gap 0: none at all (idle) */
};

struct sim {
	struct ss_pace p;
	uint64_t cap;
	uint64_t next_ev;        /* stamp of the next event not yet produced */
	uint64_t pending_first;  /* oldest undrained event, 0 none */
	uint64_t pending;        /* undrained events (the ring's backlog) */
	uint64_t block_oldest;   /* oldest event in the block, 0 none */
	uint64_t block_n;
	uint64_t written, worst_lag, wakes, max_backlog_steady;
	uint64_t last_gap;       /* the gap in force at the previous wake */
	int steady_cycles;       /* wakes since the gap last changed */
};

/* Produces the ring's events up to time t at gap (0: none). */
static void produce(struct sim *s, uint64_t t, uint64_t gap)
{
	if (!gap) {
		s->next_ev = t + 1;
		return;
	}
	for (; s->next_ev <= t; s->next_ev += gap) {
		if (!s->pending_first)
			s->pending_first = s->next_ev;
		s->pending++;
	}
}

static void write_block(struct sim *s, uint64_t t)
{
	if (!s->block_n)
		return;
	uint64_t lag = t - s->block_oldest;
	CHECK(lag <= s->p.flush_ns, "F %llu ms: an event of %llu ns was written %llu ns after its stamp",
	      (unsigned long long)(s->p.flush_ns / MS), (unsigned long long)s->block_oldest,
	      (unsigned long long)lag);
	if (lag > s->worst_lag)
		s->worst_lag = lag;
	s->written += s->block_n;
	s->block_n = 0;
	s->block_oldest = 0;
}

/* bound_ns: another buffer's bound on the sleep (the sampler's rings), 0 none. */
static void run(uint64_t flush_ns, uint64_t cap, const struct phase *ph, int nph, uint64_t bound_ns)
{
	struct sim s = { .cap = cap };
	ss_pace_init(&s.p, flush_ns, cap);
	CHECK(s.p.period_ns + 2 * s.p.margin_ns <= flush_ns, "period %llu + 2 x margin %llu > F %llu",
	      (unsigned long long)s.p.period_ns, (unsigned long long)s.p.margin_ns,
	      (unsigned long long)flush_ns);
	uint64_t t = 1000 * MS, last = 0, end = t;
	s.next_ev = t;
	int k = 0;
	uint64_t phase_end = t + ph[0].len_ns;
	for (int i = 0; i < nph; i++)
		end += ph[i].len_ns;
	while (t < end) {
		while (t >= phase_end && k + 1 < nph)
			phase_end += ph[++k].len_ns;
		uint64_t gap = ph[k].gap_ns;
		produce(&s, t, gap);
		/* The wake: everything up to t is drained into the block. */
		uint64_t backlog = s.pending;
		if (gap == s.last_gap && gap)
			s.steady_cycles++;
		else
			s.steady_cycles = 0;
		s.last_gap = gap;
		/* Held for two wakes, at a rate the old tick (plus a late wake) kept
		 * under a quarter of a ring: at most half a ring now. */
		if (s.steady_cycles >= 2 && (s.p.min_ns + s.p.margin_ns) / gap < cap / 4) {
			CHECK(backlog <= cap / 2, "F %llu ms: a ring at one event per %llu ns reached %llu of %llu",
			      (unsigned long long)(flush_ns / MS), (unsigned long long)gap,
			      (unsigned long long)backlog, (unsigned long long)cap);
			if (backlog > s.max_backlog_steady)
				s.max_backlog_steady = backlog;
		}
		if (s.pending) {
			if (!s.block_oldest || s.pending_first < s.block_oldest)
				s.block_oldest = s.pending_first;
			s.block_n += s.pending;
			s.pending = 0;
			s.pending_first = 0;
		}
		uint64_t sleep = ss_pace_sleep(&s.p, backlog, last ? t - last : 0);
		CHECK(sleep >= s.p.min_ns && sleep <= s.p.period_ns, "sleep %llu outside [%llu, %llu]",
		      (unsigned long long)sleep, (unsigned long long)s.p.min_ns,
		      (unsigned long long)s.p.period_ns);
		if (bound_ns) {
			uint64_t b = ss_pace_bound(&s.p, sleep, bound_ns);
			/* never raised; honoured down to the pace's shortest sleep */
			CHECK(b <= sleep && b >= s.p.min_ns &&
			      b <= (bound_ns > s.p.min_ns ? bound_ns : s.p.min_ns),
			      "F %llu ms: sleep %llu bound by %llu to %llu", (unsigned long long)(flush_ns / MS),
			      (unsigned long long)sleep, (unsigned long long)bound_ns, (unsigned long long)b);
			sleep = b;
		}
		if (s.block_n && ss_pace_flush_now(&s.p, s.block_oldest, t, sleep))
			write_block(&s, t);
		last = t;
		/* Late by up to the margin, as a busy machine makes it. */
		t += sleep + rnd(s.p.margin_ns + 1);
		s.wakes++;
	}
	printf("  F %6llu ms, ring %7llu, bound %4.1f ms: %7llu events, %6llu wakes, worst write lag "
	       "%6.2f ms, steady backlog max %llu\n",
	       (unsigned long long)(flush_ns / MS), (unsigned long long)cap, (double)bound_ns / 1e6,
	       (unsigned long long)s.written, (unsigned long long)s.wakes, (double)s.worst_lag / 1e6,
	       (unsigned long long)s.max_backlog_steady);
}

/* Idle and light: the whole period, however long the spell. */
static void check_quiet(void)
{
	struct ss_pace p;
	ss_pace_init(&p, 100 * MS, 65536);
	CHECK(p.period_ns == 75 * MS && p.margin_ns == 12500000u, "default pace: period %llu margin %llu",
	      (unsigned long long)p.period_ns, (unsigned long long)p.margin_ns);
	for (int i = 0; i < 100; i++)
		CHECK(ss_pace_sleep(&p, 0, 75 * MS) == 75 * MS, "idle: sleep not the period");
	/* The light workload of bench_overhead: about 3 events a millisecond. */
	for (int i = 0; i < 100; i++)
		CHECK(ss_pace_sleep(&p, 225, 75 * MS) == 75 * MS, "light: sleep not the period");
	/* Busy (2M events/s in one ring): back to the old tick at once. */
	CHECK(ss_pace_sleep(&p, 150000, 75 * MS) == TICK_NS, "busy: sleep not the tick");
	/* And back to the period within a few cycles of calm. */
	uint64_t sl = 0;
	for (int i = 0; i < 20; i++)
		sl = ss_pace_sleep(&p, 0, sl ? sl : TICK_NS);
	CHECK(sl == 75 * MS, "calm again: sleep %llu", (unsigned long long)sl);
	/* A block is written at the last wake before its oldest event is F old. */
	CHECK(!ss_pace_flush_now(&p, 1000 * MS, 1000 * MS, 75 * MS), "fresh block written");
	CHECK(ss_pace_flush_now(&p, 1000 * MS, 1013 * MS, 75 * MS), "block kept past its last chance");
	/* A huge flush interval still keeps the heartbeat under a second. */
	ss_pace_init(&p, 60000 * MS, 65536);
	CHECK(p.period_ns <= 1000 * MS, "period %llu for F 60 s", (unsigned long long)p.period_ns);
}

int main(void)
{
	check_quiet();
	const struct phase mixed[] = {
		{ 2000 * MS, 0 },            /* idle */
		{ 3000 * MS, 1 * MS },       /* light trickle */
		{ 500 * MS, 20000 },         /* 50k events/s */
		{ 1000 * MS, 0 },
		{ 300 * MS, 500 },           /* 2M events/s burst */
		{ 2000 * MS, 333 * MS },     /* a few a second */
		{ 2000 * MS, 3000 },
		{ 1500 * MS, 0 },
		{ 1000 * MS, 100000 },
	};
	int n = (int)(sizeof mixed / sizeof mixed[0]);
	const uint64_t fl[] = { 100 * MS, 10 * MS, 1 * MS, 5 * MS, 30 * MS, 1000 * MS, 60000 * MS };
	for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
		for (int rep = 0; rep < 3; rep++) {
			run(fl[i], 65536, mixed, n, 0);
			run(fl[i], 1u << 18, mixed, n, 0);
			run(fl[i], 1024, mixed, n, 0);
		}
	}
	/* The sampler's rings bound the sleep (ss_sampler_max_sleep_ns: small
	 * rings, a high rate): shorter than the pace's own sleep, longer than the
	 * tick, and shorter than both under a flush interval below the tick. */
	const uint64_t bounds[] = { 1 * MS, 3 * MS, 25 * MS };
	const uint64_t bfl[] = { 4 * MS, 5 * MS, 100 * MS };
	for (size_t i = 0; i < sizeof bfl / sizeof bfl[0]; i++)
		for (size_t j = 0; j < sizeof bounds / sizeof bounds[0]; j++)
			run(bfl[i], 65536, mixed, n, bounds[j]);
	/* A steady rate for a long time: wakes stay proportional to it. */
	const struct phase steady[] = { { 10000 * MS, 10000 } }; /* 100k/s */
	run(100 * MS, 65536, steady, 1, 0);
	printf("test_writer_pace: ok\n");
	return 0;
}
