/*
 * cmd_import.c - `stallscope import PATH... -o trace.db`: segment files (and dial9 traces) and
 * directories, in any order, into the SQLite schema (schema/stallscope.sql).
 * Exit status is non-zero only when nothing was importable or the database cannot
 * be written; damaged segments are imported up to their damage with a warning.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "import.h"

void cmd_import_help(FILE *out)
{
	fputs("usage: stallscope import [options] PATH... -o trace.db\n"
	      "\n"
	      "Imports segment files (PREFIX.N.bin, PREFIX.N.bin.active) and directories of\n"
	      "them into an SQLite database (created if needed; it can hold several\n"
	      "recordings). Importing again adds only segments that are new or grew.\n"
	      "Damaged segments contribute every intact block; the damage is recorded in\n"
	      "the segments table and reported.\n"
	      "\n"
	      "dial9 (Tokio) traces are read too, raw or gzip (PREFIX.N.bin.gz), told apart\n"
	      "by their content; event types the schema has no table for are kept in\n"
	      "other_events, and the summary says which.\n"
	      "\n"
	      "options:\n"
	      "  -o, --output DB      the database to write (required)\n"
	      "  --debug-dir DIR      also look for debug info here, by build id or name\n"
	      "                       (repeatable; /usr/lib/debug is always searched)\n"
	      "  --no-symbols         do not symbolize stack frames\n"
	      "  -q, --quiet          no progress, warnings or summary\n"
	      "  -h, --help           this text\n"
	      "\n"
	      "Query it with sqlite3; schema/stallscope.sql documents every table.\n"
	      "Exit status: 0 imported (possibly with damage warnings), 1 nothing was\n"
	      "importable or bad arguments, 2 the database could not be written.\n", out);
}

int cmd_import(int argc, char **argv)
{
	struct ss_import_options o = { 0 };
	const char **paths = calloc((size_t)argc, sizeof *paths);
	const char **dirs = calloc((size_t)argc, sizeof *dirs);
	size_t np = 0, nd = 0;
	int rc = SS_EXIT_USAGE;
	if (!paths || !dirs)
		goto out;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cmd_import_help(stdout);
			rc = SS_EXIT_OK;
			goto out;
		} else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (++i >= argc)
				goto missing;
			o.db_path = argv[i];
		} else if (strncmp(a, "--output=", 9) == 0) {
			o.db_path = a + 9;
		} else if (strcmp(a, "--debug-dir") == 0) {
			if (++i >= argc)
				goto missing;
			dirs[nd++] = argv[i];
		} else if (strncmp(a, "--debug-dir=", 12) == 0) {
			dirs[nd++] = a + 12;
		} else if (strcmp(a, "--no-symbols") == 0) {
			o.no_symbols = true;
		} else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
			o.quiet = true;
		} else if (strcmp(a, "--") == 0) {
			while (++i < argc)
				paths[np++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "stallscope import: unknown option '%s'; see 'stallscope import --help'\n", a);
			goto out;
		} else {
			paths[np++] = a;
		}
	}
	if (!o.db_path || np == 0) {
		fprintf(stderr, "stallscope import: %s; see 'stallscope import --help'\n",
			!o.db_path ? "no output database (-o trace.db)" : "no segment file or directory given");
		goto out;
	}
	o.debug_dirs = dirs;
	o.n_debug_dirs = nd;
	o.progress = isatty(2);
	struct ss_import_result res;
	int r = ss_import_paths(&o, paths, np, &res);
	rc = r == SS_IMPORT_OK ? SS_EXIT_OK : r == SS_IMPORT_NOTHING ? SS_EXIT_USAGE : SS_EXIT_DAMAGE;
	goto out;
missing:
	fprintf(stderr, "stallscope import: '%s' needs a value\n", argv[argc - 1]);
out:
	free(paths);
	free(dirs);
	return rc;
}
