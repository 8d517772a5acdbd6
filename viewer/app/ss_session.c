/*
 * ss_session.c - see ss_session.h. The state is plain structs behind pointer
 * properties: observers read it with the getters when notified, so a range is
 * never seen with a new start and an old end.
 */
#include "ss_session.h"

struct _SsSession {
	GObject parent;
	struct tl_db *db;
	struct ss_worker *worker;
	struct ss_selection sel;
	struct ss_range visible, range_sel;
};

G_DEFINE_FINAL_TYPE(SsSession, ss_session, G_TYPE_OBJECT)

enum { PROP_0, PROP_DB, PROP_SELECTION, PROP_VISIBLE_RANGE, PROP_RANGE_SELECTION, N_PROPS };
static GParamSpec *props[N_PROPS];
static guint sig_raise_panel;

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
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(o, id, ps);
	}
}

static void dispose(GObject *o)
{
	SsSession *self = SS_SESSION(o);
	ss_worker_free(self->worker);
	self->worker = NULL;
	tl_db_close(self->db);
	self->db = NULL;
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
	g_object_class_install_properties(oc, N_PROPS, props);
	sig_raise_panel = g_signal_new("raise-panel", G_TYPE_FROM_CLASS(k), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
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
	ss_worker_free(self->worker);
	self->worker = db ? ss_worker_new(db) : NULL;
	self->db = db;
	self->sel = (struct ss_selection){ SS_SEL_NONE, 0, 0 };
	self->visible = self->range_sel = (struct ss_range){ 0, 0 };
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

const struct ss_range *ss_session_get_range_selection(SsSession *self)
{
	return &self->range_sel;
}

void ss_session_set_range_selection(SsSession *self, int64_t t0, int64_t t1)
{
	if (set_range(&self->range_sel, t0, t1))
		g_object_notify_by_pspec(G_OBJECT(self), props[PROP_RANGE_SELECTION]);
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

struct ss_worker *ss_session_get_worker(SsSession *self)
{
	return self->worker;
}

bool ss_session_idle(SsSession *self)
{
	return !self->worker || ss_worker_idle(self->worker);
}
