/*
 * gui_util.c - see gui_util.h.
 */
#include "gui_util.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_app.h"
#include "ss_source.h"

bool gui_settle(SsWindow *win, int seconds)
{
	SsSession *s = ss_window_get_session(win);
	SsTimeline *tl = ss_window_get_timeline(win);
	gint64 end = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
	while (g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		if (ss_session_idle(s) && !ss_timeline_scene_pending(tl))
			return true;
		g_usleep(1000);
	}
	return false;
}

void gui_spin(int ms)
{
	gint64 end = g_get_monotonic_time() + ms * 1000;
	while (g_get_monotonic_time() < end) {
		while (g_main_context_iteration(NULL, FALSE))
			;
		g_usleep(1000);
	}
}

bool gui_contains(const char *hay, const char *needle)
{
	bool ok = hay && strstr(hay, needle);
	if (!ok)
		fprintf(stderr, "  (looked for '%s' in:\n%s)\n", needle, hay ? hay : "(null)");
	return ok;
}

static void on_after_paint(GdkFrameClock *c, gpointer data)
{
	(void)c;
	*(bool *)data = true;
}

bool gui_wait_paint(GtkWidget *w)
{
	GdkFrameClock *clock = gtk_widget_get_frame_clock(w);
	if (!clock)
		return false;
	bool painted = false;
	gulong h = g_signal_connect(clock, "after-paint", G_CALLBACK(on_after_paint), &painted);
	gtk_widget_queue_draw(w);
	gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while (!painted && g_get_monotonic_time() < end)
		g_main_context_iteration(NULL, TRUE);
	g_signal_handler_disconnect(clock, h);
	return painted;
}

static int count_color(GdkTexture *t, uint32_t rgb)
{
	int w = gdk_texture_get_width(t), h = gdk_texture_get_height(t), n = 0;
	guchar *px = g_malloc((gsize)w * (gsize)h * 4);
	gdk_texture_download(t, px, (gsize)w * 4); /* B, G, R, A in memory */
	for (gsize i = 0; i < (gsize)w * (gsize)h; i++) {
		const guchar *q = px + i * 4;
		n += abs(q[2] - (int)(rgb >> 16 & 255)) <= 3 && abs(q[1] - (int)(rgb >> 8 & 255)) <= 3 &&
		     abs(q[0] - (int)(rgb & 255)) <= 3;
	}
	g_free(px);
	return n;
}

int gui_screenshot(GtkWidget *w, const char *outdir, const char *name, uint32_t count_rgb)
{
	int n = -1;
	gui_wait_paint(w);
	GdkPaintable *p = gtk_widget_paintable_new(w);
	int width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
	GtkSnapshot *s = gtk_snapshot_new();
	gdk_paintable_snapshot(p, s, width, height);
	GskRenderNode *node = gtk_snapshot_free_to_node(s);
	GskRenderer *r = gtk_native_get_renderer(GTK_NATIVE(w));
	const char *want = g_getenv("SS_EXPECT_RENDERER");
	if (r && want && strcmp(want, "gl") == 0 && !strstr(G_OBJECT_TYPE_NAME(r), "GL")) {
		printf("SKIP: GSK_RENDERER=gl, but GTK renders with %s here (no usable GL: libgl1-mesa-dri?)\n",
		       G_OBJECT_TYPE_NAME(r));
		exit(77);
	}
	if (node && r) {
		printf("screenshot %s/%s through %s\n", outdir, name, G_OBJECT_TYPE_NAME(r));
		GdkTexture *t = gsk_renderer_render_texture(r, node, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", outdir, name);
		gdk_texture_save_to_png(t, path);
		n = count_color(t, count_rgb);
		g_object_unref(t);
	}
	if (node)
		gsk_render_node_unref(node);
	g_object_unref(p);
	return n;
}

void gui_slow_run(struct tl_db *db, void *p)
{
	struct gui_slow *s = p;
	tl_db_arm(db, 120);
	g_atomic_int_set(&s->started, 1);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db->db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
					    " WHERE x < 4000000000) SELECT count(*) FROM c", -1, &st, NULL);
	if (rc == SQLITE_OK) {
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		sqlite3_finalize(st);
	}
	s->rc = rc;
	s->end_us = g_get_monotonic_time();
	g_atomic_int_set(&s->finished, 1);
}

bool gui_import_demo(const char *demo_dir, const char *outdir, const char *prefix, const char *name,
		     char *out, size_t len)
{
	char segs[4096], err[2048];
	snprintf(segs, sizeof segs, "%s/%s", demo_dir, name);
	snprintf(out, len, "%s/%s-%s.db", outdir, prefix, name);
	g_unlink(out);
	const char *paths[] = { segs };
	if (ss_source_import(paths, 1, out, NULL, NULL, NULL, err, sizeof err) != 0) {
		fprintf(stderr, "FAIL: importing %s: %s\n", segs, err);
		out[0] = 0;
		return false;
	}
	return true;
}

static void on_window_added(GtkApplication *app, GtkWindow *w, gpointer data)
{
	(void)w;
	static bool once;
	if (!once) {
		once = true;
		g_timeout_add(300, (GSourceFunc)data, app);
	}
}

int gui_run_window(const char *argv0, const char *db, GSourceFunc checks)
{
	g_setenv("GTK_THEME", "Adwaita", TRUE);
	GtkApplication *app = ss_app_new();
	g_signal_connect(app, "window-added", G_CALLBACK(on_window_added), (gpointer)checks);
	char *args[] = { (char *)argv0, (char *)db, NULL };
	int rc = g_application_run(G_APPLICATION(app), 2, args);
	g_object_unref(app);
	return rc;
}
