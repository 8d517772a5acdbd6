/*
 * sqlite_sink.c - see sqlite_store.h: the model's rows bound into the
 * prepared statements of db.c (batched for the high-volume tables and inserted
 * on the store's second thread), the incremental-import state in the import_*
 * tables, and the end of an import.
 */
#include "sqlite_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "model.h"
#include "name_cache.h"
#include "poll_chunks.h"
#include "summary_levels.h"

struct ss_sqlite_store {
	struct ss_db db;
	int64_t first_new_sample, first_new_poll;
	/* the statements of the state written where an import ends */
	sqlite3_stmt *st_wake, *st_pending, *st_thread_state, *st_span, *st_summary, *st_ended;
	/* names.id of the names of marks and spans met so far, and the two
	 * statements that add and read a new one */
	struct ss_name_cache names;
	sqlite3_stmt *st_name_add, *st_name_id;
	const struct ss_sqlite_stage *stage; /* NULL: this file is the database */
	/* The graveyard of the recording being handed over (s_ended_task): its
	 * oldest and newest entries, written when it is complete. */
	struct ss_ended_task grave_first, grave_last;
	bool grave_pending;
	struct ss_poll_chunks chunks; /* each worker's open poll_chunks row */
	/* Each worker's last queue report not written yet, by workers.id: the
	 * next poll the worker ends carries it (polls.queue_*), or queue_rows
	 * gets it when another report comes first or the import ends. */
	struct held_queue *held;
	size_t n_held;
};

struct held_queue {
	bool held;
	int64_t thread_id, ts, local, global;
};

const char *ss_sqlite_error(struct ss_sqlite_store *s)
{
	return s->db.err[0] ? s->db.err : "unknown error";
}

static const char *sink_error(void *ctx)
{
	return ss_sqlite_error(ctx);
}

static int step(struct ss_sqlite_store *s, enum ss_stmt w)
{
	return ss_db_step(&s->db, w);
}

static void bind_text(struct ss_row *r, int i, struct ss_text t)
{
	ss_bind_t(r, i, t.p, t.n);
}

/* A column that is NULL for a negative value. */
static void bind_n(struct ss_row *r, int i, int64_t v)
{
	if (v < 0)
		ss_bind_null(r, i);
	else
		ss_bind_i(r, i, v);
}

/* ---- rows --------------------------------------------------------------------------- */

static int s_recording(void *ctx, const struct ss_recording_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_RECORDING);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, (int64_t)x->session_id);
	ss_bind_z(r, 3, (int64_t)x->pid);
	bind_text(r, 4, x->exe);
	bind_text(r, 5, x->host);
	bind_text(r, 6, x->boot_id);
	ss_bind_z(r, 7, x->anchor_mono_ns);
	ss_bind_z(r, 8, x->anchor_real_ns);
	return step(s, ST_INS_RECORDING);
}

static int s_recording_fill(void *ctx, const struct ss_recording_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_RECORDING_FILL);
	ss_bind_i(r, 1, x->id);
	ss_bind_z(r, 2, (int64_t)x->pid);
	bind_text(r, 3, x->exe);
	bind_text(r, 4, x->host);
	bind_text(r, 5, x->boot_id);
	ss_bind_z(r, 6, x->anchor_mono_ns);
	ss_bind_z(r, 7, x->anchor_real_ns);
	return step(s, ST_UPD_RECORDING_FILL);
}

static int s_recording_span(void *ctx, int64_t id, int64_t first, int64_t last)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_RECORDING_TS);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, first);
	ss_bind_i(r, 3, last);
	return step(s, ST_UPD_RECORDING_TS);
}

static int s_recording_arch(void *ctx, int64_t id, const char *arch)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_RECORDING_ARCH);
	ss_bind_i(r, 1, id);
	ss_bind_st(r, 2, arch);
	return step(s, ST_UPD_RECORDING_ARCH);
}

static int s_meta(void *ctx, int64_t recording_id, struct ss_text key, struct ss_text value)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_META);
	ss_bind_i(r, 1, recording_id);
	bind_text(r, 2, key);
	bind_text(r, 3, value);
	return step(s, ST_INS_META);
}

static int s_thread(void *ctx, const struct ss_thread_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_THREAD);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->recording_id);
	if (x->thread)
		ss_bind_i(r, 3, (int64_t)x->thread);
	else
		ss_bind_null(r, 3);
	ss_bind_i(r, 4, (int64_t)x->tid);
	bind_text(r, 5, x->name);
	return step(s, ST_INS_THREAD);
}

static int s_thread_name(void *ctx, int64_t id, struct ss_text name, uint64_t tid)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_THREAD_NAME);
	ss_bind_i(r, 1, id);
	bind_text(r, 2, name);
	ss_bind_i(r, 3, (int64_t)tid);
	return step(s, ST_UPD_THREAD_NAME);
}

static int s_thread_exit(void *ctx, int64_t id, int64_t ts)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_THREAD_EXIT);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, ts);
	return step(s, ST_UPD_THREAD_EXIT);
}

static int s_worker(void *ctx, const struct ss_worker_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_WORKER);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->recording_id);
	ss_bind_i(r, 3, x->thread_id);
	bind_text(r, 4, x->runtime);
	ss_bind_i(r, 5, x->idx);
	ss_bind_z(r, 6, x->begin_ts);
	return step(s, ST_INS_WORKER);
}

static int s_worker_end(void *ctx, int64_t id, int64_t ts)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_WORKER_END);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, ts);
	return step(s, ST_UPD_WORKER_END);
}

static int s_worker_runtime(void *ctx, int64_t id, struct ss_text runtime, int64_t idx, int64_t begin_ts)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_WORKER_RUNTIME);
	ss_bind_i(r, 1, id);
	bind_text(r, 2, runtime);
	ss_bind_i(r, 3, idx);
	ss_bind_z(r, 4, begin_ts);
	return step(s, ST_UPD_WORKER_RUNTIME);
}

static int s_location(void *ctx, const struct ss_location_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_LOCATION);
	ss_bind_i(r, 1, x->id);
	bind_text(r, 2, x->file);
	ss_bind_i(r, 3, x->line);
	bind_text(r, 4, x->function);
	return step(s, ST_INS_LOCATION);
}

static int s_task(void *ctx, const struct ss_task_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_TASK);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->recording_id);
	/* task_rows: NULL task when it is the id, the end as a lifetime (their
	 * varints are a few bytes where the values are up to eight) */
	if ((int64_t)x->task == x->id)
		ss_bind_null(r, 3);
	else
		ss_bind_i(r, 3, (int64_t)x->task);
	ss_bind_z(r, 4, x->location_id);
	ss_bind_z(r, 5, x->parent_task_id);
	ss_bind_z(r, 6, x->spawn_ts);
	if (x->end_ts)
		ss_bind_i(r, 7, (int64_t)((uint64_t)x->end_ts - (uint64_t)x->spawn_ts));
	else
		ss_bind_null(r, 7);
	ss_bind_z(r, 8, x->spawn_thread_id);
	return step(s, ST_INS_TASK);
}

static int s_task_end(void *ctx, int64_t id, int64_t end_ts)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_TASK_END);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, end_ts);
	return step(s, ST_UPD_TASK_END);
}

static int insert_queue(struct ss_sqlite_store *s, const struct held_queue *q);

static int s_poll(void *ctx, const struct ss_poll_row *x)
{
	struct ss_sqlite_store *s = ctx;
	/* Not into an incomplete poll: the next import of the recording deletes
	 * and writes it again (s_resume), without the report. */
	struct held_queue *q = !x->incomplete && x->worker_id > 0 && (size_t)x->worker_id < s->n_held &&
					       s->held[x->worker_id].held
				       ? &s->held[x->worker_id]
				       : NULL;
	struct ss_row *r = ss_row(&s->db, ST_INS_POLL);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->worker_id);
	ss_bind_z(r, 3, x->task_id);
	ss_bind_z(r, 4, x->location_id);
	ss_bind_i(r, 5, x->ts);
	ss_bind_i(r, 6, x->dur);
	ss_bind_i(r, 7, x->incomplete);
	if (q) {
		ss_bind_i(r, 8, (int64_t)((uint64_t)x->ts - (uint64_t)q->ts));
		bind_n(r, 9, q->local);
		bind_n(r, 10, q->global);
		q->held = false;
	} else {
		ss_bind_null(r, 8);
		ss_bind_null(r, 9);
		ss_bind_null(r, 10);
	}
	if (step(s, ST_INS_POLL) != 0)
		return -1;
	return ss_poll_chunks_add(&s->chunks, &s->db, x->worker_id, x->id, x->ts);
}

static int s_park(void *ctx, const struct ss_park_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_PARK);
	ss_bind_i(r, 1, x->worker_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_i(r, 3, x->dur);
	ss_bind_i(r, 4, x->incomplete);
	bind_n(r, 5, x->cpu_begin);
	bind_n(r, 6, x->cpu_end);
	bind_n(r, 7, x->sched_wait);
	return step(s, ST_INS_PARK);
}

static int s_wake(void *ctx, const struct ss_wake_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_WAKE);
	ss_bind_i(r, 1, x->task_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_z(r, 3, x->waker_thread_id);
	ss_bind_z(r, 4, x->waker_task_id);
	ss_bind_z(r, 5, x->poll_id);
	bind_n(r, 6, x->delay);
	return step(s, ST_INS_WAKE);
}

static int s_wake_delete(void *ctx, int64_t handle)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_DEL_WAKE);
	ss_bind_i(r, 1, handle);
	return step(s, ST_DEL_WAKE);
}

static int insert_queue(struct ss_sqlite_store *s, const struct held_queue *q)
{
	struct ss_row *r = ss_row(&s->db, ST_INS_QUEUE);
	/* no worker_id: queue_depths derives it from workers */
	ss_bind_i(r, 1, q->thread_id);
	ss_bind_i(r, 2, q->ts);
	bind_n(r, 3, q->local);
	bind_n(r, 4, q->global);
	return step(s, ST_INS_QUEUE);
}

/* A worker's report waits for its next poll (a runtime reports at every
 * poll, a few microseconds before it); one that a second report overtakes
 * goes to queue_rows, so a worker's rows there stay in time order. */
static int s_queue(void *ctx, const struct ss_queue_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct held_queue q = { true, x->thread_id, x->ts, x->local, x->global };
	if (x->worker_id <= 0)
		return insert_queue(s, &q);
	size_t w = (size_t)x->worker_id;
	if (w >= s->n_held) {
		size_t n = s->n_held ? s->n_held : 16;
		while (n <= w)
			n *= 2;
		struct held_queue *h = realloc(s->held, n * sizeof *h);
		if (!h) {
			snprintf(s->db.err, sizeof s->db.err, "out of memory");
			return -1;
		}
		memset(h + s->n_held, 0, (n - s->n_held) * sizeof *h);
		s->held = h;
		s->n_held = n;
	}
	if (s->held[w].held && insert_queue(s, &s->held[w]) != 0)
		return -1;
	s->held[w] = q;
	return 0;
}

/* The reports no poll took, where the import ends. */
static int flush_held_queues(struct ss_sqlite_store *s)
{
	for (size_t w = 0; w < s->n_held; w++)
		if (s->held[w].held) {
			s->held[w].held = false;
			if (insert_queue(s, &s->held[w]) != 0)
				return -1;
		}
	return 0;
}

static int prep(struct ss_sqlite_store *s, sqlite3_stmt **st, const char *sql);

/* names.id of a name, which a new name gets from SQLite (so rows that reach
 * names another way, a pull's or a stage's INSERT into the marks and spans
 * views, never share an id); 0 for no name (SQL NULL), -1 on an error (err
 * set). A new name waits for the inserting thread once: programs name marks
 * and spans with a few constant strings. */
static int64_t name_id(struct ss_sqlite_store *s, struct ss_text t)
{
	int64_t id = 0;
	if (!t.p)
		return 0;
	if (ss_name_cache_get(&s->names, t.p, t.n, &id))
		return id;
	if (prep(s, &s->st_name_add, "INSERT OR IGNORE INTO names(name) VALUES(?1)") != 0 ||
	    prep(s, &s->st_name_id, "SELECT id FROM names WHERE name = ?1") != 0)
		return -1;
	sqlite3_bind_text(s->st_name_add, 1, t.p, (int)t.n, SQLITE_STATIC);
	sqlite3_bind_text(s->st_name_id, 1, t.p, (int)t.n, SQLITE_STATIC);
	id = -1;
	if (sqlite3_step(s->st_name_add) == SQLITE_DONE && sqlite3_step(s->st_name_id) == SQLITE_ROW)
		id = sqlite3_column_int64(s->st_name_id, 0);
	if (id < 0)
		snprintf(s->db.err, sizeof s->db.err, "names: %s", sqlite3_errmsg(s->db.db));
	sqlite3_reset(s->st_name_add);
	sqlite3_reset(s->st_name_id);
	sqlite3_clear_bindings(s->st_name_add);
	sqlite3_clear_bindings(s->st_name_id);
	if (id >= 0 && ss_name_cache_put(&s->names, t.p, t.n, id) != 0) {
		snprintf(s->db.err, sizeof s->db.err, "out of memory");
		return -1;
	}
	return id;
}

static int s_mark(void *ctx, const struct ss_mark_row *x)
{
	struct ss_sqlite_store *s = ctx;
	int64_t name = name_id(s, x->name);
	if (name < 0)
		return -1;
	struct ss_row *r = ss_row(&s->db, ST_INS_MARK);
	ss_bind_i(r, 1, x->thread_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_z(r, 3, name);
	ss_bind_i(r, 4, x->value);
	return step(s, ST_INS_MARK);
}

static int s_span(void *ctx, const struct ss_span_row *x)
{
	struct ss_sqlite_store *s = ctx;
	int64_t name = name_id(s, x->name);
	if (name < 0)
		return -1;
	/* The extras are rare (dial9's spans): a span without them is a narrower
	 * span_cells row. */
	if (x->span_id || x->parent_span_id || x->fields.p || x->location_id) {
		struct ss_row *r = ss_row(&s->db, ST_INS_SPAN_EXTRA);
		ss_bind_i(r, 1, x->thread_id);
		ss_bind_i(r, 2, x->ts);
		ss_bind_i(r, 3, x->dur);
		ss_bind_z(r, 4, name);
		ss_bind_i(r, 5, x->depth);
		ss_bind_i(r, 6, x->incomplete);
		ss_bind_z(r, 7, (int64_t)x->span_id);
		ss_bind_z(r, 8, (int64_t)x->parent_span_id);
		bind_text(r, 9, x->fields);
		ss_bind_z(r, 10, x->location_id);
		return step(s, ST_INS_SPAN_EXTRA);
	}
	struct ss_row *r = ss_row(&s->db, ST_INS_SPAN);
	ss_bind_i(r, 1, x->thread_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_i(r, 3, x->dur);
	ss_bind_z(r, 4, name);
	ss_bind_i(r, 5, (int64_t)((uint64_t)x->depth * 2) + (x->incomplete != 0));
	return step(s, ST_INS_SPAN);
}

/* cpu_rows.state's code for the model's state names (schema/stallscope.sql);
 * one it does not know is stored as its text, as the view shows it. */
static int cpu_state_code(const char *state)
{
	static const char *const names[] = { "on-cpu", "blocked", "preempted" };
	for (int i = 0; i < 3; i++)
		if (state && !strcmp(state, names[i]))
			return i + 1;
	return 0;
}

static int s_cpu(void *ctx, const struct ss_cpu_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_CPU);
	ss_bind_i(r, 1, x->thread_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_i(r, 3, x->dur);
	int code = cpu_state_code(x->state);
	if (code)
		ss_bind_i(r, 4, code);
	else
		ss_bind_st(r, 4, x->state);
	bind_n(r, 5, x->cpu);
	return step(s, ST_INS_CPU);
}

static int s_sample(void *ctx, const struct ss_sample_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_SAMPLE);
	ss_bind_i(r, 1, x->ts);
	ss_bind_i(r, 2, x->thread_id);
	ss_bind_z(r, 3, x->worker_id);
	ss_bind_z(r, 4, x->callsite_id);
	ss_bind_i(r, 5, x->weight);
	ss_bind_st(r, 6, x->kind);
	bind_n(r, 7, x->cpu);
	return step(s, ST_INS_SAMPLE);
}

static int s_loss(void *ctx, const struct ss_loss_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_LOSS);
	ss_bind_i(r, 1, x->recording_id);
	ss_bind_z(r, 2, x->thread_id);
	ss_bind_i(r, 3, x->ts);
	ss_bind_i(r, 4, x->dur);
	ss_bind_i(r, 5, x->count);
	ss_bind_st(r, 6, x->source);
	ss_bind_st(r, 7, x->reason);
	return step(s, ST_INS_LOSS);
}

static int s_mapping(void *ctx, const struct ss_mapping_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_MAPPING);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->recording_id);
	bind_text(r, 3, x->path);
	ss_bind_st(r, 4, x->build_id);
	ss_bind_i(r, 5, x->start);
	ss_bind_i(r, 6, x->end);
	ss_bind_i(r, 7, x->offset);
	return step(s, ST_INS_MAPPING);
}

static int s_frame(void *ctx, const struct ss_frame_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_FRAME);
	ss_bind_i(r, 1, x->id);
	ss_bind_i(r, 2, x->mapping_id);
	ss_bind_i(r, 3, x->rel_pc);
	ss_bind_st(r, 4, x->function);
	ss_bind_st(r, 5, x->file);
	ss_bind_z(r, 6, x->line);
	ss_bind_i(r, 7, x->inline_depth);
	ss_bind_st(r, 8, x->symbol_note);
	ss_bind_st(r, 9, x->mangled);
	return step(s, ST_INS_FRAME);
}

static int s_callsite(void *ctx, const struct ss_callsite_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_CALLSITE);
	ss_bind_i(r, 1, x->id);
	ss_bind_z(r, 2, x->parent_id);
	ss_bind_i(r, 3, x->frame_id);
	ss_bind_i(r, 4, x->depth);
	return step(s, ST_INS_CALLSITE);
}

static int s_stall(void *ctx, const struct ss_stall_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_STALL);
	ss_bind_i(r, 1, x->id);
	ss_bind_z(r, 2, x->worker_id);
	ss_bind_i(r, 3, x->task_id);
	ss_bind_i(r, 4, x->ts);
	ss_bind_st(r, 5, x->kind);
	ss_bind_i(r, 6, x->thread_id);
	ss_bind_z(r, 7, x->location_id);
	ss_bind_i(r, 8, x->detected_ts);
	return step(s, ST_INS_STALL);
}

static int s_stall_end(void *ctx, int64_t id, int64_t dur)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPD_STALL_END);
	ss_bind_i(r, 1, id);
	ss_bind_i(r, 2, dur);
	return step(s, ST_UPD_STALL_END);
}

static int s_stall_capture(void *ctx, const struct ss_stall_capture_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_STALL_CAPTURE);
	ss_bind_i(r, 1, x->stall_id);
	ss_bind_i(r, 2, x->ts);
	ss_bind_st(r, 3, x->kind);
	bind_n(r, 4, x->syscall);
	ss_bind_z(r, 5, x->callsite_id);
	ss_bind_i(r, 6, x->idx);
	bind_text(r, 7, x->reason);
	ss_bind_st(r, 8, x->syscall_name);
	return step(s, ST_INS_STALL_CAPTURE);
}

static int s_task_dump(void *ctx, const struct ss_task_dump_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_TASK_DUMP);
	ss_bind_i(r, 1, x->task_id);
	ss_bind_i(r, 2, x->ts);
	bind_n(r, 3, x->idle);
	ss_bind_z(r, 4, x->callsite_id);
	ss_bind_i(r, 5, x->thread_id);
	ss_bind_z(r, 6, x->location_id);
	return step(s, ST_INS_TASK_DUMP);
}

static int s_other(void *ctx, const struct ss_other_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_INS_OTHER);
	ss_bind_i(r, 1, x->recording_id);
	ss_bind_z(r, 2, x->thread_id);
	if (x->has_ts)
		ss_bind_i(r, 3, x->ts);
	else
		ss_bind_null(r, 3);
	bind_text(r, 4, x->name.p ? x->name : (struct ss_text){ "", 0 });
	bind_text(r, 5, x->fields.p ? x->fields : (struct ss_text){ "{}", 2 });
	return step(s, ST_INS_OTHER);
}

/* The schema's summary_rows view and view_queries.c spell the unit out. */
_Static_assert(SS_SUMMARY_SCALE_NS == 50000, "summary_rows' scale unit is 50 us in SQL");

static int s_summary(void *ctx, const struct ss_summary_row *x)
{
	struct ss_sqlite_store *s = ctx;
	struct ss_row *r = ss_row(&s->db, ST_UPSERT_SUMMARY);
	/* summary_rows keeps the level's scale and the bucket's number (a
	 * bucket starts at a multiple of its size) */
	ss_bind_i(r, 1, x->bucket_ns / SS_SUMMARY_SCALE_NS);
	ss_bind_i(r, 2, x->worker_id);
	ss_bind_i(r, 3, x->ts / x->bucket_ns);
	ss_bind_i(r, 4, x->busy_ns);
	ss_bind_i(r, 5, x->parked_ns);
	ss_bind_i(r, 6, x->offcpu_ns);
	ss_bind_i(r, 7, x->polls);
	ss_bind_i(r, 8, x->max_poll_ns);
	return step(s, ST_UPSERT_SUMMARY);
}

static int s_flush(void *ctx)
{
	struct ss_sqlite_store *s = ctx;
	return ss_db_flush(&s->db);
}

/* ---- state where an import ends (run directly on the connection) ---------------- */

/* Every statement here runs on the caller's thread, so the inserting thread
 * must be idle first: the model writes these right after rows it queued
 * (the tasks' rows, then their graveyard entries), and two threads on one
 * connection opened without its mutex corrupt the database. When the queue
 * is empty the wait is a lock and a check. */
static int prep(struct ss_sqlite_store *s, sqlite3_stmt **st, const char *sql)
{
	if (ss_db_sync(&s->db) != 0)
		return -1;
	if (*st) {
		sqlite3_reset(*st);
		return 0;
	}
	if (sqlite3_prepare_v2(s->db.db, sql, -1, st, NULL) != SQLITE_OK) {
		snprintf(s->db.err, sizeof s->db.err, "%s", sqlite3_errmsg(s->db.db));
		return -1;
	}
	return 0;
}

static int done(struct ss_sqlite_store *s, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	if (rc)
		snprintf(s->db.err, sizeof s->db.err, "%s", sqlite3_errmsg(s->db.db));
	sqlite3_reset(st);
	return rc;
}

static void bind_z(sqlite3_stmt *st, int i, int64_t v)
{
	if (v)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

/* A wake still waiting for a poll: its wakes row (with no poll yet), and a
 * note of that row in import_pending_wakes so that the next import links it. */
static int s_pending_wake(void *ctx, const struct ss_pending_wake *w)
{
	struct ss_sqlite_store *s = ctx;
	int64_t rowid = w->handle;
	if (!rowid) {
		if (prep(s, &s->st_wake, "INSERT INTO wakes(task_id, ts, waker_thread_id, waker_task_id)"
				      " VALUES(?,?,?,?)") != 0)
			return -1;
		sqlite3_bind_int64(s->st_wake, 1, w->wake.task_id);
		sqlite3_bind_int64(s->st_wake, 2, w->wake.ts);
		bind_z(s->st_wake, 3, w->wake.waker_thread_id);
		bind_z(s->st_wake, 4, w->wake.waker_task_id);
		if (done(s, s->st_wake) != 0)
			return -1;
		rowid = sqlite3_last_insert_rowid(s->db.db);
	}
	if (prep(s, &s->st_pending, "INSERT INTO import_pending_wakes(recording_id, wake_rowid, task_id,"
				    " wake_from, in_poll) VALUES(?,?,?,?,?)") != 0)
		return -1;
	sqlite3_bind_int64(s->st_pending, 1, w->recording_id);
	sqlite3_bind_int64(s->st_pending, 2, rowid);
	sqlite3_bind_int64(s->st_pending, 3, w->task_id);
	sqlite3_bind_int64(s->st_pending, 4, w->wake_from);
	sqlite3_bind_int(s->st_pending, 5, w->in_poll);
	return done(s, s->st_pending);
}

static int s_thread_state(void *ctx, const struct ss_thread_state *t)
{
	struct ss_sqlite_store *s = ctx;
	if (prep(s, &s->st_thread_state, "INSERT OR REPLACE INTO import_thread_state(thread_id, cpu_state,"
					 " cpu_since, cpu, queue_local, queue_global) VALUES(?,?,?,?,?,?)") != 0)
		return -1;
	sqlite3_stmt *st = s->st_thread_state;
	sqlite3_bind_int64(st, 1, t->thread_id);
	if (t->cpu_state) {
		sqlite3_bind_int(st, 2, t->cpu_state);
		sqlite3_bind_int64(st, 3, t->cpu_since);
	} else {
		sqlite3_bind_null(st, 2);
		sqlite3_bind_null(st, 3);
	}
	if (t->cpu >= 0)
		sqlite3_bind_int64(st, 4, t->cpu);
	else
		sqlite3_bind_null(st, 4);
	if (t->queue_known) {
		/* a depth that was not reported stays NULL */
		if (t->queue_local >= 0)
			sqlite3_bind_int64(st, 5, t->queue_local);
		else
			sqlite3_bind_null(st, 5);
		if (t->queue_global >= 0)
			sqlite3_bind_int64(st, 6, t->queue_global);
		else
			sqlite3_bind_null(st, 6);
	} else {
		sqlite3_bind_null(st, 5);
		sqlite3_bind_null(st, 6);
	}
	return done(s, st);
}

static void bind_text_stmt(sqlite3_stmt *st, int i, struct ss_text t)
{
	if (t.p)
		sqlite3_bind_text(st, i, t.p, (int)t.n, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static int s_open_span(void *ctx, const struct ss_open_span *o)
{
	struct ss_sqlite_store *s = ctx;
	if (prep(s, &s->st_span, "INSERT OR REPLACE INTO import_open_spans(thread_id, depth, ts, name, span_id,"
				 " parent_span_id, fields, location_id) VALUES(?,?,?,?,?,?,?,?)") != 0)
		return -1;
	sqlite3_stmt *st = s->st_span;
	sqlite3_bind_int64(st, 1, o->thread_id);
	sqlite3_bind_int64(st, 2, o->depth);
	sqlite3_bind_int64(st, 3, o->ts);
	bind_text_stmt(st, 4, o->name);
	bind_z(st, 5, (int64_t)o->span_id);
	bind_z(st, 6, (int64_t)o->parent_span_id);
	bind_text_stmt(st, 7, o->fields);
	bind_z(st, 8, o->location_id);
	return done(s, st);
}

static int s_open_summary(void *ctx, const struct ss_open_summary *o)
{
	struct ss_sqlite_store *s = ctx;
	if (prep(s, &s->st_summary, "INSERT OR REPLACE INTO import_open_summary(worker_id, source, bucket_ns, ts,"
				    " starts, busy_ns, parked_ns, offcpu_ns, polls, max_poll_ns, written)"
				    " VALUES(?,?,?,?,?,?,?,?,?,?,?)") != 0)
		return -1;
	int64_t v[] = { o->worker_id, o->source, (int64_t)ss_summary_level_ns[o->level], o->ts, o->starts, o->busy,
			o->parked, o->offcpu, o->polls, o->max_poll, o->written };
	for (int i = 0; i < 11; i++)
		sqlite3_bind_int64(s->st_summary, i + 1, v[i]);
	return done(s, s->st_summary);
}

static int write_ended(struct ss_sqlite_store *s, const struct ss_ended_task *e)
{
	if (prep(s, &s->st_ended, "INSERT INTO import_ended_tasks(recording_id, task, task_id, end_ts)"
				  " VALUES(?,?,?,?)") != 0)
		return -1;
	sqlite3_bind_int64(s->st_ended, 1, e->recording_id);
	sqlite3_bind_int64(s->st_ended, 2, (int64_t)e->task);
	sqlite3_bind_int64(s->st_ended, 3, e->task_id);
	sqlite3_bind_int64(s->st_ended, 4, e->end_ts);
	return done(s, s->st_ended);
}

/* The graveyard's entries are tasks rows already (task, id, end_ts), so a
 * database keeps only its oldest and newest entry: the next import takes the
 * tasks rows that ended from the oldest on (s_resume), and the model drops
 * again what ended too long before the newest. The same entries as a row each
 * took a byte per event on a busy recording. A stage (PostgreSQL) holds only
 * the tasks it imports: its seed puts the whole graveyard in (pg_import.c). */
static int grave_write(struct ss_sqlite_store *s)
{
	if (!s->grave_pending)
		return 0;
	s->grave_pending = false;
	if (write_ended(s, &s->grave_first) != 0)
		return -1;
	return s->grave_last.task_id == s->grave_first.task_id ? 0 : write_ended(s, &s->grave_last);
}

static int s_ended_task(void *ctx, const struct ss_ended_task *e)
{
	struct ss_sqlite_store *s = ctx;
	if (s->grave_pending && s->grave_first.recording_id != e->recording_id && grave_write(s) != 0)
		return -1;
	if (!s->grave_pending) {
		s->grave_first = s->grave_last = *e;
		s->grave_pending = true;
	} else if (e->end_ts < s->grave_first.end_ts) {
		s->grave_first = *e;
	} else if (e->end_ts >= s->grave_last.end_ts) {
		s->grave_last = *e;
	}
	return 0;
}

/* ---- what the store holds ------------------------------------------------------------ */

static int s_next_ids(void *ctx, int64_t next[ID_COUNT])
{
	struct ss_sqlite_store *s = ctx;
	if (ss_db_next_ids(&s->db, next) != 0)
		return -1;
	for (int k = 0; s->stage && k < ID_COUNT; k++)
		if (next[k] < s->stage->floor[k])
			next[k] = s->stage->floor[k];
	return 0;
}

int ss_sqlite_set_stage(struct ss_sqlite_store *s, const struct ss_sqlite_stage *stage)
{
	s->stage = stage;
	if (!stage->prepare || ss_db_sync(&s->db) != 0)
		return ss_db_sync(&s->db);
	return stage->prepare(stage->ctx, s->db.db, s->db.err, sizeof s->db.err);
}

static int s_find_recording(void *ctx, uint64_t session, int64_t *id)
{
	struct ss_sqlite_store *s = ctx;
	*id = 0;
	if (ss_db_flush(&s->db) != 0)
		return -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db.db, "SELECT id FROM recordings WHERE session_id = ?", -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, (int64_t)session);
	if (sqlite3_step(st) == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (!*id && s->stage && s->stage->seed)
		return s->stage->seed(s->stage->ctx, s->db.db, session, id, s->db.err, sizeof s->db.err);
	return 0;
}

static int s_load_known(void *ctx, struct ss_model *m)
{
	struct ss_sqlite_store *s = ctx;
	sqlite3_stmt *st;
	int rc = 0;
	if (sqlite3_prepare_v2(s->db.db, "SELECT id, file, line, function FROM locations", -1, &st, NULL))
		return -1;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = ss_model_known_location(m, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_blob(st, 1),
					     (size_t)sqlite3_column_bytes(st, 1),
					     sqlite3_column_type(st, 1) == SQLITE_NULL, sqlite3_column_int64(st, 2),
					     (const char *)sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3),
					     sqlite3_column_type(st, 3) == SQLITE_NULL);
	sqlite3_finalize(st);
	if (rc || sqlite3_prepare_v2(s->db.db, "SELECT mapping_id, rel_pc, min(id), count(*) FROM frames"
				     " GROUP BY mapping_id, rel_pc", -1, &st, NULL))
		return -1;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = ss_model_known_frame(m, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
					  sqlite3_column_int64(st, 2), sqlite3_column_int(st, 3));
	sqlite3_finalize(st);
	if (rc || sqlite3_prepare_v2(s->db.db, "SELECT coalesce(parent_id, 0), frame_id, id FROM callsites", -1, &st,
				     NULL))
		return -1;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = ss_model_known_callsite(m, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
					     sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
	return rc;
}

/* ---- resuming a recording -------------------------------------------------------------- */

static int exec_fmt(struct ss_sqlite_store *s, const char *fmt, long long rid)
{
	char *sql = sqlite3_mprintf(fmt, rid, rid);
	int rc = sql ? ss_db_exec(&s->db, sql) : -1;
	sqlite3_free(sql);
	return rc;
}

/* Runs sql with ?1 = the recording, calling row() for each row until it fails. */
static int each_row(struct ss_sqlite_store *s, const char *sql, int64_t rid,
		    int (*row)(struct ss_model *m, sqlite3_stmt *st), struct ss_model *m)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(s->db.db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(s->db.err, sizeof s->db.err, "%s", sqlite3_errmsg(s->db.db));
		return -1;
	}
	sqlite3_bind_int64(st, 1, rid);
	int rc = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW)
		rc = row(m, st);
	sqlite3_finalize(st);
	return rc;
}

static int64_t col(sqlite3_stmt *st, int i)
{
	return sqlite3_column_int64(st, i);
}

static int row_thread(struct ss_model *m, sqlite3_stmt *st)
{
	bool sampler = sqlite3_column_type(st, 1) == SQLITE_NULL;
	return ss_model_restore_thread(m, col(st, 0), (uint64_t)col(st, 1), sampler, (uint64_t)col(st, 2), col(st, 3));
}

static int64_t col_n(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static int row_thread_state(struct ss_model *m, sqlite3_stmt *st)
{
	struct ss_thread_state t = {
		col(st, 0), sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : sqlite3_column_int(st, 1), col(st, 2),
		col_n(st, 3), col_n(st, 4) >= 0 || col_n(st, 5) >= 0, col_n(st, 4), col_n(st, 5),
	};
	return ss_model_restore_thread_state(m, &t);
}

static struct ss_text col_text(sqlite3_stmt *st, int i)
{
	const char *p = (const char *)sqlite3_column_text(st, i);
	return (struct ss_text){ p, p ? (size_t)sqlite3_column_bytes(st, i) : 0 };
}

static int row_span(struct ss_model *m, sqlite3_stmt *st)
{
	struct ss_open_span o = { col(st, 0), 0, col(st, 1), col_text(st, 2), (uint64_t)col(st, 3),
				  (uint64_t)col(st, 4), col_text(st, 5), col(st, 6) };
	return ss_model_restore_open_span(m, &o);
}

static int row_stall(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_open_stall(m, col(st, 0), col(st, 1), col(st, 2));
}

static int row_summary(struct ss_model *m, sqlite3_stmt *st)
{
	int level = -1;
	for (int l = 0; l < SS_SUMMARY_LEVELS; l++)
		if ((int64_t)ss_summary_level_ns[l] == col(st, 2))
			level = l;
	if (level < 0)
		return 0;
	struct ss_open_summary o = { 0, sqlite3_column_int(st, 1), level, col(st, 3), col(st, 4), col(st, 5),
				     col(st, 6), col(st, 7), col(st, 8), col(st, 9), sqlite3_column_int(st, 10) != 0 };
	return ss_model_restore_open_summary(m, col(st, 0), &o);
}

static int row_task(struct ss_model *m, sqlite3_stmt *st)
{
	struct ss_task_row t = { col(st, 0), 0, (uint64_t)col(st, 1), col(st, 2), col(st, 3), col(st, 4), 0, col(st, 5) };
	return ss_model_restore_task(m, &t);
}

static int row_ended(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_ended_task(m, (uint64_t)col(st, 0), col(st, 1), col(st, 2));
}

static int row_pending(struct ss_model *m, sqlite3_stmt *st)
{
	struct ss_pending_wake w = {
		.task_id = col(st, 2), .wake = { col(st, 2), col(st, 3), col(st, 4), col(st, 5), 0, -1 },
		.handle = col(st, 0), .wake_from = col(st, 6), .in_poll = sqlite3_column_int(st, 7) != 0,
	};
	return ss_model_restore_pending_wake(m, (uint64_t)col(st, 1), &w);
}

/* Each worker's last poll of recording ?1 when it is incomplete (open where
 * the previous import ended): read in its last chunk (poll_chunks.h). */
#define LAST_POLLS_OF(REC)                                                                        \
	"workers w JOIN polls p ON p.worker_id = w.id AND"                                         \
	SS_POLL_LAST_IDS("p.id", "w.id", SS_POLL_TS_MAX)                                \
	" WHERE w.recording_id = " REC " AND p.incomplete AND p.ts = (SELECT max(q.ts) FROM polls q" \
	" WHERE q.worker_id = w.id AND" SS_POLL_LAST_IDS("q.id", "w.id", SS_POLL_TS_MAX) ")"
#define LAST_POLLS LAST_POLLS_OF("?1")
#define LAST_POLLS_FMT LAST_POLLS_OF("%lld")

static int row_open_poll(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_open_poll(m, col(st, 0), col(st, 1), col(st, 2), col(st, 3), col(st, 4));
}

static int row_open_park(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_open_park(m, col(st, 0), col(st, 2), col_n(st, 3));
}

static int row_arch(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_arch(m, (const char *)sqlite3_column_text(st, 0));
}

static int row_mapping(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_restore_mapping(m, col(st, 0), (const char *)sqlite3_column_text(st, 1),
					(size_t)sqlite3_column_bytes(st, 1), (const char *)sqlite3_column_text(st, 2),
					col(st, 3), col(st, 5), col(st, 4));
}

static int row_known_frame(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_known_frame(m, col(st, 0), col(st, 1), col(st, 2), sqlite3_column_int(st, 3));
}

static int row_known_callsite(struct ss_model *m, sqlite3_stmt *st)
{
	return ss_model_known_callsite(m, col(st, 0), col(st, 1), col(st, 2));
}

/* Replays an existing recording's threads, workers, live and just-ended tasks,
 * pending wakes, open polls, parks, spans, stalls, CPU states, queue depths and
 * summary buckets into the model, then drops what it kept only as state: the
 * model writes those rows again where this import ends. */
static int s_resume(void *ctx, int64_t rid, struct ss_model *m)
{
	struct ss_sqlite_store *s = ctx;
	if (ss_db_flush(&s->db) != 0)
		return -1;
	int rc = each_row(s, "SELECT t.id, t.thread, t.tid, w.id FROM threads t LEFT JOIN workers w"
			  " ON w.thread_id = t.id WHERE t.recording_id = ?1", rid, row_thread, m);
	if (!rc)
		rc = each_row(s, "SELECT c.thread_id, c.cpu_state, c.cpu_since, c.cpu, c.queue_local, c.queue_global"
			      " FROM import_thread_state c JOIN threads t ON t.id = c.thread_id"
			      " WHERE t.recording_id = ?1", rid, row_thread_state, m);
	/* Spans still open, innermost last. */
	if (!rc)
		rc = each_row(s, "SELECT o.thread_id, o.ts, o.name, coalesce(o.span_id, 0), coalesce(o.parent_span_id, 0),"
			      " o.fields, coalesce(o.location_id, 0) FROM import_open_spans o JOIN threads t"
			      " ON t.id = o.thread_id WHERE t.recording_id = ?1 ORDER BY o.thread_id, o.depth", rid,
			      row_span, m);
	/* Stalls whose poll was still running: their end or further captures may
	 * come now. */
	if (!rc)
		rc = each_row(s, "SELECT s.thread_id, s.ts, s.id FROM stalls s JOIN threads t ON t.id = s.thread_id"
			      " WHERE t.recording_id = ?1 AND s.dur IS NULL", rid, row_stall, m);
	if (!rc)
		rc = each_row(s, "SELECT w.thread_id, o.source, o.bucket_ns, o.ts, o.starts, o.busy_ns, o.parked_ns,"
			      " o.offcpu_ns, o.polls, o.max_poll_ns, o.written FROM import_open_summary o"
			      " JOIN workers w ON w.id = o.worker_id WHERE w.recording_id = ?1", rid, row_summary, m);
	if (!rc)
		rc = each_row(s, "SELECT id, task, location_id, parent_task_id, spawn_ts, spawn_thread_id"
			      " FROM tasks WHERE recording_id = ?1 AND end_ts IS NULL", rid, row_task, m);
	if (!rc)
		rc = each_row(s, s->stage ? "SELECT task, task_id, end_ts FROM import_ended_tasks WHERE recording_id = ?1"
					    " ORDER BY end_ts"
					  : "SELECT task, id, end_ts FROM tasks WHERE recording_id = ?1 AND end_ts >="
					    " (SELECT min(end_ts) FROM import_ended_tasks WHERE recording_id = ?1)"
					    " ORDER BY end_ts, id",
			      rid, row_ended, m);
	/* Wakes that were waiting for a poll where the previous import ended. */
	if (!rc)
		rc = each_row(s, "SELECT p.wake_rowid, t.task, t.id, w.ts, w.waker_thread_id, w.waker_task_id,"
			      " p.wake_from, p.in_poll FROM import_pending_wakes p JOIN tasks t ON t.id = p.task_id"
			      " JOIN wakes w ON w.rowid = p.wake_rowid WHERE p.recording_id = ?1", rid, row_pending, m);
	/* The last poll and park of each thread, when incomplete, were open where
	 * the previous import ended: reopened (same poll id). */
	if (!rc)
		rc = each_row(s, "SELECT w.thread_id, p.id, p.ts, p.task_id, p.location_id FROM " LAST_POLLS, rid,
			      row_open_poll, m);
	if (!rc)
		rc = each_row(s, "SELECT w.thread_id, 0, p.ts, p.cpu_begin_ns FROM parks p"
			      " JOIN workers w ON w.id = p.worker_id WHERE w.recording_id = ?1 AND p.incomplete"
			      " AND p.ts = (SELECT max(ts) FROM parks q WHERE q.worker_id = p.worker_id)", rid,
			      row_open_park, m);
	if (!rc)
		rc = each_row(s, "SELECT arch FROM recordings WHERE id = ?1 AND arch IS NOT NULL", rid, row_arch, m);
	if (!rc)
		rc = each_row(s, "SELECT id, path, build_id, start, \"offset\", \"end\" FROM mappings"
			      " WHERE recording_id = ?1", rid, row_mapping, m);
	/* A staged recording's frames and stacks came in after load_known. */
	if (!rc && s->stage)
		rc = each_row(s, "SELECT f.mapping_id, f.rel_pc, min(f.id), count(*) FROM frames f JOIN mappings m"
			      " ON m.id = f.mapping_id WHERE m.recording_id = ?1"
			      " GROUP BY f.mapping_id, f.rel_pc", rid, row_known_frame, m);
	if (!rc && s->stage)
		rc = each_row(s, "SELECT coalesce(c.parent_id, 0), c.frame_id, c.id FROM callsites c JOIN frames f"
			      " ON f.id = c.frame_id JOIN mappings m ON m.id = f.mapping_id"
			      " WHERE m.recording_id = ?1", rid, row_known_callsite, m);
	if (rc)
		return -1;
	/* What was kept as state only: the model writes it again at the end. */
	long long r = (long long)rid;
	if (exec_fmt(s, "DELETE FROM import_open_summary WHERE worker_id IN"
		     " (SELECT id FROM workers WHERE recording_id = %lld)", r) ||
	    exec_fmt(s, "DELETE FROM span_cells WHERE shape & 1 AND EXISTS (SELECT 1 FROM import_open_spans o"
		     " JOIN threads t ON t.id = o.thread_id WHERE t.recording_id = %lld AND"
		     " o.thread_id = span_cells.thread_id AND o.ts = span_cells.ts AND o.depth = span_cells.shape >> 1)",
		     r) ||
	    exec_fmt(s, "DELETE FROM span_full WHERE incomplete AND EXISTS (SELECT 1 FROM import_open_spans o"
		     " JOIN threads t ON t.id = o.thread_id WHERE t.recording_id = %lld AND"
		     " o.thread_id = span_full.thread_id AND o.ts = span_full.ts AND o.depth = span_full.depth)", r) ||
	    exec_fmt(s, "DELETE FROM import_thread_state WHERE thread_id IN"
		     " (SELECT id FROM threads WHERE recording_id = %lld);"
		     "DELETE FROM import_open_spans WHERE thread_id IN"
		     " (SELECT id FROM threads WHERE recording_id = %lld)", r) ||
	    exec_fmt(s, "DELETE FROM import_ended_tasks WHERE recording_id = %lld", r) ||
	    exec_fmt(s, "DELETE FROM import_pending_wakes WHERE recording_id = %lld", r) ||
	    exec_fmt(s, "DELETE FROM polls WHERE id IN (SELECT p.id FROM " LAST_POLLS_FMT ");"
		     "DELETE FROM parks WHERE incomplete AND worker_id IN (SELECT id FROM workers WHERE"
		     " recording_id = %lld) AND ts = (SELECT max(ts) FROM parks q WHERE q.worker_id ="
		     " parks.worker_id);", r))
		return -1;
	return 0;
}

/* ---- the store ---------------------------------------------------------------------------- */

void ss_sqlite_sink(struct ss_sqlite_store *s, struct ss_sink *o)
{
	*o = (struct ss_sink){
		.ctx = s, .error = sink_error, .next_ids = s_next_ids, .find_recording = s_find_recording,
		.load_known = s_load_known, .resume = s_resume, .recording = s_recording, .recording_fill = s_recording_fill,
		.recording_span = s_recording_span, .recording_arch = s_recording_arch, .meta = s_meta, .thread = s_thread,
		.thread_name = s_thread_name, .thread_exit = s_thread_exit, .worker = s_worker,
		.worker_end = s_worker_end, .worker_runtime = s_worker_runtime, .location = s_location,
		.task = s_task, .task_end = s_task_end, .poll = s_poll, .park = s_park, .wake = s_wake,
		.wake_delete = s_wake_delete, .queue = s_queue, .mark = s_mark, .span = s_span, .cpu = s_cpu,
		.sample = s_sample, .loss = s_loss, .mapping = s_mapping, .frame = s_frame,
		.callsite = s_callsite, .stall = s_stall, .stall_end = s_stall_end,
		.stall_capture = s_stall_capture, .task_dump = s_task_dump, .other = s_other, .summary = s_summary,
		.pending_wake = s_pending_wake, .thread_state = s_thread_state, .open_span = s_open_span,
		.open_summary = s_open_summary, .ended_task = s_ended_task, .flush = s_flush,
	};
	if (s->stage && s->stage->wrap)
		s->stage->wrap(s->stage->ctx, o);
}

struct ss_sqlite_store *ss_sqlite_open(const char *path, bool threaded, char *err, size_t errlen)
{
	struct ss_sqlite_store *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (ss_db_open(&s->db, path) != 0 || ss_db_prepare(&s->db, threaded) != 0) {
		snprintf(err, errlen, "%s", s->db.err[0] ? s->db.err : "cannot open the database");
		ss_sqlite_close(s);
		return NULL;
	}
	sqlite3_stmt *st;
	s->first_new_sample = s->first_new_poll = 1;
	if (sqlite3_prepare_v2(s->db.db, "SELECT coalesce(max(rowid), 0) + 1 FROM samples", -1, &st, NULL) == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			s->first_new_sample = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	if (sqlite3_prepare_v2(s->db.db, "SELECT coalesce(max(id), 0) + 1 FROM polls", -1, &st, NULL) == 0) {
		if (sqlite3_step(st) == SQLITE_ROW)
			s->first_new_poll = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return s;
}

void ss_sqlite_close(struct ss_sqlite_store *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->st_wake);
	sqlite3_finalize(s->st_pending);
	sqlite3_finalize(s->st_thread_state);
	sqlite3_finalize(s->st_span);
	sqlite3_finalize(s->st_summary);
	sqlite3_finalize(s->st_ended);
	sqlite3_finalize(s->st_name_add);
	sqlite3_finalize(s->st_name_id);
	ss_name_cache_free(&s->names);
	ss_poll_chunks_free(&s->chunks);
	free(s->held);
	ss_db_close(&s->db);
	free(s);
}

int64_t ss_sqlite_first_new_sample(struct ss_sqlite_store *s)
{
	return s->first_new_sample;
}

/* ---- segments ------------------------------------------------------------------------------ */

bool ss_sqlite_segment_find(struct ss_sqlite_store *s, int64_t recording_id, uint64_t seq, struct ss_segment_info *row)
{
	sqlite3_stmt *st;
	bool found = false;
	if (ss_db_sync(&s->db) != 0)
		return false;
	if (sqlite3_prepare_v2(s->db.db, "SELECT id, blocks, sealed, events FROM segments"
			       " WHERE recording_id = ? AND seq = ?", -1, &st, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_int64(st, 1, recording_id);
	sqlite3_bind_int64(st, 2, (int64_t)seq);
	if (sqlite3_step(st) == SQLITE_ROW) {
		found = true;
		row->id = sqlite3_column_int64(st, 0);
		row->blocks = (uint64_t)sqlite3_column_int64(st, 1);
		row->sealed = sqlite3_column_int64(st, 2) != 0;
		row->events = (uint64_t)sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
	return found;
}

int ss_sqlite_segment_write(struct ss_sqlite_store *s, const struct ss_segment_info *g)
{
	sqlite3_stmt *st;
	if (ss_db_sync(&s->db) != 0)
		return -1;
	if (sqlite3_prepare_v2(s->db.db,
			       "INSERT OR REPLACE INTO segments(id, recording_id, file, seq, start_ts, end_ts, sealed,"
			       " blocks, bytes, intact_bytes, events, damage, damage_offset, damage_block,"
			       " damage_reason, note) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", -1, &st, NULL)) {
		snprintf(s->db.err, sizeof s->db.err, "%s", sqlite3_errmsg(s->db.db));
		return -1;
	}
	sqlite3_bind_int64(st, 1, g->id);
	sqlite3_bind_int64(st, 2, g->recording_id);
	sqlite3_bind_text(st, 3, g->file, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (int64_t)g->seq);
	sqlite3_bind_int64(st, 5, (int64_t)g->start_ts);
	if (g->end_ts)
		sqlite3_bind_int64(st, 6, (int64_t)g->end_ts);
	sqlite3_bind_int(st, 7, g->sealed);
	sqlite3_bind_int64(st, 8, (int64_t)g->blocks);
	sqlite3_bind_int64(st, 9, (int64_t)g->bytes);
	sqlite3_bind_int64(st, 10, (int64_t)g->intact_bytes);
	sqlite3_bind_int64(st, 11, (int64_t)g->events);
	if (g->damage) {
		sqlite3_bind_text(st, 12, g->damage, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 13, (int64_t)g->damage_offset);
		if (g->damage_block >= 0)
			sqlite3_bind_int64(st, 14, g->damage_block);
		sqlite3_bind_text(st, 15, g->damage_reason, -1, SQLITE_STATIC);
	}
	if (g->note && g->note[0])
		sqlite3_bind_text(st, 16, g->note, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
	if (rc)
		snprintf(s->db.err, sizeof s->db.err, "%s", sqlite3_errmsg(s->db.db));
	sqlite3_finalize(st);
	return rc;
}

/* ---- the end of an import -------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The poll of a sample's worker that runs at its ts: the last one begun at
 * or before it (a worker's poll ids grow with their start), if it has not
 * ended; read in the worker's chunks around ts (poll_chunks.h). */
#define SAMPLE_POLL                                                                                 \
	"(SELECT id FROM (SELECT id, ts, dur FROM polls p WHERE p.worker_id = samples.worker_id AND"   \
	" p.ts <= samples.ts AND" SS_POLL_LAST_IDS("p.id", "samples.worker_id", "samples.ts") \
	" ORDER BY p.id DESC LIMIT 1) WHERE ts + dur > samples.ts)"

/* Samples of an earlier import that no poll held then, inside a poll of this
 * one: a trace whose threads are written in batches (dial9) can bring a poll
 * after samples taken during it. Per worker, from its first new poll on, so
 * that the range scanned is what this import added (samples_by_thread). */
static int link_old_samples(struct ss_sqlite_store *s)
{
	sqlite3_stmt *w, *u;
	if (sqlite3_prepare_v2(s->db.db, "SELECT p.worker_id, k.thread_id, min(p.ts) FROM polls p"
			       " JOIN workers k ON k.id = p.worker_id WHERE p.id >= ?1 GROUP BY p.worker_id",
			       -1, &w, NULL) != SQLITE_OK)
		goto failed;
	if (sqlite3_prepare_v2(s->db.db, "UPDATE samples SET poll_id = " SAMPLE_POLL " WHERE thread_id = ?1 AND ts >= ?2 AND rowid < ?3"
			       " AND poll_id IS NULL AND worker_id = ?4", -1, &u, NULL) != SQLITE_OK) {
		sqlite3_finalize(w);
		goto failed;
	}
	sqlite3_bind_int64(w, 1, s->first_new_poll);
	int rc = 0;
	while (rc == 0 && sqlite3_step(w) == SQLITE_ROW) {
		sqlite3_bind_int64(u, 1, sqlite3_column_int64(w, 1));
		sqlite3_bind_int64(u, 2, sqlite3_column_int64(w, 2));
		sqlite3_bind_int64(u, 3, s->first_new_sample);
		sqlite3_bind_int64(u, 4, sqlite3_column_int64(w, 0));
		rc = sqlite3_step(u) == SQLITE_DONE ? 0 : -1;
		sqlite3_reset(u);
	}
	sqlite3_finalize(w);
	sqlite3_finalize(u);
	if (rc == 0)
		return 0;
failed:
	snprintf(s->db.err, sizeof s->db.err, "linking samples: %s", sqlite3_errmsg(s->db.db));
	return -1;
}

/* Indexes, then what needs them: each sample's poll and each stall's. Then
 * commit. */
int ss_sqlite_finish(struct ss_sqlite_store *s, void (*phase)(void *ctx, const char *what), void *ctx, bool timing,
		     FILE *log)
{
	double t0 = now_s();
	if (flush_held_queues(s) != 0 || grave_write(s) != 0 || ss_poll_chunks_flush(&s->chunks, &s->db) != 0 ||
	    ss_db_flush(&s->db) != 0)
		return -1;
	/* The rows still queued for the inserting thread when the model ended. */
	if (timing)
		fprintf(log, "import: last rows %.2f s\n", now_s() - t0);
	t0 = now_s();
	double c0 = cpu_s();
	if (phase)
		phase(ctx, "creating indexes");
	if (ss_db_create_indexes(&s->db) != 0)
		return -1;
	if (timing)
		fprintf(log, "import: indexes %.2f s, CPU %.2f s\n", now_s() - t0, cpu_s() - c0);
	t0 = now_s();
	if (phase)
		phase(ctx, "linking samples to polls");
	char *sql = sqlite3_mprintf(
		"UPDATE samples SET poll_id = " SAMPLE_POLL " WHERE rowid >= %lld AND worker_id IS NOT NULL",
		(long long)s->first_new_sample);
	int rc = sql ? ss_db_exec(&s->db, sql) : -1;
	sqlite3_free(sql);
	if (rc == 0 && s->first_new_sample > 1)
		rc = link_old_samples(s);
	if (rc == 0)
		rc = ss_db_exec(&s->db, "UPDATE stalls SET poll_id = (SELECT p.id FROM polls p WHERE"
				" p.worker_id = stalls.worker_id AND p.ts = stalls.ts AND"
				SS_POLL_LAST_IDS("p.id", "stalls.worker_id", "stalls.ts")
				") WHERE poll_id IS NULL");
	if (timing)
		fprintf(log, "import: links %.2f s\n", now_s() - t0);
	t0 = now_s();
	if (rc != 0 || ss_db_exec(&s->db, "COMMIT") != 0)
		return -1;
	if (timing)
		fprintf(log, "import: commit %.2f s\n", now_s() - t0);
	ss_db_exec(&s->db, "PRAGMA optimize");
	return 0;
}
