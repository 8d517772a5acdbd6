/*
 * test_stackview.c - the stack views read from databases, without a display:
 *  - every scope of the small fixture (whole trace, range, worker, poll,
 *    stall, task, location, a clip, inside polls only) gives the samples and
 *    off-CPU time the fixture put there, and unknown ids a clear error;
 *  - on the demo recordings: the long-poll CPU flame graph has
 *    culprit_spin_long_poll as the widest frame over long_poll_task_body;
 *    the blocking demo's off-CPU flame graph has culprit_blocking_syscall
 *    right over the read (its stall captures' whole stacks spliced into the
 *    frame-pointer stacks of the switches); a search highlights the culprit
 *    in magenta and covers its share; a range around the longest poll is
 *    almost all culprit while the whole trace is not; a diff of long-poll
 *    against steady marks culprit_spin_long_poll as grown, in red;
 *  - the PNGs (sv_png.h) are read back pixel by pixel at the boxes' places.
 * usage: test_stackview SCHEMA.sql OUTDIR DEMO_DIR
 */
#include <cairo.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "soft_check.h"
#include "ss_source.h"
#include "sv_collect.h"
#include "sv_draw.h"
#include "sv_png.h"
#include "sv_tree.h"
#include "read_queries.h"

static const char *outdir;

static int64_t collect(struct tl_db *db, struct sv_scope sc, enum sv_kind kind, bool polls_only, int64_t *count,
		       char *err, size_t errlen)
{
	struct sv_profile p;
	struct sv_collect_options o = { kind, polls_only };
	tl_db_arm(db, 60);
	int rc = sv_collect(db->db, NULL, &sc, &o, &p, NULL, err, errlen);
	int64_t w = rc == 0 ? p.total_weight : -1;
	if (count)
		*count = rc == 0 ? p.total_count : -1;
	sv_profile_free(&p);
	return w;
}

#define MS INT64_C(1000000)

static void test_fixture(const char *schema)
{
	char path[4096], err[512];
	snprintf(path, sizeof path, "%s/stackview-fixture.db", outdir);
	CHECK(fixture_build_small(path, schema) == 0, "fixture");
	struct tl_db *db = tl_db_open(path, err, sizeof err);
	CHECK(db != NULL, "open: %s", err);
	if (!db)
		return;
	int64_t n;
	/* w0 on CPU 170 ms at 1 kHz, the io-thread every 5 ms: 200. */
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_TRACE }, SV_KIND_CPU, false, &n, err, sizeof err) == 370 * MS &&
		      n == 370,
	      "whole trace: %lld samples (%s)", (long long)n, err);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_TRACE }, SV_KIND_CPU, true, &n, err, sizeof err) == 170 * MS,
	      "inside polls only: %lld", (long long)n);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_RANGE, 0, FX_MS(100), FX_MS(200) }, SV_KIND_CPU, false, &n, err,
		      sizeof err) == 70 * MS,
	      "range [100,200): 50 + 20 samples, got %lld", (long long)n);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_WORKER, 1 }, SV_KIND_CPU, false, &n, err, sizeof err) == 170 * MS,
	      "worker 1: %lld", (long long)n);
	int64_t stall_poll = db->stalls[0].poll_id;
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_POLL, stall_poll }, SV_KIND_CPU, false, &n, err, sizeof err) ==
		      110 * MS,
	      "the stalled poll: 50 + 60 ms on CPU, got %lld", (long long)n);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_STALL, 1 }, SV_KIND_CPU, false, &n, err, sizeof err) == 110 * MS,
	      "stall 1 is its poll");
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_TASK, 3 }, SV_KIND_CPU, false, &n, err, sizeof err) == 110 * MS,
	      "task 3 (one poll)");
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_LOCATION, 3 }, SV_KIND_CPU, false, &n, err, sizeof err) == 110 * MS,
	      "location 3 (one poll)");
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_WORKER, 1, FX_MS(300), FX_MS(350) }, SV_KIND_CPU, false, &n, err,
		      sizeof err) == 50 * MS,
	      "a worker clipped to [300,350)");
	/* Off CPU: w0 blocked [150,200) [210,300) [350,420) [500,900), preempted [420,440). */
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_TRACE }, SV_KIND_OFFCPU, false, &n, err, sizeof err) == 630 * MS &&
		      n == 5,
	      "off CPU, whole trace: %lld intervals", (long long)n);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_POLL, stall_poll }, SV_KIND_OFFCPU, false, &n, err, sizeof err) ==
		      90 * MS,
	      "off CPU in the stalled poll: 70 blocked + 20 preempted");
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_RANGE, 0, FX_MS(160), FX_MS(250) }, SV_KIND_OFFCPU, false, &n, err,
		      sizeof err) == 80 * MS,
	      "off CPU clipped to [160,250): 40 + 40 ms");
	/* Unknown ids and empty ranges are errors that say so. */
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_POLL, 999999 }, SV_KIND_CPU, false, NULL, err, sizeof err) < 0 &&
		      strstr(err, "no poll 999999"),
	      "unknown poll: %s", err);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_WORKER, 77 }, SV_KIND_OFFCPU, false, NULL, err, sizeof err) < 0 &&
		      strstr(err, "no worker 77"),
	      "unknown worker: %s", err);
	CHECK(collect(db, (struct sv_scope){ SV_SCOPE_RANGE, 0, 5, 5 }, SV_KIND_CPU, false, NULL, err, sizeof err) < 0,
	      "an empty range");

	/* The stacks: sha256_block under compute_hash under main. */
	struct sv_profile p;
	struct sv_collect_options o = { SV_KIND_CPU, false };
	struct sv_scope sc = { SV_SCOPE_POLL, stall_poll };
	sv_collect(db->db, NULL, &sc, &o, &p, NULL, err, sizeof err);
	struct sv_tree t;
	sv_tree_build(&t, &p, SV_GROUP_LINE, SV_TOP_DOWN, SV_NONE);
	uint32_t n1 = t.nodes[0].child;
	char l[256] = "";
	if (n1 != SV_NONE && t.nodes[n1].child != SV_NONE)
		sv_tree_label(&t, t.nodes[t.nodes[n1].child].child, l, sizeof l);
	CHECK(!strcmp(l, "sha256_block (sha.c:77)"), "main > compute_hash > sha256_block by line: '%s'", l);
	sv_tree_free(&t);
	sv_profile_free(&p);

	/* Every named query of the stack views prepares on the schema. */
	for (int q = SS_Q_STACK_ALL_SAMPLES; q <= SS_Q_STACK_LOCATION_POLLS; q++) {
		sqlite3_stmt *st = ss_read_prepare(db->db, (enum ss_read_query)q);
		CHECK(st != NULL, "query %d prepares: %s", q, sqlite3_errmsg(db->db));
		sqlite3_finalize(st);
	}
	tl_db_close(db);
}

static char *import_demo(const char *demo_dir, const char *name)
{
	char segs[4096], err[1024];
	char *dbp = g_strdup_printf("%s/stackview-%s.db", outdir, name);
	snprintf(segs, sizeof segs, "%s/%s", demo_dir, name);
	g_unlink(dbp);
	const char *paths[] = { segs };
	if (ss_source_import(paths, 1, dbp, NULL, NULL, NULL, err, sizeof err) != 0) {
		CHECK(0, "import %s: %s", name, err);
		g_free(dbp);
		return NULL;
	}
	return dbp;
}

/* The pixel at (x, y) as 0xRRGGBB. */
static uint32_t pixel(cairo_surface_t *s, int x, int y)
{
	const unsigned char *d = cairo_image_surface_get_data(s);
	int stride = cairo_image_surface_get_stride(s);
	uint32_t v = *(const uint32_t *)(d + (size_t)y * (size_t)stride + (size_t)x * 4);
	return v & 0xffffff;
}

static bool near(uint32_t a, GdkRGBA c)
{
	int r = (int)lround(c.red * 255), g = (int)lround(c.green * 255), b = (int)lround(c.blue * 255);
	return abs((int)(a >> 16 & 255) - r) <= 3 && abs((int)(a >> 8 & 255) - g) <= 3 && abs((int)(a & 255) - b) <= 3;
}

/* The heaviest node labelled name, SV_NONE when none. */
static uint32_t node_named(const struct sv_tree *t, const char *name)
{
	uint32_t sym = sv_tree_find_sym(t, name);
	return sym == SV_NONE ? SV_NONE : sv_tree_find_node(t, sym);
}

static cairo_surface_t *render(struct tl_db *db, struct sv_png_options *o, struct sv_png_info *info, const char *name)
{
	char err[1024], path[4096];
	cairo_surface_t *s = sv_png_render_surface(db, o, info, err, sizeof err);
	CHECK(s != NULL, "%s rendered: %s", name, err);
	if (s) {
		snprintf(path, sizeof path, "%s/%s", outdir, name);
		cairo_surface_write_to_png(s, path);
		printf("wrote %s\n", path);
	}
	return s;
}

/* The box of node in the info's layout, NULL when not drawn. */
static const struct sv_flame_box *box(const struct sv_png_info *in, uint32_t node)
{
	long b = node == SV_NONE ? -1 : sv_flame_box_of(&in->layout, node);
	return b >= 0 ? &in->layout.boxes[b] : NULL;
}

static int box_y(const struct sv_png_info *in, const struct sv_flame_box *b)
{
	return (int)in->flame_y0 + (int)b->row * SV_ROW_H + SV_ROW_H / 2;
}

static void test_long_poll(const char *dbp, const char *steady)
{
	char err[1024];
	struct tl_db *db = tl_db_open(dbp, err, sizeof err);
	CHECK(db != NULL, "open long-poll: %s", err);
	if (!db)
		return;
	struct sv_png_options o = { .view = SV_VIEW_FLAME, .width = 1200 };
	struct sv_png_info in;
	cairo_surface_t *s = render(db, &o, &in, "stackview-long-poll-flame.png");
	uint32_t body = node_named(&in.tree, "long_poll_task_body"), cul = node_named(&in.tree, "culprit_spin_long_poll");
	const struct sv_flame_box *bb = box(&in, body), *bc = box(&in, cul);
	CHECK(bb && bc, "both frames drawn");
	if (bb && bc && s) {
		CHECK(in.tree.nodes[cul].parent == body, "culprit_spin_long_poll is called by long_poll_task_body");
		CHECK(bc->row == bb->row + 1 && fabs(bc->x - bb->x) < 1, "right under it, at its left edge");
		CHECK(bc->w >= 0.9 * bb->w, "and nearly as wide: %.0f of %.0f px", bc->w, bb->w);
		CHECK(bc->w > 0.6 * 1200, "most of the whole trace's CPU: %.0f px", bc->w);
		/* The widest frame on its row, wider than any sibling. */
		for (size_t i = 0; i < in.layout.n; i++)
			if (in.layout.boxes[i].row == bc->row && &in.layout.boxes[i] != bc)
				CHECK(in.layout.boxes[i].w < bc->w, "a wider frame on the culprit's row");
		struct sv_draw_style st = { .hover = SV_NONE, .selected = SV_NONE };
		uint32_t px = pixel(s, (int)(bc->x + bc->w / 2), box_y(&in, bc) - 6);
		CHECK(near(px, sv_draw_node_color(&in.tree, cul, &st)), "the culprit's box is drawn in its colour: %06x", px);
	}
	int64_t whole_cul = cul != SV_NONE ? in.tree.nodes[cul].total : 0, whole = in.prof.total_weight;
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);

	/* Search: the culprit in magenta, the rest grey, and its share. */
	o.search = "culprit_spin";
	s = render(db, &o, &in, "stackview-long-poll-search.png");
	cul = node_named(&in.tree, "culprit_spin_long_poll");
	bc = box(&in, cul);
	CHECK(in.matched == whole_cul && in.matched > 0, "the search covers the culprit's weight: %lld",
	      (long long)in.matched);
	if (s && bc) {
		uint32_t px = pixel(s, (int)(bc->x + bc->w / 2), box_y(&in, bc) - 6);
		CHECK(near(px, (GdkRGBA){ 222 / 255.f, 64 / 255.f, 200 / 255.f, 1 }), "the match is magenta: %06x", px);
		const struct sv_flame_box *br = box(&in, node_named(&in.tree, "run_task"));
		px = br ? pixel(s, (int)(br->x + br->w / 2), box_y(&in, br) - 6) : 0;
		CHECK(near(px, (GdkRGBA){ 214 / 255.f, 214 / 255.f, 214 / 255.f, 1 }), "others are grey: %06x", px);
	}
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	o.search = NULL;

	/* The scope follows a range: around the longest poll it is the culprit. */
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db->db, "SELECT ts, dur FROM polls ORDER BY dur DESC LIMIT 1", -1, &st, NULL);
	int64_t ts = 0, dur = 0;
	if (sqlite3_step(st) == SQLITE_ROW) {
		ts = sqlite3_column_int64(st, 0);
		dur = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	o.scope = (struct sv_scope){ SV_SCOPE_RANGE, 0, ts, ts + dur };
	s = render(db, &o, &in, "stackview-long-poll-range.png");
	cul = node_named(&in.tree, "culprit_spin_long_poll");
	double share_range = cul != SV_NONE && in.prof.total_weight ? (double)in.tree.nodes[cul].total / (double)in.prof.total_weight : 0;
	double share_whole = whole ? (double)whole_cul / (double)whole : 0;
	CHECK(in.prof.total_weight < whole, "the range holds fewer samples than the trace");
	CHECK(share_range > 0.6 && share_range > share_whole - 0.2, "the range is mostly culprit: %.0f%% (trace %.0f%%)",
	      100 * share_range, 100 * share_whole);
	CHECK(strstr(in.heading, "the range"), "the heading says range: %s", in.heading);
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	o.scope = (struct sv_scope){ SV_SCOPE_TRACE };

	/* The diff against steady: the culprit grew, and is red. */
	o.diff_db = steady;
	s = render(db, &o, &in, "stackview-diff-steady-long-poll.png");
	cul = node_named(&in.tree, "culprit_spin_long_poll");
	bc = box(&in, cul);
	CHECK(in.tree.base && cul != SV_NONE && sv_tree_delta(&in.tree, cul) > 30, "culprit_spin_long_poll grew by %.1f points",
	      cul != SV_NONE ? sv_tree_delta(&in.tree, cul) : 0);
	if (s && bc) {
		uint32_t px = pixel(s, (int)(bc->x + bc->w / 2), box_y(&in, bc) - 6);
		CHECK((px >> 16 & 255) > 240 && (px >> 8 & 255) < 120 && (px & 255) < 120, "grown is red: %06x", px);
	}
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	o.diff_db = NULL;

	/* The tree views render too, and the caller/callee of the culprit. */
	o.view = SV_VIEW_TREE;
	s = render(db, &o, &in, "stackview-long-poll-tree.png");
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	o.focus = "culprit_spin_long_poll";
	s = render(db, &o, &in, "stackview-long-poll-callers.png");
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	o.focus = "no_such_function";
	s = sv_png_render_surface(db, &o, &in, err, sizeof err);
	CHECK(!s && strstr(err, "no function 'no_such_function'"), "an unknown function is an error: %s", err);
	sv_png_info_free(&in);
	tl_db_close(db);
}

static void test_blocking(const char *dbp)
{
	char err[1024];
	struct tl_db *db = tl_db_open(dbp, err, sizeof err);
	CHECK(db != NULL, "open blocking: %s", err);
	if (!db)
		return;
	struct sv_png_options o = { .view = SV_VIEW_OFFCPU_FLAME, .width = 1200 };
	struct sv_png_info in;
	cairo_surface_t *s = render(db, &o, &in, "stackview-blocking-offcpu.png");
	uint32_t cul = node_named(&in.tree, "culprit_blocking_syscall");
	CHECK(cul != SV_NONE, "culprit_blocking_syscall is in the off-CPU graph");
	if (cul != SV_NONE) {
		uint32_t c = in.tree.nodes[cul].child;
		char l[256] = "";
		if (c != SV_NONE)
			sv_tree_label(&in.tree, c, l, sizeof l);
		CHECK(strstr(l, "read") != NULL, "its heaviest callee is the read: %s", l);
		CHECK(c != SV_NONE && in.tree.nodes[c].total >= in.tree.nodes[cul].total * 9 / 10,
		      "where nearly all of its off-CPU time is");
		/* glibc's read is one address at two inline levels of __libc_read:
		 * one frame, then the kernel's. */
		uint32_t cc = c != SV_NONE ? in.tree.nodes[c].child : SV_NONE;
		char l2[256] = "";
		if (cc != SV_NONE)
			sv_tree_label(&in.tree, cc, l2, sizeof l2);
		CHECK(cc != SV_NONE && strcmp(l, l2) && in.tree.syms[in.tree.nodes[cc].sym].kind == SV_FRAME_KERNEL,
		      "under the read, the kernel (not the read again): %s", l2);
		/* The time blocked in it is the stalls' time. */
		sqlite3_stmt *st;
		sqlite3_prepare_v2(db->db, "SELECT sum(dur) FROM stalls", -1, &st, NULL);
		int64_t stalled = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
		sqlite3_finalize(st);
		CHECK(in.tree.nodes[cul].total > stalled * 8 / 10 && in.tree.nodes[cul].total <= stalled,
		      "off CPU in it %lld ns, the stalls %lld ns", (long long)in.tree.nodes[cul].total, (long long)stalled);
		CHECK(in.collected.spliced > 0, "stall captures' stacks spliced in: %lld", (long long)in.collected.spliced);
		const struct sv_flame_box *bc = box(&in, cul), *bcc = c != SV_NONE ? box(&in, c) : NULL;
		CHECK(bc && bcc && bcc->row == bc->row + 1, "the read is drawn right under the culprit");
	}
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	/* Inside polls only: the parked workers' waits are gone. */
	o.polls_only = true;
	s = render(db, &o, &in, "stackview-blocking-offcpu-polls.png");
	cul = node_named(&in.tree, "culprit_blocking_syscall");
	CHECK(cul != SV_NONE && in.tree.nodes[cul].total * 2 > in.prof.total_weight,
	      "inside polls, the culprit is most of the off-CPU time");
	if (s)
		cairo_surface_destroy(s);
	sv_png_info_free(&in);
	tl_db_close(db);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: test_stackview SCHEMA.sql OUTDIR DEMO_DIR\n");
		return 2;
	}
	outdir = argv[2];
	g_mkdir_with_parents(outdir, 0755);
	test_fixture(argv[1]);
	char *lp = import_demo(argv[3], "long-poll"), *st = import_demo(argv[3], "steady"),
	     *bl = import_demo(argv[3], "blocking");
	if (lp && st)
		test_long_poll(lp, st);
	if (bl)
		test_blocking(bl);
	g_free(lp);
	g_free(st);
	g_free(bl);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("stack views: all checks passed\n");
	return 0;
}
