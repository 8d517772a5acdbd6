/*
 * tl_png.h - headless rendering of a timeline to a PNG file: no display, no
 * Wayland, no GTK initialisation. The snapshot built by tl_render() becomes a
 * GskRenderNode that is drawn onto a cairo image surface.
 */
#ifndef STALLSCOPE_TL_PNG_H
#define STALLSCOPE_TL_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tl_db.h"
#include "tl_scene.h"
#include "tl_view.h"

struct tl_png_options {
	int width, height;          /* height 0: tall enough for every lane */
	int64_t from, to;           /* ns relative to the trace start; to <= from: whole trace */
	enum tl_color_mode color;
	bool dark;
	enum tl_raster raster;
};

/* Renders to path. Returns 0, or -1 with a message in err. */
int tl_png_render(struct tl_db *db, const struct tl_png_options *o, const char *path,
		  char *err, size_t errlen);

/* The same frame into a cairo image surface (the tests read its pixels).
 * The caller destroys the surface. NULL on failure. */
struct _cairo_surface *tl_png_render_surface(struct tl_db *db, const struct tl_png_options *o,
					     struct tl_view *view_out);

/* Builds the view a PNG of these options shows (for tests: time -> x). */
void tl_png_view(struct tl_db *db, const struct tl_png_options *o, struct tl_view *v,
		 const struct tl_layout *l);

#endif /* STALLSCOPE_TL_PNG_H */
