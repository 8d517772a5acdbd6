/*
 * ss_sql.c - the SQL console (in the dock): a query over the trace's tables
 * and views (schema/stallscope.sql), its result in a table that sorts by any
 * column, and example queries to start from. Selecting a row that has a ts
 * column moves the timeline there (with dur, the whole span); a poll_id
 * selects that poll, a task_id that task, a worker_id that worker.
 *
 * The console has a connection and a query thread of its own (an ss_worker
 * on viewer/store/sqlite/store_console.c's connection: read-only, and an
 * authorizer that allows reads only), so a runaway query never holds up the
 * timeline; Cancel (or a newer query) interrupts it, and closing the window
 * does too. Errors are shown where the results would be.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_panels.h"
#include "ss_sql.h"
#include "ss_worker.h"
#include "store_console.h"

#define SS_TYPE_SQL (ss_sql_panel_get_type())
G_DECLARE_FINAL_TYPE(SsSqlPanel, ss_sql_panel, SS, SQL_PANEL, GtkBox)

/* Rows kept at most; the status line says when there were more. */
#define MAX_ROWS 10000

enum cell_type { CELL_NULL, CELL_INT, CELL_REAL, CELL_TEXT };

struct cell {
	enum cell_type type;
	int64_t i;
	double d;
	char *s;              /* CELL_TEXT (blobs are shown as their size) */
};

struct result {
	int n_cols;
	char **names;
	GPtrArray *rows;      /* of struct cell[n_cols] */
	bool more;            /* more than MAX_ROWS */
	int64_t changes;
	double seconds;
	char err[1024];
};

struct _SsSqlPanel {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_run_sql;
	struct tl_db *conn;         /* the console's own connection */
	struct ss_worker *worker;
	GtkTextView *editor;
	GtkLabel *status;
	GtkWidget *run, *cancel;
	GtkColumnView *table;
	GListStore *store;
	GtkSingleSelection *sel;
	struct result *res;         /* what the table shows */
	int *col_ids;               /* sorter data per column */
	guint ticker;
	gint64 started;
	bool running;
};

G_DEFINE_FINAL_TYPE(SsSqlPanel, ss_sql_panel, GTK_TYPE_BOX)

/* ---- a row of the result ---- */

#define SS_TYPE_SQL_ROW (ss_sql_row_get_type())
G_DECLARE_FINAL_TYPE(SsSqlRow, ss_sql_row, SS, SQL_ROW, GObject)

struct _SsSqlRow {
	GObject parent;
	const struct cell *cells;   /* the result's, which outlives the store's rows */
};

G_DEFINE_FINAL_TYPE(SsSqlRow, ss_sql_row, G_TYPE_OBJECT)

static void ss_sql_row_class_init(SsSqlRowClass *k)
{
	(void)k;
}

static void ss_sql_row_init(SsSqlRow *r)
{
	(void)r;
}

static void result_free(struct result *r)
{
	if (!r)
		return;
	for (int c = 0; c < r->n_cols; c++)
		g_free(r->names[c]);
	g_free(r->names);
	if (r->rows) {
		for (guint i = 0; i < r->rows->len; i++) {
			struct cell *cells = g_ptr_array_index(r->rows, i);
			for (int c = 0; c < r->n_cols; c++)
				g_free(cells[c].s);
			g_free(cells);
		}
		g_ptr_array_free(r->rows, TRUE);
	}
	g_free(r);
}

/* ---- the query, on the console's thread ---- */

struct job {
	char *sql;
	struct result *res;
};

static void job_free(void *p)
{
	struct job *j = p;
	g_free(j->sql);
	result_free(j->res);
	g_free(j);
}

static void read_row(sqlite3_stmt *s, struct result *r)
{
	struct cell *cells = g_new0(struct cell, r->n_cols ? r->n_cols : 1);
	for (int c = 0; c < r->n_cols; c++) {
		switch (sqlite3_column_type(s, c)) {
		case SQLITE_INTEGER:
			cells[c].type = CELL_INT;
			cells[c].i = sqlite3_column_int64(s, c);
			break;
		case SQLITE_FLOAT:
			cells[c].type = CELL_REAL;
			cells[c].d = sqlite3_column_double(s, c);
			break;
		case SQLITE_TEXT:
			cells[c].type = CELL_TEXT;
			cells[c].s = g_strdup((const char *)sqlite3_column_text(s, c));
			break;
		case SQLITE_BLOB:
			cells[c].type = CELL_TEXT;
			cells[c].s = g_strdup_printf("(%d bytes)", sqlite3_column_bytes(s, c));
			break;
		default:
			cells[c].type = CELL_NULL;
		}
	}
	g_ptr_array_add(r->rows, cells);
}

/* Every statement of the text in turn; the result is the last one's that
 * returned columns. */
static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	gint64 t0 = g_get_monotonic_time();
	struct result *r = j->res = g_new0(struct result, 1);
	r->rows = g_ptr_array_new();
	const char *sql = j->sql, *tail = NULL;
	while (sql && *sql) {
		sqlite3_stmt *s = NULL;
		int rc = ss_store_console_prepare(db->db, sql, &s, &tail);
		if (rc != SQLITE_OK) {
			snprintf(r->err, sizeof r->err, "%s", sqlite3_errmsg(db->db));
			break;
		}
		sql = tail;
		if (!s)
			continue;   /* a comment or white space */
		int n = sqlite3_column_count(s);
		if (n > 0) {
			/* A new result: the rows of an earlier statement go. */
			for (int c = 0; c < r->n_cols; c++)
				g_free(r->names[c]);
			g_free(r->names);
			for (guint i = 0; i < r->rows->len; i++) {
				struct cell *cells = g_ptr_array_index(r->rows, i);
				for (int c = 0; c < r->n_cols; c++)
					g_free(cells[c].s);
				g_free(cells);
			}
			g_ptr_array_set_size(r->rows, 0);
			r->n_cols = n;
			r->names = g_new0(char *, n);
			for (int c = 0; c < n; c++)
				r->names[c] = g_strdup(sqlite3_column_name(s, c));
			r->more = false;
		}
		while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			if (r->rows->len >= MAX_ROWS) {
				r->more = true;
				break;
			}
			read_row(s, r);
		}
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			snprintf(r->err, sizeof r->err, "%s", rc == SQLITE_INTERRUPT ? "cancelled" : sqlite3_errmsg(db->db));
		sqlite3_finalize(s);
		if (r->err[0])
			break;
	}
	r->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
}

/* ---- the table ---- */

static void cell_text(const struct cell *c, char *buf, size_t n)
{
	switch (c->type) {
	case CELL_INT:
		snprintf(buf, n, "%lld", (long long)c->i);
		break;
	case CELL_REAL:
		snprintf(buf, n, "%g", c->d);
		break;
	case CELL_TEXT:
		snprintf(buf, n, "%s", c->s);
		break;
	default:
		snprintf(buf, n, "NULL");
	}
}

static void setup_cb(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)f;
	(void)data;
	GtkWidget *l = gtk_label_new(NULL);
	gtk_label_set_xalign(GTK_LABEL(l), 0);
	gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_END);
	gtk_label_set_max_width_chars(GTK_LABEL(l), 80);
	gtk_widget_add_css_class(l, "monospace");
	gtk_list_item_set_child(li, l);
}

static void bind_cb(GtkSignalListItemFactory *f, GtkListItem *li, gpointer data)
{
	(void)data;
	int col = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(f), "col"));
	SsSqlRow *row = gtk_list_item_get_item(li);
	char buf[2048];
	cell_text(&row->cells[col], buf, sizeof buf);
	GtkWidget *l = gtk_list_item_get_child(li);
	gtk_label_set_text(GTK_LABEL(l), buf);
	gtk_widget_set_tooltip_text(l, strlen(buf) > 40 ? buf : NULL);
}

/* NULL first, then numbers by value, then text. */
static int compare_cb(gconstpointer a, gconstpointer b, gpointer data)
{
	int col = *(const int *)data;
	const struct cell *x = &SS_SQL_ROW((gpointer)a)->cells[col], *y = &SS_SQL_ROW((gpointer)b)->cells[col];
	int rx = x->type == CELL_NULL ? 0 : x->type == CELL_TEXT ? 2 : 1;
	int ry = y->type == CELL_NULL ? 0 : y->type == CELL_TEXT ? 2 : 1;
	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (rx == 1) {
		double vx = x->type == CELL_INT ? (double)x->i : x->d, vy = y->type == CELL_INT ? (double)y->i : y->d;
		if (x->type == CELL_INT && y->type == CELL_INT)
			return x->i < y->i ? -1 : x->i > y->i;
		return vx < vy ? -1 : vx > vy;
	}
	return rx == 2 ? g_strcmp0(x->s, y->s) : 0;
}

static void clear_table(SsSqlPanel *self)
{
	g_list_store_remove_all(self->store);
	GListModel *cols = gtk_column_view_get_columns(self->table);
	while (g_list_model_get_n_items(cols)) {
		GtkColumnViewColumn *c = g_list_model_get_item(cols, 0);
		gtk_column_view_remove_column(self->table, c);
		g_object_unref(c);
	}
	result_free(self->res);
	self->res = NULL;
	g_clear_pointer(&self->col_ids, g_free);
}

static void show_result(SsSqlPanel *self, struct result *r)
{
	clear_table(self);
	self->res = r;
	self->col_ids = g_new0(int, r->n_cols ? r->n_cols : 1);
	for (int c = 0; c < r->n_cols; c++) {
		self->col_ids[c] = c;
		GtkListItemFactory *f = gtk_signal_list_item_factory_new();
		g_object_set_data(G_OBJECT(f), "col", GINT_TO_POINTER(c));
		g_signal_connect(f, "setup", G_CALLBACK(setup_cb), self);
		g_signal_connect(f, "bind", G_CALLBACK(bind_cb), self);
		GtkColumnViewColumn *col = gtk_column_view_column_new(r->names[c], f);
		GtkSorter *sorter = GTK_SORTER(gtk_custom_sorter_new(compare_cb, &self->col_ids[c], NULL));
		gtk_column_view_column_set_sorter(col, sorter);
		g_object_unref(sorter);
		gtk_column_view_column_set_resizable(col, TRUE);
		gtk_column_view_append_column(self->table, col);
		g_object_unref(col);
	}
	GPtrArray *items = g_ptr_array_new_with_free_func(g_object_unref);
	for (guint i = 0; i < r->rows->len; i++) {
		SsSqlRow *row = g_object_new(SS_TYPE_SQL_ROW, NULL);
		row->cells = g_ptr_array_index(r->rows, i);
		g_ptr_array_add(items, row);
	}
	g_list_store_splice(self->store, 0, 0, items->pdata, items->len);
	g_ptr_array_unref(items);
}

static void set_status(SsSqlPanel *self, const char *t, bool error)
{
	gtk_label_set_text(self->status, t);
	if (error)
		gtk_widget_add_css_class(GTK_WIDGET(self->status), "ss-error");
	else
		gtk_widget_remove_css_class(GTK_WIDGET(self->status), "ss-error");
}

static void stop_ticker(SsSqlPanel *self)
{
	if (self->ticker)
		g_source_remove(self->ticker);
	self->ticker = 0;
	self->running = false;
	gtk_widget_set_sensitive(self->cancel, FALSE);
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsSqlPanel *self = user;
	stop_ticker(self);
	struct result *r = j->res;
	j->res = NULL;
	char t[1200];
	if (r->err[0]) {
		snprintf(t, sizeof t, "Error: %s", r->err);
		set_status(self, t, true);
		result_free(r);
		return;
	}
	snprintf(t, sizeof t, "%u row%s%s in %.3f s%s", r->rows->len, r->rows->len == 1 ? "" : "s",
		 r->more ? " (the first; more were left out)" : "", r->seconds,
		 r->n_cols ? "; a row with ts (and dur, poll_id, task_id, worker_id) shows itself on the timeline" : "");
	set_status(self, t, false);
	show_result(self, r);
}

static gboolean tick(gpointer data)
{
	SsSqlPanel *self = data;
	char t[96];
	snprintf(t, sizeof t, "Running… %.1f s (Cancel stops it)",
		 (double)(g_get_monotonic_time() - self->started) / 1e6);
	set_status(self, t, false);
	return G_SOURCE_CONTINUE;
}

static char *editor_text(SsSqlPanel *self)
{
	GtkTextBuffer *b = gtk_text_view_get_buffer(self->editor);
	GtkTextIter s, e;
	gtk_text_buffer_get_bounds(b, &s, &e);
	return gtk_text_buffer_get_text(b, &s, &e, FALSE);
}

static void run(SsSqlPanel *self)
{
	if (!self->worker) {
		set_status(self, ss_session_get_db(self->session) ? "The console could not open the trace" : "No trace",
			   true);
		return;
	}
	char *sql = editor_text(self);
	if (!*g_strstrip(sql)) {
		g_free(sql);
		return;
	}
	struct job *j = g_new0(struct job, 1);
	j->sql = sql;
	stop_ticker(self);
	self->running = true;
	self->started = g_get_monotonic_time();
	self->ticker = g_timeout_add(100, tick, self);
	gtk_widget_set_sensitive(self->cancel, TRUE);
	set_status(self, "Running…", false);
	/* A newer query under the same key interrupts the one running. */
	ss_worker_submit(self->worker, self, job_run, job_done, j, job_free, self);
}

static void on_run(GtkButton *b, gpointer data)
{
	(void)b;
	run(data);
}

static void on_cancel(GtkButton *b, gpointer data)
{
	(void)b;
	SsSqlPanel *self = data;
	if (!self->worker || !self->running)
		return;
	ss_worker_cancel(self->worker, self);
	stop_ticker(self);
	char t[96];
	snprintf(t, sizeof t, "Cancelled after %.1f s", (double)(g_get_monotonic_time() - self->started) / 1e6);
	set_status(self, t, false);
}

static gboolean on_key(GtkEventControllerKey *k, guint key, guint code, GdkModifierType mods, gpointer data)
{
	(void)k;
	(void)code;
	if ((key == GDK_KEY_Return || key == GDK_KEY_KP_Enter) && (mods & GDK_CONTROL_MASK)) {
		run(data);
		return TRUE;
	}
	return FALSE;
}

/* ---- a row's place on the timeline ---- */

static int col_named(const struct result *r, const char *name)
{
	for (int c = 0; c < r->n_cols; c++)
		if (!g_ascii_strcasecmp(r->names[c], name))
			return c;
	return -1;
}

static bool int_at(const struct cell *cells, int c, int64_t *v)
{
	if (c < 0)
		return false;
	if (cells[c].type == CELL_INT)
		*v = cells[c].i;
	else if (cells[c].type == CELL_REAL)
		*v = (int64_t)cells[c].d;
	else
		return false;
	return true;
}

static void on_row(GtkSingleSelection *sel, GParamSpec *ps, gpointer data)
{
	(void)ps;
	SsSqlPanel *self = data;
	SsSqlRow *row = gtk_single_selection_get_selected_item(sel);
	struct tl_db *db = ss_session_get_db(self->session);
	if (!row || !self->res || !db)
		return;
	const struct result *r = self->res;
	int64_t ts = 0, dur = 0, id;
	bool has_ts = int_at(row->cells, col_named(r, "ts"), &ts);
	int_at(row->cells, col_named(r, "dur"), &dur);
	if (has_ts) {
		/* Trace time as stored; a value within the trace's length is taken
		 * for time since its start (as the ruler shows it). */
		if (ts < db->first_ts && ts >= 0 && ts <= db->last_ts - db->first_ts)
			ts += db->first_ts;
		if (ts < db->first_ts - (db->last_ts - db->first_ts) || ts > db->last_ts + (db->last_ts - db->first_ts))
			has_ts = false;
	}
	int64_t task = 0;
	int_at(row->cells, col_named(r, "task_id"), &task);
	if (int_at(row->cells, col_named(r, "poll_id"), &id) && has_ts) {
		ss_session_show_poll(self->session, id, task, ts, dur > 0 ? dur : 0);
		return;
	}
	if (has_ts)
		ss_session_show_time(self->session, ts, ts + (dur > 0 ? dur : 0));
	if (int_at(row->cells, col_named(r, "stall_id"), &id))
		ss_session_select(self->session, SS_SEL_STALL, id, task);
	else if (task)
		ss_session_select(self->session, SS_SEL_TASK, task, 0);
	else if (int_at(row->cells, col_named(r, "worker_id"), &id))
		ss_session_select(self->session, SS_SEL_WORKER, id, 0);
}

/* ---- examples ---- */

static const struct {
	const char *title, *sql;
} examples[] = {
	{ "The longest polls, with their verdict",
	  "-- poll_view: worker, task, location, on/off-CPU split, verdict\n"
	  "SELECT poll_id, ts, dur, worker_id, worker, task, task_id, location, verdict, on_cpu_ns, blocked_ns\n"
	  "FROM poll_view WHERE poll_id IN (SELECT id FROM polls ORDER BY dur DESC LIMIT 50)\n"
	  "ORDER BY dur DESC;" },
	{ "Stalls, with the stack of their first capture",
	  "SELECT stall_id, poll_id, ts, dur, worker_id, worker, task, task_id, kind, syscall_name, stack\n"
	  "FROM stall_view ORDER BY dur DESC;" },
	{ "Polls blocked off CPU for most of their time",
	  "SELECT poll_id, ts, dur, worker_id, worker, task, task_id, blocked_ns, verdict, location\n"
	  "FROM poll_view WHERE poll_id IN (SELECT id FROM polls WHERE dur > 1000000)\n"
	  "  AND verdict IN ('blocked', 'partly blocked') ORDER BY blocked_ns DESC;" },
	{ "Wake-to-poll delay per spawn location",
	  "SELECT l.function || ' (' || l.file || ':' || l.line || ')' AS location, count(*) AS wakes,\n"
	  "       avg(w.delay) AS mean_delay_ns, max(w.delay) AS max_delay_ns\n"
	  "FROM wakes w JOIN polls p ON p.id = w.poll_id LEFT JOIN locations l ON l.id = p.location_id\n"
	  "WHERE w.delay IS NOT NULL GROUP BY p.location_id ORDER BY max_delay_ns DESC;" },
	{ "Busy time per worker",
	  "SELECT w.id AS worker_id, coalesce(w.runtime, '?') || '#' || w.idx AS worker,\n"
	  "       coalesce(p.polls, 0) AS polls, p.busy_ns, p.longest_ns\n"
	  "FROM workers w LEFT JOIN (SELECT worker_id, count(*) AS polls, sum(dur) AS busy_ns, max(dur) AS longest_ns\n"
	  "                          FROM polls GROUP BY worker_id) p ON p.worker_id = w.id ORDER BY busy_ns DESC;" },
	{ "Where the CPU samples were, by function",
	  "SELECT f.function, count(*) AS samples\n"
	  "FROM samples s JOIN callsites c ON c.id = s.callsite_id JOIN frames f ON f.id = c.frame_id\n"
	  "WHERE s.kind = 'cpu' GROUP BY f.function ORDER BY samples DESC LIMIT 30;" },
	{ "Tasks alive at the end, with their dumps (leaks?)",
	  "SELECT t.id AS task_id, t.task, t.spawn_ts AS ts,\n"
	  "       l.function || ' (' || l.file || ':' || l.line || ')' AS spawned_at,\n"
	  "       (SELECT count(*) FROM task_dumps d WHERE d.task_id = t.id) AS dumps\n"
	  "FROM tasks t LEFT JOIN locations l ON l.id = t.location_id\n"
	  "WHERE t.end_ts IS NULL ORDER BY dumps DESC, t.spawn_ts LIMIT 200;" },
	{ "Lost data",
	  "SELECT ts, dur, count, source, reason, thread_id FROM loss ORDER BY ts;" },
	{ "The tables and views",
	  "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY type, name;" },
};

static void set_sql(SsSqlPanel *self, const char *sql)
{
	gtk_text_buffer_set_text(gtk_text_view_get_buffer(self->editor), sql, -1);
}

static void on_example(GtkButton *b, gpointer data)
{
	SsSqlPanel *self = data;
	int i = GPOINTER_TO_INT(g_object_get_data(G_OBJECT(b), "example"));
	set_sql(self, examples[i].sql);
	GtkWidget *pop = gtk_widget_get_ancestor(GTK_WIDGET(b), GTK_TYPE_POPOVER);
	if (pop)
		gtk_popover_popdown(GTK_POPOVER(pop));
	run(self);
}

static GtkWidget *examples_button(SsSqlPanel *self)
{
	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
	for (size_t i = 0; i < G_N_ELEMENTS(examples); i++) {
		GtkWidget *b = gtk_button_new_with_label(examples[i].title);
		gtk_widget_add_css_class(b, "flat");
		gtk_label_set_xalign(GTK_LABEL(gtk_button_get_child(GTK_BUTTON(b))), 0);
		g_object_set_data(G_OBJECT(b), "example", GINT_TO_POINTER((int)i));
		g_signal_connect(b, "clicked", G_CALLBACK(on_example), self);
		gtk_box_append(GTK_BOX(box), b);
	}
	GtkWidget *pop = gtk_popover_new();
	gtk_popover_set_child(GTK_POPOVER(pop), box);
	GtkWidget *mb = gtk_menu_button_new();
	gtk_menu_button_set_label(GTK_MENU_BUTTON(mb), "Examples");
	gtk_menu_button_set_popover(GTK_MENU_BUTTON(mb), pop);
	return mb;
}

/* ---- the trace ---- */

static void close_conn(SsSqlPanel *self)
{
	stop_ticker(self);
	/* Interrupts what runs and joins the thread before the connection goes. */
	ss_worker_free(self->worker);
	self->worker = NULL;
	tl_db_close(self->conn);
	self->conn = NULL;
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsSqlPanel *self = data;
	close_conn(self);
	clear_table(self);
	struct tl_db *db = ss_session_get_db(self->session);
	if (!db) {
		set_status(self, "No trace", false);
		return;
	}
	sqlite3 *c = NULL;
	char err[1024];
	if (ss_store_open_console(db->path, &c, err, sizeof err) != 0) {
		char t[1100];
		snprintf(t, sizeof t, "The console cannot open the trace: %s", err);
		set_status(self, t, true);
		return;
	}
	self->conn = tl_db_wrap(c, db->path);
	if (self->conn)
		self->worker = ss_worker_new(self->conn);
	set_status(self, "Read-only SQL over the trace (schema/stallscope.sql); Ctrl+Enter runs it.", false);
}

static void on_run_sql(SsSession *s, const char *sql, gpointer data)
{
	(void)s;
	SsSqlPanel *self = data;
	set_sql(self, sql);
	ss_session_raise_panel(self->session, "sql");
	run(self);
}

static void dispose(GObject *o)
{
	SsSqlPanel *self = SS_SQL_PANEL(o);
	close_conn(self);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_run_sql, self->session);
		g_clear_object(&self->session);
	}
	if (self->store) {
		g_list_store_remove_all(self->store);
		g_clear_object(&self->store);
	}
	result_free(self->res);
	self->res = NULL;
	g_clear_pointer(&self->col_ids, g_free);
	G_OBJECT_CLASS(ss_sql_panel_parent_class)->dispose(o);
}

static void ss_sql_panel_class_init(SsSqlPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_sql_panel_init(SsSqlPanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	gtk_box_set_spacing(GTK_BOX(self), 4);
	GtkWidget *bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
	gtk_widget_set_margin_start(bar, 6);
	gtk_widget_set_margin_top(bar, 4);
	self->run = gtk_button_new_with_label("Run");
	gtk_widget_add_css_class(self->run, "suggested-action");
	gtk_widget_set_tooltip_text(self->run, "Run the query (Ctrl+Enter)");
	g_signal_connect(self->run, "clicked", G_CALLBACK(on_run), self);
	self->cancel = gtk_button_new_with_label("Cancel");
	gtk_widget_set_sensitive(self->cancel, FALSE);
	g_signal_connect(self->cancel, "clicked", G_CALLBACK(on_cancel), self);
	gtk_box_append(GTK_BOX(bar), self->run);
	gtk_box_append(GTK_BOX(bar), self->cancel);
	gtk_box_append(GTK_BOX(bar), examples_button(self));
	self->status = GTK_LABEL(gtk_label_new("No trace"));
	gtk_label_set_xalign(self->status, 0);
	gtk_label_set_wrap(self->status, TRUE);
	gtk_label_set_selectable(self->status, TRUE);
	gtk_widget_set_focusable(GTK_WIDGET(self->status), FALSE);
	gtk_widget_set_hexpand(GTK_WIDGET(self->status), TRUE);
	gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->status));
	gtk_box_append(GTK_BOX(self), bar);

	self->editor = GTK_TEXT_VIEW(gtk_text_view_new());
	gtk_text_view_set_monospace(self->editor, TRUE);
	gtk_text_view_set_wrap_mode(self->editor, GTK_WRAP_WORD_CHAR);
	gtk_text_view_set_left_margin(self->editor, 6);
	gtk_text_view_set_top_margin(self->editor, 4);
	set_sql(self, examples[0].sql);
	GtkEventController *key = gtk_event_controller_key_new();
	g_signal_connect(key, "key-pressed", G_CALLBACK(on_key), self);
	gtk_widget_add_controller(GTK_WIDGET(self->editor), key);
	GtkWidget *esw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(esw), GTK_WIDGET(self->editor));
	gtk_widget_set_size_request(esw, -1, 84);

	self->store = g_list_store_new(SS_TYPE_SQL_ROW);
	self->table = GTK_COLUMN_VIEW(gtk_column_view_new(NULL));
	GtkSortListModel *sorted = gtk_sort_list_model_new(G_LIST_MODEL(g_object_ref(self->store)),
							  g_object_ref(gtk_column_view_get_sorter(self->table)));
	self->sel = gtk_single_selection_new(G_LIST_MODEL(sorted));
	gtk_single_selection_set_autoselect(self->sel, FALSE);
	gtk_single_selection_set_can_unselect(self->sel, TRUE);
	gtk_column_view_set_model(self->table, GTK_SELECTION_MODEL(self->sel));
	gtk_column_view_set_show_column_separators(self->table, TRUE);
	g_signal_connect(self->sel, "notify::selected-item", G_CALLBACK(on_row), self);
	GtkWidget *tsw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(tsw), GTK_WIDGET(self->table));
	gtk_widget_set_vexpand(tsw, TRUE);

	GtkWidget *paned = gtk_paned_new(GTK_ORIENTATION_VERTICAL);
	gtk_paned_set_start_child(GTK_PANED(paned), esw);
	gtk_paned_set_end_child(GTK_PANED(paned), tsw);
	gtk_paned_set_shrink_start_child(GTK_PANED(paned), FALSE);
	gtk_paned_set_position(GTK_PANED(paned), 96);
	gtk_widget_set_vexpand(paned, TRUE);
	gtk_box_append(GTK_BOX(self), paned);
}

static GtkWidget *create(SsSession *session)
{
	SsSqlPanel *self = g_object_new(SS_TYPE_SQL, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_run_sql = g_signal_connect(session, "run-sql", G_CALLBACK(on_run_sql), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

/* The status line, the column names and the rows as sorted, tab-separated. */
static char *text(GtkWidget *w)
{
	SsSqlPanel *self = SS_SQL_PANEL(w);
	GString *s = g_string_new(gtk_label_get_text(self->status));
	g_string_append_c(s, '\n');
	if (self->res) {
		for (int c = 0; c < self->res->n_cols; c++)
			g_string_append_printf(s, "%s%s", c ? "\t" : "", self->res->names[c]);
		g_string_append_c(s, '\n');
		GListModel *rows = G_LIST_MODEL(self->sel);
		for (guint i = 0; i < g_list_model_get_n_items(rows) && i < 200; i++) {
			SsSqlRow *row = g_list_model_get_item(rows, i);
			for (int c = 0; c < self->res->n_cols; c++) {
				char buf[512];
				cell_text(&row->cells[c], buf, sizeof buf);
				g_string_append_printf(s, "%s%s", c ? "\t" : "", buf);
			}
			g_string_append_c(s, '\n');
			g_object_unref(row);
		}
	}
	return g_string_free(s, FALSE);
}

void ss_sql_run(GtkWidget *panel, const char *sql)
{
	on_run_sql(NULL, sql, SS_SQL_PANEL(panel));
}

void ss_sql_cancel(GtkWidget *panel)
{
	on_cancel(NULL, SS_SQL_PANEL(panel));
}

bool ss_sql_running(GtkWidget *panel)
{
	return SS_SQL_PANEL(panel)->running;
}

void ss_sql_select_row(GtkWidget *panel, guint n)
{
	SsSqlPanel *self = SS_SQL_PANEL(panel);
	gtk_single_selection_set_selected(self->sel, n < g_list_model_get_n_items(G_LIST_MODEL(self->sel))
							     ? n : GTK_INVALID_LIST_POSITION);
}

const struct ss_panel ss_panel_sql = { "sql", "SQL", create, text, SS_PANEL_BOTTOM, NULL };
