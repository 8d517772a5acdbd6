/*
 * ss_timeline.h - SsTimeline, the timeline widget: draws with tl_render() in
 * snapshot(), zooms (Ctrl+wheel, pinch, keys) around the pointer, pans (drag,
 * wheel, keys), selects a poll (click) or a range (Shift+drag), shows a tooltip
 * for what is under the pointer, and keeps a back/forward history of views.
 *
 * Its actions (group "tl", see ss_timeline_actions) are what the keyboard,
 * the header bar and the tests drive.
 */
#ifndef STALLSCOPE_SS_TIMELINE_H
#define STALLSCOPE_SS_TIMELINE_H

#include <gtk/gtk.h>

#include "tl_db.h"
#include "tl_view.h"

G_BEGIN_DECLS

#define SS_TYPE_TIMELINE (ss_timeline_get_type())
G_DECLARE_FINAL_TYPE(SsTimeline, ss_timeline, SS, TIMELINE, GtkWidget)

GtkWidget *ss_timeline_new(void);
/* The widget does not own db; pass NULL before closing it. */
void ss_timeline_set_db(SsTimeline *self, struct tl_db *db);
struct tl_db *ss_timeline_get_db(SsTimeline *self);
const struct tl_view *ss_timeline_get_view(SsTimeline *self);
/* Moves to [t0, t1] and records the previous view in the history. */
void ss_timeline_show_range(SsTimeline *self, int64_t t0, int64_t t1);
void ss_timeline_select_poll(SsTimeline *self, int64_t poll_id, int64_t task_id);
void ss_timeline_select_stall(SsTimeline *self, int64_t stall_id);
void ss_timeline_set_color_mode(SsTimeline *self, enum tl_color_mode mode);
/* The action group the widget installs as "tl" (zoom-in, zoom-out, pan-left,
 * pan-right, fit, zoom-selection, back, forward, clear-selection, color-by). */
GActionGroup *ss_timeline_actions(SsTimeline *self);
/* Frames drawn so far (tests wait for a redraw). */
guint ss_timeline_frames(SsTimeline *self);

/* Signals: "poll-selected" (gint64 poll id, 0 = none), "range-selected"
 * (gint64 t0, gint64 t1), "view-changed". */

G_END_DECLS

#endif /* STALLSCOPE_SS_TIMELINE_H */
