/*
 * ss_app.h - the GtkApplication (io.github.stallscope.Viewer): application
 * actions (open, quit, shortcuts, about), recent files, and one window per
 * opened trace.
 */
#ifndef STALLSCOPE_SS_APP_H
#define STALLSCOPE_SS_APP_H

#define SS_APP_ID "io.github.stallscope.Viewer"

#include <gtk/gtk.h>

/* The application, not yet run (tests run it with their own loop). */
GtkApplication *ss_app_new(void);
int ss_app_run(int argc, char **argv);
/* The shortcuts window's GtkBuilder text (tests hold it to the bindings). */
const char *ss_app_shortcuts_ui(void);

#endif /* STALLSCOPE_SS_APP_H */
