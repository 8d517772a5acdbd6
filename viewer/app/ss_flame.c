/*
 * ss_flame.c - the CPU and off-CPU flame graph panels (ss_panel_flame,
 * ss_panel_offcpu): a stack panel (ss_stack_panel.h) whose body is
 * SsFlameView, the icicle drawn by sv_draw_flame() from sv_flame_layout(),
 * the code the headless PNG draws with.
 *
 * Click a frame to zoom into it (its ancestors stay above, full width, to
 * click back up); click the root, press Escape or Backspace to zoom out a
 * level, Home to show everything. Hovering outlines a frame and its tooltip
 * gives its samples or time, self and total share of the scope, file and
 * lines, and in a diff its share here and in the baseline. Typing anywhere
 * in the view goes to the panel's search.
 *
 * The view keeps no SQL and computes nothing but the layout (on a new
 * result or width) and the search's matches: the tree comes built from the
 * query worker.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ss_flame.h"
#include "ss_panels.h"
#include "ss_style.h"
#include "sv_draw.h"
#include "sv_flame.h"

#define SS_TYPE_FLAME_VIEW (ss_flame_view_get_type())
G_DECLARE_FINAL_TYPE(SsFlameView, ss_flame_view, SS, FLAME_VIEW, GtkWidget)

struct _SsFlameView {
	GtkWidget parent;
	struct ss_stack_result *r;
	struct sv_flame_layout layout;
	uint32_t zoom, hover;
	uint8_t *match;
	int laid_width;
};

G_DEFINE_FINAL_TYPE(SsFlameView, ss_flame_view, GTK_TYPE_WIDGET)

#define LEGEND_H 26

static void relayout(SsFlameView *self)
{
	int w = gtk_widget_get_width(GTK_WIDGET(self));
	if (!self->r || w <= 0)
		return;
	sv_flame_layout(&self->layout, &self->r->tree, self->zoom, w);
	self->laid_width = w;
	gtk_widget_queue_resize(GTK_WIDGET(self));
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void measure(GtkWidget *w, GtkOrientation o, int for_size, int *min, int *nat, int *min_base, int *nat_base)
{
	(void)for_size;
	SsFlameView *self = SS_FLAME_VIEW(w);
	*min_base = *nat_base = -1;
	if (o == GTK_ORIENTATION_HORIZONTAL) {
		*min = 200;
		*nat = 800;
	} else {
		uint32_t rows = self->r ? (self->layout.n ? self->layout.rows : self->r->tree.max_depth + 1) : 4;
		*min = *nat = (int)rows * SV_ROW_H + LEGEND_H + 8;
	}
}

static void size_allocate(GtkWidget *w, int width, int height, int baseline)
{
	(void)height;
	(void)baseline;
	SsFlameView *self = SS_FLAME_VIEW(w);
	if (width != self->laid_width && self->r) {
		sv_flame_layout(&self->layout, &self->r->tree, self->zoom, width);
		self->laid_width = width;
	}
}

static void snapshot(GtkWidget *w, GtkSnapshot *s)
{
	SsFlameView *self = SS_FLAME_VIEW(w);
	if (!self->r)
		return;
	PangoContext *pc = gtk_widget_get_pango_context(w);
	struct sv_draw_style st = { .dark = ss_style_widget_is_dark(w), .match = self->match, .hover = self->hover,
				    .selected = self->zoom ? self->zoom : SV_NONE };
	sv_draw_flame(s, pc, &self->r->tree, &self->layout, &st, 0);
	sv_draw_legend(s, pc, &self->r->tree, &st, 6, (float)self->layout.rows * SV_ROW_H + 6);
}

static long box_at(SsFlameView *self, double x, double y)
{
	if (!self->r || y < 0)
		return -1;
	return sv_flame_hit(&self->layout, x, (uint32_t)(y / SV_ROW_H));
}

static void on_motion(GtkEventControllerMotion *c, double x, double y, gpointer data)
{
	(void)c;
	SsFlameView *self = data;
	long b = box_at(self, x, y);
	uint32_t n = b >= 0 ? self->layout.boxes[b].node : SV_NONE;
	if (n != self->hover) {
		self->hover = n;
		gtk_widget_queue_draw(GTK_WIDGET(self));
	}
}

static void on_leave(GtkEventControllerMotion *c, gpointer data)
{
	(void)c;
	SsFlameView *self = data;
	self->hover = SV_NONE;
	gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void zoom_to(SsFlameView *self, uint32_t node)
{
	self->zoom = node == SV_NONE ? 0 : node;
	self->hover = SV_NONE;
	relayout(self);
}

static void on_click(GtkGestureClick *g, int n, double x, double y, gpointer data)
{
	(void)g;
	(void)n;
	SsFlameView *self = data;
	gtk_widget_grab_focus(GTK_WIDGET(self));
	long b = box_at(self, x, y);
	if (b < 0 || self->layout.boxes[b].node == SV_NONE)
		return;
	uint32_t node = self->layout.boxes[b].node;
	/* The zoomed frame itself: one level out. */
	if (node == self->zoom && node != 0)
		node = self->r->tree.nodes[node].parent;
	zoom_to(self, node);
}

static gboolean on_key(GtkEventControllerKey *c, guint key, guint code, GdkModifierType mods, gpointer data)
{
	(void)c;
	(void)code;
	(void)mods;
	SsFlameView *self = data;
	if (!self->r)
		return FALSE;
	if ((key == GDK_KEY_Escape || key == GDK_KEY_BackSpace) && self->zoom) {
		zoom_to(self, self->r->tree.nodes[self->zoom].parent);
		return TRUE;
	}
	if (key == GDK_KEY_Home || key == GDK_KEY_0) {
		zoom_to(self, 0);
		return TRUE;
	}
	return FALSE;
}

static void tooltip_text(SsFlameView *self, uint32_t node, GString *out)
{
	const struct sv_tree *t = &self->r->tree;
	const struct sv_node *n = &t->nodes[node];
	int64_t all = self->r->prof->total_weight;
	char label[512], where[256], tot[48], self_t[48], ps[16], pt[16];
	sv_tree_label(t, node, label, sizeof label);
	char *esc = g_markup_escape_text(label, -1);
	g_string_append_printf(out, "<b>%s</b>", esc);
	g_free(esc);
	sv_sym_where(t, n->sym, where, sizeof where);
	if (*where) {
		esc = g_markup_escape_text(where, -1);
		g_string_append_printf(out, "\n%s", esc);
		g_free(esc);
	}
	sv_format_ns(tot, sizeof tot, n->total);
	sv_format_ns(self_t, sizeof self_t, n->self);
	sv_format_share(pt, sizeof pt, n->total, all);
	sv_format_share(ps, sizeof ps, n->self, all);
	bool cpu = self->r->prof->kind == SV_KIND_CPU;
	g_string_append_printf(out, "\n%lld %s", (long long)n->count,
			       cpu ? (n->count == 1 ? "sample" : "samples") : (n->count == 1 ? "switch off the CPU" : "switches off the CPU"));
	g_string_append_printf(out, "\ntotal %s (%s of the scope)", tot, pt);
	if (t->mode == SV_TOP_DOWN || node == 0 || n->depth == 1)
		g_string_append_printf(out, "\nself %s (%s)", self_t, ps);
	if (self->zoom && node != self->zoom) {
		char pz[16];
		sv_format_share(pz, sizeof pz, n->total, t->nodes[self->zoom].total);
		g_string_append_printf(out, "\n%s of the zoomed frame", pz);
	}
	if (t->base) {
		double now = all > 0 ? 100.0 * (double)n->total / (double)all : 0;
		double before = t->base_total > 0 ? 100.0 * (double)t->base[node] / (double)t->base_total : 0;
		g_string_append_printf(out, "\n%.1f%% here, %.1f%% in the baseline (%+.1f points)", now, before,
				       now - before);
	}
}

static gboolean on_query_tooltip(GtkWidget *w, int x, int y, gboolean kbd, GtkTooltip *tip, gpointer data)
{
	(void)w;
	(void)kbd;
	SsFlameView *self = data;
	long b = box_at(self, x, y);
	if (b < 0)
		return FALSE;
	const struct sv_flame_box *box = &self->layout.boxes[b];
	GString *s = g_string_new(NULL);
	if (box->node == SV_NONE) {
		char d[48];
		sv_format_ns(d, sizeof d, box->weight);
		g_string_append_printf(s, "%u frames too narrow to draw, %s in all", box->folded, d);
	} else {
		tooltip_text(self, box->node, s);
		if (box->node != self->zoom)
			g_string_append(s, "\n<i>click to zoom in</i>");
		else if (box->node)
			g_string_append(s, "\n<i>click or Escape to zoom out</i>");
	}
	gtk_tooltip_set_markup(tip, s->str);
	g_string_free(s, TRUE);
	return TRUE;
}

static void dispose(GObject *o)
{
	SsFlameView *self = SS_FLAME_VIEW(o);
	ss_stack_result_unref(self->r);
	self->r = NULL;
	sv_flame_layout_free(&self->layout);
	g_clear_pointer(&self->match, g_free);
	G_OBJECT_CLASS(ss_flame_view_parent_class)->dispose(o);
}

static void ss_flame_view_class_init(SsFlameViewClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
	GtkWidgetClass *wk = GTK_WIDGET_CLASS(k);
	wk->measure = measure;
	wk->size_allocate = size_allocate;
	wk->snapshot = snapshot;
}

static void ss_flame_view_init(SsFlameView *self)
{
	self->hover = SV_NONE;
	gtk_widget_set_focusable(GTK_WIDGET(self), TRUE);
	gtk_widget_set_has_tooltip(GTK_WIDGET(self), TRUE);
	g_signal_connect(self, "query-tooltip", G_CALLBACK(on_query_tooltip), self);
	GtkEventController *m = gtk_event_controller_motion_new();
	g_signal_connect(m, "motion", G_CALLBACK(on_motion), self);
	g_signal_connect(m, "leave", G_CALLBACK(on_leave), self);
	gtk_widget_add_controller(GTK_WIDGET(self), m);
	GtkGesture *click = gtk_gesture_click_new();
	g_signal_connect(click, "released", G_CALLBACK(on_click), self);
	gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(click));
	GtkEventController *keys = gtk_event_controller_key_new();
	g_signal_connect(keys, "key-pressed", G_CALLBACK(on_key), self);
	gtk_widget_add_controller(GTK_WIDGET(self), keys);
}

/* ---- the body of a stack panel ---- */

/* The scrolled window puts the view into a viewport of its own. */
static SsFlameView *view_of(GtkWidget *body)
{
	return SS_FLAME_VIEW(g_object_get_data(G_OBJECT(body), "ss-flame-view"));
}

static GtkWidget *create_body(SsStackPanel *panel)
{
	(void)panel;
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
	GtkWidget *view = g_object_new(SS_TYPE_FLAME_VIEW, NULL);
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), view);
	g_object_set_data(G_OBJECT(sw), "ss-flame-view", view);
	return sw;
}

static void show(GtkWidget *body, struct ss_stack_result *r)
{
	SsFlameView *self = view_of(body);
	/* The same scope again (another grouping, inverted, a baseline): keep
	 * the zoom when its frame is still there. */
	uint32_t zoom = 0;
	if (self->r && r && self->zoom && self->zoom < r->tree.n_nodes &&
	    self->r->scope.kind == r->scope.kind && self->r->scope.id == r->scope.id &&
	    self->r->mode == r->mode && self->r->group == r->group) {
		char a[512], b[512];
		sv_tree_label(&self->r->tree, self->zoom, a, sizeof a);
		sv_tree_label(&r->tree, self->zoom, b, sizeof b);
		if (!strcmp(a, b))
			zoom = self->zoom;
	}
	ss_stack_result_unref(self->r);
	self->r = ss_stack_result_ref(r);
	self->zoom = zoom;
	self->hover = SV_NONE;
	g_clear_pointer(&self->match, g_free);
	self->laid_width = 0;
	self->layout.n = 0;
	relayout(self);
	gtk_widget_queue_resize(GTK_WIDGET(self));
}

static int64_t search(GtkWidget *body, const char *needle)
{
	SsFlameView *self = view_of(body);
	g_clear_pointer(&self->match, g_free);
	int64_t covered = 0;
	if (self->r && needle && *needle) {
		self->match = g_malloc0(self->r->tree.n_nodes ? self->r->tree.n_nodes : 1);
		covered = sv_tree_search(&self->r->tree, needle, self->match);
	}
	gtk_widget_queue_draw(GTK_WIDGET(self));
	return covered;
}

static const struct ss_stack_kind cpu_kind = { "flame", SV_KIND_CPU, false, create_body, show, search };
static const struct ss_stack_kind off_kind = { "offcpu", SV_KIND_OFFCPU, false, create_body, show, search };

static GtkWidget *create_cpu(SsSession *session)
{
	return ss_stack_panel_new(session, &cpu_kind);
}

static GtkWidget *create_off(SsSession *session)
{
	return ss_stack_panel_new(session, &off_kind);
}

const struct ss_panel ss_panel_flame = { "flame", "CPU flame graph", create_cpu, ss_stack_panel_text,
					 SS_PANEL_BOTTOM };
const struct ss_panel ss_panel_offcpu = { "offcpu", "Off-CPU flame graph", create_off, ss_stack_panel_text,
					  SS_PANEL_BOTTOM };

const struct sv_flame_layout *ss_flame_panel_layout(GtkWidget *panel, uint32_t *zoom)
{
	SsFlameView *self = view_of(ss_stack_panel_get_body(panel));
	if (zoom)
		*zoom = self->zoom;
	return &self->layout;
}

void ss_flame_panel_zoom(GtkWidget *panel, uint32_t node)
{
	zoom_to(view_of(ss_stack_panel_get_body(panel)), node);
}

char *ss_flame_panel_tooltip(GtkWidget *panel, uint32_t node)
{
	SsFlameView *self = view_of(ss_stack_panel_get_body(panel));
	if (!self->r || node >= self->r->tree.n_nodes)
		return NULL;
	GString *s = g_string_new(NULL);
	tooltip_text(self, node, s);
	return g_string_free(s, FALSE);
}
