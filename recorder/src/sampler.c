/*
 * sampler.c - the sampler's front: picks perf or the timer fallback once per
 * session, keeps the table of sampled threads, and dispatches drain, enable and
 * stop to the mode each thread ended up in. Every entry point runs on the writer
 * thread; only sampler_timer.c's signal handler runs elsewhere, and it reaches
 * the table solely through the index in its timer's sigval.
 */
#include "sampler-private.h"

#include "log.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SS_INTERNAL struct ss_sampler_state ss_smp;
static _Atomic int published_mode = SS_SAMPLER_OFF; /* for other threads */
static _Atomic uint64_t published_foreign;          /* all sessions' stats.foreign */
static uint64_t foreign_said;                        /* this session's part of it */

uint64_t ss_sampler_foreign_total(void)
{
	return atomic_load_explicit(&published_foreign, memory_order_relaxed);
}

static void publish_foreign(void)
{
	if (ss_smp.stats.foreign > foreign_said) {
		atomic_fetch_add_explicit(&published_foreign, ss_smp.stats.foreign - foreign_said,
					  memory_order_relaxed);
		foreign_said = ss_smp.stats.foreign;
	}
}

SS_INTERNAL const char *ss_errno_name(int err)
{
	const char *n = strerrorname_np(err);
	return n ? n : "unknown errno";
}

SS_INTERNAL int ss_read_int_file(const char *path, int dflt)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return dflt;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return dflt;
	buf[n] = 0;
	char *end;
	long v = strtol(buf, &end, 10);
	return end == buf ? dflt : (int)v;
}

SS_INTERNAL void ss_sampler_note(const char *fmt, ...)
{
	size_t used = strlen(ss_smp.status);
	if (used + 3 >= sizeof ss_smp.status)
		return;
	if (used) {
		memcpy(ss_smp.status + used, "; ", 3);
		used += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ss_smp.status + used, sizeof ss_smp.status - used, fmt, ap);
	va_end(ap);
}

const char *ss_sampler_mode_name(enum ss_sampler_mode m)
{
	switch (m) {
	case SS_SAMPLER_AUTO: return "auto";
	case SS_SAMPLER_PERF: return "perf";
	case SS_SAMPLER_TIMER: return "timer";
	case SS_SAMPLER_OFF: return "off";
	case SS_SAMPLER_CPU: return "cpu";
	}
	return "?";
}

enum ss_sampler_mode ss_sampler_mode(void)
{
	return ss_smp.started ? ss_smp.mode : SS_SAMPLER_OFF;
}

enum ss_sampler_mode ss_sampler_mode_published(void)
{
	return (enum ss_sampler_mode)atomic_load_explicit(&published_mode, memory_order_relaxed);
}

int ss_sampler_offcpu_stacks(void)
{
	return ss_smp.started && ss_smp.mode == SS_SAMPLER_PERF && ss_smp.offcpu;
}

int ss_sampler_offcpu_in_polls(void)
{
	if (ss_swtp_on() && ss_smp.swtp_stacks)
		return ss_sampler_offcpu_stacks() && ss_smp.swtp_stacks == 1;
	return ss_sampler_offcpu_stacks() && ss_smp.inpoll_prog >= 0 && ss_smp.inpoll_attached;
}

int ss_sampler_switch_program(void)
{
	return !ss_smp.started || !ss_swtp_on() ? 0 : ss_smp.swtp_skips_parks ? 2 : 1;
}

const char *ss_sampler_switches(void)
{
	if (!ss_smp.started || ss_smp.mode != SS_SAMPLER_PERF)
		return "none: no switch is recorded (the timer fallback, or no sampling)";
	if (!ss_swtp_on())
		return ss_smp.swtp_refusal[0] ? ss_smp.swtp_refusal :
		       "events: the perf events' switch records, every switch of a followed thread";
	if (ss_smp.swtp_skips_parks)
		return SS_SWITCHES_NOT_PARKED ": a BPF program on sched_switch writes followed "
		       "threads' switches as they happen, none of a worker from its park to its unpark";
	return "sched_switch program: a BPF program on sched_switch writes every switch of a "
	       "followed thread as it happens";
}

int ss_sampler_per_cpu(void)
{
	return !ss_smp.started || !ss_smp.percpu ? 0 : ss_smp.cpu_wide ? 2 : 1;
}

const char *ss_sampler_status(void)
{
	return ss_smp.status;
}

void ss_sampler_get_stats(struct ss_sampler_stats *st)
{
	*st = ss_smp.stats;
}

static uint32_t pow2_floor(uint32_t v, uint32_t dflt)
{
	if (!v)
		return dflt;
	uint32_t p = 1;
	while (p <= v / 2)
		p *= 2;
	return p;
}

static void start_timer_mode(const char *perf_why)
{
	char why[200];
	if (ss_timer_init(why, sizeof why) == 0) {
		ss_smp.mode = SS_SAMPLER_TIMER;
		ss_sampler_note("timer: signal %d (SIGRTMIN+%d) on each thread's CPU clock, %u Hz, "
				"%s, no switch records, no off-CPU stacks "
				"(CPU-clock timers expire on scheduler ticks: at most CONFIG_HZ samples "
				"a second, missed periods add to a sample's weight)",
				ss_smp.signo, ss_smp.signo - SIGRTMIN, ss_smp.hz,
				ss_smp.stack_copy ? "registers and a stack copy per sample"
						  : "in-process frame-pointer walk");
	} else {
		ss_smp.mode = SS_SAMPLER_OFF;
		ss_sampler_note("off: timer fallback refused: %s", why);
	}
	if (perf_why)
		ss_sampler_note("%s", perf_why);
}

/* The off-CPU filter, loaded before any context-switches event is opened so
 * each can take it as it is opened. Refused (no CAP_BPF, an older kernel):
 * every switch-out keeps its stack, as asked for by SS_OFFCPU_ALL. */
static void start_offcpu_filter(const struct ss_sampler_config *cfg)
{
	ss_smp.inpoll_prog = -1;
	if (!ss_smp.offcpu)
		return;
	if (cfg->offcpu == SS_OFFCPU_ALL) {
		ss_sampler_note("off-CPU stacks at every switch-out (asked)");
		return;
	}
	if (ss_target_pid()) {
		ss_sampler_note("off-CPU stacks at every switch-out (another process: its hooks "
				"cannot say which threads are in a poll)");
		return;
	}
	if (ss_smp.no_bpf_filter) {
		ss_sampler_note("off-CPU stacks at every switch-out: no BPF filter (asked)");
		return;
	}
	char why[300];
	int r = ss_inpoll_open(why, sizeof why);
	if (r == 0)
		r = ss_bpf_offcpu_filter((uint32_t)getpid(), ss_inpoll_map_fd(), SS_INPOLL_CELLS,
					 why, sizeof why);
	ss_inpoll_close_fd(); /* the program holds the map now */
	if (r < 0) {
		ss_sampler_note("off-CPU stacks at every switch-out: in-poll filter refused: %s", why);
		/* A cost the user may want to know of (every parked switch-out builds
		 * a stack), not only a line of META. */
		ss_log("sampler: off-CPU stacks at every switch-out, not only inside polls: "
		       "in-poll filter refused: %s (needs CAP_BPF)", why);
		return;
	}
	ss_smp.inpoll_prog = r;
}

/* The sched_switch program refused (what: "refused" at load, "not attached"):
 * the events' switch records instead, and both the status and META "switches"
 * say why. */
static void swtp_refused(const char *what, const char *why)
{
	ss_sampler_note("switches: the events' switch records: sched_switch program %s: %s", what,
			why);
	snprintf(ss_smp.swtp_refusal, sizeof ss_smp.swtp_refusal,
		 "events: the perf events' switch records, every switch of a followed thread "
		 "(sched_switch program %s: %s)", what, why);
}

/* The sched_switch program (sampler_swtp.c) for the process's per-CPU events,
 * loaded before they are opened so they can go without switch records. Not for
 * another process or per-thread events (their own switch records), nor with no
 * BPF or the events' records asked for (STALLSCOPE_SWITCH_SOURCE=events); a
 * refusal leaves the events' records in charge, and the status says why. */
static void start_swtp(const struct ss_sampler_config *cfg)
{
	ss_smp.swtp_prog = -1;
	const char *env = getenv("STALLSCOPE_SWITCH_SOURCE");
	if (env && *env && strcmp(env, "events") && strcmp(env, "auto")) {
		ss_log("warning: STALLSCOPE_SWITCH_SOURCE=%s not understood (auto or events): auto", env);
		env = NULL;
	}
	if (cfg->switch_events || (env && !strcmp(env, "events"))) {
		ss_sampler_note("switches: the events' switch records (asked)");
		return;
	}
	/* SAMPLER=cpu keeps the CPU-wide switch records it is built around (other
	 * processes' records reach its rings and are counted and dropped there). */
	if (cfg->per_thread || ss_target_pid() || cfg->mode == SS_SAMPLER_CPU)
		return; /* the events' switch records, said by start_percpu */
	if (ss_smp.no_bpf_filter) {
		ss_sampler_note("switches: the events' switch records (no BPF asked)");
		return;
	}
	/* Every switch-out's stack asked for: a parked worker's too, so its
	 * switches are written as well. */
	int all = ss_smp.offcpu && cfg->offcpu == SS_OFFCPU_ALL;
	char why[300];
	int r = ss_inpoll_open(why, sizeof why);
	if (r == 0)
		r = ss_swtp_load(ss_inpoll_map_fd(), !ss_smp.offcpu || !ss_smp.offcpu_copy ? 0 : all ? 2 : 1,
				 all, why, sizeof why);
	ss_inpoll_close_fd(); /* the program holds the map now */
	if (r < 0) {
		swtp_refused("refused", why);
		return;
	}
	ss_smp.swtp_prog = r;
	if (all && ss_smp.swtp_stacks)
		ss_sampler_note("off-CPU stacks at every switch-out (asked)");
}

/* What became of the filter once the events are open (per-thread events take it
 * as threads are added: a later refusal is said by ss_sampler_thread_add). */
static void note_offcpu_filter(void)
{
	if (ss_swtp_on() && ss_smp.swtp_stacks) {
		ss_sampler_note(ss_smp.swtp_stacks == 1 ?
				"off-CPU stacks inside polls only (from the sched_switch program: user "
				"registers and 1 KiB of stack at switch-outs inside a poll; no "
				"context-switches event)" :
				"off-CPU stacks from the sched_switch program at every switch-out (no "
				"context-switches event)");
		return;
	}
	if (ss_smp.inpoll_prog < 0)
		return;
	if (ss_smp.inpoll_refused)
		ss_sampler_note("off-CPU in-poll filter on %u of %u context-switches events",
				ss_smp.inpoll_attached, ss_smp.inpoll_refused + ss_smp.inpoll_attached);
	else
		ss_sampler_note("off-CPU stacks inside polls only (BPF filter on the switch-out "
				"samples; parked and between-poll switch-outs have no stack)");
}

/* The sched_switch program attached to the per-CPU events just opened without
 * switch records: 1, or 0 after closing both (the status says why) so that the
 * caller opens them again with the records (and the context-switches event's
 * filter, where the program was to take the stacks). */
static int attach_swtp(const struct ss_sampler_config *cfg)
{
	char why[300];
	if (ss_swtp_attach(why, sizeof why) == 0) {
		ss_sampler_note("switches from a BPF program on sched_switch (raw tracepoint), no "
				"switch records%s",
				ss_smp.swtp_skips_parks ? ", none of a parked worker" : "");
		return 1;
	}
	swtp_refused("not attached", why);
	ss_percpu_close();
	int stacks = ss_smp.swtp_stacks;
	ss_swtp_close();
	if (stacks)
		start_offcpu_filter(cfg);
	return 0;
}

/* The process's per-CPU events where they can be had; per-thread events are
 * what is left otherwise, and the status says why. */
static void start_percpu(const struct ss_sampler_config *cfg)
{
	if (ss_smp.offcpu)
		ss_sampler_note(ss_smp.offcpu_copy ? "off-CPU stacks: frame pointers in %u-byte "
				"stack copies" : "off-CPU stacks: kernel call chains", ss_smp.offcpu_copy);
	if (cfg->per_thread) {
		ss_sampler_note("events per thread (asked)");
		return;
	}
	if (ss_target_pid()) {
		ss_sampler_note("events per thread (another process)");
		return;
	}
	/* A CPU's ring takes every thread that runs there, but only one at a time: it
	 * needs the room of one thread's ring for samples, more for switches. */
	uint32_t thread_pages = ss_smp.perf_pages;
	/* Every thread of the process (of the machine, cpu_wide) writes there,
	 * followed or not: even a ring asked to be tiny (tests provoking losses)
	 * keeps room for some of each. */
	uint32_t floor = cfg->perf_pages ? 16 : ss_perf_mlock_unlimited() ? 128 : 64;
	if (ss_smp.perf_pages < floor)
		ss_smp.perf_pages = floor;
	/* With off-CPU stacks every switch-out of every thread puts ~1.1 KiB in the
	 * ring of its CPU: the 16-worker steady run at 20k tasks/s writes 15-30 MB/s
	 * per CPU, so a 1 MiB ring is 35-70 ms, less than a writer held up on a busy
	 * machine takes (157k records lost in one 3 s run at load 7). Where the mlock
	 * budget does not bind, 4 MiB per CPU, at most 64 MiB for all of them. */
	if (!cfg->perf_pages && ss_smp.offcpu && ss_perf_mlock_unlimited()) {
		long ncpu = sysconf(_SC_NPROCESSORS_CONF);
		uint64_t cap = ncpu > 0 ? (64ull << 20) / 4096 / (uint64_t)ncpu : 1024;
		uint32_t want = 1024;
		while (want > ss_smp.perf_pages && want > cap)
			want /= 2;
		if (want > ss_smp.perf_pages)
			ss_smp.perf_pages = want;
	}
	char why[300];
	/* Where the sched_switch program writes the switches, AUTO takes the
	 * cpu-clock events once per CPU for every process (pid -1, the samples of
	 * others dropped in the kernel by the pid filter): they live in the CPU's
	 * context, so no event of ours is stopped and started when one of our
	 * threads switches to or from another process or the idle task, which with
	 * the process's own inherited events cost +6.9 us a switch on this VM
	 * (bench_sampling (f2)), most of full recording's cost on the steady run.
	 * The price is the machine's: the 999 Hz timer interrupts every CPU whoever
	 * runs there, idle CPUs included (README). Without the program it would
	 * also put every process's switch records in our rings: not then. */
	if (cfg->mode == SS_SAMPLER_AUTO && ss_swtp_on()) {
		int w = ss_percpu_open_wide(why, sizeof why);
		if (w == 0 && attach_swtp(cfg)) {
			ss_sampler_note("cpu-clock per CPU for every process, this one's kept (%s), ring "
					"%u+1 pages per CPU", why, ss_smp.perf_pages);
			return;
		}
		if (w != 0) /* (a refused attach closed them, and said why) */
			ss_sampler_note("cpu-clock per CPU for every process refused: %s", why);
	}
	/* Per CPU for every process, asked for (sampler_percpu.c), with the CPU-wide
	 * switch records of every process. Not AUTO's choice: its costs fall on
	 * every process of the machine (README, bench_sampling (g)). */
	if (cfg->mode == SS_SAMPLER_CPU) {
		int w = ss_percpu_open_wide(why, sizeof why);
		if (w == 0) {
			ss_sampler_note("events per CPU for every process, this one's kept (%s), ring "
					"%u+1 pages per CPU", why, ss_smp.perf_pages);
			return;
		}
		ss_sampler_note("per-CPU events of every process refused: %s", why);
	}
	int r = ss_percpu_open(why, sizeof why);
	if (r == 0 && ss_swtp_on() && !attach_swtp(cfg))
		r = ss_percpu_open(why, sizeof why); /* again, with switch records */
	if (r != 0 && ss_swtp_on())
		ss_swtp_close(); /* per-thread events: their own switch records */
	if (r == 0) {
		ss_sampler_note("events per CPU, inherited (%s), ring %u+1 pages per CPU", why,
				ss_smp.perf_pages);
	} else {
		ss_smp.perf_pages = thread_pages;
		ss_sampler_note("events per thread: per-CPU events refused: %s", why);
	}
}

void ss_sampler_start(const struct ss_sampler_config *cfg, char *status, size_t len)
{
	if (ss_smp.started)
		ss_sampler_stop();
	if (cfg->mode == SS_SAMPLER_OFF) {
		/* Nothing to sample: the thread table (most of this state, 246 KB)
		 * stays as it is, never touched this session (thread_add refuses,
		 * stop skips it), so a recording without sampling does not pay for
		 * first-touching its pages; the next sampling session clears it. */
		memset(&ss_smp, 0, offsetof(struct ss_sampler_state, threads));
		ss_smp.inpoll_prog = -1;
		ss_smp.swtp_prog = -1;
		ss_smp.started = 1;
		ss_smp.enabled = 1;
		ss_smp.mode = SS_SAMPLER_OFF;
		ss_sampler_note("off: CPU sampling not asked for");
		if (status && len)
			snprintf(status, len, "%s", ss_smp.status);
		atomic_store_explicit(&published_mode, (int)ss_smp.mode, memory_order_relaxed);
		return;
	}
	memset(&ss_smp, 0, sizeof ss_smp);
	foreign_said = 0;
	for (uint32_t i = 0; i < SS_SAMPLER_MAX_THREADS; i++) {
		ss_smp.threads[i].fd_clock = -1;
		ss_smp.threads[i].fd_cs = -1;
	}
	ss_smp.started = 1;
	ss_smp.enabled = 1;
	ss_smp.inpoll_prog = -1;
	ss_smp.swtp_prog = -1;
	ss_smp.hz = cfg->hz ? cfg->hz : 999;
	if (ss_smp.hz > 100000)
		ss_smp.hz = 100000; /* perf_event_max_sample_rate's usual value */
	ss_smp.period_ns = 1000000000ull / ss_smp.hz;
	ss_smp.stack_copy = cfg->stack_copy & ~7u;
	ss_smp.user_chain = cfg->user_chain;
	/* With copies a sample is the copy plus ~1 KiB. The writer drains every
	 * 10 ms; the ring holds ~100 ms of samples at hz where the mlock budget is
	 * unlimited, ~25 ms where ~35 threads share the unprivileged one. */
	uint32_t pages = 8;
	if (ss_smp.stack_copy) {
		uint32_t per_s = ss_perf_mlock_unlimited() ? 10 : 40;
		uint64_t want = (uint64_t)(ss_smp.hz / per_s + 1) * (ss_smp.stack_copy + 1024);
		while ((uint64_t)pages * 4096 < want && pages < 512)
			pages *= 2;
	}
	ss_smp.perf_pages = pow2_floor(cfg->perf_pages, pages);
	ss_smp.timer_ring = pow2_floor(cfg->timer_ring, ss_smp.stack_copy ? 32 : 64);
	ss_smp.tstride = sizeof(struct ss_tsample) +
			 (ss_smp.stack_copy ? sizeof(struct ss_ucopy) + ss_smp.stack_copy
					    : sizeof(uint64_t) * SS_MAX_FRAMES);
	ss_smp.all_threads = cfg->all_threads;
	ss_smp.paranoid = ss_read_int_file("/proc/sys/kernel/perf_event_paranoid", 2);
	ss_smp.offcpu_copy = cfg->offcpu_copy == SS_OFFCPU_CHAINS ? 0
			     : cfg->offcpu_copy ? (cfg->offcpu_copy + 7) & ~7u : SS_OFFCPU_COPY_DEFAULT;
#if !defined(__x86_64__)
	ss_smp.offcpu_copy = 0; /* the registers' layout is known for x86-64 only */
#endif
	ss_smp.force_per_thread = cfg->per_thread;
	ss_smp.no_bpf_filter = cfg->no_bpf_filter;

	switch (cfg->mode) {
	case SS_SAMPLER_OFF: /* returned above */
		break;
	case SS_SAMPLER_TIMER:
		start_timer_mode("perf not tried: timer mode asked for");
		break;
	case SS_SAMPLER_AUTO:
	case SS_SAMPLER_CPU:
	case SS_SAMPLER_PERF: {
		char why[300];
		if (ss_perf_probe(cfg->offcpu, why, sizeof why) == 0) {
			ss_smp.mode = SS_SAMPLER_PERF;
			/* why holds the details of what perf granted */
			ss_sampler_note("perf: %s", why);
			start_swtp(cfg);
			if (!ss_smp.swtp_stacks) /* else the program takes the stacks */
				start_offcpu_filter(cfg);
			start_percpu(cfg);
			note_offcpu_filter();
		} else if (cfg->mode == SS_SAMPLER_AUTO || cfg->mode == SS_SAMPLER_CPU) {
			char w2[340];
			snprintf(w2, sizeof w2, "perf refused: %s", why);
			start_timer_mode(w2);
		} else {
			ss_smp.mode = SS_SAMPLER_OFF;
			ss_sampler_note("off: perf asked for and refused: %s", why);
		}
		break;
	}
	}
	if (status && len)
		snprintf(status, len, "%s", ss_smp.status);
	atomic_store_explicit(&published_mode, (int)ss_smp.mode, memory_order_relaxed);
}

static struct ss_sthread *find(uint32_t tid)
{
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind != SS_ST_FREE && !t->closing && t->tid == tid)
			return t;
	}
	return NULL;
}

static void read_comm(struct ss_sthread *t)
{
	char path[64];
	int fd = ss_target_proc_path(path, sizeof path, "task/%u/comm", t->tid) == 0
		? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return;
	ssize_t n = read(fd, t->comm, sizeof t->comm - 1);
	close(fd);
	if (n <= 0)
		return;
	t->comm[n] = 0;
	char *nl = strchr(t->comm, '\n');
	if (nl)
		*nl = 0;
	t->comm_pending = 1;
}

/* With the off-CPU filter: t's switch-outs are kept from now on (until its
 * worker hooks say otherwise). Before per-thread events are opened, so none of
 * theirs is lost; per-CPU ones drop only what the drain would (it follows t
 * from now on). */
static void inpoll_follow(struct ss_sthread *t)
{
	/* The sched_switch program knows followed threads by their cells too. */
	if (ss_smp.inpoll_prog < 0 && !ss_swtp_on())
		return;
	ss_inpoll_follow(t->tid);
	t->inpoll = 1;
}

static void inpoll_unfollow(struct ss_sthread *t)
{
	if (!t->inpoll)
		return;
	ss_inpoll_unfollow(t->tid);
	t->inpoll = 0;
}

int ss_sampler_thread_add(uint32_t tid, uint64_t stack_lo, uint64_t stack_hi)
{
	if (!ss_smp.started || ss_smp.mode == SS_SAMPLER_OFF || !tid)
		return -1;
	if (find(tid))
		return 0;
	struct ss_sthread *t = NULL;
	uint32_t index = 0;
	for (uint32_t i = 0; i < SS_SAMPLER_MAX_THREADS; i++) {
		if (ss_smp.threads[i].kind == SS_ST_FREE) {
			t = &ss_smp.threads[i];
			index = i;
			break;
		}
	}
	if (!t) {
		ss_smp.stats.threads_refused++;
		return -1;
	}
	if (index >= ss_smp.nthreads)
		ss_smp.nthreads = index + 1;
	uint32_t gen = t->gen + 1;
	/* armed and inflight stay as they are: a stray signal for the previous
	 * occupant may be counting itself in inflight right now. */
	memset((char *)t + offsetof(struct ss_sthread, stack_lo), 0,
	       sizeof *t - offsetof(struct ss_sthread, stack_lo));
	t->gen = gen;
	t->fd_clock = t->fd_cs = -1;
	t->tid = tid;
	if (stack_lo < stack_hi) {
		t->stack_lo = stack_lo;
		t->stack_hi = stack_hi;
	}

	if (ss_smp.percpu) {
		/* Its events came with it from the thread that created it. */
		t->kind = SS_ST_PERCPU;
		inpoll_follow(t);
		t->since = ss_now();
		ss_smp.pc_hash_dirty = 1;
		ss_smp.stats.threads_perf++;
		read_comm(t);
		return 0;
	}
	char why[200];
	if (ss_smp.mode == SS_SAMPLER_PERF) {
		inpoll_follow(t);
		int r = ss_perf_open(t, why, sizeof why);
		if (r == 0) {
			t->kind = SS_ST_PERF;
			ss_smp.stats.threads_perf++;
			read_comm(t);
			return 0;
		}
		inpoll_unfollow(t);
		if (r == -ESRCH) { /* the thread is gone already */
			ss_smp.stats.threads_refused++;
			return -1;
		}
		if (ss_target_pid()) {
			/* Another process: its CPU clock cannot be sampled from here. */
			if (ss_smp.stats.threads_refused++ == 0)
				ss_sampler_note("thread %u of process %d not sampled: perf %s (no fallback "
						"outside the process)", tid, (int)ss_target_pid(), why);
			return -1;
		}
		/* Descriptor or mlock limits: this thread still gets timer samples. */
		char tw[200];
		if (ss_timer_init(tw, sizeof tw) != 0) {
			if (ss_smp.stats.threads_refused++ == 0)
				ss_sampler_note("thread %u not sampled: perf %s, timer %s", tid, why, tw);
			return -1;
		}
		if (ss_smp.stats.threads_fell_back++ == 0)
			ss_sampler_note("thread %u (and later ones like it) on the timer: perf %s",
					tid, why);
	}
	if (ss_timer_open(t, index, why, sizeof why) != 0) {
		if (ss_smp.stats.threads_refused++ == 0)
			ss_sampler_note("thread %u not sampled: %s", tid, why);
		return -1;
	}
	t->kind = SS_ST_TIMER;
	ss_smp.stats.threads_timer++;
	read_comm(t);
	return 0;
}

_Atomic uint32_t *ss_sampler_inpoll_cell(uint32_t tid, int in_poll)
{
	if (!ss_smp.started || (ss_smp.inpoll_prog < 0 && !ss_swtp_on()))
		return NULL;
	struct ss_sthread *t = find(tid);
	if (!t || !t->inpoll)
		return NULL;
	return ss_inpoll_cell(tid, in_poll);
}


void ss_sampler_thread_remove(uint32_t tid)
{
	if (!ss_smp.started || ss_smp.mode == SS_SAMPLER_OFF)
		return;
	struct ss_sthread *t = find(tid);
	if (!t)
		return;
	inpoll_unfollow(t);
	/* Stop sampling now; the ring keeps what the thread produced until the next
	 * drain hands it over. */
	if (t->kind == SS_ST_PERCPU) {
		/* What it did until now still comes out of the CPUs' rings at the next
		 * drain; nothing later. */
		t->until = ss_now();
		ss_smp.stats.threads_perf--;
	} else if (t->kind == SS_ST_PERF) {
		ss_perf_close_fds(t);
		ss_smp.stats.threads_perf--;
	} else {
		ss_timer_close(t);
		ss_smp.stats.threads_timer--;
	}
	t->closing = 1;
}

static void release(struct ss_sthread *t)
{
	if (t->kind == SS_ST_PERF) {
		ss_perf_close_fds(t);
		ss_perf_unmap(t);
	} else if (t->kind == SS_ST_TIMER) {
		ss_timer_close(t);
		ss_timer_free(t);
	} else if (t->kind == SS_ST_PERCPU) {
		ss_smp.pc_hash_dirty = 1;
	}
	t->kind = SS_ST_FREE;
	t->closing = 0;
}

/* The fill rate of the perf rings, from what the drain just found in them. */
static void fill_rate_update(void)
{
	uint64_t now = ss_now(), dt = now - ss_smp.last_drain_ns;
	if (ss_smp.last_drain_ns && dt) {
		uint64_t rate = ss_smp.fill_ppm * 1000000u / dt, half = ss_smp.fill_rate / 2;
		ss_smp.fill_rate = rate > half ? rate : half;
	}
	ss_smp.fill_ppm = 0;
	ss_smp.last_drain_ns = now;
}

uint64_t ss_sampler_max_sleep_ns(void)
{
	if (!ss_smp.started || ss_smp.mode == SS_SAMPLER_OFF)
		return UINT64_MAX;
	/* The timer fallback's rings hold 32-64 samples of each thread (32-64 ms at
	 * 999 Hz) and fill at the threads' pace, which no drain sees coming: the
	 * old tick. */
	if (ss_smp.mode == SS_SAMPLER_TIMER || ss_smp.stats.threads_timer)
		return SS_SAMPLER_TICK_NS;
	/* A quarter of the fastest ring at its rate, as writer_pace.c does for the
	 * event rings (a rate that doubles still finds it half empty); before a
	 * rate is known, the tick. */
	if (!ss_smp.last_drain_ns)
		return SS_SAMPLER_TICK_NS;
	if (!ss_smp.fill_rate)
		return UINT64_MAX;
	return 250000u * 1000000ull / ss_smp.fill_rate;
}

void ss_sampler_drain(const struct ss_sample_sink *sink)
{
	if (!ss_smp.started)
		return;
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind == SS_ST_FREE)
			continue;
		if (t->comm_pending && sink->comm) {
			sink->comm(sink->ctx, t->tid, t->comm, ss_now());
			t->comm_pending = 0;
		}
		if (t->kind == SS_ST_PERCPU)
			continue; /* below, all of them at once */
		if (t->kind == SS_ST_PERF)
			ss_perf_drain(t, sink);
		else
			ss_timer_drain(t, sink);
		if (t->closing)
			release(t);
	}
	if (ss_smp.percpu) {
		ss_percpu_drain(sink);
		publish_foreign();
		for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
			struct ss_sthread *t = &ss_smp.threads[i];
			if (t->kind == SS_ST_PERCPU && t->closing)
				release(t);
		}
	}
	if (ss_smp.mode == SS_SAMPLER_PERF)
		fill_rate_update();
}

void ss_sampler_mappings(const struct ss_sample_sink *sink)
{
	if (sink->mapping)
		ss_proc_maps_emit(sink);
}

void ss_sampler_watch_mappings(const struct ss_sample_sink *sink)
{
	if (sink->mapping)
		ss_proc_maps_watch(sink);
}

void ss_sampler_reread_names(void)
{
	if (!ss_smp.started || ss_smp.mode == SS_SAMPLER_OFF)
		return;
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind != SS_ST_FREE && !t->closing) {
			char old[16];
			memcpy(old, t->comm, sizeof old);
			read_comm(t);
			if (!memcmp(old, t->comm, sizeof old))
				t->comm_pending = 0; /* unchanged: nothing to say */
		}
	}
}

void ss_sampler_set_enabled(int on)
{
	if (!ss_smp.started || ss_smp.enabled == !!on)
		return;
	ss_smp.enabled = !!on;
	if (ss_smp.percpu)
		ss_percpu_enable(on);
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind == SS_ST_FREE || t->kind == SS_ST_PERCPU || t->closing)
			continue;
		if (t->kind == SS_ST_PERF)
			ss_perf_enable(t, on);
		else
			ss_timer_enable(t, on);
	}
}

void ss_sampler_after_fork(void)
{
	ss_inpoll_after_fork(); /* across sessions: the map outlives them */
	if (!ss_smp.started)
		return;
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind == SS_ST_PERF) {
			if (t->fd_cs >= 0)
				close(t->fd_cs);
			if (t->fd_clock >= 0)
				close(t->fd_clock);
		}
	}
	ss_percpu_after_fork();
	ss_swtp_close(); /* the parent's attachment stays: the child drops its references */
	if (ss_smp.inpoll_prog >= 0)
		close(ss_smp.inpoll_prog);
	free(ss_smp.pc_fds);
	free(ss_smp.pc_cs_ids);
	free(ss_smp.cpus);
	/* POSIX timers are not inherited either: nothing else to release. */
	memset(&ss_smp, 0, sizeof ss_smp);
	atomic_store_explicit(&published_mode, SS_SAMPLER_OFF, memory_order_relaxed);
}

void ss_sampler_stop(void)
{
	if (!ss_smp.started)
		return;
	/* Off from the start: nthreads is 0 (see ss_sampler_start). */
	for (uint32_t i = 0; i < ss_smp.nthreads; i++) {
		struct ss_sthread *t = &ss_smp.threads[i];
		if (t->kind != SS_ST_FREE)
			release(t);
	}
	if (ss_smp.cpu_wide && ss_smp.stats.foreign)
		ss_log("sampler: %llu samples and switch records of other processes dropped",
		       (unsigned long long)ss_smp.stats.foreign);
	ss_percpu_close();
	ss_swtp_close();
	if (ss_smp.inpoll_prog >= 0)
		close(ss_smp.inpoll_prog); /* the events held it; they are gone */
	ss_smp.inpoll_prog = -1;
	ss_timer_fini();
	ss_build_id_cache_clear();
	ss_smp.stats.threads_perf = ss_smp.stats.threads_timer = 0;
	ss_smp.started = 0;
	ss_smp.mode = SS_SAMPLER_OFF;
	atomic_store_explicit(&published_mode, SS_SAMPLER_OFF, memory_order_relaxed);
}
