/*
 * ss_panels.h - the panels a window shows around the timeline, registered in
 * one table (ss_panels.c). A panel is a widget made from the session: it
 * observes the session, submits its SQL to the session's query workers, and
 * changes the session (a selection, a range) when the user acts in it; it
 * never talks to the timeline or to another panel. The window makes one of
 * each, in table order, as the tabs of the notebook its `where` names: the
 * side notebook beside the timeline (text about the selection), or the dock
 * under the lanes (wide things: tables, the console, stack views).
 *
 * A new panel (a flame graph, a call tree) is one new file that defines its
 * `const struct ss_panel ss_panel_NAME`, its line in viewer/app/meson.build,
 * and one X(NAME) line in ss_panels.c.
 */
#ifndef STALLSCOPE_SS_PANELS_H
#define STALLSCOPE_SS_PANELS_H

#include <gtk/gtk.h>

#include "ss_session.h"

enum ss_panel_where {
	SS_PANEL_SIDE,           /* a tab of the side notebook (the default) */
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
	/* Actions the panel offers wherever the focus is (keys, menus): the
	 * window inserts the group under the panel's id ("findings.next").
	 * NULL when it has none. The group belongs to the panel. */
	GActionGroup *(*actions)(GtkWidget *panel);
};

size_t ss_panel_count(void);
const struct ss_panel *ss_panel_at(size_t i);
/* NULL when no panel has that id. */
const struct ss_panel *ss_panel_find(const char *id);

#endif /* STALLSCOPE_SS_PANELS_H */
