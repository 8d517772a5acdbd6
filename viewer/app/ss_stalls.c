/*
 * ss_stalls.c - the stalls table; see ss_stalls.h. Rows are small GObjects
 * holding an index into tl_db.stalls (loaded at open), so sorting never
 * touches the database. What the analysis says of each stall's poll (its
 * task, culprit, on-CPU share, system call) is worked out on the session's
 * background worker after the table is shown, and filled in when it comes.
 */
#include "ss_stalls.h"

#include <stdio.h>
#include <string.h>

#include "examine.h"
#include "ss_panels.h"
#include "tl_ticks.h"

/* ---- row item ---- */

#define SS_TYPE_STALL_ITEM (ss_stall_item_get_type())
G_DECLARE_FINAL_TYPE(SsStallItem, ss_stall_item, SS, STALL_ITEM, GObject)

struct _SsStallItem {
	GObject parent;
	const struct tl_db *db;
	guint index;
};

G_DEFINE_FINAL_TYPE(SsStallItem, ss_stall_item, G_TYPE_OBJECT)

static void ss_stall_item_class_init(SsStallItemClass *k)
{
	(void)k;
}

static void ss_stall_item_init(SsStallItem *i)
{
	(void)i;
}

static const struct tl_stall *item_stall(gpointer item)
{
	SsStallItem *it = SS_STALL_ITEM(item);
	return &it->db->stalls[it->index];
}

/* ---- panel ---- */

enum { COL_START, COL_DUR, COL_LANE, COL_TASK, COL_KIND, COL_CULPRIT, COL_ONCPU, COL_SYSCALL, COL_LOC, N_COLS };

/* The analysis of one stall's poll (examine.h). */
struct judged {
	bool ok;
	int64_t task;
	int on_cpu;                 /* percent, -1 when unknown */
	char culprit[256], syscall[64];
};

/* Stalls examined at most (the table lists them all). */
#define MAX_JUDGED 20000

struct _SsStalls {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_sel;
	struct tl_db *db;
	GListStore *store;
	GtkSingleSelection *sel;
	GtkColumnView *view;
	GtkLabel *count;
	struct judged *judged;      /* per tl_db.stalls entry, NULL until examined */
	int cols[N_COLS];           /* sorter data: the column numbers */
};

G_DEFINE_FINAL_TYPE(SsStalls, ss_stalls, GTK_TYPE_BOX)

/* One format for every time: milliseconds, to the microsecond. */
static void ms(char *buf, size_t n, int64_t ns)
{
	snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
}

static const struct judged *judged_of(SsStalls *self, const struct tl_stall *st)
{
	if (!self->judged)
		return NULL;
	size_t i = (size_t)(st - self->db->stalls);
	return i < self->db->n_stalls && self->judged[i].ok ? &self->judged[i] : NULL;
}

static void cell_text(SsStalls *self, int col, const struct tl_stall *st, char *buf, size_t n)
{
	const struct tl_db *db = self->db;
	const struct judged *j = judged_of(self, st);
	const char *pending = self->judged ? "–" : "…";
	switch (col) {
	case COL_START:
		ms(buf, n, st->ts - db->first_ts);
		break;
	case COL_DUR:
		ms(buf, n, st->dur);
		break;
	case COL_LANE:
		snprintf(buf, n, "%s", st->lane >= 0 ? db->lanes[st->lane].label : "?");
		break;
	case COL_TASK:
		if (j)
			snprintf(buf, n, "%lld", (long long)j->task);
		else
			snprintf(buf, n, "%s", pending);
		break;
	case COL_KIND:
		snprintf(buf, n, "%s", st->kind);
		break;
	case COL_CULPRIT:
		snprintf(buf, n, "%s", j ? (j->culprit[0] ? j->culprit : "–") : pending);
		break;
	case COL_ONCPU:
		if (j && j->on_cpu >= 0)
			snprintf(buf, n, "%d%%", j->on_cpu);
		else
			snprintf(buf, n, "%s", j ? "–" : pending);
		break;
	case COL_SYSCALL:
		snprintf(buf, n, "%s", j ? (j->syscall[0] ? j->syscall : "–") : pending);
		break;
	default: {
		const struct tl_location *l = tl_db_location(db, st->location_id);
		snprintf(buf, n, "%s", l ? l->name : "?");
	}
	}
}

static void setup_cb(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)data;
	int col = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(f), "col"));
	GtkWidget *l = gtk_label_new(NULL);
	/* Numbers right-aligned; the worker and the location never cut short
	 * (the table scrolls sideways instead). */
	bool num = col == COL_START || col == COL_DUR || col == COL_TASK || col == COL_ONCPU;
	gtk_label_set_xalign(GTK_LABEL(l), num ? 1 : 0);
	if (col == COL_CULPRIT)
		gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_END);
	if (num)
		gtk_widget_add_css_class(l, "numeric");
	gtk_list_item_set_child(li, l);
}

static void bind_cb(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	SsStalls *self = data;
	int col = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(f), "col"));
	char buf[256];
	cell_text(self, col, item_stall(gtk_list_item_get_item(li)), buf, sizeof buf);
	gtk_label_set_text(GTK_LABEL(gtk_list_item_get_child(li)), buf);
}

static int cmp64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

static int compare_cb(gconstpointer a, gconstpointer b, gpointer data)
{
	const int *colp = data;
	int col = *colp;
	SsStalls *self = (SsStalls *)((const char *)(colp - col) - offsetof(SsStalls, cols));
	const struct tl_stall *x = item_stall((gpointer)a), *y = item_stall((gpointer)b);
	const struct tl_db *db = SS_STALL_ITEM((gpointer)a)->db;
	const struct judged *jx = judged_of(self, x), *jy = judged_of(self, y);
	switch (col) {
	case COL_TASK:
		return jx && jy ? cmp64(jx->task, jy->task) : (jx != NULL) - (jy != NULL);
	case COL_CULPRIT:
		return jx && jy ? g_strcmp0(jx->culprit, jy->culprit) : (jx != NULL) - (jy != NULL);
	case COL_ONCPU:
		return jx && jy ? cmp64(jx->on_cpu, jy->on_cpu) : (jx != NULL) - (jy != NULL);
	case COL_SYSCALL:
		return jx && jy ? g_strcmp0(jx->syscall, jy->syscall) : (jx != NULL) - (jy != NULL);
	case COL_START:
		return cmp64(x->ts, y->ts);
	case COL_DUR:
		return cmp64(x->dur, y->dur);
	case COL_LANE:
		return x->lane != y->lane ? (x->lane < y->lane ? -1 : 1) : cmp64(x->ts, y->ts);
	case COL_KIND:
		return g_strcmp0(x->kind, y->kind);
	default: {
		const struct tl_location *lx = tl_db_location(db, x->location_id), *ly = tl_db_location(db, y->location_id);
		return g_strcmp0(lx ? lx->name : "", ly ? ly->name : "");
	}
	}
}

static void on_selected(GtkSingleSelection *sel, GParamSpec *ps, gpointer data)
{
	(void)ps;
	SsStalls *self = data;
	gpointer item = gtk_single_selection_get_selected_item(sel);
	if (item && self->db)
		ss_session_select(self->session, SS_SEL_STALL, item_stall(item)->id, 0);
}

/* The row of the stall selected anywhere, or none. */
static void on_session_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsStalls *self = data;
	const struct ss_selection *s = ss_session_get_selection(self->session);
	GListModel *rows = G_LIST_MODEL(self->sel);
	guint want = GTK_INVALID_LIST_POSITION;
	for (guint i = 0; s->kind == SS_SEL_STALL && i < g_list_model_get_n_items(rows); i++) {
		SsStallItem *it = g_list_model_get_item(rows, i);
		bool hit = item_stall(it)->id == s->id;
		g_object_unref(it);
		if (hit) {
			want = i;
			break;
		}
	}
	if (gtk_single_selection_get_selected(self->sel) != want)
		gtk_single_selection_set_selected(self->sel, want);
}

static void set_db(SsStalls *self, struct tl_db *db);

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsStalls *self = data;
	set_db(self, ss_session_get_db(self->session));
}

static void dispose(GObject *o)
{
	SsStalls *self = SS_STALLS(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_sel, self->session);
		ss_session_cancel_background(self->session, self);
		g_clear_object(&self->session);
	}
	g_clear_pointer(&self->judged, g_free);
	G_OBJECT_CLASS(ss_stalls_parent_class)->dispose(o);
}

static void ss_stalls_class_init(SsStallsClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_stalls_init(SsStalls *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	self->count = GTK_LABEL(gtk_label_new("No trace"));
	gtk_label_set_xalign(self->count, 0);
	gtk_widget_set_margin_start(GTK_WIDGET(self->count), 6);
	gtk_widget_set_margin_top(GTK_WIDGET(self->count), 4);
	gtk_widget_set_margin_bottom(GTK_WIDGET(self->count), 4);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->count));

	self->store = g_list_store_new(SS_TYPE_STALL_ITEM);
	self->view = GTK_COLUMN_VIEW(gtk_column_view_new(NULL));
	GtkSortListModel *sorted = gtk_sort_list_model_new(G_LIST_MODEL(g_object_ref(self->store)),
							  g_object_ref(gtk_column_view_get_sorter(self->view)));
	self->sel = gtk_single_selection_new(G_LIST_MODEL(sorted));
	gtk_single_selection_set_autoselect(self->sel, FALSE);
	gtk_single_selection_set_can_unselect(self->sel, TRUE);
	gtk_column_view_set_model(self->view, GTK_SELECTION_MODEL(self->sel));
	g_signal_connect(self->sel, "notify::selected-item", G_CALLBACK(on_selected), self);

	static const char *const titles[N_COLS] = { "Start", "Duration", "Worker", "Task", "Kind", "Culprit",
						    "On CPU", "System call", "Location" };
	for (int c = 0; c < N_COLS; c++) {
		self->cols[c] = c;
		GtkListItemFactory *f = gtk_signal_list_item_factory_new();
		g_object_set_data(G_OBJECT(f), "col", GINT_TO_POINTER(c));
		g_signal_connect(f, "setup", G_CALLBACK(setup_cb), self);
		g_signal_connect(f, "bind", G_CALLBACK(bind_cb), self);
		GtkColumnViewColumn *col = gtk_column_view_column_new(titles[c], f);
		GtkSorter *sorter = GTK_SORTER(gtk_custom_sorter_new(compare_cb, &self->cols[c], NULL));
		gtk_column_view_column_set_sorter(col, sorter);
		g_object_unref(sorter);
		gtk_column_view_column_set_resizable(col, TRUE);
		gtk_column_view_column_set_expand(col, c == COL_LOC);
		if (c == COL_CULPRIT)
			gtk_column_view_column_set_fixed_width(col, 220);
		gtk_column_view_append_column(self->view, col);
		if (c == COL_DUR) /* longest first is what one looks for */
			gtk_column_view_sort_by_column(self->view, col, GTK_SORT_DESCENDING);
		g_object_unref(col);
	}
	gtk_column_view_set_reorderable(self->view, TRUE);
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(self->view));
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_AUTOMATIC, GTK_POLICY_AUTOMATIC);
	gtk_widget_set_vexpand(sw, TRUE);
	gtk_box_append(GTK_BOX(self), sw);
}

/* ---- the analysis of every stall's poll, on the background worker ---- */

struct judge_job {
	const struct tl_db *meta;   /* the window's trace: its stalls */
	size_t n;
	struct judged *out;
};

static void judge_free(void *p)
{
	struct judge_job *j = p;
	g_free(j->out);
	g_free(j);
}

static void judge_run(struct tl_db *db, void *p)
{
	struct judge_job *j = p;
	struct ss_examiner *x = tl_db_examiner(db);
	for (size_t i = 0; x && i < j->n; i++) {
		const struct tl_stall *st = &j->meta->stalls[i];
		struct ss_poll_detail d;
		tl_db_arm(db, TL_FRAME_BUDGET_S);
		if (!st->poll_id || ss_examiner_poll(x, st->poll_id, &d) != 0)
			continue;
		struct judged *o = &j->out[i];
		o->ok = true;
		o->task = d.task;
		o->on_cpu = d.has_cpu && d.dur > 0 ? (int)(100.0 * (double)d.on_cpu / (double)d.dur + 0.5) : -1;
		snprintf(o->culprit, sizeof o->culprit, "%s", d.culprit);
		snprintf(o->syscall, sizeof o->syscall, "%s", d.syscall);
	}
}

static void judge_done(void *p, void *user)
{
	struct judge_job *j = p;
	SsStalls *self = user;
	g_free(self->judged);
	self->judged = j->out;
	j->out = NULL;
	/* Rebind every row, and sort again by what arrived. */
	guint n = g_list_model_get_n_items(G_LIST_MODEL(self->store));
	g_list_model_items_changed(G_LIST_MODEL(self->store), 0, n, n);
	GtkSorter *sorter = gtk_column_view_get_sorter(self->view);
	if (sorter)
		gtk_sorter_changed(sorter, GTK_SORTER_CHANGE_DIFFERENT);
}

GtkWidget *ss_stalls_new(SsSession *session)
{
	SsStalls *self = g_object_new(SS_TYPE_STALLS, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_sel = g_signal_connect(session, "notify::selection", G_CALLBACK(on_session_selection), self);
	set_db(self, ss_session_get_db(session));
	return GTK_WIDGET(self);
}

static void set_db(SsStalls *self, struct tl_db *db)
{
	self->db = db;
	g_clear_pointer(&self->judged, g_free);
	g_list_store_remove_all(self->store);
	if (!db) {
		gtk_label_set_text(self->count, "No trace");
		return;
	}
	GPtrArray *items = g_ptr_array_new_with_free_func(g_object_unref);
	for (size_t i = 0; i < db->n_stalls; i++) {
		SsStallItem *it = g_object_new(SS_TYPE_STALL_ITEM, NULL);
		it->db = db;
		it->index = (guint)i;
		g_ptr_array_add(items, it);
	}
	g_list_store_splice(self->store, 0, 0, items->pdata, items->len);
	g_ptr_array_unref(items);
	char buf[96];
	snprintf(buf, sizeof buf, "%zu stall%s (polls past the recorder's threshold); ] and [ walk them in time order",
		 db->n_stalls, db->n_stalls == 1 ? "" : "s");
	gtk_label_set_text(self->count, buf);
	if (db->n_stalls) {
		struct judge_job *j = g_new0(struct judge_job, 1);
		j->meta = db;
		j->n = db->n_stalls < MAX_JUDGED ? db->n_stalls : MAX_JUDGED;
		j->out = g_new0(struct judged, db->n_stalls);
		ss_session_submit_background(self->session, self, judge_run, judge_done, j, judge_free, self);
	}
}

void ss_stalls_select_row(SsStalls *self, guint n)
{
	gtk_single_selection_set_selected(self->sel, n);
}

guint ss_stalls_count(SsStalls *self)
{
	return g_list_model_get_n_items(G_LIST_MODEL(self->store));
}

/* The table as it is sorted now, a row a line, its cells tab-separated. */
static char *stalls_text(GtkWidget *w)
{
	SsStalls *self = SS_STALLS(w);
	GString *s = g_string_new(gtk_label_get_text(self->count));
	g_string_append_c(s, '\n');
	GListModel *rows = G_LIST_MODEL(self->sel);
	for (guint i = 0; self->db && i < g_list_model_get_n_items(rows); i++) {
		SsStallItem *it = g_list_model_get_item(rows, i);
		for (int c = 0; c < N_COLS; c++) {
			char buf[256];
			cell_text(self, c, item_stall(it), buf, sizeof buf);
			g_string_append_printf(s, "%s%s", c ? "\t" : "", buf);
		}
		g_string_append_c(s, '\n');
		g_object_unref(it);
	}
	return g_string_free(s, FALSE);
}

const struct ss_panel ss_panel_stalls = { "stalls", "Stalls", ss_stalls_new, stalls_text, SS_PANEL_BOTTOM, NULL };
