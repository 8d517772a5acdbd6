/*
 * target.h - the database file an import writes: a new database is built under
 * a temporary name beside it and renamed into place when complete, so a killed
 * or failed first import never leaves a half-built file at the target (see
 * target.c). Not thread-safe per target.
 */
#ifndef STALLSCOPE_TARGET_H
#define STALLSCOPE_TARGET_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

struct ss_target {
	const char *path;        /* where the database must end up */
	const char *write_path;  /* what to open: path, or tmp while building */
	bool building;           /* a new database, under tmp */
	bool replace_empty;      /* path exists as an empty file */
	char tmp[PATH_MAX];
	char err[PATH_MAX + 128];
	pthread_t writeback;     /* ss_target_writeback's thread, while writing_back */
	bool writing_back;
};

/* Decides where to write path; removes temporary files of interrupted imports
 * of the same target. ":memory:" is written as is. Returns 0, or -1 with a
 * message in t->err. */
int ss_target_begin(struct ss_target *t, const char *path, FILE *log, bool quiet);
/* The load is over: what of the new database is in the page cache goes to
 * the disk from now on, on a thread of its own (ss_target_commit's sync then
 * waits only for what changed since). Nothing for a database written in
 * place, or where no thread can be had. */
void ss_target_writeback(struct ss_target *t);
/* The database at write_path is complete and closed: sync it and move it to
 * path. Returns 0, or -1 with a message in t->err (the temporary file is then
 * removed). Does nothing when the database was written in place. */
int ss_target_commit(struct ss_target *t);
/* The import failed or imported nothing: remove the temporary file. */
void ss_target_abort(struct ss_target *t);

#endif /* STALLSCOPE_TARGET_H */
