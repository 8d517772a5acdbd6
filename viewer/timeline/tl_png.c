/*
 * tl_png.c - the --render-png path. GtkSnapshot and GSK render nodes work
 * without a GdkDisplay; text goes through PangoCairo's font map directly, so
 * this runs on a server or in CI with neither X11 nor Wayland.
 */
#include "tl_png.h"

#include <gtk/gtk.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <string.h>

#include "tl_render.h"

void tl_png_view(struct tl_db *db, const struct tl_png_options *o, struct tl_view *v,
		 const struct tl_layout *l)
{
	memset(v, 0, sizeof *v);
	v->width = o->width > TL_LABEL_W + 100 ? o->width : 1200;
	v->legend = true;
	v->height = o->height > TL_RULER_H ? o->height : TL_RULER_H + l->content_h + TL_LEGEND_H;
	v->color = o->color;
	v->raster = o->raster;
	v->dark = o->dark;
	if (o->to > o->from)
		tl_view_set_range(v, db, db->first_ts + o->from, db->first_ts + o->to);
	else
		tl_view_fit(v, db);
}

cairo_surface_t *tl_png_render_surface(struct tl_db *db, const struct tl_png_options *o,
				       struct tl_view *view_out)
{
	struct tl_layout l;
	tl_layout_compute(&l, db);
	struct tl_view v;
	tl_png_view(db, o, &v, &l);
	struct tl_scene sc;
	tl_scene_init(&sc);
	tl_scene_update(&sc, db, &l, &v);

	/* GSK registers its render node types in gtk_init(), which needs a display;
	 * asking for one node type registers them all (GSK_DEFINE_RENDER_NODE_TYPE
	 * calls gsk_render_node_init_types()). */
	g_type_ensure(gsk_color_node_get_type());
	PangoContext *pc = pango_font_map_create_context(pango_cairo_font_map_get_default());
	GtkSnapshot *s = gtk_snapshot_new();
	tl_render(s, pc, db, &l, &sc, &v);
	GskRenderNode *node = gtk_snapshot_free_to_node(s);

	cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, v.width, v.height);
	cairo_t *cr = cairo_create(surf);
	if (node)
		gsk_render_node_draw(node, cr);
	cairo_destroy(cr);
	cairo_surface_flush(surf);

	if (node)
		gsk_render_node_unref(node);
	g_object_unref(pc);
	tl_scene_free(&sc);
	tl_layout_free(&l);
	if (view_out)
		*view_out = v;
	if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(surf);
		return NULL;
	}
	return surf;
}

int tl_png_render(struct tl_db *db, const struct tl_png_options *o, const char *path,
		  char *err, size_t errlen)
{
	cairo_surface_t *surf = tl_png_render_surface(db, o, NULL);
	if (!surf) {
		snprintf(err, errlen, "cannot create a %dx%d image", o->width, o->height);
		return -1;
	}
	cairo_status_t st = cairo_surface_write_to_png(surf, path);
	cairo_surface_destroy(surf);
	if (st != CAIRO_STATUS_SUCCESS) {
		snprintf(err, errlen, "%s: %s", path, cairo_status_to_string(st));
		return -1;
	}
	return 0;
}
