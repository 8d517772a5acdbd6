/*
 * sampler-private.h - what sampler.c, sampler_perf.c, sampler_percpu.c,
 * sampler_swtp.c, sampler_btf.c, sampler_timer.c and proc_maps.c share. The
 * thread table lives here because two very different readers use it: the
 * writer thread (everything) and the timer fallback's signal handler, which
 * finds its entry by the index carried in the timer's sigval and touches only
 * the atomics and the sample ring of that entry.
 */
#ifndef STALLSCOPE_SAMPLER_PRIVATE_H
#define STALLSCOPE_SAMPLER_PRIVATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <linux/perf_event.h>

#include "recorder-private.h"
#include "sampler.h"
#include "unwind.h"

/* PERF: the thread's own events and ring (pid = tid, cpu = -1); PERCPU: covered by
 * the process's per-CPU events (sampler_percpu.c), nothing of its own to open. */
enum ss_st_kind { SS_ST_FREE = 0, SS_ST_PERF, SS_ST_TIMER, SS_ST_PERCPU };

/* One sample as the signal handler stores it. Every entry of a session has the
 * same size (ss_smp.tstride), so the ring is a plain array and the handler never
 * computes a variable length: the header, then either the frames it walked
 * (frame-pointer mode) or a struct ss_ucopy and ss_smp.stack_copy bytes of stack
 * (CFI unwinding, done by the writer). */
struct ss_tsample {
	uint64_t ts;
	uint64_t weight;
	uint32_t nframes;
	uint32_t pad;
};
_Static_assert(sizeof(struct ss_tsample) % 8 == 0, "entries stay 8-aligned");

static inline uint64_t *ss_tsample_frames(struct ss_tsample *s) { return (uint64_t *)(s + 1); }
static inline struct ss_ucopy *ss_tsample_ucopy(struct ss_tsample *s) { return (struct ss_ucopy *)(s + 1); }
static inline uint8_t *ss_tsample_stack(struct ss_tsample *s) { return (uint8_t *)(ss_tsample_ucopy(s) + 1); }

struct ss_sthread {
	/* ---- read by the signal handler ---- */
	/* (generation << 1) | 1 while the timer may deliver into this entry; the
	 * handler compares it with the value its sigval carries. */
	_Atomic uint32_t armed;
	/* Handlers running on this entry now: the writer waits for 0 before it frees
	 * the ring (a signal queued before timer_delete can still arrive). */
	_Atomic uint32_t inflight;
	uint64_t stack_lo, stack_hi;
	unsigned char *tring;             /* tmask + 1 entries of ss_smp.tstride bytes */
	uint32_t tmask;
	uint64_t weight;                  /* timer period, ns */
	_Atomic uint64_t thead;           /* handler-written */
	_Atomic uint64_t ttail;           /* writer-written */
	_Atomic uint64_t tlost;           /* refused by the full ring; the writer swaps 0 in */
	_Atomic uint64_t tlost_first, tlost_last;

	/* ---- writer-only ---- */
	uint32_t kind;                    /* enum ss_st_kind */
	uint32_t tid;
	uint32_t gen;
	uint8_t closing;                  /* removed: drain once more, then release */
	uint8_t cpu_ring;                 /* a CPU's ring of ss_smp.cpus, not a thread */
	uint64_t since, until;            /* PERCPU: followed from add to remove (0 = on) */
	uint8_t comm_pending;
	char comm[16];
	timer_t timer;
	int have_timer;

	int fd_clock, fd_cs;              /* perf: -1 when not open */
	uint64_t id_clock, id_cs;
	/* cpu_ring: the id of the sched_switch program's BPF_OUTPUT event of this
	 * CPU, whose records come to this ring only (the program writes to the
	 * CPU it runs on; sampler_swtp.c); 0: none */
	uint64_t id_out;
	void *ring;                       /* header page + data pages */
	size_t ring_len;
	uint64_t data_size;
	/* Losses: the ring's LOST records arrive only once there is room again (never,
	 * for a thread that ends while its ring is full), so the events' own counters
	 * (PERF_FORMAT_LOST) are read too; both are cumulative counts of the same
	 * losses, and only what exceeds lost_emitted is reported. */
	uint64_t lost_emitted, lost_records, lost_counter;
	uint64_t last_drain;              /* where the next counter-reported loss starts */
	uint64_t last_lost_read;          /* when the counters were last read */
	uint64_t throttled_at;            /* THROTTLE seen, UNTHROTTLE not yet: its time */
	uint64_t throttled_id;
	uint8_t inpoll;                   /* given an in-poll cell (sampler_inpoll.c) */
};

struct ss_sampler_state {
	int started;
	enum ss_sampler_mode mode;
	int enabled;
	uint32_t hz;
	uint64_t period_ns;
	uint32_t perf_pages;
	uint32_t timer_ring;
	int all_threads;

	/* perf */
	int kernel_ok;                    /* exclude_kernel = 0 accepted */
	int offcpu;                       /* context-switch samples are opened */
	int fmt_lost;                     /* PERF_FORMAT_LOST accepted (Linux 6.0+) */
	uint32_t max_stack;
	int paranoid;

	uint32_t offcpu_copy;             /* user stack bytes per switch-out, 0 = kernel chains */

	/* per-CPU events inherited by the process's threads (sampler_percpu.c) */
	int percpu;                       /* open: threads are SS_ST_PERCPU */
	int cpu_wide;                     /* pid -1 events: every process's records */
	uint32_t pc_pid;                  /* this process, to tell its records apart */
	uint32_t pc_cpus_off;             /* CPUs offline at open: never covered */
	int pc_filtered;                  /* cpu_wide samples filtered by pid in the kernel */
	int no_bpf_filter;                /* asked for: the fallback, forced */
	int force_per_thread;
	/* The off-CPU filter (sampler_bpf.c) for the context-switches events: its fd
	 * while events are opened this session, -1 when switch-outs go unfiltered. */
	int inpoll_prog;
	uint32_t inpoll_attached, inpoll_refused; /* PERF_EVENT_IOC_SET_BPF results */
	/* Switches from the sched_switch program (sampler_swtp.c): its fd once
	 * loaded (-1 = none). Loaded only for the process's per-CPU events, and
	 * closed whenever they are not opened with it attached: while it is
	 * loaded they go without switch records, because it writes them
	 * (ss_swtp_on). */
	int swtp_prog;
	int swtp_stacks;                  /* it writes off-CPU stacks: 1 in polls, 2 all */
	int swtp_skips_parks;             /* nothing of a parked worker (PARKED cells) */
	char swtp_refusal[512];           /* META "switches" when it was refused, else "" */
	uint32_t ncpu_rings;
	struct ss_sthread *cpus;          /* ncpu_rings ring owners (cpu_ring = 1) */
	int *pc_fds;                      /* every event opened, to enable and close */
	uint32_t pc_nfds, pc_capfds;
	uint64_t *pc_cs_ids;              /* ids of the context-switch events, sorted */
	uint32_t pc_ncs;
	uint16_t pc_hash[4096];           /* followed tids: table index + 1, 0 = empty */
	int pc_hash_dirty;
	uint64_t pc_last_lost_read, pc_lost_counter, pc_lost_emitted, pc_last_drain;

	/* timer */
	int timer_ready;
	int signo;
	size_t tstride;                   /* bytes per timer ring entry */

	/* stack copies for CFI unwinding (0 = none) */
	uint32_t stack_copy;
	int user_chain;

	/* How fast the perf rings fill (ss_sampler_max_sleep_ns): the fullest one's
	 * share at this drain (ppm of its size), and over the time since the last
	 * drain, halved at most once a drain on the way down (ppm a ms). */
	uint64_t fill_ppm, fill_rate, last_drain_ns;

	char status[1024];
	struct ss_sampler_stats stats;
	/* One past the highest entry of threads[] taken since start (freed entries
	 * below it are SS_ST_FREE and skipped): the writer's loops, at every drain,
	 * stop there instead of reading all 1024 entries (~250 KB) each time. */
	uint32_t nthreads;
	struct ss_sthread threads[SS_SAMPLER_MAX_THREADS];
};

extern SS_INTERNAL struct ss_sampler_state ss_smp;

/* The sched_switch program writes the switches (its fd is kept only then). */
static inline int ss_swtp_on(void)
{
	return ss_smp.swtp_prog >= 0;
}

/* A perf ring held used of its size bytes when a drain began (the writer's
 * pace, ss_sampler_max_sleep_ns). */
static inline void ss_sampler_note_fill(uint64_t used, uint64_t size)
{
	uint64_t ppm = size ? (used >= size ? 1000000u : used * 1000000u / size) : 0;
	if (ppm > ss_smp.fill_ppm)
		ss_smp.fill_ppm = ppm;
}

/* Appends to ss_smp.status ("; " separated). */
SS_INTERNAL void ss_sampler_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
SS_INTERNAL const char *ss_errno_name(int err);
SS_INTERNAL int ss_read_int_file(const char *path, int dflt);

/* sampler_perf.c */
/* Probes perf on the calling thread: 0 when usable (sets kernel_ok, offcpu),
 * else -errno with why written into why. */
SS_INTERNAL int ss_perf_probe(enum ss_offcpu_mode offcpu, char *why, size_t len);
SS_INTERNAL int ss_perf_open(struct ss_sthread *t, char *why, size_t len);
/* Rings are not limited by the unprivileged mlock budget (root or CAP_IPC_LOCK). */
SS_INTERNAL int ss_perf_mlock_unlimited(void);
SS_INTERNAL void ss_perf_close_fds(struct ss_sthread *t);
SS_INTERNAL void ss_perf_unmap(struct ss_sthread *t);
SS_INTERNAL void ss_perf_drain(struct ss_sthread *t, const struct ss_sample_sink *sink);
SS_INTERNAL void ss_perf_enable(struct ss_sthread *t, int on);
SS_INTERNAL int ss_perf_open_on(struct perf_event_attr *a, uint32_t tid, int cpu);
SS_INTERNAL void ss_perf_attr_clock(struct perf_event_attr *a);
SS_INTERNAL void ss_perf_attr_cs(struct perf_event_attr *a);
/* Maps want data pages (halved while the mlock budget refuses) into t->ring. */
SS_INTERNAL int ss_perf_map_ring(struct ss_sthread *t, int fd, uint32_t want, char *why, size_t len);
SS_INTERNAL uint64_t ss_perf_read_lost(int fd);
SS_INTERNAL int ss_perf_is_cs(const struct ss_sthread *t, uint64_t id);
/* Hands one record of t's ring to sink (samples, switches, losses, names, mappings). */
SS_INTERNAL void ss_perf_record(struct ss_sthread *t, const struct perf_event_header *h,
				const struct ss_sample_sink *sink);
/* A switch-out sample's { abi, bp, sp, ip } { size, data, dyn_size } walked: frames. */
SS_INTERNAL uint32_t ss_perf_cs_walk(const unsigned char *q, const unsigned char *end, uint64_t *out);
SS_INTERNAL void ss_perf_emit_lost(const struct ss_sample_sink *sink, uint64_t ts, uint64_t ts_end,
				   uint32_t tid, uint32_t reason, uint64_t count);

/* sampler_percpu.c */
/* Opens the per-CPU events on every thread of this process: 0, or -errno with why
 * (then nothing stays open and threads get events of their own). */
SS_INTERNAL int ss_percpu_open(char *why, size_t len);
/* The same with one set of events per CPU for every process (pid -1), which needs
 * CAP_PERFMON or perf_event_paranoid <= 0; the drain keeps this process's records. */
SS_INTERNAL int ss_percpu_open_wide(char *why, size_t len);
SS_INTERNAL void ss_percpu_close(void);
SS_INTERNAL void ss_percpu_enable(int on);
/* Every CPU's ring, merged in time order, up to the time of the call. */
SS_INTERNAL void ss_percpu_drain(const struct ss_sample_sink *sink);
/* tid is followed at time ts: added before it and not removed before it. */
SS_INTERNAL int ss_percpu_follows(uint32_t tid, uint64_t ts);
SS_INTERNAL int ss_percpu_is_cs(uint64_t id);
SS_INTERNAL void ss_percpu_after_fork(void);
/* fd joins the events enabled, disabled, read for losses and closed with the
 * per-CPU ones. */
SS_INTERNAL int ss_percpu_add_fd(int fd);

/* sampler_bpf.c */
/* PROC_PID_INIT_INO: the initial pid namespace's inode number, fixed by the
 * kernel (include/linux/proc_ns.h); the programs compare tgids of that one. */
#define SS_PID_NS_INIT_INO 0xEFFFFFFCu
struct bpf_insn;
/* One instruction, for the hand-assembled programs. */
SS_INTERNAL struct bpf_insn ss_bpf_insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm);
/* Loads p[0..n) as a program of type (BPF_PROG_TYPE_*): its fd, or -errno with
 * why (the verifier's last line when it refused the program). */
SS_INTERNAL int ss_bpf_load(uint32_t type, const struct bpf_insn *p, int n, char *why, size_t len);
/* A BPF program for the cpu_wide events that keeps the samples of process pid (in
 * this pid namespace) and drops every other before it is built: its fd, or
 * -errno with why. */
SS_INTERNAL int ss_bpf_pid_filter(uint32_t pid, char *why, size_t len);
SS_INTERNAL int ss_bpf_attach(int perf_fd, int prog_fd); /* 0 or -errno */
/* The off-CPU filter: the pid filter, then a switch-out is kept only where the
 * thread's in-poll cell of map_fd's element says SS_INPOLL_IN or _ALL, or its
 * bucket's shared cell is set (cells u32 of each, sampler_inpoll.c). Its fd, or
 * -errno with why. */
SS_INTERNAL int ss_bpf_offcpu_filter(uint32_t pid, int map_fd, uint32_t cells, char *why,
				     size_t len);
/* Attaches ss_smp.inpoll_prog, when there is one, to a context-switches event. */
SS_INTERNAL void ss_bpf_attach_offcpu(int perf_fd);

/* sampler_btf.c */
/* Byte offsets in the running kernel's struct task_struct: pid and tgid, and
 * its state (`__state` or `state`; -1 where absent). */
struct ss_btf_task {
	long pid, tgid, state;
};
/* From the running kernel's BTF: 0, or -errno with why. */
SS_INTERNAL int ss_btf_task(struct ss_btf_task *o, char *why, size_t len);
/* The same from a BTF image of n bytes, whatever they are (fuzzed). */
SS_INTERNAL int ss_btf_scan(const unsigned char *b, size_t n, struct ss_btf_task *o, char *why,
			    size_t len);
/* The raw tracepoint tp's arguments in a BTF image (its btf_trace_<tp>
 * typedef's FUNC_PROTO, less the context), -1 where the image does not say;
 * and the running kernel's sched_switch's (4 from Linux 5.18: prev_state). */
SS_INTERNAL int ss_btf_tp_args(const unsigned char *b, size_t n, const char *tp);
SS_INTERNAL int ss_btf_sched_switch_args(void);

/* sampler_swtp.c */
/* Loads the sched_switch program reading the in-poll cells of cells_fd: its fd,
 * or -errno with why. stacks: 0 none (the context-switches event's, if any), 1
 * at blocked switch-outs inside polls, 2 at every counted switch-out (ss_smp.swtp_stacks
 * says what the loaded program does); parks: a parked worker's switches are
 * written too (else ss_smp.swtp_skips_parks). */
SS_INTERNAL int ss_swtp_load(int cells_fd, int stacks, int parks, char *why, size_t len);
/* With the per-CPU rings open: a BPF_OUTPUT event into each (its id in the
 * ring's id_out), and the program attached to the raw tracepoint. 0, or
 * -errno with why. */
SS_INTERNAL int ss_swtp_attach(char *why, size_t len);
SS_INTERNAL void ss_swtp_close(void);
/* One of the program's samples (its body p[0..n)): switches of followed threads. */
SS_INTERNAL void ss_swtp_record(const unsigned char *p, size_t n, const struct ss_sample_sink *sink);

/* sampler_inpoll.c */
#define SS_INPOLL_CELLS 16384
/* Creates the map and its mapping (once per process) and clears them: 0, or
 * -errno with why. */
SS_INTERNAL int ss_inpoll_open(char *why, size_t len);
SS_INTERNAL int ss_inpoll_map_fd(void);
/* The map's descriptor is no longer needed (the filter is loaded, or refused). */
SS_INTERNAL void ss_inpoll_close_fd(void);
/* tid is followed from now on (its bucket ALL, or shared with another). */
SS_INTERNAL void ss_inpoll_follow(uint32_t tid);
/* The cell a followed tid's poll hooks write (set to in_poll now: SS_INPOLL_IN
 * or _OUT), or NULL where its bucket is shared with another followed thread
 * (then every switch-out is kept). */
SS_INTERNAL _Atomic uint32_t *ss_inpoll_cell(uint32_t tid, int in_poll);
SS_INTERNAL void ss_inpoll_unfollow(uint32_t tid);
SS_INTERNAL void ss_inpoll_after_fork(void);

/* sampler_timer.c */
/* Installs the signal handler once. 0, or -1 with why. */
SS_INTERNAL int ss_timer_init(char *why, size_t len);
SS_INTERNAL void ss_timer_fini(void);
SS_INTERNAL int ss_timer_open(struct ss_sthread *t, uint32_t index, char *why, size_t len);
SS_INTERNAL void ss_timer_close(struct ss_sthread *t);   /* timer_delete + wait for handlers */
SS_INTERNAL void ss_timer_free(struct ss_sthread *t);    /* ring */
SS_INTERNAL void ss_timer_drain(struct ss_sthread *t, const struct ss_sample_sink *sink);
SS_INTERNAL void ss_timer_enable(struct ss_sthread *t, int on);

/* proc_maps.c */
/* Build id of the ELF file at path, cached by (dev, inode, path). Returns its
 * length (0 when none or unreadable). dev/ino 0 = unknown: looked up by stat. */
SS_INTERNAL uint32_t ss_build_id_lookup(const char *path, uint64_t dev, uint64_t ino,
					uint8_t out[20]);
SS_INTERNAL void ss_build_id_cache_clear(void);
SS_INTERNAL void ss_proc_maps_emit(const struct ss_sample_sink *sink);
SS_INTERNAL void ss_proc_maps_watch(const struct ss_sample_sink *sink);

#endif /* STALLSCOPE_SAMPLER_PRIVATE_H */
