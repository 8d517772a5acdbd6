/*
 * test_stacktree.c - the stack views' model without a database or GTK
 * (viewer/analysis/sv_*.h): call trees top-down and bottom-up with self and total
 * weights, recursion counted once, callers and callees of one function, cost
 * per line, grouping by function or by line, search and its covered share,
 * the diff against a baseline profile, and the flame graph's layout (widths,
 * zoom, the fold of narrow frames, hit testing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soft_check.h"
#include "sv_flame.h"
#include "sv_profile.h"
#include "sv_tree.h"

/* Adds a stack given as "main;a;b" (root first), each frame at line 10
 * unless written "name@line". */
static void add(struct sv_profile *p, const char *path, int64_t weight)
{
	uint32_t ids[32];
	size_t n = 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *tok = strtok(buf, ";"); tok && n < 32; tok = strtok(NULL, ";")) {
		int line = 10;
		char *at = strchr(tok, '@');
		if (at) {
			*at = 0;
			line = atoi(at + 1);
		}
		int64_t id = sv_profile_frame(p, tok, "src/x.c", line, tok[0] == 'k' ? SV_FRAME_KERNEL : SV_FRAME_OWN);
		CHECK(id >= 0, "frame %s", tok);
		ids[n++] = (uint32_t)id;
	}
	CHECK(sv_profile_add(p, ids, n, 1, weight) == 0, "add %s", path);
}

/* The child of node with this label, SV_NONE when none. */
static uint32_t child(const struct sv_tree *t, uint32_t node, const char *label)
{
	for (uint32_t c = t->nodes[node].child; c != SV_NONE; c = t->nodes[c].next) {
		char l[256];
		sv_tree_label(t, c, l, sizeof l);
		if (!strcmp(l, label))
			return c;
	}
	return SV_NONE;
}

static uint32_t path(const struct sv_tree *t, const char *p)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", p);
	uint32_t n = 0;
	for (char *tok = strtok(buf, ";"); tok && n != SV_NONE; tok = strtok(NULL, ";"))
		n = child(t, n, tok);
	return n;
}

static int64_t total(const struct sv_tree *t, const char *p)
{
	uint32_t n = path(t, p);
	return n == SV_NONE ? -1 : t->nodes[n].total;
}

static void test_trees(void)
{
	struct sv_profile p;
	sv_profile_init(&p, SV_KIND_CPU);
	add(&p, "main;a;b", 10);
	add(&p, "main;a@11;c", 5);
	add(&p, "main;d", 3);
	add(&p, "main;a;b;a", 2);
	CHECK(p.total_weight == 20 && p.total_count == 4, "profile totals %lld %lld", (long long)p.total_weight,
	      (long long)p.total_count);

	struct sv_tree t;
	CHECK(sv_tree_build(&t, &p, SV_GROUP_FUNCTION, SV_TOP_DOWN, SV_NONE) == 0, "top-down");
	CHECK(t.nodes[0].total == 20, "root total");
	CHECK(total(&t, "main") == 20 && total(&t, "main;a") == 17 && total(&t, "main;a;b") == 12 &&
		      total(&t, "main;a;c") == 5 && total(&t, "main;d") == 3 && total(&t, "main;a;b;a") == 2,
	      "top-down totals");
	CHECK(t.nodes[path(&t, "main;a;b")].self == 10 && t.nodes[path(&t, "main;a")].self == 0,
	      "self is the leaf's");
	/* Heaviest first. */
	uint32_t m = path(&t, "main");
	char l[64];
	sv_tree_label(&t, t.nodes[m].child, l, sizeof l);
	CHECK(!strcmp(l, "a"), "main's heaviest child first: %s", l);
	CHECK(t.max_depth == 4, "depth %u", t.max_depth);

	int64_t self, tot;
	uint32_t a = sv_tree_find_sym(&t, "a");
	sv_tree_sym_cost(&t, a, &self, &tot);
	CHECK(self == 2 && tot == 17, "a: self %lld, total %lld (recursion counted once)", (long long)self,
	      (long long)tot);

	/* Every function in one pass, as sv_tree_sym_cost gives each: b 10 (self)
	 * 12 (total), c 5 5, d 3 3, a 2 17 (recursion once), main 0 20. */
	struct sv_sym_cost *costs;
	size_t nc = sv_tree_costs(&t, &costs);
	static const struct { const char *name; int64_t self, total, count; } want[] = {
		{ "b", 10, 12, 1 }, { "c", 5, 5, 1 }, { "d", 3, 3, 1 }, { "a", 2, 17, 1 }, { "main", 0, 20, 0 },
	};
	CHECK(nc == 5, "costs of %zu functions", nc);
	for (size_t i = 0; i < nc && i < 5; i++) {
		char nm[64];
		sv_sym_label(&t, costs[i].sym, nm, sizeof nm);
		CHECK(!strcmp(nm, want[i].name) && costs[i].self == want[i].self && costs[i].total == want[i].total &&
			      costs[i].self_count == want[i].count,
		      "costs[%zu]: %s self %lld total %lld count %lld, want %s %lld %lld", i, nm,
		      (long long)costs[i].self, (long long)costs[i].total, (long long)costs[i].self_count,
		      want[i].name, (long long)want[i].self, (long long)want[i].total);
		int64_t s1, t1;
		sv_tree_sym_cost(&t, costs[i].sym, &s1, &t1);
		CHECK(s1 == costs[i].self && t1 == costs[i].total, "costs[%zu] agrees with sv_tree_sym_cost", i);
	}
	free(costs);

	struct sv_line_cost *lines;
	size_t nl = sv_tree_sym_lines(&t, a, &lines);
	CHECK(nl == 2 && lines[0].line == 10 && lines[0].total == 12 && lines[0].self == 2 && lines[1].line == 11 &&
		      lines[1].total == 5,
	      "a's lines: %zu", nl);
	free(lines);

	/* Search: b is in two paths, one under the other counted once. */
	uint8_t *match = calloc(t.n_nodes, 1);
	CHECK(sv_tree_search(&t, "B", match) == 12, "search covers b's 12");
	CHECK(match[path(&t, "main;a;b")] && !match[path(&t, "main;a")], "b matches, a does not");
	CHECK(sv_tree_search(&t, "", match) == 0 && !match[path(&t, "main;a;b")], "empty search matches nothing");
	free(match);

	/* Line grouping splits a by its two lines. */
	struct sv_tree tl;
	CHECK(sv_tree_build(&tl, &p, SV_GROUP_LINE, SV_TOP_DOWN, SV_NONE) == 0, "by line");
	CHECK(total(&tl, "main (x.c:10);a (x.c:10)") == 12 && total(&tl, "main (x.c:10);a (x.c:11)") == 5,
	      "by line: a:10 %lld, a:11 %lld", (long long)total(&tl, "main (x.c:10);a (x.c:10)"),
	      (long long)total(&tl, "main (x.c:10);a (x.c:11)"));
	sv_tree_free(&tl);

	struct sv_tree bu;
	CHECK(sv_tree_build(&bu, &p, SV_GROUP_FUNCTION, SV_BOTTOM_UP, SV_NONE) == 0, "bottom-up");
	CHECK(total(&bu, "b") == 10 && total(&bu, "c") == 5 && total(&bu, "d") == 3 && total(&bu, "a") == 2,
	      "bottom-up roots are the leaves");
	CHECK(total(&bu, "b;a;main") == 10 && total(&bu, "a;b;a;main") == 2, "bottom-up paths go to the root");
	CHECK(bu.nodes[path(&bu, "b")].self == 10, "a leaf's self");
	sv_tree_free(&bu);

	struct sv_tree ce, cr;
	CHECK(sv_tree_build(&ce, &p, SV_GROUP_FUNCTION, SV_CALLEES, a) == 0, "callees");
	CHECK(ce.nodes[0].total == 17 && ce.nodes[0].sym == a, "callees root: a, 17");
	CHECK(total(&ce, "b") == 12 && total(&ce, "c") == 5 && total(&ce, "b;a") == 2, "a's callees");
	CHECK(sv_tree_build(&cr, &p, SV_GROUP_FUNCTION, SV_CALLERS, a) == 0, "callers");
	CHECK(cr.nodes[0].total == 17 && total(&cr, "main") == 17 && cr.nodes[0].self == 2, "a's callers");
	sv_tree_free(&ce);
	sv_tree_free(&cr);
	struct sv_tree none;
	CHECK(sv_tree_build_view(&none, &p, NULL, SV_GROUP_FUNCTION, SV_CALLEES, "nope") == 0 && none.n_nodes == 1 &&
		      none.nodes[0].total == 0,
	      "callees of an unknown function: an empty root");
	sv_tree_free(&none);

	/* The diff: shares against a baseline where d was most of the time. */
	struct sv_profile base;
	sv_profile_init(&base, SV_KIND_CPU);
	add(&base, "main;a;b", 5);
	add(&base, "main;d", 15);
	struct sv_tree dt;
	CHECK(sv_tree_build_view(&dt, &p, &base, SV_GROUP_FUNCTION, SV_TOP_DOWN, NULL) == 0, "diff");
	uint32_t b = path(&dt, "main;a;b"), d = path(&dt, "main;d"), c = path(&dt, "main;a;c");
	CHECK(dt.base && dt.base[b] == 5 && dt.base[d] == 15 && dt.base[c] == 0, "baseline totals matched by path");
	CHECK(sv_tree_delta(&dt, b) > 34.9 && sv_tree_delta(&dt, b) < 35.1, "b grew 35 points: %.2f",
	      sv_tree_delta(&dt, b));
	CHECK(sv_tree_delta(&dt, d) < -59.9 && sv_tree_delta(&dt, d) > -60.1, "d shrank 60 points");
	CHECK(dt.max_delta > 59.9 && dt.max_delta < 60.1, "largest change %.2f", dt.max_delta);
	sv_tree_free(&dt);
	sv_profile_free(&base);

	/* The flame graph: widths are shares of the parent. */
	struct sv_flame_layout fl = { 0 };
	CHECK(sv_flame_layout(&fl, &t, 0, 200) == 0, "layout");
	long bm = sv_flame_box_of(&fl, path(&t, "main")), ba = sv_flame_box_of(&fl, path(&t, "main;a")),
	     bd = sv_flame_box_of(&fl, path(&t, "main;d"));
	CHECK(bm >= 0 && fl.boxes[bm].w == 200 && fl.boxes[bm].row == 1, "main spans the width on row 1");
	CHECK(ba >= 0 && fl.boxes[ba].w == 170 && fl.boxes[ba].x == 0, "a: 170 px at 0");
	CHECK(bd >= 0 && fl.boxes[bd].w == 30 && fl.boxes[bd].x == 170, "d: 30 px at 170");
	CHECK(fl.rows == 5, "5 rows: %u", fl.rows);
	CHECK(sv_flame_hit(&fl, 180, 2) == bd && sv_flame_hit(&fl, 10, 2) == ba && sv_flame_hit(&fl, 10, 9) == -1,
	      "hit testing");
	/* Zoomed into a: it spans the width, main and the root are ancestors. */
	CHECK(sv_flame_layout(&fl, &t, path(&t, "main;a"), 170) == 0, "zoomed layout");
	ba = sv_flame_box_of(&fl, path(&t, "main;a"));
	bm = sv_flame_box_of(&fl, path(&t, "main"));
	long bb = sv_flame_box_of(&fl, path(&t, "main;a;b"));
	CHECK(ba >= 0 && fl.boxes[ba].w == 170 && !fl.boxes[ba].ancestor, "a spans the zoomed width");
	CHECK(bm >= 0 && fl.boxes[bm].ancestor && fl.boxes[bm].w == 170, "main is an ancestor row");
	CHECK(bb >= 0 && fl.boxes[bb].w == 120, "b scaled with the zoom: %.1f", bb >= 0 ? fl.boxes[bb].w : -1);
	CHECK(sv_flame_box_of(&fl, path(&t, "main;d")) == -1, "d is outside the zoom");
	sv_flame_layout_free(&fl);
	sv_tree_free(&t);

	/* Narrow siblings fold into one box that counts them. */
	for (int i = 0; i < 40; i++) {
		char s[64];
		snprintf(s, sizeof s, "main;tiny%02d", i);
		add(&p, s, 1);
	}
	CHECK(sv_tree_build(&t, &p, SV_GROUP_FUNCTION, SV_TOP_DOWN, SV_NONE) == 0, "with tiny frames");
	CHECK(sv_flame_layout(&fl, &t, 0, 60) == 0, "narrow layout");
	long fold = -1;
	for (size_t i = 0; i < fl.n; i++)
		if (fl.boxes[i].node == SV_NONE)
			fold = (long)i;
	CHECK(fold >= 0 && fl.boxes[fold].folded == 40 && fl.boxes[fold].weight == 40 && fl.boxes[fold].row == 2,
	      "40 tiny frames folded into one box");
	CHECK(sv_flame_box_of(&fl, path(&t, "main;tiny00")) == -1, "a folded frame has no box of its own");
	sv_flame_layout_free(&fl);
	sv_tree_free(&t);
	sv_profile_free(&p);
}

static void test_strings(void)
{
	struct sv_profile p;
	sv_profile_init(&p, SV_KIND_OFFCPU);
	uint32_t x = sv_profile_intern(&p, "x"), y = sv_profile_intern(&p, "y");
	CHECK(x && y && x != y && sv_profile_intern(&p, "x") == x, "interned once");
	CHECK(sv_profile_intern(&p, NULL) == 0 && sv_profile_intern(&p, "") == 0, "empty is 0");
	CHECK(!strcmp(sv_profile_str(&p, y), "y") && !strcmp(sv_profile_str(&p, 9999), ""), "lookup");
	int64_t f1 = sv_profile_frame(&p, "f", "a.c", 1, SV_FRAME_OWN), f2 = sv_profile_frame(&p, "f", "a.c", 2, SV_FRAME_OWN);
	CHECK(f1 >= 0 && f2 >= 0 && f1 != f2 && sv_profile_frame(&p, "f", "a.c", 1, SV_FRAME_OWN) == f1, "frames");
	/* Saturating sums: weights come from files. */
	uint32_t ids[1] = { (uint32_t)f1 };
	sv_profile_add(&p, ids, 1, 1, INT64_MAX - 1);
	sv_profile_add(&p, ids, 1, 1, INT64_MAX - 1);
	CHECK(p.total_weight == INT64_MAX, "total saturates");
	struct sv_tree t;
	CHECK(sv_tree_build(&t, &p, SV_GROUP_FUNCTION, SV_TOP_DOWN, SV_NONE) == 0 && t.nodes[0].total == INT64_MAX,
	      "tree totals saturate");
	sv_tree_free(&t);
	sv_profile_free(&p);
}

int main(void)
{
	test_trees();
	test_strings();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	else
		printf("stack trees: ok\n");
	return failures ? 1 : 0;
}
