/*
 * sv_flame.h - the layout of a flame graph drawn as an icicle: the root at
 * the top, each row one call deeper, a frame as wide as its share of its
 * parent. Zoomed into a node, that node spans the width, its ancestors are
 * full-width rows above it (to click back up), and its descendants scale
 * with it. As in Tracy, children too narrow to draw (under SV_FLAME_MIN_PX)
 * are folded into one box that says how many it holds; a fold narrower than
 * a pixel is left out.
 *
 * Plain C (no GTK): the window and the headless PNG draw the same layout
 * (sv_draw.h), and the tests read its boxes.
 */
#ifndef STALLSCOPE_SV_FLAME_H
#define STALLSCOPE_SV_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sv_tree.h"

#define SV_FLAME_MIN_PX 2.0

struct sv_flame_box {
	uint32_t node;      /* SV_NONE: a fold of narrow siblings */
	uint32_t row;       /* 0 = the root's */
	uint32_t folded;    /* nodes a fold stands for */
	int64_t weight;     /* a fold's total */
	double x, w;        /* px from the left edge */
	bool ancestor;      /* above the zoomed node: drawn full width, dimmed */
};

struct sv_flame_layout {
	struct sv_flame_box *boxes;
	size_t n, cap;
	uint32_t rows;      /* rows in use */
	uint32_t zoom;      /* the node spanning the width (0: the root) */
	double width;
	bool failed;
};

/* Lays t out in width px, zoomed into node zoom (0 or SV_NONE: the root).
 * Replaces what l held. Returns 0, or -1 when memory ran out. */
int sv_flame_layout(struct sv_flame_layout *l, const struct sv_tree *t, uint32_t zoom, double width);
void sv_flame_layout_free(struct sv_flame_layout *l);

/* The box under (x, row), -1 when none. */
long sv_flame_hit(const struct sv_flame_layout *l, double x, uint32_t row);
/* The box of a node, -1 when it is not drawn. */
long sv_flame_box_of(const struct sv_flame_layout *l, uint32_t node);

#endif /* STALLSCOPE_SV_FLAME_H */
