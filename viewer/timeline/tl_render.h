/*
 * tl_render.h - draws a timeline scene into a GtkSnapshot. The window's
 * snapshot() and the headless --render-png path both call tl_render(), so a PNG
 * shows exactly what the window shows.
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
