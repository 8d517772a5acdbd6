/*
 * cmd_report_db.c - `stallscope report --db postgresql://... [--recording ID |
 * --host H --from TIME --to TIME]`: the recordings in scope are pulled into a
 * scratch SQLite database (the pull of `export --db`) and the report runs on it
 * with every other option as given, so the output is the one the same
 * recordings give from an SQLite import. The entry point of `report` sends
 * plain `report trace.db` on to cmd_report().
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "db_args.h"
#include "pg_store.h"

void cmd_report_entry_help(FILE *out)
{
	cmd_report_help(out);
	fputs("\n"
	      "usage: stallscope report --db URL [--recording ID]... [options above]\n"
	      "       stallscope report --db URL [--host H] [--from TIME] [--to TIME] [options above]\n"
	      "\n"
	      "Reports on recordings of a PostgreSQL store (see 'stallscope import --db'): one\n"
	      "or more by id, or those of host H (default: every host) whose events overlap\n"
	      "[--from, --to]. Without --recording, --from and --to are wall-clock times, UTC:\n"
	      "2026-12-01T10:00:00Z, '2026-12-01 10:00', 2026-12-01, now, or an age before now\n"
	      "(-1d, -90m); with --recording they are times into the trace as above. The\n"
	      "recordings are pulled into a scratch SQLite file and reported as from an import.\n", out);
}

static bool has_db(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--db") == 0 || strncmp(argv[i], "--db=", 5) == 0)
			return true;
	return false;
}

/* The report's own options that take a value as the next argument. */
static bool takes_value(const char *a)
{
	static const char *const with_value[] = { "--fail-on", "--threshold", "--top", "--timeout" };
	for (size_t i = 0; i < sizeof with_value / sizeof with_value[0]; i++)
		if (strcmp(a, with_value[i]) == 0)
			return true;
	return false;
}

static int report_db(int argc, char **argv)
{
	const char *url = NULL, *host = NULL, *from = NULL, *to = NULL;
	int64_t *ids = calloc((size_t)argc, sizeof *ids);
	char **rest = calloc((size_t)argc + 4, sizeof *rest);
	char **fromto = calloc((size_t)argc, sizeof *fromto);
	size_t n_ids = 0, n_rest = 0, n_ft = 0;
	int rc = SS_EXIT_USAGE;
	if (!ids || !rest || !fromto)
		goto out;
	rest[n_rest++] = argv[0];
	rest[n_rest++] = NULL; /* the scratch database */
	for (int i = 1; i < argc; i++) {
		bool missing = false;
		int at = i;
		const char *v;
		if ((v = ss_cli_opt(argc, argv, &i, "--db", &missing))) {
			url = v;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--host", &missing))) {
			host = v;
		} else if ((v = ss_cli_opt(argc, argv, &i, "--from", &missing)) ||
			   (v = ss_cli_opt(argc, argv, &i, "--to", &missing))) {
			*(argv[at][2] == 'f' ? &from : &to) = v;
			for (int k = at; k <= i; k++)
				fromto[n_ft++] = argv[k];
		} else if ((v = ss_cli_opt(argc, argv, &i, "--recording", &missing))) {
			char *end;
			long long id = strtoll(v, &end, 10);
			if (*end || id <= 0) {
				fprintf(stderr, "stallscope report: --recording '%s' is not a recording id\n", v);
				goto out;
			}
			ids[n_ids++] = id;
			for (int k = at; k <= i; k++)
				rest[n_rest++] = argv[k];
		} else if (missing) {
			fprintf(stderr, "stallscope report: '%s' needs a value\n", argv[i]);
			goto out;
		} else if (argv[i][0] != '-') {
			fprintf(stderr, "stallscope report: give either a database file or --db URL, not both\n");
			goto out;
		} else if (takes_value(argv[i]) && i + 1 < argc) {
			rest[n_rest++] = argv[i++];
			rest[n_rest++] = argv[i];
		} else {
			rest[n_rest++] = argv[i];
		}
	}
	if (!ss_pg_is_url(url)) {
		fprintf(stderr, "stallscope report: --db '%s' is not a PostgreSQL URL (postgresql://...)\n",
			url ? url : "");
		goto out;
	}
	struct ss_pg_scope sc = { ids, n_ids, host, 0, 0 };
	if (n_ids) {
		if (host) {
			fprintf(stderr, "stallscope report: --recording and --host exclude each other\n");
			goto out;
		}
		for (size_t k = 0; k < n_ft; k++)
			rest[n_rest++] = fromto[k];
	} else if ((from && ss_cli_parse_wall(from, &sc.from_ns) != 0) || (to && ss_cli_parse_wall(to, &sc.to_ns) != 0)) {
		fprintf(stderr, "stallscope report: '%s' is not a time (2026-12-01T10:00:00Z, 2026-12-01, now, -1d)\n",
			from && ss_cli_parse_wall(from, &sc.from_ns) != 0 ? from : to);
		goto out;
	}
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200];
	snprintf(dir, sizeof dir, "%s/stallscope-report-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("stallscope report: scratch directory");
		goto out;
	}
	snprintf(path, sizeof path, "%s/scope.db", dir);
	struct ss_pg pg;
	size_t n = 0;
	if (ss_pg_open(&pg, url) != 0 || ss_pg_pull(&pg, &sc, path, &n, stderr, isatty(2)) != 0) {
		fprintf(stderr, "stallscope report: %s\n", pg.err);
	} else if (n == 0) {
		fprintf(stderr, "stallscope report: %s holds no recording%s%s in that time\n", pg.shown,
			host ? " of host " : "", host ? host : "");
	} else {
		rest[1] = path;
		cmd_report_name_as(pg.shown);
		rc = cmd_report((int)n_rest, rest);
		cmd_report_name_as(NULL);
	}
	ss_pg_close(&pg);
	unlink(path);
	rmdir(dir);
out:
	free(ids);
	free(rest);
	free(fromto);
	return rc;
}

int cmd_report_entry(int argc, char **argv)
{
	if (has_db(argc, argv))
		return report_db(argc, argv);
	return cmd_report(argc, argv);
}
