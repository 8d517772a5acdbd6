/*
 * sv_profile.h - a profile: the stacks of one scope of a trace (CPU samples or
 * off-CPU time) with their weights, the one input of every stack view.
 *
 * The stack views' model lives in viewer/analysis/ beside the findings: flame
 * graphs, top-down and bottom-up call trees, caller/callee and the diff of two
 * profiles. This file, sv_tree.h (trees from a profile, search, diff) and
 * sv_flame.h (the flame graph's layout) are plain C over memory, so the tests
 * build and check them directly; sv_collect.h reads a profile from a stored
 * trace through the store's named queries and the analysis' stacks
 * (stacks.h). Their drawing is viewer/stackview/ (sv_draw.h), the window's
 * panels viewer/app/; both depend on these files, never the other way.
 *
 * A profile owns its strings and frames; nothing in it points into a
 * database. Not thread-safe; it may move between threads (built on the
 * query worker, read on the main thread).
 */
#ifndef STALLSCOPE_SV_PROFILE_H
#define STALLSCOPE_SV_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

/* What a frame's code is, for colours and the tree's grouping. */
enum sv_frame_kind {
	SV_FRAME_OWN,     /* the program's code */
	SV_FRAME_SYSTEM,  /* a system or recorder library, a language runtime */
	SV_FRAME_KERNEL,
	SV_FRAME_OTHER,   /* a pseudo frame ("[no stack]", "[truncated]") or an unknown address */
};

struct sv_frame {
	uint32_t function;  /* string id of the name (an address when unknown) */
	uint32_t file;      /* string id of the source file, 0 when unknown */
	int32_t line;       /* 0 when unknown */
	uint8_t kind;       /* enum sv_frame_kind */
};

struct sv_stack {
	size_t first;       /* into refs: frame indexes, root first */
	uint32_t depth;
	int64_t count;      /* samples (CPU) or off-CPU intervals it stands for */
	int64_t weight;     /* ns: CPU time, or time off CPU */
};

enum sv_kind { SV_KIND_CPU, SV_KIND_OFFCPU };

struct sv_profile {
	enum sv_kind kind;
	char **strings;     /* [0] = "" */
	size_t n_strings, cap_strings;
	struct ss_hmap string_index;
	struct sv_frame *frames;
	size_t n_frames, cap_frames;
	struct ss_hmap frame_index;
	uint32_t *refs;
	size_t n_refs, cap_refs;
	struct sv_stack *stacks;
	size_t n_stacks, cap_stacks;
	int64_t total_weight, total_count;
	bool failed;        /* memory ran out: what is here is incomplete */
};

void sv_profile_init(struct sv_profile *p, enum sv_kind kind);
void sv_profile_free(struct sv_profile *p);

/* The id of a string (interned; NULL is ""). 0 when memory ran out. */
uint32_t sv_profile_intern(struct sv_profile *p, const char *s);
static inline const char *sv_profile_str(const struct sv_profile *p, uint32_t id)
{
	return id < p->n_strings ? p->strings[id] : "";
}

/* The index of a frame (deduplicated). -1 when memory ran out. */
int64_t sv_profile_frame(struct sv_profile *p, const char *function, const char *file, int32_t line,
			 enum sv_frame_kind kind);

/* Adds a stack of n frame indexes, root first, standing for count samples
 * and weight ns. Returns 0, or -1 when memory ran out (failed is set). */
int sv_profile_add(struct sv_profile *p, const uint32_t *frames, size_t n, int64_t count, int64_t weight);

/* a + b without overflow (weights come from files anyone may have written). */
static inline int64_t sv_add_sat(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

#endif /* STALLSCOPE_SV_PROFILE_H */
