/*
 * gui_util.h - what the window tests under Xvfb (test_window.c, test_tour.c,
 * test_stacks_window.c) share: running the main loop until the window's work
 * is done, waiting for a paint, screenshots of a widget as the window's
 * renderer draws it, a query job that only an interrupt stops, and importing
 * a demo recording.
 */
#ifndef STALLSCOPE_TEST_GUI_UTIL_H
#define STALLSCOPE_TEST_GUI_UTIL_H

#include <gtk/gtk.h>
#include <stdbool.h>
#include <stdint.h>

#include "ss_window.h"
#include "tl_db.h"

/* Runs the main loop until the session's database work (on both workers) is
 * done and the scene for the current view has arrived; false after seconds
 * (a loaded machine wants many). */
bool gui_settle(SsWindow *win, int seconds);
/* Runs the main loop for ms milliseconds. */
void gui_spin(int ms);
/* strstr, saying on stderr what was looked for where when it fails. */
bool gui_contains(const char *hay, const char *needle);
/* Until the widget's window painted what it was asked to draw so far (at
 * most 10 s); false when it did not. */
bool gui_wait_paint(GtkWidget *w);
/* Saves w as OUTDIR/name (PNG) through the window's renderer; returns the
 * pixels of the opaque colour count_rgb (0xRRGGBB, within 3 a channel) in
 * it, -1 when nothing rendered. Exits 77 (SKIP) when SS_EXPECT_RENDERER is
 * "gl" and GTK renders otherwise. */
int gui_screenshot(GtkWidget *w, const char *outdir, const char *name, uint32_t count_rgb);

/* Runs the application on db with the default light theme (whatever the
 * developer's desktop uses); checks(app) runs once, 300 ms after the first
 * window appears, and must quit the application. Returns
 * g_application_run's status. */
int gui_run_window(const char *argv0, const char *db, GSourceFunc checks);

/* A query job (gui_slow_run) that runs until it is interrupted: its time
 * budget is 120 s, so only a cancellation stops it within a test's seconds.
 * started/finished are set atomically on the query thread, rc is the last
 * sqlite3_step's, end_us the monotonic time it ended; done_called is the
 * test's own (set by its done callback). */
struct gui_slow {
	gint started, finished;
	int rc;
	gint64 end_us;
	bool done_called;
};
void gui_slow_run(struct tl_db *db, void *p);
/* Imports DEMO_DIR/name into OUTDIR/PREFIX-name.db, whose path goes to out;
 * false (the reason on stderr, out empty) when it fails. */
bool gui_import_demo(const char *demo_dir, const char *outdir, const char *prefix, const char *name,
		     char *out, size_t len);

#endif /* STALLSCOPE_TEST_GUI_UTIL_H */
