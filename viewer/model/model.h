/*
 * model.h - the trace model: the trackers that turn a recording's definitions
 * and time-ordered events into rows (threads, workers, tasks, polls, parks,
 * wakes with their delays, spans, queue depths, CPU intervals, samples and
 * their stacks, stalls and their captures, task dumps, loss, summaries).
 *
 * viewer/model/ holds the trackers, the time-order merge in front of them and
 * the interfaces on either side: sources (a trace format's reader) call the
 * functions below, or read on a thread of their own through model_pipe.h;
 * rows go to a sink (sink.h). Nothing here includes sqlite3.h
 * or knows a trace format's bytes. It may depend on schema/ (constants), on
 * viewer/symbolize/ (frames get their names here) and on libc.
 *
 * A source drives it like this, for each recording and each of its segments
 * (or chunks: any unit whose ids are its own):
 *
 *     ss_model_recording(m, &recording_info);      // begins, or continues one seen before
 *     ss_model_segment_begin(m, &source, symtab);  // the unit's id space starts afresh
 *         ss_model_location / _thread_def / _stack / _mapping / _meta   as they come
 *         ss_model_event(m, &ev)                   // any order across threads
 *         ss_model_other(m, ...)                   // events it does not interpret
 *         ss_model_release(m)                      // now and then (after a block)
 *         ss_model_release_to(m, floor)            // or this, where the source knows
 *                                                  // (after ss_model_unit_defines)
 *     ss_model_segment_end(m);                     // everything of the unit delivered
 *     ...
 *     ss_model_recording_end(m);                   // open things written, state kept
 *
 * Not thread-safe; one model per import.
 */
#ifndef STALLSCOPE_MODEL_H
#define STALLSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "event.h"
#include "sink.h"

struct ss_model;
struct ss_symbolizer;
struct ss_symtab;

struct ss_model_options {
	FILE *log;                      /* warnings; NULL = stderr */
	bool quiet;
	struct ss_symbolizer *sym;      /* NULL: frames are not symbolized */
	/* Bounds against hostile or runaway input (see import.h) */
	uint64_t max_threads, max_live_tasks, max_summary_buckets;
};

/* How the model reaches back into the source for what events refer to by id. */
struct ss_source {
	void *ctx;
	/* A string of the current unit; NULL when unknown. */
	const char *(*string)(void *ctx, uint64_t id, size_t *len);
};

struct ss_recording_info {
	uint64_t session_id, pid;
	const char *exe; size_t exe_len;
	const char *host, *boot_id;
	uint64_t anchor_mono_ns, anchor_real_ns;
};

struct ss_model_thread_def {
	uint64_t thread, tid;
	const char *name; size_t name_len;
	uint64_t runtime;               /* string id (0 = none) */
	uint64_t worker_index;
	bool worker;
	/* what the thread is in at the start of the unit (0 = nothing) */
	uint64_t open_task, open_location, open_since, parked_since;
	/* The source knows the thread but not its state at the unit's start (a
	 * format without per-unit thread definitions): an open poll or park
	 * continues, and a NULL name keeps the one known. */
	bool partial;
};

/* Creates a model writing to sink. Returns NULL with a message in err. */
struct ss_model *ss_model_new(const struct ss_model_options *o, const struct ss_sink *sink,
			      char *err, size_t errlen);
void ss_model_free(struct ss_model *m);

/* Whether a store write failed (the model stops; the sink has the message). */
bool ss_model_failed(const struct ss_model *m);
/* Records that came later than the merge could wait for (merge.h). */
uint64_t ss_model_late(const struct ss_model *m);
/* Events left out because their thread was past max_threads, and that bound. */
uint64_t ss_model_over_thread_limit(const struct ss_model *m);
uint64_t ss_model_max_threads(const struct ss_model *m);
/* An id of a kind the model assigns (the import driver numbers segments). */
int64_t ss_model_new_id(struct ss_model *m, enum ss_idkind k);
/* The recording being imported: its id, and whether it was in the store before. */
int64_t ss_model_recording_id(const struct ss_model *m);
bool ss_model_recording_known(const struct ss_model *m);

/* Begins the recording of info->session_id (ends the one before, if another);
 * continuing one the store holds happens in ss_model_segment_begin. */
int ss_model_recording(struct ss_model *m, const struct ss_recording_info *info);
/* What a unit knows of the current recording that it lacked (a clock anchor,
 * a host): filled in where the store has nothing (0 and NULL: unknown). */
int ss_model_recording_fill(struct ss_model *m, const struct ss_recording_info *info);
int ss_model_recording_end(struct ss_model *m);

/* A unit of the recording (a segment) begins: its ids (locations, stacks,
 * strings) are its own. symtab: its symbol table, or NULL. skip: its events
 * were imported before (definitions still count). */
int ss_model_segment_begin(struct ss_model *m, const struct ss_source *src, const struct ss_symtab *symtab);
void ss_model_skip_events(struct ss_model *m, bool skip);
/* Everything of the unit delivered to the trackers. */
int ss_model_segment_end(struct ss_model *m);

/* Definitions, in the unit's ids. */
int ss_model_location(struct ss_model *m, uint64_t id, const char *file, size_t file_len, uint64_t line,
		      const char *function, size_t function_len);
int ss_model_thread_def(struct ss_model *m, const struct ss_model_thread_def *d);
/* pcs leaf first, the first nkernel kernel addresses, every frame but the first a
 * return address; truncated when the recorder's unwinder stopped short of the
 * stack's end (a '[truncated]' root frame marks it). */
int ss_model_stack(struct ss_model *m, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel, bool truncated);
int ss_model_mapping(struct ss_model *m, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
		     size_t path_len, const uint8_t *build_id, size_t build_id_len);
int ss_model_meta(struct ss_model *m, const char *key, size_t key_len, const char *value, size_t value_len);

/* An event, in any order across threads (the model merges them by time). */
int ss_model_event(struct ss_model *m, const struct ss_event *ev);
/* Hands what the merge window allows to the trackers. */
int ss_model_release(struct ss_model *m);
/* The same, and every event up to floor: none the source has still to give
 * in this unit is earlier (merge.h, ss_merge_release_to). A thread definition
 * (ss_model_thread_def) lets its thread's events go this way. */
int ss_model_release_to(struct ss_model *m, uint64_t floor);
/* Every thread the unit defines (THREAD_DEF) in what it gives: the events of
 * the others go by the floor at once (merge.h, ss_merge_unit_defines). */
void ss_model_unit_defines(struct ss_model *m, const uint64_t *threads, size_t n);
/* An event the model does not interpret (a format's event type it has no
 * tracker for), stored as it is so nothing is dropped: the source's thread
 * (0: none), its time when it has one, a name and its fields as a JSON object. */
int ss_model_other(struct ss_model *m, uint64_t thread, bool has_ts, uint64_t ts, const char *name,
		   size_t name_len, const char *json, size_t json_len);

/* ---- the store's side --------------------------------------------------------- */

/* Database-wide deduplication tables (sink->load_known). */
int ss_model_known_location(struct ss_model *m, int64_t id, const char *file, size_t file_len, bool file_null,
			    int64_t line, const char *function, size_t function_len, bool function_null);
int ss_model_known_frame(struct ss_model *m, int64_t mapping_id, int64_t rel_pc, int64_t first_id, int count);
int ss_model_known_callsite(struct ss_model *m, int64_t parent_id, int64_t frame_id, int64_t id);

/* The state a recording was in where the last import of it ended (sink->resume). */
int ss_model_restore_thread(struct ss_model *m, int64_t id, uint64_t thread, bool sampler_only, uint64_t tid,
			    int64_t worker_id);
int ss_model_restore_thread_state(struct ss_model *m, const struct ss_thread_state *s);
int ss_model_restore_open_span(struct ss_model *m, const struct ss_open_span *s);
int ss_model_restore_open_stall(struct ss_model *m, int64_t thread_id, int64_t poll_ts, int64_t stall_id);
int ss_model_restore_open_summary(struct ss_model *m, int64_t thread_id, const struct ss_open_summary *s);
int ss_model_restore_task(struct ss_model *m, const struct ss_task_row *t);
int ss_model_restore_ended_task(struct ss_model *m, uint64_t task, int64_t task_id, int64_t end_ts);
int ss_model_restore_pending_wake(struct ss_model *m, uint64_t task, const struct ss_pending_wake *w);
int ss_model_restore_open_poll(struct ss_model *m, int64_t thread_id, int64_t poll_id, int64_t ts,
			       int64_t task_id, int64_t location_id);
/* cpu_begin < 0: the park's CPU clock is unknown. */
int ss_model_restore_open_park(struct ss_model *m, int64_t thread_id, int64_t ts, int64_t cpu_begin);
/* The recording machine's architecture, as a unit's META "arch" said. */
int ss_model_restore_arch(struct ss_model *m, const char *arch);
/* A mapping of the recording; path "[kernel]" and "[unknown]" are the special ones. */
int ss_model_restore_mapping(struct ss_model *m, int64_t id, const char *path, size_t path_len,
			     const char *build_hex, int64_t start, int64_t end, int64_t offset);

#endif /* STALLSCOPE_MODEL_H */
