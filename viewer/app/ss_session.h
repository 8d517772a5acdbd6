/*
 * ss_session.h - SsSession, what one window is looking at: the open trace,
 * the selection (a poll, a stall, a task, a worker, or none), the visible time
 * range and the selected time range, and the query worker that runs the SQL
 * of everything that shows them.
 *
 * The timeline and the panels observe it ("notify::db", "notify::selection",
 * "notify::visible-range", "notify::range-selection") and change it through
 * the setters below; none of them talks to another. The window owns it.
 *
 * On notify::db every other part of the state has been reset with it (no
 * selection, empty ranges), and no separate notification is sent for those.
 * All functions are for the main thread.
 */
#ifndef STALLSCOPE_SS_SESSION_H
#define STALLSCOPE_SS_SESSION_H

#include <glib-object.h>
#include <stdbool.h>
#include <stdint.h>

#include "ss_worker.h"
#include "tl_db.h"

G_BEGIN_DECLS

enum ss_selection_kind { SS_SEL_NONE, SS_SEL_POLL, SS_SEL_STALL, SS_SEL_TASK, SS_SEL_WORKER };

/* id is a polls / stalls / tasks / workers row id. A poll also names its
 * task (task_id, 0 when unknown), whose other polls the timeline outlines. */
struct ss_selection {
	enum ss_selection_kind kind;
	int64_t id;
	int64_t task_id;
};

/* Trace ns; empty when t1 <= t0. */
struct ss_range {
	int64_t t0, t1;
};

#define SS_TYPE_SESSION (ss_session_get_type())
G_DECLARE_FINAL_TYPE(SsSession, ss_session, SS, SESSION, GObject)

SsSession *ss_session_new(void);

/* Shows db (owned from now on; NULL: none), closing the previous one after
 * its worker stopped and the observers let go of it. */
void ss_session_set_db(SsSession *self, struct tl_db *db);
/* The open trace: what tl_db_open loaded may be read; its connection is the
 * worker's. NULL when none is open. */
struct tl_db *ss_session_get_db(SsSession *self);

const struct ss_selection *ss_session_get_selection(SsSession *self);
/* Notifies only when something changed. */
void ss_session_select(SsSession *self, enum ss_selection_kind kind, int64_t id, int64_t task_id);

const struct ss_range *ss_session_get_visible_range(SsSession *self);
void ss_session_set_visible_range(SsSession *self, int64_t t0, int64_t t1);
const struct ss_range *ss_session_get_range_selection(SsSession *self);
void ss_session_set_range_selection(SsSession *self, int64_t t0, int64_t t1);

/* Asks the window to bring the panel registered as id to the front (signal
 * "raise-panel", a string). A panel calls it when what it shows answers the
 * user's last action. */
void ss_session_raise_panel(SsSession *self, const char *id);

/* Database work (see ss_worker.h): run on the worker thread, done here.
 * Without an open trace the job is dropped (data freed, done not called). */
void ss_session_submit(SsSession *self, const void *key, ss_job_run_fn run, ss_job_done_fn done, void *data,
		       GDestroyNotify free_data, void *user);
void ss_session_cancel(SsSession *self, const void *key);
/* The worker, NULL without an open trace (tests read its counters). */
struct ss_worker *ss_session_get_worker(SsSession *self);
/* True when no database work is queued, running or awaiting delivery. */
bool ss_session_idle(SsSession *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_SESSION_H */
