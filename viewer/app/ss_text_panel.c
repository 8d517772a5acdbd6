/*
 * ss_text_panel.c - see ss_text_panel.h. Requests are g_free()d: a kind's
 * request is one plain struct (a copy of the session state it was made from).
 */
#include "ss_text_panel.h"

#define SS_TYPE_TEXT_PANEL (ss_text_panel_get_type())
G_DECLARE_FINAL_TYPE(SsTextPanel, ss_text_panel, SS, TEXT_PANEL, GtkBox)

struct _SsTextPanel {
	GtkBox parent;
	SsSession *session;
	const struct ss_text_kind *kind;
	gulong on_db, on_follow;
	GtkLabel *label;
};

G_DEFINE_FINAL_TYPE(SsTextPanel, ss_text_panel, GTK_TYPE_BOX)

struct job {
	const struct ss_text_kind *kind;
	void *request;
	bool raise;
	GString *out;
};

static void job_free(void *p)
{
	struct job *j = p;
	g_free(j->request);
	g_string_free(j->out, TRUE);
	g_free(j);
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	j->kind->run(db, j->request, j->out);
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsTextPanel *self = user;
	gtk_label_set_text(self->label, j->out->str);
	if (j->raise)
		ss_session_raise_panel(self->session, j->kind->id);
}

static void on_follow(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTextPanel *self = data;
	bool raise = false;
	void *req = self->kind->request(self->session, &raise);
	if (!req) {
		ss_session_cancel(self->session, self);
		return;
	}
	struct job *j = g_new0(struct job, 1);
	j->kind = self->kind;
	j->request = req;
	j->raise = raise;
	j->out = g_string_new(NULL);
	ss_session_submit(self->session, self, job_run, job_done, j, job_free, self);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTextPanel *self = data;
	char *t = self->kind->intro(ss_session_get_db(self->session));
	gtk_label_set_text(self->label, t);
	g_free(t);
}

static void dispose(GObject *o)
{
	SsTextPanel *self = SS_TEXT_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_follow, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	G_OBJECT_CLASS(ss_text_panel_parent_class)->dispose(o);
}

static void ss_text_panel_class_init(SsTextPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

/* A scrolled, selectable, wrapping monospace label; *label receives it. */
static GtkWidget *text_view(GtkLabel **label)
{
	GtkLabel *l = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_selectable(l, TRUE);
	gtk_label_set_xalign(l, 0);
	gtk_label_set_yalign(l, 0);
	gtk_label_set_wrap(l, TRUE);
	gtk_label_set_wrap_mode(l, PANGO_WRAP_WORD_CHAR);
	gtk_widget_add_css_class(GTK_WIDGET(l), "monospace");
	gtk_widget_set_margin_start(GTK_WIDGET(l), 8);
	gtk_widget_set_margin_end(GTK_WIDGET(l), 8);
	gtk_widget_set_margin_top(GTK_WIDGET(l), 8);
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(l));
	gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(sw), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC);
	gtk_widget_set_vexpand(sw, TRUE);
	*label = l;
	return sw;
}

static void ss_text_panel_init(SsTextPanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	gtk_box_append(GTK_BOX(self), text_view(&self->label));
}

GtkWidget *ss_text_panel_new(SsSession *session, const struct ss_text_kind *kind)
{
	SsTextPanel *self = g_object_new(SS_TYPE_TEXT_PANEL, NULL);
	self->session = g_object_ref(session);
	self->kind = kind;
	char signal[64];
	g_snprintf(signal, sizeof signal, "notify::%s", kind->follows);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_follow = g_signal_connect(session, signal, G_CALLBACK(on_follow), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

char *ss_text_panel_get_text(GtkWidget *panel)
{
	return g_strdup(gtk_label_get_text(SS_TEXT_PANEL(panel)->label));
}
