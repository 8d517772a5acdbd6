/*
 * sampler_timer.c - the fallback when perf_event_open is refused: one POSIX timer
 * per sampled thread on that thread's CPU-time clock, delivering a real-time
 * signal to that very thread (SIGEV_THREAD_ID). The handler walks frame pointers
 * from the interrupted context into a per-thread single-producer ring, or, when
 * the writer unwinds by CFI, copies the interrupted registers and the stack above
 * their sp into it (bounded by the thread's stack, as the walk is).
 *
 * The signal is a free real-time one claimed through sigwalk.c, which also holds
 * the bounded frame walk (shared with stall captures); if every real-time signal
 * is taken, the timer mode is refused and says so. A POSIX timer never queues
 * more than one instance of its signal (further expiries become si_overrun), so a
 * slow handler cannot pile up.
 */
#include "sampler-private.h"
#include "sigwalk.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define IDX_BITS 10
_Static_assert((1u << IDX_BITS) == SS_SAMPLER_MAX_THREADS, "sigval index width");
#define GEN_MASK ((1u << (31 - IDX_BITS)) - 1)

static struct sigaction old_action;

static uint32_t armed_value(uint32_t gen)
{
	return ((gen & GEN_MASK) << 1) | 1u;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe (vDSO) */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(struct ss_sthread *t, const ucontext_t *uc, int overrun)
{
	uint64_t now = mono_ns();
	uint64_t head = atomic_load_explicit(&t->thead, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&t->ttail, memory_order_acquire);
	if (head - tail > t->tmask) {
		if (atomic_fetch_add_explicit(&t->tlost, 1, memory_order_relaxed) == 0)
			atomic_store_explicit(&t->tlost_first, now, memory_order_relaxed);
		atomic_store_explicit(&t->tlost_last, now, memory_order_release);
		return;
	}
	struct ss_tsample *s = (struct ss_tsample *)(void *)(t->tring + (head & t->tmask) * ss_smp.tstride);
	s->ts = now;
	s->weight = t->weight * (1u + (overrun > 0 ? (uint64_t)overrun : 0));
	if (ss_smp.stack_copy) {
		ss_ucopy_take(ss_tsample_ucopy(s), ss_tsample_stack(s), ss_smp.stack_copy, uc,
			      t->stack_lo, t->stack_hi);
		s->nframes = 0;
	} else {
		uint64_t pc, sp, fp;
		ss_uc_regs(uc, &pc, &sp, &fp);
		s->nframes = ss_fp_walk(pc, sp, fp, t->stack_lo, t->stack_hi, ss_tsample_frames(s),
					SS_MAX_FRAMES);
	}
	atomic_store_explicit(&t->thead, head + 1, memory_order_release);
}

static void on_signal(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	int saved = errno;
	if (si && si->si_code == SI_TIMER) {
		uint32_t v = (uint32_t)si->si_value.sival_int;
		struct ss_sthread *t = &ss_smp.threads[v & (SS_SAMPLER_MAX_THREADS - 1)];
		/* Count ourselves in before looking: the writer disarms, then waits for
		 * inflight to drain before freeing the ring. */
		atomic_fetch_add(&t->inflight, 1);
		if (atomic_load(&t->armed) == armed_value(v >> IDX_BITS))
			record(t, (const ucontext_t *)ucv, si->si_overrun);
		atomic_fetch_sub(&t->inflight, 1);
	}
	errno = saved;
}

SS_INTERNAL int ss_timer_init(char *why, size_t len)
{
	if (ss_smp.timer_ready)
		return 0;
	int chosen = ss_rtsig_claim(on_signal, &old_action, why, len);
	if (!chosen)
		return -1;
	/* Can this kernel time another thread's CPU clock at all? Try on ours. */
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_NONE;
	timer_t probe;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &probe) != 0) {
		snprintf(why, len, "timer_create(CLOCK_THREAD_CPUTIME_ID): %s", ss_errno_name(errno));
		ss_rtsig_release(chosen, &old_action);
		return -1;
	}
	timer_delete(probe);
	ss_smp.signo = chosen;
	ss_smp.timer_ready = 1;
	return 0;
}

SS_INTERNAL void ss_timer_fini(void)
{
	if (!ss_smp.timer_ready)
		return;
	ss_rtsig_release(ss_smp.signo, &old_action);
	ss_smp.timer_ready = 0;
}

static int arm(struct ss_sthread *t, int on)
{
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	if (on) {
		its.it_value.tv_sec = (time_t)(t->weight / 1000000000u);
		its.it_value.tv_nsec = (long)(t->weight % 1000000000u);
		its.it_interval = its.it_value;
	}
	return timer_settime(t->timer, 0, &its, NULL);
}

/* A thread that blocks our signal gets no samples until it unblocks it: say so
 * once rather than leave an empty lane unexplained. */
static void warn_if_blocked(uint32_t tid)
{
	static int warned;
	if (warned)
		return;
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%u/status", tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	unsigned long long blk = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "SigBlk: %llx", &blk) == 1)
			break;
	fclose(f);
	if ((blk >> (ss_smp.signo - 1)) & 1) {
		warned = 1;
		ss_sampler_note("thread %u blocks signal %d: no timer samples from it while it does",
				tid, ss_smp.signo);
	}
}

SS_INTERNAL int ss_timer_open(struct ss_sthread *t, uint32_t index, char *why, size_t len)
{
	if (!t->tring) {
		t->tring = calloc(ss_smp.timer_ring, ss_smp.tstride);
		if (!t->tring) {
			snprintf(why, len, "timer ring: out of memory");
			return -1;
		}
	}
	t->tmask = ss_smp.timer_ring - 1;
	t->weight = ss_smp.period_ns;
	atomic_store(&t->thead, 0);
	atomic_store(&t->ttail, 0);
	atomic_store(&t->tlost, 0);

	/* By tid, not pthread_t: the writer starts timers for other threads. */
	clockid_t clk = ss_thread_cpuclock(t->tid);
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = ss_smp.signo;
	sev.sigev_value.sival_int = (int)(index | ((t->gen & GEN_MASK) << IDX_BITS));
	sev._sigev_un._tid = (pid_t)t->tid;
	atomic_store(&t->armed, armed_value(t->gen));
	if (timer_create(clk, &sev, &t->timer) != 0) {
		int e = errno;
		atomic_store(&t->armed, 0);
		snprintf(why, len, "timer_create(thread %u CPU clock): %s", t->tid, ss_errno_name(e));
		free(t->tring);
		t->tring = NULL;
		return -e;
	}
	t->have_timer = 1;
	warn_if_blocked(t->tid);
	if (ss_smp.enabled && arm(t, 1) != 0) {
		int e = errno;
		snprintf(why, len, "timer_settime: %s", ss_errno_name(e));
		ss_timer_close(t);
		ss_timer_free(t);
		return -e;
	}
	return 0;
}

SS_INTERNAL void ss_timer_close(struct ss_sthread *t)
{
	atomic_store(&t->armed, 0);
	if (t->have_timer) {
		timer_delete(t->timer);
		t->have_timer = 0;
	}
	/* A handler that read armed before we cleared it may still be storing. */
	while (atomic_load(&t->inflight) != 0)
		sched_yield();
}

SS_INTERNAL void ss_timer_free(struct ss_sthread *t)
{
	free(t->tring);
	t->tring = NULL;
}

SS_INTERNAL void ss_timer_enable(struct ss_sthread *t, int on)
{
	if (t->have_timer)
		arm(t, on);
}

SS_INTERNAL void ss_timer_drain(struct ss_sthread *t, const struct ss_sample_sink *sink)
{
	if (!t->tring)
		return;
	uint64_t tail = atomic_load_explicit(&t->ttail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&t->thead, memory_order_acquire);
	for (; tail != head; tail++) {
		struct ss_tsample *ts = (struct ss_tsample *)(void *)(t->tring + (tail & t->tmask) * ss_smp.tstride);
		struct ss_ustack us = { ss_tsample_ucopy(ts), ss_tsample_stack(ts) };
		struct ss_sample s = {
			.ts = ts->ts,
			.tid = t->tid,
			.cpu = UINT32_MAX,
			.weight = ts->weight,
			.kind = SS_SAMPLE_CPU,
			.nframes = ts->nframes <= SS_MAX_FRAMES ? ts->nframes : SS_MAX_FRAMES,
			.nkernel = 0,
			.frames = ss_tsample_frames(ts),
			.ustack = ss_smp.stack_copy ? &us : NULL,
		};
		if (sink->sample)
			sink->sample(sink->ctx, &s);
		ss_smp.stats.samples++;
	}
	atomic_store_explicit(&t->ttail, tail, memory_order_release);

	uint64_t lost = atomic_exchange_explicit(&t->tlost, 0, memory_order_acquire);
	if (lost) {
		struct ss_sampler_lost l = {
			.ts = atomic_load_explicit(&t->tlost_first, memory_order_relaxed),
			.ts_end = atomic_load_explicit(&t->tlost_last, memory_order_acquire),
			.tid = t->tid,
			.reason = SS_SLOSS_FALLBACK,
			.count = lost,
		};
		if (l.ts_end < l.ts)
			l.ts_end = l.ts;
		if (sink->lost)
			sink->lost(sink->ctx, &l);
		ss_smp.stats.lost += lost;
	}
}
