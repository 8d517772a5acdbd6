/*
 * ss_tree.c - the call tree panel (ss_panel_tree): a stack panel
 * (ss_stack_panel.h) whose body is the scope's tree, top-down or bottom-up,
 * in a column view (function, self, total: time and share of the scope),
 * opened along its heavy paths; and beside it the caller/callee view of the
 * function selected in it: who calls it (its total through each path), what
 * it calls, and its cost per source line. CPU samples or off-CPU time are
 * chosen in the toolbar.
 *
 * The caller/callee trees are built on the query worker from the result's
 * profile (no SQL), under this body's key: selecting another row
 * supersedes the last request.
 */
#include <stdio.h>
#include <string.h>

#include "ss_panels.h"
#include "ss_stack_panel.h"
#include "ss_tree.h"
#include "sv_draw.h"

/* ---- rows ---------------------------------------------------------------- */

/* What owns a tree a row points into (a result, a focus), by reference. */
struct owner {
	gpointer p;
	gpointer (*ref)(gpointer);
	void (*unref)(gpointer);
};

#define SS_TYPE_TREE_ITEM (ss_tree_item_get_type())
G_DECLARE_FINAL_TYPE(SsTreeItem, ss_tree_item, SS, TREE_ITEM, GObject)

struct _SsTreeItem {
	GObject parent;
	struct owner owner;
	const struct sv_tree *t;
	uint32_t node;
	int64_t whole;               /* what shares are of */
};

G_DEFINE_FINAL_TYPE(SsTreeItem, ss_tree_item, G_TYPE_OBJECT)

static void item_finalize(GObject *o)
{
	SsTreeItem *self = SS_TREE_ITEM(o);
	if (self->owner.p)
		self->owner.unref(self->owner.p);
	G_OBJECT_CLASS(ss_tree_item_parent_class)->finalize(o);
}

static void ss_tree_item_class_init(SsTreeItemClass *k)
{
	G_OBJECT_CLASS(k)->finalize = item_finalize;
}

static void ss_tree_item_init(SsTreeItem *self)
{
	(void)self;
}

static SsTreeItem *item_new(struct owner o, const struct sv_tree *t, uint32_t node, int64_t whole)
{
	SsTreeItem *it = g_object_new(SS_TYPE_TREE_ITEM, NULL);
	it->owner = o;
	if (o.p)
		o.ref(o.p);
	it->t = t;
	it->node = node;
	it->whole = whole;
	return it;
}

static GListModel *children_of(struct owner o, const struct sv_tree *t, uint32_t node, int64_t whole)
{
	if (t->nodes[node].child == SV_NONE)
		return NULL;
	GListStore *s = g_list_store_new(SS_TYPE_TREE_ITEM);
	for (uint32_t c = t->nodes[node].child; c != SV_NONE; c = t->nodes[c].next) {
		SsTreeItem *it = item_new(o, t, c, whole);
		g_list_store_append(s, it);
		g_object_unref(it);
	}
	return G_LIST_MODEL(s);
}

static GListModel *create_children(gpointer item, gpointer data)
{
	(void)data;
	SsTreeItem *it = item;
	return children_of(it->owner, it->t, it->node, it->whole);
}

static SsTreeItem *row_item(GtkListItem *li)
{
	GtkTreeListRow *row = gtk_list_item_get_item(li);
	return row ? gtk_tree_list_row_get_item(row) : NULL;   /* a new reference */
}

static void setup_name(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)f;
	(void)data;
	GtkWidget *ex = gtk_tree_expander_new();
	GtkWidget *l = gtk_label_new(NULL);
	gtk_label_set_xalign(GTK_LABEL(l), 0);
	gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_END);
	gtk_tree_expander_set_child(GTK_TREE_EXPANDER(ex), l);
	gtk_list_item_set_child(li, ex);
}

static void bind_name(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)f;
	(void)data;
	GtkWidget *ex = gtk_list_item_get_child(li);
	gtk_tree_expander_set_list_row(GTK_TREE_EXPANDER(ex), gtk_list_item_get_item(li));
	SsTreeItem *it = row_item(li);
	if (!it)
		return;
	char label[512], where[256];
	sv_tree_label(it->t, it->node, label, sizeof label);
	GtkWidget *l = gtk_tree_expander_get_child(GTK_TREE_EXPANDER(ex));
	gtk_label_set_text(GTK_LABEL(l), label);
	sv_sym_where(it->t, it->t->nodes[it->node].sym, where, sizeof where);
	char *tip = g_strdup_printf("%s%s%s", label, *where ? "\n" : "", where);
	gtk_widget_set_tooltip_text(l, tip);
	g_free(tip);
	g_object_unref(it);
}

static void setup_cost(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)f;
	(void)data;
	GtkWidget *l = gtk_label_new(NULL);
	gtk_label_set_xalign(GTK_LABEL(l), 1);
	gtk_widget_add_css_class(l, "numeric");
	gtk_list_item_set_child(li, l);
}

static void bind_cost(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)f;
	bool self_col = GPOINTER_TO_INT(data);
	SsTreeItem *it = row_item(li);
	if (!it)
		return;
	const struct sv_node *n = &it->t->nodes[it->node];
	int64_t v = self_col ? n->self : n->total;
	char d[48], p[16], cell[80] = "";
	if (v > 0) {
		sv_format_ns(d, sizeof d, v);
		sv_format_share(p, sizeof p, v, it->whole);
		snprintf(cell, sizeof cell, "%s  %6s", d, p);
	}
	gtk_label_set_text(GTK_LABEL(gtk_list_item_get_child(li)), cell);
	g_object_unref(it);
}

static GtkColumnViewColumn *column(const char *title, GCallback setup, GCallback bind, gpointer data)
{
	GtkListItemFactory *f = gtk_signal_list_item_factory_new();
	g_signal_connect(f, "setup", setup, data);
	g_signal_connect(f, "bind", bind, data);
	GtkColumnViewColumn *c = gtk_column_view_column_new(title, f);
	gtk_column_view_column_set_resizable(c, TRUE);
	return c;
}

struct table {
	GtkColumnView *view;
	GtkColumnViewColumn *self_col;
	GtkSingleSelection *sel;
};

static GtkWidget *table_new(struct table *t)
{
	t->view = GTK_COLUMN_VIEW(gtk_column_view_new(NULL));
	gtk_column_view_set_show_row_separators(t->view, FALSE);
	GtkColumnViewColumn *name = column("Function", G_CALLBACK(setup_name), G_CALLBACK(bind_name), NULL);
	gtk_column_view_column_set_expand(name, TRUE);
	t->self_col = column("Self", G_CALLBACK(setup_cost), G_CALLBACK(bind_cost), GINT_TO_POINTER(1));
	GtkColumnViewColumn *total = column("Total", G_CALLBACK(setup_cost), G_CALLBACK(bind_cost), GINT_TO_POINTER(0));
	gtk_column_view_column_set_fixed_width(t->self_col, 108);
	gtk_column_view_column_set_fixed_width(total, 108);
	gtk_column_view_append_column(t->view, name);
	gtk_column_view_append_column(t->view, t->self_col);
	gtk_column_view_append_column(t->view, total);
	g_object_unref(name);
	g_object_unref(t->self_col);
	g_object_unref(total);
	GtkWidget *sw = gtk_scrolled_window_new();
	/* The width is the pane's: the function column takes what the cost
	 * columns leave, and long names are ellipsized (their tooltip has them). */
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(t->view));
	gtk_widget_set_vexpand(sw, TRUE);
	gtk_widget_set_hexpand(sw, TRUE);
	return sw;
}

/* Shows a tree: the root's children as the top rows (with_root: the root
 * itself), opened down every path holding at least open_share of whole. */
static void table_set(struct table *t, struct owner o, const struct sv_tree *tree, bool with_root, int64_t whole,
		      bool self_col, double open_share)
{
	GListModel *top = NULL;
	if (tree && tree->n_nodes) {
		if (with_root) {
			GListStore *s = g_list_store_new(SS_TYPE_TREE_ITEM);
			SsTreeItem *it = item_new(o, tree, 0, whole);
			g_list_store_append(s, it);
			g_object_unref(it);
			top = G_LIST_MODEL(s);
		} else {
			top = children_of(o, tree, 0, whole);
		}
	}
	if (!top)
		top = G_LIST_MODEL(g_list_store_new(SS_TYPE_TREE_ITEM));
	GtkTreeListModel *tm = gtk_tree_list_model_new(top, FALSE, FALSE, create_children, NULL, NULL);
	t->sel = gtk_single_selection_new(G_LIST_MODEL(tm));
	gtk_single_selection_set_autoselect(t->sel, FALSE);
	gtk_single_selection_set_selected(t->sel, GTK_INVALID_LIST_POSITION);
	gtk_column_view_set_model(t->view, GTK_SELECTION_MODEL(t->sel));
	g_object_unref(t->sel);
	gtk_column_view_column_set_visible(t->self_col, self_col);
	/* A hidden column with a fixed width still takes its width from the
	 * function column here (GTK 4.8): give it none while hidden. */
	gtk_column_view_column_set_fixed_width(t->self_col, self_col ? 108 : -1);
	/* Open the heavy paths (rows appear after their parent as it opens). */
	for (guint i = 0; i < g_list_model_get_n_items(G_LIST_MODEL(tm)) && i < 400; i++) {
		GtkTreeListRow *row = gtk_tree_list_model_get_row(tm, i);
		if (!row)
			break;
		SsTreeItem *it = gtk_tree_list_row_get_item(row);
		const struct sv_node *n = &it->t->nodes[it->node];
		if (n->child != SV_NONE && whole > 0 && (double)n->total >= open_share * (double)whole)
			gtk_tree_list_row_set_expanded(row, TRUE);
		g_object_unref(it);
		g_object_unref(row);
	}
}

/* ---- the body ------------------------------------------------------------- */

/* The caller/callee trees of one function. */
struct focus {
	struct ss_stack_result *r;
	char name[512];
	struct sv_tree callers, callees, by_function;
	struct sv_line_cost *lines;
	size_t n_lines;
	int64_t self, total;
};

static void focus_clear(gpointer p)
{
	struct focus *f = p;
	sv_tree_free(&f->callers);
	sv_tree_free(&f->callees);
	sv_tree_free(&f->by_function);
	free(f->lines);
	ss_stack_result_unref(f->r);
}

static gpointer focus_ref(gpointer p)
{
	return g_atomic_rc_box_acquire(p);
}

static void focus_unref(gpointer p)
{
	g_atomic_rc_box_release_full(p, focus_clear);
}

static gpointer result_ref(gpointer p)
{
	return ss_stack_result_ref(p);
}

static void result_unref(gpointer p)
{
	ss_stack_result_unref(p);
}

#define SS_TYPE_CALL_TREE (ss_call_tree_get_type())
G_DECLARE_FINAL_TYPE(SsCallTree, ss_call_tree, SS, CALL_TREE, GtkBox)

struct _SsCallTree {
	GtkBox parent;
	SsStackPanel *panel;         /* the parent */
	SsSession *session;          /* a reference: the panel may go first */
	struct ss_stack_result *r;
	struct table main, callers, callees;
	GtkLabel *focus_title, *lines;
	struct focus *focus;         /* the last delivered */
	bool focus_pending;
};

G_DEFINE_FINAL_TYPE(SsCallTree, ss_call_tree, GTK_TYPE_BOX)

struct focus_job {
	struct focus *f;             /* a box; handed to the view when done */
};

static void focus_job_free(void *p)
{
	struct focus_job *j = p;
	if (j->f)
		g_atomic_rc_box_release_full(j->f, focus_clear);
	g_free(j);
}

static void focus_run(struct tl_db *db, void *p)
{
	(void)db;
	struct focus *f = ((struct focus_job *)p)->f;
	const struct sv_profile *prof = f->r->prof;
	/* A function's callers and callees, whatever the grouping of the tree. */
	if (sv_tree_build_view(&f->callers, prof, NULL, SV_GROUP_FUNCTION, SV_CALLERS, f->name) != 0 ||
	    sv_tree_build_view(&f->callees, prof, NULL, SV_GROUP_FUNCTION, SV_CALLEES, f->name) != 0 ||
	    sv_tree_build(&f->by_function, prof, SV_GROUP_FUNCTION, SV_TOP_DOWN, SV_NONE) != 0)
		return;
	uint32_t sym = sv_tree_find_sym(&f->by_function, f->name);
	if (sym == SV_NONE)
		return;
	sv_tree_sym_cost(&f->by_function, sym, &f->self, &f->total);
	f->n_lines = sv_tree_sym_lines(&f->by_function, sym, &f->lines);
}

static void show_focus(SsCallTree *self)
{
	struct focus *f = self->focus;
	if (!f) {
		gtk_label_set_text(self->focus_title, "Select a function in the tree for its callers, callees and lines.");
		gtk_label_set_text(self->lines, "");
		table_set(&self->callers, (struct owner){ 0 }, NULL, true, 0, false, 1);
		table_set(&self->callees, (struct owner){ 0 }, NULL, true, 0, true, 1);
		return;
	}
	int64_t all = f->r->prof->total_weight;
	char a[48], b[48], pa[16], pb[16];
	sv_format_ns(a, sizeof a, f->self);
	sv_format_ns(b, sizeof b, f->total);
	sv_format_share(pa, sizeof pa, f->self, all);
	sv_format_share(pb, sizeof pb, f->total, all);
	char *t = g_strdup_printf("%s \u2014 self %s (%s), total %s (%s)", f->name, a, pa, b, pb);
	gtk_label_set_text(self->focus_title, t);
	gtk_widget_set_tooltip_text(GTK_WIDGET(self->focus_title), t);
	g_free(t);
	struct owner o = { f, focus_ref, focus_unref };
	table_set(&self->callers, o, &f->callers, true, all, false, 0.01);
	table_set(&self->callees, o, &f->callees, true, all, true, 0.01);
	GString *s = g_string_new("Lines (self, total):\n");
	for (size_t i = 0; i < f->n_lines && i < 20; i++) {
		sv_format_ns(a, sizeof a, f->lines[i].self);
		sv_format_ns(b, sizeof b, f->lines[i].total);
		const char *file = sv_profile_str(f->r->prof, f->lines[i].file);
		g_string_append_printf(s, "  %s:%d  %s  %s\n", *file ? file : "?", f->lines[i].line, a, b);
	}
	gtk_label_set_text(self->lines, s->str);
	g_string_free(s, TRUE);
}

static void focus_done(void *p, void *user)
{
	struct focus_job *j = p;
	SsCallTree *self = user;
	self->focus_pending = false;
	if (self->focus)
		g_atomic_rc_box_release_full(self->focus, focus_clear);
	self->focus = j->f;
	j->f = NULL;
	show_focus(self);
}

static void request_focus(SsCallTree *self, const char *name)
{
	if (!self->r)
		return;
	struct focus_job *j = g_new0(struct focus_job, 1);
	j->f = g_atomic_rc_box_new0(struct focus);
	j->f->r = ss_stack_result_ref(self->r);
	snprintf(j->f->name, sizeof j->f->name, "%s", name);
	self->focus_pending = true;
	ss_session_submit(self->session, self, focus_run, focus_done, j, focus_job_free, self);
}

static void on_selected(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)ps;
	SsCallTree *self = data;
	GtkTreeListRow *row = gtk_single_selection_get_selected_item(GTK_SINGLE_SELECTION(o));
	if (!row)
		return;
	SsTreeItem *it = gtk_tree_list_row_get_item(row);
	uint32_t sym = it->t->nodes[it->node].sym;
	if (sym < it->t->n_syms)
		request_focus(self, sv_profile_str(it->t->p, it->t->syms[sym].name));
	g_object_unref(it);
}

static void dispose(GObject *o)
{
	SsCallTree *self = SS_CALL_TREE(o);
	if (self->session) {
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	self->panel = NULL;
	if (self->focus) {
		g_atomic_rc_box_release_full(self->focus, focus_clear);
		self->focus = NULL;
	}
	ss_stack_result_unref(self->r);
	self->r = NULL;
	G_OBJECT_CLASS(ss_call_tree_parent_class)->dispose(o);
}

static void ss_call_tree_class_init(SsCallTreeClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_call_tree_init(SsCallTree *self)
{
	(void)self;
}

static GtkWidget *heading(const char *text)
{
	GtkWidget *l = gtk_label_new(text);
	gtk_label_set_xalign(GTK_LABEL(l), 0);
	gtk_widget_add_css_class(l, "heading");
	gtk_widget_set_margin_start(l, 6);
	gtk_widget_set_margin_top(l, 4);
	return l;
}

static GtkWidget *create_body(SsStackPanel *panel)
{
	SsCallTree *self = g_object_new(SS_TYPE_CALL_TREE, NULL);
	self->panel = panel;
	self->session = g_object_ref(ss_stack_panel_get_session(panel));
	GtkWidget *paned = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
	gtk_widget_set_hexpand(paned, TRUE);
	gtk_paned_set_start_child(GTK_PANED(paned), table_new(&self->main));
	GtkWidget *side = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
	self->focus_title = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_xalign(self->focus_title, 0);
	gtk_label_set_ellipsize(self->focus_title, PANGO_ELLIPSIZE_END);
	gtk_label_set_selectable(self->focus_title, TRUE);
	gtk_widget_set_margin_start(GTK_WIDGET(self->focus_title), 6);
	gtk_box_append(GTK_BOX(side), GTK_WIDGET(self->focus_title));
	gtk_box_append(GTK_BOX(side), heading("Callers"));
	gtk_box_append(GTK_BOX(side), table_new(&self->callers));
	gtk_box_append(GTK_BOX(side), heading("Callees"));
	gtk_box_append(GTK_BOX(side), table_new(&self->callees));
	self->lines = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_xalign(self->lines, 0);
	gtk_label_set_selectable(self->lines, TRUE);
	gtk_widget_add_css_class(GTK_WIDGET(self->lines), "monospace");
	gtk_widget_set_margin_start(GTK_WIDGET(self->lines), 6);
	gtk_box_append(GTK_BOX(side), GTK_WIDGET(self->lines));
	gtk_paned_set_end_child(GTK_PANED(paned), side);
	gtk_paned_set_position(GTK_PANED(paned), 560);
	gtk_box_append(GTK_BOX(self), paned);
	show_focus(self);
	return GTK_WIDGET(self);
}

static void show(GtkWidget *body, struct ss_stack_result *r)
{
	SsCallTree *self = SS_CALL_TREE(body);
	ss_stack_result_unref(self->r);
	self->r = ss_stack_result_ref(r);
	bool bottom_up = r && r->mode == SV_BOTTOM_UP;
	/* The rows hold the result by reference, as the panel does. */
	struct owner o = { r, result_ref, result_unref };
	table_set(&self->main, o, r ? &r->tree : NULL, false, r ? r->prof->total_weight : 0, !bottom_up, 0.1);
	g_signal_connect(self->main.sel, "notify::selected-item", G_CALLBACK(on_selected), self);
	/* A new scope: the function picked before may not be in it. */
	if (self->focus && r) {
		char name[512];
		snprintf(name, sizeof name, "%s", self->focus->name);
		request_focus(self, name);
	} else if (!r && self->focus) {
		g_atomic_rc_box_release_full(self->focus, focus_clear);
		self->focus = NULL;
		show_focus(self);
	}
}

static int64_t search(GtkWidget *body, const char *needle)
{
	SsCallTree *self = SS_CALL_TREE(body);
	if (!self->r || !needle || !*needle)
		return 0;
	uint8_t *m = g_malloc0(self->r->tree.n_nodes ? self->r->tree.n_nodes : 1);
	int64_t covered = sv_tree_search(&self->r->tree, needle, m);
	/* Select the heaviest match, as a find in a tree does. */
	uint32_t best = SV_NONE;
	for (size_t i = 1; i < self->r->tree.n_nodes; i++)
		if (m[i] && (best == SV_NONE || self->r->tree.nodes[i].total > self->r->tree.nodes[best].total))
			best = (uint32_t)i;
	g_free(m);
	if (best != SV_NONE)
		ss_tree_panel_select(GTK_WIDGET(self->panel), best);
	return covered;
}

static const struct ss_stack_kind kind = { "tree", -1, true, create_body, show, search };

static GtkWidget *create(SsSession *session)
{
	return ss_stack_panel_new(session, &kind);
}

const struct ss_panel ss_panel_tree = { "tree", "Call tree", create, ss_stack_panel_text, SS_PANEL_BOTTOM };

/* ---- for tests and search ---- */

static SsCallTree *body_of(GtkWidget *panel)
{
	return SS_CALL_TREE(ss_stack_panel_get_body(panel));
}

bool ss_tree_panel_select(GtkWidget *panel, uint32_t node)
{
	SsCallTree *self = body_of(panel);
	if (!self->r || node == 0 || node >= self->r->tree.n_nodes)
		return false;
	/* Open the path down to the node, then select its row. */
	uint32_t path[600];
	size_t n = 0;
	for (uint32_t i = node; i != 0 && i != SV_NONE && n < 600; i = self->r->tree.nodes[i].parent)
		path[n++] = i;
	GListModel *m = G_LIST_MODEL(gtk_single_selection_get_model(self->main.sel));
	guint pos = 0;
	for (size_t k = n; k-- > 0;) {
		bool found = false;
		for (guint i = pos; i < g_list_model_get_n_items(m); i++) {
			GtkTreeListRow *row = gtk_tree_list_model_get_row(GTK_TREE_LIST_MODEL(m), i);
			SsTreeItem *it = gtk_tree_list_row_get_item(row);
			bool hit = it->node == path[k];
			g_object_unref(it);
			if (hit) {
				if (k)
					gtk_tree_list_row_set_expanded(row, TRUE);
				pos = i;
				found = true;
			}
			g_object_unref(row);
			if (hit)
				break;
		}
		if (!found)
			return false;
	}
	gtk_single_selection_set_selected(self->main.sel, pos);
	return true;
}

bool ss_tree_panel_focus_pending(GtkWidget *panel)
{
	return body_of(panel)->focus_pending;
}

char *ss_tree_panel_focus_text(GtkWidget *panel)
{
	SsCallTree *self = body_of(panel);
	struct focus *f = self->focus;
	if (!f)
		return NULL;
	GString *s = g_string_new(NULL);
	g_string_append_printf(s, "%s\n", gtk_label_get_text(self->focus_title));
	g_string_append(s, "callers:");
	for (uint32_t c = f->callers.n_nodes ? f->callers.nodes[0].child : SV_NONE; c != SV_NONE; c = f->callers.nodes[c].next) {
		char l[512];
		sv_tree_label(&f->callers, c, l, sizeof l);
		g_string_append_printf(s, " %s", l);
	}
	g_string_append(s, "\ncallees:");
	for (uint32_t c = f->callees.n_nodes ? f->callees.nodes[0].child : SV_NONE; c != SV_NONE; c = f->callees.nodes[c].next) {
		char l[512];
		sv_tree_label(&f->callees, c, l, sizeof l);
		g_string_append_printf(s, " %s", l);
	}
	g_string_append_printf(s, "\n%s", gtk_label_get_text(self->lines));
	return g_string_free(s, FALSE);
}

guint ss_tree_panel_rows(GtkWidget *panel)
{
	SsCallTree *self = body_of(panel);
	return self->main.sel ? g_list_model_get_n_items(G_LIST_MODEL(self->main.sel)) : 0;
}
