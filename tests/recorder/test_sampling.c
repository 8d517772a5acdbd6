/*
 * test_sampling.c - CPU sampling through the whole pipeline, public API only:
 * stallscope_start -> hooks on a worker -> sampler -> writer -> segments -> reader.
 *
 * A worker (stallscope_worker_begin) spins ~300 ms inside one poll in a
 * non-inlined leaf called from a known caller, then sleeps 20 x 5 ms inside 20
 * polls. From the decoded segments it proves:
 *   (a) >= 90% of the worker's CPU samples taken during the spin poll have the
 *       leaf as first user frame and the caller right above it;
 *   (b) alignment of samples with hooks: every CPU sample of the worker inside the
 *       spin poll carries the worker's recorder thread number (its THREAD_DEF) and
 *       tid; every leaf/caller sample lies inside the spin poll's [begin, end]; no
 *       CPU sample of the worker lies outside every poll by more than a slop;
 *   (c) perf only: the 20 sleeps are 20 blocked (not preempted) switch-outs, each
 *       followed by a switch-in, both within the worker's own clock readings
 *       around that sleep, at least the sleep apart and agreeing with the worker's
 *       own measure of it; ~5 ms (median 5 +- 1 ms, 3/4 within 5 +- 3 ms) unless
 *       the worker itself saw the machine delay its wakeups; with off-CPU stacks,
 *       the off-CPU samples of the sleeps have the sleeping function in their
 *       stacks, and so do those of 8 more sleeps in libc's poll(), whose wrapper
 *       sets up no frame: the leaf's CFI must give its caller, which a
 *       frame-pointer walk would skip (unless the META record says frame
 *       pointers only);
 *   (d) the timer fallback forced by config (sampler = TIMER) gives the same
 *       leaf/caller stacks (the frame walk uses the stack bounds that
 *       stallscope_worker_begin recorded), and STALLSCOPE_SAMPLER=timer through
 *       stallscope_start_from_env() is honoured; the META record "sampler" names
 *       the mode each time;
 *   (e) STALLSCOPE_SAMPLER=cpu through the environment (per-CPU events of every
 *       process, where permitted) passes (b) and (c) as perf does, or, refused,
 *       the META record says why;
 *   the metric stallscope_sampler_mode{mode="..."} is 1 for the mode in use, and
 *   says "off" when no session runs.
 *
 * Perf parts print SKIP with the reason when perf is refused; the timer parts
 * still run. Exit 77 only when nothing could run. Checks are not timed beyond
 * what (c) asks, and those use a median and generous bounds (a loaded 2-core VM).
 */
#include <stallscope/stallscope.h>

#include <dlfcn.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "trace_check.h"

#define SPIN_NS 300000000ull
#define SLEEP_NS 5000000L
#define NSLEEPS 20
#define TASK_SETTLE 1
#define TASK_SPIN 2
#define TASK_SLEEP0 100
#define NLIBC 8
#define TASK_LIBC0 200
/* CPU samples of the worker may fall outside every poll: thread start and exit,
 * worker_begin/end. They must stay this close to a poll. */
#define OUTSIDE_SLOP_NS 50000000ull
/* Leaf samples against the poll window: both clocks are CLOCK_MONOTONIC; perf reads
 * it through the NMI-safe accessor, which may trail by a hair. */
#define WINDOW_SLOP_NS 50000ull

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the code whose stacks we look for (exported: dladdr1 gives their size) ---- */

uint64_t sampling_spin_leaf(uint64_t n);
void sampling_spin_caller(uint64_t ns);
void sampling_sleep_inner(long ns);
void sampling_sleeper(int times, long ns);
void sampling_libc_sleeper(void);

static volatile uint64_t sink_v;

/* The accumulator lives on the stack so that gcc gives the leaf a frame (and a
 * frame pointer): without one its caller is invisible to any frame-pointer walk. */
__attribute__((noinline)) uint64_t sampling_spin_leaf(uint64_t n)
{
	volatile uint64_t x = n;
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins ns of wall time, and on past it until the thread had ns / 2 of CPU (a
 * loaded machine gives it less), for at most 10 x ns. */
__attribute__((noinline)) void sampling_spin_caller(uint64_t ns)
{
	uint64_t start = now_ns(), cpu0 = thread_cpu_ns(), checked = start;
	for (;;) {
		sink_v += sampling_spin_leaf(20000);
		uint64_t t = now_ns();
		if (t - start < ns || t - checked < 2000000)
			continue;
		/* A system call, so rarely: its samples are not in the leaf. */
		checked = t;
		if (t - start >= 10 * ns || thread_cpu_ns() - cpu0 >= ns / 2)
			break;
	}
}

/* The blocking system call is issued here, not in libc (which has no frame
 * pointers), so the off-CPU walk starts in this function. */
__attribute__((noinline)) void sampling_sleep_inner(long ns)
{
	struct timespec ts = { 0, ns };
#if defined(__x86_64__)
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0L)
			 : "rcx", "r11", "memory");
	(void)ret;
#else
	nanosleep(&ts, NULL);
#endif
}

__attribute__((noinline)) void sampling_sleeper(int times, long ns)
{
	for (int i = 0; i < times; i++)
		sampling_sleep_inner(ns);
}

/* Sleeps 5 ms in libc's poll(): in a process with threads its wrapper moves sp
 * and sets up no frame (libc has no frame pointers), so the frame-pointer chain
 * from its pc begins with our caller. The result is used so that the call is no
 * tail call. */
__attribute__((noinline)) void sampling_libc_sleeper(void)
{
	sink_v += (uint64_t)poll(NULL, 0, (int)(SLEEP_NS / 1000000));
}

struct range {
	uint64_t lo, hi;
};

static struct range R_leaf, R_caller, R_sleep_inner, R_sleeper, R_libc_sleeper;

static struct range fn_range(void *fn)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	struct range r = { (uint64_t)(uintptr_t)fn, (uint64_t)(uintptr_t)fn + 256 };
	if (dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size &&
	    (uint64_t)(uintptr_t)info.dli_saddr == r.lo)
		r.hi = r.lo + sym->st_size;
	else
		printf("note: no symbol size for %p, assuming 256 bytes\n", fn);
	return r;
}

static int in(struct range r, uint64_t a)
{
	return a >= r.lo && a < r.hi;
}

/* ---- the worker ---- */

struct run {
	uint32_t tid;
	uint64_t spin_ns;
	int sleeps, libc_sleeps;
	uint64_t slept_b[NSLEEPS], slept_e[NSLEEPS]; /* the worker's clock around each sleep */
};

static void *worker(void *arg)
{
	struct run *r = arg;
	r->tid = (uint32_t)gettid();
	stallscope_worker_begin("sampling-test", 0);
	uint32_t loc = STALLSCOPE_LOCATION();
	/* The writer starts sampling a worker on its next cycle (~10 ms): wait for it
	 * inside a poll, so the spin is sampled from its start. */
	stallscope_poll_begin(TASK_SETTLE, loc);
	struct timespec settle = { 0, 150000000L };
	nanosleep(&settle, NULL);
	stallscope_poll_end();

	stallscope_poll_begin(TASK_SPIN, loc);
	sampling_spin_caller(r->spin_ns);
	stallscope_poll_end();

	for (int i = 0; i < r->sleeps; i++) {
		stallscope_poll_begin(TASK_SLEEP0 + (uint64_t)i, loc);
		r->slept_b[i] = now_ns();
		sampling_sleeper(1, SLEEP_NS);
		r->slept_e[i] = now_ns();
		stallscope_poll_end();
	}
	for (int i = 0; i < r->libc_sleeps; i++) {
		stallscope_poll_begin(TASK_LIBC0 + (uint64_t)i, loc);
		sampling_libc_sleeper();
		stallscope_poll_end();
	}
	stallscope_worker_end();
	return NULL;
}

/* ---- metrics ---- */

static char mtext[16384];

/* The value of stallscope_sampler_mode{mode="mode"}, -1 when absent. */
static int metric_mode(const char *mode)
{
	size_t n = stallscope_metrics_text(mtext, sizeof mtext);
	CHECK(n < sizeof mtext, "metrics text of %zu bytes", n);
	CHECK(strstr(mtext, "# HELP stallscope_sampler_mode ") &&
	      strstr(mtext, "# TYPE stallscope_sampler_mode gauge\n"),
	      "no HELP/TYPE lines for stallscope_sampler_mode");
	char key[96];
	snprintf(key, sizeof key, "\nstallscope_sampler_mode{mode=\"%s\"} ", mode);
	const char *p = strstr(mtext, key);
	if (!p)
		return -1;
	return atoi(p + strlen(key));
}

/* Exactly the named mode is 1, the others 0. */
static void check_metric(const char *mode)
{
	static const char *const all[] = { "perf", "timer", "off" };
	for (size_t i = 0; i < 3; i++) {
		int v = metric_mode(all[i]);
		CHECK(v == !strcmp(all[i], mode), "stallscope_sampler_mode{mode=\"%s\"} is %d, the mode "
		      "in use is %s", all[i], v, mode);
	}
}

/* "perf: cpu-clock ..." -> "perf" */
static void mode_word(const char *status, char *out, size_t len)
{
	size_t n = strcspn(status, ":; ");
	snprintf(out, len, "%.*s", (int)n, status);
}

/* ---- one recorded session, decoded ---- */

struct window {
	uint64_t b, e;
	uint64_t task;
};

struct session {
	char *dir;
	struct tc_trace t;
	struct run run;
	char sampler[512];     /* the META "sampler" value */
	char mode[16];         /* its first word */
	uint64_t thread;       /* the worker's recorder thread number */
	struct window polls[NSLEEPS + NLIBC + 8];
	size_t npolls;
	const struct window *spin;
};

/* STALLSCOPE_SAMPLER of the sessions the environment starts. */
static const char *env_sampler = "timer";

/* Runs the worker in a session that cfg (or the environment when cfg is NULL)
 * starts, then loads the segments. */
static void record(struct session *s, const char *tag, const struct stallscope_config *base,
		   uint64_t spin_ns, int sleeps)
{
	memset(s, 0, sizeof *s);
	s->dir = tc_tmpdir(tag);
	if (base) {
		struct stallscope_config cfg = *base;
		cfg.output_dir = s->dir;
		CHECK(stallscope_start(&cfg) == 0, "start: %s", stallscope_last_error());
	} else {
		CHECK(setenv("STALLSCOPE_ENABLED", "1", 1) == 0 &&
		      setenv("STALLSCOPE_OUTPUT_DIR", s->dir, 1) == 0 &&
		      setenv("STALLSCOPE_SAMPLER", env_sampler, 1) == 0, "setenv");
		CHECK(stallscope_start_from_env() == 0, "start_from_env: %s", stallscope_last_error());
		CHECK(stallscope_is_recording(), "STALLSCOPE_ENABLED=1 did not start recording");
		unsetenv("STALLSCOPE_ENABLED");
		unsetenv("STALLSCOPE_OUTPUT_DIR");
		unsetenv("STALLSCOPE_SAMPLER");
	}
	s->run.spin_ns = spin_ns;
	s->run.sleeps = sleeps;
	s->run.libc_sleeps = sleeps == NSLEEPS ? NLIBC : 0;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, worker, &s->run) == 0, "pthread_create");
	/* While it runs: the metric names the session's mode (checked by the caller
	 * against the META record once the segments are read). */
	struct timespec ts = { 0, 50000000L };
	nanosleep(&ts, NULL);
	static char during[65536];
	stallscope_metrics_text(during, sizeof during);
	pthread_join(th, NULL);
	CHECK(stallscope_stop() == 0, "stop: %s", stallscope_last_error());
	check_metric("off");

	CHECK(tc_load_dir(&s->t, s->dir, "stallscope", true) == 0, "load %s", s->dir);
	CHECK(s->t.nsegs >= 1 && s->t.corrupt_segments == 0 && s->t.truncated_segments == 0 &&
	      s->t.header_failures == 0, "segments: %zu, %llu corrupt, %llu truncated", s->t.nsegs,
	      (unsigned long long)s->t.corrupt_segments, (unsigned long long)s->t.truncated_segments);
	const char *m = tc_meta(&s->t, "sampler");
	CHECK(m, "no META \"sampler\" record");
	snprintf(s->sampler, sizeof s->sampler, "%s", m);
	mode_word(m, s->mode, sizeof s->mode);

	/* The metric seen during the session agreed with the META record. */
	char key[96];
	snprintf(key, sizeof key, "\nstallscope_sampler_mode{mode=\"%s\"} 1\n", s->mode);
	CHECK(strstr(during, key), "during the session the metric did not say %s:\n%s", s->mode,
	      during);

	for (size_t i = 0; i < s->t.nthreads; i++)
		if (s->t.threads[i].tid == s->run.tid)
			s->thread = s->t.threads[i].thread;
	CHECK(s->thread, "no THREAD_DEF for the worker's tid %u", s->run.tid);

	uint64_t open_b = 0, open_task = 0;
	for (size_t i = 0; i < s->t.nevents; i++) {
		const struct tc_event *e = &s->t.events[i];
		if (e->thread != s->thread)
			continue;
		if (e->type == SS_REC_POLL_BEGIN) {
			open_b = e->ts;
			open_task = e->a;
		} else if (e->type == SS_REC_POLL_END && open_b) {
			CHECK(s->npolls < sizeof s->polls / sizeof s->polls[0], "too many polls");
			s->polls[s->npolls++] = (struct window){ open_b, e->ts, open_task };
			open_b = 0;
		}
	}
	CHECK(s->npolls == (size_t)(sleeps + s->run.libc_sleeps) + 2, "%zu polls decoded, expected %d",
	      s->npolls, sleeps + s->run.libc_sleeps + 2);
	for (size_t i = 0; i < s->npolls; i++)
		if (s->polls[i].task == TASK_SPIN)
			s->spin = &s->polls[i];
	CHECK(s->spin, "no spin poll");
}

static void session_free(struct session *s)
{
	tc_free(&s->t);
	tc_rmrf(s->dir);
	free(s->dir);
}

static int leaf_caller(const struct tc_trace *t, const struct tc_sample *sm)
{
	const struct tc_stack *st = tc_sample_stack(t, sm);
	if (!st || st->nframes < st->nkernel + 2)
		return 0;
	return in(R_leaf, st->frames[st->nkernel]) && in(R_caller, st->frames[st->nkernel + 1] - 1);
}

/* (a) and (b). Returns the number of CPU samples in the spin poll. */
static size_t check_spin(const struct session *s, const char *label)
{
	const struct tc_trace *t = &s->t;
	size_t n = 0, good = 0, wrong_thread = 0, lc_total = 0, lc_outside = 0, all = 0;
	size_t outside_polls = 0, thread0 = 0;
	uint64_t worst_lc = 0, worst_outside = 0, weight = 0;
	for (size_t i = 0; i < t->nsamples; i++) {
		const struct tc_sample *sm = &t->samples[i];
		if (sm->tid != s->run.tid || sm->kind != SS_SAMPLE_KIND_CPU)
			continue;
		all++;
		thread0 += sm->thread == 0;
		int lc = leaf_caller(t, sm);
		if (sm->ts >= s->spin->b && sm->ts <= s->spin->e) {
			n++;
			good += lc;
			weight += sm->weight;
			wrong_thread += sm->thread != s->thread;
		}
		if (lc) {
			lc_total++;
			uint64_t d = sm->ts < s->spin->b ? s->spin->b - sm->ts :
				     sm->ts > s->spin->e ? sm->ts - s->spin->e : 0;
			if (d > worst_lc)
				worst_lc = d;
			lc_outside += d > WINDOW_SLOP_NS;
		}
		uint64_t best = UINT64_MAX;
		for (size_t p = 0; p < s->npolls && best; p++) {
			const struct window *w = &s->polls[p];
			uint64_t d = sm->ts < w->b ? w->b - sm->ts : sm->ts > w->e ? sm->ts - w->e : 0;
			if (d < best)
				best = d;
		}
		if (best) {
			outside_polls++;
			if (best > worst_outside)
				worst_outside = best;
		}
	}
	double f = n ? (double)good / (double)n : 0;
	printf("  %s: spin poll %.1f ms; %zu CPU samples of the worker (thread %llu, tid %u) in it "
	       "weighing %.1f ms, %zu with leaf sampling_spin_leaf <- sampling_spin_caller = %.1f%%; "
	       "%zu in it on another thread number\n", label, (double)(s->spin->e - s->spin->b) / 1e6,
	       n, (unsigned long long)s->thread, s->run.tid, (double)weight / 1e6, good, f * 100,
	       wrong_thread);
	printf("  %s: %zu leaf/caller samples in all, %zu outside the spin poll by > %llu us "
	       "(worst %.3f ms); of the worker's %zu CPU samples %zu lie outside every poll (worst "
	       "by %.3f ms), %zu carry thread 0\n", label, lc_total, lc_outside,
	       (unsigned long long)(WINDOW_SLOP_NS / 1000), (double)worst_lc / 1e6, all,
	       outside_polls, (double)worst_outside / 1e6, thread0);
	/* perf: ~1 per ms of CPU. timer: CPU-clock timers expire on ticks, and on a
	 * loaded machine ~150 ms of CPU gave as few as 17 (heavier) samples. */
	CHECK(n >= 10, "%s: only %zu CPU samples in a %.0f ms spin", label, n,
	      (double)(s->spin->e - s->spin->b) / 1e6);
	CHECK(f >= 0.90, "%s: %.3f of the spin's samples in leaf <- caller", label, f);
	CHECK(wrong_thread == 0, "%s: %zu samples in the spin poll not on the worker's thread number",
	      label, wrong_thread);
	CHECK(lc_outside == 0, "%s: %zu leaf/caller samples outside the spin poll (worst %llu ns)",
	      label, lc_outside, (unsigned long long)worst_lc);
	CHECK(worst_outside <= OUTSIDE_SLOP_NS, "%s: a CPU sample %.3f ms away from every poll",
	      label, (double)worst_outside / 1e6);
	CHECK(t->unresolved_stacks == 0, "%s: %llu samples with an undefined stack id", label,
	      (unsigned long long)t->unresolved_stacks);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The polls of tasks task0 .. task0 + n - 1 whose off-CPU samples have a user
 * frame in r1 or r2 (return addresses looked up at address - 1): the count of
 * such polls; *off counts their off-CPU samples, *found those with such a frame. */
static size_t offcpu_cover(const struct session *s, uint64_t task0, int n, const struct range *r1,
			   const struct range *r2, size_t *off, size_t *found)
{
	const struct tc_trace *t = &s->t;
	size_t polls = 0;
	for (size_t p = 0; p < s->npolls; p++) {
		const struct window *w = &s->polls[p];
		if (w->task < task0 || w->task >= task0 + (uint64_t)n)
			continue;
		size_t here = 0;
		for (size_t i = 0; i < t->nsamples; i++) {
			const struct tc_sample *sm = &t->samples[i];
			if (sm->tid != s->run.tid || sm->kind != SS_SAMPLE_KIND_OFFCPU || sm->ts < w->b ||
			    sm->ts > w->e)
				continue;
			(*off)++;
			const struct tc_stack *st = tc_sample_stack(t, sm);
			for (uint32_t j = st ? st->nkernel : 0; st && j < st->nframes; j++) {
				uint64_t a = st->frames[j] - (j > st->nkernel ? 1 : 0);
				if (in(*r1, a) || (r2 && in(*r2, a))) {
					here++;
					break;
				}
			}
		}
		*found += here;
		polls += here > 0;
	}
	return polls;
}

/* (c), perf only. Each sleep's blocked switch-out and the switch-in after it must
 * lie within the worker's own clock readings around that sleep, be at least the
 * sleep apart, and agree with the worker's own measure of it. */
static void check_sleeps(const struct session *s)
{
	const struct tc_trace *t = &s->t;
	uint64_t gaps[NSLEEPS], self[NSLEEPS], diffs[NSLEEPS];
	size_t ng = 0, blocked = 0, preempted = 0, unpaired = 0, outside = 0;
	for (size_t p = 0; p < s->npolls; p++) {
		const struct window *w = &s->polls[p];
		if (w->task < TASK_SLEEP0 || w->task >= TASK_SLEEP0 + NSLEEPS)
			continue;
		size_t k = (size_t)(w->task - TASK_SLEEP0);
		size_t out = SIZE_MAX;
		for (size_t i = 0; i < t->nswitches; i++) {
			const struct tc_switch *sw = &t->switches[i];
			if (sw->tid != s->run.tid || sw->ts < w->b || sw->ts > w->e ||
			    !(sw->flags & SS_SWITCH_F_OUT))
				continue;
			CHECK(sw->thread == s->thread, "switch on thread number %llu, the worker is %llu",
			      (unsigned long long)sw->thread, (unsigned long long)s->thread);
			if (sw->flags & SS_SWITCH_F_PREEMPT) {
				preempted++;
				continue;
			}
			blocked++;
			if (out == SIZE_MAX)
				out = i;
		}
		if (out == SIZE_MAX)
			continue;
		/* The next switch of the thread after the blocked one: a switch-in. */
		size_t next = SIZE_MAX;
		for (size_t i = 0; i < t->nswitches; i++) {
			const struct tc_switch *sw = &t->switches[i];
			if (i != out && sw->tid == s->run.tid && sw->ts >= t->switches[out].ts &&
			    (next == SIZE_MAX || sw->ts < t->switches[next].ts))
				next = i;
		}
		if (next == SIZE_MAX || (t->switches[next].flags & SS_SWITCH_F_OUT)) {
			unpaired++;
			/* Rare beside busy loops (2 of 32 runs), with no loss counted:
			 * the thread's switch records around the sleep say which one
			 * is missing (so far a switch-in of the sched_switch program). */
			printf("  unpaired sleep %zu (LOSS %llu, SAMPLER_LOSS %llu), the thread's switches, ns from "
			       "its poll's begin:", k, (unsigned long long)t->lost,
			       (unsigned long long)t->sampler_lost);
			for (size_t i = 0; i < t->nswitches; i++) {
				const struct tc_switch *sw = &t->switches[i];
				if (sw->tid == s->run.tid && sw->ts + 12000000 >= w->b && sw->ts <= w->e + 12000000)
					printf(" %s%s@%lld/cpu%llu", sw->flags & SS_SWITCH_F_OUT ? "out" : "in",
					       sw->flags & SS_SWITCH_F_PREEMPT ? "(preempted)" : "",
					       (long long)sw->ts - (long long)w->b, (unsigned long long)sw->cpu);
			}
			printf("\n");
			continue;
		}
		uint64_t o = t->switches[out].ts, in_ts = t->switches[next].ts;
		outside += o + WINDOW_SLOP_NS < s->run.slept_b[k] ||
			   in_ts > s->run.slept_e[k] + WINDOW_SLOP_NS;
		gaps[ng] = in_ts - o;
		self[ng] = s->run.slept_e[k] - s->run.slept_b[k];
		diffs[ng] = self[ng] > gaps[ng] ? self[ng] - gaps[ng] : gaps[ng] - self[ng];
		ng++;
	}
	printf("  perf sleeps (off-CPU ms, as the worker measured it):");
	for (size_t i = 0; i < ng; i++)
		printf(" %.3f/%.3f", (double)gaps[i] / 1e6, (double)self[i] / 1e6);
	printf("\n");
	qsort(gaps, ng, sizeof gaps[0], cmp_u64);
	qsort(self, ng, sizeof self[0], cmp_u64);
	qsort(diffs, ng, sizeof diffs[0], cmp_u64);
	size_t within3 = 0;
	for (size_t i = 0; i < ng; i++)
		within3 += gaps[i] >= 2000000 && gaps[i] <= 8000000;
	double med = ng ? (double)gaps[ng / 2] / 1e6 : 0;
	double self_med = ng ? (double)self[ng / 2] / 1e6 : 0;
	printf("  perf sleeps: %d sleep polls; %zu blocked switch-outs in them (%zu preempted), "
	       "%zu paired with the next switch-in, %zu unpaired, %zu pairs outside the worker's "
	       "clock readings; off-CPU min %.3f median %.3f max %.3f ms, %zu within 5 +- 3 ms; "
	       "the worker measured median %.3f ms; |difference| median %.3f max %.3f ms\n",
	       NSLEEPS, blocked, preempted, ng, unpaired, outside, ng ? (double)gaps[0] / 1e6 : 0,
	       med, ng ? (double)gaps[ng - 1] / 1e6 : 0, within3, self_med,
	       ng ? (double)diffs[ng / 2] / 1e6 : 0, ng ? (double)diffs[ng - 1] / 1e6 : 0);
	CHECK(ng == NSLEEPS, "%zu of %d sleeps show a blocked switch-out and a switch-in", ng,
	      NSLEEPS);
	CHECK(outside == 0, "%zu switch pairs outside the worker's own readings around its sleep",
	      outside);
	/* A sleep's off-CPU interval can be cut short now and then (seen once: 3.4 ms,
	 * a switch-in before the timer fired); two in twenty is the tolerance. */
	size_t short_gaps = 0;
	for (size_t i = 0; i < ng; i++)
		short_gaps += gaps[i] < 4000000;
	CHECK(short_gaps <= 2, "%zu of %zu 5 ms sleeps measured under 4 ms off-CPU (shortest %.3f ms)",
	      short_gaps, ng, (double)gaps[0] / 1e6);
	CHECK(diffs[ng / 2] <= 1000000, "off-CPU times differ from the worker's own by a median "
	      "of %.3f ms", (double)diffs[ng / 2] / 1e6);
	/* The switch-in comes when the woken thread gets a CPU: idle, all 20 are within
	 * 5.0..5.2 ms; with CPU hogs on both cores wakeups wait 3..15 ms more in the run
	 * queue, and the worker sees that too. The nominal check applies when the
	 * worker's own measure says the machine let it. */
	if (self_med >= 4.0 && self_med <= 6.0) {
		CHECK(med >= 4.0 && med <= 6.0, "median off-CPU time %.3f ms, expected 5 +- 1", med);
		CHECK(within3 * 4 >= ng * 3, "only %zu of %zu sleeps within 5 +- 3 ms", within3, ng);
	} else {
		printf("  note: loaded machine: the worker itself measured its 5 ms sleeps at a "
		       "median of %.3f ms; nominal 5 +- 1 ms check not applied\n", self_med);
	}

	if (!strstr(s->sampler, "off-CPU stacks on")) {
		printf("SKIP: off-CPU stacks: not available (%s)\n", s->sampler);
		return;
	}
	size_t off = 0, found = 0;
	size_t polls_found = offcpu_cover(s, TASK_SLEEP0, NSLEEPS, &R_sleep_inner, &R_sleeper, &off, &found);
	printf("  perf off-CPU stacks: %zu off-CPU samples in the sleep polls, %zu with "
	       "sampling_sleep_inner/sampling_sleeper in the user frames, %zu of %d polls covered\n",
	       off, found, polls_found, NSLEEPS);
	CHECK(polls_found == NSLEEPS, "off-CPU stacks of the sleeps: %zu of %d polls", polls_found,
	      NSLEEPS);

	/* The sleeps in libc: every one has an off-CPU stack naming its caller. */
	const char *uw = tc_meta(t, "unwind");
	if (!uw || !strncmp(uw, "fp", 2)) {
		printf("  note: frame-pointer unwinding only (%s): libc sleeps not checked\n",
		       uw ? uw : "no META unwind");
		return;
	}
	size_t loff = 0, lfound = 0;
	size_t lpolls = offcpu_cover(s, TASK_LIBC0, NLIBC, &R_libc_sleeper, NULL, &loff, &lfound);
	printf("  perf off-CPU stacks in libc: %zu off-CPU samples in the poll() sleeps, %zu with "
	       "sampling_libc_sleeper in the user frames, %zu of %d polls covered\n", loff, lfound,
	       lpolls, NLIBC);
	CHECK(lpolls == NLIBC, "off-CPU stacks of the sleeps in libc's poll(): %zu of %d polls name "
	      "sampling_libc_sleeper", lpolls, NLIBC);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	R_leaf = fn_range((void *)sampling_spin_leaf);
	R_caller = fn_range((void *)sampling_spin_caller);
	R_sleep_inner = fn_range((void *)sampling_sleep_inner);
	R_sleeper = fn_range((void *)sampling_sleeper);
	R_libc_sleeper = fn_range((void *)sampling_libc_sleeper);
	int ran = 0;

	check_metric("off"); /* no session yet */

	struct stallscope_config cfg;
	stallscope_config_init(&cfg);
	CHECK(cfg.cpu_sampling == 1 && cfg.sample_hz == 999, "defaults: cpu_sampling %d, %u Hz",
	      cfg.cpu_sampling, cfg.sample_hz);

	/* 1. Defaults: perf where permitted. */
	printf("session 1: defaults (sampler auto, 999 Hz)\n");
	struct session s;
	record(&s, "sampling-perf", &cfg, SPIN_NS, NSLEEPS);
	printf("  META sampler: %s\n", s.sampler);
	if (!strcmp(s.mode, "perf")) {
		check_spin(&s, "perf");
		check_sleeps(&s);
		ran++;
	} else {
		printf("SKIP: perf parts: the session sampled with \"%s\": %s\n", s.mode, s.sampler);
	}
	session_free(&s);

	/* 2. The timer fallback, forced by the configuration. */
	printf("session 2: sampler = STALLSCOPE_SAMPLER_TIMER\n");
	cfg.sampler = STALLSCOPE_SAMPLER_TIMER;
	record(&s, "sampling-timer", &cfg, SPIN_NS, 2);
	printf("  META sampler: %s\n", s.sampler);
	if (!strcmp(s.mode, "timer")) {
		check_spin(&s, "timer");
		printf("  timer: %zu SWITCH records (the fallback has none)\n", s.t.nswitches);
		ran++;
	} else {
		CHECK(!strcmp(s.mode, "off"), "timer asked for, META says %s", s.sampler);
		printf("SKIP: timer parts: %s\n", s.sampler);
	}
	session_free(&s);

	/* 3. STALLSCOPE_SAMPLER=timer through the environment. */
	printf("session 3: STALLSCOPE_SAMPLER=timer, stallscope_start_from_env()\n");
	record(&s, "sampling-env", NULL, SPIN_NS / 3, 0);
	printf("  META sampler: %s\n", s.sampler);
	if (!strcmp(s.mode, "timer")) {
		size_t lc = 0;
		for (size_t i = 0; i < s.t.nsamples; i++)
			lc += s.t.samples[i].tid == s.run.tid && leaf_caller(&s.t, &s.t.samples[i]);
		printf("  env timer: %zu leaf/caller samples of the worker in a %.0f ms spin\n", lc,
		       (double)(s.spin->e - s.spin->b) / 1e6);
		CHECK(lc >= 5, "STALLSCOPE_SAMPLER=timer: %zu leaf samples", lc);
		ran++;
	} else {
		CHECK(!strcmp(s.mode, "off"), "STALLSCOPE_SAMPLER=timer, META says %s", s.sampler);
		printf("SKIP: env timer part: %s\n", s.sampler);
	}
	session_free(&s);

	/* 4. Per-CPU events of every process, STALLSCOPE_SAMPLER=cpu: the same spin,
	 * sleeps and off-CPU stacks as session 1; refused (unprivileged), the
	 * process's own perf events, and META says why. */
	printf("session 4: STALLSCOPE_SAMPLER=cpu, stallscope_start_from_env()\n");
	env_sampler = "cpu";
	record(&s, "sampling-cpu", NULL, SPIN_NS, NSLEEPS);
	printf("  META sampler: %s\n", s.sampler);
	if (strstr(s.sampler, "events per CPU for every process")) {
		CHECK(!strcmp(s.mode, "perf"), "cpu mode, META mode %s", s.mode);
		check_spin(&s, "cpu");
		check_sleeps(&s);
		/* Other processes ran meanwhile (this test's own make, the shell, the
		 * kernel's threads: at least their switches): counted, never written. */
		static char mt[65536];
		stallscope_metrics_text(mt, sizeof mt);
		const char *f = strstr(mt, "\nstallscope_sampler_foreign_records_total ");
		unsigned long long fr = f ? strtoull(f + 42, NULL, 10) : 0;
		printf("  cpu: stallscope_sampler_foreign_records_total %llu\n", fr);
		CHECK(f && fr > 0, "no other process's record counted in the metric");
		ran++;
	} else {
		CHECK(strstr(s.sampler, "per-CPU events of every process refused") || strcmp(s.mode, "perf"),
		      "cpu asked for, neither used nor refused with a reason: %s", s.sampler);
		printf("SKIP: cpu parts: %s\n", s.sampler);
	}
	session_free(&s);

	if (!ran) {
		printf("SKIP: no sampler could run\n");
		return 77;
	}
	printf("ok (%d of 4 sessions checked)\n", ran);
	return 0;
}
