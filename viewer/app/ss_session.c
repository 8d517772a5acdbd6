/*
 * ss_session.c - see ss_session.h. The state is plain structs behind pointer
 * properties: observers read it with the getters when notified, so a range is
 * never seen with a new start and an old end.
 */
#include "ss_session.h"

#include "store_open.h"

struct _SsSession {
	GObject parent;
	struct tl_db *db;
	struct ss_worker *worker;
	struct tl_db *bg_db;          /* the background worker's connection */
	struct ss_worker *bg;
	struct ss_selection sel;
	struct ss_range visible, range_sel;
	struct tl_mark *marks;
	int64_t *mark_ids;
	size_t n_marks;
	bool dim;
	bool *shown;
};

G_DEFINE_FINAL_TYPE(SsSession, ss_session, G_TYPE_OBJECT)

enum { PROP_0, PROP_DB, PROP_SELECTION, PROP_VISIBLE_RANGE, PROP_RANGE_SELECTION, PROP_MARKS, PROP_SHOWN_LANES, N_PROPS };
static GParamSpec *props[N_PROPS];
static guint sig_raise_panel, sig_run_sql;

static void get_property(GObject *o, guint id, GValue *v, GParamSpec *ps)
{
	SsSession *self = SS_SESSION(o);
	switch (id) {
	case PROP_DB:
		g_value_set_pointer(v, self->db);
		break;
	case PROP_SELECTION:
		g_value_set_pointer(v, &self->sel);
		break;
	case PROP_VISIBLE_RANGE:
		g_value_set_pointer(v, &self->visible);
		break;
	case PROP_RANGE_SELECTION:
		g_value_set_pointer(v, &self->range_sel);
		break;
	case PROP_MARKS:
		g_value_set_pointer(v, self->marks);
		break;
	case PROP_SHOWN_LANES:
		g_value_set_pointer(v, self->shown);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
	}
}

static void drop_workers(SsSession *self)
{
	ss_worker_free(self->worker);
	self->worker = NULL;
	ss_worker_free(self->bg);
	self->bg = NULL;
	tl_db_close(self->bg_db);
	self->bg_db = NULL;
}

static void clear_marks(SsSession *self)
{
	g_clear_pointer(&self->marks, g_free);
	g_clear_pointer(&self->mark_ids, g_free);
	self->n_marks = 0;
	self->dim = false;
}

static void dispose(GObject *o)
{
	SsSession *self = SS_SESSION(o);
	drop_workers(self);
	tl_db_close(self->db);
	self->db = NULL;
	clear_marks(self);
	g_clear_pointer(&self->shown, g_free);
	G_OBJECT_CLASS(ss_session_parent_class)->dispose(o);
}

static void ss_session_class_init(SsSessionClass *k)
{
	GObjectClass *oc = G_OBJECT_CLASS(k);
	oc->get_property = get_property;
	oc->dispose = dispose;
	props[PROP_DB] = g_param_spec_pointer("db", NULL, "struct tl_db * of the open trace",
					      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	props[PROP_SELECTION] = g_param_spec_pointer("selection", NULL, "const struct ss_selection *",
						     G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	props[PROP_VISIBLE_RANGE] = g_param_spec_pointer("visible-range", NULL, "const struct ss_range *",
							 G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	props[PROP_RANGE_SELECTION] = g_param_spec_pointer("range-selection", NULL, "const struct ss_range *",
							   G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	props[PROP_MARKS] = g_param_spec_pointer("marks", NULL, "const struct tl_mark * (ss_session_get_marks)",
						 G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	props[PROP_SHOWN_LANES] = g_param_spec_pointer("shown-lanes", NULL, "const bool * per lane, NULL: all",
						       G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
	g_object_class_install_properties(oc, N_PROPS, props);
	sig_raise_panel = g_signal_new("raise-panel", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
				       G_TYPE_NONE, 1, G_TYPE_STRING);
	sig_run_sql = g_signal_new("run-sql", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
				   G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void ss_session_init(SsSession *self)
{
	(void)self;
}

SsSession *ss_session_new(void)
{
	return g_object_new(SS_TYPE_SESSION, NULL);
}

void ss_session_set_db(SsSession *self, struct tl_db *db)
{
	struct tl_db *old = self->db;
	/* No result of the old trace may arrive once the new one is shown. */
	drop_workers(self);
	self->worker = db ? ss_worker_new(db) : NULL;
	if (db) {
		/* A second connection for the background: when it cannot be had,
		 * background work waits its turn on the window's worker. */
		sqlite3 *conn = NULL;
		char err[512];
		if (ss_store_open_readonly(db->path, true, &conn, err, sizeof err) == 0) {
			self->bg_db = tl_db_wrap(conn, db->path);
			if (self->bg_db)
				self->bg = ss_worker_new(self->bg_db);
		}
	}
	self->db = db;
	self->sel = (struct ss_selection){ SS_SEL_NONE, 0, 0 };
	self->visible = self->range_sel = (struct ss_range){ 0, 0 };
	clear_marks(self);
	g_clear_pointer(&self->shown, g_free);
	g_object_notify_by_pspec(G_OBJECT(self), props[PROP_DB]);
	/* Observers dropped everything of the old trace in their handlers. */
	tl_db_close(old);
}

struct tl_db *ss_session_get_db(SsSession *self)
{
	return self->db;
}

const struct ss_selection *ss_session_get_selection(SsSession *self)
{
	return &self->sel;
}

void ss_session_select(SsSession *self, enum ss_selection_kind kind, int64_t id, int64_t task_id)
{
	if (kind == SS_SEL_NONE)
		id = task_id = 0;
	struct ss_selection s = { kind, id, task_id };
	if (s.kind == self->sel.kind && s.id == self->sel.id && s.task_id == self->sel.task_id)
		return;
	self->sel = s;
	g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SELECTION]);
}

static bool set_range(struct ss_range *r, int64_t t0, int64_t t1)
{
	if (t1 <= t0)
		t0 = t1 = 0;
	if (r->t0 == t0 && r->t1 == t1)
		return false;
	r->t0 = t0;
	r->t1 = t1;
	return true;
}

const struct ss_range *ss_session_get_visible_range(SsSession *self)
{
	return &self->visible;
}

void ss_session_set_visible_range(SsSession *self, int64_t t0, int64_t t1)
{
	if (set_range(&self->visible, t0, t1))
		g_object_notify_by_pspec(G_OBJECT(self), props[PROP_VISIBLE_RANGE]);
}

void ss_session_show_time(SsSession *self, int64_t t0, int64_t t1)
{
	if (t1 < t0)
		t1 = t0;
	struct ss_range v = self->visible;
	int64_t span = v.t1 - v.t0;
	if (span > 0 && t0 >= v.t0 && t1 <= v.t1)
		return;
	int64_t len = t1 - t0;
	/* Room on both sides: what came before and after is half the story. */
	if (span <= 0 || len * 3 / 2 > span)
		span = len * 2 > 2000000 ? len * 2 : 2000000;
	int64_t mid = t0 + len / 2;
	ss_session_set_visible_range(self, mid - span / 2, mid - span / 2 + span);
}

void ss_session_show_poll(SsSession *self, int64_t poll_id, int64_t task_id, int64_t ts, int64_t dur)
{
	ss_session_select(self, SS_SEL_POLL, poll_id, task_id);
	ss_session_show_time(self, ts, ts + dur);
}

const struct ss_range *ss_session_get_range_selection(SsSession *self)
{
	return &self->range_sel;
}

void ss_session_set_range_selection(SsSession *self, int64_t t0, int64_t t1)
{
	if (set_range(&self->range_sel, t0, t1))
		g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RANGE_SELECTION]);
}

void ss_session_set_marks(SsSession *self, struct tl_mark *marks, int64_t *ids, size_t n, bool dim)
{
	clear_marks(self);
	if (n) {
		self->marks = marks;
		self->mark_ids = ids;
		self->n_marks = n;
		self->dim = dim;
	} else {
		g_free(marks);
		g_free(ids);
	}
	g_object_notify_by_pspec(G_OBJECT(self), props[PROP_MARKS]);
}

const struct tl_mark *ss_session_get_marks(SsSession *self, size_t *n, const int64_t **ids, bool *dim)
{
	*n = self->n_marks;
	if (ids)
		*ids = self->mark_ids;
	if (dim)
		*dim = self->dim;
	return self->marks;
}

void ss_session_set_shown_lanes(SsSession *self, bool *show)
{
	g_free(self->shown);
	self->shown = show;
	g_object_notify_by_pspec(G_OBJECT(self), props[PROP_SHOWN_LANES]);
}

const bool *ss_session_get_shown_lanes(SsSession *self)
{
	return self->shown;
}

void ss_session_run_sql(SsSession *self, const char *sql)
{
	g_signal_emit(self, sig_run_sql, 0, sql);
}

void ss_session_raise_panel(SsSession *self, const char *id)
{
	g_signal_emit(self, sig_raise_panel, 0, id);
}

void ss_session_submit(SsSession *self, const void *key, ss_job_run_fn run, ss_job_done_fn done, void *data,
		       GDestroyNotify free_data, void *user)
{
	if (!self->worker) {
		if (free_data)
			free_data(data);
		return;
	}
	ss_worker_submit(self->worker, key, run, done, data, free_data, user);
}

void ss_session_cancel(SsSession *self, const void *key)
{
	if (self->worker)
		ss_worker_cancel(self->worker, key);
}

void ss_session_submit_background(SsSession *self, const void *key, ss_job_run_fn run, ss_job_done_fn done,
				  void *data, GDestroyNotify free_data, void *user)
{
	if (!self->bg) {
		ss_session_submit(self, key, run, done, data, free_data, user);
		return;
	}
	ss_worker_submit(self->bg, key, run, done, data, free_data, user);
}

void ss_session_cancel_background(SsSession *self, const void *key)
{
	if (self->bg)
		ss_worker_cancel(self->bg, key);
	else
		ss_session_cancel(self, key);
}

struct ss_worker *ss_session_get_worker(SsSession *self)
{
	return self->worker;
}

bool ss_session_idle(SsSession *self)
{
	return (!self->worker || ss_worker_idle(self->worker)) && (!self->bg || ss_worker_idle(self->bg));
}
