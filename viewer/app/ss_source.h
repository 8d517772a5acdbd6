/*
 * ss_source.h - turns what the user gave (a database, a segment directory, or
 * segment files) into a database the timeline can open. Segments are imported
 * with the importer's C API (viewer/importer/import.h) into a database in the
 * user's cache directory (the GUI: reopening the same recording only imports
 * what is new) or into a temporary file (--render-png).
 */
#ifndef STALLSCOPE_SS_SOURCE_H
#define STALLSCOPE_SS_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

/* Called from the importing thread with 0..1 (or -1 for "busy, unknown"). */
typedef void (*ss_source_progress_fn)(double fraction, const char *phase, void *user);

/* True when the paths are one regular file that is not a segment: a
 * database (opening it says what is wrong when it is not one), never
 * imported. */
bool ss_source_is_database(const char *const *paths, size_t n);

/* The cache database for these segment paths (a hash of their absolute paths).
 * g_free() it. */
char *ss_source_cache_db(const char *const *paths, size_t n);

/* Imports paths into db_path. Returns 0, or -1 with err set (one line per
 * problem, without the command's prefix). cancel (may be NULL), set from
 * another thread, stops the import at the next segment: then -1 with err
 * "cancelled". Blocking: run it in a worker thread from the GUI. */
int ss_source_import(const char *const *paths, size_t n, const char *db_path, ss_source_progress_fn progress,
		     void *user, const volatile int *cancel, char *err, size_t errlen);

#endif /* STALLSCOPE_SS_SOURCE_H */
