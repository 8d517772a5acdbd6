/*
 * gui_util.h - what the window tests under Xvfb (test_window.c, test_tour.c,
 * test_stacks_window.c) share: running the main loop until the window's work
 * is done, waiting for a paint, and screenshots of a widget as the window's
 * renderer draws it.
 */
#ifndef STALLSCOPE_TEST_GUI_UTIL_H
#define STALLSCOPE_TEST_GUI_UTIL_H

#include <gtk/gtk.h>
#include <stdbool.h>
#include <stdint.h>

#include "ss_window.h"

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

#endif /* STALLSCOPE_TEST_GUI_UTIL_H */
