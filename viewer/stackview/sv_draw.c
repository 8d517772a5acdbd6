/*
 * sv_draw.c - see sv_draw.h. A frame's colour is hashed from its function's
 * name, so a function keeps its colour across zoom levels, scopes and
 * screenshots; its kind picks the hue range.
 */
#include "sv_draw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tl_ticks.h"

static GdkRGBA rgb(double r, double g, double b)
{
	return (GdkRGBA){ (float)(r / 255), (float)(g / 255), (float)(b / 255), 1.f };
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static GdkRGBA kind_color(const char *name, int kind)
{
	uint64_t h = hash_str(name);
	double a = (double)(h & 0xff) / 255, b = (double)(h >> 8 & 0xff) / 255, c = (double)(h >> 16 & 0xff) / 255;
	switch (kind) {
	case SV_FRAME_OWN: /* flamegraph.pl's "hot" */
		return rgb(205 + 50 * a, 90 + 140 * b, 40 + 40 * c);
	case SV_FRAME_SYSTEM:
		return rgb(95 + 50 * a, 160 + 45 * a, 215 + 30 * b);
	case SV_FRAME_KERNEL:
		return rgb(170 + 30 * a, 150 + 30 * a, 215 + 25 * b);
	default:
		return rgb(190 + 15 * a, 190 + 15 * a, 190 + 15 * a);
	}
}

GdkRGBA sv_draw_node_color(const struct sv_tree *t, uint32_t node, const struct sv_draw_style *st)
{
	if (node >= t->n_nodes)
		return rgb(200, 200, 200);
	const struct sv_node *n = &t->nodes[node];
	if (st && st->match)
		return st->match[node] ? rgb(222, 64, 200) : rgb(214, 214, 214);
	if (t->base) {
		/* Colour by the change of this path's share, scaled by the largest. */
		double max = t->max_delta;
		double d = sv_tree_delta(t, node), k = max > 0 ? fmin(1.0, fabs(d) / max) : 0;
		if (fabs(d) < 0.05)
			k = 0;
		/* Unchanged is a light grey, so frames stay visible on white. */
		double hi = 236 + 19 * k, lo = 236 * (1 - 0.85 * k);
		return d >= 0 ? rgb(hi, lo, lo) : rgb(lo, lo, hi);
	}
	if (n->sym >= t->n_syms)
		return rgb(208, 208, 208);
	const struct sv_sym *sym = &t->syms[n->sym];
	return kind_color(sv_profile_str(t->p, sym->name), sym->kind);
}

int sv_draw_text(GtkSnapshot *s, PangoContext *pc, const char *text, float x, float y, const GdkRGBA *c, int max_w,
		 bool bold)
{
	PangoLayout *l = pango_layout_new(pc);
	PangoFontDescription *fd = pango_font_description_from_string(SV_FONT);
	if (bold)
		pango_font_description_set_weight(fd, PANGO_WEIGHT_BOLD);
	pango_layout_set_font_description(l, fd);
	pango_font_description_free(fd);
	pango_layout_set_text(l, text, -1);
	if (max_w > 0) {
		pango_layout_set_width(l, max_w * PANGO_SCALE);
		pango_layout_set_ellipsize(l, PANGO_ELLIPSIZE_END);
	}
	int w, h;
	pango_layout_get_pixel_size(l, &w, &h);
	gtk_snapshot_save(s);
	gtk_snapshot_translate(s, &GRAPHENE_POINT_INIT(x, y));
	gtk_snapshot_append_layout(s, l, c);
	gtk_snapshot_restore(s);
	g_object_unref(l);
	return w;
}

static void fill(GtkSnapshot *s, GdkRGBA c, double x, double y, double w, double h)
{
	gtk_snapshot_append_color(s, &c, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)w, (float)h));
}

static void outline(GtkSnapshot *s, GdkRGBA c, double x, double y, double w, double h, float bw)
{
	GskRoundedRect rr;
	gsk_rounded_rect_init_from_rect(&rr, &GRAPHENE_RECT_INIT((float)x, (float)y, (float)w, (float)h), 0);
	const float widths[4] = { bw, bw, bw, bw };
	const GdkRGBA colors[4] = { c, c, c, c };
	gtk_snapshot_append_border(s, &rr, widths, colors);
}

void sv_format_ns(char *buf, size_t len, int64_t ns)
{
	tl_format_duration(buf, len, ns, 0);
}

void sv_format_share(char *buf, size_t len, int64_t part, int64_t whole)
{
	double p = whole > 0 ? 100.0 * (double)part / (double)whole : 0;
	snprintf(buf, len, p >= 9.95 || p == 0 ? "%.0f%%" : "%.1f%%", p);
}

void sv_draw_flame(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_flame_layout *l,
		   const struct sv_draw_style *st, float y0)
{
	PangoLayout *pl = pango_layout_new(pc);
	PangoFontDescription *fd = pango_font_description_from_string(SV_FONT);
	pango_layout_set_font_description(pl, fd);
	pango_font_description_free(fd);
	pango_layout_set_ellipsize(pl, PANGO_ELLIPSIZE_END);
	const GdkRGBA ink = rgb(24, 24, 24), ink_light = rgb(255, 255, 255);
	const GdkRGBA edge = st->dark ? rgb(240, 240, 240) : rgb(20, 20, 20);
	for (size_t i = 0; i < l->n; i++) {
		const struct sv_flame_box *b = &l->boxes[i];
		double y = y0 + (double)b->row * SV_ROW_H;
		GdkRGBA c = b->node == SV_NONE ? rgb(175, 175, 175) : sv_draw_node_color(t, b->node, st);
		if (b->ancestor)
			c.alpha = 0.55f;
		/* A one-pixel gap between neighbours and rows, where there is room. */
		double w = b->w >= 3 ? b->w - 1 : b->w;
		fill(s, c, b->x, y, w, SV_ROW_H - 1);
		if (b->node != SV_NONE && (b->node == st->hover || b->node == st->selected))
			outline(s, edge, b->x, y, w, SV_ROW_H - 1, b->node == st->selected ? 2.f : 1.f);
		if (w < 22)
			continue;
		char label[512];
		if (b->node == SV_NONE) {
			snprintf(label, sizeof label, "%u more", b->folded);
		} else if (t->nodes[b->node].sym == SV_NONE) {
			/* The root of a whole tree says what it holds. */
			char d[48];
			sv_format_ns(d, sizeof d, t->nodes[b->node].total);
			snprintf(label, sizeof label, "all: %s, %lld %s", d, (long long)t->nodes[b->node].count,
				 t->p->kind == SV_KIND_CPU ? "samples" : "times off the CPU");
		} else {
			sv_tree_label(t, b->node, label, sizeof label);
		}
		pango_layout_set_text(pl, label, -1);
		pango_layout_set_width(pl, (int)(w - 6) * PANGO_SCALE);
		int tw, th;
		pango_layout_get_pixel_size(pl, &tw, &th);
		gtk_snapshot_save(s);
		gtk_snapshot_translate(s, &GRAPHENE_POINT_INIT((float)b->x + 3, (float)(y + (SV_ROW_H - 1 - th) / 2.0)));
		bool on_magenta = st->match && b->node != SV_NONE && st->match[b->node];
		gtk_snapshot_append_layout(s, pl, on_magenta ? &ink_light : &ink);
		gtk_snapshot_restore(s);
	}
	g_object_unref(pl);
}

size_t sv_table_rows(const struct sv_tree *t, double min_share, size_t max, struct sv_table_row *out)
{
	if (!t->n_nodes || !max)
		return 0;
	int64_t root = t->nodes[0].total;
	size_t n = 0;
	/* An explicit stack of the next sibling to visit at each depth. */
	uint32_t stack[600];
	size_t sp = 0;
	stack[sp++] = 0;
	while (sp && n < max) {
		uint32_t i = stack[--sp];
		const struct sv_node *nd = &t->nodes[i];
		if (nd->next != SV_NONE && i != 0)
			stack[sp++] = nd->next;
		bool open = nd->child != SV_NONE && (double)nd->total >= min_share * (double)root && sp + 1 < 600;
		out[n++] = (struct sv_table_row){ i, nd->depth, open, nd->child != SV_NONE };
		if (open)
			stack[sp++] = nd->child;
	}
	return n;
}

float sv_table_height(size_t n)
{
	return (float)(n + 1) * SV_ROW_H + 2;
}

float sv_draw_table(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_table_row *rows,
		    size_t n, bool self_col, int64_t whole, const struct sv_draw_style *st, float x, float y0,
		    float width)
{
	const GdkRGBA fg = st->dark ? rgb(235, 235, 235) : rgb(32, 32, 32);
	const GdkRGBA dim = st->dark ? rgb(160, 160, 160) : rgb(112, 112, 112);
	const GdkRGBA bar = st->dark ? rgb(150, 90, 40) : rgb(250, 200, 150);
	const GdkRGBA alt = st->dark ? rgb(36, 36, 36) : rgb(246, 246, 246);
	const GdkRGBA sel = st->dark ? rgb(40, 70, 110) : rgb(200, 222, 250);
	const float col_w = 132, pad = 6;
	float fx = x + (self_col ? 2 * col_w : col_w);
	int64_t root = whole;
	float y = y0;
	sv_draw_text(s, pc, self_col ? "Self" : "Cost", x + pad, y + 2, &dim, 0, true);
	if (self_col)
		sv_draw_text(s, pc, "Total", x + col_w + pad, y + 2, &dim, 0, true);
	sv_draw_text(s, pc, "Function", fx + pad, y + 2, &dim, 0, true);
	y += SV_ROW_H + 2;
	for (size_t i = 0; i < n; i++, y += SV_ROW_H) {
		const struct sv_node *nd = &t->nodes[rows[i].node];
		if (rows[i].node == st->selected)
			fill(s, sel, x, y, width, SV_ROW_H);
		else if (i % 2)
			fill(s, alt, x, y, width, SV_ROW_H);
		for (int c = 0; c < (self_col ? 2 : 1); c++) {
			int64_t v = self_col && c == 0 ? nd->self : nd->total;
			float cx = x + (float)c * col_w;
			double frac = root > 0 ? fmin(1.0, (double)v / (double)root) : 0;
			if (v <= 0)
				continue;
			fill(s, bar, cx + 2, y + 3, (col_w - 8) * frac, SV_ROW_H - 6);
			char d[48], p[16], cell[80];
			sv_format_ns(d, sizeof d, v);
			sv_format_share(p, sizeof p, v, root);
			snprintf(cell, sizeof cell, "%s  %s", d, p);
			sv_draw_text(s, pc, cell, cx + pad, y + 2, &fg, (int)(col_w - 2 * pad), false);
		}
		float ix = fx + pad + 14.f * (float)rows[i].indent;
		if (rows[i].has_children)
			sv_draw_text(s, pc, rows[i].open ? "\u25be" : "\u25b8", ix, y + 2, &dim, 0, false);
		char label[512];
		sv_tree_label(t, rows[i].node, label, sizeof label);
		GdkRGBA swatch = sv_draw_node_color(t, rows[i].node, st);
		fill(s, swatch, ix + 12, y + 4, 8, SV_ROW_H - 8);
		float lx = ix + 24;
		sv_draw_text(s, pc, label, lx, y + 2, &fg, (int)fmax(20, x + width - lx - pad), false);
	}
	return y - y0;
}

static int swatch(GtkSnapshot *s, PangoContext *pc, GdkRGBA c, const char *label, float x, float y, const GdkRGBA *fg)
{
	fill(s, c, x, y + 3, 14, SV_ROW_H - 7);
	outline(s, rgb(150, 150, 150), x, y + 3, 14, SV_ROW_H - 7, 1.f);
	return 18 + sv_draw_text(s, pc, label, x + 18, y + 1, fg, 0, false) + 14;
}

int sv_draw_legend(GtkSnapshot *s, PangoContext *pc, const struct sv_tree *t, const struct sv_draw_style *st,
		   float x, float y)
{
	const GdkRGBA fg = st->dark ? rgb(225, 225, 225) : rgb(48, 48, 48);
	float x0 = x;
	if (st->match) {
		x += (float)swatch(s, pc, rgb(222, 64, 200), "matches the search", x, y, &fg);
		x += (float)swatch(s, pc, rgb(214, 214, 214), "other frames", x, y, &fg);
	} else if (t->base) {
		x += (float)swatch(s, pc, rgb(255, 38, 38), "grew against the baseline", x, y, &fg);
		x += (float)swatch(s, pc, rgb(38, 38, 255), "shrank", x, y, &fg);
		x += (float)swatch(s, pc, rgb(236, 236, 236), "unchanged (share of each graph's total)", x, y, &fg);
	} else {
		x += (float)swatch(s, pc, rgb(235, 150, 55), "the program's code", x, y, &fg);
		x += (float)swatch(s, pc, rgb(120, 180, 230), "system and runtime libraries", x, y, &fg);
		x += (float)swatch(s, pc, rgb(185, 165, 228), "kernel", x, y, &fg);
		x += (float)swatch(s, pc, rgb(198, 198, 198), "no stack, folded", x, y, &fg);
	}
	return (int)(x - x0);
}
