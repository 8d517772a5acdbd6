/*
 * ss_timeline.h - SsTimeline, the timeline widget: draws with tl_render() in
 * snapshot(), zooms (Ctrl+wheel, pinch, keys) around the pointer, pans (drag,
 * wheel, keys), selects a poll (click), a worker (click on its label) or a
 * range (Shift+drag), shows a tooltip for what is under the pointer, and keeps
 * a back/forward history of views.
 *
 * It observes its SsSession: the trace, the selection (a stall selected
 * anywhere moves the view there), the visible range and the range selection,
 * and writes what the user does back into it. Scenes and tooltip text are
 * fetched by the session's query worker; snapshot() draws the last scene that
 * arrived, stretched and shifted onto the current view, and never waits.
 *
 * Its actions (group "tl", see ss_timeline_actions) are what the keyboard,
 * the header bar and the tests drive.
 */
#ifndef STALLSCOPE_SS_TIMELINE_H
#define STALLSCOPE_SS_TIMELINE_H

#include <gtk/gtk.h>

#include "ss_session.h"
#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"

G_BEGIN_DECLS

#define SS_TYPE_TIMELINE (ss_timeline_get_type())
G_DECLARE_FINAL_TYPE(SsTimeline, ss_timeline, SS, TIMELINE, GtkWidget)

/* Observes session (a reference is kept). */
GtkWidget *ss_timeline_new(SsSession *session);
/* The session's trace, NULL when none. */
struct tl_db *ss_timeline_get_db(SsTimeline *self);
const struct tl_view *ss_timeline_get_view(SsTimeline *self);
/* Moves to [t0, t1] and records the previous view in the history. */
void ss_timeline_show_range(SsTimeline *self, int64_t t0, int64_t t1);
/* Selects a poll in the session (0: nothing), as a click does. */
void ss_timeline_select_poll(SsTimeline *self, int64_t poll_id, int64_t task_id);
/* Selects a time range in the session, as a Shift+drag does. */
void ss_timeline_select_range(SsTimeline *self, int64_t t0, int64_t t1);
void ss_timeline_set_color_mode(SsTimeline *self, enum tl_color_mode mode);
/* The action group the widget installs as "tl" (zoom-in, zoom-out, pan-left,
 * pan-right, fit, zoom-selection, back, forward, clear-selection, color-by). */
GActionGroup *ss_timeline_actions(SsTimeline *self);

/* The tooltip GTK would show at widget point (x, y), NULL when none (yet: a
 * poll's text is fetched on the first ask, and GTK asks again when it
 * arrives). g_free() it. */
char *ss_timeline_tooltip_at(SsTimeline *self, int x, int y);
/* For tests and diagnostics: frames drawn so far; the scene drawn last (NULL
 * before the first arrived); whether a scene request is in flight; scenes
 * requested and received. */
guint ss_timeline_frames(SsTimeline *self);
const struct tl_scene *ss_timeline_get_scene(SsTimeline *self);
bool ss_timeline_scene_pending(SsTimeline *self);
void ss_timeline_scene_counts(SsTimeline *self, guint *requested, guint *received);

G_END_DECLS

#endif /* STALLSCOPE_SS_TIMELINE_H */
