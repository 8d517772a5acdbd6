/*
 * db_batch.c - how the inserting thread gets the high-volume rows into SQLite.
 *
 * Binding parameters row by row, even into a multi-row INSERT, costs more in
 * SQLite's VDBE than storing the row. Instead, rows of one table collect in a
 * plain C array (a batch); a full batch is inserted by one statement,
 * "INSERT INTO t(cols) SELECT c0, c1, ... FROM ss_rows(?1)", where ss_rows is a
 * virtual table whose cursor walks that array (the batch travels as a
 * sqlite3_bind_pointer). Measured on this machine: about 1.4x the rows per
 * second of the 64-row VALUES statement it replaced. The producer's binds
 * fill the array directly (db_pipe.c); the inserting thread inserts a full one
 * and gives it back.
 *
 * Tables whose id the importer assigns (tasks, polls) have a second cost: an
 * explicit INTEGER PRIMARY KEY makes SQLite search the B-tree for a duplicate
 * on every row, while a NULL one takes the append path. Ids are handed out in
 * order but rows are finished out of order (a poll is written when it ends), so
 * each batch is sorted by id and a row whose id is exactly one past the table's
 * largest rowid is inserted with NULL: SQLite then assigns that same id. Any
 * other row (a gap left by a poll that is still open, or an older id) keeps its
 * explicit id. The largest rowid is read from the table before each batch, so
 * nothing else written to the table can make the two disagree. The sort is the
 * producer's (ss_batch_take): the inserting thread sets the pace of an import
 * on two CPUs, and the ids of a batch are nearly dense, so each is placed by
 * its distance from the smallest (a qsort on the inserting thread was 5% of
 * its time on the steady recording).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db_pipe.h"

#define BATCH_ROWS 2048
/* Rows with importer ids are sorted within a batch; a row whose id is below
 * the largest id already inserted (a poll written when it ends, after polls
 * begun later) goes into the middle of the table, which splits a full page
 * into emptier ones that no later row fills. A larger batch keeps more of
 * them in order: on the steady scenario's recording polls were 8.7% free
 * space with 2048 rows a batch. */
#define ORDERED_BATCH_ROWS 32768
#define MAX_COLS 16
/* Row buffers of one table: one filled by the producer while the others wait
 * for the inserting thread or are inserted. More for every table were tried:
 * made when the producer would otherwise sleep (up to 8), they cost 52 MB of
 * RSS on the steady recording and no CPU time a busy machine could show.
 * A table of small batches gets more, though, made when the producer would
 * otherwise sleep (ss_batch_more), up to as many rows as one ordered batch:
 * the queue is in order, so while the inserting thread inserts a batch of
 * 32768 polls, three buffers of 2048 wakes were filled behind it and the
 * producer slept for the fourth; then the inserting thread ran dry while the
 * producer caught up (steady recording, quiet machine: each side slept ~0.7
 * s of a 2.9 s load, STALLSCOPE_IMPORT_TIMING). */
#define BATCH_BUFFERS 3
#define BATCH_BUFFERS_MAX (BATCH_BUFFERS + ORDERED_BATCH_ROWS / BATCH_ROWS)

/* Value types, as in the chunk format. */
enum { B_NULL, B_INT, B_TEXT };

struct ss_batch {
	sqlite3_stmt *insert;  /* INSERT ... SELECT ... FROM ss_rows(?1) */
	sqlite3_stmt *max_id;  /* SELECT max(rowid): only when ordered_ids */
	int ncols;
	bool ordered_ids;      /* column 0 is the rowid, assigned by the importer */
	int cap;               /* rows a full batch holds */
	const struct ss_batch_rows *run; /* the rows being inserted (inserting thread) */
	uint32_t *slot;        /* ordered_ids: the producer's table for sort_ids, 4 x cap */
	struct ss_batch_rows *fill;      /* the rows being filled (producer) */
	struct ss_batch_rows *free;      /* inserted, to fill again (db_pipe.c's lock) */
	int nall;              /* buffers made (the producer's) */
	struct ss_batch_rows *all[BATCH_BUFFERS_MAX];
};

/* ---- the ss_rows virtual table ---------------------------------------------- */

struct rows_cursor {
	sqlite3_vtab_cursor base;
	const struct ss_batch *b;
	int i;
	/* The current row's values and types: found once per row, not once per
	 * column (xColumn runs ncols times a row on the inserting thread). */
	const int64_t *v;
	const uint8_t *ty;
};

static void rows_at(struct rows_cursor *c)
{
	const struct ss_batch *b = c->b;
	if (!b || c->i >= b->run->n)
		return;
	size_t row = b->ordered_ids ? b->run->order[c->i] : (size_t)c->i;
	c->v = b->run->v + row * (size_t)b->ncols;
	c->ty = b->run->ty + row * (size_t)b->ncols;
}

static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
			sqlite3_vtab **out, char **err)
{
	(void)aux;
	(void)argc;
	(void)argv;
	(void)err;
	int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(c0, c1, c2, c3, c4, c5, c6, c7, c8, c9,"
				      " c10, c11, c12, c13, c14, c15, batch HIDDEN)");
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_vtab *t = sqlite3_malloc(sizeof *t);
	if (!t)
		return SQLITE_NOMEM;
	memset(t, 0, sizeof *t);
	*out = t;
	return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *t)
{
	sqlite3_free(t);
	return SQLITE_OK;
}

/* Only usable with its batch argument: ss_rows(?1). */
static int rows_best_index(sqlite3_vtab *t, sqlite3_index_info *ii)
{
	(void)t;
	for (int i = 0; i < ii->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &ii->aConstraint[i];
		if (c->iColumn == MAX_COLS && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable) {
			ii->aConstraintUsage[i].argvIndex = 1;
			ii->aConstraintUsage[i].omit = 1;
			ii->idxNum = 1;
			ii->estimatedCost = BATCH_ROWS;
			ii->estimatedRows = BATCH_ROWS;
			return SQLITE_OK;
		}
	}
	return SQLITE_CONSTRAINT;
}

static int rows_open(sqlite3_vtab *t, sqlite3_vtab_cursor **out)
{
	(void)t;
	struct rows_cursor *c = sqlite3_malloc(sizeof *c);
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof *c);
	*out = &c->base;
	return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *cur)
{
	sqlite3_free(cur);
	return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str, int argc,
		       sqlite3_value **argv)
{
	(void)idx_str;
	struct rows_cursor *c = (struct rows_cursor *)cur;
	c->b = idx_num == 1 && argc == 1 ? sqlite3_value_pointer(argv[0], "ss_batch") : NULL;
	c->i = 0;
	rows_at(c);
	return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur)
{
	struct rows_cursor *c = (struct rows_cursor *)cur;
	c->i++;
	rows_at(c);
	return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur)
{
	const struct rows_cursor *c = (const struct rows_cursor *)cur;
	return !c->b || c->i >= c->b->run->n;
}

static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
	const struct rows_cursor *c = (const struct rows_cursor *)cur;
	if (col >= c->b->ncols)
		return SQLITE_OK; /* NULL */
	int64_t v = c->v[col];
	switch (c->ty[col]) {
	case B_INT:
		sqlite3_result_int64(ctx, v);
		break;
	case B_TEXT:
		sqlite3_result_text(ctx, c->b->run->text + ((uint64_t)v >> 32), (int)(v & 0xffffffff), SQLITE_STATIC);
		break;
	default:
		break;
	}
	return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = ((const struct rows_cursor *)cur)->i;
	return SQLITE_OK;
}

static sqlite3_module rows_module = {
	.iVersion = 0,
	.xCreate = NULL, /* eponymous only: usable as ss_rows(...) without CREATE */
	.xConnect = rows_connect,
	.xBestIndex = rows_best_index,
	.xDisconnect = rows_disconnect,
	.xOpen = rows_open,
	.xClose = rows_close,
	.xFilter = rows_filter,
	.xNext = rows_next,
	.xEof = rows_eof,
	.xColumn = rows_column,
	.xRowid = rows_rowid,
};

int ss_batch_register(sqlite3 *db)
{
	return sqlite3_create_module(db, "ss_rows", &rows_module, NULL) == SQLITE_OK ? 0 : -1;
}

/* ---- batches -------------------------------------------------------------------- */

static void batch_free(struct ss_batch *b)
{
	if (!b)
		return;
	sqlite3_finalize(b->insert);
	sqlite3_finalize(b->max_id);
	for (int i = 0; i < BATCH_BUFFERS_MAX; i++)
		if (b->all[i]) {
			free(b->all[i]->v);
			free(b->all[i]->ty);
			free(b->all[i]->text);
			free(b->all[i]->order);
			free(b->all[i]);
		}
	free(b->slot);
	free(b);
}

static struct ss_batch_rows *batch_rows_new(struct ss_batch *b, int i)
{
	struct ss_batch_rows *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->v = malloc(sizeof *r->v * (size_t)b->ncols * (size_t)b->cap);
	r->ty = malloc((size_t)b->ncols * (size_t)b->cap + MAX_COLS); /* + the last row's whole clear (ss_batch_row) */
	r->order = b->ordered_ids ? malloc(sizeof *r->order * (size_t)b->cap) : NULL;
	if (!r->v || !r->ty || (b->ordered_ids && !r->order)) {
		free(r->v);
		free(r->ty);
		free(r->order);
		free(r);
		return NULL;
	}
	b->all[i] = r;
	b->nall = i + 1;
	return r;
}

struct ss_batch_rows *ss_batch_more(struct ss_batch *b)
{
	if (b->ordered_ids || b->nall == BATCH_BUFFERS_MAX)
		return NULL;
	struct ss_batch_rows *r = batch_rows_new(b, b->nall);
	if (r)
		r->next = NULL;
	return r;
}

/* "INSERT INTO t(cols) VALUES(?,NULL,?) [ON CONFLICT ...]" becomes
 * "INSERT INTO t(cols) SELECT c0,NULL,c1 FROM ss_rows(?1) [WHERE true ON
 * CONFLICT ...]" (the WHERE keeps SQLite from reading ON as a join). Returns
 * NULL when the statement has another shape (it then stays a one-row
 * statement). */
static char *select_form(const char *sql, int *ncols)
{
	const char *v = strstr(sql, " VALUES(");
	if (!v || strchr(v, ';'))
		return NULL;
	size_t cap = strlen(sql) * 3 + 64;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	size_t len = (size_t)snprintf(out, cap, "%.*s SELECT ", (int)(v - sql), sql);
	int k = 0;
	const char *p = v + 8, *end = strchr(p, ')');
	if (!end) {
		free(out);
		return NULL;
	}
	for (; p < end; p++) {
		if (*p == '?') {
			if (k == MAX_COLS) {
				free(out);
				return NULL;
			}
			len += (size_t)snprintf(out + len, cap - len, "c%d", k++);
		} else {
			out[len++] = *p;
		}
	}
	snprintf(out + len, cap - len, " FROM ss_rows(?1)%s%s", end[1] ? " WHERE true" : "", end + 1);
	*ncols = k;
	return out;
}

int ss_batch_prepare(struct ss_db *d, enum ss_stmt w, const char *sql, const char *table)
{
	int ncols = 0;
	char *sel = select_form(sql, &ncols);
	if (!sel)
		return 0;
	struct ss_batch *b = calloc(1, sizeof *b);
	if (!b) {
		free(sel);
		return -1;
	}
	b->ncols = ncols;
	b->ordered_ids = strstr(sql, "(id,") != NULL;
	b->cap = b->ordered_ids ? ORDERED_BATCH_ROWS : BATCH_ROWS;
	int rc = 0;
	for (int i = 0; i < BATCH_BUFFERS && rc == 0; i++) {
		struct ss_batch_rows *r = batch_rows_new(b, i);
		if (!r)
			rc = -1;
		else if (i == 0)
			b->fill = r;
		else {
			r->next = b->free;
			b->free = r;
		}
	}
	if (b->ordered_ids)
		b->slot = malloc(sizeof *b->slot * 4 * (size_t)b->cap);
	if (b->ordered_ids && !b->slot)
		rc = -1;
	bool oom = rc != 0;
	if (rc == 0 && sqlite3_prepare_v3(d->db, sel, -1, SQLITE_PREPARE_PERSISTENT, &b->insert, NULL)
	    != SQLITE_OK)
		rc = -1;
	if (rc == 0 && b->ordered_ids) {
		char q[128];
		snprintf(q, sizeof q, "SELECT max(rowid) FROM %s", table);
		if (sqlite3_prepare_v3(d->db, q, -1, SQLITE_PREPARE_PERSISTENT, &b->max_id, NULL) != SQLITE_OK)
			rc = -1;
	}
	if (rc != 0) {
		snprintf(d->err, sizeof d->err, "preparing batch %d: %s", (int)w,
			 oom ? "out of memory" : sqlite3_errmsg(d->db));
		batch_free(b);
	} else {
		d->batch[w] = b;
	}
	free(sel);
	return rc;
}

void ss_batch_free_all(struct ss_db *d)
{
	for (int i = 0; i < ST_COUNT; i++) {
		batch_free(d->batch[i]);
		d->batch[i] = NULL;
	}
}

int64_t *ss_batch_row(struct ss_batch *b, uint8_t **types)
{
	struct ss_batch_rows *r = b->fill;
	size_t at = (size_t)r->n * (size_t)b->ncols;
	/* MAX_COLS bytes, a constant: one store, where ncols bytes were a call
	 * into libc per row. What it clears past this row belongs to rows not
	 * begun yet (the buffer has MAX_COLS bytes to spare at its end). */
	memset(r->ty + at, B_NULL, MAX_COLS);
	*types = r->ty + at;
	return r->v + at;
}

bool ss_batch_commit(struct ss_batch *b)
{
	return ++b->fill->n == b->cap;
}

int ss_batch_ncols(const struct ss_batch *b) { return b->ncols; }

static void sort_ids(struct ss_batch *b, struct ss_batch_rows *r);

struct ss_batch_rows *ss_batch_take(struct ss_batch *b)
{
	struct ss_batch_rows *r = b->fill;
	b->fill = NULL;
	if (b->ordered_ids)
		sort_ids(b, r);
	return r;
}

struct ss_batch_rows **ss_batch_free_list(struct ss_batch *b) { return &b->free; }

void ss_batch_set_fill(struct ss_batch *b, struct ss_batch_rows *r)
{
	r->n = 0;
	r->text_len = 0;
	b->fill = r;
}

bool ss_batch_pending(const struct ss_batch *b) { return b->fill && b->fill->n > 0; }

int ss_batch_text(struct ss_batch *b, const char *s, uint32_t len, int64_t *out)
{
	struct ss_batch_rows *r = b->fill;
	if (r->text_len + len > r->text_cap) {
		size_t nc = r->text_cap ? r->text_cap : 4096;
		while (nc < r->text_len + len)
			nc *= 2;
		if (nc > 0xffffffffu)
			return -1;
		char *t = realloc(r->text, nc);
		if (!t)
			return -1;
		r->text = t;
		r->text_cap = nc;
	}
	memcpy(r->text + r->text_len, s, len);
	*out = (int64_t)((uint64_t)r->text_len << 32 | len);
	r->text_len += len;
	return 0;
}

/* The rows being sorted (qsort has no context argument); per thread, since
 * two imports may run at once in one process (two viewer windows). */
static _Thread_local const int64_t *sort_v;
static _Thread_local size_t sort_ncols;

static int by_id(const void *a, const void *b)
{
	int64_t x = sort_v[(size_t)*(const uint32_t *)a * sort_ncols];
	int64_t y = sort_v[(size_t)*(const uint32_t *)b * sort_ncols];
	return x < y ? -1 : x > y;
}

/* r->order: the rows by id (column 0). Already in order, nothing to do; ids
 * that span less than four times the rows, each at its distance from the
 * smallest in b->slot, then read out; otherwise (ids far apart, or one id
 * twice: not written so) qsort, whose order is the same where ids differ. */
static void sort_ids(struct ss_batch *b, struct ss_batch_rows *r)
{
	size_t n = (size_t)r->n, nc = (size_t)b->ncols;
	uint32_t *o = r->order;
	bool sorted = true;
	int64_t lo = n ? r->v[0] : 0, hi = lo;
	for (size_t i = 0; i < n; i++) {
		int64_t id = r->v[i * nc];
		o[i] = (uint32_t)i;
		if (i && id < r->v[(i - 1) * nc])
			sorted = false;
		if (id < lo)
			lo = id;
		if (id > hi)
			hi = id;
	}
	if (sorted)
		return;
	if ((uint64_t)hi - (uint64_t)lo < 4 * (uint64_t)n) {
		size_t span = (size_t)((uint64_t)hi - (uint64_t)lo) + 1;
		memset(b->slot, 0xff, span * sizeof *b->slot);
		size_t i = 0;
		for (; i < n; i++) {
			uint32_t *s = &b->slot[(uint64_t)r->v[i * nc] - (uint64_t)lo];
			if (*s != UINT32_MAX)
				break;
			*s = (uint32_t)i;
		}
		if (i == n) {
			size_t k = 0;
			for (size_t j = 0; j < span; j++)
				if (b->slot[j] != UINT32_MAX)
					o[k++] = b->slot[j];
			return;
		}
		for (i = 0; i < n; i++)
			o[i] = (uint32_t)i;
	}
	sort_v = r->v;
	sort_ncols = nc;
	qsort(o, n, sizeof *o, by_id);
}

/* Turns each id that continues the table's rowids into NULL (see the top of
 * the file), in the order ss_batch_take sorted the rows in. */
static int order_ids(struct ss_db *d, struct ss_batch *b, struct ss_batch_rows *r)
{
	int64_t max = 0;
	if (sqlite3_step(b->max_id) == SQLITE_ROW)
		max = sqlite3_column_int64(b->max_id, 0);
	if (sqlite3_reset(b->max_id) != SQLITE_OK) {
		snprintf(d->err, sizeof d->err, "%s", sqlite3_errmsg(d->db));
		return -1;
	}
	for (int i = 0; i < r->n; i++) {
		size_t at = (size_t)r->order[i] * (size_t)b->ncols;
		if (r->ty[at] != B_INT)
			continue;
		int64_t id = r->v[at];
		if (id == max + 1)
			r->ty[at] = B_NULL;
		if (id > max)
			max = id;
	}
	return 0;
}

int ss_batch_run(struct ss_db *d, struct ss_batch *b, struct ss_batch_rows *r)
{
	if (!r->n)
		return 0;
	b->run = r;
	int rc = b->ordered_ids ? order_ids(d, b, r) : 0;
	if (rc == 0) {
		sqlite3_bind_pointer(b->insert, 1, b, "ss_batch", NULL);
		rc = sqlite3_step(b->insert) == SQLITE_DONE ? 0 : -1;
		if (sqlite3_reset(b->insert) != SQLITE_OK || rc != 0) {
			snprintf(d->err, sizeof d->err, "%s", sqlite3_errmsg(d->db));
			rc = -1;
		}
	}
	b->run = NULL;
	return rc;
}
