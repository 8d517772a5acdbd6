/*
 * cli_open.h - how a command opens a database someone sent: read-only, every
 * read under one time budget, the scope resolved, and what is wrong said in
 * one line on standard error. Used by `export` and `compare`.
 */
#ifndef STALLSCOPE_CLI_OPEN_H
#define STALLSCOPE_CLI_OPEN_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "scope.h"
#include "store_open.h"

/* The scope as a command's options gave it. */
struct cli_scope_args {
	int64_t recording;       /* 0: every recording */
	bool has_from, has_to;
	int64_t from, to;        /* ns since the first event */
};

/* The value v of a scope option opt: "--from" and "--to" (a time since the
 * trace's start: ns, or with a unit), or a recording id for any option
 * starting "--recording" (--recording-a of compare too), which sets
 * a->recording. Returns 0, or -1 having printed why as "stallscope CMD: ...". */
int cli_scope_option(const char *cmd, const char *opt, const char *v, struct cli_scope_args *a);

/* Opens path and resolves its scope into *s. cmd is the command's name
 * ("export"), side "A" or "B" for a command of two databases (NULL: none),
 * timeout the budget's seconds (0: none). Returns 0 with *db open and *b
 * installed on it (the caller closes db), or -1 having printed why, with *db
 * NULL. */
int cli_open_trace(const char *cmd, const char *side, const char *path, double timeout,
		   const struct cli_scope_args *a, sqlite3 **db, struct ss_store_budget *b, struct ss_scope *s);

#endif /* STALLSCOPE_CLI_OPEN_H */
