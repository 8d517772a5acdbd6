/*
 * ss_session.h - SsSession, what one window is looking at: the open trace,
 * the selection (a poll, a stall, a task, a worker, or none), the visible time
 * range and the selected time range, the search's matches and the lanes
 * shown, and the query workers that run the SQL of everything that shows
 * them: the window's (quick work: scenes, tooltips, panel text) and a
 * background one on a second connection (work that may take seconds: the
 * analysis, examining every stall), so a long job never holds up a frame.
 *
 * The timeline and the panels observe it ("notify::db", "notify::selection",
 * "notify::visible-range", "notify::range-selection", "notify::marks",
 * "notify::shown-lanes") and change it through the setters below; none of
 * them talks to another. The window owns it.
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
#include "tl_view.h"

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

/* Selects a poll (as a click does) and brings [ts, ts + dur] into view: the
 * view stays where it is when the poll is in it, moves with the same span
 * when the poll fits, and widens around it when it does not. */
void ss_session_show_poll(SsSession *self, int64_t poll_id, int64_t task_id, int64_t ts, int64_t dur);
/* Brings [t0, t1] into view the same way, selecting nothing. */
void ss_session_show_time(SsSession *self, int64_t t0, int64_t t1);

const struct ss_range *ss_session_get_visible_range(SsSession *self);
void ss_session_set_visible_range(SsSession *self, int64_t t0, int64_t t1);
const struct ss_range *ss_session_get_range_selection(SsSession *self);
void ss_session_set_range_selection(SsSession *self, int64_t t0, int64_t t1);

/* Asks the window to bring the panel registered as id to the front (signal
 * "raise-panel", a string). A panel calls it when what it shows answers the
 * user's last action. */
void ss_session_raise_panel(SsSession *self, const char *id);

/* Search matches (marks sorted by ts, ids the same polls' ids sorted, both
 * g_malloc()ed and owned from now on; n 0: none). dim: polls that did not
 * match are drawn faint. Notifies "marks". */
void ss_session_set_marks(SsSession *self, struct tl_mark *marks, int64_t *ids, size_t n, bool dim);
const struct tl_mark *ss_session_get_marks(SsSession *self, size_t *n, const int64_t **ids, bool *dim);

/* Which lanes the timeline shows: show[i] for tl_db.lanes[i] (g_malloc()ed,
 * owned from now on), NULL for all. Notifies "shown-lanes". */
void ss_session_set_shown_lanes(SsSession *self, bool *show);
const bool *ss_session_get_shown_lanes(SsSession *self);

/* Asks the SQL console to show and run sql (signal "run-sql", a string):
 * a finding's rows, an example. */
void ss_session_run_sql(SsSession *self, const char *sql);

/* Database work (see ss_worker.h): run on the worker thread, done here.
 * Without an open trace the job is dropped (data freed, done not called). */
void ss_session_submit(SsSession *self, const void *key, ss_job_run_fn run, ss_job_done_fn done, void *data,
		       GDestroyNotify free_data, void *user);
void ss_session_cancel(SsSession *self, const void *key);
/* The same on the background worker, whose connection is the trace's too
 * (a second, read-only one; its tl_db has no lanes or stalls loaded: use
 * ss_session_get_db's for those, which may be read from any thread). */
void ss_session_submit_background(SsSession *self, const void *key, ss_job_run_fn run, ss_job_done_fn done,
				  void *data, GDestroyNotify free_data, void *user);
void ss_session_cancel_background(SsSession *self, const void *key);
/* The worker, NULL without an open trace (tests read its counters). */
struct ss_worker *ss_session_get_worker(SsSession *self);
/* True when no database work is queued, running or awaiting delivery (on
 * either worker). */
bool ss_session_idle(SsSession *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_SESSION_H */
