/*
 * test_stacks_window.c - the stack views in the window, under a real
 * (virtual) X server:
 *  - on the small fixture, the CPU flame graph follows the session: the
 *    whole trace, then a range selection, a poll, a stall, a task and a
 *    worker, each with the samples the fixture put there; the off-CPU graph
 *    computes only once its tab is shown; search covers a function's share;
 *    inverted and by-line trees; the call tree's caller/callee of a function;
 *    a pinned baseline gives a diff;
 *  - every result was computed on the query worker, never the main thread,
 *    and while a slow query holds the worker the window keeps drawing and the
 *    panel keeps its last graph, marked as being recomputed;
 *  - on the long-poll demo, culprit_spin_long_poll is the widest frame under
 *    long_poll_task_body, a range around the longest poll is mostly culprit,
 *    and comparing with the steady demo marks it as grown;
 *  - screenshots of the window with each stack view in front.
 * usage: test_stacks_window SCHEMA.sql OUTDIR DEMO_DIR  (run by test_window.sh)
 */
#include <gtk/gtk.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "gui_util.h"
#include "soft_check.h"
#include "ss_app.h"
#include "ss_flame.h"
#include "ss_source.h"
#include "ss_stack_panel.h"
#include "ss_tree.h"
#include "ss_window.h"

static const char *outdir, *demo_dir;
static char demo_db[4096], steady_db[4096];

#define MS INT64_C(1000000)

/* Until the worker is idle and the panel has its result (20 s at most: a
 * loaded machine). */
static bool settle(SsWindow *win, GtkWidget *panel)
{
	SsSession *s = ss_window_get_session(win);
	gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
	while (g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		if (ss_session_idle(s) && (!panel || !ss_stack_panel_pending(panel)))
			return true;
		g_usleep(1000);
	}
	return false;
}

static struct ss_stack_result *result(SsWindow *win, GtkWidget *panel, const char *what)
{
	CHECK(settle(win, panel), "%s: the panel's result arrived", what);
	return ss_stack_panel_get_result(panel);
}

static int64_t total(const struct ss_stack_result *r)
{
	return r ? r->prof->total_weight : -1;
}

static uint32_t node_named(const struct sv_tree *t, const char *name)
{
	uint32_t sym = sv_tree_find_sym(t, name);
	return sym == SV_NONE ? SV_NONE : sv_tree_find_node(t, sym);
}

static void screenshot(GtkWidget *w, const char *name)
{
	gui_screenshot(w, outdir, name, 0);
}

static void quick_run(struct tl_db *db, void *p)
{
	(void)db;
	(void)p;
}

static void fixture_checks(SsWindow *win)
{
	SsSession *session = ss_window_get_session(win);
	SsTimeline *tl = ss_window_get_timeline(win);
	struct tl_db *db = ss_session_get_db(session);
	GtkWidget *flame = ss_window_get_panel(win, "flame"), *off = ss_window_get_panel(win, "offcpu"),
		  *tree = ss_window_get_panel(win, "tree");
	CHECK(flame && off && tree, "the three stack panels are registered");
	if (!flame || !off || !tree || !db)
		return;
	/* The dock opens on the findings; the stack views compute only when in front. */
	ss_session_raise_panel(session, "flame");
	CHECK(!g_strcmp0(ss_window_get_front_dock_panel(win), "flame"), "the CPU flame graph is in front of the dock");

	struct ss_stack_result *r = result(win, flame, "whole trace");
	CHECK(r && r->scope.kind == SV_SCOPE_TRACE && total(r) == 370 * MS && r->prof->total_count == 370,
	      "the whole trace: 370 samples, got %lld", r ? (long long)r->prof->total_count : -1);
	/* A hidden tab computes nothing until it is shown. */
	guint c0, o0;
	ss_stack_panel_counts(off, &c0, &o0);
	CHECK(c0 == 0 && ss_stack_panel_pending(off), "the hidden off-CPU graph waits (%u computed)", c0);

	ss_timeline_select_range(tl, FX_MS(100), FX_MS(200));
	r = result(win, flame, "range");
	CHECK(r && r->scope.kind == SV_SCOPE_RANGE && total(r) == 70 * MS, "the range [100, 200) ms: %lld ns",
	      (long long)total(r));
	CHECK(r && strstr(r->title, "the range 100 ms"), "the heading names the range: %s", r ? r->title : "");

	ss_timeline_select_poll(tl, db->stalls[0].poll_id, 3);
	r = result(win, flame, "poll");
	CHECK(r && r->scope.kind == SV_SCOPE_POLL && total(r) == 110 * MS, "the stalled poll: 110 samples");
	char *text = ss_window_get_panel_text(win, "flame");
	CHECK(text && strstr(text, "sha256_block") && strstr(text, "poll "), "the panel's text: %s", text ? text : "");
	g_free(text);

	ss_session_select(session, SS_SEL_STALL, 1, 0);
	r = result(win, flame, "stall");
	CHECK(r && r->scope.kind == SV_SCOPE_STALL && total(r) == 110 * MS, "stall 1");
	ss_session_select(session, SS_SEL_TASK, 3, 0);
	r = result(win, flame, "task");
	CHECK(r && r->scope.kind == SV_SCOPE_TASK && total(r) == 110 * MS, "task 3");
	ss_session_select(session, SS_SEL_WORKER, 1, 0);
	r = result(win, flame, "worker");
	CHECK(r && r->scope.kind == SV_SCOPE_WORKER && total(r) == 170 * MS, "worker 1: 170 samples");

	/* The range chosen after the worker wins, and back. */
	ss_timeline_select_range(tl, FX_MS(100), FX_MS(250));
	r = result(win, flame, "range again");
	CHECK(r && r->scope.kind == SV_SCOPE_RANGE, "the range selected last is the scope");
	ss_session_select(session, SS_SEL_WORKER, 1, 0);
	ss_session_select(session, SS_SEL_NONE, 0, 0);
	r = result(win, flame, "nothing selected");
	CHECK(r && r->scope.kind == SV_SCOPE_RANGE, "without a selection the range is the scope");
	ss_session_select(session, SS_SEL_WORKER, 1, 0);
	r = result(win, flame, "worker again");

	/* Search: sha256_block is 110 of the worker's 170 ms. */
	ss_stack_panel_set_search(flame, "SHA256");
	CHECK(ss_stack_panel_get_matched(flame) == 110 * MS, "the search covers sha256_block: %lld",
	      (long long)ss_stack_panel_get_matched(flame));
	screenshot(GTK_WIDGET(win), "stacks-window-search.png");
	ss_stack_panel_set_search(flame, "");
	CHECK(ss_stack_panel_get_matched(flame) == 0, "an empty search matches nothing");

	/* A click zooms in, the tooltip says what a frame costs. */
	r = ss_stack_panel_get_result(flame);
	uint32_t sha = r ? node_named(&r->tree, "sha256_block") : SV_NONE;
	CHECK(sha != SV_NONE, "sha256_block in the worker's graph");
	if (sha != SV_NONE) {
		ss_flame_panel_zoom(flame, r->tree.nodes[sha].parent);
		uint32_t zoom;
		const struct sv_flame_layout *l = ss_flame_panel_layout(flame, &zoom);
		long b = sv_flame_box_of(l, r->tree.nodes[sha].parent);
		CHECK(zoom == r->tree.nodes[sha].parent && b >= 0 && l->boxes[b].w >= l->width - 1,
		      "the zoomed frame spans the width");
		char *tip = ss_flame_panel_tooltip(flame, sha);
		CHECK(tip && strstr(tip, "110 samples") && strstr(tip, "65% of the scope") && strstr(tip, "src/sha.c:77"),
		      "tooltip: %s", tip ? tip : "");
		g_free(tip);
		ss_flame_panel_zoom(flame, 0);
	}

	/* Inverted: the leaf functions first; by line: file:line labels. */
	ss_stack_panel_set_inverted(flame, true);
	r = result(win, flame, "inverted");
	char l[256] = "";
	if (r && r->tree.nodes[0].child != SV_NONE)
		sv_tree_label(&r->tree, r->tree.nodes[0].child, l, sizeof l);
	CHECK(r && r->mode == SV_BOTTOM_UP && !strcmp(l, "sha256_block"), "inverted, the heaviest leaf first: %s", l);
	ss_stack_panel_set_inverted(flame, false);
	ss_stack_panel_set_group(flame, SV_GROUP_LINE);
	r = result(win, flame, "by line");
	CHECK(r && node_named(&r->tree, "sha256_block") != SV_NONE, "by line");
	if (r) {
		sv_tree_label(&r->tree, node_named(&r->tree, "sha256_block"), l, sizeof l);
		CHECK(!strcmp(l, "sha256_block (sha.c:77)"), "a by-line label: %s", l);
	}
	ss_stack_panel_set_group(flame, SV_GROUP_FUNCTION);
	r = result(win, flame, "by function");

	/* A pinned baseline: the worker against the whole trace. */
	ss_stack_panel_pin_baseline(flame);
	ss_session_select(session, SS_SEL_POLL, db->stalls[0].poll_id, 3);
	r = result(win, flame, "diff");
	sha = r ? node_named(&r->tree, "sha256_block") : SV_NONE;
	CHECK(r && r->base && sha != SV_NONE && sv_tree_delta(&r->tree, sha) > 30,
	      "the poll against the pinned worker: sha256_block grew (%.1f points)",
	      r && sha != SV_NONE ? sv_tree_delta(&r->tree, sha) : 0);
	screenshot(GTK_WIDGET(win), "stacks-window-diff.png");
	ss_stack_panel_clear_baseline(flame);
	r = result(win, flame, "no diff");
	CHECK(r && !r->base, "comparing stopped");

	/* The off-CPU graph, once shown. */
	ss_session_raise_panel(session, "offcpu");
	r = result(win, off, "off-CPU");
	CHECK(!strcmp(ss_window_get_front_dock_panel(win), "offcpu"), "the off-CPU graph in front");
	CHECK(r && r->scope.kind == SV_SCOPE_POLL && total(r) == 90 * MS, "off CPU in the stalled poll: %lld",
	      (long long)total(r));
	screenshot(GTK_WIDGET(win), "stacks-window-offcpu.png");

	/* The call tree and the caller/callee of a function. */
	ss_session_raise_panel(session, "tree");
	ss_session_select(session, SS_SEL_WORKER, 1, 0);
	r = result(win, tree, "tree");
	CHECK(r && total(r) == 170 * MS && ss_tree_panel_rows(tree) >= 3, "the worker's tree: %u rows",
	      ss_tree_panel_rows(tree));
	sha = r ? node_named(&r->tree, "sha256_block") : SV_NONE;
	CHECK(sha != SV_NONE && ss_tree_panel_select(tree, sha), "sha256_block's row selected");
	CHECK(settle(win, tree), "caller/callee computed");
	char *focus = ss_tree_panel_focus_text(tree);
	CHECK(focus && strstr(focus, "sha256_block") && strstr(focus, "callers: compute_hash") &&
		      strstr(focus, "src/sha.c:77"),
	      "caller/callee of sha256_block: %s", focus ? focus : "");
	g_free(focus);
	screenshot(GTK_WIDGET(win), "stacks-window-tree.png");

	/* Never on the main thread. */
	guint computed = 0, off_main = 0, all = 0, all_off = 0;
	GtkWidget *panels[] = { flame, off, tree };
	for (int i = 0; i < 3; i++) {
		ss_stack_panel_counts(panels[i], &computed, &off_main);
		all += computed;
		all_off += off_main;
	}
	CHECK(all > 10 && all_off == all, "%u results, %u computed off the main thread", all, all_off);
	printf("stack results: %u, computed on the query worker: %u\n", all, all_off);

	/* A busy worker: the window keeps drawing, the panel keeps its graph. */
	ss_session_raise_panel(session, "flame");
	r = result(win, flame, "flame again");
	static int slow_key;
	struct gui_slow slow = { 0 };
	ss_session_submit(session, &slow_key, gui_slow_run, NULL, &slow, NULL, NULL);
	gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while (!g_atomic_int_get(&slow.started) && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, FALSE);
	struct ss_stack_result *before = ss_stack_panel_get_result(flame);
	guint f0 = ss_timeline_frames(tl);
	ss_timeline_select_range(tl, FX_MS(300), FX_MS(400));
	for (int i = 0; i < 10; i++) {
		gtk_widget_queue_draw(GTK_WIDGET(tl));
		gui_spin(30);
	}
	CHECK(ss_stack_panel_pending(flame), "the range's graph waits for the worker");
	CHECK(ss_stack_panel_get_result(flame) == before, "the last graph stays shown meanwhile");
	CHECK(ss_timeline_frames(tl) >= f0 + 5, "the window kept drawing: %u frames", ss_timeline_frames(tl) - f0);
	screenshot(GTK_WIDGET(win), "stacks-window-busy.png");
	ss_session_submit(session, &slow_key, quick_run, NULL, NULL, NULL, NULL);
	r = result(win, flame, "after the slow query");
	CHECK(g_atomic_int_get(&slow.finished) && slow.rc == SQLITE_INTERRUPT, "the slow query was interrupted");
	CHECK(r && r != before && r->scope.kind == SV_SCOPE_RANGE && total(r) == 50 * MS + 20 * MS,
	      "then the range's graph arrived: %lld", (long long)total(r));
}

static void demo_checks(SsWindow *win)
{
	SsSession *session = ss_window_get_session(win);
	SsTimeline *tl = ss_window_get_timeline(win);
	struct tl_db *db = ss_session_get_db(session);
	GtkWidget *flame = ss_window_get_panel(win, "flame");
	CHECK(db && strstr(db->path, "long-poll"), "the demo is open");
	if (!db)
		return;
	ss_session_raise_panel(session, "flame");
	struct ss_stack_result *r = result(win, flame, "demo");
	uint32_t body = r ? node_named(&r->tree, "long_poll_task_body") : SV_NONE;
	uint32_t cul = r ? node_named(&r->tree, "culprit_spin_long_poll") : SV_NONE;
	CHECK(body != SV_NONE && cul != SV_NONE && r->tree.nodes[cul].parent == body, "the culprit under the task body");
	if (body != SV_NONE && cul != SV_NONE) {
		const struct sv_flame_layout *l = ss_flame_panel_layout(flame, NULL);
		long bb = sv_flame_box_of(l, body), bc = sv_flame_box_of(l, cul);
		CHECK(bb >= 0 && bc >= 0 && l->boxes[bc].w >= 0.9 * l->boxes[bb].w, "nearly as wide as the body");
		for (size_t i = 0; bc >= 0 && i < l->n; i++)
			if (l->boxes[i].row == l->boxes[bc].row && (long)i != bc)
				CHECK(l->boxes[i].w < l->boxes[bc].w, "the widest frame of its row");
	}
	screenshot(GTK_WIDGET(win), "stacks-window-demo.png");
	double whole = r && cul != SV_NONE ? (double)r->tree.nodes[cul].total / (double)total(r) : 0;

	/* A range around the longest poll: the scope follows it. */
	sqlite3 *q;
	int64_t ts = 0, dur = 0;
	if (sqlite3_open_v2(db->path, &q, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *st;
		sqlite3_prepare_v2(q, "SELECT ts, dur FROM polls ORDER BY dur DESC LIMIT 1", -1, &st, NULL);
		if (sqlite3_step(st) == SQLITE_ROW) {
			ts = sqlite3_column_int64(st, 0);
			dur = sqlite3_column_int64(st, 1);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(q);
	ss_timeline_select_range(tl, ts, ts + dur);
	r = result(win, flame, "demo range");
	cul = r ? node_named(&r->tree, "culprit_spin_long_poll") : SV_NONE;
	double in_range = cul != SV_NONE ? (double)r->tree.nodes[cul].total / (double)total(r) : 0;
	CHECK(r && r->scope.kind == SV_SCOPE_RANGE && in_range > 0.6, "the range is %.0f%% culprit (the trace %.0f%%)",
	      100 * in_range, 100 * whole);
	screenshot(GTK_WIDGET(win), "stacks-window-demo-range.png");

	/* Compared with the steady demo's whole trace: the culprit grew. */
	ss_timeline_select_range(tl, 0, 0);
	ss_session_select(session, SS_SEL_NONE, 0, 0);
	ss_stack_panel_compare_db(flame, steady_db);
	r = result(win, flame, "demo diff");
	cul = r ? node_named(&r->tree, "culprit_spin_long_poll") : SV_NONE;
	CHECK(r && r->base && cul != SV_NONE && sv_tree_delta(&r->tree, cul) > 30, "against steady, the culprit grew");
	CHECK(r && strstr(r->base_name, "steady"), "the baseline is named: %s", r ? r->base_name : "");
	screenshot(GTK_WIDGET(win), "stacks-window-demo-diff.png");
	ss_stack_panel_clear_baseline(flame);
}

static void on_opened(SsWindow *win, gboolean ok, gpointer data)
{
	(void)win;
	*(int *)data = ok ? 1 : -1;
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
	gtk_window_set_default_size(GTK_WINDOW(win), 1400, 900);
	gui_spin(500);
	settle(win, NULL);
	CHECK(ss_session_get_db(ss_window_get_session(win)) != NULL, "the fixture opened");
	if (ss_session_get_db(ss_window_get_session(win)))
		fixture_checks(win);
	if (demo_db[0]) {
		int opened = 0;
		gulong h = g_signal_connect(win, "opened", G_CALLBACK(on_opened), &opened);
		const char *paths[] = { demo_db };
		ss_window_open_paths(win, paths, 1);
		gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
		while (!opened && g_get_monotonic_time() < end)
			g_main_context_iteration(NULL, TRUE);
		g_signal_handler_disconnect(win, h);
		CHECK(opened == 1, "the demo opened");
		if (opened == 1)
			demo_checks(win);
	}
	gtk_window_destroy(GTK_WINDOW(win));
	g_application_quit(G_APPLICATION(app));
	return G_SOURCE_REMOVE;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: test_stacks_window SCHEMA.sql OUTDIR DEMO_DIR\n");
		return 2;
	}
	outdir = argv[2];
	demo_dir = argv[3];
	g_mkdir_with_parents(outdir, 0755);
	char dbp[4096];
	snprintf(dbp, sizeof dbp, "%s/stacks-window-fixture.db", outdir);
	if (fixture_build_small(dbp, argv[1]) != 0)
		return 1;
	bool imported = gui_import_demo(demo_dir, outdir, "stacks-window", "long-poll", demo_db, sizeof demo_db) &&
			gui_import_demo(demo_dir, outdir, "stacks-window", "steady", steady_db, sizeof steady_db);
	CHECK(imported, "import of the long-poll and steady demos");
	if (!imported)
		demo_db[0] = 0;
	int rc = gui_run_window(argv[0], dbp, run_checks);
	if (rc != 0)
		return rc;
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("stack views in the window: all checks passed\n");
	return 0;
}
