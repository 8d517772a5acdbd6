/*
 * main.c - `stallscope-viewer [PATH...]` opens the timeline window;
 * `stallscope-viewer --render-png OUT.png [--size WxH] [--from NS --to NS]
 * [--view timeline|flame|offcpu-flame|tree ...] PATH...` renders the same
 * timeline, or a stack view (ss_render_stacks.c), to a PNG without a display (no GTK initialisation,
 * so it works with neither DISPLAY nor WAYLAND_DISPLAY set).
 *
 * viewer/app/ is the GTK4 application: the widgets (the window ss_window.c,
 * the timeline widget ss_timeline.c, the panels and their registry
 * ss_panels.c), the session they all observe (ss_session.c: the open trace,
 * the selection, the visible range, the range selection), and the query
 * worker that runs every piece of their SQL off the main thread
 * (ss_worker.c, with the timeline's scenes in ss_scene_fetch.c). Widgets talk
 * to the session, never to each other; the window builds the UI and owns the
 * session. Everything here may depend on what is below it (viewer/timeline
 * for drawing and reading, viewer/store, the importer for opening segments),
 * and nothing below depends on it: dependencies flow store -> analysis ->
 * views.
 */
#include <glib.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ss_app.h"
#include "ss_render_stacks.h"
#include "ss_source.h"
#include "tl_db.h"
#include "tl_png.h"

static void usage(FILE *out)
{
	fputs("usage: stallscope-viewer [PATH...]\n"
	      "       stallscope-viewer --render-png OUT.png [options] PATH...\n"
	      "\n"
	      "PATH is a database written by 'stallscope import', a directory of segments,\n"
	      "or segment files (those are imported first: into a cache database for the\n"
	      "window, into a temporary one for --render-png).\n"
	      "\n"
	      "--render-png options (no display needed):\n"
	      "  --size WxH           picture size in pixels (default 1200 wide, tall enough\n"
	      "                       for every lane)\n"
	      "  --from NS --to NS    the window to show, in ns since the start of the trace\n"
	      "                       (the ruler's 0); default: the whole trace\n"
	      "  --color location|duration|culprit\n"
	      "                       polls coloured by spawn location (default), by\n"
	      "                       duration class (<1 ms, 1-10 ms, 10-50 ms, >50 ms), or\n"
	      "                       by the culprit function the analysis finds in each\n"
	      "                       poll of 1 ms or more\n"
	      "  --theme light|dark   default light\n", out);
	ss_stack_args_usage(out);
	fputs("  -h, --help           this text\n"
	      "  --version            the version\n", out);
}

static int parse_i64(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = v;
	return 0;
}

static int render_png(const char *out, const struct tl_png_options *o, const struct ss_stack_args *sa,
		      const char *const *paths, size_t n)
{
	char err[2048];
	char *tmp_db = NULL;
	const char *db_path = paths[0];
	if (!ss_source_is_database(paths, n)) {
		/* A temporary database next to nothing the user owns: removed after. */
		GError *gerr = NULL;
		int fd = g_file_open_tmp("stallscope-render-XXXXXX.db", &tmp_db, &gerr);
		if (fd < 0) {
			fprintf(stderr, "stallscope-viewer: %s\n", gerr->message);
			g_error_free(gerr);
			return 1;
		}
		close(fd);
		g_unlink(tmp_db);
		if (ss_source_import(paths, n, tmp_db, NULL, NULL, NULL, err, sizeof err) != 0) {
			fprintf(stderr, "stallscope-viewer: %s\n", err);
			g_unlink(tmp_db);
			g_free(tmp_db);
			return 1;
		}
		db_path = tmp_db;
	}
	int rc = 1;
	struct tl_db *db = tl_db_open(db_path, err, sizeof err);
	if (!db) {
		fprintf(stderr, "stallscope-viewer: %s\n", err);
	} else if (sa->view >= 0) {
		rc = ss_stack_args_render(sa, db, out, o->from, o->to, o->width, o->height, o->dark);
	} else if (tl_png_render(db, o, out, err, sizeof err) != 0) {
		fprintf(stderr, "stallscope-viewer: %s\n", err);
	} else {
		rc = 0;
	}
	tl_db_close(db);
	if (tmp_db) {
		g_unlink(tmp_db);
		g_free(tmp_db);
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *png = NULL;
	struct tl_png_options o = { 0 };
	struct ss_stack_args sa = { .view = -1 };
	bool headless_opt = false;
	const char **paths = calloc((size_t)argc + 1, sizeof *paths);
	size_t np = 0;
	if (!paths)
		return 1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		int took;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("stallscope-viewer %s\n", STALLSCOPE_VERSION);
			return 0;
		} else if (!strcmp(a, "--render-png") && val) {
			png = val;
			i++;
		} else if (!strcmp(a, "--size") && val) {
			if (sscanf(val, "%dx%d", &o.width, &o.height) < 1 || o.width < 300 || o.width > 16384 ||
			    o.height < 0 || o.height > 16384) {
				fprintf(stderr, "stallscope-viewer: --size wants WxH (300..16384), not '%s'\n", val);
				return 1;
			}
			headless_opt = true;
			i++;
		} else if ((!strcmp(a, "--from") || !strcmp(a, "--to")) && val) {
			if (parse_i64(val, a[2] == 'f' ? &o.from : &o.to) != 0) {
				fprintf(stderr, "stallscope-viewer: %s wants nanoseconds, not '%s'\n", a, val);
				return 1;
			}
			headless_opt = true;
			i++;
		} else if (!strcmp(a, "--color") && val) {
			if (strcmp(val, "location") && strcmp(val, "duration") && strcmp(val, "culprit")) {
				fprintf(stderr, "stallscope-viewer: --color is 'location', 'duration' or 'culprit', not '%s'\n",
					val);
				return 1;
			}
			o.color = val[0] == 'd' ? TL_COLOR_DURATION : val[0] == 'c' ? TL_COLOR_CULPRIT : TL_COLOR_LOCATION;
			headless_opt = true;
			i++;
		} else if (!strcmp(a, "--theme") && val) {
			if (strcmp(val, "light") && strcmp(val, "dark")) {
				fprintf(stderr, "stallscope-viewer: --theme is 'light' or 'dark', not '%s'\n", val);
				return 1;
			}
			o.dark = !strcmp(val, "dark");
			headless_opt = true;
			i++;
		} else if ((took = ss_stack_args_take(&sa, a, val)) != 0) {
			if (took < 0)
				return 1;
			headless_opt = true;
			i += took - 1;
		} else if (a[0] == '-' && a[1] && strcmp(a, "--")) {
			/* Anything else (GTK's own options included) goes to the app. */
			paths[np++] = a;
		} else if (strcmp(a, "--")) {
			paths[np++] = a;
		}
	}
	if (png) {
		if (np == 0) {
			fprintf(stderr, "stallscope-viewer: --render-png needs a PATH; see --help\n");
			return 1;
		}
		if (o.to <= o.from && (o.to || o.from)) {
			fprintf(stderr, "stallscope-viewer: --to must be after --from\n");
			return 1;
		}
		if (sa.any && sa.view < 0) {
			fprintf(stderr, "stallscope-viewer: --scope, --search, --diff-db ... go with --view flame, offcpu-flame"
					" or tree\n");
			return 1;
		}
		int rc = render_png(png, &o, &sa, paths, np);
		free(paths);
		return rc;
	}
	if (headless_opt) {
		fprintf(stderr, "stallscope-viewer: --size, --from, --to, --color, --theme, --view and the stack view"
				" options go with --render-png\n");
		return 1;
	}
	free(paths);
	return ss_app_run(argc, argv);
}
