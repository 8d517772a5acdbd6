/*
 * ss_task.c - the Task panel (in the dock): one task's life. A strip from
 * its spawn to its end draws its polls and, before each, the wait from the
 * wake to the poll coloured by how long it was (under 100 us, 1 ms, 10 ms,
 * more: the duration classes' colours); under it a line per poll (start,
 * length, worker, who woke it, the wake-to-poll delay in the same colour),
 * then its task dumps with the stacks where it sat idle.
 *
 * It follows the selection: a selected task, or the task of a selected poll
 * or stall, whose line is then marked. task.show (a task id) and
 * task.show-selected (T) also bring it to the front. Clicking a line selects
 * that poll and brings it into view.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ss_panels.h"
#include "tl_palette.h"
#include "tl_query.h"
#include "tl_task.h"
#include "tl_ticks.h"

#define SS_TYPE_TASK_PANEL (ss_task_panel_get_type())
G_DECLARE_FINAL_TYPE(SsTaskPanel, ss_task_panel, SS, TASK_PANEL, GtkBox)

/* Polls read at most, with their wakes. */
#define MAX_POLLS 2000
#define MAX_DUMPS 20

struct _SsTaskPanel {
	GtkBox parent;
	SsSession *session;
	gulong on_db, on_sel;
	GtkLabel *header;
	GtkDrawingArea *strip;
	GtkTextView *view;
	GtkTextBuffer *buf;
	struct tl_task task;        /* what is shown; id 0: nothing */
	int64_t marked_poll;
	int first_poll_line;        /* buffer line of the first poll's line */
	int64_t want;               /* the task asked for last */
	char *dumps;                /* the dumps' stacks as text */
	char spawned_at[512];
	GSimpleActionGroup *actions;
};

G_DEFINE_FINAL_TYPE(SsTaskPanel, ss_task_panel, GTK_TYPE_BOX)

struct job {
	int64_t task_id;
	int64_t poll_id;            /* to mark, 0: none */
	struct tl_task t;
	const struct tl_db *meta;
	GString *dumps;             /* stacks of the dumps, as text */
	char spawned_at[512];
	bool ok;
};

static void job_free(void *p)
{
	struct job *j = p;
	tl_task_free(&j->t);
	if (j->dumps)
		g_string_free(j->dumps, TRUE);
	g_free(j);
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	j->ok = tl_task_load(db, db, j->task_id, MAX_POLLS, true, &j->t) == 0;
	if (!j->ok)
		return;
	const struct tl_location *l = tl_db_location(db, j->t.location_id);
	snprintf(j->spawned_at, sizeof j->spawned_at, "%s", l ? l->name : "an unknown location");
	j->dumps = g_string_new(NULL);
	for (size_t i = 0; i < j->t.n_dumps && i < MAX_DUMPS; i++) {
		const struct tl_task_dump *d = &j->t.dumps[i];
		char at[48], idle[48];
		tl_format_duration(at, sizeof at, d->ts - db->first_ts, 1000);
		tl_format_duration(idle, sizeof idle, d->idle >= 0 ? d->idle : 0, 0);
		const struct tl_location *dl = tl_db_location(db, d->location_id);
		g_string_append_printf(j->dumps, "\ndump at %s: idle for %s%s%s\n", at, idle, dl ? " at " : "",
				       dl ? dl->name : "");
		if (d->callsite_id)
			tl_query_stack(db, d->callsite_id, j->dumps);
		else
			g_string_append(j->dumps, "  no stack\n");
	}
	if (j->t.n_dumps > MAX_DUMPS)
		g_string_append_printf(j->dumps, "\n(%zu more dumps)\n", j->t.n_dumps - MAX_DUMPS);
}

/* The delay classes: under 100 us, 1 ms, 10 ms, more. */
static int delay_class(int64_t ns)
{
	return ns < 100000 ? 0 : ns < 1000000 ? 1 : ns < 10000000 ? 2 : 3;
}

static const char *const delay_tags[4] = { "delay0", "delay1", "delay2", "delay3" };

static void put(SsTaskPanel *self, const char *text, const char *tag)
{
	GtkTextIter end;
	gtk_text_buffer_get_end_iter(self->buf, &end);
	if (tag)
		gtk_text_buffer_insert_with_tags_by_name(self->buf, &end, text, -1, tag, NULL);
	else
		gtk_text_buffer_insert(self->buf, &end, text, -1);
}

static void fill(SsTaskPanel *self)
{
	const struct tl_task *t = &self->task;
	struct tl_db *db = ss_session_get_db(self->session);
	char a[64], b[64], d[48];
	GString *h = g_string_new(NULL);
	g_string_append_printf(h, "Task %lld — spawned at %s", (long long)t->task, self->spawned_at);
	if (t->spawn_ts >= 0) {
		tl_format_duration(a, sizeof a, t->spawn_ts - db->first_ts, 1000);
		g_string_append_printf(h, ", %s into the trace%s%s%s", a, t->spawn_thread[0] ? " on '" : "", t->spawn_thread,
				       t->spawn_thread[0] ? "'" : "");
	} else {
		g_string_append(h, " before the data began");
	}
	if (t->end_ts >= 0) {
		tl_format_duration(b, sizeof b, t->end_ts - db->first_ts, 1000);
		g_string_append_printf(h, "; ended at %s", b);
		if (t->spawn_ts >= 0) {
			tl_format_duration(d, sizeof d, t->end_ts - t->spawn_ts, 0);
			g_string_append_printf(h, " (lived %s)", d);
		}
	} else {
		g_string_append(h, "; alive at the end of the data");
	}
	if (t->parent_task >= 0)
		g_string_append_printf(h, "; parent task %lld", (long long)t->parent_task);
	g_string_append_printf(h, "; %zu poll%s%s, %zu task dump%s", t->n_polls, t->n_polls == 1 ? "" : "s",
			       t->truncated ? " (the first)" : "", t->n_dumps, t->n_dumps == 1 ? "" : "s");
	gtk_label_set_text(self->header, h->str);
	g_string_free(h, TRUE);

	gtk_text_buffer_set_text(self->buf, "", -1);
	char line[512];
	snprintf(line, sizeof line, "%-4s %14s %12s  %-14s %12s  %s\n", "#", "start", "duration", "worker", "wake→poll",
		 "woken by");
	put(self, line, "bold");
	self->first_poll_line = 1;
	for (size_t i = 0; i < t->n_polls; i++) {
		const struct tl_task_poll *p = &t->polls[i];
		tl_format_duration(a, sizeof a, p->ts - db->first_ts, 1000);
		tl_format_duration(d, sizeof d, p->dur, 0);
		const char *worker = p->lane >= 0 ? db->lanes[p->lane].label : "?";
		snprintf(line, sizeof line, "%s%-3zu %14s %12s%s %-14.14s ", p->id == self->marked_poll ? ">" : " ", i + 1,
			 a, d, p->incomplete ? "+" : " ", worker);
		put(self, line, p->id == self->marked_poll ? "bold" : NULL);
		if (p->delay >= 0) {
			tl_format_duration(b, sizeof b, p->delay, 0);
			snprintf(line, sizeof line, "%12s", b);
			put(self, line, delay_tags[delay_class(p->delay)]);
		} else {
			snprintf(line, sizeof line, "%12s", p->wake_ts >= 0 ? "?" : "–");
			put(self, line, "dim");
		}
		if (p->wake_ts >= 0) {
			snprintf(line, sizeof line, "  %s%s", p->waker_thread[0] ? p->waker_thread : "a thread", "");
			put(self, line, NULL);
			if (p->waker_task >= 0) {
				snprintf(line, sizeof line, " (task %lld)", (long long)p->waker_task);
				put(self, line, NULL);
			}
		} else {
			put(self, i == 0 ? "  (first poll: spawned)" : "  no recorded wake", "dim");
		}
		put(self, "\n", NULL);
	}
	if (!t->n_polls)
		put(self, "  no polls in the data\n", "dim");
	if (t->n_dumps) {
		put(self, "\nTASK DUMPS — where it waited, idle\n", "bold");
		put(self, self->dumps ? self->dumps : "", NULL);
	} else {
		put(self, "\nno task dumps (taken when a task stays idle past STALLSCOPE_TASK_DUMP_IDLE_THRESHOLD_MS)\n",
		    "dim");
	}
	gtk_widget_queue_draw(GTK_WIDGET(self->strip));
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsTaskPanel *self = user;
	tl_task_free(&self->task);
	if (!j->ok) {
		gtk_label_set_text(self->header, "Task not found");
		gtk_text_buffer_set_text(self->buf, "", -1);
		gtk_widget_queue_draw(GTK_WIDGET(self->strip));
		return;
	}
	self->task = j->t;
	memset(&j->t, 0, sizeof j->t);
	self->marked_poll = j->poll_id;
	g_free(self->dumps);
	self->dumps = g_string_free(j->dumps, FALSE);
	j->dumps = NULL;
	snprintf(self->spawned_at, sizeof self->spawned_at, "%s", j->spawned_at);
	fill(self);
}

static void load(SsTaskPanel *self, int64_t task_id, int64_t poll_id)
{
	if (!task_id)
		return;
	if (task_id == self->task.id && task_id == self->want) {
		if (poll_id != self->marked_poll) {
			/* The same task: only the mark moves, without a query. */
			self->marked_poll = poll_id;
			fill(self);
		}
		return;
	}
	self->want = task_id;
	struct job *j = g_new0(struct job, 1);
	j->task_id = task_id;
	j->poll_id = poll_id;
	ss_session_submit(self->session, self, job_run, job_done, j, job_free, self);
}

static int64_t stall_task(SsTaskPanel *self, int64_t stall_id, int64_t *poll)
{
	struct tl_db *db = ss_session_get_db(self->session);
	for (size_t i = 0; db && i < db->n_stalls; i++)
		if (db->stalls[i].id == stall_id) {
			*poll = db->stalls[i].poll_id;
			return db->stalls[i].task_id;
		}
	return 0;
}

static void on_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTaskPanel *self = data;
	const struct ss_selection *s = ss_session_get_selection(self->session);
	int64_t poll = 0;
	if (s->kind == SS_SEL_TASK)
		load(self, s->id, 0);
	else if (s->kind == SS_SEL_POLL)
		load(self, s->task_id, s->id);
	else if (s->kind == SS_SEL_STALL) {
		int64_t t = stall_task(self, s->id, &poll);
		load(self, t, poll);
	}
}

/* ---- the strip ---- */

static void draw_strip(GtkDrawingArea *a, cairo_t *cr, int w, int h, gpointer data)
{
	(void)a;
	SsTaskPanel *self = data;
	const struct tl_task *t = &self->task;
	struct tl_db *db = ss_session_get_db(self->session);
	if (!t->id || !db || w < 40)
		return;
	int64_t t0 = t->spawn_ts >= 0 ? t->spawn_ts : t->n_polls ? t->polls[0].ts : db->first_ts;
	int64_t t1 = t->end_ts >= 0 ? t->end_ts : db->last_ts;
	for (size_t i = 0; i < t->n_polls; i++) {
		if (t->polls[i].wake_ts >= 0 && t->polls[i].wake_ts < t0)
			t0 = t->polls[i].wake_ts;
		if (t->polls[i].ts + t->polls[i].dur > t1)
			t1 = t->polls[i].ts + t->polls[i].dur;
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	double x0 = 8, pw = w - 16, k = pw / (double)(t1 - t0);
	double mid = h / 2.0;
	struct tl_theme th;
	tl_theme_init(&th, false);
	/* Its life: a thin line from spawn to end. */
	cairo_set_source_rgba(cr, 0.5, 0.5, 0.5, 0.6);
	cairo_rectangle(cr, x0, mid - 0.5, pw, 1);
	cairo_fill(cr);
	for (size_t i = 0; i < t->n_polls; i++) {
		const struct tl_task_poll *p = &t->polls[i];
		if (p->wake_ts >= 0 && p->delay >= 0) {
			GdkRGBA c = tl_duration_color(delay_class(p->delay));
			gdk_cairo_set_source_rgba(cr, &c);
			double a0 = x0 + (double)(p->ts - p->delay - t0) * k, a1 = x0 + (double)(p->ts - t0) * k;
			cairo_rectangle(cr, a0, mid - 3, fmax(a1 - a0, 1.5), 6);
			cairo_fill(cr);
		}
		GdkRGBA c = p->id == self->marked_poll ? th.highlight : th.busy_summary;
		gdk_cairo_set_source_rgba(cr, &c);
		double b0 = x0 + (double)(p->ts - t0) * k, b1 = x0 + (double)(p->ts + p->dur - t0) * k;
		cairo_rectangle(cr, b0, mid - 9, fmax(b1 - b0, 1.5), 18);
		cairo_fill(cr);
	}
	for (size_t i = 0; i < t->n_dumps; i++) {
		double x = x0 + (double)(t->dumps[i].ts - t0) * k;
		cairo_set_source_rgb(cr, 0.5, 0.5, 0.5);
		cairo_move_to(cr, x - 4, 1);
		cairo_line_to(cr, x + 4, 1);
		cairo_line_to(cr, x, 7);
		cairo_close_path(cr);
		cairo_fill(cr);
	}
}

/* ---- clicks and actions ---- */

static void on_click(GtkGestureClick *g, int n, double x, double y, gpointer data)
{
	(void)n;
	SsTaskPanel *self = data;
	int bx, by;
	gtk_text_view_window_to_buffer_coords(self->view, GTK_TEXT_WINDOW_WIDGET, (int)x, (int)y, &bx, &by);
	GtkTextIter it;
	gtk_text_view_get_iter_at_location(self->view, &it, bx, by);
	int i = gtk_text_iter_get_line(&it) - self->first_poll_line;
	(void)g;
	if (i < 0 || (size_t)i >= self->task.n_polls)
		return;
	const struct tl_task_poll *p = &self->task.polls[i];
	ss_session_show_poll(self->session, p->id, self->task.id, p->ts, p->dur);
}

static void show_task(SsTaskPanel *self, int64_t task_id)
{
	if (!task_id)
		return;
	const struct ss_selection *s = ss_session_get_selection(self->session);
	/* A poll of that task stays selected (its line is marked). */
	if (!((s->kind == SS_SEL_POLL && s->task_id == task_id) || (s->kind == SS_SEL_STALL)))
		ss_session_select(self->session, SS_SEL_TASK, task_id, 0);
	else
		on_selection(NULL, NULL, self);
	ss_session_raise_panel(self->session, "task");
}

static void act_show(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	show_task(data, g_variant_get_int64(p));
}

static void act_show_selected(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsTaskPanel *self = data;
	const struct ss_selection *s = ss_session_get_selection(self->session);
	int64_t poll = 0;
	int64_t t = s->kind == SS_SEL_POLL ? s->task_id : s->kind == SS_SEL_TASK ? s->id
		    : s->kind == SS_SEL_STALL ? stall_task(self, s->id, &poll) : 0;
	show_task(self, t);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsTaskPanel *self = data;
	tl_task_free(&self->task);
	self->want = self->marked_poll = 0;
	gtk_label_set_text(self->header, ss_session_get_db(self->session)
						 ? "Select a poll, then T (or the answer bar's Task view): its task's polls, "
						   "wakes and dumps."
						 : "No trace");
	gtk_text_buffer_set_text(self->buf, "", -1);
	gtk_widget_queue_draw(GTK_WIDGET(self->strip));
}

static void dispose(GObject *o)
{
	SsTaskPanel *self = SS_TASK_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_sel, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	tl_task_free(&self->task);
	g_clear_pointer(&self->dumps, g_free);
	g_clear_object(&self->actions);
	G_OBJECT_CLASS(ss_task_panel_parent_class)->dispose(o);
}

static void ss_task_panel_class_init(SsTaskPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_task_panel_init(SsTaskPanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
	gtk_box_set_spacing(GTK_BOX(self), 4);
	self->header = GTK_LABEL(gtk_label_new(NULL));
	gtk_label_set_wrap(self->header, TRUE);
	gtk_label_set_xalign(self->header, 0);
	gtk_label_set_selectable(self->header, TRUE);
	gtk_widget_set_focusable(GTK_WIDGET(self->header), FALSE);
	gtk_widget_set_margin_start(GTK_WIDGET(self->header), 6);
	gtk_widget_set_margin_top(GTK_WIDGET(self->header), 4);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->header));
	self->strip = GTK_DRAWING_AREA(gtk_drawing_area_new());
	gtk_drawing_area_set_content_height(self->strip, 28);
	gtk_drawing_area_set_draw_func(self->strip, draw_strip, self, NULL);
	gtk_widget_set_tooltip_text(GTK_WIDGET(self->strip), "Its life: polls (blue), the wait from each wake to its "
				    "poll (green < 100 us, yellow < 1 ms, orange < 10 ms, purple more), dumps (▼)");
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->strip));
	self->buf = gtk_text_buffer_new(NULL);
	gtk_text_buffer_create_tag(self->buf, "bold", "weight", PANGO_WEIGHT_BOLD, NULL);
	gtk_text_buffer_create_tag(self->buf, "dim", "foreground", "#808080", NULL);
	for (int c = 0; c < 4; c++) {
		GdkRGBA col = tl_duration_color(c);
		gtk_text_buffer_create_tag(self->buf, delay_tags[c], "background-rgba", &col, "weight", PANGO_WEIGHT_BOLD,
					   NULL);
	}
	self->view = GTK_TEXT_VIEW(gtk_text_view_new_with_buffer(self->buf));
	gtk_text_view_set_editable(self->view, FALSE);
	gtk_text_view_set_cursor_visible(self->view, FALSE);
	gtk_text_view_set_monospace(self->view, TRUE);
	gtk_text_view_set_left_margin(self->view, 6);
	GtkGesture *click = gtk_gesture_click_new();
	g_signal_connect(click, "released", G_CALLBACK(on_click), self);
	gtk_widget_add_controller(GTK_WIDGET(self->view), GTK_EVENT_CONTROLLER(click));
	GtkWidget *sw = gtk_scrolled_window_new();
	gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(sw), GTK_WIDGET(self->view));
	gtk_widget_set_vexpand(sw, TRUE);
	gtk_box_append(GTK_BOX(self), sw);

	static const GActionEntry entries[] = {
		{ "show", act_show, "x", NULL, NULL, { 0 } },
		{ "show-selected", act_show_selected, NULL, NULL, NULL, { 0 } },
	};
	self->actions = g_simple_action_group_new();
	g_action_map_add_action_entries(G_ACTION_MAP(self->actions), entries, G_N_ELEMENTS(entries), self);
}

static GtkWidget *create(SsSession *session)
{
	SsTaskPanel *self = g_object_new(SS_TYPE_TASK_PANEL, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_sel = g_signal_connect(session, "notify::selection", G_CALLBACK(on_selection), self);
	on_db(G_OBJECT(session), NULL, self);
	return GTK_WIDGET(self);
}

static char *text(GtkWidget *w)
{
	SsTaskPanel *self = SS_TASK_PANEL(w);
	GtkTextIter s, e;
	gtk_text_buffer_get_bounds(self->buf, &s, &e);
	char *body = gtk_text_buffer_get_text(self->buf, &s, &e, FALSE);
	char *all = g_strdup_printf("%s\n%s", gtk_label_get_text(self->header), body);
	g_free(body);
	return all;
}

static GActionGroup *actions(GtkWidget *w)
{
	return G_ACTION_GROUP(SS_TASK_PANEL(w)->actions);
}

const struct ss_panel ss_panel_task = { "task", "Task", create, text, SS_PANEL_BOTTOM, actions };
