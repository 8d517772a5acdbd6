/*
 * cli_open.c - see cli_open.h.
 */
#include "cli_open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_scope_option(const char *cmd, const char *opt, const char *v, struct cli_scope_args *a)
{
	if (!strcmp(opt, "--from") || !strcmp(opt, "--to")) {
		int64_t t;
		if (ss_parse_ns(v, &t) != 0) {
			fprintf(stderr, "stallscope %s: %s takes a time since the trace's start: ns, or with a unit "
				"(250us, 1.5ms, 2s), not '%s'\n", cmd, opt, v);
			return -1;
		}
		if (opt[2] == 'f') {
			a->from = t;
			a->has_from = true;
		} else {
			a->to = t;
			a->has_to = true;
		}
		return 0;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!*v || *end || errno || n < 1) {
		fprintf(stderr, "stallscope %s: %s takes a recording id (the recordings table's id, 1 or more), not "
			"'%s'\n", cmd, opt, v);
		return -1;
	}
	a->recording = n;
	return 0;
}

int cli_open_trace(const char *cmd, const char *side, const char *path, double timeout,
		   const struct cli_scope_args *a, sqlite3 **db, struct ss_store_budget *b, struct ss_scope *s)
{
	char err[1024], who[16] = "";
	if (side)
		snprintf(who, sizeof who, "%.8s: ", side);
	if (ss_store_open_readonly(path, true, db, err, sizeof err) != 0) {
		fprintf(stderr, "stallscope %s: %s%s\n", cmd, who, err);
		*db = NULL;
		return -1;
	}
	/* A database someone sent may hold anything: every statement shares
	 * one time budget instead of running for ever. */
	ss_store_budget(*db, b, timeout);
	if (ss_scope_resolve(*db, s, a->recording, a->has_from, a->from, a->has_to, a->to, err, sizeof err) == 0)
		return 0;
	if (b->expired)
		ss_store_error(*db, b, err, sizeof err);
	if (strstr(err, "no recording was imported"))
		fprintf(stderr, "stallscope %s: %s%s holds no data: no recording was imported into it (import segments "
			"with 'stallscope import DIR -o %s')\n", cmd, who, path, path);
	else
		fprintf(stderr, "stallscope %s: %s%s: %s\n", cmd, who, path, err);
	sqlite3_close(*db);
	*db = NULL;
	return -1;
}
