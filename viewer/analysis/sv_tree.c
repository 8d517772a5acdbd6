/*
 * sv_tree.c - see sv_tree.h. A tree is built by inserting every stack of the
 * profile along a path of (parent, symbol) -> child lookups in a hash map
 * that lives only while building; the sibling lists are then sorted. Nodes
 * are appended as they are first reached, so a parent's index is always below
 * its children's and one forward pass visits parents first (search, diff).
 */
#include "sv_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Symbols of every frame of the profile, in frame order (so two trees of a
 * profile and grouping agree on them). */
static int make_syms(struct sv_tree *t)
{
	const struct sv_profile *p = t->p;
	struct ss_hmap index = { 0 };
	t->frame_sym = malloc((p->n_frames ? p->n_frames : 1) * sizeof *t->frame_sym);
	t->syms = malloc((p->n_frames ? p->n_frames : 1) * sizeof *t->syms);
	if (!t->frame_sym || !t->syms)
		return -1;
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct sv_frame *f = &p->frames[i];
		uint64_t a = f->function, b = 0, v;
		if (t->group == SV_GROUP_LINE) {
			a = (uint64_t)f->function << 32 | f->file;
			b = (uint64_t)(uint32_t)f->line + 1;
		}
		if (ss_hmap_get(&index, a, b, &v)) {
			struct sv_sym *s = &t->syms[v];
			if (f->line > 0 && (s->line_min == 0 || f->line < s->line_min))
				s->line_min = f->line;
			if (f->line > s->line_max)
				s->line_max = f->line;
			if (!s->file)
				s->file = f->file;
		} else {
			v = t->n_syms;
			if (ss_hmap_put(&index, a, b, v) != 0) {
				ss_hmap_free(&index);
				return -1;
			}
			t->syms[t->n_syms++] = (struct sv_sym){ f->function, f->file, f->line, f->line, f->kind };
		}
		t->frame_sym[i] = (uint32_t)v;
	}
	ss_hmap_free(&index);
	return 0;
}

static uint32_t add_node(struct sv_tree *t, uint32_t parent, uint32_t sym)
{
	if (t->n_nodes == t->cap_nodes) {
		size_t nc = t->cap_nodes ? t->cap_nodes * 2 : 256;
		struct sv_node *nn = realloc(t->nodes, nc * sizeof *nn);
		if (!nn || nc >= SV_NONE)
			return SV_NONE;
		t->nodes = nn;
		t->cap_nodes = nc;
	}
	uint32_t i = (uint32_t)t->n_nodes++;
	struct sv_node *n = &t->nodes[i];
	memset(n, 0, sizeof *n);
	n->sym = sym;
	n->parent = parent;
	n->child = SV_NONE;
	n->next = SV_NONE;
	if (parent != SV_NONE) {
		n->depth = t->nodes[parent].depth + 1;
		n->next = t->nodes[parent].child;
		t->nodes[parent].child = i;
		if (n->depth > t->max_depth)
			t->max_depth = n->depth;
	}
	return i;
}

static uint32_t child_of(struct sv_tree *t, struct ss_hmap *kids, uint32_t parent, uint32_t sym)
{
	uint64_t v;
	if (ss_hmap_get(kids, parent, sym, &v))
		return (uint32_t)v;
	uint32_t c = add_node(t, parent, sym);
	if (c == SV_NONE || ss_hmap_put(kids, parent, sym, c) != 0)
		return SV_NONE;
	return c;
}

static void add_cost(struct sv_node *n, const struct sv_stack *s, bool self)
{
	n->total = sv_add_sat(n->total, s->weight);
	n->count = sv_add_sat(n->count, s->count);
	if (self) {
		n->self = sv_add_sat(n->self, s->weight);
		n->self_count = sv_add_sat(n->self_count, s->count);
	}
}

/* The index of the outermost frame of sym in a stack, -1 when absent. */
static long outermost(const struct sv_tree *t, const struct sv_stack *s, uint32_t sym)
{
	const uint32_t *f = t->p->refs + s->first;
	for (uint32_t k = 0; k < s->depth; k++)
		if (t->frame_sym[f[k]] == sym)
			return (long)k;
	return -1;
}

enum self_at { SELF_NONE, SELF_FIRST, SELF_LAST };

/* Inserts frames[from], frames[from + step] ... up to (not including)
 * frames[to] under node `at`; the step at self_at (if any) gets the self cost. */
static int insert_path(struct sv_tree *t, struct ss_hmap *kids, uint32_t at, const uint32_t *frames, long from,
		       long to, long step, const struct sv_stack *s, enum self_at self_at)
{
	for (long k = from; k != to; k += step) {
		at = child_of(t, kids, at, t->frame_sym[frames[k]]);
		if (at == SV_NONE)
			return -1;
		add_cost(&t->nodes[at], s, (self_at == SELF_FIRST && k == from) || (self_at == SELF_LAST && k + step == to));
	}
	return 0;
}

static int insert(struct sv_tree *t, struct ss_hmap *kids, const struct sv_stack *s)
{
	const uint32_t *f = t->p->refs + s->first;
	long n = (long)s->depth;
	switch (t->mode) {
	case SV_TOP_DOWN:
		add_cost(&t->nodes[0], s, n == 0);
		return insert_path(t, kids, 0, f, 0, n, 1, s, SELF_LAST);
	case SV_BOTTOM_UP:
		add_cost(&t->nodes[0], s, n == 0);
		return insert_path(t, kids, 0, f, n - 1, -1, -1, s, SELF_FIRST);
	case SV_CALLEES: {
		long k = outermost(t, s, t->focus);
		if (k < 0)
			return 0;
		add_cost(&t->nodes[0], s, k == n - 1);
		return insert_path(t, kids, 0, f, k + 1, n, 1, s, SELF_LAST);
	}
	case SV_CALLERS: {
		long k = outermost(t, s, t->focus);
		if (k < 0)
			return 0;
		add_cost(&t->nodes[0], s, t->frame_sym[f[n - 1]] == t->focus);
		return insert_path(t, kids, 0, f, k - 1, -1, -1, s, SELF_NONE);
	}
	}
	return 0;
}

/* What siblings are ordered by, copied out so qsort needs no context (trees
 * are built on several windows' worker threads at once). */
struct sort_key {
	int64_t total;
	const char *name;
	int32_t line;
	uint32_t node;
};

static int cmp_keys(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int sort_children(struct sv_tree *t)
{
	struct sort_key *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->n_nodes; i++) {
		size_t n = 0;
		for (uint32_t c = t->nodes[i].child; c != SV_NONE; c = t->nodes[c].next) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				struct sort_key *nb = realloc(buf, nc * sizeof *nb);
				if (!nb) {
					free(buf);
					return -1;
				}
				buf = nb;
				cap = nc;
			}
			const struct sv_sym *sym = &t->syms[t->nodes[c].sym];
			buf[n++] = (struct sort_key){ t->nodes[c].total, sv_profile_str(t->p, sym->name), sym->line_min, c };
		}
		if (n < 2)
			continue;
		qsort(buf, n, sizeof *buf, cmp_keys);
		t->nodes[i].child = buf[0].node;
		for (size_t k = 0; k + 1 < n; k++)
			t->nodes[buf[k].node].next = buf[k + 1].node;
		t->nodes[buf[n - 1].node].next = SV_NONE;
	}
	free(buf);
	return 0;
}

int sv_tree_build(struct sv_tree *t, const struct sv_profile *p, enum sv_group group, enum sv_tree_mode mode,
		  uint32_t focus)
{
	memset(t, 0, sizeof *t);
	t->p = p;
	t->group = group;
	t->mode = mode;
	t->focus = mode == SV_CALLEES || mode == SV_CALLERS ? focus : SV_NONE;
	struct ss_hmap kids = { 0 };
	if (make_syms(t) != 0)
		goto fail;
	if ((mode == SV_CALLEES || mode == SV_CALLERS) && focus >= t->n_syms)
		t->focus = SV_NONE;
	if (add_node(t, SV_NONE, t->focus) == SV_NONE)
		goto fail;
	if (!(mode == SV_CALLEES || mode == SV_CALLERS) || t->focus != SV_NONE)
		for (size_t i = 0; i < p->n_stacks; i++)
			if (insert(t, &kids, &p->stacks[i]) != 0)
				goto fail;
	ss_hmap_free(&kids);
	if (sort_children(t) != 0)
		goto fail;
	return 0;
fail:
	ss_hmap_free(&kids);
	t->failed = true;
	return -1;
}

void sv_tree_free(struct sv_tree *t)
{
	free(t->syms);
	free(t->frame_sym);
	free(t->nodes);
	free(t->base);
	memset(t, 0, sizeof *t);
}

void sv_sym_label(const struct sv_tree *t, uint32_t sym, char *buf, size_t len)
{
	if (sym >= t->n_syms) {
		snprintf(buf, len, "all");
		return;
	}
	const struct sv_sym *s = &t->syms[sym];
	const char *name = sv_profile_str(t->p, s->name);
	if (t->group == SV_GROUP_LINE && s->file)
		snprintf(buf, len, "%s (%s:%d)", name, base_name(sv_profile_str(t->p, s->file)), s->line_min);
	else
		snprintf(buf, len, "%s", name);
}

void sv_tree_label(const struct sv_tree *t, uint32_t node, char *buf, size_t len)
{
	sv_sym_label(t, node < t->n_nodes ? t->nodes[node].sym : SV_NONE, buf, len);
}

void sv_sym_where(const struct sv_tree *t, uint32_t sym, char *buf, size_t len)
{
	if (len)
		buf[0] = 0;
	if (sym >= t->n_syms || !t->syms[sym].file)
		return;
	const struct sv_sym *s = &t->syms[sym];
	const char *file = sv_profile_str(t->p, s->file);
	if (s->line_min <= 0)
		snprintf(buf, len, "%s", file);
	else if (s->line_max > s->line_min)
		snprintf(buf, len, "%s:%d-%d", file, s->line_min, s->line_max);
	else
		snprintf(buf, len, "%s:%d", file, s->line_min);
}

uint32_t sv_tree_find_sym(const struct sv_tree *t, const char *name)
{
	for (size_t i = 0; i < t->n_syms; i++)
		if (strcmp(sv_profile_str(t->p, t->syms[i].name), name) == 0)
			return (uint32_t)i;
	return SV_NONE;
}

uint32_t sv_tree_find_node(const struct sv_tree *t, uint32_t sym)
{
	uint32_t best = SV_NONE;
	for (size_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].sym == sym && (best == SV_NONE || t->nodes[i].total > t->nodes[best].total))
			best = (uint32_t)i;
	return best;
}

void sv_tree_sym_cost(const struct sv_tree *t, uint32_t sym, int64_t *self, int64_t *total)
{
	*self = *total = 0;
	for (size_t i = 0; i < t->p->n_stacks; i++) {
		const struct sv_stack *s = &t->p->stacks[i];
		if (outermost(t, s, sym) < 0)
			continue;
		*total = sv_add_sat(*total, s->weight);
		if (t->frame_sym[t->p->refs[s->first + s->depth - 1]] == sym)
			*self = sv_add_sat(*self, s->weight);
	}
}

static int cmp_costs(const void *a, const void *b)
{
	const struct sv_sym_cost *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->sym < y->sym ? -1 : x->sym > y->sym;
}

size_t sv_tree_costs(struct sv_tree *t, struct sv_sym_cost **out)
{
	*out = NULL;
	size_t n = t->n_syms;
	struct sv_sym_cost *v = calloc(n ? n : 1, sizeof *v);
	/* the last stack (index + 1) a symbol's total counted, so a recursive
	 * function counts once per stack */
	size_t *seen = calloc(n ? n : 1, sizeof *seen);
	if (!v || !seen) {
		free(v);
		free(seen);
		t->failed = true;
		return 0;
	}
	for (size_t i = 0; i < t->p->n_stacks; i++) {
		const struct sv_stack *s = &t->p->stacks[i];
		const uint32_t *f = t->p->refs + s->first;
		for (uint32_t k = 0; k < s->depth; k++) {
			uint32_t sym = t->frame_sym[f[k]];
			if (seen[sym] == i + 1)
				continue;
			seen[sym] = i + 1;
			v[sym].total = sv_add_sat(v[sym].total, s->weight);
		}
		if (s->depth) {
			uint32_t leaf = t->frame_sym[f[s->depth - 1]];
			v[leaf].self = sv_add_sat(v[leaf].self, s->weight);
			v[leaf].self_count = sv_add_sat(v[leaf].self_count, s->count);
		}
	}
	free(seen);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].total > 0) {
			v[i].sym = (uint32_t)i;
			v[m++] = v[i];
		}
	qsort(v, m, sizeof *v, cmp_costs);
	if (!m) {
		free(v);
		return 0;
	}
	*out = v;
	return m;
}

static int cmp_lines(const void *a, const void *b)
{
	const struct sv_line_cost *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->line - y->line;
}

size_t sv_tree_sym_lines(const struct sv_tree *t, uint32_t sym, struct sv_line_cost **out)
{
	struct ss_hmap index = { 0 };
	struct sv_line_cost *v = NULL;
	size_t n = 0, cap = 0;
	*out = NULL;
	for (size_t i = 0; i < t->p->n_stacks; i++) {
		const struct sv_stack *s = &t->p->stacks[i];
		long k = outermost(t, s, sym);
		if (k < 0)
			continue;
		const uint32_t *f = t->p->refs + s->first;
		/* The outermost frame carries the total, the leaf (when it is this
		 * function) the self time; they may be different lines. */
		for (int part = 0; part < 2; part++) {
			const struct sv_frame *fr = &t->p->frames[f[part ? s->depth - 1 : (uint32_t)k]];
			if (part && t->frame_sym[f[s->depth - 1]] != sym)
				break;
			uint64_t slot;
			if (!ss_hmap_get(&index, fr->file, (uint64_t)(uint32_t)fr->line, &slot)) {
				if (n == cap) {
					size_t nc = cap ? cap * 2 : 16;
					struct sv_line_cost *nv = realloc(v, nc * sizeof *nv);
					if (!nv)
						goto fail;
					v = nv;
					cap = nc;
				}
				slot = n;
				v[n++] = (struct sv_line_cost){ fr->file, fr->line, 0, 0 };
				if (ss_hmap_put(&index, fr->file, (uint64_t)(uint32_t)fr->line, slot) != 0)
					goto fail;
			}
			if (part)
				v[slot].self = sv_add_sat(v[slot].self, s->weight);
			else
				v[slot].total = sv_add_sat(v[slot].total, s->weight);
		}
	}
	ss_hmap_free(&index);
	if (n)
		qsort(v, n, sizeof *v, cmp_lines);
	*out = v;
	return n;
fail:
	ss_hmap_free(&index);
	free(v);
	return 0;
}

/* ASCII case-insensitive strstr. */
static bool contains_ci(const char *hay, const char *needle)
{
	size_t nl = strlen(needle);
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < nl && hay[i]) {
			char a = hay[i], b = needle[i];
			if (a >= 'A' && a <= 'Z')
				a = (char)(a - 'A' + 'a');
			if (b >= 'A' && b <= 'Z')
				b = (char)(b - 'A' + 'a');
			if (a != b)
				break;
			i++;
		}
		if (i == nl)
			return true;
	}
	return false;
}

int64_t sv_tree_search(const struct sv_tree *t, const char *needle, uint8_t *match)
{
	int64_t covered = 0;
	bool any = needle && *needle;
	/* Per symbol once, not per node: a function is in many paths. */
	uint8_t *sym_match = any ? calloc(t->n_syms ? t->n_syms : 1, 1) : NULL;
	if (any && !sym_match)
		any = false;
	for (size_t i = 0; any && i < t->n_syms; i++) {
		char label[512];
		sv_sym_label(t, (uint32_t)i, label, sizeof label);
		sym_match[i] = contains_ci(label, needle);
	}
	/* under[i]: node i or an ancestor matched (parents come first). */
	uint8_t *under = any ? calloc(t->n_nodes ? t->n_nodes : 1, 1) : NULL;
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct sv_node *n = &t->nodes[i];
		match[i] = any && under && n->sym < t->n_syms && sym_match[n->sym];
		if (!under)
			continue;
		bool above = n->parent != SV_NONE && under[n->parent];
		if (match[i] && !above)
			covered = sv_add_sat(covered, n->total);
		under[i] = match[i] || above;
	}
	free(under);
	free(sym_match);
	return covered;
}

static uint64_t hash_label(const struct sv_tree *t, uint32_t sym)
{
	const struct sv_sym *s = &t->syms[sym];
	uint64_t h = 1469598103934665603ull;
	for (const char *c = sv_profile_str(t->p, s->name); *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	if (t->group == SV_GROUP_LINE) {
		for (const char *c = sv_profile_str(t->p, s->file); *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ull;
		h = (h ^ (uint64_t)(uint32_t)s->line_min) * 1099511628211ull;
	}
	return h;
}

static bool same_sym(const struct sv_tree *a, uint32_t sa, const struct sv_tree *b, uint32_t sb)
{
	const struct sv_sym *x = &a->syms[sa], *y = &b->syms[sb];
	if (strcmp(sv_profile_str(a->p, x->name), sv_profile_str(b->p, y->name)) != 0)
		return false;
	return a->group != SV_GROUP_LINE ||
	       (x->line_min == y->line_min && strcmp(sv_profile_str(a->p, x->file), sv_profile_str(b->p, y->file)) == 0);
}

int sv_tree_diff(struct sv_tree *t, const struct sv_tree *base)
{
	free(t->base);
	t->base = calloc(t->n_nodes ? t->n_nodes : 1, sizeof *t->base);
	uint32_t *map = malloc((t->n_nodes ? t->n_nodes : 1) * sizeof *map);
	struct ss_hmap kids = { 0 };
	if (!t->base || !map)
		goto fail;
	/* The baseline's children by (parent, label hash, collision number). */
	for (size_t j = 1; j < base->n_nodes; j++) {
		const struct sv_node *n = &base->nodes[j];
		uint64_t h = hash_label(base, n->sym), v;
		uint64_t k = 0;
		while (ss_hmap_get(&kids, (uint64_t)n->parent << 8 | k, h, &v) && k < 255)
			k++;
		if (ss_hmap_put(&kids, (uint64_t)n->parent << 8 | k, h, j) != 0)
			goto fail;
	}
	t->base_total = base->n_nodes ? base->nodes[0].total : 0;
	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct sv_node *n = &t->nodes[i];
		uint32_t m = SV_NONE;
		if (i == 0) {
			/* Focus trees compare only when they are about the same function. */
			bool roots = t->focus == SV_NONE ? base->focus == SV_NONE
							: base->focus != SV_NONE && same_sym(t, t->focus, base, base->focus);
			m = base->n_nodes && roots ? 0 : SV_NONE;
		} else if (map[n->parent] != SV_NONE) {
			uint64_t h = hash_label(t, n->sym), v;
			for (uint64_t k = 0; k < 256 && ss_hmap_get(&kids, (uint64_t)map[n->parent] << 8 | k, h, &v); k++)
				if (same_sym(t, n->sym, base, base->nodes[v].sym)) {
					m = (uint32_t)v;
					break;
				}
		}
		map[i] = m;
		t->base[i] = m != SV_NONE ? base->nodes[m].total : 0;
	}
	t->max_delta = 0;
	for (size_t i = 1; i < t->n_nodes; i++) {
		double d = sv_tree_delta(t, (uint32_t)i);
		if (d < 0)
			d = -d;
		if (d > t->max_delta)
			t->max_delta = d;
	}
	ss_hmap_free(&kids);
	free(map);
	return 0;
fail:
	ss_hmap_free(&kids);
	free(map);
	free(t->base);
	t->base = NULL;
	return -1;
}

double sv_tree_delta(const struct sv_tree *t, uint32_t node)
{
	if (!t->base || node >= t->n_nodes)
		return 0;
	double now = t->nodes[0].total > 0 ? (double)t->nodes[node].total / (double)t->nodes[0].total : 0;
	double before = t->base_total > 0 ? (double)t->base[node] / (double)t->base_total : 0;
	return 100.0 * (now - before);
}

/* The symbol of a function's name in a tree about to be built: symbols
 * depend on the profile alone, so a tree of just the symbols finds it. */
static uint32_t focus_sym(const struct sv_profile *p, enum sv_group group, const char *name)
{
	struct sv_tree probe;
	memset(&probe, 0, sizeof probe);
	probe.p = p;
	probe.group = group;
	uint32_t sym = make_syms(&probe) == 0 ? sv_tree_find_sym(&probe, name) : SV_NONE;
	free(probe.syms);
	free(probe.frame_sym);
	return sym;
}

int sv_tree_build_view(struct sv_tree *t, const struct sv_profile *p, const struct sv_profile *base,
		       enum sv_group group, enum sv_tree_mode mode, const char *focus)
{
	bool focused = mode == SV_CALLEES || mode == SV_CALLERS;
	uint32_t f = focused && focus ? focus_sym(p, group, focus) : SV_NONE;
	if (sv_tree_build(t, p, group, mode, f) != 0)
		return -1;
	if (!base)
		return 0;
	struct sv_tree b;
	uint32_t bf = focused && focus ? focus_sym(base, group, focus) : SV_NONE;
	int rc = sv_tree_build(&b, base, group, mode, bf);
	if (rc == 0)
		rc = sv_tree_diff(t, &b);
	sv_tree_free(&b);
	return rc;
}
