/*
 * tl_view.c - lane layout and view navigation (zoom around a point, pan, fit),
 * shared by the window and the headless renderer so both show the same thing.
 */
#include "tl_view.h"

#include <math.h>
#include <stdlib.h>

#include "tl_db.h"

void tl_layout_compute(struct tl_layout *l, const struct tl_db *db)
{
	tl_layout_compute_shown(l, db, NULL);
}

void tl_layout_compute_shown(struct tl_layout *l, const struct tl_db *db, const bool *show)
{
	l->lane_y = calloc(db->n_lanes ? db->n_lanes : 1, sizeof *l->lane_y);
	l->group_y = calloc(db->n_groups ? db->n_groups : 1, sizeof *l->group_y);
	int y = 0;
	l->n_lanes = db->n_lanes;
	/* Lanes are already ordered by group (tl_db loads them so); a header is
	 * placed where a new group starts. */
	for (size_t g = 0; g < db->n_groups; g++)
		l->group_y[g] = -1;
	int last_group = -1;
	for (size_t i = 0; i < db->n_lanes; i++) {
		if (show && !show[i]) {
			l->lane_y[i] = -1;
			continue;
		}
		if (db->lanes[i].group != last_group) {
			last_group = db->lanes[i].group;
			l->group_y[last_group] = y;
			y += TL_GROUP_H;
		}
		l->lane_y[i] = y;
		y += TL_LANE_H;
	}
	l->content_h = y;
}

void tl_layout_free(struct tl_layout *l)
{
	free(l->lane_y);
	free(l->group_y);
	l->lane_y = l->group_y = NULL;
}

int tl_view_lane_screen_y(const struct tl_view *v, const struct tl_layout *l, int lane)
{
	return TL_RULER_H + l->lane_y[lane] - v->scroll_y;
}

bool tl_view_lane_visible(const struct tl_view *v, const struct tl_layout *l, int lane)
{
	if (l->lane_y[lane] < 0)
		return false;
	int y = tl_view_lane_screen_y(v, l, lane);
	return y + TL_LANE_H > TL_RULER_H && y < tl_view_plot_bottom(v);
}

int tl_view_lane_at(const struct tl_view *v, const struct tl_layout *l, double y)
{
	if (y < TL_RULER_H || y >= tl_view_plot_bottom(v) || l->n_lanes == 0)
		return -1;
	double cy = y - TL_RULER_H + v->scroll_y;
	/* On hover and click only: a scan is cheap, and hidden lanes (-1) break
	 * the order a binary search would need. */
	for (size_t i = 0; i < l->n_lanes; i++)
		if (l->lane_y[i] >= 0 && cy >= l->lane_y[i] && cy < l->lane_y[i] + TL_LANE_H)
			return (int)i;
	return -1;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void tl_view_set_range(struct tl_view *v, const struct tl_db *db, int64_t t0, int64_t t1)
{
	int64_t span_all = db->last_ts - db->first_ts;
	int64_t margin = span_all / 20;
	int64_t lo = db->first_ts - margin, hi = db->last_ts + margin;
	/* Narrowest window: 100 ns across the plot, enough to see single events. */
	int64_t min_dur = 100;
	int64_t dur = t1 - t0;
	if (dur < min_dur) {
		int64_t mid = t0 + dur / 2;
		t0 = mid - min_dur / 2;
		dur = min_dur;
	}
	if (dur > hi - lo)
		dur = hi - lo;
	t0 = clamp64(t0, lo, hi - dur);
	v->t0 = t0;
	v->t1 = t0 + dur;
}

void tl_view_zoom(struct tl_view *v, const struct tl_db *db, double factor, double anchor_x)
{
	if (!(factor > 0))
		return;
	int64_t anchor_t = tl_view_time(v, anchor_x);
	double dur = (double)(v->t1 - v->t0) / factor;
	double frac = anchor_x / tl_view_plot_w(v);
	int64_t t0 = anchor_t - (int64_t)llround(dur * frac);
	tl_view_set_range(v, db, t0, t0 + (int64_t)llround(dur));
}

void tl_view_pan(struct tl_view *v, const struct tl_db *db, double dx)
{
	int64_t dt = (int64_t)llround(dx * tl_view_ns_per_px(v));
	tl_view_set_range(v, db, v->t0 + dt, v->t1 + dt);
}

void tl_view_fit(struct tl_view *v, const struct tl_db *db)
{
	int64_t span_all = db->last_ts - db->first_ts;
	int64_t pad = span_all / 100;
	tl_view_set_range(v, db, db->first_ts - pad, db->last_ts + pad);
}
