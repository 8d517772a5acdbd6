/*
 * store_open.h - opening a stallscope database that someone may have sent, for
 * reading (the report, the viewer, exports): clear one-line messages for the
 * usual mistakes (a directory, a missing or empty file, a file that is not
 * SQLite, an SQLite file that is not a stallscope database), and a time budget
 * that stops any statement of a hostile database (a recursive view that never
 * ends, a table of a billion rows) instead of hanging.
 *
 * viewer/store/ holds what reads and writes the stored trace; it depends on
 * SQLite and libc only, and nothing in it draws or prints.
 */
#ifndef STALLSCOPE_STORE_OPEN_H
#define STALLSCOPE_STORE_OPEN_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The time budget of a connection: every statement checks it every few
 * thousand virtual machine steps, and fails with SQLITE_INTERRUPT once it is
 * spent (expired is then set). Owned by the caller; must outlive the
 * connection or be removed with ss_store_budget(db, NULL, 0). */
struct ss_store_budget {
	int64_t deadline_ns;  /* CLOCK_MONOTONIC; 0 = no limit */
	double seconds;       /* what was granted, for messages */
	bool expired;
};

/* Opens path read-only. Returns 0, or -1 with a one-line message in err (the
 * path and what is wrong, never SQL text); *out is NULL then. With
 * need_tables, the stallscope tables (recordings, workers, polls) must exist. */
int ss_store_open_readonly(const char *path, bool need_tables, sqlite3 **out, char *err, size_t errlen);

/* Grants db seconds from now (0: no limit) through b. Not thread-safe for
 * one connection; the handler runs on the thread stepping a statement. */
void ss_store_budget(sqlite3 *db, struct ss_store_budget *b, double seconds);

/* A message for the error that stopped a statement: "took longer than N s"
 * when the budget ran out, else SQLite's message. */
void ss_store_error(sqlite3 *db, const struct ss_store_budget *b, char *err, size_t errlen);

#endif /* STALLSCOPE_STORE_OPEN_H */
