/*
 * ss_sql.h - the SQL console panel (ss_sql.c, registered as "sql"): what the
 * window and the tests may ask of it beyond the panel table's entry.
 */
#ifndef STALLSCOPE_SS_SQL_H
#define STALLSCOPE_SS_SQL_H

#include <gtk/gtk.h>
#include <stdbool.h>

/* Brings the console to the front, puts sql in its editor and runs it (as
 * ss_session_run_sql does). */
void ss_sql_run(GtkWidget *panel, const char *sql);
/* Interrupts the query that runs, as the Cancel button does. */
void ss_sql_cancel(GtkWidget *panel);
/* True while a query runs. */
bool ss_sql_running(GtkWidget *panel);
/* Selects row n of the result as sorted now, as a click does (n past the
 * end: none). */
void ss_sql_select_row(GtkWidget *panel, guint n);

#endif /* STALLSCOPE_SS_SQL_H */
