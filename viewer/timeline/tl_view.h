/*
 * tl_view.h - what part of a trace is shown and where things go on screen: the
 * visible time window and size (struct tl_view, the only state the drawing
 * depends on besides the database), the vertical layout of groups and lanes, and
 * the conversions between time and x.
 */
#ifndef STALLSCOPE_TL_VIEW_H
#define STALLSCOPE_TL_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tl_db;

/* Polls coloured by spawn location, by duration class, or by the culprit
 * function the analysis finds in them (viewer/analysis/examine.h: polls of
 * 1 ms or more; shorter ones are neutral). */
enum tl_color_mode { TL_COLOR_LOCATION, TL_COLOR_DURATION, TL_COLOR_CULPRIT };

/* A poll a search matched (the window's search, viewer/app/ss_search.c),
 * marked over its lane. */
struct tl_mark {
	int64_t ts, dur, poll_id, worker_id, task_id;
};
/* How lane rectangles become pixels (tl_render.c): a canvas when a frame has
 * many, colour nodes otherwise; the tests force each way. */
enum tl_raster { TL_RASTER_AUTO, TL_RASTER_CANVAS, TL_RASTER_NODES };

struct tl_view {
	int64_t t0, t1;            /* visible window, trace ns (t1 > t0) */
	int width, height;         /* px */
	int scroll_y;              /* px the lanes are scrolled up (the ruler stays) */
	enum tl_color_mode color;
	bool dark;
	bool legend;               /* a legend row at the bottom */
	int64_t sel_t0, sel_t1;    /* selected range; none when sel_t1 <= sel_t0 */
	int64_t selected_poll;     /* 0: none */
	int64_t highlight_task;    /* polls of this task are outlined; 0: none */
	int64_t selected_stall;    /* 0: none */
	int64_t selected_worker;   /* its lane's label is highlighted; 0: none */
	int scale;                 /* device pixels per px (HiDPI); 0 means 1 */
	enum tl_raster raster;
	/* Search matches, sorted by ts, and their poll ids sorted (not owned;
	 * read by the drawing only, never by a scene build). With dim_unmatched,
	 * polls that are not among them are drawn faint. */
	const struct tl_mark *marks;
	size_t n_marks;
	const int64_t *mark_ids;
	bool dim_unmatched;
};

/* Fixed geometry (px). Lanes: polls in the top band, the park band through its
 * middle, then the on/off-CPU strip and the sample ticks. */
enum {
	TL_LABEL_W = 176,
	TL_RULER_H = 44,
	TL_GROUP_H = 22,
	TL_LANE_H = 42,
	TL_LEGEND_H = 24,
	TL_POLL_Y = 4, TL_POLL_H = 22,
	TL_PARK_Y = 12, TL_PARK_H = 6,
	TL_CPU_Y = 29, TL_CPU_H = 5,
	TL_SAMPLE_Y = 35, TL_SAMPLE_H = 5,
};

/* Content y (before scrolling, below the ruler) of each lane and group header. */
struct tl_layout {
	int *lane_y;               /* n_lanes entries; -1 for a hidden lane */
	int *group_y;              /* n_groups entries, -1 for an empty group */
	size_t n_lanes;
	int content_h;
};

void tl_layout_compute(struct tl_layout *l, const struct tl_db *db);
/* The same with only the lanes whose show[i] is true (show NULL: all); a
 * group without a shown lane has no header. */
void tl_layout_compute_shown(struct tl_layout *l, const struct tl_db *db, const bool *show);
void tl_layout_free(struct tl_layout *l);

/* Screen y of a lane's top, and whether any of it is on screen (never for a
 * hidden lane). */
int tl_view_lane_screen_y(const struct tl_view *v, const struct tl_layout *l, int lane);
bool tl_view_lane_visible(const struct tl_view *v, const struct tl_layout *l, int lane);
/* The lane under screen y, -1 when none. */
int tl_view_lane_at(const struct tl_view *v, const struct tl_layout *l, double y);

static inline int tl_view_plot_w(const struct tl_view *v)
{
	return v->width > TL_LABEL_W + 1 ? v->width - TL_LABEL_W : 1;
}
static inline int tl_view_plot_bottom(const struct tl_view *v)
{
	return v->height - (v->legend ? TL_LEGEND_H : 0);
}
static inline double tl_view_ns_per_px(const struct tl_view *v)
{
	return (double)(v->t1 - v->t0) / tl_view_plot_w(v);
}
/* Plot x (0 = left edge of the plot area) of a time, and back. */
static inline double tl_view_x(const struct tl_view *v, int64_t t)
{
	return (double)(t - v->t0) / tl_view_ns_per_px(v);
}
static inline int64_t tl_view_time(const struct tl_view *v, double x)
{
	return v->t0 + (int64_t)(x * tl_view_ns_per_px(v));
}

/* Zooms by factor (>1 zooms in) keeping the time under plot x fixed; clamps the
 * window to [min_dur, whole trace * 1.1] and to the trace's bounds. */
void tl_view_zoom(struct tl_view *v, const struct tl_db *db, double factor, double anchor_x);
/* Pans by dx plot pixels (positive shows later times). */
void tl_view_pan(struct tl_view *v, const struct tl_db *db, double dx);
/* Shows the whole trace. */
void tl_view_fit(struct tl_view *v, const struct tl_db *db);
/* Shows [t0, t1], clamped like zoom. */
void tl_view_set_range(struct tl_view *v, const struct tl_db *db, int64_t t0, int64_t t1);

#endif /* STALLSCOPE_TL_VIEW_H */
