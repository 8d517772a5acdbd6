/*
 * cmd_import.c - `stallscope import PATH... -o trace.db`: segment files (and dial9 traces) and
 * directories, in any order, into the SQLite schema (schema/stallscope.sql);
 * `--db postgresql://...` instead puts them in the shared PostgreSQL store.
 * Exit status is non-zero only when nothing was importable or the database cannot
 * be written; damaged segments are imported up to their damage with a warning.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "import.h"
#include "pg_store.h"

void cmd_import_help(FILE *out)
{
	fputs("usage: stallscope import [options] PATH... -o trace.db\n"
	      "       stallscope import [options] PATH... --db postgresql://[USER@]HOST[:PORT]/DB\n"
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
	      "  -o, --output DB      the database to write (this or --db is required)\n"
	      "  --db URL             a PostgreSQL database shared by many hosts instead (a\n"
	      "                       libpq URI or connection string; the schema is created\n"
	      "                       in an empty database); rows go in with COPY, in one\n"
	      "                       transaction; see the README's 'Fleets' section\n"
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

/* The importer building the PostgreSQL store's stage (the store does not know it). */
struct pg_run {
	const struct ss_import_options *o;
	const char *const *paths;
	size_t n;
	struct ss_import_result *res;
};

static int pg_stage(void *ctx, const char *stage_db, const struct ss_sqlite_stage *stage, const char *target_name,
		    uint64_t *imported, uint64_t *events)
{
	struct pg_run *pr = ctx;
	struct ss_import_options o = *pr->o;
	o.db_path = stage_db;
	o.stage = stage;
	o.target_name = target_name;
	int r = ss_import_paths(&o, pr->paths, pr->n, pr->res);
	*imported = pr->res->imported;
	*events = pr->res->events;
	return r;
}

int cmd_import(int argc, char **argv)
{
	struct ss_import_options o = { 0 };
	const char *db = NULL;
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
		} else if (strcmp(a, "--db") == 0) {
			if (++i >= argc)
				goto missing;
			db = argv[i];
		} else if (strncmp(a, "--db=", 5) == 0) {
			db = a + 5;
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
	if (db && o.db_path) {
		fprintf(stderr, "stallscope import: -o and --db exclude each other; see 'stallscope import --help'\n");
		goto out;
	}
	if (db && !ss_pg_is_url(db)) {
		fprintf(stderr, "stallscope import: --db '%s' is not a PostgreSQL URL (postgresql://...); for an"
			" SQLite file use -o\n", db);
		goto out;
	}
	if ((!o.db_path && !db) || np == 0) {
		fprintf(stderr, "stallscope import: %s; see 'stallscope import --help'\n",
			!o.db_path && !db ? "no output database (-o trace.db or --db URL)"
					  : "no segment file or directory given");
		goto out;
	}
	o.debug_dirs = dirs;
	o.n_debug_dirs = nd;
	o.progress = isatty(2);
	struct ss_import_result res;
	int r;
	if (db) {
		struct pg_run pr = { &o, paths, np, &res };
		r = ss_pg_import(db, o.quiet, o.log, pg_stage, &pr);
		if (r < 0)
			r = SS_IMPORT_OUTPUT;
	} else {
		r = ss_import_paths(&o, paths, np, &res);
	}
	rc = r == SS_IMPORT_OK ? SS_EXIT_OK : r == SS_IMPORT_NOTHING ? SS_EXIT_USAGE : SS_EXIT_DAMAGE;
	goto out;
missing:
	fprintf(stderr, "stallscope import: '%s' needs a value\n", argv[argc - 1]);
out:
	free(paths);
	free(dirs);
	return rc;
}
