/*
 * ss_render_stacks.h - the stack views' part of `stallscope-viewer
 * --render-png`: the options (--view flame|offcpu-flame|tree, --scope,
 * --group-by, --inverted, --search, --focus, --diff-db, --diff-from/--diff-to
 * ...), their help text, and the rendering (viewer/stackview/sv_png.h).
 * main.c hands it every option it does not know itself.
 */
#ifndef STALLSCOPE_SS_RENDER_STACKS_H
#define STALLSCOPE_SS_RENDER_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tl_db.h"

struct ss_stack_args {
	int view;                 /* -1: the timeline, else enum sv_view_kind */
	const char *scope, *stacks, *group_by, *search, *focus, *diff_db;
	bool inverted, polls_only, has_diff_from, has_diff_to, any;
	int64_t diff_from, diff_to;
};

/* Takes option a (with its value val, NULL when a is last): returns how many
 * arguments it used (1 or 2), 0 when a is not one of these, or -1 after
 * printing why its value is wrong. */
int ss_stack_args_take(struct ss_stack_args *s, const char *a, const char *val);
/* The options' help, for --help. */
void ss_stack_args_usage(FILE *out);

/* Renders the view of db to out; from/to (ns since the trace start, to <=
 * from: none) is the range scope or the clip of another; width/height 0 for
 * the defaults. Prints errors (and, with --search, the matched share) and
 * returns the exit status. */
int ss_stack_args_render(const struct ss_stack_args *s, struct tl_db *db, const char *out, int64_t from, int64_t to,
			 int width, int height, bool dark);

#endif /* STALLSCOPE_SS_RENDER_STACKS_H */
