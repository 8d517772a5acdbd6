/*
 * writer_pace.c - when the writer wakes and when it writes its block.
 *
 * Hooks never wake the writer (that would be a system call on the hook path), so
 * the writer must come and look. Looking every few milliseconds costs an idle
 * program a wake-up each time; this file makes the writer look only as often as
 * two promises need:
 *
 *   - nothing older than the flush interval F is lost to a SIGKILL. An event
 *     stamped t is seen at the first wake after t; sleeping at most P = F - 2M
 *     means it is seen by t + F - M even when that wake comes M late. A block is
 *     written at the last wake before its oldest event turns F old: at a wake at
 *     now, it is written when oldest + F <= now + (the coming sleep) + M, that is
 *     when the next wake, if it came M late, would be too late;
 *   - no ring overflows for want of draining. The fullest ring's fill rate over
 *     the last sleep (its backlog over the time slept; on the way down halved at
 *     most once a cycle) gives the time to fill a quarter of a ring, so a rate
 *     that doubles still finds the ring half empty; the writer sleeps no longer
 *     than that, and never less than the
 *     old fixed tick (TICK_NS): a ring that fills faster than that dropped events
 *     before this file existed too. A burst after a quiet spell is caught by the
 *     watchdog, which reads every ring's head at its own ticks anyway and nudges
 *     a writer in a long sleep when a ring passes a quarter full (writer.c).
 *
 * Another buffer's bound (the sampler's rings, ss_pace_bound) only shortens
 * the sleep, down to the shortest the pace itself allows.
 *
 * M is F/8 (at least 1 ms, at most 50 ms): the lateness of a wake on a loaded
 * machine that the flush promise absorbs. P is capped at 1 s so the writer's
 * heartbeat (stallscope_get_stats' writer_healthy) stays fresh.
 *
 * Pure arithmetic on the writer's own numbers: tested as such by test_writer_pace.
 */
#include "writer-private.h"

#define PACE_MAX_NS 1000000000ull

SS_INTERNAL void ss_pace_init(struct ss_pace *p, uint64_t flush_ns, uint64_t ring_events)
{
	memset(p, 0, sizeof *p);
	p->flush_ns = flush_ns ? flush_ns : 1000000u;
	uint64_t m = p->flush_ns / 8;
	if (m < 1000000u)
		m = 1000000u;
	if (m > 50000000u)
		m = 50000000u;
	/* Small flush intervals: the margin cannot eat the whole interval. */
	if (2 * m >= p->flush_ns)
		m = p->flush_ns / 4;
	p->margin_ns = m;
	p->period_ns = p->flush_ns - 2 * m;
	if (p->period_ns > PACE_MAX_NS)
		p->period_ns = PACE_MAX_NS;
	p->min_ns = TICK_NS < p->period_ns ? TICK_NS : p->period_ns;
	if (p->min_ns == 0)
		p->min_ns = 1;
	p->ring_events = ring_events ? ring_events : 1;
}

SS_INTERNAL uint64_t ss_pace_sleep(struct ss_pace *p, uint64_t backlog, uint64_t slept_ns)
{
	/* Events per second of the fullest ring, as a 32.32 fixed-point rate would
	 * overflow: keep events per 2^20 ns (about a millisecond) instead. */
	uint64_t rate = 0;
	if (backlog) {
		uint64_t d = slept_ns >> 20 ? slept_ns >> 20 : 1;
		rate = backlog / d + 1;
	}
	/* Rising at once, falling by half a cycle at most: a ring that was busy a
	 * moment ago is likely to be busy again. */
	p->rate = rate > p->rate / 2 ? rate : p->rate / 2;
	uint64_t s = p->period_ns;
	if (p->rate) {
		/* A quarter of a ring at that rate, in ns. */
		uint64_t units = p->ring_events / 4 / p->rate;
		uint64_t fill = units > (UINT64_MAX >> 21) ? UINT64_MAX : units << 20;
		if (fill < s)
			s = fill;
	}
	if (s < p->min_ns)
		s = p->min_ns;
	return s;
}

SS_INTERNAL uint64_t ss_pace_bound(const struct ss_pace *p, uint64_t sleep_ns, uint64_t bound_ns)
{
	/* Never raised: under a short flush interval the sleep is below the tick
	 * already, and the flush promise is about that sleep. */
	if (bound_ns >= sleep_ns)
		return sleep_ns;
	return bound_ns > p->min_ns ? bound_ns : p->min_ns;
}

SS_INTERNAL int ss_pace_flush_now(const struct ss_pace *p, uint64_t oldest_ns, uint64_t now_ns,
				  uint64_t sleep_ns)
{
	return oldest_ns + p->flush_ns <= now_ns + sleep_ns + p->margin_ns;
}
