/*
 * ss_answer.h - the answer bar over the timeline: what the selection was
 * doing, in words, where the user looks, whatever tab is in front. A poll
 * or a stall: its task, worker and length, and the analysis's verdict
 * ("blocked in read for 40.05 ms, called from culprit_blocking_syscall",
 * viewer/analysis/examine.h) with a coloured badge; a task or a worker: a
 * line about it; nothing selected: how to get an answer.
 */
#ifndef STALLSCOPE_SS_ANSWER_H
#define STALLSCOPE_SS_ANSWER_H

#include <gtk/gtk.h>

#include "ss_session.h"

GtkWidget *ss_answer_new(SsSession *session);
/* What it says now, as plain text (tests); g_free() it. */
char *ss_answer_get_text(GtkWidget *answer);

#endif /* STALLSCOPE_SS_ANSWER_H */
