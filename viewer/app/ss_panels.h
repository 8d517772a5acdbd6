/*
 * ss_panels.h - the panels a window shows beside the timeline, registered in
 * one table (ss_panels.c). A panel is a widget made from the session: it
 * observes the session, submits its SQL to the session's query worker, and
 * changes the session (a selection, a range) when the user acts in it; it
 * never talks to the timeline or to another panel. The window makes one of
 * each, in table order, as the tabs of its side notebook, or of the dock
 * under the lanes for the panels that want the window's width (where).
 *
 * A new panel (a flame graph, a SQL console, a task view, findings) is one new
 * file that defines its `const struct ss_panel ss_panel_NAME`, its line in
 * viewer/app/meson.build, and one X(NAME) line in ss_panels.c.
 */
#ifndef STALLSCOPE_SS_PANELS_H
#define STALLSCOPE_SS_PANELS_H

#include <gtk/gtk.h>

#include "ss_session.h"

enum ss_panel_where {
	SS_PANEL_SIDE,           /* a tab beside the timeline (the default) */
	SS_PANEL_BOTTOM,         /* a tab of the dock under the lanes */
};

struct ss_panel {
	const char *id;          /* what ss_session_raise_panel() names */
	const char *title;       /* the tab's label */
	GtkWidget *(*create)(SsSession *session);
	/* What the panel shows as text (copying, tests); g_free() it. NULL when
	 * the panel has no text form. */
	char *(*text)(GtkWidget *panel);
	enum ss_panel_where where;
};

size_t ss_panel_count(void);
const struct ss_panel *ss_panel_at(size_t i);
/* NULL when no panel has that id. */
const struct ss_panel *ss_panel_find(const char *id);

#endif /* STALLSCOPE_SS_PANELS_H */
