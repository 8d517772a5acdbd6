/*
 * pg_tables.h - the tables of schema/stallscope.sql as data, for the PostgreSQL
 * store: each column's name and what it holds (a number, a text, or an id of one
 * of the model's kinds, so an import can move its new ids into a range it
 * reserved), and how the large tables are partitioned. The PostgreSQL DDL, the
 * COPY statements of an import and the pull into SQLite are all made from this
 * one list, so the two stores cannot drift apart column by column.
 */
#ifndef STALLSCOPE_PG_TABLES_H
#define STALLSCOPE_PG_TABLES_H

#include <stdbool.h>
#include <stddef.h>

#include "sink.h"

/* What a column holds: an id kind (enum ss_idkind), or one of these. */
enum { PGC_INT = -1, PGC_TEXT = -2 };

struct pg_col {
	const char *name;  /* as in SQL, quoted where it must be */
	int kind;
};

#define PG_MAX_COLS 20

struct pg_table {
	const char *name;
	struct pg_col cols[PG_MAX_COLS];
	size_t n_cols;
	/* Large tables are range-partitioned on an owner id (part_col, which holds
	 * ids of kind part_kind) in slices of part_width owners, so a month of a
	 * fleet's traces is many small tables that expire by DROP TABLE. NULL: one
	 * table. */
	const char *part_col;
	int part_kind;
	long long part_width;
	/* The key in SQL ("PRIMARY KEY (...)" or "UNIQUE (...)"), NULL: none. */
	const char *key;
	/* The id column whose new rows an import adds, for tables whose rows are
	 * never changed once written (deduplicated across the database): only ids
	 * from the import's own range are copied. NULL: every staged row is new. */
	const char *new_by_id;
};

extern const struct pg_table ss_pg_tables[];
extern const size_t ss_pg_n_tables;

const struct pg_table *ss_pg_table(const char *name);

#endif /* STALLSCOPE_PG_TABLES_H */
