/*
 * ss_text_panel.h - SsTextPanel, a panel whose content is text made from the
 * session: it follows one session property, asks its kind for a request when
 * that changes, runs the request's SQL on the query worker, and shows the
 * text (selectable: backtraces are copied). A newer change supersedes the
 * request in flight. The Details and Range panels are text panels; a kind is
 * a few functions, below.
 */
#ifndef STALLSCOPE_SS_TEXT_PANEL_H
#define STALLSCOPE_SS_TEXT_PANEL_H

#include <gtk/gtk.h>
#include <stdbool.h>

#include "ss_session.h"

struct ss_text_kind {
	const char *id;          /* the panel's registry id, for ss_session_raise_panel */
	const char *follows;     /* the session property: "selection", "range-selection" */
	/* Main thread: a request for the session's state now, or NULL when there
	 * is nothing to show (the last text stays). *raise: bring the panel to the
	 * front when the text arrives. */
	void *(*request)(SsSession *s, bool *raise);
	/* Worker thread: the text for a request. */
	void (*run)(struct tl_db *db, const void *request, GString *out);
	/* What the panel says when a trace is opened (db) or closed (NULL). */
	char *(*intro)(const struct tl_db *db);
};

/* kind must outlive the widget (a static). */
GtkWidget *ss_text_panel_new(SsSession *session, const struct ss_text_kind *kind);
/* What it shows; g_free() it. */
char *ss_text_panel_get_text(GtkWidget *panel);

#endif /* STALLSCOPE_SS_TEXT_PANEL_H */
