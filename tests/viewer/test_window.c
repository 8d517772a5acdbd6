/*
 * test_window.c - the window on the fixture, under a real (virtual) X server:
 * opens the trace through the application's "open" path, zooms, pans and walks
 * the view history through the actions (as the keyboard and header bar do),
 * selects a stall in the stalls panel and checks that the timeline moved there
 * and that the Details panel shows its backtraces; checks a poll's tooltip;
 * selects a poll, a task, a worker and a range and checks their panels; saves
 * screenshots of the window.
 *
 * Then the query worker: while a deliberately slow query holds it, the window
 * keeps drawing frames (the last scene, stretched onto the new view), a scene
 * request that a newer view supersedes is dropped unrun and never drawn, the
 * slow query is interrupted (sqlite3_interrupt) when a newer job under its key
 * supersedes it, and closing the window interrupts a running query at once.
 * The slow query would run for minutes under a 120 s budget, so only the
 * interrupt can make it return within the seconds the checks allow.
 * usage: test_window SCHEMA.sql OUTDIR   (run by test_window.sh under xvfb-run)
 */
#include <gtk/gtk.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "gui_util.h"
#include "ss_app.h"
#include "ss_window.h"
#include "soft_check.h"

static const char *outdir;

/* At most 20 s: a loaded machine. */
static bool settle(SsWindow *win)
{
	return gui_settle(win, 20);
}

/* The slow query's done callback (on the main loop). */
static void slow_done(void *p, void *user)
{
	(void)user;
	((struct gui_slow *)p)->done_called = true;
}

static bool wait_started(struct gui_slow *s)
{
	gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while (!g_atomic_int_get(&s->started) && g_get_monotonic_time() < end) {
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
	return g_atomic_int_get(&s->started);
}

static void quick_run(struct tl_db *db, void *p)
{
	(void)db;
	(void)p;
}

static void quick_done(void *p, void *user)
{
	(void)user;
	*(bool *)p = true;
}

static char *panel_text(SsWindow *win, const char *id)
{
	CHECK(settle(win), "the %s panel's query finished", id);
	return ss_window_get_panel_text(win, id);
}

/* The pixels of the light theme's "busy" summary colour (the lanes' canvas)
 * in the screenshot, -1 when nothing rendered. */
static int screenshot(GtkWidget *w, const char *name)
{
	return gui_screenshot(w, outdir, name, 0x3c6fc0);
}

static gboolean run_checks(gpointer data)
{
	GtkApplication *app = data;
	GList *wins = gtk_application_get_windows(app);
	CHECK(wins != NULL, "a window opened");
	if (!wins) {
		g_application_quit(G_APPLICATION(app));
		return G_SOURCE_REMOVE;
	}
	SsWindow *win = SS_WINDOW(wins->data);
	gui_spin(500);
	CHECK(settle(win), "the first scene arrived");
	SsTimeline *tl = ss_window_get_timeline(win);
	struct tl_db *db = ss_timeline_get_db(tl);
	CHECK(db != NULL, "trace opened (error: %s)", ss_window_get_error(win) ? ss_window_get_error(win) : "none");
	if (!db) {
		g_application_quit(G_APPLICATION(app));
		return G_SOURCE_REMOVE;
	}
	CHECK(db->n_lanes == 4, "4 lanes, got %zu", db->n_lanes);
	CHECK(ss_timeline_frames(tl) > 0, "the timeline was drawn");
	/* Zoomed out, the lanes are summary columns drawn through the canvas: its
	 * busy colour must reach the screen through this renderer. */
	int busy = screenshot(GTK_WIDGET(win), "window.png");
	CHECK(busy > 2000, "busy summary pixels on screen: %d", busy);
	printf("busy summary pixels on screen: %d\n", busy);

	const struct tl_view *v = ss_timeline_get_view(tl);
	CHECK(v->t0 <= db->first_ts && v->t1 >= db->last_ts, "fit shows the whole trace");
	int64_t d0 = v->t1 - v->t0, t0 = v->t0;
	GActionGroup *ag = ss_timeline_actions(tl);

	g_action_group_activate_action(ag, "zoom-in", NULL);
	int64_t d1 = v->t1 - v->t0;
	CHECK(d1 > d0 * 45 / 100 && d1 < d0 * 55 / 100, "zoom-in halves the window: %lld -> %lld", (long long)d0, (long long)d1);
	int64_t before_pan = v->t0;
	g_action_group_activate_action(ag, "pan-right", NULL);
	CHECK(v->t0 > before_pan, "pan-right shows later times");
	/* Through the window, as the header bar buttons do. */
	gtk_widget_activate_action(GTK_WIDGET(win), "tl.zoom-in", NULL);
	CHECK(v->t1 - v->t0 < d1 * 55 / 100, "tl.zoom-in from the window");
	g_action_group_activate_action(ag, "back", NULL);
	CHECK(v->t1 - v->t0 == d1, "back restores the previous zoom");
	g_action_group_activate_action(ag, "back", NULL);
	g_action_group_activate_action(ag, "back", NULL);
	CHECK(v->t0 == t0 && v->t1 - v->t0 == d0, "back to the start of the history");
	g_action_group_activate_action(ag, "forward", NULL);
	CHECK(v->t1 - v->t0 == d1, "forward");
	g_action_group_activate_action(ag, "fit", NULL);
	CHECK(v->t1 - v->t0 == d0, "fit");
	g_action_group_activate_action(ag, "zoom-out", NULL);
	g_action_group_activate_action(ag, "zoom-out", NULL);
	CHECK(v->t1 - v->t0 <= (db->last_ts - db->first_ts) * 11 / 10, "zoom-out is clamped near the whole trace");
	g_action_group_activate_action(ag, "color-by", g_variant_new_string("duration"));
	CHECK(v->color == TL_COLOR_DURATION, "color-by duration");
	g_action_group_activate_action(ag, "color-by", g_variant_new_string("location"));
	gui_spin(100);

	/* The stalls panel: one stall; selecting it moves the timeline there
	 * and shows the captures' backtraces. */
	SsStalls *stalls = ss_window_get_stalls(win);
	CHECK(ss_stalls_count(stalls) == 1, "one stall listed");
	ss_stalls_select_row(stalls, 0);
	gui_spin(200);
	CHECK(v->selected_stall == 1, "stall selected in the timeline");
	CHECK(v->t0 <= FX_MS(300) && v->t1 >= FX_MS(500) && v->t1 - v->t0 < 500000000, "the view moved to the stall: %lld..%lld",
	      (long long)(v->t0 - FX_BASE), (long long)(v->t1 - FX_BASE));
	char *text = panel_text(win, "details");
	CHECK(gui_contains(text, "STALL 1"), "stall title");
	CHECK(gui_contains(text, "compute_hash (hash.c:30)"), "stall location");
	CHECK(gui_contains(text, "200 ms"), "stall duration");
	CHECK(gui_contains(text, "CAPTURE 0") && gui_contains(text, "running"), "first capture");
	CHECK(gui_contains(text, "CAPTURE 1") && gui_contains(text, "blocked in syscall 0"), "second capture");
	CHECK(gui_contains(text, "#0  sha256_block (src/sha.c:77)"), "leaf frame with file:line");
	CHECK(gui_contains(text, "#2  main (src/main.c:5)"), "root frame");
	CHECK(gui_contains(text, "read (/usr/bin/demo+0x1f4: no debug info)"), "unsymbolized frame says why");
	g_free(text);
	screenshot(GTK_WIDGET(win), "window-stall.png");

	/* The tooltip of the stalled poll: fetched on the first hover, shown
	 * when GTK asks again. */
	struct tl_layout lay;
	tl_layout_compute(&lay, db);
	int tx = TL_LABEL_W + (int)tl_view_x(v, FX_MS(400)), ty = tl_view_lane_screen_y(v, &lay, 0) + TL_POLL_Y + 10;
	tl_layout_free(&lay);
	char *tip = ss_timeline_tooltip_at(tl, tx, ty);
	CHECK(tip == NULL, "no tooltip before its text arrived: %s", tip ? tip : "");
	g_free(tip);
	CHECK(settle(win), "the tooltip's query finished");
	tip = ss_timeline_tooltip_at(tl, tx, ty);
	CHECK(gui_contains(tip, "task 3 — compute_hash (hash.c:30)") && gui_contains(tip, "duration 200 ms"), "poll tooltip");
	g_free(tip);

	/* A poll: task, wake and delay, samples inside with stacks. */
	ss_timeline_select_poll(tl, db->stalls[0].poll_id, 3);
	text = panel_text(win, "details");
	CHECK(gui_contains(text, "task       3"), "poll's task");
	CHECK(gui_contains(text, "duration   200 ms"), "poll's duration");
	CHECK(gui_contains(text, "WOKEN at") && gui_contains(text, "rt-w1") && gui_contains(text, "delay 10.0 ms"), "wake and delay");
	CHECK(gui_contains(text, "SAMPLES inside: 110"), "samples inside (50 + 60 ms on CPU at 1 kHz)");
	CHECK(gui_contains(text, "sha256_block"), "sample stacks");
	CHECK(v->highlight_task == 3, "the task's polls are highlighted");
	g_free(text);

	CHECK(!strcmp(ss_window_get_front_panel(win), "details"), "a poll brings Details to the front");
	CHECK(v->selected_stall == 0, "selecting a poll ends the stall's selection");

	/* A range: per-worker busy / parked / off-CPU and top locations. */
	ss_timeline_select_range(tl, FX_MS(100), FX_MS(200));
	text = panel_text(win, "range");
	CHECK(gui_contains(text, "RANGE 100 ms"), "range title");
	CHECK(gui_contains(text, "w0  rt-w0           50.0%    50.0%    50.0%"), "w0 busy/parked/off-CPU");
	CHECK(gui_contains(text, "handle_request (server.c:10)"), "top location");
	g_free(text);
	CHECK(!strcmp(ss_window_get_front_panel(win), "range"), "a range brings Range to the front");
	CHECK(v->sel_t0 == FX_MS(100) && v->sel_t1 == FX_MS(200), "the range is drawn selected");

	/* A task and a worker (a click on its label), through the session. */
	SsSession *session = ss_window_get_session(win);
	ss_session_select(session, SS_SEL_TASK, 3, 0);
	text = panel_text(win, "details");
	CHECK(gui_contains(text, "TASK 3") && gui_contains(text, "compute_hash (hash.c:30)"), "task details");
	CHECK(gui_contains(text, "spawned    250.000 ms"), "task spawn time");
	CHECK(v->highlight_task == 3 && v->selected_poll == 0, "the task's polls are highlighted");
	g_free(text);
	ss_session_select(session, SS_SEL_WORKER, 1, 0);
	text = panel_text(win, "details");
	CHECK(gui_contains(text, "WORKER demo w0") && gui_contains(text, "'rt-w0' (tid 101)"), "worker details");
	CHECK(gui_contains(text, "polls      3, the longest 200 ms"), "worker's polls from the summaries");
	CHECK(gui_contains(text, "stalls     1"), "worker's stalls");
	CHECK(v->selected_worker == 1, "the worker's label is highlighted");
	g_free(text);
	screenshot(GTK_WIDGET(win), "window-worker.png");

	/* ---- the query worker ---- */
	g_action_group_activate_action(ag, "clear-selection", NULL);
	CHECK(v->sel_t1 <= v->sel_t0 && v->selected_worker == 0, "Escape clears the range and the selection");
	g_action_group_activate_action(ag, "fit", NULL);
	CHECK(settle(win), "the fit view's scene arrived");
	struct ss_worker *wk = ss_session_get_worker(session);
	static int slow_key;
	struct gui_slow slow = { 0 };
	ss_session_submit(session, &slow_key, gui_slow_run, slow_done, &slow, NULL, NULL);
	CHECK(wait_started(&slow), "the slow query started");
	struct ss_worker_stats s0 = ss_worker_get_stats(wk);
	guint req0, rec0, req1, rec1;
	ss_timeline_scene_counts(tl, &req0, &rec0);
	const struct tl_scene *sc0 = ss_timeline_get_scene(tl);
	int64_t sc0_t0 = sc0 ? sc0->t0 : -1, sc0_t1 = sc0 ? sc0->t1 : -1;
	guint f0 = ss_timeline_frames(tl);

	/* A jump while the worker is busy: the old scene is drawn stretched. */
	ss_timeline_show_range(tl, FX_MS(100), FX_MS(200));
	gui_spin(150);
	CHECK(ss_timeline_frames(tl) > f0, "a frame drawn while the slow query runs (%u -> %u)", f0,
	      ss_timeline_frames(tl));
	CHECK(ss_timeline_scene_pending(tl), "the new view's scene is waiting for the worker");
	CHECK(ss_timeline_get_scene(tl) == sc0 && sc0 && sc0->t0 == sc0_t0 && sc0->t1 == sc0_t1,
	      "the scene drawn is still the last one that arrived");
	int stretched = screenshot(GTK_WIDGET(win), "window-stretched.png");
	CHECK(stretched > 2000, "the zoomed-out scene drawn stretched onto the new view: %d busy pixels", stretched);

	/* Another jump supersedes that request before it ran. */
	ss_timeline_show_range(tl, FX_MS(600), FX_MS(700));
	struct ss_worker_stats s1 = ss_worker_get_stats(wk);
	CHECK(s1.superseded == s0.superseded + 1, "the stale scene request was dropped unrun (%u -> %u)",
	      s0.superseded, s1.superseded);
	/* The window keeps producing frames as long as something asks for them. */
	guint f1 = ss_timeline_frames(tl);
	for (int i = 0; i < 10; i++) {
		gtk_widget_queue_draw(GTK_WIDGET(tl));
		gui_spin(30);
	}
	CHECK(!g_atomic_int_get(&slow.finished), "the slow query still runs");
	CHECK(ss_timeline_frames(tl) >= f1 + 5, "frames kept coming while the query ran: %u", ss_timeline_frames(tl) - f1);

	/* A newer job under the slow query's key interrupts it. */
	bool quick = false;
	gint64 t_cancel = g_get_monotonic_time();
	ss_session_submit(session, &slow_key, quick_run, quick_done, &quick, NULL, NULL);
	CHECK(settle(win), "the worker got through the queue");
	CHECK(g_atomic_int_get(&slow.finished) && slow.rc == SQLITE_INTERRUPT, "the slow query was interrupted (rc %d)",
	      slow.rc);
	CHECK(slow.end_us - t_cancel < 2 * G_USEC_PER_SEC, "it stopped %.0f ms after the newer job came",
	      (double)(slow.end_us - t_cancel) / 1000);
	CHECK(!slow.done_called && quick, "only the newer job was delivered");
	struct ss_worker_stats s2 = ss_worker_get_stats(wk);
	CHECK(s2.interrupted == s0.interrupted + 1, "one running job interrupted (%u -> %u)", s0.interrupted,
	      s2.interrupted);
	ss_timeline_scene_counts(tl, &req1, &rec1);
	CHECK(req1 == req0 + 2 && rec1 == rec0 + 1, "two scenes requested, one received (%u, %u)", req1 - req0,
	      rec1 - rec0);
	const struct tl_scene *sc = ss_timeline_get_scene(tl);
	CHECK(sc && tl_scene_matches(sc, v) && v->t0 <= FX_MS(600) && v->t1 >= FX_MS(700),
	      "the scene drawn now is the latest view's");
	screenshot(GTK_WIDGET(win), "window-after.png");

	/* Closing the window interrupts what runs. */
	struct gui_slow last = { 0 };
	ss_session_submit(session, &slow_key, gui_slow_run, slow_done, &last, NULL, NULL);
	CHECK(wait_started(&last), "another slow query started");
	gint64 t_close = g_get_monotonic_time();
	gtk_window_destroy(GTK_WINDOW(win));
	gint64 closed = g_get_monotonic_time();
	CHECK(g_atomic_int_get(&last.finished) && last.rc == SQLITE_INTERRUPT, "closing interrupted the query (rc %d)",
	      last.rc);
	CHECK(closed - t_close < 2 * G_USEC_PER_SEC, "the window closed in %.0f ms", (double)(closed - t_close) / 1000);
	gui_spin(50);
	CHECK(!last.done_called, "no result delivered after the window closed");

	g_application_quit(G_APPLICATION(app));
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_window SCHEMA.sql OUTDIR\n");
		return 2;
	}
	outdir = argv[2];
	g_mkdir_with_parents(outdir, 0755);
	char dbp[4096];
	snprintf(dbp, sizeof dbp, "%s/window-fixture.db", outdir);
	if (fixture_build_small(dbp, argv[1]) != 0)
		return 1;
	int rc = gui_run_window(argv[0], dbp, run_checks);
	if (rc != 0)
		return rc;
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("window: all checks passed\n");
	return 0;
}
