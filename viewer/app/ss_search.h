/*
 * ss_search.h - the search box of the header bar: finds polls by task
 * ("task 1988", "#1988"), by function ("culprit_blocking", a frame of a
 * sample or stall capture taken in the poll, or the spawn location's
 * function) or by location ("scenarios.c:402", "scenarios.c"), and filters
 * the lanes to a worker ("w2", "worker 2", "example#2", a thread name).
 *
 * Matched polls are marked on the timeline and the others drawn faint
 * (ss_session_set_marks); Enter, F3 and Shift+F3 walk the matches in time
 * order, selecting each and bringing it into view. Escape clears. The
 * search runs on the session's background worker: a search through every
 * poll never holds up a frame, and a newer one supersedes it.
 */
#ifndef STALLSCOPE_SS_SEARCH_H
#define STALLSCOPE_SS_SEARCH_H

#include <gtk/gtk.h>

#include "ss_session.h"

GtkWidget *ss_search_new(SsSession *session);
/* Its actions (focus, next, prev, clear), inserted as "search" by the window. */
GActionGroup *ss_search_actions(GtkWidget *search);
/* Runs a search for text now, as Enter does (tests). */
void ss_search_run(GtkWidget *search, const char *text);
/* "12 matches", "3 of 12", "no match" ... what the box says now. */
const char *ss_search_status(GtkWidget *search);

#endif /* STALLSCOPE_SS_SEARCH_H */
