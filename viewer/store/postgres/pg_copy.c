/*
 * pg_copy.c - rows between SQLite and PostgreSQL in COPY's text format: out of
 * PostgreSQL into SQLite statements (pulls, and the seeding of a staged
 * import), and out of SQLite into `COPY ... FROM STDIN` (an import's rows),
 * moving new ids into the range the import reserved on the way.
 *
 * Texts go to PostgreSQL as UTF-8: SQLite holds whatever bytes a segment
 * carried, so a NUL is dropped and an invalid sequence becomes U+FFFD (the
 * database would refuse the row otherwise).
 */
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "pg_store.h"
#include "pg_tables.h"

#define PGC(c) ((PGconn *)(c))

/* ---- out of PostgreSQL ---------------------------------------------------------- */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Splits one COPY text row in place: fields, unescaped; NULL for \N. */
static size_t split_row(char *s, size_t len, char **v, size_t max)
{
	size_t n = 0;
	if (len && s[len - 1] == '\n')
		len--;
	char *end = s + len, *r = s;
	while (n < max) {
		char *start = r, *w = r;
		bool null = r + 2 <= end && r[0] == '\\' && r[1] == 'N' && (r + 2 == end || r[2] == '\t');
		while (r < end && *r != '\t') {
			if (*r != '\\' || r + 1 >= end) {
				*w++ = *r++;
				continue;
			}
			char c = r[1];
			r += 2;
			switch (c) {
			case 'b': *w++ = '\b'; break;
			case 'f': *w++ = '\f'; break;
			case 'n': *w++ = '\n'; break;
			case 'r': *w++ = '\r'; break;
			case 't': *w++ = '\t'; break;
			case 'v': *w++ = '\v'; break;
			case 'x': {
				int x = 0, k = 0;
				while (k < 2 && r < end && hexval(*r) >= 0)
					x = x * 16 + hexval(*r++), k++;
				*w++ = (char)x;
				break;
			}
			default:
				if (c >= '0' && c <= '7') {
					int x = c - '0', k = 1;
					while (k < 3 && r < end && *r >= '0' && *r <= '7')
						x = x * 8 + (*r++ - '0'), k++;
					*w++ = (char)x;
				} else {
					*w++ = c;
				}
			}
		}
		bool last = r >= end;
		*w = 0;
		v[n++] = null ? NULL : start;
		if (last)
			break;
		r++;
	}
	return n;
}

int ss_pg_copy_out(struct ss_pg *p, struct pg_conn *c, const char *query,
		   int (*row)(void *ctx, const char *const *v, size_t n), void *ctx)
{
	char *sql = ss_pg_fmt("COPY (%s) TO STDOUT", query);
	if (!sql) {
		snprintf(p->err, sizeof p->err, "out of memory");
		return -1;
	}
	PGresult *r = PQexec(PGC(c), sql);
	free(sql);
	if (PQresultStatus(r) != PGRES_COPY_OUT) {
		snprintf(p->err, sizeof p->err, "%s", PQresultErrorMessage(r));
		PQclear(r);
		return -1;
	}
	PQclear(r);
	int rc = 0;
	char *buf;
	int len;
	char *v[PG_MAX_COLS + 4];
	while ((len = PQgetCopyData(PGC(c), &buf, 0)) > 0) {
		size_t n = split_row(buf, (size_t)len, v, sizeof v / sizeof v[0]);
		if (!rc)
			rc = row(ctx, (const char *const *)v, n);
		PQfreemem(buf);
	}
	/* The command's own result: an error that ended the COPY shows here. */
	while ((r = PQgetResult(PGC(c)))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc) {
			snprintf(p->err, sizeof p->err, "%s", PQresultErrorMessage(r));
			rc = -1;
		}
		PQclear(r);
	}
	return len == -2 && !rc ? (snprintf(p->err, sizeof p->err, "%s", PQerrorMessage(PGC(c))), -1) : rc;
}

sqlite3_stmt *ss_pg_sqlite_insert(struct ss_pg *p, sqlite3 *db, const struct pg_table *t, const char *verb)
{
	char sql[2048];
	size_t n = (size_t)snprintf(sql, sizeof sql, "%s INTO %s(", verb, t->name);
	for (size_t i = 0; i < t->n_cols; i++)
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", i ? "," : "", t->cols[i].name);
	n += (size_t)snprintf(sql + n, sizeof sql - n, ") VALUES(");
	for (size_t i = 0; i < t->n_cols; i++)
		n += (size_t)snprintf(sql + n, sizeof sql - n, "%s?", i ? "," : "");
	snprintf(sql + n, sizeof sql - n, ")");
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(p->err, sizeof p->err, "%s: %s", t->name, sqlite3_errmsg(db));
		return NULL;
	}
	return st;
}

int ss_pg_sqlite_row(struct ss_pg *p, sqlite3_stmt *st, const struct pg_table *t, const char *const *v, size_t n)
{
	sqlite3_reset(st);
	for (size_t i = 0; i < t->n_cols; i++) {
		const char *x = i < n ? v[i] : NULL;
		if (!x)
			sqlite3_bind_null(st, (int)i + 1);
		else if (t->cols[i].kind == PGC_TEXT)
			sqlite3_bind_text(st, (int)i + 1, x, -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_int64(st, (int)i + 1, strtoll(x, NULL, 10));
	}
	if (sqlite3_step(st) != SQLITE_DONE) {
		snprintf(p->err, sizeof p->err, "%s: %s", t->name, sqlite3_errmsg(sqlite3_db_handle(st)));
		return -1;
	}
	return 0;
}

/* ---- into PostgreSQL ------------------------------------------------------------ */

void ss_pg_buf_grow(struct ss_pg_buf *b, size_t need)
{
	size_t nc = b->cap ? b->cap : 1 << 16;
	while (nc < b->n + need)
		nc *= 2;
	char *np = realloc(b->p, nc);
	if (!np) {
		b->oom = true;
		return;
	}
	b->p = np;
	b->cap = nc;
}

void ss_pg_buf_int(struct ss_pg_buf *b, int64_t v)
{
	char t[24];
	int n = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		t[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		t[n++] = '-';
	if (b->n + (size_t)n > b->cap)
		ss_pg_buf_grow(b, (size_t)n);
	if (b->n + (size_t)n > b->cap)
		return;
	while (n)
		b->p[b->n++] = t[--n];
}

void ss_pg_buf_free(struct ss_pg_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	if (!k || k > n || (k == 2 && c < 0xc2) || (k == 4 && c > 0xf4))
		return 0;
	for (size_t i = 1; i < k; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (k == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
		return 0;
	if (k == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
		return 0;
	return k;
}

void ss_pg_buf_text(struct ss_pg_buf *b, const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned char c = s[i];
		const char *esc = c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : NULL;
		if (esc) {
			ss_pg_buf_put(b, esc, 2);
			i++;
		} else if (c == 0) {
			i++;
		} else if (c < 0x80) {
			ss_pg_buf_ch(b, (char)c);
			i++;
		} else {
			size_t k = utf8_len(s + i, n - i);
			if (k)
				ss_pg_buf_put(b, (const char *)s + i, k), i += k;
			else
				ss_pg_buf_put(b, "\xef\xbf\xbd", 3), i++;
		}
	}
}

/* The column list of t, comma-separated. */
static void col_list(const struct pg_table *t, char *cols, size_t len)
{
	size_t cn = 0;
	cols[0] = 0;
	for (size_t i = 0; i < t->n_cols && cn < len; i++)
		cn += (size_t)snprintf(cols + cn, len - cn, "%s%s", i ? "," : "", t->cols[i].name);
}

/* Starts `COPY dest(cols) FROM STDIN` on c. */
static int copy_start(PGconn *c, const struct pg_table *t, const char *dest, char *err, size_t errlen)
{
	char cols[1024];
	col_list(t, cols, sizeof cols);
	char *sql = ss_pg_fmt("COPY %s(%s) FROM STDIN", dest, cols);
	PGresult *r = sql ? PQexec(c, sql) : NULL;
	free(sql);
	if (PQresultStatus(r) != PGRES_COPY_IN) {
		snprintf(err, errlen, "%s", r ? PQresultErrorMessage(r) : "out of memory");
		PQclear(r);
		return -1;
	}
	PQclear(r);
	return 0;
}

/* Ends the COPY (aborting it when failed) and takes its result. */
static int copy_end(PGconn *c, const struct pg_table *t, bool failed, int rc, char *err, size_t errlen)
{
	PQputCopyEnd(c, rc || failed ? "stallscope: the rows could not be read" : NULL);
	PGresult *r;
	while ((r = PQgetResult(c))) {
		if (PQresultStatus(r) != PGRES_COMMAND_OK && !rc) {
			snprintf(err, errlen, "%s: %s", t->name, PQresultErrorMessage(r));
			rc = -1;
		}
		PQclear(r);
	}
	if (failed && !rc) {
		snprintf(err, errlen, "%s: %s", t->name, PQerrorMessage(c));
		rc = -1;
	}
	return rc;
}

int ss_pg_copy_rows(struct pg_conn *conn, const struct pg_table *t, const char *dest, const char *rows, size_t n,
		    char *err, size_t errlen)
{
	PGconn *c = PGC(conn);
	if (copy_start(c, t, dest, err, errlen) != 0)
		return -1;
	bool failed = false;
	for (size_t off = 0; off < n && !failed;) {
		size_t k = n - off > (1u << 30) ? 1u << 30 : n - off;
		failed = PQputCopyData(c, rows + off, (int)k) != 1;
		off += k;
	}
	return copy_end(c, t, failed, 0, err, errlen);
}

int ss_pg_copy_in(struct ss_pg *p, sqlite3 *db, const char *select, const struct pg_table *t, const char *dest,
		  struct ss_pg_ids *ids, uint64_t *rows)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, select, -1, &st, NULL) != SQLITE_OK) {
		snprintf(p->err, sizeof p->err, "staging %s: %s", t->name, sqlite3_errmsg(db));
		return -1;
	}
	PGconn *c = PGC(p->main);
	if (copy_start(c, t, dest, p->err, sizeof p->err) != 0) {
		sqlite3_finalize(st);
		return -1;
	}
	struct ss_pg_buf o = { 0 };
	bool failed = false;
	int rc = 0;
	uint64_t count = 0;
	int step = SQLITE_DONE;
	while (!failed && !o.oom && !ids->failed && (step = sqlite3_step(st)) == SQLITE_ROW) {
		for (size_t i = 0; i < t->n_cols; i++) {
			if (i)
				ss_pg_buf_ch(&o, '\t');
			int kind = t->cols[i].kind;
			if (sqlite3_column_type(st, (int)i) == SQLITE_NULL) {
				ss_pg_buf_put(&o, "\\N", 2);
			} else if (kind == PGC_TEXT) {
				ss_pg_buf_text(&o, sqlite3_column_text(st, (int)i), (size_t)sqlite3_column_bytes(st, (int)i));
			} else {
				int64_t v = sqlite3_column_int64(st, (int)i);
				ss_pg_buf_int(&o, kind >= 0 ? ss_pg_ids_map(ids, kind, v) : v);
			}
		}
		ss_pg_buf_ch(&o, '\n');
		count++;
		if (o.n >= (1u << 20)) {
			failed = PQputCopyData(c, o.p, (int)o.n) != 1;
			o.n = 0;
		}
	}
	if (step != SQLITE_DONE && step != SQLITE_ROW) {
		snprintf(p->err, sizeof p->err, "staging %s: %s", t->name, sqlite3_errmsg(db));
		rc = -1;
	} else if (o.oom || ids->failed) {
		if (o.oom)
			snprintf(p->err, sizeof p->err, "out of memory");
		rc = -1;
	}
	sqlite3_finalize(st);
	if (!rc && !failed && o.n && PQputCopyData(c, o.p, (int)o.n) != 1)
		failed = true;
	ss_pg_buf_free(&o);
	char err[sizeof p->err];
	if (copy_end(c, t, failed, rc, err, sizeof err) != 0 && !rc) {
		memcpy(p->err, err, sizeof err);
		rc = -1;
	}
	if (rows)
		*rows += count;
	return rc ? -1 : 0;
}
