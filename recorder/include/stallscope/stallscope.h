/*
 * stallscope.h - the public API of libstallscope, the stallscope recorder.
 *
 * A runtime (an async executor, a thread pool) calls the hook functions below from
 * its worker threads. The library timestamps each hook with CLOCK_MONOTONIC, appends
 * it to a lock-free buffer owned by the calling thread, and a background writer
 * thread turns those buffers into rotating, crash-safe segment files
 * ($OUTPUT_DIR/$PREFIX.N.bin) under a fixed disk budget.
 *
 * Guarantees that hold for every function marked "hook":
 *   - callable from any thread at any time, including before stallscope_start() and
 *     after stallscope_stop(); when not recording a hook costs a load and a branch;
 *   - never takes a lock, never allocates, never makes a system call, never loops
 *     without bound. The first hook a thread ever makes attaches the thread to a
 *     buffer (one gettid() call); call stallscope_worker_begin() or
 *     stallscope_thread_attach() first if even that must be avoided later;
 *   - when the thread's buffer is full the event is dropped, counted, and the count
 *     and time range of the loss are written into the trace.
 *
 * Every other function is a control call: it may lock, allocate and make system
 * calls, and is documented individually.
 */
#ifndef STALLSCOPE_H
#define STALLSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STALLSCOPE_API __attribute__((visibility("default")))

/* Configuration of one recording session. Fill it with stallscope_config_init(),
 * then change what you need. Strings are copied by stallscope_start(); the caller
 * keeps ownership of them. A size, count or interval left at 0 means "the default"
 * given in parentheses; flags and the stall threshold take 0 literally. */
struct stallscope_config {
	uint32_t struct_size;          /* set by stallscope_config_init(); ABI guard */
	uint32_t rotation_count;       /* segments kept: budget = max_file_size x count (10) */
	const char *output_dir;        /* where segments go (".") */
	const char *file_prefix;       /* segment file prefix ("stallscope") */
	uint64_t max_file_size;        /* bytes per segment before rotating (104857600) */
	uint32_t rotation_period_s;    /* also rotate after this many seconds (60);
					* UINT32_MAX: rotate by size only */
	uint32_t flush_interval_ms;    /* longest time an event waits in memory (100) */
	uint32_t buffer_events;        /* per-thread ring capacity, rounded up to 2^n (65536) */
	uint32_t max_threads;          /* threads that can hold a buffer at once (256) */
	int32_t compress;              /* zstd-compress blocks when it pays: 1 yes, 0 no (1) */
	uint32_t sample_hz;            /* CPU sampling frequency (999) */
	int32_t cpu_sampling;          /* 1 sample worker CPU stacks, 0 do not (1) */
	uint32_t stall_threshold_ms;   /* poll length that triggers a stall capture (10; 0 off) */
	int32_t task_dump_enabled;     /* 1 record idle-task backtraces (0) */
	uint32_t task_dump_idle_threshold_ms; /* mean idle time before a dump (10) */
	const char *metrics_file;      /* Prometheus textfile, rewritten every 10 s (NULL) */
	int32_t sampler;               /* STALLSCOPE_SAMPLER_AUTO (_PERF, else the timer),
					* _PERF (events of this process's threads), _CPU
					* (per-CPU events of every process, this one's
					* records kept; else as AUTO), _TIMER or _OFF (AUTO) */
	int32_t offcpu_stacks;         /* stacks at switch-outs where permitted:
					* STALLSCOPE_OFFCPU_AUTO or _ON (inside polls where
					* a BPF filter may be loaded, else every one), _ALL
					* (every one) or _OFF (AUTO) */
	int32_t sample_all_threads;    /* 1 sample every thread that made a hook, not only
					* workers (0) */
	int32_t unwind;                /* how user stacks are taken: STALLSCOPE_UNWIND_AUTO
					* (frame-pointer chains where whole, else CFI), _FP
					* or _DWARF (CFI always) (AUTO) */
	uint32_t stack_copy_bytes;     /* user stack copied per sample and stall capture
					* for CFI unwinding, 1024..65528 (8192) */
	int32_t hook_clock;            /* what hooks stamp events with: STALLSCOPE_CLOCK_AUTO
					* (the TSC where usable, else the vDSO clock), _TSC
					* or _VDSO (clock_gettime); segments always hold
					* CLOCK_MONOTONIC ns (AUTO) */
	const char *archive_command;   /* run for each sealed segment, as PostgreSQL's
					* archive_command: %p its path, %f its file name, %h
					* the host name, %% a '%'; exit 0 = shipped (NULL: off) */
	uint32_t archive_timeout_s;    /* the command is killed after this long (300) */
	uint32_t pad2;
	uint64_t reserved[3];          /* zero; room for later options without an ABI break */
};

enum {
	STALLSCOPE_SAMPLER_AUTO = 0, STALLSCOPE_SAMPLER_PERF = 1,
	STALLSCOPE_SAMPLER_TIMER = 2, STALLSCOPE_SAMPLER_OFF = 3, STALLSCOPE_SAMPLER_CPU = 4,
};
enum { STALLSCOPE_OFFCPU_AUTO = 0, STALLSCOPE_OFFCPU_ON = 1, STALLSCOPE_OFFCPU_OFF = 2,
       STALLSCOPE_OFFCPU_ALL = 3 };
enum { STALLSCOPE_UNWIND_AUTO = 0, STALLSCOPE_UNWIND_FP = 1, STALLSCOPE_UNWIND_DWARF = 2 };
enum { STALLSCOPE_CLOCK_AUTO = 0, STALLSCOPE_CLOCK_TSC = 1, STALLSCOPE_CLOCK_VDSO = 2 };

/* Counters for tests and dashboards. They are totals over the life of the process
 * (all sessions), as Prometheus counters must be; compare two readings for one
 * session. */
struct stallscope_stats {
	uint64_t events;              /* events accepted into thread buffers */
	uint64_t events_dropped;      /* events refused: buffer full or no buffer free */
	uint64_t events_written;      /* events that reached a segment file */
	uint64_t events_lost_on_disk; /* events accepted but lost to a failed write */
	uint64_t bytes_written;       /* bytes written to segment files */
	uint64_t segments_sealed;
	uint64_t segments_evicted;
	uint64_t disk_usage_bytes;    /* bytes of this prefix's segments now on disk */
	uint64_t errors;              /* setup and I/O errors */
	uint32_t writer_healthy;      /* 1 when the last write succeeded and the writer runs */
	uint32_t recording;           /* 1 while a session is active and enabled */
};

/* ---- session control -------------------------------------------------------- */

/* Fills cfg with the defaults above. Thread-safe (touches only cfg). */
STALLSCOPE_API void stallscope_config_init(struct stallscope_config *cfg);

/* Starts recording with cfg. Returns 0, or -1 with a message in
 * stallscope_last_error() (unwritable directory, bad option, already started).
 * On failure nothing is recorded and every hook stays a no-op. Serialised with
 * stop by an internal mutex; call it from one thread. */
STALLSCOPE_API int stallscope_start(const struct stallscope_config *cfg);

/* Reads the STALLSCOPE_* environment variables (see README) and starts recording.
 * Returns 0 and does nothing when STALLSCOPE_ENABLED is unset or false. A bad value
 * is reported on stderr and in stallscope_last_error() by variable name with the
 * reason, recording stays off, and -1 is returned; the host program keeps running. */
STALLSCOPE_API int stallscope_start_from_env(void);

/* Stops recording. Returns when every thread's buffered events are on disk and the
 * last segment is sealed. Returns 0, or -1 when the last seal failed (see
 * stallscope_last_error()). Hooks racing with stop may lose their event. */
STALLSCOPE_API int stallscope_stop(void);

/* Runtime toggle, no restart: 0 makes every hook a no-op, 1 resumes. The session
 * and its segments stay open while disabled. Thread-safe. */
STALLSCOPE_API void stallscope_set_enabled(int enabled);

/* 1 while a session is started and enabled. Thread-safe, a single load. */
STALLSCOPE_API int stallscope_is_recording(void);

/* The last error message of a control call, or "" when there was none. The string
 * is owned by the library and stays valid until the next control call fails. */
STALLSCOPE_API const char *stallscope_last_error(void);

/* Fills st. Thread-safe; values are read without stopping the recorder. */
STALLSCOPE_API void stallscope_get_stats(struct stallscope_stats *st);

/* Writes the metrics in Prometheus text format into buf (at most len bytes, NUL
 * terminated) and returns the length the full text needs, like snprintf.
 * Thread-safe. */
STALLSCOPE_API size_t stallscope_metrics_text(char *buf, size_t len);

/* ---- threads ---------------------------------------------------------------- */

/* Makes the calling thread a worker lane named (runtime, index). runtime is
 * copied (interned). Control call: attaches a buffer if the thread has none.
 * Threads that exit without stallscope_worker_end() are cleaned up anyway. */
STALLSCOPE_API void stallscope_worker_begin(const char *runtime, uint32_t index);

/* The calling thread stops being a worker lane. Control call. */
STALLSCOPE_API void stallscope_worker_end(void);

/* Attaches a buffer to the calling thread now, so that its first hook makes no
 * system call. Optional. Control call. */
STALLSCOPE_API void stallscope_thread_attach(void);

/* ---- names and locations (control calls; cached ids make them free) --------- */

/* Interns a source location and returns its id (never 0). The strings are copied.
 * Thread-safe (a mutex). Ids stay valid for the life of the process, across
 * sessions. Use STALLSCOPE_LOCATION() to pay this once per call site. */
STALLSCOPE_API uint32_t stallscope_location(const char *file, uint32_t line,
					    const char *function);

/* Interns a name for marks and spans. Same rules as stallscope_location(). */
STALLSCOPE_API uint32_t stallscope_name(const char *name);

#if defined(__GNUC__)
/* The location id of the call site, interned on first use and cached in a static. */
#define STALLSCOPE_LOCATION()                                                       \
	__extension__({                                                              \
		static uint32_t stallscope_loc_;                                     \
		uint32_t stallscope_id_ = __atomic_load_n(&stallscope_loc_, __ATOMIC_RELAXED); \
		if (__builtin_expect(stallscope_id_ == 0, 0)) {                      \
			stallscope_id_ = stallscope_location(__FILE__, __LINE__, __func__); \
			__atomic_store_n(&stallscope_loc_, stallscope_id_, __ATOMIC_RELAXED); \
		}                                                                    \
		stallscope_id_;                                                      \
	})
/* A name id cached in a static, as STALLSCOPE_LOCATION() does for locations. */
#define STALLSCOPE_NAME(str)                                                         \
	__extension__({                                                              \
		static uint32_t stallscope_nm_;                                      \
		uint32_t stallscope_id_ = __atomic_load_n(&stallscope_nm_, __ATOMIC_RELAXED); \
		if (__builtin_expect(stallscope_id_ == 0, 0)) {                      \
			stallscope_id_ = stallscope_name(str);                       \
			__atomic_store_n(&stallscope_nm_, stallscope_id_, __ATOMIC_RELAXED); \
		}                                                                    \
		stallscope_id_;                                                      \
	})
#else
#define STALLSCOPE_LOCATION() stallscope_location(__FILE__, __LINE__, __func__)
#define STALLSCOPE_NAME(str) stallscope_name(str)
#endif

/* ---- hooks ------------------------------------------------------------------ */

/* A task was created. The spawning task, if any, is the one being polled on this
 * thread. location: from STALLSCOPE_LOCATION() or stallscope_location(); 0 = unknown. */
STALLSCOPE_API void stallscope_task_spawn(uint64_t task, uint32_t location);

/* A task finished or was dropped. */
STALLSCOPE_API void stallscope_task_terminate(uint64_t task);

/* Something woke task. Callable from any thread; the waking thread and the task it
 * is polling (if any) are recorded as the waker. */
STALLSCOPE_API void stallscope_task_wake(uint64_t task);

/* The calling worker starts polling (running) task. Polls do not nest. */
STALLSCOPE_API void stallscope_poll_begin(uint64_t task, uint32_t location);

/* The poll started by the last stallscope_poll_begin() on this thread ended. */
STALLSCOPE_API void stallscope_poll_end(void);

/* Yield point: the task being polled on this thread is about to return "not
 * ready" (pending). Call it inside the poll, just before returning. When task
 * dumps are on (task_dump_enabled, STALLSCOPE_TASK_DUMP_ENABLED) it remembers the
 * calling stack (frame pointers, at most 24 frames, reads bounded by the stack
 * that stallscope_worker_begin() learnt) for the task; if the task then stays idle
 * (not polled again) longer than a threshold drawn from an exponential
 * distribution with mean task_dump_idle_threshold_ms, a TASK_DUMP record shows
 * where it waits. Hook guarantees hold: no lock, allocation or system call; with
 * task dumps off it costs a load and a branch. */
STALLSCOPE_API void stallscope_task_pending(void);

/* The calling worker goes to sleep waiting for work. */
STALLSCOPE_API void stallscope_park(void);

/* The calling worker woke up. */
STALLSCOPE_API void stallscope_unpark(void);

/* Queue depths seen by the calling worker: its local queue and the global queue. */
STALLSCOPE_API void stallscope_queue_depth(uint32_t local, uint32_t global);

/* A named instant with a value (name from stallscope_name()/STALLSCOPE_NAME()). */
STALLSCOPE_API void stallscope_mark(uint32_t name, int64_t value);

/* A named span on the calling thread; spans nest and must be ended on the thread
 * that began them. */
STALLSCOPE_API void stallscope_span_begin(uint32_t name);
STALLSCOPE_API void stallscope_span_end(uint32_t name);

#ifdef __cplusplus
}
#endif

#endif /* STALLSCOPE_H */
