/*
 * sv_png.c - see sv_png.h. As tl_png.c does for the timeline: GSK render
 * nodes need no display (asking for one node type registers them all), and
 * text goes through PangoCairo's font map.
 */
#include "sv_png.h"

#include <gtk/gtk.h>
#include <pango/pangocairo.h>
#include <stdio.h>
#include <string.h>

#include "sv_draw.h"
#include "tl_ticks.h"

#define HEAD_H 44
#define LEGEND_H 28
#define MAX_TABLE_ROWS 80
#define DIFF_BUDGET_S 60.0

int sv_view_parse(const char *name)
{
	if (!strcmp(name, "timeline"))
		return -1;
	if (!strcmp(name, "flame"))
		return SV_VIEW_FLAME;
	if (!strcmp(name, "offcpu-flame"))
		return SV_VIEW_OFFCPU_FLAME;
	if (!strcmp(name, "tree"))
		return SV_VIEW_TREE;
	return -2;
}

void sv_scope_title(struct tl_db *db, const struct sv_scope *s, const struct sv_collect_info *ci, char *buf,
		    size_t len)
{
	char a[48], b[48], d[48];
	sv_format_ns(d, sizeof d, ci ? ci->span : 0);
	if (s->kind == SV_SCOPE_TRACE && s->t1 <= s->t0) {
		snprintf(buf, len, "the whole trace");
		return;
	}
	switch (s->kind) {
	case SV_SCOPE_TRACE: /* clipped: a range */
	case SV_SCOPE_RANGE:
		tl_format_duration(a, sizeof a, s->t0 - db->first_ts, 0);
		tl_format_duration(b, sizeof b, s->t1 - db->first_ts, 0);
		tl_format_duration(d, sizeof d, s->t1 - s->t0, 0);
		snprintf(buf, len, "the range %s \u2013 %s (%s)", a, b, d);
		return;
	case SV_SCOPE_WORKER: {
		int lane = tl_db_lane_of_worker(db, s->id);
		snprintf(buf, len, "worker %s", lane >= 0 ? db->lanes[lane].label : "?");
		return;
	}
	case SV_SCOPE_POLL:
		snprintf(buf, len, "poll %lld (%s)", (long long)s->id, d);
		return;
	case SV_SCOPE_STALL:
		snprintf(buf, len, "stall %lld (%s)", (long long)s->id, d);
		return;
	case SV_SCOPE_TASK:
		snprintf(buf, len, "the task of row %lld (%zu poll%s, %s)", (long long)s->id, ci ? ci->windows : 0,
			 ci && ci->windows == 1 ? "" : "s", d);
		return;
	case SV_SCOPE_LOCATION: {
		const struct tl_location *l = tl_db_location(db, s->id);
		snprintf(buf, len, "the polls of %s (%zu, %s)", l ? l->short_name : "an unknown location",
			 ci ? ci->windows : 0, d);
		return;
	}
	case SV_SCOPE_RECORDING:
		snprintf(buf, len, "recording #%lld", (long long)s->id);
		return;
	}
	snprintf(buf, len, "?");
}

void sv_profile_totals(const struct sv_profile *p, char *buf, size_t len)
{
	char d[48];
	sv_format_ns(d, sizeof d, p->total_weight);
	if (p->kind == SV_KIND_CPU)
		snprintf(buf, len, "%lld sample%s, %s of CPU time", (long long)p->total_count,
			 p->total_count == 1 ? "" : "s", d);
	else
		snprintf(buf, len, "%lld switch%s off the CPU, %s off CPU", (long long)p->total_count,
			 p->total_count == 1 ? "" : "es", d);
}

void sv_png_info_free(struct sv_png_info *info)
{
	if (!info)
		return;
	sv_tree_free(&info->tree);
	sv_profile_free(&info->prof);
	sv_profile_free(&info->base);
	sv_flame_layout_free(&info->layout);
	g_free(info->match);
	memset(info, 0, sizeof *info);
}

static GdkRGBA hex(unsigned v)
{
	return (GdkRGBA){ (float)((v >> 16) & 255) / 255.f, (float)((v >> 8) & 255) / 255.f, (float)(v & 255) / 255.f,
			  1.f };
}

/* Reads the profiles and builds the tree the options ask for. */
static int compute(struct tl_db *db, const struct sv_png_options *o, struct sv_png_info *in, char *err, size_t errlen)
{
	struct sv_collect_options co = { o->view == SV_VIEW_TREE ? o->tree_kind
						: o->view == SV_VIEW_OFFCPU_FLAME ? SV_KIND_OFFCPU : SV_KIND_CPU,
					 o->polls_only };
	tl_db_arm(db, 600);
	if (sv_collect(db->db, NULL, &o->scope, &co, &in->prof, &in->collected, err, errlen) != 0)
		return -1;
	bool diff = o->diff || o->diff_db;
	sv_profile_init(&in->base, co.kind);
	if (diff) {
		sv_profile_free(&in->base);
		struct sv_scope whole = { SV_SCOPE_TRACE, 0, 0, 0 };
		const struct sv_scope *bs = o->diff ? &o->diff_scope : &whole;
		char e2[512];
		int rc = o->diff_db ? sv_collect_path(o->diff_db, bs, &co, DIFF_BUDGET_S, &in->base, NULL, e2, sizeof e2)
				    : sv_collect(db->db, NULL, bs, &co, &in->base, NULL, e2, sizeof e2);
		if (rc != 0) {
			snprintf(err, errlen, "the baseline: %s", e2);
			return -1;
		}
	}
	enum sv_tree_mode mode = o->inverted ? SV_BOTTOM_UP : SV_TOP_DOWN;
	if (sv_tree_build_view(&in->tree, &in->prof, diff ? &in->base : NULL, o->group, mode, NULL) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (o->search && *o->search) {
		in->match = g_malloc0(in->tree.n_nodes ? in->tree.n_nodes : 1);
		in->matched = sv_tree_search(&in->tree, o->search, in->match);
	}
	return 0;
}

static void heading(struct tl_db *db, const struct sv_png_options *o, struct sv_png_info *in, char *l1, size_t n1,
		    char *l2, size_t n2)
{
	static const char *const views[] = { "CPU flame graph", "Off-CPU flame graph", "Call tree" };
	char scope[256], totals[160];
	sv_scope_title(db, &o->scope, &in->collected, scope, sizeof scope);
	sv_profile_totals(&in->prof, totals, sizeof totals);
	const char *base = strrchr(db->path, '/');
	snprintf(l1, n1, "%s%s \u00b7 %s \u00b7 %s", views[o->view],
		 o->view == SV_VIEW_TREE ? (in->prof.kind == SV_KIND_CPU ? " (CPU)" : " (off-CPU)") : "", scope,
		 base ? base + 1 : db->path);
	size_t used = (size_t)snprintf(l2, n2, "%s \u00b7 by %s \u00b7 %s%s", totals,
				       o->group == SV_GROUP_LINE ? "file:line" : "function",
				       o->inverted ? "bottom-up" : "top-down", o->polls_only ? " \u00b7 inside polls only" : "");
	if (used < n2 && in->match) {
		char share[16];
		sv_format_share(share, sizeof share, in->matched, in->prof.total_weight);
		used += (size_t)snprintf(l2 + used, n2 - used, " \u00b7 search \u201c%s\u201d: %s", o->search, share);
	}
	if (used < n2 && in->tree.base) {
		char bt[160];
		sv_profile_totals(&in->base, bt, sizeof bt);
		const char *bname = o->diff_db ? strrchr(o->diff_db, '/') : NULL;
		snprintf(l2 + used, n2 - used, " \u00b7 against %s (%s)",
			 o->diff_db ? (bname ? bname + 1 : o->diff_db) : "the pinned range", bt);
	}
	snprintf(in->heading, sizeof in->heading, "%s\n%s", l1, l2);
}

struct _cairo_surface *sv_png_render_surface(struct tl_db *db, const struct sv_png_options *o,
					     struct sv_png_info *info, char *err, size_t errlen)
{
	struct sv_png_info local;
	struct sv_png_info *in = info ? info : &local;
	memset(in, 0, sizeof *in);
	cairo_surface_t *surf = NULL;
	if (compute(db, o, in, err, errlen) != 0)
		goto out;
	int width = o->width > 0 ? o->width : 1200;
	struct sv_draw_style st = { .dark = o->dark, .match = in->match, .hover = SV_NONE, .selected = SV_NONE };
	uint32_t zoom = 0;
	if (o->focus && o->view != SV_VIEW_TREE) {
		uint32_t sym = sv_tree_find_sym(&in->tree, o->focus);
		zoom = sym == SV_NONE ? 0 : sv_tree_find_node(&in->tree, sym);
		if (sym == SV_NONE) {
			snprintf(err, errlen, "no function '%s' in these stacks", o->focus);
			goto out;
		}
		st.selected = zoom;
	}
	struct sv_table_row *rows = NULL, *rows2 = NULL;
	size_t n_rows = 0, n_rows2 = 0, n_lines = 0;
	struct sv_line_cost *lines = NULL;
	struct sv_tree callers, callees;
	bool focused = o->view == SV_VIEW_TREE && o->focus;
	uint32_t focus_sym = SV_NONE;
	memset(&callers, 0, sizeof callers);
	memset(&callees, 0, sizeof callees);
	float body_h;
	if (o->view != SV_VIEW_TREE) {
		if (sv_flame_layout(&in->layout, &in->tree, zoom, width) != 0) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		body_h = (float)in->layout.rows * SV_ROW_H + 6 + LEGEND_H;
	} else if (!focused) {
		rows = g_new0(struct sv_table_row, MAX_TABLE_ROWS);
		n_rows = sv_table_rows(&in->tree, 0.005, MAX_TABLE_ROWS, rows);
		body_h = sv_table_height(n_rows) + 8;
	} else {
		focus_sym = sv_tree_find_sym(&in->tree, o->focus);
		if (focus_sym == SV_NONE) {
			snprintf(err, errlen, "no function '%s' in these stacks", o->focus);
			goto out;
		}
		if (sv_tree_build_view(&callers, &in->prof, NULL, o->group, SV_CALLERS, o->focus) != 0 ||
		    sv_tree_build_view(&callees, &in->prof, NULL, o->group, SV_CALLEES, o->focus) != 0) {
			snprintf(err, errlen, "out of memory");
			goto out_trees;
		}
		rows = g_new0(struct sv_table_row, MAX_TABLE_ROWS / 2);
		rows2 = g_new0(struct sv_table_row, MAX_TABLE_ROWS / 2);
		n_rows = sv_table_rows(&callers, 0.005, MAX_TABLE_ROWS / 2, rows);
		n_rows2 = sv_table_rows(&callees, 0.005, MAX_TABLE_ROWS / 2, rows2);
		n_lines = sv_tree_sym_lines(&in->tree, focus_sym, &lines);
		if (n_lines > 12)
			n_lines = 12;
		body_h = sv_table_height(n_rows) + sv_table_height(n_rows2) + (float)(n_lines + 5) * SV_ROW_H + 30;
	}
	int height = o->height > 0 ? o->height : (int)(HEAD_H + body_h);
	if (height > 16384)
		height = 16384;

	g_type_ensure(gsk_color_node_get_type());
	PangoContext *pc = pango_font_map_create_context(pango_cairo_font_map_get_default());
	GtkSnapshot *s = gtk_snapshot_new();
	GdkRGBA bg = o->dark ? hex(0x1e1e1e) : hex(0xffffff), fg = o->dark ? hex(0xeeeeee) : hex(0x202020);
	GdkRGBA dim = o->dark ? hex(0xa0a0a0) : hex(0x606060);
	gtk_snapshot_append_color(s, &bg, &GRAPHENE_RECT_INIT(0, 0, (float)width, (float)height));
	char l1[512], l2[512];
	heading(db, o, in, l1, sizeof l1, l2, sizeof l2);
	sv_draw_text(s, pc, l1, 8, 5, &fg, width - 16, true);
	sv_draw_text(s, pc, l2, 8, 23, &dim, width - 16, false);
	in->flame_y0 = HEAD_H;
	if (o->view != SV_VIEW_TREE) {
		sv_draw_flame(s, pc, &in->tree, &in->layout, &st, HEAD_H);
		sv_draw_legend(s, pc, &in->tree, &st, 8, HEAD_H + (float)in->layout.rows * SV_ROW_H + 8);
	} else if (!focused) {
		sv_draw_table(s, pc, &in->tree, rows, n_rows, !o->inverted, in->prof.total_weight, &st, 0, HEAD_H,
			      (float)width);
	} else {
		/* Caller/callee: the function's own figures, who calls it, what it
		 * calls, and where in it the time goes; shares of the whole scope. */
		int64_t self, total, all = in->prof.total_weight;
		sv_tree_sym_cost(&in->tree, focus_sym, &self, &total);
		char a[48], b[48], pa[16], pb[16], line[640];
		sv_format_ns(a, sizeof a, self);
		sv_format_ns(b, sizeof b, total);
		sv_format_share(pa, sizeof pa, self, all);
		sv_format_share(pb, sizeof pb, total, all);
		snprintf(line, sizeof line, "%s: self %s (%s), total %s (%s)", o->focus, a, pa, b, pb);
		float y = HEAD_H;
		sv_draw_text(s, pc, line, 8, y, &fg, width - 16, true);
		y += SV_ROW_H + 6;
		sv_draw_text(s, pc, "Callers: who calls it, and its total through each path", 8, y, &dim, 0, true);
		y += SV_ROW_H;
		y += sv_draw_table(s, pc, &callers, rows, n_rows, false, all, &st, 0, y, (float)width) + 8;
		sv_draw_text(s, pc, "Callees: what it calls", 8, y, &dim, 0, true);
		y += SV_ROW_H;
		y += sv_draw_table(s, pc, &callees, rows2, n_rows2, true, all, &st, 0, y, (float)width) + 8;
		sv_draw_text(s, pc, "Lines: where in it the time goes", 8, y, &dim, 0, true);
		y += SV_ROW_H;
		for (size_t i = 0; i < n_lines; i++, y += SV_ROW_H) {
			sv_format_ns(a, sizeof a, lines[i].self);
			sv_format_ns(b, sizeof b, lines[i].total);
			const char *file = sv_profile_str(&in->prof, lines[i].file);
			snprintf(line, sizeof line, "%s:%d    self %s    total %s", *file ? file : "?", lines[i].line, a, b);
			sv_draw_text(s, pc, line, 14, y, &fg, width - 20, false);
		}
	}
	GskRenderNode *node = gtk_snapshot_free_to_node(s);
	surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
	cairo_t *cr = cairo_create(surf);
	if (node) {
		gsk_render_node_draw(node, cr);
		gsk_render_node_unref(node);
	}
	cairo_destroy(cr);
	cairo_surface_flush(surf);
	g_object_unref(pc);
	if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
		snprintf(err, errlen, "cannot create a %dx%d image", width, height);
		cairo_surface_destroy(surf);
		surf = NULL;
	}
out_trees:
	sv_tree_free(&callers);
	sv_tree_free(&callees);
	g_free(rows);
	g_free(rows2);
	free(lines);
out:
	if (!info)
		sv_png_info_free(in);
	return surf;
}

int sv_png_render(struct tl_db *db, const struct sv_png_options *o, const char *path, struct sv_png_info *info,
		  char *err, size_t errlen)
{
	cairo_surface_t *surf = sv_png_render_surface(db, o, info, err, errlen);
	if (!surf)
		return -1;
	cairo_status_t st = cairo_surface_write_to_png(surf, path);
	cairo_surface_destroy(surf);
	if (st != CAIRO_STATUS_SUCCESS) {
		snprintf(err, errlen, "%s: %s", path, cairo_status_to_string(st));
		return -1;
	}
	return 0;
}
