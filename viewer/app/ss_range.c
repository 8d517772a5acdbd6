/*
 * ss_range.c - the Range panel: the range selected with Shift+drag, summed up
 * per worker (busy, parked and off-CPU time) with its top locations
 * (tl_query_range_summary, on the query worker). It comes to the front when a
 * range is selected; clearing the selection leaves the last summary readable.
 */
#include <gtk/gtk.h>

#include "ss_panels.h"
#include "tl_query.h"

#define SS_TYPE_RANGE_PANEL (ss_range_panel_get_type())
G_DECLARE_FINAL_TYPE(SsRangePanel, ss_range_panel, SS, RANGE_PANEL, GtkBox)

struct _SsRangePanel {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_range;
	GtkLabel *label;
};

G_DEFINE_FINAL_TYPE(SsRangePanel, ss_range_panel, GTK_TYPE_BOX)

static const char hint[] = "Shift+drag on the timeline to summarise a range: busy, parked and "
			   "off-CPU time per worker, and the locations that took the time.";

struct job {
	struct ss_range r;
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
	tl_query_range_summary(db, j->r.t0, j->r.t1, j->out);
	g_string_append(j->out, "\nZ zooms to the selection, Escape clears it.");
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsRangePanel *self = user;
	gtk_label_set_text(self->label, j->out->str);
	ss_session_raise_panel(self->session, "range");
}

static void on_range(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsRangePanel *self = data;
	const struct ss_range *r = ss_session_get_range_selection(self->session);
	if (r->t1 <= r->t0) {
		ss_session_cancel(self->session, self);
		return;
	}
	struct job *j = g_new0(struct job, 1);
	j->r = *r;
	j->out = g_string_new(NULL);
	ss_session_submit(self->session, self, job_run, job_done, j, job_free, self);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsRangePanel *self = data;
	gtk_label_set_text(self->label, ss_session_get_db(self->session) ? hint : "No trace");
}

static void dispose(GObject *o)
{
	SsRangePanel *self = SS_RANGE_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_range, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	G_OBJECT_CLASS(ss_range_panel_parent_class)->dispose(o);
}

static void ss_range_panel_class_init(SsRangePanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_range_panel_init(SsRangePanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	gtk_box_append(GTK_BOX(self), ss_panel_text_view(&self->label));
}

static GtkWidget *create(SsSession *session)
{
	SsRangePanel *self = g_object_new(SS_TYPE_RANGE_PANEL, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_range = g_signal_connect(session, "notify::range-selection", G_CALLBACK(on_range), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

static char *text(GtkWidget *w)
{
	return g_strdup(gtk_label_get_text(SS_RANGE_PANEL(w)->label));
}

const struct ss_panel ss_panel_range = { "range", "Range", create, text };
