/*
 * tl_render.c - the timeline's drawing: ruler, lanes (polls, parks, on/off-CPU
 * strip, sample ticks), stall markers, lost-data hatching, selection, labels and
 * legend, as GskRenderNodes appended to a GtkSnapshot.
 *
 * The lanes' rectangles (polls, parks, CPU strip, sample ticks, zoomed-out
 * columns) are filled into one canvas (tl_canvas.c) that becomes a single
 * texture node: tens of thousands of colour nodes would cost more than the
 * rest of the frame. Everything drawn over the lanes (box labels and outlines,
 * grid, stalls, losses, selection, labels) and the ruler and legend are
 * ordinary GSK nodes.
 *
 * The scene may have been built for another window than v (the window draws
 * the last scene it has while the next one is fetched): every x taken from it
 * goes through sx(), which stretches and shifts it onto v. For a scene built
 * for v the map is exactly x -> x, so the pixels are those of a fresh scene.
 */
#include "tl_render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tl_canvas.h"
#include "tl_palette.h"
#include "tl_ticks.h"

/* Above this many lane rectangles a frame draws them into a canvas. Measured
 * here: a colour node costs about 1.5 us to build and rasterise, the canvas
 * about 4 ms for a 1600x900 plot whatever it holds. */
#define TL_CANVAS_MIN_RECTS 3000

struct rc {
	GtkSnapshot *s;
	PangoContext *pc;
	PangoFontDescription *font;
	bool bold;                 /* text() draws bold */
	struct tl_db *db;
	const struct tl_layout *l;
	const struct tl_scene *sc;
	const struct tl_view *v;
	struct tl_theme th;
	int plot_w, plot_bottom;
	double k, off;             /* scene plot x -> view plot x (tl_scene_map) */
	int sc_plot_w;             /* columns of the scene's summary lanes */
	struct tl_canvas cv;       /* the lanes' raster; no buffer: colour nodes */
};

/* Screen x of a scene x. */
static double sx(const struct rc *r, double x)
{
	return TL_LABEL_W + r->off + x * r->k;
}

/* The scene's lane i, NULL when the scene has none (not built yet). */
static const struct tl_lane_scene *scene_lane(const struct rc *r, size_t i)
{
	return i < r->sc->n_lanes ? &r->sc->lanes[i] : NULL;
}

static void rect(struct rc *r, const GdkRGBA *c, double x, double y, double w, double h)
{
	if (w <= 0 || h <= 0)
		return;
	gtk_snapshot_append_color(r->s, c, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)w, (float)h));
}

/* A rectangle of a lane: into the canvas. */
static void lrect(struct rc *r, const GdkRGBA *c, double x, double y, double w, double h)
{
	if (r->cv.px)
		tl_canvas_fill(&r->cv, c, x, y, w, h);
	else
		rect(r, c, x, y, w, h);
}

static void outline(struct rc *r, const GdkRGBA *c, double x, double y, double w, double h, float bw)
{
	GskRoundedRect rr;
	gsk_rounded_rect_init_from_rect(&rr, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)w, (float)h), 0);
	const float widths[4] = { bw, bw, bw, bw };
	const GdkRGBA colors[4] = { *c, *c, *c, *c };
	gtk_snapshot_append_border(r->s, &rr, widths, colors);
}

/* Shaped text is kept between frames: most of a frame's strings (lane
 * labels, the legend, the ruler's labels while a pan keeps its ticks) are
 * the last frame's, and shaping them again cost a tenth of a frame. Per
 * thread (the window's and --render-png's drawing thread), for one Pango
 * context at a time (held, so its address cannot come back as another one)
 * and its serial (a font or resolution change reshapes everything). */
#define TEXT_CACHE 128

struct shaped {
	char *str;
	guint hash;
	int max_w;                 /* -1: no width */
	bool bold;
	PangoLayout *layout;
	int w;
	unsigned used;
};

static _Thread_local struct {
	PangoContext *pc;
	guint serial;
	unsigned clock;
	struct shaped e[TEXT_CACHE];
} shaped_cache;

static void shaped_clear(void)
{
	for (int i = 0; i < TEXT_CACHE; i++) {
		struct shaped *e = &shaped_cache.e[i];
		g_free(e->str);
		if (e->layout)
			g_object_unref(e->layout);
		memset(e, 0, sizeof *e);
	}
}

static struct shaped *shaped_text(struct rc *r, const char *str, int max_w, bool bold)
{
	if (shaped_cache.pc != r->pc || pango_context_get_serial(r->pc) != shaped_cache.serial) {
		shaped_clear();
		if (shaped_cache.pc)
			g_object_unref(shaped_cache.pc);
		shaped_cache.pc = g_object_ref(r->pc);
		shaped_cache.serial = pango_context_get_serial(r->pc);
	}
	guint h = g_str_hash(str);
	struct shaped *victim = &shaped_cache.e[0];
	for (int i = 0; i < TEXT_CACHE; i++) {
		struct shaped *e = &shaped_cache.e[i];
		if (e->layout && e->hash == h && e->max_w == max_w && e->bold == bold && strcmp(e->str, str) == 0) {
			e->used = ++shaped_cache.clock;
			return e;
		}
		if (!e->layout || e->used < victim->used)
			victim = !victim->layout ? victim : e;
	}
	struct shaped *e = victim;
	g_free(e->str);
	if (e->layout)
		g_object_unref(e->layout);
	e->str = g_strdup(str);
	e->hash = h;
	e->max_w = max_w;
	e->bold = bold;
	e->layout = pango_layout_new(r->pc);
	pango_layout_set_font_description(e->layout, r->font);
	if (bold) {
		PangoAttrList *attrs = pango_attr_list_new();
		pango_attr_list_insert(attrs, pango_attr_weight_new(PANGO_WEIGHT_BOLD));
		pango_layout_set_attributes(e->layout, attrs);
		pango_attr_list_unref(attrs);
	}
	pango_layout_set_text(e->layout, str, -1);
	pango_layout_set_width(e->layout, max_w > 0 ? max_w * PANGO_SCALE : -1);
	pango_layout_set_ellipsize(e->layout, max_w > 0 ? PANGO_ELLIPSIZE_END : PANGO_ELLIPSIZE_NONE);
	int ph;
	pango_layout_get_pixel_size(e->layout, &e->w, &ph);
	e->used = ++shaped_cache.clock;
	return e;
}

/* Text at (x, y) top-left; max_w > 0 ellipsizes. Returns the width drawn. */
static int text(struct rc *r, const char *str, double x, double y, const GdkRGBA *c, int max_w)
{
	struct shaped *t = shaped_text(r, str, max_w > 0 ? max_w : -1, r->bold);
	gtk_snapshot_save(r->s);
	gtk_snapshot_translate(r->s, &GRAPHENE_POINT_INIT((float)x, (float)y));
	gtk_snapshot_append_layout(r->s, t->layout, c);
	gtk_snapshot_restore(r->s);
	return t->w;
}

static int text_width(struct rc *r, const char *str)
{
	return shaped_text(r, str, -1, r->bold)->w;
}

static GdkRGBA with_alpha(GdkRGBA c, float a)
{
	c.alpha *= a;
	return c;
}

static GdkRGBA poll_color(struct rc *r, const struct tl_box *b)
{
	if (r->v->color == TL_COLOR_DURATION)
		return tl_duration_color(tl_duration_class(b->dur));
	if (r->v->color == TL_COLOR_CULPRIT)
		return tl_culprit_color(b->culprit, &r->th);
	return tl_location_color(b->location_id);
}

/* An opaque mix of c over the background (a canvas takes opaque colours). */
static GdkRGBA over_bg(const struct rc *r, GdkRGBA c, float a)
{
	const GdkRGBA *b = &r->th.bg;
	return (GdkRGBA){ c.red * a + b->red * (1 - a), c.green * a + b->green * (1 - a), c.blue * a + b->blue * (1 - a), 1 };
}

/* Whether a search is dimming the polls it did not match, and this is one. */
static bool dimmed(const struct rc *r, int64_t poll_id)
{
	const struct tl_view *v = r->v;
	if (!v->dim_unmatched || !v->mark_ids)
		return false;
	size_t lo = 0, hi = v->n_marks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->mark_ids[mid] < poll_id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return !(lo < v->n_marks && v->mark_ids[lo] == poll_id);
}

/* A small downward triangle (stall marker) from stacked rows: crisp at this
 * size, and a colour node per row instead of a path. */
static void triangle_down(struct rc *r, const GdkRGBA *c, double cx, double y, int half)
{
	for (int i = 0; i <= half; i++)
		rect(r, c, cx - (half - i), y + i, 2 * (half - i) + 1, 1);
}

/* Diagonal hatching for lost data (a cairo node: GSK 4.8 has no path nodes). */
static void hatch(struct rc *r, const GdkRGBA *line, const GdkRGBA *bg, double x, double y, double w, double h)
{
	rect(r, bg, x, y, w, h);
	cairo_t *cr = gtk_snapshot_append_cairo(r->s, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)w, (float)h));
	cairo_rectangle(cr, x, y, w, h);
	cairo_clip(cr);
	gdk_cairo_set_source_rgba(cr, line);
	cairo_set_line_width(cr, 1.5);
	for (double d = x - h; d < x + w; d += 7) {
		cairo_move_to(cr, d, y + h);
		cairo_line_to(cr, d + h, y);
	}
	cairo_stroke(cr);
	cairo_destroy(cr);
}

static double px(struct rc *r, int64_t t)
{
	return TL_LABEL_W + tl_view_x(r->v, t);
}

/* ---- ruler and grid ---- */

static int64_t major_step(struct rc *r)
{
	/* Labels at least 120 px apart: room for a wall-clock label with
	 * microseconds, so the two ruler rows never collide. */
	return tl_tick_step(tl_view_ns_per_px(r->v) * 120);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* More major ticks than any plot width has room for. */
#define TL_MAX_TICKS 4096

static void draw_grid(struct rc *r)
{
	int64_t step = major_step(r);
	int64_t origin = r->db->first_ts;
	int64_t k0 = floor_div(r->v->t0 - origin, step);
	/* The step keeps ticks tens of pixels apart; the cap only guards the
	 * arithmetic of a view no trace should produce. */
	for (int64_t k = k0; origin + k * step <= r->v->t1 && k - k0 < TL_MAX_TICKS; k++) {
		double x = px(r, origin + k * step);
		if (x < TL_LABEL_W)
			continue;
		rect(r, &r->th.grid, floor(x), TL_RULER_H, 1, r->plot_bottom - TL_RULER_H);
	}
}

static void draw_ruler(struct rc *r)
{
	const struct tl_view *v = r->v;
	rect(r, &r->th.ruler_bg, 0, 0, v->width, TL_RULER_H);
	rect(r, &r->th.separator, 0, TL_RULER_H - 1, v->width, 1);
	text(r, "since start", 8, 4, &r->th.fg_dim, TL_LABEL_W - 12);
	text(r, r->db->anchor_real ? "wall clock" : "wall clock (no anchor)", 8, 23, &r->th.fg_dim,
	     TL_LABEL_W - 12);

	int64_t step = major_step(r);
	/* 1-2-5: a 1eN or 5eN step splits into 5 minor ticks, a 2eN into 4. */
	int64_t lead = step;
	while (lead % 10 == 0 && lead >= 10)
		lead /= 10;
	int64_t minor = step >= 10 ? step / (lead == 2 ? 4 : 5) : 0;
	int64_t origin = r->db->first_ts;
	gtk_snapshot_push_clip(r->s, &GRAPHENE_RECT_INIT(TL_LABEL_W, 0, (float)r->plot_w, TL_RULER_H));
	if (minor > 0) {
		int64_t k0 = floor_div(v->t0 - origin, minor);
		for (int64_t k = k0; origin + k * minor <= v->t1 && k - k0 < 5 * TL_MAX_TICKS; k++)
			rect(r, &r->th.fg_dim, floor(px(r, origin + k * minor)), TL_RULER_H - 5, 1, 4);
	}
	int64_t k0 = floor_div(v->t0 - origin, step);
	double last_rel_end = -1e9, last_wall_end = -1e9;
	for (int64_t k = k0; origin + k * step <= v->t1 && k - k0 < TL_MAX_TICKS; k++) {
		int64_t t = origin + k * step;
		double x = floor(px(r, t));
		rect(r, &r->th.fg, x, TL_RULER_H - 10, 1, 9);
		if (x < TL_LABEL_W)
			continue;   /* its label would be cut by the label column */
		char buf[64];
		tl_format_duration(buf, sizeof buf, t - origin, step);
		/* Each label is skipped rather than drawn over its neighbour. */
		if (x + 3 > last_rel_end + 6 && x + 3 + text_width(r, buf) <= v->width)
			last_rel_end = x + 3 + text(r, buf, x + 3, 4, &r->th.fg, 0);
		if (r->db->anchor_real) {
			tl_format_wall(buf, sizeof buf, tl_db_wall(r->db, t), step);
			if (x + 3 > last_wall_end + 10 && x + 3 + text_width(r, buf) <= v->width)
				last_wall_end = x + 3 + text(r, buf, x + 3, 22, &r->th.fg_dim, 0);
		}
	}
	gtk_snapshot_pop(r->s);
}

/* ---- lanes ---- */

/* Clipped screen extent of a box; false when it is off the plot. */
static bool box_x(struct rc *r, const struct tl_box *b, double *x0, double *w)
{
	double a = sx(r, b->x0), z = sx(r, b->x1);
	if (z < TL_LABEL_W || a > r->v->width)
		return false;
	a = fmax(a, TL_LABEL_W);
	z = fmin(z, r->v->width);
	*x0 = a;
	*w = z - a;
	return true;
}

static void draw_boxes(struct rc *r, const struct tl_lane_scene *ls, double y)
{
	for (size_t i = 0; i < ls->n_boxes; i++) {
		const struct tl_box *b = &ls->boxes[i];
		double x0, w;
		if (!box_x(r, b, &x0, &w))
			continue;
		GdkRGBA c = poll_color(r, b);
		if (b->flags & TL_BOX_INCOMPLETE)
			c = with_alpha(c, 0.55f);
		if (dimmed(r, b->poll_id))
			c = over_bg(r, c, 0.18f);
		/* A 1 px gap ends each box that is wide enough, so neighbours stay
		 * apart. */
		lrect(r, &c, x0, y + TL_POLL_Y, w >= 3 ? w - 1 : (w < 1 ? 1 : w), TL_POLL_H);
	}
}

/* What goes over the canvas: location names in wide boxes, the outlines of the
 * highlighted task's polls and of the selected poll. */
static void draw_box_overlays(struct rc *r, const struct tl_lane_scene *ls, double y)
{
	GdkRGBA label_c = { 0, 0, 0, 0.85f };
	for (size_t i = 0; i < ls->n_boxes; i++) {
		const struct tl_box *b = &ls->boxes[i];
		bool hl = r->v->highlight_task && b->task_id == r->v->highlight_task;
		bool sel = r->v->selected_poll && b->poll_id == r->v->selected_poll;
		if (!hl && !sel && ((b->x1 - b->x0) * r->k < TL_LABEL_MIN_PX || b->n != 1))
			continue;
		double x0, w;
		if (!box_x(r, b, &x0, &w))
			continue;
		if (w >= TL_LABEL_MIN_PX && b->n == 1) {
			/* What the code was doing says more than where the task was
			 * spawned (a runtime may spawn every task from one place). */
			const struct tl_location *loc = tl_db_location(r->db, b->location_id);
			const char *name = b->culprit ? b->culprit : loc ? loc->short_name : NULL;
			if (name) {
				gtk_snapshot_push_clip(r->s, &GRAPHENE_RECT_INIT((float)x0, (float)(y + TL_POLL_Y),
										 (float)(w - 1), TL_POLL_H));
				text(r, name, x0 + 4, y + TL_POLL_Y + 3, &label_c, (int)w - 8);
				gtk_snapshot_pop(r->s);
			}
		}
		if (hl)
			outline(r, &r->th.highlight, x0, y + TL_POLL_Y - 1, w < 2 ? 2 : w, TL_POLL_H + 2, 1.5f);
		if (sel)
			outline(r, &r->th.highlight, x0 - 1, y + TL_POLL_Y - 2, (w < 2 ? 2 : w) + 2, TL_POLL_H + 4, 2.5f);
	}
}

static const GdkRGBA *cpu_color(struct rc *r, int kind)
{
	return kind == TL_SPAN_BLOCKED ? &r->th.blocked : kind == TL_SPAN_PREEMPTED ? &r->th.preempted
	       : kind == TL_SPAN_IDLE_OFF ? &r->th.idle_off : kind == TL_SPAN_PARK ? &r->th.park : &r->th.on_cpu;
}

/* Blocked inside a poll is drawn taller than the rest of the CPU strip, up
 * into the gap under the poll band: the one state a user hunts for. */
#define TL_BLOCKED_RISE 2

static void draw_spans(struct rc *r, const struct tl_span *sp, size_t n, double y, double h)
{
	for (size_t i = 0; i < n; i++) {
		double x0 = fmax(sx(r, sp[i].x0), TL_LABEL_W);
		double x1 = fmin(sx(r, sp[i].x1), r->v->width);
		if (x1 <= x0)
			continue;
		bool loud = sp[i].kind == TL_SPAN_BLOCKED;
		lrect(r, cpu_color(r, sp[i].kind), x0, loud ? y - TL_BLOCKED_RISE : y, fmax(x1 - x0, 1),
		      loud ? h + TL_BLOCKED_RISE : h);
	}
}

/* Zoomed out: a bar per pixel column for its busy share, on a square-root
 * scale so that a few percent stay readable (1% is a tenth of the band, 4% a
 * fifth, 25% half), its colour deepening with the share too; runs of equal
 * columns are joined into one rectangle. The park band goes under the bars. */
static int busy_height(const struct tl_col *col)
{
	if (!(col->busy > 0) && !col->polls)
		return 0;
	return (int)fmax(2, lround(sqrt(fmin(col->busy, 1)) * TL_POLL_H));
}

/* The colour depth of a busy column, in 16 steps (for joining runs). */
static int busy_depth(const struct tl_col *col)
{
	return (int)lround(sqrt(fmin(fmax(col->busy, 0), 1)) * 16);
}

/* Columns [c, e) of the scene on screen, clipped to the plot; false when off it. */
static bool cols_x(const struct rc *r, int c, int e, double *x0, double *w)
{
	/* Called a few times per column of every lane: comparisons, not the
	 * libm calls fmax and fmin are at -O2 (no NaN reaches here). */
	double a = sx(r, c), z = sx(r, e);
	a = a > TL_LABEL_W ? a : TL_LABEL_W;
	z = z < r->v->width ? z : r->v->width;
	*x0 = a;
	*w = z - a;
	return z > a;
}

static void draw_columns(struct rc *r, const struct tl_lane_scene *ls, const struct tl_lane *lane, double y)
{
	int w = r->sc_plot_w;
	double x, cw;
	for (int c = 0; c < w; c++) {
		const struct tl_col *col = &ls->cols[c];
		if (col->parked > 0.02f && cols_x(r, c, c + 1, &x, &cw)) {
			GdkRGBA pc = over_bg(r, r->th.park, 0.3f + 0.7f * col->parked);
			lrect(r, &pc, x, y + TL_PARK_Y, cw, TL_PARK_H);
		}
	}
	/* Each column's bar once (a square root and a rounding), not again for
	 * every run it is compared with. */
	int hb_next = w > 0 ? busy_height(&ls->cols[0]) : 0, depth_next = w > 0 ? busy_depth(&ls->cols[0]) : 0;
	for (int c = 0; c < w;) {
		const struct tl_col *col = &ls->cols[c];
		int hb = hb_next, depth = depth_next;
		int cls = tl_duration_class(col->max_poll);
		int e = c + 1;
		while (e < w) {
			const struct tl_col *o = &ls->cols[e];
			hb_next = busy_height(o);
			depth_next = busy_depth(o);
			if (hb_next != hb || depth_next != depth ||
			    (r->v->color == TL_COLOR_DURATION && tl_duration_class(o->max_poll) != cls))
				break;
			e++;
		}
		if (hb && cols_x(r, c, e, &x, &cw)) {
			GdkRGBA bc = r->v->color == TL_COLOR_DURATION ? tl_duration_color(cls) : r->th.busy_summary;
			bc = over_bg(r, bc, 0.5f + 0.5f * (float)depth / 16);
			lrect(r, &bc, x, y + TL_POLL_Y + TL_POLL_H - hb, cw, hb);
		}
		c = e;
	}
	for (int c = 0; c < w && lane->has_cpu; c++) {
		const struct tl_col *col = &ls->cols[c];
		if (!cols_x(r, c, c + 1, &x, &cw) || (!(col->busy > 0) && !(col->offcpu > 0)))
			continue;
		/* Off CPU inside polls (tl_col.offpoll, an estimate) past a
		 * twentieth of the column: loud; off CPU while parked: quiet. */
		float in_poll = fminf(col->busy, col->offpoll);
		/* Mostly a park whose CPU state was not recorded (the off-CPU
		 * time it lacks is unknown, not on a CPU): nothing, as the rows
		 * draw it closer in. */
		if (lane->parks_unswitched && col->parked > 0.5f && col->busy <= 0.02f && in_poll <= 0.05f)
			continue;
		if (in_poll > 0.05f) {
			GdkRGBA cc = over_bg(r, r->th.blocked, 0.45f + 0.55f * fminf(1, in_poll / fmaxf(col->busy, 0.01f)));
			lrect(r, &cc, x, y + TL_CPU_Y - TL_BLOCKED_RISE, cw, TL_CPU_H + TL_BLOCKED_RISE);
		} else if (col->busy > 0.02f || col->offcpu <= 0.05f) {
			GdkRGBA cc = over_bg(r, r->th.on_cpu, 0.35f + 0.65f * sqrtf(fminf(col->busy, 1)));
			lrect(r, &cc, x, y + TL_CPU_Y, cw, TL_CPU_H);
		} else {
			lrect(r, &r->th.idle_off, x, y + TL_CPU_Y, cw, TL_CPU_H);
		}
	}
}

static void draw_lane(struct rc *r, size_t i)
{
	const struct tl_lane_scene *ls = scene_lane(r, i);
	const struct tl_lane *lane = &r->db->lanes[i];
	double y = tl_view_lane_screen_y(r->v, r->l, (int)i);
	if (i % 2) {
		/* Over the plain background, blended once instead of per pixel. */
		const GdkRGBA *a = &r->th.lane_alt, *b = &r->th.bg;
		GdkRGBA alt = { a->red * a->alpha + b->red * (1 - a->alpha),
				a->green * a->alpha + b->green * (1 - a->alpha),
				a->blue * a->alpha + b->blue * (1 - a->alpha), 1 };
		lrect(r, r->cv.px ? &alt : a, TL_LABEL_W, y, r->plot_w, TL_LANE_H);
	}
	lrect(r, &r->th.separator, TL_LABEL_W, y + TL_LANE_H - 1, r->plot_w, 1);
	if (!ls || !ls->fetched)
		return;
	if (ls->summary) {
		draw_columns(r, ls, lane, y);
	} else {
		/* Parks first: a thin grey band through the middle of the poll band,
		 * so "asleep" never looks like a (coloured, full-height) poll. */
		draw_spans(r, ls->parks, ls->n_parks, y + TL_PARK_Y, TL_PARK_H);
		draw_boxes(r, ls, y);
		draw_spans(r, ls->cpu, ls->n_cpu, y + TL_CPU_Y, TL_CPU_H);
	}
	for (size_t k = 0; k < ls->n_ticks; k++) {
		double tx = floor(sx(r, ls->ticks[k]));
		if (tx >= TL_LABEL_W && tx < r->v->width)
			lrect(r, &r->th.sample, tx, y + TL_SAMPLE_Y, 1, TL_SAMPLE_H);
	}
}

static void draw_lane_overlays(struct rc *r, size_t i)
{
	const struct tl_lane_scene *ls = scene_lane(r, i);
	if (ls && ls->fetched && !ls->summary)
		draw_box_overlays(r, ls, tl_view_lane_screen_y(r->v, r->l, (int)i));
}

static void draw_losses(struct rc *r)
{
	char buf[128];
	/* Where the last label drawn on each lane ends: a label that would run
	 * into it is left out (the hatching stays, and says where). */
	double *label_end = calloc(r->db->n_lanes ? r->db->n_lanes : 1, sizeof *label_end);
	if (!label_end)
		return;
	for (size_t k = 0; k < r->db->n_lanes; k++)
		label_end[k] = -1e9;
	for (size_t i = 0; i < r->db->n_losses; i++) {
		const struct tl_loss *lo = &r->db->losses[i];
		if (lo->ts > r->v->t1 || lo->ts + lo->dur < r->v->t0)
			continue;
		double x0 = px(r, lo->ts), x1 = px(r, lo->ts + lo->dur);
		if (x1 - x0 < 4) {   /* a point loss is still a visible band */
			double mid = (x0 + x1) / 2;
			x0 = mid - 2;
			x1 = mid + 2;
		}
		x0 = fmax(x0, TL_LABEL_W);
		x1 = fmin(x1, r->v->width);
		bool labelled = false;
		for (size_t k = 0; k < r->db->n_lanes; k++) {
			const struct tl_lane *lane = &r->db->lanes[k];
			if (lo->lane >= 0 ? (size_t)lo->lane != k : lane->recording_id != lo->recording_id)
				continue;
			if (!tl_view_lane_visible(r->v, r->l, (int)k))
				continue;
			double y = tl_view_lane_screen_y(r->v, r->l, (int)k);
			hatch(r, &r->th.loss, &r->th.loss_bg, x0, y + 1, x1 - x0, TL_LANE_H - 3);
			if (!labelled) {
				snprintf(buf, sizeof buf, "%lld %s lost%s%s", (long long)lo->count, lo->source,
					 lo->reason[0] ? ": " : "", lo->reason);
				int tw = text_width(r, buf);
				double lx = x1 - x0 >= tw + 8 ? x0 + 4 : x1 + 4;
				if (lx + tw < r->v->width && lx - 2 > label_end[k] + 4) {
					rect(r, &r->th.bg, lx - 2, y + TL_POLL_Y + 2, tw + 4, 16);
					text(r, buf, lx, y + TL_POLL_Y + 3, &r->th.loss, 0);
					label_end[k] = lx + tw + 2;
				}
				labelled = true;
			}
		}
	}
	free(label_end);
}

/* Search matches: a tick over the lane at each matched poll (at any zoom,
 * summaries included), the poll itself outlined when it is a box. */
static void draw_marks(struct rc *r)
{
	const struct tl_view *v = r->v;
	if (!v->n_marks)
		return;
	/* marks are sorted by ts: the first that may be in view, by binary
	 * search over the longest-possible start. */
	size_t lo = 0, hi = v->n_marks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->marks[mid].ts < v->t0 - (v->t1 - v->t0))
			lo = mid + 1;
		else
			hi = mid;
	}
	double last_x = -1e9;
	int last_lane = -1;
	for (size_t i = lo; i < v->n_marks && v->marks[i].ts <= v->t1; i++) {
		const struct tl_mark *m = &v->marks[i];
		if (m->ts + m->dur < v->t0)
			continue;
		int lane = tl_db_lane_of_worker(r->db, m->worker_id);
		if (lane < 0 || !tl_view_lane_visible(v, r->l, lane))
			continue;
		double x = floor(fmax(px(r, m->ts), TL_LABEL_W));
		if (lane == last_lane && x - last_x < 2)
			continue;
		double y = tl_view_lane_screen_y(v, r->l, lane);
		double w = fmax(2, px(r, m->ts + m->dur) - x);
		rect(r, &r->th.match, x, y + 1, fmin(w, r->v->width - x), 3);
		last_x = x;
		last_lane = lane;
	}
}

static void draw_stalls(struct rc *r)
{
	const struct tl_db *db = r->db;
	int64_t from = r->v->t0 - db->max_stall_dur;
	double *last_x = calloc(db->n_lanes ? db->n_lanes : 1, sizeof *last_x);
	if (!last_x)
		return;
	for (size_t k = 0; k < db->n_lanes; k++)
		last_x[k] = -1e9;
	for (size_t i = tl_db_stall_lower_bound(db, from); i < db->n_stalls; i++) {
		const struct tl_stall *st = &db->stalls[i];
		if (st->ts > r->v->t1)
			break;
		if (st->lane < 0 || (size_t)st->lane >= db->n_lanes || st->ts + st->dur < r->v->t0 ||
		    !tl_view_lane_visible(r->v, r->l, st->lane))
			continue;
		double y = tl_view_lane_screen_y(r->v, r->l, st->lane);
		double x0 = px(r, st->ts), x1 = px(r, st->ts + st->dur);
		double bx0 = fmax(x0, TL_LABEL_W), bx1 = fmin(x1, r->v->width);
		/* The stalled span: a red bar along the bottom of the poll band. */
		if (bx1 > bx0)
			rect(r, &r->th.stall, bx0, y + TL_POLL_Y + TL_POLL_H - 3, fmax(bx1 - bx0, 2), 3);
		if (x0 >= TL_LABEL_W && x0 - last_x[st->lane] >= 1) {
			triangle_down(r, &r->th.stall, floor(x0), y + 1, 5);
			last_x[st->lane] = x0;
		}
		if (r->v->selected_stall == st->id)
			outline(r, &r->th.stall, bx0 - 2, y + 1, fmax(bx1 - bx0, 2) + 4, TL_LANE_H - 3, 2);
	}
	free(last_x);
}

static void draw_selection(struct rc *r)
{
	const struct tl_view *v = r->v;
	if (v->sel_t1 <= v->sel_t0)
		return;
	double x0 = fmax(px(r, v->sel_t0), TL_LABEL_W), x1 = fmin(px(r, v->sel_t1), v->width);
	if (x1 < x0)
		return;
	rect(r, &r->th.selection, x0, TL_RULER_H, fmax(x1 - x0, 1), r->plot_bottom - TL_RULER_H);
	GdkRGBA edge = with_alpha(r->th.selection, 3);
	rect(r, &edge, x0, 0, 1, r->plot_bottom);
	rect(r, &edge, x1, 0, 1, r->plot_bottom);
	char buf[64];
	tl_format_duration(buf, sizeof buf, v->sel_t1 - v->sel_t0, 0);
	int tw = text_width(r, buf);
	double lx = (x0 + x1 - tw) / 2;
	rect(r, &r->th.bg, lx - 3, TL_RULER_H - 17, tw + 6, 15);
	text(r, buf, lx, TL_RULER_H - 17, &r->th.fg, 0);
}

static void draw_labels(struct rc *r)
{
	rect(r, &r->th.label_bg, 0, TL_RULER_H, TL_LABEL_W, r->plot_bottom - TL_RULER_H);
	rect(r, &r->th.separator, TL_LABEL_W - 1, TL_RULER_H, 1, r->plot_bottom - TL_RULER_H);
	for (size_t g = 0; g < r->db->n_groups; g++) {
		if (r->l->group_y[g] < 0)
			continue;
		double y = TL_RULER_H + r->l->group_y[g] - r->v->scroll_y;
		if (y + TL_GROUP_H < TL_RULER_H || y > r->plot_bottom)
			continue;
		rect(r, &r->th.group_bg, 0, y, r->v->width, TL_GROUP_H);
		r->bold = true;
		text(r, r->db->groups[g].title, 8, y + 3, &r->th.fg, r->v->width - 16);
		r->bold = false;
	}
	for (size_t i = 0; i < r->db->n_lanes; i++) {
		if (!tl_view_lane_visible(r->v, r->l, (int)i))
			continue;
		double y = tl_view_lane_screen_y(r->v, r->l, (int)i);
		const struct tl_lane *lane = &r->db->lanes[i];
		if (r->v->selected_worker && lane->worker_id == r->v->selected_worker) {
			rect(r, &r->th.selection, 0, y, TL_LABEL_W - 1, TL_LANE_H - 1);
			rect(r, &r->th.highlight, 0, y, 3, TL_LANE_H - 1);
		}
		rect(r, &r->th.separator, 0, y + TL_LANE_H - 1, TL_LABEL_W, 1);
		text(r, lane->label, 10, y + 5, &r->th.fg, TL_LABEL_W - 16);
		const struct tl_lane_scene *ls = scene_lane(r, i);
		if (lane->worker_id && ls && ls->fetched && r->k == 1 && r->off == 0) {
			/* The lane's share of the view in polls: exact where the bars
			 * are only a picture of it. */
			char buf[160];
			double pc = 100 * ls->busy_share;
			snprintf(buf, sizeof buf, pc >= 10 || pc == 0 ? "%s · busy %.0f%%" : "%s · busy %.1f%%", lane->detail, pc);
			text(r, buf, 10, y + 21, &r->th.fg_dim, TL_LABEL_W - 16);
		} else {
			text(r, lane->detail, 10, y + 21, &r->th.fg_dim, TL_LABEL_W - 16);
		}
	}
}

/* One legend entry: a swatch and a name; returns the next x. */
static double legend_item(struct rc *r, double x, double y, const GdkRGBA *c, double sw, double sh, const char *name)
{
	if (x > r->v->width - 40)
		return x;
	rect(r, c, x, y + 8 - sh / 2, sw, sh);
	return x + sw + 4 + text(r, name, x + sw + 4, y + 1, &r->th.fg, 0) + 14;
}

/* Lanes too dense for their polls show summaries even when zoomed in. */
static double dense_legend(struct rc *r, double x, double y)
{
	char buf[96], d[32];
	tl_format_duration(d, sizeof d, r->sc->dense_bucket, r->sc->dense_bucket);
	snprintf(buf, sizeof buf, "busy per %s on dense lanes", d);
	return legend_item(r, x, y, &r->th.busy_summary, 10, 10, buf);
}

/* The culprits of the boxes in view, the most common first (up to a few),
 * then the colour of polls without one. */
static double culprit_legend(struct rc *r, double x, double y)
{
	enum { MAX = 32 };
	const char *names[MAX];
	size_t counts[MAX], n = 0;
	for (size_t i = 0; i < r->sc->n_lanes; i++) {
		const struct tl_lane_scene *ls = &r->sc->lanes[i];
		for (size_t k = 0; ls->fetched && k < ls->n_boxes; k++) {
			const char *c = ls->boxes[k].culprit;
			if (!c)
				continue;
			size_t j = 0;
			while (j < n && names[j] != c)   /* the examiner interns names */
				j++;
			if (j == n && n < MAX) {
				names[n] = c;
				counts[n++] = 0;
			}
			if (j < n)
				counts[j]++;
		}
	}
	for (size_t shown = 0; shown < 5 && x < r->v->width * 0.5; shown++) {
		size_t best = n;
		for (size_t j = 0; j < n; j++)
			if (counts[j] && (best == n || counts[j] > counts[best]))
				best = j;
		if (best == n)
			break;
		GdkRGBA c = tl_culprit_color(names[best], &r->th);
		x = legend_item(r, x, y, &c, 10, 10, names[best]);
		counts[best] = 0;
	}
	GdkRGBA none = tl_culprit_color(NULL, &r->th);
	return legend_item(r, x, y, &none, 10, 10, "no culprit (< 1 ms or no stack)");
}

static void draw_legend(struct rc *r)
{
	double y = r->plot_bottom + 4;
	rect(r, &r->th.ruler_bg, 0, r->plot_bottom, r->v->width, TL_LEGEND_H);
	rect(r, &r->th.separator, 0, r->plot_bottom, r->v->width, 1);
	double x = 8;
	if (r->sc->summary_bucket) {
		char buf[96], d[32];
		tl_format_duration(d, sizeof d, r->sc->summary_bucket, r->sc->summary_bucket);
		snprintf(buf, sizeof buf, "busy share per %s, bar height √share (zoom in for polls)", d);
		x = legend_item(r, x, y, &r->th.busy_summary, 10, 10, buf);
	} else if (r->v->color == TL_COLOR_DURATION) {
		if (r->sc->dense_bucket)
			x = dense_legend(r, x, y);
		for (int k = 0; k < TL_DUR_CLASSES; k++) {
			GdkRGBA c = tl_duration_color(k);
			x = legend_item(r, x, y, &c, 10, 10, tl_duration_class_name(k));
		}
	} else if (r->v->color == TL_COLOR_CULPRIT) {
		if (r->sc->dense_bucket)
			x = dense_legend(r, x, y);
		x = culprit_legend(r, x, y);
	} else {
		/* Locations: the first few (a trace with hundreds shows them in
		 * tooltips instead). */
		size_t shown = 0;
		if (r->sc->dense_bucket)
			x = dense_legend(r, x, y);
		for (size_t i = 0; i < r->db->n_locations && shown < 6 && x < r->v->width * 0.45; i++, shown++) {
			GdkRGBA c = tl_location_color(r->db->locations[i].id);
			x = legend_item(r, x, y, &c, 10, 10, r->db->locations[i].short_name);
		}
	}
	x = legend_item(r, x, y, &r->th.park, 16, TL_PARK_H, "parked");
	x = legend_item(r, x, y, &r->th.on_cpu, 12, TL_CPU_H, "on CPU");
	x = legend_item(r, x, y, &r->th.blocked, 12, TL_CPU_H + TL_BLOCKED_RISE, "blocked in a poll");
	x = legend_item(r, x, y, &r->th.idle_off, 12, TL_CPU_H, "off CPU, idle");
	x = legend_item(r, x, y, &r->th.preempted, 12, TL_CPU_H, "preempted");
	x = legend_item(r, x, y, &r->th.sample, 1, 8, "sample");
	if (x < r->v->width - 40) {
		triangle_down(r, &r->th.stall, x + 5, y + 3, 5);
		x += 14 + text(r, "stall", x + 14, y + 1, &r->th.fg, 0) + 14;
	}
	if (x < r->v->width - 40) {
		hatch(r, &r->th.loss, &r->th.loss_bg, x, y + 2, 14, 12);
		text(r, "lost data", x + 18, y + 1, &r->th.fg, 0);
	}
}

void tl_render(GtkSnapshot *s, PangoContext *pc, struct tl_db *db, const struct tl_layout *l,
	       const struct tl_scene *sc, const struct tl_view *v)
{
	struct rc r = { .s = s, .db = db, .l = l, .sc = sc, .v = v };
	tl_theme_init(&r.th, v->dark);
	r.plot_w = tl_view_plot_w(v);
	r.plot_bottom = tl_view_plot_bottom(v);
	tl_scene_map(sc, v, &r.k, &r.off);
	r.sc_plot_w = tl_scene_plot_w(sc);
	r.pc = pc;
	r.font = pango_font_description_from_string(TL_FONT);

	rect(&r, &r.th.bg, 0, 0, v->width, v->height);
	gtk_snapshot_push_clip(s, &GRAPHENE_RECT_INIT(0, TL_RULER_H, (float)v->width,
						       (float)(r.plot_bottom - TL_RULER_H)));
	/* Few rectangles are cheaper as nodes than a canvas the size of the plot. */
	size_t rects = 0;
	int top = r.plot_bottom, bottom = TL_RULER_H; /* of the visible lanes */
	for (size_t i = 0; i < db->n_lanes && i < sc->n_lanes; i++) {
		const struct tl_lane_scene *ls = &sc->lanes[i];
		if (!ls->fetched || !tl_view_lane_visible(v, l, (int)i))
			continue;
		rects += 2 + (ls->summary ? 3 * (size_t)r.plot_w : ls->n_boxes + ls->n_parks + ls->n_cpu + ls->n_ticks);
		int y = tl_view_lane_screen_y(v, l, (int)i);
		top = y < top ? y : top;
		bottom = y + TL_LANE_H > bottom ? y + TL_LANE_H : bottom;
	}
	top = top < TL_RULER_H ? TL_RULER_H : top;
	bottom = bottom > r.plot_bottom ? r.plot_bottom : bottom;
	/* The canvas covers the lanes only, not the empty plot below them. */
	if (bottom > top &&
	    (v->raster == TL_RASTER_CANVAS || (v->raster == TL_RASTER_AUTO && rects > TL_CANVAS_MIN_RECTS)))
		tl_canvas_init(&r.cv, TL_LABEL_W, top, r.plot_w, bottom - top, v->scale, &r.th.bg);
	for (size_t i = 0; i < db->n_lanes; i++)
		if (tl_view_lane_visible(v, l, (int)i))
			draw_lane(&r, i);
	tl_canvas_append(&r.cv, s);
	for (size_t i = 0; i < db->n_lanes; i++)
		if (tl_view_lane_visible(v, l, (int)i))
			draw_lane_overlays(&r, i);
	draw_grid(&r);
	draw_losses(&r);
	draw_marks(&r);
	draw_stalls(&r);
	draw_selection(&r);
	draw_labels(&r);
	if (db->n_lanes == 0)
		text(&r, "This trace has no worker lanes and no sampled threads.", TL_LABEL_W + 16,
		     TL_RULER_H + 16, &r.th.fg_dim, 0);
	gtk_snapshot_pop(s);
	draw_ruler(&r);
	if (v->legend)
		draw_legend(&r);
	pango_font_description_free(r.font);
}
