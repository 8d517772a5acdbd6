/*
 * ss_flame.h - the flame graph panels (ss_flame.c), seen from the tests: the
 * layout drawn last, the zoom, and the tooltip of a frame.
 */
#ifndef STALLSCOPE_SS_FLAME_H
#define STALLSCOPE_SS_FLAME_H

#include <gtk/gtk.h>

#include "ss_stack_panel.h"
#include "sv_flame.h"

/* The layout of a flame panel's view (node indexes of its result's tree)
 * and the zoomed node (*zoom, 0: none). */
const struct sv_flame_layout *ss_flame_panel_layout(GtkWidget *panel, uint32_t *zoom);
/* Zooms as a click on node does (0: out). */
void ss_flame_panel_zoom(GtkWidget *panel, uint32_t node);
/* A node's tooltip (Pango markup); g_free() it. NULL without a result. */
char *ss_flame_panel_tooltip(GtkWidget *panel, uint32_t node);

#endif /* STALLSCOPE_SS_FLAME_H */
