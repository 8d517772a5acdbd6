/*
 * ss_stalls.h - SsStalls, the stalls panel: every stall of the trace in a
 * sortable table (start, duration, lane, kind, location). Selecting a row emits
 * "stall-selected" (gint64 stall id); the window moves the timeline there and
 * shows the stall's backtraces.
 */
#ifndef STALLSCOPE_SS_STALLS_H
#define STALLSCOPE_SS_STALLS_H

#include <gtk/gtk.h>

#include "tl_db.h"

G_BEGIN_DECLS

#define SS_TYPE_STALLS (ss_stalls_get_type())
G_DECLARE_FINAL_TYPE(SsStalls, ss_stalls, SS, STALLS, GtkBox)

GtkWidget *ss_stalls_new(void);
void ss_stalls_set_db(SsStalls *self, struct tl_db *db);
/* Selects the n-th row as currently sorted (tests, keyboard). */
void ss_stalls_select_row(SsStalls *self, guint n);
guint ss_stalls_count(SsStalls *self);

G_END_DECLS

#endif /* STALLSCOPE_SS_STALLS_H */
