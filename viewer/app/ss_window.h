/*
 * ss_window.h - SsWindow, one trace per window: header bar (open, history,
 * fit, zoom to selection, colour mode, menu), the timeline, and a side panel
 * with the details of the selection and the stalls table. Opening segment files
 * imports them in a worker thread with a progress bar.
 */
#ifndef STALLSCOPE_SS_WINDOW_H
#define STALLSCOPE_SS_WINDOW_H

#include <gtk/gtk.h>

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

SsTimeline *ss_window_get_timeline(SsWindow *self);
SsStalls *ss_window_get_stalls(SsWindow *self);
/* The side panel's current text (tests). g_free() it. */
char *ss_window_get_details_text(SsWindow *self);
/* The last error shown, or NULL. */
const char *ss_window_get_error(SsWindow *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_WINDOW_H */
