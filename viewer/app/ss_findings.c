/*
 * ss_findings.c - the Findings panel (in the dock): what `stallscope report`
 * finds, listed worst first. Selecting one moves the timeline there and
 * selects its poll (the worst of a group) or its time range, and shows the
 * evidence beside the list: where, the code responsible among the frames,
 * the system call, and the SQL of its rows (which the SQL console runs).
 * findings.next / findings.prev (} and {) walk the list from anywhere.
 *
 * The analysis (viewer/analysis/analysis.h, the report's) runs on the
 * session's background worker when a trace opens; the findings are copied
 * out there, so nothing of the analysis outlives its thread.
 */
#include <stdio.h>
#include <string.h>

#include "analysis.h"
#include "ss_panels.h"
#include "tl_ticks.h"
#include "view_queries.h"

#define SS_TYPE_FINDINGS (ss_findings_panel_get_type())
G_DECLARE_FINAL_TYPE(SsFindingsPanel, ss_findings_panel, SS, FINDINGS_PANEL, GtkBox)

struct _SsFindingsPanel {
	GtkBox parent;
	SsSession *session;
	gulong on_db;
	GtkLabel *status;
	GtkListBox *list;
	GtkLabel *evidence;
	GtkWidget *sql_button;
	struct ss_findings found;
	int64_t origin;             /* the trace's first ts, for "s into the trace" */
	int selected;               /* index into found, -1 none */
	GSimpleActionGroup *actions;
	bool loading;
};

G_DEFINE_FINAL_TYPE(SsFindingsPanel, ss_findings_panel, GTK_TYPE_BOX)

/* ---- the analysis, on the background worker ---- */

struct run_job {
	struct ss_findings found;
	int64_t origin;
	double seconds;
	char err[512];
};

static void run_job_free(void *p)
{
	struct run_job *j = p;
	ss_findings_free(&j->found);
	g_free(j);
}

static void run_job_run(struct tl_db *db, void *p)
{
	struct run_job *j = p;
	gint64 t0 = g_get_monotonic_time();
	/* The report's own budget for a whole analysis; the user may close the
	 * window meanwhile, which interrupts it. */
	tl_db_arm(db, 600);
	struct ss_scope scope;
	if (ss_scope_resolve(db->db, &scope, 0, false, 0, false, 0, j->err, sizeof j->err) != 0)
		return;
	j->origin = scope.origin;
	struct ss_analysis *a = ss_analysis_run(db->db, &scope, 10, j->err, sizeof j->err);
	if (!a)
		return;
	const struct ss_findings *f = ss_analysis_findings(a);
	for (size_t i = 0; i < f->n; i++)
		ss_findings_add(&j->found, &f->v[i]);
	ss_analysis_free(a);
	j->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
}

static GtkWidget *row_widget(const struct ss_finding *f)
{
	GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
	gtk_widget_set_margin_start(box, 6);
	gtk_widget_set_margin_end(box, 6);
	gtk_widget_set_margin_top(box, 4);
	gtk_widget_set_margin_bottom(box, 4);
	GtkWidget *badge = gtk_label_new(ss_severity_name(f->severity));
	gtk_widget_add_css_class(badge, "ss-badge");
	gtk_widget_add_css_class(badge, f->severity == SS_SEV_CRITICAL ? "ss-sev-critical"
				 : f->severity == SS_SEV_WARNING ? "ss-sev-warning" : "ss-sev-info");
	gtk_widget_set_valign(badge, GTK_ALIGN_START);
	gtk_widget_set_size_request(badge, 64, -1);
	gtk_box_append(GTK_BOX(box), badge);
	GtkWidget *check = gtk_label_new(f->check);
	gtk_widget_add_css_class(check, "dim-label");
	gtk_widget_set_valign(check, GTK_ALIGN_START);
	gtk_label_set_xalign(GTK_LABEL(check), 0);
	gtk_widget_set_size_request(check, 110, -1);
	gtk_box_append(GTK_BOX(box), check);
	GtkWidget *msg = gtk_label_new(f->message);
	gtk_label_set_wrap(GTK_LABEL(msg), TRUE);
	gtk_label_set_wrap_mode(GTK_LABEL(msg), PANGO_WRAP_WORD_CHAR);
	gtk_label_set_lines(GTK_LABEL(msg), 3);
	gtk_label_set_ellipsize(GTK_LABEL(msg), PANGO_ELLIPSIZE_END);
	gtk_label_set_xalign(GTK_LABEL(msg), 0);
	gtk_widget_set_hexpand(msg, TRUE);
	gtk_box_append(GTK_BOX(box), msg);
	return box;
}

static void clear_list(SsFindingsPanel *self)
{
	GtkWidget *c;
	while ((c = gtk_widget_get_first_child(GTK_WIDGET(self->list))))
		gtk_list_box_remove(self->list, c);
	ss_findings_free(&self->found);
	self->selected = -1;
	gtk_label_set_text(self->evidence, "");
	gtk_widget_set_sensitive(self->sql_button, FALSE);
}

static void run_job_done(void *p, void *user)
{
	struct run_job *j = p;
	SsFindingsPanel *self = user;
	self->loading = false;
	clear_list(self);
	if (j->err[0]) {
		char t[600];
		snprintf(t, sizeof t, "The analysis failed: %s", j->err);
		gtk_label_set_text(self->status, t);
		return;
	}
	self->found = j->found;
	memset(&j->found, 0, sizeof j->found);
	self->origin = j->origin;
	size_t sev[3] = { 0 };
	for (size_t i = 0; i < self->found.n; i++) {
		sev[self->found.v[i].severity]++;
		gtk_list_box_append(self->list, row_widget(&self->found.v[i]));
	}
	char t[256];
	if (!self->found.n)
		snprintf(t, sizeof t, "Nothing found: no check of the report passed its threshold (%.1f s).", j->seconds);
	else
		snprintf(t, sizeof t, "%zu finding%s: %zu critical, %zu warning%s, %zu info, over the whole trace (%.1f s); "
			 "} and { walk them", self->found.n, self->found.n == 1 ? "" : "s", sev[SS_SEV_CRITICAL],
			 sev[SS_SEV_WARNING], sev[SS_SEV_WARNING] == 1 ? "" : "s", sev[SS_SEV_INFO], j->seconds);
	gtk_label_set_text(self->status, t);
}

/* ---- selecting one ---- */

/* The poll a finding stands for: the worker's poll starting at its ts. */
struct poll_job {
	int64_t worker_id, ts, dur;
	int64_t poll_id, task_id, poll_dur;
};

static void poll_job_run(struct tl_db *db, void *p)
{
	struct poll_job *j = p;
	tl_db_arm(db, TL_FRAME_BUDGET_S);
	sqlite3_stmt *s = ss_view_prepare(db->db, SS_V_POLL_AT, 0);
	if (!s)
		return;
	sqlite3_bind_int64(s, 1, j->worker_id);
	sqlite3_bind_int64(s, 2, j->ts);
	if (sqlite3_step(s) == SQLITE_ROW) {
		j->poll_id = sqlite3_column_int64(s, 0);
		j->task_id = sqlite3_column_int64(s, 1);
		j->poll_dur = tl_col_dur(s, 2);
	}
	sqlite3_finalize(s);
}

static void poll_job_done(void *p, void *user)
{
	struct poll_job *j = p;
	SsFindingsPanel *self = user;
	if (j->poll_id) {
		ss_session_show_poll(self->session, j->poll_id, j->task_id, j->ts, j->poll_dur);
	} else {
		ss_session_show_time(self->session, j->ts, j->ts + (j->dur > 0 ? j->dur : 0));
		if (j->dur > 0)
			ss_session_set_range_selection(self->session, j->ts, j->ts + j->dur);
	}
}

static void show_evidence(SsFindingsPanel *self, const struct ss_finding *f)
{
	GString *s = g_string_new(NULL);
	char sev[16];
	snprintf(sev, sizeof sev, "%s", ss_severity_name(f->severity));
	for (char *c = sev; *c; c++)
		*c = g_ascii_toupper(*c);
	g_string_append_printf(s, "%s  %s\n\n%s\n", sev, f->check, f->message);
	GString *where = g_string_new(NULL);
	if (f->worker)
		g_string_append(where, f->worker);
	if (f->task_id)
		g_string_append_printf(where, "%stask id %lld", where->len ? ", " : "", (long long)f->task_id);
	if (f->ts >= 0) {
		char d[48];
		tl_format_duration(d, sizeof d, f->ts - self->origin, 1000);
		g_string_append_printf(where, "%s%s into the trace", where->len ? ", " : "", d);
		if (f->dur >= 0) {
			tl_format_duration(d, sizeof d, f->dur, 0);
			g_string_append_printf(where, ", for %s", d);
		}
	}
	if (where->len)
		g_string_append_printf(s, "\nwhere      %s\n", where->str);
	g_string_free(where, TRUE);
	if (f->location)
		g_string_append_printf(s, "spawned at %s\n", f->location);
	if (f->syscall)
		g_string_append_printf(s, "syscall    %s\n", f->syscall);
	if (f->n_frames) {
		g_string_append(s, "\ncode, leaf first (» the code responsible):\n");
		for (size_t i = 0; i < f->n_frames; i++) {
			const struct ss_frame_text *fr = &f->frames[i];
			g_string_append_printf(s, "%s %s", (int)i == f->own_frame ? "»" : " ", fr->function ? fr->function : "?");
			if (fr->file)
				g_string_append_printf(s, " (%s:%lld)", fr->file, (long long)fr->line);
			g_string_append_c(s, '\n');
		}
	}
	if (f->sql)
		g_string_append_printf(s, "\n%lld row%s:\n%s\n", (long long)f->count, f->count == 1 ? "" : "s", f->sql);
	gtk_label_set_text(self->evidence, s->str);
	g_string_free(s, TRUE);
	gtk_widget_set_sensitive(self->sql_button, f->sql != NULL);
}

static void on_row_selected(GtkListBox *box, GtkListBoxRow *row, gpointer data)
{
	(void)box;
	SsFindingsPanel *self = data;
	int i = row ? gtk_list_box_row_get_index(row) : -1;
	if (i < 0 || (size_t)i >= self->found.n || i == self->selected)
		return;
	self->selected = i;
	const struct ss_finding *f = &self->found.v[i];
	show_evidence(self, f);
	if (f->ts < 0)
		return;
	if (f->worker_id) {
		struct poll_job *j = g_new0(struct poll_job, 1);
		j->worker_id = f->worker_id;
		j->ts = f->ts;
		j->dur = f->dur;
		ss_session_submit(self->session, self, poll_job_run, poll_job_done, j, g_free, self);
	} else {
		ss_session_show_time(self->session, f->ts, f->ts + (f->dur > 0 ? f->dur : 0));
		if (f->dur > 0)
			ss_session_set_range_selection(self->session, f->ts, f->ts + f->dur);
	}
}

static void on_sql(GtkButton *b, gpointer data)
{
	(void)b;
	SsFindingsPanel *self = data;
	if (self->selected >= 0 && self->found.v[self->selected].sql)
		ss_session_run_sql(self->session, self->found.v[self->selected].sql);
}

static void act_walk(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	SsFindingsPanel *self = data;
	if (!self->found.n)
		return;
	bool next = strcmp(g_action_get_name(G_ACTION(a)), "next") == 0;
	int i = self->selected < 0 ? (next ? 0 : (int)self->found.n - 1) : self->selected + (next ? 1 : -1);
	if (i < 0 || (size_t)i >= self->found.n)
		return;
	gtk_list_box_select_row(self->list, gtk_list_box_get_row_at_index(self->list, i));
	ss_session_raise_panel(self->session, "findings");
}

/* ---- the panel ---- */

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsFindingsPanel *self = data;
	clear_list(self);
	if (!ss_session_get_db(self->session)) {
		gtk_label_set_text(self->status, "No trace");
		return;
	}
	gtk_label_set_text(self->status, "Analysing the trace (the checks of 'stallscope report')…");
	self->loading = true;
	ss_session_submit_background(self->session, self, run_job_run, run_job_done, g_new0(struct run_job, 1),
				     run_job_free, self);
}

static void dispose(GObject *o)
{
	SsFindingsPanel *self = SS_FINDINGS_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		ss_session_cancel_background(self->session, self);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	ss_findings_free(&self->found);
	g_clear_object(&self->actions);
	G_OBJECT_CLASS(ss_findings_panel_parent_class)->dispose(o);
}

static void ss_findings_panel_class_init(SsFindingsPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_findings_panel_init(SsFindingsPanel *self)
{
	self->selected = -1;
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	self->status = GTK_LABEL(gtk_label_new("No trace"));
	gtk_label_set_xalign(self->status, 0);
	gtk_label_set_wrap(self->status, TRUE);
	gtk_widget_set_margin_start(GTK_WIDGET(self->status), 6);
	gtk_widget_set_margin_top(GTK_WIDGET(self->status), 4);
	gtk_widget_set_margin_bottom(GTK_WIDGET(self->status), 4);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->status));

	self->list = GTK_LIST_BOX(gtk_list_box_new());
	gtk_list_box_set_selection_mode(self->list, GTK_SELECTION_SINGLE);
	g_signal_connect(self->list, "row-selected", G_CALLBACK(on_row_selected), self);
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(self->list));
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);

	self->evidence = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_selectable(self->evidence, TRUE);
	gtk_label_set_wrap(self->evidence, TRUE);
	gtk_label_set_wrap_mode(self->evidence, PANGO_WRAP_WORD_CHAR);
	gtk_label_set_xalign(self->evidence, 0);
	gtk_label_set_yalign(self->evidence, 0);
	gtk_widget_add_css_class(GTK_WIDGET(self->evidence), "monospace");
	gtk_widget_set_margin_start(GTK_WIDGET(self->evidence), 8);
	gtk_widget_set_margin_end(GTK_WIDGET(self->evidence), 8);
	GtkWidget *esw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(esw), GTK_WIDGET(self->evidence));
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(esw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
	gtk_widget_set_vexpand(esw, TRUE);
	self->sql_button = gtk_button_new_with_label("Its rows in the SQL console");
	gtk_widget_set_halign(self->sql_button, GTK_ALIGN_START);
	gtk_widget_set_margin_start(self->sql_button, 8);
	gtk_widget_set_margin_bottom(self->sql_button, 4);
	gtk_widget_set_sensitive(self->sql_button, FALSE);
	g_signal_connect(self->sql_button, "clicked", G_CALLBACK(on_sql), self);
	GtkWidget *right = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
	gtk_box_append(GTK_BOX(right), esw);
	gtk_box_append(GTK_BOX(right), self->sql_button);

	GtkWidget *paned = gtk_paned_new(GTK_ORIENTATION_HORIZONTAL);
	gtk_paned_set_start_child(GTK_PANED(paned), sw);
	gtk_paned_set_end_child(GTK_PANED(paned), right);
	gtk_paned_set_position(GTK_PANED(paned), 620);
	gtk_widget_set_vexpand(paned, TRUE);
	gtk_box_append(GTK_BOX(self), paned);

	static const GActionEntry entries[] = {
		{ "next", act_walk, NULL, NULL, NULL, { 0 } },
		{ "prev", act_walk, NULL, NULL, NULL, { 0 } },
	};
	self->actions = g_simple_action_group_new();
	g_action_map_add_action_entries(G_ACTION_MAP(self->actions), entries, G_N_ELEMENTS(entries), self);
}

static GtkWidget *create(SsSession *session)
{
	SsFindingsPanel *self = g_object_new(SS_TYPE_FINDINGS, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

/* The list (one line a finding) and the evidence of the selected one. */
static char *text(GtkWidget *w)
{
	SsFindingsPanel *self = SS_FINDINGS_PANEL(w);
	GString *s = g_string_new(gtk_label_get_text(self->status));
	g_string_append_c(s, '\n');
	for (size_t i = 0; i < self->found.n; i++)
		g_string_append_printf(s, "%c %-8s %-16s %s\n", (int)i == self->selected ? '>' : ' ',
				       ss_severity_name(self->found.v[i].severity), self->found.v[i].check,
				       self->found.v[i].message);
	g_string_append_printf(s, "\n%s", gtk_label_get_text(self->evidence));
	return g_string_free(s, FALSE);
}

static GActionGroup *actions(GtkWidget *w)
{
	return G_ACTION_GROUP(SS_FINDINGS_PANEL(w)->actions);
}

const struct ss_panel ss_panel_findings = { "findings", "Findings", create, text, SS_PANEL_BOTTOM, actions };
