/*
 * sv_flame.c - see sv_flame.h. The walk is an explicit stack (trees from a
 * damaged database may be deep) that places each child at its parent's x plus
 * the widths of its heavier siblings.
 */
#include "sv_flame.h"

#include <stdlib.h>
#include <string.h>

static struct sv_flame_box *push_box(struct sv_flame_layout *l)
{
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 256;
		struct sv_flame_box *nb = realloc(l->boxes, nc * sizeof *nb);
		if (!nb) {
			l->failed = true;
			return NULL;
		}
		l->boxes = nb;
		l->cap = nc;
	}
	struct sv_flame_box *b = &l->boxes[l->n++];
	memset(b, 0, sizeof *b);
	return b;
}

struct pending {
	uint32_t node;
	double x, w;
};

int sv_flame_layout(struct sv_flame_layout *l, const struct sv_tree *t, uint32_t zoom, double width)
{
	l->n = 0;
	l->rows = 0;
	l->failed = false;
	l->width = width;
	if (!t->n_nodes)
		return 0;
	if (zoom == SV_NONE || zoom >= t->n_nodes)
		zoom = 0;
	l->zoom = zoom;
	/* The ancestors, root first. */
	uint32_t depth = t->nodes[zoom].depth;
	for (uint32_t a = t->nodes[zoom].parent; a != SV_NONE; a = t->nodes[a].parent) {
		struct sv_flame_box *b = push_box(l);
		if (!b)
			return -1;
		*b = (struct sv_flame_box){ .node = a, .row = t->nodes[a].depth, .x = 0, .w = width, .ancestor = true };
	}
	l->rows = depth + 1;
	struct pending *stack = malloc((t->n_nodes + 1) * sizeof *stack);
	if (!stack) {
		l->failed = true;
		return -1;
	}
	size_t sp = 0;
	stack[sp++] = (struct pending){ zoom, 0, width };
	while (sp) {
		struct pending p = stack[--sp];
		const struct sv_node *n = &t->nodes[p.node];
		struct sv_flame_box *b = push_box(l);
		if (!b)
			break;
		*b = (struct sv_flame_box){ .node = p.node, .row = n->depth, .x = p.x, .w = p.w };
		if (n->depth + 1 > l->rows)
			l->rows = n->depth + 1;
		if (n->total <= 0)
			continue;
		double scale = p.w / (double)n->total, x = p.x;
		uint32_t folded = 0;
		int64_t fold_weight = 0;
		double fold_x = 0;
		for (uint32_t c = n->child; c != SV_NONE; c = t->nodes[c].next) {
			double w = (double)t->nodes[c].total * scale;
			if (w < SV_FLAME_MIN_PX || folded) {
				/* Children are heaviest first: the rest are narrower still. */
				if (!folded)
					fold_x = x;
				folded++;
				fold_weight = sv_add_sat(fold_weight, t->nodes[c].total);
				x += w;
				continue;
			}
			stack[sp++] = (struct pending){ c, x, w };
			x += w;
		}
		double fw = (double)fold_weight * scale;
		if (folded && fw >= 1.0) {
			struct sv_flame_box *f = push_box(l);
			if (!f)
				break;
			*f = (struct sv_flame_box){ .node = SV_NONE, .row = n->depth + 1, .folded = folded,
						    .weight = fold_weight, .x = fold_x, .w = fw };
			if (n->depth + 2 > l->rows)
				l->rows = n->depth + 2;
		}
	}
	free(stack);
	return l->failed ? -1 : 0;
}

void sv_flame_layout_free(struct sv_flame_layout *l)
{
	free(l->boxes);
	memset(l, 0, sizeof *l);
}

long sv_flame_hit(const struct sv_flame_layout *l, double x, uint32_t row)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct sv_flame_box *b = &l->boxes[i];
		if (b->row == row && x >= b->x && x < b->x + b->w)
			return (long)i;
	}
	return -1;
}

long sv_flame_box_of(const struct sv_flame_layout *l, uint32_t node)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->boxes[i].node == node)
			return (long)i;
	return -1;
}
