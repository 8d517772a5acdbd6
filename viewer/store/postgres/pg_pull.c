/*
 * pg_pull.c - recordings out of PostgreSQL into a new SQLite database in the
 * schema of schema/stallscope.sql, with the ids they have in PostgreSQL, so
 * that the viewer, the report and plain SQL read it as an imported trace
 * (`stallscope export --db URL --recording ID -o local.db`, and `report --db`,
 * which analyses such a pull). One read-only repeatable-read transaction: the
 * file is a consistent snapshot even while imports go on. The file is written
 * under a temporary name and renamed when complete.
 *
 * Left out: the import_* state tables (a pulled file is for reading; further
 * segments of the recording go into PostgreSQL).
 */
#include <errno.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "pg_store.h"
#include "pg_tables.h"
#include "poll_chunks.h"

#define TH "(SELECT id FROM threads WHERE recording_id = {R})"
#define WK "(SELECT id FROM workers WHERE recording_id = {R})"
#define TK "(SELECT id FROM tasks WHERE recording_id = {R})"
#define MP "(SELECT id FROM mappings WHERE recording_id = {R})"

/* Each table's rows of recording {R}, in the order of its id (or owner and
 * time), which is the order an import wrote them in. */
static const struct {
	const char *table, *where;
} pulls[] = {
	{ "recordings", "id = {R}" },
	{ "metadata", "recording_id = {R} ORDER BY key" },
	{ "segments", "recording_id = {R} ORDER BY id" },
	{ "loss", "recording_id = {R} ORDER BY ts" },
	{ "threads", "recording_id = {R} ORDER BY id" },
	{ "workers", "recording_id = {R} ORDER BY id" },
	{ "locations", "id IN (SELECT location_id FROM tasks WHERE recording_id = {R} UNION SELECT location_id FROM"
		       " polls WHERE worker_id IN " WK " UNION SELECT location_id FROM stalls WHERE thread_id IN " TH
		       " UNION SELECT location_id FROM task_dumps WHERE task_id IN " TK " UNION SELECT location_id FROM"
		       " spans WHERE thread_id IN " TH ") ORDER BY id" },
	{ "tasks", "recording_id = {R} ORDER BY id" },
	{ "polls", "worker_id IN " WK " ORDER BY id" },
	{ "parks", "worker_id IN " WK " ORDER BY worker_id, ts" },
	{ "wakes", "task_id IN " TK " ORDER BY ts, task_id" },
	{ "queue_depths", "thread_id IN " TH " ORDER BY ts, thread_id" },
	{ "marks", "thread_id IN " TH " ORDER BY ts, thread_id" },
	{ "spans", "thread_id IN " TH " ORDER BY thread_id, ts, depth" },
	{ "cpu_intervals", "thread_id IN " TH " ORDER BY thread_id, ts" },
	{ "samples", "thread_id IN " TH " ORDER BY ts, thread_id" },
	{ "stalls", "thread_id IN " TH " ORDER BY id" },
	{ "stall_captures", "stall_id IN (SELECT id FROM stalls WHERE thread_id IN " TH ") ORDER BY stall_id, idx" },
	{ "task_dumps", "task_id IN " TK " ORDER BY ts, task_id" },
	{ "other_events", "recording_id = {R} ORDER BY ts, thread_id" },
	{ "mappings", "recording_id = {R} ORDER BY id" },
	{ "frames", "mapping_id IN " MP " ORDER BY id" },
	{ "callsites", "frame_id IN (SELECT id FROM frames WHERE mapping_id IN " MP ") ORDER BY id" },
	{ "worker_summaries", "worker_id IN " WK " ORDER BY bucket_ns, worker_id, ts" },
};

struct pull {
	struct ss_pg *p;
	const struct pg_table *t;
	sqlite3_stmt *ins;
	uint64_t rows;
};

static int row(void *ctx, const char *const *v, size_t n)
{
	struct pull *u = ctx;
	u->rows++;
	return ss_pg_sqlite_row(u->p, u->ins, u->t, v, n);
}

static char *with_r(const char *s, long long r)
{
	size_t cap = strlen(s) + 256, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	while (*s && n + 32 < cap) {
		if (strncmp(s, "{R}", 3) == 0)
			n += (size_t)snprintf(out + n, cap - n, "%lld", r), s += 3;
		else
			out[n++] = *s++;
	}
	out[n] = 0;
	return out;
}

static int pull_one(struct ss_pg *p, sqlite3 *db, int64_t rid, uint64_t *rows)
{
	for (size_t i = 0; i < sizeof pulls / sizeof pulls[0]; i++) {
		const struct pg_table *t = ss_pg_table(pulls[i].table);
		char cols[1024];
		size_t n = 0;
		for (size_t c = 0; c < t->n_cols; c++)
			n += (size_t)snprintf(cols + n, sizeof cols - n, "%s%s", c ? ", " : "", t->cols[c].name);
		char *where = with_r(pulls[i].where, (long long)rid);
		char *q = where ? ss_pg_fmt("SELECT %s FROM %s WHERE %s", cols, t->name, where) : NULL;
		free(where);
		struct pull u = { p, t, ss_pg_sqlite_insert(p, db, t, "INSERT OR IGNORE"), 0 };
		int rc = q && u.ins ? ss_pg_copy_out(p, p->main, q, row, &u) : -1;
		if (!q)
			snprintf(p->err, sizeof p->err, "out of memory");
		free(q);
		sqlite3_finalize(u.ins);
		*rows += u.rows;
		if (rc)
			return -1;
	}
	return 0;
}

/* The ids of the recordings in scope, ascending. */
static int scope_ids(struct ss_pg *p, const struct ss_pg_scope *sc, int64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	char *host = NULL;
	if (sc->host) {
		PGconn *c = (PGconn *)p->main;
		host = PQescapeLiteral(c, sc->host, strlen(sc->host));
		if (!host) {
			snprintf(p->err, sizeof p->err, "%s", PQerrorMessage(c));
			return -1;
		}
	}
	char idlist[4096] = "";
	size_t used = 0;
	for (size_t i = 0; i < sc->n_ids && used + 24 < sizeof idlist; i++)
		used += (size_t)snprintf(idlist + used, sizeof idlist - used, "%s%lld", i ? "," : "",
					 (long long)sc->ids[i]);
	/* Wall-clock span of a recording: its first and last event through the
	 * clock anchor of its segments. */
	char *sql = ss_pg_fmt(
		"SELECT id FROM recordings WHERE true%s%s%s%s%s%s ORDER BY id", sc->n_ids ? " AND id IN (" : "",
		sc->n_ids ? idlist : "", sc->n_ids ? ")" : "", host ? " AND host = " : "", host ? host : "",
		sc->from_ns || sc->to_ns ? " AND anchor_real_ns IS NOT NULL AND first_ts IS NOT NULL" : "");
	if (host)
		PQfreemem(host);
	if (sql && (sc->from_ns || sc->to_ns)) {
		char *more = ss_pg_fmt("SELECT id FROM (%.*s) s JOIN recordings r USING (id) WHERE"
				       " r.anchor_real_ns + (r.last_ts - r.anchor_mono_ns) >= %lld AND"
				       " r.anchor_real_ns + (r.first_ts - r.anchor_mono_ns) <= %lld ORDER BY id",
				       (int)(strstr(sql, " ORDER BY") - sql), sql, (long long)sc->from_ns,
				       (long long)(sc->to_ns ? sc->to_ns : INT64_MAX));
		free(sql);
		sql = more;
	}
	PGresult *r = ss_pg_select(p, p->main, sql);
	free(sql);
	if (!r)
		return -1;
	int rows = PQntuples(r);
	*ids = calloc((size_t)rows + 1, sizeof **ids);
	for (int i = 0; *ids && i < rows; i++)
		(*ids)[(*n)++] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
	PQclear(r);
	return *ids ? 0 : -1;
}

int ss_pg_pull(struct ss_pg *p, const struct ss_pg_scope *sc, const char *out, size_t *n_recordings, FILE *log,
	       bool progress)
{
	*n_recordings = 0;
	if (access(out, F_OK) == 0) {
		snprintf(p->err, sizeof p->err, "%s exists; give a new file (a pull does not merge into a database)",
			 out);
		return -1;
	}
	if (ss_pg_exec(p, p->main, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") != 0)
		return -1;
	int64_t *ids;
	size_t n;
	if (scope_ids(p, sc, &ids, &n) != 0)
		return -1;
	if (sc->n_ids && n < sc->n_ids) {
		snprintf(p->err, sizeof p->err, "%s holds no recording with id %lld", p->shown,
			 (long long)sc->ids[n < sc->n_ids ? n : 0]);
		for (size_t i = 0, k = 0; i < sc->n_ids; i++) {
			while (k < n && ids[k] < sc->ids[i])
				k++;
			if (k >= n || ids[k] != sc->ids[i]) {
				snprintf(p->err, sizeof p->err, "%s holds no recording with id %lld", p->shown,
					 (long long)sc->ids[i]);
				break;
			}
		}
		free(ids);
		return -1;
	}
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.pulling.%ld", out, (long)getpid());
	unlink(tmp);
	struct ss_db d = { 0 };
	int rc = ss_db_open(&d, tmp);
	if (rc)
		snprintf(p->err, sizeof p->err, "%s", d.err);
	uint64_t rows = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		if (progress)
			fprintf(log, "\rpulling recording %lld (%zu of %zu)...", (long long)ids[i], i + 1, n);
		rc = pull_one(p, d.db, ids[i], &rows);
	}
	if (progress && n)
		fputc('\n', log);
	/* PostgreSQL has its own index of a worker's polls; the file gets the
	 * poll_chunks an import would have written. */
	if (!rc && (ss_db_exec(&d, SS_POLL_CHUNKS_BUILD) != 0 || ss_db_create_indexes(&d) != 0 ||
		    ss_db_exec(&d, "COMMIT") != 0)) {
		snprintf(p->err, sizeof p->err, "%s", d.err);
		rc = -1;
	}
	ss_db_close(&d);
	ss_pg_exec(p, p->main, "COMMIT");
	if (!rc && rename(tmp, out) != 0) {
		snprintf(p->err, sizeof p->err, "%s: %s", out, strerror(errno));
		rc = -1;
	}
	if (rc)
		unlink(tmp);
	*n_recordings = n;
	free(ids);
	return rc;
}
