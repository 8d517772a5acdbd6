/*
 * sv_tree.h - call trees made from a profile (sv_profile.h): top-down (the
 * flame graph and the top-down tree), bottom-up (the inverted flame graph and
 * the bottom-up tree), and the callers and callees of one function; with
 * search (which nodes match, and the share of the weight they cover) and the
 * diff against a baseline tree (the weight of the same call path there).
 *
 * Frames are grouped into symbols: by function (the default: a hot loop is
 * one node however many lines it spans) or by function and source line
 * (SV_GROUP_LINE). A tree's symbols depend only on its profile and grouping,
 * so two trees of one profile and grouping number them alike: a symbol
 * picked in one (a row of the top-down tree) names the same function in the
 * other (its caller/callee trees).
 *
 * Children are sorted by total weight, heaviest first, then by label, so the
 * flame graph is "left heavy" and identical runs give identical pictures.
 * Plain C, no GTK; a tree keeps a pointer to its profile, which must outlive it.
 */
#ifndef STALLSCOPE_SV_TREE_H
#define STALLSCOPE_SV_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sv_profile.h"

#define SV_NONE UINT32_MAX

enum sv_group { SV_GROUP_FUNCTION, SV_GROUP_LINE };

enum sv_tree_mode {
	SV_TOP_DOWN,   /* root = all, then the outermost callers down to the leaves */
	SV_BOTTOM_UP,  /* root = all, then the leaf functions, then their callers */
	SV_CALLEES,    /* root = one function, then what it calls (its outermost call in each stack) */
	SV_CALLERS,    /* root = one function, then its callers up to the thread's start */
};

struct sv_sym {
	uint32_t name;            /* profile string: the function */
	uint32_t file;            /* profile string, 0 when unknown */
	int32_t line_min, line_max; /* the lines its frames had (one line with SV_GROUP_LINE), 0 unknown */
	uint8_t kind;             /* enum sv_frame_kind of its first frame */
};

struct sv_node {
	uint32_t sym;             /* SV_NONE: the root of a whole tree ("all") */
	uint32_t parent, child, next; /* SV_NONE when none; a parent's index is below its children's */
	uint32_t depth;           /* root 0 */
	int64_t total, self;      /* ns. Bottom-up and callers trees: self is set at the first level only */
	int64_t count, self_count; /* samples (CPU) or off-CPU intervals */
};

struct sv_tree {
	const struct sv_profile *p;
	enum sv_group group;
	enum sv_tree_mode mode;
	uint32_t focus;           /* the function of SV_CALLEES / SV_CALLERS, else SV_NONE */
	struct sv_sym *syms;
	size_t n_syms;
	uint32_t *frame_sym;      /* the symbol of each profile frame */
	struct sv_node *nodes;
	size_t n_nodes, cap_nodes;
	uint32_t max_depth;
	/* After sv_tree_diff: the baseline's total of each node's call path (0
	 * where the baseline has none), and the baseline's whole total. */
	int64_t *base;
	int64_t base_total;
	double max_delta;         /* the largest |sv_tree_delta| of any node but the root */
	bool failed;              /* memory ran out: the tree is incomplete */
};

/* Builds a tree of p. focus is a symbol for SV_CALLEES / SV_CALLERS (from a
 * tree of the same profile and grouping), ignored otherwise. Returns 0, or -1
 * when memory ran out. Free with sv_tree_free, also after a failure. */
int sv_tree_build(struct sv_tree *t, const struct sv_profile *p, enum sv_group group, enum sv_tree_mode mode,
		  uint32_t focus);
void sv_tree_free(struct sv_tree *t);

/* The label of a node or a symbol: "function", or "function (file:line)"
 * grouped by line (the file without its directories); "all" for the root. */
void sv_tree_label(const struct sv_tree *t, uint32_t node, char *buf, size_t len);
void sv_sym_label(const struct sv_tree *t, uint32_t sym, char *buf, size_t len);
/* "file:line" or "file:first-last" of a symbol, "" when unknown. */
void sv_sym_where(const struct sv_tree *t, uint32_t sym, char *buf, size_t len);

/* The first symbol whose function is exactly name, SV_NONE when none. */
uint32_t sv_tree_find_sym(const struct sv_tree *t, const char *name);
/* The heaviest node of a symbol (by total), SV_NONE when none. */
uint32_t sv_tree_find_node(const struct sv_tree *t, uint32_t sym);

/* A function's own time (its frames at the leaf) and its total (the stacks
 * it is in, each once however often it recurses), over the whole profile. */
void sv_tree_sym_cost(const struct sv_tree *t, uint32_t sym, int64_t *self, int64_t *total);

struct sv_sym_cost {
	uint32_t sym;
	int64_t self, total;      /* as sv_tree_sym_cost */
	int64_t self_count;       /* samples (intervals) with the function at the leaf */
};
/* Every function's self and total over the whole profile in one pass (what
 * sv_tree_sym_cost gives for one), those with any weight, most self first
 * (then most total, then the tree's symbol order). Returns how many (0 when
 * none or on failure: memory, which sets t->failed); *out is malloc()ed,
 * free() it. */
size_t sv_tree_costs(struct sv_tree *t, struct sv_sym_cost **out);

struct sv_line_cost {
	uint32_t file;            /* profile string */
	int32_t line;
	int64_t self, total;
};
/* A function's cost per source line: self where its frame was the leaf,
 * total at its outermost frame of each stack; heaviest total first.
 * Returns how many (0 on failure); *out is malloc()ed, free() it. */
size_t sv_tree_sym_lines(const struct sv_tree *t, uint32_t sym, struct sv_line_cost **out);

/* Marks match[i] = 1 for each node whose label contains needle (ASCII case
 * ignored), 0 otherwise; returns the weight the matches cover (a match under
 * another one counts once). match has n_nodes entries. An empty needle
 * matches nothing. */
int64_t sv_tree_search(const struct sv_tree *t, const char *needle, uint8_t *match);

/* Sets t->base from base (a tree of the same mode and grouping, of another
 * profile): call paths are matched by their labels. Returns 0, or -1 when
 * memory ran out. */
int sv_tree_diff(struct sv_tree *t, const struct sv_tree *base);
/* The tree a view shows: t of p in mode, focused on the function named
 * focus (SV_CALLEES / SV_CALLERS; a tree of just a root when p has no such
 * function), and when base is not NULL, diffed against the same tree of
 * base. Returns 0, or -1 when memory ran out. */
int sv_tree_build_view(struct sv_tree *t, const struct sv_profile *p, const struct sv_profile *base,
		       enum sv_group group, enum sv_tree_mode mode, const char *focus);

/* The change of a node's share of its tree, in percentage points:
 * 100 * (total / t total - base / base total). 0 without a diff. */
double sv_tree_delta(const struct sv_tree *t, uint32_t node);

#endif /* STALLSCOPE_SV_TREE_H */
