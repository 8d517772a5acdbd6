/*
 * ss_answer.c - see ss_answer.h. The words are made on the window's query
 * worker (examining a poll reads its CPU intervals, samples and stall
 * capture); the bar keeps the last answer until the next one arrives.
 */
#include "ss_answer.h"

#include <stdio.h>

#include "examine.h"
#include "tl_ticks.h"

#define SS_TYPE_ANSWER (ss_answer_get_type())
G_DECLARE_FINAL_TYPE(SsAnswer, ss_answer, SS, ANSWER, GtkBox)

struct _SsAnswer {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_sel;
	GtkLabel *badge, *title, *say;
	GtkWidget *task_button;
	int64_t task_id;            /* of what is shown, for the button */
	const char *badge_class;
};

G_DEFINE_FINAL_TYPE(SsAnswer, ss_answer, GTK_TYPE_BOX)

struct job {
	struct ss_selection sel;
	int64_t poll_id;            /* the poll examined (a stall's poll) */
	bool ok;
	struct ss_poll_detail d;
	char title[512], say[1024], badge[32];
	const char *cls;
};

static const char *verdict_badge(const struct ss_poll_detail *d, const char **cls)
{
	if (!d->has_cpu) {
		*cls = "ss-verdict-none";
		return "no CPU data";
	}
	switch (d->verdict) {
	case SS_VERDICT_COMPUTING:
		*cls = "ss-verdict-computing";
		return "computing";
	case SS_VERDICT_PREEMPTED:
		*cls = "ss-verdict-preempted";
		return "preempted";
	case SS_VERDICT_WAITING_CPU:
		*cls = "ss-verdict-waiting";
		return "waiting for CPU";
	case SS_VERDICT_BLOCKED:
		*cls = "ss-verdict-blocked";
		return "blocked";
	default:
		*cls = "ss-verdict-partly";
		return "partly blocked";
	}
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	tl_db_arm(db, TL_FRAME_BUDGET_S);
	struct ss_examiner *x = tl_db_examiner(db);
	const struct tl_stall *st = NULL;
	if (j->sel.kind == SS_SEL_STALL)
		for (size_t i = 0; i < db->n_stalls; i++)
			if (db->stalls[i].id == j->sel.id)
				st = &db->stalls[i];
	j->poll_id = j->sel.kind == SS_SEL_POLL ? j->sel.id : st ? st->poll_id : 0;
	if (!j->poll_id || !x || ss_examiner_poll(x, j->poll_id, &j->d) != 0) {
		snprintf(j->say, sizeof j->say, "%s", x ? ss_examiner_error(x) : "cannot read the trace");
		return;
	}
	j->ok = true;
	char d[48];
	tl_format_duration(d, sizeof d, j->d.dur, 0);
	if (st)
		snprintf(j->title, sizeof j->title, "Stall (%s) · task %lld · %s · %s", st->kind, (long long)j->d.task,
			 j->d.worker, d);
	else
		snprintf(j->title, sizeof j->title, "Poll · task %lld · %s · %s%s", (long long)j->d.task, j->d.worker,
			 d, j->d.stall_kind[0] ? " · stalled" : "");
	ss_poll_say(&j->d, j->say, sizeof j->say);
	snprintf(j->badge, sizeof j->badge, "%s", verdict_badge(&j->d, &j->cls));
}

static void set_badge(SsAnswer *self, const char *text, const char *cls)
{
	if (self->badge_class)
		gtk_widget_remove_css_class(GTK_WIDGET(self->badge), self->badge_class);
	self->badge_class = cls;
	gtk_label_set_text(self->badge, text ? text : "");
	gtk_widget_set_visible(GTK_WIDGET(self->badge), text && *text);
	if (cls)
		gtk_widget_add_css_class(GTK_WIDGET(self->badge), cls);
}

static void show(SsAnswer *self, const char *badge, const char *cls, const char *title, const char *say,
		 int64_t task_id)
{
	set_badge(self, badge, cls);
	gtk_label_set_text(self->title, title);
	gtk_widget_set_visible(GTK_WIDGET(self->title), title && *title);
	gtk_label_set_text(self->say, say);
	self->task_id = task_id;
	gtk_widget_set_visible(self->task_button, task_id != 0);
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsAnswer *self = user;
	if (!j->ok) {
		show(self, NULL, NULL, "", j->say, 0);
		return;
	}
	show(self, j->badge, j->cls, j->title, j->say, j->d.task_id);
}

static void hint(SsAnswer *self)
{
	struct tl_db *db = ss_session_get_db(self->session);
	if (!db) {
		show(self, NULL, NULL, "", "No trace open", 0);
		return;
	}
	char t[256];
	snprintf(t, sizeof t, "Click a poll to see what it was doing%s; the Findings tab lists what the analysis found.",
		 db->n_stalls ? ", or press ] for the next stall" : "");
	show(self, NULL, NULL, "", t, 0);
}

static void on_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsAnswer *self = data;
	const struct ss_selection *sel = ss_session_get_selection(self->session);
	char t[256];
	switch (sel->kind) {
	case SS_SEL_POLL:
	case SS_SEL_STALL: {
		struct job *j = g_new0(struct job, 1);
		j->sel = *sel;
		ss_session_submit(self->session, self, job_run, job_done, j, g_free, self);
		return;
	}
	case SS_SEL_TASK:
		snprintf(t, sizeof t, "Task selected: its polls are outlined on the timeline, its life is in the Task tab.");
		show(self, NULL, NULL, "", t, 0);
		break;
	case SS_SEL_WORKER:
		show(self, NULL, NULL, "", "Worker selected: its totals are in the Details tab.", 0);
		break;
	case SS_SEL_NONE:
		hint(self);
		break;
	}
	ss_session_cancel(self->session, self);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	hint(data);
}

static void on_task(GtkButton *b, gpointer data)
{
	SsAnswer *self = data;
	if (self->task_id)
		gtk_widget_activate_action(GTK_WIDGET(b), "task.show", "x", self->task_id);
}

static void dispose(GObject *o)
{
	SsAnswer *self = SS_ANSWER(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_sel, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	G_OBJECT_CLASS(ss_answer_parent_class)->dispose(o);
}

static void ss_answer_class_init(SsAnswerClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
	gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(k), "ssanswer");
}

static void ss_answer_init(SsAnswer *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_HORIZONTAL);
	gtk_box_set_spacing(GTK_BOX(self), 10);
	gtk_widget_set_margin_start(GTK_WIDGET(self), 8);
	gtk_widget_set_margin_end(GTK_WIDGET(self), 8);
	gtk_widget_set_margin_top(GTK_WIDGET(self), 6);
	gtk_widget_set_margin_bottom(GTK_WIDGET(self), 6);
	gtk_widget_set_size_request(GTK_WIDGET(self), -1, 34);
	self->badge = GTK_LABEL(gtk_label_new(NULL));
	gtk_widget_add_css_class(GTK_WIDGET(self->badge), "ss-badge");
	gtk_widget_set_valign(GTK_WIDGET(self->badge), GTK_ALIGN_CENTER);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->badge));
	self->title = GTK_LABEL(gtk_label_new(NULL));
	gtk_widget_add_css_class(GTK_WIDGET(self->title), "heading");
	gtk_label_set_xalign(self->title, 0);
	/* The verdict is the answer: the title gives way first. */
	gtk_label_set_ellipsize(self->title, PANGO_ELLIPSIZE_END);
	gtk_label_set_max_width_chars(self->title, 48);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->title));
	self->say = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_xalign(self->say, 0);
	/* Two lines before anything is cut: the culprit's name is at the end. */
	gtk_label_set_wrap(self->say, TRUE);
	gtk_label_set_wrap_mode(self->say, PANGO_WRAP_WORD_CHAR);
	gtk_label_set_lines(self->say, 2);
	gtk_label_set_ellipsize(self->say, PANGO_ELLIPSIZE_END);
	gtk_label_set_width_chars(self->say, 40);
	gtk_label_set_selectable(self->say, TRUE);
	gtk_widget_set_focusable(GTK_WIDGET(self->say), FALSE);
	gtk_widget_set_hexpand(GTK_WIDGET(self->say), TRUE);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->say));
	self->task_button = gtk_button_new_with_label("Task view (T)");
	gtk_widget_set_tooltip_text(self->task_button, "The task's life: its polls, who woke it and how soon, its dumps");
	gtk_widget_set_valign(self->task_button, GTK_ALIGN_CENTER);
	g_signal_connect(self->task_button, "clicked", G_CALLBACK(on_task), self);
	gtk_widget_set_visible(self->task_button, FALSE);
	gtk_box_append(GTK_BOX(self), self->task_button);
	set_badge(self, NULL, NULL);
}

GtkWidget *ss_answer_new(SsSession *session)
{
	SsAnswer *self = g_object_new(SS_TYPE_ANSWER, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_sel = g_signal_connect(session, "notify::selection", G_CALLBACK(on_selection), self);
	hint(self);
	return GTK_WIDGET(self);
}

char *ss_answer_get_text(GtkWidget *answer)
{
	SsAnswer *self = SS_ANSWER(answer);
	return g_strdup_printf("%s%s%s%s%s", gtk_widget_get_visible(GTK_WIDGET(self->badge)) ? gtk_label_get_text(self->badge) : "",
			       gtk_widget_get_visible(GTK_WIDGET(self->badge)) ? " | " : "", gtk_label_get_text(self->title),
			       *gtk_label_get_text(self->title) ? " | " : "", gtk_label_get_text(self->say));
}
