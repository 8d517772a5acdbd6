/*
 * scope.h - the part of a stored trace an analysis looks at: one recording or
 * all, and a time window. Windows are given as the viewer's ruler shows time,
 * ns since the first event of the trace (of the chosen recording), and kept
 * here in the database's own clock so that queries compare stored times.
 */
#ifndef STALLSCOPE_SCOPE_H
#define STALLSCOPE_SCOPE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ss_scope {
	int64_t recording_id;  /* 0: every recording */
	int64_t from, to;      /* database ns, [from, to); INT64_MIN / INT64_MAX when open */
	int64_t origin;        /* the first event's time, what relative times count from */
	int64_t end;           /* the last event's time */
	bool windowed;         /* from or to was given */
};

/* Fills s for recording (0: all) and the relative window [from_rel, to_rel)
 * (has_from / has_to say which were given). Returns 0, or -1 with a message
 * in err: an unknown recording, an empty window, a database without data. */
int ss_scope_resolve(sqlite3 *db, struct ss_scope *s, int64_t recording, bool has_from, int64_t from_rel,
		     bool has_to, int64_t to_rel, char *err, size_t errlen);

/* Binds the scope to a read query's parameters ?1 (recording, 0 = all),
 * ?2 (from) and ?3 (to). */
void ss_scope_bind(sqlite3_stmt *st, const struct ss_scope *s);

/* Whether an interval [ts, ts + dur) overlaps the window as the SQL of
 * read_queries.c has it ("ts < to AND ts + dur >= from", the sum past int64
 * in doubles as SQLite does), and whether an instant is in it ("ts >= from
 * AND ts < to"): the scans read every row and test in C, cheaper than having
 * SQLite read the time columns twice. */
bool ss_scope_overlaps(const struct ss_scope *s, int64_t ts, int64_t dur);
bool ss_scope_holds(const struct ss_scope *s, int64_t ts);

/* A duration or time with a unit as people type it ("1500000", "1.5ms",
 * "2s", "250us", "40ns") into ns. Returns 0, or -1 when it is not one. */
int ss_parse_ns(const char *text, int64_t *out);

/* The SQL condition that keeps the finding's rows in scope, for the SQL a
 * finding prints: " AND <ts> < to AND <end> >= from" for intervals (end_expr
 * non-NULL) or " AND <ts> >= from AND <ts> < to" for instants; "" without a
 * window. ts_expr and end_expr are column expressions. */
void ss_scope_sql(const struct ss_scope *s, const char *ts_expr, const char *end_expr, char *buf, size_t len);

#endif /* STALLSCOPE_SCOPE_H */
