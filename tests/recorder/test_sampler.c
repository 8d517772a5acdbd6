/*
 * test_sampler.c - drives the recorder's sampler module (recorder/src/sampler.h)
 * directly, the way the writer does: start, add threads by tid, drain every few
 * milliseconds into a sink, remove, stop. Checks that stacks are right (a spinning
 * leaf and its caller), that sample times share CLOCK_MONOTONIC with the hooks,
 * that sleeps show up as blocked switch-out / switch-in pairs with off-CPU stacks,
 * that the timer fallback survives a garbage frame pointer, that tiny rings lose
 * records instead of corrupting them, that thousands of short-lived threads leak
 * no descriptor or mapping, and that a refused perf_event_open falls back. The
 * same again with per-CPU events of every process (SS_SAMPLER_CPU, root or
 * CAP_PERFMON): another process's samples and switches are dropped and counted,
 * never handed on; unprivileged (as nobody) it falls back to the process's own
 * per-CPU events and says why. Where the off-CPU filter is loaded (root), a
 * sleeping worker whose in-poll cell says "outside a poll" gives no off-CPU
 * sample and one "inside" gives one per sleep, in each of the three modes.
 * As root the process's per-CPU events take their switches and off-CPU stacks
 * from the sched_switch program (sampler_swtp.c, no context-switches event):
 * a worker whose cell says parked gives no switch record at all, one preempted
 * inside a poll no off-CPU stack (a blocked one does), and a thread
 * on a CPU when the records are drained has its switch-in among them (its on-CPU
 * time is not cut at its last switch-out); the events' own switch records,
 * forced by config and by STALLSCOPE_SWITCH_SOURCE=events, give the same sleeps,
 * stacks and filtering. AUTO as root takes the cpu-clock events once per CPU
 * for every process beside the program: the same parts, and another process's
 * records never reach the sink.
 *
 * Perf parts print SKIP when perf is refused; exit 77 only if everything skipped.
 */
#include <dlfcn.h>
#include <grp.h>
#include <signal.h>
#include <dirent.h>
#include <errno.h>
#include <link.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sampler-private.h" /* SS_INPOLL_PARKED, SS_INPOLL_CELLS */
#include "sampler.h"
#include "trace_check.h" /* CHECK */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- the code whose stacks we look for (exported: dladdr1 gives their size) ---- */

uint64_t spin_leaf(uint64_t n);
void spin_caller(uint64_t ns);
void sleep_inner(long ns);
void sleeper(int times, long ns);
void corrupt_spin(uint64_t iters, uint64_t garbage);

static volatile uint64_t sink_v;

/* The accumulator lives on the stack on purpose: gcc 12 gives a leaf function
 * that needs no stack frame no frame pointer at all, even with
 * -mno-omit-leaf-frame-pointer, and then its caller is invisible to any
 * frame-pointer walk (perf's included). A leaf with a frame is what we test. */
__attribute__((noinline)) uint64_t spin_leaf(uint64_t n)
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

/* Set by the draining thread once it holds as many samples of the spinning
 * thread as the test needs (run_worker's want). */
static _Atomic int spin_enough;

/* Spins ns of wall time, and on a loaded machine on until the thread got at
 * least a third of that as CPU time and the drained samples are enough (at
 * most ten times as long): a loaded machine gives the thread less CPU, and
 * CPU-clock timers fire at scheduler ticks, fewer of them in short time
 * slices. What is checked of the samples (stack, weight against CPU time,
 * times inside the window) does not depend on how long the spin ran. */
__attribute__((noinline)) void spin_caller(uint64_t ns)
{
	uint64_t start = now_ns(), end = start + ns, cpu0 = thread_cpu_ns();
	for (;;) {
		for (int i = 0; i < 50; i++)
			sink_v += spin_leaf(20000);
		uint64_t t = now_ns();
		if (t >= end && ((thread_cpu_ns() - cpu0 >= ns / 3 && atomic_load(&spin_enough)) ||
				 t - start >= 10 * ns))
			break;
	}
}

/* The blocking system call is issued right here, not inside libc, so the frame
 * walk (which needs frame pointers, and libc has none) starts in this function. */
__attribute__((noinline)) void sleep_inner(long ns)
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

/* Each sleep's wall-clock window as the sleeping thread saw it: the switch
 * records of a sleep must lie inside it, however late a loaded machine wakes
 * the thread. */
#define MAX_SLEEPS 64
static uint64_t sleep_win[MAX_SLEEPS][2];
static int n_sleeps;

__attribute__((noinline)) void sleeper(int times, long ns)
{
	for (int i = 0; i < times; i++) {
		uint64_t t0 = now_ns();
		sleep_inner(ns);
		if (n_sleeps < MAX_SLEEPS) {
			sleep_win[n_sleeps][0] = t0;
			sleep_win[n_sleeps++][1] = now_ns();
		}
	}
}

/* Spins with the frame pointer register holding garbage: whatever samples land
 * here must not make the walk dereference it. The labels bound the loop: a
 * sample in the rest of the function (prologue, epilogue, sanitizer code)
 * sees a valid frame pointer and may rightly walk on. */
extern const char corrupt_loop_begin[], corrupt_loop_end[];
__attribute__((noinline)) void corrupt_spin(uint64_t iters, uint64_t garbage)
{
#if defined(__x86_64__)
	__asm__ volatile("mov %%rbp, %%r12\n\t"
			 "mov %1, %%rbp\n\t"
			 ".globl corrupt_loop_begin\n"
			 "corrupt_loop_begin:\n\t"
			 "1: dec %0\n\t"
			 "jnz 1b\n\t"
			 ".globl corrupt_loop_end\n"
			 "corrupt_loop_end:\n\t"
			 "mov %%r12, %%rbp\n\t"
			 : "+r"(iters)
			 : "r"(garbage)
			 : "r12", "cc", "memory");
#elif defined(__aarch64__)
	__asm__ volatile("mov x9, x29\n\t"
			 "mov x29, %1\n\t"
			 ".globl corrupt_loop_begin\n"
			 "corrupt_loop_begin:\n\t"
			 "1: subs %0, %0, #1\n\t"
			 "b.ne 1b\n\t"
			 ".globl corrupt_loop_end\n"
			 "corrupt_loop_end:\n\t"
			 "mov x29, x9\n\t"
			 : "+r"(iters)
			 : "r"(garbage)
			 : "x9", "cc", "memory");
#else
	sink_v += spin_leaf(iters);
	(void)garbage;
#endif
}

struct range {
	uint64_t lo, hi;
};

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

/* ---- the sink: everything copied into flat arrays ---- */

#define KEEP 16
struct smp {
	uint64_t ts, weight;
	uint32_t tid, kind, nframes, nkernel;
	uint64_t f[KEEP]; /* frames[nkernel ...], user part */
	uint64_t k0;      /* frames[0] */
};

struct col {
	struct smp *s;
	size_t ns, cap;
	struct ss_switch *sw;
	size_t nsw, capsw;
	uint64_t lost[4];
	uint64_t lost_records;
	size_t nmaps;
	int exe_bid, libc_bid;
	int dl_seen, dl_bid;
	char exe[4096];
	uint64_t comms;
	int bad;
	int count_only;   /* keep nothing: the leak check must not see our own growth */
	uint64_t counted;
};

static struct col C;

static void on_sample(void *ctx, const struct ss_sample *s)
{
	struct col *c = ctx;
	if (s->nframes > SS_MAX_FRAMES || s->nkernel > s->nframes)
		c->bad++;
	c->counted++;
	if (c->count_only)
		return;
	if (c->ns == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 1024;
		c->s = realloc(c->s, c->cap * sizeof *c->s);
		CHECK(c->s, "oom");
	}
	struct smp *d = &c->s[c->ns++];
	memset(d, 0, sizeof *d);
	d->ts = s->ts;
	d->weight = s->weight;
	d->tid = s->tid;
	d->kind = s->kind;
	d->nframes = s->nframes;
	d->nkernel = s->nkernel;
	d->k0 = s->nframes ? s->frames[0] : 0;
	for (uint32_t i = s->nkernel, j = 0; i < s->nframes && j < KEEP; i++, j++)
		d->f[j] = s->frames[i];
}

static void on_switch(void *ctx, const struct ss_switch *sw)
{
	struct col *c = ctx;
	if (c->count_only)
		return;
	if (c->nsw == c->capsw) {
		c->capsw = c->capsw ? c->capsw * 2 : 1024;
		c->sw = realloc(c->sw, c->capsw * sizeof *c->sw);
		CHECK(c->sw, "oom");
	}
	c->sw[c->nsw++] = *sw;
}

static void on_mapping(void *ctx, const struct ss_mapping *m)
{
	struct col *c = ctx;
	c->nmaps++;
	if (m->end <= m->start || !m->path)
		c->bad++;
	if (strcmp(m->path, c->exe) == 0 && m->build_id_len == 20)
		c->exe_bid = 1;
	if (strstr(m->path, "/libc.so") && m->build_id_len >= 16)
		c->libc_bid = 1;
	if (m->ts && getenv("SAMPLER_DEBUG"))
		printf("    mapping ts %llu %s bid %u\n", (unsigned long long)m->ts, m->path,
		       m->build_id_len);
	if (m->ts && strstr(m->path, "libresolv")) {
		c->dl_seen = 1;
		c->dl_bid = m->build_id_len >= 16 && (m->prot & 4);
	}
}

static void on_comm(void *ctx, uint32_t tid, const char *name, uint64_t ts)
{
	struct col *c = ctx;
	(void)tid;
	(void)ts;
	if (name && name[0])
		c->comms++;
}

static void on_lost(void *ctx, const struct ss_sampler_lost *l)
{
	struct col *c = ctx;
	if (l->reason < 4)
		c->lost[l->reason] += l->count;
	c->lost_records++;
	if (l->ts_end < l->ts)
		c->bad++;
}

static const struct ss_sample_sink SINK = {
	.ctx = &C, .sample = on_sample, .switch_rec = on_switch, .mapping = on_mapping,
	.comm = on_comm, .lost = on_lost,
};

static void col_reset(void)
{
	free(C.s);
	free(C.sw);
	char exe[4096];
	memcpy(exe, C.exe, sizeof exe);
	memset(&C, 0, sizeof C);
	memcpy(C.exe, exe, sizeof exe);
}

/* ---- sampled threads: the writer adds them by tid, like the real writer ---- */

enum work { W_SPIN, W_SLEEP, W_CORRUPT, W_SHORT, W_DLOPEN, W_MIGRATE, W_SLEEP_SPIN, W_CPU0_SPIN };

struct worker {
	pthread_t th;
	enum work what;
	uint64_t arg;
	_Atomic uint32_t tid;
	uint64_t stack_lo, stack_hi;
	_Atomic int go, done;
	uint64_t t0, t1; /* the work's window */
	uint64_t followed_from, followed_to; /* thread_add .. thread_remove (run_worker) */
	uint64_t cpu;    /* CPU time the thread spent in it: the machine is shared */
	/* W_SLEEP_SPIN: when its spin began (wall, thread CPU), and the stop */
	_Atomic uint64_t spin_t0, spin_cpu0;
	_Atomic int stop;
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	pthread_attr_t a;
	void *addr;
	size_t size;
	pthread_getattr_np(pthread_self(), &a);
	pthread_attr_getstack(&a, &addr, &size);
	pthread_attr_destroy(&a);
	w->stack_lo = (uint64_t)(uintptr_t)addr;
	w->stack_hi = w->stack_lo + size;
	atomic_store(&w->tid, (uint32_t)gettid());
	while (!atomic_load(&w->go))
		sched_yield();
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	w->t0 = now_ns();
	switch (w->what) {
	case W_SPIN:
		spin_caller(w->arg);
		break;
	case W_SLEEP:
		sleeper(20, 5000000);
		break;
	case W_CORRUPT: {
		/* Garbage of every kind: unaligned, null, kernel, out of the stack, in
		 * the stack but pointing at itself, in the stack below sp. */
		uint64_t self[2];
		self[0] = (uint64_t)(uintptr_t)self;
		self[1] = (uint64_t)(uintptr_t)spin_leaf + 8;
		uint64_t desc[4];
		desc[0] = (uint64_t)(uintptr_t)desc - 320; /* goes down: must stop */
		desc[1] = (uint64_t)(uintptr_t)spin_leaf + 8;
		uint64_t garbage[] = {
			0xdeadbeefull, 0, 0xffff888000000000ull, 0x1000,
			(uint64_t)(uintptr_t)self, (uint64_t)(uintptr_t)desc,
			(uint64_t)(uintptr_t)self - 4096, w->stack_hi - 8, w->stack_hi,
			~0ull - 15,
		};
		for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++)
			for (int k = 0; k < 10; k++)
				corrupt_spin(w->arg, garbage[i]);
		break;
	}
	case W_SHORT:
		sink_v += spin_leaf(w->arg);
		break;
	case W_MIGRATE:
		/* Hops between CPU 0 and 1, spinning a little and sleeping on each: its
		 * records land in both CPUs' rings. */
		for (uint64_t i = 0; i < w->arg; i++) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET((int)(i & 1), &set);
			sched_setaffinity(0, sizeof set, &set);
			sink_v += spin_leaf(20000);
			sleep_ms(1);
		}
		break;
	case W_SLEEP_SPIN:
		/* A few sleeps (switch records of its own), then on a CPU until told. */
		for (int i = 0; i < 3; i++)
			sleep_ms(2);
		atomic_store(&w->spin_cpu0, thread_cpu_ns());
		atomic_store(&w->spin_t0, now_ns());
		while (!atomic_load(&w->stop))
			sink_v += spin_leaf(2000);
		break;
	case W_CPU0_SPIN: {
		/* On CPU 0 beside another spinner there: preempted, never blocked. */
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(0, sizeof set, &set); /* (a move: blocked until done) */
		atomic_store(&w->spin_t0, now_ns());
		while (!atomic_load(&w->stop))
			sink_v += spin_leaf(2000);
		break;
	}
	case W_DLOPEN:
		/* A library this program does not link: its code is mapped by this
		 * (sampled) thread, so an MMAP2 record must come out. */
		w->arg = (uint64_t)(uintptr_t)dlopen("libresolv.so.2", RTLD_NOW | RTLD_LOCAL);
		break;
	}
	w->t1 = now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	w->cpu = (uint64_t)(c1.tv_sec - c0.tv_sec) * 1000000000u + (uint64_t)c1.tv_nsec -
		 (uint64_t)c0.tv_nsec;
	atomic_store(&w->done, 1);
	return NULL;
}

static void worker_spawn(struct worker *w, enum work what, uint64_t arg)
{
	memset(w, 0, sizeof *w);
	w->what = what;
	w->arg = arg;
	CHECK(pthread_create(&w->th, NULL, worker_main, w) == 0, "pthread_create");
	while (!atomic_load(&w->tid))
		sched_yield();
}

/* Adds the worker, lets it run to completion while draining every 10 ms as the
 * writer does (or not at all when drain_ms is 0), then removes it. */
static size_t cpu_samples_of(uint32_t tid)
{
	size_t n = 0;
	for (size_t i = 0; i < C.ns; i++)
		n += C.s[i].tid == tid && C.s[i].kind == SS_SAMPLE_CPU;
	return n;
}

/* want: CPU samples a spinning worker must have given before it may stop. */
static int run_worker_want(struct worker *w, unsigned drain_ms, size_t want)
{
	w->followed_from = now_ns();
	int r = ss_sampler_thread_add(w->tid, w->stack_lo, w->stack_hi);
	atomic_store(&spin_enough, want == 0);
	atomic_store(&w->go, 1);
	while (!atomic_load(&w->done)) {
		sleep_ms(drain_ms ? drain_ms : 5);
		if (drain_ms)
			ss_sampler_drain(&SINK);
		if (want && cpu_samples_of(w->tid) >= want)
			atomic_store(&spin_enough, 1);
	}
	pthread_join(w->th, NULL);
	ss_sampler_thread_remove(w->tid);
	w->followed_to = now_ns();
	ss_sampler_drain(&SINK);
	return r;
}

static int run_worker(struct worker *w, unsigned drain_ms)
{
	return run_worker_want(w, drain_ms, 0);
}

static struct range R_leaf, R_caller, R_sleep_inner, R_sleeper, R_corrupt, R_corrupt_loop;

/* Fraction of CPU samples of tid whose user leaf is in spin_leaf and whose next
 * frame returns into spin_caller; also checks the sample times. */
static double stack_fraction(uint32_t tid, const struct worker *w, size_t *n_out,
			     size_t *outside, uint64_t *weight)
{
	size_t n = 0, good = 0, out = 0;
	*weight = 0;
	for (size_t i = 0; i < C.ns; i++) {
		const struct smp *s = &C.s[i];
		if (s->tid != tid || s->kind != SS_SAMPLE_CPU)
			continue;
		n++;
		*weight += s->weight;
		uint32_t nu = s->nframes - s->nkernel;
		if (nu >= 2 && in(R_leaf, s->f[0]) && in(R_caller, s->f[1] - 1)) {
			good++;
			/* 2 ms of slack: a sample's time is the timer expiry, the window
			 * is read by the thread itself. */
			if (s->ts + 2000000 < w->t0 || s->ts > w->t1 + 2000000)
				out++;
		}
	}
	if (getenv("SAMPLER_DEBUG"))
		for (size_t i = 0, k = 0; i < C.ns && k < 5; i++)
			if (C.s[i].tid == tid) {
				k++;
				printf("    sample nf %u nk %u k0 %#llx f %#llx %#llx %#llx (leaf %#llx-%#llx caller %#llx-%#llx)\n",
				       C.s[i].nframes, C.s[i].nkernel, (unsigned long long)C.s[i].k0,
				       (unsigned long long)C.s[i].f[0], (unsigned long long)C.s[i].f[1],
				       (unsigned long long)C.s[i].f[2], (unsigned long long)R_leaf.lo,
				       (unsigned long long)R_leaf.hi, (unsigned long long)R_caller.lo,
				       (unsigned long long)R_caller.hi);
			}
	*n_out = n;
	*outside = out;
	return n ? (double)good / (double)n : 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n++;
	closedir(d);
	return n;
}

/* Lines of /proc/self/maps, and of those the perf rings ([perf_event] anon inodes). */
static int count_maps_rings(int *rings)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	int n = 0;
	*rings = 0;
	while (fgets(line, sizeof line, f)) {
		n += strchr(line, '\n') != NULL;
		*rings += strstr(line, "perf_event") != NULL;
	}
	fclose(f);
	return n;
}

static int count_maps(void)
{
	int r;
	return count_maps_rings(&r);
}

/* ASan maps memory of its own per thread (fake stacks, allocator caches), so the
 * line count is exact only without it. The -san build links the runtime without
 * compiling this file with -fsanitize, hence the weak symbol, not a macro. */
extern void __asan_init(void) __attribute__((weak));
#define EXACT_MAPS (!__asan_init)

static struct ss_sampler_config cfg_of(enum ss_sampler_mode m, uint32_t hz, uint32_t pages,
				       uint32_t tring)
{
	struct ss_sampler_config c;
	memset(&c, 0, sizeof c);
	c.mode = m;
	c.offcpu = SS_OFFCPU_AUTO;
	c.hz = hz;
	c.perf_pages = pages;
	c.timer_ring = tring;
	return c;
}

static char status[512];

/* How perf follows threads in the sessions start_mode() begins: the process's
 * per-CPU events (0, the default), each thread's own (the fallback, forced), and
 * how off-CPU stacks are taken (0 = a stack copy walked by the sampler). */
static int force_per_thread;
static uint32_t offcpu_copy;
static int force_switch_events; /* the events' switch records, not the sched_switch program */

static int start_mode(enum ss_sampler_mode m, uint32_t hz, uint32_t pages, uint32_t tring)
{
	struct ss_sampler_config c = cfg_of(m, hz, pages, tring);
	c.per_thread = force_per_thread;
	c.offcpu_copy = offcpu_copy;
	c.switch_events = force_switch_events;
	ss_sampler_start(&c, status, sizeof status);
	printf("  status [%s]: %s\n", ss_sampler_mode_name(ss_sampler_mode()), status);
	col_reset();
	return ss_sampler_mode() == m;
}

/* ---- the parts ---- */

static void part_stacks(const char *label)
{
	struct worker w;
	worker_spawn(&w, W_SPIN, 300000000);
	CHECK(run_worker_want(&w, 10, 20) == 0, "thread_add: %s", ss_sampler_status());
	size_t n, outside;
	uint64_t weight;
	double f = stack_fraction(w.tid, &w, &n, &outside, &weight);
	printf("  %s: %zu CPU samples in a 300 ms spin (%.0f ms window, %.0f ms on CPU) weighing "
	       "%.0f ms, %.1f%% with leaf in spin_leaf and caller spin_caller, %zu of those outside "
	       "the window, comm %llu\n", label, n, (double)(w.t1 - w.t0) / 1e6,
	       (double)w.cpu / 1e6, (double)weight / 1e6, f * 100, outside,
	       (unsigned long long)C.comms);
	/* Relative to the CPU time the thread got (the VM is shared); POSIX CPU timers
	 * fire at scheduler ticks, so there samples are fewer and heavier. */
	CHECK(n >= 15, "%s: only %zu samples", label, n);
	CHECK(weight >= w.cpu * 6 / 10 && weight <= w.cpu * 14 / 10 + 10000000,
	      "%s: samples weigh %llu ns for %llu ns of CPU", label, (unsigned long long)weight,
	      (unsigned long long)w.cpu);
	CHECK(f >= 0.90, "%s: %.3f of samples in spin_leaf<-spin_caller", label, f);
	CHECK(outside == 0, "%s: %zu samples outside the spin window", label, outside);
	CHECK(C.bad == 0, "malformed records");
	CHECK(C.comms >= 1, "no thread name delivered");
}

static void part_enable(const char *label)
{
	/* Disabled: nothing for the thread; enabled again: samples. */
	ss_sampler_set_enabled(0);
	struct worker w;
	worker_spawn(&w, W_SPIN, 100000000);
	run_worker(&w, 10);
	size_t off = 0;
	for (size_t i = 0; i < C.ns; i++)
		off += C.s[i].tid == w.tid;
	ss_sampler_set_enabled(1);
	worker_spawn(&w, W_SPIN, 100000000);
	run_worker_want(&w, 10, 5);
	size_t on = 0;
	for (size_t i = 0; i < C.ns; i++)
		on += C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_CPU;
	printf("  %s: disabled 100 ms spin -> %zu samples of any kind, enabled -> %zu CPU samples\n",
	       label, off, on);
	CHECK(off == 0, "%s: samples while disabled", label);
	CHECK(on >= 5, "%s: too few samples after re-enabling", label);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void part_sleep(void)
{
	struct worker w;
	n_sleeps = 0;
	worker_spawn(&w, W_SLEEP, 0);
	run_worker(&w, 10);
	uint64_t gaps[256];
	bool in_tol[256];
	size_t ng = 0, outs = 0, preempt = 0, ins = 0;
	for (size_t i = 0; i < C.nsw; i++) {
		const struct ss_switch *s = &C.sw[i];
		if (s->tid != w.tid)
			continue;
		if (!s->out) {
			ins++;
			continue;
		}
		if (s->preempted) {
			preempt++;
			continue;
		}
		if (s->ts < w.t0 || s->ts > w.t1)
			continue;
		outs++;
		/* The sleep this switch-out belongs to, as the thread timed it. */
		int k = -1;
		for (int q = 0; q < n_sleeps; q++)
			if (s->ts >= sleep_win[q][0] && s->ts <= sleep_win[q][1])
				k = q;
		for (size_t j = i + 1; j < C.nsw; j++)
			if (C.sw[j].tid == w.tid && !C.sw[j].out) {
				if (ng < 256) {
					gaps[ng] = C.sw[j].ts - s->ts;
					/* Off CPU at least the 5 ms asked for, and back on CPU
					 * before the thread read the clock after the call
					 * (200 us of slack for the clock read itself). */
					in_tol[ng] = k >= 0 && gaps[ng] >= 4500000 &&
						     C.sw[j].ts <= sleep_win[k][1] + 200000;
					ng++;
				}
				break;
			}
	}
	size_t good = 0;
	for (size_t i = 0; i < ng; i++)
		good += in_tol[i];
	qsort(gaps, ng, sizeof gaps[0], cmp_u64);
	printf("  sleep: %zu blocked switch-outs in the window (%zu preempted, %zu switch-ins in "
	       "all), %zu paired; off-CPU min %.2f median %.2f max %.2f ms; %zu inside their sleep's "
	       "own window and at least 4.5 ms\n",
	       outs, preempt, ins, ng, ng ? gaps[0] / 1e6 : 0, ng ? gaps[ng / 2] / 1e6 : 0,
	       ng ? gaps[ng - 1] / 1e6 : 0, good);
	CHECK(outs >= 20 && ng >= 20, "expected 20 blocked switch-outs paired, got %zu/%zu", outs,
	      ng);
	CHECK(good >= 18, "only %zu of %zu sleeps measured off CPU >= 4.5 ms and inside the sleep", good, ng);

	if (!ss_sampler_offcpu_stacks()) {
		printf("  SKIP off-CPU stacks: not available (%s)\n", ss_sampler_status());
		return;
	}
	size_t noff = 0, found = 0, kern = 0;
	for (size_t i = 0; i < C.ns; i++) {
		const struct smp *s = &C.s[i];
		if (s->tid != w.tid || s->kind != SS_SAMPLE_OFFCPU)
			continue;
		noff++;
		kern += s->nkernel > 0;
		uint32_t nu = s->nframes - s->nkernel;
		for (uint32_t j = 0; j < nu && j < KEEP; j++)
			if (in(R_sleep_inner, s->f[j] - (j ? 1 : 0)) ||
			    in(R_sleeper, s->f[j] - (j ? 1 : 0))) {
				found++;
				break;
			}
	}
	printf("  off-CPU: %zu samples, %zu with kernel frames, %zu with sleep_inner/sleeper in "
	       "the user frames\n", noff, kern, found);
	CHECK(found >= 20, "off-CPU stacks of the sleeps: %zu", found);
}

/* A worker the sampler follows already: run to its end, drained every 10 ms as
 * the writer does, then removed and drained a last time. */
static void run_added(struct worker *w)
{
	atomic_store(&w->go, 1);
	while (!atomic_load(&w->done)) {
		sleep_ms(10);
		ss_sampler_drain(&SINK);
	}
	pthread_join(w->th, NULL);
	ss_sampler_thread_remove(w->tid);
	ss_sampler_drain(&SINK);
}

/* The off-CPU filter as the writer drives it: a sleeping worker given its in-poll
 * cell, set to "outside a poll" (none of its 20 blocked switch-outs may come
 * out: they are dropped before the kernel builds them) and then to "inside"
 * (they must). Where the filter is not loaded (no CAP_BPF) there is no cell. */
static void part_inpoll(const char *label)
{
	for (int in_poll = 0; in_poll < 2; in_poll++) {
		struct worker w;
		n_sleeps = 0;
		worker_spawn(&w, W_SLEEP, 0);
		CHECK(ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) == 0, "thread_add");
		_Atomic uint32_t *cell = ss_sampler_inpoll_cell(w.tid, in_poll);
		if (!ss_sampler_offcpu_in_polls()) {
			CHECK(!cell, "a cell without the filter");
			atomic_store(&w.go, 1);
			pthread_join(w.th, NULL);
			ss_sampler_thread_remove(w.tid);
			ss_sampler_drain(&SINK);
			printf("  SKIP in-poll filter (%s): %s\n", label, ss_sampler_status());
			return;
		}
		CHECK(cell && atomic_load(cell) == (in_poll ? 2u : 1u), "cell for a %s worker",
		      in_poll ? "polling" : "parked");
		run_added(&w);
		size_t off = 0, outs = 0;
		for (size_t i = 0; i < C.ns; i++)
			off += C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_OFFCPU &&
			       C.s[i].ts >= w.t0 && C.s[i].ts <= w.t1;
		for (size_t i = 0; i < C.nsw; i++)
			outs += C.sw[i].tid == w.tid && C.sw[i].out && !C.sw[i].preempted &&
				C.sw[i].ts >= w.t0 && C.sw[i].ts <= w.t1;
		printf("  in-poll filter (%s), cell %s: %zu blocked switch-outs, %zu off-CPU samples\n",
		       label, in_poll ? "inside a poll" : "outside", outs, off);
		CHECK(outs >= 20, "%zu blocked switch-outs of 20 sleeps", outs);
		if (in_poll)
			CHECK(off >= 20, "inside a poll: %zu off-CPU samples of 20 sleeps", off);
		else
			CHECK(off == 0, "outside a poll: %zu off-CPU samples", off);
	}
}

/* Where the sched_switch program writes the switches and leaves parks out: 1,
 * with a sleeping worker spawned (not yet started); else SKIP said, 0. */
static int sleeper_parks_left_out(struct worker *w, const char *part, const char *label)
{
	if (ss_sampler_switch_program() != 2) {
		printf("  SKIP %s (%s): switches not from the sched_switch program leaving parks "
		       "out: %s\n", part, label, ss_sampler_status());
		return 0;
	}
	n_sleeps = 0;
	worker_spawn(w, W_SLEEP, 0);
	return 1;
}

/* The sched_switch program (where it writes the switches) leaves a parked
 * worker out: with its cell saying parked, none of its 20 sleeps gives a switch
 * record or an off-CPU sample (part_inpoll's "outside a poll" gives at least 20
 * switch-outs: between polls a worker's switches are written). */
static void part_parked(const char *label)
{
	struct worker w;
	if (!sleeper_parks_left_out(&w, "parked workers", label))
		return;
	CHECK(ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) == 0, "thread_add");
	_Atomic uint32_t *cell = ss_sampler_inpoll_cell(w.tid, 0);
	CHECK(cell, "no cell for a followed worker (%s)", label);
	atomic_store(cell, SS_INPOLL_PARKED);
	run_added(&w);
	size_t sw = 0, off = 0;
	for (size_t i = 0; i < C.nsw; i++)
		sw += C.sw[i].tid == w.tid && C.sw[i].ts >= w.t0 && C.sw[i].ts <= w.t1;
	for (size_t i = 0; i < C.ns; i++)
		off += C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_OFFCPU;
	printf("  parked worker (%s): %zu switch records and %zu off-CPU samples in 20 sleeps\n",
	       label, sw, off);
	CHECK(sw == 0 && off == 0, "parked: %zu switch records, %zu off-CPU samples", sw, off);
}

/* A bucket two followed threads share: its cell is the first one's, and a
 * PARKED stored there must not silence the other. A fake tid F in the bucket
 * of a sleeping worker W (F = W ^ 16384; per-CPU events open nothing per
 * thread) is followed first and keeps the cell, W then gets none; with F's cell
 * saying parked, W's 20 sleeps must still give their blocked switch-outs (and,
 * the bucket being shared, their off-CPU stacks where the program takes them). */
static void part_shared_parked(const char *label)
{
	struct worker w;
	if (!sleeper_parks_left_out(&w, "shared bucket", label))
		return;
	uint32_t fake = w.tid ^ SS_INPOLL_CELLS;
	CHECK(ss_sampler_thread_add(fake, 0, 0) == 0, "thread_add of a fake tid (%s)", label);
	_Atomic uint32_t *cell = ss_sampler_inpoll_cell(fake, 0);
	CHECK(cell, "no cell for the bucket's first follower (%s)", label);
	CHECK(ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) == 0, "thread_add");
	CHECK(!ss_sampler_inpoll_cell(w.tid, 0), "a cell for a shared bucket's second follower");
	atomic_store(cell, SS_INPOLL_PARKED);
	run_added(&w);
	ss_sampler_thread_remove(fake);
	ss_sampler_drain(&SINK);
	size_t outs = 0, off = 0;
	for (size_t i = 0; i < C.nsw; i++)
		outs += C.sw[i].tid == w.tid && C.sw[i].out && !C.sw[i].preempted &&
			C.sw[i].ts >= w.t0 && C.sw[i].ts <= w.t1;
	for (size_t i = 0; i < C.ns; i++)
		off += C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_OFFCPU &&
		       C.s[i].ts >= w.t0 && C.s[i].ts <= w.t1;
	printf("  shared bucket, the other follower parked (%s): %zu blocked switch-outs, %zu "
	       "off-CPU samples in 20 sleeps\n", label, outs, off);
	CHECK(outs >= 20, "%s: %zu blocked switch-outs of 20 sleeps beside a parked bucket-mate",
	      label, outs);
	if (ss_sampler_offcpu_stacks())
		CHECK(off >= 20, "%s: %zu off-CPU samples of 20 sleeps in a shared bucket", label, off);
}

/* The sched_switch program takes a stack at a blocked switch-out inside a poll,
 * not at a preemption (where the thread was is what its CPU samples show): a
 * worker inside a poll sharing CPU 0 with another spinner for 200 ms is
 * preempted again and again, and has no off-CPU sample. */
static void part_preempted(const char *label)
{
	if (ss_sampler_switch_program() != 2 || !ss_sampler_offcpu_in_polls()) {
		printf("  SKIP preemptions in a poll (%s): no stacks from the sched_switch program\n", label);
		return;
	}
	struct worker w, other;
	worker_spawn(&w, W_CPU0_SPIN, 0);
	worker_spawn(&other, W_CPU0_SPIN, 0);
	CHECK(ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) == 0, "thread_add");
	_Atomic uint32_t *cell = ss_sampler_inpoll_cell(w.tid, 1);
	CHECK(cell, "no cell for a followed worker (%s)", label);
	atomic_store(&w.go, 1);
	atomic_store(&other.go, 1);
	/* 200 ms at least, and on until 3 preemptions were seen (a loaded machine
	 * may leave the pair of spinners few turns on CPU 0), 10 s at most. */
	for (int i = 0; i < 1000; i++) {
		sleep_ms(10);
		ss_sampler_drain(&SINK);
		size_t seen = 0;
		for (size_t k = 0; k < C.nsw; k++)
			seen += C.sw[k].tid == w.tid && C.sw[k].out && C.sw[k].preempted;
		if (i >= 19 && seen >= 3)
			break;
	}
	uint64_t t_stop = now_ns(); /* (its exit is a blocked switch-out, after it) */
	atomic_store(&w.stop, 1);
	atomic_store(&other.stop, 1);
	pthread_join(w.th, NULL);
	pthread_join(other.th, NULL);
	ss_sampler_thread_remove(w.tid);
	ss_sampler_drain(&SINK);
	size_t pre = 0, off = 0;
	CHECK(atomic_load(&w.spin_t0), "the spinner never spun");
	for (size_t i = 0; i < C.nsw; i++)
		pre += C.sw[i].tid == w.tid && C.sw[i].out && C.sw[i].preempted;
	for (size_t i = 0; i < C.ns; i++)
		off += C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_OFFCPU && C.s[i].ts < t_stop &&
		       C.s[i].ts > atomic_load(&w.spin_t0);
	if (getenv("SAMPLER_DEBUG"))
		for (size_t i = 0; i < C.ns; i++)
			if (C.s[i].tid == w.tid && C.s[i].kind == SS_SAMPLE_OFFCPU)
				printf("    off-CPU at %+.3f ms of the stop: %u frames, %#llx %#llx %#llx\n",
				       ((double)C.s[i].ts - (double)t_stop) / 1e6, C.s[i].nframes,
				       (unsigned long long)C.s[i].f[0], (unsigned long long)C.s[i].f[1],
				       (unsigned long long)C.s[i].f[2]);
	printf("  preempted in a poll (%s): %zu preempted switch-outs, %zu off-CPU samples\n", label, pre, off);
	CHECK(pre >= 3, "%s: %zu preemptions in 10 s beside another spinner on CPU 0", label, pre);
	CHECK(off == 0, "%s: %zu off-CPU samples at preemptions", label, off);
}

/* How long the writer may sleep (ss_sampler_max_sleep_ns): the tick before the
 * first drain; after a spinning worker's drains, a quarter of the fastest ring
 * at its rate: long for the default rings (a 999 Hz thread fills 4 MiB slowly),
 * short for a tiny one at 20 kHz. The bound is read after every drain of the
 * spin and the shortest one checked: on a loaded machine the worker may sit
 * off the CPU for several drains, and each drain that finds nothing rightly
 * halves the rate it goes by. */
static void part_pace(const char *label, int tiny)
{
	uint64_t first = ss_sampler_max_sleep_ns();
	struct worker w;
	worker_spawn(&w, W_SPIN, 200000000);
	w.followed_from = now_ns();
	ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi);
	atomic_store(&spin_enough, 1);
	atomic_store(&w.go, 1);
	uint64_t shortest = UINT64_MAX;
	unsigned drains = 0;
	while (!atomic_load(&w.done)) {
		sleep_ms(10);
		ss_sampler_drain(&SINK);
		drains++;
		uint64_t b = ss_sampler_max_sleep_ns();
		if (b < shortest)
			shortest = b;
	}
	pthread_join(w.th, NULL);
	ss_sampler_thread_remove(w.tid);
	w.followed_to = now_ns();
	ss_sampler_drain(&SINK);
	uint64_t after = ss_sampler_max_sleep_ns();
	printf("  %s: the writer may sleep %.1f ms before a drain; after the %u drains of a spinning worker at "
	       "least %.1f ms, after the last %.1f ms\n", label, (double)first / 1e6, drains,
	       shortest == UINT64_MAX ? -1.0 : (double)shortest / 1e6,
	       after == UINT64_MAX ? -1.0 : (double)after / 1e6);
	CHECK(first == SS_SAMPLER_TICK_NS, "%s: before any rate, not the tick: %llu", label,
	      (unsigned long long)first);
	if (tiny)
		CHECK(shortest < 3 * SS_SAMPLER_TICK_NS, "%s: a 16-page ring at 20 kHz may wait %llu ns", label,
		      (unsigned long long)shortest);
	else
		CHECK(shortest != UINT64_MAX && shortest >= 5 * SS_SAMPLER_TICK_NS,
		      "%s: 4 MiB rings at 999 Hz may wait only %llu ns", label, (unsigned long long)shortest);
}

/* A thread on a CPU when the records are drained is on a CPU in them: its last
 * switch-in is there, so its on-CPU time from the switch records (the last
 * switch-in counting up to the drain) covers most of the CPU time it used. A
 * source that wrote a switch-in only with the switch-out after it would show a
 * thread spinning since its last sleep as off the CPU for all of it. */
static void part_oncpu(const char *label)
{
	struct worker w;
	worker_spawn(&w, W_SLEEP_SPIN, 0);
	w.followed_from = now_ns();
	CHECK(ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) == 0, "thread_add");
	clockid_t clk;
	CHECK(pthread_getcpuclockid(w.th, &clk) == 0, "pthread_getcpuclockid");
	atomic_store(&w.go, 1);
	/* 150 ms of spinning, drained as the writer does, and a last drain */
	uint64_t t0;
	while (!(t0 = atomic_load(&w.spin_t0)))
		sleep_ms(1);
	while (now_ns() - t0 < 150000000ull) {
		sleep_ms(10);
		ss_sampler_drain(&SINK);
	}
	struct timespec ts;
	clock_gettime(clk, &ts);
	uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - atomic_load(&w.spin_cpu0);
	uint64_t t_end = now_ns();
	ss_sampler_drain(&SINK);
	atomic_store(&w.stop, 1);
	pthread_join(w.th, NULL);
	ss_sampler_thread_remove(w.tid);
	uint64_t on = 0, since = 0;
	int state = 0; /* 1 on a CPU since `since` */
	size_t n = 0;
	for (size_t i = 0; i < C.nsw; i++) {
		const struct ss_switch *s = &C.sw[i];
		if (s->tid != w.tid || s->ts > t_end)
			continue;
		n++;
		uint64_t at = s->ts > t0 ? s->ts : t0;
		if (state && s->out && at > since)
			on += at - since;
		state = !s->out;
		since = at;
	}
	if (state && t_end > since)
		on += t_end - since;
	printf("  on a CPU at the drain (%s): %zu switch records; on CPU %.1f ms by them of %.1f ms "
	       "of CPU used in the spin; last record a switch-%s\n", label, n, (double)on / 1e6,
	       (double)cpu / 1e6, state ? "in" : "out");
	CHECK(n >= 6, "%s: %zu switch records of 3 sleeps", label, n);
	CHECK(on * 2 >= cpu, "%s: the switch records show %.1f ms on CPU of %.1f ms used", label,
	      (double)on / 1e6, (double)cpu / 1e6);
	ss_sampler_drain(&SINK);
}

/* With per-CPU rings a thread's records come from as many rings as the CPUs it
 * ran on: the drain must still hand them over in the thread's time order (a
 * switch-in never before the switch-out it follows). */
static void part_migrate(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("  SKIP migration: one CPU\n");
		return;
	}
	struct worker w;
	worker_spawn(&w, W_MIGRATE, 200);
	run_worker(&w, 10);
	size_t n = 0, back = 0, cpus[2] = { 0, 0 }, nsm = 0, back_sm = 0;
	uint64_t last = 0;
	for (size_t i = 0; i < C.nsw; i++) {
		const struct ss_switch *s = &C.sw[i];
		if (s->tid != w.tid)
			continue;
		n++;
		back += s->ts < last;
		last = s->ts;
		if (s->cpu < 2)
			cpus[s->cpu]++;
	}
	last = 0;
	for (size_t i = 0; i < C.ns; i++)
		if (C.s[i].tid == w.tid) {
			nsm++;
			back_sm += C.s[i].ts < last;
			last = C.s[i].ts;
		}
	printf("  migration: %zu switch records (%zu on CPU 0, %zu on CPU 1), %zu earlier than the "
	       "one before; %zu samples, %zu out of order\n", n, cpus[0], cpus[1], back, nsm, back_sm);
	CHECK(n >= 200 && cpus[0] >= 50 && cpus[1] >= 50, "the worker did not hop between CPUs");
	CHECK(back == 0 && back_sm == 0, "records out of the thread's time order");
}

static void part_corrupt(void)
{
	struct worker w;
	worker_spawn(&w, W_CORRUPT, 3000000);
	run_worker(&w, 10);
	size_t n = 0, in_c = 0, in_loop = 0, deep = 0;
	for (size_t i = 0; i < C.ns; i++) {
		const struct smp *s = &C.s[i];
		if (s->tid != w.tid)
			continue;
		n++;
		if (in(R_corrupt, s->f[0])) {
			in_c++;
			in_loop += in(R_corrupt_loop, s->f[0]);
			/* Inside the loop, only walks that stayed in bounds: pc + at
			 * most one plausible frame from the self-pointing slot. */
			deep += in(R_corrupt_loop, s->f[0]) && s->nframes > 2;
		}
	}
	printf("  corrupt frame pointer: survived; %zu samples, %zu in corrupt_spin, %zu in its loop, %zu of "
	       "those walked past 2 frames\n", n, in_c, in_loop, deep);
	CHECK(in_loop >= 10, "too few samples in corrupt_spin's loop (%zu)", in_loop);
	CHECK(deep == 0, "walks went on through garbage");
}

static void part_tiny(int perf)
{
	struct worker w;
	worker_spawn(&w, W_SPIN, 200000000);
	run_worker(&w, 0); /* no drain while it runs: the ring must overflow */
	size_t n = 0, bad_ts = 0;
	for (size_t i = 0; i < C.ns; i++) {
		const struct smp *s = &C.s[i];
		if (s->tid != w.tid) {
			bad_ts++;
			continue;
		}
		n++;
		/* Followed from thread_add to thread_remove: the thread runs before t0
		 * (waiting for go) and after t1, and a preemption between a sample
		 * and its reading of the clock can put that sample well outside
		 * [t0, t1] on a loaded machine, but never outside what was followed. */
		if (s->ts < w.followed_from || s->ts > w.followed_to)
			bad_ts++;
	}
	uint64_t lost = C.lost[perf ? SS_SLOSS_KERNEL : SS_SLOSS_FALLBACK];
	printf("  tiny %s ring: %zu samples kept, %llu lost (%llu throttled) in %llu loss records, "
	       "%zu foreign/out-of-window\n", perf ? "perf (1 page, 20 kHz)" : "timer (2 slots, 5 kHz)",
	       n, (unsigned long long)lost, (unsigned long long)C.lost[SS_SLOSS_THROTTLE],
	       (unsigned long long)C.lost_records, bad_ts);
	CHECK(lost > 0, "no loss reported");
	CHECK(bad_ts == 0 && C.bad == 0, "corrupt records");
	CHECK(n > 0, "nothing kept");
}

static void part_many(const char *label, int nthreads)
{
	/* Warm glibc's thread-stack cache so our baseline includes it. */
	for (int i = 0; i < 4; i++) {
		struct worker w;
		worker_spawn(&w, W_SHORT, 1000);
		atomic_store(&w.go, 1);
		pthread_join(w.th, NULL);
	}
	ss_sampler_drain(&SINK);
	C.count_only = 1;
	int rings0, rings1;
	int fd0 = count_fds(), maps0 = count_maps_rings(&rings0);
	int refused = 0;
	uint64_t t0 = now_ns();
	for (int i = 0; i < nthreads; i++) {
		struct worker w;
		worker_spawn(&w, W_SHORT, 20000);
		refused += ss_sampler_thread_add(w.tid, w.stack_lo, w.stack_hi) != 0;
		atomic_store(&w.go, 1);
		pthread_join(w.th, NULL);
		ss_sampler_thread_remove(w.tid);
		if (i % 50 == 49)
			ss_sampler_drain(&SINK);
		if (i == nthreads / 2)
			printf("  %s: midway fds %d (base %d), maps %d (base %d)\n", label,
			       count_fds(), fd0, count_maps(), maps0);
	}
	ss_sampler_drain(&SINK);
	int fd1 = count_fds(), maps1 = count_maps_rings(&rings1);
	struct ss_sampler_stats st;
	ss_sampler_get_stats(&st);
	printf("  %s: %d short threads in %.0f ms, %d refused, %llu samples; fds %d -> %d, maps "
	       "lines %d -> %d, perf ring mappings %d -> %d; sampled now perf %u timer %u\n", label,
	       nthreads, (double)(now_ns() - t0) / 1e6, refused, (unsigned long long)C.counted,
	       fd0, fd1, maps0, maps1, rings0, rings1, st.threads_perf, st.threads_timer);
	C.count_only = 0;
	CHECK(refused == 0, "threads refused");
	CHECK(fd1 == fd0, "descriptor leak");
	CHECK(rings1 == rings0, "perf ring mapping leak");
	if (maps1 != maps0 && getenv("SAMPLER_DEBUG"))
		system("cat /proc/$PPID/maps >&2");
	CHECK(!EXACT_MAPS || maps1 == maps0, "mapping leak");
	CHECK(st.threads_perf == 0 && st.threads_timer == 0, "threads still counted");
}

static void part_dlopen(void)
{
	struct worker w;
	worker_spawn(&w, W_DLOPEN, 0);
	run_worker(&w, 10);
	if (!w.arg) {
		printf("  SKIP dlopen mapping: %s\n", dlerror());
		return;
	}
	printf("  dlopen on a sampled thread: MMAP2 mapping %s, build id %s\n",
	       C.dl_seen ? "seen" : "MISSING", C.dl_bid ? "found" : "MISSING");
	CHECK(C.dl_seen && C.dl_bid, "no mapping record for a dlopen()ed library");
	dlclose((void *)(uintptr_t)w.arg);
}

/* SAMPLER_THREADS=10000 for the long run; 2,000 keeps `meson test` quick. */
static int many_threads(void)
{
	const char *e = getenv("SAMPLER_THREADS");
	int n = e ? atoi(e) : 0;
	return n > 0 ? n : 2000;
}

static void part_mappings(void)
{
	ss_sampler_mappings(&SINK);
	uint64_t t0 = now_ns();
	for (int i = 0; i < 20; i++)
		ss_sampler_mappings(&SINK);
	double each = (double)(now_ns() - t0) / 20 / 1000;
	printf("  mappings: %zu per snapshot, build id of the test binary %s, of libc %s; "
	       "cached snapshot %.0f us\n", C.nmaps / 21, C.exe_bid ? "found" : "MISSING",
	       C.libc_bid ? "found" : "MISSING", each);
	CHECK(C.nmaps >= 21 * 3, "too few executable mappings");
	CHECK(C.exe_bid && C.libc_bid, "build ids");
	CHECK(C.bad == 0, "bad mapping");
}

/* perf_event_open refused the way a seccomp profile (containers) refuses it: AUTO
 * must land in timer mode, say why, and still sample. In a child: seccomp filters
 * cannot be removed. */
static int part_seccomp_fallback(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { .len = sizeof f / sizeof f[0], .filter = f };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(77);
		start_mode(SS_SAMPLER_AUTO, 0, 0, 0);
		CHECK(ss_sampler_mode() == SS_SAMPLER_TIMER, "AUTO under seccomp: %s", status);
		CHECK(strstr(status, "EACCES") && strstr(status, "perf_event_paranoid"),
		      "status does not say why: %s", status);
		part_stacks("seccomp fallback timer");
		ss_sampler_stop();
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
		return 77;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "seccomp child failed (status %#x)", st);
	return 0;
}

/* A process of our own that is not us: busy 1 ms, asleep 1 ms, until stopped
 * (the parts beside it may take tens of seconds on a loaded machine), or this
 * process ends, or 5 minutes. */
static pid_t bystander_start(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		uint64_t end = now_ns() + 300000000000ull;
		while (now_ns() < end) {
			uint64_t t = now_ns() + 1000000;
			while (now_ns() < t)
				sink_v++;
			sleep_ms(1);
		}
		_exit(0);
	}
	return pid;
}

/* Checks it ran all along: what it did not leak while gone proves nothing. */
static void bystander_stop(pid_t pid)
{
	CHECK(waitpid(pid, NULL, WNOHANG) == 0, "the bystander process ended before its part did");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Per-CPU events of every process: the parts that do not depend on how events
 * are opened, with another process busy beside them, none of whose records may
 * reach the sink. Mappings are not among them: these events ask for no MMAP2
 * (every process's mmap would make one); the writer's watch of the loader
 * covers dlopen (test_sampling). */
static void part_cpu_wide(int no_bpf)
{
	printf("cpu mode: per-CPU events of every process%s\n",
	       no_bpf ? ", no BPF filter (forced: other processes' samples dropped by the drain)" : "");
	struct ss_sampler_config c = cfg_of(SS_SAMPLER_CPU, 0, 0, 0);
	c.no_bpf_filter = no_bpf;
	ss_sampler_start(&c, status, sizeof status);
	printf("  status [%s]: %s\n", ss_sampler_mode_name(ss_sampler_mode()), status);
	col_reset();
	if (ss_sampler_per_cpu() != 2) {
		CHECK(strstr(status, "per-CPU events of every process refused"),
		      "cpu mode neither used nor refused with a reason: %s", status);
		printf("  SKIP cpu mode: refused (%s)\n", status);
		ss_sampler_stop();
		return;
	}
	CHECK(ss_sampler_mode() == SS_SAMPLER_PERF, "cpu mode runs as perf");
	CHECK(!no_bpf || strstr(status, "samples taken and dropped here: no BPF filter (asked)"),
	      "forced unfiltered events not said: %s", status);
	pid_t by = bystander_start();
	part_stacks("cpu");
	part_sleep();
	if (!no_bpf)
		part_inpoll("cpu");
	part_migrate();
	part_enable("cpu");
	ss_sampler_drain(&SINK);
	bystander_stop(by);
	struct ss_sampler_stats st;
	ss_sampler_get_stats(&st);
	size_t leaked = 0;
	for (size_t i = 0; i < C.ns; i++)
		leaked += C.s[i].tid == (uint32_t)by;
	for (size_t i = 0; i < C.nsw; i++)
		leaked += C.sw[i].tid == (uint32_t)by;
	printf("  other processes: %llu records dropped, %zu of the bystander's handed on\n",
	       (unsigned long long)st.foreign, leaked);
	CHECK(st.foreign > 0, "no record of another process seen (the bystander ran beside us)");
	CHECK(leaked == 0, "another process's records reached the sink");
	ss_sampler_stop();
	if (no_bpf)
		return; /* the rest does not depend on the filter */
	c = cfg_of(SS_SAMPLER_CPU, 20000, 1, 0);
	ss_sampler_start(&c, status, sizeof status);
	col_reset();
	part_tiny(1);
	ss_sampler_stop();
	c = cfg_of(SS_SAMPLER_CPU, 0, 0, 0);
	ss_sampler_start(&c, status, sizeof status);
	col_reset();
	part_many("cpu", many_threads());
	ss_sampler_stop();
}

/* AUTO where the sched_switch program loads (root): the cpu-clock events once
 * per CPU for every process, other processes' samples dropped in the kernel,
 * no switch records of anyone (the program writes this process's); the parts
 * that do not depend on how events are opened, with another process busy
 * beside them, none of whose records may reach the sink. */
static void part_auto_wide(void)
{
	printf("auto mode\n");
	struct ss_sampler_config c = cfg_of(SS_SAMPLER_AUTO, 0, 0, 0);
	ss_sampler_start(&c, status, sizeof status);
	printf("  status [%s]: %s\n", ss_sampler_mode_name(ss_sampler_mode()), status);
	col_reset();
	if (!ss_sampler_switch_program()) {
		CHECK(geteuid() != 0 || strstr(status, "not in the initial pid namespace"),
		      "root, yet no sched_switch program in AUTO: %s", status);
		printf("  SKIP auto mode as root: no sched_switch program (%s)\n", status);
		ss_sampler_stop();
		return;
	}
	CHECK(ss_sampler_per_cpu() == 2 && strstr(status, "cpu-clock per CPU for every process, this one's kept") &&
	      strstr(status, "other processes' samples dropped in the kernel"),
	      "AUTO with the program: not the cpu-clock of every CPU: %s", status);
	pid_t by = bystander_start();
	part_stacks("auto");
	part_sleep();
	part_inpoll("auto");
	part_parked("auto");
	part_shared_parked("auto");
	part_preempted("auto");
	part_oncpu("auto");
	part_migrate();
	part_enable("auto");
	ss_sampler_drain(&SINK);
	bystander_stop(by);
	size_t leaked = 0;
	for (size_t i = 0; i < C.ns; i++)
		leaked += C.s[i].tid == (uint32_t)by;
	for (size_t i = 0; i < C.nsw; i++)
		leaked += C.sw[i].tid == (uint32_t)by;
	printf("  auto: %zu of the bystander's records handed on\n", leaked);
	CHECK(leaked == 0, "another process's records reached the sink");
	ss_sampler_stop();
	c = cfg_of(SS_SAMPLER_AUTO, 20000, 1, 0);
	ss_sampler_start(&c, status, sizeof status);
	col_reset();
	part_tiny(1);
	ss_sampler_stop();
	c = cfg_of(SS_SAMPLER_AUTO, 0, 0, 0);
	ss_sampler_start(&c, status, sizeof status);
	col_reset();
	part_many("auto", many_threads());
	ss_sampler_stop();
}

/* Forced cpu mode where it is refused (as nobody, perf_event_paranoid >= 1): the
 * process's own per-CPU events take over and the status says why. In a child:
 * the uid cannot be taken back. */
static void part_cpu_refused(void)
{
	int paranoid = 2;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 2;
		fclose(f);
	}
	if (geteuid() != 0 || paranoid < 1) {
		printf("  SKIP cpu mode refused: needs root to drop to nobody, and paranoid >= 1 "
		       "(euid %d, paranoid %d)\n", (int)geteuid(), paranoid);
		return;
	}
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0)
			_exit(77);
		struct ss_sampler_config c = cfg_of(SS_SAMPLER_CPU, 0, 0, 0);
		ss_sampler_start(&c, status, sizeof status);
		printf("  as nobody: [%s] %s\n", ss_sampler_mode_name(ss_sampler_mode()), status);
		CHECK(ss_sampler_mode() == SS_SAMPLER_PERF && ss_sampler_per_cpu() != 2,
		      "cpu mode as nobody: %s", status);
		CHECK(strstr(status, "per-CPU events of every process refused") &&
		      (strstr(status, "EACCES") || strstr(status, "EPERM")) &&
		      strstr(status, "perf_event_paranoid"), "refusal not explained: %s", status);
		col_reset();
		part_stacks("cpu refused, fallback");
		ss_sampler_stop();
		fflush(stdout);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		printf("  SKIP cpu mode refused: could not become nobody\n");
		return;
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "cpu-refused child failed (status %#x)", st);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ssize_t el = readlink("/proc/self/exe", C.exe, sizeof C.exe - 1);
	CHECK(el > 0, "readlink");
	C.exe[el] = 0;
	R_leaf = fn_range((void *)spin_leaf);
	R_caller = fn_range((void *)spin_caller);
	R_sleep_inner = fn_range((void *)sleep_inner);
	R_sleeper = fn_range((void *)sleeper);
	R_corrupt = fn_range((void *)corrupt_spin);
#if defined(__x86_64__) || defined(__aarch64__)
	R_corrupt_loop = (struct range){ (uint64_t)(uintptr_t)corrupt_loop_begin, (uint64_t)(uintptr_t)corrupt_loop_end };
#else
	R_corrupt_loop = R_corrupt;
#endif

	/* The timer fallback builds a thread's CPU clock id from its tid; it must be
	 * the id glibc gives for the same thread. */
	clockid_t mine;
	CHECK(pthread_getcpuclockid(pthread_self(), &mine) == 0, "pthread_getcpuclockid");
	clockid_t built = (clockid_t)((~(uint32_t)gettid() << 3) | 6u);
	CHECK(mine == built, "thread CPU clock id %d, built %d", (int)mine, (int)built);

	int skipped = 0, ran = 0;

	printf("perf mode\n");
	if (start_mode(SS_SAMPLER_PERF, 0, 0, 0)) {
		ran++;
		part_stacks("perf");
		part_sleep();
		part_inpoll("per-CPU events");
		part_parked("per-CPU events");
		part_shared_parked("per-CPU events");
		part_preempted("per-CPU events");
		part_oncpu("per-CPU events");
		part_migrate();
		part_enable("perf");
		part_dlopen();
		part_mappings();
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 20000, 1, 0);
		part_tiny(1);
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		part_many("perf", many_threads());
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		part_pace("perf, default rings", 0);
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 20000, 1, 0);
		part_pace("perf, tiny rings at 20 kHz", 1);
		ss_sampler_stop();
	} else {
		printf("SKIP perf parts: %s\n", status);
		ss_sampler_stop();
		skipped++;
	}

	/* The process's per-CPU events are the default where the kernel has them; the
	 * per-thread events they replace stay the fallback (another process, no
	 * inherit_thread, descriptors): the same parts again with those forced, and
	 * off-CPU stacks from the kernel's call chains instead of stack copies. */
	if (ran) {
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		printf("  per-CPU events: %s\n", ss_sampler_per_cpu() ? "yes" : "no");
		CHECK(ss_sampler_per_cpu() || strstr(status, "per-CPU events refused"),
		      "neither per-CPU events nor a reason: %s", status);
		/* Every switch-out of every thread puts a stack copy in its CPU's ring:
		 * where the mlock budget does not bind (root), 4 MiB a CPU, at most
		 * 64 MiB for all of them. */
		long ncpu = sysconf(_SC_NPROCESSORS_CONF);
		if (ss_sampler_per_cpu() && ss_sampler_offcpu_stacks() && geteuid() == 0 &&
		    ncpu > 0 && ncpu <= 16) {
			printf("  per-CPU rings: %s\n", strstr(ss_sampler_status(), "ring") ?
			       strrchr(ss_sampler_status(), ',') + 1 : "?");
			CHECK(strstr(ss_sampler_status(), "ring 1024+1 pages per CPU") != NULL,
			      "per-CPU rings with off-CPU stacks as root not 4 MiB: %s",
			      ss_sampler_status());
		}
		/* Root in the initial pid namespace: the switches (and the off-CPU
		 * stacks) come from the sched_switch program, with no context-switches
		 * event; the parts above ran with it. */
		int tp = ss_sampler_switch_program() != 0;
		printf("  switches from the sched_switch program: %s\n", tp ? "yes" : "no");
		if (geteuid() == 0 && ss_sampler_per_cpu() &&
		    !strstr(ss_sampler_status(), "not in the initial pid namespace")) {
			CHECK(tp && strstr(ss_sampler_status(), "switches from a BPF program on sched_switch"),
			      "root: switches not from the sched_switch program: %s", ss_sampler_status());
			CHECK(!ss_sampler_offcpu_stacks() ||
			      strstr(ss_sampler_status(), "no context-switches event"),
			      "root: off-CPU stacks not from the program: %s", ss_sampler_status());
		}
		ss_sampler_stop();

		/* The events' switch records forced, by config and by the environment:
		 * the same switches, stacks and in-poll filtering. */
		printf("perf mode, the events' switch records (forced)\n");
		force_switch_events = 1;
		CHECK(start_mode(SS_SAMPLER_PERF, 0, 0, 0), "perf, switch records: %s", status);
		CHECK(strstr(ss_sampler_status(), "switches: the events' switch records (asked)") &&
		      !ss_sampler_switch_program(), "switch records not forced: %s", ss_sampler_status());
		part_sleep();
		part_inpoll("switch records forced");
		part_oncpu("switch records forced");
		part_migrate();
		ss_sampler_stop();
		force_switch_events = 0;
		setenv("STALLSCOPE_SWITCH_SOURCE", "events", 1);
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		CHECK(strstr(ss_sampler_status(), "switches: the events' switch records (asked)") &&
		      !ss_sampler_switch_program(),
		      "STALLSCOPE_SWITCH_SOURCE=events not honoured: %s", ss_sampler_status());
		part_sleep();
		ss_sampler_stop();
		unsetenv("STALLSCOPE_SWITCH_SOURCE");

		printf("perf mode, events per thread (forced)\n");
		force_per_thread = 1;
		CHECK(start_mode(SS_SAMPLER_PERF, 0, 0, 0), "perf per thread: %s", status);
		CHECK(!ss_sampler_per_cpu() && strstr(status, "events per thread (asked)"),
		      "per-thread events not used: %s", status);
		part_stacks("perf per thread");
		part_sleep();
		part_inpoll("per-thread events");
		part_migrate();
		part_enable("perf per thread");
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 20000, 1, 0);
		part_tiny(1);
		ss_sampler_stop();
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		part_many("perf per thread", many_threads());
		ss_sampler_stop();
		force_per_thread = 0;

		printf("perf mode, off-CPU stacks from the kernel's call chains\n");
		offcpu_copy = SS_OFFCPU_CHAINS;
		start_mode(SS_SAMPLER_PERF, 0, 0, 0);
		part_sleep();
		ss_sampler_stop();
		offcpu_copy = 0;

		part_cpu_wide(0);
		part_cpu_wide(1);
		part_cpu_refused();
		part_auto_wide();
	}

	printf("timer mode\n");
	if (start_mode(SS_SAMPLER_TIMER, 0, 0, 0)) {
		ran++;
		/* small rings filled at the threads' pace: the tick, always */
		CHECK(ss_sampler_max_sleep_ns() == SS_SAMPLER_TICK_NS, "timer: the writer may sleep %llu ns",
		      (unsigned long long)ss_sampler_max_sleep_ns());
		part_stacks("timer");
		part_corrupt();
		part_enable("timer");
		ss_sampler_stop();
		start_mode(SS_SAMPLER_TIMER, 5000, 0, 2);
		part_tiny(0);
		ss_sampler_stop();
		start_mode(SS_SAMPLER_TIMER, 0, 0, 0);
		part_many("timer", many_threads());
		ss_sampler_stop();
	} else {
		printf("SKIP timer parts: %s\n", status);
		ss_sampler_stop();
		skipped++;
	}

	printf("fallback\n");
	if (part_seccomp_fallback() == 77) {
		printf("SKIP seccomp fallback: cannot install a filter\n");
		skipped++;
	} else {
		ran++;
	}

	/* OFF and stop twice are harmless. */
	start_mode(SS_SAMPLER_OFF, 0, 0, 0);
	CHECK(ss_sampler_max_sleep_ns() == UINT64_MAX, "OFF bounds the writer's sleep");
	CHECK(ss_sampler_thread_add((uint32_t)gettid(), 0, 0) == -1, "OFF accepted a thread");
	ss_sampler_stop();
	ss_sampler_stop();

	free(C.s);
	free(C.sw);
	if (!ran)
		return 77;
	printf("ok (%d parts skipped)\n", skipped);
	return 0;
}
