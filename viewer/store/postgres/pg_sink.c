/*
 * pg_sink.c - see pg_sink.h. Each streamed table has a buffer of COPY text
 * rows; a full one (CHUNK bytes) goes on a short queue to the sender thread,
 * which runs one `COPY table FROM STDIN` per buffer. The queue is bounded, so
 * when the server is the slower side the model waits for it instead of
 * holding the import in memory.
 */
#include "pg_sink.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "pg_tables.h"

#define CHUNK (1u << 20)
#define QMAX 6

/* The tables the sink writes itself. */
enum { T_POLL, T_PARK, T_WAKE, T_QUEUE, T_MARK, T_SPAN, T_CPU, T_TASK, T_SAMPLE, T_SUMMARY, T_N };
static const char *const tname[T_N] = { "polls", "parks", "wakes", "queue_depths", "marks", "spans",
					"cpu_intervals", "tasks", "samples", "worker_summaries" };

struct tbuf {
	const struct pg_table *t;
	struct ss_pg_buf b;
	uint64_t rows;
};

struct chunk {
	const struct pg_table *t;
	char *p;
	size_t n;
};

struct held_task {
	struct ss_task_row r;
	bool present;
};

struct held_sample {
	struct ss_sample_row r;
	bool has_kind;
	char kind[16];  /* "cpu", "offcpu" */
};

/* A poll as the samples are linked to it (model ids). */
struct poll_key {
	int64_t worker, ts, dur, id;
};

struct sum_slot {
	struct ss_summary_row r;
	bool used;
};

struct ss_pg_sink {
	struct ss_pg *p;
	struct ss_pg_ids *ids;
	struct ss_sink in;
	struct tbuf tb[T_N];

	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct chunk q[QMAX];
	size_t head, count;
	bool busy, stop, failed;
	char err[1024];

	struct held_task *tasks;
	size_t n_tasks, cap_tasks;
	struct held_sample *samples;
	size_t n_samples, cap_samples;
	struct poll_key *polls;
	size_t n_polls, cap_polls;
	struct sum_slot *sums;
	size_t n_sums, cap_sums; /* cap: a power of two */
};

/* ---- the sender ------------------------------------------------------------------ */

static void *sender(void *arg)
{
	struct ss_pg_sink *k = arg;
	pthread_mutex_lock(&k->mu);
	for (;;) {
		while (!k->count && !k->stop)
			pthread_cond_wait(&k->cv, &k->mu);
		if (!k->count)
			break;
		struct chunk c = k->q[k->head];
		k->busy = true;
		bool failed = k->failed;
		pthread_mutex_unlock(&k->mu);
		char err[sizeof k->err];
		int rc = failed ? 0 : ss_pg_copy_rows(k->p->main, c.t, c.t->name, c.p, c.n, err, sizeof err);
		free(c.p);
		pthread_mutex_lock(&k->mu);
		if (rc && !k->failed) {
			k->failed = true;
			memcpy(k->err, err, sizeof err);
		}
		k->head = (k->head + 1) % QMAX;
		k->count--;
		k->busy = false;
		pthread_cond_broadcast(&k->cv);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

/* Hands the buffer of table i to the sender. Returns 0, or -1 when sending
 * failed (then or before). */
static int send_buf(struct ss_pg_sink *k, int i)
{
	struct tbuf *tb = &k->tb[i];
	if (tb->b.oom) {
		snprintf(k->p->err, sizeof k->p->err, "out of memory");
		return -1;
	}
	if (k->ids->failed)
		return -1;
	if (!tb->b.n)
		return 0;
	pthread_mutex_lock(&k->mu);
	while (k->count == QMAX && !k->failed)
		pthread_cond_wait(&k->cv, &k->mu);
	bool failed = k->failed;
	if (!failed) {
		k->q[(k->head + k->count) % QMAX] = (struct chunk){ tb->t, tb->b.p, tb->b.n };
		k->count++;
		pthread_cond_broadcast(&k->cv);
		memset(&tb->b, 0, sizeof tb->b);
	} else {
		snprintf(k->p->err, sizeof k->p->err, "%s", k->err);
		tb->b.n = 0;
	}
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}

int ss_pg_sink_drain(struct ss_pg_sink *k)
{
	pthread_mutex_lock(&k->mu);
	while (k->count || k->busy)
		pthread_cond_wait(&k->cv, &k->mu);
	bool failed = k->failed;
	if (failed)
		snprintf(k->p->err, sizeof k->p->err, "%s", k->err);
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}

/* ---- rows in COPY's text format --------------------------------------------------- */

static inline void sep(struct ss_pg_buf *b)
{
	ss_pg_buf_ch(b, '\t');
}

static inline void null(struct ss_pg_buf *b)
{
	ss_pg_buf_put(b, "\\N", 2);
}

static inline void c_i(struct ss_pg_buf *b, int64_t v)
{
	ss_pg_buf_int(b, v);
}

/* 0: NULL */
static inline void c_z(struct ss_pg_buf *b, int64_t v)
{
	if (v)
		ss_pg_buf_int(b, v);
	else
		null(b);
}

/* < 0: NULL */
static inline void c_n(struct ss_pg_buf *b, int64_t v)
{
	if (v < 0)
		null(b);
	else
		ss_pg_buf_int(b, v);
}

static inline void c_id(struct ss_pg_sink *k, struct ss_pg_buf *b, int kind, int64_t v)
{
	ss_pg_buf_int(b, ss_pg_ids_map(k->ids, kind, v));
}

/* an id, 0: NULL */
static inline void c_idz(struct ss_pg_sink *k, struct ss_pg_buf *b, int kind, int64_t v)
{
	if (v)
		ss_pg_buf_int(b, ss_pg_ids_map(k->ids, kind, v));
	else
		null(b);
}

static inline void c_t(struct ss_pg_buf *b, struct ss_text t)
{
	if (t.p)
		ss_pg_buf_text(b, (const unsigned char *)t.p, t.n);
	else
		null(b);
}

static inline void c_s(struct ss_pg_buf *b, const char *s)
{
	if (s)
		ss_pg_buf_text(b, (const unsigned char *)s, strlen(s));
	else
		null(b);
}

/* The row of table i is complete. */
static inline int row_end(struct ss_pg_sink *k, int i)
{
	struct tbuf *tb = &k->tb[i];
	ss_pg_buf_ch(&tb->b, '\n');
	tb->rows++;
	if (tb->b.n < CHUNK && !tb->b.oom && !k->ids->failed)
		return 0;
	return send_buf(k, i);
}

/* ---- the rows sent as they come ------------------------------------------------------ */

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 1024;
	void *nv = realloc(*v, nc * size);
	if (!nv)
		return -1;
	*v = nv;
	*cap = nc;
	return 0;
}

static int oom(struct ss_pg_sink *k)
{
	snprintf(k->p->err, sizeof k->p->err, "out of memory");
	return -1;
}

static int k_poll(void *ctx, const struct ss_poll_row *x)
{
	struct ss_pg_sink *k = ctx;
	if (grow((void **)&k->polls, &k->cap_polls, k->n_polls, sizeof *k->polls) != 0)
		return oom(k);
	k->polls[k->n_polls++] = (struct poll_key){ x->worker_id, x->ts, x->dur, x->id };
	struct ss_pg_buf *b = &k->tb[T_POLL].b;
	c_id(k, b, ID_POLL, x->id), sep(b);
	c_id(k, b, ID_WORKER, x->worker_id), sep(b);
	c_idz(k, b, ID_TASK, x->task_id), sep(b);
	c_idz(k, b, ID_LOCATION, x->location_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_i(b, x->dur), sep(b);
	c_i(b, x->incomplete);
	return row_end(k, T_POLL);
}

static int k_park(void *ctx, const struct ss_park_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_PARK].b;
	c_id(k, b, ID_WORKER, x->worker_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_i(b, x->dur), sep(b);
	c_i(b, x->incomplete), sep(b);
	c_n(b, x->cpu_begin), sep(b);
	c_n(b, x->cpu_end), sep(b);
	c_n(b, x->sched_wait);
	return row_end(k, T_PARK);
}

static int k_wake(void *ctx, const struct ss_wake_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_WAKE].b;
	c_id(k, b, ID_TASK, x->task_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_idz(k, b, ID_THREAD, x->waker_thread_id), sep(b);
	c_idz(k, b, ID_TASK, x->waker_task_id), sep(b);
	c_idz(k, b, ID_POLL, x->poll_id), sep(b);
	c_n(b, x->delay);
	return row_end(k, T_WAKE);
}

static int k_queue(void *ctx, const struct ss_queue_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_QUEUE].b;
	c_id(k, b, ID_THREAD, x->thread_id), sep(b);
	c_idz(k, b, ID_WORKER, x->worker_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_n(b, x->local), sep(b);
	c_n(b, x->global);
	return row_end(k, T_QUEUE);
}

static int k_mark(void *ctx, const struct ss_mark_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_MARK].b;
	c_id(k, b, ID_THREAD, x->thread_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_t(b, x->name), sep(b);
	c_i(b, x->value);
	return row_end(k, T_MARK);
}

static int k_span(void *ctx, const struct ss_span_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_SPAN].b;
	c_id(k, b, ID_THREAD, x->thread_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_i(b, x->dur), sep(b);
	c_t(b, x->name), sep(b);
	c_i(b, x->depth), sep(b);
	c_i(b, x->incomplete), sep(b);
	c_z(b, (int64_t)x->span_id), sep(b);
	c_z(b, (int64_t)x->parent_span_id), sep(b);
	c_t(b, x->fields), sep(b);
	c_idz(k, b, ID_LOCATION, x->location_id);
	return row_end(k, T_SPAN);
}

static int k_cpu(void *ctx, const struct ss_cpu_row *x)
{
	struct ss_pg_sink *k = ctx;
	struct ss_pg_buf *b = &k->tb[T_CPU].b;
	c_id(k, b, ID_THREAD, x->thread_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_i(b, x->dur), sep(b);
	c_s(b, x->state), sep(b);
	c_n(b, x->cpu);
	return row_end(k, T_CPU);
}

/* ---- the rows held until the import ends ----------------------------------------------- */

/* An import's own task (its id at least the floor) is held, as it may end
 * later in the import; one the stage holds (resumed) is the stage's. */
static int k_task(void *ctx, const struct ss_task_row *x)
{
	struct ss_pg_sink *k = ctx;
	int64_t floor = k->ids->floor[ID_TASK];
	if (x->id < floor)
		return k->in.task(k->in.ctx, x);
	size_t i = (size_t)(x->id - floor);
	while (i >= k->cap_tasks) {
		size_t old = k->cap_tasks;
		if (grow((void **)&k->tasks, &k->cap_tasks, k->cap_tasks, sizeof *k->tasks) != 0)
			return oom(k);
		memset(k->tasks + old, 0, (k->cap_tasks - old) * sizeof *k->tasks);
	}
	k->tasks[i] = (struct held_task){ *x, true };
	if (i >= k->n_tasks)
		k->n_tasks = i + 1;
	return 0;
}

static int k_task_end(void *ctx, int64_t id, int64_t end_ts)
{
	struct ss_pg_sink *k = ctx;
	int64_t floor = k->ids->floor[ID_TASK];
	if (id >= floor && (size_t)(id - floor) < k->n_tasks && k->tasks[id - floor].present) {
		k->tasks[id - floor].r.end_ts = end_ts;
		return 0;
	}
	return k->in.task_end(k->in.ctx, id, end_ts);
}

static int k_sample(void *ctx, const struct ss_sample_row *x)
{
	struct ss_pg_sink *k = ctx;
	if (grow((void **)&k->samples, &k->cap_samples, k->n_samples, sizeof *k->samples) != 0)
		return oom(k);
	struct held_sample *s = &k->samples[k->n_samples++];
	s->r = *x;
	s->r.kind = NULL; /* the call's text: the copy is in s->kind */
	s->has_kind = x->kind != NULL;
	snprintf(s->kind, sizeof s->kind, "%s", x->kind ? x->kind : "");
	return 0;
}

static uint64_t sum_hash(int64_t bucket, int64_t worker, int64_t ts)
{
	uint64_t h = (uint64_t)bucket * 0x9e3779b97f4a7c15ull ^ (uint64_t)worker * 0xc2b2ae3d27d4eb4full ^ (uint64_t)ts;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

static struct sum_slot *sum_find(struct sum_slot *v, size_t cap, const struct ss_summary_row *x)
{
	size_t i = (size_t)sum_hash(x->bucket_ns, x->worker_id, x->ts) & (cap - 1);
	while (v[i].used && (v[i].r.bucket_ns != x->bucket_ns || v[i].r.worker_id != x->worker_id || v[i].r.ts != x->ts))
		i = (i + 1) & (cap - 1);
	return &v[i];
}

/* Additions to a bucket are added up here, as the SQLite store's upsert adds
 * them, so each bucket is one row of the COPY. */
static int k_summary(void *ctx, const struct ss_summary_row *x)
{
	struct ss_pg_sink *k = ctx;
	if (2 * (k->n_sums + 1) > k->cap_sums) {
		size_t nc = k->cap_sums ? k->cap_sums * 2 : 4096;
		struct sum_slot *nv = calloc(nc, sizeof *nv);
		if (!nv)
			return oom(k);
		for (size_t i = 0; i < k->cap_sums; i++)
			if (k->sums[i].used)
				*sum_find(nv, nc, &k->sums[i].r) = k->sums[i];
		free(k->sums);
		k->sums = nv;
		k->cap_sums = nc;
	}
	struct sum_slot *s = sum_find(k->sums, k->cap_sums, x);
	if (!s->used) {
		*s = (struct sum_slot){ *x, true };
		k->n_sums++;
		return 0;
	}
	s->r.busy_ns += x->busy_ns;
	s->r.parked_ns += x->parked_ns;
	s->r.offcpu_ns += x->offcpu_ns;
	s->r.polls += x->polls;
	if (x->max_poll_ns > s->r.max_poll_ns)
		s->r.max_poll_ns = x->max_poll_ns;
	return 0;
}

/* ---- what goes on to the stage ---------------------------------------------------------- */

static const char *k_error(void *ctx)
{
	struct ss_pg_sink *k = ctx;
	if (k->p->err[0])
		return k->p->err;
	return k->in.error(k->in.ctx);
}

/* A recording seen before is seeded on the main connection: the sender must be
 * done with it. */
static int k_find_recording(void *ctx, uint64_t session_id, int64_t *id)
{
	struct ss_pg_sink *k = ctx;
	if (ss_pg_sink_drain(k) != 0)
		return -1;
	return k->in.find_recording(k->in.ctx, session_id, id);
}

#define IN(k) ((struct ss_pg_sink *)(k))->in
#define FWD(name, ...) IN(ctx).name(IN(ctx).ctx, __VA_ARGS__)

static int f_next_ids(void *ctx, int64_t next[ID_COUNT]) { return FWD(next_ids, next); }
static int f_load_known(void *ctx, struct ss_model *m) { return FWD(load_known, m); }
static int f_resume(void *ctx, int64_t r, struct ss_model *m) { return FWD(resume, r, m); }
static int f_recording(void *ctx, const struct ss_recording_row *r) { return FWD(recording, r); }
static int f_recording_fill(void *ctx, const struct ss_recording_row *r) { return FWD(recording_fill, r); }
static int f_recording_span(void *ctx, int64_t id, int64_t a, int64_t b) { return FWD(recording_span, id, a, b); }
static int f_recording_arch(void *ctx, int64_t id, const char *a) { return FWD(recording_arch, id, a); }
static int f_meta(void *ctx, int64_t r, struct ss_text a, struct ss_text b) { return FWD(meta, r, a, b); }
static int f_thread(void *ctx, const struct ss_thread_row *r) { return FWD(thread, r); }
static int f_thread_name(void *ctx, int64_t id, struct ss_text n, uint64_t tid) { return FWD(thread_name, id, n, tid); }
static int f_thread_exit(void *ctx, int64_t id, int64_t ts) { return FWD(thread_exit, id, ts); }
static int f_worker(void *ctx, const struct ss_worker_row *r) { return FWD(worker, r); }
static int f_worker_end(void *ctx, int64_t id, int64_t ts) { return FWD(worker_end, id, ts); }
static int f_worker_runtime(void *ctx, int64_t id, struct ss_text rt, int64_t idx, int64_t ts)
{
	return FWD(worker_runtime, id, rt, idx, ts);
}
static int f_location(void *ctx, const struct ss_location_row *r) { return FWD(location, r); }
static int f_wake_delete(void *ctx, int64_t h) { return FWD(wake_delete, h); }
static int f_loss(void *ctx, const struct ss_loss_row *r) { return FWD(loss, r); }
static int f_mapping(void *ctx, const struct ss_mapping_row *r) { return FWD(mapping, r); }
static int f_frame(void *ctx, const struct ss_frame_row *r) { return FWD(frame, r); }
static int f_callsite(void *ctx, const struct ss_callsite_row *r) { return FWD(callsite, r); }
static int f_stall(void *ctx, const struct ss_stall_row *r) { return FWD(stall, r); }
static int f_stall_end(void *ctx, int64_t id, int64_t dur) { return FWD(stall_end, id, dur); }
static int f_stall_capture(void *ctx, const struct ss_stall_capture_row *r) { return FWD(stall_capture, r); }
static int f_task_dump(void *ctx, const struct ss_task_dump_row *r) { return FWD(task_dump, r); }
static int f_other(void *ctx, const struct ss_other_row *r) { return FWD(other, r); }
static int f_pending_wake(void *ctx, const struct ss_pending_wake *w) { return FWD(pending_wake, w); }
static int f_thread_state(void *ctx, const struct ss_thread_state *s) { return FWD(thread_state, s); }
static int f_open_span(void *ctx, const struct ss_open_span *s) { return FWD(open_span, s); }
static int f_open_summary(void *ctx, const struct ss_open_summary *s) { return FWD(open_summary, s); }
static int f_ended_task(void *ctx, const struct ss_ended_task *t) { return FWD(ended_task, t); }
static int f_flush(void *ctx) { return IN(ctx).flush(IN(ctx).ctx); }

void ss_pg_sink_wrap(struct ss_pg_sink *k, struct ss_sink *s)
{
	k->in = *s;
	*s = (struct ss_sink){
		.ctx = k, .error = k_error, .next_ids = f_next_ids, .find_recording = k_find_recording,
		.load_known = f_load_known, .resume = f_resume, .recording = f_recording,
		.recording_fill = f_recording_fill, .recording_span = f_recording_span,
		.recording_arch = f_recording_arch, .meta = f_meta, .thread = f_thread, .thread_name = f_thread_name,
		.thread_exit = f_thread_exit, .worker = f_worker, .worker_end = f_worker_end,
		.worker_runtime = f_worker_runtime, .location = f_location, .task = k_task, .task_end = k_task_end,
		.poll = k_poll, .park = k_park, .wake = k_wake, .wake_delete = f_wake_delete, .queue = k_queue,
		.mark = k_mark, .span = k_span, .cpu = k_cpu, .sample = k_sample, .loss = f_loss,
		.mapping = f_mapping, .frame = f_frame, .callsite = f_callsite, .stall = f_stall,
		.stall_end = f_stall_end, .stall_capture = f_stall_capture, .task_dump = f_task_dump,
		.other = f_other, .summary = k_summary, .pending_wake = f_pending_wake,
		.thread_state = f_thread_state, .open_span = f_open_span, .open_summary = f_open_summary,
		.ended_task = f_ended_task, .flush = f_flush,
	};
}

/* ---- where the import ends --------------------------------------------------------------- */

static int poll_cmp(const void *a, const void *b)
{
	const struct poll_key *x = a, *y = b;
	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The poll a sample of worker w at ts falls in, as the SQLite store links
 * them: the last poll of the worker starting at or before ts (of several at
 * one time, the highest id), if it has not ended by ts. 0: none. */
static int64_t poll_of(const struct ss_pg_sink *k, int64_t w, int64_t ts)
{
	size_t lo = 0, hi = k->n_polls; /* first entry after (w, ts, +inf) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct poll_key *p = &k->polls[mid];
		if (p->worker < w || (p->worker == w && p->ts <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	const struct poll_key *p = &k->polls[lo - 1];
	return p->worker == w && p->ts + p->dur > ts ? p->id : 0;
}

/* The polls the stage holds (a resumed recording's last ones) link samples too. */
static int stage_polls(struct ss_pg_sink *k, sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT worker_id, ts, dur, id FROM polls", -1, &st, NULL) != SQLITE_OK) {
		snprintf(k->p->err, sizeof k->p->err, "staging polls: %s", sqlite3_errmsg(db));
		return -1;
	}
	int rc = 0;
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		if (grow((void **)&k->polls, &k->cap_polls, k->n_polls, sizeof *k->polls) != 0) {
			rc = oom(k);
			break;
		}
		k->polls[k->n_polls++] = (struct poll_key){ sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
							    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3) };
	}
	sqlite3_finalize(st);
	return rc;
}

static int send_tasks(struct ss_pg_sink *k)
{
	struct ss_pg_buf *b = &k->tb[T_TASK].b;
	for (size_t i = 0; i < k->n_tasks; i++) {
		if (!k->tasks[i].present)
			continue;
		const struct ss_task_row *x = &k->tasks[i].r;
		c_id(k, b, ID_TASK, x->id), sep(b);
		c_id(k, b, ID_RECORDING, x->recording_id), sep(b);
		c_i(b, (int64_t)x->task), sep(b);
		c_idz(k, b, ID_LOCATION, x->location_id), sep(b);
		c_idz(k, b, ID_TASK, x->parent_task_id), sep(b);
		c_z(b, x->spawn_ts), sep(b);
		c_z(b, x->end_ts), sep(b);
		c_idz(k, b, ID_THREAD, x->spawn_thread_id);
		if (row_end(k, T_TASK) != 0)
			return -1;
	}
	return send_buf(k, T_TASK);
}

static int send_samples(struct ss_pg_sink *k)
{
	struct ss_pg_buf *b = &k->tb[T_SAMPLE].b;
	for (size_t i = 0; i < k->n_samples; i++) {
		const struct held_sample *h = &k->samples[i];
		const struct ss_sample_row *x = &h->r;
		c_i(b, x->ts), sep(b);
		c_id(k, b, ID_THREAD, x->thread_id), sep(b);
		c_idz(k, b, ID_WORKER, x->worker_id), sep(b);
		c_idz(k, b, ID_POLL, x->worker_id ? poll_of(k, x->worker_id, x->ts) : 0), sep(b);
		c_idz(k, b, ID_CALLSITE, x->callsite_id), sep(b);
		c_i(b, x->weight), sep(b);
		c_s(b, h->has_kind ? h->kind : NULL), sep(b);
		c_n(b, x->cpu);
		if (row_end(k, T_SAMPLE) != 0)
			return -1;
	}
	return send_buf(k, T_SAMPLE);
}

static void summary_row(struct ss_pg_sink *k, struct ss_pg_buf *b, const struct ss_summary_row *x)
{
	c_i(b, x->bucket_ns), sep(b);
	c_id(k, b, ID_WORKER, x->worker_id), sep(b);
	c_i(b, x->ts), sep(b);
	c_i(b, x->busy_ns), sep(b);
	c_i(b, x->parked_ns), sep(b);
	c_i(b, x->offcpu_ns), sep(b);
	c_i(b, x->polls), sep(b);
	c_i(b, x->max_poll_ns);
	ss_pg_buf_ch(b, '\n');
}

static int sum_cmp(const void *a, const void *b)
{
	const struct ss_summary_row *x = &((const struct sum_slot *)a)->r, *y = &((const struct sum_slot *)b)->r;
	if (x->bucket_ns != y->bucket_ns)
		return x->bucket_ns < y->bucket_ns ? -1 : 1;
	if (x->worker_id != y->worker_id)
		return x->worker_id < y->worker_id ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Buckets of the import's own workers are new rows; those of a resumed
 * recording's workers may be in the database already and are added to it.
 * In key order: the server's index of the table takes them in order. */
static int send_summaries(struct ss_pg_sink *k, uint64_t *rows)
{
	struct ss_pg_buf old = { 0 };
	uint64_t n_old = 0;
	int64_t floor = k->ids->floor[ID_WORKER];
	size_t n = 0;
	for (size_t i = 0; i < k->cap_sums; i++)
		if (k->sums[i].used)
			k->sums[n++] = k->sums[i];
	qsort(k->sums, n, sizeof *k->sums, sum_cmp);
	k->cap_sums = n; /* no longer a hash table */
	for (size_t i = 0; i < n; i++) {
		const struct sum_slot *s = &k->sums[i];
		if (s->r.worker_id < floor) {
			summary_row(k, &old, &s->r);
			n_old++;
			continue;
		}
		struct tbuf *tb = &k->tb[T_SUMMARY];
		summary_row(k, &tb->b, &s->r);
		tb->rows++;
		if (tb->b.n >= CHUNK && send_buf(k, T_SUMMARY) != 0) {
			ss_pg_buf_free(&old);
			return -1;
		}
	}
	int rc = send_buf(k, T_SUMMARY);
	if (old.oom)
		rc = oom(k);
	if (!rc && n_old)
		rc = ss_pg_sink_drain(k);
	if (!rc && n_old) {
		rc = ss_pg_exec(k->p, k->p->main, "CREATE TEMP TABLE IF NOT EXISTS stage_summaries"
				" (LIKE worker_summaries) ON COMMIT DELETE ROWS");
		if (!rc)
			rc = ss_pg_copy_rows(k->p->main, k->tb[T_SUMMARY].t, "stage_summaries", old.p, old.n, k->p->err,
					     sizeof k->p->err);
		if (!rc)
			rc = ss_pg_exec(k->p, k->p->main,
					"INSERT INTO worker_summaries SELECT * FROM stage_summaries"
					" ON CONFLICT (bucket_ns, worker_id, ts) DO UPDATE SET"
					" busy_ns = worker_summaries.busy_ns + excluded.busy_ns,"
					" parked_ns = worker_summaries.parked_ns + excluded.parked_ns,"
					" offcpu_ns = worker_summaries.offcpu_ns + excluded.offcpu_ns,"
					" polls = worker_summaries.polls + excluded.polls,"
					" max_poll_ns = greatest(worker_summaries.max_poll_ns, excluded.max_poll_ns);"
					" TRUNCATE stage_summaries");
		*rows += n_old;
	}
	ss_pg_buf_free(&old);
	return rc;
}

/* Samples of an earlier import that no poll held then, inside a poll of this
 * one (the poll's first record came in a later segment than the sample), as
 * the SQLite store links them: per worker of a resumed recording, from its
 * first new poll on; the import's own samples (its transaction's) are linked
 * already. The query reads the recording's workers and staged polls, which
 * the seed took out of the database and the importer puts back after
 * finish(): hence a call of its own, after that. */
int ss_pg_sink_link_old_samples(struct ss_pg_sink *k)
{
	int64_t wfloor = k->ids->floor[ID_WORKER], pfloor = k->ids->floor[ID_POLL];
	struct { int64_t worker, since; } w[1024]; /* a resumed recording's workers */
	size_t n = 0;
	for (size_t i = 0; i < k->n_polls; i++) {
		const struct poll_key *p = &k->polls[i];
		if (p->worker >= wfloor || p->id < pfloor)
			continue;
		size_t j = 0;
		while (j < n && w[j].worker != p->worker)
			j++;
		if (j == n) {
			if (n == sizeof w / sizeof w[0])
				continue;
			w[n++].worker = p->worker, w[j].since = p->ts;
		} else if (p->ts < w[j].since) {
			w[j].since = p->ts;
		}
	}
	for (size_t j = 0; j < n; j++) {
		char *sql = ss_pg_fmt("UPDATE samples s SET poll_id = (SELECT q.id FROM (SELECT p.id, p.ts, p.dur FROM"
				      " polls p WHERE p.worker_id = s.worker_id AND p.ts <= s.ts ORDER BY p.ts DESC,"
				      " p.id DESC LIMIT 1) q WHERE q.ts + q.dur > s.ts) WHERE s.thread_id = (SELECT"
				      " thread_id FROM workers WHERE id = %lld) AND s.ts >= %lld AND s.poll_id IS NULL"
				      " AND s.worker_id = %lld AND NOT (s.xmin = pg_current_xact_id()::xid)",
				      (long long)w[j].worker, (long long)w[j].since, (long long)w[j].worker);
		int rc = ss_pg_exec(k->p, k->p->main, sql);
		free(sql);
		if (rc)
			return -1;
	}
	return 0;
}

int ss_pg_sink_finish(struct ss_pg_sink *k, sqlite3 *stage, uint64_t *rows)
{
	int rc = 0;
	for (int i = 0; !rc && i < T_N; i++)
		rc = send_buf(k, i);
	if (!rc && k->n_samples) {
		rc = stage_polls(k, stage);
		if (!rc)
			qsort(k->polls, k->n_polls, sizeof *k->polls, poll_cmp);
	}
	if (!rc)
		rc = send_tasks(k);
	if (!rc)
		rc = send_samples(k);
	if (!rc)
		rc = send_summaries(k, rows);
	if (ss_pg_sink_drain(k) != 0)
		rc = -1;
	if (!rc && k->ids->failed)
		rc = -1;
	bool timing = getenv("STALLSCOPE_IMPORT_TIMING") != NULL;
	for (int i = 0; i < T_N; i++) {
		*rows += k->tb[i].rows;
		if (timing && k->tb[i].rows)
			fprintf(stderr, "import: streamed %s: %llu rows\n", tname[i], (unsigned long long)k->tb[i].rows);
	}
	return rc;
}

/* ---- the sink ------------------------------------------------------------------------------ */

struct ss_pg_sink *ss_pg_sink_new(struct ss_pg *p, struct ss_pg_ids *ids, char *err, size_t errlen)
{
	struct ss_pg_sink *k = calloc(1, sizeof *k);
	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->p = p;
	k->ids = ids;
	for (int i = 0; i < T_N; i++)
		k->tb[i].t = ss_pg_table(tname[i]);
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	if (pthread_create(&k->th, NULL, sender, k) != 0) {
		snprintf(err, errlen, "cannot start the thread that sends rows");
		pthread_mutex_destroy(&k->mu);
		pthread_cond_destroy(&k->cv);
		free(k);
		return NULL;
	}
	return k;
}

void ss_pg_sink_free(struct ss_pg_sink *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->failed = true; /* what is queued is dropped */
	k->stop = true;
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->th, NULL);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
	for (int i = 0; i < T_N; i++)
		ss_pg_buf_free(&k->tb[i].b);
	free(k->tasks);
	free(k->samples);
	free(k->polls);
	free(k->sums);
	free(k);
}
