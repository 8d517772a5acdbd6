/*
 * ss_scene_fetch.c - see ss_scene_fetch.h. A job owns everything its thread
 * reads (a copy of the view and of the layout, the scene it fills), so nothing
 * of the widget is touched off the main thread, even while it is destroyed.
 */
#include "ss_scene_fetch.h"

#include <stdlib.h>
#include <string.h>

struct scene_job {
	struct tl_scene *sc;
	struct tl_layout l;
	struct tl_view v;
};

static void scene_destroy(struct tl_scene *sc)
{
	if (!sc)
		return;
	tl_scene_free(sc);
	g_free(sc);
}

static void job_free(void *p)
{
	struct scene_job *j = p;
	scene_destroy(j->sc);
	tl_layout_free(&j->l);
	g_free(j);
}

static void job_run(struct tl_db *db, void *p)
{
	struct scene_job *j = p;
	tl_scene_update(j->sc, db, &j->l, &j->v);
}

/* sc goes to the front of the recent scenes; the oldest, pushed out, becomes
 * the spare. */
static void remember(struct ss_scene_fetch *f, struct tl_scene *sc)
{
	if (!sc)
		return;
	struct tl_scene *out = f->recent[SS_SCENE_RECENT - 1];
	memmove(&f->recent[1], &f->recent[0], (SS_SCENE_RECENT - 1) * sizeof *f->recent);
	f->recent[0] = sc;
	if (out) {
		scene_destroy(f->spare);
		f->spare = out;
	}
}

static void job_done(void *p, void *user)
{
	struct scene_job *j = p;
	struct ss_scene_fetch *f = user;
	f->inflight = false;
	f->received++;
	remember(f, f->ready);
	f->ready = j->sc;
	j->sc = NULL;
	f->arrived(f->user);
}

static bool layout_copy(struct tl_layout *dst, const struct tl_layout *src, size_t n_groups)
{
	memset(dst, 0, sizeof *dst);
	dst->lane_y = g_memdup2(src->lane_y, (src->n_lanes ? src->n_lanes : 1) * sizeof *src->lane_y);
	dst->group_y = g_memdup2(src->group_y, (n_groups ? n_groups : 1) * sizeof *src->group_y);
	dst->n_lanes = src->n_lanes;
	dst->content_h = src->content_h;
	return dst->lane_y && dst->group_y;
}

void ss_scene_fetch_init(struct ss_scene_fetch *f, SsSession *session, void (*arrived)(void *user), void *user)
{
	memset(f, 0, sizeof *f);
	f->session = session;
	f->arrived = arrived;
	f->user = user;
}

void ss_scene_fetch_reset(struct ss_scene_fetch *f)
{
	ss_session_cancel(f->session, f);
	f->inflight = false;
	scene_destroy(f->ready);
	scene_destroy(f->spare);
	f->ready = f->spare = NULL;
	for (int i = 0; i < SS_SCENE_RECENT; i++) {
		scene_destroy(f->recent[i]);
		f->recent[i] = NULL;
	}
}

/* A recent scene built for exactly v becomes the ready one. */
static bool reuse(struct ss_scene_fetch *f, const struct tl_view *v)
{
	for (int i = 0; i < SS_SCENE_RECENT && f->recent[i]; i++) {
		if (!tl_scene_matches(f->recent[i], v))
			continue;
		struct tl_scene *hit = f->recent[i];
		memmove(&f->recent[i], &f->recent[i + 1], (SS_SCENE_RECENT - 1 - (size_t)i) * sizeof *f->recent);
		f->recent[SS_SCENE_RECENT - 1] = NULL;
		remember(f, f->ready);
		f->ready = hit;
		f->reused++;
		return true;
	}
	return false;
}

static bool same_request(const struct tl_view *a, const struct tl_view *b)
{
	return a->t0 == b->t0 && a->t1 == b->t1 && a->width == b->width && a->height == b->height &&
	       a->scroll_y == b->scroll_y && a->legend == b->legend &&
	       (a->color == TL_COLOR_CULPRIT) == (b->color == TL_COLOR_CULPRIT);
}

/* Whether the scene for a, drawn stretched onto b, shows most of b at nearly
 * its scale: then it is worth finishing before b is fetched. */
static bool covers(const struct tl_view *a, const struct tl_view *b)
{
	if (a->width != b->width || a->height != b->height || a->legend != b->legend ||
	    (a->color == TL_COLOR_CULPRIT) != (b->color == TL_COLOR_CULPRIT))
		return false;
	int64_t span_a = a->t1 - a->t0, span_b = b->t1 - b->t0;
	if (span_a > 2 * span_b || span_b > 2 * span_a)
		return false;
	int64_t lo = a->t0 > b->t0 ? a->t0 : b->t0, hi = a->t1 < b->t1 ? a->t1 : b->t1;
	int lanes_h = tl_view_plot_bottom(b) - TL_RULER_H;
	return hi - lo >= span_b / 2 && 2 * abs(a->scroll_y - b->scroll_y) <= lanes_h;
}

void ss_scene_fetch_want(struct ss_scene_fetch *f, const struct tl_layout *l, const struct tl_view *v)
{
	struct tl_db *db = ss_session_get_db(f->session);
	if (!db)
		return;
	if ((f->ready && tl_scene_matches(f->ready, v)) || reuse(f, v)) {
		/* Back where a scene was built: what is in flight is stale. */
		if (f->inflight)
			ss_session_cancel(f->session, f);
		f->inflight = false;
		return;
	}
	if (f->inflight && (same_request(&f->inflight_view, v) || covers(&f->inflight_view, v)))
		return;   /* on arrival the widget asks again, for the view it has then */
	struct scene_job *j = g_new0(struct scene_job, 1);
	j->v = *v;
	if (!layout_copy(&j->l, l, db->n_groups)) {
		job_free(j);
		return;
	}
	j->sc = f->spare ? f->spare : g_new0(struct tl_scene, 1);
	if (!f->spare)
		tl_scene_init(j->sc);
	f->spare = NULL;
	f->inflight = true;
	f->inflight_view = *v;
	f->requested++;
	ss_session_submit(f->session, f, job_run, job_done, j, job_free, f);
}
