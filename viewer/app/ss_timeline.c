/*
 * ss_timeline.c - the timeline widget; see ss_timeline.h.
 *
 * The scene (what the database returned for this window) is cached and only
 * rebuilt when the window, the size or the scroll position change, so hover,
 * selection and theme changes redraw without a query.
 */
#include "ss_timeline.h"

#include <math.h>
#include <string.h>

#include "tl_query.h"
#include "tl_render.h"
#include "tl_scene.h"
#include "tl_ticks.h"

struct hist {
	int64_t t0, t1;
};

struct _SsTimeline {
	GtkWidget parent;
	struct tl_db *db;
	struct tl_layout layout;
	struct tl_scene scene;
	struct tl_view view;
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
	guint frames;
};

G_DEFINE_FINAL_TYPE(SsTimeline, ss_timeline, GTK_TYPE_WIDGET)

enum { SIG_POLL_SELECTED, SIG_RANGE_SELECTED, SIG_VIEW_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static bool widget_is_dark(GtkWidget *w)
{
	/* Dark when the theme's text colour is light: follows whatever theme and
	 * colour scheme GTK resolved, with no setting of our own. */
	GdkRGBA fg;
#if GTK_CHECK_VERSION(4, 10, 0)
	gtk_widget_get_color(w, &fg);
#else
	gtk_style_context_get_color(gtk_widget_get_style_context(w), &fg);
#endif
	return 0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue > 0.5;
}

static void clamp_scroll(SsTimeline *self)
{
	int visible = tl_view_plot_bottom(&self->view) - TL_RULER_H;
	int max = self->layout.content_h - visible;
	if (self->view.scroll_y > max)
		self->view.scroll_y = max;
	if (self->view.scroll_y < 0)
		self->view.scroll_y = 0;
}

static void view_changed(SsTimeline *self)
{
	clamp_scroll(self);
	gtk_widget_queue_draw(GTK_WIDGET(self));
	g_signal_emit(self, signals[SIG_VIEW_CHANGED], 0);
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
	self->view.dark = widget_is_dark(w);
	self->view.legend = true;
	if (!self->db || self->view.width <= TL_LABEL_W || self->view.height <= TL_RULER_H)
		return;
	clamp_scroll(self);
	tl_scene_update(&self->scene, self->db, &self->layout, &self->view);
	tl_render(s, gtk_widget_get_pango_context(w), self->db, &self->layout, &self->scene, &self->view);
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
		g_signal_emit(self, signals[SIG_RANGE_SELECTED], 0, (gint64)self->view.sel_t0, (gint64)self->view.sel_t1);
}

static void on_click(GtkGestureClick *g, int n, double x, double y, gpointer data)
{
	(void)g;
	(void)n;
	SsTimeline *self = data;
	if (!self->db || self->drag_moved)
		return;
	int lane = tl_view_lane_at(&self->view, &self->layout, y);
	const struct tl_box *b = tl_scene_box_at(&self->scene, lane, plot_x(x), 2);
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

static gboolean on_query_tooltip(GtkWidget *w, int x, int y, gboolean kb, GtkTooltip *tip, gpointer data)
{
	(void)w;
	(void)kb;
	SsTimeline *self = data;
	if (!self->db || x < TL_LABEL_W)
		return FALSE;
	int lane = tl_view_lane_at(&self->view, &self->layout, y);
	if (lane < 0)
		return FALSE;
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
	const struct tl_box *b = tl_scene_box_at(&self->scene, lane, plot_x(x), 2);
	int dy = y - tl_view_lane_screen_y(&self->view, &self->layout, lane);
	if (b && dy < TL_CPU_Y)
		tl_query_poll_tooltip(self->db, b->poll_id, b->n, s);
	else if (dy >= TL_CPU_Y) {
		const struct tl_span *sp = tl_scene_cpu_at(&self->scene, lane, plot_x(x));
		if (sp)
			g_string_append(s, sp->kind == TL_SPAN_BLOCKED ? "off CPU: blocked" :
					   sp->kind == TL_SPAN_PREEMPTED ? "off CPU: preempted (runnable)" : "on CPU");
	}
	if (!s->len) {
		g_string_free(s, TRUE);
		return FALSE;
	}
	gtk_tooltip_set_text(tip, s->str);
	g_string_free(s, TRUE);
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
	ss_timeline_select_poll(self, 0, 0);
	self->view.selected_stall = 0;
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void act_color(GSimpleAction *a, GVariant *p, gpointer data)
{
	SsTimeline *self = data;
	g_simple_action_set_state(a, p);
	ss_timeline_set_color_mode(self, strcmp(g_variant_get_string(p, NULL), "duration") == 0 ? TL_COLOR_DURATION
												  : TL_COLOR_LOCATION);
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
};

/* ---- object ---- */

static void dispose(GObject *o)
{
	SsTimeline *self = SS_TIMELINE(o);
	tl_scene_free(&self->scene);
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
	signals[SIG_POLL_SELECTED] = g_signal_new("poll-selected", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
						  NULL, NULL, G_TYPE_NONE, 1, G_TYPE_INT64);
	signals[SIG_RANGE_SELECTED] = g_signal_new("range-selected", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0,
						   NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_INT64, G_TYPE_INT64);
	signals[SIG_VIEW_CHANGED] = g_signal_new("view-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL,
						 NULL, NULL, G_TYPE_NONE, 0);
}

static void ss_timeline_init(SsTimeline *self)
{
	GtkWidget *w = GTK_WIDGET(self);
	tl_scene_init(&self->scene);
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

GtkWidget *ss_timeline_new(void)
{
	return g_object_new(SS_TYPE_TIMELINE, NULL);
}

void ss_timeline_set_db(SsTimeline *self, struct tl_db *db)
{
	self->db = db;
	tl_scene_free(&self->scene);
	tl_layout_free(&self->layout);
	g_array_set_size(self->back, 0);
	g_array_set_size(self->fwd, 0);
	enum tl_color_mode mode = self->view.color;
	memset(&self->view, 0, sizeof self->view);
	self->view.color = mode;
	if (db) {
		tl_layout_compute(&self->layout, db);
		self->view.width = MAX(gtk_widget_get_width(GTK_WIDGET(self)), 800);
		tl_view_fit(&self->view, db);
	}
	view_changed(self);
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
	self->view.selected_poll = poll_id;
	self->view.highlight_task = task_id;
	gtk_widget_queue_draw(GTK_WIDGET(self));
	g_signal_emit(self, signals[SIG_POLL_SELECTED], 0, (gint64)poll_id);
}

void ss_timeline_select_stall(SsTimeline *self, int64_t stall_id)
{
	self->view.selected_stall = stall_id;
	if (self->db && stall_id) {
		/* Show the stall with half its length of context on each side; make
		 * its lane visible. */
		for (size_t i = 0; i < self->db->n_stalls; i++) {
			const struct tl_stall *st = &self->db->stalls[i];
			if (st->id != stall_id)
				continue;
			int64_t pad = MAX(st->dur / 2, 1000000);
			ss_timeline_show_range(self, st->ts - pad, st->ts + st->dur + pad);
			if (st->lane >= 0) {
				int y = self->layout.lane_y[st->lane];
				int visible = tl_view_plot_bottom(&self->view) - TL_RULER_H;
				if (y < self->view.scroll_y || y + TL_LANE_H > self->view.scroll_y + visible)
					self->view.scroll_y = y - visible / 3;
			}
			self->view.selected_poll = st->poll_id;
			self->view.highlight_task = 0;
			view_changed(self);
			break;
		}
	}
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

void ss_timeline_set_color_mode(SsTimeline *self, enum tl_color_mode mode)
{
	self->view.color = mode;
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

GActionGroup *ss_timeline_actions(SsTimeline *self)
{
	return G_ACTION_GROUP(self->actions);
}

guint ss_timeline_frames(SsTimeline *self)
{
	return self->frames;
}
