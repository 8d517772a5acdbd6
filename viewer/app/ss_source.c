/*
 * ss_source.c - database or segments: see ss_source.h.
 *
 * The importer reports progress as a text line on its log stream; a
 * fopencookie() stream parses the percentage out of it, so the GUI's progress
 * bar needs no change to the importer's interface.
 */
#include "ss_source.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"
#include "tl_db.h"

bool ss_source_is_database(const char *const *paths, size_t n)
{
	/* A single file that is neither a segment nor a dial9 trace is taken
	 * for a database, so that a damaged or foreign one is reported as what
	 * it is ("not an SQLite database") instead of as a segment with a bad
	 * magic. */
	return n == 1 && g_file_test(paths[0], G_FILE_TEST_IS_REGULAR) &&
	       (tl_is_sqlite_file(paths[0]) ||
		!ss_import_is_trace_file(paths[0]));
}

char *ss_source_cache_db(const char *const *paths, size_t n)
{
	GChecksum *ck = g_checksum_new(G_CHECKSUM_SHA256);
	for (size_t i = 0; i < n; i++) {
		char *abs = g_canonicalize_filename(paths[i], NULL);
		g_checksum_update(ck, (const guchar *)abs, (gssize)strlen(abs) + 1);
		g_free(abs);
	}
	char *dir = g_build_filename(g_get_user_cache_dir(), "stallscope", NULL);
	g_mkdir_with_parents(dir, 0700);
	char name[40];
	snprintf(name, sizeof name, "%.16s.db", g_checksum_get_string(ck));
	char *db = g_build_filename(dir, name, NULL);
	g_free(dir);
	g_checksum_free(ck);
	return db;
}

struct log_sink {
	ss_source_progress_fn fn;
	void *user;
	GString *line;
	GString *all;          /* warnings, for the error message */
};

static void sink_line(struct log_sink *k, const char *l)
{
	double pct;
	if (sscanf(l, "import: %lf%%", &pct) == 1) {
		if (k->fn)
			k->fn(pct / 100.0, "importing", k->user);
	} else if (strncmp(l, "import: ", 8) == 0) {
		char phase[128];
		snprintf(phase, sizeof phase, "%s", l + 8);
		if (k->fn)
			k->fn(-1, g_strstrip(phase), k->user);
	} else if (*l) {
		/* The command's name is no news in a window. */
		if (strncmp(l, "stallscope import: ", 19) == 0)
			l += 19;
		g_string_append(k->all, l);
		g_string_append_c(k->all, '\n');
	}
}

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct log_sink *k = cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\r' || buf[i] == '\n') {
			sink_line(k, k->line->str);
			g_string_truncate(k->line, 0);
		} else {
			g_string_append_c(k->line, buf[i]);
		}
	}
	return (ssize_t)size;
}

int ss_source_import(const char *const *paths, size_t n, const char *db_path, ss_source_progress_fn progress,
		     void *user, const volatile int *cancel, char *err, size_t errlen)
{
	struct log_sink k = { progress, user, g_string_new(NULL), g_string_new(NULL) };
	cookie_io_functions_t io = { .write = sink_write };
	FILE *log = fopencookie(&k, "w", io);
	struct ss_import_options o = { 0 };
	o.db_path = db_path;
	o.log = log ? log : stderr;
	o.progress = log != NULL;
	o.cancel = cancel;
	struct ss_import_result res;
	int rc = ss_import_paths(&o, paths, n, &res);
	if (log)
		fclose(log);
	if (k.line->len)
		sink_line(&k, k.line->str);
	int ret = 0;
	if (rc == SS_IMPORT_CANCELLED) {
		snprintf(err, errlen, "cancelled");
		ret = -1;
	} else if (rc != SS_IMPORT_OK) {
		snprintf(err, errlen, "%s", rc == SS_IMPORT_NOTHING ? "nothing importable in the given paths"
							     : "the database could not be written");
		if (k.all->len) {
			size_t used = strlen(err);
			snprintf(err + used, errlen - used, ":\n%s", k.all->str);
		}
		ret = -1;
	}
	g_string_free(k.line, TRUE);
	g_string_free(k.all, TRUE);
	return ret;
}
