/*
 * pg_prune.c - `stallscope prune --db URL --older-than AGE`: recordings whose
 * last event is older than AGE are deleted, in one transaction. The large
 * tables are partitioned by owner id (pg_tables.c), and owners are numbered in
 * the order they were imported, so most of an old recording's rows sit in
 * partitions that hold nothing newer: those are dropped whole (cheap: no row
 * is visited), and only the rest is deleted row by row. A partition is dropped
 * only when it is closed (its id range is used up: no future import can add to
 * it) and none of its owners belongs to a recording that stays.
 *
 * Locations are shared by all recordings and stay.
 */
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_store.h"
#include "pg_tables.h"

static const char *const owner_table[ID_COUNT] = {
	[ID_THREAD] = "threads", [ID_WORKER] = "workers", [ID_TASK] = "tasks",
};

#define GONE "(SELECT id FROM stage_gone)"
#define TH "(SELECT id FROM threads WHERE recording_id IN " GONE ")"
#define WK "(SELECT id FROM workers WHERE recording_id IN " GONE ")"
#define TK "(SELECT id FROM tasks WHERE recording_id IN " GONE ")"
#define MP "(SELECT id FROM mappings WHERE recording_id IN " GONE ")"

/* Children before the rows their conditions name. */
static const char *const deletes[] = {
	"DELETE FROM polls WHERE worker_id IN " WK,
	"DELETE FROM parks WHERE worker_id IN " WK,
	"DELETE FROM worker_summaries WHERE worker_id IN " WK,
	"DELETE FROM import_open_summary WHERE worker_id IN " WK,
	"DELETE FROM wakes WHERE task_id IN " TK,
	"DELETE FROM task_dumps WHERE task_id IN " TK,
	"DELETE FROM queue_depths WHERE thread_id IN " TH,
	"DELETE FROM marks WHERE thread_id IN " TH,
	"DELETE FROM spans WHERE thread_id IN " TH,
	"DELETE FROM cpu_intervals WHERE thread_id IN " TH,
	"DELETE FROM samples WHERE thread_id IN " TH,
	"DELETE FROM stall_captures WHERE stall_id IN (SELECT id FROM stalls WHERE thread_id IN " TH ")",
	"DELETE FROM stalls WHERE thread_id IN " TH,
	"DELETE FROM import_thread_state WHERE thread_id IN " TH,
	"DELETE FROM import_open_spans WHERE thread_id IN " TH,
	"DELETE FROM callsites WHERE frame_id IN (SELECT id FROM frames WHERE mapping_id IN " MP ")",
	"DELETE FROM frames WHERE mapping_id IN " MP,
	"DELETE FROM mappings WHERE recording_id IN " GONE,
	"DELETE FROM import_pending_wakes WHERE recording_id IN " GONE,
	"DELETE FROM import_ended_tasks WHERE recording_id IN " GONE,
	"DELETE FROM loss WHERE recording_id IN " GONE,
	"DELETE FROM other_events WHERE recording_id IN " GONE,
	"DELETE FROM segments WHERE recording_id IN " GONE,
	"DELETE FROM metadata WHERE recording_id IN " GONE,
	"DELETE FROM tasks WHERE recording_id IN " GONE,
	"DELETE FROM workers WHERE recording_id IN " GONE,
	"DELETE FROM threads WHERE recording_id IN " GONE,
	"DELETE FROM recordings WHERE id IN " GONE,
};

/* Drops the closed partitions of t that hold no owner of a recording that
 * stays. */
static int drop_partitions(struct ss_pg *p, const struct pg_table *t, bool dry_run, struct ss_pg_prune_result *res)
{
	char *sql = ss_pg_fmt("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
			      " JOIN pg_class pc ON pc.oid = i.inhparent WHERE pc.relname = '%s'"
			      " AND c.relname <> '%s_default' ORDER BY c.relname", t->name, t->name);
	PGresult *r = ss_pg_select(p, p->main, sql);
	free(sql);
	if (!r)
		return -1;
	int64_t next = 0;
	char *q = ss_pg_fmt("SELECT next FROM import_ids WHERE kind = %d", t->part_kind);
	int rc = ss_pg_query_int(p, p->main, q, 0, &next);
	free(q);
	size_t pre = strlen(t->name) + 2;
	for (int i = 0; !rc && i < PQntuples(r); i++) {
		const char *name = PQgetvalue(r, i, 0);
		if (strlen(name) <= pre)
			continue;
		long long slice = strtoll(name + pre, NULL, 10);
		long long width = p->width[t - ss_pg_tables];
		long long lo = slice * width, hi = lo + width;
		if (hi > next)
			continue; /* still open */
		int64_t stay = 0;
		q = ss_pg_fmt("SELECT count(*) FROM %s WHERE id >= %lld AND id < %lld AND recording_id NOT IN " GONE,
			      owner_table[t->part_kind], lo, hi);
		rc = ss_pg_query_int(p, p->main, q, 0, &stay);
		free(q);
		if (rc || stay)
			continue;
		if (!dry_run) {
			q = ss_pg_fmt("DROP TABLE %s", name);
			rc = ss_pg_exec(p, p->main, q);
			free(q);
		}
		res->partitions_dropped++;
	}
	PQclear(r);
	return rc;
}

int ss_pg_prune(struct ss_pg *p, int64_t age_ns, bool dry_run, struct ss_pg_prune_result *res, FILE *log)
{
	memset(res, 0, sizeof *res);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	long long cutoff = (long long)now.tv_sec * 1000000000LL + now.tv_nsec - age_ns;
	if (ss_pg_exec(p, p->main, "BEGIN") != 0)
		return -1;
	char *sql = ss_pg_fmt("CREATE TEMP TABLE stage_gone ON COMMIT DROP AS SELECT id, session_id FROM recordings"
			      " WHERE anchor_real_ns IS NOT NULL AND anchor_real_ns + (coalesce(last_ts, first_ts,"
			      " anchor_mono_ns) - anchor_mono_ns) < %lld", cutoff);
	int rc = ss_pg_exec(p, p->main, sql);
	free(sql);
	int64_t n = 0;
	if (!rc)
		rc = ss_pg_query_int(p, p->main, "SELECT count(*) FROM stage_gone", 0, &n);
	/* An import of one of them waits, or is waited for. */
	if (!rc)
		rc = ss_pg_exec(p, p->main, "SELECT pg_advisory_xact_lock(session_id) FROM stage_gone");
	res->recordings = (uint64_t)n;
	for (size_t i = 0; !rc && n && i < ss_pg_n_tables; i++)
		if (ss_pg_tables[i].part_col)
			rc = drop_partitions(p, &ss_pg_tables[i], dry_run, res);
	for (size_t i = 0; !rc && n && !dry_run && i < sizeof deletes / sizeof deletes[0]; i++)
		rc = ss_pg_exec(p, p->main, deletes[i]);
	if (rc) {
		PQclear(PQexec((PGconn *)p->main, "ROLLBACK"));
		return -1;
	}
	if (log && n)
		fprintf(log, "stallscope prune: %s%lld recording%s older than the cutoff, %llu partition%s %s\n",
			dry_run ? "would delete " : "deleted ", (long long)n, n == 1 ? "" : "s",
			(unsigned long long)res->partitions_dropped, res->partitions_dropped == 1 ? "" : "s",
			dry_run ? "to drop" : "dropped");
	return ss_pg_exec(p, p->main, dry_run ? "ROLLBACK" : "COMMIT");
}
