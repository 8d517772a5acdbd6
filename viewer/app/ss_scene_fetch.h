/*
 * ss_scene_fetch.h - the timeline's scenes, fetched on the session's query
 * worker: the last scene that arrived (what snapshot() draws, stretched onto
 * the current view), at most one request in flight, and the rule for when a
 * newer view supersedes it.
 *
 * While the user pans or zooms in small steps, the scene in flight is still
 * worth drawing (it covers most of the new view at nearly its scale), so it is
 * allowed to finish and the newest view is fetched right after it: every
 * fetch that completes is shown, even when each takes longer than the gap
 * between two input events. A view that the scene in flight would not cover
 * (a jump: fit, history, a stall, a resize) supersedes it: the worker drops
 * it, or interrupts it when it is running.
 *
 * The last few scenes are kept: a view the user comes back to (panning back
 * and forth, Back in the history, a zoom undone) is drawn from its scene at
 * once, without a query. A scene depends on the view's window, size, scroll
 * position and culprit colouring, and on the database and the layout; a new
 * database or layout resets the fetch, which drops them.
 */
#ifndef STALLSCOPE_SS_SCENE_FETCH_H
#define STALLSCOPE_SS_SCENE_FETCH_H

#include <stdbool.h>

#include "ss_session.h"
#include "tl_scene.h"
#include "tl_view.h"

#define SS_SCENE_RECENT 6

struct ss_scene_fetch {
	SsSession *session;           /* not owned */
	struct tl_scene *ready;       /* NULL until the first arrives */
	struct tl_scene *recent[SS_SCENE_RECENT]; /* the ones before, newest first */
	struct tl_scene *spare;       /* dropped from recent, reused by the next fetch */
	bool inflight;
	struct tl_view inflight_view;
	void (*arrived)(void *user);  /* main thread: a new ready scene */
	void *user;
	guint requested, received;
	guint reused;                 /* views drawn from a recent scene */
};

void ss_scene_fetch_init(struct ss_scene_fetch *f, SsSession *session, void (*arrived)(void *user), void *user);
/* Cancels what is in flight and frees the scenes (a new trace, or the end). */
void ss_scene_fetch_reset(struct ss_scene_fetch *f);
/* Makes sure a scene for v (with layout l) is ready or on its way. */
void ss_scene_fetch_want(struct ss_scene_fetch *f, const struct tl_layout *l, const struct tl_view *v);

#endif /* STALLSCOPE_SS_SCENE_FETCH_H */
