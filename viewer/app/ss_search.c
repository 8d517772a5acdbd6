/*
 * ss_search.c - see ss_search.h. The text is read as the first of these
 * that fits: a task number, a worker, a location (file:line or a file
 * name), else a function name (a substring, matched against the frames of
 * the trace's stacks and the spawn locations' functions).
 */
#include "ss_search.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl_task.h"
#include "view_queries.h"

#define SS_TYPE_SEARCH (ss_search_get_type())
G_DECLARE_FINAL_TYPE(SsSearch, ss_search, SS, SEARCH, GtkBox)

/* Matches kept at most (the timeline marks them all). */
#define MAX_MATCHES 100000

struct _SsSearch {
	GtkBox parent;
	SsSession *session;
	gulong on_db;
	GtkSearchEntry *entry;
	GtkLabel *status;
	GSimpleActionGroup *actions;
	char *last;                 /* the text searched for */
	size_t cursor;              /* the match walked to, +1; 0 none */
	bool pending;
};

G_DEFINE_FINAL_TYPE(SsSearch, ss_search, GTK_TYPE_BOX)

enum what { FIND_NONE, FIND_TASK, FIND_WORKER, FIND_LOCATION, FIND_FUNCTION };

struct job {
	char *text;
	enum what what;
	int64_t number;             /* task number */
	const struct tl_db *meta;   /* the window's trace: lanes (read-only) */
	GArray *marks;              /* of struct tl_mark, by ts */
	bool *shown;                /* FIND_WORKER: the lanes shown */
	size_t n_shown;
	char err[256];
};

static void job_free(void *p)
{
	struct job *j = p;
	g_free(j->text);
	if (j->marks)
		g_array_unref(j->marks);
	g_free(j->shown);
	g_free(j);
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Whether text names a worker lane: "w2", "worker 2", "runtime#2" or a
 * thread name; marks the lanes in show. */
static size_t match_workers(const struct tl_db *db, const char *text, bool *show)
{
	long idx = -1;
	char *end;
	if ((text[0] == 'w' || text[0] == 'W') && all_digits(text + 1))
		idx = strtol(text + 1, &end, 10);
	else if (!g_ascii_strncasecmp(text, "worker", 6)) {
		const char *p = text + 6;
		while (*p == ' ' || *p == ':')
			p++;
		if (all_digits(p))
			idx = strtol(p, &end, 10);
	}
	size_t n = 0;
	for (size_t i = 0; i < db->n_lanes; i++) {
		const struct tl_lane *l = &db->lanes[i];
		if (!l->worker_id)
			continue;
		/* label: "w3  thread-name"; group title: "runtime — N workers" */
		char wn[32];
		snprintf(wn, sizeof wn, "w%ld ", idx);
		const char *thread = strstr(l->label, "  ");
		thread = thread ? thread + 2 : "";
		char rt[160];
		snprintf(rt, sizeof rt, "%s", db->groups[l->group].title);
		char *dash = strstr(rt, " — ");
		if (dash)
			*dash = 0;
		char rtidx[200];
		snprintf(rtidx, sizeof rtidx, "%s#%s", rt, l->label + 1);
		char *sp = strchr(rtidx, ' ');
		if (sp)
			*sp = 0;
		bool hit = (idx >= 0 && !strncmp(l->label, wn, strlen(wn))) || (*thread && !strcmp(thread, text)) ||
			   !g_ascii_strcasecmp(rtidx, text);
		show[i] = hit;
		n += hit;
	}
	return n;
}

static void add_mark(struct job *j, int64_t id, int64_t ts, int64_t dur, int64_t worker, int64_t task)
{
	if (j->marks->len >= MAX_MATCHES)
		return;
	struct tl_mark m = { ts, dur, id, worker, task };
	g_array_append_val(j->marks, m);
}

static void find_task(struct job *j, struct tl_db *db)
{
	int64_t ids[16];
	size_t n = tl_task_ids(db, j->number, ids, 16);
	for (size_t i = 0; i < n; i++) {
		struct tl_task t;
		if (tl_task_load(db, j->meta, ids[i], MAX_MATCHES, false, &t) != 0)
			continue;
		for (size_t k = 0; k < t.n_polls; k++)
			add_mark(j, t.polls[k].id, t.polls[k].ts, t.polls[k].dur, t.polls[k].worker_id, t.id);
		tl_task_free(&t);
	}
}

/* Polls whose samples or stall captures have a frame of the function, or
 * whose spawn location matches (function, file, file:line). */
static void find_sql(struct job *j, struct tl_db *db, bool function)
{
	sqlite3_stmt *s = ss_view_prepare(db->db, function ? SS_V_SEARCH_BY_FUNCTION : SS_V_SEARCH_BY_LOCATION, 0);
	if (!s) {
		snprintf(j->err, sizeof j->err, "%s", sqlite3_errmsg(db->db));
		return;
	}
	if (function) {
		GString *like = g_string_new("%");
		for (const char *p = j->text; *p; p++) {
			if (*p == '%' || *p == '_' || *p == '\\')
				g_string_append_c(like, '\\');
			g_string_append_c(like, *p);
		}
		g_string_append_c(like, '%');
		sqlite3_bind_text(s, 1, like->str, -1, SQLITE_TRANSIENT);
		g_string_free(like, TRUE);
	} else {
		char file[512];
		snprintf(file, sizeof file, "%s", j->text);
		char *colon = strrchr(file, ':');
		long line = -1;
		if (colon && all_digits(colon + 1)) {
			line = strtol(colon + 1, NULL, 10);
			*colon = 0;
		}
		sqlite3_bind_text(s, 3, file, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 4, line);
	}
	sqlite3_bind_int64(s, 2, MAX_MATCHES);
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		add_mark(j, sqlite3_column_int64(s, 0), tl_col_time(s, 1), tl_col_dur(s, 2), sqlite3_column_int64(s, 3),
			 sqlite3_column_int64(s, 4));
	if (rc != SQLITE_DONE)
		ss_store_error(db->db, &db->budget, j->err, sizeof j->err);
	sqlite3_finalize(s);
}

static bool looks_like_location(const char *t)
{
	const char *colon = strrchr(t, ':');
	if (colon && colon[1] && all_digits(colon + 1) && colon > t)
		return true;
	const char *dot = strrchr(t, '.');
	static const char *const exts[] = { "c", "h", "cc", "cpp", "cxx", "hpp", "rs", "go", "zig", "py" };
	for (size_t i = 0; dot && i < sizeof exts / sizeof *exts; i++)
		if (!strcmp(dot + 1, exts[i]))
			return true;
	return false;
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	/* A search through every poll may take a while on a big trace; the
	 * user supersedes it by typing. */
	tl_db_arm(db, 120);
	switch (j->what) {
	case FIND_TASK:
		find_task(j, db);
		break;
	case FIND_LOCATION:
		find_sql(j, db, false);
		break;
	case FIND_FUNCTION:
		find_sql(j, db, true);
		break;
	default:
		break;
	}
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_mark(const void *a, const void *b)
{
	const struct tl_mark *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void set_status(SsSearch *self, const char *t)
{
	gtk_label_set_text(self->status, t);
}

static void walk(SsSearch *self, int dir);

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsSearch *self = user;
	self->pending = false;
	if (j->err[0]) {
		char t[300];
		snprintf(t, sizeof t, "error: %s", j->err);
		set_status(self, t);
		ss_session_set_marks(self->session, NULL, NULL, 0, false);
		return;
	}
	size_t n = j->marks->len;
	struct tl_mark *marks = (struct tl_mark *)g_array_free(j->marks, FALSE);
	j->marks = NULL;
	qsort(marks, n, sizeof *marks, cmp_mark);
	int64_t *ids = g_new(int64_t, n ? n : 1);
	for (size_t i = 0; i < n; i++)
		ids[i] = marks[i].poll_id;
	qsort(ids, n, sizeof *ids, cmp_id);
	ss_session_set_marks(self->session, marks, ids, n, n > 0);
	char t[96];
	if (!n)
		snprintf(t, sizeof t, "no match");
	else
		snprintf(t, sizeof t, "%zu match%s%s", n, n == 1 ? "" : "es", n >= MAX_MATCHES ? " (the first)" : "");
	set_status(self, t);
	if (n)
		walk(self, +1);
}

static void clear(SsSearch *self)
{
	ss_session_cancel_background(self->session, self);
	self->pending = false;
	g_clear_pointer(&self->last, g_free);
	self->cursor = 0;
	set_status(self, "");
	size_t n;
	ss_session_get_marks(self->session, &n, NULL, NULL);
	if (n)
		ss_session_set_marks(self->session, NULL, NULL, 0, false);
	if (ss_session_get_shown_lanes(self->session))
		ss_session_set_shown_lanes(self->session, NULL);
}

void ss_search_run(GtkWidget *w, const char *text)
{
	SsSearch *self = SS_SEARCH(w);
	struct tl_db *db = ss_session_get_db(self->session);
	char *t = g_strstrip(g_strdup(text ? text : ""));
	clear(self);
	if (!db || !*t) {
		g_free(t);
		return;
	}
	self->last = g_strdup(t);
	struct job *j = g_new0(struct job, 1);
	j->text = t;
	j->meta = db;
	j->marks = g_array_new(FALSE, FALSE, sizeof(struct tl_mark));
	const char *num = NULL;
	if (!g_ascii_strncasecmp(t, "task", 4)) {
		num = t + 4;
		while (*num == ' ' || *num == ':')
			num++;
	} else if (t[0] == '#') {
		num = t + 1;
	}
	bool *show = g_new0(bool, db->n_lanes ? db->n_lanes : 1);
	size_t workers = match_workers(db, t, show);
	if (num && all_digits(num)) {
		j->what = FIND_TASK;
		j->number = strtoll(num, NULL, 10);
	} else if (workers) {
		ss_session_set_shown_lanes(self->session, show);
		char s[96];
		snprintf(s, sizeof s, "%zu lane%s shown", workers, workers == 1 ? "" : "s");
		set_status(self, s);
		job_free(j);
		return;
	} else if (looks_like_location(t)) {
		j->what = FIND_LOCATION;
	} else {
		j->what = FIND_FUNCTION;
	}
	g_free(show);
	set_status(self, "searching…");
	self->pending = true;
	ss_session_submit_background(self->session, self, job_run, job_done, j, job_free, self);
}

/* To the next (dir > 0) or previous match in time from the selection, or
 * from the middle of the view before anything was walked to. */
static void walk(SsSearch *self, int dir)
{
	size_t n;
	const struct tl_mark *m = ss_session_get_marks(self->session, &n, NULL, NULL);
	if (!n)
		return;
	size_t i;
	if (self->cursor) {
		i = dir > 0 ? (self->cursor % n) : (self->cursor + n - 2) % n;
	} else {
		const struct ss_range *v = ss_session_get_visible_range(self->session);
		int64_t mid = v->t0 / 2 + v->t1 / 2;
		for (i = 0; i < n && m[i].ts < mid; i++)
			;
		if (i == n || dir < 0)
			i = (i + n - (dir < 0 ? 1 : 0)) % n;
	}
	self->cursor = i + 1;
	char t[96];
	snprintf(t, sizeof t, "%zu of %zu", i + 1, n);
	set_status(self, t);
	ss_session_show_poll(self->session, m[i].poll_id, m[i].task_id, m[i].ts, m[i].dur);
}

static void on_activate(GtkSearchEntry *e, gpointer data)
{
	SsSearch *self = data;
	const char *t = gtk_editable_get_text(GTK_EDITABLE(e));
	if (self->last && !strcmp(self->last, t)) {
		if (!self->pending)
			walk(self, +1);
		return;
	}
	ss_search_run(GTK_WIDGET(self), t);
}

static void on_stop(GtkSearchEntry *e, gpointer data)
{
	gtk_editable_set_text(GTK_EDITABLE(e), "");
	clear(data);
}

static void act_focus(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsSearch *self = data;
	gtk_widget_grab_focus(GTK_WIDGET(self->entry));
}

static void act_walk(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)p;
	walk(data, strcmp(g_action_get_name(G_ACTION(a)), "next") == 0 ? +1 : -1);
}

static void act_clear(GSimpleAction *a, GVariant *p, gpointer data)
{
	(void)a;
	(void)p;
	SsSearch *self = data;
	gtk_editable_set_text(GTK_EDITABLE(self->entry), "");
	clear(self);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsSearch *self = data;
	/* The session dropped the marks with the old trace. */
	g_clear_pointer(&self->last, g_free);
	self->cursor = 0;
	self->pending = false;
	gtk_editable_set_text(GTK_EDITABLE(self->entry), "");
	set_status(self, "");
}

static void dispose(GObject *o)
{
	SsSearch *self = SS_SEARCH(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		ss_session_cancel_background(self->session, self);
		g_clear_object(&self->session);
	}
	g_clear_pointer(&self->last, g_free);
	g_clear_object(&self->actions);
	G_OBJECT_CLASS(ss_search_parent_class)->dispose(o);
}

static void ss_search_class_init(SsSearchClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_search_init(SsSearch *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_HORIZONTAL);
	gtk_box_set_spacing(GTK_BOX(self), 6);
	self->status = GTK_LABEL(gtk_label_new(NULL));
	gtk_widget_add_css_class(GTK_WIDGET(self->status), "dim-label");
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->status));
	self->entry = GTK_SEARCH_ENTRY(gtk_search_entry_new());
	g_object_set(self->entry, "placeholder-text", "task 12, w2, function, file.c:40", NULL);
	gtk_editable_set_width_chars(GTK_EDITABLE(self->entry), 28);
	gtk_widget_set_tooltip_text(GTK_WIDGET(self->entry),
				    "Find polls by task (task 12), function (a frame of their samples or stall "
				    "captures), location (file.c:40); or show one worker's lane (w2).\n"
				    "Enter / F3: next match, Shift+F3: previous, Escape: clear (Ctrl+F)");
	g_signal_connect(self->entry, "activate", G_CALLBACK(on_activate), self);
	g_signal_connect(self->entry, "stop-search", G_CALLBACK(on_stop), self);
	gtk_box_append(GTK_BOX(self), GTK_WIDGET(self->entry));
	GtkWidget *nav = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
	gtk_widget_add_css_class(nav, "linked");
	GtkWidget *prev = gtk_button_new_from_icon_name("go-up-symbolic");
	gtk_actionable_set_action_name(GTK_ACTIONABLE(prev), "search.prev");
	gtk_widget_set_tooltip_text(prev, "Previous match (Shift+F3)");
	GtkWidget *next = gtk_button_new_from_icon_name("go-down-symbolic");
	gtk_actionable_set_action_name(GTK_ACTIONABLE(next), "search.next");
	gtk_widget_set_tooltip_text(next, "Next match (F3)");
	gtk_box_append(GTK_BOX(nav), prev);
	gtk_box_append(GTK_BOX(nav), next);
	gtk_box_append(GTK_BOX(self), nav);

	static const GActionEntry entries[] = {
		{ "focus", act_focus, NULL, NULL, NULL, { 0 } },
		{ "next", act_walk, NULL, NULL, NULL, { 0 } },
		{ "prev", act_walk, NULL, NULL, NULL, { 0 } },
		{ "clear", act_clear, NULL, NULL, NULL, { 0 } },
	};
	self->actions = g_simple_action_group_new();
	g_action_map_add_action_entries(G_ACTION_MAP(self->actions), entries, G_N_ELEMENTS(entries), self);
}

GtkWidget *ss_search_new(SsSession *session)
{
	SsSearch *self = g_object_new(SS_TYPE_SEARCH, NULL);
	self->session = g_object_ref(session);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	return GTK_WIDGET(self);
}

GActionGroup *ss_search_actions(GtkWidget *search)
{
	return G_ACTION_GROUP(SS_SEARCH(search)->actions);
}

const char *ss_search_status(GtkWidget *search)
{
	return gtk_label_get_text(SS_SEARCH(search)->status);
}
