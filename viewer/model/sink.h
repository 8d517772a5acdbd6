/*
 * sink.h - where the model's rows go: a struct of functions a store implements
 * (viewer/store/sqlite/ today; a PostgreSQL store later). The model never sees
 * SQL: it hands over finished rows, asks the store what it holds already (ids in
 * use, a recording seen before, the database-wide deduplication tables), and
 * hands over and takes back the state an incremental import continues from.
 *
 * Row fields are the columns of schema/stallscope.sql. An id or a time of 0
 * stands for NULL where the column allows NULL and the comment says so; texts
 * are (pointer, length) pairs, NULL for SQL NULL, valid only during the call.
 *
 * Every function returns 0, or non-zero when the store failed (it keeps its own
 * message, sink->error()); the model then stops.
 */
#ifndef STALLSCOPE_MODEL_SINK_H
#define STALLSCOPE_MODEL_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ss_text {
	const char *p; /* NULL: SQL NULL */
	size_t n;
};

/* Tables whose ids the model assigns (so rows can refer to each other before
 * they are written). */
enum ss_idkind { ID_RECORDING, ID_THREAD, ID_WORKER, ID_LOCATION, ID_TASK, ID_POLL,
		 ID_MAPPING, ID_FRAME, ID_CALLSITE, ID_STALL, ID_SEGMENT, ID_COUNT };

struct ss_recording_row {
	int64_t id;
	uint64_t session_id, pid;
	struct ss_text exe, host, boot_id;
	int64_t anchor_mono_ns, anchor_real_ns;
};
struct ss_thread_row {
	int64_t id, recording_id;
	uint64_t thread;              /* 0: NULL (a tid seen only by the sampler) */
	uint64_t tid;
	struct ss_text name;
};
struct ss_worker_row {
	int64_t id, recording_id, thread_id;
	struct ss_text runtime;
	int64_t idx, begin_ts;        /* begin_ts 0: NULL */
};
struct ss_location_row {
	int64_t id;
	struct ss_text file;
	int64_t line;
	struct ss_text function;
};
struct ss_task_row {
	int64_t id, recording_id;
	uint64_t task;
	int64_t location_id, parent_task_id, spawn_ts, end_ts, spawn_thread_id; /* 0: NULL */
};
struct ss_poll_row {
	int64_t id, worker_id, task_id, location_id, ts, dur; /* task, location 0: NULL */
	bool incomplete;
};
struct ss_park_row {
	int64_t worker_id, ts, dur;
	bool incomplete;
	/* the thread's CPU clock at the park and at the unpark, and the time it
	 * waited for a CPU in between, when the source has them (< 0: NULL) */
	int64_t cpu_begin, cpu_end, sched_wait;
};
struct ss_wake_row {
	int64_t task_id, ts, waker_thread_id, waker_task_id, poll_id; /* 0: NULL */
	int64_t delay;                /* < 0: NULL (no poll) */
};
struct ss_queue_row {
	int64_t thread_id, worker_id, ts, local, global; /* worker 0: NULL; local, global < 0: NULL */
};
struct ss_mark_row {
	int64_t thread_id, ts;
	struct ss_text name;
	int64_t value;
};
struct ss_span_row {
	int64_t thread_id, ts, dur;
	struct ss_text name;
	int64_t depth;
	bool incomplete;
	uint64_t span_id, parent_span_id; /* the source's span ids; 0: NULL */
	struct ss_text fields;        /* JSON object */
	int64_t location_id;          /* 0: NULL */
};
struct ss_cpu_row {
	int64_t thread_id, ts, dur;
	const char *state;            /* "on-cpu", "blocked", "preempted" */
	int64_t cpu;                  /* < 0: NULL */
};
struct ss_sample_row {
	int64_t ts, thread_id, worker_id, callsite_id, weight; /* worker, callsite 0: NULL */
	const char *kind;             /* "cpu", "offcpu" */
	int64_t cpu;                  /* < 0: NULL */
};
struct ss_loss_row {
	int64_t recording_id, thread_id, ts, dur, count; /* thread 0: NULL */
	const char *source, *reason;
};
struct ss_mapping_row {
	int64_t id, recording_id;
	struct ss_text path;
	const char *build_id;         /* hex */
	int64_t start, end, offset;
};
struct ss_frame_row {
	int64_t id, mapping_id, rel_pc;
	const char *function, *file;  /* NULL: unknown */
	int64_t line;                 /* 0: NULL */
	int64_t inline_depth;
	const char *symbol_note;      /* NULL: none */
	const char *mangled;          /* NULL: not mangled */
};
struct ss_callsite_row {
	int64_t id, parent_id, frame_id, depth; /* parent 0: NULL */
};
struct ss_stall_row {
	int64_t id, worker_id, task_id, ts; /* worker 0: NULL */
	const char *kind;
	int64_t thread_id, location_id, detected_ts; /* location 0: NULL */
};
struct ss_stall_capture_row {
	int64_t stall_id, ts;
	const char *kind;
	int64_t syscall;              /* < 0: NULL */
	int64_t callsite_id, idx;     /* callsite 0: NULL */
	struct ss_text reason;
	const char *syscall_name;     /* NULL: none or unknown */
};
struct ss_task_dump_row {
	int64_t task_id, ts, idle, callsite_id, thread_id, location_id; /* callsite, location 0: NULL; idle < 0: NULL */
};
/* An event the model does not interpret, kept as the source gave it. */
struct ss_other_row {
	int64_t recording_id, thread_id; /* thread 0: NULL */
	bool has_ts;
	int64_t ts;
	struct ss_text name, fields;  /* fields: a JSON object */
};
/* An addition to a summary bucket (added to what the store holds). */
struct ss_summary_row {
	int64_t bucket_ns, worker_id, ts, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns;
};

/* ---- the state an incremental import continues from ---------------------------
 * Written by the model where an import ends (ss_model_recording_end), read back by
 * the store's resume() before the next import of the same recording continues. */

/* A wake that had not led to a poll yet; handle is the store's name for its wakes
 * row (written as part of this record), given back when the wake is linked. */
struct ss_pending_wake {
	int64_t recording_id, task_id;
	struct ss_wake_row wake;
	int64_t handle;               /* 0: the row is not written yet (the store writes it) */
	int64_t wake_from;
	bool in_poll;
};
struct ss_thread_state {
	int64_t thread_id;
	int cpu_state;                /* 0 unknown, 1 on-cpu, 2 blocked, 3 preempted */
	int64_t cpu_since, cpu;       /* cpu < 0: unknown */
	bool queue_known;
	int64_t queue_local, queue_global; /* < 0: that depth was not reported */
};
struct ss_open_span {
	int64_t thread_id, depth, ts;
	struct ss_text name;
	uint64_t span_id, parent_span_id; /* 0: none */
	struct ss_text fields;
	int64_t location_id;          /* 0: none */
};
struct ss_open_summary {
	int64_t worker_id;
	int source, level;            /* level: index into ss_summary_level_ns */
	int64_t ts, starts, busy, parked, offcpu, polls, max_poll;
	bool written;                 /* the amounts are in the store already */
};
struct ss_ended_task {
	int64_t recording_id;
	uint64_t task;
	int64_t task_id, end_ts;
};

struct ss_model;

struct ss_sink {
	void *ctx;
	const char *(*error)(void *ctx);

	/* What the store holds: the next free id of each kind (max + 1); the
	 * recording of a session, 0 when new; the database-wide deduplication
	 * tables, replayed into the model (ss_model_known_*). */
	int (*next_ids)(void *ctx, int64_t next[ID_COUNT]);
	int (*find_recording)(void *ctx, uint64_t session_id, int64_t *id);
	int (*load_known)(void *ctx, struct ss_model *m);
	/* A recording seen before continues: the store replays its state into the
	 * model (ss_model_restore_*), then forgets what it held of it as state
	 * (incomplete rows the model will write again, state tables). */
	int (*resume)(void *ctx, int64_t recording_id, struct ss_model *m);

	int (*recording)(void *ctx, const struct ss_recording_row *r);
	/* what a later unit knows of a recording the store has: its columns that
	 * are NULL take the row's non-NULL values (texts NULL, numbers 0: unknown) */
	int (*recording_fill)(void *ctx, const struct ss_recording_row *r);
	int (*recording_span)(void *ctx, int64_t id, int64_t first_ts, int64_t last_ts);
	int (*recording_arch)(void *ctx, int64_t id, const char *arch);
	int (*meta)(void *ctx, int64_t recording_id, struct ss_text key, struct ss_text value);
	int (*thread)(void *ctx, const struct ss_thread_row *r);
	int (*thread_name)(void *ctx, int64_t id, struct ss_text name, uint64_t tid);
	int (*thread_exit)(void *ctx, int64_t id, int64_t ts);
	int (*worker)(void *ctx, const struct ss_worker_row *r);
	int (*worker_end)(void *ctx, int64_t id, int64_t ts);
	int (*worker_runtime)(void *ctx, int64_t id, struct ss_text runtime, int64_t idx, int64_t begin_ts);
	int (*location)(void *ctx, const struct ss_location_row *r);
	int (*task)(void *ctx, const struct ss_task_row *r);
	int (*task_end)(void *ctx, int64_t id, int64_t end_ts);
	int (*poll)(void *ctx, const struct ss_poll_row *r);
	int (*park)(void *ctx, const struct ss_park_row *r);
	int (*wake)(void *ctx, const struct ss_wake_row *r);
	/* the row of a pending wake of an earlier import, now rewritten as linked */
	int (*wake_delete)(void *ctx, int64_t handle);
	int (*queue)(void *ctx, const struct ss_queue_row *r);
	int (*mark)(void *ctx, const struct ss_mark_row *r);
	int (*span)(void *ctx, const struct ss_span_row *r);
	int (*cpu)(void *ctx, const struct ss_cpu_row *r);
	int (*sample)(void *ctx, const struct ss_sample_row *r);
	int (*loss)(void *ctx, const struct ss_loss_row *r);
	int (*mapping)(void *ctx, const struct ss_mapping_row *r);
	int (*frame)(void *ctx, const struct ss_frame_row *r);
	int (*callsite)(void *ctx, const struct ss_callsite_row *r);
	int (*stall)(void *ctx, const struct ss_stall_row *r);
	int (*stall_end)(void *ctx, int64_t id, int64_t dur);
	int (*stall_capture)(void *ctx, const struct ss_stall_capture_row *r);
	int (*task_dump)(void *ctx, const struct ss_task_dump_row *r);
	int (*other)(void *ctx, const struct ss_other_row *r);
	int (*summary)(void *ctx, const struct ss_summary_row *r);

	/* The state where an import ends (see above). */
	int (*pending_wake)(void *ctx, const struct ss_pending_wake *w);
	int (*thread_state)(void *ctx, const struct ss_thread_state *s);
	int (*open_span)(void *ctx, const struct ss_open_span *s);
	int (*open_summary)(void *ctx, const struct ss_open_summary *s);
	int (*ended_task)(void *ctx, const struct ss_ended_task *t);
	/* Rows handed over so far are in the store (before state is written). */
	int (*flush)(void *ctx);
};

#endif /* STALLSCOPE_MODEL_SINK_H */
