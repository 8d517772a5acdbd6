/*
 * schema_sql.h - the text of schema/stallscope.sql, embedded at build time
 * (embed_sql.py). The part before the "-- @indexes" line creates tables and views;
 * the part after it creates the indexes, which the importer runs before the first
 * row of a fresh database and after the load otherwise (db.c).
 */
#ifndef STALLSCOPE_SCHEMA_SQL_H
#define STALLSCOPE_SCHEMA_SQL_H

extern const char ss_schema_sql[];
/* What version N of the schema added to version N - 1 (db.c), or NULL. */
extern const char *const ss_schema_migrations[];

#define SS_SCHEMA_VERSION 11
#define SS_SCHEMA_INDEX_MARKER "-- @indexes"

#endif /* STALLSCOPE_SCHEMA_SQL_H */
