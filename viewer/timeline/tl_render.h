/*
 * tl_render.h - draws a timeline scene into a GtkSnapshot. The window's
 * snapshot() and the headless --render-png path both call tl_render(), so a PNG
 * shows exactly what the window shows.
 *
 * viewer/timeline/ is the timeline shared by the window and --render-png:
 * reading what a view shows from the database with level of detail (tl_db.c,
 * tl_scene.c), the text of tooltips and panels (tl_query.c), layout and
 * navigation (tl_view.c), and drawing (this file, tl_canvas.c, tl_palette.c,
 * tl_ticks.c, tl_png.c). It uses GTK only for GtkSnapshot, GSK and Pango: no
 * widgets, no main loop, no threads of its own (a tl_db's connection serves
 * one thread at a time; the window's is its query worker's). It depends on
 * viewer/store and SQLite; viewer/app and the tests depend on it, never the
 * other way. Its read queries (tl_db.c's statements, tl_query.c, the scene
 * fetch) are to move to viewer/store/sqlite/ with the other named queries.
 */
#ifndef STALLSCOPE_TL_RENDER_H
#define STALLSCOPE_TL_RENDER_H

#include <gtk/gtk.h>

#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"

/* The font every timeline text uses, fixed so PNGs look the same everywhere. */
#define TL_FONT "Sans 9"

void tl_render(GtkSnapshot *s, PangoContext *pc, struct tl_db *db, const struct tl_layout *l,
	       const struct tl_scene *sc, const struct tl_view *v);

#endif /* STALLSCOPE_TL_RENDER_H */
