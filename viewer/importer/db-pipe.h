/*
 * db-pipe.h - the row pipeline between the importer (producer) and the thread
 * that binds and inserts rows into SQLite (consumer). Internal to db.c and
 * db_pipe.c.
 */
#ifndef STALLSCOPE_DB_PIPE_H
#define STALLSCOPE_DB_PIPE_H

#include "db.h"

int ss_db_pipe_start(struct ss_db *d, bool threaded);
void ss_db_pipe_stop(struct ss_db *d);

#endif /* STALLSCOPE_DB_PIPE_H */
