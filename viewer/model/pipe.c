/*
 * pipe.c - see model_pipe.h. Commands are fixed-size (an event, or a
 * definition's numbers) with their bytes in the batch's own buffer as a run of
 * blobs (a length, or NULL, then the bytes padded to 8); pointers into it are
 * made only when the batch is replayed, since the buffer grows while it fills.
 * One queue, one producer, one consumer: the order is the producer's.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "model_pipe.h"
#include "model_private.h"

#define PIPE_BATCH 8192u  /* commands a batch holds (about 1 MB) */
#define PIPE_DEPTH 8      /* batches in all: one filling, the rest queued or replayed (a model thread
                           * that waits for a CPU on a busy machine does not stall the reading at once) */

enum { C_EVENT, C_LOCATION, C_THREAD_DEF, C_STACK, C_MAPPING, C_META, C_SKIP };

#define BLOB_NULL UINT64_MAX

struct pcmd {
	uint8_t kind;
	bool flag;        /* C_SKIP: skip; C_STACK: truncated */
	uint64_t data;    /* offset of the command's blobs in the batch's bytes */
	union {
		struct ss_event ev;
		struct ss_model_thread_def td;
		struct { uint64_t id, line; } loc;
		struct { uint64_t id, n, nkernel; } stack;
		struct { uint64_t start, end, pgoff; } map;
	} u;
};

struct batch {
	struct pcmd *cmd;
	size_t n;
	char *bytes;
	size_t blen, bcap;
	struct batch *next;
};

struct ss_model_pipe {
	struct ss_model *m;
	struct ss_source src;    /* the unit's, for the producer's thread only */
	int (*deliver)(void *ctx, const struct ss_event *e);
	void *deliver_ctx;
	bool skip;               /* the producer's: events of skipped blocks stay out */
	struct batch *cur;       /* the one the producer fills */
	pthread_mutex_t mu;
	pthread_cond_t ready, space;
	struct batch *qhead, *qtail, *free;
	bool closed;
	atomic_bool stop;        /* the model failed, or memory ran out */
	bool oom;
	int (*produce)(void *ctx, struct ss_model_pipe *p);
	void *ctx;
	int produce_rc;
	/* what the model's thread resolves while one command is replayed */
	unsigned rn;
	uint64_t rid[2];
	const char *rs[2];
	size_t rl[2];
};

/* ---- batches ------------------------------------------------------------------ */

static struct batch *batch_new(void)
{
	struct batch *b = calloc(1, sizeof *b);
	if (b && !(b->cmd = malloc(PIPE_BATCH * sizeof *b->cmd))) {
		free(b);
		return NULL;
	}
	return b;
}

static void batch_free(struct batch *b)
{
	if (b) {
		free(b->cmd);
		free(b->bytes);
		free(b);
	}
}

static void fail_oom(struct ss_model_pipe *p)
{
	p->oom = true;
	atomic_store(&p->stop, true);
}

/* The batch being filled joins the queue (p->mu held). */
static void enqueue_cur(struct ss_model_pipe *p)
{
	if (!p->cur)
		return;
	p->cur->next = NULL;
	if (p->qtail)
		p->qtail->next = p->cur;
	else
		p->qhead = p->cur;
	p->qtail = p->cur;
	p->cur = NULL;
	pthread_cond_signal(&p->ready);
}

/* Hands the filled batch over and takes an empty one (waits while every
 * batch is queued or being replayed). */
static void hand_over(struct ss_model_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	enqueue_cur(p);
	while (!p->free)
		pthread_cond_wait(&p->space, &p->mu);
	p->cur = p->free;
	p->free = p->cur->next;
	pthread_mutex_unlock(&p->mu);
	p->cur->n = 0;
	p->cur->blen = 0;
}

static struct pcmd *cmd_new(struct ss_model_pipe *p, uint8_t kind)
{
	if (atomic_load_explicit(&p->stop, memory_order_relaxed))
		return NULL;
	if (p->cur->n == PIPE_BATCH)
		hand_over(p);
	struct pcmd *c = &p->cur->cmd[p->cur->n++];
	c->kind = kind;
	c->flag = false;
	c->data = p->cur->blen;
	return c;
}

/* Appends a blob (NULL: SQL NULL / no string) to the current batch. */
static int blob(struct ss_model_pipe *p, const void *s, size_t len)
{
	struct batch *b = p->cur;
	size_t need = 8 + (s ? (len + 7) & ~(size_t)7 : 0);
	if (len > SIZE_MAX / 4 || b->blen + need < b->blen) {
		fail_oom(p);
		return -1;
	}
	if (b->blen + need > b->bcap) {
		size_t nc = b->bcap ? b->bcap : 65536;
		while (nc < b->blen + need)
			nc *= 2;
		char *nb = realloc(b->bytes, nc);
		if (!nb) {
			fail_oom(p);
			return -1;
		}
		b->bytes = nb;
		b->bcap = nc;
	}
	uint64_t l = s ? len : BLOB_NULL;
	memcpy(b->bytes + b->blen, &l, 8);
	if (s && len)
		memcpy(b->bytes + b->blen + 8, s, len);
	b->blen += need;
	return 0;
}

/* A string of the unit, resolved now (on the producer's thread). */
static int blob_string(struct ss_model_pipe *p, uint64_t id)
{
	size_t len = 0;
	const char *s = id && p->src.string ? p->src.string(p->src.ctx, id, &len) : NULL;
	return blob(p, s, s ? len : 0);
}

static const char *blob_get(const struct batch *b, uint64_t *off, size_t *len)
{
	uint64_t l;
	memcpy(&l, b->bytes + *off, 8);
	*off += 8;
	if (l == BLOB_NULL) {
		*len = 0;
		return NULL;
	}
	const char *s = b->bytes + *off;
	*off += (l + 7) & ~(uint64_t)7;
	*len = (size_t)l;
	return s;
}

/* ---- the producer's side ---------------------------------------------------------- */

bool ss_model_pipe_stopped(const struct ss_model_pipe *p)
{
	return atomic_load_explicit(&p->stop, memory_order_relaxed);
}

/* The merge's delivery, on the producer's thread: the event as the trackers
 * will see it, with what they will look up in the unit. */
static int pipe_deliver(void *ctx, const struct ss_event *e)
{
	struct ss_model_pipe *p = ctx;
	struct pcmd *c = cmd_new(p, C_EVENT);
	if (!c)
		return -1;
	c->u.ev = *e;
	switch (e->type) {
	case SS_EV_MARK:
		return blob_string(p, e->u.mark.name);
	case SS_EV_SPAN_BEGIN:
		return blob_string(p, e->u.span.name) || blob_string(p, e->u.span.fields) ? -1 : 0;
	case SS_EV_WORKER_BEGIN:
		return blob_string(p, e->u.worker_begin.runtime);
	case SS_EV_COMM:
		return blob(p, e->u.comm.name ? e->u.comm.name : "", e->u.comm.len);
	case SS_EV_STALL:
		return blob(p, e->u.stall.reason ? e->u.stall.reason : "", e->u.stall.reason_len);
	default:
		return 0;
	}
}

int ss_model_pipe_event(struct ss_model_pipe *p, const struct ss_event *ev)
{
	if (ss_model_pipe_stopped(p))
		return -1;
	if (p->skip)
		return 0;
	return ss_merge_push(&p->m->merge, ev);
}

int ss_model_pipe_release(struct ss_model_pipe *p)
{
	if (ss_model_pipe_stopped(p))
		return -1;
	return ss_merge_release(&p->m->merge);
}

int ss_model_pipe_release_to(struct ss_model_pipe *p, uint64_t floor)
{
	if (ss_model_pipe_stopped(p))
		return -1;
	return ss_merge_release_to(&p->m->merge, floor);
}

void ss_model_pipe_unit_defines(struct ss_model_pipe *p, const uint64_t *threads, size_t n)
{
	ss_merge_unit_defines(&p->m->merge, threads, n);
}

void ss_model_pipe_skip_events(struct ss_model_pipe *p, bool skip)
{
	p->skip = skip;
	struct pcmd *c = cmd_new(p, C_SKIP);
	if (c)
		c->flag = skip;
}

int ss_model_pipe_location(struct ss_model_pipe *p, uint64_t id, const char *file, size_t file_len, uint64_t line,
			   const char *function, size_t function_len)
{
	struct pcmd *c = cmd_new(p, C_LOCATION);
	if (!c)
		return -1;
	c->u.loc.id = id;
	c->u.loc.line = line;
	return blob(p, file, file_len) || blob(p, function, function_len) ? -1 : 0;
}

int ss_model_pipe_thread_def(struct ss_model_pipe *p, const struct ss_model_thread_def *d)
{
	struct pcmd *c = cmd_new(p, C_THREAD_DEF);
	if (!c)
		return -1;
	ss_merge_declare(&p->m->merge, d->thread); /* the merge is this thread's */
	c->u.td = *d;
	return blob(p, d->name, d->name_len) || blob_string(p, d->runtime) ? -1 : 0;
}

int ss_model_pipe_stack(struct ss_model_pipe *p, uint64_t id, const uint64_t *pcs, size_t n, size_t nkernel,
			bool truncated)
{
	struct pcmd *c = cmd_new(p, C_STACK);
	if (!c)
		return -1;
	c->flag = truncated;
	c->u.stack.id = id;
	c->u.stack.n = n;
	c->u.stack.nkernel = nkernel;
	return blob(p, pcs ? (const void *)pcs : "", n * sizeof *pcs);
}

int ss_model_pipe_mapping(struct ss_model_pipe *p, uint64_t start, uint64_t end, uint64_t pgoff, const char *path,
			  size_t path_len, const uint8_t *build_id, size_t build_id_len)
{
	struct pcmd *c = cmd_new(p, C_MAPPING);
	if (!c)
		return -1;
	c->u.map.start = start;
	c->u.map.end = end;
	c->u.map.pgoff = pgoff;
	return blob(p, path, path_len) || blob(p, build_id, build_id_len) ? -1 : 0;
}

int ss_model_pipe_meta(struct ss_model_pipe *p, const char *key, size_t key_len, const char *value,
		       size_t value_len)
{
	struct pcmd *c = cmd_new(p, C_META);
	if (!c)
		return -1;
	return blob(p, key, key_len) || blob(p, value, value_len) ? -1 : 0;
}

static void *producer_main(void *arg)
{
	struct ss_model_pipe *p = arg;
	p->produce_rc = p->produce(p->ctx, p);
	/* What the merge still holds, in order, as ss_model_segment_end would. */
	if (!ss_model_pipe_stopped(p))
		ss_merge_drain(&p->m->merge);
	pthread_mutex_lock(&p->mu);
	enqueue_cur(p);
	p->closed = true;
	pthread_cond_signal(&p->ready);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the model's side ---------------------------------------------------------------- */

static const char *pipe_string(void *ctx, uint64_t id, size_t *len)
{
	const struct ss_model_pipe *p = ctx;
	for (unsigned i = 0; i < p->rn; i++)
		if (p->rid[i] == id) {
			*len = p->rl[i];
			return p->rs[i];
		}
	return NULL;
}

static void resolve(struct ss_model_pipe *p, unsigned i, uint64_t id, const struct batch *b, uint64_t *off)
{
	p->rid[i] = id;
	p->rs[i] = blob_get(b, off, &p->rl[i]);
	p->rn = i + 1;
}

static void replay(struct ss_model_pipe *p, const struct batch *b, const struct pcmd *c)
{
	struct ss_model *m = p->m;
	uint64_t off = c->data;
	size_t l1, l2;
	const char *s1, *s2;
	p->rn = 0;
	switch (c->kind) {
	case C_EVENT: {
		struct ss_event e = c->u.ev;
		switch (e.type) {
		case SS_EV_MARK:
			resolve(p, 0, e.u.mark.name, b, &off);
			break;
		case SS_EV_SPAN_BEGIN:
			resolve(p, 0, e.u.span.name, b, &off);
			resolve(p, 1, e.u.span.fields, b, &off);
			break;
		case SS_EV_WORKER_BEGIN:
			resolve(p, 0, e.u.worker_begin.runtime, b, &off);
			break;
		case SS_EV_COMM:
			e.u.comm.name = blob_get(b, &off, &e.u.comm.len);
			break;
		case SS_EV_STALL:
			e.u.stall.reason = blob_get(b, &off, &e.u.stall.reason_len);
			break;
		default:
			break;
		}
		p->deliver(p->deliver_ctx, &e);
		break;
	}
	case C_LOCATION:
		s1 = blob_get(b, &off, &l1);
		s2 = blob_get(b, &off, &l2);
		ss_model_location(m, c->u.loc.id, s1, l1, c->u.loc.line, s2, l2);
		break;
	case C_THREAD_DEF: {
		struct ss_model_thread_def d = c->u.td;
		d.name = blob_get(b, &off, &d.name_len);
		resolve(p, 0, d.runtime, b, &off);
		ss_model_thread_def(m, &d);
		break;
	}
	case C_STACK: {
		s1 = blob_get(b, &off, &l1);
		ss_model_stack(m, c->u.stack.id, (const uint64_t *)(const void *)s1, c->u.stack.n, c->u.stack.nkernel,
			       c->flag);
		break;
	}
	case C_MAPPING:
		s1 = blob_get(b, &off, &l1);
		s2 = blob_get(b, &off, &l2);
		ss_model_mapping(m, c->u.map.start, c->u.map.end, c->u.map.pgoff, s1, l1, (const uint8_t *)s2, l2);
		break;
	case C_META:
		s1 = blob_get(b, &off, &l1);
		s2 = blob_get(b, &off, &l2);
		ss_model_meta(m, s1, l1, s2, l2);
		break;
	case C_SKIP:
		ss_model_skip_events(m, c->flag);
		break;
	default:
		break;
	}
}

/* Replays batches until the producer closes the pipe. After a failure the
 * rest is taken and dropped, so the producer never waits for space forever. */
static void consume(struct ss_model_pipe *p)
{
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->qhead && !p->closed)
			pthread_cond_wait(&p->ready, &p->mu);
		struct batch *b = p->qhead;
		if (b) {
			p->qhead = b->next;
			if (!p->qhead)
				p->qtail = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		if (!b)
			return;
		for (size_t i = 0; i < b->n && !p->m->failed; i++)
			replay(p, b, &b->cmd[i]);
		if (p->m->failed)
			atomic_store(&p->stop, true);
		pthread_mutex_lock(&p->mu);
		b->next = p->free;
		p->free = b;
		pthread_cond_signal(&p->space);
		pthread_mutex_unlock(&p->mu);
	}
}

static void pipe_free(struct ss_model_pipe *p)
{
	struct batch *lists[3] = { p->free, p->qhead, p->cur };
	for (int i = 0; i < 3; i++)
		for (struct batch *b = lists[i], *nb; b; b = nb) {
			nb = b->next;
			batch_free(b);
			if (i == 2)
				break; /* cur is a single batch */
		}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->ready);
	pthread_cond_destroy(&p->space);
	free(p);
}

int ss_model_pipe_run(struct ss_model *m, int (*produce)(void *ctx, struct ss_model_pipe *p), void *ctx,
		      bool *started)
{
	*started = false;
	if (m->failed || !m->rec)
		return -1;
	struct ss_model_pipe *p = calloc(1, sizeof *p);
	if (!p)
		return -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->ready, NULL);
	pthread_cond_init(&p->space, NULL);
	p->m = m;
	p->produce = produce;
	p->ctx = ctx;
	p->skip = m->skip_events;
	for (int i = 0; i < PIPE_DEPTH; i++) {
		struct batch *b = batch_new();
		if (!b) {
			pipe_free(p);
			return -1;
		}
		b->next = p->free;
		p->free = b;
	}
	p->cur = p->free;
	p->free = p->cur->next;
	p->cur->next = NULL;
	/* The merge now delivers into the pipe, and the trackers resolve strings
	 * from what travels with each command. */
	p->src = m->src;
	p->deliver = m->merge.deliver;
	p->deliver_ctx = m->merge.ctx;
	m->merge.deliver = pipe_deliver;
	m->merge.ctx = p;
	m->src = (struct ss_source){ p, pipe_string };
	m->merge_elsewhere = true;
	pthread_t th;
	if (pthread_create(&th, NULL, producer_main, p) != 0) {
		m->merge_elsewhere = false;
		m->merge.deliver = p->deliver;
		m->merge.ctx = p->deliver_ctx;
		m->src = p->src;
		pipe_free(p);
		return -1;
	}
	*started = true;
	consume(p);
	pthread_join(th, NULL);
	m->merge_elsewhere = false;
	m->merge.deliver = p->deliver;
	m->merge.ctx = p->deliver_ctx;
	m->src = p->src;
	if (p->oom && !m->failed) {
		if (!m->o.quiet)
			fprintf(m->log, "stallscope import: out of memory\n");
		m->failed = true;
	}
	int rc = m->failed ? -1 : p->produce_rc;
	pipe_free(p);
	return rc;
}
