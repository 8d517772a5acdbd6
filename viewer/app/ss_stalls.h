/*
 * ss_stalls.h - SsStalls, the Stalls panel: every stall of the trace in a
 * sortable table (start, duration, lane, kind, location). Selecting a row
 * selects the stall in the session (the timeline moves there, the Details
 * panel shows its backtraces); a stall selected elsewhere selects its row.
 * Registered as ss_panel_stalls (ss_panels.c).
 */
#ifndef STALLSCOPE_SS_STALLS_H
#define STALLSCOPE_SS_STALLS_H

#include <gtk/gtk.h>

#include "ss_session.h"

G_BEGIN_DECLS

#define SS_TYPE_STALLS (ss_stalls_get_type())
G_DECLARE_FINAL_TYPE(SsStalls, ss_stalls, SS, STALLS, GtkBox)

GtkWidget *ss_stalls_new(SsSession *session);
/* Selects the n-th row as currently sorted (tests, keyboard). */
void ss_stalls_select_row(SsStalls *self, guint n);
guint ss_stalls_count(SsStalls *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_STALLS_H */
