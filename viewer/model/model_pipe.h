/*
 * model_pipe.h - one unit's records read on one thread and tracked on another,
 * with the same result as ss_model_event & co. on one thread.
 *
 * The producer (a source reading a unit) calls the ss_model_pipe_* functions
 * below where it would call ss_model_event, ss_model_location, ... : the time
 * order merge runs on the producer's thread, and what it releases, with every
 * definition in between, is appended to batches in the very order the model
 * would have seen them. The model's thread (the caller of ss_model_pipe_run)
 * replays the batches into the trackers. What the trackers look up in the
 * source while an event is delivered (the strings of marks, spans, worker
 * lanes and thread definitions) is resolved on the producer's thread at the
 * point of delivery and travels with the event, so the source is only ever
 * touched by its own thread; bytes events point to (a thread's name, a stall's
 * reason, a stack's frames, a mapping's path) are copied.
 *
 * Memory is bounded: at most 8 batches of 8192 commands (about 1 MB each) wait.
 * A store write that fails on the model's thread stops the producer at its
 * next call (ss_model_pipe_stopped); nothing is lost silently.
 */
#ifndef STALLSCOPE_MODEL_PIPE_H
#define STALLSCOPE_MODEL_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "model.h"

struct ss_model_pipe;

/* Runs produce(ctx, pipe) on a thread of its own and tracks what it hands
 * over on the calling thread, between ss_model_segment_begin and
 * ss_model_segment_end (the merge is empty at the start and drained at the
 * end). Returns produce's result, or -1 when the model failed or a thread or
 * memory could not be had before anything was read (then produce was not run:
 * the caller reads the unit on one thread instead, *started false). */
int ss_model_pipe_run(struct ss_model *m, int (*produce)(void *ctx, struct ss_model_pipe *p), void *ctx,
		      bool *started);

/* ---- the producer's side (only from produce's thread) ------------------------- */

/* Like ss_model_event, ss_model_release, ss_model_unit_defines,
 * ss_model_skip_events and the definitions of model.h. */
int ss_model_pipe_event(struct ss_model_pipe *p, const struct ss_event *ev);
int ss_model_pipe_release(struct ss_model_pipe *p);
int ss_model_pipe_release_to(struct ss_model_pipe *p, uint64_t floor);
void ss_model_pipe_unit_defines(struct ss_model_pipe *p, const uint64_t *threads, size_t n);
void ss_model_pipe_skip_events(struct ss_model_pipe *p, bool skip);
int ss_model_pipe_location(struct ss_model_pipe *p, uint64_t id, const char *file, size_t file_len, uint64_t line,
			   const char *function, size_t function_len);
int ss_model_pipe_thread_def(struct ss_model_pipe *p, const struct ss_model_thread_def *d);
int ss_model_pipe_stack(struct ss_model_pipe *p, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel,
			bool truncated);
int ss_model_pipe_mapping(struct ss_model_pipe *p, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
			  size_t path_len, const uint8_t *build_id, size_t build_id_len);
int ss_model_pipe_meta(struct ss_model_pipe *p, const char *key, size_t key_len, const char *value,
		       size_t value_len);
/* The model's thread failed (a store write): stop reading. */
bool ss_model_pipe_stopped(const struct ss_model_pipe *p);

#endif /* STALLSCOPE_MODEL_PIPE_H */
