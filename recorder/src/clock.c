/*
 * clock.c - the hooks' clock, and the writer's conversion of its stamps to
 * CLOCK_MONOTONIC nanoseconds (clock.h).
 *
 * The clock read is most of what a hook costs: clock_gettime(CLOCK_MONOTONIC)
 * through the vDSO reads the TSC (ordered, under a sequence count) and scales
 * it. Where the TSC is usable a hook stores the raw rdtsc value instead, and
 * the writer scales it, off the hot path. Usable means, all checked here when a
 * session starts:
 *   - x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8: a constant rate
 *     that keeps counting in idle states);
 *   - the kernel itself times with the TSC: clocksource tsc, or kvm-clock /
 *     hyperv_clocksource_tsc_page, which scale the host's TSC (another
 *     clocksource means the kernel found the TSC wanting);
 *   - one TSC for all CPUs: a reading taken on each CPU this process may use
 *     lies on one line against CLOCK_MONOTONIC within SKEW_NS.
 * Otherwise (or with STALLSCOPE_CLOCK=vdso) hooks keep clock_gettime, and the
 * reason is in the log and META "hook_clock".
 *
 * Conversion is a fixed function of the stamp: a line per knot, each knot
 * holding its TSC value, its ns (where the previous line got to: no jumps, no
 * going back) and a slope. Knots are only ever appended, past every stamp
 * converted so far, so adding one never changes a conversion already made: a
 * STALL record's poll_ts (a stamp the watchdog read from the ring) gives exactly
 * the time its POLL_BEGIN got when the writer drained it, and the importer
 * joins them on it. At most every KNOT_GAP_NS the writer measures the clock (a
 * CLOCK_MONOTONIC reading between two fenced TSC reads, the tightest of a few
 * tries) and appends a knot whose slope is the rate measured since the last
 * measurement plus a correction that takes the offset it found (the error of
 * the conversion at that instant: the drift since the last knot) out over the
 * next KNOT_GAP_NS; a second knot then continues at the measured rate, in case
 * the writer sleeps longer. CLOCK records carry the largest such offset of a
 * segment, with the rate and the latest knot; an offset over DRIFT_WARN_NS is
 * logged, and one past STEP_NS (a TSC that jumped) is stepped forward, or
 * absorbed by running at half rate when CLOCK_MONOTONIC is behind.
 */
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

SS_INTERNAL int ss_clock_tsc_on;

#define KNOTS 32768             /* knots kept: an hour of writer cycles and more */
#define KNOT_GAP_NS 100000000ull /* a measurement, and a knot, at most this often */
#define SKEW_NS 2000            /* CPUs whose TSCs disagree by more are not one clock */
#define DRIFT_WARN_NS 100000ull /* drift between two knots worth a log line */
#define STEP_NS 1000000ull      /* an offset too big to steer out */
#define WIDE_NS 10000ull        /* a reading this uncertain (preempted) is no measure */
#define MAX_CPUS 256            /* CPUs the start-up check visits */

struct knot {
	uint64_t tsc, ns;
	uint64_t mult; /* ns per tick << 32 from here to the next knot */
};

/* Apart from the rest: a session start resets C, and only the knots a session
 * appends are ever touched (768 KiB of zero pages otherwise made resident). */
static struct knot knots[KNOTS];

static struct {
	int tsc;
	uint64_t n;              /* knots appended; k[(n - 1) % KNOTS] is the latest */
	uint64_t hit;            /* index of the knot last converted in */
	uint64_t max_stamp;      /* largest stamp converted: knots go past it */
	uint64_t meas_tsc, meas_ns; /* the last measurement */
	uint64_t seg_points;     /* measurements in the current segment */
	uint64_t seg_drift;      /* largest |offset| in the current segment, ns */
	uint64_t max_drift;      /* ... of the session */
	uint64_t steps;          /* offsets past STEP_NS */
	uint64_t noisy;          /* readings too uncertain to use */
	int warned;
} C;

/* ns per stamp << 32, for durations on any thread. */
static _Atomic uint64_t rate_mult = 1ull << 32;

static inline struct knot *kt(uint64_t i)
{
	return &knots[i % KNOTS];
}

#if defined(__x86_64__)
static inline uint64_t rdtsc_fenced(void)
{
	/* lfence first: the read may not run ahead of the clock_gettime it brackets. */
	__builtin_ia32_lfence();
	uint64_t t = __builtin_ia32_rdtsc();
	__builtin_ia32_lfence();
	return t;
}
#else
static inline uint64_t rdtsc_fenced(void)
{
	return 0;
}
#endif

/* A TSC reading and the CLOCK_MONOTONIC time of the same instant, with the width
 * of the bracket (ticks) as its uncertainty: the tightest of tries. */
static void read_pair(uint64_t *tsc, uint64_t *ns, uint64_t *width, int tries)
{
	uint64_t best = UINT64_MAX;
	*tsc = *ns = 0;
	for (int i = 0; i < tries; i++) {
		uint64_t a = rdtsc_fenced();
		uint64_t t = ss_now();
		uint64_t b = rdtsc_fenced();
		if (b >= a && b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = t;
		}
	}
	*width = best;
}

static uint64_t mult_of(uint64_t dns, uint64_t dtsc)
{
	if (!dtsc)
		return 0;
	return (uint64_t)(((unsigned __int128)dns << 32) / dtsc);
}

static uint64_t scale(uint64_t d, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)d * mult) >> 32);
}

/* ---- is the TSC one clock? ---------------------------------------------------- */

#if defined(__x86_64__)
static int invariant_tsc(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1;
}
#endif

static void read_clocksource(char *out, size_t len)
{
	snprintf(out, len, "unknown");
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[64];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	snprintf(out, len, "%s", buf);
}

static int tsc_based(const char *cs)
{
	return !strcmp(cs, "tsc") || !strcmp(cs, "kvm-clock") ||
	       !strcmp(cs, "hyperv_clocksource_tsc_page");
}

struct cpu_check {
	int ok;                  /* 1 all CPUs agree, 0 one does not, -1 could not check */
	uint32_t checked, cpus;
	int worst_cpu;
	int64_t worst_ns;
	uint64_t tsc0, ns0, tsc1, ns1; /* readings before and after the tour */
	uint64_t cpu_ns;               /* the tour thread's CPU time */
	char why[160];
};

/* On a thread of its own (its affinity changes): a reading on every CPU it can
 * be moved to, between two readings on the CPU it started on. Each CPU's
 * reading must lie on the line through those two. */
static void *cpu_tour(void *arg)
{
	struct cpu_check *k = arg;
	ss_shim_internal_thread();
	cpu_set_t home;
	if (sched_getaffinity(0, sizeof home, &home) != 0) {
		k->ok = -1;
		snprintf(k->why, sizeof k->why, "sched_getaffinity: %s", strerror(errno));
		return NULL;
	}
	int n = get_nprocs_conf();
	if (n > MAX_CPUS)
		n = MAX_CPUS;
	if (n > CPU_SETSIZE)
		n = CPU_SETSIZE;
	k->cpus = (uint32_t)n;
	uint64_t w;
	uint64_t tsc[MAX_CPUS], ns[MAX_CPUS], width[MAX_CPUS];
	int have[MAX_CPUS];
	read_pair(&k->tsc0, &k->ns0, &w, 8);
	/* The CPU the thread is on first: on a VM a sched_setaffinity that moves
	 * the thread costs 70-85 us of CPU, one that keeps it where it is 15, so
	 * starting where it is saves a move (on two CPUs: one move, not one or
	 * two). The order does not change the verdict: every CPU is compared with
	 * the same two reads around the tour. */
	int here = sched_getcpu();
	if (here < 0 || here >= n)
		here = 0;
	for (int j = 0; j < n; j++) {
		int c = (here + j) % n;
		have[c] = 0;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		if (sched_setaffinity(0, sizeof one, &one) != 0)
			continue; /* offline, or not ours to use */
		read_pair(&tsc[c], &ns[c], &width[c], 8);
		have[c] = sched_getcpu() == c;
	}
	sched_setaffinity(0, sizeof home, &home);
	read_pair(&k->tsc1, &k->ns1, &w, 8);
	uint64_t mult = mult_of(k->ns1 - k->ns0, k->tsc1 - k->tsc0);
	k->ok = 1;
	for (int c = 0; c < n; c++) {
		if (!have[c])
			continue;
		k->checked++;
		uint64_t wns = scale(width[c], mult);
		int64_t expect = (int64_t)k->ns0 + (int64_t)scale(tsc[c] - k->tsc0, mult);
		if (tsc[c] < k->tsc0)
			expect = (int64_t)k->ns0 - (int64_t)scale(k->tsc0 - tsc[c], mult);
		int64_t off = (int64_t)ns[c] - expect;
		int64_t mag = off < 0 ? -off : off;
		if (wns > 20 * SKEW_NS)
			continue; /* preempted during every try: no verdict for this CPU */
		if (mag > (k->worst_ns < 0 ? -k->worst_ns : k->worst_ns)) {
			k->worst_ns = off;
			k->worst_cpu = c;
		}
		if ((uint64_t)mag > SKEW_NS + wns)
			k->ok = 0;
	}
	k->cpu_ns = ss_thread_cpu_ns();
	return NULL;
}

/* The last start's tour thread CPU: part of what starting costs. */
static uint64_t tour_cpu_ns;

SS_INTERNAL uint64_t ss_clock_start_cpu_ns(void)
{
	return tour_cpu_ns;
}

/* A tour already taken for the coming start (ss_clock_tour), with the
 * clocksource it read. */
static struct cpu_check toured;
static char toured_cs[64];
static int toured_want = -1;

/* Whether the TSC may be the hooks' clock before its CPUs are compared; cs
 * receives the kernel's clocksource. */
static int tsc_candidate(int32_t want, char *cs, size_t len)
{
	if (want == STALLSCOPE_CLOCK_VDSO)
		return 0;
#if !defined(__x86_64__) || !defined(__SIZEOF_INT128__)
	(void)cs;
	(void)len;
	return 0;
#else
	read_clocksource(cs, len);
	return invariant_tsc() && (want == STALLSCOPE_CLOCK_TSC || tsc_based(cs));
#endif
}

SS_INTERNAL void ss_clock_tour(int32_t want)
{
	toured_want = -1;
	memset(&toured, 0, sizeof toured);
	if (!tsc_candidate(want, toured_cs, sizeof toured_cs))
		return;
	uint64_t c0 = ss_thread_cpu_ns();
	cpu_tour(&toured);
	toured.cpu_ns -= c0;
	toured_want = want;
}

static int check_cpus(struct cpu_check *k, int32_t want)
{
	if (toured_want == want) {
		*k = toured;
		toured_want = -1;
		tour_cpu_ns = k->cpu_ns;
		return k->ok;
	}
	memset(k, 0, sizeof *k);
	pthread_t th;
	if (pthread_create(&th, NULL, cpu_tour, k) != 0) {
		k->ok = -1;
		snprintf(k->why, sizeof k->why, "cannot start a thread to visit the CPUs");
		return -1;
	}
	pthread_join(th, NULL);
	tour_cpu_ns = k->cpu_ns;
	return k->ok;
}

/* ---- the conversion ------------------------------------------------------------- */

static void append(uint64_t tsc, uint64_t ns, uint64_t mult)
{
	struct knot *q = kt(C.n++);
	q->tsc = tsc;
	q->ns = ns;
	q->mult = mult;
}

/* A measurement (tsc, ns): knots that take the conversion's offset there out
 * over the next KNOT_GAP_NS, then continue at the measured rate. */
static void steer(uint64_t tsc, uint64_t ns)
{
	uint64_t rate = mult_of(ns - C.meas_ns, tsc - C.meas_tsc);
	C.meas_tsc = tsc;
	C.meas_ns = ns;
	if (!rate)
		return;
	atomic_store_explicit(&rate_mult, rate, memory_order_relaxed);
	/* A knot still ahead of every stamp converted (the last measurement's second
	 * knot, when we are back sooner) was never used: it goes. */
	uint64_t t = tsc > C.max_stamp ? tsc : C.max_stamp + 1;
	if (C.n > 1 && kt(C.n - 1)->tsc > t)
		C.n--;
	const struct knot *b = kt(C.n - 1);
	uint64_t at = b->ns + scale(t - b->tsc, b->mult);  /* where the line got to */
	uint64_t want = ns + scale(t - tsc, rate);         /* where the clock is */
	uint64_t off = want > at ? want - at : at - want;
	if (off > C.seg_drift)
		C.seg_drift = off;
	if (off > C.max_drift)
		C.max_drift = off;
	C.seg_points++;
	if (off > DRIFT_WARN_NS && !C.warned) {
		C.warned = 1;
		ss_log("clock: the TSC conversion was %llu ns off CLOCK_MONOTONIC after %llu ms; "
		       "times since the last calibration may be off by as much (CLOCK records "
		       "say so per segment)", (unsigned long long)off,
		       (unsigned long long)(scale(t - b->tsc, rate) / 1000000u));
	}
	uint64_t gap = (uint64_t)(((unsigned __int128)KNOT_GAP_NS << 32) / rate); /* ticks */
	if (off > STEP_NS) {
		C.steps++;
		if (want > at) {
			/* Far behind: step forward (times never go back). */
			append(t, want, rate);
		} else {
			/* Far ahead: half speed until the clock catches up, then its rate. */
			uint64_t catch_up = 2 * (uint64_t)(((unsigned __int128)off << 32) / rate);
			append(t, at, rate / 2);
			append(t + catch_up, at + scale(catch_up, rate / 2), rate);
		}
		return;
	}
	/* Steer the offset out over one gap, within [rate/2, 2 rate]. */
	uint64_t corr = (uint64_t)(((unsigned __int128)off << 32) / gap);
	uint64_t m = want > at ? rate + (corr < rate ? corr : rate)
			       : rate - (corr < rate / 2 ? corr : rate / 2);
	append(t, at, m);
	append(t + gap, at + scale(gap, m), rate);
}

SS_INTERNAL uint64_t ss_clock_ns(uint64_t s)
{
	if (!C.tsc)
		return s;
	if (s > C.max_stamp)
		C.max_stamp = s;
	uint64_t n = C.n, lo = n > KNOTS ? n - KNOTS : 0;
	const struct knot *first = kt(lo);
	if (s < first->tsc) {
		/* Older than every knot kept (or than the session): back along the
		 * first one. */
		uint64_t back = scale(first->tsc - s, first->mult);
		return first->ns > back ? first->ns - back : 0;
	}
	/* The knot at or before s: the one used last, usually, or the latest. */
	uint64_t j = C.hit;
	if (!(j >= lo && j < n && kt(j)->tsc <= s && (j + 1 == n || s < kt(j + 1)->tsc))) {
		if (s >= kt(n - 1)->tsc) {
			j = n - 1;
		} else {
			uint64_t a = lo, b = n - 1; /* k[a].tsc <= s < k[b].tsc */
			while (b - a > 1) {
				uint64_t mid = a + (b - a) / 2;
				if (kt(mid)->tsc <= s)
					a = mid;
				else
					b = mid;
			}
			j = a;
		}
		C.hit = j;
	}
	const struct knot *p = kt(j);
	return p->ns + scale(s - p->tsc, p->mult);
}

/* ---- sessions ------------------------------------------------------------------- */
SS_INTERNAL void ss_clock_start(int32_t want, char *status, size_t len)
{
	memset(&C, 0, sizeof C);
	tour_cpu_ns = 0;
	ss_clock_tsc_on = 0;
	atomic_store_explicit(&rate_mult, 1ull << 32, memory_order_relaxed);
	if (want == STALLSCOPE_CLOCK_VDSO) {
		snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (asked for)");
		return;
	}
#if !defined(__x86_64__) || !defined(__SIZEOF_INT128__)
	snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (no TSC "
		 "support on this architecture)");
	return;
#else
	char cs[64];
	if (toured_want == want)
		snprintf(cs, sizeof cs, "%s", toured_cs);
	else
		read_clocksource(cs, sizeof cs);
	if (!invariant_tsc()) {
		snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (the CPU "
			 "has no invariant TSC; clocksource %s)", cs);
		return;
	}
	if (want != STALLSCOPE_CLOCK_TSC && !tsc_based(cs)) {
		snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (the "
			 "kernel times with clocksource %s, not the TSC; STALLSCOPE_CLOCK=tsc "
			 "insists)", cs);
		return;
	}
	struct cpu_check k;
	int ok = check_cpus(&k, want);
	if (ok == 0) {
		snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (the TSC "
			 "of CPU %d is %lld ns off the others: not one clock; clocksource %s)",
			 k.worst_cpu, (long long)k.worst_ns, cs);
		return;
	}
	uint64_t tsc = 0, ns = 0, w;
	for (int i = 0; i < 10; i++) {
		read_pair(&tsc, &ns, &w, 8);
		if (w < 20000) /* ticks: a few us, not preempted */
			break;
	}
	uint64_t m = ok > 0 ? mult_of(ns - k.ns0, tsc - k.tsc0) : 0;
	if (!m) {
		/* No tour: a millisecond of the TSC against the clock gives the rate. */
		uint64_t t0 = tsc, n0 = ns;
		do
			read_pair(&tsc, &ns, &w, 4);
		while (ns - n0 < 1000000u);
		m = mult_of(ns - n0, tsc - t0);
	}
	/* 50 MHz to 20 GHz: anything else is no TSC to trust. */
	if (m < (1ull << 32) / 20 || m > (1ull << 32) * 20) {
		snprintf(status, len, "vdso: clock_gettime(CLOCK_MONOTONIC) in every hook (the TSC "
			 "runs at an implausible %.1f MHz against CLOCK_MONOTONIC)",
			 m ? 1e3 * 4294967296.0 / (double)m : 0.0);
		return;
	}
	atomic_store_explicit(&rate_mult, m, memory_order_relaxed);
	C.meas_tsc = tsc;
	C.meas_ns = ns;
	append(tsc, ns, m);
	C.tsc = 1;
	ss_clock_tsc_on = 1;
	char cpus[224];
	if (ok > 0)
		snprintf(cpus, sizeof cpus, "%u of %u CPUs agree within %lld ns", k.checked, k.cpus,
			 (long long)(k.worst_ns < 0 ? -k.worst_ns : k.worst_ns));
	else
		snprintf(cpus, sizeof cpus, "CPUs not compared: %s", k.why);
	snprintf(status, len, "tsc: hooks read the TSC (%.3f MHz, invariant, clocksource %s, %s); "
		 "the writer converts to CLOCK_MONOTONIC ns, recalibrating at most every %llu ms%s", 1e3 * 4294967296.0 / (double)m, cs, cpus,
		 KNOT_GAP_NS / 1000000u, want == STALLSCOPE_CLOCK_TSC && !tsc_based(cs) ? " (STALLSCOPE_CLOCK=tsc)" : "");
#endif
}

SS_INTERNAL void ss_clock_stop(void)
{
	if (C.tsc && (C.max_drift > DRIFT_WARN_NS || C.steps))
		ss_log("clock: largest offset of the TSC conversion from CLOCK_MONOTONIC %llu ns, "
		       "%llu steps; %llu readings too uncertain to use",
		       (unsigned long long)C.max_drift, (unsigned long long)C.steps,
		       (unsigned long long)C.noisy);
	C.tsc = 0;
	ss_clock_tsc_on = 0;
}

SS_INTERNAL int ss_clock_is_tsc(void)
{
	return C.tsc;
}

SS_INTERNAL uint64_t ss_clock_point(uint64_t *now_ns)
{
	if (!C.tsc) {
		*now_ns = ss_now();
		return *now_ns;
	}
	uint64_t tsc, ns, w;
	if (ss_now() - C.meas_ns >= KNOT_GAP_NS) {
		read_pair(&tsc, &ns, &w, 3);
		if (tsc > C.meas_tsc && ns > C.meas_ns && scale(w, kt(C.n - 1)->mult) <= WIDE_NS)
			steer(tsc, ns);
		else
			C.noisy++;
	}
	/* The cycle's end: every stamp up to now. */
	tsc = __builtin_ia32_rdtsc();
	*now_ns = ss_clock_ns(tsc);
	return tsc;
}

SS_INTERNAL uint64_t ss_clock_delta_ns(uint64_t stamps)
{
	if (!C.tsc)
		return stamps;
	return scale(stamps, atomic_load_explicit(&rate_mult, memory_order_relaxed));
}

SS_INTERNAL uint64_t ss_clock_delta_stamps(uint64_t ns)
{
	if (!C.tsc)
		return ns;
	uint64_t m = atomic_load_explicit(&rate_mult, memory_order_relaxed);
	return m ? (uint64_t)(((unsigned __int128)ns << 32) / m) : ns;
}

SS_INTERNAL void ss_clock_segment_begin(void)
{
	C.seg_points = 0;
	C.seg_drift = 0;
}

SS_INTERNAL size_t ss_clock_record(uint8_t *body)
{
	size_t k = 0;
	if (!C.tsc) {
		k += ss_put_varint(body + k, SS_CLOCK_VDSO);
		for (int i = 0; i < 5; i++)
			k += ss_put_varint(body + k, 0);
		return k;
	}
	uint64_t m = atomic_load_explicit(&rate_mult, memory_order_relaxed);
	k += ss_put_varint(body + k, SS_CLOCK_TSC);
	k += ss_put_varint(body + k, C.meas_tsc);
	k += ss_put_varint(body + k, C.meas_ns);
	/* Ticks per second, as last measured. */
	k += ss_put_varint(body + k, m ? (uint64_t)((1000000000ull << 32) / m) : 0);
	k += ss_put_varint(body + k, C.seg_points);
	k += ss_put_varint(body + k, C.seg_drift);
	return k;
}
