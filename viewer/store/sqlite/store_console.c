/*
 * store_console.c - see store_console.h. The connection's own settings close
 * every way out that SQLite has (a write, an attached file, an extension);
 * the authorizer refuses the statements that would try, with SQLite's
 * "not authorized", before they run.
 */
#include "store_console.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store_open.h"

/* PRAGMAs that only describe the schema or the build. */
static const char *const read_pragmas[] = {
	"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
	"foreign_key_list", "function_list", "pragma_list", "collation_list", "compile_options",
	"database_list",
};

/* Functions that load code, touch files or change how text is tokenized. */
static const char *const denied_functions[] = {
	"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "sqlar_compress",
};

static bool in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcasecmp(name, list[i]) == 0)
			return true;
	return false;
}

int ss_store_console_authorize(void *ctx, int action, const char *a, const char *b, const char *db,
			       const char *trigger)
{
	(void)ctx;
	(void)db;
	(void)trigger;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		return in(b, denied_functions, sizeof denied_functions / sizeof *denied_functions) ? SQLITE_DENY
												   : SQLITE_OK;
	case SQLITE_PRAGMA:
		return in(a, read_pragmas, sizeof read_pragmas / sizeof *read_pragmas) ? SQLITE_OK : SQLITE_DENY;
	default:
		return SQLITE_DENY;
	}
}

int ss_store_open_console(const char *path, sqlite3 **out, char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	if (ss_store_open_readonly(path, true, &db, err, errlen) != 0)
		return -1;
	int on = 0;
	bool ok = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &on) == SQLITE_OK && on == 0;
	ok = ok && sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) == SQLITE_OK && on == 1;
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
	/* Functions with side effects may not run from views or triggers of a
	 * database someone sent. */
	ok = ok && sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on) == SQLITE_OK;
#endif
	ok = ok && sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL) == SQLITE_OK;
	if (!ok) {
		snprintf(err, errlen, "%s: cannot make the connection read-only: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -1;
	}
	/* No database but the trace: ATTACH (and VACUUM INTO, which attaches
	 * its target) fail even before the authorizer is asked. */
	sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
	sqlite3_set_authorizer(db, ss_store_console_authorize, NULL);
	*out = db;
	return 0;
}

int ss_store_console_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char **tail)
{
	*st = NULL;
	return sqlite3_prepare_v2(db, sql, -1, st, tail);
}
