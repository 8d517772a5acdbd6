/*
 * store_console.h - a connection for SQL that a user types (the viewer's SQL
 * console): it can read every table and view of the trace and nothing else.
 * No statement it runs can change the database or any other file, attach
 * another database, or load an extension; this is enforced by the connection
 * (read-only open, query_only, no extension loading, no attached databases,
 * defensive mode, untrusted schema) and by an authorizer that allows reads
 * only, never by looking at the text.
 *
 * What the authorizer allows: SELECT, reading any column, recursive CTEs,
 * functions other than load_extension (and the few that write or reach
 * outside: see store_console.c), and the PRAGMAs that only describe the
 * schema (table_info, index_list ...), without an argument that sets.
 * Everything else (INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, ATTACH,
 * DETACH, transactions, savepoints, ANALYZE, REINDEX, VACUUM, other
 * PRAGMAs) is refused with SQLITE_AUTH: "not authorized".
 */
#ifndef STALLSCOPE_STORE_CONSOLE_H
#define STALLSCOPE_STORE_CONSOLE_H

#include <sqlite3.h>
#include <stddef.h>

/* Opens path (a stallscope database, as ss_store_open_readonly checks it)
 * for console use. Returns 0, or -1 with a one-line message in err; *out is
 * NULL then. Like every reading connection it belongs to one thread at a
 * time; sqlite3_interrupt may come from any thread. */
int ss_store_open_console(const char *path, sqlite3 **out, char *err, size_t errlen);

/* Prepares the first statement of the user's text sql on a console
 * connection (what the authorizer refuses fails here); *tail is where the
 * next one starts, *st NULL for a comment or white space. SQLite's result
 * code. The user's SQL is the one statement not named in view_queries.c or
 * read_queries.c: the connection, not the text, keeps it harmless. */
int ss_store_console_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, const char **tail);

/* The authorizer itself (tests call it through a connection, not directly). */
int ss_store_console_authorize(void *ctx, int action, const char *a, const char *b, const char *db,
			       const char *trigger);

#endif /* STALLSCOPE_STORE_CONSOLE_H */
