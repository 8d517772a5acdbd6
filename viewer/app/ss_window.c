/*
 * ss_window.c - the main window; see ss_window.h.
 *
 * Opening runs in a GTask thread: an import can take seconds on a large
 * recording (progress is marshalled to the main loop with g_idle_add), and
 * opening a database reads its lanes, stalls and locations. The opened tl_db
 * goes to the session, whose query worker owns its connection from then on.
 *
 * Layout: the answer bar (ss_answer.c: what the selection was doing, in
 * words) over the timeline, the dock under the lanes (panels registered
 * SS_PANEL_BOTTOM) below them, the side notebook (SS_PANEL_SIDE) on the
 * right, which shrinks and collapses (F9). Errors show in a banner over it
 * all (or in the empty page when no trace is open).
 */
#include "ss_window.h"

#include <stdio.h>
#include <string.h>

#include "ss_answer.h"
#include "ss_panels.h"
#include "ss_search.h"
#include "ss_source.h"

struct _SsWindow {
	GtkApplicationWindow parent;
	SsSession *session;
	SsTimeline *timeline;
	GtkWidget **panels;          /* one per registered panel, in table order */
	GtkNotebook *side, *dock;
	GtkPaned *hpaned, *vpaned;
	GtkWidget *search;
	GtkWidget *answer;           /* the answer bar over the lanes */
	GtkStack *main_stack;        /* "empty" or "trace" */
	GtkLabel *empty_label;
	GtkRevealer *progress_rev;
	GtkProgressBar *progress;
	GtkRevealer *banner_rev;
	GtkLabel *banner;
	char *error;
	bool opening;
	gint cancel_import;          /* atomic: the import in flight is to stop */
	int side_width;              /* the side notebook's width before it collapsed */
};

G_DEFINE_FINAL_TYPE(SsWindow, ss_window, GTK_TYPE_APPLICATION_WINDOW)

static guint sig_opened;

static void show_error(SsWindow *self, const char *msg)
{
	g_free(self->error);
	self->error = g_strdup(msg);
	char *t = g_strdup_printf("Could not open the trace: %s", msg);
	gtk_label_set_text(self->banner, t);
	g_free(t);
	gtk_revealer_set_reveal_child(self->banner_rev, TRUE);
	if (!ss_session_get_db(self->session))
		gtk_stack_set_visible_child_name(self->main_stack, "empty");
	g_signal_emit(self, sig_opened, 0, FALSE);
}

static void on_banner_close(GtkButton *b, gpointer data)
{
	(void)b;
	gtk_revealer_set_reveal_child(SS_WINDOW(data)->banner_rev, FALSE);
}

static void on_cancel_import(GtkButton *b, gpointer data)
{
	(void)b;
	SsWindow *self = data;
	g_atomic_int_set(&self->cancel_import, 1);
	gtk_progress_bar_set_text(self->progress, "Cancelling at the next segment…");
}

/* The dock under the lanes gets what the lanes leave of the window, and at
 * least a third of it. */
static void fit_lanes(SsWindow *self)
{
	struct tl_db *db = ss_session_get_db(self->session);
	int h = gtk_widget_get_height(GTK_WIDGET(self->vpaned));
	if (!db || h <= 0)
		return;
	struct tl_layout l;
	tl_layout_compute(&l, db);
	int want = TL_RULER_H + l.content_h + TL_LEGEND_H + 48 /* the answer bar */ + 8;
	tl_layout_free(&l);
	int lo = 220, hi = h * 2 / 3;
	gtk_paned_set_position(self->vpaned, want < lo ? lo : want > hi ? hi : want);
}

static void set_db(SsWindow *self, struct tl_db *db, const char *title_path)
{
	ss_session_set_db(self->session, db);
	gtk_revealer_set_reveal_child(self->banner_rev, FALSE);
	gtk_notebook_set_current_page(self->side, 0);
	gtk_notebook_set_current_page(self->dock, 0);
	gtk_widget_set_sensitive(self->search, TRUE);
	fit_lanes(self);
	char *base = g_path_get_basename(title_path);
	char *title = g_strdup_printf("%s — stallscope", base);
	gtk_window_set_title(GTK_WINDOW(self), title);
	g_free(title);
	g_free(base);
	gtk_stack_set_visible_child_name(self->main_stack, "trace");
	char *uri = g_filename_to_uri(title_path, NULL, NULL);
	if (uri) {
		gtk_recent_manager_add_item(gtk_recent_manager_get_default(), uri);
		g_free(uri);
	}
	gtk_widget_grab_focus(GTK_WIDGET(self->timeline));
	g_signal_emit(self, sig_opened, 0, TRUE);
}

/* ---- opening (and importing first) in a thread ---- */

struct open_job {
	SsWindow *self;              /* a reference */
	char **paths;
	char *db_path;
	bool import;                 /* segments: imported into db_path first */
	struct tl_db *db;            /* the result */
	char err[2048];
};

struct progress_msg {
	SsWindow *self;
	double frac;
	char phase[128];
};

static gboolean progress_idle(gpointer data)
{
	struct progress_msg *m = data;
	if (!m->self->session) {
		/* closed meanwhile */
	} else if (m->frac >= 0) {
		gtk_progress_bar_set_fraction(m->self->progress, m->frac);
		char t[160];
		snprintf(t, sizeof t, "Importing… %.0f%%", m->frac * 100);
		gtk_progress_bar_set_text(m->self->progress, t);
	} else {
		gtk_progress_bar_pulse(m->self->progress);
		gtk_progress_bar_set_text(m->self->progress, m->phase);
	}
	g_object_unref(m->self);
	g_free(m);
	return G_SOURCE_REMOVE;
}

static void progress_cb(double frac, const char *phase, void *user)
{
	struct progress_msg *m = g_new0(struct progress_msg, 1);
	m->self = g_object_ref(user);
	m->frac = frac;
	g_snprintf(m->phase, sizeof m->phase, "%s", phase ? phase : "");
	g_idle_add(progress_idle, m);
}

static void open_thread(GTask *task, gpointer src, gpointer data, GCancellable *c)
{
	(void)src;
	(void)c;
	struct open_job *j = data;
	if (j->import && ss_source_import((const char *const *)j->paths, g_strv_length(j->paths), j->db_path,
					  progress_cb, j->self, &j->self->cancel_import, j->err, sizeof j->err) != 0) {
		g_task_return_boolean(task, FALSE);
		return;
	}
	j->db = tl_db_open(j->db_path, j->err, sizeof j->err);
	g_task_return_boolean(task, j->db != NULL);
}

static void open_job_free(gpointer p)
{
	struct open_job *j = p;
	tl_db_close(j->db);   /* when nobody took it */
	g_strfreev(j->paths);
	g_free(j->db_path);
	g_object_unref(j->self);
	g_free(j);
}

static void open_done(GObject *src, GAsyncResult *res, gpointer data)
{
	(void)data;
	SsWindow *self = SS_WINDOW(src);
	struct open_job *j = g_task_get_task_data(G_TASK(res));
	bool ok = g_task_propagate_boolean(G_TASK(res), NULL);
	self->opening = false;
	if (!self->session)
		return;   /* closed meanwhile */
	gtk_revealer_set_reveal_child(self->progress_rev, FALSE);
	if (ok) {
		struct tl_db *db = j->db;
		j->db = NULL;
		set_db(self, db, j->paths[0]);
	} else if (j->import && g_atomic_int_get(&self->cancel_import) && !strcmp(j->err, "cancelled")) {
		/* The user's own choice: nothing to report, the last trace stays. */
		g_signal_emit(self, sig_opened, 0, FALSE);
	} else {
		show_error(self, j->err);
	}
}

void ss_window_open_paths(SsWindow *self, const char *const *paths, gsize n)
{
	if (n == 0 || self->opening)
		return;
	struct open_job *j = g_new0(struct open_job, 1);
	j->self = g_object_ref(self);
	j->paths = g_new0(char *, n + 1);
	for (gsize i = 0; i < n; i++)
		j->paths[i] = g_strdup(paths[i]);
	j->import = !ss_source_is_database(paths, n);
	/* A cache database per set of inputs: reopening imports only what grew. */
	j->db_path = j->import ? ss_source_cache_db(paths, n) : g_strdup(paths[0]);
	self->opening = true;
	g_atomic_int_set(&self->cancel_import, 0);
	if (j->import) {
		gtk_progress_bar_set_fraction(self->progress, 0);
		gtk_progress_bar_set_text(self->progress, "Importing…");
		gtk_revealer_set_reveal_child(self->progress_rev, TRUE);
	}
	GTask *t = g_task_new(self, NULL, open_done, NULL);
	g_task_set_task_data(t, j, open_job_free);
	g_task_run_in_thread(t, open_thread);
	g_object_unref(t);
}

void ss_window_open_files(SsWindow *self, GFile **files, gsize n)
{
	GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
	for (gsize i = 0; i < n; i++) {
		char *p = g_file_get_path(files[i]);
		if (p)
			g_ptr_array_add(paths, p);
	}
	ss_window_open_paths(self, (const char *const *)paths->pdata, paths->len);
	g_ptr_array_unref(paths);
}

/* ---- open dialog and drag and drop ---- */


/* Opens what a file dialog returned (either GTK's), and drops the list. */
static void open_file_list(SsWindow *self, GListModel *files)
{
	guint n = g_list_model_get_n_items(files);
	GFile **arr = g_new0(GFile *, n + 1);
	for (guint i = 0; i < n; i++)
		arr[i] = g_list_model_get_item(files, i);
	ss_window_open_files(self, arr, n);
	for (guint i = 0; i < n; i++)
		g_object_unref(arr[i]);
	g_free(arr);
	g_object_unref(files);
}

#if GTK_CHECK_VERSION(4, 10, 0)
static void dialog_done(GObject *src, GAsyncResult *res, gpointer data)
{
	SsWindow *self = data;
	GListModel *files = gtk_file_dialog_open_multiple_finish(GTK_FILE_DIALOG(src), res, NULL);
	if (files) {
		open_file_list(self, files);
	}
	g_object_unref(self);
}
#else
static void chooser_response(GtkNativeDialog *d, int response, gpointer data)
{
	SsWindow *self = data;
	if (response == GTK_RESPONSE_ACCEPT) {
		GListModel *files = gtk_file_chooser_get_files(GTK_FILE_CHOOSER(d));
		open_file_list(self, files);
	}
	g_object_unref(d);
	g_object_unref(self);
}
#endif

static void act_open(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsWindow *self = data;
	/* GtkFileDialog exists from GTK 4.10; Debian 12 has 4.8, where the
	 * native file chooser (portal-aware) is the way. */
#if GTK_CHECK_VERSION(4, 10, 0)
	GtkFileDialog *d = gtk_file_dialog_new();
	gtk_file_dialog_set_title(d, "Open a trace database or segment files");
	gtk_file_dialog_open_multiple(d, GTK_WINDOW(self), NULL, dialog_done, g_object_ref(self));
	g_object_unref(d);
#else
	GtkFileChooserNative *d = gtk_file_chooser_native_new("Open a trace database or segment files", GTK_WINDOW(self),
							      GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
	gtk_file_chooser_set_select_multiple(GTK_FILE_CHOOSER(d), TRUE);
	GtkFileFilter *f = gtk_file_filter_new();
	gtk_file_filter_set_name(f, "Traces (*.db, *.bin, *.bin.active)");
	gtk_file_filter_add_pattern(f, "*.db");
	gtk_file_filter_add_pattern(f, "*.bin");
	gtk_file_filter_add_pattern(f, "*.bin.active");
	gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), f);
	g_object_unref(f);
	g_signal_connect(d, "response", G_CALLBACK(chooser_response), g_object_ref(self));
	gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
#endif
}

static gboolean on_drop(GtkDropTarget *t, const GValue *v, double x, double y, gpointer data)
{
	(void)t;
	(void)x;
	(void)y;
	SsWindow *self = data;
	if (!G_VALUE_HOLDS(v, GDK_TYPE_FILE_LIST))
		return FALSE;
	GSList *list = g_value_get_boxed(v);
	guint n = g_slist_length(list);
	GFile **arr = g_new0(GFile *, n + 1);
	guint i = 0;
	for (GSList *l = list; l; l = l->next)
		arr[i++] = l->data;
	ss_window_open_files(self, arr, n);
	g_free(arr);
	return TRUE;
}

/* ---- panels ---- */

static int panel_index(const char *id)
{
	for (size_t i = 0; i < ss_panel_count(); i++)
		if (strcmp(ss_panel_at(i)->id, id) == 0)
			return (int)i;
	return -1;
}

static GtkNotebook *notebook_of(SsWindow *self, size_t i)
{
	return ss_panel_at(i)->where == SS_PANEL_BOTTOM ? self->dock : self->side;
}

static void on_raise_panel(SsSession *session, const char *id, gpointer data)
{
	(void)session;
	SsWindow *self = data;
	int i = panel_index(id);
	if (i < 0)
		return;
	GtkNotebook *nb = notebook_of(self, (size_t)i);
	gtk_notebook_set_current_page(nb, gtk_notebook_page_num(nb, self->panels[i]));
	/* A side panel asked for while the side is collapsed comes back. */
	if (nb == self->side && !gtk_widget_get_visible(GTK_WIDGET(self->side)))
		g_action_group_activate_action(G_ACTION_GROUP(self), "toggle-side", NULL);
}

static void act_toggle_side(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsWindow *self = data;
	GtkWidget *side = GTK_WIDGET(self->side);
	bool show = !gtk_widget_get_visible(side);
	int w = gtk_widget_get_width(GTK_WIDGET(self->hpaned));
	if (!show)
		self->side_width = w - gtk_paned_get_position(self->hpaned);
	gtk_widget_set_visible(side, show);
	if (show && w > 0)
		gtk_paned_set_position(self->hpaned, w - (self->side_width > 120 ? self->side_width : 400));
}

/* ---- construction ---- */

static void dispose(GObject *o)
{
	SsWindow *self = SS_WINDOW(o);
	if (self->session) {
		/* Now, not when the last panel lets go of the session: a query that
		 * runs is interrupted and the trace closed as the window closes. */
		g_signal_handlers_disconnect_by_data(self->session, self);
		ss_session_set_db(self->session, NULL);
		g_clear_object(&self->session);
	}
	g_clear_pointer(&self->panels, g_free);
	g_clear_pointer(&self->error, g_free);
	G_OBJECT_CLASS(ss_window_parent_class)->dispose(o);
}

static void ss_window_class_init(SsWindowClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
	sig_opened = g_signal_new("opened", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 1,
				  G_TYPE_BOOLEAN);
}

static GtkWidget *icon_button(const char *icon, const char *action, const char *tip)
{
	GtkWidget *b = gtk_button_new_from_icon_name(icon);
	gtk_actionable_set_action_name(GTK_ACTIONABLE(b), action);
	gtk_widget_set_tooltip_text(b, tip);
	return b;
}

static GMenuModel *build_menu(void)
{
	GMenu *menu = g_menu_new();
	GMenu *color = g_menu_new();
	g_menu_append(color, "Colour by spawn location", "tl.color-by::location");
	g_menu_append(color, "Colour by culprit function", "tl.color-by::culprit");
	g_menu_append(color, "Colour by duration class", "tl.color-by::duration");
	g_menu_append_section(menu, NULL, G_MENU_MODEL(color));
	g_object_unref(color);

	/* Recently opened traces of this application. */
	GMenu *recent = g_menu_new();
	GList *items = gtk_recent_manager_get_items(gtk_recent_manager_get_default());
	int n = 0;
	for (GList *l = items; l && n < 8; l = l->next) {
		GtkRecentInfo *ri = l->data;
		if (!gtk_recent_info_has_application(ri, g_get_application_name()))
			continue;
		char *path = g_filename_from_uri(gtk_recent_info_get_uri(ri), NULL, NULL);
		if (path && g_file_test(path, G_FILE_TEST_EXISTS)) {
			GMenuItem *mi = g_menu_item_new(gtk_recent_info_get_display_name(ri), NULL);
			g_menu_item_set_action_and_target_value(mi, "app.open-recent", g_variant_new_string(path));
			g_menu_append_item(recent, mi);
			g_object_unref(mi);
			n++;
		}
		g_free(path);
	}
	g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
	if (n)
		g_menu_append_submenu(menu, "Open Recent", G_MENU_MODEL(recent));
	g_object_unref(recent);

	GMenu *help = g_menu_new();
	g_menu_append(help, "Keyboard Shortcuts", "win.show-help-overlay");
	g_menu_append(help, "About stallscope", "app.about");
	g_menu_append_section(menu, NULL, G_MENU_MODEL(help));
	g_object_unref(help);
	return G_MENU_MODEL(menu);
}

static void on_recent_changed(GtkRecentManager *m, gpointer data)
{
	(void)m;
	GtkMenuButton *menu = data;
	GMenuModel *mm = build_menu();
	gtk_menu_button_set_menu_model(menu, mm);
	g_object_unref(mm);
}

static void on_paned_mapped(GtkWidget *w, gpointer data)
{
	(void)w;
	fit_lanes(data);
}

static GtkNotebook *new_notebook(void)
{
	GtkNotebook *nb = GTK_NOTEBOOK(gtk_notebook_new());
	gtk_notebook_set_scrollable(nb, TRUE);
	return nb;
}

/* The banner for errors over everything: a message, selectable but never
 * focused (so it is not selected the moment it appears), and a close button. */
static GtkWidget *build_banner(SsWindow *self)
{
	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
	gtk_widget_add_css_class(box, "ss-banner");
	gtk_widget_set_margin_start(box, 6);
	gtk_widget_set_margin_end(box, 6);
	gtk_widget_set_margin_top(box, 6);
	gtk_widget_set_margin_bottom(box, 2);
	GtkWidget *icon = gtk_image_new_from_icon_name("dialog-error-symbolic");
	gtk_box_append(GTK_BOX(box), icon);
	self->banner = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_wrap(self->banner, TRUE);
	gtk_label_set_xalign(self->banner, 0);
	gtk_label_set_selectable(self->banner, TRUE);
	gtk_widget_set_focusable(GTK_WIDGET(self->banner), FALSE);
	gtk_widget_set_hexpand(GTK_WIDGET(self->banner), TRUE);
	gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->banner));
	GtkWidget *close = gtk_button_new_from_icon_name("window-close-symbolic");
	gtk_widget_add_css_class(close, "flat");
	gtk_widget_set_tooltip_text(close, "Dismiss");
	g_signal_connect(close, "clicked", G_CALLBACK(on_banner_close), self);
	gtk_box_append(GTK_BOX(box), close);
	self->banner_rev = GTK_REVEALER(gtk_revealer_new());
	gtk_revealer_set_child(self->banner_rev, box);
	return GTK_WIDGET(self->banner_rev);
}

static GtkWidget *build_progress(SsWindow *self)
{
	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
	gtk_widget_set_margin_start(box, 12);
	gtk_widget_set_margin_end(box, 12);
	gtk_widget_set_margin_top(box, 6);
	gtk_widget_set_margin_bottom(box, 6);
	self->progress = GTK_PROGRESS_BAR(gtk_progress_bar_new());
	gtk_progress_bar_set_show_text(self->progress, TRUE);
	gtk_widget_set_hexpand(GTK_WIDGET(self->progress), TRUE);
	gtk_widget_set_valign(GTK_WIDGET(self->progress), GTK_ALIGN_CENTER);
	gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->progress));
	GtkWidget *cancel = gtk_button_new_with_label("Cancel");
	gtk_widget_set_tooltip_text(cancel, "Stop the import (a trace imported before stays as it was)");
	g_signal_connect(cancel, "clicked", G_CALLBACK(on_cancel_import), self);
	gtk_box_append(GTK_BOX(box), cancel);
	self->progress_rev = GTK_REVEALER(gtk_revealer_new());
	gtk_revealer_set_child(self->progress_rev, box);
	return GTK_WIDGET(self->progress_rev);
}

static void ss_window_init(SsWindow *self)
{
	gtk_window_set_default_size(GTK_WINDOW(self), 1400, 860);
	gtk_window_set_title(GTK_WINDOW(self), "stallscope");

	static const GActionEntry entries[] = {
		{ "open", act_open, NULL, NULL, NULL, { 0 } },
		{ "toggle-side", act_toggle_side, NULL, NULL, NULL, { 0 } },
	};
	g_action_map_add_action_entries(G_ACTION_MAP(self), entries, G_N_ELEMENTS(entries), self);

	self->session = ss_session_new();
	g_signal_connect(self->session, "raise-panel", G_CALLBACK(on_raise_panel), self);
	self->timeline = SS_TIMELINE(ss_timeline_new(self->session));
	/* The timeline's actions also on the window, so header buttons and
	 * accelerators reach them wherever the focus is. */
	gtk_widget_insert_action_group(GTK_WIDGET(self), "tl", ss_timeline_actions(self->timeline));
	self->search = ss_search_new(self->session);
	gtk_widget_insert_action_group(GTK_WIDGET(self), "search", ss_search_actions(self->search));
	gtk_widget_set_sensitive(self->search, FALSE);

	GtkWidget *hb = gtk_header_bar_new();
	gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), icon_button("document-open-symbolic", "win.open", "Open a trace (Ctrl+O)"));
	GtkWidget *nav = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
	gtk_widget_add_css_class(nav, "linked");
	gtk_box_append(GTK_BOX(nav), icon_button("go-previous-symbolic", "tl.back", "Previous view (Alt+Left)"));
	gtk_box_append(GTK_BOX(nav), icon_button("go-next-symbolic", "tl.forward", "Next view (Alt+Right)"));
	gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), nav);
	GtkWidget *zoom = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
	gtk_widget_add_css_class(zoom, "linked");
	gtk_box_append(GTK_BOX(zoom), icon_button("zoom-out-symbolic", "tl.zoom-out", "Zoom out (-)"));
	gtk_box_append(GTK_BOX(zoom), icon_button("zoom-fit-best-symbolic", "tl.fit", "Show everything (0)"));
	gtk_box_append(GTK_BOX(zoom), icon_button("zoom-in-symbolic", "tl.zoom-in", "Zoom in (+)"));
	gtk_box_append(GTK_BOX(zoom), icon_button("zoom-original-symbolic", "tl.zoom-selection", "Zoom to the selection (Z)"));
	gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), zoom);
	GtkWidget *stalls = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
	gtk_widget_add_css_class(stalls, "linked");
	gtk_box_append(GTK_BOX(stalls), icon_button("go-up-symbolic", "tl.prev-stall", "Previous stall ([)"));
	gtk_box_append(GTK_BOX(stalls), icon_button("go-down-symbolic", "tl.next-stall", "Next stall (])"));
	gtk_header_bar_pack_start(GTK_HEADER_BAR(hb), stalls);
	GtkWidget *menu = gtk_menu_button_new();
	gtk_menu_button_set_icon_name(GTK_MENU_BUTTON(menu), "open-menu-symbolic");
	GMenuModel *mm = build_menu();
	gtk_menu_button_set_menu_model(GTK_MENU_BUTTON(menu), mm);
	g_object_unref(mm);
	g_signal_connect_object(gtk_recent_manager_get_default(), "changed", G_CALLBACK(on_recent_changed), menu, 0);
	gtk_header_bar_pack_end(GTK_HEADER_BAR(hb), menu);
	gtk_header_bar_pack_end(GTK_HEADER_BAR(hb),
				icon_button("sidebar-show-right-symbolic", "win.toggle-side", "Show or hide the side panel (F9)"));
	gtk_header_bar_pack_end(GTK_HEADER_BAR(hb), self->search);
	gtk_window_set_titlebar(GTK_WINDOW(self), hb);

	self->side = new_notebook();
	self->dock = new_notebook();
	self->panels = g_new0(GtkWidget *, ss_panel_count());
	for (size_t i = 0; i < ss_panel_count(); i++) {
		const struct ss_panel *p = ss_panel_at(i);
		self->panels[i] = p->create(self->session);
		gtk_notebook_append_page(notebook_of(self, i), self->panels[i], gtk_label_new(p->title));
		if (p->actions)
			gtk_widget_insert_action_group(GTK_WIDGET(self), p->id, p->actions(self->panels[i]));
	}
	/* Small enough to leave the lanes the room, never under a readable width. */
	gtk_widget_set_size_request(GTK_WIDGET(self->side), 220, -1);

	GtkWidget *top = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
	self->answer = ss_answer_new(self->session);
	gtk_box_append(GTK_BOX(top), self->answer);
	gtk_box_append(GTK_BOX(top), GTK_WIDGET(self->timeline));
	self->vpaned = GTK_PANED(gtk_paned_new(GTK_ORIENTATION_VERTICAL));
	gtk_paned_set_start_child(self->vpaned, top);
	gtk_paned_set_end_child(self->vpaned, GTK_WIDGET(self->dock));
	gtk_paned_set_resize_end_child(self->vpaned, TRUE);
	gtk_paned_set_shrink_start_child(self->vpaned, FALSE);
	gtk_paned_set_shrink_end_child(self->vpaned, TRUE);
	gtk_widget_set_size_request(top, -1, 160);
	gtk_paned_set_position(self->vpaned, 420);
	g_signal_connect(self->vpaned, "map", G_CALLBACK(on_paned_mapped), self);

	self->hpaned = GTK_PANED(gtk_paned_new(GTK_ORIENTATION_HORIZONTAL));
	gtk_paned_set_start_child(self->hpaned, GTK_WIDGET(self->vpaned));
	gtk_paned_set_end_child(self->hpaned, GTK_WIDGET(self->side));
	gtk_paned_set_resize_end_child(self->hpaned, FALSE);
	gtk_paned_set_shrink_end_child(self->hpaned, FALSE);
	gtk_paned_set_position(self->hpaned, 980);

	/* Not selectable: a selectable label takes the focus and shows itself
	 * selected as the window opens. */
	self->empty_label = GTK_LABEL(gtk_label_new("Open a trace: a database from 'stallscope import', a directory of\n"
						    "segments or segment files (Ctrl+O), or drop them here."));
	gtk_label_set_justify(self->empty_label, GTK_JUSTIFY_CENTER);
	gtk_label_set_wrap(self->empty_label, TRUE);
	gtk_widget_add_css_class(GTK_WIDGET(self->empty_label), "dim-label");

	self->main_stack = GTK_STACK(gtk_stack_new());
	gtk_stack_add_named(self->main_stack, GTK_WIDGET(self->empty_label), "empty");
	gtk_stack_add_named(self->main_stack, GTK_WIDGET(self->hpaned), "trace");
	gtk_stack_set_visible_child_name(self->main_stack, "empty");

	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
	gtk_box_append(GTK_BOX(box), build_banner(self));
	gtk_box_append(GTK_BOX(box), build_progress(self));
	gtk_widget_set_vexpand(GTK_WIDGET(self->main_stack), TRUE);
	gtk_box_append(GTK_BOX(box), GTK_WIDGET(self->main_stack));
	gtk_window_set_child(GTK_WINDOW(self), box);

	GtkDropTarget *drop = gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
	g_signal_connect(drop, "drop", G_CALLBACK(on_drop), self);
	gtk_widget_add_controller(GTK_WIDGET(self), GTK_EVENT_CONTROLLER(drop));
}

SsWindow *ss_window_new(GtkApplication *app)
{
	return g_object_new(SS_TYPE_WINDOW, "application", app, NULL);
}

SsSession *ss_window_get_session(SsWindow *self)
{
	return self->session;
}

SsTimeline *ss_window_get_timeline(SsWindow *self)
{
	return self->timeline;
}

GtkWidget *ss_window_get_panel(SsWindow *self, const char *id)
{
	int i = panel_index(id);
	return i >= 0 ? self->panels[i] : NULL;
}

SsStalls *ss_window_get_stalls(SsWindow *self)
{
	GtkWidget *w = ss_window_get_panel(self, "stalls");
	return w ? SS_STALLS(w) : NULL;
}

char *ss_window_get_panel_text(SsWindow *self, const char *id)
{
	const struct ss_panel *p = ss_panel_find(id);
	GtkWidget *w = ss_window_get_panel(self, id);
	return p && w && p->text ? p->text(w) : NULL;
}

static const char *front_of(SsWindow *self, GtkNotebook *nb)
{
	GtkWidget *front = gtk_notebook_get_nth_page(nb, gtk_notebook_get_current_page(nb));
	for (size_t i = 0; i < ss_panel_count(); i++)
		if (self->panels[i] == front)
			return ss_panel_at(i)->id;
	return NULL;
}

const char *ss_window_get_front_panel(SsWindow *self)
{
	return front_of(self, self->side);
}

const char *ss_window_get_front_dock_panel(SsWindow *self)
{
	return front_of(self, self->dock);
}

GtkWidget *ss_window_get_search(SsWindow *self)
{
	return self->search;
}

GtkWidget *ss_window_get_answer(SsWindow *self)
{
	return self->answer;
}

const char *ss_window_get_error(SsWindow *self)
{
	return self->error;
}
