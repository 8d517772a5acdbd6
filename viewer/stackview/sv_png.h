/*
 * sv_png.h - the stack views rendered headless (`stallscope-viewer
 * --render-png OUT.png --view flame|offcpu-flame|tree`): a heading that says
 * what is shown (view, scope, totals, grouping, search, baseline), then the
 * flame graph with its legend, or the call tree as a table (with --focus,
 * the callers, callees and lines of one function). No display, no GTK
 * initialisation; the drawing is the window's (sv_draw.h).
 */
#ifndef STALLSCOPE_SV_PNG_H
#define STALLSCOPE_SV_PNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sv_collect.h"
#include "sv_flame.h"
#include "sv_tree.h"
#include "tl_db.h"

enum sv_view_kind { SV_VIEW_FLAME, SV_VIEW_OFFCPU_FLAME, SV_VIEW_TREE };

struct sv_png_options {
	enum sv_view_kind view;
	enum sv_kind tree_kind;       /* what --view tree weighs: CPU (default) or off-CPU time */
	struct sv_scope scope;
	enum sv_group group;
	bool inverted;                /* bottom-up: the flame graph inverted, the bottom-up tree */
	bool polls_only;
	const char *search;           /* NULL: none */
	const char *focus;            /* a function: the flame graph zoomed into it, the tree's caller/callee */
	const char *diff_db;          /* the baseline's database, NULL: this one */
	bool diff;                    /* diff against diff_scope (of diff_db or this database) */
	struct sv_scope diff_scope;
	int width, height;            /* 0: 1200 wide, tall enough for everything */
	bool dark;
};

/* What a rendering showed, for the tests and the command's report line. */
struct sv_png_info {
	struct sv_profile prof, base;
	struct sv_collect_info collected;
	struct sv_tree tree;
	struct sv_flame_layout layout;
	uint8_t *match;               /* per node when searched */
	int64_t matched;              /* weight the search matches cover */
	float flame_y0;               /* where the flame graph's root row starts */
	char heading[1100];
};

/* Renders to path. info may be NULL; else free it with sv_png_info_free.
 * Returns 0, or -1 with a message in err. */
int sv_png_render(struct tl_db *db, const struct sv_png_options *o, const char *path, struct sv_png_info *info,
		  char *err, size_t errlen);
/* The same into a cairo image surface (NULL on failure); the caller destroys it. */
struct _cairo_surface *sv_png_render_surface(struct tl_db *db, const struct sv_png_options *o,
					     struct sv_png_info *info, char *err, size_t errlen);
void sv_png_info_free(struct sv_png_info *info);

/* The scope as a heading says it ("poll 12 (41.0 ms)", "the range 1.2 s -
 * 1.3 s (100 ms)", "worker w2 ex-w2"); ci (NULL: unknown) gives spans and
 * poll counts. */
void sv_scope_title(struct tl_db *db, const struct sv_scope *s, const struct sv_collect_info *ci, char *buf,
		    size_t len);
/* "831 samples, 831 ms of CPU time" / "5005 switches off the CPU, 6.0 s off CPU". */
void sv_profile_totals(const struct sv_profile *p, char *buf, size_t len);

/* "--view" names: "timeline" is -1, the others their kind; -2 when unknown. */
int sv_view_parse(const char *name);

#endif /* STALLSCOPE_SV_PNG_H */
