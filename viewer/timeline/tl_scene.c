/*
 * tl_scene.c - fetching the visible window with level of detail (see
 * tl_scene.h for the rules) and hit testing on the result.
 */
#include "tl_scene.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examine.h"
#include "tl_db.h"

/* Rows read inside one pixel column before the query seeks to the next one. */
#define TL_DENSE_ROWS 4
/* Samples are drawn for worker lanes only below this many ns per pixel (at the
 * default 999 Hz that is about one sample per pixel); thread lanes always. */
#define TL_SAMPLE_MAX_NS_PER_PX 2000000.0

/* A summary bucket of 1 ms or more may be at most this many pixels wide to be
 * used, or, for a lane with more than TL_DENSE_POLLS_PER_PX polls per pixel in
 * the window, any level up to TL_SUMMARY_DENSE_PX (blurrier, but the frame
 * stays fast: reading a dense lane's rows costs more than the frame has). */
#define TL_SUMMARY_MAX_PX 1.5
#define TL_SUMMARY_DENSE_PX 4.0
#define TL_DENSE_POLLS_PER_PX 0.5
/* Below this bucket size polls are drawn unless the lane is dense. */
#define TL_SUMMARY_MIN_NS 1000000
/* The 10 ms level estimates a lane's polls in the window (it is always full). */
#define TL_ESTIMATE_BUCKET 10000000

#define GROW(arr, n, cap)                                                        \
	do {                                                                     \
		if ((n) == (cap)) {                                              \
			size_t nc_ = (cap) ? (cap) * 2 : 256;                    \
			void *p_ = realloc((arr), nc_ * sizeof *(arr));          \
			if (!p_)                                                 \
				return;                                          \
			(arr) = p_;                                              \
			(cap) = nc_;                                             \
		}                                                                \
	} while (0)

void tl_scene_init(struct tl_scene *sc)
{
	memset(sc, 0, sizeof *sc);
	sc->width = -1;
}

static void lane_clear(struct tl_lane_scene *ls)
{
	ls->fetched = ls->summary = false;
	ls->n_boxes = ls->n_parks = ls->n_cpu = ls->n_ticks = 0;
	ls->busy_ns = 0;
	ls->busy_share = 0;
}

void tl_scene_free(struct tl_scene *sc)
{
	for (size_t i = 0; i < sc->n_lanes; i++) {
		lane_clear(&sc->lanes[i]);
		free(sc->lanes[i].boxes);
		free(sc->lanes[i].parks);
		free(sc->lanes[i].cpu);
		free(sc->lanes[i].ticks);
		free(sc->lanes[i].cols);
	}
	free(sc->lanes);
	free(sc->acc);
	tl_scene_init(sc);
}

void tl_scene_invalidate(struct tl_scene *sc)
{
	sc->width = -1;
}

/* Time <-> plot x for one build (doubles: ns values exceed float precision). */
struct xf {
	int64_t t0, t1;
	double npp;
	int plot_w;
};

static double xf_x(const struct xf *xf, int64_t t)
{
	return (double)(t - xf->t0) / xf->npp;
}

static int64_t xf_t(const struct xf *xf, double x)
{
	return xf->t0 + (int64_t)ceil(x * xf->npp);
}

/* ---- polls ---- */

struct box_merge {
	struct tl_box pend;
	bool have;
};

static void box_push(struct tl_lane_scene *ls, const struct tl_box *b)
{
	GROW(ls->boxes, ls->n_boxes, ls->cap_boxes);
	ls->boxes[ls->n_boxes++] = *b;
}

static void box_flush(struct tl_lane_scene *ls, struct box_merge *m)
{
	if (m->have) {
		if (m->pend.x1 < m->pend.x0 + 1)
			m->pend.x1 = m->pend.x0 + 1;   /* a sub-pixel run is drawn 1 px wide */
		box_push(ls, &m->pend);
	}
	m->have = false;
}

static void box_add(struct tl_lane_scene *ls, struct box_merge *m, const struct xf *xf,
		    int64_t id, int64_t ts, int64_t dur, int64_t loc, int64_t task, bool incomplete)
{
	int64_t lo = ts > xf->t0 ? ts : xf->t0, hi = ts + dur < xf->t1 ? ts + dur : xf->t1;
	if (hi > lo)
		ls->busy_ns += hi - lo;
	struct tl_box b = {
		.x0 = (float)xf_x(xf, ts), .x1 = (float)xf_x(xf, ts + dur),
		.poll_id = id, .task_id = task, .location_id = loc, .dur = dur, .n = 1,
		.flags = incomplete ? TL_BOX_INCOMPLETE : 0,
	};
	if (b.x1 - b.x0 < 1) {
		/* Sub-pixel: fold into the run of sub-pixel polls it touches. */
		if (m->have && b.x0 - m->pend.x1 < 1) {
			struct tl_box *p = &m->pend;
			if (b.x1 > p->x1)
				p->x1 = b.x1;
			p->n++;
			p->flags |= TL_BOX_MERGED;
			if (dur > p->dur) {
				p->dur = dur;
				p->poll_id = id;
				p->task_id = task;
				p->location_id = loc;
			}
			return;
		}
		box_flush(ls, m);
		m->pend = b;
		m->have = true;
		return;
	}
	box_flush(ls, m);
	box_push(ls, &b);
}

/* After each row of a range query whose ?2 is the start time: once a pixel column
 * has TL_DENSE_ROWS rows, the rest of it is already one folded box, so the query
 * is restarted at the next column instead of reading them. */
static void dense_skip(struct tl_scene *sc, sqlite3_stmt *s, const struct xf *xf, int64_t ts,
		       int64_t dur, int *last_col, int *same)
{
	int col = (int)floor(xf_x(xf, ts + dur));
	if (col != *last_col) {
		*last_col = col;
		*same = 0;
		return;
	}
	if (++*same < TL_DENSE_ROWS)
		return;
	int64_t next = xf_t(xf, col + 1);
	if (next <= ts)
		next = ts + 1;
	sqlite3_reset(s);
	sqlite3_bind_int64(s, 2, next);
	sc->seeks++;
	*same = 0;
}

static void fetch_polls(struct tl_scene *sc, struct tl_db *db, struct tl_lane_scene *ls,
			int64_t worker, const struct xf *xf)
{
	struct box_merge m = { .have = false };
	sqlite3_stmt *s = tl_db_stmt(db, TL_POLL_PREV);
	sqlite3_bind_int64(s, 1, worker);
	sqlite3_bind_int64(s, 2, xf->t0);
	if (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 1), dur = tl_col_dur(s, 2);
		sc->rows++;
		if (ts + dur > xf->t0)
			box_add(ls, &m, xf, sqlite3_column_int64(s, 0), ts, dur,
				sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4),
				sqlite3_column_int(s, 5));
	}
	s = tl_db_stmt(db, TL_POLL_RANGE);
	sqlite3_bind_int64(s, 1, worker);
	sqlite3_bind_int64(s, 2, xf->t0);
	sqlite3_bind_int64(s, 3, xf->t1);
	int last_col = INT_MIN, same = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 1), dur = tl_col_dur(s, 2);
		sc->rows++;
		box_add(ls, &m, xf, sqlite3_column_int64(s, 0), ts, dur, sqlite3_column_int64(s, 3),
			sqlite3_column_int64(s, 4), sqlite3_column_int(s, 5));
		dense_skip(sc, s, xf, ts, dur, &last_col, &same);
	}
	box_flush(ls, &m);
}

/* ---- parks and CPU intervals: spans folded per pixel the same way ---- */

struct span_merge {
	struct tl_span pend;
	double weight[4];          /* ns per kind inside the pending run */
	bool have;
};

static void span_push(struct tl_span **arr, size_t *n, size_t *cap, const struct tl_span *sp)
{
	GROW(*arr, *n, *cap);
	(*arr)[(*n)++] = *sp;
}

static void span_flush(struct tl_span **arr, size_t *n, size_t *cap, struct span_merge *m)
{
	if (!m->have)
		return;
	if (m->pend.x1 < m->pend.x0 + 1)
		m->pend.x1 = m->pend.x0 + 1;
	/* A folded run shows the state that took most of its time. */
	int best = m->pend.kind;
	for (int k = 0; k < 4; k++)
		if (m->weight[k] > m->weight[best])
			best = k;
	m->pend.kind = (uint8_t)best;
	span_push(arr, n, cap, &m->pend);
	m->have = false;
}

static void span_add(struct tl_span **arr, size_t *n, size_t *cap, struct span_merge *m,
		     const struct xf *xf, int64_t ts, int64_t dur, int kind)
{
	struct tl_span sp = { (float)xf_x(xf, ts), (float)xf_x(xf, ts + dur), (uint8_t)kind };
	if (sp.x1 - sp.x0 < 1) {
		if (m->have && sp.x0 - m->pend.x1 < 1) {
			if (sp.x1 > m->pend.x1)
				m->pend.x1 = sp.x1;
			m->weight[kind] += (double)dur;
			return;
		}
		span_flush(arr, n, cap, m);
		m->pend = sp;
		memset(m->weight, 0, sizeof m->weight);
		m->weight[kind] = (double)dur;
		m->have = true;
		return;
	}
	/* Adjacent spans of the same kind join, so a long run of on-CPU slices
	 * is one node. */
	span_flush(arr, n, cap, m);
	if (*n && (*arr)[*n - 1].kind == sp.kind && sp.x0 - (*arr)[*n - 1].x1 < 0.5f) {
		(*arr)[*n - 1].x1 = sp.x1;
		return;
	}
	span_push(arr, n, cap, &sp);
}

static int cpu_kind(const unsigned char *state)
{
	if (!state)
		return TL_SPAN_ON_CPU;
	if (state[0] == 'b')
		return TL_SPAN_BLOCKED;
	if (state[0] == 'p')
		return TL_SPAN_PREEMPTED;
	return TL_SPAN_ON_CPU;
}

/* Parks (is_cpu false, by worker) or CPU intervals (by thread). */
static void fetch_spans(struct tl_scene *sc, struct tl_db *db, struct tl_lane_scene *ls,
			bool is_cpu, int64_t key, const struct xf *xf)
{
	struct tl_span **arr = is_cpu ? &ls->cpu : &ls->parks;
	size_t *n = is_cpu ? &ls->n_cpu : &ls->n_parks;
	size_t *cap = is_cpu ? &ls->cap_cpu : &ls->cap_parks;
	struct span_merge m = { .have = false };
	sqlite3_stmt *s = tl_db_stmt(db, is_cpu ? TL_CPU_PREV : TL_PARK_PREV);
	sqlite3_bind_int64(s, 1, key);
	sqlite3_bind_int64(s, 2, xf->t0);
	if (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 0), dur = tl_col_dur(s, 1);
		sc->rows++;
		if (ts + dur > xf->t0)
			span_add(arr, n, cap, &m, xf, ts, dur,
				 is_cpu ? cpu_kind(sqlite3_column_text(s, 2)) : TL_SPAN_PARK);
	}
	s = tl_db_stmt(db, is_cpu ? TL_CPU_RANGE : TL_PARK_RANGE);
	sqlite3_bind_int64(s, 1, key);
	sqlite3_bind_int64(s, 2, xf->t0);
	sqlite3_bind_int64(s, 3, xf->t1);
	int last_col = INT_MIN, same = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 0), dur = tl_col_dur(s, 1);
		sc->rows++;
		span_add(arr, n, cap, &m, xf, ts, dur,
			 is_cpu ? cpu_kind(sqlite3_column_text(s, 2)) : TL_SPAN_PARK);
		dense_skip(sc, s, xf, ts, dur, &last_col, &same);
	}
	span_flush(arr, n, cap, &m);
}

/* One tick per pixel column that has samples: after a sample, seek to the next
 * column (the query is answered from the index alone). */
static void fetch_samples(struct tl_scene *sc, struct tl_db *db, struct tl_lane_scene *ls,
			  int64_t thread, const struct xf *xf)
{
	sqlite3_stmt *s = tl_db_stmt(db, TL_SAMPLE_RANGE);
	sqlite3_bind_int64(s, 1, thread);
	sqlite3_bind_int64(s, 2, xf->t0);
	sqlite3_bind_int64(s, 3, xf->t1);
	int last_col = INT_MIN;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 0);
		sc->rows++;
		double x = xf_x(xf, ts);
		int col = (int)floor(x);
		if (col == last_col)
			continue;
		last_col = col;
		GROW(ls->ticks, ls->n_ticks, ls->cap_ticks);
		ls->ticks[ls->n_ticks++] = (float)x;
		/* If the next sample is likely in this column, seek past it. */
		int64_t next = xf_t(xf, col + 1);
		if (next > ts + 1 && xf->npp > 200000) {
			sqlite3_reset(s);
			sqlite3_bind_int64(s, 2, next);
			sc->seeks++;
		}
	}
}

/* Polls in the window from the 10 ms summaries: at most a few hundred rows. */
static double polls_estimate(struct tl_scene *sc, struct tl_db *db, int64_t worker, const struct xf *xf)
{
	sqlite3_stmt *s = tl_db_stmt(db, TL_SUMMARY);
	sqlite3_bind_int64(s, 1, TL_ESTIMATE_BUCKET);
	sqlite3_bind_int64(s, 2, worker);
	sqlite3_bind_int64(s, 3, xf->t0 - TL_ESTIMATE_BUCKET);
	sqlite3_bind_int64(s, 4, xf->t1);
	double n = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 0);
		/* Only the part of a bucket inside the window counts. */
		double lo = (double)(ts > xf->t0 ? ts : xf->t0);
		double hi = (double)(ts + TL_ESTIMATE_BUCKET < xf->t1 ? ts + TL_ESTIMATE_BUCKET : xf->t1);
		if (hi > lo)
			n += (double)sqlite3_column_int64(s, 4) * (hi - lo) / (double)TL_ESTIMATE_BUCKET;
		sc->rows++;
	}
	return n;
}

/* ---- zoomed out: summary buckets spread over pixel columns ---- */

/* *p holds at least n elements of size sz afterwards (its contents are not
 * kept); false when out of memory. */
static bool reserve(void **p, size_t *cap, size_t n, size_t sz)
{
	if (*cap >= n && *p)
		return true;
	void *q = realloc(*p, n * sz);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

/* The values of [ts, ts + len) spread over the columns it covers in proportion
 * to the overlap; its polls count in the first, its longest poll in all. */
#define ACC_N 4   /* busy, parked, off-CPU, off-CPU in polls */

static void spread(struct tl_lane_scene *ls, double *acc, const struct xf *xf, int64_t ts, int64_t len,
		   const double v[ACC_N], int64_t polls, int64_t maxp)
{
	double x0 = xf_x(xf, ts), x1 = xf_x(xf, ts + len);
	int c0 = (int)floor(x0), c1 = (int)ceil(x1);
	if (c0 < 0)
		c0 = 0;
	if (c1 > xf->plot_w)
		c1 = xf->plot_w;
	for (int c = c0; c < c1; c++) {
		double ov = fmin(x1, c + 1) - fmax(x0, c);
		if (ov <= 0)
			continue;
		double share = ov / (x1 - x0);
		for (int k = 0; k < ACC_N; k++)
			acc[(size_t)c * ACC_N + k] += v[k] * share;
		struct tl_col *col = &ls->cols[c];
		if (maxp > col->max_poll)
			col->max_poll = maxp;
		col->polls += (uint32_t)(c == c0 ? polls : 0);
	}
}

/* A bucket of the parent level of a sparse one: what its present children
 * leave over goes to the children that have no row. */
struct parent_bucket {
	int64_t ts;
	double v[3];
	double offpoll;        /* from the bucket's own busy, parked and off-CPU */
	int64_t polls, maxp;
	uint32_t present;      /* bit i: child i has a row */
};

static struct parent_bucket *fetch_parents(struct tl_scene *sc, struct tl_db *db, int64_t worker,
					   const struct xf *xf, int64_t parent, size_t *n)
{
	struct parent_bucket *pb = NULL;
	size_t cap = 0;
	*n = 0;
	sqlite3_stmt *s = tl_db_stmt(db, TL_SUMMARY);
	sqlite3_bind_int64(s, 1, parent);
	sqlite3_bind_int64(s, 2, worker);
	sqlite3_bind_int64(s, 3, xf->t0 - parent);
	sqlite3_bind_int64(s, 4, xf->t1);
	while (sqlite3_step(s) == SQLITE_ROW) {
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct parent_bucket *p = realloc(pb, nc * sizeof *p);
			if (!p)
				break;
			pb = p;
			cap = nc;
		}
		struct parent_bucket *b = &pb[(*n)++];
		b->ts = tl_col_time(s, 0);
		for (int k = 0; k < 3; k++)
			b->v[k] = (double)sqlite3_column_int64(s, 1 + k);
		b->offpoll = fmax(0, fmin(b->v[0], b->v[2] - b->v[1]));
		b->polls = sqlite3_column_int64(s, 4);
		b->maxp = tl_col_dur(s, 5);
		b->present = 0;
		sc->rows++;
	}
	return pb;
}

static void fetch_summary(struct tl_scene *sc, struct tl_db *db, struct tl_lane_scene *ls,
			  int64_t worker, const struct xf *xf, int64_t bucket, int64_t parent)
{
	/* Both buffers are kept from build to build: a zoomed-out frame would
	 * otherwise allocate and free a column array per lane, and the allocator
	 * hand the pages back and forth with the kernel. */
	size_t w = (size_t)xf->plot_w;
	if (!reserve((void **)&ls->cols, &ls->cap_cols, w, sizeof *ls->cols) ||
	    !reserve((void **)&sc->acc, &sc->cap_acc, w * ACC_N, sizeof *sc->acc))
		return;
	memset(ls->cols, 0, w * sizeof *ls->cols);
	memset(sc->acc, 0, w * ACC_N * sizeof *sc->acc);
	double *acc = sc->acc;
	ls->summary = true;
	size_t n_parents = 0, k = 0;
	struct parent_bucket *pb = parent ? fetch_parents(sc, db, worker, xf, parent, &n_parents) : NULL;
	sqlite3_stmt *s = tl_db_stmt(db, TL_SUMMARY);
	sqlite3_bind_int64(s, 1, bucket);
	sqlite3_bind_int64(s, 2, worker);
	sqlite3_bind_int64(s, 3, (parent ? xf->t0 - parent : xf->t0 - bucket));
	sqlite3_bind_int64(s, 4, xf->t1);
	while (sqlite3_step(s) == SQLITE_ROW) {
		int64_t ts = tl_col_time(s, 0);
		double v[ACC_N] = { (double)sqlite3_column_int64(s, 1), (double)sqlite3_column_int64(s, 2),
				    (double)sqlite3_column_int64(s, 3), 0 };
		if (!parent)
			v[3] = fmax(0, fmin(v[0], v[2] - v[1]));
		int64_t polls = sqlite3_column_int64(s, 4), maxp = tl_col_dur(s, 5);
		sc->rows++;
		spread(ls, acc, xf, ts, bucket, v, polls, maxp);
		/* Both are in time order: the parent holding ts is at or after k. */
		while (k < n_parents && pb[k].ts + parent <= ts)
			k++;
		if (k < n_parents && pb[k].ts <= ts) {
			struct parent_bucket *p = &pb[k];
			p->v[0] -= v[0];
			p->v[1] -= v[1];
			p->polls -= polls;
			p->present |= 1u << ((ts - p->ts) / bucket);
		}
	}
	/* A sparse level keeps no off-CPU time: its parent's is spread evenly;
	 * busy and parked time not in a child row goes to the children without
	 * one. */
	for (size_t i = 0; i < n_parents; i++) {
		struct parent_bucket *p = &pb[i];
		double off[ACC_N] = { 0, 0, p->v[2], p->offpoll };
		spread(ls, acc, xf, p->ts, parent, off, 0, 0);
		int slots = (int)(parent / bucket), missing = slots - __builtin_popcount(p->present);
		if (missing <= 0)
			continue;
		double rest[ACC_N] = { fmax(p->v[0], 0) / missing, fmax(p->v[1], 0) / missing, 0, 0 };
		int64_t polls = p->polls > 0 ? p->polls : 0;
		for (int j = 0; j < slots; j++) {
			if (p->present & (1u << j))
				continue;
			spread(ls, acc, xf, p->ts + j * bucket, bucket, rest, polls, rest[0] > 0 ? p->maxp : 0);
			polls = 0;
		}
	}
	free(pb);
	for (int c = 0; c < xf->plot_w; c++) {
		struct tl_col *col = &ls->cols[c];
		const double *a = &acc[(size_t)c * ACC_N];
		ls->busy_ns += (int64_t)a[0];
		col->busy = (float)fmin(1.0, a[0] / xf->npp);
		col->parked = (float)fmin(1.0, a[1] / xf->npp);
		col->offcpu = (float)fmin(1.0, a[2] / xf->npp);
		col->offpoll = (float)fmin(1.0, a[3] / xf->npp);
	}
}

/* The coarsest level no wider than max_px pixels and at least min_ns; 0 when
 * none. *parent is its parent level (0 for a full one). */
static int64_t pick_level(const struct tl_db *db, double npp, double max_px, int64_t min_ns, int64_t *parent)
{
	int64_t best = 0;
	*parent = 0;
	for (size_t i = 0; i < db->n_levels; i++)
		if (db->levels[i] >= min_ns && (double)db->levels[i] <= max_px * npp) {
			best = db->levels[i];
			*parent = db->level_parent[i];
		}
	return best;
}

/* A worker lane's blocked CPU spans split by its polls: blocked while a poll
 * runs stays TL_SPAN_BLOCKED, the rest (parked, between polls) becomes
 * TL_SPAN_IDLE_OFF. Both lists are in x order and the boxes do not overlap. */
static void split_blocked(struct tl_lane_scene *ls)
{
	size_t n = ls->n_cpu, b = 0;
	struct tl_span *in = malloc((n ? n : 1) * sizeof *in);
	if (!in)
		return;
	memcpy(in, ls->cpu, n * sizeof *in);
	ls->n_cpu = 0;
	for (size_t i = 0; i < n; i++) {
		struct tl_span sp = in[i];
		if (sp.kind != TL_SPAN_BLOCKED) {
			span_push(&ls->cpu, &ls->n_cpu, &ls->cap_cpu, &sp);
			continue;
		}
		float x = sp.x0;
		while (b < ls->n_boxes && ls->boxes[b].x1 <= x)
			b++;
		for (size_t k = b; x < sp.x1; k++) {
			/* Before the next box (or to the end): off CPU outside a poll. */
			float next = k < ls->n_boxes ? ls->boxes[k].x0 : sp.x1;
			if (next > x) {
				float e = next < sp.x1 ? next : sp.x1;
				struct tl_span o = { x, e, TL_SPAN_IDLE_OFF };
				span_push(&ls->cpu, &ls->n_cpu, &ls->cap_cpu, &o);
				x = e;
			}
			if (k >= ls->n_boxes || x >= sp.x1)
				break;
			float e = ls->boxes[k].x1 < sp.x1 ? ls->boxes[k].x1 : sp.x1;
			if (e > x) {
				struct tl_span o = { x, e, TL_SPAN_BLOCKED };
				span_push(&ls->cpu, &ls->n_cpu, &ls->cap_cpu, &o);
				x = e;
			}
		}
	}
	free(in);
}

/* Thread lanes have no polls: their blocked time is off CPU, not a task's. */
static void blocked_is_idle(struct tl_lane_scene *ls)
{
	for (size_t i = 0; i < ls->n_cpu; i++)
		if (ls->cpu[i].kind == TL_SPAN_BLOCKED)
			ls->cpu[i].kind = TL_SPAN_IDLE_OFF;
}

/* Culprits are asked for at most this long per build; the examiner caches
 * every answer, so the next build of a nearby view goes on from there. */
#define TL_CULPRIT_BUDGET_US 250000

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The culprit of every box that shows it: wide enough for a label, or any
 * long poll when polls are coloured by culprit. */
static void ask_culprits(struct tl_scene *sc, struct tl_db *db)
{
	sc->culprits_asked = 0;
	struct ss_examiner *x = NULL;
	int64_t until = 0;
	for (size_t i = 0; i < sc->n_lanes; i++) {
		struct tl_lane_scene *ls = &sc->lanes[i];
		if (!ls->fetched || ls->summary)
			continue;
		for (size_t k = 0; k < ls->n_boxes; k++) {
			struct tl_box *b = &ls->boxes[k];
			if (b->dur < TL_CULPRIT_MIN_NS || !b->poll_id ||
			    (!sc->culprits && (b->n != 1 || b->x1 - b->x0 < TL_LABEL_MIN_PX)))
				continue;
			if (!x) {
				x = tl_db_examiner(db);
				if (!x)
					return;
				until = now_us() + TL_CULPRIT_BUDGET_US;
			} else if (now_us() > until) {
				return;
			}
			b->culprit = ss_examiner_culprit(x, b->poll_id);
			sc->culprits_asked++;
		}
	}
}

void tl_scene_update(struct tl_scene *sc, struct tl_db *db, const struct tl_layout *l,
		     const struct tl_view *v)
{
	tl_db_arm(db, TL_FRAME_BUDGET_S);
	bool culprits = v->color == TL_COLOR_CULPRIT;
	if (sc->t0 == v->t0 && sc->t1 == v->t1 && sc->width == v->width &&
	    sc->height == v->height && sc->scroll_y == v->scroll_y && sc->n_lanes == db->n_lanes &&
	    sc->culprits == culprits)
		return;
	if (sc->n_lanes != db->n_lanes) {
		tl_scene_free(sc);
		sc->lanes = calloc(db->n_lanes ? db->n_lanes : 1, sizeof *sc->lanes);
		if (!sc->lanes)
			return;
		sc->n_lanes = db->n_lanes;
	}
	sc->t0 = v->t0;
	sc->t1 = v->t1;
	sc->width = v->width;
	sc->height = v->height;
	sc->scroll_y = v->scroll_y;
	sc->culprits = culprits;
	sc->rows = sc->seeks = 0;
	struct xf xf = { v->t0, v->t1, tl_view_ns_per_px(v), tl_view_plot_w(v) };

	/* The coarsest summary level whose bucket fits in a pixel column; none
	 * when even 1 ms buckets would be wider (then real polls are drawn, and
	 * the dense-column seeks keep their cost bounded). */
	int64_t parent = 0;
	sc->summary_bucket = pick_level(db, xf.npp, TL_SUMMARY_MAX_PX, TL_SUMMARY_MIN_NS, &parent);
	sc->dense_bucket = 0;

	for (size_t i = 0; i < db->n_lanes; i++) {
		struct tl_lane_scene *ls = &sc->lanes[i];
		const struct tl_lane *lane = &db->lanes[i];
		lane_clear(ls);
		if (!tl_view_lane_visible(v, l, (int)i))
			continue;   /* only what is visible is touched */
		ls->fetched = true;
		if (lane->worker_id) {
			int64_t bucket = sc->summary_bucket, bparent = parent;
			/* Zoomed in, but a lane so dense that its rows would cost more
			 * than the frame has: summaries up to TL_SUMMARY_DENSE_PX px
			 * wide stand in for the polls. */
			if (!bucket) {
				int64_t dense = pick_level(db, xf.npp, TL_SUMMARY_DENSE_PX, 0, &bparent);
				if (dense && polls_estimate(sc, db, lane->worker_id, &xf) > TL_DENSE_POLLS_PER_PX * xf.plot_w)
					bucket = sc->dense_bucket = dense;
			}
			if (bucket) {
				fetch_summary(sc, db, ls, lane->worker_id, &xf, bucket, bparent);
			} else {
				fetch_polls(sc, db, ls, lane->worker_id, &xf);
				fetch_spans(sc, db, ls, false, lane->worker_id, &xf);
				if (lane->has_cpu) {
					fetch_spans(sc, db, ls, true, lane->thread_id, &xf);
					split_blocked(ls);
				}
			}
			/* Sample ticks only with real polls: where summaries stand in,
			 * they would be a solid bar that costs a seek per column. */
			if (lane->has_samples && !ls->summary && xf.npp < TL_SAMPLE_MAX_NS_PER_PX)
				fetch_samples(sc, db, ls, lane->thread_id, &xf);
		} else {
			if (lane->has_cpu) {
				fetch_spans(sc, db, ls, true, lane->thread_id, &xf);
				blocked_is_idle(ls);
			}
			if (lane->has_samples)
				fetch_samples(sc, db, ls, lane->thread_id, &xf);
		}
	}
	/* The busy share of the part of the window inside the trace. */
	int64_t lo = v->t0 > db->first_ts ? v->t0 : db->first_ts, hi = v->t1 < db->last_ts ? v->t1 : db->last_ts;
	for (size_t i = 0; i < db->n_lanes; i++) {
		struct tl_lane_scene *ls = &sc->lanes[i];
		if (ls->fetched && db->lanes[i].worker_id && hi > lo)
			ls->busy_share = fmin(1.0, (double)ls->busy_ns / (double)(hi - lo));
	}
	ask_culprits(sc, db);
}

bool tl_scene_matches(const struct tl_scene *sc, const struct tl_view *v)
{
	return sc->width == v->width && sc->t0 == v->t0 && sc->t1 == v->t1 && sc->height == v->height &&
	       sc->scroll_y == v->scroll_y && sc->culprits == (v->color == TL_COLOR_CULPRIT);
}

int tl_scene_plot_w(const struct tl_scene *sc)
{
	struct tl_view built = { .width = sc->width };
	return tl_view_plot_w(&built);
}

bool tl_scene_map(const struct tl_scene *sc, const struct tl_view *v, double *k, double *off)
{
	*k = 1;
	*off = 0;
	if (sc->width < 0 || sc->t1 <= sc->t0)
		return false;
	if (sc->t0 == v->t0 && sc->t1 == v->t1 && sc->width == v->width)
		return true;   /* exactly 1 and 0: the same pixels as a fresh scene */
	double npp_sc = (double)(sc->t1 - sc->t0) / tl_scene_plot_w(sc);
	double npp_v = tl_view_ns_per_px(v);
	*k = npp_sc / npp_v;
	*off = (double)(sc->t0 - v->t0) / npp_v;
	return true;
}

const struct tl_box *tl_scene_box_at(const struct tl_scene *sc, int lane, double x, double slop)
{
	if (lane < 0 || (size_t)lane >= sc->n_lanes)
		return NULL;
	const struct tl_lane_scene *ls = &sc->lanes[lane];
	/* Boxes are in time order and do not overlap: the last box starting at or
	 * before x is the candidate, its successor the other one within slop. */
	size_t lo = 0, hi = ls->n_boxes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ls->boxes[mid].x0 <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct tl_box *best = NULL;
	double bestd = slop;
	for (size_t i = lo > 0 ? lo - 1 : 0; i < ls->n_boxes && i <= lo; i++) {
		const struct tl_box *b = &ls->boxes[i];
		double d = x < b->x0 ? b->x0 - x : x > b->x1 ? x - b->x1 : 0;
		if (d <= bestd) {
			best = b;
			bestd = d;
		}
	}
	return best;
}

const struct tl_span *tl_scene_cpu_at(const struct tl_scene *sc, int lane, double x)
{
	if (lane < 0 || (size_t)lane >= sc->n_lanes)
		return NULL;
	const struct tl_lane_scene *ls = &sc->lanes[lane];
	size_t lo = 0, hi = ls->n_cpu;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ls->cpu[mid].x0 <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && x <= ls->cpu[lo - 1].x1)
		return &ls->cpu[lo - 1];
	return NULL;
}
