/*
 * sampler.h - CPU samples, on/off-CPU switches and memory mappings, delivered to
 * the writer thread. Nothing here runs on the hook path: the writer calls every
 * function below from its own thread (the timer fallback's signal handler runs on
 * the sampled thread, but only ever stores into a per-thread ring the writer
 * drains).
 *
 * Two ways to sample, chosen by ss_sampler_start():
 *   perf   perf_event_open per CPU on every thread of the process with inherit
 *          (sampler_percpu.c: perf's own way, one ring per CPU), or, where that
 *          is refused or for another process, per worker thread (pid = tid,
 *          cpu = -1); either way software
 *          cpu-clock with a fixed period, PERF_SAMPLE_CALLCHAIN (frame pointers
 *          walked by the kernel), context_switch records for on/off-CPU time,
 *          and, where permitted, a context-switch sample at every switch-out
 *          (off-CPU stacks: the user registers and the top of the user stack,
 *          whose frame-pointer chain the drain walks; the kernel's own call
 *          chain walk cost several times more per switch). mmap2 records for
 *          new mappings. Where BPF may be loaded (root), the per-CPU events
 *          carry neither: a program on the sched_switch raw tracepoint writes
 *          the followed threads' switches and off-CPU stacks, nothing of a
 *          parked worker (sampler_swtp.c).
 *   timer  a per-thread timer_create(CLOCK_THREAD_CPUTIME_ID) + signal whose
 *          handler walks frame pointers from the interrupted context, every
 *          read checked against the thread's stack bounds.
 *
 * With stack copies asked for (CFI unwinding, unwind.h), a CPU sample also
 * carries the user registers and a copy of the top of the user stack: from perf
 * (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER) or from the timer's handler
 * (the interrupted context and the stack above its sp), and the writer unwinds
 * them. Off-CPU samples keep frame-pointer chains (walked in their own small
 * copy): CFI unwinding at every context switch would cost more than the stacks
 * are worth.
 */
#ifndef STALLSCOPE_SAMPLER_H
#define STALLSCOPE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

enum ss_sampler_mode {
	SS_SAMPLER_AUTO = 0, /* perf, else timer */
	SS_SAMPLER_PERF,
	SS_SAMPLER_TIMER,
	SS_SAMPLER_OFF,
	/* Asked for only (AUTO never picks it): per-CPU events of the whole machine
	 * filtered to this process (sampler_percpu.c), else what AUTO does; PERF
	 * once started. */
	SS_SAMPLER_CPU,
};

/* AUTO and ON: off-CPU stacks inside polls where the BPF filter is permitted
 * (sampler_bpf.c, sampler_inpoll.c), at every switch-out elsewhere; ALL: at every
 * switch-out always (the filter's fallback, forced). */
enum ss_offcpu_mode { SS_OFFCPU_AUTO = 0, SS_OFFCPU_ON, SS_OFFCPU_OFF, SS_OFFCPU_ALL };

#define SS_MAX_FRAMES 127 /* perf_event_max_stack on these machines */

struct ss_sampler_config {
	enum ss_sampler_mode mode;
	enum ss_offcpu_mode offcpu;
	uint32_t hz;          /* samples per second of CPU time per thread; 0 = 999 */
	int all_threads;      /* sample every attached thread, not only workers */
	/* Ring sizes, 0 = default. Rounded down to a power of two. perf_pages is the
	 * data part of each thread's perf ring (plus one header page): 8 (32 KiB)
	 * holds ~150 ms of 999 Hz samples with 20-frame stacks, and 9 pages a thread
	 * lets ~100 threads share the unprivileged mlock budget. timer_ring is in
	 * samples of ~1 KiB each. Tests shrink both to provoke losses. */
	uint32_t perf_pages;
	uint32_t timer_ring;
	uint32_t stack_copy;  /* bytes of user stack copied per CPU sample, with the
			       * registers (0 = none: frame-pointer chains only) */
	int user_chain;       /* with copies: keep the kernel's user frame-pointer
			       * chain too (auto's fallback when a copy is empty) */
	/* Off-CPU stacks: bytes of user stack the kernel copies at each switch-out,
	 * walked for frame pointers here (0 = SS_OFFCPU_COPY_DEFAULT;
	 * SS_OFFCPU_CHAINS = the kernel's call chains, user and kernel, instead). */
	uint32_t offcpu_copy;
	/* Events of each thread's own instead of the process's per-CPU ones (the
	 * fallback, forced: tests, comparisons). */
	int per_thread;
	/* No BPF filter at all: per-CPU events of every process without the
	 * kernel-side pid filter, switch-outs without the in-poll one (the fallback
	 * where BPF is refused, forced: tests). */
	int no_bpf_filter;
	/* Switches from the events' switch records, not from the sched_switch
	 * program (sampler_swtp.c) where it is permitted (the fallback, forced:
	 * tests, comparisons; also STALLSCOPE_SWITCH_SOURCE=events). */
	int switch_events;
};

#define SS_OFFCPU_COPY_DEFAULT 1024
#define SS_OFFCPU_CHAINS UINT32_MAX

struct ss_ustack;

enum ss_sample_kind { SS_SAMPLE_CPU = 1, SS_SAMPLE_OFFCPU = 2 };

struct ss_sample {
	uint64_t ts;          /* CLOCK_MONOTONIC ns, the hooks' timebase */
	uint32_t tid;
	uint32_t cpu;         /* UINT32_MAX when unknown (timer mode) */
	uint64_t weight;      /* ns of CPU time this sample stands for (the period; in timer
			       * mode times 1 + the timer's overrun); 0 for OFFCPU samples,
			       * whose duration is their switch-out -> switch-in gap */
	uint32_t kind;        /* enum ss_sample_kind */
	uint32_t nframes;     /* <= SS_MAX_FRAMES */
	uint32_t nkernel;     /* frames[0 .. nkernel) are kernel addresses */
	const uint64_t *frames; /* leaf first, context markers removed; valid during the callback */
	const struct ss_ustack *ustack; /* registers + stack copy to unwind the user part
					 * from, NULL when none; valid during the callback */
};

struct ss_switch {
	uint64_t ts;
	uint32_t tid;
	uint32_t cpu;
	uint8_t out;          /* 1 switched out, 0 switched in */
	uint8_t preempted;    /* switched out while runnable (preempted), not blocked */
};

struct ss_mapping {
	uint64_t ts;          /* 0 for the snapshot taken at segment start */
	uint64_t start, end, pgoff;
	uint32_t prot;        /* PROT_* */
	uint8_t build_id_len; /* 0 when unknown */
	uint8_t build_id[20];
	const char *path;     /* NUL terminated; valid during the callback */
};

/* KERNEL: the perf ring was full (PERF_RECORD_LOST and the events' lost counters);
 * THROTTLE: the kernel throttled sampling (count estimated from the throttled time);
 * FALLBACK: the timer fallback's per-thread ring was full. */
enum ss_sampler_loss { SS_SLOSS_KERNEL = 1, SS_SLOSS_THROTTLE = 2, SS_SLOSS_FALLBACK = 3 };

struct ss_sampler_lost {
	uint64_t ts;          /* first lost */
	uint64_t ts_end;      /* last lost (= ts when unknown) */
	uint32_t tid;         /* 0 when not tied to a thread */
	uint32_t reason;      /* enum ss_sampler_loss */
	uint64_t count;       /* samples or records lost */
};

/* Everything the sampler hands the writer, one callback per kind. */
struct ss_sample_sink {
	void *ctx;
	void (*sample)(void *ctx, const struct ss_sample *s);
	void (*switch_rec)(void *ctx, const struct ss_switch *sw);
	void (*mapping)(void *ctx, const struct ss_mapping *m);
	void (*comm)(void *ctx, uint32_t tid, const char *name, uint64_t ts);
	void (*lost)(void *ctx, const struct ss_sampler_lost *l);
};

/* Chooses the mode (trying perf in AUTO) and prepares it. Never fails the session:
 * when nothing works the mode is OFF. status receives one line naming the mode and,
 * for each refusal, what was tried and why it failed ("perf: EACCES
 * (perf_event_paranoid 3)"), for the segment metadata, the log and the metric. */
void ss_sampler_start(const struct ss_sampler_config *cfg, char *status, size_t len);
enum ss_sampler_mode ss_sampler_mode(void); /* PERF, TIMER or OFF after start */
/* The same, readable from any thread (the metrics): an atomic copy published at
 * the end of ss_sampler_start() and reset to OFF by ss_sampler_stop(). */
enum ss_sampler_mode ss_sampler_mode_published(void);
const char *ss_sampler_mode_name(enum ss_sampler_mode m);
/* Other processes' records dropped over the life of the process (every session),
 * readable from any thread (the metrics); published by each drain. */
uint64_t ss_sampler_foreign_total(void);
/* 1 when off-CPU stacks (switch samples with call chains) are being recorded. */
int ss_sampler_offcpu_stacks(void);
/* 1 when, on top of that, switch-outs outside polls are dropped in the kernel. */
int ss_sampler_offcpu_in_polls(void);
/* 1 when the switches come from the sched_switch program (sampler_swtp.c), 2
 * when it also leaves out a parked worker's (its in-poll cell says PARKED), 0
 * when they are the perf events' switch records (or there are none). */
int ss_sampler_switch_program(void);
/* What META SS_META_SWITCHES says of this session's switches (a constant). */
const char *ss_sampler_switches(void);
/* 1 when perf follows the process with per-CPU inherited events, 2 with per-CPU
 * events of every process (filtered here), 0 when each thread has events of its
 * own (or the mode is not perf). */
int ss_sampler_per_cpu(void);
/* The status line of ss_sampler_start() plus anything learnt since (a thread that
 * fell back to the timer, rings shrunk to fit the mlock budget). Valid until the
 * next call into the sampler. */
const char *ss_sampler_status(void);

struct ss_sampler_stats {
	uint32_t threads_perf;      /* threads sampled now, by perf */
	uint32_t threads_timer;     /* ... by the timer fallback */
	uint64_t threads_refused;   /* thread_add calls that returned -1 */
	uint64_t threads_fell_back; /* perf refused for a thread, timer took over */
	uint64_t samples;           /* handed to sink->sample */
	uint64_t switches;          /* handed to sink->switch_rec */
	uint64_t lost;              /* sum of sink->lost counts */
	uint64_t foreign;           /* per CPU, all processes: other processes' samples
				     * and switch records dropped by the drain */
};
void ss_sampler_get_stats(struct ss_sampler_stats *st);

/* Start / stop sampling one thread. stack_lo/stack_hi bound the thread's stack for
 * the timer fallback's frame walk (0, 0 = unknown: the walk then stops at the
 * first frame). Returns 0, or -1 when this thread cannot be sampled (counted).
 * In perf mode a thread whose perf_event_open or ring is refused (descriptor or
 * mlock limits) is sampled by the timer instead. A removed thread's descriptors
 * and timer go at once; what its ring still holds is handed over by the next
 * drain, which then unmaps / frees it. At most SS_SAMPLER_MAX_THREADS at once. */
#define SS_SAMPLER_MAX_THREADS 1024
int ss_sampler_thread_add(uint32_t tid, uint64_t stack_lo, uint64_t stack_hi);
void ss_sampler_thread_remove(uint32_t tid);

/* The cell a followed worker's lane hooks set (ss_inpoll_set: IN at a poll's
 * begin, OUT at its end and at an unpark, PARKED at a park), read by the
 * off-CPU filter and the sched_switch program; in_poll (1 inside a poll) is its
 * state now. Without a cell a thread keeps every switch. NULL when neither
 * reads cells, or the thread's bucket is shared (its switches all kept). The
 * memory stays valid for the life of the process; the writer hands it to the
 * thread's slot (ss_slot.inpoll_cell) and clears that at
 * ss_sampler_thread_remove. */
_Atomic uint32_t *ss_sampler_inpoll_cell(uint32_t tid, int in_poll);

/* Hands everything gathered since the last call to sink, in per-thread time order.
 * Bounded work per call. */
void ss_sampler_drain(const struct ss_sample_sink *sink);

/* How long the writer may sleep before the next drain: until the fastest perf
 * ring (per CPU or per thread) passes a quarter full at the rate the last
 * drains saw (falling by half at most a drain), SS_SAMPLER_TICK_NS for the timer
 * fallback's small rings or before a rate is known, UINT64_MAX when nothing
 * bounds it (no sampling, or rings that stay empty). */
#define SS_SAMPLER_TICK_NS 10000000ull
uint64_t ss_sampler_max_sleep_ns(void);

/* The executable mappings of the process now (/proc/self/maps + build ids). */
void ss_sampler_mappings(const struct ss_sample_sink *sink);

/* New mappings of this process since the last call (dlopen, dlclose) as a fresh
 * snapshot; nothing when following another process. */
void ss_sampler_watch_mappings(const struct ss_sample_sink *sink);

/* Thread names are read again and handed over as COMM at the next drain (a
 * thread was renamed; perf reports renames itself, the timer fallback cannot). */
void ss_sampler_reread_names(void);

/* Disables / re-enables sampling in the kernel (PERF_EVENT_IOC_DISABLE / ENABLE,
 * or disarming the timers), for stallscope_set_enabled(). */
void ss_sampler_set_enabled(int on);

/* Closes every descriptor, unmaps every ring, deletes every timer. What the rings
 * still hold is discarded: drain first. The timer signal's previous disposition
 * is restored after pending instances are flushed (SIG_IGN first). */
void ss_sampler_stop(void);

/* In a forked child: forget the parent's sampler without touching its rings.
 * The kernel does not copy perf rings into a child (VM_DONTCOPY), so their
 * addresses may already hold the child's own mappings; only the inherited
 * descriptors are closed. */
void ss_sampler_after_fork(void);

#endif /* STALLSCOPE_SAMPLER_H */
