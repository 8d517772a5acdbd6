/*
 * tl_scene.h - the visible window of a trace, fetched from SQLite and reduced to
 * what can be seen at this zoom: pixel-space boxes, spans, columns and ticks per
 * visible lane. The renderer draws a scene; the window hit-tests it.
 *
 * Level of detail (why a frame stays fast on 20M events):
 *  - zoomed out (a 1 ms summary bucket is at most a few pixels wide) worker lanes
 *    are drawn from worker_summaries: a few rows per pixel column;
 *  - zoomed in, rows come from indexed range queries; anything narrower than a
 *    pixel is folded into one box per pixel run, and after a few rows inside one
 *    pixel column the query seeks to the next column instead of stepping through
 *    the rest, so the rows read per lane are bounded by a multiple of the width.
 */
#ifndef STALLSCOPE_TL_SCENE_H
#define STALLSCOPE_TL_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tl_view.h"

struct tl_db;

enum { TL_BOX_INCOMPLETE = 1, TL_BOX_MERGED = 2 };

/* A poll, or several sub-pixel polls folded together (n > 1: the ids and the
 * location are those of the longest of them). x in plot pixels. */
struct tl_box {
	float x0, x1;
	int64_t poll_id, task_id, location_id, dur;
	/* The analysis's culprit function (examine.h), NULL when none or not
	 * asked: asked for polls of TL_CULPRIT_MIN_NS or more that are wide
	 * enough to be labelled, and for all of them in TL_COLOR_CULPRIT. The
	 * string belongs to the database's examiner and never changes. */
	const char *culprit;
	uint32_t n;
	uint8_t flags;
};

#define TL_CULPRIT_MIN_NS 1000000
/* A box at least this wide (px) carries a label. */
#define TL_LABEL_MIN_PX 70

/* The CPU strip: on a CPU, blocked while a poll runs (the loud one: a task
 * holds its worker off CPU), off CPU outside polls (parked or between polls:
 * a worker waiting for work), preempted (runnable, not running). */
enum tl_span_kind { TL_SPAN_PARK, TL_SPAN_ON_CPU, TL_SPAN_BLOCKED, TL_SPAN_PREEMPTED, TL_SPAN_IDLE_OFF };

struct tl_span {
	float x0, x1;
	uint8_t kind;
};

/* One pixel column of a zoomed-out worker lane: fractions of its time.
 * offcpu is all of the thread's off-CPU time, parked time included. */
struct tl_col {
	float busy, parked, offcpu;
	/* An estimate of the off-CPU time spent inside polls: the off-CPU time
	 * parking does not explain, at most the busy time, per full-level
	 * bucket (sparse levels keep no off-CPU time). */
	float offpoll;
	int64_t max_poll;
	uint32_t polls;
};

struct tl_lane_scene {
	bool fetched;              /* the lane was visible when the scene was built */
	bool summary;              /* cols are valid (zoomed out) instead of boxes/parks */
	struct tl_box *boxes;
	size_t n_boxes, cap_boxes;
	struct tl_span *parks;
	size_t n_parks, cap_parks;
	struct tl_span *cpu;
	size_t n_cpu, cap_cpu;
	float *ticks;              /* sample x positions (at most one per pixel column) */
	size_t n_ticks, cap_ticks;
	struct tl_col *cols;       /* plot_w entries when summary */
	size_t cap_cols;           /* kept across builds, like the arrays above */
	/* The share of the scene's window (within the trace) spent in polls. */
	double busy_share;
	int64_t busy_ns;
};

struct tl_scene {
	/* What the scene was built for: rebuilt only when one of these changes. */
	int64_t t0, t1;
	int width, height, scroll_y;
	struct tl_lane_scene *lanes;
	size_t n_lanes;
	int64_t summary_bucket;    /* bucket size used, 0 when in detail */
	int64_t dense_bucket;      /* in detail, the bucket size dense lanes use; 0: none */
	bool culprits;             /* built for TL_COLOR_CULPRIT: every long box asked */
	size_t culprits_asked;     /* boxes whose culprit was asked in the last build */
	/* Work done by the last build (the benchmark prints them). */
	uint64_t rows, seeks;
	double *acc;               /* scratch of the summary lanes, kept across builds */
	size_t cap_acc;
};

void tl_scene_init(struct tl_scene *sc);
void tl_scene_free(struct tl_scene *sc);
/* Rebuilds the scene for v if it was built for another window or size. */
void tl_scene_update(struct tl_scene *sc, struct tl_db *db, const struct tl_layout *l,
		     const struct tl_view *v);
/* Forces the next update to rebuild. */
void tl_scene_invalidate(struct tl_scene *sc);
/* Whether sc was built for exactly the window, size, scroll position and
 * culprit colouring of v. */
bool tl_scene_matches(const struct tl_scene *sc, const struct tl_view *v);

/* A scene built for another window can still be drawn for v, stretched and
 * shifted (the window keeps drawing the last scene it has while a new one is
 * fetched): plot x of v = off + k * plot x of the scene. k = 1, off = 0 when
 * the scene was built for v's window and width; false (k = 1, off = 0) when sc
 * was never built. */
bool tl_scene_map(const struct tl_scene *sc, const struct tl_view *v, double *k, double *off);
/* Pixel columns of the scene's summary lanes (cols entries). */
int tl_scene_plot_w(const struct tl_scene *sc);

/* The box at plot x in a lane (within slop pixels), or NULL. Binary search.
 * x and slop are in the scene's pixels (see tl_scene_map). */
const struct tl_box *tl_scene_box_at(const struct tl_scene *sc, int lane, double x, double slop);
/* The CPU span at plot x, or NULL. */
const struct tl_span *tl_scene_cpu_at(const struct tl_scene *sc, int lane, double x);

#endif /* STALLSCOPE_TL_SCENE_H */
