/*
 * ss_stack_panel.c - see ss_stack_panel.h.
 *
 * A request is made on the main thread from the toolbar and the session (a
 * copy of the selection and the range, never a pointer into them); the
 * worker resolves it to a concrete scope (a poll's worker, task or location
 * is looked up there), finds its profile in the candidates the request
 * carries from the cache or reads it, and builds the tree. Profiles are
 * reference-counted boxes shared by the cache, jobs in flight and results.
 */
#include "ss_stack_panel.h"

#include <stdio.h>
#include <string.h>

#include "read_queries.h"
#include "stacks.h"
#include "sv_draw.h"
#include "sv_png.h"
#include "tl_db.h"

/* Reads of one computation may take this long (an interrupt stops them
 * sooner: a newer request, the window closing). */
#define STACK_BUDGET_S 300.0
#define CACHE_SLOTS 6

enum choice { C_FOLLOW, C_TRACE, C_RANGE, C_WORKER, C_TASK, C_LOCATION };
static const char *const choice_names[] = { "Follow the selection", "Whole trace", "Range selection",
					    "Worker of the selection", "Task of the selection",
					    "Spawn location of the selection", NULL };

struct cache_key {
	struct sv_scope scope;
	int kind;
	bool polls_only;
	char db[1024];                /* "" this trace, else the baseline database */
};

struct cache_slot {
	struct cache_key key;
	struct sv_profile *prof;
	struct sv_collect_info info;
	guint64 used;
};

struct _SsStackPanel {
	GtkBox parent;
	SsSession *session;
	const struct ss_stack_kind *kind;
	gulong on_db, on_sel, on_range;
	GtkWidget *body, *stack, *status, *spinner, *title, *search_label;
	GtkDropDown *scope_dd, *kind_dd, *mode_dd, *group_dd;
	GtkCheckButton *inverted_cb, *polls_cb;
	GtkSearchEntry *search;
	bool range_last;              /* the range selection changed after the selection */
	bool dirty;                   /* a request waits for the panel to be shown */
	bool pending;
	struct cache_slot cache[CACHE_SLOTS];
	guint64 tick;
	struct sv_profile *pinned;    /* the baseline pinned here */
	char pinned_name[256];
	char *base_db;                /* or another database's whole trace */
	struct ss_stack_result *result;
	int64_t matched;
	guint computed, off_main;
};

G_DEFINE_FINAL_TYPE(SsStackPanel, ss_stack_panel, GTK_TYPE_BOX)

/* ---- shared data ---------------------------------------------------------- */

static struct sv_profile *profile_ref(struct sv_profile *p)
{
	return p ? g_atomic_rc_box_acquire(p) : NULL;
}

static void profile_unref(struct sv_profile *p)
{
	if (p)
		g_atomic_rc_box_release_full(p, (GDestroyNotify)sv_profile_free);
}

static void result_clear(struct ss_stack_result *r)
{
	sv_tree_free(&r->tree);
	profile_unref(r->prof);
	profile_unref(r->base);
}

struct ss_stack_result *ss_stack_result_ref(struct ss_stack_result *r)
{
	return r ? g_atomic_rc_box_acquire(r) : NULL;
}

void ss_stack_result_unref(struct ss_stack_result *r)
{
	if (r)
		g_atomic_rc_box_release_full(r, (GDestroyNotify)result_clear);
}

static bool same_key(const struct cache_key *a, const struct cache_key *b)
{
	return a->scope.kind == b->scope.kind && a->scope.id == b->scope.id && a->scope.t0 == b->scope.t0 &&
	       a->scope.t1 == b->scope.t1 && a->kind == b->kind && a->polls_only == b->polls_only &&
	       !strcmp(a->db, b->db);
}

/* ---- the job -------------------------------------------------------------- */

struct job {
	/* the request */
	enum choice choice;
	struct ss_selection sel;
	struct ss_range range;
	bool range_last;
	int kind;
	bool polls_only;
	enum sv_group group;
	enum sv_tree_mode mode;
	struct cache_slot cands[CACHE_SLOTS]; /* references */
	struct sv_profile *pinned;
	char pinned_name[256];
	char *base_db;
	GThread *main_thread;
	/* the answer */
	struct ss_stack_result *res;
	struct cache_key new_keys[2];
	struct sv_profile *new_profs[2];
	struct sv_collect_info new_infos[2];
	bool off_main;
	char err[768];
};

static void job_free(void *p)
{
	struct job *j = p;
	for (int i = 0; i < CACHE_SLOTS; i++)
		profile_unref(j->cands[i].prof);
	profile_unref(j->pinned);
	for (int i = 0; i < 2; i++)
		profile_unref(j->new_profs[i]);
	g_free(j->base_db);
	ss_stack_result_unref(j->res);
	g_free(j);
}

/* A poll's worker, task and location (SS_Q_POLL); false when unknown. */
static bool poll_facts(struct tl_db *db, int64_t poll, int64_t *worker, int64_t *task, int64_t *location)
{
	sqlite3_stmt *st = ss_read_prepare(db->db, SS_Q_POLL);
	bool ok = st && (sqlite3_bind_int64(st, 1, poll), sqlite3_step(st) == SQLITE_ROW);
	if (ok) {
		*worker = sqlite3_column_int64(st, 2);
		*task = sqlite3_column_int64(st, 6);
		*location = sqlite3_column_int64(st, 7);
	}
	sqlite3_finalize(st);
	return ok;
}

static const struct tl_stall *stall_of(struct tl_db *db, int64_t id)
{
	for (size_t i = 0; i < db->n_stalls; i++)
		if (db->stalls[i].id == id)
			return &db->stalls[i];
	return NULL;
}

/* The concrete scope of a request; *note says why it fell back to the whole trace. */
static struct sv_scope resolve(struct tl_db *db, const struct job *j, const char **note)
{
	struct sv_scope s = { SV_SCOPE_TRACE, 0, 0, 0 };
	bool range = j->range.t1 > j->range.t0;
	const struct ss_selection *sel = &j->sel;
	int64_t worker = 0, task = 0, location = 0;
	if (sel->kind == SS_SEL_POLL) {
		poll_facts(db, sel->id, &worker, &task, &location);
	} else if (sel->kind == SS_SEL_STALL) {
		const struct tl_stall *st = stall_of(db, sel->id);
		if (st) {
			worker = st->worker_id;
			task = st->task_id;
			location = st->location_id;
		}
	} else if (sel->kind == SS_SEL_TASK) {
		task = sel->id;
	} else if (sel->kind == SS_SEL_WORKER) {
		worker = sel->id;
	}
	*note = NULL;
	switch (j->choice) {
	case C_FOLLOW:
		if (range && (j->range_last || sel->kind == SS_SEL_NONE))
			return (struct sv_scope){ SV_SCOPE_RANGE, 0, j->range.t0, j->range.t1 };
		switch (sel->kind) {
		case SS_SEL_POLL:
			return (struct sv_scope){ SV_SCOPE_POLL, sel->id, 0, 0 };
		case SS_SEL_STALL:
			return (struct sv_scope){ SV_SCOPE_STALL, sel->id, 0, 0 };
		case SS_SEL_TASK:
			return (struct sv_scope){ SV_SCOPE_TASK, sel->id, 0, 0 };
		case SS_SEL_WORKER:
			return (struct sv_scope){ SV_SCOPE_WORKER, sel->id, 0, 0 };
		case SS_SEL_NONE:
			break;
		}
		return s;
	case C_TRACE:
		return s;
	case C_RANGE:
		if (range)
			return (struct sv_scope){ SV_SCOPE_RANGE, 0, j->range.t0, j->range.t1 };
		*note = "no range selected: Shift+drag on the timeline";
		return s;
	case C_WORKER:
		if (worker > 0)
			return (struct sv_scope){ SV_SCOPE_WORKER, worker, 0, 0 };
		*note = "select a poll, a stall or a worker";
		return s;
	case C_TASK:
		if (task > 0)
			return (struct sv_scope){ SV_SCOPE_TASK, task, 0, 0 };
		*note = "select a poll, a stall or a task";
		return s;
	case C_LOCATION:
		if (location > 0)
			return (struct sv_scope){ SV_SCOPE_LOCATION, location, 0, 0 };
		*note = "select a poll or a stall";
		return s;
	}
	return s;
}

/* The profile of key: from the candidates, else read (and handed back to
 * the cache through new_profs[slot]). NULL with j->err on failure. */
static struct sv_profile *profile_for(struct tl_db *db, struct job *j, const struct cache_key *key, int slot,
				      struct sv_collect_info *info)
{
	for (int i = 0; i < CACHE_SLOTS; i++)
		if (j->cands[i].prof && same_key(&j->cands[i].key, key)) {
			if (info)
				*info = j->cands[i].info;
			return profile_ref(j->cands[i].prof);
		}
	struct sv_profile *p = g_atomic_rc_box_new0(struct sv_profile);
	struct sv_collect_options co = { (enum sv_kind)key->kind, key->polls_only };
	struct sv_collect_info ci;
	int rc = key->db[0] ? sv_collect_path(key->db, &key->scope, &co, STACK_BUDGET_S, p, &ci, j->err, sizeof j->err)
			    : sv_collect(db->db, NULL, &key->scope, &co, p, &ci, j->err, sizeof j->err);
	if (rc != 0) {
		profile_unref(p);
		return NULL;
	}
	if (info)
		*info = ci;
	j->new_keys[slot] = *key;
	j->new_profs[slot] = profile_ref(p);
	j->new_infos[slot] = ci;
	return p;
}

static void job_run(struct tl_db *db, void *p)
{
	struct job *j = p;
	gint64 t0 = g_get_monotonic_time();
	j->off_main = g_thread_self() != j->main_thread;
	tl_db_arm(db, STACK_BUDGET_S);
	const char *note;
	struct sv_scope scope = resolve(db, j, &note);
	struct cache_key key = { .scope = scope, .kind = j->kind, .polls_only = j->polls_only };
	struct sv_collect_info info;
	struct sv_profile *prof = profile_for(db, j, &key, 0, &info);
	if (!prof)
		return;
	struct sv_profile *base = NULL;
	char base_name[256] = "";
	if (j->pinned) {
		base = profile_ref(j->pinned);
		snprintf(base_name, sizeof base_name, "%s", j->pinned_name);
	} else if (j->base_db) {
		struct cache_key bk = { .scope = { SV_SCOPE_TRACE, 0, 0, 0 }, .kind = j->kind, .polls_only = j->polls_only };
		snprintf(bk.db, sizeof bk.db, "%s", j->base_db);
		char e[768];
		base = profile_for(db, j, &bk, 1, NULL);
		if (!base) {
			snprintf(e, sizeof e, "the baseline %.200s: %.500s", j->base_db, j->err);
			snprintf(j->err, sizeof j->err, "%s", e);
			profile_unref(prof);
			return;
		}
		char *bn = g_path_get_basename(j->base_db);
		snprintf(base_name, sizeof base_name, "%s", bn);
		g_free(bn);
	}
	struct ss_stack_result *r = g_atomic_rc_box_new0(struct ss_stack_result);
	r->scope = scope;
	r->info = info;
	r->prof = prof;
	r->base = base;
	r->group = j->group;
	r->mode = j->mode;
	snprintf(r->base_name, sizeof r->base_name, "%s", base_name);
	char title[400];
	sv_scope_title(db, &scope, info.windows ? &info : NULL, title, sizeof title);
	snprintf(r->title, sizeof r->title, "%s%s%s%s", title, note ? " (" : "", note ? note : "", note ? ")" : "");
	if (sv_tree_build_view(&r->tree, prof, base, j->group, j->mode, NULL) != 0)
		snprintf(j->err, sizeof j->err, "out of memory");
	r->ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
	j->res = r;
}

/* ---- the panel ------------------------------------------------------------ */

static void set_status(SsStackPanel *self, const char *text, bool busy)
{
	gtk_label_set_text(GTK_LABEL(self->status), text ? text : "");
	gtk_widget_set_visible(self->status, text && *text);
	gtk_spinner_set_spinning(GTK_SPINNER(self->spinner), busy);
	gtk_widget_set_visible(self->spinner, busy);
	gtk_widget_set_opacity(self->body, busy && self->result ? 0.55 : 1.0);
}

static void update_search(SsStackPanel *self)
{
	const char *needle = gtk_editable_get_text(GTK_EDITABLE(self->search));
	self->matched = self->kind->search(self->body, needle);
	if (!*needle || !self->result) {
		gtk_label_set_text(GTK_LABEL(self->search_label), "");
		return;
	}
	char share[16], w[48];
	sv_format_share(share, sizeof share, self->matched, self->result->prof->total_weight);
	sv_format_ns(w, sizeof w, self->matched);
	char *t = g_strdup_printf("%s matched (%s)", share, w);
	gtk_label_set_text(GTK_LABEL(self->search_label), t);
	g_free(t);
}

static void show_title(SsStackPanel *self)
{
	if (!self->result) {
		gtk_label_set_text(GTK_LABEL(self->title), "");
		return;
	}
	const struct ss_stack_result *r = self->result;
	char totals[160];
	sv_profile_totals(r->prof, totals, sizeof totals);
	GString *t = g_string_new(NULL);
	g_string_append_printf(t, "%s \u2014 %s", r->title, totals);
	if (r->base)
		g_string_append_printf(t, " \u2014 against %s", r->base_name);
	gtk_label_set_text(GTK_LABEL(self->title), t->str);
	g_string_free(t, TRUE);
}

static void job_done(void *p, void *user)
{
	struct job *j = p;
	SsStackPanel *self = user;
	self->pending = false;
	self->computed++;
	if (j->off_main)
		self->off_main++;
	/* New profiles into the cache, over the least recently used slots. */
	for (int k = 0; k < 2; k++) {
		if (!j->new_profs[k])
			continue;
		int victim = 0;
		for (int i = 1; i < CACHE_SLOTS; i++)
			if (self->cache[i].used < self->cache[victim].used)
				victim = i;
		profile_unref(self->cache[victim].prof);
		self->cache[victim] = (struct cache_slot){ j->new_keys[k], j->new_profs[k], j->new_infos[k], ++self->tick };
		j->new_profs[k] = NULL;
	}
	if (!j->res || j->res->tree.failed) {
		set_status(self, j->err[0] ? j->err : "could not compute the view", false);
		return;
	}
	ss_stack_result_unref(self->result);
	self->result = ss_stack_result_ref(j->res);
	set_status(self, NULL, false);
	show_title(self);
	self->kind->show(self->body, self->result);
	update_search(self);
}

static int current_kind(SsStackPanel *self)
{
	if (self->kind->kind >= 0)
		return self->kind->kind;
	return gtk_drop_down_get_selected(self->kind_dd) == 1 ? SV_KIND_OFFCPU : SV_KIND_CPU;
}

static void request(SsStackPanel *self)
{
	if (!ss_session_get_db(self->session))
		return;
	if (!gtk_widget_get_mapped(GTK_WIDGET(self))) {
		self->dirty = true;   /* computed when the tab is shown */
		return;
	}
	self->dirty = false;
	struct job *j = g_new0(struct job, 1);
	j->choice = (enum choice)gtk_drop_down_get_selected(self->scope_dd);
	j->sel = *ss_session_get_selection(self->session);
	j->range = *ss_session_get_range_selection(self->session);
	j->range_last = self->range_last;
	j->kind = current_kind(self);
	j->polls_only = gtk_check_button_get_active(self->polls_cb);
	j->group = gtk_drop_down_get_selected(self->group_dd) == 1 ? SV_GROUP_LINE : SV_GROUP_FUNCTION;
	if (self->kind->tree_modes)
		j->mode = gtk_drop_down_get_selected(self->mode_dd) == 1 ? SV_BOTTOM_UP : SV_TOP_DOWN;
	else
		j->mode = gtk_check_button_get_active(self->inverted_cb) ? SV_BOTTOM_UP : SV_TOP_DOWN;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		j->cands[i] = self->cache[i];
		j->cands[i].prof = profile_ref(self->cache[i].prof);
		if (self->cache[i].prof)
			self->cache[i].used = ++self->tick;
	}
	j->pinned = profile_ref(self->pinned);
	snprintf(j->pinned_name, sizeof j->pinned_name, "%s", self->pinned_name);
	j->base_db = g_strdup(self->base_db);
	j->main_thread = g_thread_self();
	self->pending = true;
	set_status(self, "Computing\u2026", true);
	ss_session_submit(self->session, self, job_run, job_done, j, job_free, self);
}

static void clear_all(SsStackPanel *self)
{
	ss_session_cancel(self->session, self);
	self->pending = false;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		profile_unref(self->cache[i].prof);
		memset(&self->cache[i], 0, sizeof self->cache[i]);
	}
	profile_unref(self->pinned);
	self->pinned = NULL;
	g_clear_pointer(&self->base_db, g_free);
	ss_stack_result_unref(self->result);
	self->result = NULL;
	self->kind->show(self->body, NULL);
}

static void on_db(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsStackPanel *self = data;
	clear_all(self);
	self->range_last = false;
	show_title(self);
	set_status(self, ss_session_get_db(self->session) ? NULL : "No trace", false);
	request(self);
}

static void on_selection(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsStackPanel *self = data;
	self->range_last = false;
	request(self);
}

static void on_range(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	SsStackPanel *self = data;
	const struct ss_range *r = ss_session_get_range_selection(self->session);
	self->range_last = r->t1 > r->t0;
	request(self);
}

static void on_option(GObject *o, GParamSpec *ps, gpointer data)
{
	(void)o;
	(void)ps;
	request(data);
}

static void on_toggled(GtkCheckButton *b, gpointer data)
{
	(void)b;
	request(data);
}

static void on_search(GtkSearchEntry *e, gpointer data)
{
	(void)e;
	update_search(data);
}

static void on_map(GtkWidget *w, gpointer data)
{
	(void)w;
	SsStackPanel *self = data;
	if (self->dirty)
		request(self);
}

/* ---- compare -------------------------------------------------------------- */

void ss_stack_panel_pin_baseline(GtkWidget *panel)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	if (!self->result)
		return;
	g_clear_pointer(&self->base_db, g_free);
	profile_unref(self->pinned);
	self->pinned = profile_ref(self->result->prof);
	g_strlcpy(self->pinned_name, self->result->title, sizeof self->pinned_name);
	request(self);
}

void ss_stack_panel_compare_db(GtkWidget *panel, const char *path)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	profile_unref(self->pinned);
	self->pinned = NULL;
	g_free(self->base_db);
	self->base_db = g_strdup(path);
	request(self);
}

void ss_stack_panel_clear_baseline(GtkWidget *panel)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	profile_unref(self->pinned);
	self->pinned = NULL;
	g_clear_pointer(&self->base_db, g_free);
	request(self);
}

static void act_pin(GSimpleAction *a, GVariant *v, gpointer data)
{
	(void)a;
	(void)v;
	ss_stack_panel_pin_baseline(data);
}

static void act_clear(GSimpleAction *a, GVariant *v, gpointer data)
{
	(void)a;
	(void)v;
	ss_stack_panel_clear_baseline(data);
}

static void compare_file(SsStackPanel *self, GFile *f)
{
	char *path = f ? g_file_get_path(f) : NULL;
	if (path)
		ss_stack_panel_compare_db(GTK_WIDGET(self), path);
	g_free(path);
}

#if GTK_CHECK_VERSION(4, 10, 0)
static void dialog_done(GObject *src, GAsyncResult *res, gpointer data)
{
	GFile *f = gtk_file_dialog_open_finish(GTK_FILE_DIALOG(src), res, NULL);
	compare_file(data, f);
	if (f)
		g_object_unref(f);
	g_object_unref(data);
}
#else
static void chooser_response(GtkNativeDialog *d, int response, gpointer data)
{
	if (response == GTK_RESPONSE_ACCEPT) {
		GFile *f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
		compare_file(data, f);
		if (f)
			g_object_unref(f);
	}
	g_object_unref(d);
	g_object_unref(data);
}
#endif

static void act_compare_db(GSimpleAction *a, GVariant *v, gpointer data)
{
	(void)a;
	(void)v;
	SsStackPanel *self = data;
	GtkRoot *root = gtk_widget_get_root(GTK_WIDGET(self));
	GtkWindow *win = GTK_IS_WINDOW(root) ? GTK_WINDOW(root) : NULL;
#if GTK_CHECK_VERSION(4, 10, 0)
	GtkFileDialog *d = gtk_file_dialog_new();
	gtk_file_dialog_set_title(d, "Compare with a trace database");
	gtk_file_dialog_open(d, win, NULL, dialog_done, g_object_ref(self));
	g_object_unref(d);
#else
	GtkFileChooserNative *d = gtk_file_chooser_native_new("Compare with a trace database", win,
							      GTK_FILE_CHOOSER_ACTION_OPEN, "_Compare", "_Cancel");
	GtkFileFilter *f = gtk_file_filter_new();
	gtk_file_filter_set_name(f, "Trace databases (*.db)");
	gtk_file_filter_add_pattern(f, "*.db");
	gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), f);
	g_object_unref(f);
	g_signal_connect(d, "response", G_CALLBACK(chooser_response), g_object_ref(self));
	gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
#endif
}

/* ---- construction ---------------------------------------------------------- */

static void dispose(GObject *o)
{
	SsStackPanel *self = SS_STACK_PANEL(o);
	if (self->session) {
		g_clear_signal_handler(&self->on_db, self->session);
		g_clear_signal_handler(&self->on_sel, self->session);
		g_clear_signal_handler(&self->on_range, self->session);
		ss_session_cancel(self->session, self);
		g_clear_object(&self->session);
	}
	for (int i = 0; i < CACHE_SLOTS; i++) {
		profile_unref(self->cache[i].prof);
		self->cache[i].prof = NULL;
	}
	profile_unref(self->pinned);
	self->pinned = NULL;
	g_clear_pointer(&self->base_db, g_free);
	ss_stack_result_unref(self->result);
	self->result = NULL;
	G_OBJECT_CLASS(ss_stack_panel_parent_class)->dispose(o);
}

static void ss_stack_panel_class_init(SsStackPanelClass *k)
{
	G_OBJECT_CLASS(k)->dispose = dispose;
}

static void ss_stack_panel_init(SsStackPanel *self)
{
	gtk_orientable_set_orientation(GTK_ORIENTABLE(self), GTK_ORIENTATION_VERTICAL);
}

static GtkDropDown *drop_down(const char *const *items, const char *tip)
{
	GtkDropDown *d = GTK_DROP_DOWN(gtk_drop_down_new_from_strings(items));
	gtk_widget_set_tooltip_text(GTK_WIDGET(d), tip);
	return d;
}

static GtkWidget *build_toolbar(SsStackPanel *self)
{
	GtkWidget *bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
	gtk_widget_set_margin_start(bar, 6);
	gtk_widget_set_margin_end(bar, 6);
	gtk_widget_set_margin_top(bar, 4);
	gtk_widget_set_margin_bottom(bar, 2);
	self->scope_dd = drop_down(choice_names, "What the view shows: by default what you selected last on the timeline"
						 " (a poll, a stall, a task, a worker's label, or a range with Shift+drag)");
	gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->scope_dd));
	if (self->kind->kind < 0) {
		static const char *const kinds[] = { "CPU samples", "Off-CPU time", NULL };
		self->kind_dd = drop_down(kinds, "Weigh stacks by CPU samples or by time off the CPU");
		gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->kind_dd));
	}
	if (self->kind->tree_modes) {
		static const char *const modes[] = { "Top-down", "Bottom-up", NULL };
		self->mode_dd = drop_down(modes, "Top-down: from the thread's start to the leaves; bottom-up: the"
						 " leaf functions first, then their callers");
		gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->mode_dd));
	} else {
		self->inverted_cb = GTK_CHECK_BUTTON(gtk_check_button_new_with_label("Inverted"));
		gtk_widget_set_tooltip_text(GTK_WIDGET(self->inverted_cb),
					    "Bottom-up: the functions that were running at the top, their callers below");
		gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->inverted_cb));
	}
	static const char *const groups[] = { "By function", "By line", NULL };
	self->group_dd = drop_down(groups, "Group frames by function, or by function and source line");
	gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->group_dd));
	self->polls_cb = GTK_CHECK_BUTTON(gtk_check_button_new_with_label("Inside polls"));
	gtk_widget_set_tooltip_text(GTK_WIDGET(self->polls_cb),
				    "Only samples (or time off the CPU) inside polls: the tasks' code, not the runtime's"
				    " parking and scheduling");
	gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->polls_cb));

	self->search = GTK_SEARCH_ENTRY(gtk_search_entry_new());
	gtk_widget_set_tooltip_text(GTK_WIDGET(self->search), "Highlight the frames whose name contains this");
	gtk_editable_set_width_chars(GTK_EDITABLE(self->search), 16);
	gtk_box_append(GTK_BOX(bar), GTK_WIDGET(self->search));
	self->search_label = gtk_label_new(NULL);
	gtk_widget_add_css_class(self->search_label, "dim-label");
	gtk_box_append(GTK_BOX(bar), self->search_label);

	GtkWidget *spacer = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 0);
	gtk_widget_set_hexpand(spacer, TRUE);
	gtk_box_append(GTK_BOX(bar), spacer);
	GMenu *menu = g_menu_new();
	g_menu_append(menu, "Pin this view as the baseline", "stack.pin");
	g_menu_append(menu, "Compare with a database\u2026", "stack.compare-db");
	g_menu_append(menu, "Stop comparing", "stack.no-compare");
	GtkWidget *mb = gtk_menu_button_new();
	gtk_menu_button_set_label(GTK_MENU_BUTTON(mb), "Compare");
	gtk_menu_button_set_menu_model(GTK_MENU_BUTTON(mb), G_MENU_MODEL(menu));
	gtk_widget_set_tooltip_text(mb, "A diff against a baseline: red grew, blue shrank (shares of each total)");
	g_object_unref(menu);
	gtk_box_append(GTK_BOX(bar), mb);
	return bar;
}

GtkWidget *ss_stack_panel_new(SsSession *session, const struct ss_stack_kind *kind)
{
	SsStackPanel *self = g_object_new(SS_TYPE_STACK_PANEL, NULL);
	self->session = g_object_ref(session);
	self->kind = kind;
	gtk_box_append(GTK_BOX(self), build_toolbar(self));

	GtkWidget *head = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
	gtk_widget_set_margin_start(head, 8);
	gtk_widget_set_margin_end(head, 8);
	self->title = gtk_label_new(NULL);
	gtk_label_set_xalign(GTK_LABEL(self->title), 0);
	gtk_label_set_ellipsize(GTK_LABEL(self->title), PANGO_ELLIPSIZE_END);
	gtk_widget_set_hexpand(self->title, TRUE);
	gtk_label_set_selectable(GTK_LABEL(self->title), TRUE);
	gtk_box_append(GTK_BOX(head), self->title);
	self->spinner = gtk_spinner_new();
	gtk_box_append(GTK_BOX(head), self->spinner);
	self->status = gtk_label_new(NULL);
	gtk_widget_add_css_class(self->status, "dim-label");
	gtk_box_append(GTK_BOX(head), self->status);
	gtk_box_append(GTK_BOX(self), head);

	self->body = kind->create_body(self);
	gtk_widget_set_vexpand(self->body, TRUE);
	gtk_box_append(GTK_BOX(self), self->body);
	gtk_search_entry_set_key_capture_widget(self->search, self->body);

	static const GActionEntry entries[] = {
		{ "pin", act_pin, NULL, NULL, NULL, { 0 } },
		{ "compare-db", act_compare_db, NULL, NULL, NULL, { 0 } },
		{ "no-compare", act_clear, NULL, NULL, NULL, { 0 } },
	};
	GSimpleActionGroup *ag = g_simple_action_group_new();
	g_action_map_add_action_entries(G_ACTION_MAP(ag), entries, G_N_ELEMENTS(entries), self);
	gtk_widget_insert_action_group(GTK_WIDGET(self), "stack", G_ACTION_GROUP(ag));
	g_object_unref(ag);

	g_signal_connect(self->scope_dd, "notify::selected", G_CALLBACK(on_option), self);
	if (self->kind_dd)
		g_signal_connect(self->kind_dd, "notify::selected", G_CALLBACK(on_option), self);
	if (self->mode_dd)
		g_signal_connect(self->mode_dd, "notify::selected", G_CALLBACK(on_option), self);
	if (self->inverted_cb)
		g_signal_connect(self->inverted_cb, "toggled", G_CALLBACK(on_toggled), self);
	g_signal_connect(self->group_dd, "notify::selected", G_CALLBACK(on_option), self);
	g_signal_connect(self->polls_cb, "toggled", G_CALLBACK(on_toggled), self);
	g_signal_connect(self->search, "search-changed", G_CALLBACK(on_search), self);
	g_signal_connect(self, "map", G_CALLBACK(on_map), self);
	self->on_db = g_signal_connect(session, "notify::db", G_CALLBACK(on_db), self);
	self->on_sel = g_signal_connect(session, "notify::selection", G_CALLBACK(on_selection), self);
	self->on_range = g_signal_connect(session, "notify::range-selection", G_CALLBACK(on_range), self);
	set_status(self, ss_session_get_db(session) ? NULL : "No trace", false);
	request(self);
	return GTK_WIDGET(self);
}

SsSession *ss_stack_panel_get_session(SsStackPanel *self)
{
	return self->session;
}

GtkWidget *ss_stack_panel_get_body(GtkWidget *panel)
{
	return SS_STACK_PANEL(panel)->body;
}

struct ss_stack_result *ss_stack_panel_get_result(GtkWidget *panel)
{
	return SS_STACK_PANEL(panel)->result;
}

bool ss_stack_panel_pending(GtkWidget *panel)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	return self->pending || self->dirty;
}

void ss_stack_panel_counts(GtkWidget *panel, guint *computed, guint *off_main)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	*computed = self->computed;
	*off_main = self->off_main;
}

int64_t ss_stack_panel_get_matched(GtkWidget *panel)
{
	return SS_STACK_PANEL(panel)->matched;
}

void ss_stack_panel_set_search(GtkWidget *panel, const char *text)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	gtk_editable_set_text(GTK_EDITABLE(self->search), text);
	update_search(self);   /* at once, not after the entry's delay */
}

void ss_stack_panel_set_group(GtkWidget *panel, enum sv_group group)
{
	gtk_drop_down_set_selected(SS_STACK_PANEL(panel)->group_dd, group == SV_GROUP_LINE ? 1 : 0);
}

void ss_stack_panel_set_inverted(GtkWidget *panel, bool inverted)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	if (self->inverted_cb)
		gtk_check_button_set_active(self->inverted_cb, inverted);
	else
		gtk_drop_down_set_selected(self->mode_dd, inverted ? 1 : 0);
}

char *ss_stack_panel_text(GtkWidget *panel)
{
	SsStackPanel *self = SS_STACK_PANEL(panel);
	const struct ss_stack_result *r = self->result;
	if (!r)
		return g_strdup(ss_session_get_db(self->session) ? "(not computed yet)" : "No trace");
	GString *s = g_string_new(NULL);
	char totals[160];
	sv_profile_totals(r->prof, totals, sizeof totals);
	g_string_append_printf(s, "%s\n%s\n", r->title, totals);
	if (r->base)
		g_string_append_printf(s, "against %s\n", r->base_name);
	/* The heaviest functions by total, with their self time. */
	const struct sv_tree *t = &r->tree;
	g_string_append(s, "\ntotal      self       function\n");
	for (uint32_t c = t->n_nodes ? t->nodes[0].child : SV_NONE, k = 0; c != SV_NONE && k < 12;
	     c = t->nodes[c].child, k++) {
		char a[16], b[16], label[512];
		sv_format_share(a, sizeof a, t->nodes[c].total, r->prof->total_weight);
		sv_format_share(b, sizeof b, t->nodes[c].self, r->prof->total_weight);
		sv_tree_label(t, c, label, sizeof label);
		g_string_append_printf(s, "%-10s %-10s %s\n", a, b, label);
	}
	return g_string_free(s, FALSE);
}
