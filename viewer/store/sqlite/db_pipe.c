/*
 * db_pipe.c - rows travel from the importer to SQLite in chunks: each row is a
 * statement number and its (parameter, value) pairs, serialized into a chunk
 * buffer. A full chunk goes to a queue of at most PIPE_DEPTH chunks' bytes; the consumer
 * thread binds each row and steps it. Memory is bounded by the queue depth; order
 * is preserved because there is one queue and one consumer. ss_db_sync() drains
 * the queue before the producer touches the connection itself, so the connection
 * is never used by two threads at once (it is opened without SQLite's mutexes).
 *
 * Rows of the batched tables (db_batch.c) skip the serializing: the producer's
 * binds write them straight into the batch's buffer, and a full buffer travels
 * as one record of the chunk (a pointer), inserted at that point of the order;
 * the inserting thread gives the buffer back to be filled again (a few per
 * table, so memory stays bounded). Encoding each value into the chunk and
 * decoding it into the batch was ~7% of the inserting thread's CPU on the
 * steady recording (median of 6 interleaved rounds: 1.50 s against 1.61); the
 * model thread's binds now miss the cache where the chunk's did not, so its
 * CPU stayed within the noise.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db_pipe.h"

#define CHUNK_BYTES (256u << 10)
#define PIPE_DEPTH 8
/* Chunks queued at most: a chunk goes with every full batch (hand_batch), so
 * most hold a few rows; counting them against PIPE_DEPTH made the producer
 * sleep with little queued (~290 times on the steady recording at load 5).
 * More than the batch buffers of all tables (db_batch.c: up to 19 for each
 * of ten tables of small batches), so that a full batch never waits for
 * queue room behind others; the bytes queued stay bounded by PIPE_DEPTH. */
#define PIPE_CHUNKS_MAX 256

/* Value types (db_batch.c uses the same codes). */
enum { V_NULL, V_INT, V_TEXT };

struct ss_chunk {
	uint8_t *buf;
	size_t len, cap;
	struct ss_chunk *next;
};

/* Why a side of the pipe sleeps: the inserting thread for rows; the
 * producer for room in the queue, for an inserted buffer of a batched table,
 * or for everything to be inserted (ss_db_sync). */
enum wait_why { W_ROWS, W_QUEUE, W_BUFFER, W_SYNC, W_COUNT, W_NONE = W_COUNT };

struct ss_pipe {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, space;
	struct ss_chunk *head, *tail; /* queued */
	struct ss_chunk *free;
	int queued;
	size_t queued_bytes;
	bool busy, stop;
	/* What the producer sleeps for (W_NONE: it does not), and for W_BUFFER
	 * whose free list: the inserting thread wakes it only when that came true.
	 * Woken at every chunk and every buffer given back, it woke about twice
	 * per batch inserted to find the buffer it waited for still out. */
	enum wait_why want;
	struct ss_batch_rows **want_fl;
	/* STALLSCOPE_IMPORT_TIMING: how long each side slept for the other (under mu) */
	bool timing;
	double wait_s[W_COUNT];
	unsigned long waits[W_COUNT];
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* pthread_cond_wait, timed for STALLSCOPE_IMPORT_TIMING (q->mu held). */
static void wait_on(struct ss_pipe *q, pthread_cond_t *cv, enum wait_why why)
{
	if (why != W_ROWS)
		q->want = why;
	double t0 = q->timing ? mono_s() : 0;
	pthread_cond_wait(cv, &q->mu);
	if (q->timing) {
		q->wait_s[why] += mono_s() - t0;
		q->waits[why]++;
	}
	if (why != W_ROWS)
		q->want = W_NONE;
}

static bool queue_room(const struct ss_pipe *q)
{
	return q->queued < PIPE_CHUNKS_MAX && q->queued_bytes < (size_t)PIPE_DEPTH * CHUNK_BYTES;
}

static struct ss_chunk *chunk_new(void)
{
	struct ss_chunk *c = calloc(1, sizeof *c);
	if (c && !(c->buf = malloc(CHUNK_BYTES))) {
		free(c);
		return NULL;
	}
	if (c)
		c->cap = CHUNK_BYTES;
	return c;
}

static void chunk_free(struct ss_chunk *c)
{
	if (c) {
		free(c->buf);
		free(c);
	}
}

static void fail(struct ss_db *d, const char *msg)
{
	if (!d->failed)
		snprintf(d->err, sizeof d->err, "%s", msg);
	d->failed = true;
}

/* ---- consumer ------------------------------------------------------------- */

/* A chunk's row header with this value count is a batch to insert: the
 * header is followed by the pointer to its rows (struct ss_batch_rows). */
#define RUN_BATCH 0xffffu

static void batch_back(struct ss_db *d, struct ss_batch *b, struct ss_batch_rows *r);
static void hand_batch(struct ss_db *d, enum ss_stmt w);

int ss_db_flush(struct ss_db *d)
{
	for (int i = 0; i < ST_COUNT; i++)
		if (d->batch[i] && ss_batch_pending(d->batch[i]))
			hand_batch(d, (enum ss_stmt)i);
	return ss_db_sync(d);
}

/* Past a row's values, unused (after a failure). */
static size_t skip_values(const uint8_t *buf, size_t p, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		uint8_t type = buf[p + 1];
		p += 2;
		if (type == V_INT) {
			p += 8;
		} else if (type == V_TEXT) {
			uint32_t len;
			memcpy(&len, buf + p, 4);
			p += 4 + len;
		}
	}
	return p;
}

/* Every record is walked even after a failure: a batch's rows go back to
 * the producer, which may be waiting for them. */
static void run_chunk(struct ss_db *d, const struct ss_chunk *c)
{
	size_t p = 0;
	while (p + 4 <= c->len) {
		uint16_t w, n;
		memcpy(&w, c->buf + p, 2);
		memcpy(&n, c->buf + p + 2, 2);
		p += 4;
		if (n == RUN_BATCH) {
			struct ss_batch_rows *r;
			memcpy(&r, c->buf + p, sizeof r);
			p += sizeof r;
			if (!d->failed && ss_batch_run(d, d->batch[w], r) != 0)
				d->failed = true;
			batch_back(d, d->batch[w], r);
			continue;
		}
		if (d->failed) {
			p = skip_values(c->buf, p, n);
			continue;
		}
		sqlite3_stmt *s = d->st[w];
		for (uint16_t i = 0; i < n; i++) {
			uint8_t idx = c->buf[p], type = c->buf[p + 1];
			p += 2;
			if (type == V_INT) {
				int64_t v;
				memcpy(&v, c->buf + p, 8);
				p += 8;
				sqlite3_bind_int64(s, idx, v);
			} else if (type == V_TEXT) {
				uint32_t len;
				memcpy(&len, c->buf + p, 4);
				p += 4;
				sqlite3_bind_text(s, idx, (const char *)c->buf + p, (int)len, SQLITE_TRANSIENT);
				p += len;
			} else {
				sqlite3_bind_null(s, idx);
			}
		}
		int rc = sqlite3_step(s);
		sqlite3_reset(s);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW)
			fail(d, sqlite3_errmsg(d->db));
	}
}

static void *consumer(void *arg)
{
	struct ss_db *d = arg;
	struct ss_pipe *q = d->pipe;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		while (!q->head && !q->stop)
			wait_on(q, &q->work, W_ROWS);
		if (!q->head)
			break;
		struct ss_chunk *c = q->head;
		q->head = c->next;
		if (!q->head)
			q->tail = NULL;
		q->queued--;
		q->queued_bytes -= c->len;
		q->busy = true;
		if (q->want == W_QUEUE && queue_room(q))
			pthread_cond_signal(&q->space);
		pthread_mutex_unlock(&q->mu);
		run_chunk(d, c);
		c->len = 0;
		pthread_mutex_lock(&q->mu);
		c->next = q->free;
		q->free = c;
		q->busy = false;
		/* queue room came with the dequeue above, and was said there */
		if (q->want == W_SYNC && !q->head)
			pthread_cond_signal(&q->space);
	}
	pthread_mutex_unlock(&q->mu);
	if (q->timing) {
		struct timespec ts;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		fprintf(stderr, "import: inserting thread CPU %.2f s, slept for rows %.2f s (%lu times);"
			" the model's thread slept for queue room %.2f s (%lu), for a batch buffer %.2f s (%lu),"
			" for the last rows %.2f s (%lu)\n",
			(double)ts.tv_sec + (double)ts.tv_nsec / 1e9, q->wait_s[W_ROWS], q->waits[W_ROWS],
			q->wait_s[W_QUEUE], q->waits[W_QUEUE], q->wait_s[W_BUFFER], q->waits[W_BUFFER],
			q->wait_s[W_SYNC], q->waits[W_SYNC]);
	}
	return NULL;
}

/* ---- producer ------------------------------------------------------------- */

/* Hands the current chunk over and takes an empty one. */
static void submit(struct ss_db *d)
{
	struct ss_chunk *c = d->cur;
	if (!c || c->len == 0)
		return;
	struct ss_pipe *q = d->pipe;
	if (!q) {
		run_chunk(d, c);
		c->len = 0;
		return;
	}
	pthread_mutex_lock(&q->mu);
	while (!queue_room(q))
		wait_on(q, &q->space, W_QUEUE);
	c->next = NULL;
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	q->queued++;
	q->queued_bytes += c->len;
	pthread_cond_signal(&q->work);
	struct ss_chunk *n = q->free;
	if (n)
		q->free = n->next;
	pthread_mutex_unlock(&q->mu);
	d->cur = n ? n : chunk_new();
	if (!d->cur)
		fail(d, "out of memory");
}

int ss_db_sync(struct ss_db *d)
{
	submit(d);
	struct ss_pipe *q = d->pipe;
	if (q) {
		pthread_mutex_lock(&q->mu);
		while (q->head || q->busy)
			wait_on(q, &q->space, W_SYNC);
		pthread_mutex_unlock(&q->mu);
	}
	return d->failed ? -1 : 0;
}

static uint8_t *reserve_slow(struct ss_db *d, size_t n)
{
	struct ss_chunk *c = d->cur;
	if (!c)
		return NULL;
	/* Only a single huge value can outgrow a chunk: grow this one. */
	size_t nc = c->cap;
	while (c->len + n > nc)
		nc *= 2;
	uint8_t *nb = realloc(c->buf, nc);
	if (!nb) {
		fail(d, "out of memory");
		return NULL;
	}
	c->buf = nb;
	c->cap = nc;
	uint8_t *p = c->buf + c->len;
	c->len += n;
	return p;
}

static inline uint8_t *reserve(struct ss_db *d, size_t n)
{
	struct ss_chunk *c = d->cur;
	if (__builtin_expect(!c || c->len + n > c->cap, 0))
		return reserve_slow(d, n);
	uint8_t *p = c->buf + c->len;
	c->len += n;
	return p;
}

/* Inserted rows back to their batch, to be filled again. */
static void batch_back(struct ss_db *d, struct ss_batch *b, struct ss_batch_rows *r)
{
	struct ss_pipe *q = d->pipe;
	struct ss_batch_rows **fl = ss_batch_free_list(b);
	if (q)
		pthread_mutex_lock(&q->mu);
	r->next = *fl;
	*fl = r;
	if (q) {
		if (q->want == W_BUFFER && q->want_fl == fl)
			pthread_cond_signal(&q->space);
		pthread_mutex_unlock(&q->mu);
	}
}

/* The batch's filled rows go to the inserting thread (a record in the chunk,
 * in order with the other rows), and the chunk goes with them at once: kept
 * back until the producer ran out of buffers, it left the inserting thread
 * asleep while the producer filled two more batches of that table, and then
 * the producer asleep while the inserting thread caught up (steady recording,
 * STALLSCOPE_IMPORT_TIMING: each side slept ~3 s of an 8 s load on a busy
 * machine, 69 and 609 times). An inserted buffer is filled next. */
static void hand_batch(struct ss_db *d, enum ss_stmt w)
{
	struct ss_batch *b = d->batch[w];
	/* a nearly full chunk goes first, so the record below does not grow it */
	if (d->cur && d->cur->len > CHUNK_BYTES - 4096)
		submit(d);
	uint8_t *p = d->failed ? NULL : reserve(d, 4 + sizeof(struct ss_batch_rows *));
	if (!p) {
		/* failed: the rows are dropped, as every row after a failure */
		ss_batch_set_fill(b, ss_batch_take(b));
		return;
	}
	struct ss_batch_rows *r = ss_batch_take(b);
	uint16_t hw = (uint16_t)w, hn = RUN_BATCH;
	memcpy(p, &hw, 2);
	memcpy(p + 2, &hn, 2);
	memcpy(p + 4, &r, sizeof r);
	struct ss_pipe *q = d->pipe;
	struct ss_batch_rows **fl = ss_batch_free_list(b);
	submit(d); /* inline (no thread): inserts now, and the buffer is back at once */
	struct ss_batch_rows *n = NULL;
	if (q) {
		pthread_mutex_lock(&q->mu);
		if (!*fl) {
			/* made outside the lock (malloc may map memory) */
			pthread_mutex_unlock(&q->mu);
			n = ss_batch_more(b);
			pthread_mutex_lock(&q->mu);
		}
		q->want_fl = fl;
		while (!n && !*fl)
			wait_on(q, &q->space, W_BUFFER);
	}
	if (!n) {
		n = *fl;
		*fl = n->next;
	}
	if (q)
		pthread_mutex_unlock(&q->mu);
	ss_batch_set_fill(b, n);
}

struct ss_row *ss_row(struct ss_db *d, enum ss_stmt which)
{
	struct ss_row *r = &d->row;
	struct ss_batch *b = d->batch[which];
	if (b) {
		r->batch = b;
		r->ncols = ss_batch_ncols(b);
		r->v = ss_batch_row(b, &r->ty);
		return r;
	}
	r->batch = NULL;
	if (d->cur && d->cur->len > CHUNK_BYTES - 4096)
		submit(d);
	d->op_start = d->cur ? d->cur->len : 0;
	d->op_values = 0;
	uint8_t *p = reserve(d, 4);
	if (p) {
		uint16_t w = (uint16_t)which, n = 0;
		memcpy(p, &w, 2);
		memcpy(p + 2, &n, 2); /* a row never stepped carries no values */
	}
	return r;
}

void ss_bind_i(struct ss_row *r, int i, int64_t v)
{
	if (r->batch) {
		if ((unsigned)(i - 1) < (unsigned)r->ncols) {
			r->v[i - 1] = v;
			r->ty[i - 1] = V_INT;
		}
		return;
	}
	uint8_t *p = reserve(r->db, 10);
	if (!p)
		return;
	p[0] = (uint8_t)i;
	p[1] = V_INT;
	memcpy(p + 2, &v, 8);
	r->db->op_values++;
}

void ss_bind_null(struct ss_row *r, int i)
{
	if (r->batch) {
		if ((unsigned)(i - 1) < (unsigned)r->ncols)
			r->ty[i - 1] = V_NULL;
		return;
	}
	uint8_t *p = reserve(r->db, 2);
	if (!p)
		return;
	p[0] = (uint8_t)i;
	p[1] = V_NULL;
	r->db->op_values++;
}

void ss_bind_t(struct ss_row *r, int i, const char *s, size_t n)
{
	if (!s) {
		ss_bind_null(r, i);
		return;
	}
	if (n > 0x7fffffff)
		n = 0x7fffffff;
	if (r->batch) {
		if ((unsigned)(i - 1) >= (unsigned)r->ncols)
			return;
		if (ss_batch_text(r->batch, s, (uint32_t)n, &r->v[i - 1]) != 0)
			fail(r->db, "out of memory");
		else
			r->ty[i - 1] = V_TEXT;
		return;
	}
	uint8_t *p = reserve(r->db, 6 + n);
	if (!p)
		return;
	uint32_t len = (uint32_t)n;
	p[0] = (uint8_t)i;
	p[1] = V_TEXT;
	memcpy(p + 2, &len, 4);
	memcpy(p + 6, s, n);
	r->db->op_values++;
}

/* The row's value count goes into its header now that it is known; a
 * batch's row is kept (a row never stepped is dropped), and a full batch
 * handed over. */
int ss_db_step(struct ss_db *d, enum ss_stmt which)
{
	struct ss_row *r = &d->row;
	if (r->batch) {
		r->batch = NULL;
		if (ss_batch_commit(d->batch[which]))
			hand_batch(d, which);
		return d->failed ? -1 : 0;
	}
	if (d->cur && d->op_start + 4 <= d->cur->len)
		memcpy(d->cur->buf + d->op_start + 2, &d->op_values, 2);
	return d->failed ? -1 : 0;
}

int ss_db_pipe_start(struct ss_db *d, bool threaded)
{
	d->cur = chunk_new();
	if (!d->cur)
		return -1;
	if (!threaded)
		return 0;
	struct ss_pipe *q = calloc(1, sizeof *q);
	if (!q)
		return -1;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->work, NULL);
	pthread_cond_init(&q->space, NULL);
	q->timing = getenv("STALLSCOPE_IMPORT_TIMING") != NULL;
	q->want = W_NONE;
	d->pipe = q;
	if (pthread_create(&q->thread, NULL, consumer, d) != 0) {
		d->pipe = NULL;
		free(q);
	}
	return 0;
}

void ss_db_pipe_stop(struct ss_db *d)
{
	struct ss_pipe *q = d->pipe;
	if (q) {
		pthread_mutex_lock(&q->mu);
		q->stop = true;
		pthread_cond_signal(&q->work);
		pthread_mutex_unlock(&q->mu);
		pthread_join(q->thread, NULL);
		while (q->head) {
			struct ss_chunk *c = q->head;
			q->head = c->next;
			chunk_free(c);
		}
		while (q->free) {
			struct ss_chunk *c = q->free;
			q->free = c->next;
			chunk_free(c);
		}
		pthread_mutex_destroy(&q->mu);
		pthread_cond_destroy(&q->work);
		pthread_cond_destroy(&q->space);
		free(q);
		d->pipe = NULL;
	}
	chunk_free(d->cur);
	d->cur = NULL;
}
