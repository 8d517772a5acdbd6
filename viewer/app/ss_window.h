/*
 * ss_window.h - SsWindow, one trace per window: header bar (open, history,
 * fit, zoom to selection, previous / next stall, search, the side panel's
 * toggle, menu), the answer bar over the timeline, and the registered panels
 * (ss_panels.h) as tabs beside it and in the dock under the lanes. The window
 * builds the UI and owns the session (ss_session.h) that the timeline and the
 * panels observe; it relays nothing between them. Opening a database, or
 * importing segment files first (with a progress bar and Cancel), runs in a
 * thread; errors show in a banner.
 */
#ifndef STALLSCOPE_SS_WINDOW_H
#define STALLSCOPE_SS_WINDOW_H

#include <gtk/gtk.h>

#include "ss_session.h"
#include "ss_stalls.h"
#include "ss_timeline.h"

G_BEGIN_DECLS

#define SS_TYPE_WINDOW (ss_window_get_type())
G_DECLARE_FINAL_TYPE(SsWindow, ss_window, SS, WINDOW, GtkApplicationWindow)

SsWindow *ss_window_new(GtkApplication *app);
/* Opens a database, or imports segment files / directories first (async). */
void ss_window_open_paths(SsWindow *self, const char *const *paths, gsize n);
void ss_window_open_files(SsWindow *self, GFile **files, gsize n);
/* "opened" signal: emitted when a trace is shown (or failed: the argument
 * says whether it worked). */

SsSession *ss_window_get_session(SsWindow *self);
SsTimeline *ss_window_get_timeline(SsWindow *self);
SsStalls *ss_window_get_stalls(SsWindow *self);
/* The panel registered as id, NULL when none. */
GtkWidget *ss_window_get_panel(SsWindow *self, const char *id);
/* Its text (ss_panel.text), NULL when it has none. g_free() it. */
char *ss_window_get_panel_text(SsWindow *self, const char *id);
/* The id of the panel in front of the side notebook, and of the dock. */
const char *ss_window_get_front_panel(SsWindow *self);
const char *ss_window_get_front_dock_panel(SsWindow *self);
/* The search box (ss_search.h). */
GtkWidget *ss_window_get_search(SsWindow *self);
/* The answer bar over the lanes (ss_answer.h). */
GtkWidget *ss_window_get_answer(SsWindow *self);
/* The last error shown, or NULL. */
const char *ss_window_get_error(SsWindow *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_WINDOW_H */
