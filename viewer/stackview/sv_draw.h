/*
 * sv_draw.h - drawing the stack views into a GtkSnapshot: a flame graph
 * (sv_flame.h's layout) and a call tree as a table with cost bars. The
 * window's widgets and the headless PNG (sv_png.h) call the same functions,
 * so a PNG shows what the window shows.
 *
 * viewer/stackview/ is the stack views' drawing (this file) and headless
 * PNGs (sv_png.h, `stallscope-viewer --render-png --view
 * flame|offcpu-flame|tree`), over the model in viewer/analysis/
 * (sv_profile.h); it may depend on the analysis, the store and the
 * timeline's database handle, and viewer/app/ depends on it.
 *
 * Colours say what the code is: warm (red to yellow, by name) for the
 * program's own code, blue for system and runtime libraries, violet for the
 * kernel, grey for pseudo frames ("[no stack]") and folds. With a search,
 * matches are magenta and everything else grey. In a diff, red is a call
 * path whose share grew against the baseline, blue one that shrank, the
 * deeper the more it changed; white is unchanged.
 *
 * Uses GTK only for GtkSnapshot, GSK and Pango: no widgets, no display.
 */
#ifndef STALLSCOPE_SV_DRAW_H
#define STALLSCOPE_SV_DRAW_H

#include <gtk/gtk.h>
#include <stdbool.h>
#include <stdint.h>

#include "sv_flame.h"
#include "sv_tree.h"

#define SV_ROW_H 18
#define SV_FONT "Sans 9"

struct sv_draw_style {
	bool dark;
	const uint8_t *match;    /* per node (sv_tree_search), NULL: no search */
	uint32_t hover;          /* node outlined, SV_NONE */
	uint32_t selected;       /* node outlined bolder, SV_NONE */
};

/* The fill of a node as the flame graph draws it. */
GdkRGBA sv_draw_node_color(const struct sv_tree *t, uint32_t node, const struct sv_draw_style *st);

/* The flame graph of l (laid out from t) with its top-left at (0, y0). */
void sv_draw_flame(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_flame_layout *l,
		   const struct sv_draw_style *st, float y0);

/* The rows a table shows: a depth-first walk that opens every node holding
 * at least min_share of the root's total, at most max rows. */
struct sv_table_row {
	uint32_t node;
	uint32_t indent;
	bool open, has_children;
};
size_t sv_table_rows(const struct sv_tree *t, double min_share, size_t max, struct sv_table_row *out);

/* A table of rows at (x, y0) in width px: Self and Total (time and share of
 * whole, with a bar; 0 is left blank) and the function, indented. self_col
 * false leaves the Self column out (bottom-up and callers trees, where it
 * equals Total). Returns the height drawn. */
float sv_draw_table(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_table_row *rows,
		    size_t n, bool self_col, int64_t whole, const struct sv_draw_style *st, float x, float y0,
		    float width);
/* Its height for n rows. */
float sv_table_height(size_t n);

/* One line of text at (x, y) in the views' font (bold when asked), at most
 * max_w px wide (0: no limit). Returns its width. */
int sv_draw_text(GtkSnapshot *s, PangoContext *pc, const char *text, float x, float y, const GdkRGBA *c, int max_w,
		 bool bold);

/* The legend of the flame graph's colours at (x, y): which it shows depends on
 * the tree (a diff) and the style (a search). Returns its width. */
int sv_draw_legend(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_draw_style *st,
		   float x, float y);

/* "12.3 ms" or "1.2 s" of ns, "83.4%" of a share. */
void sv_format_ns(char *buf, size_t len, int64_t ns);
void sv_format_share(char *buf, size_t len, int64_t part, int64_t whole);

#endif /* STALLSCOPE_SV_DRAW_H */
