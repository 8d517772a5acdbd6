/*
 * cmd_prune.c - `stallscope prune --db URL --older-than AGE`: expires old
 * recordings from the PostgreSQL store (viewer/store/postgres/pg_prune.c).
 */
#include <string.h>

#include "commands.h"
#include "db_args.h"
#include "pg_store.h"

void cmd_prune_help(FILE *out)
{
	fputs("usage: stallscope prune --db URL --older-than AGE [--dry-run]\n"
	      "\n"
	      "Deletes from a PostgreSQL store (see 'stallscope import --db') every recording\n"
	      "whose last event is older than AGE (30d, 12h, 90m, 2w), with all its rows, in\n"
	      "one transaction. Partitions of the large tables that hold only such recordings\n"
	      "are dropped whole, so expiring a month of a fleet's traces does not visit rows.\n"
	      "Run it from cron; it can run while imports go on.\n"
	      "\n"
	      "  --db URL           the PostgreSQL database\n"
	      "  --older-than AGE   the age of the newest event of a recording to delete\n"
	      "  --dry-run          count what would go, change nothing\n"
	      "  -q, --quiet        no summary\n"
	      "\n"
	      "Exit status: 0 done (possibly nothing to delete); 1 bad arguments or a database\n"
	      "error (then nothing was deleted).\n", out);
}

int cmd_prune(int argc, char **argv)
{
	const char *url = NULL, *age = NULL;
	bool dry = false, quiet = false;
	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *v;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			cmd_prune_help(stdout);
			return SS_EXIT_OK;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--db", &missing))) {
			url = v;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--older-than", &missing))) {
			age = v;
		} else if (strcmp(argv[i], "--dry-run") == 0) {
			dry = true;
		} else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
			quiet = true;
		} else {
			fprintf(stderr, "stallscope prune: %s '%s'; see 'stallscope prune --help'\n",
				missing ? "a value is missing after" : "unknown argument", argv[i]);
			return SS_EXIT_USAGE;
		}
	}
	int64_t ns;
	if (!ss_pg_is_url(url) || !age || ss_cli_parse_age(age, &ns) != 0) {
		fprintf(stderr, "stallscope prune: %s; see 'stallscope prune --help'\n",
			!ss_pg_is_url(url) ? "--db needs a PostgreSQL URL (postgresql://...)"
			: !age		   ? "no --older-than AGE"
					   : "--older-than wants a number and a unit: 30d, 12h, 90m, 2w");
		return SS_EXIT_USAGE;
	}
	struct ss_pg pg;
	struct ss_pg_prune_result res;
	int rc = SS_EXIT_OK;
	if (ss_pg_open(&pg, url) != 0 || ss_pg_prune(&pg, ns, dry, &res, quiet ? NULL : stderr) != 0) {
		fprintf(stderr, "stallscope prune: %s\n", pg.err);
		rc = SS_EXIT_USAGE;
	} else if (!quiet && res.recordings == 0) {
		fprintf(stderr, "stallscope prune: no recording older than %s in %s\n", age, pg.shown);
	}
	ss_pg_close(&pg);
	return rc;
}
