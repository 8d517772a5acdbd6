/*
 * cmd_export_db.c - `stallscope export --db postgresql://... --recording ID -o
 * local.db`: pulls recordings out of the PostgreSQL store into a new SQLite
 * database, with the ids they have there, which the viewer, the report and
 * sqlite3 open as an imported trace. cmd_export_entry() is the `export`
 * command: with --db it comes here, otherwise to cmd_export.c.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "db_args.h"
#include "pg_store.h"

void cmd_export_db_help(FILE *out)
{
	fputs("usage: stallscope export --db URL --recording ID [--recording ID]... -o local.db\n"
	      "\n"
	      "Pulls recordings (by id: see 'SELECT id, host, executable FROM recordings') out of a\n"
	      "PostgreSQL store (see 'stallscope import --db') into a new SQLite database in the\n"
	      "same schema, with the same ids, for the viewer (stallscope-viewer local.db), the\n"
	      "report or sqlite3. The import_* state tables stay behind: import further segments\n"
	      "into PostgreSQL, not into the pulled file.\n"
	      "\n"
	      "  --db URL           the PostgreSQL database (libpq URI or connection string)\n"
	      "  --recording ID     a recording to pull (repeatable)\n"
	      "  -o, --output FILE  the SQLite database to create (must not exist)\n"
	      "  -q, --quiet        no progress or summary\n"
	      "\n"
	      "Exit status: 0 pulled; 1 bad arguments, an unknown recording, a database that\n"
	      "cannot be reached or a file that exists already.\n", out);
}

int cmd_export_db(int argc, char **argv)
{
	const char *url = NULL, *out = NULL;
	bool quiet = false;
	int64_t *ids = calloc((size_t)argc, sizeof *ids);
	size_t n_ids = 0;
	int rc = SS_EXIT_USAGE;
	if (!ids)
		return rc;
	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *v;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			cmd_export_db_help(stdout);
			free(ids);
			return SS_EXIT_OK;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--db", &missing))) {
			url = v;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--output", &missing)) ||
			   (v = ss_cli_opt(argc, argv, &i, "-o", &missing))) {
			out = v;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--recording", &missing))) {
			char *end;
			long long id = strtoll(v, &end, 10);
			if (*end || id <= 0) {
				fprintf(stderr, "stallscope export: --recording '%s' is not a recording id\n", v);
				goto done;
			}
			ids[n_ids++] = id;
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else {
			fprintf(stderr, "stallscope export: %s '%s'; see 'stallscope export --help'\n",
				missing ? "a value is missing after" : "unknown argument with --db", argv[i]);
			goto done;
		}
	}
	if (!ss_pg_is_url(url) || !out || !n_ids) {
		fprintf(stderr, "stallscope export: %s; see 'stallscope export --help'\n",
			!ss_pg_is_url(url) ? "--db needs a PostgreSQL URL (postgresql://...)"
			: !out		   ? "no output file (-o local.db)"
					   : "no --recording ID");
		goto done;
	}
	struct ss_pg pg;
	struct ss_pg_scope sc = { ids, n_ids, NULL, 0, 0 };
	size_t n = 0;
	if (ss_pg_open(&pg, url) != 0 || ss_pg_pull(&pg, &sc, out, &n, stderr, !quiet && isatty(2)) != 0) {
		fprintf(stderr, "stallscope export: %s\n", pg.err);
	} else {
		if (!quiet)
			fprintf(stderr, "stallscope export: %zu recording%s from %s -> %s\n", n, n == 1 ? "" : "s",
				pg.shown, out);
		rc = SS_EXIT_OK;
	}
	ss_pg_close(&pg);
done:
	free(ids);
	return rc;
}

/* `export`: the pull with --db; the trace formats (--format) are another
 * command's (cmd_export.c) and join here when both are built. */
int cmd_export_entry(int argc, char **argv)
{
	bool help = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--db") == 0 || strncmp(argv[i], "--db=", 5) == 0)
			return cmd_export_db(argc, argv);
		help |= strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
	}
	if (help) {
		cmd_export_entry_help(stdout);
		return 0;
	}
	return cmd_export(argc, argv);
}

void cmd_export_entry_help(FILE *out)
{
	cmd_export_help(out);
	fputs("\nOut of a PostgreSQL store:\n\n", out);
	cmd_export_db_help(out);
}
