/*
 * ss_render_stacks.c - see ss_render_stacks.h. Values are checked here, by
 * name, as main.c checks --color and --theme: a wrong one never renders.
 */
#include "ss_render_stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sv_draw.h"
#include "sv_png.h"

static int bad(const char *opt, const char *want, const char *val)
{
	fprintf(stderr, "stallscope-viewer: %s is %s, not '%s'\n", opt, want, val ? val : "(missing)");
	return -1;
}

static int parse_ns(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

int ss_stack_args_take(struct ss_stack_args *s, const char *a, const char *val)
{
	if (!strcmp(a, "--inverted") || !strcmp(a, "--polls-only")) {
		*(a[2] == 'i' ? &s->inverted : &s->polls_only) = true;
		s->any = true;
		return 1;
	}
	static const char *const valued[] = { "--view", "--scope", "--stacks", "--group-by", "--search",
					      "--focus", "--diff-db", "--diff-from", "--diff-to" };
	size_t k = 0;
	while (k < sizeof valued / sizeof valued[0] && strcmp(a, valued[k]))
		k++;
	if (k == sizeof valued / sizeof valued[0])
		return 0;
	if (!val)
		return bad(a, "followed by a value", NULL);
	switch (k) {
	case 0:
		s->view = sv_view_parse(val);
		if (s->view < -1)
			return bad(a, "'timeline', 'flame', 'offcpu-flame' or 'tree'", val);
		break;
	case 1: {
		struct sv_scope sc;
		if (sv_scope_parse(val, &sc) != 0)
			return bad(a, "'trace', 'range', or worker:ID, poll:ID, stall:ID, task:ID, location:ID, recording:ID",
				   val);
		s->scope = val;
		break;
	}
	case 2:
		if (strcmp(val, "cpu") && strcmp(val, "offcpu"))
			return bad(a, "'cpu' or 'offcpu'", val);
		s->stacks = val;
		break;
	case 3:
		if (strcmp(val, "function") && strcmp(val, "line"))
			return bad(a, "'function' or 'line'", val);
		s->group_by = val;
		break;
	case 4:
		s->search = val;
		break;
	case 5:
		s->focus = val;
		break;
	case 6:
		s->diff_db = val;
		break;
	default:
		if (parse_ns(val, k == 7 ? &s->diff_from : &s->diff_to) != 0)
			return bad(a, "nanoseconds since the start of the trace", val);
		*(k == 7 ? &s->has_diff_from : &s->has_diff_to) = true;
		break;
	}
	if (k != 0)
		s->any = true;
	return 2;
}

void ss_stack_args_usage(FILE *out)
{
	fputs("  --view timeline|flame|offcpu-flame|tree\n"
	      "                       what to render (default timeline): the CPU or the\n"
	      "                       off-CPU flame graph, or the call tree\n"
	      "stack view options (with --view flame, offcpu-flame or tree):\n"
	      "  --scope SCOPE        trace (default), range (--from/--to), worker:ID,\n"
	      "                       poll:ID, stall:ID, task:ID, location:ID or\n"
	      "                       recording:ID (row ids of the database); --from/--to\n"
	      "                       clip the others\n"
	      "  --stacks cpu|offcpu  what the tree weighs (default cpu)\n"
	      "  --group-by function|line\n"
	      "                       frames grouped by function (default) or by line\n"
	      "  --inverted           bottom-up: leaf functions first\n"
	      "  --polls-only         only samples (off-CPU time) inside polls\n"
	      "  --search TEXT        highlight frames whose name contains TEXT and print\n"
	      "                       the share of the weight they cover\n"
	      "  --focus FUNCTION     flame graphs zoom into it; the tree shows its\n"
	      "                       callers, callees and lines\n"
	      "  --diff-db BASE.db    a diff flame graph against BASE.db's whole trace\n"
	      "  --diff-from NS --diff-to NS\n"
	      "                       ... or against this range (of BASE.db with --diff-db)\n",
	      out);
}

int ss_stack_args_render(const struct ss_stack_args *s, struct tl_db *db, const char *out, int64_t from, int64_t to,
			 int width, int height, bool dark)
{
	struct sv_png_options o = { .view = s->view, .width = width, .height = height, .dark = dark };
	o.tree_kind = s->stacks && !strcmp(s->stacks, "offcpu") ? SV_KIND_OFFCPU : SV_KIND_CPU;
	o.group = s->group_by && !strcmp(s->group_by, "line") ? SV_GROUP_LINE : SV_GROUP_FUNCTION;
	o.inverted = s->inverted;
	o.polls_only = s->polls_only;
	o.search = s->search;
	o.focus = s->focus;
	o.diff_db = s->diff_db;
	bool window = to > from;
	if (s->scope)
		sv_scope_parse(s->scope, &o.scope);
	else
		o.scope.kind = window ? SV_SCOPE_RANGE : SV_SCOPE_TRACE;
	if (window) {
		o.scope.t0 = db->first_ts + from;
		o.scope.t1 = db->first_ts + to;
	} else if (o.scope.kind == SV_SCOPE_RANGE) {
		fprintf(stderr, "stallscope-viewer: --scope range needs --from and --to\n");
		return 1;
	}
	if (s->has_diff_from != s->has_diff_to || (s->has_diff_to && s->diff_to <= s->diff_from)) {
		fprintf(stderr, "stallscope-viewer: --diff-from and --diff-to go together, --diff-to after --diff-from\n");
		return 1;
	}
	if (s->has_diff_from) {
		/* The baseline's range counts from its own trace's start; this
		 * database's when it is the same one. */
		int64_t origin = db->first_ts;
		if (s->diff_db) {
			char err[512];
			struct tl_db *b = tl_db_open(s->diff_db, err, sizeof err);
			if (!b) {
				fprintf(stderr, "stallscope-viewer: %s\n", err);
				return 1;
			}
			origin = b->first_ts;
			tl_db_close(b);
		}
		o.diff = true;
		o.diff_scope = (struct sv_scope){ SV_SCOPE_RANGE, 0, origin + s->diff_from, origin + s->diff_to };
	}
	char err[1024];
	struct sv_png_info info;
	if (sv_png_render(db, &o, out, &info, err, sizeof err) != 0) {
		fprintf(stderr, "stallscope-viewer: %s\n", err);
		sv_png_info_free(&info);
		return 1;
	}
	if (s->search) {
		char share[16], w[48], all[48];
		sv_format_share(share, sizeof share, info.matched, info.prof.total_weight);
		sv_format_ns(w, sizeof w, info.matched);
		sv_format_ns(all, sizeof all, info.prof.total_weight);
		printf("search '%s': %s (%s of %s)\n", s->search, share, w, all);
	}
	sv_png_info_free(&info);
	return 0;
}
