/*
 * merge.c - see merge.h. Streams are FIFOs of fixed-size entries; a binary heap
 * over the streams' first entries picks the earliest, so a release costs
 * O(log streams) per record, not O(log records). A stream's entries live in
 * chunks of MERGE_CHUNK from one pool shared by all streams: what the merge
 * holds is about what is buffered, whichever stream holds it (a ring per
 * stream, doubled as it fills, held up to twice the buffer in each of the
 * streams that took turns filling it: 128 MB for two threads of a dense
 * trace), and a chunk given back is used again while it is still in memory
 * (fresh pages cost a fault each).
 *
 * Chunks are cut from 2 MiB slabs, aligned and marked for transparent huge
 * pages: a dense trace cycles through the whole buffer (64 MB) in random
 * order across streams, where 4 KiB pages cost a fault each at first touch
 * (expensive in this VM) and a TLB miss at most stores and loads.
 */
#include "merge.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>


struct ss_merge_entry {
	uint64_t key;      /* ordering time: the stream's running maximum */
	uint64_t ts;       /* the record's own time */
	uint64_t f[5];
	uint32_t seq;
	uint8_t type;
	uint8_t pad[3];
};

#define MERGE_CHUNK 1024u /* entries (64 KiB) */
#define CHUNK_BYTES (MERGE_CHUNK * sizeof(struct ss_merge_entry))
#define SLAB_BYTES ((size_t)2 << 20)
#define SLAB_CHUNKS (SLAB_BYTES / CHUNK_BYTES)

struct ss_merge_stream {
	uint64_t thread, tid;
	struct ss_merge_entry **cv; /* its chunks, oldest first */
	size_t ncv, capcv;
	size_t head, n;            /* the first entry is cv[0][head] */
	uint64_t max_key;
	size_t heap_pos;           /* index in m->heap + 1, 0 when not in it */
	/* The head entry's key and seq, kept here so that the heap's comparisons
	 * read the small stream array and not entries scattered over the buffer
	 * (a cache miss each in a dense trace). */
	uint64_t head_key;
	uint32_t head_seq;
	/* Its thread is not declared in the unit (ss_merge_declare), as of
	 * unit checked_unit: its events hold the floor (ss_merge_release_to).
	 * The pinned streams of a thread are a list (m->pinned: thread -> first
	 * + 1, next_pinned: the next + 1), so a declaration visits only them. */
	bool pinned;
	uint32_t checked_unit;
	uint32_t next_pinned;
};

/* The k-th entry of a stream (0: its head). */
static inline struct ss_merge_entry *entry_at(const struct ss_merge_stream *s, size_t k)
{
	size_t i = s->head + k;
	return &s->cv[i / MERGE_CHUNK][i % MERGE_CHUNK];
}

/* A chunk from the pool, else cut from the newest slab, else from a new one. */
static struct ss_merge_entry *chunk_get(struct ss_merge *m)
{
	if (m->npool)
		return m->pool[--m->npool];
	if (!m->nslabs || m->slab_used == SLAB_CHUNKS) {
		if (m->nslabs == m->capslabs) {
			size_t nc = m->capslabs ? m->capslabs * 2 : 8;
			char **ns = realloc(m->slabs, nc * sizeof *ns);
			if (!ns)
				return NULL;
			m->slabs = ns;
			m->capslabs = nc;
		}
		char *slab = aligned_alloc(SLAB_BYTES, SLAB_BYTES);
		if (!slab)
			return NULL;
		madvise(slab, SLAB_BYTES, MADV_HUGEPAGE); /* a hint: refused, 4 KiB pages serve */
		m->slabs[m->nslabs++] = slab;
		m->slab_used = 0;
	}
	return (struct ss_merge_entry *)(void *)(m->slabs[m->nslabs - 1] + m->slab_used++ * CHUNK_BYTES);
}

/* A chunk back to the pool (kept: the next one a stream needs). Without
 * memory for the pool's list the chunk stays unused until its slab is freed. */
static int chunk_put(struct ss_merge *m, struct ss_merge_entry *c)
{
	if (m->npool == m->cappool) {
		size_t nc = m->cappool ? m->cappool * 2 : 16;
		struct ss_merge_entry **np = realloc(m->pool, nc * sizeof *np);
		if (!np)
			return -1;
		m->pool = np;
		m->cappool = nc;
	}
	m->pool[m->npool++] = c;
	return 0;
}

/* Gives a stream's chunks to the pool (an empty stream keeps none). */
static void stream_release_chunks(struct ss_merge *m, struct ss_merge_stream *s)
{
	for (size_t i = 0; i < s->ncv; i++)
		chunk_put(m, s->cv[i]);
	free(s->cv);
	s->cv = NULL;
	s->ncv = s->capcv = s->head = 0;
}

enum { CLASS_HOOKS = 0, CLASS_SAMPLER = 1, CLASS_STALLS = 2 };

void ss_merge_init(struct ss_merge *m, int (*deliver)(void *ctx, const struct ss_event *e), void *ctx)
{
	memset(m, 0, sizeof *m);
	m->window_ns = SS_MERGE_WINDOW_NS;
	m->max_buffered = SS_MERGE_MAX_BUFFERED;
	m->deliver = deliver;
	m->ctx = ctx;
}

void ss_merge_free(struct ss_merge *m)
{
	for (size_t i = 0; i < m->n_streams; i++)
		free(m->streams[i].cv);
	for (size_t i = 0; i < m->nslabs; i++)
		free(m->slabs[i]);
	free(m->slabs);
	free(m->pool);
	free(m->streams);
	free(m->heap);
	free(m->arena);
	ss_hmap_free(&m->ids);
	ss_hmap_free(&m->declared);
	ss_hmap_free(&m->defines);
	ss_hmap_free(&m->pinned);
	int (*deliver)(void *, const struct ss_event *) = m->deliver;
	void *ctx = m->ctx;
	ss_merge_init(m, deliver, ctx);
}

/* ---- the heap of streams ----------------------------------------------------- */

static bool earlier(const struct ss_merge *m, uint32_t a, uint32_t b)
{
	const struct ss_merge_stream *x = &m->streams[a], *y = &m->streams[b];
	if (x->head_key != y->head_key)
		return x->head_key < y->head_key;
	return (int32_t)(x->head_seq - y->head_seq) < 0;
}

static void heap_set(struct ss_merge *m, size_t i, uint32_t s)
{
	m->heap[i] = s;
	m->streams[s].heap_pos = i + 1;
}

static void sift_up(struct ss_merge *m, size_t i)
{
	uint32_t s = m->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!earlier(m, s, m->heap[p]))
			break;
		heap_set(m, i, m->heap[p]);
		i = p;
	}
	heap_set(m, i, s);
}

static void sift_down(struct ss_merge *m, size_t i)
{
	uint32_t s = m->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= m->n_heap)
			break;
		if (c + 1 < m->n_heap && earlier(m, m->heap[c + 1], m->heap[c]))
			c++;
		if (!earlier(m, m->heap[c], s))
			break;
		heap_set(m, i, m->heap[c]);
		i = c;
	}
	heap_set(m, i, s);
}

/* ---- streams ------------------------------------------------------------------ */

static int stream_of(struct ss_merge *m, unsigned cls, uint64_t thread, uint64_t tid, uint32_t *out)
{
	/* tid fits 32 bits on Linux; a hostile larger one only shares a stream. */
	uint64_t b = (tid & ((1ull << 62) - 1)) | (uint64_t)cls << 62;
	uint64_t key = thread * 0x9E3779B97F4A7C15ull ^ b;
	if (m->n_streams && m->cached_key == key) {
		struct ss_merge_stream *c = &m->streams[m->cached_idx];
		if (c->thread == thread && c->tid == b) {
			*out = m->cached_idx;
			return 0;
		}
	}
	uint64_t v;
	if (ss_hmap_get(&m->ids, thread, b, &v)) {
		*out = (uint32_t)(v - 1);
	} else {
		if (m->n_streams == m->cap_streams) {
			size_t nc = m->cap_streams ? m->cap_streams * 2 : 16;
			struct ss_merge_stream *ns = realloc(m->streams, nc * sizeof *ns);
			if (!ns)
				return -1;
			m->streams = ns;
			uint32_t *nh = realloc(m->heap, nc * sizeof *nh);
			if (!nh)
				return -1;
			m->heap = nh;
			m->cap_streams = nc;
		}
		if (m->n_streams >= UINT32_MAX - 1 || ss_hmap_put(&m->ids, thread, b, m->n_streams + 1) != 0)
			return -1;
		m->streams[m->n_streams] = (struct ss_merge_stream){ .thread = thread, .tid = b,
								      .checked_unit = m->unit - 1 };
		*out = (uint32_t)m->n_streams++;
	}
	m->cached_key = key;
	m->cached_idx = *out;
	return 0;
}

static struct ss_merge_entry *stream_append(struct ss_merge *m, struct ss_merge_stream *s)
{
	if (s->head + s->n == s->ncv * MERGE_CHUNK) {
		if (s->ncv == s->capcv) {
			size_t nc = s->capcv ? s->capcv * 2 : 4;
			struct ss_merge_entry **ncv = realloc(s->cv, nc * sizeof *ncv);
			if (!ncv)
				return NULL;
			s->cv = ncv;
			s->capcv = nc;
		}
		struct ss_merge_entry *c = chunk_get(m);
		if (!c)
			return NULL;
		s->cv[s->ncv++] = c;
	}
	return entry_at(s, s->n++);
}

/* Drops a stream's head; a chunk emptied goes back to the pool. */
static void stream_pop(struct ss_merge *m, struct ss_merge_stream *s)
{
	s->n--;
	if (++s->head < MERGE_CHUNK)
		return;
	chunk_put(m, s->cv[0]);
	memmove(s->cv, s->cv + 1, (s->ncv - 1) * sizeof *s->cv);
	s->ncv--;
	s->head = 0;
}

/* ---- copies of what records point to ---------------------------------------- */

static int arena_put(struct ss_merge *m, const void *p, size_t len, uint64_t *off)
{
	size_t at = (m->arena_len + 7) & ~(size_t)7;
	if (len > SIZE_MAX / 2 || at + len < at)
		return -1;
	if (at + len > m->arena_cap) {
		size_t nc = m->arena_cap ? m->arena_cap : 4096;
		while (nc < at + len)
			nc *= 2;
		char *na = realloc(m->arena, nc);
		if (!na)
			return -1;
		m->arena = na;
		m->arena_cap = nc;
	}
	if (len)
		memcpy(m->arena + at, p, len);
	m->arena_len = at + len;
	*off = at;
	return 0;
}

/* ---- records in and out ------------------------------------------------------- */

/* Fills the entry from e; returns the stream class. Hook events are streams
 * of their thread; the sampler's and the watchdog's, streams of (thread, tid). */
static int encode(struct ss_merge *m, const struct ss_event *ev, struct ss_merge_entry *e, unsigned *cls)
{
	memset(e, 0, sizeof *e);
	e->type = ev->type;
	e->ts = e->key = ev->ts;
	*cls = CLASS_HOOKS;
	switch (ev->type) {
	case SS_EV_POLL_BEGIN:
	case SS_EV_SPAWN:
		e->f[0] = ev->u.poll_begin.task;
		e->f[1] = ev->u.poll_begin.location;
		return 0;
	case SS_EV_TERMINATE:
		e->f[0] = ev->u.terminate.task;
		return 0;
	case SS_EV_WAKE:
		e->f[0] = ev->u.wake.task;
		e->f[1] = ev->u.wake.waker;
		return 0;
	case SS_EV_QUEUE:
		e->f[0] = ev->u.queue.local;
		e->f[1] = ev->u.queue.global;
		e->f[2] = ev->u.queue.unknown;
		return 0;
	case SS_EV_PARK:
		e->f[0] = ev->u.park.cpu_ns;
		e->f[1] = ev->u.park.flags;
		return 0;
	case SS_EV_UNPARK:
		e->f[0] = ev->u.unpark.cpu_ns;
		e->f[1] = ev->u.unpark.sched_wait_ns;
		e->f[2] = ev->u.unpark.flags;
		return 0;
	case SS_EV_MARK:
		e->f[0] = ev->u.mark.name;
		e->f[1] = (uint64_t)ev->u.mark.value;
		return 0;
	case SS_EV_SPAN_BEGIN:
	case SS_EV_SPAN_END:
		e->f[0] = ev->u.span.name;
		e->f[1] = ev->u.span.id;
		e->f[2] = ev->u.span.parent;
		e->f[3] = ev->u.span.fields;
		e->f[4] = ev->u.span.location;
		return 0;
	case SS_EV_WORKER_BEGIN:
		e->f[0] = ev->u.worker_begin.runtime;
		e->f[1] = ev->u.worker_begin.index;
		return 0;
	case SS_EV_LOSS:
		e->f[0] = ev->u.loss.count;
		e->f[1] = ev->u.loss.span;
		e->f[2] = ev->u.loss.reason;
		return 0;
	case SS_EV_POLL_END:
	case SS_EV_WORKER_END:
	case SS_EV_THREAD_EXIT:
		return 0;
	case SS_EV_SAMPLE:
		*cls = CLASS_SAMPLER;
		e->f[0] = ev->u.sample.cpu1;
		e->f[1] = ev->u.sample.weight;
		e->f[2] = ev->u.sample.kind;
		e->f[3] = ev->u.sample.stack;
		return 0;
	case SS_EV_SWITCH:
		*cls = CLASS_SAMPLER;
		e->f[0] = ev->u.switch_ev.cpu1;
		e->f[1] = ev->u.switch_ev.flags;
		return 0;
	case SS_EV_COMM:
		*cls = CLASS_SAMPLER;
		e->f[1] = ev->u.comm.len;
		return arena_put(m, ev->u.comm.name, ev->u.comm.len, &e->f[0]);
	case SS_EV_SAMPLER_LOSS:
		*cls = CLASS_SAMPLER;
		e->f[0] = ev->u.sampler_loss.span;
		e->f[1] = ev->u.sampler_loss.count;
		e->f[2] = ev->u.sampler_loss.reason;
		return 0;
	case SS_EV_STALL: {
		*cls = CLASS_STALLS;
		/* The whole event, then its reason. */
		uint64_t roff;
		if (arena_put(m, ev, sizeof *ev, &e->f[0]) != 0 ||
		    arena_put(m, ev->u.stall.reason, ev->u.stall.reason_len, &roff) != 0)
			return -1;
		e->f[1] = roff;
		return 0;
	}
	case SS_EV_STALL_END:
		*cls = CLASS_STALLS;
		e->f[0] = ev->u.stall_end.task;
		e->f[1] = ev->u.stall_end.poll_ts;
		e->f[2] = ev->u.stall_end.captures;
		return 0;
	case SS_EV_TASK_DUMP:
		/* At the yield, inside the task's poll: the task is alive there, and
		 * the dump was written long after it. */
		*cls = CLASS_STALLS;
		e->f[0] = ev->u.task_dump.task;
		e->f[1] = ev->u.task_dump.location;
		e->f[2] = ev->u.task_dump.idle_ns;
		e->f[3] = ev->u.task_dump.stack;
		return 0;
	default:
		return -1;
	}
}

static void decode(const struct ss_merge *m, const struct ss_merge_stream *s,
		   const struct ss_merge_entry *e, struct ss_event *ev)
{
	if (e->type == SS_EV_STALL) {
		memcpy(ev, m->arena + e->f[0], sizeof *ev);
		ev->u.stall.reason = m->arena + e->f[1];
		return;
	}
	static const struct ss_event zero; /* copied, not memset: see ss_decode_record */
	*ev = zero;
	ev->type = e->type;
	ev->ts = e->ts;
	ev->thread = s->thread;
	ev->tid = s->tid & ((1ull << 62) - 1);
	switch (e->type) {
	case SS_EV_POLL_BEGIN:
	case SS_EV_SPAWN:
		ev->u.poll_begin.task = e->f[0];
		ev->u.poll_begin.location = e->f[1];
		break;
	case SS_EV_TERMINATE:
		ev->u.terminate.task = e->f[0];
		break;
	case SS_EV_WAKE:
		ev->u.wake.task = e->f[0];
		ev->u.wake.waker = e->f[1];
		break;
	case SS_EV_QUEUE:
		ev->u.queue.local = e->f[0];
		ev->u.queue.global = e->f[1];
		ev->u.queue.unknown = e->f[2];
		break;
	case SS_EV_PARK:
		ev->u.park.cpu_ns = e->f[0];
		ev->u.park.flags = e->f[1];
		break;
	case SS_EV_UNPARK:
		ev->u.unpark.cpu_ns = e->f[0];
		ev->u.unpark.sched_wait_ns = e->f[1];
		ev->u.unpark.flags = e->f[2];
		break;
	case SS_EV_MARK:
		ev->u.mark.name = e->f[0];
		ev->u.mark.value = (int64_t)e->f[1];
		break;
	case SS_EV_SPAN_BEGIN:
	case SS_EV_SPAN_END:
		ev->u.span.name = e->f[0];
		ev->u.span.id = e->f[1];
		ev->u.span.parent = e->f[2];
		ev->u.span.fields = e->f[3];
		ev->u.span.location = e->f[4];
		break;
	case SS_EV_WORKER_BEGIN:
		ev->u.worker_begin.runtime = e->f[0];
		ev->u.worker_begin.index = e->f[1];
		break;
	case SS_EV_LOSS:
		ev->u.loss.count = e->f[0];
		ev->u.loss.span = e->f[1];
		ev->u.loss.reason = e->f[2];
		break;
	case SS_EV_SAMPLE:
		ev->u.sample.cpu1 = e->f[0];
		ev->u.sample.weight = e->f[1];
		ev->u.sample.kind = e->f[2];
		ev->u.sample.stack = e->f[3];
		break;
	case SS_EV_SWITCH:
		ev->u.switch_ev.cpu1 = e->f[0];
		ev->u.switch_ev.flags = e->f[1];
		break;
	case SS_EV_COMM:
		ev->u.comm.name = m->arena + e->f[0];
		ev->u.comm.len = (size_t)e->f[1];
		break;
	case SS_EV_SAMPLER_LOSS:
		ev->u.sampler_loss.span = e->f[0];
		ev->u.sampler_loss.count = e->f[1];
		ev->u.sampler_loss.reason = e->f[2];
		break;
	case SS_EV_STALL_END:
		ev->u.stall_end.task = e->f[0];
		ev->u.stall_end.poll_ts = e->f[1];
		ev->u.stall_end.captures = e->f[2];
		break;
	case SS_EV_TASK_DUMP:
		ev->u.task_dump.task = e->f[0];
		ev->u.task_dump.location = e->f[1];
		ev->u.task_dump.idle_ns = e->f[2];
		ev->u.task_dump.stack = e->f[3];
		break;
	default:
		break;
	}
}

/* Releases the earliest buffered record. */
static int release_one(struct ss_merge *m)
{
	uint32_t si = m->heap[0];
	struct ss_merge_stream *s = &m->streams[si];
	struct ss_merge_entry e = *entry_at(s, 0);
	stream_pop(m, s);
	m->buffered--;
	if (s->n) {
		const struct ss_merge_entry *h = entry_at(s, 0);
		s->head_key = h->key;
		s->head_seq = h->seq;
		sift_down(m, 0);
	} else {
		s->heap_pos = 0;
		if (--m->n_heap) {
			heap_set(m, 0, m->heap[m->n_heap]);
			sift_down(m, 0);
		}
	}
	m->released_key = e.key;
	m->released_any = true;
	struct ss_event ev;
	decode(m, s, &e, &ev);
	int rc = m->deliver(m->ctx, &ev);
	if (!m->buffered)
		m->arena_len = 0; /* nothing points into it any more */
	return rc;
}

/* Once per stream and unit: whether its thread's definition is still to
 * come. Without memory for the list, the stream is not pinned: its events go
 * by the floor as a declared thread's do (an order the file could have had). */
static void check_pinned(struct ss_merge *m, struct ss_merge_stream *s, uint32_t si)
{
	uint64_t v, first = 0;
	s->checked_unit = m->unit;
	s->pinned = s->thread && !ss_hmap_get(&m->declared, s->thread, 0, &v) &&
		    (!m->defines_known || ss_hmap_get(&m->defines, s->thread, 0, &v));
	if (!s->pinned)
		return;
	ss_hmap_get(&m->pinned, s->thread, 0, &first);
	if (ss_hmap_put(&m->pinned, s->thread, 0, si + 1) != 0) {
		s->pinned = false;
		return;
	}
	s->next_pinned = (uint32_t)first;
}

int ss_merge_push(struct ss_merge *m, const struct ss_event *ev)
{
	struct ss_merge_entry e;
	unsigned cls;
	uint32_t si;
	if (encode(m, ev, &e, &cls) != 0 ||
	    stream_of(m, cls, ev->thread, cls == CLASS_HOOKS ? 0 : ev->tid, &si) != 0)
		return -1;
	struct ss_merge_stream *s = &m->streams[si];
	if (s->checked_unit != m->unit)
		check_pinned(m, s, si);
	size_t at = s->n;
	if (cls == CLASS_STALLS) {
		/* The watchdog and the task-dump collector write in the order they
		 * noticed things, not in time order; they are few, so each goes to
		 * its place (within a bound: hostile input cannot make this
		 * quadratic). */
		for (size_t k = 0; at > 0 && k < 4096; k++, at--)
			if (entry_at(s, at - 1)->key <= e.key)
				break;
		if (at > 0 && entry_at(s, at - 1)->key > e.key) {
			at = s->n;
			e.key = s->max_key;
		}
	} else if (e.key < s->max_key) {
		/* File order within a thread's stream, whatever its timestamps say. */
		e.key = s->max_key;
	}
	if (e.key > s->max_key)
		s->max_key = e.key;
	if (m->released_any && e.key < m->released_key)
		m->late++;
	if (e.key > m->max_key)
		m->max_key = e.key;
	e.seq = m->seq++;
	if (!stream_append(m, s))
		return -1;
	for (size_t k = s->n - 1; k > at; k--)
		*entry_at(s, k) = *entry_at(s, k - 1);
	*entry_at(s, at) = e;
	if (at == 0) {
		s->head_key = e.key;
		s->head_seq = e.seq;
	}
	m->buffered++;
	if (!s->heap_pos) {
		heap_set(m, m->n_heap++, si);
		sift_up(m, m->n_heap - 1);
	} else if (at == 0) {
		sift_up(m, s->heap_pos - 1); /* a new, earlier head */
	}
	while (m->buffered > m->max_buffered) {
		int rc = release_one(m);
		if (rc)
			return rc;
	}
	return 0;
}

/* Releases the earliest record while its key is at most floor, and, where
 * its stream's thread is not declared (pinned), at most the window's mark
 * too: all after it wait with it. */
static int release_upto(struct ss_merge *m, uint64_t floor)
{
	uint64_t mark = m->max_key > m->window_ns ? m->max_key - m->window_ns : 0;
	while (m->n_heap) {
		const struct ss_merge_stream *s = &m->streams[m->heap[0]];
		if (s->head_key > floor || (s->pinned && s->head_key > mark))
			break;
		int rc = release_one(m);
		if (rc)
			return rc;
	}
	return 0;
}

int ss_merge_release(struct ss_merge *m)
{
	return release_upto(m, m->max_key > m->window_ns ? m->max_key - m->window_ns : 0);
}

int ss_merge_release_to(struct ss_merge *m, uint64_t floor)
{
	return release_upto(m, floor);
}

/* Its streams no longer hold the floor. */
static void unpin(struct ss_merge *m, uint64_t thread)
{
	uint64_t first;
	if (!ss_hmap_get(&m->pinned, thread, 0, &first))
		return;
	for (uint32_t i = (uint32_t)first; i; i = m->streams[i - 1].next_pinned)
		m->streams[i - 1].pinned = false;
	ss_hmap_del(&m->pinned, thread, 0);
}

void ss_merge_declare(struct ss_merge *m, uint64_t thread)
{
	uint64_t v;
	if (!thread || ss_hmap_get(&m->declared, thread, 0, &v))
		return;
	/* Without memory for the set, the thread's events keep waiting for the
	 * window: the order stays right. */
	if (ss_hmap_put(&m->declared, thread, 0, 1) != 0)
		return;
	unpin(m, thread);
}

struct undefined {
	const struct ss_merge *m;
	uint64_t *threads;
	size_t n;
};

static void undefined_cb(void *ctx, uint64_t thread, uint64_t b, uint64_t first)
{
	(void)b, (void)first;
	struct undefined *u = ctx;
	uint64_t v;
	if (!ss_hmap_get(&u->m->defines, thread, 0, &v))
		u->threads[u->n++] = thread;
}

void ss_merge_unit_defines(struct ss_merge *m, const uint64_t *threads, size_t n)
{
	ss_hmap_clear(&m->defines);
	for (size_t i = 0; i < n; i++)
		if (ss_hmap_put(&m->defines, threads[i], 0, 1) != 0) {
			/* Every thread not declared stays one the unit may define. */
			ss_hmap_clear(&m->defines);
			return;
		}
	m->defines_known = true;
	/* The streams pinned before the unit said, of a thread it does not
	 * define (the map cannot change while it is walked). */
	struct undefined u = { m, malloc((m->pinned.len ? m->pinned.len : 1) * sizeof *u.threads), 0 };
	if (!u.threads)
		return; /* they wait for the window: the order stays right */
	ss_hmap_foreach(&m->pinned, undefined_cb, &u);
	for (size_t i = 0; i < u.n; i++)
		unpin(m, u.threads[i]);
	free(u.threads);
}

int ss_merge_drain(struct ss_merge *m)
{
	while (m->n_heap) {
		int rc = release_one(m);
		if (rc)
			return rc;
	}
	/* The next segment starts afresh: its times need not follow these (another
	 * recording, or one imported before this one). */
	m->arena_len = 0;
	m->max_key = 0;
	m->released_any = false;
	for (size_t i = 0; i < m->n_streams; i++) {
		m->streams[i].max_key = 0;
		m->streams[i].pinned = false;
	}
	m->unit++;
	ss_hmap_clear(&m->declared);
	ss_hmap_clear(&m->pinned);
	ss_hmap_clear(&m->defines);
	m->defines_known = false;
	return 0;
}

static size_t slab_of(const struct ss_merge *m, const struct ss_merge_entry *c)
{
	for (size_t k = 0; k < m->nslabs; k++)
		if ((const char *)c >= m->slabs[k] && (const char *)c < m->slabs[k] + SLAB_BYTES)
			return k;
	return m->nslabs; /* not reached: every chunk is cut from a slab */
}

/* Frees the slabs none of whose chunks a stream holds; the pool keeps the
 * free chunks of the others. */
static void trim_slabs(struct ss_merge *m)
{
	size_t *nfree = calloc(m->nslabs + 1, sizeof *nfree);
	if (!nfree)
		return;
	for (size_t i = 0; i < m->npool; i++)
		nfree[slab_of(m, m->pool[i])]++;
	if (m->nslabs)
		nfree[m->nslabs - 1] += SLAB_CHUNKS - m->slab_used; /* never cut */
	size_t keep = 0;
	for (size_t i = 0; i < m->npool; i++)
		if (nfree[slab_of(m, m->pool[i])] != SLAB_CHUNKS)
			m->pool[keep++] = m->pool[i];
	m->npool = keep;
	bool newest_kept = m->nslabs && nfree[m->nslabs - 1] != SLAB_CHUNKS;
	size_t ns = 0;
	for (size_t k = 0; k < m->nslabs; k++) {
		if (nfree[k] == SLAB_CHUNKS)
			free(m->slabs[k]);
		else
			m->slabs[ns++] = m->slabs[k];
	}
	m->nslabs = ns;
	if (!newest_kept)
		m->slab_used = SLAB_CHUNKS; /* the newest left is cut whole: the next chunk takes a new slab */
	free(nfree);
}

void ss_merge_trim(struct ss_merge *m)
{
	for (size_t i = 0; i < m->n_streams; i++)
		if (!m->streams[i].n)
			stream_release_chunks(m, &m->streams[i]);
	trim_slabs(m);
	if (!m->npool) {
		free(m->pool);
		m->pool = NULL;
		m->cappool = 0;
	}
	if (!m->buffered) {
		free(m->arena);
		m->arena = NULL;
		m->arena_len = m->arena_cap = 0;
	}
}
