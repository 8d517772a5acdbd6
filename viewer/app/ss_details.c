/*
 * ss_details.c - the Details panel: what the selection is. A poll's task,
 * location, times, wake and its delay, CPU states and samples as stacks; a
 * stall's captures with their backtraces; a task's spawn and end; a worker's
 * totals. With nothing selected it shows what the trace holds and how to
 * explore it. The text is made on the query worker (tl_query.c).
 */
#include <gtk/gtk.h>

#include "ss_panels.h"
#include "tl_query.h"

#define SS_TYPE_DETAILS_PANEL (ss_details_panel_get_type())
G_DECLARE_FINAL_TYPE(SsDetailsPanel, ss_details_panel, SS, DETAILS_PANEL, GtkBox)

struct _SsDetailsPanel {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_sel;
	GtkLabel *label;
};

G_DEFINE_FINAL_TYPE(SsDetailsPanel, ss_details_panel, GTK_TYPE_BOX)

struct job {
	struct ss_selection sel;
	GString *out;
};

static void job_free(void *p)
{
	struct job *j = p;
	g_string_free(j->out, TRUE);
	g_free(j);
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	switch (j->sel.kind) {
	case SS_SEL_POLL:
		tl_query_poll_details(db, j->sel.id, j->out);
		break;
	case SS_SEL_STALL:
		for (size_t i = 0; i < db->n_stalls; i++)
			if (db->stalls[i].id == j->sel.id) {
				tl_query_stall_details(db, &db->stalls[i], j->out);
				break;
			}
		break;
	case SS_SEL_TASK:
		tl_query_task_details(db, j->sel.id, j->out);
		break;
	case SS_SEL_WORKER:
		tl_query_worker_details(db, j->sel.id, j->out);
		break;
	case SS_SEL_NONE:
		break;
	}
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsDetailsPanel *self = user;
	gtk_label_set_text(self->label, j->out->str);
	/* A stall is chosen in the Stalls tab, which stays in front. */
	if (j->sel.kind != SS_SEL_STALL)
		ss_session_raise_panel(self->session, "details");
}

static void on_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsDetailsPanel *self = data;
	const struct ss_selection *sel = ss_session_get_selection(self->session);
	if (sel->kind == SS_SEL_NONE) {
		/* The last details stay readable after a click beside a poll. */
		ss_session_cancel(self->session, self);
		return;
	}
	struct job *j = g_new0(struct job, 1);
	j->sel = *sel;
	j->out = g_string_new(NULL);
	ss_session_submit(self->session, self, job_run, job_done, j, job_free, self);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsDetailsPanel *self = data;
	const struct tl_db *db = ss_session_get_db(self->session);
	if (!db) {
		gtk_label_set_text(self->label, "No trace");
		return;
	}
	char *t = g_strdup_printf("%zu lane%s, %zu stall%s, %zu lost-data range%s\n\n"
				  "Click a poll for its task, wake and samples, or a worker's label for its totals.\n"
				  "Shift+drag to summarise a range.\n"
				  "Ctrl+wheel zooms around the pointer; drag pans.",
				  db->n_lanes, db->n_lanes == 1 ? "" : "s", db->n_stalls, db->n_stalls == 1 ? "" : "s",
				  db->n_losses, db->n_losses == 1 ? "" : "s");
	gtk_label_set_text(self->label, t);
	g_free(t);
}

static void dispose(GObject *o)
{
	SsDetailsPanel *self = SS_DETAILS_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_sel, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	G_OBJECT_CLASS(ss_details_panel_parent_class)->dispose(o);
}

static void ss_details_panel_class_init(SsDetailsPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_details_panel_init(SsDetailsPanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	gtk_box_append(GTK_BOX(self), ss_panel_text_view(&self->label));
}

static GtkWidget *create(SsSession *session)
{
	SsDetailsPanel *self = g_object_new(SS_TYPE_DETAILS_PANEL, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_sel = g_signal_connect(session, "notify::selection", G_CALLBACK(on_selection), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

static char *text(GtkWidget *w)
{
	return g_strdup(gtk_label_get_text(SS_DETAILS_PANEL(w)->label));
}

const struct ss_panel ss_panel_details = { "details", "Details", create, text };
