/*
 * db_args.h - arguments of the commands that work on the PostgreSQL store
 * (import --db, report --db, export --db, prune): ages and wall-clock times.
 */
#ifndef STALLSCOPE_DB_ARGS_H
#define STALLSCOPE_DB_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* "30d", "12h", "90m", "45s", "2w" (a number and a unit). Returns 0, or -1. */
int ss_cli_parse_age(const char *s, int64_t *ns);
/* A wall-clock time, UTC: "2026-12-01T10:00:00Z", "2026-12-01 10:00",
 * "2026-12-01", "now", or an age before now ("-1d", "-90m"). Returns 0 with ns
 * since 1970, or -1. */
int ss_cli_parse_wall(const char *s, int64_t *ns);
/* The value of option name at argv[*i] ("--name V" or "--name=V"), advancing
 * *i; NULL when argv[*i] is not that option. missing is set when the value is
 * absent. */
const char *ss_cli_opt(int argc, char **argv, int *i, const char *name, bool *missing);

#endif /* STALLSCOPE_DB_ARGS_H */
