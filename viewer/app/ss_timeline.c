/*
 * ss_timeline.c - the timeline widget; see ss_timeline.h.
 *
 * The scene (what the database returned for a window) is fetched by the query
 * worker (ss_scene_fetch.c) only when the window, the size or the scroll
 * position change, so hover, selection and theme changes redraw without a
 * query, and a pan or zoom redraws at once from the last scene, stretched,
 * until the new one arrives. Tooltip text is fetched the same way and shown
 * when it arrives, if the pointer is still on the same poll.
 *
 * The view (struct tl_view) is this widget's drawing state; the session holds
 * what others may see or change (the selection, the visible range, the range
 * selection), and the notify handlers below copy it into the view.
 */
#include "ss_timeline.h"

#include <math.h>
#include <string.h>

#include "ss_scene_fetch.h"
#include "ss_style.h"
#include "tl_query.h"
#include "tl_render.h"
#include "tl_ticks.h"

struct hist {
	int64_t t0, t1;
};

/* The tooltip text of one poll box, fetched on hover. */
struct tip {
	int64_t poll_id;
	uint32_t n;
	char *text;                  /* NULL while being fetched */
	bool requested;
};

struct _SsTimeline {
	GtkWidget parent;
	SsSession *session;
	gulong session_handlers[6];
	struct tl_db *db;            /* the session's; metadata only */
	struct tl_layout layout;
	struct ss_scene_fetch fetch;
	struct tl_scene empty;       /* drawn before the first scene arrives */
	struct tl_view view;
	struct tip tip;
	GArray *back, *fwd;          /* of struct hist */
	double ptr_x, ptr_y;         /* last pointer position, widget coords */
	bool ptr_in;
	/* drag state */
	double drag_x0, drag_y0;
	int64_t drag_t0, drag_tdur;
	int drag_scroll0;
	bool drag_select, drag_moved;
	double zoom_scale0;
	int64_t zoom_t0, zoom_t1;
	GSimpleActionGroup *actions;
	bool color_chosen;          /* the user picked a colour mode: keep it */
	guint frames;
};

G_DEFINE_FINAL_TYPE(SsTimeline, ss_timeline, GTK_TYPE_WIDGET)

static void clamp_scroll(SsTimeline *self)
{
	int visible = tl_view_plot_bottom(&self->view) - TL_RULER_H;
	int max = self->layout.content_h - visible;
	if (self->view.scroll_y > max)
		self->view.scroll_y = max;
	if (self->view.scroll_y < 0)
		self->view.scroll_y = 0;
}

static void want_scene(SsTimeline *self)
{
	if (self->db && self->view.width > TL_LABEL_W && self->view.height > TL_RULER_H)
		ss_scene_fetch_want(&self->fetch, &self->layout, &self->view);
}

static void view_changed(SsTimeline *self)
{
	clamp_scroll(self);
	gtk_widget_queue_draw(GTK_WIDGET(self));
	want_scene(self);
	if (self->db)
		ss_session_set_visible_range(self->session, self->view.t0, self->view.t1);
}

static void scene_arrived(void *user)
{
	SsTimeline *self = user;
	gtk_widget_queue_draw(GTK_WIDGET(self));
	want_scene(self);   /* the view may have moved on meanwhile */
}

static const struct tl_scene *drawn_scene(SsTimeline *self)
{
	return self->fetch.ready ? self->fetch.ready : &self->empty;
}

/* Plot x of the view -> x of the scene drawn, for hit testing (*k: scene px
 * per view px). */
static double scene_x(SsTimeline *self, double plot_x, double *k)
{
	double sk, off;
	tl_scene_map(drawn_scene(self), &self->view, &sk, &off);
	*k = sk;
	return (plot_x - off) / sk;
}

static const struct tl_box *box_at(SsTimeline *self, int lane, double plot_x)
{
	double k;
	double x = scene_x(self, plot_x, &k);
	return tl_scene_box_at(drawn_scene(self), lane, x, 2 / k);
}

static void history_push(SsTimeline *self)
{
	struct hist h = { self->view.t0, self->view.t1 };
	if (self->back->len) {
		struct hist *last = &g_array_index(self->back, struct hist, self->back->len - 1);
		if (last->t0 == h.t0 && last->t1 == h.t1)
			return;
	}
	g_array_append_val(self->back, h);
	if (self->back->len > 200)
		g_array_remove_index(self->back, 0);
	g_array_set_size(self->fwd, 0);
}

static void snapshot(GtkWidget *w, GtkSnapshot *s)
{
	SsTimeline *self = SS_TIMELINE(w);
	self->view.width = gtk_widget_get_width(w);
	self->view.height = gtk_widget_get_height(w);
	self->view.scale = gtk_widget_get_scale_factor(w);
	self->view.dark = ss_style_widget_is_dark(w);
	self->view.legend = true;
	if (!self->db || self->view.width <= TL_LABEL_W || self->view.height <= TL_RULER_H)
		return;
	clamp_scroll(self);
	/* A new size or the first frame: ask for the scene, draw what there is. */
	want_scene(self);
	tl_render(s, gtk_widget_get_pango_context(w), self->db, &self->layout, drawn_scene(self), &self->view);
	self->frames++;
}

static double plot_x(double wx)
{
	return wx - TL_LABEL_W;
}

/* Zoom anchor: the pointer when it is over the plot, else the middle. */
static double anchor_x(SsTimeline *self)
{
	if (self->ptr_in && self->ptr_x > TL_LABEL_W)
		return plot_x(self->ptr_x);
	return tl_view_plot_w(&self->view) / 2.0;
}

static void zoom(SsTimeline *self, double factor, double ax)
{
	if (!self->db)
		return;
	tl_view_zoom(&self->view, self->db, factor, ax);
	view_changed(self);
}

/* ---- input ---- */

static gboolean on_scroll(GtkEventControllerScroll *c, double dx, double dy, gpointer data)
{
	SsTimeline *self = data;
	if (!self->db)
		return FALSE;
	GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(c));
	GdkScrollUnit unit = gtk_event_controller_scroll_get_unit(c);
	double step = unit == GDK_SCROLL_UNIT_WHEEL ? 1.0 : 0.05;
	if (mods & GDK_CONTROL_MASK) {
		history_push(self);
		zoom(self, pow(1.25, -dy * step), anchor_x(self));
	} else if ((mods & GDK_SHIFT_MASK) || fabs(dx) > fabs(dy)) {
		double d = fabs(dx) > fabs(dy) ? dx : dy;
		tl_view_pan(&self->view, self->db, d * step * 80 * (unit == GDK_SCROLL_UNIT_WHEEL ? 1 : 20));
		view_changed(self);
	} else if (self->layout.content_h > tl_view_plot_bottom(&self->view) - TL_RULER_H) {
		/* Lanes taller than the window: the wheel scrolls them. */
		self->view.scroll_y += (int)(dy * (unit == GDK_SCROLL_UNIT_WHEEL ? 3 * TL_LANE_H / 2 : 1));
		view_changed(self);
	} else {
		tl_view_pan(&self->view, self->db, dy * step * 80 * (unit == GDK_SCROLL_UNIT_WHEEL ? 1 : 20));
		view_changed(self);
	}
	return TRUE;
}

static void on_motion(GtkEventControllerMotion *c, double x, double y, gpointer data)
{
	(void)c;
	SsTimeline *self = data;
	self->ptr_x = x;
	self->ptr_y = y;
	self->ptr_in = true;
}

static void on_leave(GtkEventControllerMotion *c, gpointer data)
{
	(void)c;
	SS_TIMELINE(data)->ptr_in = false;
}

static void on_drag_begin(GtkGestureDrag *g, double x, double y, gpointer data)
{
	SsTimeline *self = data;
	GdkModifierType mods = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(g));
	self->drag_x0 = x;
	self->drag_y0 = y;
	self->drag_t0 = self->view.t0;
	self->drag_tdur = self->view.t1 - self->view.t0;
	self->drag_scroll0 = self->view.scroll_y;
	self->drag_select = (mods & GDK_SHIFT_MASK) != 0;
	self->drag_moved = false;
}

static void on_drag_update(GtkGestureDrag *g, double dx, double dy, gpointer data)
{
	(void)g;
	SsTimeline *self = data;
	if (!self->db)
		return;
	if (!self->drag_moved && fabs(dx) < 3 && fabs(dy) < 3)
		return;
	if (!self->drag_moved && !self->drag_select)
		history_push(self);
	self->drag_moved = true;
	if (self->drag_select) {
		int64_t a = tl_view_time(&self->view, plot_x(self->drag_x0));
		int64_t b = tl_view_time(&self->view, plot_x(self->drag_x0 + dx));
		self->view.sel_t0 = MIN(a, b);
		self->view.sel_t1 = MAX(a, b);
		gtk_widget_queue_draw(GTK_WIDGET(self));
		return;
	}
	double npp = (double)self->drag_tdur / tl_view_plot_w(&self->view);
	int64_t t0 = self->drag_t0 - (int64_t)(dx * npp);
	tl_view_set_range(&self->view, self->db, t0, t0 + self->drag_tdur);
	self->view.scroll_y = self->drag_scroll0 - (int)dy;
	view_changed(self);
}

static void on_drag_end(GtkGestureDrag *g, double dx, double dy, gpointer data)
{
	(void)g;
	(void)dx;
	(void)dy;
	SsTimeline *self = data;
	if (self->drag_select && self->drag_moved && self->view.sel_t1 > self->view.sel_t0)
		ss_session_set_range_selection(self->session, self->view.sel_t0, self->view.sel_t1);
}

static void on_click(GtkGestureClick *g, int n, double x, double y, gpointer data)
{
	(void)g;
	(void)n;
	SsTimeline *self = data;
	if (!self->db || self->drag_moved)
		return;
	int lane = tl_view_lane_at(&self->view, &self->layout, y);
	if (x < TL_LABEL_W) {
		/* A worker's label selects the worker. */
		int64_t worker = lane >= 0 ? self->db->lanes[lane].worker_id : 0;
		ss_session_select(self->session, worker ? SS_SEL_WORKER : SS_SEL_NONE, worker, 0);
		return;
	}
	const struct tl_box *b = box_at(self, lane, plot_x(x));
	if (b) {
		ss_timeline_select_poll(self, b->poll_id, b->task_id);
	} else {
		ss_timeline_select_poll(self, 0, 0);
	}
}

static void on_zoom_begin(GtkGesture *g, GdkEventSequence *seq, gpointer data)
{
	(void)g;
	(void)seq;
	SsTimeline *self = data;
	self->zoom_t0 = self->view.t0;
	self->zoom_t1 = self->view.t1;
	history_push(self);
}

static void on_zoom_scale(GtkGestureZoom *g, double scale, gpointer data)
{
	SsTimeline *self = data;
	if (!self->db || scale <= 0)
		return;
	double cx, cy;
	if (!gtk_gesture_get_bounding_box_center(GTK_GESTURE(g), &cx, &cy))
		cx = TL_LABEL_W + tl_view_plot_w(&self->view) / 2.0;
	/* Relative to the view at the gesture's start, so the scale is not
	 * compounded per event. */
	self->view.t0 = self->zoom_t0;
	self->view.t1 = self->zoom_t1;
	zoom(self, scale, plot_x(cx));
}

/* ---- tooltip text, fetched ---- */

struct tip_job {
	int64_t poll_id;
	uint32_t n;
	GString *text;
};

static void tip_job_free(void *p)
{
	struct tip_job *j = p;
	g_string_free(j->text, TRUE);
	g_free(j);
}

static void tip_job_run(struct tl_db *db, void *p)
{
	struct tip_job *j = p;
	tl_query_poll_tooltip(db, j->poll_id, j->n, j->text);
}

static void tip_job_done(void *p, void *user)
{
	struct tip_job *j = p;
	SsTimeline *self = user;
	if (j->poll_id != self->tip.poll_id || j->n != self->tip.n)
		return;
	g_free(self->tip.text);
	self->tip.text = g_strdup(j->text->str);
	/* Shown now if the pointer is still there: GTK asks again. */
	gtk_widget_trigger_tooltip_query(GTK_WIDGET(self));
}

static bool tip_ready(SsTimeline *self, const struct tl_box *b)
{
	return self->tip.text && self->tip.poll_id == b->poll_id && self->tip.n == b->n;
}

static void tip_request(SsTimeline *self, const struct tl_box *b)
{
	if (self->tip.requested && self->tip.poll_id == b->poll_id && self->tip.n == b->n)
		return;
	g_clear_pointer(&self->tip.text, g_free);
	self->tip.poll_id = b->poll_id;
	self->tip.n = b->n;
	self->tip.requested = true;
	struct tip_job *j = g_new0(struct tip_job, 1);
	j->poll_id = b->poll_id;
	j->n = b->n;
	j->text = g_string_new(NULL);
	ss_session_submit(self->session, &self->tip, tip_job_run, tip_job_done, j, tip_job_free, self);
}

static void tip_reset(SsTimeline *self)
{
	ss_session_cancel(self->session, &self->tip);
	g_clear_pointer(&self->tip.text, g_free);
	self->tip.requested = false;
	self->tip.poll_id = 0;
}

/* The tooltip for widget point (x, y); NULL when there is none yet. A poll's
 * text is fetched on first hover, and GTK asks again when it arrives. */
static char *tooltip_text(SsTimeline *self, int x, int y)
{
	if (!self->db || x < TL_LABEL_W)
		return NULL;
	int lane = tl_view_lane_at(&self->view, &self->layout, y);
	if (lane < 0)
		return NULL;
	GString *s = g_string_new(NULL);
	/* A stall marker wins over the poll beneath it. */
	for (size_t i = tl_db_stall_lower_bound(self->db, self->view.t0 - self->db->max_stall_dur); i < self->db->n_stalls; i++) {
		const struct tl_stall *st = &self->db->stalls[i];
		if (st->ts > self->view.t1)
			break;
		double sx = TL_LABEL_W + tl_view_x(&self->view, st->ts);
		if (st->lane == lane && fabs(sx - x) <= 6 && y - tl_view_lane_screen_y(&self->view, &self->layout, lane) < 10) {
			char d[48];
			tl_format_duration(d, sizeof d, st->dur, 0);
			g_string_append_printf(s, "STALL: poll ran %s without yielding (%s)\nclick the poll, or open the Stalls tab\n",
					       d, st->kind);
			break;
		}
	}
	const struct tl_box *b = box_at(self, lane, plot_x(x));
	int dy = y - tl_view_lane_screen_y(&self->view, &self->layout, lane);
	if (b && dy < TL_CPU_Y) {
		if (tip_ready(self, b))
			g_string_append(s, self->tip.text);
		else
			tip_request(self, b);
	} else if (dy >= TL_CPU_Y) {
		double k;
		const struct tl_span *sp = tl_scene_cpu_at(drawn_scene(self), lane, scene_x(self, plot_x(x), &k));
		if (sp)
			g_string_append(s, sp->kind == TL_SPAN_BLOCKED ? "off CPU: blocked" :
					   sp->kind == TL_SPAN_PREEMPTED ? "off CPU: preempted (runnable)" : "on CPU");
	}
	return g_string_free(s, s->len == 0);
}

static gboolean on_query_tooltip(GtkWidget *w, int x, int y, gboolean kb, GtkTooltip *tip, gpointer data)
{
	(void)w;
	(void)kb;
	char *text = tooltip_text(data, x, y);
	if (!text)
		return FALSE;
	gtk_tooltip_set_text(tip, text);
	g_free(text);
	return TRUE;
}

/* ---- actions ---- */

static void act_zoom(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	SsTimeline *self = data;
	history_push(self);
	zoom(self, strcmp(g_action_get_name(G_ACTION(a)), "zoom-in") == 0 ? 2.0 : 0.5, anchor_x(self));
}

static void act_pan(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	SsTimeline *self = data;
	if (!self->db)
		return;
	double d = tl_view_plot_w(&self->view) / 4.0;
	tl_view_pan(&self->view, self->db, strcmp(g_action_get_name(G_ACTION(a)), "pan-left") == 0 ? -d : d);
	view_changed(self);
}

static void act_fit(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsTimeline *self = data;
	if (!self->db)
		return;
	history_push(self);
	tl_view_fit(&self->view, self->db);
	view_changed(self);
}

static void act_zoom_selection(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsTimeline *self = data;
	if (self->view.sel_t1 > self->view.sel_t0)
		ss_timeline_show_range(self, self->view.sel_t0, self->view.sel_t1);
}

static void act_history(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	SsTimeline *self = data;
	bool back = strcmp(g_action_get_name(G_ACTION(a)), "back") == 0;
	GArray *from = back ? self->back : self->fwd, *to = back ? self->fwd : self->back;
	if (!self->db || !from->len)
		return;
	struct hist cur = { self->view.t0, self->view.t1 };
	struct hist h = g_array_index(from, struct hist, from->len - 1);
	g_array_set_size(from, from->len - 1);
	g_array_append_val(to, cur);
	tl_view_set_range(&self->view, self->db, h.t0, h.t1);
	view_changed(self);
}

static void act_clear(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsTimeline *self = data;
	self->view.sel_t0 = self->view.sel_t1 = 0;
	ss_session_set_range_selection(self->session, 0, 0);
	ss_session_select(self->session, SS_SEL_NONE, 0, 0);
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void act_color(GSimpleAction *a, GVariant *p, gpointer data)
{
	SsTimeline *self = data;
	g_simple_action_set_state(a, p);
	self->color_chosen = true;
	const char *m = g_variant_get_string(p, NULL);
	ss_timeline_set_color_mode(self, !strcmp(m, "duration") ? TL_COLOR_DURATION
					 : !strcmp(m, "culprit") ? TL_COLOR_CULPRIT : TL_COLOR_LOCATION);
}

/* The stall after (dir > 0) or before the selected one in time; from the
 * middle of the view when no stall is selected. */
static void act_walk_stall(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	SsTimeline *self = data;
	if (!self->db || !self->db->n_stalls)
		return;
	bool next = strcmp(g_action_get_name(G_ACTION(a)), "next-stall") == 0;
	const struct ss_selection *sel = ss_session_get_selection(self->session);
	size_t n = self->db->n_stalls, at = n;
	for (size_t i = 0; sel->kind == SS_SEL_STALL && i < n; i++)
		if (self->db->stalls[i].id == sel->id)
			at = i;
	size_t want;
	if (at < n) {
		if (next ? at + 1 >= n : at == 0)
			return;   /* the last (first) one: stay */
		want = next ? at + 1 : at - 1;
	} else {
		int64_t mid = self->view.t0 + (self->view.t1 - self->view.t0) / 2;
		size_t i = tl_db_stall_lower_bound(self->db, mid);
		if (next ? i >= n : i == 0)
			return;
		want = next ? i : i - 1;
	}
	ss_session_select(self->session, SS_SEL_STALL, self->db->stalls[want].id, self->db->stalls[want].task_id);
}

static const GActionEntry action_entries[] = {
	{ "zoom-in", act_zoom, NULL, NULL, NULL, { 0 } },
	{ "zoom-out", act_zoom, NULL, NULL, NULL, { 0 } },
	{ "pan-left", act_pan, NULL, NULL, NULL, { 0 } },
	{ "pan-right", act_pan, NULL, NULL, NULL, { 0 } },
	{ "fit", act_fit, NULL, NULL, NULL, { 0 } },
	{ "zoom-selection", act_zoom_selection, NULL, NULL, NULL, { 0 } },
	{ "back", act_history, NULL, NULL, NULL, { 0 } },
	{ "forward", act_history, NULL, NULL, NULL, { 0 } },
	{ "clear-selection", act_clear, NULL, NULL, NULL, { 0 } },
	{ "color-by", act_color, "s", "'location'", NULL, { 0 } },
	{ "next-stall", act_walk_stall, NULL, NULL, NULL, { 0 } },
	{ "prev-stall", act_walk_stall, NULL, NULL, NULL, { 0 } },
};

/* Without a trace there is nothing to zoom, pan or walk: the header bar's
 * buttons and the keys say so by being off. */
static void enable_actions(SsTimeline *self, bool on)
{
	for (size_t i = 0; i < G_N_ELEMENTS(action_entries); i++) {
		GAction *a = g_action_map_lookup_action(G_ACTION_MAP(self->actions), action_entries[i].name);
		g_simple_action_set_enabled(G_SIMPLE_ACTION(a), on);
	}
}

/* ---- the session ---- */

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	tip_reset(self);
	ss_scene_fetch_reset(&self->fetch);
	tl_layout_free(&self->layout);
	self->db = ss_session_get_db(self->session);
	g_array_set_size(self->back, 0);
	g_array_set_size(self->fwd, 0);
	enum tl_color_mode mode = self->view.color;
	memset(&self->view, 0, sizeof self->view);
	self->view.color = mode;
	enable_actions(self, self->db != NULL);
	if (self->db && !self->color_chosen) {
		/* Until the user picks a mode: by culprit when every poll would get
		 * the same spawn-location colour, else by location. */
		self->view.color = tl_db_locations_alike(self->db) ? TL_COLOR_CULPRIT : TL_COLOR_LOCATION;
		GAction *a = g_action_map_lookup_action(G_ACTION_MAP(self->actions), "color-by");
		g_simple_action_set_state(G_SIMPLE_ACTION(a), g_variant_new_string(self->view.color == TL_COLOR_CULPRIT
											   ? "culprit" : "location"));
	}
	if (self->db) {
		tl_layout_compute(&self->layout, self->db);
		self->view.width = MAX(gtk_widget_get_width(GTK_WIDGET(self)), 800);
		self->view.height = gtk_widget_get_height(GTK_WIDGET(self));
		self->view.legend = true;
		tl_view_fit(&self->view, self->db);
	}
	view_changed(self);
}

/* Shows a stall with half its length of context on each side, its lane in view. */
static void show_stall(SsTimeline *self, int64_t stall_id)
{
	for (size_t i = 0; i < self->db->n_stalls; i++) {
		const struct tl_stall *st = &self->db->stalls[i];
		if (st->id != stall_id)
			continue;
		int64_t pad = MAX(st->dur / 2, 1000000);
		ss_timeline_show_range(self, st->ts - pad, st->ts + st->dur + pad);
		if (st->lane >= 0 && self->layout.lane_y[st->lane] >= 0) {
			int y = self->layout.lane_y[st->lane];
			int visible = tl_view_plot_bottom(&self->view) - TL_RULER_H;
			if (y < self->view.scroll_y || y + TL_LANE_H > self->view.scroll_y + visible)
				self->view.scroll_y = y - visible / 3;
		}
		self->view.selected_poll = st->poll_id;
		view_changed(self);
		break;
	}
}

static void on_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	const struct ss_selection *sel = ss_session_get_selection(self->session);
	struct tl_view *v = &self->view;
	v->selected_poll = sel->kind == SS_SEL_POLL ? sel->id : 0;
	v->highlight_task = sel->kind == SS_SEL_POLL ? sel->task_id : sel->kind == SS_SEL_TASK ? sel->id : 0;
	v->selected_stall = sel->kind == SS_SEL_STALL ? sel->id : 0;
	v->selected_worker = sel->kind == SS_SEL_WORKER ? sel->id : 0;
	if (self->db && sel->kind == SS_SEL_STALL)
		show_stall(self, sel->id);
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_visible_range(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	const struct ss_range *r = ss_session_get_visible_range(self->session);
	/* Ours, echoed back; or someone else's: then it is a move like any other. */
	if (!self->db || r->t1 <= r->t0 || (r->t0 == self->view.t0 && r->t1 == self->view.t1))
		return;
	ss_timeline_show_range(self, r->t0, r->t1);
}

static void on_marks(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	struct tl_view *v = &self->view;
	bool dim;
	v->marks = ss_session_get_marks(self->session, &v->n_marks, &v->mark_ids, &dim);
	v->dim_unmatched = dim;
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void on_shown_lanes(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	if (!self->db)
		return;
	tl_layout_free(&self->layout);
	tl_layout_compute_shown(&self->layout, self->db, ss_session_get_shown_lanes(self->session));
	self->view.scroll_y = 0;
	/* Another layout: the scene in hand is for other lanes. */
	ss_scene_fetch_reset(&self->fetch);
	view_changed(self);
}

static void on_range_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTimeline *self = data;
	const struct ss_range *r = ss_session_get_range_selection(self->session);
	self->view.sel_t0 = r->t0;
	self->view.sel_t1 = r->t1;
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

/* ---- object ---- */

static void dispose(GObject *o)
{
	SsTimeline *self = SS_TIMELINE(o);
	if (self->session) {
		for (size_t i = 0; i < G_N_ELEMENTS(self->session_handlers); i++)
			g_clear_signal_handler(&self->session_handlers[i], self->session);
		tip_reset(self);
		ss_scene_fetch_reset(&self->fetch);
		g_clear_object(&self->session);
	}
	tl_layout_free(&self->layout);
	g_clear_pointer(&self->back, g_array_unref);
	g_clear_pointer(&self->fwd, g_array_unref);
	g_clear_object(&self->actions);
	G_OBJECT_CLASS(ss_timeline_parent_class)->dispose(o);
}

static void ss_timeline_class_init(SsTimelineClass *klass)
{
	GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
	G_OBJECT_CLASS(klass)->dispose = dispose;
	wc->snapshot = snapshot;
	gtk_widget_class_set_css_name(wc, "sstimeline");
}

static void ss_timeline_init(SsTimeline *self)
{
	GtkWidget *w = GTK_WIDGET(self);
	tl_scene_init(&self->empty);
	self->back = g_array_new(FALSE, FALSE, sizeof(struct hist));
	self->fwd = g_array_new(FALSE, FALSE, sizeof(struct hist));
	gtk_widget_set_focusable(w, TRUE);
	gtk_widget_set_hexpand(w, TRUE);
	gtk_widget_set_vexpand(w, TRUE);
	gtk_widget_set_has_tooltip(w, TRUE);
	g_signal_connect(w, "query-tooltip", G_CALLBACK(on_query_tooltip), self);

	GtkEventController *sc = gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
	g_signal_connect(sc, "scroll", G_CALLBACK(on_scroll), self);
	gtk_widget_add_controller(w, sc);
	GtkEventController *mo = gtk_event_controller_motion_new();
	g_signal_connect(mo, "motion", G_CALLBACK(on_motion), self);
	g_signal_connect(mo, "leave", G_CALLBACK(on_leave), self);
	gtk_widget_add_controller(w, mo);
	GtkGesture *drag = gtk_gesture_drag_new();
	g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
	g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
	g_signal_connect(drag, "drag-end", G_CALLBACK(on_drag_end), self);
	gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));
	GtkGesture *click = gtk_gesture_click_new();
	g_signal_connect(click, "released", G_CALLBACK(on_click), self);
	gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(click));
	GtkGesture *pinch = gtk_gesture_zoom_new();
	g_signal_connect(pinch, "begin", G_CALLBACK(on_zoom_begin), self);
	g_signal_connect(pinch, "scale-changed", G_CALLBACK(on_zoom_scale), self);
	gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(pinch));

	self->actions = g_simple_action_group_new();
	g_action_map_add_action_entries(G_ACTION_MAP(self->actions), action_entries, G_N_ELEMENTS(action_entries), self);
	gtk_widget_insert_action_group(w, "tl", G_ACTION_GROUP(self->actions));
}

GtkWidget *ss_timeline_new(SsSession *session)
{
	SsTimeline *self = g_object_new(SS_TYPE_TIMELINE, NULL);
	self->session = g_object_ref(session);
	ss_scene_fetch_init(&self->fetch, session, scene_arrived, self);
	self->session_handlers[0] = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->session_handlers[1] = g_signal_connect(session, "notify::selection", G_CALLBACK(on_selection), self);
	self->session_handlers[2] =
		g_signal_connect(session, "notify::visible-range", G_CALLBACK(on_visible_range), self);
	self->session_handlers[3] =
		g_signal_connect(session, "notify::range-selection", G_CALLBACK(on_range_selection), self);
	self->session_handlers[4] = g_signal_connect(session, "notify::marks", G_CALLBACK(on_marks), self);
	self->session_handlers[5] = g_signal_connect(session, "notify::shown-lanes", G_CALLBACK(on_shown_lanes), self);
	enable_actions(self, ss_session_get_db(session) != NULL);
	if (ss_session_get_db(session))
		on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

struct tl_db *ss_timeline_get_db(SsTimeline *self)
{
	return self->db;
}

const struct tl_view *ss_timeline_get_view(SsTimeline *self)
{
	return &self->view;
}

void ss_timeline_show_range(SsTimeline *self, int64_t t0, int64_t t1)
{
	if (!self->db)
		return;
	history_push(self);
	tl_view_set_range(&self->view, self->db, t0, t1);
	view_changed(self);
}

void ss_timeline_select_poll(SsTimeline *self, int64_t poll_id, int64_t task_id)
{
	if (poll_id)
		ss_session_select(self->session, SS_SEL_POLL, poll_id, task_id);
	else
		ss_session_select(self->session, SS_SEL_NONE, 0, 0);
}

void ss_timeline_select_range(SsTimeline *self, int64_t t0, int64_t t1)
{
	self->view.sel_t0 = t0;
	self->view.sel_t1 = t1;
	ss_session_set_range_selection(self->session, t0, t1);
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

void ss_timeline_set_color_mode(SsTimeline *self, enum tl_color_mode mode)
{
	self->view.color = mode;
	gtk_widget_queue_draw(GTK_WIDGET(self));
	/* Culprit colours need the culprit of every long poll in view. */
	want_scene(self);
}

GActionGroup *ss_timeline_actions(SsTimeline *self)
{
	return G_ACTION_GROUP(self->actions);
}

char *ss_timeline_tooltip_at(SsTimeline *self, int x, int y)
{
	return tooltip_text(self, x, y);
}

guint ss_timeline_frames(SsTimeline *self)
{
	return self->frames;
}

const struct tl_scene *ss_timeline_get_scene(SsTimeline *self)
{
	return self->fetch.ready;
}

bool ss_timeline_scene_pending(SsTimeline *self)
{
	return self->fetch.inflight;
}

void ss_timeline_scene_counts(SsTimeline *self, guint *requested, guint *received)
{
	*requested = self->fetch.requested;
	*received = self->fetch.received;
}
