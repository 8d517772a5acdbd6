/*
 * recorder/src/ - libstallscope.so: the hooks, the per-thread rings, the writer
 * and its rotating segment files, the CPU sampler, the stall watchdog and its
 * captures, task dumps, and the preload shim's lanes (shim_lanes.c, behind
 * shim-abi.h). Its API is recorder/include/stallscope/stallscope.h and it
 * exports nothing else (tests/recorder/test_exports.sh).
 * May depend on schema/ (the segment format and the one implementation of
 * writing it), libc and zstd. May depend on it: recorder/preload/ (shim-abi.h
 * and the public API only), recorder/attach/ and recorder/cli/ (its internals,
 * linked statically into the `stallscope` CLI), the tests; nothing in viewer/.
 *
 * recorder-private.h - what the recorder's files share and nobody else sees.
 *
 * The moving parts:
 *   hooks.c         the hot path: timestamp + append to the calling thread's ring
 *   clock.c         the hooks' clock (the TSC where usable) and stamps to ns (clock.h)
 *   thread_slots.c  the pool of per-thread rings and how threads attach/retire
 *   intern.c        strings and locations interned to small ids
 *   log.c           logging and the last error (log.h)
 *   thread_self.c   the calling thread's worker identity and stack bounds (thread_self.h)
 *   thread_named.c  the recorder's threads, started with their names set
 *   writer.c        the background thread that drains rings into blocks
 *   segment_file.c  segment files: create, append blocks, seal, rotate, evict, recover
 *   config_env.c    STALLSCOPE_* environment parsing
 *   metrics.c       counters and their Prometheus text
 *   archive.c       STALLSCOPE_ARCHIVE_COMMAND: ships sealed segments off the host
 *   session.c       start/stop/toggle: glues the above together
 *   sampler*.c      CPU samples and switches (sampler.h), stall captures (stall.h)
 *   unwind*.c       how user stacks are taken: frame pointers or CFI (unwind.h);
 *                   unwind_libdw.c is the recorder's only use of libdw
 */
#ifndef STALLSCOPE_RECORDER_PRIVATE_H
#define STALLSCOPE_RECORDER_PRIVATE_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "log.h"
#include "segment_format.h"
#include "stallscope/stallscope.h"
#include "thread_self.h"

#define SS_LIKELY(x) __builtin_expect(!!(x), 1)
#define SS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SS_INTERNAL __attribute__((visibility("hidden")))
#define SS_CACHELINE 64

static inline uint64_t ss_now(void)
{
	struct timespec ts;
	/* vDSO: no system call while the clocksource allows it (tsc here). */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time the calling thread has used, ns: the recorder accounts for its own
 * cost with it (ss_counters.cpu_*). A system call: never on the hook path. */
static inline uint64_t ss_thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 while hooks stamp with the TSC (clock.c decides per session, before any hook
 * of the session runs). */
extern SS_INTERNAL int ss_clock_tsc_on;

/* What ring entries are stamped with: the raw TSC where it is usable (half the
 * cost of the vDSO's clock_gettime, which reads it and scales it), else
 * CLOCK_MONOTONIC ns. The writer turns stamps into ns (clock.h). */
static inline uint64_t ss_stamp(void)
{
#if defined(__x86_64__)
	if (SS_LIKELY(ss_clock_tsc_on))
		return __builtin_ia32_rdtsc();
#endif
	return ss_now();
}

/* ---- ring entries ----------------------------------------------------------- */

/* Event kinds in a ring. They map 1:1 to segment record types where one exists. */
enum ss_ev_kind {
	SS_EV_POLL_BEGIN = 1,
	SS_EV_POLL_END,
	SS_EV_PARK,
	SS_EV_UNPARK,
	SS_EV_SPAWN,
	SS_EV_TERMINATE,
	SS_EV_WAKE,
	SS_EV_QUEUE,
	SS_EV_MARK,
	SS_EV_SPAN_BEGIN,
	SS_EV_SPAN_END,
	SS_EV_WORKER_BEGIN,
	SS_EV_WORKER_END,
	SS_EV_LOSS, /* ts = first lost, a = count, c = last lost ts */
};

/* One ring entry: half a cache line, so a producer touches one line per two events.
 * ts (and c of a LOSS) is a stamp (ss_stamp()), which the writer converts. */
struct ss_ev {
	uint64_t ts;
	uint64_t a;
	uint64_t c;
	uint32_t b;
	uint32_t kind;
};
_Static_assert(sizeof(struct ss_ev) == 32, "ring entry size");

/* ---- per-thread slots (thread_slots.c) ------------------------------------- */

enum ss_slot_state {
	SS_SLOT_FREE = 0,   /* in the pool */
	SS_SLOT_OWNED,      /* a live thread appends to it */
	SS_SLOT_RETIRED,    /* its thread ended; the writer drains it, then frees it */
};

/* A single-producer (the owning thread) single-consumer (the writer) ring. */
struct ss_slot {
	/* Producer's line: only the owning thread writes these. */
	_Alignas(SS_CACHELINE) _Atomic uint64_t head;
	uint64_t cached_tail;      /* last tail seen: re-read only when the ring looks full */
	/* Drops not yet reported by a LOSS entry, and their time range. Written by the
	 * owner only (relaxed load + store, no RMW); atomic because the writer takes
	 * what is left when the thread has exited or recording has stopped. */
	_Atomic uint64_t drop_pending;
	_Atomic uint64_t drop_first_ts;
	_Atomic uint64_t drop_last_ts;
	_Atomic uint64_t dropped;  /* all drops of this slot's life, read by metrics */
	struct ss_ev *ring;
	uint64_t mask;

	/* Consumer's line. */
	_Alignas(SS_CACHELINE) _Atomic uint64_t tail;

	/* Ownership, set at attach, read by the writer after it sees state. */
	_Alignas(SS_CACHELINE) _Atomic uint32_t state;
	uint32_t session;
	uint32_t thread_id;        /* synthetic, unique within a session */
	int32_t tid;
	_Atomic uint64_t retired_ts; /* a stamp, like drop_first_ts and drop_last_ts */
	uint64_t stack_lo, stack_hi; /* the thread's stack, when known (worker_begin) */

	/* Writer-private from here on. */
	uint32_t w_thread_id;      /* thread_id the writer has set up state for */
	uint32_t w_runtime;        /* interned runtime name when a worker, else 0 */
	uint32_t w_worker_index;
	uint32_t w_open_loc;
	uint64_t w_open_task;      /* task polled now, for stitching across segments */
	uint64_t w_open_since;     /* 0 when no poll is open */
	uint64_t w_parked_since;   /* 0 when not parked */
	uint64_t w_defined_seg;    /* segment sequence + 1 where THREAD_DEF was written */
	uint64_t w_events;         /* events drained from this slot in this session */
	uint64_t w_populated;      /* ring entries [0, this) faulted in by the writer */
	uint64_t w_last_head;      /* head at the writer's last look, for its pace */
	uint32_t w_sampled;        /* the sampler follows this thread */
	uint32_t w_cell_asked;     /* ... and was asked for its in-poll cell as a worker */
	/* Set by the writer while the sampler follows the thread with the off-CPU
	 * filter (ss_sampler_inpoll_cell), read by the owner's poll hooks: one
	 * relaxed load, and one store into the cell when set. Cleared with the
	 * writer-private fields when the slot is released. */
	_Atomic(_Atomic uint32_t *) inpoll_cell;
};

struct ss_pool {
	struct ss_slot *slots;
	uint32_t nslots;
	/* Slots [span, nslots) have never been claimed since the pool was made:
	 * they are FREE, and loops over the slots (the writer's every cycle, the
	 * watchdog's every look) stop at span. A claim raises it before it
	 * publishes the slot OWNED; threads claim the lowest free slot, so span is
	 * the most threads attached at once, not the pool's size. */
	_Atomic uint32_t span;
	uint32_t ring_entries;
	void *ring_mem;
	size_t ring_mem_size;
};

SS_INTERNAL int ss_pool_init(uint32_t nslots, uint32_t ring_entries);
SS_INTERNAL struct ss_pool *ss_pool_get(void);
/* How many leading slots a loop over the pool must visit (see ss_pool.span). */
static inline uint32_t ss_pool_span(const struct ss_pool *p)
{
	uint32_t n = atomic_load_explicit(&p->span, memory_order_acquire);
	return n < p->nslots ? n : p->nslots;
}
SS_INTERNAL struct ss_slot *ss_attach(uint32_t session);
SS_INTERNAL void ss_slot_release(struct ss_slot *s);
SS_INTERNAL struct ss_slot *ss_attach_foreign(uint32_t session, int32_t tid, uint32_t runtime,
					      uint32_t index, uint64_t ts);
SS_INTERNAL void ss_retire_foreign(struct ss_slot *s, uint64_t ts);
SS_INTERNAL void ss_pool_reset(void);
SS_INTERNAL uint64_t ss_pool_no_slot_drops(void);
SS_INTERNAL void ss_pool_no_slot_drop(uint64_t ts);
SS_INTERNAL int ss_pool_take_no_slot_loss(uint64_t *count, uint64_t *first, uint64_t *last);

/* ---- the hot path's view of the session (hooks.c) --------------------------- */

/* Nonzero while recording: the current session number. Hooks test it first. */
extern SS_INTERNAL _Atomic uint32_t ss_state;
extern SS_INTERNAL __thread struct ss_slot *ss_tls_slot __attribute__((tls_model("initial-exec")));
extern SS_INTERNAL __thread uint32_t ss_tls_session __attribute__((tls_model("initial-exec")));

/* What an in-poll cell holds (sampler_inpoll.c), and what the kernel does with
 * a switch there (sampler_bpf.c's off-CPU filter on the context-switches event,
 * or sampler_swtp.c's sched_switch program): NONE no thread the sampler follows
 * (no record: the drain would drop it), OUT a followed worker between polls
 * (switches written, no stack), IN inside a poll (switches, and a stack at its
 * switch-outs: every one for the filter, the blocked ones for the program), ALL
 * a followed thread the hooks do not describe (as IN), PARKED
 * a worker from its park to its unpark (nothing written by the sched_switch
 * program; the off-CPU filter treats it as OUT). */
enum { SS_INPOLL_NONE = 0, SS_INPOLL_OUT = 1, SS_INPOLL_IN = 2, SS_INPOLL_ALL = 3, SS_INPOLL_PARKED = 4 };

/* Hook path: what the calling thread is now (SS_INPOLL_OUT, _IN or _PARKED),
 * for the sampler's filters. */
static inline void ss_inpoll_set(struct ss_slot *s, uint32_t state)
{
	_Atomic uint32_t *c = atomic_load_explicit(&s->inpoll_cell, memory_order_relaxed);
	if (c)
		atomic_store_explicit(c, state, memory_order_relaxed);
}

SS_INTERNAL void ss_push(struct ss_slot *s, uint32_t kind, uint64_t ts, uint64_t a,
			 uint32_t b, uint64_t c);

/* ---- session helpers (session.c) ------------------------------------------------ */

/* Control call: make the calling thread a worker lane with an interned runtime
 * name (what stallscope_worker_begin does, without claiming the thread for the
 * application: the preload shim uses it). */
SS_INTERNAL void ss_worker_begin_id(uint32_t runtime_id, uint32_t index);

/* ---- the preload shim's per-thread state (shim_lanes.c) ------------------------ */

/* What the preload shim (recorder/preload/) knows about a thread. Only the owning
 * thread touches it, so plain fields suffice. */
struct ss_shim_tls {
	uint8_t app;               /* the program's own hooks drive this thread's lane */
	uint8_t loop;              /* 0, or the wait family that made it an event loop */
	uint8_t parked;            /* inside a wrapped wait that was recorded as a park */
	uint8_t creating_internal; /* stallscope_start() is creating the recorder's threads */
	uint32_t iter_session;     /* session of the open loop-iteration poll, 0 = none */
	uint64_t wait_frame;       /* frame of the recorded wait in progress, 0 = none */
};
extern SS_INTERNAL __thread struct ss_shim_tls ss_shim_tls __attribute__((tls_model("initial-exec")));

/* The program called a lane hook itself (poll, park, worker_begin): close what
 * the shim had open on this thread and leave it to the program. Cold. */
SS_INTERNAL void ss_shim_take_over(void);
/* Writer: 1 once after the shim saw a thread renamed. */
SS_INTERNAL int ss_shim_take_names_changed(void);
/* The recorder's own threads (writer, watchdog) call this first: they wait in
 * wrapped calls too, and must never become lanes. */
static inline void ss_shim_internal_thread(void)
{
	ss_shim_tls.app = 1;
}
static inline void ss_shim_app_owns_thread(void)
{
	if (SS_UNLIKELY(!ss_shim_tls.app))
		ss_shim_take_over();
}

/* ---- interning (intern.c) ------------------------------------------------------ */

/* The writer reads definitions by index; entries never move once published. */
struct ss_intern_entry {
	uint8_t kind;      /* 1 string, 2 location */
	uint32_t id;
	uint32_t line;     /* location */
	uint32_t file_id;  /* location: string id of the file */
	uint32_t func_id;  /* location: string id of the function */
	const char *str;   /* string */
	uint32_t len;
};

SS_INTERNAL uint32_t ss_intern_string(const char *s);
/* Number of published entries (acquire): entries [0, n) are complete. */
SS_INTERNAL uint32_t ss_intern_count(void);
SS_INTERNAL const struct ss_intern_entry *ss_intern_entry(uint32_t index);

/* ---- configuration (config_env.c) ---------------------------------------------- */

/* Parses the environment into cfg. Returns 1 when STALLSCOPE_ENABLED is true, 0 when
 * recording is not asked for, -1 on a bad value (message in err). String fields of
 * cfg point into the environment. */
SS_INTERNAL int ss_config_from_env(struct stallscope_config *cfg, char *err, size_t errlen);

/* ---- metrics (metrics.c) --------------------------------------------------------- */

struct ss_counters {
	_Atomic uint64_t events_written;
	_Atomic uint64_t events_lost_on_disk;
	_Atomic uint64_t bytes_written;
	_Atomic uint64_t segments_sealed;
	_Atomic uint64_t segments_evicted;
	_Atomic uint64_t disk_usage;
	_Atomic uint64_t errors;
	_Atomic uint32_t writer_healthy;
	_Atomic uint32_t configured;
	_Atomic uint32_t active;
	_Atomic uint64_t events_taken;     /* events the writer took from rings */
	_Atomic uint64_t dropped_retired;  /* drops of slots already released */
	_Atomic uint64_t last_cycle_ns;    /* writer heartbeat */
	/* A sequence lock over moving counts from the rings to the totals above
	 * (a ring's tail to events_taken, a released slot's drops to
	 * dropped_retired): odd while a move is under way. Without it a reader
	 * could see the ring already drained but the total not yet added, and
	 * stallscope_get_stats() would go backwards. Only the writer thread (or
	 * stop, after it) moves counts. */
	_Atomic uint64_t stats_seq;
	/* STALLSCOPE_ARCHIVE_COMMAND (archive.c) */
	_Atomic uint32_t archive_enabled;
	_Atomic uint64_t archive_shipped, archive_failed, archive_timeouts, archive_pending;
	_Atomic uint64_t archive_last_success_s;     /* CLOCK_REALTIME seconds, 0: never */
	_Atomic uint64_t segments_evicted_unshipped; /* deleted for the budget before shipping */
	/* What the recorder itself costs (stallscope_recorder_cpu_seconds): CPU ns of
	 * the last (or current) session's start and stop on the calling thread and
	 * of its writer and watchdog parts (added as each thread ends), and
	 * (process totals) the wake-ups of its threads, by the part they woke
	 * for, and what they did: writer cycles, watchdog looks, capture steps. */
	_Atomic uint64_t cpu_start_ns, cpu_stop_ns, cpu_writer_ns, cpu_watchdog_ns;
	_Atomic uint64_t writer_wakeups, watchdog_wakeups;
	_Atomic uint64_t writer_cycles, watchdog_looks, capture_steps;
	/* Stall captures the watchdog took (process total): what its looks found. */
	_Atomic uint64_t stall_captures;
	/* 1 while the watchdog's looks run on a thread of their own (kept after
	 * stop: the mode the last session ended in). */
	_Atomic uint32_t watchdog_own_thread;
};
extern SS_INTERNAL struct ss_counters ss_counters;

static inline void ss_stats_move_begin(void)
{
	uint64_t s = atomic_load_explicit(&ss_counters.stats_seq, memory_order_relaxed);
	atomic_store_explicit(&ss_counters.stats_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static inline void ss_stats_move_end(void)
{
	uint64_t s = atomic_load_explicit(&ss_counters.stats_seq, memory_order_relaxed);
	atomic_store_explicit(&ss_counters.stats_seq, s + 1, memory_order_release);
}

SS_INTERNAL void ss_metrics_write_file(const char *path);

/* ---- the recorded process (target.c) ------------------------------------------- */

/* 0 (the default) records this process; a pid makes the session follow that
 * process from outside (stallscope record -p). Set before a session starts. */
SS_INTERNAL void ss_target_set(int32_t pid);
SS_INTERNAL int32_t ss_target_pid(void);
/* The pid written into segment headers: the target's, or getpid(). */
SS_INTERNAL uint64_t ss_target_header_pid(void);
/* "/proc/self/" or "/proc/PID/" followed by fmt. 0, or -1 when it does not fit. */
SS_INTERNAL int ss_target_proc_path(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- segment files (segment_file.c) -------------------------------------------- */

struct ss_segments;

struct ss_segments_config {
	const char *dir;
	const char *prefix;
	uint64_t max_file_size;
	uint32_t rotation_count;
	uint64_t session_id;
	int archiving;          /* eviction deletes shipped segments first (archive.c) */
};

SS_INTERNAL struct ss_segments *ss_segments_open(const struct ss_segments_config *cfg,
						 char *err, size_t errlen);
/* Starts segment N+1 at start_ts. Returns 0 or -1 (the writer retries later). */
SS_INTERNAL int ss_segments_begin(struct ss_segments *sg, uint64_t start_ts);
SS_INTERNAL int ss_segments_have_active(const struct ss_segments *sg);
/* Appends one framed block. Returns 0, or -1 when it could not be written whole
 * (the file is cut back to its last good block). */
SS_INTERNAL int ss_segments_append(struct ss_segments *sg, const struct ss_block_header *bh,
				   const void *payload);
/* Writes the footer, renames .active to .bin, evicts old segments over budget. */
SS_INTERNAL int ss_segments_seal(struct ss_segments *sg, const struct ss_footer *f);
SS_INTERNAL uint64_t ss_segments_active_bytes(const struct ss_segments *sg);
SS_INTERNAL uint64_t ss_segments_active_seq(const struct ss_segments *sg);
/* 1 when the active file has vanished (its directory was removed). */
SS_INTERNAL int ss_segments_lost(struct ss_segments *sg);
/* Forget the active file without sealing (it is gone or broken beyond repair). */
SS_INTERNAL void ss_segments_abandon(struct ss_segments *sg);
SS_INTERNAL void ss_segments_close(struct ss_segments *sg);

/* ---- writer (writer.c) ------------------------------------------------------------ */

struct ss_writer_config {
	struct ss_segments_config seg;
	uint64_t rotation_period_ns;
	uint64_t flush_interval_ns;
	int compress;
	const char *metrics_file;
	uint32_t session;
	const struct stallscope_config *user; /* for META records */
	int sample_all_threads;   /* sample every attached thread, not only workers */
};

SS_INTERNAL int ss_writer_start(const struct ss_writer_config *cfg, char *err, size_t errlen);

/* ---- shipping sealed segments (archive.c) ---------------------------------------- */

/* Starts the archiver thread for the segments PREFIX.N.bin in dir. Returns 0, or
 * -1 (logged; recording goes on without shipping). */
SS_INTERNAL int ss_archive_start(const char *dir, const char *prefix, const char *command, uint32_t timeout_s,
				 const char *host);
SS_INTERNAL int ss_archive_enabled(void);
/* A segment was sealed: look now. Called by the writer thread. */
SS_INTERNAL void ss_archive_kick(void);
/* A last short pass over what is pending, then joins the thread. */
SS_INTERNAL void ss_archive_stop(void);
/* Whether the sealed segment at path has been shipped; forget drops its marker
 * (the segment is being deleted). */
SS_INTERNAL int ss_archive_is_shipped(const char *path);
SS_INTERNAL void ss_archive_forget(const char *path);
/* Drains everything, seals the last segment, joins the thread, and writes the
 * metrics file's last version (if any) with stop's CPU since stop_cpu0 (the
 * calling thread's CPU time when stop began, ss_thread_cpu_ns). */
SS_INTERNAL int ss_writer_stop(uint64_t stop_cpu0);
/* Asks the writer to run a cycle soon (thread exit, buffers filling). */
SS_INTERNAL void ss_writer_kick(void);
/* Watchdog only: a ring is filling while the writer may be in a long sleep. */
SS_INTERNAL void ss_writer_nudge(void);
/* stallscope_set_enabled(): the writer disables or enables the sampler's events in
 * the kernel on its next cycle. */
SS_INTERNAL void ss_writer_set_sampling(int on);
/* The sampler's mode and reasons, as started by the writer ("off" when none). */
SS_INTERNAL const char *ss_writer_sampler_status(void);

/* pthread_create for the recorder's threads, named when it returns; borrow:
 * by taking the name for the moment (thread_named.c). */
#include <pthread.h>
SS_INTERNAL int ss_thread_create_named(pthread_t *th, void *(*fn)(void *), void *arg,
				       const char *name, int borrow);

#endif /* STALLSCOPE_RECORDER_PRIVATE_H */
